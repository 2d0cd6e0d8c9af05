//! The send CQ: a signalled CQE completes every op of its ep up to its WQE
//! (the device completes in order); an error CQE fails its ep. The ops come
//! out of the ep's [`crate::rc::txwq::TxWq`]; this file runs their
//! completion work and the user's completions, and calls the error handler.
//! [`IfaceState::wait_for_send_cqe`] waits for one WQE's CQE without taking
//! it (get_short).

use std::ffi::{c_uint, c_void};
use std::time::{Duration, Instant};

use crate::abi::*;
use crate::failover::OnError;
use crate::failover::PostedOp;
use crate::hca::{AtomicResultOrder, Qp, QpState};
use crate::mlx5::{self, Cqe64};
use crate::rc::ep::RcEp;
use crate::rc::iface::{IfaceState, RcIface};
use crate::rc::txwq::{index_at_or_before, OutstandingOp};

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

/// The level the failure of an ep is logged at, as UCX's rc_mlx5 chooses
/// it: a flushed WQE (the QP was already in error: nothing new) at trace
/// level whatever the handler said, fatal when the error handler did not
/// take the error (or there is none), `UCX_RC_MLX5_FAILURE` (`configured`)
/// for a peer that is gone or unreachable (it is what error handling is
/// for), error for everything else (a local or remote protection error is
/// a bug of the caller).
pub fn failure_log_level(
    configured: ucs_log_level_t,
    status: Status,
    handler_answer: ucs_status_t,
) -> ucs_log_level_t {
    if status == Status::Canceled {
        UCS_LOG_LEVEL_TRACE
    } else if handler_answer != UCS_OK {
        UCS_LOG_LEVEL_FATAL
    } else if matches!(status, Status::EndpointTimeout | Status::ConnectionReset) {
        configured
    } else {
        UCS_LOG_LEVEL_ERROR
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
/// data to the caller's unpack callback, a fetched atomic value
/// to the caller's result.
///
/// # Safety
/// `op` was just taken off its ep's send queue and still owns its bounce
/// buffer; the caller's buffers and callbacks it names are valid until its
/// completion (UCT's contract).
unsafe fn run_action(op: &OutstandingOp, order: AtomicResultOrder) {
    let Some(bounce) = op.bounce() else {
        return;
    };
    match *op.op() {
        PostedOp::GetBcopy {
            unpack_cb: Some(unpack),
            arg,
            length,
            ..
        } => {
            // SAFETY: the READ wrote `length` bytes at bounce.data; the
            // callback is the caller's, with its argument.
            unsafe { unpack(arg, bounce.data as *const c_void, length) };
        }
        PostedOp::AtomicFetch { size, result, .. } | PostedOp::AtomicCswap { size, result, .. } => {
            let width = size.bytes();
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
            invoke_completion(op.op().comp(), status);
        }
    }

    /// Polls the send CQ: for each CQE, [`RcIface::tx_step`] decides (with
    /// no callback) what comes next and this loop runs it: an op's
    /// completion, or the error handler, whose answer goes back to the
    /// next step.
    ///
    /// # Safety
    /// A live iface; no borrow of it held.
    pub(super) unsafe fn poll_tx(iface: *mut RcIface) -> c_uint {
        let mut cursor = TxCursor::default();
        // SAFETY: live by the contract; `tx_next` runs no callback.
        while let Some(step) = unsafe { (*iface).tx_next(&mut cursor) } {
            match step {
                // SAFETY: as above; the op just left its send queue.
                TxStep::Finish(op, status) => unsafe { Self::finish_op(iface, op, status) },
                TxStep::Report {
                    handler,
                    arg,
                    ep,
                    status,
                } => {
                    // SAFETY: no borrow is held; the handler may destroy the
                    // ep (the next step checks).
                    let answer = unsafe { IfaceState::report_error(handler, arg, ep, status) };
                    cursor.answer = Some(answer);
                }
                TxStep::Done => {}
            }
        }
        cursor.polled
    }

    /// The next callback to run for the send CQ: of the CQE in hand, or of
    /// the next one polled; `None` when the CQ is empty or the poll limit
    /// reached.
    fn tx_next(&mut self, cursor: &mut TxCursor) -> Option<TxStep> {
        loop {
            match &mut cursor.work {
                Some(work) => match self.tx_step(work, cursor.answer.take()) {
                    TxStep::Done => cursor.work = None,
                    step => return Some(step),
                },
                None => cursor.work = Some(self.state.next_tx(&mut cursor.polled)?),
            }
        }
    }

    /// The next thing to do for the send CQE `work` (`answer`: the error
    /// handler's, when the last step was [`TxStep::Report`]). A successful
    /// CQE completes, in order, every op posted at or before its WQE. An
    /// error CQE: ops before its WQE completed, it and every later op did
    /// not; the ep fails (posts return the status) and the iface's error
    /// handler is called once, before the ops are touched: its answer
    /// decides with the failover state ([`crate::failover::EpFailover`])
    /// whether they are held for purge (failover enabled, `UCS_INPROGRESS`,
    /// invalidated with `NO_COMPLETIONS`) or completed with the status. A
    /// callback that destroyed the ep ends the work.
    fn tx_step(&mut self, work: &mut CqeWork, mut answer: Option<ucs_status_t>) -> TxStep {
        let has_tokens = self.advertises_query_token();
        let state = &mut self.state;
        let (handler, arg) = (state.err_handler, state.err_handler_arg);
        loop {
            let Some(ep) = state.live_ep(work.ep, work.qpn) else {
                return TxStep::Done;
            };
            work.stage = match work.stage {
                Stage::Done => return TxStep::Done,
                Stage::Complete { counter, then_fail } => {
                    if let Some(op) = ep.txwq_mut().complete_next(counter) {
                        return TxStep::Finish(op, UCS_OK);
                    }
                    match then_fail {
                        Some(status) => Stage::Decide {
                            status,
                            set_failed: true,
                        },
                        None => Stage::Done,
                    }
                }
                Stage::Begin(status) => {
                    let error = ep.begin_error(status);
                    if error.first {
                        // Everything before the failed WQE was executed.
                        Stage::Complete {
                            counter: work.counter.wrapping_sub(1),
                            then_fail: Some(error.status),
                        }
                    } else {
                        Stage::Decide {
                            status: error.status,
                            set_failed: false,
                        }
                    }
                }
                Stage::Decide { status, set_failed } => {
                    if set_failed {
                        ep.set_failed(status);
                    }
                    let (decision, report) = ep.error_decision(status);
                    if report {
                        tracing::debug!("rc_mlx5 ep {:p}: failed with {status}", work.ep);
                        work.stage = Stage::Answer { status, decision };
                        return TxStep::Report {
                            handler,
                            arg,
                            ep: work.ep as uct_ep_h,
                            status,
                        };
                    }
                    Stage::Settle { status, decision }
                }
                Stage::Answer {
                    status,
                    mut decision,
                } => {
                    let answer = answer.take().unwrap_or(status.raw());
                    if decision == OnError::AskHandler {
                        decision = ep.failover.on_handler_result(status, answer, has_tokens);
                    }
                    let level = failure_log_level(state.failure_log_level, status, answer);
                    let (syndrome, vendor) = work.syndrome.unwrap_or_default();
                    crate::log_at_ucx_level!(
                        level,
                        "rc_mlx5: {} on QP 0x{:x} WQE {} (syndrome 0x{syndrome:x}, vendor \
                         syndrome 0x{vendor:x}): ep {:p} failed with {status}, {}",
                        mlx5::syndrome_text(syndrome),
                        work.qpn,
                        work.counter,
                        work.ep,
                        match Status::from_raw(answer) {
                            _ if answer == UCS_OK => "handled by the error handler".to_string(),
                            Some(refused) => format!("the error handler answered {refused}"),
                            None => format!("the error handler answered {answer}"),
                        }
                    );
                    Stage::Settle { status, decision }
                }
                Stage::Settle { status, decision } => {
                    if decision == OnError::Keep {
                        Stage::Done
                    } else {
                        Stage::FailAll(status)
                    }
                }
                Stage::FailAll(status) => match ep.txwq_mut().fail_next() {
                    Some(op) => return TxStep::Finish(op, status.raw()),
                    None => Stage::Done,
                },
            };
        }
    }
}

/// The send-CQ loop's place: CQEs polled so far, the one in hand, and the
/// error handler's answer for its next step.
#[derive(Default)]
struct TxCursor {
    polled: u32,
    work: Option<CqeWork>,
    answer: Option<ucs_status_t>,
}

/// What the send-CQ loop does next ([`RcIface::tx_step`]).
enum TxStep {
    /// Complete this op (taken off its send queue) with this status.
    Finish(OutstandingOp, ucs_status_t),
    /// Call the error handler; its answer goes to the next step.
    Report {
        handler: uct_error_handler_t,
        arg: *mut c_void,
        ep: uct_ep_h,
        status: Status,
    },
    Done,
}

/// Where the handling of one send CQE is.
#[derive(Clone, Copy)]
enum Stage {
    /// Completing the ops up to `counter`, then deciding about the failure
    /// with `then_fail` (the ep fails with it first).
    Complete {
        counter: u16,
        then_fail: Option<Status>,
    },
    /// An error CQE with this status.
    Begin(Status),
    /// What to do with the ops of the failed ep; report it if it is the
    /// first time.
    Decide {
        status: Status,
        set_failed: bool,
    },
    /// The error handler answered.
    Answer {
        status: Status,
        decision: OnError,
    },
    Settle {
        status: Status,
        decision: OnError,
    },
    /// Completing every remaining op with this status.
    FailAll(Status),
    Done,
}

/// One send CQE being handled: its ep (as it was found in the table) and
/// WQE counter.
struct CqeWork {
    ep: *mut RcEp,
    qpn: u32,
    counter: u16,
    /// An error CQE's syndrome and vendor syndrome.
    syndrome: Option<(u8, u8)>,
    stage: Stage,
}

impl IfaceState {
    /// Takes the next send CQE (counting it in `polled`, up to the poll
    /// limit) and the work it means; a CQE of no live ep is dropped.
    fn next_tx(&mut self, polled: &mut u32) -> Option<CqeWork> {
        while *polled < self.limits.tx_max_poll() {
            let cqe = Cqe64::decode(&self.tx_cq.poll()?);
            *polled += 1;
            let Some(&ep) = self.eps.get(&cqe.qpn) else {
                tracing::debug!("rc_mlx5: send CQE for unknown QP 0x{:x}", cqe.qpn);
                continue;
            };
            let stage = if cqe.is_error() {
                if cqe.syndrome != mlx5::MLX5_CQE_SYNDROME_WR_FLUSH_ERR {
                    tracing::debug!(
                        "rc_mlx5 ep {ep:p}: error CQE syndrome 0x{:x} (vendor 0x{:x}) at WQE {}",
                        cqe.syndrome,
                        cqe.vendor_syndrome,
                        cqe.wqe_counter
                    );
                }
                Stage::Begin(syndrome_status(cqe.syndrome))
            } else {
                Stage::Complete {
                    counter: cqe.wqe_counter,
                    then_fail: None,
                }
            };
            return Some(CqeWork {
                ep,
                qpn: cqe.qpn,
                counter: cqe.wqe_counter,
                syndrome: cqe
                    .is_error()
                    .then_some((cqe.syndrome, cqe.vendor_syndrome)),
                stage,
            });
        }
        None
    }
}

/// How long a QP found out of RTS may leave a waited-for WQE without its
/// CQE before the wait gives up: a device flushes every outstanding WQE of
/// a QP in error at once, so this only bounds a device that does not.
const QP_ERROR_GRACE: Duration = Duration::from_millis(100);

/// How often a wait asks the device for its QP's state.
const QP_STATE_INTERVAL: Duration = Duration::from_millis(10);

impl IfaceState {
    /// Waits until the send CQ holds the CQE of WQE `wqe_index` of `qp`
    /// (which must be signalled), driving the device meanwhile, and says
    /// how the WQE completed: `Ok`, or the status of its error CQE.
    ///
    /// Nothing is taken from the CQ and no callback runs: the CQEs stay for
    /// the next progress, which completes this op and every op before it
    /// and runs a failed ep's error path, as for any CQE. Users get their
    /// callbacks from progress only.
    ///
    /// The wait is bounded by the QP: a READ the peer never answers ends
    /// in an error CQE when the QP's retries run out, and a QP in error
    /// flushes its WQEs with error CQEs. A QP found out of RTS without this
    /// WQE's CQE for [`QP_ERROR_GRACE`] ends the wait with `Canceled` (what
    /// the flush would have said), so the wait cannot outlive a QP in
    /// error.
    pub(crate) fn wait_for_send_cqe(&self, qp: &Qp, wqe_index: u16) -> Result<(), Status> {
        let qpn = qp.qpn();
        // CQEs before this many entries past the consumer index were
        // looked at and are not this WQE's.
        let mut scanned = 0u32;
        let mut next_state_check = Instant::now() + QP_STATE_INTERVAL;
        let mut qp_down_since: Option<Instant> = None;
        let mut rounds = 0u32;
        loop {
            self.domain.device.progress();
            while let Some(bytes) = self.tx_cq.peek(scanned) {
                scanned += 1;
                let cqe = Cqe64::decode(&bytes);
                if cqe.qpn != qpn {
                    continue;
                }
                if cqe.wqe_counter == wqe_index {
                    if cqe.is_error() {
                        return Err(syndrome_status(cqe.syndrome));
                    }
                    return Ok(());
                }
                if cqe.is_error() {
                    // An earlier WQE failed: this one follows as a flush
                    // error, or the grace runs out.
                    qp_down_since.get_or_insert_with(Instant::now);
                } else if index_at_or_before(wqe_index, cqe.wqe_counter) {
                    // A CQE of a later WQE covers this one (the device
                    // completes in order).
                    return Ok(());
                }
            }
            rounds = rounds.wrapping_add(1);
            if rounds % 64 != 0 {
                std::hint::spin_loop();
                continue;
            }
            // Two cores are shared with the peer and the device thread.
            std::thread::yield_now();
            let now = Instant::now();
            if qp_down_since.is_none() && now >= next_state_check {
                next_state_check = now + QP_STATE_INTERVAL;
                match qp.query() {
                    Ok(info) if info.state == QpState::Rts => {}
                    Ok(_) | Err(_) => qp_down_since = Some(now),
                }
            }
            if qp_down_since.is_some_and(|since| now.duration_since(since) >= QP_ERROR_GRACE) {
                tracing::warn!(
                    "rc_mlx5 QP 0x{qpn:x}: the QP is in error and WQE {wqe_index} has no \
                     completion: given up as canceled"
                );
                return Err(Status::Canceled);
            }
        }
    }
}
