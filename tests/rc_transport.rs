//! rc_mlx5 between two ifaces on two soft devices in one process, through
//! the C entry points: addresses and connection, AM short/iov/bcopy with
//! data checked, descriptor retention, put then get with data checked,
//! completions counted, NO_RESOURCE then pending, flush, errors.

mod rc_common;

use std::ffi::{c_uint, c_void};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;
use uct::api::iface::*;

/// The capabilities UCX 1.13's rc_mlx5 reports (its `iface_query` with no
/// address vector: 4-block WQEs, the 2-byte AM header, 3 AM zcopy entries),
/// so that UCP and UCX's tests pick the same protocols over ours.
#[test]
fn capabilities_are_those_of_ucx_rc_mlx5() {
    let side = Side::open(c"mlx5_0", c"mlx5_0:1", None);
    let cap = &side.attr.cap;
    assert_eq!(cap.am.max_short, 234);
    assert_eq!(cap.put.max_short, 220);
    assert_eq!(cap.am.max_hdr, 186);
    assert_eq!(cap.am.max_iov, 3);
    assert_eq!((cap.put.max_iov, cap.get.max_iov), (14, 14));
    assert_eq!(
        (cap.put.min_zcopy, cap.get.min_zcopy, cap.am.min_zcopy),
        (0, 1, 0)
    );
    assert_eq!(cap.am.max_bcopy, cap.put.max_bcopy - 2);
    assert_eq!(cap.am.max_zcopy, cap.put.max_bcopy - 2);
    assert_eq!(cap.get.max_bcopy, cap.put.max_bcopy);
    assert_eq!(cap.put.max_zcopy, 1 << 30, "the port's max_msg_sz");
    for align in [
        cap.put.opt_zcopy_align,
        cap.get.opt_zcopy_align,
        cap.am.opt_zcopy_align,
    ] {
        assert_eq!(align, 512, "UCS_SYS_PCI_MAX_PAYLOAD");
    }
    let mtu = cap.put.align_mtu;
    assert!(mtu.is_power_of_two() && mtu >= 256, "{mtu}");
    assert_eq!((cap.get.align_mtu, cap.am.align_mtu), (mtu, mtu));
    side.close();
}

#[test]
fn query_reports_limits_and_working_ops() {
    let side = Side::open(c"mlx5_0", c"mlx5_0:1", None);
    let attr = &side.attr;
    for flag in [
        UCT_IFACE_FLAG_AM_SHORT,
        UCT_IFACE_FLAG_AM_BCOPY,
        UCT_IFACE_FLAG_AM_ZCOPY,
        UCT_IFACE_FLAG_PUT_SHORT,
        UCT_IFACE_FLAG_PUT_BCOPY,
        UCT_IFACE_FLAG_PUT_ZCOPY,
        UCT_IFACE_FLAG_GET_SHORT,
        UCT_IFACE_FLAG_GET_BCOPY,
        UCT_IFACE_FLAG_GET_ZCOPY,
        UCT_IFACE_FLAG_PENDING,
        UCT_IFACE_FLAG_CONNECT_TO_EP,
        UCT_IFACE_FLAG_CB_SYNC,
    ] {
        assert_ne!(attr.cap.flags & flag, 0, "flag 0x{flag:x}");
    }
    // Not implemented yet: not advertised.
    for flag in [
        UCT_IFACE_FLAG_CONNECT_TO_IFACE,
        UCT_IFACE_FLAG_TAG_EAGER_SHORT,
    ] {
        assert_eq!(attr.cap.flags & flag, 0, "flag 0x{flag:x}");
    }
    assert!(attr.cap.am.max_short >= 64 && attr.cap.am.max_short < 256);
    assert!(attr.cap.put.max_short >= 64 && attr.cap.put.max_short < attr.cap.am.max_short + 8);
    assert!(
        attr.cap.put.max_bcopy >= 8192,
        "UCX_RC_MLX5_SEG_SIZE default"
    );
    assert_eq!(attr.cap.get.max_bcopy, attr.cap.put.max_bcopy);
    assert_eq!(attr.cap.get.max_short, attr.cap.put.max_short);
    assert_eq!(
        attr.cap.am.max_bcopy,
        attr.cap.put.max_bcopy - 2,
        "2-byte AM header (UCX 1.13 rc_mlx5's)"
    );
    // The largest packed hca::DeviceAddress (InfiniBand LID + GID); a soft
    // HCA address uses its first 7 bytes.
    assert_eq!(attr.device_addr_len, 19);
    // UCX 1.13 rc_mlx5's address type byte.
    assert_eq!(attr.iface_addr_len, 1);
    // UCX 1.13 rc_mlx5's ep address (QPN, tag-matching QPN, atomic MR id).
    assert_eq!(attr.ep_addr_len, 7);
    assert!(attr.latency.c > 0.0 && attr.bandwidth.shared > 0.0);

    // Exactly 536 bytes written (the size in UCX 1.13 and master).
    let mut guarded = vec![0xa5u8; 536 + 64];
    // SAFETY: room for the struct plus a guard; the pointer is 8-aligned
    // (Vec<u8> of this size from the system allocator) — checked.
    unsafe {
        assert_eq!(guarded.as_ptr() as usize % 8, 0);
        assert_eq!(
            uct_iface_query(side.iface, guarded.as_mut_ptr().cast()),
            UCS_OK
        );
    }
    assert!(guarded[536..].iter().all(|&b| b == 0xa5));
    // SAFETY: bad arguments are refused.
    unsafe {
        assert_eq!(
            uct_iface_query(side.iface, null_mut()),
            UCS_ERR_INVALID_PARAM
        );
    }
    side.close();
}

#[test]
fn addresses_and_reachability() {
    let pair = Pair::new();
    let dev_b = pair.b.device_address();
    assert_eq!(dev_b[0], 1, "UDP kind");
    assert_eq!(&dev_b[1..5], &[127, 0, 0, 2]);
    // Kind 7: neither ours (1, 3, 4) nor UCX's RoCE flags (bit 3).
    let garbage = [7u8; 7];
    // SAFETY: 7-byte addresses.
    unsafe {
        assert_eq!(
            uct_iface_is_reachable(pair.a.iface, dev_b.as_ptr().cast(), null()),
            1
        );
        assert_eq!(
            uct_iface_is_reachable(pair.a.iface, garbage.as_ptr().cast(), null()),
            0
        );
        assert_eq!(uct_iface_is_reachable(pair.a.iface, null(), null()), 0);
    }
    // Two eps of one iface have different QP numbers (first 3 bytes).
    let second = pair.a.create_ep();
    let addr_first = pair.a.ep_address(pair.ep_a);
    let addr_second = pair.a.ep_address(second);
    assert_eq!(addr_first.len(), 7);
    assert_ne!(addr_first[..3], addr_second[..3]);
    ep_destroy(second);
    pair.close();
}

#[test]
fn am_short_iov_and_bcopy_round_trip() {
    let pair = Pair::new();
    let at_b = pair.b.collect_am(5);
    let at_a = pair.a.collect_am(31);
    let payload: Vec<u8> = (0..100u8).collect();
    let header = 0x1122_3344_5566_7788u64;
    let status = am_short(pair.ep_a, 5, header, &payload);
    assert_eq!(status, UCS_OK);
    assert!(pair.wait(|| at_b.lock().unwrap().len() == 1));
    let got = at_b.lock().unwrap()[0].clone();
    assert_eq!(&got[..8], &header.to_ne_bytes());
    assert_eq!(&got[8..], &payload[..]);

    // am_short_iov: two pieces arrive concatenated.
    let first = b"hello, ";
    let second = b"world";
    let iov = [
        iov_entry(first.as_ptr() as *mut c_void, first.len(), null_mut()),
        iov_entry(second.as_ptr() as *mut c_void, second.len(), null_mut()),
    ];
    assert_eq!(am_short_iov(pair.ep_a, 5, &iov), UCS_OK);
    assert!(pair.wait(|| at_b.lock().unwrap().len() == 2));
    assert_eq!(at_b.lock().unwrap()[1], b"hello, world");

    // am_bcopy back from b to a, 5000 bytes (several packets at MTU 4096).
    let big: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
    let packed = am_bcopy(pair.ep_b, 31, &big, 0);
    assert_eq!(packed, 5000);
    assert!(pair.wait(|| at_a.lock().unwrap().len() == 1));
    assert_eq!(at_a.lock().unwrap()[0], big);

    // Order is kept: 50 short messages with a sequence number.
    for seq in 0..50u64 {
        loop {
            let status = am_short(pair.ep_a, 5, seq, &[]);
            if status == UCS_OK {
                break;
            }
            assert_eq!(status, UCS_ERR_NO_RESOURCE);
            pair.progress();
        }
    }
    assert!(pair.wait(|| at_b.lock().unwrap().len() == 52));
    assert_eq!(sequence(at_b)[2..], (0..50).collect::<Vec<u64>>());
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(pair.flush(pair.ep_b), UCS_OK);
    pair.close();
}

/// Descriptors a retaining handler kept.
static KEPT: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

unsafe extern "C" fn keep_am(
    _arg: *mut c_void,
    data: *mut c_void,
    length: usize,
    flags: c_uint,
) -> ucs_status_t {
    assert_ne!(flags & UCT_CB_PARAM_FLAG_DESC, 0);
    KEPT.lock().unwrap().push((data as usize, length));
    UCS_INPROGRESS
}

#[test]
fn am_descriptor_retention_and_release() {
    let pair = Pair::new();
    assert_eq!(
        set_am_handler(pair.b.iface, 7, Some(keep_am), null_mut(), 0),
        UCS_OK
    );
    for seq in 0..20u64 {
        let status = am_short(pair.ep_a, 7, seq, &seq.to_ne_bytes()[..8]);
        assert_eq!(status, UCS_OK);
    }
    assert!(pair.wait(|| KEPT.lock().unwrap().len() == 20));
    let kept: Vec<(usize, usize)> = KEPT.lock().unwrap().drain(..).collect();
    // Kept descriptors stay intact while later messages arrive: all
    // different buffers, each with its own sequence number.
    for (seq, &(data, length)) in kept.iter().enumerate() {
        assert_eq!(length, 16);
        // SAFETY: a kept descriptor holds `length` bytes until released.
        let bytes = unsafe { std::slice::from_raw_parts(data as *const u8, length) };
        assert_eq!(&bytes[..8], &(seq as u64).to_ne_bytes());
        assert_eq!(&bytes[8..], &(seq as u64).to_ne_bytes());
    }
    for &(data, _) in &kept {
        // Released once, before the iface closes.
        release_desc(data as *mut c_void);
    }
    pair.close();
}

#[test]
fn put_then_get_with_data_checked_and_completions_counted() {
    let pair = Pair::new();
    let mut target = vec![0u8; 64 * 1024];
    let (target_memh, rkey) = pair.b.register(target.as_mut_ptr(), target.len());
    let base = target.as_ptr() as u64;

    // put_short of 100 bytes at offset 0.
    let short: Vec<u8> = (0..100u8).map(|i| i ^ 0x5a).collect();
    let status = put_short(pair.ep_a, &short, base, rkey);
    assert_eq!(status, UCS_OK);

    // put_bcopy of 3000 bytes at offset 1000.
    let bcopy: Vec<u8> = (0..3000u32).map(|i| (i % 253) as u8).collect();
    let packed = put_bcopy(pair.ep_a, &bcopy, base + 1000, rkey);
    assert_eq!(packed, 3000);

    // put_zcopy of 20000 bytes (two iov entries) at offset 8192, counted.
    let mut source: Vec<u8> = (0..20000u32).map(|i| (i * 13 % 256) as u8).collect();
    let (source_memh, _) = pair.a.register(source.as_mut_ptr(), source.len());
    let iov = [
        iov_entry(source.as_mut_ptr(), 12000, source_memh),
        uct_iov_t {
            buffer: source[12000..].as_mut_ptr().cast(),
            length: 8000,
            memh: source_memh,
            stride: 0,
            count: 1,
        },
    ];
    let mut comp = CountingCompletion::new(1);
    let status = put_zcopy(pair.ep_a, &iov[..2], base + 8192, rkey, comp.as_ptr());
    pair.expect_completion(status, &comp);
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);

    assert_eq!(&target[..100], &short[..]);
    assert_eq!(&target[1000..4000], &bcopy[..]);
    assert_eq!(&target[8192..28192], &source[..]);
    assert!(
        target[100..1000].iter().all(|&b| b == 0),
        "nothing else written"
    );

    // get_bcopy of the put_bcopy region back.
    let got: Mutex<Vec<u8>> = Mutex::new(Vec::new());
    unsafe extern "C" fn unpack(arg: *mut c_void, data: *const c_void, length: usize) {
        // SAFETY: arg is the Mutex; data holds length bytes.
        unsafe {
            let out = &*(arg as *const Mutex<Vec<u8>>);
            out.lock()
                .unwrap()
                .extend_from_slice(std::slice::from_raw_parts(data as *const u8, length));
        }
    }
    let mut get_comp = CountingCompletion::new(1);
    // SAFETY: valid callback and argument; completion live.
    let status = unsafe {
        uct_ep_get_bcopy(
            pair.ep_a,
            Some(unpack),
            &got as *const _ as *mut c_void,
            3000,
            base + 1000,
            rkey,
            get_comp.as_ptr(),
        )
    };
    assert_eq!(status, UCS_INPROGRESS);
    assert!(pair.wait(|| get_comp.calls() == 1));
    assert_eq!(*got.lock().unwrap(), bcopy);

    // get_zcopy of the put_zcopy region into fresh registered memory, with
    // one completion counting two ops.
    let mut back = vec![0u8; 20000];
    let (back_memh, _) = pair.a.register(back.as_mut_ptr(), back.len());
    let mut two = CountingCompletion::new(2);
    for (offset, len) in [(0usize, 10000usize), (10000, 10000)] {
        let iov = [uct_iov_t {
            buffer: back[offset..].as_mut_ptr().cast(),
            length: len,
            memh: back_memh,
            stride: 0,
            count: 1,
        }];
        let status = get_zcopy(
            pair.ep_a,
            &iov[..1],
            base + 8192 + offset as u64,
            rkey,
            two.as_ptr(),
        );
        assert_eq!(status, UCS_INPROGRESS);
    }
    assert!(pair.wait(|| two.calls() == 1));
    assert_eq!(two.count(), 0);
    assert_eq!(two.status(), UCS_OK);
    assert_eq!(back, source);

    assert_eq!(mem_dereg(pair.b.md, target_memh), UCS_OK);
    assert_eq!(mem_dereg(pair.a.md, source_memh), UCS_OK);
    assert_eq!(mem_dereg(pair.a.md, back_memh), UCS_OK);
    pair.close();
}

static PENDING_CALLS: AtomicUsize = AtomicUsize::new(0);
/// The ep the pending callback posts on.
static PENDING_EP: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn pending_post(_req: *mut uct_pending_req_t) -> ucs_status_t {
    PENDING_CALLS.fetch_add(1, Ordering::SeqCst);
    let ep = PENDING_EP.load(Ordering::SeqCst) as uct_ep_h;
    am_short(ep, 9, u64::MAX, &[])
}

#[test]
fn no_resource_then_pending() {
    let pair = Pair::new();
    let at_b = pair.b.collect_am(9);
    // Without progress on a, completions are never polled: the ring fills.
    let mut posted = 0u64;
    let status = loop {
        let status = am_short(pair.ep_a, 9, posted, &[]);
        if status != UCS_OK {
            break status;
        }
        posted += 1;
        assert!(posted < 100_000, "the ring never filled");
    };
    assert_eq!(status, UCS_ERR_NO_RESOURCE);
    assert!(posted >= 16);

    PENDING_EP.store(pair.ep_a as usize, Ordering::SeqCst);
    let mut req = uct_pending_req_t {
        func: Some(pending_post),
        r#priv: [0; UCT_PENDING_REQ_PRIV_LEN],
    };
    assert_eq!(pending_add(pair.ep_a, &mut req, 0), UCS_OK);
    assert!(pair.wait(|| PENDING_CALLS.load(Ordering::SeqCst) == 1));
    assert!(pair.wait(|| at_b.lock().unwrap().len() as u64 == posted + 1));
    let last = at_b.lock().unwrap().last().unwrap().clone();
    assert_eq!(
        &last[..8],
        &u64::MAX.to_ne_bytes(),
        "the pending op came last"
    );
    // With resources available, pending_add says "retry now".
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(pending_add(pair.ep_a, &mut req, 0), UCS_ERR_BUSY);
    pair.close();
}

#[test]
fn bad_input_is_refused_and_nothing_is_posted() {
    let pair = Pair::new();
    let at_b = pair.b.collect_am(1);
    let big = vec![0u8; 4096];
    let max_am = pair.a.attr.cap.am.max_short;
    let max_put = pair.a.attr.cap.put.max_short;
    let mut target = vec![0u8; 4096];
    let (memh, rkey) = pair.b.register(target.as_mut_ptr(), target.len());
    // SAFETY: each call has one bad argument.
    unsafe {
        assert_eq!(
            uct_ep_am_short(
                pair.ep_a,
                1,
                0,
                big.as_ptr().cast(),
                (max_am - 8 + 1) as c_uint
            ),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_am_short(pair.ep_a, 1, 0, null(), 10),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_am_short(pair.ep_a, 32, 0, null(), 0),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_am_short(null_mut(), 1, 0, null(), 0),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_put_short(
                pair.ep_a,
                big.as_ptr().cast(),
                (max_put + 1) as c_uint,
                target.as_ptr() as u64,
                rkey
            ),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_put_short(pair.ep_a, null(), 8, target.as_ptr() as u64, rkey),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_am_bcopy(pair.ep_a, 1, None, null_mut(), 0),
            -(UCS_ERR_INVALID_PARAM.unsigned_abs() as isize)
        );
        // zcopy from unregistered memory.
        let iov = [iov_entry(big.as_ptr() as *mut c_void, 64, null_mut())];
        assert_eq!(
            uct_ep_put_zcopy(
                pair.ep_a,
                iov.as_ptr(),
                1,
                target.as_ptr() as u64,
                rkey,
                null_mut()
            ),
            UCS_ERR_INVALID_PARAM
        );
        // zcopy outside its registration.
        let iov = [uct_iov_t {
            buffer: target.as_mut_ptr().add(4000).cast(),
            length: 200,
            memh,
            stride: 0,
            count: 1,
        }];
        assert_eq!(
            uct_ep_get_zcopy(pair.ep_b, iov.as_ptr(), 1, 0, 0, null_mut()),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_get_zcopy(pair.ep_a, null(), 1, 0, 0, null_mut()),
            UCS_ERR_INVALID_PARAM
        );
    }
    // Nothing was posted: a flush finds no outstanding op right away.
    assert_eq!(ep_flush(pair.ep_a, 0, null_mut()), UCS_OK);
    // An ep that is not connected refuses to post.
    let lonely = pair.a.create_ep();
    assert_eq!(am_short(lonely, 1, 0, &[]), UCS_ERR_NOT_CONNECTED);
    ep_destroy(lonely);
    for _ in 0..100 {
        pair.progress();
    }
    assert!(at_b.lock().unwrap().is_empty());
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}

static ERRORS: Mutex<Vec<(usize, ucs_status_t)>> = Mutex::new(Vec::new());

unsafe extern "C" fn record_error(
    _arg: *mut c_void,
    ep: uct_ep_h,
    status: ucs_status_t,
) -> ucs_status_t {
    ERRORS.lock().unwrap().push((ep as usize, status));
    UCS_OK
}

#[test]
fn remote_access_error_fails_the_ep_once() {
    let mut params = iface_params();
    params.field_mask |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG;
    params.err_handler = Some(record_error);
    let pair = Pair::with_params(Some(params), None);
    let mut target = vec![0u8; 4096];
    let (memh, rkey) = pair.b.register(target.as_mut_ptr(), target.len());
    let data = [7u8; 64];
    let mut comps: Vec<Box<CountingCompletion>> =
        (0..3).map(|_| CountingCompletion::new(1)).collect();
    let mut source = vec![1u8; 64];
    let (source_memh, _) = pair.a.register(source.as_mut_ptr(), 64);
    let iov = [iov_entry(source.as_mut_ptr(), 64, source_memh)];
    let base = target.as_ptr() as u64;
    assert_eq!(
        put_zcopy(pair.ep_a, &iov[..1], base, rkey, comps[0].as_ptr()),
        UCS_INPROGRESS
    );
    assert_eq!(
        put_zcopy(pair.ep_a, &iov[..1], base + 8192, rkey, comps[1].as_ptr()),
        UCS_INPROGRESS
    );
    assert_eq!(
        put_zcopy(pair.ep_a, &iov[..1], base + 64, rkey, comps[2].as_ptr()),
        UCS_INPROGRESS
    );
    assert!(pair.wait(|| comps.iter().all(|c| c.calls() == 1)));
    assert_eq!(comps[0].status(), UCS_OK);
    assert_eq!(comps[1].status(), UCS_ERR_CONNECTION_RESET);
    assert_ne!(comps[2].status(), UCS_OK);
    assert_eq!(&target[..64], &[1u8; 64][..]);
    assert!(
        target[64..].iter().all(|&b| b == 0),
        "refused and flushed ops wrote nothing"
    );
    let errors: Vec<_> = ERRORS
        .lock()
        .unwrap()
        .iter()
        .copied()
        .filter(|&(ep, _)| ep == pair.ep_a as usize)
        .collect();
    assert_eq!(errors, vec![(pair.ep_a as usize, UCS_ERR_CONNECTION_RESET)]);
    // New posts fail with the ep's status.
    assert_eq!(
        put_short(pair.ep_a, &data[..8], target.as_ptr() as u64, rkey),
        UCS_ERR_CONNECTION_RESET
    );
    assert_eq!(am_short(pair.ep_a, 1, 0, &[]), UCS_ERR_CONNECTION_RESET);
    for _ in 0..50 {
        pair.progress();
    }
    assert_eq!(
        ERRORS
            .lock()
            .unwrap()
            .iter()
            .filter(|&&(ep, _)| ep == pair.ep_a as usize)
            .count(),
        1,
        "the handler is called once"
    );
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    assert_eq!(mem_dereg(pair.a.md, source_memh), UCS_OK);
    pair.close();
}

/// Descriptors kept with a user headroom: (data, length).
static KEPT_HEADROOM: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

unsafe extern "C" fn keep_with_headroom(
    _arg: *mut c_void,
    data: *mut c_void,
    length: usize,
    _flags: c_uint,
) -> ucs_status_t {
    // The headroom in front of the data is the caller's to write.
    // SAFETY: rx_headroom (24) bytes before data belong to the descriptor.
    unsafe { std::ptr::write_bytes((data as *mut u8).sub(24), 0xee, 24) };
    KEPT_HEADROOM.lock().unwrap().push((data as usize, length));
    UCS_INPROGRESS
}

#[test]
fn rx_headroom_descriptors_keep_data_and_release() {
    let mut params = iface_params();
    params.field_mask |= UCT_IFACE_PARAM_FIELD_RX_HEADROOM;
    params.rx_headroom = 24;
    let pair = Pair::with_params(None, Some(params));
    assert_eq!(
        set_am_handler(pair.b.iface, 8, Some(keep_with_headroom), null_mut(), 0),
        UCS_OK
    );
    for round in 0..3u64 {
        for seq in 0..10u64 {
            let payload = [(round * 10 + seq) as u8; 32];
            let status = am_short(pair.ep_a, 8, seq, &payload);
            assert_eq!(status, UCS_OK);
        }
        assert!(pair.wait(|| KEPT_HEADROOM.lock().unwrap().len() == 10));
        let kept: Vec<(usize, usize)> = KEPT_HEADROOM.lock().unwrap().drain(..).collect();
        for (seq, &(data, length)) in kept.iter().enumerate() {
            assert_eq!(length, 40);
            // SAFETY: a kept descriptor holds `length` bytes until released.
            let bytes = unsafe { std::slice::from_raw_parts(data as *const u8, length) };
            assert_eq!(
                &bytes[..8],
                &(seq as u64).to_ne_bytes(),
                "headroom writes left the data alone"
            );
            assert!(bytes[8..]
                .iter()
                .all(|&b| b == (round * 10 + seq as u64) as u8));
        }
        // UCP releases with the start of its headroom, not the data.
        for &(data, _) in &kept {
            // Released once, before the iface closes.
            release_desc((data - 24) as *mut c_void);
        }
    }
    pair.close();
}
