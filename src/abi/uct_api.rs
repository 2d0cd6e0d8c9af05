//! `uct/api/uct.h`: the structs, flags and field masks of the UCT API.
//!
//! UCX nests anonymous structs and unions inside some of these; Rust needs
//! names for them, so they appear as separate `uct_<outer>_<member>` types with
//! the same layout. C code addressing members (`attr.cap.put.max_short`) is
//! unaffected.

use core::ffi::{c_char, c_int, c_uint, c_void};

use super::ucs_config::ucs_sock_addr_t;
use super::ucs_cpu_set::ucs_cpu_set_t;
use super::ucs_linear_func::ucs_linear_func_t;
use super::ucs_memory_type::ucs_memory_type_t;
use super::ucs_stats::ucs_stats_node_t;
use super::ucs_status::ucs_status_t;
use super::ucs_time::ucs_time_t;
use super::ucs_topo::ucs_sys_device_t;
use super::uct_def::*;

/// Name of a memory domain, as listed by a component.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_md_resource_desc {
    pub md_name: [c_char; UCT_MD_NAME_MAX],
}
pub type uct_md_resource_desc_t = uct_md_resource_desc;

// uct_component_attr_t::field_mask bits.
pub const UCT_COMPONENT_ATTR_FIELD_NAME: u64 = 0x1;
pub const UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT: u64 = 0x2;
pub const UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES: u64 = 0x4;
pub const UCT_COMPONENT_ATTR_FIELD_FLAGS: u64 = 0x8;

/// What `uct_component_query` reports. The caller sets `md_resources` to an
/// array of `md_resource_count` entries (after a first query for the count).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_component_attr {
    pub field_mask: u64,
    pub name: [c_char; UCT_COMPONENT_NAME_MAX],
    pub md_resource_count: c_uint,
    pub md_resources: *mut uct_md_resource_desc_t,
    pub flags: u64,
}
pub type uct_component_attr_t = uct_component_attr;

// uct_component_attr_t::flags bits.
/// The component can open connection managers.
pub const UCT_COMPONENT_FLAG_CM: u64 = 0x1;
/// Remote keys can be turned into local pointers (`uct_rkey_ptr`).
pub const UCT_COMPONENT_FLAG_RKEY_PTR: u64 = 0x2;

/// Kind of device a transport resource runs on.
pub type uct_device_type_t = c_uint;
/// A network device (an HCA port).
pub const UCT_DEVICE_TYPE_NET: uct_device_type_t = 0;
/// Shared memory.
pub const UCT_DEVICE_TYPE_SHM: uct_device_type_t = 1;
/// An accelerator (GPU).
pub const UCT_DEVICE_TYPE_ACC: uct_device_type_t = 2;
/// Loop-back within the process.
pub const UCT_DEVICE_TYPE_SELF: uct_device_type_t = 3;
pub const UCT_DEVICE_TYPE_LAST: uct_device_type_t = 4;

/// A transport on a device, as listed by `uct_md_query_tl_resources`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_tl_resource_desc {
    pub tl_name: [c_char; UCT_TL_NAME_MAX],
    pub dev_name: [c_char; UCT_DEVICE_NAME_MAX],
    pub dev_type: uct_device_type_t,
    pub sys_device: ucs_sys_device_t,
}
pub type uct_tl_resource_desc_t = uct_tl_resource_desc;

/// Atomic operation selector.
pub type uct_atomic_op_t = c_uint;
pub const UCT_ATOMIC_OP_ADD: uct_atomic_op_t = 0;
pub const UCT_ATOMIC_OP_AND: uct_atomic_op_t = 1;
pub const UCT_ATOMIC_OP_OR: uct_atomic_op_t = 2;
pub const UCT_ATOMIC_OP_XOR: uct_atomic_op_t = 3;
pub const UCT_ATOMIC_OP_SWAP: uct_atomic_op_t = 4;
pub const UCT_ATOMIC_OP_CSWAP: uct_atomic_op_t = 5;
pub const UCT_ATOMIC_OP_LAST: uct_atomic_op_t = 6;

// uct_iface_attr_t::cap.flags bits.
pub const UCT_IFACE_FLAG_AM_SHORT: u64 = 0x1;
pub const UCT_IFACE_FLAG_AM_BCOPY: u64 = 0x2;
pub const UCT_IFACE_FLAG_AM_ZCOPY: u64 = 0x4;
pub const UCT_IFACE_FLAG_PENDING: u64 = 0x8;
pub const UCT_IFACE_FLAG_PUT_SHORT: u64 = 0x10;
pub const UCT_IFACE_FLAG_PUT_BCOPY: u64 = 0x20;
pub const UCT_IFACE_FLAG_PUT_ZCOPY: u64 = 0x40;
pub const UCT_IFACE_FLAG_GET_SHORT: u64 = 0x100;
pub const UCT_IFACE_FLAG_GET_BCOPY: u64 = 0x200;
pub const UCT_IFACE_FLAG_GET_ZCOPY: u64 = 0x400;
pub const UCT_IFACE_FLAG_ATOMIC_CPU: u64 = 0x4000_0000;
pub const UCT_IFACE_FLAG_ATOMIC_DEVICE: u64 = 0x8000_0000;
pub const UCT_IFACE_FLAG_ERRHANDLE_SHORT_BUF: u64 = 0x1_0000_0000;
pub const UCT_IFACE_FLAG_ERRHANDLE_BCOPY_BUF: u64 = 0x2_0000_0000;
pub const UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF: u64 = 0x4_0000_0000;
pub const UCT_IFACE_FLAG_ERRHANDLE_AM_ID: u64 = 0x8_0000_0000;
pub const UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM: u64 = 0x10_0000_0000;
pub const UCT_IFACE_FLAG_ERRHANDLE_BCOPY_LEN: u64 = 0x20_0000_0000;
pub const UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE: u64 = 0x40_0000_0000;
pub const UCT_IFACE_FLAG_EP_CHECK: u64 = 0x80_0000_0000;
pub const UCT_IFACE_FLAG_CONNECT_TO_IFACE: u64 = 0x100_0000_0000;
pub const UCT_IFACE_FLAG_CONNECT_TO_EP: u64 = 0x200_0000_0000;
pub const UCT_IFACE_FLAG_CONNECT_TO_SOCKADDR: u64 = 0x400_0000_0000;
pub const UCT_IFACE_FLAG_AM_DUP: u64 = 0x800_0000_0000;
pub const UCT_IFACE_FLAG_CB_SYNC: u64 = 0x1000_0000_0000;
pub const UCT_IFACE_FLAG_CB_ASYNC: u64 = 0x2000_0000_0000;
pub const UCT_IFACE_FLAG_EP_KEEPALIVE: u64 = 0x4000_0000_0000;
pub const UCT_IFACE_FLAG_TAG_EAGER_SHORT: u64 = 0x4_0000_0000_0000;
pub const UCT_IFACE_FLAG_TAG_EAGER_BCOPY: u64 = 0x8_0000_0000_0000;
pub const UCT_IFACE_FLAG_TAG_EAGER_ZCOPY: u64 = 0x10_0000_0000_0000;
pub const UCT_IFACE_FLAG_TAG_RNDV_ZCOPY: u64 = 0x20_0000_0000_0000;
pub const UCT_IFACE_FLAG_INTER_NODE: u64 = 0x40_0000_0000_0000;
pub const UCT_IFACE_FLAG_DEVICE_EP: u64 = 0x80_0000_0000_0000;
pub const UCT_IFACE_FLAG_DEVICE_LKEY: u64 = 0x100_0000_0000_0000;

// uct_iface_attr_t::cap.event_flags bits.
pub const UCT_IFACE_FLAG_EVENT_SEND_COMP: u64 = 0x1;
pub const UCT_IFACE_FLAG_EVENT_RECV: u64 = 0x2;
pub const UCT_IFACE_FLAG_EVENT_RECV_SIG: u64 = 0x4;
pub const UCT_IFACE_FLAG_EVENT_FD: u64 = 0x8;
pub const UCT_IFACE_FLAG_EVENT_ASYNC_CB: u64 = 0x10;

/// How `uct_mem_alloc` obtains memory.
pub type uct_alloc_method_t = c_uint;
/// Transparent huge pages.
pub const UCT_ALLOC_METHOD_THP: uct_alloc_method_t = 0;
/// Through a memory domain.
pub const UCT_ALLOC_METHOD_MD: uct_alloc_method_t = 1;
pub const UCT_ALLOC_METHOD_HEAP: uct_alloc_method_t = 2;
pub const UCT_ALLOC_METHOD_MMAP: uct_alloc_method_t = 3;
pub const UCT_ALLOC_METHOD_HUGE: uct_alloc_method_t = 4;
pub const UCT_ALLOC_METHOD_LAST: uct_alloc_method_t = 5;
/// Use the configured default list.
pub const UCT_ALLOC_METHOD_DEFAULT: uct_alloc_method_t = 5;

// Event types for uct_iface_event_arm.
pub const UCT_EVENT_SEND_COMP: c_uint = 0x1;
pub const UCT_EVENT_RECV: c_uint = 0x2;
pub const UCT_EVENT_RECV_SIG: c_uint = 0x4;
pub const UCT_EVENT_SPEED_CHANGE: c_uint = 0x8;

// Flush flags.
/// Complete when local buffers may be reused.
pub const UCT_FLUSH_FLAG_LOCAL: c_uint = 0;
/// Cancel outstanding operations (they complete with `UCS_ERR_CANCELED`).
pub const UCT_FLUSH_FLAG_CANCEL: c_uint = 0x1;
/// Complete when remote side has the data.
pub const UCT_FLUSH_FLAG_REMOTE: c_uint = 0x2;

// Progress types for uct_iface_progress_enable/disable.
pub const UCT_PROGRESS_SEND: c_uint = 0x1;
pub const UCT_PROGRESS_RECV: c_uint = 0x2;
pub const UCT_PROGRESS_THREAD_SAFE: c_uint = 0x80;

// Send flags.
pub const UCT_SEND_FLAG_SIGNALED: c_uint = 0x1;
pub const UCT_SEND_FLAG_PEER_CHECK: c_uint = 0x2;

// Callback flags (uct_iface_set_am_handler, err_handler_flags).
pub const UCT_CB_FLAG_RESERVED: u32 = 0x2;
/// The callback may be called from any thread.
pub const UCT_CB_FLAG_ASYNC: u32 = 0x4;

// uct_iface_params_t::open_mode values.
pub const UCT_IFACE_OPEN_MODE_DEVICE: u64 = 0x1;
pub const UCT_IFACE_OPEN_MODE_SOCKADDR_SERVER: u64 = 0x2;
pub const UCT_IFACE_OPEN_MODE_SOCKADDR_CLIENT: u64 = 0x4;
pub const UCT_IFACE_OPEN_MODE_STUB: u64 = 0x8;

// uct_iface_params_t::field_mask bits.
pub const UCT_IFACE_PARAM_FIELD_CPU_MASK: u64 = 0x1;
pub const UCT_IFACE_PARAM_FIELD_OPEN_MODE: u64 = 0x2;
pub const UCT_IFACE_PARAM_FIELD_DEVICE: u64 = 0x4;
pub const UCT_IFACE_PARAM_FIELD_SOCKADDR: u64 = 0x8;
pub const UCT_IFACE_PARAM_FIELD_STATS_ROOT: u64 = 0x10;
pub const UCT_IFACE_PARAM_FIELD_RX_HEADROOM: u64 = 0x20;
pub const UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG: u64 = 0x40;
pub const UCT_IFACE_PARAM_FIELD_ERR_HANDLER: u64 = 0x80;
pub const UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS: u64 = 0x100;
pub const UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_ARG: u64 = 0x200;
pub const UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_CB: u64 = 0x400;
pub const UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_ARG: u64 = 0x800;
pub const UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_CB: u64 = 0x1000;
pub const UCT_IFACE_PARAM_FIELD_ASYNC_EVENT_ARG: u64 = 0x2000;
pub const UCT_IFACE_PARAM_FIELD_ASYNC_EVENT_CB: u64 = 0x4000;
pub const UCT_IFACE_PARAM_FIELD_KEEPALIVE_INTERVAL: u64 = 0x8000;
pub const UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT: u64 = 0x1_0000;
pub const UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET: u64 = 0x2_0000;
pub const UCT_IFACE_PARAM_FIELD_FEATURES: u64 = 0x4_0000;

/// Whether a socket address is reachable locally or remotely.
pub type uct_sockaddr_accessibility_t = c_uint;
pub const UCT_SOCKADDR_ACC_LOCAL: uct_sockaddr_accessibility_t = 0;
pub const UCT_SOCKADDR_ACC_REMOTE: uct_sockaddr_accessibility_t = 1;

// uct_md_attr_t::cap.flags bits.
pub const UCT_MD_FLAG_ALLOC: u64 = 0x1;
pub const UCT_MD_FLAG_REG: u64 = 0x2;
pub const UCT_MD_FLAG_NEED_MEMH: u64 = 0x4;
pub const UCT_MD_FLAG_NEED_RKEY: u64 = 0x8;
pub const UCT_MD_FLAG_ADVISE: u64 = 0x10;
pub const UCT_MD_FLAG_FIXED: u64 = 0x20;
pub const UCT_MD_FLAG_RKEY_PTR: u64 = 0x40;
pub const UCT_MD_FLAG_SOCKADDR: u64 = 0x80;
pub const UCT_MD_FLAG_INVALIDATE: u64 = 0x100;
pub const UCT_MD_FLAG_EXPORTED_MKEY: u64 = 0x200;
pub const UCT_MD_FLAG_REG_DMABUF: u64 = 0x400;
pub const UCT_MD_FLAG_LAST: u64 = 0x800;

// Memory registration/allocation flags.
pub const UCT_MD_MEM_FLAG_NONBLOCK: c_uint = 0x1;
pub const UCT_MD_MEM_FLAG_FIXED: c_uint = 0x2;
pub const UCT_MD_MEM_FLAG_LOCK: c_uint = 0x4;
pub const UCT_MD_MEM_FLAG_HIDE_ERRORS: c_uint = 0x8;
pub const UCT_MD_MEM_ACCESS_REMOTE_PUT: c_uint = 0x20;
pub const UCT_MD_MEM_ACCESS_REMOTE_GET: c_uint = 0x40;
pub const UCT_MD_MEM_ACCESS_REMOTE_ATOMIC: c_uint = 0x80;
pub const UCT_MD_MEM_ACCESS_LOCAL_READ: c_uint = 0x100;
pub const UCT_MD_MEM_ACCESS_LOCAL_WRITE: c_uint = 0x200;
pub const UCT_MD_MEM_SYMMETRIC_RKEY: c_uint = 0x400;
pub const UCT_MD_MEM_GVA: c_uint = 0x800;
/// Every remote and local access right.
pub const UCT_MD_MEM_ACCESS_ALL: c_uint = 0x3e0;
/// Remote put/get and local access (no atomics).
pub const UCT_MD_MEM_ACCESS_RMA: c_uint = 0x360;

/// Advice for `uct_md_mem_advise`.
pub type uct_mem_advice_t = c_uint;
pub const UCT_MADV_NORMAL: uct_mem_advice_t = 0;
pub const UCT_MADV_WILLNEED: uct_mem_advice_t = 1;

pub const UCT_CM_ATTR_FIELD_MAX_CONN_PRIV: u64 = 0x1;

pub const UCT_LISTENER_ATTR_FIELD_SOCKADDR: u64 = 0x1;

pub const UCT_LISTENER_PARAM_FIELD_BACKLOG: u64 = 0x1;
pub const UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB: u64 = 0x2;
pub const UCT_LISTENER_PARAM_FIELD_USER_DATA: u64 = 0x4;

// uct_ep_params_t::field_mask bits.
pub const UCT_EP_PARAM_FIELD_IFACE: u64 = 0x1;
pub const UCT_EP_PARAM_FIELD_USER_DATA: u64 = 0x2;
pub const UCT_EP_PARAM_FIELD_DEV_ADDR: u64 = 0x4;
pub const UCT_EP_PARAM_FIELD_IFACE_ADDR: u64 = 0x8;
pub const UCT_EP_PARAM_FIELD_SOCKADDR: u64 = 0x10;
pub const UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS: u64 = 0x20;
pub const UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB: u64 = 0x40;
pub const UCT_EP_PARAM_FIELD_CM: u64 = 0x80;
pub const UCT_EP_PARAM_FIELD_CONN_REQUEST: u64 = 0x100;
pub const UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT: u64 = 0x200;
pub const UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER: u64 = 0x400;
pub const UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB: u64 = 0x800;
pub const UCT_EP_PARAM_FIELD_PATH_INDEX: u64 = 0x1000;
pub const UCT_EP_PARAM_FIELD_CM_RESOLVE_CB: u64 = 0x2000;
pub const UCT_EP_PARAM_FIELD_PRIV_DATA: u64 = 0x4000;
pub const UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH: u64 = 0x8000;
pub const UCT_EP_PARAM_FIELD_LOCAL_SOCKADDR: u64 = 0x1_0000;
pub const UCT_EP_PARAM_FIELD_DEV_ADDR_LENGTH: u64 = 0x2_0000;
pub const UCT_EP_PARAM_FIELD_IFACE_ADDR_LENGTH: u64 = 0x4_0000;

pub const UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA: u64 = 0x1;
pub const UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA_LENGTH: u64 = 0x2;

// uct_iface_params_t::features bits.
pub const UCT_IFACE_FEATURE_AM: u64 = 0x1;
pub const UCT_IFACE_FEATURE_PUT: u64 = 0x2;
pub const UCT_IFACE_FEATURE_GET: u64 = 0x4;
pub const UCT_IFACE_FEATURE_AMO32: u64 = 0x8;
pub const UCT_IFACE_FEATURE_AMO64: u64 = 0x10;
pub const UCT_IFACE_FEATURE_TAG: u64 = 0x20;
pub const UCT_IFACE_FEATURE_FLUSH_REMOTE: u64 = 0x40;
pub const UCT_IFACE_FEATURE_LAST: u64 = 0x80;

/// Bandwidth of a resource: what one process gets alone, and what is shared
/// by all processes on the node (bytes/second).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct uct_ppn_bandwidth {
    pub dedicated: f64,
    pub shared: f64,
}
pub type uct_ppn_bandwidth_t = uct_ppn_bandwidth;

/// Limits of put or get (`uct_iface_attr_t::cap.put` / `.get`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct uct_iface_attr_cap_rma {
    pub max_short: usize,
    pub max_bcopy: usize,
    pub min_zcopy: usize,
    pub max_zcopy: usize,
    pub opt_zcopy_align: usize,
    pub align_mtu: usize,
    pub max_iov: usize,
}

/// Limits of active messages (`uct_iface_attr_t::cap.am`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct uct_iface_attr_cap_am {
    pub max_short: usize,
    pub max_bcopy: usize,
    pub min_zcopy: usize,
    pub max_zcopy: usize,
    pub opt_zcopy_align: usize,
    pub align_mtu: usize,
    pub max_hdr: usize,
    pub max_iov: usize,
}

/// `uct_iface_attr_t::cap.tag.recv`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct uct_iface_attr_cap_tag_recv {
    pub min_recv: usize,
    pub max_zcopy: usize,
    pub max_iov: usize,
    pub max_outstanding: usize,
}

/// `uct_iface_attr_t::cap.tag.eager`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct uct_iface_attr_cap_tag_eager {
    pub max_short: usize,
    pub max_bcopy: usize,
    pub max_zcopy: usize,
    pub max_iov: usize,
}

/// `uct_iface_attr_t::cap.tag.rndv`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct uct_iface_attr_cap_tag_rndv {
    pub max_zcopy: usize,
    pub max_hdr: usize,
    pub max_iov: usize,
}

/// Tag-matching offload limits (`uct_iface_attr_t::cap.tag`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct uct_iface_attr_cap_tag {
    pub recv: uct_iface_attr_cap_tag_recv,
    pub eager: uct_iface_attr_cap_tag_eager,
    pub rndv: uct_iface_attr_cap_tag_rndv,
}

/// Supported atomic operations: bit `UCT_ATOMIC_OP_x` set in `op_flags`
/// (non-fetching) / `fop_flags` (fetching).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct uct_iface_attr_cap_atomic {
    pub op_flags: u64,
    pub fop_flags: u64,
}

/// `uct_iface_attr_t::cap`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct uct_iface_attr_cap {
    pub put: uct_iface_attr_cap_rma,
    pub get: uct_iface_attr_cap_rma,
    pub am: uct_iface_attr_cap_am,
    pub tag: uct_iface_attr_cap_tag,
    pub atomic32: uct_iface_attr_cap_atomic,
    pub atomic64: uct_iface_attr_cap_atomic,
    /// `UCT_IFACE_FLAG_*`.
    pub flags: u64,
    /// `UCT_IFACE_FLAG_EVENT_*`.
    pub event_flags: u64,
}

/// What `uct_iface_query` reports.
///
/// 536 bytes in UCX 1.13 and master; master's `ctl_device` sits where 1.13
/// had tail padding.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_attr {
    pub cap: uct_iface_attr_cap,
    pub device_addr_len: usize,
    pub iface_addr_len: usize,
    pub ep_addr_len: usize,
    pub max_conn_priv: usize,
    pub listen_sockaddr: libc::sockaddr_storage,
    /// Send overhead, seconds.
    pub overhead: f64,
    pub bandwidth: uct_ppn_bandwidth_t,
    /// Latency, seconds, as a function of the number of endpoints.
    pub latency: ucs_linear_func_t,
    pub priority: u8,
    pub max_num_eps: usize,
    pub dev_num_paths: c_uint,
    pub ctl_device: ucs_sys_device_t,
}
pub type uct_iface_attr_t = uct_iface_attr;

/// `uct_iface_params_t::mode.device`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_iface_params_mode_device {
    pub tl_name: *const c_char,
    pub dev_name: *const c_char,
}

/// `uct_iface_params_t::mode.sockaddr`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_iface_params_mode_sockaddr {
    pub listen_sockaddr: ucs_sock_addr_t,
    pub conn_request_arg: *mut c_void,
    pub conn_request_cb: uct_sockaddr_conn_request_callback_t,
    pub cb_flags: u32,
}

/// `uct_iface_params_t::mode.stub`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_iface_params_mode_stub {
    pub status: ucs_status_t,
}

/// `uct_iface_params_t::mode`: which member is valid follows `open_mode`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union uct_iface_params_mode {
    pub device: uct_iface_params_mode_device,
    pub sockaddr: uct_iface_params_mode_sockaddr,
    pub stub: uct_iface_params_mode_stub,
}

/// Parameters of `uct_iface_open`; each member is valid only if its
/// `UCT_IFACE_PARAM_FIELD_*` bit is set in `field_mask`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_params {
    pub field_mask: u64,
    pub cpu_mask: ucs_cpu_set_t,
    pub open_mode: u64,
    pub mode: uct_iface_params_mode,
    pub stats_root: *mut ucs_stats_node_t,
    pub rx_headroom: usize,
    pub err_handler_arg: *mut c_void,
    pub err_handler: uct_error_handler_t,
    pub err_handler_flags: u32,
    pub eager_arg: *mut c_void,
    pub eager_cb: uct_tag_unexp_eager_cb_t,
    pub rndv_arg: *mut c_void,
    pub rndv_cb: uct_tag_unexp_rndv_cb_t,
    pub async_event_arg: *mut c_void,
    pub async_event_cb: uct_async_event_cb_t,
    pub keepalive_interval: ucs_time_t,
    pub am_alignment: usize,
    pub am_align_offset: usize,
    pub features: u64,
}
pub type uct_iface_params_t = uct_iface_params;

/// Parameters of `uct_ep_create`. UCX 1.13 callers pass 144 bytes (no
/// `dev_addr_length`/`iface_addr_length`): read those only when their
/// `field_mask` bits are set.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_ep_params {
    pub field_mask: u64,
    pub iface: uct_iface_h,
    pub user_data: *mut c_void,
    pub dev_addr: *const uct_device_addr_t,
    pub iface_addr: *const uct_iface_addr_t,
    pub sockaddr: *const ucs_sock_addr_t,
    pub sockaddr_cb_flags: u32,
    pub sockaddr_pack_cb: uct_cm_ep_priv_data_pack_callback_t,
    pub cm: uct_cm_h,
    pub conn_request: uct_conn_request_h,
    pub sockaddr_cb_client: uct_cm_ep_client_connect_callback_t,
    pub sockaddr_cb_server: uct_cm_ep_server_conn_notify_callback_t,
    pub disconnect_cb: uct_ep_disconnect_cb_t,
    pub path_index: c_uint,
    pub cm_resolve_cb: uct_cm_ep_resolve_callback_t,
    pub private_data: *const c_void,
    pub private_data_length: usize,
    pub local_sockaddr: *const ucs_sock_addr_t,
    pub dev_addr_length: usize,
    pub iface_addr_length: usize,
}
pub type uct_ep_params_t = uct_ep_params;

/// Parameters of `uct_ep_connect`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_ep_connect_params {
    pub field_mask: u64,
    pub private_data: *const c_void,
    pub private_data_length: usize,
}
pub type uct_ep_connect_params_t = uct_ep_connect_params;

/// What `uct_cm_query` reports.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_cm_attr {
    pub field_mask: u64,
    pub max_conn_priv: usize,
}
pub type uct_cm_attr_t = uct_cm_attr;

/// What `uct_listener_query` reports.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_listener_attr {
    pub field_mask: u64,
    pub sockaddr: libc::sockaddr_storage,
}
pub type uct_listener_attr_t = uct_listener_attr;

/// Parameters of `uct_listener_create`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_listener_params {
    pub field_mask: u64,
    pub backlog: c_int,
    pub conn_request_cb: uct_cm_listener_conn_request_callback_t,
    pub user_data: *mut c_void,
}
pub type uct_listener_params_t = uct_listener_params;

/// `uct_md_attr_t::cap`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct uct_md_attr_cap {
    pub max_alloc: u64,
    pub max_reg: usize,
    /// `UCT_MD_FLAG_*`.
    pub flags: u64,
    /// Bit masks of `ucs_memory_type_t` values.
    pub reg_mem_types: u64,
    pub detect_mem_types: u64,
    pub alloc_mem_types: u64,
    pub access_mem_types: u64,
}

/// What `uct_md_query` reports (version 1; see `uct_md_attr_v2_t`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_md_attr {
    pub cap: uct_md_attr_cap,
    pub reg_cost: ucs_linear_func_t,
    pub component_name: [c_char; UCT_COMPONENT_NAME_MAX],
    pub rkey_packed_size: usize,
    pub local_cpus: ucs_cpu_set_t,
}
pub type uct_md_attr_t = uct_md_attr;

/// `uct_md_mem_attr_t::field_mask` bits.
pub type uct_md_mem_attr_field_t = c_uint;
pub const UCT_MD_MEM_ATTR_FIELD_MEM_TYPE: uct_md_mem_attr_field_t = 0x1;
pub const UCT_MD_MEM_ATTR_FIELD_SYS_DEV: uct_md_mem_attr_field_t = 0x2;
pub const UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS: uct_md_mem_attr_field_t = 0x4;
pub const UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH: uct_md_mem_attr_field_t = 0x8;
pub const UCT_MD_MEM_ATTR_FIELD_DMABUF_FD: uct_md_mem_attr_field_t = 0x10;
pub const UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET: uct_md_mem_attr_field_t = 0x20;

/// What `uct_md_mem_query` reports about an address range. UCX 1.13's is 32
/// bytes (no `dmabuf_fd`/`dmabuf_offset`): write those only when asked for in
/// `field_mask`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_md_mem_attr {
    pub field_mask: u64,
    pub mem_type: ucs_memory_type_t,
    pub sys_dev: ucs_sys_device_t,
    pub base_address: *mut c_void,
    pub alloc_length: usize,
    pub dmabuf_fd: c_int,
    pub dmabuf_offset: usize,
}
pub type uct_md_mem_attr_t = uct_md_mem_attr;

/// Memory obtained by `uct_mem_alloc` / `uct_iface_mem_alloc`.
///
/// 48 bytes on master, 40 in UCX 1.13 (no `sys_device`), and there is no
/// field mask: writing `sys_device` would overrun a 1.13 caller's struct.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_allocated_memory {
    pub address: *mut c_void,
    pub length: usize,
    pub method: uct_alloc_method_t,
    pub mem_type: ucs_memory_type_t,
    pub md: uct_md_h,
    pub memh: uct_mem_h,
    pub sys_device: ucs_sys_device_t,
}
pub type uct_allocated_memory_t = uct_allocated_memory;

/// An unpacked remote key.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_rkey_bundle {
    pub rkey: uct_rkey_t,
    pub handle: *mut c_void,
    pub r#type: *mut c_void,
}
pub type uct_rkey_bundle_t = uct_rkey_bundle;

/// Called when the counter of a `uct_completion_t` reaches zero.
pub type uct_completion_callback_t = Option<unsafe extern "C" fn(self_: *mut uct_completion_t)>;

/// Completion of one or more operations: `count` is decremented per
/// completed operation and `func` called when it reaches zero; `status`
/// keeps the first error.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_completion {
    pub func: uct_completion_callback_t,
    pub count: c_int,
    pub status: ucs_status_t,
}
pub type uct_completion_t = uct_completion;

/// Called to retry a pending request; `UCS_OK` removes it from the queue.
pub type uct_pending_callback_t =
    Option<unsafe extern "C" fn(self_: *mut uct_pending_req_t) -> ucs_status_t>;

/// Called for each request removed by `uct_ep_pending_purge`.
pub type uct_pending_purge_callback_t =
    Option<unsafe extern "C" fn(self_: *mut uct_pending_req_t, arg: *mut c_void)>;

/// A request queued by `uct_ep_pending_add`; `priv` is scratch space for the
/// transport.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_pending_req {
    pub func: uct_pending_callback_t,
    pub r#priv: [c_char; UCT_PENDING_REQ_PRIV_LEN],
}
pub type uct_pending_req_t = uct_pending_req;

/// Posted receive of the tag-matching API.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_tag_context {
    pub tag_consumed_cb: Option<unsafe extern "C" fn(self_: *mut uct_tag_context_t)>,
    pub completed_cb: Option<
        unsafe extern "C" fn(
            self_: *mut uct_tag_context_t,
            stag: uct_tag_t,
            imm: u64,
            length: usize,
            inline_data: *mut c_void,
            status: ucs_status_t,
        ),
    >,
    pub rndv_cb: Option<
        unsafe extern "C" fn(
            self_: *mut uct_tag_context_t,
            stag: uct_tag_t,
            header: *const c_void,
            header_length: c_uint,
            status: ucs_status_t,
            flags: c_uint,
        ),
    >,
    pub r#priv: [c_char; UCT_TAG_PRIV_LEN],
}
pub type uct_tag_context_t = uct_tag_context;

/// Flag for `uct_tag_context::completed_cb`: the data is inline.
pub const UCT_TAG_RECV_CB_INLINE_DATA: c_uint = 0x1;

/// `uct_mem_alloc_params_t::field_mask` bits.
pub type uct_mem_alloc_params_field_t = c_uint;
pub const UCT_MEM_ALLOC_PARAM_FIELD_FLAGS: uct_mem_alloc_params_field_t = 0x1;
pub const UCT_MEM_ALLOC_PARAM_FIELD_ADDRESS: uct_mem_alloc_params_field_t = 0x2;
pub const UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE: uct_mem_alloc_params_field_t = 0x4;
pub const UCT_MEM_ALLOC_PARAM_FIELD_MDS: uct_mem_alloc_params_field_t = 0x8;
pub const UCT_MEM_ALLOC_PARAM_FIELD_NAME: uct_mem_alloc_params_field_t = 0x10;
pub const UCT_MEM_ALLOC_PARAM_FIELD_SYS_DEVICE: uct_mem_alloc_params_field_t = 0x20;

/// `uct_mem_alloc_params_t::mds`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_mem_alloc_params_mds {
    pub mds: *const uct_md_h,
    pub count: c_uint,
}

/// Parameters of `uct_mem_alloc`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_mem_alloc_params {
    pub field_mask: u64,
    pub flags: c_uint,
    pub address: *mut c_void,
    pub mem_type: ucs_memory_type_t,
    pub mds: uct_mem_alloc_params_mds,
    pub name: *const c_char,
    pub sys_device: ucs_sys_device_t,
}
pub type uct_mem_alloc_params_t = uct_mem_alloc_params;
