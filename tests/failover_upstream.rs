//! rc_mlx5 failover as UCX upstream settled it (issue 13), through the C
//! API: `uct_ep_invalidate` with NULL params fails the ep like a transport
//! error (ops end `UCS_ERR_CANCELED`, the error handler runs once, posts
//! fail afterwards); the error handler answering `UCS_INPROGRESS` holds the
//! ops for purge; a second purge is `UCS_OK` and calls nothing; a purged ep
//! reconnects to a fresh peer and works; deriving an RX token stops the
//! receiving QP, so a packet still on its way is not both executed and
//! replayed.

mod failover_rc_common;
mod rc_common;

use std::ffi::c_void;
use std::sync::atomic::{AtomicI8, AtomicUsize, Ordering};
use std::sync::Mutex;

use failover_rc_common::*;
use rc_common::uct_safe::{
    self, ep_destroy, ep_flush, ep_invalidate, failover_enable, pending_add,
};
use rc_common::*;
use uct::abi::*;

/// The soft HCA's drop/link switches are per device: one test at a time.
static TRAFFIC: Mutex<()> = Mutex::new(());

/// An iface error handler's record and the answer it gives.
struct Handler {
    calls: AtomicUsize,
    status: AtomicI8,
    answer: ucs_status_t,
}

impl Handler {
    /// Boxed: the iface keeps its address as the handler argument, so it
    /// must outlive the iface (the tests close their pairs first).
    fn boxed(answer: ucs_status_t) -> Box<Handler> {
        Box::new(Handler {
            calls: AtomicUsize::new(0),
            status: AtomicI8::new(UCS_OK),
            answer,
        })
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn status(&self) -> ucs_status_t {
        self.status.load(Ordering::SeqCst)
    }

    fn params(&self) -> uct_iface_params_t {
        let mut params = iface_params();
        params.field_mask |=
            UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG;
        params.err_handler = Some(record_error);
        params.err_handler_arg = self as *const Handler as *mut c_void;
        params
    }
}

unsafe extern "C" fn record_error(
    arg: *mut c_void,
    _: uct_ep_h,
    status: ucs_status_t,
) -> ucs_status_t {
    // SAFETY: the iface's handler argument is a leaked Handler.
    let handler = unsafe { &*(arg as *const Handler) };
    handler.status.store(status, Ordering::SeqCst);
    handler.calls.fetch_add(1, Ordering::SeqCst);
    handler.answer
}

/// AM headers the purge callback reported, in order.
type Reported = Mutex<Vec<u64>>;

unsafe extern "C" fn record_header(info: *const uct_ep_op_info_t, arg: *mut c_void) {
    // SAFETY: valid during the callback; arg is a leaked Reported.
    unsafe {
        let info = &*info;
        assert_eq!(info.operation, UCT_EP_OP_AM_SHORT);
        assert_ne!(info.field_mask & UCT_EP_OP_INFO_FIELD_AM, 0);
        let header = info.detail.am.header.value;
        (*(arg as *const Reported)).lock().unwrap().push(header);
    }
}

/// Purges `ep` with `rx`, recording the AM header of each reported op:
/// (status, headers in report order).
fn purge_headers(ep: uct_ep_h, rx: &[u8]) -> (ucs_status_t, Vec<u64>) {
    let reported = Reported::default();
    let status = purge(
        ep,
        rx,
        record_header,
        &reported as *const Reported as *mut c_void,
    );
    (status, reported.into_inner().unwrap())
}

fn drop_next(device: &std::ffi::CStr, count: u32) {
    assert_eq!(uct_safe::drop_next(device, count), UCS_OK);
}

fn am_short(ep: uct_ep_h, header: u64) -> ucs_status_t {
    uct_safe::am_short(ep, 5, header, &[])
}

/// Tokens for `pair.ep_a`'s connection, the RX one from b's iface.
fn tokens(pair: &Pair) -> Vec<u8> {
    let (flags, _, _) = token_caps(pair.a.iface);
    assert_ne!(flags & UCT_IFACE_FLAG_V2_QUERY_TOKEN, 0);
    exchange_tokens(pair.ep_a, pair.a.iface, pair.b.iface)
}

#[test]
fn invalidate_with_null_params_fails_the_ep_like_a_transport_error() {
    // Whatever the handler answers other than UCS_INPROGRESS (UCS_OK, an
    // error), the ops fail.
    let _traffic = TRAFFIC.lock().unwrap_or_else(|p| p.into_inner());
    for answer in [UCS_OK, UCS_ERR_CANCELED] {
        let handler = Handler::boxed(answer);
        let pair = Pair::with_params(Some(handler.params()), None);
        // Nothing a sends arrives: the ops stay outstanding until invalidated.
        drop_next(c"mlx5_0", 1000);
        for header in 0..3 {
            assert_eq!(am_short(pair.ep_a, header), UCS_OK);
        }
        let mut comp = CountingCompletion::new(1);
        assert_eq!(ep_flush(pair.ep_a, 0, comp.as_ptr()), UCS_INPROGRESS);
        assert_eq!(ep_invalidate(pair.ep_a, None), UCS_OK);
        assert!(pair.wait(|| comp.calls() == 1), "the flush never completed");
        assert_eq!(
            comp.status(),
            UCS_ERR_CANCELED,
            "flushed WQEs end as UCX's WR_FLUSH_ERR"
        );
        assert_eq!(handler.calls(), 1);
        assert_eq!(handler.status(), UCS_ERR_CANCELED);
        // Posts fail from now on, and the handler is not called again.
        assert_eq!(am_short(pair.ep_a, 9), UCS_ERR_CANCELED);
        for _ in 0..100 {
            pair.progress();
        }
        assert_eq!(handler.calls(), 1);
        drop_next(c"mlx5_0", 0);
        // Every op completed with the error: nothing is left, so a purge
        // answers UCS_OK and reports nothing.
        let rx = tokens(&pair);
        let (status, reported) = purge_headers(pair.ep_a, &rx);
        assert_eq!(status, UCS_OK);
        assert!(
            reported.is_empty(),
            "a purge with nothing left called its callback"
        );
        pair.close();
    }
}

#[test]
fn invalidated_idle_ep_fails_at_its_next_post_as_in_ucx() {
    // UCX's test_uct_peer_failure.peer_failure: invalidate(ep, NULL), a
    // put_short still returns UCS_OK, the flushed WQE calls the handler.
    let _traffic = TRAFFIC.lock().unwrap_or_else(|p| p.into_inner());
    let handler = Handler::boxed(UCS_OK);
    let pair = Pair::with_params(Some(handler.params()), None);
    let params = uct_ep_invalidate_params_t {
        field_mask: 0,
        flags: 0,
    };
    assert_eq!(ep_invalidate(pair.ep_a, Some(&params)), UCS_OK);
    // A zero-length put needs no buffer or key.
    assert_eq!(uct_safe::put_short(pair.ep_a, &[], 0, 0), UCS_OK);
    assert!(pair.wait(|| handler.calls() == 1), "the handler never ran");
    assert_eq!(handler.status(), UCS_ERR_CANCELED);
    assert_eq!(uct_safe::put_short(pair.ep_a, &[], 0, 0), UCS_ERR_CANCELED);
    pair.close();
}

/// A pair whose iface error handler (a's) answers UCS_INPROGRESS, and the
/// inbox of b's AM 5. The handler is boxed: the iface keeps its address.
fn holding_pair() -> (Box<Handler>, Pair, &'static Inbox) {
    let handler = Handler::boxed(UCS_INPROGRESS);
    let pair = Pair::with_params(Some(handler.params()), None);
    let inbox = pair.b.collect_am(5);
    (handler, pair, inbox)
}

/// Posts `count` AMs on a that b never sees, invalidates a with NULL params
/// and waits for the handler; returns b's RX token.
fn fail_with_undelivered_ams(pair: &Pair, handler: &Handler, count: u64) -> Vec<u8> {
    drop_next(c"mlx5_0", 1000);
    for header in 0..count {
        assert_eq!(am_short(pair.ep_a, header), UCS_OK);
    }
    assert_eq!(ep_invalidate(pair.ep_a, None), UCS_OK);
    assert!(pair.wait(|| handler.calls() == 1), "the handler never ran");
    for _ in 0..100 {
        pair.progress();
    }
    drop_next(c"mlx5_0", 0);
    tokens(pair)
}

#[test]
fn error_handler_answering_inprogress_holds_the_ops_for_purge() {
    let _traffic = TRAFFIC.lock().unwrap_or_else(|p| p.into_inner());
    let (handler, pair, inbox) = holding_pair();
    let rx = fail_with_undelivered_ams(&pair, &handler, 4);
    assert_eq!(handler.calls(), 1);
    assert_eq!(
        am_short(pair.ep_a, 9),
        UCS_ERR_CANCELED,
        "a failed ep refuses posts"
    );
    let (status, reported) = purge_headers(pair.ep_a, &rx);
    assert_eq!(status, UCS_OK);
    assert_eq!(
        reported,
        vec![0, 1, 2, 3],
        "held, reported in posting order"
    );
    assert!(sequence(inbox).is_empty());
    // Idempotent: again, nothing left, UCS_OK, no callback.
    assert_eq!(purge_headers(pair.ep_a, &rx), (UCS_OK, vec![]));
    assert_eq!(handler.calls(), 1);
    pair.close();
}

#[test]
fn failover_enable_and_handler_inprogress_hold_a_transport_error_alike() {
    // A real transport error (retries exhausted, every packet lost), held
    // once by uct_ep_failover_enable and once by the handler's answer: the
    // handler runs once with UCS_ERR_ENDPOINT_TIMEOUT, the same ops are
    // reported.
    let _traffic = TRAFFIC.lock().unwrap_or_else(|p| p.into_inner());
    let settings: [(&std::ffi::CStr, &std::ffi::CStr); 2] =
        [(c"RC_TIMEOUT", c"1ms"), (c"RC_RETRY_COUNT", c"2")];
    let mut seen = Vec::new();
    for enable in [true, false] {
        let handler = Handler::boxed(if enable { UCS_OK } else { UCS_INPROGRESS });
        let pair = Pair::with_config(Some(handler.params()), None, &settings);
        if enable {
            assert_eq!(failover_enable(pair.ep_a), UCS_OK);
        }
        drop_next(c"mlx5_0", 100_000);
        for header in 0..3 {
            assert_eq!(am_short(pair.ep_a, header), UCS_OK);
        }
        assert!(pair.wait(|| handler.calls() == 1), "retries never ran out");
        assert_eq!(handler.status(), UCS_ERR_ENDPOINT_TIMEOUT);
        for _ in 0..100 {
            pair.progress();
        }
        drop_next(c"mlx5_0", 0);
        let rx = tokens(&pair);
        let (status, reported) = purge_headers(pair.ep_a, &rx);
        assert_eq!(status, UCS_OK);
        assert_eq!(handler.calls(), 1);
        seen.push(reported);
        pair.close();
    }
    assert_eq!(seen[0], vec![0, 1, 2]);
    assert_eq!(seen[0], seen[1]);
}

/// Connects `ep` (on a) and a new ep on b to each other; returns b's ep.
fn connect_to_fresh_peer(pair: &Pair, ep: uct_ep_h) -> uct_ep_h {
    let fresh = pair.b.create_ep();
    connect_existing(&pair.a, ep, &pair.b, fresh);
    fresh
}

/// Posts `headers` on a's ep, flushes, and waits until b's inbox has them.
fn deliver(pair: &Pair, inbox: &Inbox, headers_to_send: &[u64]) {
    let before = sequence(inbox).len();
    for &header in headers_to_send {
        assert_eq!(pair.post_retrying(|| am_short(pair.ep_a, header)), UCS_OK);
    }
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert!(
        pair.wait(|| sequence(inbox).len() == before + headers_to_send.len()),
        "AMs on the reconnected ep did not arrive"
    );
    assert_eq!(&sequence(inbox)[before..], headers_to_send);
}

#[test]
fn purged_ep_reconnects_to_a_fresh_peer_and_is_used_again() {
    let _traffic = TRAFFIC.lock().unwrap_or_else(|p| p.into_inner());
    let (handler, pair, inbox) = holding_pair();
    let address_before = pair.a.ep_address(pair.ep_a);
    let rx = fail_with_undelivered_ams(&pair, &handler, 2);
    assert_eq!(purge_headers(pair.ep_a, &rx), (UCS_OK, vec![0, 1]));
    // The purged ep got a new QP: a new address for the peer.
    assert_ne!(pair.a.ep_address(pair.ep_a), address_before);
    assert_eq!(am_short(pair.ep_a, 9), UCS_ERR_NOT_CONNECTED);
    // b's old ep was stopped by the RX token: a fresh one.
    let fresh = connect_to_fresh_peer(&pair, pair.ep_a);
    // The replayed ops and new ones arrive, once each, in order.
    deliver(&pair, inbox, &[0, 1, 7]);

    // Again, purged before progress sees the old connection's flushed
    // completions and reconnected at once: those completions belong to
    // the old QP and cannot fail the new connection.
    drop_next(c"mlx5_0", 1000);
    assert_eq!(am_short(pair.ep_a, 20), UCS_OK);
    assert_eq!(am_short(pair.ep_a, 21), UCS_OK);
    assert_eq!(
        invalidate(pair.ep_a, UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS),
        UCS_OK
    );
    drop_next(c"mlx5_0", 0);
    let rx = tokens(&pair);
    assert_eq!(purge_headers(pair.ep_a, &rx), (UCS_OK, vec![20, 21]));
    let fresher = connect_to_fresh_peer(&pair, pair.ep_a);
    deliver(&pair, inbox, &[20, 21, 22]);
    assert_eq!(
        handler.calls(),
        1,
        "only the first failure called the handler"
    );
    ep_destroy(fresh);
    ep_destroy(fresher);
    pair.close();
}

fn link(device: &std::ffi::CStr, up: bool) {
    assert_eq!(uct_safe::link_set(device, up), UCS_OK);
}

#[test]
fn rx_token_stops_the_receiver_so_a_late_packet_is_not_executed_and_replayed() {
    // The window upstream's 11804 leaves open: b derives the RX token while
    // a still retransmits. Were b's QP still accepting, a retransmission
    // arriving after the token would be executed by b although the token
    // said it was not received, and purge would hand it out for replay as
    // well (b's acknowledgements are lost, so a never learns).
    let _traffic = TRAFFIC.lock().unwrap_or_else(|p| p.into_inner());
    let settings: [(&std::ffi::CStr, &std::ffi::CStr); 2] =
        [(c"RC_TIMEOUT", c"1ms"), (c"RC_RETRY_COUNT", c"7")];
    let pair = Pair::with_config(None, None, &settings);
    assert_eq!(failover_enable(pair.ep_a), UCS_OK);
    let inbox = pair.b.collect_am(5);
    let count = 5u64;
    // Nothing reaches b before the token: its port is down.
    link(c"mlx5_1", false);
    for header in 0..count {
        assert_eq!(am_short(pair.ep_a, header), UCS_OK);
    }
    pair.progress();
    let rx = tokens(&pair);
    link(c"mlx5_1", true);
    drop_next(c"mlx5_1", 100_000);
    // a retransmits (1 ms timeout) for a while.
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_millis(100) {
        pair.progress();
    }
    assert_eq!(
        invalidate(pair.ep_a, UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS),
        UCS_OK
    );
    let reported = Reported::default();
    assert_eq!(
        purge(
            pair.ep_a,
            &rx,
            record_header,
            &reported as *const Reported as *mut c_void
        ),
        UCS_OK
    );
    for _ in 0..200 {
        pair.progress();
    }
    drop_next(c"mlx5_1", 0);
    let received = sequence(inbox);
    let reported = reported.lock().unwrap().clone();
    println!("received {received:?}, reported {reported:?}");
    let mut all: Vec<u64> = received.iter().chain(&reported).copied().collect();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..count).collect::<Vec<_>>(),
        "each AM exactly once: executed by b or replayed"
    );
    pair.close();
}

#[test]
fn invalidate_ignores_unknown_flags_and_field_mask_bits() {
    let _traffic = TRAFFIC.lock().unwrap_or_else(|p| p.into_inner());
    // Unknown bits next to NO_COMPLETIONS: held as with NO_COMPLETIONS alone.
    let pair = Pair::new();
    let params = uct_ep_invalidate_params_t {
        field_mask: UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS | 0x100,
        flags: UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS | 0x80,
    };
    assert_eq!(ep_invalidate(pair.ep_a, Some(&params)), UCS_OK);
    assert_eq!(
        am_short(pair.ep_a, 1),
        UCS_ERR_CANCELED,
        "held: posts refused"
    );
    let rx = tokens(&pair);
    assert_eq!(purge_headers(pair.ep_a, &rx).0, UCS_OK);
    pair.close();

    // `flags` without its field bit is not read: a plain invalidate, the
    // next post is still taken (and flushed).
    let handler = Handler::boxed(UCS_OK);
    let pair = Pair::with_params(Some(handler.params()), None);
    let params = uct_ep_invalidate_params_t {
        field_mask: 0x100,
        flags: UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS,
    };
    assert_eq!(ep_invalidate(pair.ep_a, Some(&params)), UCS_OK);
    assert_eq!(am_short(pair.ep_a, 1), UCS_OK);
    assert!(pair.wait(|| handler.calls() == 1), "the handler never ran");
    assert_eq!(handler.status(), UCS_ERR_CANCELED);
    pair.close();
}

/// A pending request whose send never succeeds (the window stays shut).
unsafe extern "C" fn pending_never_sends(_req: *mut uct_pending_req_t) -> ucs_status_t {
    UCS_ERR_NO_RESOURCE
}

#[test]
fn invalidated_ep_with_pending_requests_fails_at_its_flush_even_if_every_wqe_ran() {
    // UCX's test_uct_peer_failure.purge_failed_peer, with the race made
    // certain: the flow-control window is shut, the device has executed
    // every WQE before the plain invalidate (so no WQE is left to be
    // flushed with an error), and requests wait in the pending queue. The
    // flush must still fail the ep (its NOP is flushed with an error) so
    // that the error handler runs, instead of answering NO_RESOURCE forever.
    let _traffic = TRAFFIC.lock().unwrap_or_else(|p| p.into_inner());
    let handler = Handler::boxed(UCS_OK);
    let pair = Pair::with_params(Some(handler.params()), None);
    let mut posted = 0u64;
    while am_short(pair.ep_a, posted) == UCS_OK {
        posted += 1;
        assert!(posted < 1_000_000, "the window never shut");
    }
    // Let the device (its service thread) execute and acknowledge all of it.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(ep_invalidate(pair.ep_a, None), UCS_OK);
    let mut requests: Vec<uct_pending_req_t> = (0..4)
        .map(|_| uct_pending_req_t {
            func: Some(pending_never_sends),
            r#priv: [0; UCT_PENDING_REQ_PRIV_LEN],
        })
        .collect();
    for request in &mut requests {
        // The request outlives the ep (destroyed below).
        assert_eq!(pending_add(pair.ep_a, request, 0), UCS_OK);
    }
    let mut flushed = UCS_ERR_NO_RESOURCE;
    assert!(
        pair.wait(|| {
            flushed = ep_flush(pair.ep_a, 0, std::ptr::null_mut());
            handler.calls() == 1
        }),
        "the handler never ran (last flush answered {flushed})"
    );
    assert_eq!(handler.status(), UCS_ERR_CANCELED);
    pair.close();
}
