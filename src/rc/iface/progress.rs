//! Progress: the device, send completions, receives, then pending requests
//! of eps that can post again; the callback registered with the worker
//! (`crate::uct::progress` keeps the registration); event arming.

use std::ffi::{c_int, c_uint, c_void};

use crate::abi::*;
use crate::rc::ep::RcEp;
use crate::rc::iface::{IfaceState, RcIface};
use crate::uct::pending::{self, Answer, DispatchRound};

/// Tracks whether the worker progresses this iface.
unsafe extern "C" fn worker_progress(arg: *mut c_void) -> c_uint {
    // SAFETY: registered with the live iface as argument; unregistered in
    // close before the iface is freed.
    unsafe { RcIface::progress(arg as *mut RcIface) }
}

impl RcIface {
    /// One progress pass: the device, send completions, receives, then
    /// pending requests of eps with room. Returns the events handled.
    ///
    /// # Safety
    /// A live iface, no borrow of it held. User callbacks run from here.
    pub unsafe fn progress(iface: *mut RcIface) -> c_uint {
        // SAFETY: live by the contract; short borrows around callbacks.
        unsafe {
            let domain: &std::sync::Arc<crate::ib::domain::Domain> = &(*iface).state.domain;
            domain.device.progress();
            let tx = Self::poll_tx(iface);
            let rx = Self::poll_rx(iface);
            if tx > 0 || std::mem::take(&mut (*iface).state.dispatch_due) {
                Self::dispatch_pending(iface);
            }
            tx + rx
        }
    }

    /// Runs pending requests as UCX's arbiter does: the eps with requests
    /// take turns, one request per turn, until none can go on
    /// ([`IfaceState::next_pending`] picks, [`IfaceState::pending_answered`]
    /// acts on the answer). A request answering `UCS_INPROGRESS` stays at
    /// the head of its ep's queue and gets another turn in this same
    /// dispatch (UCP sends one fragment of a long message per call and
    /// answers so until the last); `UCS_OK` removes it; anything else keeps
    /// it and ends the ep's turns (its resources ran out), or the whole
    /// dispatch when the iface's send credits did. Unlike UCX's arbiter,
    /// a dispatch takes at most [`pending::MAX_PENDING_CALLS`] turns, so a request
    /// that never finishes cannot hold progress forever; the work left is
    /// due at the next progress.
    ///
    /// # Safety
    /// A live iface, no borrow of it held.
    unsafe fn dispatch_pending(iface: *mut RcIface) {
        // SAFETY: live by the contract; `next_pending` and `pending_answered`
        // run no callback, and no borrow is held while one runs.
        unsafe {
            let round = pending::dispatch(
                |round| (*iface).state.next_pending(round),
                |round, ep, req, status| (*iface).state.pending_answered(round, ep, req, status),
            );
            if round.cut_short() {
                // Work is left: the next progress goes on with it.
                (*iface).state.dispatch_due = true;
            }
        }
    }

    /// Arms the CQs for `events`; `Busy` if completions are already waiting.
    ///
    /// As UCX's rc: `UCT_EVENT_SEND_COMP` arms the send CQ and, with flow
    /// control, the receive CQ for every completion (a grant a blocked
    /// sender waits for is a receive); `UCT_EVENT_RECV` arms the receive CQ
    /// for solicited completions, which AMs are (`MLX5_WQE_CTRL_SOLICITED`)
    /// and grants are not. `UCT_EVENT_RECV_SIG` is not a capability of
    /// rc_mlx5, so it means `UCT_EVENT_RECV` (uct.h's rule for ifaces without
    /// signaled receives). The soft HCA arms for any completion, so there a
    /// `UCT_EVENT_RECV` waiter may also wake for a grant and find no AM (a
    /// spurious wake-up; it re-arms).
    pub fn event_arm(&mut self, events: c_uint) -> Result<(), Status> {
        let state = &mut self.state;
        state.channel.clear();
        let send = events & UCT_EVENT_SEND_COMP != 0;
        let recv_solicited = events & (UCT_EVENT_RECV | UCT_EVENT_RECV_SIG) != 0;
        let recv_all = send && state.fc.enabled();
        let recv = recv_solicited || recv_all;
        if send {
            state.tx_cq.arm(false);
        }
        if recv {
            state.rx_cq.arm(recv_solicited && !recv_all);
        }
        if (send && state.tx_cq.has_cqe()) || (recv && state.rx_cq.has_cqe()) {
            return Err(Status::Busy);
        }
        Ok(())
    }

    pub fn event_fd(&self) -> c_int {
        self.state.channel.fd()
    }

    pub fn progress_enable(&mut self, flags: c_uint) {
        let arg = self as *mut RcIface as *mut c_void;
        self.base.progress_enable(flags, worker_progress, arg);
    }

    pub fn progress_disable(&mut self, flags: c_uint) {
        self.base.progress_disable(flags);
    }
}

/// A pending dispatch round over the iface's eps.
type PendingRound = DispatchRound<*mut RcEp>;

impl IfaceState {
    /// The next pending request to run and its ep (see
    /// [`RcIface::dispatch_pending`]), taken off the head of the ep's
    /// queue and the ep marked as dispatching, so that the callback's own
    /// posts on it are not held back by the requests behind it. Runs no
    /// user callback.
    fn next_pending(
        &mut self,
        round: &mut PendingRound,
    ) -> Option<(*mut RcEp, *mut uct_pending_req_t)> {
        let with_work = |state: &IfaceState| {
            let mut eps = std::collections::VecDeque::new();
            for &ep in state.eps.values() {
                // SAFETY: eps in the table are live; read only.
                let this = unsafe { &*ep };
                if this.has_deferred_work() {
                    eps.push_back(ep);
                }
            }
            eps
        };
        round.next(self, with_work, IfaceState::pending_of)
    }

    /// `ep` if it is still a live ep (a callback may have destroyed it).
    fn live_ep_any_qp(&mut self, ep: *mut RcEp) -> Option<&mut RcEp> {
        let qpn = self
            .eps
            .iter()
            .find(|(_, &e)| e == ep)
            .map(|(&qpn, _)| qpn)?;
        self.ep(qpn)
    }

    /// The next pending request of `ep` to run, if the ep is live and can
    /// post (its owed grant and a due `uct_ep_check` probe go first), taken
    /// off its queue with the ep marked as dispatching. Runs no user
    /// callback.
    fn pending_of(&mut self, ep: *mut RcEp) -> Option<*mut uct_pending_req_t> {
        let fc = self.fc;
        let mut credits = self.tx.credits;
        let this = self.live_ep_any_qp(ep)?;
        let result = (|| {
            // The peer's window waits for a grant, and uct_ep_check's probe
            // for a CQ credit: both before anything of the user's.
            this.post_deferred(&mut credits).ok()?;
            // As in UCX, an exhausted window holds every pending request of
            // the ep (not only AMs): order is kept.
            if this.check_room(credits).is_err() || !this.fc.has_window(&fc) {
                return None;
            }
            this.pending_mut().start_turn()
        })();
        self.tx.credits = credits;
        result
    }

    /// Acts on the answer `status` of `ep`'s request `req` (see
    /// [`RcIface::dispatch_pending`]), if the callback left `ep` alive.
    /// Runs no user callback.
    fn pending_answered(
        &mut self,
        round: &mut PendingRound,
        ep: *mut RcEp,
        req: *mut uct_pending_req_t,
        status: ucs_status_t,
    ) {
        let fc = self.fc;
        let credits = self.tx.credits;
        let Some(this) = self.live_ep_any_qp(ep) else {
            return;
        };
        match this.pending_mut().answered(req, status) {
            Answer::Done { more } => {
                if more {
                    round.again(ep);
                }
            }
            Answer::Again => round.again(ep),
            Answer::Refused => {
                if credits == 0 {
                    // The iface ran out: no other ep can post either; the
                    // next send completion dispatches again.
                    round.end();
                } else if this.check_room(credits).is_ok()
                    && this.fc.has_window(&fc)
                    && this.state().failed_status().is_none()
                {
                    // Refused for a reason of its own while the ep could
                    // post: no completion may come to retry it, and posts
                    // of the user wait behind it, so the next progress
                    // does.
                    self.dispatch_due = true;
                }
            }
        }
    }
}
