//! One large RDMA READ and WRITE at a time through rc_mlx5 on two soft
//! devices of this process (the same-host, shared-memory wire, as UCX's
//! gtest runs them): `uct_ep_get_zcopy` and `uct_ep_put_zcopy` of one
//! message, 1 GiB by default, timed from the post to its completion
//! callback, with the data checked afterwards (outside the time).
//!
//! Run: `cargo bench --bench large_transfer -- [--mib N] [--reps R]`.
//! Prints per op the best and median time over R runs and the bandwidth of
//! the median, then the ports' counters (`tx_ring_full`: flushes that found
//! the peer's ring full and held datagrams back; `tx_errors`: datagrams
//! lost on send, which must stay 0).

#[path = "../tests/rc_common/mod.rs"]
mod rc_common;

use std::time::{Duration, Instant};

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::hca::Device;

fn argument(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Posts one zcopy op with `post` and waits for its completion.
fn timed(pair: &Pair, post: impl FnOnce(*mut uct_completion_t) -> ucs_status_t) -> Duration {
    let mut comp = CountingCompletion::new(1);
    let start = Instant::now();
    let status = post(comp.as_ptr());
    assert_eq!(status, UCS_INPROGRESS);
    while comp.calls() == 0 {
        pair.progress();
    }
    let elapsed = start.elapsed();
    assert_eq!(comp.status(), UCS_OK);
    elapsed
}

fn report(op: &str, len: usize, mut times: Vec<Duration>) {
    times.sort();
    let median = times[times.len() / 2];
    println!(
        "{op:<10} {:>6} MiB  best {:>9.1} ms  median {:>9.1} ms  {:>7.0} MB/s",
        len >> 20,
        times[0].as_secs_f64() * 1e3,
        median.as_secs_f64() * 1e3,
        len as f64 / median.as_secs_f64() / 1e6
    );
}

fn main() {
    let len = argument("--mib", 1024) << 20;
    let reps = argument("--reps", 3).max(1);
    let pair = Pair::new();
    let mut remote: Vec<u8> = (0..len).map(|i| (i as u8) ^ (i >> 20) as u8).collect();
    let mut local = vec![0u8; len];
    let (remote_memh, rkey) = pair.b.register(remote.as_mut_ptr(), len);
    let (local_memh, _) = pair.a.register(local.as_mut_ptr(), len);
    let iov = [iov_entry(local.as_mut_ptr(), len, local_memh)];
    let raddr = remote.as_ptr() as u64;

    let gets = (0..reps)
        .map(|_| timed(&pair, |comp| get_zcopy(pair.ep_a, &iov, raddr, rkey, comp)))
        .collect();
    assert!(local == remote, "get_zcopy: the data differs");
    report("get_zcopy", len, gets);

    local.iter_mut().for_each(|b| *b = !*b);
    let puts = (0..reps)
        .map(|_| timed(&pair, |comp| put_zcopy(pair.ep_a, &iov, raddr, rkey, comp)))
        .collect();
    assert!(local == remote, "put_zcopy: the data differs");
    report("put_zcopy", len, puts);

    for name in ["mlx5_0", "mlx5_1"] {
        if let Ok(Device::Soft(device)) = Device::open(name) {
            let stats = device.link_stats();
            println!(
                "{name}: tx_packets {} tx_shm {} tx_ring_full {} tx_errors {}",
                stats.tx_packets, stats.tx_shm, stats.tx_ring_full, stats.tx_errors
            );
        }
    }
    assert_eq!(mem_dereg(pair.a.md, local_memh), UCS_OK);
    assert_eq!(mem_dereg(pair.b.md, remote_memh), UCS_OK);
    pair.close();
}
