//! Purge cost per outstanding operation (issue 5, point 8).
//!
//! Four soft devices in this process: rail 0 (mlx5_0 → mlx5_1) carries the
//! outstanding operations, rail 1 (mlx5_2 → mlx5_3) takes the replays. Each
//! trial connects a fresh rail-0 ep pair, enables failover, pulls rail 0's
//! cable (so nothing is delivered or acknowledged), posts N short AMs,
//! invalidates the ep with NO_COMPLETIONS (no need to wait out the retry
//! timer: the purge walk is the same), turns the TX token into an RX token
//! and times `uct_ep_outstanding_purge` alone. The callback either does
//! nothing or replays the AM on rail 1 (`uct_ep_am_short`).
//!
//! Run: `cargo bench --bench failover_purge -- [--reps R] [--csv]`.
//! Prints one line per (N, callback): median and min ns per op over R trials.

#[path = "../tests/failover_rc_common/mod.rs"]
mod failover_rc_common;
#[path = "../tests/rc_common/mod.rs"]
mod rc_common;

use std::ffi::{c_uint, c_void, CStr};
use std::ptr::null_mut;
use std::time::{Duration, Instant};

use failover_rc_common::*;
use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;
use uct::api::iface::uct_iface_set_am_handler;
use uct::api::soft_hca::uct_soft_hca_link_set;
use uct::api::v2::uct_ep_failover_enable;

const AM_ID: u8 = 1;
const PAYLOAD: [u8; 32] = [0x5a; 32];

unsafe extern "C" fn drop_am(_: *mut c_void, _: *mut c_void, _: usize, _: c_uint) -> ucs_status_t {
    UCS_OK
}

/// Purge callback that only counts.
unsafe extern "C" fn count_only(_: *const uct_ep_op_info_t, arg: *mut c_void) {
    // SAFETY: arg is the trial's Replay.
    let replay = unsafe { &mut *(arg as *mut Replay) };
    replay.reported += 1;
}

/// Purge callback that posts the reported AM again on rail 1.
unsafe extern "C" fn replay_on_rail1(info: *const uct_ep_op_info_t, arg: *mut c_void) {
    // SAFETY: the library passes a valid op_info; arg is the trial's Replay.
    let (info, replay) = unsafe { (&*info, &mut *(arg as *mut Replay)) };
    replay.reported += 1;
    if info.field_mask & UCT_EP_OP_INFO_FIELD_AM == 0 {
        replay.failed += 1;
        return;
    }
    // SAFETY: the AM field bit is set, so `detail.am` is the active member;
    // the payload is valid during the callback.
    let status = unsafe {
        let am = info.detail.am;
        uct_ep_am_short(
            replay.ep,
            am.am_id,
            am.header.value,
            am.payload.data.buffer,
            am.payload.data.length as c_uint,
        )
    };
    if status != UCS_OK {
        replay.failed += 1;
    }
}

struct Replay {
    ep: uct_ep_h,
    reported: usize,
    failed: usize,
}

struct Rig {
    s0: Side,
    r0: Side,
    s1: Side,
    r1: Side,
    ep_s1: uct_ep_h,
    ep_r1: uct_ep_h,
    tx_len: usize,
    rx_len: usize,
}

fn connect(a: &Side, b: &Side) -> (uct_ep_h, uct_ep_h) {
    let (ep_a, ep_b) = (a.create_ep(), b.create_ep());
    let (dev_a, dev_b) = (a.device_address(), b.device_address());
    let (addr_a, addr_b) = (a.ep_address(ep_a), b.ep_address(ep_b));
    // SAFETY: addresses from the peer's iface and ep.
    unsafe {
        assert_eq!(
            uct_ep_connect_to_ep(ep_a, dev_b.as_ptr().cast(), addr_b.as_ptr().cast()),
            UCS_OK
        );
        assert_eq!(
            uct_ep_connect_to_ep(ep_b, dev_a.as_ptr().cast(), addr_a.as_ptr().cast()),
            UCS_OK
        );
    }
    (ep_a, ep_b)
}

impl Rig {
    fn open() -> Rig {
        setup();
        std::env::set_var(
            "UCX_SOFT_HCA_DEVICES",
            "mlx5_0@127.0.0.1,mlx5_1@127.0.0.2,mlx5_2@127.0.0.3,mlx5_3@127.0.0.4",
        );
        let s0 = Side::open(c"mlx5_0", c"mlx5_0:1", None);
        let r0 = Side::open(c"mlx5_1", c"mlx5_1:1", None);
        let s1 = Side::open(c"mlx5_2", c"mlx5_2:1", None);
        let r1 = Side::open(c"mlx5_3", c"mlx5_3:1", None);
        for side in [&r0, &r1] {
            // SAFETY: live iface; the handler takes no argument.
            let status = unsafe {
                uct_iface_set_am_handler(side.iface, AM_ID, Some(drop_am), null_mut(), 0)
            };
            assert_eq!(status, UCS_OK);
        }
        let (ep_s1, ep_r1) = connect(&s1, &r1);
        let (_, tx_len, rx_len) = token_caps(s0.iface);
        Rig {
            s0,
            r0,
            s1,
            r1,
            ep_s1,
            ep_r1,
            tx_len,
            rx_len,
        }
    }

    /// Waits until rail 1 has delivered every replay, so the next trial
    /// starts with an empty rail-1 ring.
    fn drain_rail1(&self) {
        let start = Instant::now();
        loop {
            // SAFETY: live ep; no completion.
            let status = unsafe { uct_ep_flush(self.ep_s1, 0, null_mut()) };
            if status == UCS_OK {
                return;
            }
            assert!(
                status == UCS_INPROGRESS || status == UCS_ERR_NO_RESOURCE,
                "rail 1 flush: {status}"
            );
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "rail 1 never drained"
            );
            self.s1.progress();
            self.r1.progress();
        }
    }

    /// One trial: `n` outstanding AMs (`None`: as many as the ep takes).
    /// Returns (ops outstanding, purge time).
    fn trial(
        &self,
        n: Option<usize>,
        cb: unsafe extern "C" fn(*const uct_ep_op_info_t, *mut c_void),
    ) -> (usize, Duration) {
        let cut: &CStr = c"mlx5_0";
        let (ep_s0, ep_r0) = connect(&self.s0, &self.r0);
        // SAFETY: live ep; the device name is a valid C string.
        unsafe {
            assert_eq!(uct_ep_failover_enable(ep_s0), UCS_OK);
            assert_eq!(uct_soft_hca_link_set(cut.as_ptr(), 0), UCS_OK);
        }
        let mut posted = 0usize;
        while n.is_none_or(|n| posted < n) {
            // SAFETY: live ep; PAYLOAD outlives the call.
            let status = unsafe {
                uct_ep_am_short(
                    ep_s0,
                    AM_ID,
                    posted as u64,
                    PAYLOAD.as_ptr().cast(),
                    PAYLOAD.len() as c_uint,
                )
            };
            match status {
                UCS_OK => posted += 1,
                UCS_ERR_NO_RESOURCE => break,
                other => panic!("am_short on rail 0: {other}"),
            }
        }
        assert!(
            n.is_none_or(|n| posted == n),
            "rail 0 took {posted} of {n:?} ops"
        );
        let tx = tx_token(ep_s0, self.tx_len).expect("TX token");
        let rx = rx_token(self.r0.iface, &tx, self.rx_len).expect("RX token");
        assert_eq!(
            invalidate(ep_s0, UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS),
            UCS_OK
        );
        let mut replay = Replay {
            ep: self.ep_s1,
            reported: 0,
            failed: 0,
        };
        let start = Instant::now();
        let status = purge(ep_s0, &rx, cb, (&mut replay as *mut Replay).cast());
        let elapsed = start.elapsed();
        assert_eq!(status, UCS_OK, "purge");
        assert_eq!(replay.reported, posted, "ops reported by the purge");
        assert_eq!(replay.failed, 0, "replays refused by rail 1");
        // SAFETY: live eps, destroyed once; the device name is valid.
        unsafe {
            uct_ep_destroy(ep_s0);
            uct_ep_destroy(ep_r0);
            assert_eq!(uct_soft_hca_link_set(cut.as_ptr(), 1), UCS_OK);
        }
        self.drain_rail1();
        (posted, elapsed)
    }

    fn close(self) {
        // SAFETY: live eps, destroyed once before their ifaces.
        unsafe {
            uct_ep_destroy(self.ep_s1);
            uct_ep_destroy(self.ep_r1);
        }
        for side in [self.s0, self.r0, self.s1, self.r1] {
            side.close();
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reps = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(30)
        .max(1);
    let csv = args.iter().any(|a| a == "--csv");

    let rig = Rig::open();
    // The most one ep holds before NO_RESOURCE: the top of the range.
    let (ring, _) = rig.trial(None, count_only);
    let mut sizes: Vec<usize> = std::iter::successors(Some(1usize), |n| Some(n * 2))
        .take_while(|&n| n < ring)
        .collect();
    sizes.push(ring);

    if csv {
        println!("outstanding,callback,median_ns_per_op,min_ns_per_op,median_us_total");
    } else {
        println!("# rc_mlx5 on the soft HCA; one ep holds at most {ring} outstanding short AMs");
        println!("# {reps} trials per row; time of uct_ep_outstanding_purge only");
        println!(
            "{:>11} {:>8} {:>16} {:>13} {:>17}",
            "outstanding", "callback", "median ns/op", "min ns/op", "median total us"
        );
    }
    type PurgeCb = unsafe extern "C" fn(*const uct_ep_op_info_t, *mut c_void);
    let callbacks: [(&str, PurgeCb); 2] = [("none", count_only), ("replay", replay_on_rail1)];
    for &n in &sizes {
        for (name, cb) in callbacks {
            let mut per_op: Vec<f64> = (0..reps)
                .map(|_| {
                    let (posted, elapsed) = rig.trial(Some(n), cb);
                    elapsed.as_nanos() as f64 / posted as f64
                })
                .collect();
            per_op.sort_by(f64::total_cmp);
            let median = per_op[per_op.len() / 2];
            let min = per_op[0];
            let total_us = median * n as f64 / 1000.0;
            if csv {
                println!("{n},{name},{median:.0},{min:.0},{total_us:.1}");
            } else {
                println!("{n:>11} {name:>8} {median:>16.0} {min:>13.0} {total_us:>17.1}");
            }
        }
    }
    rig.close();
}
