//! `uct_ep_check` on rc_mlx5 probes the peer as UCX's rc_mlx5 does (a
//! zero-length RDMA WRITE the peer must acknowledge, UCX's
//! `test_uct_peer_failure_keepalive.killed`): a live peer acknowledges it
//! and nothing changes; a peer that is gone fails the ep and the iface's
//! error handler hears of it, with no other traffic on the ep. Held ops
//! (design §5) answer `UCS_ERR_CANCELED`; a completion or flags are refused.

mod failover_rc_common;
mod rc_common;

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicI8, AtomicUsize, Ordering};

use failover_rc_common::invalidate;
use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::rc::ep::RcEp;

fn rc_ep<'a>(ep: uct_ep_h) -> &'a RcEp {
    // SAFETY: a live ep of this transport; read only while the test thread
    // does nothing else with it.
    unsafe { RcEp::from_handle(ep, "test") }.expect("rc ep")
}

/// What the error handler saw: calls and the last status.
struct Errors {
    calls: AtomicUsize,
    status: AtomicI8,
}

unsafe extern "C" fn note_error(
    arg: *mut c_void,
    _ep: uct_ep_h,
    status: ucs_status_t,
) -> ucs_status_t {
    // SAFETY: arg is the test's leaked Errors.
    let errors = unsafe { &*(arg as *const Errors) };
    errors.status.store(status, Ordering::SeqCst);
    errors.calls.fetch_add(1, Ordering::SeqCst);
    UCS_OK
}

/// Iface params with an error handler recording into a leaked `Errors`.
fn with_error_handler() -> (uct_iface_params_t, &'static Errors) {
    let errors: &'static Errors = Box::leak(Box::new(Errors {
        calls: AtomicUsize::new(0),
        status: AtomicI8::new(UCS_OK),
    }));
    let mut params = iface_params();
    params.field_mask |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER
        | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG
        | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.err_handler = Some(note_error);
    params.err_handler_arg = errors as *const Errors as *mut c_void;
    (params, errors)
}

const FAST_FAILURE: [(&std::ffi::CStr, &std::ffi::CStr); 2] =
    [(c"RC_TIMEOUT", c"1ms"), (c"RC_RETRY_COUNT", c"1")];

#[test]
fn a_live_peer_acknowledges_the_probe() {
    let (params, errors) = with_error_handler();
    let pair = Pair::with_config(Some(params), None, &FAST_FAILURE);
    let at_b = pair.b.collect_am(1);
    assert_eq!(ep_check(pair.ep_a, 0, null_mut()), UCS_OK);
    // The probe is on the wire (a has not progressed).
    let kinds: Vec<&str> = rc_ep(pair.ep_a)
        .txwq()
        .ops()
        .map(|op| op.op().name())
        .collect();
    assert_eq!(kinds, vec!["probe"]);
    assert!(pair.wait(|| rc_ep(pair.ep_a).txwq().is_empty()));
    for _ in 0..200 {
        pair.progress();
    }
    assert_eq!(errors.calls.load(Ordering::SeqCst), 0);
    // Nothing reached the peer's handlers, and the ep still works.
    assert!(at_b.lock().unwrap().is_empty());
    assert_eq!(am_short(pair.ep_a, 1, 7, &[]), UCS_OK);
    assert!(pair.wait(|| at_b.lock().unwrap().len() == 1));
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    pair.close();
}

#[test]
fn a_peer_that_is_gone_reaches_the_error_handler() {
    let (params, errors) = with_error_handler();
    let pair = Pair::with_config(Some(params), None, &FAST_FAILURE);
    assert_eq!(ep_check(pair.ep_a, 0, null_mut()), UCS_OK);
    assert!(pair.wait(|| rc_ep(pair.ep_a).txwq().is_empty()));
    assert_eq!(errors.calls.load(Ordering::SeqCst), 0, "the peer was alive");
    // The peer's ep goes away; a sends nothing of its own.
    ep_destroy(pair.ep_b);
    assert_eq!(ep_check(pair.ep_a, 0, null_mut()), UCS_OK);
    assert!(
        pair.wait(|| errors.calls.load(Ordering::SeqCst) == 1),
        "the dead peer was never noticed"
    );
    assert_eq!(
        errors.status.load(Ordering::SeqCst),
        UCS_ERR_ENDPOINT_TIMEOUT
    );
    // A failed ep answers its failure, with no new probe.
    assert_eq!(ep_check(pair.ep_a, 0, null_mut()), UCS_ERR_ENDPOINT_TIMEOUT);
    assert!(rc_ep(pair.ep_a).txwq().is_empty());
    ep_destroy(pair.ep_a);
    pair.a.close();
    pair.b.close();
}

#[test]
fn held_ops_answer_canceled_and_bad_arguments_are_refused() {
    let pair = Pair::new();
    let mut comp = CountingCompletion::new(1);
    assert_eq!(ep_check(pair.ep_a, 0, comp.as_ptr()), UCS_ERR_INVALID_PARAM);
    assert_eq!(ep_check(pair.ep_a, 2, null_mut()), UCS_ERR_INVALID_PARAM);
    assert!(rc_ep(pair.ep_a).txwq().is_empty(), "nothing posted");
    assert_eq!(am_short(pair.ep_a, 1, 1, &[]), UCS_OK);
    assert_eq!(
        invalidate(pair.ep_a, UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS),
        UCS_OK
    );
    assert_eq!(ep_check(pair.ep_a, 0, null_mut()), UCS_ERR_CANCELED);
    assert_eq!(comp.calls(), 0);
    pair.close();
}
