//! The query slots: iface attributes (v1 and the generic part of v2),
//! device and iface addresses, reachability.

use std::ffi::c_int;

use super::args::{
    null_argument, slot, status_of, CBytes, IfaceArg, InBytes, Out, OutBytes, PeerAddress,
    IFACE_ADDR_LEN,
};
use crate::abi::*;
use crate::core::iface::PerfEstimate;
use crate::hca::DeviceAddress;
use crate::rc::ep::EP_ADDR_LEN;
use crate::rc::iface::RcIface;
use crate::rc::limits::AM_ZCOPY_MAX_IOV;

/// The capability flags of what works today.
pub const CAP_FLAGS: u64 = UCT_IFACE_FLAG_AM_SHORT
    | UCT_IFACE_FLAG_AM_BCOPY
    | UCT_IFACE_FLAG_AM_ZCOPY
    | UCT_IFACE_FLAG_EP_CHECK
    | UCT_IFACE_FLAG_PUT_SHORT
    | UCT_IFACE_FLAG_PUT_BCOPY
    | UCT_IFACE_FLAG_PUT_ZCOPY
    | UCT_IFACE_FLAG_GET_SHORT
    | UCT_IFACE_FLAG_GET_BCOPY
    | UCT_IFACE_FLAG_GET_ZCOPY
    | UCT_IFACE_FLAG_PENDING
    | UCT_IFACE_FLAG_CONNECT_TO_EP
    | crate::rc::iface::CALLBACK_CAPS
    | UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE
    // A zcopy buffer outside its registration is refused when posted; one
    // the device cannot access locally, or remote memory the peer refuses,
    // fails the ep through the error handler (rc::iface::tx), as UCX's
    // rc_mlx5 reports both.
    | UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF
    | UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM
    | UCT_IFACE_FLAG_INTER_NODE;

/// Event capabilities.
pub const EVENT_FLAGS: u64 =
    UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV | UCT_IFACE_FLAG_EVENT_FD;

/// The only iface address type (UCX 1.13's rc_mlx5
/// `UCT_RC_MLX5_IFACE_ADDR_TYPE_BASIC`; a peer with hardware tag matching
/// sends another type and is not reachable).
const IFACE_ADDR_TYPE_BASIC: u8 = 0;

slot! {
    fn iface_get_device_address(iface: uct_iface_h, addr: *mut uct_device_addr_t) -> ucs_status_t;
    take iface: IfaceArg = (iface),
        addr: OutBytes<'_, { DeviceAddress::MAX_PACKED_LEN }> = (addr);
    {
        const F: &str = "uct_iface_get_device_address";
        status_of(iface.get(F).and_then(|rc| {
            if addr.is_null() {
                return Err(null_argument(F, "addr"));
            }
            // All `device_addr_len` bytes are written, the unused tail as
            // zeros: callers send the whole reported length to the peer.
            let mut packed = [0u8; DeviceAddress::MAX_PACKED_LEN];
            rc.state.address().pack_with_mtu(rc.state.path_mtu(), &mut packed)?;
            addr.write(F, "addr", packed)
        }))
    }
}

slot! {
    fn iface_get_address(iface: uct_iface_h, addr: *mut uct_iface_addr_t) -> ucs_status_t;
    take iface: IfaceArg = (iface), addr: OutBytes<'_, IFACE_ADDR_LEN> = (addr);
    {
        // rc connects ep to ep; the iface address is UCX 1.13 rc_mlx5's one
        // byte, its address type: basic (no hardware tag matching).
        const F: &str = "uct_iface_get_address";
        status_of(iface.get(F).and_then(|_| addr.write(F, "addr", [IFACE_ADDR_TYPE_BASIC])))
    }
}

/// Whether a peer's iface address (NULL: not given) is of a type we talk to.
fn iface_addr_reachable(iface_addr: InBytes<'_, IFACE_ADDR_LEN>) -> bool {
    iface_addr
        .get()
        .is_none_or(|&[kind]| kind == IFACE_ADDR_TYPE_BASIC)
}

/// Whether a peer's device address is one we can reach.
fn device_reachable(dev_addr: CBytes) -> bool {
    !dev_addr.is_null()
        && dev_addr
            .get("")
            .is_ok_and(|bytes| DeviceAddress::unpack(bytes).is_ok())
}

slot! {
    fn iface_is_reachable(
        iface: uct_iface_h,
        dev_addr: *const uct_device_addr_t,
        iface_addr: *const uct_iface_addr_t,
    ) -> c_int;
    // Addresses as our iface reports their lengths.
    take iface: IfaceArg = (iface),
        dev_addr: InBytes<'_, { DeviceAddress::MAX_PACKED_LEN }> = (dev_addr),
        iface_addr: InBytes<'_, IFACE_ADDR_LEN> = (iface_addr);
    {
        let reachable = iface.get("uct_iface_is_reachable").is_ok()
            && iface_addr_reachable(iface_addr)
            && device_reachable(dev_addr.into());
        c_int::from(reachable)
    }
}

slot! {
    internal fn iface_is_reachable_v2(
        iface: uct_iface_h,
        params: &uct_iface_is_reachable_params_t,
    ) -> bool;
    take iface: IfaceArg = (iface), peer: PeerAddress = (params);
    {
        // Without a device address (its bit not set) nothing is reachable.
        iface.get("uct_iface_is_reachable_v2").is_ok()
            && iface_addr_reachable(peer.iface)
            && device_reachable(peer.device)
    }
}

/// The `uct_iface_attr_t` of an iface.
pub fn attributes(rc: &RcIface) -> uct_iface_attr_t {
    let limits = rc.state.limits();
    // SAFETY: uct_iface_attr_t is plain data (numbers, a sockaddr_storage);
    // all-zero is a valid value of every field.
    let mut attr: uct_iface_attr_t = unsafe { std::mem::zeroed() };
    let mtu = rc.state.path_mtu().bytes() as usize;
    let rma = |max_short, max_bcopy, min_zcopy| uct_iface_attr_cap_rma {
        max_short,
        max_bcopy,
        min_zcopy,
        max_zcopy: limits.max_zcopy(),
        opt_zcopy_align: 512,
        align_mtu: mtu,
        max_iov: limits.max_iov(),
    };
    // As UCX's rc_mlx5: a get_zcopy moves at least a byte (its reads too
    // short for a CQE's inline response: none, here).
    attr.cap.put = rma(limits.put_max_short(), limits.put_max_bcopy(), 0);
    attr.cap.get = rma(limits.get_max_short(), limits.get_max_bcopy(), 1);
    attr.cap.am.max_short = limits.am_max_short();
    attr.cap.am.max_bcopy = limits.am_max_bcopy();
    attr.cap.am.min_zcopy = 0;
    attr.cap.am.max_zcopy = limits.am_max_zcopy();
    attr.cap.am.opt_zcopy_align = 512;
    attr.cap.am.align_mtu = mtu;
    attr.cap.am.max_hdr = limits.am_max_hdr();
    attr.cap.am.max_iov = AM_ZCOPY_MAX_IOV;
    attr.cap.flags = CAP_FLAGS;
    crate::rc::atomic::advertise(&mut attr, rc.state.domain().device.attr().atomics);
    attr.cap.event_flags = EVENT_FLAGS;
    attr.device_addr_len = DeviceAddress::MAX_PACKED_LEN;
    attr.iface_addr_len = IFACE_ADDR_LEN;
    attr.ep_addr_len = EP_ADDR_LEN;
    attr.max_conn_priv = 0;
    // Estimates for the soft HCA (RoCEv2 over UDP in software).
    attr.overhead = 40e-9;
    attr.bandwidth = uct_ppn_bandwidth_t {
        dedicated: 0.0,
        shared: 1.0e9,
    };
    attr.latency = ucs_linear_func_t { c: 10e-6, m: 1e-9 };
    attr.priority = 0;
    attr.max_num_eps = usize::MAX;
    attr.dev_num_paths = 1;
    attr.ctl_device = UCS_SYS_DEVICE_ID_UNKNOWN;
    attr
}

slot! {
    fn iface_query(iface: uct_iface_h, iface_attr: *mut uct_iface_attr_t) -> ucs_status_t;
    // Writable for sizeof(uct_iface_attr_t): 536 bytes in 1.13 and master,
    // our struct's size.
    take iface: IfaceArg = (iface), iface_attr: Out<uct_iface_attr_t> = (iface_attr);
    {
        const F: &str = "uct_iface_query";
        status_of(iface.get(F).and_then(|rc| {
            iface_attr.write(F, "iface_attr", attributes(rc))
        }))
    }
}

/// Which of UCX's send-cost classes an operation falls in.
fn is_bcopy(op: uct_ep_operation_t) -> bool {
    matches!(
        op,
        UCT_EP_OP_AM_BCOPY | UCT_EP_OP_PUT_BCOPY | UCT_EP_OP_GET_BCOPY | UCT_EP_OP_EAGER_BCOPY
    )
}

fn is_zcopy(op: uct_ep_operation_t) -> bool {
    matches!(
        op,
        UCT_EP_OP_AM_ZCOPY
            | UCT_EP_OP_PUT_ZCOPY
            | UCT_EP_OP_GET_ZCOPY
            | UCT_EP_OP_EAGER_ZCOPY
            | UCT_EP_OP_RNDV_ZCOPY
    )
}

/// UCX's rc_mlx5 estimate, from this iface's attributes and its
/// `SEND_OVERHEAD` and queue settings: preparing a WQE (plus the copy of a
/// bcopy) before the doorbell; the doorbell (plus reaping the completion of
/// a zcopy) after it; the iface overhead to receive; the iface bandwidth
/// (one path: the whole bandwidth, shared); the iface latency, plus the
/// device's WQE fetch for operations whose data the device reads from
/// memory; send-CQ entries per send queue as inflight eps.
pub fn estimate(rc: &RcIface, operation: Option<uct_ep_operation_t>) -> PerfEstimate {
    let attr = attributes(rc);
    let limits = rc.state.limits();
    let cost = &limits.send_overhead();
    let bcopy = operation.is_some_and(is_bcopy);
    let zcopy = operation.is_some_and(is_zcopy);
    let mut latency = attr.latency;
    if bcopy || zcopy {
        latency.c += cost.wqe_fetch;
    }
    PerfEstimate {
        send_pre_overhead: cost.wqe_post + if bcopy { cost.bcopy } else { 0.0 },
        send_post_overhead: cost.db + if zcopy { cost.cqe } else { 0.0 },
        recv_overhead: attr.overhead,
        bandwidth: attr.bandwidth,
        path_bandwidth: uct_ppn_bandwidth_t {
            dedicated: 0.0,
            shared: attr.bandwidth.shared,
        },
        latency,
        max_inflight_eps: limits.max_inflight_eps(),
    }
}

slot! {
    internal fn iface_estimate_perf(
        iface: uct_iface_h,
        operation: Option<uct_ep_operation_t>,
    ) -> Result<PerfEstimate, Status>;
    take iface: IfaceArg = (iface);
    {
        Ok(estimate(iface.get("uct_iface_estimate_perf")?, operation))
    }
}
