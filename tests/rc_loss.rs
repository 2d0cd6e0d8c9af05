//! rc_mlx5 over lossy soft devices (5 % of packets dropped each way): AMs
//! arrive exactly once and in order, puts and gets move the right bytes,
//! every completion is called once with UCS_OK. Its own test binary, since
//! the loss applies to the whole device.

mod rc_common;

use std::ffi::c_void;

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;

/// Posts with progress until the op is accepted.
fn post_retrying(pair: &Pair, mut post: impl FnMut() -> ucs_status_t) -> ucs_status_t {
    loop {
        let status = post();
        if status != UCS_ERR_NO_RESOURCE {
            return status;
        }
        pair.progress();
    }
}

#[test]
fn everything_arrives_once_and_in_order_under_loss() {
    std::env::set_var("UCX_SOFT_HCA_SEED", "20261201");
    // Loss is recovered by retransmission after RC_TIMEOUT; 8 attempts of
    // 10 ms (80 ms without an ACK) ride out a scheduling stall of the
    // debug build on a loaded 2-core machine, where 8 of 2 ms (16 ms) once
    // ran out (retry count exceeded at 5 % loss, whose chance of 8 losses
    // in a row is 4e-11).
    let settings = [(c"RC_TIMEOUT", c"10ms"), (c"RC_RETRY_COUNT", c"7")];
    let pair = Pair::with_config(None, None, &settings);
    assert_eq!(loss_set(c"mlx5_0", 0.05), UCS_OK);
    assert_eq!(loss_set(c"mlx5_1", 0.05), UCS_OK);
    let at_b = pair.b.collect_am(4);
    // 300 short AMs and 30 bcopy AMs of 6000 bytes, interleaved.
    let big: Vec<u8> = (0..6000u32).map(|i| (i % 239) as u8).collect();
    unsafe extern "C" fn pack(dest: *mut c_void, arg: *mut c_void) -> usize {
        // SAFETY: arg is the Vec; dest holds max_bcopy bytes.
        unsafe {
            let src = &*(arg as *const Vec<u8>);
            std::ptr::copy_nonoverlapping(src.as_ptr(), dest as *mut u8, src.len());
            src.len()
        }
    }
    let mut expected = Vec::new();
    for seq in 0..300u64 {
        let status = post_retrying(&pair, || am_short(pair.ep_a, 4, seq, &[]));
        assert_eq!(status, UCS_OK);
        expected.push(seq.to_ne_bytes().to_vec());
        if seq % 10 == 0 {
            let packed = loop {
                // SAFETY: valid pack callback and argument.
                let n = unsafe {
                    uct_ep_am_bcopy(pair.ep_a, 4, Some(pack), &big as *const _ as *mut c_void, 0)
                };
                if n != isize::from(UCS_ERR_NO_RESOURCE) {
                    break n;
                }
                pair.progress();
            };
            assert_eq!(packed, 6000);
            expected.push(big.clone());
        }
    }
    assert!(pair.wait(|| at_b.lock().unwrap().len() >= expected.len()));
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    for _ in 0..100 {
        pair.progress();
    }
    assert_eq!(*at_b.lock().unwrap(), expected, "exactly once, in order");

    // put_zcopy of 200 KiB, then get_zcopy back, under the same loss.
    let mut target = vec![0u8; 200 * 1024];
    let (target_memh, rkey) = pair.b.register(target.as_mut_ptr(), target.len());
    let mut source: Vec<u8> = (0..target.len()).map(|i| (i * 31 % 256) as u8).collect();
    let (source_memh, _) = pair.a.register(source.as_mut_ptr(), source.len());
    let mut back = vec![0u8; target.len()];
    let (back_memh, _) = pair.a.register(back.as_mut_ptr(), back.len());
    let mut put_done = CountingCompletion::new(1);
    let iov = [iov_entry(source.as_mut_ptr(), source.len(), source_memh)];
    let status = put_zcopy(
        pair.ep_a,
        &iov[..1],
        target.as_ptr() as u64,
        rkey,
        put_done.as_ptr(),
    );
    pair.expect_completion(status, &put_done);
    assert!(target == source, "put_zcopy data");
    let mut get_done = CountingCompletion::new(1);
    let iov = [iov_entry(back.as_mut_ptr(), back.len(), back_memh)];
    let status = get_zcopy(
        pair.ep_a,
        &iov[..1],
        target.as_ptr() as u64,
        rkey,
        get_done.as_ptr(),
    );
    pair.expect_completion(status, &get_done);
    assert!(back == source, "get_zcopy data");
    // Packets really were lost (and recovered) on both devices.
    for name in ["mlx5_0", "mlx5_1"] {
        let device = uct::hca::devices::open_soft(name).expect("open device");
        let stats = device.link_stats();
        assert!(
            stats.tx_dropped_loss + stats.rx_dropped_loss > 0,
            "{name}: no packet was dropped: {stats:?}"
        );
    }
    assert_eq!(mem_dereg(pair.b.md, target_memh), UCS_OK);
    assert_eq!(mem_dereg(pair.a.md, source_memh), UCS_OK);
    assert_eq!(mem_dereg(pair.a.md, back_memh), UCS_OK);
    assert_eq!(loss_set(c"mlx5_0", 0.0), UCS_OK);
    assert_eq!(loss_set(c"mlx5_1", 0.0), UCS_OK);
    pair.close();
}
