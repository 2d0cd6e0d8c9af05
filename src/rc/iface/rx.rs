//! The receive side: the SRQ of registered bounce buffers, the receive CQ,
//! AM dispatch, and the flow-control bits of received AM headers.
//!
//! Receive buffer layout (one pool buffer, `offset` = payload offset):
//! `lkey (4) | pad (4) | … | release-desc pointer (8) | user headroom
//! (rx_headroom) | payload`, where the SRQ entry points [`AM_HDR_LEN`] bytes
//! before the payload so the AM header lands there. A descriptor kept by an
//! AM handler (`UCS_INPROGRESS`) has the pointer to the iface's
//! `uct_recv_desc_t` right before the user headroom, as UCX's
//! `uct_iface_release_desc` expects.

use std::ffi::{c_uint, c_void};

use crate::abi::*;
use crate::core::data_trace;
use crate::hca::{RecvQueue, Srq};
use crate::mlx5::{self, Cqe64, DataSeg, SrqNextSeg};
use crate::rc::fc::{Request, RxHeader, FC_MASK};
use crate::rc::iface::{IfaceState, RcIface};
use crate::rc::limits::{Limits, AM_HDR_LEN, AM_ID_OFFSET, TMH_NO_TAG};
use crate::uct::iface::IfaceBase;
use crate::uct::pool::BufferPool;

/// The `uct_recv_desc_t` of an iface's receive descriptors, with the way
/// back to the receive state (the release callback gets a pointer to this).
#[repr(C)]
pub struct ReleaseDesc {
    pub desc: uct_recv_desc_t,
    rx: *mut RxState,
}

/// Releases a receive descriptor kept by an AM handler.
unsafe extern "C" fn release_rx_desc(self_: *mut uct_recv_desc_t, desc: *mut c_void) {
    // SAFETY: self_ is the iface's ReleaseDesc (repr(C), desc first), whose
    // `rx` is the receive state of the iface, which lives as long as it; the
    // user releases descriptors before closing the iface.
    let rx = unsafe { &mut *(*(self_ as *mut ReleaseDesc)).rx };
    rx.release(desc);
}

/// An AM taken off the receive CQ, to hand to its handler.
pub(super) struct RxAm {
    index: u16,
    buffer: *mut u8,
    /// Where the AM's payload starts in the buffer.
    payload: *mut u8,
    id: u8,
    len: usize,
    /// The QP it arrived on (for the data-path line).
    qpn: u32,
}

/// The SRQ, its buffers and the receive pool.
pub(super) struct RxState {
    queue: RecvQueue,
    /// Receive WQEs published so far (the SRQ counter). The device takes
    /// entries in ring order (0, 1, …, wrapping), so the counter may only
    /// move over entries in that order: an entry given a buffer while an
    /// earlier one is still in the device's hands waits in `ready`,
    /// otherwise the device would take the busy one again.
    posted: u16,
    /// Entries holding a fresh buffer that the counter has not reached.
    ready: Vec<bool>,
    /// Entries left without a buffer (the receive pool was empty); refilled
    /// by the next publish.
    starved: Vec<u16>,
    /// The buffer each SRQ entry points at.
    buffers: Vec<*mut u8>,
    pool: BufferPool,
    /// Offset of the payload in a receive buffer.
    offset: usize,
    seg_size: usize,
    headroom: usize,
    /// Boxed so its address is stable for descriptors handed out.
    release_desc: Box<ReleaseDesc>,
}

/// Moves an SRQ counter at `posted` over the ready entries of `ready` (a
/// power-of-two ring) in ring order, clearing them; stops at the first
/// entry that is not ready. Returns the new counter.
fn advance_over_ready(ready: &mut [bool], mut posted: u16) -> u16 {
    let mask = (ready.len() - 1) as u16;
    while let Some(entry) = ready.get_mut(usize::from(posted & mask)) {
        if !std::mem::take(entry) {
            break;
        }
        posted = posted.wrapping_add(1);
    }
    posted
}

impl RxState {
    pub(super) fn new(srq: Srq, pool: BufferPool, offset: usize, limits: &Limits) -> RxState {
        let queue = RecvQueue::new(srq);
        let len = queue.wqe_count() as usize;
        RxState {
            queue,
            posted: 0,
            ready: vec![false; len],
            starved: Vec::new(),
            buffers: vec![std::ptr::null_mut(); len],
            pool,
            offset,
            seg_size: limits.seg_size(),
            headroom: limits.rx_headroom(),
            release_desc: Box::new(ReleaseDesc {
                desc: uct_recv_desc_t {
                    cb: Some(release_rx_desc),
                },
                rx: std::ptr::null_mut(),
            }),
        }
    }

    /// Entries of the SRQ.
    pub(super) fn len(&self) -> u32 {
        self.queue.wqe_count()
    }

    pub(super) fn srq(&self) -> &Srq {
        self.queue.srq()
    }

    /// Gives every SRQ entry a buffer and publishes them. Called once this
    /// state is in its final place (the boxed iface): released descriptors
    /// find it by its address.
    pub(super) fn fill(&mut self) -> Result<(), Status> {
        self.release_desc.rx = self;
        for index in 0..self.len() as u16 {
            let buffer = self.pool.get()?;
            self.post_recv(index, buffer);
        }
        self.publish();
        Ok(())
    }

    /// The bytes of the buffer of SRQ entry `index`, which a receive CQE
    /// just handed back: its header area, then from `offset - AM_HDR_LEN`
    /// (where the entry points: the AM header) the data area.
    #[inline]
    fn bytes(&mut self, index: u16) -> &mut [u8] {
        let buffer = self.buffers[usize::from(index)];
        // SAFETY: entry buffers come from `pool`, whose segments hold
        // `offset - AM_HDR_LEN + seg_size` bytes; the device is done with
        // this entry's buffer (its CQE came) and it is not given to the
        // entry again before the caller is done; `&mut self` is the only
        // borrow.
        unsafe { std::slice::from_raw_parts_mut(buffer, self.offset - AM_HDR_LEN + self.seg_size) }
    }

    /// The data area of entry `index`'s buffer, from the AM header on.
    #[inline]
    fn data(&mut self, index: u16) -> &mut [u8] {
        let start = self.offset - AM_HDR_LEN;
        &mut self.bytes(index)[start..]
    }

    /// Writes SRQ entry `index` to receive into `buffer`; the next
    /// [`RxState::publish`] hands it to the device.
    fn post_recv(&mut self, index: u16, buffer: *mut u8) {
        self.buffers[usize::from(index)] = buffer;
        let mut wqe = [0u8; 2 * mlx5::SEG_LEN];
        let next = index.wrapping_add(1) & (self.len() as u16 - 1);
        let (head, data) = wqe.split_at_mut(mlx5::SEG_LEN);
        if let Ok(head) = head.try_into() {
            SrqNextSeg {
                next_wqe_index: next,
                signature: 0,
            }
            .write(head);
        }
        DataSeg {
            byte_count: self.seg_size as u32,
            lkey: self.pool.lkey(buffer),
            addr: buffer as u64 + (self.offset - AM_HDR_LEN) as u64,
        }
        .write(data);
        if self.queue.write(index, &wqe) {
            self.ready[usize::from(index)] = true;
        } else {
            tracing::error!("rc_mlx5: SRQ entry {index} cannot hold a receive WQE");
        }
    }

    /// Refills starved entries if the pool has buffers again, moves the
    /// counter over every ready entry in ring order and publishes it.
    fn publish(&mut self) {
        while let Some(&index) = self.starved.last() {
            let Ok(buffer) = self.pool.get() else {
                break;
            };
            self.starved.pop();
            self.post_recv(index, buffer);
        }
        let before = self.posted;
        self.posted = advance_over_ready(&mut self.ready, before);
        if self.posted != before {
            self.queue.publish(self.posted);
        }
    }

    /// Gives entry `index` back its buffer (nothing kept it).
    fn repost(&mut self, index: u16, buffer: *mut u8) {
        self.post_recv(index, buffer);
        self.publish();
    }

    /// A descriptor an AM handler kept comes back (`desc` is the payload
    /// minus the user headroom).
    fn release(&mut self, desc: *mut c_void) {
        let payload = desc as usize + self.headroom;
        self.pool.put((payload - self.offset) as *mut u8);
        // Receive entries left without a buffer get this one.
        if !self.starved.is_empty() {
            self.publish();
        }
    }

    /// The handler of `am` answered `status`: with `UCS_INPROGRESS` it keeps
    /// the buffer (the release hook goes in front of its headroom and the
    /// entry gets a fresh buffer), otherwise the entry gets it back.
    pub(super) fn after_am(&mut self, am: RxAm, status: ucs_status_t) {
        if status != UCS_INPROGRESS {
            self.repost(am.index, am.buffer);
            return;
        }
        let hook: *mut uct_recv_desc_t = &mut self.release_desc.desc;
        // The release-desc slot of the buffer's header area, right before the
        // user headroom (`offset >= LKEY_BYTES + 8 + headroom`).
        let at = self.offset - self.headroom - 8;
        self.bytes(am.index)[at..at + 8].copy_from_slice(&(hook as usize).to_ne_bytes());
        match self.pool.get() {
            Ok(fresh) => self.repost(am.index, fresh),
            Err(status) => {
                tracing::error!("rc_mlx5: no receive buffer: {status}");
                self.starved.push(am.index);
            }
        }
    }
}

impl IfaceState {
    /// Settles the buffer of the AM `handled` by its handler's answer, then
    /// takes receive CQEs (counting them in `polled`, up to the poll limit)
    /// until one carries an AM for its handler. Runs no user callback.
    pub(super) fn next_rx(
        &mut self,
        polled: &mut u32,
        handled: Option<(RxAm, ucs_status_t)>,
    ) -> Option<RxAm> {
        if let Some((am, status)) = handled {
            self.rx.after_am(am, status);
        }
        while *polled < self.limits.rx_max_poll() {
            let cqe = self.rx_cq.poll()?;
            *polled += 1;
            if let Some(am) = self.take_rx(&cqe) {
                return Some(am);
            }
        }
        None
    }

    /// What receive CQE `cqe_bytes` delivers: `None` when nothing goes to
    /// the user (an error, a malformed or foreign message, a flow-control
    /// grant; its buffer went back at once), else an AM for its handler.
    /// Runs no user callback.
    fn take_rx(&mut self, cqe_bytes: &mlx5::CqeBytes) -> Option<RxAm> {
        let cqe = Cqe64::decode(cqe_bytes);
        let rx = &mut self.rx;
        let index = cqe.wqe_counter & (rx.len() as u16 - 1);
        let buffer = rx.buffers[usize::from(index)];
        let len = cqe.byte_cnt as usize;
        let mut valid = !cqe.is_error()
            && cqe.opcode == mlx5::MLX5_CQE_RESP_SEND
            && (AM_HDR_LEN..=rx.seg_size).contains(&len);
        // Scatter-to-CQE (libmlx5's default): a short message is in the CQE,
        // not the buffer. Moving it into the buffer keeps one dispatch path
        // and lets a handler keep the descriptor.
        if valid && mlx5::cqe_format_is_special(cqe_bytes[mlx5::CQE_OP_OWN_OFFSET]) {
            valid = take_inline_rx(cqe_bytes, rx.data(index));
        }
        let header = rx.data(index);
        // A hardware tag-matching message (a peer with TM on) is not an AM:
        // dropped below, with the line saying so.
        valid = valid && header[0] == TMH_NO_TAG;
        if !valid {
            if cqe.is_error() && cqe.syndrome == mlx5::MLX5_CQE_SYNDROME_WR_FLUSH_ERR {
                // A QP in error hands back its posted receives: expected
                // after a cancel or a failure, which was reported already.
                tracing::debug!("rc_mlx5: receive flushed (QP in error)");
            } else if cqe.is_error() {
                tracing::warn!("rc_mlx5: receive error CQE syndrome 0x{:x}", cqe.syndrome);
            } else {
                tracing::warn!(
                    "rc_mlx5: dropped receive of {len} bytes (opcode {})",
                    cqe.opcode
                );
            }
            rx.repost(index, buffer);
            return None;
        }
        let id_byte = header[AM_ID_OFFSET];
        let len = len - AM_HDR_LEN;
        let id = if id_byte & FC_MASK == 0 {
            id_byte
        } else {
            match self.handle_fc(cqe.qpn, id_byte, len) {
                Some(id) => id,
                // The grant message or a malformed header: nothing for the
                // user; the buffer goes back at once.
                None => {
                    self.rx.repost(index, buffer);
                    return None;
                }
            }
        };
        Some(RxAm {
            index,
            buffer,
            payload: buffer.wrapping_add(self.rx.offset),
            id,
            len,
            qpn: cqe.qpn,
        })
    }

    /// Acts on the flow-control bits of a received header (see
    /// [`crate::rc::fc`]) for the ep of QP `qpn`. Returns the AM id to
    /// deliver, or `None` when nothing is delivered (the grant message, a
    /// malformed header). Runs no user callback.
    #[cold]
    #[inline(never)]
    fn handle_fc(&mut self, qpn: u32, header: u8, len: usize) -> Option<u8> {
        let (deliver, grant, request) = match RxHeader::parse(header, len) {
            RxHeader::Malformed => return None,
            RxHeader::PureGrant => (None, true, None),
            RxHeader::Am { id, grant, request } => (Some(id), grant, request),
        };
        if !grant && request.is_none() {
            return deliver;
        }
        let (fc, credits) = (&self.fc, &mut self.tx.credits);
        let Some(&ep) = self.eps.get(&qpn) else {
            tracing::debug!("rc_mlx5: flow-control bits for unknown QP 0x{qpn:x} ignored");
            return deliver;
        };
        // SAFETY: eps in the table are live; a short borrow with no callback
        // (the table and the credits are other fields of `self`).
        let ep = unsafe { &mut *ep };
        if !ep.state().is_connected() {
            // Failed, canceled or being torn down: its window is moot.
            tracing::debug!(
                "rc_mlx5 ep {:p}: flow-control bits on a dead ep ignored",
                ep
            );
            return deliver;
        }
        if grant && ep.fc.granted(fc) {
            // The window was exhausted: pending requests may go now.
            self.dispatch_due = true;
        }
        match request {
            None => {}
            Some(Request::Soft) => ep.fc.owe_grant(),
            Some(Request::Hard) => match ep.post_fc_grant(credits) {
                Ok(()) => {}
                Err(Status::NoResource) => {
                    // Sent by progress before any pending request.
                    ep.fc.defer_pure_grant();
                    self.dispatch_due = true;
                }
                Err(status) => {
                    tracing::debug!("rc_mlx5 ep {:p}: grant not sent: {status}", ep);
                }
            },
        }
        deliver
    }
}

/// Copies the message a receive CQE carries inline (at most 32 bytes,
/// flagged in its format bits) to `dst`, where the receive buffer's data
/// segment starts. False for a format we never enable (128-byte or
/// compressed CQEs) or a message longer than `dst`.
#[cold]
#[inline(never)]
fn take_inline_rx(cqe: &mlx5::CqeBytes, dst: &mut [u8]) -> bool {
    let Some(data) = mlx5::cqe_inline_data(cqe) else {
        tracing::warn!(
            "rc_mlx5: dropped receive CQE with format bits 0x{:x}",
            cqe[mlx5::CQE_OP_OWN_OFFSET] & mlx5::MLX5_CQE_FORMAT_MASK
        );
        return false;
    };
    match dst.get_mut(..data.len()) {
        Some(dst) => {
            dst.copy_from_slice(data);
            true
        }
        None => false,
    }
}

/// The data-path line of an AM about to go to its handler, after the
/// iface's AM tracer (if any) saw it on its receive side.
#[cold]
#[inline(never)]
fn trace_am_received(base: &IfaceBase, am: &RxAm) {
    // SAFETY: the payload is `am.len` bytes of the receive buffer after the
    // AM header, ours until the handler runs.
    let data = unsafe { std::slice::from_raw_parts(am.payload, am.len) };
    let tracer_text =
        data_trace::call_am_tracer(base.am().tracer(), UCT_AM_TRACE_TYPE_RECV, am.id, data);
    let mut line = format!(
        "RECV qp 0x{:x} [{:03}] len {}",
        am.qpn,
        am.index,
        am.len + AM_HDR_LEN
    );
    data_trace::am_text(&mut line, am.id, am.len, &tracer_text);
    data_trace::emit(data_trace::source_site!(), &line);
}

impl RcIface {
    /// Polls the receive CQ and delivers AMs: [`IfaceState::next_rx`]
    /// takes the next AM (and settles the last one's buffer by its
    /// handler's answer), this loop runs its handler.
    ///
    /// # Safety
    /// A live iface. AM handlers run from here.
    pub(super) unsafe fn poll_rx(iface: *mut RcIface) -> c_uint {
        let mut count = 0;
        let mut handled = None;
        // SAFETY: live by the contract. Every borrow of the iface ends
        // before the handler runs (it is copied out of the table first), so
        // the handler may call into the iface; the payload is `am.len` bytes
        // of the receive buffer after the AM header, which stays ours (or
        // the handler's, with FLAG_DESC) during the call.
        unsafe {
            while let Some(am) = (*iface).state.next_rx(&mut count, handled.take()) {
                if data_trace::enabled() {
                    trace_am_received(&(*iface).base, &am);
                }
                let handler = (*iface).base.am().handler(am.id);
                let status = handler.call(am.payload.cast(), am.len, UCT_CB_PARAM_FLAG_DESC);
                handled = Some((am, status));
            }
        }
        count
    }
}

#[cfg(test)]
mod srq_order_tests {
    use super::advance_over_ready;

    #[test]
    fn the_counter_moves_only_over_entries_in_ring_order() {
        let mut ready = [true; 4];
        // Initial fill: all four published.
        assert_eq!(advance_over_ready(&mut ready, 0), 4);
        assert_eq!(ready, [false; 4]);
        // Entry 1 comes back before entry 0 (another QP's receive finished
        // first): the device must not be told, or it would take the busy
        // entry 0 again after entry 3.
        ready[1] = true;
        assert_eq!(advance_over_ready(&mut ready, 4), 4);
        assert_eq!(ready, [false, true, false, false]);
        // Entry 0 returns: both are published, in order.
        ready[0] = true;
        assert_eq!(advance_over_ready(&mut ready, 4), 6);
        assert_eq!(ready, [false; 4]);
        // The 16-bit counter wraps with the ring.
        ready[2] = true;
        assert_eq!(advance_over_ready(&mut ready, u16::MAX - 1), u16::MAX);
        ready[3] = true;
        assert_eq!(advance_over_ready(&mut ready, u16::MAX), 0);
    }
}
