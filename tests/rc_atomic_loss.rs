//! rc_mlx5 atomics over lossy soft devices: a fetch-and-add whose request or
//! response is lost and retried still executes exactly once (the responder
//! answers a duplicate from its saved result), so a counter bumped from both
//! sides ends at the number of adds and every fetched value is distinct. Its
//! own test binary, since the loss applies to the whole device.

mod rc_common;

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;

#[test]
fn fetch_add_executes_once_per_op_under_loss() {
    const PER_SIDE: usize = 400;
    std::env::set_var("UCX_SOFT_HCA_SEED", "20261202");
    let settings = [(c"RC_TIMEOUT", c"2ms"), (c"RC_RETRY_COUNT", c"7")];
    let pair = Pair::with_config(None, None, &settings);
    assert_eq!(loss_set(c"mlx5_0", 0.05), UCS_OK);
    assert_eq!(loss_set(c"mlx5_1", 0.05), UCS_OK);
    // The counter is registered with both devices (one process), so each
    // side's ep reaches the same word.
    let mut counter = Box::new(0u64);
    let counter_ptr: *mut u64 = &mut *counter;
    let (memh_b, rkey_via_b) = pair.b.register(counter_ptr.cast(), 8);
    let (memh_a, rkey_via_a) = pair.a.register(counter_ptr.cast(), 8);
    let mut fetched = vec![u64::MAX; 2 * PER_SIDE];
    let results = fetched.as_mut_ptr();
    let mut comp = CountingCompletion::new((2 * PER_SIDE) as i32);
    let comp_ptr = comp.as_ptr();
    for i in 0..PER_SIDE {
        for (side, (ep, rkey)) in [(pair.ep_a, rkey_via_b), (pair.ep_b, rkey_via_a)]
            .into_iter()
            .enumerate()
        {
            // SAFETY: live eps; result slots and the completion outlive the
            // ops (waited for below).
            let status = pair.post_retrying(|| unsafe {
                uct_ep_atomic64_fetch(
                    ep,
                    UCT_ATOMIC_OP_ADD,
                    1,
                    results.add(2 * i + side),
                    counter_ptr as u64,
                    rkey,
                    comp_ptr,
                )
            });
            assert_eq!(status, UCS_INPROGRESS);
        }
    }
    assert!(pair.wait(|| comp.calls() == 1), "not every add completed");
    assert_eq!(comp.status(), UCS_OK);
    // SAFETY: every op completed; the devices no longer write these.
    let total = unsafe { counter_ptr.read_volatile() };
    assert_eq!(total, (2 * PER_SIDE) as u64);
    // SAFETY: as above.
    let mut seen: Vec<u64> = (0..2 * PER_SIDE)
        .map(|i| unsafe { results.add(i).read_volatile() })
        .collect();
    seen.sort_unstable();
    assert!(
        seen.iter().enumerate().all(|(i, &v)| v == i as u64),
        "fetched values are not 0..{}",
        2 * PER_SIDE
    );
    let mut dropped = 0;
    for name in ["mlx5_0", "mlx5_1"] {
        let device = uct::hca::devices::open_soft(name).expect("open device");
        let stats = device.link_stats();
        dropped += stats.tx_dropped_loss + stats.rx_dropped_loss;
    }
    assert!(dropped > 0, "no packet was dropped");
    assert_eq!(mem_dereg(pair.b.md, memh_b), UCS_OK);
    assert_eq!(mem_dereg(pair.a.md, memh_a), UCS_OK);
    assert_eq!(loss_set(c"mlx5_0", 0.0), UCS_OK);
    assert_eq!(loss_set(c"mlx5_1", 0.0), UCS_OK);
    pair.close();
}
