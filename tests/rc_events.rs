//! rc_mlx5: am_zcopy, blocking waits through the event fd, flush with a
//! completion, fence, pending purge, iface flush, ep_check, v2 reachability
//! and query, and a dead link failing the ep with ENDPOINT_TIMEOUT.

mod rc_common;

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;
use uct::api::iface::*;

#[test]
fn am_zcopy_header_and_iov_arrive_contiguous() {
    let pair = Pair::new();
    let at_b = pair.b.collect_am(3);
    let header = *b"zcopy-header";
    let mut payload: Vec<u8> = (0..6000u32).map(|i| (i % 241) as u8).collect();
    let (memh, _) = pair.a.register(payload.as_mut_ptr(), payload.len());
    let iov = [
        uct_iov_t {
            buffer: payload.as_mut_ptr().cast(),
            length: 1000,
            memh,
            stride: 0,
            count: 1,
        },
        uct_iov_t {
            buffer: payload[1000..].as_mut_ptr().cast(),
            length: 5000,
            memh,
            stride: 0,
            count: 1,
        },
    ];
    let mut comp = CountingCompletion::new(1);
    let status = am_zcopy(pair.ep_a, 3, &header, &iov[..2], 0, comp.as_ptr());
    assert_eq!(status, UCS_INPROGRESS);
    assert!(pair.wait(|| comp.calls() == 1 && at_b.lock().unwrap().len() == 1));
    let got = at_b.lock().unwrap()[0].clone();
    assert_eq!(&got[..header.len()], &header);
    assert_eq!(&got[header.len()..], &payload[..]);
    // Too long a header, too much data: refused.
    let max_hdr = pair.a.attr.cap.am.max_hdr;
    let long = vec![0u8; max_hdr + 1];
    assert_eq!(
        am_zcopy(pair.ep_a, 3, &long, &iov[..2], 0, null_mut()),
        UCS_ERR_INVALID_PARAM
    );
    assert_eq!(mem_dereg(pair.a.md, memh), UCS_OK);
    pair.close();
}

#[test]
fn blocking_wait_on_the_event_fd() {
    let pair = Pair::new();
    let at_b = pair.b.collect_am(2);
    let mut fd = -1;
    // SAFETY: live iface, valid out-pointer.
    unsafe {
        assert_eq!(uct_iface_event_fd_get(pair.b.iface, &mut fd), UCS_OK);
        assert_eq!(
            uct_iface_event_fd_get(pair.b.iface, null_mut()),
            UCS_ERR_INVALID_PARAM
        );
    }
    assert!(fd >= 0);
    // Nothing pending: arming succeeds and the fd stays quiet.
    assert_eq!(event_arm(pair.b.iface, UCT_EVENT_RECV), UCS_OK);
    assert!(!fd_readable(fd, Duration::from_millis(50)));
    // A message wakes the fd without b progressing (the device's service
    // thread delivers it).
    assert_eq!(am_short(pair.ep_a, 2, 42, &[]), UCS_OK);
    assert!(
        fd_readable(fd, Duration::from_secs(10)),
        "event fd became readable"
    );
    // Arming again with the completion unread reports BUSY.
    assert_eq!(event_arm(pair.b.iface, UCT_EVENT_RECV), UCS_ERR_BUSY);
    assert!(pair.wait(|| at_b.lock().unwrap().len() == 1));
    assert_eq!(event_arm(pair.b.iface, UCT_EVENT_RECV), UCS_OK);
    pair.close();
}

#[test]
fn flush_with_completion_fence_and_iface_flush() {
    let pair = Pair::new();
    let mut target = vec![0u8; 4096];
    let (memh, rkey) = pair.b.register(target.as_mut_ptr(), target.len());
    let base = target.as_ptr() as u64;
    // Nothing outstanding: flush completes at once, the completion unused.
    let mut idle = CountingCompletion::new(1);
    assert_eq!(ep_flush(pair.ep_a, 0, idle.as_ptr()), UCS_OK);
    for i in 0..10u64 {
        let status = put_short(pair.ep_a, &i.to_ne_bytes()[..8], base + 8 * i, rkey);
        assert_eq!(status, UCS_OK);
    }
    assert_eq!(ep_fence(pair.ep_a), UCS_OK);
    let status = put_short(pair.ep_a, &[0xffu8; 8][..8], base + 80, rkey);
    assert_eq!(status, UCS_OK);
    let mut flushed = CountingCompletion::new(1);
    assert_eq!(ep_flush(pair.ep_a, 0, flushed.as_ptr()), UCS_INPROGRESS);
    assert!(pair.wait(|| flushed.calls() == 1));
    assert_eq!(flushed.status(), UCS_OK);
    // After the flush completed, every put is visible at the target.
    for i in 0..10usize {
        assert_eq!(&target[8 * i..8 * i + 8], &(i as u64).to_ne_bytes());
    }
    assert_eq!(&target[80..88], &[0xff; 8]);
    assert_eq!(idle.calls(), 0);
    // iface flush: polls until done; a completion is not supported.
    // SAFETY: inside the registration; live iface.
    unsafe {
        assert_eq!(
            uct_ep_put_short(pair.ep_a, [1u8; 8].as_ptr().cast(), 8, base, rkey),
            UCS_OK
        );
        let mut other = CountingCompletion::new(1);
        assert_eq!(
            uct_iface_flush(pair.a.iface, 0, other.as_ptr()),
            UCS_ERR_UNSUPPORTED
        );
        assert_eq!(uct_iface_fence(pair.a.iface, 0), UCS_OK);
    }
    let start = Instant::now();
    loop {
        match iface_flush(pair.a.iface, 0, null_mut()) {
            UCS_OK => break,
            UCS_INPROGRESS => pair.progress(),
            status => panic!("iface flush: {status}"),
        }
        assert!(start.elapsed() < Duration::from_secs(20));
    }
    assert_eq!(&target[..8], &[1u8; 8]);
    // ep_check of a connected ep.
    assert_eq!(ep_check(pair.ep_a, 0, null_mut()), UCS_OK);
    assert_eq!(ep_check(pair.ep_a, 1, null_mut()), UCS_ERR_INVALID_PARAM);
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}

static PURGED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

unsafe extern "C" fn never_called(_req: *mut uct_pending_req_t) -> ucs_status_t {
    panic!("a purged request must not be dispatched");
}

unsafe extern "C" fn record_purge(req: *mut uct_pending_req_t, arg: *mut c_void) {
    assert_eq!(arg as usize, 0x1234);
    PURGED.lock().unwrap().push(req as usize);
}

#[test]
fn pending_purge_returns_requests_in_order() {
    let pair = Pair::new();
    // Fill the ring (no progress on a).
    let mut posted = 0;
    while am_short(pair.ep_a, 0, 0, &[]) == UCS_OK {
        posted += 1;
        assert!(posted < 100_000);
    }
    let mut reqs: Vec<uct_pending_req_t> = (0..3)
        .map(|_| uct_pending_req_t {
            func: Some(never_called),
            r#priv: [0; UCT_PENDING_REQ_PRIV_LEN],
        })
        .collect();
    for req in reqs.iter_mut() {
        assert_eq!(pending_add(pair.ep_a, req, 0), UCS_OK);
    }
    // A flush must wait for the pending queue.
    assert_eq!(ep_flush(pair.ep_a, 0, null_mut()), UCS_ERR_NO_RESOURCE);
    // Live ep, callback and argument.
    pending_purge(pair.ep_a, Some(record_purge), 0x1234 as *mut c_void);
    let expected: Vec<usize> = reqs.iter().map(|r| r as *const _ as usize).collect();
    assert_eq!(*PURGED.lock().unwrap(), expected);
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    pair.close();
}

#[test]
fn v2_reachability_and_query() {
    let pair = Pair::new();
    let dev_b = pair.b.device_address();
    let mut params: uct_iface_is_reachable_params_t = zeroed();
    params.field_mask = u64::from(UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR);
    params.device_addr = dev_b.as_ptr().cast();
    assert_eq!(is_reachable_v2(pair.a.iface, &params), 1);
    let bad = [0u8; 7];
    params.device_addr = bad.as_ptr().cast();
    assert_eq!(is_reachable_v2(pair.a.iface, &params), 0);

    let mut attr: uct_iface_attr_v2_t = zeroed();
    attr.field_mask = UCT_IFACE_ATTR_FIELD_CAP_FLAGS;
    assert_eq!(iface_query_v2(pair.a.iface, &mut attr), UCS_OK);
    assert_ne!(
        attr.cap.flags & UCT_IFACE_FLAG_V2_QUERY_TOKEN,
        0,
        "failover tokens are advertised (rc::failover)"
    );
    attr.field_mask = UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH;
    assert_eq!(iface_query_v2(pair.a.iface, &mut attr), UCS_OK);
    assert!(attr.tx_token_length > 0);

    let addr_b = pair.b.ep_address(pair.ep_b);
    let mut connected: uct_ep_is_connected_params_t = zeroed();
    connected.field_mask = u64::from(UCT_EP_IS_CONNECTED_FIELD_EP_ADDR);
    connected.ep_addr = addr_b.as_ptr().cast();
    assert_eq!(ep_is_connected(pair.ep_a, &connected), 1);
    pair.close();
}

static TIMEOUTS: Mutex<Vec<(usize, ucs_status_t)>> = Mutex::new(Vec::new());

unsafe extern "C" fn record_timeout(
    _arg: *mut c_void,
    ep: uct_ep_h,
    status: ucs_status_t,
) -> ucs_status_t {
    TIMEOUTS.lock().unwrap().push((ep as usize, status));
    UCS_OK
}

#[test]
fn unanswered_peer_fails_the_ep_with_endpoint_timeout() {
    let mut params = iface_params();
    params.field_mask |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER;
    params.err_handler = Some(record_timeout);
    // Short ACK timeout and few retries, so the failure comes quickly.
    let settings = [(c"RC_TIMEOUT", c"1ms"), (c"RC_RETRY_COUNT", c"2")];
    let a = Side::open_with(c"mlx5_0", c"mlx5_0:1", Some(params), &settings);
    let b = Side::open_with(c"mlx5_1", c"mlx5_1:1", None, &settings);
    let ep_a = a.create_ep();
    let ep_b = b.create_ep();
    let (dev_b, addr_b) = (b.device_address(), b.ep_address(ep_b));
    // A peer address nobody answers on: b's QP on a made-up port.
    let mut dead = dev_b.clone();
    dead[5] = 0;
    dead[6] = 9; // port 9 (discard) on 127.0.0.2: nothing listens there
                 // SAFETY: addresses of the right lengths.
    unsafe {
        assert_eq!(
            uct_ep_connect_to_ep(ep_a, dead.as_ptr().cast(), addr_b.as_ptr().cast()),
            UCS_OK
        );
    }
    let mut comp = CountingCompletion::new(1);
    assert_eq!(am_short(ep_a, 0, 1, &[]), UCS_OK);
    assert_eq!(ep_flush(ep_a, 0, comp.as_ptr()), UCS_INPROGRESS);
    let start = Instant::now();
    while comp.calls() == 0 {
        a.progress();
        std::thread::sleep(Duration::from_micros(200));
        assert!(start.elapsed() < Duration::from_secs(20), "no timeout");
    }
    assert_eq!(comp.status(), UCS_ERR_ENDPOINT_TIMEOUT);
    let mine: Vec<_> = TIMEOUTS
        .lock()
        .unwrap()
        .iter()
        .copied()
        .filter(|&(ep, _)| ep == ep_a as usize)
        .collect();
    assert_eq!(mine, vec![(ep_a as usize, UCS_ERR_ENDPOINT_TIMEOUT)]);
    assert_eq!(am_short(ep_a, 0, 1, &[]), UCS_ERR_ENDPOINT_TIMEOUT);
    assert_eq!(ep_flush(ep_a, 0, null_mut()), UCS_ERR_ENDPOINT_TIMEOUT);
    assert_eq!(ep_check(ep_a, 0, null_mut()), UCS_ERR_ENDPOINT_TIMEOUT);
    ep_destroy(ep_a);
    ep_destroy(ep_b);
    a.close();
    b.close();
}

static CANCEL_ERRORS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

unsafe extern "C" fn record_cancel_error(
    _arg: *mut c_void,
    ep: uct_ep_h,
    _status: ucs_status_t,
) -> ucs_status_t {
    CANCEL_ERRORS.lock().unwrap().push(ep as usize);
    UCS_OK
}

#[test]
fn flush_cancel_completes_outstanding_ops_with_canceled() {
    let mut params = iface_params();
    params.field_mask |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER;
    params.err_handler = Some(record_cancel_error);
    let a = Side::open(c"mlx5_0", c"mlx5_0:1", Some(params));
    let b = Side::open(c"mlx5_1", c"mlx5_1:1", None);
    let ep_a = a.create_ep();
    let ep_b = b.create_ep();
    // A peer that never answers (a port nobody listens on), with the default
    // 1 s ACK timeout: the ops stay outstanding until canceled.
    let mut dead = b.device_address();
    dead[5] = 0;
    dead[6] = 9;
    let addr_b = b.ep_address(ep_b);
    let mut source = vec![3u8; 256];
    let (memh, _) = a.register(source.as_mut_ptr(), source.len());
    let iov = [uct_iov_t {
        buffer: source.as_mut_ptr().cast(),
        length: 256,
        memh,
        stride: 0,
        count: 1,
    }];
    let mut puts: Vec<Box<CountingCompletion>> =
        (0..4).map(|_| CountingCompletion::new(1)).collect();
    let mut flushed = CountingCompletion::new(1);
    // SAFETY: valid addresses, registered memory, live completions.
    unsafe {
        assert_eq!(
            uct_ep_connect_to_ep(ep_a, dead.as_ptr().cast(), addr_b.as_ptr().cast()),
            UCS_OK
        );
        for put in puts.iter_mut() {
            let status = uct_ep_put_zcopy(ep_a, iov.as_ptr(), 1, 0x1000, 0x77, put.as_ptr());
            assert_eq!(status, UCS_INPROGRESS);
        }
        assert_eq!(
            uct_ep_flush(ep_a, UCT_FLUSH_FLAG_CANCEL, flushed.as_ptr()),
            UCS_INPROGRESS
        );
    }
    let start = Instant::now();
    while flushed.calls() == 0 || puts.iter().any(|p| p.calls() == 0) {
        a.progress();
        std::thread::yield_now();
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "cancel did not complete"
        );
    }
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "canceled, not timed out (8 s: 1 s ACK timeout, 7 retries)"
    );
    for put in &puts {
        assert_eq!(put.status(), UCS_ERR_CANCELED);
    }
    assert!(
        !CANCEL_ERRORS.lock().unwrap().contains(&(ep_a as usize)),
        "no error handler call for a requested cancel"
    );
    assert_eq!(am_short(ep_a, 0, 0, &[]), UCS_ERR_CANCELED);
    assert_eq!(mem_dereg(a.md, memh), UCS_OK);
    ep_destroy(ep_a);
    ep_destroy(ep_b);
    a.close();
    b.close();
}

/// The ep the destroying completion destroys.
static DOOMED_EP: Mutex<usize> = Mutex::new(0);
static DESTROYING_CALLS: Mutex<u32> = Mutex::new(0);

unsafe extern "C" fn destroy_on_completion(_comp: *mut uct_completion_t) {
    *DESTROYING_CALLS.lock().unwrap() += 1;
    let ep = std::mem::take(&mut *DOOMED_EP.lock().unwrap());
    if ep != 0 {
        ep_destroy(ep as uct_ep_h);
    }
}

#[test]
fn ep_destroyed_from_a_completion_callback() {
    // A peer that never answers and a 1 ms ACK timeout: the ep fails and
    // every outstanding op is completed in one go; the first completion
    // destroys the ep, which completes the others (canceled), so progress
    // must not touch them afterwards.
    let settings = [(c"RC_TIMEOUT", c"1ms"), (c"RC_RETRY_COUNT", c"1")];
    let a = Side::open_with(c"mlx5_0", c"mlx5_0:1", None, &settings);
    let b = Side::open(c"mlx5_1", c"mlx5_1:1", None);
    let doomed = a.create_ep();
    let peer = b.create_ep();
    let mut dead = b.device_address();
    dead[5] = 0;
    dead[6] = 9;
    let addr_b = b.ep_address(peer);
    let mut source = vec![5u8; 64];
    let (memh, _) = a.register(source.as_mut_ptr(), 64);
    let iov = [uct_iov_t {
        buffer: source.as_mut_ptr().cast(),
        length: 64,
        memh,
        stride: 0,
        count: 1,
    }];
    *DOOMED_EP.lock().unwrap() = doomed as usize;
    let mut comps: Vec<uct_completion_t> = (0..3)
        .map(|_| uct_completion_t {
            func: Some(destroy_on_completion),
            count: 1,
            status: UCS_OK,
        })
        .collect();
    // SAFETY: valid addresses and memory; completions live until the end.
    unsafe {
        assert_eq!(
            uct_ep_connect_to_ep(doomed, dead.as_ptr().cast(), addr_b.as_ptr().cast()),
            UCS_OK
        );
        for comp in comps.iter_mut() {
            let status = uct_ep_put_zcopy(doomed, iov.as_ptr(), 1, 0x1000, 0x5, comp);
            assert_eq!(status, UCS_INPROGRESS);
        }
        // A connected ep with outstanding ops cannot be connected again.
        assert_eq!(
            uct_ep_connect_to_ep(doomed, dead.as_ptr().cast(), addr_b.as_ptr().cast()),
            UCS_ERR_BUSY
        );
    }
    let start = Instant::now();
    while *DESTROYING_CALLS.lock().unwrap() == 0 {
        a.progress();
        std::thread::yield_now();
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the ep never failed"
        );
    }
    for _ in 0..200 {
        a.progress();
    }
    // The first completion destroyed the ep, which completed the later
    // ones inside that destroy, canceled; nothing ran after.
    assert_eq!(*DESTROYING_CALLS.lock().unwrap(), 3);
    assert_ne!(comps[0].status, UCS_OK);
    assert_ne!(comps[0].status, UCS_ERR_CANCELED);
    assert_eq!(comps[1].status, UCS_ERR_CANCELED);
    assert_eq!(comps[2].status, UCS_ERR_CANCELED);
    // The iface still works: a new ep can be created and destroyed.
    let fresh = a.create_ep();
    ep_destroy(fresh);
    assert_eq!(mem_dereg(a.md, memh), UCS_OK);
    ep_destroy(peer);
    a.close();
    b.close();
}
