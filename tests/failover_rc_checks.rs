//! rc_mlx5 failover through the C API: capability and token lengths, every
//! parameter check of the token queries and of purge (issue 5 point 5),
//! invalidate with and without NO_COMPLETIONS, and op_info of purged AMs.

mod failover_rc_common;
mod rc_common;

use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::Mutex;

use failover_rc_common::*;
use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;
use uct::api::v2::*;

/// What a purge callback saw: (operation, AM id, header, payload).
type Seen = Mutex<Vec<(uct_ep_operation_t, u8, u64, Vec<u8>)>>;

unsafe extern "C" fn record_op(info: *const uct_ep_op_info_t, arg: *mut c_void) {
    // SAFETY: the library passes a valid op_info; arg is a Seen.
    unsafe {
        let info = &*info;
        let seen = &*(arg as *const Seen);
        let (id, header, payload) = if info.field_mask & UCT_EP_OP_INFO_FIELD_AM != 0 {
            let am = info.detail.am;
            let data = am.payload.data;
            let bytes = std::slice::from_raw_parts(data.buffer as *const u8, data.length).to_vec();
            (am.am_id, am.header.value, bytes)
        } else {
            (0, 0, Vec::new())
        };
        seen.lock()
            .unwrap()
            .push((info.operation, id, header, bytes_or(payload)));
    }
}

fn bytes_or(v: Vec<u8>) -> Vec<u8> {
    v
}

unsafe extern "C" fn ignore_op(_: *const uct_ep_op_info_t, _: *mut c_void) {}

#[test]
fn capability_and_token_lengths_are_advertised() {
    let pair = Pair::new();
    let (flags, tx_len, rx_len) = token_caps(pair.a.iface);
    assert_ne!(flags & UCT_IFACE_FLAG_V2_QUERY_TOKEN, 0);
    assert!(tx_len >= 16 && rx_len >= 16, "{tx_len} {rx_len}");
    pair.close();
}

#[test]
fn token_queries_refuse_bad_parameters() {
    let pair = Pair::new();
    let (_, tx_len, rx_len) = token_caps(pair.a.iface);
    let tx = tx_token(pair.ep_a, tx_len).expect("tx token");
    let before = tx.clone();
    let mut rx = vec![0u8; rx_len];

    // TX token without RX token.
    // SAFETY: all-zero attrs; buffers of the advertised lengths.
    unsafe {
        let mut attr: uct_iface_attr_v2_t = std::mem::zeroed();
        attr.field_mask = UCT_IFACE_ATTR_FIELD_TX_TOKEN;
        attr.tx_token = tx.as_ptr().cast();
        assert_eq!(
            uct_iface_query_v2(pair.b.iface, &mut attr),
            UCS_ERR_INVALID_PARAM
        );
        // RX token without TX token.
        attr.field_mask = UCT_IFACE_ATTR_FIELD_RX_TOKEN;
        attr.rx_token = rx.as_mut_ptr().cast();
        assert_eq!(
            uct_iface_query_v2(pair.b.iface, &mut attr),
            UCS_ERR_INVALID_PARAM
        );
        // NULL TX token buffer.
        attr.field_mask = UCT_IFACE_ATTR_FIELD_TX_TOKEN | UCT_IFACE_ATTR_FIELD_RX_TOKEN;
        attr.tx_token = null();
        assert_eq!(
            uct_iface_query_v2(pair.b.iface, &mut attr),
            UCS_ERR_INVALID_PARAM
        );
        // NULL RX token buffer.
        attr.tx_token = tx.as_ptr().cast();
        attr.rx_token = null_mut();
        assert_eq!(
            uct_iface_query_v2(pair.b.iface, &mut attr),
            UCS_ERR_INVALID_PARAM
        );
        // uct_ep_query with a NULL TX token buffer.
        let mut ep_attr: uct_ep_attr_t = std::mem::zeroed();
        ep_attr.field_mask = UCT_EP_ATTR_FIELD_TX_TOKEN;
        assert_eq!(uct_ep_query(pair.ep_a, &mut ep_attr), UCS_ERR_INVALID_PARAM);
    }
    // The TX token names b's QP: b derives, a (no such QP) refuses.
    assert!(rx_token(pair.b.iface, &tx, rx_len).is_ok());
    assert_eq!(tx, before, "tx_token is const");
    let mut garbage = tx.clone();
    garbage[tx_len / 2] ^= 0x40;
    assert_eq!(
        rx_token(pair.b.iface, &garbage, rx_len),
        Err(UCS_ERR_INVALID_PARAM)
    );
    // A token for a destroyed QP: unknown connection.
    // SAFETY: live ep, destroyed once (Pair::close is not used for it).
    unsafe { uct_ep_destroy(pair.ep_b) };
    assert_eq!(
        rx_token(pair.b.iface, &tx, rx_len),
        Err(UCS_ERR_INVALID_PARAM)
    );
    // SAFETY: the remaining handles, closed once.
    unsafe { uct_ep_destroy(pair.ep_a) };
    pair.a.close();
    pair.b.close();
}

#[test]
fn purge_refuses_bad_parameters_and_eps_that_hold_nothing() {
    let pair = Pair::new();
    let (_, tx_len, rx_len) = token_caps(pair.a.iface);
    let tx = tx_token(pair.ep_a, tx_len).unwrap();
    let rx = rx_token(pair.b.iface, &tx, rx_len).unwrap();
    // A working ep: nothing to purge.
    assert_eq!(
        purge(pair.ep_a, &rx, ignore_op, null_mut()),
        UCS_ERR_INVALID_PARAM
    );
    // SAFETY: live ep.
    assert_eq!(unsafe { uct_ep_failover_enable(pair.ep_a) }, UCS_OK);
    // Enabled but not failed: still nothing to purge.
    assert_eq!(
        purge(pair.ep_a, &rx, ignore_op, null_mut()),
        UCS_ERR_INVALID_PARAM
    );

    let all = UCT_EP_OUTSTANDING_FIELD_RX_TOKEN | UCT_EP_OUTSTANDING_FIELD_CB;
    let good = uct_ep_outstanding_purge_params_t {
        field_mask: all,
        rx_token: rx.as_ptr().cast(),
        cb: Some(ignore_op),
        arg: null_mut(),
    };
    assert_eq!(
        invalidate(pair.ep_a, UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS),
        UCS_OK
    );
    let variants = [
        uct_ep_outstanding_purge_params_t {
            field_mask: UCT_EP_OUTSTANDING_FIELD_CB,
            ..good
        },
        uct_ep_outstanding_purge_params_t {
            field_mask: UCT_EP_OUTSTANDING_FIELD_RX_TOKEN,
            ..good
        },
        uct_ep_outstanding_purge_params_t {
            rx_token: null(),
            ..good
        },
        uct_ep_outstanding_purge_params_t { cb: None, ..good },
    ];
    for params in &variants {
        assert_eq!(purge_raw(pair.ep_a, params), UCS_ERR_INVALID_PARAM);
    }
    // SAFETY: NULL params.
    assert_eq!(
        unsafe { uct_ep_outstanding_purge(pair.ep_a, null()) },
        UCS_ERR_INVALID_PARAM
    );
    // `arg` is optional; the ep was invalidated with NO_COMPLETIONS.
    assert_eq!(purge_raw(pair.ep_a, &good), UCS_OK);
    // Only once.
    assert_eq!(purge_raw(pair.ep_a, &good), UCS_ERR_INVALID_PARAM);
    pair.close();
}

/// Tests that send traffic (and drop packets on mlx5_0) run one at a time.
static TRAFFIC: Mutex<()> = Mutex::new(());

#[test]
fn invalidate_without_no_completions_does_not_allow_purge() {
    let _traffic = TRAFFIC.lock().unwrap_or_else(|p| p.into_inner());
    let pair = Pair::new();
    let (_, tx_len, rx_len) = token_caps(pair.a.iface);
    let tx = tx_token(pair.ep_a, tx_len).unwrap();
    let rx = rx_token(pair.b.iface, &tx, rx_len).unwrap();
    let mut comp = CountingCompletion::new(1);
    // SAFETY: live ep; the completion outlives the op.
    unsafe {
        assert_eq!(uct_ep_am_short(pair.ep_a, 3, 7, null(), 0), UCS_OK);
        assert_eq!(uct_ep_flush(pair.ep_a, 0, comp.as_ptr()), UCS_INPROGRESS);
    }
    assert_eq!(invalidate(pair.ep_a, 0), UCS_OK);
    assert!(pair.wait(|| comp.calls() == 1), "flush never completed");
    // Either the flush completed before the QP went down, or it was
    // canceled: never held.
    assert!(comp.status() == UCS_OK || comp.status() == UCS_ERR_CANCELED);
    assert_eq!(
        purge(pair.ep_a, &rx, ignore_op, null_mut()),
        UCS_ERR_INVALID_PARAM
    );
    pair.close();
}

#[test]
fn invalidated_ep_reports_undelivered_ams_in_posting_order() {
    let _traffic = TRAFFIC.lock().unwrap_or_else(|p| p.into_inner());
    let pair = Pair::new();
    let (_, tx_len, rx_len) = token_caps(pair.a.iface);
    let inbox = inbox();
    // SAFETY: live iface; the inbox is leaked.
    unsafe {
        assert_eq!(
            uct::api::iface::uct_iface_set_am_handler(
                pair.b.iface,
                5,
                Some(collect_am),
                inbox as *const Inbox as *mut c_void,
                0
            ),
            UCS_OK
        );
    }
    let count = 6u64;
    // Nothing a leaves arrives (retransmissions included) until the ep is
    // invalidated: every AM is undelivered.
    // SAFETY: a NUL-terminated device name.
    assert_eq!(
        unsafe { uct::api::soft_hca::uct_soft_hca_drop_next(c"mlx5_0".as_ptr(), 1000) },
        UCS_OK
    );
    for seq in 0..count {
        let payload = [seq as u8; 3];
        // SAFETY: live ep, payload of 3 bytes.
        let status = unsafe { uct_ep_am_short(pair.ep_a, 5, seq, payload.as_ptr().cast(), 3) };
        assert_eq!(status, UCS_OK);
    }
    assert_eq!(
        invalidate(pair.ep_a, UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS),
        UCS_OK
    );
    // Posting on an invalidated ep fails.
    // SAFETY: live ep.
    assert_ne!(
        unsafe { uct_ep_am_short(pair.ep_a, 5, 99, null(), 0) },
        UCS_OK
    );
    // Let the receiver take whatever arrived before the QP went down.
    for _ in 0..200 {
        pair.progress();
    }
    let tx = tx_token(pair.ep_a, tx_len).unwrap();
    let rx = rx_token(pair.b.iface, &tx, rx_len).unwrap();
    let seen: &'static Seen = Box::leak(Box::new(Mutex::new(Vec::new())));
    assert_eq!(
        purge(
            pair.ep_a,
            &rx,
            record_op,
            seen as *const Seen as *mut c_void
        ),
        UCS_OK
    );
    // Handlers of AMs the responder accepted before the token may run only
    // now.
    for _ in 0..200 {
        pair.progress();
    }
    let received: Vec<u64> = inbox
        .lock()
        .unwrap()
        .iter()
        .map(|m| u64::from_ne_bytes(m[..8].try_into().unwrap()))
        .collect();
    let reported = seen.lock().unwrap().clone();
    // Received ones are a prefix, reported ones the rest, each exactly once.
    let expected_reported: Vec<u64> = (received.len() as u64..count).collect();
    assert_eq!(received, (0..received.len() as u64).collect::<Vec<_>>());
    let reported_seqs: Vec<u64> = reported.iter().map(|r| r.2).collect();
    assert_eq!(reported_seqs, expected_reported);
    for (operation, id, header, payload) in &reported {
        assert_eq!(*operation, UCT_EP_OP_AM_SHORT);
        assert_eq!(*id, 5);
        assert_eq!(payload, &vec![*header as u8; 3]);
    }
    println!("received {}, reported {}", received.len(), reported.len());
    assert_eq!(reported.len(), count as usize, "all dropped, all reported");
    // SAFETY: as above.
    assert_eq!(
        unsafe { uct::api::soft_hca::uct_soft_hca_drop_next(c"mlx5_0".as_ptr(), 0) },
        UCS_OK
    );
    // The ep can be destroyed right away.
    pair.close();
}
