//! The send CQ: a signalled CQE completes every op of its ep up to its WQE
//! (the device completes in order); an error CQE fails its ep. The ops come
//! out of the ep's [`crate::rc::txwq::TxWq`]; this file runs their
//! completion work and the user's completions, and calls the error handler.

use std::ffi::{c_uint, c_void};

use crate::abi::*;
use crate::failover::OnError;
use crate::hca::AtomicResultOrder;
use crate::mlx5::{self, Cqe64};
use crate::rc::ep::RcEp;
use crate::rc::iface::{IfaceState, RcIface};
use crate::rc::txwq::{CompletionAction, OutstandingOp};

/// The status an error CQE's syndrome means for the user.
pub fn syndrome_status(syndrome: u8) -> Status {
    match syndrome {
        mlx5::MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR
        | mlx5::MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR => Status::EndpointTimeout,
        mlx5::MLX5_CQE_SYNDROME_WR_FLUSH_ERR => Status::Canceled,
        mlx5::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR
        | mlx5::MLX5_CQE_SYNDROME_REMOTE_OP_ERR
        | mlx5::MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR
        | mlx5::MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR => Status::ConnectionReset,
        _ => Status::IoError,
    }
}

/// Calls a completion the way UCX's `uct_invoke_completion` does: records
/// the first error, counts down, calls `func` at zero.
///
/// # Safety
/// `comp` must be NULL or a live completion.
pub unsafe fn invoke_completion(comp: *mut uct_completion_t, status: ucs_status_t) {
    if comp.is_null() {
        return;
    }
    // SAFETY: live by the contract; the reference ends before the callback.
    let (remaining, func) = unsafe {
        let c = &mut *comp;
        if status != UCS_OK && c.status == UCS_OK {
            c.status = status;
        }
        c.count -= 1;
        (c.count, c.func)
    };
    if remaining == 0 {
        if let Some(func) = func {
            // SAFETY: the caller's callback for its completion.
            unsafe { func(comp) };
        }
    }
}

/// The completion work of an op that completed successfully: the READ's
/// data to the caller's unpack callback or buffer, a fetched atomic value
/// to the caller's result.
///
/// # Safety
/// `op` was just taken off its ep's send queue and still owns its bounce
/// buffer; the caller's buffers and callbacks it names are valid until its
/// completion (UCT's contract).
unsafe fn run_action(op: &OutstandingOp, order: AtomicResultOrder) {
    let Some(bounce) = op.bounce else {
        return;
    };
    match op.action {
        CompletionAction::Unpack {
            unpack_cb: Some(unpack),
            arg,
            length,
        } => {
            // SAFETY: the READ wrote `length` bytes at bounce.data; the
            // callback is the caller's, with its argument.
            unsafe { unpack(arg, bounce.data as *const c_void, length) };
        }
        // Zero length: nothing to copy (the caller's buffer may be NULL).
        CompletionAction::CopyOut { buffer, length } if length > 0 => {
            // SAFETY: the READ wrote `length` bytes at bounce.data (at most
            // the data area); the caller's buffer holds `length` bytes until
            // the op completes, and the two never overlap.
            unsafe { std::ptr::copy_nonoverlapping(bounce.data, buffer, length) };
        }
        CompletionAction::FetchResult { result, width } => {
            let big_endian = order.big_endian(width);
            // SAFETY: the atomic wrote `width` bytes at bounce.data; the
            // caller's result buffer is valid until completion.
            unsafe {
                if width == 4 {
                    let v = (bounce.data as *const u32).read_unaligned();
                    let v = if big_endian { u32::from_be(v) } else { v };
                    (result as *mut u32).write_unaligned(v);
                } else {
                    let v = (bounce.data as *const u64).read_unaligned();
                    let v = if big_endian { u64::from_be(v) } else { v };
                    (result as *mut u64).write_unaligned(v);
                }
            }
        }
        _ => {}
    }
}

impl RcIface {
    /// Runs an op's completion work (on success), releases what it holds,
    /// and calls the caller's completion with `status`.
    ///
    /// # Safety
    /// `iface` live; `op` just taken off one of its eps' send queues; no
    /// borrow of the iface is held (user callbacks run from here).
    pub(crate) unsafe fn finish_op(iface: *mut RcIface, op: OutstandingOp, status: ucs_status_t) {
        // SAFETY: by the contract; each borrow of the iface is a short one
        // that ends before the next user callback.
        unsafe {
            if status == UCS_OK {
                run_action(&op, (*iface).state.atomic_result_order);
            }
            (*iface).state.tx.release(&op);
            invoke_completion(op.comp, status);
        }
    }

    /// Completes, in order, every op of `ep` (QP `qpn`) posted at or before
    /// WQE `wqe_counter`, until a callback destroys the ep.
    ///
    /// # Safety
    /// `iface` live, no borrow of it or the ep held.
    unsafe fn complete_through(iface: *mut RcIface, ep: *mut RcEp, qpn: u32, wqe_counter: u16) {
        loop {
            // SAFETY: live by the contract; the borrow ends here.
            let next = unsafe { (*iface).state.live_ep(ep, qpn) }
                .and_then(|ep| ep.txwq_mut().complete_next(wqe_counter));
            let Some(op) = next else { break };
            // SAFETY: as above.
            unsafe { Self::finish_op(iface, op, UCS_OK) };
        }
    }

    /// An error CQE for WQE `wqe_counter` with `status`: ops before it
    /// completed, it and every later op did not. The ep fails (posts return
    /// `status`) and the iface's error handler is called once, before the
    /// ops are touched: its answer decides with the failover state
    /// ([`crate::failover::EpFailover`]) whether they are held for purge
    /// (failover enabled, `UCS_INPROGRESS`, invalidated with
    /// `NO_COMPLETIONS`) or completed with `status`.
    ///
    /// # Safety
    /// As for [`RcIface::complete_through`].
    unsafe fn fail(iface: *mut RcIface, ep: *mut RcEp, qpn: u32, wqe_counter: u16, status: Status) {
        // SAFETY: live by the contract; short borrows, none across callbacks.
        let Some(error) =
            (unsafe { (*iface).state.live_ep(ep, qpn) }).map(|e| e.begin_error(status))
        else {
            return;
        };
        let status = error.status;
        if error.first {
            // Everything before the failed WQE was executed.
            // SAFETY: as above.
            unsafe { Self::complete_through(iface, ep, qpn, wqe_counter.wrapping_sub(1)) };
        }
        // SAFETY: as above.
        let state: &mut IfaceState = unsafe { &mut (*iface).state };
        let (handler, arg) = (state.err_handler, state.err_handler_arg);
        let Some(this) = state.live_ep(ep, qpn) else {
            return;
        };
        if error.first {
            this.set_failed(status);
        }
        let (mut decision, report) = this.error_decision(status);
        if report {
            tracing::debug!("rc_mlx5 ep {ep:p}: failed with {status}");
            // SAFETY: no borrow is held; the handler may destroy the ep.
            let answer = unsafe { IfaceState::report_error(handler, arg, ep as uct_ep_h, status) };
            // SAFETY: live by the contract.
            let rc = unsafe { &mut *iface };
            let has_tokens = rc.advertises_query_token();
            let Some(this) = rc.state.live_ep(ep, qpn) else {
                return;
            };
            if decision == OnError::AskHandler {
                decision = this.failover.on_handler_result(status, answer, has_tokens);
            }
        }
        if decision == OnError::Keep {
            return;
        }
        loop {
            // SAFETY: as above; the borrow ends before the callback.
            let next =
                unsafe { (*iface).state.live_ep(ep, qpn) }.and_then(|ep| ep.txwq_mut().fail_next());
            let Some(op) = next else { break };
            // SAFETY: as above.
            unsafe { Self::finish_op(iface, op, status.raw()) };
        }
    }

    /// Polls the send CQ.
    ///
    /// # Safety
    /// A live iface; no borrow of it held.
    pub(super) unsafe fn poll_tx(iface: *mut RcIface) -> c_uint {
        let mut count = 0;
        // SAFETY: live by the contract.
        let max = unsafe { (*iface).state.limits.tx_max_poll };
        while count < max {
            // SAFETY: as above; the borrow ends here.
            let Some(next) = (unsafe { (*iface).state.next_tx() }) else {
                break;
            };
            count += 1;
            let Some((ep, cqe)) = next else { continue };
            if cqe.is_error() {
                let status = syndrome_status(cqe.syndrome);
                // SAFETY: as above.
                unsafe { Self::fail(iface, ep, cqe.qpn, cqe.wqe_counter, status) };
            } else {
                // SAFETY: as above.
                unsafe { Self::complete_through(iface, ep, cqe.qpn, cqe.wqe_counter) };
            }
        }
        count
    }
}

impl IfaceState {
    /// Takes the next send CQE: `None` when the CQ is empty, `Some(None)`
    /// for a CQE of no live ep (dropped), else the ep and the CQE.
    fn next_tx(&mut self) -> Option<Option<(*mut RcEp, Cqe64)>> {
        let cqe = Cqe64::decode(&self.tx_cq.poll()?);
        let Some(&ep) = self.eps.get(&cqe.qpn) else {
            tracing::debug!("rc_mlx5: send CQE for unknown QP 0x{:x}", cqe.qpn);
            return Some(None);
        };
        if cqe.is_error() && cqe.syndrome != mlx5::MLX5_CQE_SYNDROME_WR_FLUSH_ERR {
            tracing::debug!(
                "rc_mlx5 ep {ep:p}: error CQE syndrome 0x{:x} (vendor 0x{:x}) at WQE {}",
                cqe.syndrome,
                cqe.vendor_syndrome,
                cqe.wqe_counter
            );
        }
        Some(Some((ep, cqe)))
    }
}
