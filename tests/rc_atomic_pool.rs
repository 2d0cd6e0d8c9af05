//! The result slots of rc_mlx5 atomics: a class of the send pool of its own
//! (one cache line each), so that a ring full of fetching atomics leaves
//! bcopy segments alone, every fetch gets its own value back, and flush
//! returns every slot; when the send CQ's credits run out, a fetch is
//! refused with `UCS_ERR_NO_RESOURCE` and runs from the pending queue.

mod rc_common;

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;

/// Posts fetch-adds of 1 on `ep` at `addr` (no progress, so nothing
/// completes) until the transport refuses one; returns the refusal and the
/// number posted. Op `i` fetches into `results[i]`.
fn fetch_adds_until_refused(
    ep: uct_ep_h,
    addr: u64,
    rkey: uct_rkey_t,
    results: &mut [u64],
    comp: *mut uct_completion_t,
) -> (ucs_status_t, usize) {
    for (posted, result) in results.iter_mut().enumerate() {
        let status = atomic64_fetch(ep, UCT_ATOMIC_OP_ADD, 1, result, addr, rkey, comp);
        if status != UCS_INPROGRESS {
            return (status, posted);
        }
    }
    panic!("the transport never refused");
}

/// The first `count` results, read after their ops completed.
fn read_results(results: &[u64], count: usize) -> Vec<u64> {
    results[..count]
        .iter()
        // SAFETY: every op completed; the device wrote behind Rust's back.
        .map(|result| unsafe { std::ptr::read_volatile(result) })
        .collect()
}

#[test]
fn a_ring_of_fetches_uses_small_slots_and_leaves_bcopy_its_segments() {
    let pair = Pair::new();
    let mut target = Target::new(1);
    let (memh, rkey) = pair.b.register(target.base(), target.len());
    let mut results = vec![u64::MAX; 1 << 16];
    // Every fetch counts the completion down (it is never called).
    let mut comp = CountingCompletion::new(i32::MAX);
    let (status, posted) =
        fetch_adds_until_refused(pair.ep_a, target.addr(0), rkey, &mut results, comp.as_ptr());
    assert_eq!(status, UCS_ERR_NO_RESOURCE);
    assert!(posted >= 64, "only {posted} fetches fit");
    // One small slot per outstanding fetch, no segment.
    assert_eq!(
        send_buffers_in_use(pair.a.iface, BufferClass::Small),
        posted
    );
    assert_eq!(send_buffers_in_use(pair.a.iface, BufferClass::Segment), 0);
    let (_, credits_max) = send_credits(pair.a.iface);
    assert!(send_buffers_made(pair.a.iface, BufferClass::Small) <= credits_max as usize);

    // A second ep of the same iface still sends bcopy while they are out.
    let (ep_a2, ep_b2) = connect_eps(&pair.a, &pair.b);
    let at_b = pair.b.collect_am(9);
    let payload: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    unsafe extern "C" fn pack(dest: *mut c_void, arg: *mut c_void) -> usize {
        // SAFETY: arg is the payload Vec; dest holds max_bcopy bytes.
        unsafe {
            let src = &*(arg as *const Vec<u8>);
            std::ptr::copy_nonoverlapping(src.as_ptr(), dest as *mut u8, src.len());
            src.len()
        }
    }
    // SAFETY: live ep, pack callback and its argument.
    let packed =
        unsafe { uct_ep_am_bcopy(ep_a2, 9, Some(pack), &payload as *const _ as *mut c_void, 0) };
    assert_eq!(packed, payload.len() as isize);
    assert_eq!(send_buffers_in_use(pair.a.iface, BufferClass::Segment), 1);

    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(pair.flush(ep_a2), UCS_OK);
    assert!(pair.wait(|| at_b.lock().unwrap().len() == 1));
    assert_eq!(at_b.lock().unwrap()[0], payload);
    // RC executes in order at the responder: the n-th add fetched n.
    let fetched = read_results(&results, posted);
    assert_eq!(fetched, (0..posted as u64).collect::<Vec<_>>());
    assert_eq!(target.read64(0), posted as u64);
    assert_eq!(comp.count(), i32::MAX - posted as i32);
    assert_eq!(comp.status(), UCS_OK);
    // Every slot and segment is back.
    assert_eq!(send_buffers_in_use(pair.a.iface, BufferClass::Small), 0);
    assert_eq!(send_buffers_in_use(pair.a.iface, BufferClass::Segment), 0);
    ep_destroy(ep_a2);
    ep_destroy(ep_b2);
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}

/// What the pending request posts: (ep, address, rkey, result address).
static PENDING_FETCH: Mutex<(usize, u64, uct_rkey_t, usize)> = Mutex::new((0, 0, 0, 0));
static PENDING_RUNS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn pending_fetch(_req: *mut uct_pending_req_t) -> ucs_status_t {
    PENDING_RUNS.fetch_add(1, Ordering::SeqCst);
    let (ep, addr, rkey, result) = *PENDING_FETCH.lock().unwrap();
    // SAFETY: the test's live ep, registered target and result slot (kept
    // until the op completes).
    let status = unsafe {
        uct_ep_atomic_cswap64(
            ep as uct_ep_h,
            0,
            0,
            addr,
            rkey,
            result as *mut u64,
            null_mut(),
        )
    };
    match status {
        UCS_INPROGRESS => UCS_OK,
        other => other,
    }
}

#[test]
fn without_credits_a_fetch_waits_in_the_pending_queue() {
    // 64 send CQEs, 32 credits: several eps' fetches use them up before any
    // ring is full.
    let pair = Pair::with_config(None, None, &[(c"RC_TX_CQ_LEN", c"64")]);
    let mut target = Target::new(1);
    let (memh, rkey) = pair.b.register(target.base(), target.len());
    let (_, credits_max) = send_credits(pair.a.iface);
    let mut results = vec![u64::MAX; 1 << 16];
    let mut comp = CountingCompletion::new(i32::MAX);
    let (status, posted) =
        fetch_adds_until_refused(pair.ep_a, target.addr(0), rkey, &mut results, comp.as_ptr());
    assert_eq!(status, UCS_ERR_NO_RESOURCE);
    assert!(posted <= credits_max as usize, "{posted} > {credits_max}");
    assert_eq!(
        send_buffers_in_use(pair.a.iface, BufferClass::Small),
        posted
    );
    // A refused cswap leaves its result alone and takes no slot.
    let mut refused = 0x77u64;
    let status = cswap64(
        pair.ep_a,
        0,
        1,
        target.addr(0),
        rkey,
        &mut refused,
        null_mut(),
    );
    assert_eq!(status, UCS_ERR_NO_RESOURCE);
    assert_eq!(refused, 0x77);
    assert_eq!(
        send_buffers_in_use(pair.a.iface, BufferClass::Small),
        posted
    );

    // cswap(0 -> 0) from the pending queue: fetches the counter, changes
    // nothing (the adds make it non-zero by then).
    let mut pending_result = Box::new(u64::MAX);
    *PENDING_FETCH.lock().unwrap() = (
        pair.ep_a as usize,
        target.addr(0),
        rkey,
        &mut *pending_result as *mut u64 as usize,
    );
    let mut req = uct_pending_req_t {
        func: Some(pending_fetch),
        r#priv: [0; UCT_PENDING_REQ_PRIV_LEN],
    };
    assert_eq!(pending_add(pair.ep_a, &mut req, 0), UCS_OK);
    assert!(pair.wait(|| PENDING_RUNS.load(Ordering::SeqCst) == 1));
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(
        read_results(&results, posted),
        (0..posted as u64).collect::<Vec<_>>()
    );
    assert_eq!(comp.count(), i32::MAX - posted as i32);
    // SAFETY: completed (flushed); nothing writes it any more.
    assert_eq!(
        unsafe { std::ptr::read_volatile(&*pending_result) },
        posted as u64
    );
    assert_eq!(target.read64(0), posted as u64);
    assert_eq!(send_buffers_in_use(pair.a.iface, BufferClass::Small), 0);
    assert_eq!(send_credits(pair.a.iface).0, credits_max);
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}
