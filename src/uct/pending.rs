//! Pending requests (`uct_ep_pending_add` / `uct_ep_pending_purge`) and
//! their dispatch, with UCX's semantics:
//!
//! - an ep keeps its requests in the order they were added
//!   ([`PendingQueue`]); a transport accepts one only when it cannot post
//!   now (else the caller gets `UCS_ERR_BUSY` and retries), and while any
//!   wait, the user's own posts on that ep are refused so that they do not
//!   overtake them ([`PendingQueue::holds_posts`]);
//! - when resources return, the eps with requests take turns, one request
//!   per turn, in a round ([`dispatch`], as UCX's arbiter): `UCS_OK` removes
//!   the request, `UCS_INPROGRESS` keeps it at the head for another turn in
//!   the same round, any other answer keeps it and ends the ep's turns. The
//!   callback's own posts on its ep pass while it runs. A round takes at
//!   most [`MAX_PENDING_CALLS`] turns, so a request that never finishes
//!   cannot hold progress forever ([`DispatchRound::cut_short`] tells the
//!   transport that work is left for its next progress);
//! - purge hands the requests back oldest first ([`PendingQueue::pop`]).
//!
//! The transport decides when an ep may take a turn (its room, credits and
//! windows); this module only keeps the order and calls the callbacks.

use std::collections::VecDeque;

use crate::abi::*;

/// Turns one dispatch round takes at most.
pub const MAX_PENDING_CALLS: u32 = 4096;

/// The pending requests of one ep, oldest first.
#[derive(Debug, Default)]
pub struct PendingQueue {
    requests: VecDeque<*mut uct_pending_req_t>,
    /// The callback of the head request is running: the ep's posts from it
    /// go out although requests wait behind it.
    in_dispatch: bool,
}

/// What became of a request after its callback answered
/// ([`PendingQueue::answered`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// `UCS_OK`: removed; `more` when other requests of the ep wait.
    Done { more: bool },
    /// `UCS_INPROGRESS`: kept at the head, ready for another turn.
    Again,
    /// Anything else: kept at the head; the ep's turns end.
    Refused,
}

impl PendingQueue {
    pub fn new() -> PendingQueue {
        PendingQueue::default()
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether a post of the user must wait: requests wait, and none of
    /// them is running now.
    #[inline(always)]
    pub fn holds_posts(&self) -> bool {
        !self.requests.is_empty() && !self.in_dispatch
    }

    /// Queues `req` behind the others (the caller's pointer is kept as
    /// given: its callback gets it back).
    pub fn add(&mut self, req: *mut uct_pending_req_t) {
        self.requests.push_back(req);
    }

    /// The oldest request, removed (purge: the caller hands it to the
    /// purge callback).
    pub fn pop(&mut self) -> Option<*mut uct_pending_req_t> {
        self.requests.pop_front()
    }

    /// The oldest request, taken off for its callback to run, with the ep
    /// marked as dispatching until [`PendingQueue::answered`].
    pub fn start_turn(&mut self) -> Option<*mut uct_pending_req_t> {
        let req = self.requests.pop_front()?;
        self.in_dispatch = true;
        Some(req)
    }

    /// Takes the callback's answer `status` for `req` (from
    /// [`PendingQueue::start_turn`]).
    pub fn answered(&mut self, req: *mut uct_pending_req_t, status: ucs_status_t) -> Answer {
        self.in_dispatch = false;
        match status {
            UCS_OK => Answer::Done {
                more: !self.requests.is_empty(),
            },
            UCS_INPROGRESS => {
                self.requests.push_front(req);
                Answer::Again
            }
            _ => {
                self.requests.push_front(req);
                Answer::Refused
            }
        }
    }
}

/// Where a dispatch is: the eps whose turn is still to come, in turn order
/// (taken at the first turn; an ep that cannot go on leaves), and the
/// turns taken. `E` names an ep as the transport likes.
#[derive(Debug)]
pub struct DispatchRound<E> {
    eps: Option<VecDeque<E>>,
    calls: u32,
}

impl<E> Default for DispatchRound<E> {
    fn default() -> Self {
        DispatchRound {
            eps: None,
            calls: 0,
        }
    }
}

impl<E: Copy> DispatchRound<E> {
    /// The next turn: the first ep in turn order for which `request_of`
    /// gives a request (eps for which it gives none leave the round). The
    /// first call takes the round's eps from `with_work`. `None` when no
    /// ep can go on, or the round took [`MAX_PENDING_CALLS`] turns. Both
    /// functions get `transport`, the state they look the eps up in.
    pub fn next<T, R>(
        &mut self,
        transport: &mut T,
        with_work: impl FnOnce(&T) -> VecDeque<E>,
        mut request_of: impl FnMut(&mut T, E) -> Option<R>,
    ) -> Option<(E, R)> {
        let eps = self.eps.get_or_insert_with(|| with_work(transport));
        if self.calls >= MAX_PENDING_CALLS {
            return None;
        }
        while let Some(ep) = eps.pop_front() {
            if let Some(request) = request_of(transport, ep) {
                self.calls += 1;
                return Some((ep, request));
            }
        }
        None
    }

    /// The round stopped at [`MAX_PENDING_CALLS`] with eps still waiting
    /// for a turn: the transport's next progress should go on.
    pub fn cut_short(&self) -> bool {
        self.calls >= MAX_PENDING_CALLS && self.eps.as_ref().is_some_and(|eps| !eps.is_empty())
    }

    /// `ep` gets another turn, after the eps waiting now.
    pub fn again(&mut self, ep: E) {
        if let Some(eps) = self.eps.as_mut() {
            eps.push_back(ep);
        }
    }

    /// No ep gets another turn in this round (a resource they all share
    /// ran out).
    pub fn end(&mut self) {
        if let Some(eps) = self.eps.as_mut() {
            eps.clear();
        }
    }
}

/// Runs one dispatch round: `next` picks the next ep and request (runs no
/// user callback; see [`DispatchRound::next`]), the request's callback
/// runs with no borrow of the transport held, then `answered` acts on its
/// status (the callback may have destroyed the ep: `answered` looks it up
/// again). Returns the round, for [`DispatchRound::cut_short`].
///
/// # Safety
/// Every request `next` gives is a live `uct_pending_req_t` of the user's
/// (added and neither dispatched to `UCS_OK` nor purged since).
pub unsafe fn dispatch<E: Copy>(
    mut next: impl FnMut(&mut DispatchRound<E>) -> Option<(E, *mut uct_pending_req_t)>,
    mut answered: impl FnMut(&mut DispatchRound<E>, E, *mut uct_pending_req_t, ucs_status_t),
) -> DispatchRound<E> {
    let mut round = DispatchRound::default();
    while let Some((ep, req)) = next(&mut round) {
        // SAFETY: a live request by the contract; its callback is the
        // user's, called with the request as UCX calls it.
        let status = unsafe {
            match (*req).func {
                Some(func) => func(req),
                None => UCS_OK,
            }
        };
        answered(&mut round, ep, req, status);
    }
    round
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(func: uct_pending_callback_t) -> uct_pending_req_t {
        uct_pending_req_t {
            func,
            r#priv: [0; UCT_PENDING_REQ_PRIV_LEN],
        }
    }

    #[test]
    fn queue_keeps_order_and_holds_posts_unless_dispatching() {
        let mut reqs = [request(None), request(None), request(None)];
        let [a, b, c] = reqs.each_mut().map(|r| r as *mut uct_pending_req_t);
        let mut queue = PendingQueue::new();
        assert!(!queue.holds_posts());
        queue.add(a);
        queue.add(b);
        queue.add(c);
        assert!(queue.holds_posts());
        assert_eq!(queue.start_turn(), Some(a));
        // Its own callback's posts pass.
        assert!(!queue.holds_posts());
        assert_eq!(queue.answered(a, UCS_INPROGRESS), Answer::Again);
        assert!(queue.holds_posts());
        assert_eq!(queue.start_turn(), Some(a));
        assert_eq!(queue.answered(a, UCS_OK), Answer::Done { more: true });
        assert_eq!(queue.start_turn(), Some(b));
        assert_eq!(queue.answered(b, UCS_ERR_NO_RESOURCE), Answer::Refused);
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.pop(), Some(b));
        assert_eq!(queue.pop(), Some(c));
        assert_eq!(queue.pop(), None);
    }

    #[test]
    fn round_takes_turns_and_stops_at_its_bound() {
        // Two eps, each with a request that always answers INPROGRESS:
        // they alternate until the bound, and the round says work is left.
        let mut round = DispatchRound::<u8>::default();
        let mut order = Vec::new();
        let with_work = |_: &()| VecDeque::from([1, 2]);
        while let Some((ep, ())) = round.next(&mut (), with_work, |_, _| Some(())) {
            order.push(ep);
            round.again(ep);
        }
        assert_eq!(order.len(), MAX_PENDING_CALLS as usize);
        assert_eq!(&order[..4], &[1, 2, 1, 2]);
        assert!(round.cut_short());
        // An ep without a request leaves; an ended round has no work left.
        let mut round = DispatchRound::<u8>::default();
        assert_eq!(
            round.next(&mut (), with_work, |_, ep| (ep == 2).then_some(())),
            Some((2, ()))
        );
        round.end();
        assert_eq!(round.next(&mut (), with_work, |_, _| Some(())), None);
        assert!(!round.cut_short());
    }

    unsafe extern "C" fn counts_down(req: *mut uct_pending_req_t) -> ucs_status_t {
        // SAFETY: the test's request; its private area holds a counter.
        let left = unsafe { &mut (*req).r#priv[0] };
        *left -= 1;
        if *left == 0 {
            UCS_OK
        } else {
            UCS_INPROGRESS
        }
    }

    #[test]
    fn dispatch_calls_callbacks_until_done() {
        let mut req = request(Some(counts_down));
        req.r#priv[0] = 3;
        let mut queue = PendingQueue::new();
        queue.add(&mut req);
        let queue_ptr: *mut PendingQueue = &mut queue;
        // SAFETY: `req` lives across the dispatch; the queue is reached
        // through its pointer only while no callback runs.
        let round = unsafe {
            dispatch(
                |round| {
                    let with_work = |_: &PendingQueue| VecDeque::from([()]);
                    round.next(&mut *queue_ptr, with_work, |queue, ()| queue.start_turn())
                },
                |round, (), req, status| match (*queue_ptr).answered(req, status) {
                    Answer::Done { more: true } | Answer::Again => round.again(()),
                    Answer::Done { more: false } | Answer::Refused => {}
                },
            )
        };
        assert!(!round.cut_short());
        assert!(queue.is_empty());
        assert_eq!(req.r#priv[0], 0);
    }
}
