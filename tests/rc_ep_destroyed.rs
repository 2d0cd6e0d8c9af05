//! Operations on a destroyed rc_mlx5 ep (issue 4, "Bad input"): every op
//! kind returns `UCS_ERR_INVALID_PARAM` (`core::destroyed_ep::DESTROYED_EP_STATUS`),
//! runs no user callback, posts nothing (no send credit or bounce buffer
//! taken, nothing at the peer), and nothing crashes — whether called through
//! our exported functions, through `ep->iface->ops` as UCX's inline
//! functions do, or through the v2 entry points. A destroyed ep stays a
//! tombstone for the next `EP_QUARANTINE` destroys of its iface; memory
//! stays bounded under create/destroy churn; iface close frees it all.
//! Destroying an ep completes its outstanding ops with `UCS_ERR_CANCELED`
//! inside `uct_ep_destroy` (as UCX's rc_mlx5), unless they are held for a
//! purge.

mod rc_common;

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;
use uct::api::v2::*;
use uct::core::tombstone::{is_dead_iface, EP_QUARANTINE};

/// User callbacks that must never run on a destroyed ep.
static CALLBACKS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn pack(_dest: *mut c_void, _arg: *mut c_void) -> usize {
    CALLBACKS.fetch_add(1, Ordering::SeqCst);
    8
}

unsafe extern "C" fn unpack(_arg: *mut c_void, _data: *const c_void, _length: usize) {
    CALLBACKS.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn pending_purged(_req: *mut uct_pending_req_t, _arg: *mut c_void) {
    CALLBACKS.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn pending_run(_req: *mut uct_pending_req_t) -> ucs_status_t {
    CALLBACKS.fetch_add(1, Ordering::SeqCst);
    UCS_OK
}

unsafe extern "C" fn outstanding_purged(_op: *const uct_ep_op_info_t, _arg: *mut c_void) {
    CALLBACKS.fetch_add(1, Ordering::SeqCst);
}

const INVALID: ucs_status_t = UCS_ERR_INVALID_PARAM;
const INVALID_LEN: isize = UCS_ERR_INVALID_PARAM as isize;

/// The iface pointer in the first word of `ep` (what UCX's inline
/// functions read).
fn first_word(ep: uct_ep_h) -> uct_iface_h {
    // SAFETY: a live ep or a tombstone of an open iface: both keep their
    // first word readable.
    unsafe { (*ep.cast::<uct_ep>()).iface }
}

/// Calls every ep operation of the exported API on `ep` (a destroyed ep)
/// with arguments that would be valid for a live one; asserts each result.
fn call_every_op(ep: uct_ep_h, target: u64, rkey: uct_rkey_t, memh: uct_mem_h) {
    let mut local = [0u8; 64];
    let buffer = local.as_mut_ptr() as *mut c_void;
    let iov = uct_iov_t {
        buffer,
        length: 16,
        memh,
        stride: 0,
        count: 1,
    };
    let mut comp = CountingCompletion::new(1);
    let mut result64 = 0u64;
    let mut result32 = 0u32;
    let mut req = uct_pending_req_t {
        func: Some(pending_run),
        r#priv: [0; UCT_PENDING_REQ_PRIV_LEN],
    };
    let mut ep_addr = [0u8; 64];
    let dev_addr = [0u8; 64];
    // SAFETY: every pointer argument is valid for the operation; the ep is a
    // destroyed ep of an open iface (what this test is about).
    unsafe {
        assert_eq!(uct_ep_put_short(ep, buffer, 8, target, rkey), INVALID);
        assert_eq!(
            uct_ep_put_bcopy(ep, Some(pack), null_mut(), target, rkey),
            INVALID_LEN
        );
        assert_eq!(
            uct_ep_put_zcopy(ep, &iov, 1, target, rkey, comp.as_ptr()),
            INVALID
        );
        assert_eq!(uct_ep_get_short(ep, buffer, 8, target, rkey), INVALID);
        assert_eq!(
            uct_ep_get_bcopy(ep, Some(unpack), null_mut(), 8, target, rkey, comp.as_ptr()),
            INVALID
        );
        assert_eq!(
            uct_ep_get_zcopy(ep, &iov, 1, target, rkey, comp.as_ptr()),
            INVALID
        );
        assert_eq!(uct_ep_am_short(ep, 3, 42, buffer, 8), INVALID);
        assert_eq!(uct_ep_am_short_iov(ep, 3, &iov, 1), INVALID);
        assert_eq!(
            uct_ep_am_bcopy(ep, 3, Some(pack), null_mut(), 0),
            INVALID_LEN
        );
        assert_eq!(
            uct_ep_am_zcopy(ep, 3, buffer, 8, &iov, 1, 0, comp.as_ptr()),
            INVALID
        );
        for op in [
            UCT_ATOMIC_OP_ADD,
            UCT_ATOMIC_OP_AND,
            UCT_ATOMIC_OP_OR,
            UCT_ATOMIC_OP_XOR,
        ] {
            assert_eq!(uct_ep_atomic32_post(ep, op, 1, target, rkey), INVALID);
            assert_eq!(uct_ep_atomic64_post(ep, op, 1, target, rkey), INVALID);
        }
        for op in [
            UCT_ATOMIC_OP_ADD,
            UCT_ATOMIC_OP_AND,
            UCT_ATOMIC_OP_OR,
            UCT_ATOMIC_OP_XOR,
            UCT_ATOMIC_OP_SWAP,
        ] {
            assert_eq!(
                uct_ep_atomic32_fetch(ep, op, 1, &mut result32, target, rkey, comp.as_ptr()),
                INVALID
            );
            assert_eq!(
                uct_ep_atomic64_fetch(ep, op, 1, &mut result64, target, rkey, comp.as_ptr()),
                INVALID
            );
        }
        assert_eq!(
            uct_ep_atomic_cswap32(ep, 0, 1, target, rkey, &mut result32, comp.as_ptr()),
            INVALID
        );
        assert_eq!(
            uct_ep_atomic_cswap64(ep, 0, 1, target, rkey, &mut result64, comp.as_ptr()),
            INVALID
        );
        assert_eq!(uct_ep_pending_add(ep, &mut req, 0), INVALID);
        uct_ep_pending_purge(ep, Some(pending_purged), null_mut());
        assert_eq!(uct_ep_flush(ep, 0, comp.as_ptr()), INVALID);
        assert_eq!(
            uct_ep_flush(ep, UCT_FLUSH_FLAG_CANCEL, comp.as_ptr()),
            INVALID
        );
        assert_eq!(uct_ep_fence(ep, 0), INVALID);
        assert_eq!(uct_ep_check(ep, 0, comp.as_ptr()), INVALID);
        assert_eq!(uct_ep_get_address(ep, ep_addr.as_mut_ptr().cast()), INVALID);
        assert_eq!(
            uct_ep_connect_to_ep(ep, dev_addr.as_ptr().cast(), ep_addr.as_ptr().cast()),
            INVALID
        );
        assert_eq!(uct_ep_tag_eager_short(ep, 1, buffer, 8), INVALID);
        assert_eq!(
            uct_ep_tag_eager_bcopy(ep, 1, 0, Some(pack), null_mut(), 0),
            INVALID_LEN
        );
        assert_eq!(
            uct_ep_tag_rndv_zcopy(ep, 1, buffer, 8, &iov, 1, 0, comp.as_ptr()) as isize,
            INVALID_LEN
        );

        // The v2 entry points, failover's included.
        let mut attr: uct_ep_attr_t = std::mem::zeroed();
        assert_eq!(uct_ep_query(ep, &mut attr), INVALID);
        let invalidate = uct_ep_invalidate_params_t {
            field_mask: UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS,
            flags: UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS,
        };
        assert_eq!(uct_ep_invalidate(ep, &invalidate), INVALID);
        assert_eq!(uct_ep_failover_enable(ep), INVALID);
        let token = [0u8; 64];
        let purge = uct_ep_outstanding_purge_params_t {
            field_mask: UCT_EP_OUTSTANDING_FIELD_RX_TOKEN | UCT_EP_OUTSTANDING_FIELD_CB,
            rx_token: token.as_ptr().cast(),
            cb: Some(outstanding_purged),
            arg: null_mut(),
        };
        assert_eq!(uct_ep_outstanding_purge(ep, &purge), INVALID);
        let connect = uct_ep_connect_to_ep_params_t {
            field_mask: 0,
            device_addr_length: 0,
            ep_addr_length: 0,
        };
        assert_eq!(
            uct_ep_connect_to_ep_v2(
                ep,
                dev_addr.as_ptr().cast(),
                ep_addr.as_ptr().cast(),
                &connect
            ),
            INVALID
        );
        let connected: uct_ep_is_connected_params_t = std::mem::zeroed();
        assert_eq!(uct_ep_is_connected(ep, &connected), 0);

        // A second destroy: refused, no crash, the tombstone stays.
        uct_ep_destroy(ep);
    }
    assert_eq!(comp.calls(), 0, "no completion on a destroyed ep");
    assert_eq!(comp.count(), 1, "the completion was not touched");
}

/// Send credits and bounce buffers of `iface` are all back: nothing is
/// outstanding.
fn assert_nothing_outstanding(iface: uct_iface_h) {
    let (credits, max) = send_credits(iface);
    assert_eq!(credits, max, "a WQE is outstanding");
    for class in [BufferClass::Segment, BufferClass::Small] {
        assert_eq!(send_buffers_in_use(iface, class), 0, "{class:?} in use");
    }
}

#[test]
fn every_op_on_a_destroyed_ep_fails_and_posts_nothing() {
    let pair = Pair::new();
    let at_b = pair.b.collect_am(3);
    let mut target = Target::new(8);
    let target_base = target.base();
    let (memh_b, rkey) = pair.b.register(target_base, target.len());
    let mut source = vec![0x5au8; 64];
    let (memh_a, _) = pair.a.register(source.as_mut_ptr(), source.len());
    for word in 0..8 {
        target.write64(word * 8, 0x1111_1111_1111_1111 * word as u64);
    }
    // The ep works before it is destroyed.
    let status = pair.post_retrying(|| am_short(pair.ep_a, 3, 7, &source[..8]));
    assert_eq!(status, UCS_OK);
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert!(pair.wait(|| at_b.lock().unwrap().len() == 1));
    let live_iface = first_word(pair.ep_a);
    assert_eq!(live_iface, pair.a.iface);

    ep_destroy(pair.ep_a);
    let dead_iface = first_word(pair.ep_a);
    assert!(
        is_dead_iface(dead_iface),
        "the tombstone leads to the dead iface"
    );
    assert_ne!(dead_iface, live_iface);

    call_every_op(pair.ep_a, target.addr(0), rkey, memh_a);
    for _ in 0..1000 {
        pair.progress();
    }
    assert_eq!(CALLBACKS.load(Ordering::SeqCst), 0, "a user callback ran");
    assert_nothing_outstanding(pair.a.iface);
    assert_eq!(at_b.lock().unwrap().len(), 1, "the peer got a message");
    for word in 0..8 {
        assert_eq!(
            target.read64(word * 8),
            0x1111_1111_1111_1111 * word as u64,
            "target word {word} changed"
        );
    }
    // The iface is unharmed: a new ep pair on it works.
    let (ep_a2, ep_b2) = connect_eps(&pair.a, &pair.b);
    let status = pair.post_retrying(|| am_short(ep_a2, 3, 8, &source[..8]));
    assert_eq!(status, UCS_OK);
    assert_eq!(pair.flush(ep_a2), UCS_OK);
    assert!(pair.wait(|| at_b.lock().unwrap().len() == 2));
    mem_dereg(pair.a.md, memh_a);
    mem_dereg(pair.b.md, memh_b);
    ep_destroy(ep_a2);
    ep_destroy(ep_b2);
    ep_destroy(pair.ep_b);
    pair.a.close();
    pair.b.close();
}

/// What a binary compiled against UCX's `uct.h` does: read `ep->iface`,
/// then call the slot directly, with none of our exported code in between.
#[test]
fn inline_calls_through_a_tombstone_reach_the_dead_table() {
    let pair = Pair::new();
    let at_b = pair.b.collect_am(3);
    ep_destroy(pair.ep_a);
    let payload = [1u8; 8];
    let mut comp = CountingCompletion::new(1);
    // SAFETY: the first word of a tombstone is the dead iface, whose table
    // is complete; arguments as valid as for a live ep.
    unsafe {
        let ops = &(*(*pair.ep_a.cast::<uct_ep>()).iface.cast::<uct_iface>()).ops;
        let am_short = ops.ep_am_short.expect("slot filled");
        assert_eq!(
            am_short(pair.ep_a, 3, 9, payload.as_ptr().cast(), 8),
            INVALID
        );
        let put_short = ops.ep_put_short.expect("slot filled");
        assert_eq!(
            put_short(pair.ep_a, payload.as_ptr().cast(), 8, 0x1000, 0),
            INVALID
        );
        let am_bcopy = ops.ep_am_bcopy.expect("slot filled");
        assert_eq!(
            am_bcopy(pair.ep_a, 3, Some(pack), null_mut(), 0),
            INVALID_LEN
        );
        let flush = ops.ep_flush.expect("slot filled");
        assert_eq!(flush(pair.ep_a, 0, comp.as_ptr()), INVALID);
        let purge = ops.ep_pending_purge.expect("slot filled");
        purge(pair.ep_a, Some(pending_purged), null_mut());
        // A caller looping on a destroyed ep: one line a second, no crash.
        for _ in 0..10_000 {
            assert_eq!(
                am_short(pair.ep_a, 3, 9, payload.as_ptr().cast(), 8),
                INVALID
            );
        }
        // Iface slots of the dead iface, should a caller use ep->iface.
        let iface = (*pair.ep_a.cast::<uct_ep>()).iface;
        let mut attr: uct_iface_attr_t = std::mem::zeroed();
        assert_eq!(uct::api::iface::uct_iface_query(iface, &mut attr), INVALID);
        assert_eq!(uct::api::iface::uct_iface_progress(iface), 0);
        let mut params: uct_ep_params_t = std::mem::zeroed();
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
        params.iface = iface;
        let mut ep = null_mut();
        assert_eq!(uct_ep_create(&params, &mut ep), INVALID);
        assert!(ep.is_null());
        assert_eq!(
            uct::api::iface::uct_iface_set_am_handler(iface, 3, None, null_mut(), 0),
            INVALID
        );
    }
    for _ in 0..200 {
        pair.progress();
    }
    assert_eq!(CALLBACKS.load(Ordering::SeqCst), 0, "a user callback ran");
    assert_eq!(comp.calls(), 0);
    assert!(at_b.lock().unwrap().is_empty(), "the peer got a message");
    assert_nothing_outstanding(pair.a.iface);
    ep_destroy(pair.ep_b);
    pair.a.close();
    pair.b.close();
}

/// Bytes of every ep's memory the iface holds: its live eps plus its
/// tombstones.
fn ep_slots(iface: uct_iface_h) -> (usize, usize) {
    // SAFETY: an open rc_mlx5 iface of this library is an RcIface; only
    // this thread uses it while reading.
    let rc = unsafe { &*(iface as *const uct::rc::iface::RcIface) };
    let stats = rc.stats();
    (stats.eps, stats.eps_housed)
}

#[test]
fn create_destroy_churn_stays_bounded_and_recent_tombstones_stay_dead() {
    const CYCLES: usize = 10_000;
    setup();
    let a = Side::open(c"mlx5_0", c"mlx5_0:1", None);
    let mut addresses = std::collections::HashSet::new();
    let mut destroyed = std::collections::VecDeque::new();
    for _ in 0..CYCLES {
        let ep = a.create_ep();
        addresses.insert(ep as usize);
        ep_destroy(ep);
        destroyed.push_back(ep);
        if destroyed.len() > EP_QUARANTINE {
            destroyed.pop_front();
        }
    }
    let (live, tombstones) = ep_slots(a.iface);
    assert_eq!(live, 0);
    // The quarantine plus the one the next create will take.
    assert_eq!(
        tombstones,
        EP_QUARANTINE + 1,
        "the yard outgrew its quarantine"
    );
    assert_eq!(
        addresses.len(),
        EP_QUARANTINE + 1,
        "memory reused after the quarantine: only the tombstones' memory"
    );
    // The last EP_QUARANTINE handles are all still dead.
    let payload = [0u8; 8];
    for &ep in &destroyed {
        assert!(is_dead_iface(first_word(ep)));
        assert_eq!(am_short(ep, 1, 0, &payload[..8]), INVALID);
    }
    // Eps live at the same time each get their own memory.
    let many: Vec<_> = (0..EP_QUARANTINE + 10).map(|_| a.create_ep()).collect();
    let distinct: std::collections::HashSet<_> = many.iter().copied().collect();
    assert_eq!(distinct.len(), many.len());
    // Only the tombstone beyond the quarantine was reused; the quarantined
    // handles stay dead however many eps are created.
    assert_eq!(ep_slots(a.iface), (many.len(), EP_QUARANTINE));
    assert!(destroyed.iter().all(|ep| !distinct.contains(ep)));
    assert!(destroyed.iter().all(|&ep| is_dead_iface(first_word(ep))));
    for &ep in &many {
        ep_destroy(ep);
    }
    assert_eq!(ep_slots(a.iface), (0, EP_QUARANTINE + many.len()));
    a.close();
}

/// An ep destroyed from its own error handler (a transport error) leaves a
/// tombstone too; the progress that reported the error survives it.
#[test]
fn ep_destroyed_by_its_error_handler_is_a_tombstone() {
    unsafe extern "C" fn destroy_on_error(
        arg: *mut c_void,
        ep: uct_ep_h,
        status: ucs_status_t,
    ) -> ucs_status_t {
        // SAFETY: arg is the test's counter; ep is live during the call.
        unsafe {
            (*(arg as *const AtomicUsize)).fetch_add(1, Ordering::SeqCst);
            uct_ep_destroy(ep);
        }
        let _ = status;
        UCS_OK
    }
    static ERRORS: AtomicUsize = AtomicUsize::new(0);
    let mut params = iface_params();
    params.field_mask |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER
        | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG
        | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.err_handler = Some(destroy_on_error);
    params.err_handler_arg = &ERRORS as *const AtomicUsize as *mut c_void;
    let pair = Pair::with_config(
        Some(params),
        None,
        &[(c"RC_TIMEOUT", c"1ms"), (c"RC_RETRY_COUNT", c"1")],
    );
    // The peer's ep goes away: the next SEND is never acknowledged.
    ep_destroy(pair.ep_b);
    let payload = [0u8; 8];
    let status = pair.post_retrying(|| am_short(pair.ep_a, 1, 0, &payload[..8]));
    assert_eq!(status, UCS_OK);
    assert!(
        pair.wait(|| ERRORS.load(Ordering::SeqCst) == 1),
        "the error handler was not called"
    );
    assert!(is_dead_iface(first_word(pair.ep_a)));
    let status = am_short(pair.ep_a, 1, 0, &payload[..8]);
    assert_eq!(status, INVALID);
    assert_nothing_outstanding(pair.a.iface);
    pair.a.close();
    pair.b.close();
}

/// Records the ep a completion callback sees as still current (UCX's
/// `test_uct_ep.destroy_entity_after_send` checks the completion runs
/// inside `uct_ep_destroy`, before the caller forgets the ep).
static CURRENT_EP: AtomicUsize = AtomicUsize::new(0);
static SEEN_DURING_DESTROY: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn note_destroying(comp: *mut uct_completion_t) {
    if CURRENT_EP.load(Ordering::SeqCst) != 0 {
        SEEN_DURING_DESTROY.fetch_add(1, Ordering::SeqCst);
    }
    // SAFETY: comp is the test's live completion.
    assert_eq!(unsafe { (*comp).status }, UCS_ERR_CANCELED);
}

#[test]
fn destroying_an_ep_completes_its_outstanding_ops_as_canceled() {
    let pair = Pair::new();
    let mut source = vec![7u8; 256];
    let (memh, _) = pair.a.register(source.as_mut_ptr(), source.len());
    let iov = [uct_iov_t {
        buffer: source.as_mut_ptr().cast(),
        length: source.len(),
        memh,
        stride: 0,
        count: 1,
    }];
    let mut comp = uct_completion_t {
        func: Some(note_destroying),
        count: 0,
        status: UCS_OK,
    };
    // a is never progressed: every op stays outstanding.
    for _ in 0..5 {
        let status = am_zcopy(pair.ep_a, 1, &[], &iov, 0, &mut comp);
        assert_eq!(status, UCS_INPROGRESS);
        comp.count += 1;
    }
    assert_eq!(
        ep_flush(pair.ep_a, UCT_FLUSH_FLAG_LOCAL, &mut comp),
        UCS_INPROGRESS
    );
    comp.count += 1;
    CURRENT_EP.store(pair.ep_a as usize, Ordering::SeqCst);
    ep_destroy(pair.ep_a);
    CURRENT_EP.store(0, Ordering::SeqCst);
    assert_eq!(
        read_volatile(&comp.count),
        0,
        "every op completed in destroy"
    );
    assert_eq!(read_volatile(&comp.status), UCS_ERR_CANCELED);
    assert_eq!(SEEN_DURING_DESTROY.load(Ordering::SeqCst), 1);
    assert_nothing_outstanding(pair.a.iface);
    // Nothing more comes later.
    for _ in 0..100 {
        pair.progress();
    }
    assert_eq!(SEEN_DURING_DESTROY.load(Ordering::SeqCst), 1);
    assert_eq!(mem_dereg(pair.a.md, memh), UCS_OK);
    ep_destroy(pair.ep_b);
    pair.a.close();
    pair.b.close();
}

/// Ops held for purge (design §5): destroying the ep fires nothing.
#[test]
fn destroying_an_ep_whose_ops_are_held_fires_nothing() {
    let pair = Pair::new();
    let mut comp = CountingCompletion::new(0);
    let mut source = vec![3u8; 64];
    let (memh, _) = pair.a.register(source.as_mut_ptr(), source.len());
    let iov = [uct_iov_t {
        buffer: source.as_mut_ptr().cast(),
        length: source.len(),
        memh,
        stride: 0,
        count: 1,
    }];
    for _ in 0..4 {
        let status = am_zcopy(pair.ep_a, 1, &[], &iov, 0, comp.as_ptr());
        assert_eq!(status, UCS_INPROGRESS);
        comp.comp.count += 1;
    }
    let params = uct_ep_invalidate_params_t {
        field_mask: UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS,
        flags: UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS,
    };
    assert_eq!(ep_invalidate(pair.ep_a, Some(&params)), UCS_OK);
    ep_destroy(pair.ep_a);
    for _ in 0..100 {
        pair.progress();
    }
    assert_eq!(comp.calls(), 0, "no completion for held ops");
    assert_eq!(comp.count(), 4);
    assert_nothing_outstanding(pair.a.iface);
    assert_eq!(mem_dereg(pair.a.md, memh), UCS_OK);
    ep_destroy(pair.ep_b);
    pair.a.close();
    pair.b.close();
}
