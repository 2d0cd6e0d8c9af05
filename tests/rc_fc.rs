//! rc_mlx5 flow control of AMs between two soft devices in one process:
//! the window runs out (`UCS_ERR_NO_RESOURCE`, pending accepted), the
//! peer's grant reopens it and the pending requests run; thousands of AMs
//! through a small window arrive once and in order, one way and both ways
//! (grants as messages and piggybacked); with `RC_FC_ENABLE=n` nothing
//! limits or marks AMs; grant messages never reach AM handlers and purge
//! drops them without reporting them; forged flow-control headers from a
//! peer are ignored. The lossy run is `rc_fc_loss.rs`.

mod failover_rc_common;
mod rc_common;

use std::ffi::{c_uint, c_void, CStr};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use failover_rc_common::*;
use rc_common::uct_safe;
use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;
use uct::failover::PostedOp;
use uct::mlx5;
use uct::rc::ep::{PostSpec, RcEp};
use uct::rc::fc::{FC_GRANT, FC_HARD_REQ, FC_PURE_GRANT, FC_SOFT_REQ};
use uct::rc::iface::RcIface;

/// `uct_soft_hca_drop_next` acts on the whole device: tests that send
/// traffic take this lock.
static TRAFFIC: Mutex<()> = Mutex::new(());

fn traffic() -> std::sync::MutexGuard<'static, ()> {
    TRAFFIC.lock().unwrap_or_else(|p| p.into_inner())
}

const AM_ID: u8 = 4;

fn window(size: &'static CStr) -> [(&'static CStr, &'static CStr); 1] {
    [(c"RC_FC_WND_SIZE", size)]
}

/// The ep behind a handle (tests look at its flow-control state).
fn rc_ep<'a>(ep: uct_ep_h) -> &'a mut RcEp {
    // SAFETY: a live ep of this transport.
    unsafe { RcEp::from_handle(ep, "test") }.expect("rc ep")
}

/// The sequence number in an AM's 8-byte header.
fn seq_of(message: &[u8]) -> u64 {
    u64::from_ne_bytes(message[..8].try_into().unwrap())
}

fn am_short(ep: uct_ep_h, seq: u64) -> ucs_status_t {
    rc_common::uct_safe::am_short(ep, AM_ID, seq, &[])
}

/// A pending request that sends AM `seq` when dispatched.
#[repr(C)]
struct SendReq {
    req: uct_pending_req_t,
    ep: uct_ep_h,
    seq: u64,
    calls: u32,
}

unsafe extern "C" fn send_pending(req: *mut uct_pending_req_t) -> ucs_status_t {
    // SAFETY: req is the first field of a live SendReq.
    let send = unsafe { &mut *(req as *mut SendReq) };
    send.calls += 1;
    am_short(send.ep, send.seq)
}

impl SendReq {
    fn new(ep: uct_ep_h, seq: u64) -> Box<SendReq> {
        Box::new(SendReq {
            req: uct_pending_req_t {
                func: Some(send_pending),
                r#priv: [0; UCT_PENDING_REQ_PRIV_LEN],
            },
            ep,
            seq,
            calls: 0,
        })
    }

    fn calls(&self) -> u32 {
        read_volatile(&self.calls)
    }
}

/// Counts messages delivered to the handler whose argument it is.
unsafe extern "C" fn count_am(
    arg: *mut c_void,
    _data: *mut c_void,
    _length: usize,
    _flags: c_uint,
) -> ucs_status_t {
    // SAFETY: arg is a leaked AtomicUsize.
    unsafe { (*(arg as *const AtomicUsize)).fetch_add(1, Ordering::SeqCst) };
    UCS_OK
}

/// Registers a counting handler for every AM id on `side`.
fn count_every_id(side: &Side) -> &'static AtomicUsize {
    let counter: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(0)));
    for id in 0..UCT_AM_ID_MAX as u8 {
        let status = set_am_handler(
            side.iface,
            id,
            Some(count_am),
            counter as *const AtomicUsize as *mut c_void,
            0,
        );
        assert_eq!(status, UCS_OK);
    }
    counter
}

#[test]
fn exhausted_window_says_no_resource_and_the_grant_runs_the_pending_requests() {
    let _traffic = traffic();
    let pair = Pair::with_config(None, None, &window(c"8"));
    let at_b = inbox();
    pair.b.collect_am_into(AM_ID, at_b);
    let at_a = count_every_id(&pair.a);
    // Nothing is progressed: after 8 AMs the window (not the ring) is out.
    let mut posted = 0u64;
    let status = loop {
        let status = am_short(pair.ep_a, posted);
        if status != UCS_OK {
            break status;
        }
        posted += 1;
        assert!(posted < 1000, "the window never ran out");
    };
    assert_eq!(status, UCS_ERR_NO_RESOURCE);
    assert_eq!(posted, 8);
    assert_eq!(rc_ep(pair.ep_a).fc.window(), 0);
    // Other AM flavours are refused as well, and their pack callback is
    // not called.
    unsafe extern "C" fn must_not_pack(_: *mut c_void, _: *mut c_void) -> usize {
        panic!("pack called for a refused am_bcopy");
    }
    // SAFETY: live ep.
    let refused = unsafe { uct_ep_am_bcopy(pair.ep_a, AM_ID, Some(must_not_pack), null_mut(), 0) };
    assert_eq!(refused, isize::from(UCS_ERR_NO_RESOURCE));
    // The window is a missing resource: pending_add accepts.
    let mut first = SendReq::new(pair.ep_a, 8);
    let mut second = SendReq::new(pair.ep_a, 9);
    assert_eq!(pending_add(pair.ep_a, &mut first.req, 0), UCS_OK);
    assert_eq!(pending_add(pair.ep_a, &mut second.req, 0), UCS_OK);
    // b receives the hard request and grants; a's pending requests run.
    assert!(pair.wait(|| at_b.lock().unwrap().len() == 10));
    assert_eq!((first.calls(), second.calls()), (1, 1));
    let seqs: Vec<u64> = at_b.lock().unwrap().iter().map(|m| seq_of(m)).collect();
    assert_eq!(seqs, (0..10).collect::<Vec<u64>>());
    // The grant message reached no handler of a.
    assert_eq!(at_a.load(Ordering::SeqCst), 0);
    assert_eq!(rc_ep(pair.ep_a).fc.window(), 8 - 2);
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    pair.close();
}

#[test]
fn a_failed_ep_with_a_closed_window_answers_its_error_not_no_resource() {
    let _traffic = traffic();
    let pair = Pair::with_config(None, None, &window(c"8"));
    let at_b = inbox();
    pair.b.collect_am_into(AM_ID, at_b);
    // Nothing is progressed: the window runs out, one request waits.
    for seq in 0..8 {
        assert_eq!(am_short(pair.ep_a, seq), UCS_OK);
    }
    assert_eq!(am_short(pair.ep_a, 8), UCS_ERR_NO_RESOURCE);
    let mut waiting = SendReq::new(pair.ep_a, 8);
    assert_eq!(pending_add(pair.ep_a, &mut waiting.req, 0), UCS_OK);
    // The ep fails (cancel): no grant will ever reopen its window, so a
    // retry loop must see the failure, not NO_RESOURCE forever.
    let mut comp = CountingCompletion::new(1);
    let flushed = ep_flush(pair.ep_a, UCT_FLUSH_FLAG_CANCEL, comp.as_ptr());
    assert!(flushed == UCS_INPROGRESS || flushed == UCS_OK, "{flushed}");
    assert_eq!(am_short(pair.ep_a, 9), UCS_ERR_CANCELED);
    unsafe extern "C" fn must_not_pack(_: *mut c_void, _: *mut c_void) -> usize {
        panic!("pack called for a refused am_bcopy");
    }
    // SAFETY: live ep.
    let refused = unsafe { uct_ep_am_bcopy(pair.ep_a, AM_ID, Some(must_not_pack), null_mut(), 0) };
    assert_eq!(refused, isize::from(UCS_ERR_CANCELED));
    if flushed == UCS_INPROGRESS {
        assert!(pair.wait(|| comp.calls() == 1));
    }
    // The failed ep's pending request never runs: an iface flush does not
    // wait for it.
    assert_ne!(iface_flush(pair.a.iface, 0, null_mut()), UCS_INPROGRESS);
    pending_purge(pair.ep_a, None, null_mut());
    assert_eq!(waiting.calls(), 0);
    pair.close();
}

/// Sends `count` AMs from `ep`, bcopy every 7th, progressing when refused.
fn send_stream(pair: &Pair, ep: uct_ep_h, first_seq: u64, count: u64) {
    unsafe extern "C" fn pack_seq(dest: *mut c_void, arg: *mut c_void) -> usize {
        // SAFETY: dest holds max_bcopy bytes; arg is the sequence number.
        unsafe { (dest as *mut u64).write_unaligned(arg as u64) };
        8
    }
    for seq in first_seq..first_seq + count {
        loop {
            let status = if seq % 7 == 3 {
                // SAFETY: live ep; the argument is the value itself.
                let sent =
                    unsafe { uct_ep_am_bcopy(ep, AM_ID, Some(pack_seq), seq as *mut c_void, 0) };
                if sent >= 0 {
                    assert_eq!(sent, 8);
                    UCS_OK
                } else {
                    sent as ucs_status_t
                }
            } else {
                am_short(ep, seq)
            };
            if status == UCS_OK {
                break;
            }
            assert_eq!(status, UCS_ERR_NO_RESOURCE);
            pair.progress();
        }
    }
}

fn assert_in_order(inbox: &Inbox, count: u64) {
    let seqs: Vec<u64> = inbox.lock().unwrap().iter().map(|m| seq_of(m)).collect();
    assert_eq!(seqs.len() as u64, count);
    for (expected, seq) in seqs.iter().enumerate() {
        assert_eq!(*seq, expected as u64, "message {expected}");
    }
}

#[test]
fn thousands_of_ams_through_a_small_window_arrive_once_and_in_order() {
    const COUNT: u64 = 5000;
    let _traffic = traffic();
    let pair = Pair::with_config(None, None, &window(c"16"));
    let at_b = inbox();
    pair.b.collect_am_into(AM_ID, at_b);
    send_stream(&pair, pair.ep_a, 0, COUNT);
    assert!(pair.wait(|| at_b.lock().unwrap().len() as u64 >= COUNT));
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_in_order(at_b, COUNT);
    assert!(rc_ep(pair.ep_a).fc.window() <= 16);
    pair.close();
}

#[test]
fn both_ways_grants_ride_on_ams_and_nothing_is_lost() {
    const COUNT: u64 = 3000;
    let _traffic = traffic();
    let pair = Pair::with_config(None, None, &window(c"16"));
    let (at_a, at_b) = (inbox(), inbox());
    pair.a.collect_am_into(AM_ID, at_a);
    pair.b.collect_am_into(AM_ID, at_b);
    // Interleaved bursts each way: soft requests are answered on the
    // peer's next AM.
    for burst in 0..COUNT / 50 {
        send_stream(&pair, pair.ep_a, burst * 50, 50);
        send_stream(&pair, pair.ep_b, burst * 50, 50);
    }
    assert!(pair.wait(|| {
        at_a.lock().unwrap().len() as u64 >= COUNT && at_b.lock().unwrap().len() as u64 >= COUNT
    }));
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(pair.flush(pair.ep_b), UCS_OK);
    assert_in_order(at_a, COUNT);
    assert_in_order(at_b, COUNT);
    pair.close();
}

#[test]
fn disabled_flow_control_neither_limits_nor_marks_ams() {
    let _traffic = traffic();
    let settings = [(c"RC_FC_ENABLE", c"n"), (c"RC_FC_WND_SIZE", c"8")];
    let pair = Pair::with_config(None, None, &settings);
    let at_b = inbox();
    pair.b.collect_am_into(AM_ID, at_b);
    // Without progress, far more than the (unused) window goes out: only
    // the ring or CQ credits stop it.
    let mut posted = 0u64;
    while am_short(pair.ep_a, posted) == UCS_OK {
        posted += 1;
        assert!(posted < 100_000);
    }
    assert!(posted > 64, "{posted}");
    assert!(pair.wait(|| at_b.lock().unwrap().len() as u64 >= posted));
    // 3000 more, as a stream.
    send_stream(&pair, pair.ep_a, posted, 3000);
    assert!(pair.wait(|| at_b.lock().unwrap().len() as u64 >= posted + 3000));
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    // Every AM reached handler AM_ID (no flow-control bits in the id), in
    // order, and no credit was ever asked for.
    assert_in_order(at_b, posted + 3000);
    assert!(!rc_ep(pair.ep_a).fc.is_requested());
    pair.close();
}

/// What purge reported: (operation, AM id, header).
type Reported = Vec<(uct_ep_operation_t, u8, u64)>;

#[test]
fn purge_drops_grant_messages_and_reports_user_ams_with_clean_ids() {
    let _traffic = traffic();
    let pair = Pair::with_config(None, None, &window(c"8"));
    let at_b = inbox();
    pair.b.collect_am_into(AM_ID, at_b);
    // Nothing leaves b: its grant and its AM stay outstanding.
    assert_eq!(drop_next(c"mlx5_1", 1_000_000), UCS_OK);
    // 7 AMs: the 5th carries the soft request, the 7th the hard one.
    for seq in 0..7 {
        assert_eq!(am_short(pair.ep_a, seq), UCS_OK);
    }
    assert!(pair.wait(|| at_b.lock().unwrap().len() == 7));
    // b owes a piggybacked grant (soft) and posted a grant message (hard).
    let ep_b = rc_ep(pair.ep_b);
    assert!(ep_b.fc.grant_owed());
    let kinds: Vec<&str> = ep_b.txwq().ops().map(|op| op.op().name()).collect();
    assert_eq!(kinds, vec!["fc_grant"]);
    // A user AM of b: it carries the grant bit on the wire.
    assert_eq!(am_short(pair.ep_b, 0x5eed), UCS_OK);
    assert!(!rc_ep(pair.ep_b).fc.grant_owed());
    let reported: Reported = fail_over_purge(pair.ep_b, pair.a.iface, |info| {
        let (id, header) = op_am(info).map_or((0, 0), |am| (am.am_id, am_header_value(&am)));
        (info.operation, id, header)
    });
    assert_eq!(drop_next(c"mlx5_1", 0), UCS_OK);
    // Only the user's AM, with its own id (not the protocol bits).
    assert_eq!(reported, vec![(UCT_EP_OP_AM_SHORT, AM_ID, 0x5eed)]);
    assert!(rc_ep(pair.ep_b).txwq().is_empty());
    pair.close();
}

/// Posts a SEND of the tag-matching byte (0) then `message` as it is (its
/// first byte is the AM id byte of the AM header), as a peer could.
fn post_raw(side: &Side, ep: uct_ep_h, message: &[u8]) {
    // SAFETY: a live iface of this transport.
    let iface = unsafe { RcIface::from_handle(side.iface, "test") }.expect("rc iface");
    // The id a purge would report (none happens here).
    let am = PostedOp::AmShort { am_id: 0 };
    let spec = PostSpec::new(am, mlx5::MLX5_OPCODE_SEND, 1 + message.len());
    let credits = &mut iface.state.tx_mut().credits;
    rc_ep(ep)
        .ready(*credits)
        .and_then(|sq| {
            sq.post(credits, spec, |wqe| {
                wqe.inline(&[&[uct::rc::iface::TMH_NO_TAG], message]);
            })
        })
        .expect("raw post");
}

#[test]
fn forged_flow_control_headers_are_ignored() {
    let _traffic = traffic();
    let pair = Pair::with_config(None, None, &window(c"8"));
    let at_b = count_every_id(&pair.b);
    let at_b_am = inbox();
    pair.b.collect_am_into(AM_ID, at_b_am);
    let mut header = [0u8; 9];
    header[1..].copy_from_slice(&77u64.to_ne_bytes());
    let forged: Vec<Vec<u8>> = vec![
        // Grant messages with a payload or an AM id: dropped.
        vec![FC_PURE_GRANT, 1, 2, 3],
        vec![FC_PURE_GRANT | 1],
        vec![FC_PURE_GRANT | AM_ID, 0, 0, 0, 0, 0, 0, 0, 0],
        // A grant message nobody asked for: consumed, nothing changes.
        vec![FC_PURE_GRANT],
        // An AM with a grant nobody asked for: delivered, window unchanged.
        [&[FC_GRANT | AM_ID][..], &header[1..]].concat(),
        // An AM with both request bits: delivered, bits ignored.
        [&[FC_SOFT_REQ | FC_HARD_REQ | AM_ID][..], &header[1..]].concat(),
        // Header byte alone with a request: an empty AM for id 1.
        vec![FC_SOFT_REQ | 1],
    ];
    // b's own window is partly used, so a grant would show.
    for seq in 0..3 {
        assert_eq!(am_short(pair.ep_b, seq), UCS_OK);
    }
    for message in &forged {
        post_raw(&pair.a, pair.ep_a, message);
    }
    assert!(pair.wait(|| at_b_am.lock().unwrap().len() == 2));
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    // Let anything else arrive.
    for _ in 0..200 {
        pair.progress();
    }
    let delivered = at_b_am.lock().unwrap().clone();
    assert_eq!(
        delivered.iter().map(|m| seq_of(m)).collect::<Vec<_>>(),
        [77, 77]
    );
    // Only the empty AM for id 1 reached the other handlers.
    assert_eq!(at_b.load(Ordering::SeqCst), 1);
    let ep_b = rc_ep(pair.ep_b);
    assert_eq!(
        ep_b.fc.window(),
        8 - 3,
        "no forged grant refilled the window"
    );
    assert!(ep_b.fc.grant_owed(), "the soft request is honoured");
    // b still works both ways.
    assert_eq!(am_short(pair.ep_b, 1), UCS_OK);
    assert_eq!(pair.flush(pair.ep_b), UCS_OK);
    pair.close();
}
