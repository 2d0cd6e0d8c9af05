//! What every iface of ours starts with ([`BaseIface`]): the public ops table
//! (binary ABI), then what tells the handle ours and what the generic entry
//! points need — the md and worker, and the table of operations that UCX
//! keeps outside the public ops (v2 queries, failover, the AM handler
//! table), which the `uct_iface_query_v2` / `uct_ep_*` v2 /
//! `uct_iface_set_am_*` entry points dispatch through.
//!
//! An iface is `#[repr(C)] struct XIface { base: BaseIface, … }` (a
//! transport's through `crate::uct::iface::IfaceBase`, which starts with
//! one), so a `uct_iface_h` of ours is always a `*mut BaseIface`.

use std::ffi::{c_uint, c_void};

use crate::abi::*;
use crate::core::c_boundary::{masked_write, FromC, MaskedOut};
use crate::core::ops::unsupported_iface_ops;

/// Tag right after the ops table, to recognise our ifaces.
const BASE_IFACE_MAGIC: u64 = 0x7563_745f_6966_6163; // "uct_ifac"

/// The caller's purge callback and its argument (`uct_ep_outstanding_purge`).
#[derive(Clone, Copy, Debug)]
pub struct PurgeCallback {
    pub cb: unsafe extern "C" fn(op_info: *const uct_ep_op_info_t, arg: *mut c_void),
    pub arg: *mut c_void,
}

impl PurgeCallback {
    /// `None` when `cb` is NULL.
    pub fn new(cb: uct_ep_outstanding_purge_callback_t, arg: *mut c_void) -> Option<PurgeCallback> {
        cb.map(|cb| PurgeCallback { cb, arg })
    }
}

/// A checked `uct_ep_outstanding_purge` request, built once by the entry
/// point (`api/v2.rs`: RX_TOKEN and CB set, neither NULL), so that the
/// transport and the failover core read no C struct.
#[derive(Clone, Copy, Debug)]
pub struct PurgeRequest<'a> {
    /// The peer's RX token: its full length as the iface reports it.
    pub rx_token: &'a [u8],
    pub callback: PurgeCallback,
}

/// A transport's performance estimate of one operation
/// (`uct_iface_estimate_perf`), in seconds and bytes per second, before it
/// is written into the caller's version of `uct_perf_attr_t`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerfEstimate {
    pub send_pre_overhead: f64,
    pub send_post_overhead: f64,
    pub recv_overhead: f64,
    pub bandwidth: uct_ppn_bandwidth_t,
    pub path_bandwidth: uct_ppn_bandwidth_t,
    pub latency: ucs_linear_func_t,
    pub max_inflight_eps: usize,
}

/// Operations of an iface that are not in UCX's public table. Each receives
/// arguments the entry point has already validated (non-NULL, known field
/// bits). Rust ABI: only our own code calls them.
pub struct IfaceInternalOps {
    pub iface_query_v2:
        unsafe fn(iface: uct_iface_h, attr: *mut uct_iface_attr_v2_t) -> Result<(), Status>,
    pub iface_is_reachable_v2:
        unsafe fn(iface: uct_iface_h, params: &uct_iface_is_reachable_params_t) -> bool,
    pub ep_query: unsafe fn(ep: uct_ep_h, attr: *mut uct_ep_attr_t) -> Result<(), Status>,
    pub ep_invalidate: unsafe fn(ep: uct_ep_h, flags: c_uint) -> Result<(), Status>,
    pub ep_failover_enable: unsafe fn(ep: uct_ep_h) -> Result<(), Status>,
    pub ep_outstanding_purge:
        unsafe fn(ep: uct_ep_h, request: PurgeRequest<'_>) -> Result<(), Status>,
    pub ep_connect_to_ep_v2: unsafe fn(
        ep: uct_ep_h,
        device_addr: *const uct_device_addr_t,
        ep_addr: *const uct_ep_addr_t,
        params: &uct_ep_connect_to_ep_params_t,
    ) -> Result<(), Status>,
    pub ep_is_connected: unsafe fn(ep: uct_ep_h, params: &uct_ep_is_connected_params_t) -> bool,
    /// The estimate for `operation` (`None`: the caller named none).
    pub iface_estimate_perf: unsafe fn(
        iface: uct_iface_h,
        operation: Option<uct_ep_operation_t>,
    ) -> Result<PerfEstimate, Status>,
    /// `uct_iface_set_am_handler` (the id not checked yet).
    pub iface_set_am_handler: unsafe fn(
        iface: uct_iface_h,
        id: u8,
        cb: uct_am_callback_t,
        arg: *mut c_void,
        flags: u32,
    ) -> Result<(), Status>,
    /// `uct_iface_set_am_tracer`.
    pub iface_set_am_tracer: unsafe fn(
        iface: uct_iface_h,
        tracer: uct_am_tracer_t,
        arg: *mut c_void,
    ) -> Result<(), Status>,
}

mod unsupported {
    use super::*;

    fn unsupported(operation: &str) -> Result<(), Status> {
        tracing::debug!("{operation}: not supported by this transport");
        Err(Status::Unsupported)
    }

    pub unsafe fn iface_query_v2(
        _: uct_iface_h,
        attr: *mut uct_iface_attr_v2_t,
    ) -> Result<(), Status> {
        // SAFETY: the entry point checked that attr is non-NULL and valid
        // for its field mask.
        query_v2_defaults(&unsafe { MaskedOut::from_c(attr) })
    }
    pub unsafe fn iface_is_reachable_v2(
        _: uct_iface_h,
        _: &uct_iface_is_reachable_params_t,
    ) -> bool {
        false
    }
    pub unsafe fn ep_query(_: uct_ep_h, _: *mut uct_ep_attr_t) -> Result<(), Status> {
        unsupported("uct_ep_query")
    }
    pub unsafe fn ep_invalidate(_: uct_ep_h, _: c_uint) -> Result<(), Status> {
        unsupported("uct_ep_invalidate")
    }
    pub unsafe fn ep_failover_enable(_: uct_ep_h) -> Result<(), Status> {
        unsupported("uct_ep_failover_enable")
    }
    pub unsafe fn ep_outstanding_purge(_: uct_ep_h, _: PurgeRequest<'_>) -> Result<(), Status> {
        unsupported("uct_ep_outstanding_purge")
    }
    pub unsafe fn ep_connect_to_ep_v2(
        _: uct_ep_h,
        _: *const uct_device_addr_t,
        _: *const uct_ep_addr_t,
        _: &uct_ep_connect_to_ep_params_t,
    ) -> Result<(), Status> {
        unsupported("uct_ep_connect_to_ep_v2")
    }
    pub unsafe fn ep_is_connected(_: uct_ep_h, _: &uct_ep_is_connected_params_t) -> bool {
        false
    }
    pub unsafe fn iface_estimate_perf(
        _: uct_iface_h,
        _: Option<uct_ep_operation_t>,
    ) -> Result<PerfEstimate, Status> {
        tracing::debug!("uct_iface_estimate_perf: not supported by this transport");
        Err(Status::Unsupported)
    }
    pub unsafe fn iface_set_am_handler(
        _: uct_iface_h,
        _: u8,
        _: uct_am_callback_t,
        _: *mut c_void,
        _: u32,
    ) -> Result<(), Status> {
        unsupported("uct_iface_set_am_handler")
    }
    pub unsafe fn iface_set_am_tracer(
        _: uct_iface_h,
        _: uct_am_tracer_t,
        _: *mut c_void,
    ) -> Result<(), Status> {
        unsupported("uct_iface_set_am_tracer")
    }
}

/// The `uct_iface_query_v2` answer of an iface without v2 features: no
/// `UCT_IFACE_FLAG_V2_*` capability, no scatter-gather, and `Unsupported` if
/// any token field is asked for (as UCX's base iface answers). Transports call
/// it first and then add what they support.
pub(crate) fn query_v2_defaults(attr: &MaskedOut<uct_iface_attr_v2_t>) -> Result<(), Status> {
    const TOKEN_FIELDS: u64 = UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH
        | UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH
        | UCT_IFACE_ATTR_FIELD_TX_TOKEN
        | UCT_IFACE_ATTR_FIELD_RX_TOKEN;
    let field_mask = attr.tolerant_mask(u64::MAX, "uct_iface_query_v2", "iface_attr")?;
    if field_mask & TOKEN_FIELDS != 0 {
        tracing::debug!("uct_iface_query_v2: tokens are not supported by this transport");
        return Err(Status::Unsupported);
    }
    query_v2_generic(attr)
}

/// The generic fields of [`query_v2_defaults`] without its token refusal,
/// for transports that answer the token fields themselves; each written
/// only when its bit is set (the caller initialised only what it asked
/// for).
pub(crate) fn query_v2_generic(attr: &MaskedOut<uct_iface_attr_v2_t>) -> Result<(), Status> {
    let field_mask = attr.tolerant_mask(u64::MAX, "uct_iface_query_v2", "iface_attr")?;
    masked_write!(attr, field_mask, UCT_IFACE_ATTR_FIELD_CAP_FLAGS => cap.flags = 0);
    masked_write!(attr, field_mask, UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT
        => max_put_sgl_zcopy_count = 0);
    masked_write!(attr, field_mask, UCT_IFACE_ATTR_FIELD_MAX_GET_SGL_ZCOPY_COUNT
        => max_get_sgl_zcopy_count = 0);
    Ok(())
}

/// Internal operations that all report "not supported": the starting point of
/// a transport's table.
pub const UNSUPPORTED_INTERNAL_OPS: IfaceInternalOps = IfaceInternalOps {
    iface_query_v2: unsupported::iface_query_v2,
    iface_is_reachable_v2: unsupported::iface_is_reachable_v2,
    ep_query: unsupported::ep_query,
    ep_invalidate: unsupported::ep_invalidate,
    ep_failover_enable: unsupported::ep_failover_enable,
    ep_outstanding_purge: unsupported::ep_outstanding_purge,
    ep_connect_to_ep_v2: unsupported::ep_connect_to_ep_v2,
    ep_is_connected: unsupported::ep_is_connected,
    iface_estimate_perf: unsupported::iface_estimate_perf,
    iface_set_am_handler: unsupported::iface_set_am_handler,
    iface_set_am_tracer: unsupported::iface_set_am_tracer,
};

/// The common head of every iface we hand out.
#[repr(C)]
pub struct BaseIface {
    /// What C sees through `uct_iface_h`; must stay the first field.
    pub iface: uct_iface,
    magic: u64,
    pub md: uct_md_h,
    pub worker: uct_worker_h,
    pub internal_ops: &'static IfaceInternalOps,
}

impl BaseIface {
    /// A base whose public and internal operations all report "not
    /// supported"; the transport then fills in what it implements.
    pub fn new(md: uct_md_h, worker: uct_worker_h) -> Self {
        Self::with_ops(
            md,
            worker,
            unsupported_iface_ops(),
            &UNSUPPORTED_INTERNAL_OPS,
        )
    }

    pub fn with_ops(
        md: uct_md_h,
        worker: uct_worker_h,
        ops: uct_iface_ops_t,
        internal_ops: &'static IfaceInternalOps,
    ) -> Self {
        Self {
            iface: uct_iface { ops },
            magic: BASE_IFACE_MAGIC,
            md,
            worker,
            internal_ops,
        }
    }

    pub fn is_valid(&self) -> bool {
        self.magic == BASE_IFACE_MAGIC
    }

    /// Marks the iface dead; call before its memory is released.
    pub fn invalidate(&mut self) {
        self.magic = 0;
    }

    pub fn as_handle(&mut self) -> uct_iface_h {
        self as *mut BaseIface as uct_iface_h
    }
}
