//! The completion queue and shared receive queue rings of the soft device:
//! memory the transport reads and writes directly, and the device-side
//! cursors over it.

use std::sync::atomic::{fence, AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::os::{DmaBuffer, EventFd};
use super::Error;
use crate::engine::Sge;
use mlx5::{CqRing, RecvRing};

/// Size of a doorbell record allocation (two big-endian words, padded to
/// its own cache line).
const DBREC_LEN: usize = 64;

/// The consumer index in a CQ's doorbell record is 24 bits wide.
const CQ_INDEX_MASK: u32 = 0x00ff_ffff;

/// Rounds a requested entry count up to a power of two within `1..=max`.
pub(crate) fn ring_entries(requested: u32, max: u32) -> Result<u32, Error> {
    if requested == 0 || requested > max {
        tracing::warn!("soft hca: ring of {requested} entries requested (1..={max} supported)");
        return Err(Error::InvalidParam);
    }
    Ok(requested.next_power_of_two())
}

/// A CQ: `cqe_count` entries of `cqe_size` bytes (64, or 128 as mlx5 makes
/// on request: the CQE64 in the entry's last 64 bytes, the first 64 holding
/// data scattered into the CQE). The device is the only producer (always
/// under the device lock); the transport consumes.
pub(crate) struct CqShared {
    pub cqn: u32,
    ring: DmaBuffer,
    dbrec: DmaBuffer,
    cqe_count: u32,
    cqe_size: usize,
    /// Next entry the device writes (free-running).
    producer: AtomicU32,
    armed: AtomicBool,
    channel: Option<Arc<EventFd>>,
}

impl CqShared {
    pub fn new(
        cqn: u32,
        cqe_count: u32,
        cqe_size: usize,
        channel: Option<Arc<EventFd>>,
    ) -> Result<CqShared, Error> {
        if cqe_size != mlx5::CQE_LEN && cqe_size != 2 * mlx5::CQE_LEN {
            tracing::warn!("soft hca: CQE size {cqe_size} (64 or 128 supported)");
            return Err(Error::InvalidParam);
        }
        let ring = DmaBuffer::new(cqe_count as usize * cqe_size)?;
        let shared = CqShared {
            cqn,
            ring,
            dbrec: DmaBuffer::new(DBREC_LEN)?,
            cqe_count,
            cqe_size,
            producer: AtomicU32::new(0),
            armed: AtomicBool::new(false),
            channel,
        };
        // Every entry starts INVALID, so the transport's first poll of each
        // slot sees "not written yet" whatever its owner bit says.
        for index in 0..cqe_count {
            let mut cqe = [0u8; mlx5::CQE_LEN];
            cqe[mlx5::CQE_OP_OWN_OFFSET] = mlx5::CQE_INIT_OP_OWN;
            shared.ring.publish(shared.cqe64_offset(index), &cqe);
        }
        Ok(shared)
    }

    /// Entries written so far (free-running).
    pub fn produced(&self) -> u32 {
        self.producer.load(Ordering::Acquire)
    }

    /// The consumer index the transport publishes in `dbrec[0]` as it polls
    /// (24 bits).
    pub fn consumer_index(&self) -> u32 {
        self.dbrec.load_be32(0) & CQ_INDEX_MASK
    }

    /// Whether the transport has taken every entry before `produced`
    /// (an earlier [`Self::produced`]).
    pub fn taken_up_to(&self, produced: u32) -> bool {
        let behind = produced.wrapping_sub(self.consumer_index()) & CQ_INDEX_MASK;
        // Past the mark the difference wraps to the top of the 24 bits
        // (a CQ holds far fewer than 2^23 entries).
        behind == 0 || behind > CQ_INDEX_MASK / 2
    }

    /// Whether the transport has taken everything written so far.
    pub fn all_taken(&self) -> bool {
        self.taken_up_to(self.produced())
    }

    /// Bytes per entry: 64 or 128.
    pub fn cqe_size(&self) -> usize {
        self.cqe_size
    }

    /// Where the CQE64 of entry `index` (masked) starts in the ring.
    fn cqe64_offset(&self, index: u32) -> usize {
        (index & (self.cqe_count - 1)) as usize * self.cqe_size + self.cqe_size - mlx5::CQE_LEN
    }

    pub fn ring(&self) -> CqRing {
        CqRing {
            buf: self.ring.ptr(),
            cqe_count: self.cqe_count,
            dbrec: self.dbrec.ptr().cast(),
            cqn: self.cqn,
        }
    }

    pub fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// Writes one CQE (the caller fills everything but the owner bit) at
    /// the producer index, and signals the channel if the CQ is armed.
    ///
    /// Like the CQs UCX creates (overrun ignore), the device does not read
    /// the consumer index: UCX publishes it only when arming, and sizes its
    /// CQs by credits so they cannot overflow. A transport that posts more
    /// signalled work than the CQ holds loses completions, as on hardware.
    pub fn push(&self, cqe: [u8; mlx5::CQE_LEN]) {
        self.push_with_data(cqe, None);
    }

    /// [`push`](Self::push), with `data` (a 128-byte CQ only) written into
    /// the 64 bytes before the CQE64 first, as mlx5's 64-byte scatter does.
    pub fn push_with_data(&self, mut cqe: [u8; mlx5::CQE_LEN], data: Option<&[u8]>) {
        let producer = self.producer.load(Ordering::Relaxed);
        if mlx5::cqe_owner_for(producer, self.cqe_count) {
            cqe[mlx5::CQE_OP_OWN_OFFSET] |= mlx5::MLX5_CQE_OWNER_MASK;
        } else {
            cqe[mlx5::CQE_OP_OWN_OFFSET] &= !mlx5::MLX5_CQE_OWNER_MASK;
        }
        let offset = self.cqe64_offset(producer);
        if let Some(data) =
            data.filter(|d| self.cqe_size > mlx5::CQE_LEN && d.len() <= mlx5::CQE_LEN)
        {
            self.ring.write(offset - mlx5::CQE_LEN, data);
        }
        self.ring.publish(offset, &cqe);
        self.producer
            .store(producer.wrapping_add(1), Ordering::Relaxed);
        // Pairs with the fence in `arm`: either the arming thread sees this
        // CQE when it polls after arming, or this sees the arm.
        fence(Ordering::SeqCst);
        if self.armed.swap(false, Ordering::SeqCst) {
            if let Some(channel) = &self.channel {
                channel.signal();
            }
        }
    }
}

/// A receive queue: an SRQ (`wqe_count` receive WQEs of `stride` bytes,
/// linked by their next-segment index as mlx5 SRQs are), or a QP's own
/// receive queue (plain WQEs of data segments, used in ring order, `srqn`
/// 0). The transport publishes the count of WQEs it posted in `dbrec[0]`
/// (for a QP's own queue: word 0 of the QP's doorbell record).
pub(crate) struct SrqShared {
    pub srqn: u32,
    pub pd: u32,
    ring: DmaBuffer,
    dbrec: Arc<DmaBuffer>,
    /// SRQ WQEs start with a next segment.
    linked: bool,
    wqe_count: u32,
    stride: u32,
    max_sge: u32,
    cursor: Mutex<SrqCursor>,
}

#[derive(Default)]
struct SrqCursor {
    /// WQEs taken from the ring so far (free-running, compared with the
    /// posted counter).
    taken: u16,
    /// Index of the next WQE to take.
    head: u16,
    /// Receives a QP took but never used (it was flushed): served first.
    returned: Vec<TakenRecv>,
}

/// A receive taken from the SRQ: its WQE index (reported in the CQE) and
/// its scatter list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TakenRecv {
    pub wqe_index: u16,
    pub sgl: Vec<Sge>,
}

impl SrqShared {
    pub fn new(srqn: u32, pd: u32, wqe_count: u32, max_sge: u32) -> Result<SrqShared, Error> {
        let stride = ((1 + max_sge as usize) * mlx5::SEG_LEN).next_power_of_two();
        Ok(SrqShared {
            srqn,
            pd,
            ring: DmaBuffer::new(wqe_count as usize * stride)?,
            dbrec: Arc::new(DmaBuffer::new(DBREC_LEN)?),
            linked: true,
            wqe_count,
            stride: stride as u32,
            max_sge,
            cursor: Mutex::new(SrqCursor::default()),
        })
    }

    /// A QP's own receive queue of `wqe_count` WQEs with `max_sge` data
    /// segments each, whose counter is word 0 of `qp_dbrec`.
    pub fn new_rq(
        pd: u32,
        wqe_count: u32,
        max_sge: u32,
        qp_dbrec: Arc<DmaBuffer>,
    ) -> Result<SrqShared, Error> {
        let stride = (max_sge as usize * mlx5::SEG_LEN).next_power_of_two();
        Ok(SrqShared {
            srqn: 0,
            pd,
            ring: DmaBuffer::new(wqe_count as usize * stride)?,
            dbrec: qp_dbrec,
            linked: false,
            wqe_count,
            stride: stride as u32,
            max_sge,
            cursor: Mutex::new(SrqCursor::default()),
        })
    }

    pub fn ring(&self) -> RecvRing {
        RecvRing {
            buf: self.ring.ptr(),
            wqe_count: self.wqe_count,
            stride: self.stride,
            max_sge: self.max_sge,
            dbrec: self.dbrec.ptr().cast(),
            srqn: self.srqn,
        }
    }

    /// Takes the next posted receive, if the transport posted one.
    pub fn take(&self) -> Option<TakenRecv> {
        let mut cursor = self.cursor.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(recv) = cursor.returned.pop() {
            return Some(recv);
        }
        let posted = self.dbrec.load_be32(mlx5::MLX5_RCV_DBR) as u16;
        if posted == cursor.taken {
            return None;
        }
        let index = cursor.head & (self.wqe_count as u16).wrapping_sub(1);
        // Copy the WQE out: the transport may write other WQEs meanwhile.
        let stride = self.stride as usize;
        let mut wqe = [0u8; MAX_SRQ_STRIDE];
        let wqe = wqe.get_mut(..stride)?;
        if !self.ring.read(usize::from(index) * stride, wqe) {
            return None;
        }
        let decoded = match mlx5::decode_recv_wqe(wqe, 0, stride, self.linked) {
            Ok(decoded) => decoded,
            Err(err) => {
                tracing::warn!(
                    "soft hca: receive queue (SRQ 0x{:x}): bad receive WQE {index}: {err}",
                    self.srqn
                );
                return None;
            }
        };
        let sgl = decoded
            .data()
            .map(|d| Sge {
                addr: d.addr,
                len: d.byte_count,
                lkey: d.lkey,
            })
            .collect();
        cursor.taken = cursor.taken.wrapping_add(1);
        cursor.head = decoded
            .next
            .map_or(index.wrapping_add(1), |next| next.next_wqe_index);
        Some(TakenRecv {
            wqe_index: index,
            sgl,
        })
    }

    /// Puts back a receive a QP took but did not use.
    pub fn give_back(&self, recv: TakenRecv) {
        let mut cursor = self.cursor.lock().unwrap_or_else(|p| p.into_inner());
        cursor.returned.push(recv);
    }
}

/// Largest SRQ WQE: the next segment plus `MAX_SRQ_SGE` data segments.
const MAX_SRQ_STRIDE: usize = (1 + super::limits::MAX_SRQ_SGE as usize) * mlx5::SEG_LEN * 2;
