//! `uct/api/v2/uct_v2.h`: the extensible ("v2") UCT API, including the
//! failover API: connection tokens, `uct_ep_invalidate` and
//! `uct_ep_outstanding_purge`.

use core::ffi::{c_char, c_uint, c_void};

use super::ucs_cpu_set::ucs_cpu_set_t;
use super::ucs_linear_func::ucs_linear_func_t;
use super::ucs_memory_type::ucs_memory_type_t;
use super::ucs_topo::ucs_sys_device_t;
use super::uct_api::uct_completion_t;
use super::uct_api::{uct_atomic_op_t, uct_ppn_bandwidth_t};
use super::uct_def::*;

/// An operation an endpoint can post.
pub type uct_ep_operation_t = c_uint;
pub const UCT_EP_OP_AM_SHORT: uct_ep_operation_t = 0;
pub const UCT_EP_OP_AM_BCOPY: uct_ep_operation_t = 1;
pub const UCT_EP_OP_AM_ZCOPY: uct_ep_operation_t = 2;
pub const UCT_EP_OP_PUT_SHORT: uct_ep_operation_t = 3;
pub const UCT_EP_OP_PUT_BCOPY: uct_ep_operation_t = 4;
pub const UCT_EP_OP_PUT_ZCOPY: uct_ep_operation_t = 5;
pub const UCT_EP_OP_GET_SHORT: uct_ep_operation_t = 6;
pub const UCT_EP_OP_GET_BCOPY: uct_ep_operation_t = 7;
pub const UCT_EP_OP_GET_ZCOPY: uct_ep_operation_t = 8;
pub const UCT_EP_OP_EAGER_SHORT: uct_ep_operation_t = 9;
pub const UCT_EP_OP_EAGER_BCOPY: uct_ep_operation_t = 10;
pub const UCT_EP_OP_EAGER_ZCOPY: uct_ep_operation_t = 11;
pub const UCT_EP_OP_RNDV_ZCOPY: uct_ep_operation_t = 12;
pub const UCT_EP_OP_ATOMIC_POST: uct_ep_operation_t = 13;
pub const UCT_EP_OP_ATOMIC_FETCH: uct_ep_operation_t = 14;
pub const UCT_EP_OP_FLUSH: uct_ep_operation_t = 15;
pub const UCT_EP_OP_LAST: uct_ep_operation_t = 16;

// uct_perf_attr_t::field_mask bits.
pub const UCT_PERF_ATTR_FIELD_OPERATION: u64 = 0x1;
pub const UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE: u64 = 0x2;
pub const UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE: u64 = 0x4;
pub const UCT_PERF_ATTR_FIELD_LOCAL_SYS_DEVICE: u64 = 0x8;
pub const UCT_PERF_ATTR_FIELD_REMOTE_SYS_DEVICE: u64 = 0x10;
pub const UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD: u64 = 0x20;
pub const UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD: u64 = 0x40;
pub const UCT_PERF_ATTR_FIELD_RECV_OVERHEAD: u64 = 0x80;
pub const UCT_PERF_ATTR_FIELD_BANDWIDTH: u64 = 0x100;
pub const UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH: u64 = 0x200;
pub const UCT_PERF_ATTR_FIELD_LATENCY: u64 = 0x400;
pub const UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS: u64 = 0x800;
pub const UCT_PERF_ATTR_FIELD_FLAGS: u64 = 0x1000;

/// `uct_perf_attr_t::flags` bits.
pub type uct_perf_attr_flags_t = c_uint;
pub const UCT_PERF_ATTR_FLAGS_TX_RX_SHARED: uct_perf_attr_flags_t = 0x1;

/// In/out parameters of `uct_iface_estimate_perf`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_perf_attr {
    pub field_mask: u64,
    pub operation: uct_ep_operation_t,
    pub local_memory_type: ucs_memory_type_t,
    pub remote_memory_type: ucs_memory_type_t,
    pub local_sys_device: ucs_sys_device_t,
    pub remote_sys_device: ucs_sys_device_t,
    pub send_pre_overhead: f64,
    pub send_post_overhead: f64,
    pub recv_overhead: f64,
    pub bandwidth: uct_ppn_bandwidth_t,
    pub path_bandwidth: uct_ppn_bandwidth_t,
    pub latency: ucs_linear_func_t,
    pub max_inflight_eps: usize,
    pub flags: u64,
}
pub type uct_perf_attr_t = uct_perf_attr;

pub type uct_md_mem_reg_field_mask_t = c_uint;
pub const UCT_MD_MEM_REG_FIELD_FLAGS: uct_md_mem_reg_field_mask_t = 0x1;
pub const UCT_MD_MEM_REG_FIELD_DMABUF_FD: uct_md_mem_reg_field_mask_t = 0x2;
pub const UCT_MD_MEM_REG_FIELD_DMABUF_OFFSET: uct_md_mem_reg_field_mask_t = 0x4;
pub const UCT_MD_MEM_REG_FIELD_MEM_TYPE: uct_md_mem_reg_field_mask_t = 0x8;

pub type uct_md_mem_dereg_field_mask_t = c_uint;
pub const UCT_MD_MEM_DEREG_FIELD_MEMH: uct_md_mem_dereg_field_mask_t = 0x1;
pub const UCT_MD_MEM_DEREG_FIELD_FLAGS: uct_md_mem_dereg_field_mask_t = 0x2;
pub const UCT_MD_MEM_DEREG_FIELD_COMPLETION: uct_md_mem_dereg_field_mask_t = 0x4;

pub type uct_md_mkey_pack_field_mask_t = c_uint;
pub const UCT_MD_MKEY_PACK_FIELD_FLAGS: uct_md_mkey_pack_field_mask_t = 0x1;

pub type uct_md_mem_attach_field_mask_t = c_uint;
pub const UCT_MD_MEM_ATTACH_FIELD_FLAGS: uct_md_mem_attach_field_mask_t = 0x1;
pub const UCT_MD_MEM_ATTACH_FIELD_MKEY_SIZE: uct_md_mem_attach_field_mask_t = 0x2;

// uct_ep_attr_t::field_mask bits.
pub const UCT_EP_ATTR_FIELD_LOCAL_SOCKADDR: u64 = 0x1;
pub const UCT_EP_ATTR_FIELD_REMOTE_SOCKADDR: u64 = 0x2;
/// Ask `uct_ep_query` for the endpoint's TX token (failover).
pub const UCT_EP_ATTR_FIELD_TX_TOKEN: u64 = 0x4;

pub type uct_iface_is_reachable_field_mask_t = c_uint;
pub const UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR: uct_iface_is_reachable_field_mask_t = 0x1;
pub const UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR: uct_iface_is_reachable_field_mask_t = 0x2;
pub const UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING: uct_iface_is_reachable_field_mask_t = 0x4;
pub const UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH: uct_iface_is_reachable_field_mask_t =
    0x8;
pub const UCT_IFACE_IS_REACHABLE_FIELD_SCOPE: uct_iface_is_reachable_field_mask_t = 0x10;
pub const UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH: uct_iface_is_reachable_field_mask_t =
    0x20;
pub const UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR_LENGTH: uct_iface_is_reachable_field_mask_t =
    0x40;

pub type uct_md_mem_dereg_flags_t = c_uint;
pub const UCT_MD_MEM_DEREG_FLAG_INVALIDATE: uct_md_mem_dereg_flags_t = 0x1;

pub type uct_md_mkey_pack_flags_t = c_uint;
pub const UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA: uct_md_mkey_pack_flags_t = 0x1;
pub const UCT_MD_MKEY_PACK_FLAG_INVALIDATE_AMO: uct_md_mkey_pack_flags_t = 0x2;
pub const UCT_MD_MKEY_PACK_FLAG_EXPORT: uct_md_mkey_pack_flags_t = 0x4;
/// UCX 1.13's name of `UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA`.
pub const UCT_MD_MKEY_PACK_FLAG_INVALIDATE: uct_md_mkey_pack_flags_t = 0x1;

pub type uct_md_mem_attach_flags_t = c_uint;
pub const UCT_MD_MEM_ATTACH_FLAG_HIDE_ERRORS: uct_md_mem_attach_flags_t = 0x1;

pub type uct_ep_connect_to_ep_param_field_t = c_uint;
pub const UCT_EP_CONNECT_TO_EP_PARAM_FIELD_DEVICE_ADDR_LENGTH: uct_ep_connect_to_ep_param_field_t =
    0x1;
pub const UCT_EP_CONNECT_TO_EP_PARAM_FIELD_EP_ADDR_LENGTH: uct_ep_connect_to_ep_param_field_t = 0x2;

pub type uct_ep_is_connected_field_mask_t = c_uint;
pub const UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR: uct_ep_is_connected_field_mask_t = 0x1;
pub const UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR: uct_ep_is_connected_field_mask_t = 0x2;
pub const UCT_EP_IS_CONNECTED_FIELD_EP_ADDR: uct_ep_is_connected_field_mask_t = 0x4;

/// What `uct_ep_query` reports. `tx_token` is an input: the caller points it
/// at a buffer of the iface's `tx_token_length` bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_ep_attr {
    pub field_mask: u64,
    pub local_address: libc::sockaddr_storage,
    pub remote_address: libc::sockaddr_storage,
    pub tx_token: *mut c_void,
}
pub type uct_ep_attr_t = uct_ep_attr;

/// Called when a registration was invalidated.
pub type uct_md_mem_invalidate_cb_t = Option<unsafe extern "C" fn(arg: *mut c_void)>;

/// Parameters of `uct_md_mem_reg_v2`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_md_mem_reg_params {
    pub field_mask: u64,
    pub flags: u64,
    pub dmabuf_fd: core::ffi::c_int,
    pub dmabuf_offset: usize,
    pub mem_type: ucs_memory_type_t,
}
pub type uct_md_mem_reg_params_t = uct_md_mem_reg_params;

/// Parameters of `uct_md_mem_dereg_v2`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_md_mem_dereg_params {
    pub field_mask: u64,
    pub flags: c_uint,
    pub memh: uct_mem_h,
    pub comp: *mut uct_completion_t,
}
pub type uct_md_mem_dereg_params_t = uct_md_mem_dereg_params;

/// Parameters of `uct_md_mkey_pack_v2`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct uct_md_mkey_pack_params {
    pub field_mask: u64,
    pub flags: c_uint,
}
pub type uct_md_mkey_pack_params_t = uct_md_mkey_pack_params;

/// Parameters of `uct_md_mem_attach`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_md_mem_attach_params {
    pub field_mask: u64,
    pub flags: u64,
    pub mkey_size: usize,
}
pub type uct_md_mem_attach_params_t = uct_md_mem_attach_params;

/// How far an `uct_iface_is_reachable_v2` check goes.
pub type uct_iface_reachability_scope_t = c_uint;
/// Only whether the device can reach the peer device.
pub const UCT_IFACE_REACHABILITY_SCOPE_DEVICE: uct_iface_reachability_scope_t = 0;
/// Whether the network path exists.
pub const UCT_IFACE_REACHABILITY_SCOPE_NETWORK: uct_iface_reachability_scope_t = 1;

/// Parameters of `uct_iface_is_reachable_v2`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_iface_is_reachable_params {
    pub field_mask: u64,
    pub device_addr: *const uct_device_addr_t,
    pub iface_addr: *const uct_iface_addr_t,
    pub info_string: *mut c_char,
    pub info_string_length: usize,
    pub scope: uct_iface_reachability_scope_t,
    pub device_addr_length: usize,
    pub iface_addr_length: usize,
}
pub type uct_iface_is_reachable_params_t = uct_iface_is_reachable_params;

/// Parameters of `uct_ep_is_connected`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_ep_is_connected_params {
    pub field_mask: u64,
    pub device_addr: *const uct_device_addr_t,
    pub iface_addr: *const uct_iface_addr_t,
    pub ep_addr: *const uct_ep_addr_t,
}
pub type uct_ep_is_connected_params_t = uct_ep_is_connected_params;

/// Parameters of `uct_ep_connect_to_ep_v2`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_ep_connect_to_ep_params {
    pub field_mask: u64,
    pub device_addr_length: usize,
    pub ep_addr_length: usize,
}
pub type uct_ep_connect_to_ep_params_t = uct_ep_connect_to_ep_params;

/// `uct_ep_invalidate_params_t::field_mask` bit: `flags` is set.
pub const UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS: u64 = 0x1;
/// `uct_ep_invalidate` flag: move the connection to error without completing
/// the outstanding operations, so that `uct_ep_outstanding_purge` can hand
/// them to the caller.
pub const UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS: c_uint = 0x1;

/// Parameters of `uct_ep_invalidate`. UCX master's struct has `field_mask`
/// only (8 bytes); `flags` is the addition of its open pull request 11785,
/// which the failover API needs. A caller built against master's header
/// never sets `UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS`, so its 8-byte struct is
/// never read past its end, and master's source compiles unchanged.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_ep_invalidate_params {
    pub field_mask: u64,
    /// `UCT_EP_INVALIDATE_FLAG_*`.
    pub flags: c_uint,
}
pub type uct_ep_invalidate_params_t = uct_ep_invalidate_params;

/// Parameters of `uct_rkey_compare`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_rkey_compare_params {
    pub field_mask: u64,
}
pub type uct_rkey_compare_params_t = uct_rkey_compare_params;

pub type uct_rkey_unpack_field_mask_t = c_uint;
pub const UCT_RKEY_UNPACK_FIELD_SYS_DEVICE: uct_rkey_unpack_field_mask_t = 0x1;

/// Parameters of `uct_rkey_unpack_v2`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_rkey_unpack_params {
    pub field_mask: u64,
    pub sys_device: ucs_sys_device_t,
}
pub type uct_rkey_unpack_params_t = uct_rkey_unpack_params;

pub type uct_md_mem_attr_v2_field_t = c_uint;
pub const UCT_MD_MEM_ATTR_V2_FIELD_MEM_TYPE: uct_md_mem_attr_v2_field_t = 0x1;
pub const UCT_MD_MEM_ATTR_V2_FIELD_SYS_DEV: uct_md_mem_attr_v2_field_t = 0x2;
pub const UCT_MD_MEM_ATTR_V2_FIELD_BASE_ADDRESS: uct_md_mem_attr_v2_field_t = 0x4;
pub const UCT_MD_MEM_ATTR_V2_FIELD_ALLOC_LENGTH: uct_md_mem_attr_v2_field_t = 0x8;
pub const UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_FD: uct_md_mem_attr_v2_field_t = 0x10;
pub const UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_OFFSET: uct_md_mem_attr_v2_field_t = 0x20;
pub const UCT_MD_MEM_ATTR_V2_FIELD_MEM_FLAGS: uct_md_mem_attr_v2_field_t = 0x40;

/// What `uct_md_mem_query_v2` reports.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_md_mem_attr_v2 {
    pub field_mask: u64,
    pub mem_type: ucs_memory_type_t,
    pub sys_dev: ucs_sys_device_t,
    pub base_address: *mut c_void,
    pub alloc_length: usize,
    pub dmabuf_fd: core::ffi::c_int,
    pub dmabuf_offset: usize,
    pub mem_flags: u8,
}
pub type uct_md_mem_attr_v2_t = uct_md_mem_attr_v2;

/// `uct_md_attr_v2_t::field_mask` bits.
/// (In C the enum; in Rust the constants have the type of the
/// `field_mask`/`flags` member they are used with.)
pub type uct_md_attr_field_t = c_uint;
pub const UCT_MD_ATTR_FIELD_MAX_ALLOC: u64 = 0x1;
pub const UCT_MD_ATTR_FIELD_MAX_REG: u64 = 0x2;
pub const UCT_MD_ATTR_FIELD_FLAGS: u64 = 0x4;
pub const UCT_MD_ATTR_FIELD_REG_MEM_TYPES: u64 = 0x8;
pub const UCT_MD_ATTR_FIELD_REG_NONBLOCK_MEM_TYPES: u64 = 0x10;
pub const UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES: u64 = 0x20;
pub const UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES: u64 = 0x40;
pub const UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES: u64 = 0x80;
pub const UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES: u64 = 0x100;
pub const UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES: u64 = 0x200;
pub const UCT_MD_ATTR_FIELD_REG_COST: u64 = 0x400;
pub const UCT_MD_ATTR_FIELD_COMPONENT_NAME: u64 = 0x800;
pub const UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE: u64 = 0x1000;
pub const UCT_MD_ATTR_FIELD_LOCAL_CPUS: u64 = 0x2000;
pub const UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE: u64 = 0x4000;
pub const UCT_MD_ATTR_FIELD_GLOBAL_ID: u64 = 0x8000;
pub const UCT_MD_ATTR_FIELD_REG_ALIGNMENT: u64 = 0x1_0000;
pub const UCT_MD_ATTR_FIELD_GVA_MEM_TYPES: u64 = 0x2_0000;
pub const UCT_MD_ATTR_FIELD_REQUIRED_MEM_FLAGS: u64 = 0x4_0000;

/// What `uct_md_query_v2` reports; members valid per `field_mask`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_md_attr_v2 {
    pub field_mask: u64,
    pub max_alloc: u64,
    pub max_reg: usize,
    pub flags: u64,
    pub reg_mem_types: u64,
    pub reg_nonblock_mem_types: u64,
    pub cache_mem_types: u64,
    pub gva_mem_types: u64,
    pub detect_mem_types: u64,
    pub alloc_mem_types: u64,
    pub access_mem_types: u64,
    pub dmabuf_mem_types: u64,
    pub reg_cost: ucs_linear_func_t,
    pub component_name: [c_char; UCT_COMPONENT_NAME_MAX],
    pub rkey_packed_size: usize,
    pub local_cpus: ucs_cpu_set_t,
    pub exported_mkey_packed_size: usize,
    pub global_id: [c_char; UCT_MD_GLOBAL_ID_MAX],
    pub reg_alignment: usize,
    pub required_mem_flags: u8,
}
pub type uct_md_attr_v2_t = uct_md_attr_v2;

/// More `uct_md_attr_v2_t::flags` bits, after the `UCT_MD_FLAG_*` ones.
/// (In C the enum; in Rust the constants have the type of the
/// `field_mask`/`flags` member they are used with.)
pub type uct_md_flags_v2_t = c_uint;
pub const UCT_MD_FLAG_V2_FIRST: u64 = 0x800;
pub const UCT_MD_FLAG_INVALIDATE_RMA: u64 = 0x800;
pub const UCT_MD_FLAG_INVALIDATE_AMO: u64 = 0x1000;
pub const UCT_MD_FLAG_MEMTYPE_COPY: u64 = 0x2000;

// uct_iface_attr_v2_t::field_mask bits.
pub const UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT: u64 = 0x1;
pub const UCT_IFACE_ATTR_FIELD_MAX_GET_SGL_ZCOPY_COUNT: u64 = 0x2;
pub const UCT_IFACE_ATTR_FIELD_CAP_FLAGS: u64 = 0x4;
pub const UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH: u64 = 0x8;
pub const UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH: u64 = 0x10;
/// Input `tx_token` (a peer's TX token) to derive `rx_token` from.
pub const UCT_IFACE_ATTR_FIELD_TX_TOKEN: u64 = 0x20;
pub const UCT_IFACE_ATTR_FIELD_RX_TOKEN: u64 = 0x40;

// uct_iface_attr_v2_t::cap.flags bits.
pub const UCT_IFACE_FLAG_V2_PUT_SGL_ZCOPY: u64 = 0x1;
pub const UCT_IFACE_FLAG_V2_GET_SGL_ZCOPY: u64 = 0x2;
/// TX/RX token queries and `uct_ep_outstanding_purge` are supported.
pub const UCT_IFACE_FLAG_V2_QUERY_TOKEN: u64 = 0x4;

/// `uct_iface_attr_v2_t::cap`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct uct_iface_attr_v2_cap {
    /// `UCT_IFACE_FLAG_V2_*`.
    pub flags: u64,
}

/// What `uct_iface_query_v2` reports; members valid per `field_mask`.
/// `tx_token` is an input (a peer endpoint's TX token), `rx_token` points at
/// a caller buffer of `rx_token_length` bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_iface_attr_v2 {
    pub field_mask: u64,
    pub max_put_sgl_zcopy_count: usize,
    pub max_get_sgl_zcopy_count: usize,
    pub cap: uct_iface_attr_v2_cap,
    pub tx_token_length: usize,
    pub rx_token_length: usize,
    pub tx_token: *const c_void,
    pub rx_token: *mut c_void,
}
pub type uct_iface_attr_v2_t = uct_iface_attr_v2;

/// `uct_ep_op_info_t::field_mask` bits.
/// (In C the enum; in Rust the constants have the type of the
/// `field_mask`/`flags` member they are used with.)
pub type uct_ep_op_info_field_t = c_uint;
pub const UCT_EP_OP_INFO_FIELD_OPERATION: u64 = 0x1;
pub const UCT_EP_OP_INFO_FIELD_COMP: u64 = 0x2;
pub const UCT_EP_OP_INFO_FIELD_AM: u64 = 0x4;
pub const UCT_EP_OP_INFO_FIELD_RMA: u64 = 0x8;
pub const UCT_EP_OP_INFO_FIELD_FLUSH: u64 = 0x10;
pub const UCT_EP_OP_INFO_FIELD_ATOMIC: u64 = 0x20;

/// `uct_ep_op_info_t::am.field_mask` bits.
/// (In C the enum; in Rust the constants have the type of the
/// `field_mask`/`flags` member they are used with.)
pub type uct_ep_op_info_am_field_t = c_uint;
pub const UCT_EP_OP_INFO_AM_FIELD_AM_ID: u16 = 0x1;
pub const UCT_EP_OP_INFO_AM_FIELD_FLAGS: u16 = 0x2;
pub const UCT_EP_OP_INFO_AM_FIELD_HEADER_VALUE: u16 = 0x4;
pub const UCT_EP_OP_INFO_AM_FIELD_HEADER_ZCOPY: u16 = 0x8;
pub const UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_DATA: u16 = 0x10;
pub const UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_ZCOPY: u16 = 0x20;

/// `uct_ep_op_info_t::rma.field_mask` bits.
/// (In C the enum; in Rust the constants have the type of the
/// `field_mask`/`flags` member they are used with.)
pub type uct_ep_op_info_rma_field_t = c_uint;
pub const UCT_EP_OP_INFO_RMA_FIELD_REMOTE_ADDR: u16 = 0x1;
pub const UCT_EP_OP_INFO_RMA_FIELD_RKEY: u16 = 0x2;
pub const UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_DATA: u16 = 0x4;
pub const UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_ZCOPY: u16 = 0x8;
pub const UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_UNPACK: u16 = 0x10;

/// `uct_ep_op_info_t::flush.field_mask` bits.
/// (In C the enum; in Rust the constants have the type of the
/// `field_mask`/`flags` member they are used with.)
pub type uct_ep_op_info_flush_field_t = c_uint;
pub const UCT_EP_OP_INFO_FLUSH_FIELD_FLAGS: u16 = 0x1;

/// `uct_ep_op_info_t::atomic.field_mask` bits.
/// (In C the enum; in Rust the constants have the type of the
/// `field_mask`/`flags` member they are used with.)
pub type uct_ep_op_info_atomic_field_t = c_uint;
pub const UCT_EP_OP_INFO_ATOMIC_FIELD_OP: u16 = 0x1;
pub const UCT_EP_OP_INFO_ATOMIC_FIELD_REMOTE_ADDR: u16 = 0x2;
pub const UCT_EP_OP_INFO_ATOMIC_FIELD_RKEY: u16 = 0x4;
pub const UCT_EP_OP_INFO_ATOMIC_FIELD_VALUE: u16 = 0x8;
pub const UCT_EP_OP_INFO_ATOMIC_FIELD_COMPARE: u16 = 0x10;
pub const UCT_EP_OP_INFO_ATOMIC_FIELD_RESULT: u16 = 0x20;
pub const UCT_EP_OP_INFO_ATOMIC_FIELD_SIZE: u16 = 0x40;

/// A contiguous buffer of an operation.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_ep_op_info_data {
    pub buffer: *mut c_void,
    pub length: usize,
}

/// A scatter/gather list of an operation.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_ep_op_info_zcopy {
    pub iov: *const uct_iov_t,
    pub iovcnt: usize,
}

/// A zero-copy AM header.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_ep_op_info_am_header_zcopy {
    pub buffer: *const c_void,
    pub length: usize,
}

/// `uct_ep_op_info_t::am.header`: an inline 64-bit value (short AM) or a
/// buffer (zcopy AM).
#[repr(C)]
#[derive(Clone, Copy)]
pub union uct_ep_op_info_am_header {
    pub value: u64,
    pub zcopy: uct_ep_op_info_am_header_zcopy,
}

/// `uct_ep_op_info_t::am.payload`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union uct_ep_op_info_am_payload {
    pub data: uct_ep_op_info_data,
    pub zcopy: uct_ep_op_info_zcopy,
}

/// An active message.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_ep_op_info_am {
    pub field_mask: u16,
    pub am_id: u8,
    pub flags: c_uint,
    pub header: uct_ep_op_info_am_header,
    pub payload: uct_ep_op_info_am_payload,
}

/// A get whose data is delivered through a callback.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_ep_op_info_unpack {
    pub unpack_cb: uct_unpack_callback_t,
    pub arg: *mut c_void,
    pub length: usize,
}

/// `uct_ep_op_info_t::rma.payload`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union uct_ep_op_info_rma_payload {
    pub data: uct_ep_op_info_data,
    pub zcopy: uct_ep_op_info_zcopy,
    pub unpack: uct_ep_op_info_unpack,
}

/// A put or get.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_ep_op_info_rma {
    pub field_mask: u16,
    pub remote_addr: u64,
    pub rkey: uct_rkey_t,
    pub payload: uct_ep_op_info_rma_payload,
}

/// A flush.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_ep_op_info_flush {
    pub field_mask: u16,
    pub flags: c_uint,
}

/// An atomic operation; `size` is 4 or 8 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_ep_op_info_atomic {
    pub field_mask: u16,
    pub op: uct_atomic_op_t,
    pub remote_addr: u64,
    pub rkey: uct_rkey_t,
    pub value: u64,
    pub compare: u64,
    pub result: *mut c_void,
    pub size: usize,
}

/// The per-operation part of `uct_ep_op_info_t`; which member is valid
/// follows `operation`. UCX declares this union anonymously (C callers write
/// `info->am.am_id`); the generated header keeps it anonymous.
#[repr(C)]
#[derive(Clone, Copy)]
pub union uct_ep_op_info_detail {
    pub am: uct_ep_op_info_am,
    pub rma: uct_ep_op_info_rma,
    pub flush: uct_ep_op_info_flush,
    pub atomic: uct_ep_op_info_atomic,
}

/// An outstanding operation handed to the purge callback, with everything
/// needed to post it again on another endpoint.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_ep_op_info {
    pub field_mask: u64,
    pub operation: uct_ep_operation_t,
    pub comp: *mut uct_completion_t,
    pub detail: uct_ep_op_info_detail,
}
pub type uct_ep_op_info_t = uct_ep_op_info;

/// Called by `uct_ep_outstanding_purge` once per undelivered operation, in
/// posting order.
pub type uct_ep_outstanding_purge_callback_t =
    Option<unsafe extern "C" fn(op_info: *const uct_ep_op_info_t, arg: *mut c_void)>;

/// (In C the enum; in Rust the constants have the type of the
/// `field_mask`/`flags` member they are used with.)
pub type uct_ep_outstanding_purge_field_t = c_uint;
pub const UCT_EP_OUTSTANDING_FIELD_RX_TOKEN: u64 = 0x1;
pub const UCT_EP_OUTSTANDING_FIELD_CB: u64 = 0x2;
pub const UCT_EP_OUTSTANDING_FIELD_ARG: u64 = 0x4;

/// Parameters of `uct_ep_outstanding_purge`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_ep_outstanding_purge_params {
    pub field_mask: u64,
    /// The peer's RX token for this connection.
    pub rx_token: *const c_void,
    pub cb: uct_ep_outstanding_purge_callback_t,
    pub arg: *mut c_void,
}
pub type uct_ep_outstanding_purge_params_t = uct_ep_outstanding_purge_params;
