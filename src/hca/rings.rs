//! Safe owners of the rings a transport drives: [`SendQueue`] (a QP's send
//! ring, its doorbell record and doorbell), [`PolledCq`] (a CQ and the
//! transport's consumer index) and [`RecvQueue`] (an SRQ ring and its
//! counter). Each takes the device handle by value, so the ring memory
//! lives exactly as long as its owner and nobody else writes it; the raw
//! pointer work is here, in small cores, and the transport above has none.

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

use crate::hca::objects::{Cq, Doorbell, Qp, Srq};
use crate::mlx5::{self, CqeBytes, CQE_LEN, SEND_WQE_BB};
use crate::mlx5::{CqRing, RecvRing, SendRing};

/// A QP with its send ring: the only writer of the ring and the send
/// counter of its doorbell record.
pub struct SendQueue {
    ring: SendRing,
    doorbell: Doorbell,
    qp: Qp,
}

impl SendQueue {
    pub fn new(qp: Qp) -> SendQueue {
        SendQueue {
            ring: qp.send_ring(),
            doorbell: qp.doorbell(),
            qp,
        }
    }

    #[inline(always)]
    pub fn qp(&self) -> &Qp {
        &self.qp
    }

    #[inline(always)]
    pub fn qpn(&self) -> u32 {
        self.ring.qpn
    }

    /// Basic blocks in the ring (a power of two).
    #[inline(always)]
    pub fn wqebb_count(&self) -> u32 {
        self.ring.wqebb_count
    }

    #[inline(always)]
    fn len(&self) -> usize {
        self.ring.wqebb_count as usize * SEND_WQE_BB
    }

    /// The ring's bytes, to write WQEs into. The device reads only blocks
    /// below the published send counter ([`SendQueue::publish`]); the
    /// caller writes only blocks it has not published or whose WQEs have
    /// completed.
    #[inline(always)]
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the ring is `len` bytes that stay valid while the QP
        // lives, and this queue owns the QP; `&mut self` makes this the only
        // borrow of the ring on the host side.
        unsafe { std::slice::from_raw_parts_mut(self.ring.buf, self.len()) }
    }

    /// The ring's bytes, to read posted WQEs back (failover).
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: as in `bytes_mut`; a shared borrow of the same memory.
        unsafe { std::slice::from_raw_parts(self.ring.buf as *const u8, self.len()) }
    }

    /// Publishes `pi` as the send counter (release ordering: the device
    /// sees the WQE bytes first) and rings the doorbell for the WQE whose
    /// control segment is at index `ctrl_index`.
    #[inline(always)]
    pub fn publish(&self, pi: u16, ctrl_index: u16) {
        // SAFETY: dbrec points at the QP's 8-byte, 4-aligned doorbell
        // record, valid while the QP lives; word 1 is the send counter.
        let counter = unsafe { &*(self.ring.dbrec as *const AtomicU32).add(1) };
        counter.store(mlx5::dbrec_word(pi), Ordering::Release);
        let at = (usize::from(ctrl_index) & (self.ring.wqebb_count as usize - 1)) * SEND_WQE_BB;
        // SAFETY: `at` is inside the ring (masked index).
        let ctrl = unsafe { self.ring.buf.add(at) };
        ring_doorbell(&self.doorbell, ctrl);
    }

    /// Hands the QP back (its queue is done: the QP is retired).
    pub fn into_qp(self) -> Qp {
        self.qp
    }
}

/// Rings the send doorbell for the WQE at `ctrl`. Never inlined, so that
/// profiles show the doorbell (with the soft HCA: the whole device) apart
/// from the transport's own posting cost (`benches/BENCHMARKS.md`); the call
/// costs a few instructions.
#[inline(never)]
fn ring_doorbell(doorbell: &Doorbell, ctrl: *const u8) {
    doorbell.ring(ctrl);
}

/// A CQ and the transport's consumer index of its ring.
pub struct PolledCq {
    ring: CqRing,
    ci: u32,
    cq: Cq,
}

impl PolledCq {
    pub fn new(cq: Cq) -> PolledCq {
        PolledCq {
            ring: cq.ring(),
            ci: 0,
            cq,
        }
    }

    pub fn cq(&self) -> &Cq {
        &self.cq
    }

    /// Entries in the ring.
    pub fn cqe_count(&self) -> u32 {
        self.ring.cqe_count
    }

    /// The free-running consumer index (what [`Cq::arm`] takes).
    pub fn consumer_index(&self) -> u32 {
        self.ci
    }

    /// Requests an event for the next CQE (see [`Cq::arm`]).
    pub fn arm(&self, solicited_only: bool) {
        self.cq.arm(self.ci, solicited_only);
    }

    /// The entry at the consumer index and whether the device handed it
    /// over.
    #[inline]
    fn slot(&self) -> (*const u8, bool) {
        self.slot_at(self.ci)
    }

    /// The entry at free-running index `index` and whether the device
    /// handed it over (for the pass `index` belongs to).
    #[inline]
    fn slot_at(&self, index: u32) -> (*const u8, bool) {
        let at = (index & (self.ring.cqe_count - 1)) as usize * CQE_LEN;
        // SAFETY: `at` is inside the ring of cqe_count entries, valid while
        // the CQ (owned here) lives.
        let entry = unsafe { self.ring.buf.add(at) as *const u8 };
        // SAFETY: the op_own byte of that entry; read with acquire so the
        // rest of the entry, written before it, is visible.
        let op_own = unsafe { &*(entry.add(mlx5::CQE_OP_OWN_OFFSET) as *const AtomicU8) }
            .load(Ordering::Acquire);
        (
            entry,
            mlx5::cqe_is_sw_owned(op_own, index, self.ring.cqe_count),
        )
    }

    /// A copy of the CQE `ahead` entries past the consumer index, if the
    /// device has written it, without consuming anything: the entries stay
    /// for [`PolledCq::poll`]. `None` past the last written entry or past
    /// one pass of the ring.
    pub fn peek(&self, ahead: u32) -> Option<CqeBytes> {
        if ahead >= self.ring.cqe_count {
            return None;
        }
        let (entry, ready) = self.slot_at(self.ci.wrapping_add(ahead));
        if !ready {
            return None;
        }
        let mut bytes = [0u8; CQE_LEN];
        // SAFETY: a 64-byte entry inside the ring, handed over by op_own
        // (read with acquire in `slot_at`); the device does not rewrite it
        // before the consumer index passes it (the CQ cannot overflow).
        unsafe { std::ptr::copy_nonoverlapping(entry, bytes.as_mut_ptr(), CQE_LEN) };
        Some(bytes)
    }

    /// Whether a CQE is waiting (without consuming it).
    pub fn has_cqe(&self) -> bool {
        self.slot().1
    }

    /// Takes the next CQE, as its bytes (a receive CQE may carry the
    /// message itself), and publishes the new consumer index.
    #[inline]
    pub fn poll(&mut self) -> Option<CqeBytes> {
        let bytes = self.peek(0)?;
        self.ci = self.ci.wrapping_add(1);
        // SAFETY: word 0 of the CQ doorbell record, 4-aligned, valid while
        // the CQ lives: the consumer index.
        let dbrec = unsafe { &*(self.ring.dbrec as *const AtomicU32) };
        dbrec.store((self.ci & 0x00ff_ffff).to_be(), Ordering::Release);
        Some(bytes)
    }
}

/// An SRQ and its ring: the only writer of its receive WQEs and counter.
pub struct RecvQueue {
    ring: RecvRing,
    srq: Srq,
}

impl RecvQueue {
    pub fn new(srq: Srq) -> RecvQueue {
        RecvQueue {
            ring: srq.ring(),
            srq,
        }
    }

    pub fn srq(&self) -> &Srq {
        &self.srq
    }

    /// WQEs in the ring (a power of two).
    pub fn wqe_count(&self) -> u32 {
        self.ring.wqe_count
    }

    /// Writes receive WQE `index` (its bytes: the next segment and data
    /// segments); the device reads it once [`RecvQueue::publish`] covers it.
    /// An index outside the ring or a WQE longer than the stride is refused
    /// (false).
    pub fn write(&mut self, index: u16, wqe: &[u8]) -> bool {
        let stride = self.ring.stride as usize;
        if u32::from(index) >= self.ring.wqe_count || wqe.len() > stride {
            return false;
        }
        let at = usize::from(index) * stride;
        // SAFETY: the entry lies inside the SRQ ring (index < wqe_count,
        // wqe.len() <= stride), valid while the SRQ (owned here) lives.
        unsafe { std::ptr::copy_nonoverlapping(wqe.as_ptr(), self.ring.buf.add(at), wqe.len()) };
        true
    }

    /// Publishes the receive counter: WQEs posted so far.
    pub fn publish(&mut self, posted: u16) {
        // SAFETY: word 0 of the SRQ doorbell record, 4-aligned, valid while
        // the SRQ lives.
        let counter = unsafe { &*(self.ring.dbrec as *const AtomicU32) };
        counter.store(mlx5::dbrec_word(posted), Ordering::Release);
    }
}
