//! rc_mlx5 `uct_ep_get_short` between two soft devices in one process. It is
//! synchronous, as UCX's callers use it: it posts an RDMA READ, waits for
//! its completion and returns `UCS_OK` with the data in the caller's
//! buffer (no flush, no progress), or the READ's error. Checked: the
//! capability and limit, data at many lengths and offsets, READ after WRITE
//! on the same ep, no user callback inside the call (other ops' completions
//! and the error handler come from progress), a full send ring
//! (`UCS_ERR_NO_RESOURCE`, nothing written), a peer that is gone
//! (`UCS_ERR_ENDPOINT_TIMEOUT`, bounded by the QP's retries), an ep whose QP
//! is in error (`UCS_ERR_CANCELED`), refused input that posts nothing, and
//! purge, which neither reports nor completes an answered get_short and
//! counts the ops before it as complete.

mod failover_rc_common;
mod rc_common;

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicI8, AtomicUsize, Ordering};
use std::sync::Mutex;

use failover_rc_common::*;
use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;
use uct::rc::ep::RcEp;

/// `uct_soft_hca_drop_next` acts on the whole device: tests that send
/// traffic take this lock so that no test's drops hit another's ops.
static TRAFFIC: Mutex<()> = Mutex::new(());

fn traffic() -> std::sync::MutexGuard<'static, ()> {
    TRAFFIC.lock().unwrap_or_else(|p| p.into_inner())
}

fn source_byte(offset: usize) -> u8 {
    (offset * 31 % 251) as u8 ^ 0x5a
}

fn rc_ep<'a>(ep: uct_ep_h) -> &'a RcEp {
    // SAFETY: a live ep of this transport; read only while the test thread
    // does nothing else with it.
    unsafe { RcEp::from_handle(ep, "test") }.expect("rc ep")
}

/// `get_short`, with progress while the ring is full; asserts the answer
/// is `UCS_OK`, the data in place.
#[track_caller]
fn get_short_ok(pair: &Pair, buffer: &mut [u8], raddr: u64, rkey: uct_rkey_t) {
    let status = pair.post_retrying(|| get_short(pair.ep_a, buffer, raddr, rkey));
    assert_eq!(status, UCS_OK, "get_short answers with the data in place");
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

/// A gone peer is noticed in ~130 ms (8 attempts of 16.8 ms, the IB
/// encoding of 10 ms), while the get before it rides out a scheduling stall
/// of as long on a loaded machine (1 ms x 2 attempts did not).
const FAST_FAILURE: [(&std::ffi::CStr, &std::ffi::CStr); 2] =
    [(c"RC_TIMEOUT", c"10ms"), (c"RC_RETRY_COUNT", c"7")];

#[test]
fn get_short_is_advertised_with_its_limit() {
    let pair = Pair::new();
    let attr = pair.a.attr;
    assert_ne!(attr.cap.flags & UCT_IFACE_FLAG_GET_SHORT, 0);
    assert!(attr.cap.get.max_short >= 64, "{}", attr.cap.get.max_short);
    assert!(attr.cap.get.max_short <= attr.cap.get.max_bcopy);
    pair.close();
}

#[test]
fn the_data_is_in_place_when_get_short_returns() {
    let _traffic = traffic();
    let pair = Pair::new();
    let max = pair.a.attr.cap.get.max_short;
    let mut source: Vec<u8> = (0..4096).map(source_byte).collect();
    let (memh, rkey) = pair.b.register(source.as_mut_ptr(), source.len());
    let base = source.as_ptr() as u64;
    // Lengths 0 and 1 to the limit at odd offsets, each checked at once.
    let mut cases: Vec<(usize, usize)> = vec![(0, 0), (3, 1), (7, 8), (100, 63), (333, max)];
    cases.extend((0..40).map(|i| (i * 97 % 3000, 1 + i * 13 % max)));
    for &(offset, len) in &cases {
        let mut buffer = vec![0xeeu8; len];
        get_short_ok(&pair, &mut buffer, base + offset as u64, rkey);
        let expected: Vec<u8> = (offset..offset + len).map(source_byte).collect();
        assert_eq!(buffer, expected, "get_short of {len} bytes at {offset}");
    }
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}

#[test]
fn reads_see_earlier_writes_of_the_same_ep() {
    let _traffic = traffic();
    let pair = Pair::new();
    let mut target = vec![0u8; 256];
    let (memh, rkey) = pair.b.register(target.as_mut_ptr(), target.len());
    let raddr = target.as_ptr() as u64;
    for round in 0..20u8 {
        let data = [round; 32];
        let mut back = [0xffu8; 32];
        let status = pair.post_retrying(|| put_short(pair.ep_a, &data[..], raddr, rkey));
        assert_eq!(status, UCS_OK);
        get_short_ok(&pair, &mut back, raddr, rkey);
        assert_eq!(back, [round; 32], "round {round}");
    }
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}

#[test]
fn other_completions_wait_for_progress() {
    let _traffic = traffic();
    let pair = Pair::new();
    let mut target = Target::new(8);
    let (memh, rkey) = pair.b.register(target.base(), target.len());
    target.write64(0, 40);
    let mut comp = CountingCompletion::new(1);
    let mut old = 0u64;
    let status = atomic64_fetch(
        pair.ep_a,
        UCT_ATOMIC_OP_ADD,
        2,
        &mut old,
        target.addr(0),
        rkey,
        comp.as_ptr(),
    );
    assert_eq!(status, UCS_INPROGRESS);
    let mut back = [0u8; 8];
    get_short_ok(&pair, &mut back, target.addr(0), rkey);
    // The READ came after the add (in order on the ep) ...
    assert_eq!(u64::from_ne_bytes(back), 42);
    // ... and the add's completion waits for progress: nothing ran inside
    // get_short, and its CQE (and the READ's) are still to be taken.
    assert_eq!(comp.calls(), 0);
    let kinds: Vec<&str> = rc_ep(pair.ep_a)
        .txwq()
        .ops()
        .map(|op| op.op().name())
        .collect();
    assert_eq!(kinds, vec!["atomic_fetch", "get_short"]);
    assert!(pair.wait(|| comp.calls() == 1));
    assert_eq!(comp.status(), UCS_OK);
    assert_eq!(old, 40);
    assert!(pair.wait(|| rc_ep(pair.ep_a).txwq().is_empty()));
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}

#[test]
fn a_full_ring_says_no_resource_and_writes_nothing() {
    let _traffic = traffic();
    let pair = Pair::new();
    let mut source: Vec<u8> = (0..1024).map(source_byte).collect();
    let (memh, rkey) = pair.b.register(source.as_mut_ptr(), source.len());
    let base = source.as_ptr() as u64;
    // Without progress, each answered get_short keeps its ring blocks and
    // CQ credit until progress takes its CQE: the ring runs out.
    let mut answered = 0;
    let refused = loop {
        let offset = (answered * 7) % 1000;
        let mut buffer = [0u8; 16];
        let status = get_short(pair.ep_a, &mut buffer, base + offset as u64, rkey);
        if status != UCS_OK {
            assert_eq!(buffer, [0u8; 16], "a refused get_short wrote nothing");
            break status;
        }
        let expected: Vec<u8> = (offset..offset + 16).map(source_byte).collect();
        assert_eq!(&buffer[..], &expected[..], "get {answered}");
        answered += 1;
        assert!(answered < 100_000, "the ring never ran out");
    };
    assert_eq!(refused, UCS_ERR_NO_RESOURCE, "after {answered} gets");
    assert!(answered >= 16, "{answered}");
    // Progress frees it all; get_short works again.
    assert!(pair.wait(|| rc_ep(pair.ep_a).txwq().is_empty()));
    let (credits, credits_max) = send_credits(pair.a.iface);
    assert_eq!(credits, credits_max);
    let mut buffer = [0u8; 16];
    assert_eq!(get_short(pair.ep_a, &mut buffer, base + 5, rkey), UCS_OK);
    let expected: Vec<u8> = (5..21).map(source_byte).collect();
    assert_eq!(&buffer[..], &expected[..]);
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}

#[test]
fn a_peer_that_is_gone_answers_the_timeout_and_fails_the_ep_at_progress() {
    let _traffic = traffic();
    let (params, errors) = with_error_handler();
    let pair = Pair::with_config(Some(params), None, &FAST_FAILURE);
    let mut source = vec![7u8; 64];
    let (memh, rkey) = pair.b.register(source.as_mut_ptr(), source.len());
    let raddr = source.as_ptr() as u64;
    let mut back = [0u8; 16];
    get_short_ok(&pair, &mut back, raddr, rkey);
    assert_eq!(back, [7u8; 16]);
    // The peer's ep goes away: nobody answers the next READ.
    ep_destroy(pair.ep_b);
    let mut lost = [0u8; 16];
    assert_eq!(
        get_short(pair.ep_a, &mut lost, raddr, rkey),
        UCS_ERR_ENDPOINT_TIMEOUT
    );
    assert_eq!(lost, [0u8; 16]);
    // The error handler runs from progress, as for any failed op.
    assert_eq!(errors.calls.load(Ordering::SeqCst), 0);
    assert!(pair.wait(|| errors.calls.load(Ordering::SeqCst) == 1));
    assert_eq!(
        errors.status.load(Ordering::SeqCst),
        UCS_ERR_ENDPOINT_TIMEOUT
    );
    assert!(rc_ep(pair.ep_a).txwq().is_empty());
    // The failed ep refuses further gets at once.
    assert_eq!(
        get_short(pair.ep_a, &mut lost, raddr, rkey),
        UCS_ERR_ENDPOINT_TIMEOUT
    );
    ep_destroy(pair.ep_a);
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.a.close();
    pair.b.close();
}

#[test]
fn an_ep_whose_qp_is_in_error_answers_canceled() {
    let _traffic = traffic();
    let (params, errors) = with_error_handler();
    let pair = Pair::with_config(Some(params), None, &[]);
    let mut source = vec![9u8; 64];
    let (memh, rkey) = pair.b.register(source.as_mut_ptr(), source.len());
    let raddr = source.as_ptr() as u64;
    // Plain invalidate with nothing outstanding: the QP is in error, the
    // next post is still taken and flushed.
    assert_eq!(invalidate(pair.ep_a, 0), UCS_OK);
    let mut back = [0u8; 16];
    assert_eq!(
        get_short(pair.ep_a, &mut back, raddr, rkey),
        UCS_ERR_CANCELED
    );
    assert_eq!(back, [0u8; 16]);
    assert!(pair.wait(|| errors.calls.load(Ordering::SeqCst) == 1));
    assert_eq!(errors.status.load(Ordering::SeqCst), UCS_ERR_CANCELED);
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}

#[test]
fn bad_input_is_refused_and_posts_nothing() {
    let pair = Pair::new();
    let max = pair.a.attr.cap.get.max_short;
    let mut source = vec![1u8; 4096];
    let (memh, rkey) = pair.b.register(source.as_mut_ptr(), source.len());
    let raddr = source.as_ptr() as u64;
    let mut buffer = vec![0u8; max + 1];
    // SAFETY: live ep; bad arguments are refused before anything is read.
    unsafe {
        assert_eq!(
            uct_ep_get_short(
                pair.ep_a,
                buffer.as_mut_ptr().cast(),
                (max + 1) as u32,
                raddr,
                rkey
            ),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_get_short(pair.ep_a, null_mut(), 8, raddr, rkey),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_get_short(null_mut(), buffer.as_mut_ptr().cast(), 8, raddr, rkey),
            UCS_ERR_INVALID_PARAM
        );
    }
    // Nothing was posted: the ep is idle, a flush finishes at once.
    assert_eq!(ep_flush(pair.ep_a, 0, null_mut()), UCS_OK);
    assert!(buffer.iter().all(|&b| b == 0));
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}

#[test]
fn purge_drops_an_answered_get_short_and_completes_what_came_before() {
    let _traffic = traffic();
    let pair = Pair::new();
    let mut target = Target::new(8);
    let (memh, rkey) = pair.b.register(target.base(), target.len());
    target.write64(8, 100);
    let mut comp = CountingCompletion::new(1);
    let mut old = 0u64;
    let status = atomic64_fetch(
        pair.ep_a,
        UCT_ATOMIC_OP_ADD,
        5,
        &mut old,
        target.addr(8),
        rkey,
        comp.as_ptr(),
    );
    assert_eq!(status, UCS_INPROGRESS);
    let mut back = [0u8; 8];
    get_short_ok(&pair, &mut back, target.addr(8), rkey);
    assert_eq!(u64::from_ne_bytes(back), 105);
    // No progress: both ops are still in the table when a fails over.
    assert_eq!(rc_ep(pair.ep_a).txwq().len(), 2);
    let reported: Vec<uct_ep_operation_t> =
        fail_over_purge(pair.ep_a, pair.b.iface, |info| info.operation);
    // The get_short was answered already: it is not handed back. The READ
    // completed after the add, so the add's result arrived: it completes
    // with it, not as a lost fetch.
    assert_eq!(reported, Vec::<uct_ep_operation_t>::new());
    assert_eq!(comp.calls(), 1);
    assert_eq!(comp.status(), UCS_OK);
    assert_eq!(old, 100);
    assert_eq!(back, 105u64.to_ne_bytes(), "purge wrote nothing");
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}
