//! Safe owners of the rings a transport drives: [`SendQueue`] (a QP's send
//! ring, its doorbell record and doorbell), [`PolledCq`] (a CQ and the
//! transport's consumer index) and [`RecvQueue`] (an SRQ ring and its
//! counter). Each takes the device handle by value, so the ring memory
//! lives exactly as long as its owner and nobody else writes it; the raw
//! pointer work is [`QueueMemory`]'s, and the transport above has none.

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

use crate::hca::objects::{Cq, Doorbell, Qp, Srq};
use crate::mlx5::{self, CqeBytes, CQE_LEN, SEND_WQE_BB};
use crate::mlx5::{CqRing, RecvRing, SendRing};

/// A device queue whose ring and doorbell record the host reaches through
/// its handle.
///
/// # Safety
/// `memory` gives the ring's address and length in bytes and the address
/// of its doorbell record (two 4-aligned 32-bit words), all valid for
/// reads and writes while the handle lives, at the same addresses however
/// the handle moves.
unsafe trait DeviceQueue {
    fn memory(&self) -> (*mut u8, usize, *mut u32);
}

// SAFETY: the send ring and doorbell record of the QP (`SendRing`'s
// contract), mapped while the QP lives: the soft HCA's QP owns them behind
// a pointer, rdma-core maps them for the QP object.
unsafe impl DeviceQueue for Qp {
    fn memory(&self) -> (*mut u8, usize, *mut u32) {
        let ring = self.send_ring();
        (
            ring.buf,
            ring.wqebb_count as usize * SEND_WQE_BB,
            ring.dbrec,
        )
    }
}

// SAFETY: as for `Qp`, the CQ's ring of `cqe_count` CQEs and its record.
unsafe impl DeviceQueue for Cq {
    fn memory(&self) -> (*mut u8, usize, *mut u32) {
        let ring = self.ring();
        (ring.buf, ring.cqe_count as usize * CQE_LEN, ring.dbrec)
    }
}

// SAFETY: as for `Qp`, the SRQ's ring of `wqe_count` WQEs of `stride`
// bytes and its record.
unsafe impl DeviceQueue for Srq {
    fn memory(&self) -> (*mut u8, usize, *mut u32) {
        let ring = self.ring();
        (
            ring.buf,
            ring.wqe_count as usize * ring.stride as usize,
            ring.dbrec,
        )
    }
}

/// A queue whose ring only the host writes: the device reads the entries
/// below the published counter and never writes the ring.
trait HostWritten: DeviceQueue {}
impl HostWritten for Qp {}
impl HostWritten for Srq {}

/// A device queue's handle with its ring and doorbell record: every host
/// access to that memory goes through here.
struct QueueMemory<H> {
    ring: *mut u8,
    len: usize,
    dbrec: *mut u32,
    handle: H,
}

impl<H: DeviceQueue> QueueMemory<H> {
    fn new(handle: H) -> Self {
        let (ring, len, dbrec) = handle.memory();
        QueueMemory {
            ring,
            len,
            dbrec,
            handle,
        }
    }

    /// Word `index` (0 or 1) of the doorbell record.
    #[inline(always)]
    fn dbrec_word(&self, index: usize) -> &AtomicU32 {
        assert!(index < 2, "a doorbell record has two words");
        // SAFETY: word 0 or 1 of the record, 4-aligned and valid while the
        // handle (held) lives (`DeviceQueue`); host and device reach it
        // only atomically.
        unsafe { &*self.dbrec.add(index).cast::<AtomicU32>() }
    }

    /// The address of ring byte `offset` (for the doorbell, which reads the
    /// control segment there).
    #[inline(always)]
    fn ring_address(&self, offset: usize) -> *const u8 {
        self.ring.wrapping_add(offset)
    }

    /// Ring byte `offset`, which the device writes last in an entry.
    #[inline(always)]
    fn ring_byte(&self, offset: usize) -> &AtomicU8 {
        assert!(offset < self.len, "ring byte {offset} past {}", self.len);
        // SAFETY: a byte inside the ring, valid while the handle (held)
        // lives; read atomically, as the device may write it.
        unsafe { &*self.ring.add(offset).cast::<AtomicU8>() }
    }

    /// A copy of the ring bytes from `offset`, which the device has handed
    /// over (its ownership byte read with acquire through `ring_byte`) and
    /// does not rewrite while the host holds them.
    #[inline(always)]
    fn copy_from_ring(&self, offset: usize, out: &mut [u8]) {
        assert!(
            offset <= self.len && out.len() <= self.len - offset,
            "ring bytes {offset}+{} past {}",
            out.len(),
            self.len
        );
        // SAFETY: inside the ring (checked), valid while the handle lives,
        // not written by the device meanwhile (the caller's contract
        // above); `out` is a distinct host buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ring.add(offset), out.as_mut_ptr(), out.len())
        };
    }

    fn handle(&self) -> &H {
        &self.handle
    }

    fn into_handle(self) -> H {
        self.handle
    }
}

impl<H: HostWritten> QueueMemory<H> {
    /// The ring's bytes, to read posted entries back.
    #[inline(always)]
    fn bytes(&self) -> &[u8] {
        // SAFETY: `len` bytes valid while the handle (held) lives; the
        // device only reads this ring (`HostWritten`), and host writes need
        // `&mut self`.
        unsafe { std::slice::from_raw_parts(self.ring.cast_const(), self.len) }
    }

    /// The ring's bytes, to write entries into. The device reads only
    /// entries below the published counter; the caller writes only entries
    /// it has not published or whose work has completed.
    #[inline(always)]
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` makes this the only host
        // borrow of the ring.
        unsafe { std::slice::from_raw_parts_mut(self.ring, self.len) }
    }
}

/// A QP with its send ring: the only writer of the ring and the send
/// counter of its doorbell record.
pub struct SendQueue {
    ring: SendRing,
    doorbell: Doorbell,
    memory: QueueMemory<Qp>,
}

impl SendQueue {
    pub fn new(qp: Qp) -> SendQueue {
        SendQueue {
            ring: qp.send_ring(),
            doorbell: qp.doorbell(),
            memory: QueueMemory::new(qp),
        }
    }

    #[inline(always)]
    pub fn qp(&self) -> &Qp {
        self.memory.handle()
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

    /// The ring's bytes, to write WQEs into. The device reads only blocks
    /// below the published send counter ([`SendQueue::publish`]); the
    /// caller writes only blocks it has not published or whose WQEs have
    /// completed.
    #[inline(always)]
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.memory.bytes_mut()
    }

    /// The ring's bytes, to read posted WQEs back (failover).
    pub fn bytes(&self) -> &[u8] {
        self.memory.bytes()
    }

    /// Publishes `pi` as the send counter (release ordering: the device
    /// sees the WQE bytes first) and rings the doorbell for the WQE whose
    /// control segment is at index `ctrl_index`.
    #[inline(always)]
    pub fn publish(&self, pi: u16, ctrl_index: u16) {
        // Word 1 of the doorbell record is the send counter.
        self.memory
            .dbrec_word(1)
            .store(mlx5::dbrec_word(pi), Ordering::Release);
        let at = (usize::from(ctrl_index) & (self.ring.wqebb_count as usize - 1)) * SEND_WQE_BB;
        ring_doorbell(&self.doorbell, self.memory.ring_address(at));
    }

    /// Hands the QP back (its queue is done: the QP is retired).
    pub fn into_qp(self) -> Qp {
        self.memory.into_handle()
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
    memory: QueueMemory<Cq>,
}

impl PolledCq {
    pub fn new(cq: Cq) -> PolledCq {
        PolledCq {
            ring: cq.ring(),
            ci: 0,
            memory: QueueMemory::new(cq),
        }
    }

    pub fn cq(&self) -> &Cq {
        self.memory.handle()
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
        self.cq().arm(self.ci, solicited_only);
    }

    /// The ring offset of the entry at free-running index `index` and
    /// whether the device handed it over (for the pass `index` belongs
    /// to).
    #[inline]
    fn slot_at(&self, index: u32) -> (usize, bool) {
        let at = (index & (self.ring.cqe_count - 1)) as usize * CQE_LEN;
        // Read with acquire so the rest of the entry, written before its
        // op_own byte, is visible.
        let op_own = self
            .memory
            .ring_byte(at + mlx5::CQE_OP_OWN_OFFSET)
            .load(Ordering::Acquire);
        (
            at,
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
        // Handed over; the device does not rewrite it before the consumer
        // index passes it (the CQ cannot overflow).
        self.memory.copy_from_ring(entry, &mut bytes);
        Some(bytes)
    }

    /// Whether a CQE is waiting (without consuming it).
    pub fn has_cqe(&self) -> bool {
        self.slot_at(self.ci).1
    }

    /// Takes the next CQE, as its bytes (a receive CQE may carry the
    /// message itself), and publishes the new consumer index.
    #[inline]
    pub fn poll(&mut self) -> Option<CqeBytes> {
        let bytes = self.peek(0)?;
        self.ci = self.ci.wrapping_add(1);
        // Word 0 of the CQ doorbell record is the consumer index.
        self.memory
            .dbrec_word(0)
            .store((self.ci & 0x00ff_ffff).to_be(), Ordering::Release);
        Some(bytes)
    }
}

/// An SRQ and its ring: the only writer of its receive WQEs and counter.
pub struct RecvQueue {
    ring: RecvRing,
    memory: QueueMemory<Srq>,
}

impl RecvQueue {
    pub fn new(srq: Srq) -> RecvQueue {
        RecvQueue {
            ring: srq.ring(),
            memory: QueueMemory::new(srq),
        }
    }

    pub fn srq(&self) -> &Srq {
        self.memory.handle()
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
        self.memory.bytes_mut()[at..at + wqe.len()].copy_from_slice(wqe);
        true
    }

    /// Publishes the receive counter: WQEs posted so far.
    pub fn publish(&mut self, posted: u16) {
        // Word 0 of the SRQ doorbell record is the receive counter.
        self.memory
            .dbrec_word(0)
            .store(mlx5::dbrec_word(posted), Ordering::Release);
    }
}
