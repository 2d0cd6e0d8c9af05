//! Progress: the device, send completions, receives, then pending requests
//! of eps that can post again; registration with the worker; event arming.

use std::ffi::{c_int, c_uint, c_void};

use crate::abi::*;
use crate::core::worker::Worker;
use crate::rc::ep::RcEp;
use crate::rc::iface::{IfaceState, RcIface};

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
            if tx > 0 || std::mem::take(&mut (*iface).state.fc_dispatch) {
                Self::dispatch_pending(iface);
            }
            tx + rx
        }
    }

    /// Runs pending requests of every ep that can post again:
    /// [`IfaceState::next_pending`] picks the next one, this loop runs it.
    ///
    /// # Safety
    /// A live iface, no borrow of it held.
    unsafe fn dispatch_pending(iface: *mut RcIface) {
        let mut cursor = PendingCursor::default();
        // SAFETY: live by the contract; no callback runs in `next_pending`.
        while let Some(req) = unsafe { (*iface).state.next_pending(&mut cursor) } {
            // SAFETY: the user's request, live until dispatched/purged.
            let status = unsafe {
                match (*req).func {
                    Some(func) => func(req),
                    None => UCS_OK,
                }
            };
            if status != UCS_OK {
                // Not done: it goes back to the head of its queue.
                cursor.not_done = Some(req);
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
        let recv_all = send && state.fc.enabled;
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

    /// The worker the iface was opened on.
    fn worker<'a>(&self) -> Option<&'a Worker> {
        // SAFETY: the worker handle was validated at open and outlives its
        // ifaces.
        unsafe { crate::core::worker::worker_ref(self.base.worker, "rc") }.ok()
    }

    pub fn progress_enable(&mut self, flags: c_uint) {
        if flags & (UCT_PROGRESS_SEND | UCT_PROGRESS_RECV) == 0 || self.state.progress_id.is_some()
        {
            return;
        }
        let Some(worker) = self.worker() else {
            return;
        };
        let arg = self as *mut RcIface as *mut c_void;
        self.state.progress_id = Some(worker.register(worker_progress, arg, 0));
    }

    pub(super) fn progress_disable_all(&mut self) {
        if let Some(id) = self.state.progress_id.take() {
            if let Some(worker) = self.worker() {
                worker.unregister(id);
            }
        }
    }

    pub fn progress_disable(&mut self, flags: c_uint) {
        if flags & (UCT_PROGRESS_SEND | UCT_PROGRESS_RECV) != 0 {
            self.progress_disable_all();
        }
    }
}

/// Where a pending dispatch is: the eps to visit (taken at its start) and
/// a request its callback did not finish.
#[derive(Default)]
struct PendingCursor {
    eps: Option<Vec<*mut RcEp>>,
    at: usize,
    not_done: Option<*mut uct_pending_req_t>,
}

impl IfaceState {
    /// The next pending request to run (see
    /// [`RcIface::dispatch_pending`]): a request that was not done goes back
    /// to the head of its ep's queue and the walk moves to the next ep.
    fn next_pending(&mut self, cursor: &mut PendingCursor) -> Option<*mut uct_pending_req_t> {
        let eps = cursor.eps.get_or_insert_with(|| {
            let mut eps = Vec::new();
            for qpn in self.eps.keys().copied().collect::<Vec<_>>() {
                if let Some(ep) = self.ep(qpn) {
                    if !ep.pending.is_empty() || ep.fc.pure_grant_pending {
                        eps.push(ep as *mut RcEp);
                    }
                }
            }
            eps
        });
        if let Some(req) = cursor.not_done.take() {
            if let Some(&ep) = eps.get(cursor.at) {
                self.requeue_pending(ep, req);
            }
            cursor.at += 1;
        }
        while let Some(&ep) = eps.get(cursor.at) {
            match self.pending_of(ep) {
                Some(req) => return Some(req),
                None => cursor.at += 1,
            }
        }
        None
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
    /// post (its owed grant goes first). Runs no user callback.
    fn pending_of(&mut self, ep: *mut RcEp) -> Option<*mut uct_pending_req_t> {
        let fc = self.fc;
        let mut credits = self.tx.credits;
        let this = self.live_ep_any_qp(ep)?;
        let result = (|| {
            if this.fc.pure_grant_pending {
                // The peer's window waits for it: before anything of ours.
                match this.post_fc_grant(&mut credits) {
                    Ok(()) => this.fc.pure_grant_pending = false,
                    Err(Status::NoResource) => return None,
                    Err(status) => {
                        tracing::debug!("rc_mlx5 ep {ep:p}: grant not sent: {status}");
                        this.fc.pure_grant_pending = false;
                    }
                }
            }
            // As in UCX, an exhausted window holds every pending request of
            // the ep (not only AMs): order is kept.
            if this.check_post(credits).is_err() || !this.fc.has_window(&fc) {
                return None;
            }
            this.pending.pop_front()
        })();
        self.tx.credits = credits;
        result
    }

    /// Puts `req` back at the head of `ep`'s pending queue, if `ep` lives.
    fn requeue_pending(&mut self, ep: *mut RcEp, req: *mut uct_pending_req_t) {
        if let Some(this) = self.live_ep_any_qp(ep) {
            this.pending.push_front(req);
        }
    }
}
