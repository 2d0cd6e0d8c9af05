//! rc_mlx5 details that match UCX's rc: a header-only `am_zcopy` and
//! zero-length put/get zcopy (no iov), posts refused as soon as
//! `uct_ep_flush(CANCEL)` returns,
//! AM WQEs marked solicited (grants and RMA not), flush flags carried to
//! purge's op_info, `RC_TX_MAX_BB` limiting the blocks outstanding,
//! flushes riding on a signalled WQE (no send resources
//! of their own, as UCX's `test_rc.stress_iface_ops` needs), `uct_iface_flush` (no completion; pending counts as in
//! progress), and `UCT_EVENT_SEND_COMP` waking a sender blocked on its
//! flow-control window when the grant arrives.

mod failover_rc_common;
mod log_capture;
mod rc_common;

use std::ffi::c_uint;
use std::ptr::{null, null_mut};
use std::sync::Mutex;
use std::time::Duration;

use failover_rc_common::*;
use log_capture::capture_logs;
use rc_common::uct_safe;
use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;
use uct::api::iface::*;
use uct::mlx5;
use uct::rc::ep::RcEp;

/// `uct_soft_hca_drop_next` acts on the whole device.
static TRAFFIC: Mutex<()> = Mutex::new(());

fn traffic() -> std::sync::MutexGuard<'static, ()> {
    TRAFFIC.lock().unwrap_or_else(|p| p.into_inner())
}

fn rc_ep<'a>(ep: uct_ep_h) -> &'a mut RcEp {
    // SAFETY: a live ep of this transport.
    unsafe { RcEp::from_handle(ep, "test") }.expect("rc ep")
}

#[test]
fn am_zcopy_without_iov_sends_the_header_alone() {
    let _traffic = traffic();
    let pair = Pair::new();
    let at_b = inbox();
    pair.b.collect_am_into(6, at_b);
    let header = *b"only-the-header";
    let mut comp = CountingCompletion::new(2);
    // SAFETY: live ep; NULL iov with count 0 is allowed.
    unsafe {
        assert_eq!(
            uct_ep_am_zcopy(
                pair.ep_a,
                6,
                header.as_ptr().cast(),
                header.len() as c_uint,
                null(),
                0,
                0,
                comp.as_ptr()
            ),
            UCS_INPROGRESS
        );
        // No header either: an empty AM.
        assert_eq!(
            uct_ep_am_zcopy(pair.ep_a, 6, null(), 0, null(), 0, 0, comp.as_ptr()),
            UCS_INPROGRESS
        );
    }
    assert!(pair.wait(|| comp.calls() == 1 && at_b.lock().unwrap().len() == 2));
    assert_eq!(comp.status(), UCS_OK);
    let got = at_b.lock().unwrap().clone();
    assert_eq!(got, vec![header.to_vec(), Vec::new()]);
    pair.close();
}

/// The control segment of the WQE of `ep`'s op at `index` in its table.
fn ctrl_of(ep: &RcEp, index: usize) -> mlx5::CtrlSeg {
    let op = ep.txwq().ops().nth(index).expect("op");
    // The op's WQE is not rewritten while it is outstanding.
    mlx5::decode_send_wqe(ep.txwq().ring_bytes(), op.wqe_index())
        .expect("WQE decodes")
        .ctrl
}

#[test]
fn ams_are_solicited_and_grants_and_puts_are_not() {
    let _traffic = traffic();
    let settings = [(c"RC_FC_WND_SIZE", c"8")];
    let pair = Pair::with_config(None, None, &settings);
    let at_b = inbox();
    pair.b.collect_am_into(2, at_b);
    let mut target = vec![0u8; 64];
    let (memh, rkey) = pair.b.register(target.as_mut_ptr(), target.len());
    // Keep a's WQEs in its table: nothing of a's is completed while the
    // peer's ACKs are dropped.
    assert_eq!(drop_next(c"mlx5_1", 1_000_000), UCS_OK);
    // 8 AMs (the 7th asks for credits the hard way) and a put.
    for seq in 0..8 {
        assert_eq!(am_short(pair.ep_a, 2, seq, &[]), UCS_OK);
    }
    // SAFETY: live ep, registered target.
    assert_eq!(
        unsafe {
            uct_ep_put_short(
                pair.ep_a,
                b"put".as_ptr().cast(),
                3,
                target.as_ptr() as u64,
                rkey,
            )
        },
        UCS_OK
    );
    assert!(pair.wait(|| at_b.lock().unwrap().len() == 8));
    let ep_a = rc_ep(pair.ep_a);
    let kinds: Vec<&str> = ep_a.txwq().ops().map(|op| op.op().name()).collect();
    assert_eq!(kinds[..8], ["am_short"; 8]);
    assert_eq!(kinds[8], "put_short");
    for index in 0..8 {
        let ctrl = ctrl_of(ep_a, index);
        assert_eq!(ctrl.opcode, mlx5::MLX5_OPCODE_SEND);
        assert_ne!(
            ctrl.fm_ce_se & mlx5::MLX5_WQE_CTRL_SOLICITED,
            0,
            "AM {index}"
        );
    }
    assert_eq!(ctrl_of(ep_a, 8).fm_ce_se & mlx5::MLX5_WQE_CTRL_SOLICITED, 0);
    // b's grant message (its packets are dropped, so it stays outstanding).
    let ep_b = rc_ep(pair.ep_b);
    let grant = ep_b
        .txwq()
        .ops()
        .position(|op| op.op().name() == "fc_grant")
        .expect("b posted a grant");
    let ctrl = ctrl_of(ep_b, grant);
    assert_eq!(ctrl.opcode, mlx5::MLX5_OPCODE_SEND);
    assert_eq!(ctrl.fm_ce_se & mlx5::MLX5_WQE_CTRL_SOLICITED, 0);
    assert_eq!(drop_next(c"mlx5_1", 0), UCS_OK);
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(pair.flush(pair.ep_b), UCS_OK);
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}

/// Flush flags purge reported, by operation.
type Flushes = Vec<(uct_ep_operation_t, c_uint)>;

#[test]
fn flush_flags_reach_the_purged_op_info() {
    let _traffic = traffic();
    let pair = Pair::new();
    assert_eq!(drop_next(c"mlx5_0", 1_000_000), UCS_OK);
    let mut comp = CountingCompletion::new(1);
    assert_eq!(am_short(pair.ep_a, 1, 5, &[]), UCS_OK);
    assert_eq!(
        ep_flush(pair.ep_a, UCT_FLUSH_FLAG_REMOTE, comp.as_ptr()),
        UCS_INPROGRESS
    );
    let seen: Flushes = fail_over_purge(pair.ep_a, pair.b.iface, |info| {
        (info.operation, op_flush_flags(info).unwrap_or(0))
    });
    assert_eq!(drop_next(c"mlx5_0", 0), UCS_OK);
    assert_eq!(
        seen,
        vec![
            (UCT_EP_OP_AM_SHORT, 0),
            (UCT_EP_OP_FLUSH, UCT_FLUSH_FLAG_REMOTE)
        ]
    );
    assert_eq!(comp.calls(), 0, "a reported flush is the caller's");
    pair.close();
}

/// UCX's test_rc_max_wr.send_limit: with `RC_TX_MAX_BB=32`, 32 one-block
/// AMs go out, the 33rd waits for a completion.
#[test]
fn tx_max_bb_limits_the_blocks_outstanding() {
    let _traffic = traffic();
    let pair = Pair::with_config(None, None, &[(c"RC_TX_MAX_BB", c"32")]);
    let at_b = pair.b.collect_am(2);
    for seq in 0..32 {
        assert_eq!(am_short(pair.ep_a, 2, seq, &[]), UCS_OK, "AM {seq}");
    }
    assert_eq!(am_short(pair.ep_a, 2, 32, &[]), UCS_ERR_NO_RESOURCE);
    assert_eq!(
        pair.post_retrying(|| am_short(pair.ep_a, 2, 32, &[])),
        UCS_OK
    );
    assert!(pair.wait(|| at_b.lock().unwrap().len() == 33));
    assert_eq!(sequence(at_b), (0..33).collect::<Vec<u64>>());
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    pair.close();
}

/// UCX's test_rc.stress_iface_ops: with a 16-entry send CQ, puts each
/// followed by ten flushes with a completion. A flush after a signalled
/// WQE rides on it (no WQE, CQ credit or PSN of its own), so none is
/// refused for want of send resources, and all complete.
#[test]
fn flushes_after_a_signalled_wqe_need_no_send_resources() {
    let _traffic = traffic();
    let pair = Pair::with_config(None, None, &[(c"RC_TX_CQ_LEN", c"16")]);
    let mut source = vec![1u8; 1024];
    let mut target = Target::new(128);
    let (memh, _) = pair.a.register(source.as_mut_ptr(), source.len());
    let (target_memh, rkey) = pair.b.register(target.base(), target.len());
    let iov = [iov_entry(source.as_mut_ptr(), source.len(), memh)];
    let mut comp = CountingCompletion::new(16 * 512);
    let credits_before = send_credits(pair.a.iface).0;
    let mut in_progress = 0;
    for put in 0..3 {
        let status = put_zcopy(pair.ep_a, &iov, target.addr(0), rkey, comp.as_ptr());
        assert_eq!(status, UCS_INPROGRESS, "put {put}");
        in_progress += 1;
        for flush in 0..10 {
            let status = ep_flush(pair.ep_a, 0, comp.as_ptr());
            assert_eq!(status, UCS_INPROGRESS, "put {put}, flush {flush}");
            in_progress += 1;
        }
    }
    // Only the puts took CQ credits.
    assert_eq!(send_credits(pair.a.iface).0, credits_before - 3);
    let expected = 16 * 512 - in_progress;
    assert!(pair.wait(|| comp.count() == expected));
    assert_eq!(comp.calls(), 0);
    assert_eq!(send_credits(pair.a.iface).0, credits_before);
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(mem_dereg(pair.a.md, memh), UCS_OK);
    assert_eq!(mem_dereg(pair.b.md, target_memh), UCS_OK);
    pair.close();
}

/// Flushes that ride on a signalled WQE are outstanding ops like flush
/// NOPs: purge reports them, in order, with their flags.
#[test]
fn flushes_riding_on_a_wqe_reach_the_purged_op_info() {
    let _traffic = traffic();
    let pair = Pair::new();
    assert_eq!(drop_next(c"mlx5_0", 1_000_000), UCS_OK);
    let mut source = vec![1u8; 64];
    let mut target = Target::new(16);
    let (memh, _) = pair.a.register(source.as_mut_ptr(), source.len());
    let (target_memh, rkey) = pair.b.register(target.base(), target.len());
    let iov = [iov_entry(source.as_mut_ptr(), source.len(), memh)];
    let mut comp = CountingCompletion::new(3);
    let status = put_zcopy(pair.ep_a, &iov, target.addr(0), rkey, comp.as_ptr());
    assert_eq!(status, UCS_INPROGRESS);
    for flags in [UCT_FLUSH_FLAG_REMOTE, UCT_FLUSH_FLAG_LOCAL] {
        assert_eq!(ep_flush(pair.ep_a, flags, comp.as_ptr()), UCS_INPROGRESS);
    }
    let seen: Flushes = fail_over_purge(pair.ep_a, pair.b.iface, |info| {
        (info.operation, op_flush_flags(info).unwrap_or(0))
    });
    assert_eq!(drop_next(c"mlx5_0", 0), UCS_OK);
    assert_eq!(
        seen,
        vec![
            (UCT_EP_OP_PUT_ZCOPY, 0),
            (UCT_EP_OP_FLUSH, UCT_FLUSH_FLAG_REMOTE),
            (UCT_EP_OP_FLUSH, UCT_FLUSH_FLAG_LOCAL)
        ]
    );
    assert_eq!(comp.calls(), 0, "reported ops are the caller's");
    assert_eq!(mem_dereg(pair.a.md, memh), UCS_OK);
    assert_eq!(mem_dereg(pair.b.md, target_memh), UCS_OK);
    pair.close();
}

unsafe extern "C" fn resend(req: *mut uct_pending_req_t) -> ucs_status_t {
    // SAFETY: the request's priv holds the ep (written by the test).
    let ep = unsafe { (*req).r#priv.as_ptr().cast::<uct_ep_h>().read_unaligned() };
    am_short(ep, 3, 99, &[])
}

#[test]
fn iface_flush_without_completion_counts_pending_as_in_progress() {
    let _traffic = traffic();
    let settings = [(c"RC_FC_WND_SIZE", c"4")];
    let pair = Pair::with_config(None, None, &settings);
    let at_b = inbox();
    pair.b.collect_am_into(3, at_b);
    let mut comp = CountingCompletion::new(1);
    assert_eq!(
        iface_flush(pair.a.iface, 0, comp.as_ptr()),
        UCS_ERR_UNSUPPORTED
    );
    while am_short(pair.ep_a, 3, 0, &[]) == UCS_OK {}
    let mut req = uct_pending_req_t {
        func: Some(resend),
        r#priv: [0; UCT_PENDING_REQ_PRIV_LEN],
    };
    // SAFETY: the priv area holds a pointer; the request outlives dispatch.
    unsafe {
        req.r#priv
            .as_mut_ptr()
            .cast::<uct_ep_h>()
            .write_unaligned(pair.ep_a);
        assert_eq!(uct_ep_pending_add(pair.ep_a, &mut req, 0), UCS_OK);
        // A pending request is work in progress, not an error.
        assert_eq!(uct_iface_flush(pair.a.iface, 0, null_mut()), UCS_INPROGRESS);
    }
    assert!(pair.wait(|| { iface_flush(pair.a.iface, 0, null_mut()) == UCS_OK }));
    assert_eq!(at_b.lock().unwrap().len(), 5);
    assert_eq!(comp.calls(), 0);
    pair.close();
}

/// Calls `done` until it holds (false after 20 s); progresses nothing
/// itself.
fn wait_for(mut done: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while !done() {
        if start.elapsed() > Duration::from_secs(20) {
            return false;
        }
        std::thread::yield_now();
    }
    true
}

#[test]
fn send_completion_event_wakes_a_sender_waiting_for_a_grant() {
    let _traffic = traffic();
    let settings = [(c"RC_FC_WND_SIZE", c"4")];
    let pair = Pair::with_config(None, None, &settings);
    let at_b = inbox();
    pair.b.collect_am_into(3, at_b);
    while am_short(pair.ep_a, 3, 0, &[]) == UCS_OK {}
    // a's sends complete (b's device ACKs without b progressing); then a
    // has nothing but the grant to wait for.
    assert!(wait_for(|| {
        pair.a.progress();
        ep_flush(pair.ep_a, 0, null_mut()) == UCS_OK
    }));
    let mut fd = -1;
    assert_eq!(event_fd_get(pair.a.iface, &mut fd), UCS_OK);
    assert_eq!(event_arm(pair.a.iface, UCT_EVENT_SEND_COMP), UCS_OK);
    assert!(!fd_readable(fd, Duration::from_millis(50)));
    // b takes the AMs and grants: a's fd wakes for the grant.
    assert!(wait_for(|| {
        pair.b.progress();
        at_b.lock().unwrap().len() == 4
    }));
    assert!(
        fd_readable(fd, Duration::from_secs(10)),
        "woken by the grant"
    );
    assert!(pair.wait(|| {
        pair.a.progress();
        rc_ep(pair.ep_a).fc.window() == 4
    }));
    pair.close();
}

#[test]
fn zero_length_rma_zcopy_without_iov_completes() {
    let _traffic = traffic();
    let pair = Pair::new();
    let mut target = vec![5u8; 16];
    let (memh, rkey) = pair.b.register(target.as_mut_ptr(), target.len());
    let raddr = target.as_ptr() as u64;
    let mut comp = CountingCompletion::new(2);
    // SAFETY: live ep; NULL iov with count 0 is allowed.
    unsafe {
        assert_eq!(
            uct_ep_put_zcopy(pair.ep_a, null(), 0, raddr, rkey, comp.as_ptr()),
            UCS_INPROGRESS
        );
        assert_eq!(
            uct_ep_get_zcopy(pair.ep_a, null(), 0, raddr, rkey, comp.as_ptr()),
            UCS_INPROGRESS
        );
    }
    assert!(pair.wait(|| comp.calls() == 1));
    assert_eq!(comp.status(), UCS_OK);
    assert_eq!(target, vec![5u8; 16], "nothing written");
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}

#[test]
fn posts_fail_as_soon_as_flush_cancel_returns() {
    let _traffic = traffic();
    let pair = Pair::new();
    let at_b = inbox();
    pair.b.collect_am_into(1, at_b);
    // Outstanding ops at the cancel: nothing of a's leaves.
    assert_eq!(drop_next(c"mlx5_0", 1_000_000), UCS_OK);
    let mut comp = CountingCompletion::new(1);
    for seq in 0..4 {
        assert_eq!(am_short(pair.ep_a, 1, seq, &[]), UCS_OK);
    }
    assert_eq!(
        ep_flush(pair.ep_a, UCT_FLUSH_FLAG_CANCEL, comp.as_ptr()),
        UCS_INPROGRESS
    );
    // Before any completion was polled: the QP is in error already. The
    // first refused post says why.
    let (status, logs) = capture_logs(|| am_short(pair.ep_a, 1, 9, &[]));
    assert_eq!(status, UCS_ERR_CANCELED);
    assert_eq!(
        logs.matches("posts refused, the endpoint failed").count(),
        1,
        "{logs}"
    );
    assert!(pair.wait(|| comp.calls() == 1));
    assert_eq!(comp.status(), UCS_ERR_CANCELED);
    assert_eq!(drop_next(c"mlx5_0", 0), UCS_OK);
    // Later refused posts are quiet: one log line per failure, not one per
    // post (callers retry in loops).
    let (statuses, logs) = capture_logs(|| {
        (10..13)
            .map(|seq| am_short(pair.ep_a, 1, seq, &[]))
            .collect::<Vec<_>>()
    });
    assert_eq!(statuses, vec![UCS_ERR_CANCELED; 3]);
    assert!(!logs.contains("posts refused"), "{logs}");
    assert_eq!(
        ep_flush(pair.ep_a, UCT_FLUSH_FLAG_CANCEL, null_mut()),
        UCS_OK
    );
    assert!(at_b.lock().unwrap().is_empty());
    pair.close();
}
