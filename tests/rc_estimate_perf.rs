//! `uct_iface_estimate_perf` on rc_mlx5 in a process without UCX's
//! libraries: the caller uses our headers' (UCX master's) `uct_perf_attr_t`.
//! (`abi_caller_version.rs` covers the UCX 1.13 layout.)

mod rc_common;

use std::mem::offset_of;

use rc_common::*;
use uct::abi::*;
use uct::api::v2::uct_iface_estimate_perf;

const ALL_OUTPUTS: u64 = UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD
    | UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD
    | UCT_PERF_ATTR_FIELD_RECV_OVERHEAD
    | UCT_PERF_ATTR_FIELD_BANDWIDTH
    | UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH
    | UCT_PERF_ATTR_FIELD_LATENCY
    | UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS
    | UCT_PERF_ATTR_FIELD_FLAGS;

/// The estimate of `operation` (None: no OPERATION field), all outputs asked.
fn estimate(side: &Side, operation: Option<uct_ep_operation_t>) -> uct_perf_attr_t {
    // SAFETY: plain data, all-zero valid.
    let mut attr: uct_perf_attr_t = unsafe { std::mem::zeroed() };
    attr.field_mask = ALL_OUTPUTS;
    if let Some(op) = operation {
        attr.field_mask |= UCT_PERF_ATTR_FIELD_OPERATION;
        attr.operation = op;
    }
    attr.flags = u64::MAX;
    // SAFETY: a live iface and a complete struct.
    let status = unsafe { uct_iface_estimate_perf(side.iface, &mut attr) };
    assert_eq!(status, UCS_OK);
    attr
}

#[test]
fn estimates_follow_ucx_rc_mlx5_per_operation() {
    let side = Side::open(c"mlx5_0", c"mlx5_0:1", None);
    let general = estimate(&side, None);
    let bcopy = estimate(&side, Some(UCT_EP_OP_AM_BCOPY));
    let zcopy = estimate(&side, Some(UCT_EP_OP_PUT_ZCOPY));
    let short = estimate(&side, Some(UCT_EP_OP_PUT_SHORT));

    // Default UCX_RC_MLX5_SEND_OVERHEAD: bcopy 5ns, cqe 20ns, db 40ns,
    // wqe_fetch 350ns, wqe_post 40ns.
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    assert!(close(short.send_pre_overhead, 40e-9), "{short:?}");
    assert!(close(bcopy.send_pre_overhead, 45e-9), "{bcopy:?}");
    assert!(close(short.send_post_overhead, 40e-9));
    assert!(close(zcopy.send_post_overhead, 60e-9), "{zcopy:?}");
    // The iface's own figures, as UCX reports them.
    assert!(close(general.recv_overhead, side.attr.overhead));
    assert_eq!(general.bandwidth, side.attr.bandwidth);
    assert_eq!(general.path_bandwidth.dedicated, 0.0);
    assert_eq!(general.path_bandwidth.shared, side.attr.bandwidth.shared);
    assert_eq!(short.latency, side.attr.latency);
    assert!(close(zcopy.latency.c, side.attr.latency.c + 350e-9));
    assert!(close(bcopy.latency.c, side.attr.latency.c + 350e-9));
    // RC_TX_CQ_LEN 4096 / TX_QUEUE_LEN 256.
    assert_eq!(general.max_inflight_eps, 16);
    assert_eq!(general.flags, 0);
    side.close();
}

#[test]
fn only_asked_fields_are_written() {
    let side = Side::open(c"mlx5_0", c"mlx5_0:1", None);
    // SAFETY: plain data.
    let mut attr: uct_perf_attr_t = unsafe { std::mem::zeroed() };
    attr.field_mask = UCT_PERF_ATTR_FIELD_LATENCY;
    attr.send_pre_overhead = -1.0;
    attr.max_inflight_eps = 7;
    // SAFETY: live iface, complete struct.
    assert_eq!(
        unsafe { uct_iface_estimate_perf(side.iface, &mut attr) },
        UCS_OK
    );
    assert_eq!(attr.latency, side.attr.latency);
    assert_eq!(attr.send_pre_overhead, -1.0);
    assert_eq!(attr.max_inflight_eps, 7);
    assert_eq!(offset_of!(uct_perf_attr_t, latency), 80);
    side.close();
}

#[test]
fn bad_arguments_are_refused() {
    let side = Side::open(c"mlx5_0", c"mlx5_0:1", None);
    // SAFETY: plain data.
    let mut attr: uct_perf_attr_t = unsafe { std::mem::zeroed() };
    attr.field_mask = UCT_PERF_ATTR_FIELD_OPERATION | UCT_PERF_ATTR_FIELD_LATENCY;
    attr.operation = UCT_EP_OP_LAST + 1;
    // SAFETY: each call gets a live iface or NULL, and a struct or NULL.
    unsafe {
        assert_eq!(
            uct_iface_estimate_perf(side.iface, &mut attr),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_iface_estimate_perf(side.iface, std::ptr::null_mut()),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_iface_estimate_perf(std::ptr::null_mut(), &mut attr),
            UCS_ERR_INVALID_PARAM
        );
    }
    side.close();
}
