//! rc_mlx5 failover through the C API: capability and token lengths, every
//! parameter check of the token queries and of purge (issue 5 point 5),
//! invalidate with and without NO_COMPLETIONS, and op_info of purged AMs.

mod failover_rc_common;
mod rc_common;

use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use failover_rc_common::*;
use rc_common::uct_safe;
use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
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

unsafe extern "C" fn count_op(_: *const uct_ep_op_info_t, arg: *mut c_void) {
    // SAFETY: the test passes a leaked AtomicUsize.
    unsafe { &*(arg as *const AtomicUsize) }.fetch_add(1, Ordering::Relaxed);
}

/// Purges `ep` with `rx`, counting the callbacks: (status, calls).
fn purge_counting(ep: uct_ep_h, rx: &[u8]) -> (ucs_status_t, usize) {
    let calls = AtomicUsize::new(0);
    let status = purge(
        ep,
        rx,
        count_op,
        &calls as *const AtomicUsize as *mut c_void,
    );
    (status, calls.load(Ordering::Relaxed))
}

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

    // TX token without RX token; buffers of the advertised lengths.
    let mut attr: uct_iface_attr_v2_t = zeroed();
    attr.field_mask = UCT_IFACE_ATTR_FIELD_TX_TOKEN;
    attr.tx_token = tx.as_ptr().cast();
    assert_eq!(
        iface_query_v2(pair.b.iface, &mut attr),
        UCS_ERR_INVALID_PARAM
    );
    // RX token without TX token.
    attr.field_mask = UCT_IFACE_ATTR_FIELD_RX_TOKEN;
    attr.rx_token = rx.as_mut_ptr().cast();
    assert_eq!(
        iface_query_v2(pair.b.iface, &mut attr),
        UCS_ERR_INVALID_PARAM
    );
    // NULL TX token buffer.
    attr.field_mask = UCT_IFACE_ATTR_FIELD_TX_TOKEN | UCT_IFACE_ATTR_FIELD_RX_TOKEN;
    attr.tx_token = null();
    assert_eq!(
        iface_query_v2(pair.b.iface, &mut attr),
        UCS_ERR_INVALID_PARAM
    );
    // NULL RX token buffer.
    attr.tx_token = tx.as_ptr().cast();
    attr.rx_token = null_mut();
    assert_eq!(
        iface_query_v2(pair.b.iface, &mut attr),
        UCS_ERR_INVALID_PARAM
    );
    // uct_ep_query with a NULL TX token buffer.
    // SAFETY: all-zero is a valid attr (its NULL token is the bad input).
    unsafe {
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
    ep_destroy(pair.ep_b);
    assert_eq!(
        rx_token(pair.b.iface, &tx, rx_len),
        Err(UCS_ERR_INVALID_PARAM)
    );
    ep_destroy(pair.ep_a);
    pair.a.close();
    pair.b.close();
}

#[test]
fn purge_refuses_bad_parameters_and_unheld_ops_in_flight() {
    let pair = Pair::new();
    let rx = exchange_tokens(pair.ep_a, pair.a.iface, pair.b.iface);
    // A working ep with nothing outstanding: nothing to do, UCS_OK and no
    // callback; the same once failover is enabled but nothing failed.
    assert_eq!(purge_counting(pair.ep_a, &rx), (UCS_OK, 0));
    assert_eq!(failover_enable(pair.ep_a), UCS_OK);
    assert_eq!(purge_counting(pair.ep_a, &rx), (UCS_OK, 0));

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
    // Again: nothing left, UCS_OK, no callback (upstream's rule).
    assert_eq!(purge_counting(pair.ep_a, &rx), (UCS_OK, 0));
    pair.close();
}

#[test]
fn purge_refuses_an_op_in_flight_that_nothing_holds() {
    let (_traffic, pair) = traffic_pair();
    // Nothing has progressed either iface, so the AM is still outstanding
    // when the purge asks: it completes on its own, so purge refuses it.
    assert_eq!(am_short(pair.ep_a, 3, 7, &[]), UCS_OK);
    let rx = exchange_tokens(pair.ep_a, pair.a.iface, pair.b.iface);
    assert_eq!(purge_counting(pair.ep_a, &rx), (UCS_ERR_INVALID_PARAM, 0));
    pair.close();
}

/// Tests that send traffic (and drop packets on mlx5_0) run one at a time.
static TRAFFIC: Mutex<()> = Mutex::new(());

/// The traffic lock (held until the guard drops) and a new pair.
fn traffic_pair() -> (MutexGuard<'static, ()>, Pair) {
    let traffic = TRAFFIC.lock().unwrap_or_else(|p| p.into_inner());
    (traffic, Pair::new())
}

#[test]
fn invalidate_without_no_completions_leaves_nothing_to_purge() {
    let (_traffic, pair) = traffic_pair();
    let rx = exchange_tokens(pair.ep_a, pair.a.iface, pair.b.iface);
    let mut comp = CountingCompletion::new(1);
    // The completion outlives the op.
    assert_eq!(am_short(pair.ep_a, 3, 7, &[]), UCS_OK);
    assert_eq!(ep_flush(pair.ep_a, 0, comp.as_ptr()), UCS_INPROGRESS);
    assert_eq!(invalidate(pair.ep_a, 0), UCS_OK);
    assert!(pair.wait(|| comp.calls() == 1), "flush never completed");
    // Either the flush completed before the QP went down, or it was
    // canceled: never held.
    assert!(comp.status() == UCS_OK || comp.status() == UCS_ERR_CANCELED);
    // The op completed on its own (never held): nothing is left, so purge
    // has nothing to do and reports nothing.
    assert_eq!(purge_counting(pair.ep_a, &rx), (UCS_OK, 0));
    pair.close();
}

#[test]
fn invalidated_ep_reports_undelivered_ams_in_posting_order() {
    let (_traffic, pair) = traffic_pair();
    let inbox = inbox();
    pair.b.collect_am_into(5, inbox);
    let count = 6u64;
    // Nothing a leaves arrives (retransmissions included) until the ep is
    // invalidated: every AM is undelivered.
    assert_eq!(drop_next(c"mlx5_0", 1000), UCS_OK);
    for seq in 0..count {
        let status = am_short(pair.ep_a, 5, seq, &[seq as u8; 3]);
        assert_eq!(status, UCS_OK);
    }
    assert_eq!(
        invalidate(pair.ep_a, UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS),
        UCS_OK
    );
    // Posting on an invalidated ep fails.
    assert_ne!(am_short(pair.ep_a, 5, 99, &[]), UCS_OK);
    // Let the receiver take whatever arrived before the QP went down.
    for _ in 0..200 {
        pair.progress();
    }
    let rx = exchange_tokens(pair.ep_a, pair.a.iface, pair.b.iface);
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
    let received = sequence(inbox);
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
    assert_eq!(drop_next(c"mlx5_0", 0), UCS_OK);
    // The ep can be destroyed right away.
    pair.close();
}

/// An op_info as the callback saw it, with copies of what its pointers
/// named (valid only during the callback).
struct Reported {
    info: uct_ep_op_info_t,
    data: Vec<u8>,
    header: Vec<u8>,
    iov: Vec<uct_iov_t>,
}

unsafe extern "C" fn copy_op(info: *const uct_ep_op_info_t, arg: *mut c_void) {
    // SAFETY: a valid op_info during the call; arg is a Vec<Reported>; the
    // union members read are the ones the field masks name.
    unsafe {
        let info = *info;
        let out = &mut *(arg as *mut Vec<Reported>);
        let bytes = |ptr: *const c_void, len: usize| {
            std::slice::from_raw_parts(ptr as *const u8, len).to_vec()
        };
        let mut reported = Reported {
            info,
            data: Vec::new(),
            header: Vec::new(),
            iov: Vec::new(),
        };
        if info.field_mask & UCT_EP_OP_INFO_FIELD_AM != 0 {
            let am = info.detail.am;
            if am.field_mask & UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_DATA != 0 {
                reported.data = bytes(am.payload.data.buffer, am.payload.data.length);
            }
            if am.field_mask & UCT_EP_OP_INFO_AM_FIELD_HEADER_ZCOPY != 0 {
                reported.header = bytes(am.header.zcopy.buffer, am.header.zcopy.length);
            }
            if am.field_mask & UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_ZCOPY != 0 {
                let z = am.payload.zcopy;
                reported.iov = std::slice::from_raw_parts(z.iov, z.iovcnt).to_vec();
            }
        }
        if info.field_mask & UCT_EP_OP_INFO_FIELD_RMA != 0 {
            let rma = info.detail.rma;
            if rma.field_mask & UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_DATA != 0 {
                reported.data = bytes(rma.payload.data.buffer, rma.payload.data.length);
            }
            if rma.field_mask & UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_ZCOPY != 0 {
                let z = rma.payload.zcopy;
                reported.iov = std::slice::from_raw_parts(z.iov, z.iovcnt).to_vec();
            }
        }
        out.push(reported);
    }
}

unsafe extern "C" fn unpack_none(_: *mut c_void, _: *const c_void, _: usize) {}

#[test]
fn op_info_of_every_op_kind_is_what_was_posted() {
    let (_traffic, pair) = traffic_pair();
    let mut remote = vec![0u64; 64];
    let (remote_memh, rkey) = pair.b.register(remote.as_mut_ptr().cast(), 512);
    let raddr = remote.as_ptr() as u64;
    let mut local = vec![7u8; 256];
    let (local_memh, _) = pair.a.register(local.as_mut_ptr(), local.len());
    let iov = |offset: usize, length: usize| {
        iov_entry(local[offset..].as_ptr() as *mut u8, length, local_memh)
    };
    let am_iov = [iov(0, 16)];
    let put_iov = [iov(16, 24), iov(64, 8)];
    let get_iov = [iov(128, 32)];
    let short_iov_parts: [&[u8]; 2] = [b"0123456789", b"ab"];
    let short_iov: Vec<uct_iov_t> = short_iov_parts
        .iter()
        .map(|part| uct_iov_t {
            buffer: part.as_ptr() as *mut c_void,
            length: part.len(),
            memh: null_mut(),
            stride: 0,
            count: 1,
        })
        .collect();
    let header = *b"zhdr";
    let mut comps: Vec<Box<CountingCompletion>> =
        (0..8).map(|_| CountingCompletion::new(1)).collect();
    let comp_ptrs: Vec<*mut uct_completion_t> = comps.iter_mut().map(|c| c.as_ptr()).collect();
    let mut results = [0u64; 2];
    let (result0, result1) = (&mut results[0] as *mut u64, &mut results[1] as *mut u64);
    // Nothing leaves a until the ep is invalidated: every op is reported.
    assert_eq!(drop_next(c"mlx5_0", 1000), UCS_OK);
    let ep = pair.ep_a;
    // Every buffer lives until the purge is done.
    assert_eq!(am_short(ep, 2, 0x1122_3344_5566_7788, b"short"), UCS_OK);
    assert_eq!(am_short_iov(ep, 3, &short_iov), UCS_OK);
    assert_eq!(am_bcopy(ep, 4, b"bcopy", 0), 5);
    assert_eq!(
        am_zcopy(ep, 5, &header, &am_iov, 0, comp_ptrs[0]),
        UCS_INPROGRESS
    );
    assert_eq!(put_short(ep, b"putshort", raddr, rkey), UCS_OK);
    assert_eq!(put_bcopy(ep, b"bcopy", raddr + 8, rkey), 5);
    assert_eq!(
        put_zcopy(ep, &put_iov, raddr + 64, rkey, comp_ptrs[1]),
        UCS_INPROGRESS
    );
    assert_eq!(
        get_bcopy(
            ep,
            Some(unpack_none),
            0x55 as *mut c_void,
            24,
            raddr + 128,
            rkey,
            comp_ptrs[2]
        ),
        UCS_INPROGRESS
    );
    assert_eq!(
        get_zcopy(ep, &get_iov, raddr + 192, rkey, comp_ptrs[3]),
        UCS_INPROGRESS
    );
    assert_eq!(
        atomic32_post(ep, UCT_ATOMIC_OP_XOR, 0xf0f0, raddr + 256, rkey),
        UCS_OK
    );
    assert_eq!(
        atomic64_fetch(
            ep,
            UCT_ATOMIC_OP_ADD,
            9,
            &mut results[0],
            raddr + 264,
            rkey,
            comp_ptrs[4]
        ),
        UCS_INPROGRESS
    );
    assert_eq!(
        cswap64(ep, 1, 2, raddr + 272, rkey, &mut results[1], comp_ptrs[5]),
        UCS_INPROGRESS
    );
    assert_eq!(ep_flush(ep, 0, comp_ptrs[6]), UCS_INPROGRESS);
    assert_eq!(
        invalidate(ep, UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS),
        UCS_OK
    );
    let rx = exchange_tokens(ep, pair.a.iface, pair.b.iface);
    let mut seen: Vec<Reported> = Vec::new();
    assert_eq!(
        purge(
            ep,
            &rx,
            copy_op,
            &mut seen as *mut Vec<Reported> as *mut c_void
        ),
        UCS_OK
    );
    assert_eq!(drop_next(c"mlx5_0", 0), UCS_OK);
    let ops: Vec<uct_ep_operation_t> = seen.iter().map(|r| r.info.operation).collect();
    assert_eq!(
        ops,
        vec![
            UCT_EP_OP_AM_SHORT,
            UCT_EP_OP_AM_SHORT,
            UCT_EP_OP_AM_BCOPY,
            UCT_EP_OP_AM_ZCOPY,
            UCT_EP_OP_PUT_SHORT,
            UCT_EP_OP_PUT_BCOPY,
            UCT_EP_OP_PUT_ZCOPY,
            UCT_EP_OP_GET_BCOPY,
            UCT_EP_OP_GET_ZCOPY,
            UCT_EP_OP_ATOMIC_POST,
            UCT_EP_OP_ATOMIC_FETCH,
            UCT_EP_OP_ATOMIC_FETCH,
            UCT_EP_OP_FLUSH,
        ]
    );
    // SAFETY: each union member read is the one the operation names.
    unsafe {
        let am = seen[0].info.detail.am;
        assert_eq!((am.am_id, am.header.value), (2, 0x1122_3344_5566_7788));
        assert_eq!(seen[0].data, b"short");
        let am = seen[1].info.detail.am;
        assert_eq!(am.am_id, 3);
        assert_eq!(am.header.value.to_ne_bytes(), *b"01234567");
        assert_eq!(seen[1].data, b"89ab");
        let am = seen[2].info.detail.am;
        assert_eq!((am.am_id, am.flags), (4, 0));
        assert_eq!(seen[2].data, b"bcopy");
        let am = seen[3].info.detail.am;
        assert_eq!(am.am_id, 5);
        assert_eq!(seen[3].header, header);
        assert_eq!(seen[3].iov.len(), 1);
        assert_eq!(seen[3].iov[0].buffer, am_iov[0].buffer);
        assert_eq!(seen[3].info.comp, comp_ptrs[0]);
        let rma = seen[4].info.detail.rma;
        assert_eq!((rma.remote_addr, rma.rkey), (raddr, rkey));
        assert_eq!(seen[4].data, b"putshort");
        let rma = seen[5].info.detail.rma;
        assert_eq!((rma.remote_addr, rma.rkey), (raddr + 8, rkey));
        assert_eq!(seen[5].data, b"bcopy");
        let rma = seen[6].info.detail.rma;
        assert_eq!((rma.remote_addr, rma.rkey), (raddr + 64, rkey));
        assert_eq!(seen[6].iov.len(), 2);
        assert_eq!(seen[6].iov[1].buffer, put_iov[1].buffer);
        assert_eq!(seen[6].iov[1].memh, local_memh);
        assert_eq!(seen[6].info.comp, comp_ptrs[1]);
        let rma = seen[7].info.detail.rma;
        assert_ne!(rma.field_mask & UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_UNPACK, 0);
        assert_eq!((rma.remote_addr, rma.rkey), (raddr + 128, rkey));
        assert_eq!(rma.payload.unpack.arg, 0x55 as *mut c_void);
        assert_eq!(rma.payload.unpack.length, 24);
        assert_eq!(seen[7].info.comp, comp_ptrs[2]);
        let rma = seen[8].info.detail.rma;
        assert_eq!((rma.remote_addr, rma.rkey), (raddr + 192, rkey));
        assert_eq!(seen[8].info.comp, comp_ptrs[3]);
        let atomic = seen[9].info.detail.atomic;
        assert_eq!(
            (
                atomic.op,
                atomic.value,
                atomic.size,
                atomic.remote_addr,
                atomic.rkey
            ),
            (UCT_ATOMIC_OP_XOR, 0xf0f0, 4, raddr + 256, rkey)
        );
        let atomic = seen[10].info.detail.atomic;
        assert_eq!(
            (atomic.op, atomic.value, atomic.size, atomic.result),
            (UCT_ATOMIC_OP_ADD, 9, 8, result0.cast())
        );
        assert_eq!(seen[10].info.comp, comp_ptrs[4]);
        let atomic = seen[11].info.detail.atomic;
        assert_ne!(atomic.field_mask & UCT_EP_OP_INFO_ATOMIC_FIELD_COMPARE, 0);
        assert_eq!(
            (atomic.op, atomic.compare, atomic.value, atomic.result),
            (UCT_ATOMIC_OP_CSWAP, 1, 2, result1.cast())
        );
        assert_eq!(seen[12].info.detail.flush.flags, 0);
        assert_eq!(seen[12].info.comp, comp_ptrs[6]);
    }
    // Reported ops are the caller's now: no completion was called.
    assert!(comps.iter().all(|c| c.calls() == 0));
    mem_dereg(pair.b.md, remote_memh);
    mem_dereg(pair.a.md, local_memh);
    pair.close();
}

/// Replays AM shorts on the ep `arg` points at (same iface as the purged one).
unsafe extern "C" fn replay_am_short(info: *const uct_ep_op_info_t, arg: *mut c_void) {
    // SAFETY: valid op_info during the call; arg is a live uct_ep_h.
    let (info, ep) = unsafe { (&*info, *(arg as *const uct_ep_h)) };
    assert_eq!(info.operation, UCT_EP_OP_AM_SHORT);
    let OpDetail::AmShort { am, header, data } = OpDetail::of(info) else {
        unreachable!("an AM_SHORT")
    };
    let status = am_short(ep, am.am_id, header, data_bytes(&data));
    assert_eq!(status, UCS_OK);
}

#[test]
fn purge_callback_replays_on_another_ep_of_the_same_iface() {
    let (_traffic, pair) = traffic_pair();
    let inbox = inbox();
    pair.b.collect_am_into(6, inbox);
    // A second connection between the same two ifaces.
    let (ep_a2, ep_b2) = connect_eps(&pair.a, &pair.b);
    let count = 20u64;
    assert_eq!(drop_next(c"mlx5_0", 1000), UCS_OK);
    for seq in 0..count {
        assert_eq!(am_short(pair.ep_a, 6, seq, &[]), UCS_OK);
    }
    assert_eq!(
        invalidate(pair.ep_a, UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS),
        UCS_OK
    );
    assert_eq!(drop_next(c"mlx5_0", 0), UCS_OK);
    let rx = exchange_tokens(pair.ep_a, pair.a.iface, pair.b.iface);
    let mut target = ep_a2;
    assert_eq!(
        purge(
            pair.ep_a,
            &rx,
            replay_am_short,
            &mut target as *mut uct_ep_h as *mut c_void
        ),
        UCS_OK
    );
    ep_destroy(pair.ep_a);
    assert_eq!(pair.flush(ep_a2), UCS_OK);
    assert!(pair.wait(|| inbox.lock().unwrap().len() >= count as usize));
    for _ in 0..100 {
        pair.progress();
    }
    let received = sequence(inbox);
    assert_eq!(
        received,
        (0..count).collect::<Vec<_>>(),
        "each once, in order"
    );
    // The eps, each once, before the ifaces.
    for ep in [ep_a2, ep_b2, pair.ep_b] {
        ep_destroy(ep);
    }
    let Pair { a, b, .. } = pair;
    a.close();
    b.close();
}

#[test]
fn a_token_of_another_connection_leaves_the_named_qp_alone() {
    let (_traffic, pair) = traffic_pair();
    let (_, tx_len, rx_len) = token_caps(pair.a.iface);
    let tx = tx_token(pair.ep_a, tx_len).unwrap();
    // Same responder QP, another requester incarnation: well formed,
    // correctly checksummed, but not this connection.
    let mut other = uct::failover::TxToken::decode(&tx).unwrap();
    other.connection.requester.generation ^= 1;
    let mut forged = vec![0u8; tx_len];
    other.encode(&mut forged).unwrap();
    assert_eq!(
        rx_token(pair.b.iface, &forged, rx_len),
        Err(UCS_ERR_INVALID_PARAM)
    );
    // The connection still works.
    let inbox = inbox();
    pair.b.collect_am_into(7, inbox);
    assert_eq!(am_short(pair.ep_a, 7, 42, &[]), UCS_OK);
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert!(pair.wait(|| inbox.lock().unwrap().len() == 1));
    // The genuine token is still accepted.
    assert!(rx_token(pair.b.iface, &tx, rx_len).is_ok());
    pair.close();
}
