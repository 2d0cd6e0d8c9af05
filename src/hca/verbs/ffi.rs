//! The part of rdma-core's C API the verbs backend calls, written by hand
//! from Debian's `libibverbs-dev` headers (`infiniband/verbs.h`,
//! `infiniband/mlx5dv.h`, rdma-core 44) and reached only through `dlopen`:
//! the library has no link-time dependency on rdma-core, so it loads and the
//! soft HCA works where rdma-core is absent.
//!
//! Layouts and constants here are checked against those headers by
//! `tests/verbs_layout.rs` (which compiles `c-tests/verbs/verbs_layout.c`).
//! Anything added here must be added to both sides of that test.
//!
//! Only structs the backend fills or reads are mirrored; objects it merely
//! passes around (`ibv_device`, ...) are opaque, and library-allocated ones
//! it reads a few leading members of (`ibv_context`, `ibv_cq`, ...) are
//! mirrored up to those members. C enums are integer typedefs plus constants, so a value the
//! library returns that we do not know is never undefined behaviour.
//!
//! Two symbols are wrapped by inline functions in the headers:
//! * `ibv_query_port` is a macro over an inline function that prefers the
//!   context's extended op; the exported `ibv_query_port@@IBVERBS_1.1` fills
//!   the older, shorter "compat" port struct (everything up to and including
//!   `flags`, so not `port_cap_flags2`). The fields we read (state, MTUs,
//!   GID table length, LID, link layer) are all in that prefix; we pass a
//!   zeroed full-size struct so the tail stays zero.
//! * `ibv_req_notify_cq` is an inline function calling the provider's
//!   `ibv_context.ops.req_notify_cq`, so [`ibv_context_ops`] is mirrored
//!   (its layout is checked). The backend does not arm through it (see
//!   `cq_arm`); the test stand-in fills the slot and its tests call it.
//! * `ibv_reg_mr` is a macro that calls the exported `ibv_reg_mr` unless
//!   `IBV_ACCESS_OPTIONAL_RANGE` bits are requested; we never request them.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use crate::abi::ucs_status::Status;

// ---------------------------------------------------------------- opaque --

/// Opaque rdma-core objects: only pointers to them cross the boundary.
macro_rules! opaque {
    ($($name:ident),* $(,)?) => {$(
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}
opaque!(ibv_device, ibv_wq, ibv_dm, ibv_ah);

// ------------------------------------------------------------- constants --

/// A C enum of verbs.h: its type (the integer type the C code stores it in)
/// and its values as constants of that type.
macro_rules! c_enum {
    ($name:ident: $ty:ty { $($value:ident = $expr:expr,)+ }) => {
        pub type $name = $ty;
        $(pub const $value: $name = $expr;)+
    };
}

c_enum! {
    ibv_qp_attr_mask: c_uint {
        IBV_QP_STATE = 1 << 0,
        IBV_QP_CUR_STATE = 1 << 1,
        IBV_QP_ACCESS_FLAGS = 1 << 3,
        IBV_QP_PKEY_INDEX = 1 << 4,
        IBV_QP_PORT = 1 << 5,
        IBV_QP_AV = 1 << 7,
        IBV_QP_PATH_MTU = 1 << 8,
        IBV_QP_TIMEOUT = 1 << 9,
        IBV_QP_RETRY_CNT = 1 << 10,
        IBV_QP_RNR_RETRY = 1 << 11,
        IBV_QP_RQ_PSN = 1 << 12,
        IBV_QP_MAX_QP_RD_ATOMIC = 1 << 13,
        IBV_QP_MIN_RNR_TIMER = 1 << 15,
        IBV_QP_SQ_PSN = 1 << 16,
        IBV_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
        IBV_QP_CAP = 1 << 19,
        IBV_QP_DEST_QPN = 1 << 20,
    }
}

c_enum! {
    ibv_access_flags: c_uint {
        IBV_ACCESS_LOCAL_WRITE = 1 << 0,
        IBV_ACCESS_REMOTE_WRITE = 1 << 1,
        IBV_ACCESS_REMOTE_READ = 1 << 2,
        IBV_ACCESS_REMOTE_ATOMIC = 1 << 3,
    }
}

c_enum! {
    ibv_qp_type: c_uint {
        IBV_QPT_RC = 2,
    }
}

c_enum! {
    ibv_qp_state: c_uint {
        IBV_QPS_RESET = 0,
        IBV_QPS_INIT = 1,
        IBV_QPS_RTR = 2,
        IBV_QPS_RTS = 3,
        IBV_QPS_SQD = 4,
        IBV_QPS_SQE = 5,
        IBV_QPS_ERR = 6,
    }
}

c_enum! {
    ibv_mtu: c_uint {
        IBV_MTU_256 = 1,
        IBV_MTU_512 = 2,
        IBV_MTU_1024 = 3,
        IBV_MTU_2048 = 4,
        IBV_MTU_4096 = 5,
    }
}

c_enum! {
    ibv_port_state: c_uint {
        IBV_PORT_DOWN = 1,
        IBV_PORT_INIT = 2,
        IBV_PORT_ARMED = 3,
        IBV_PORT_ACTIVE = 4,
        IBV_PORT_ACTIVE_DEFER = 5,
    }
}

/// `ibv_port_attr::link_layer` values (an anonymous enum in verbs.h).
pub const IBV_LINK_LAYER_UNSPECIFIED: u8 = 0;
pub const IBV_LINK_LAYER_INFINIBAND: u8 = 1;
pub const IBV_LINK_LAYER_ETHERNET: u8 = 2;

c_enum! {
    ibv_atomic_cap: c_uint {
        IBV_ATOMIC_NONE = 0,
        IBV_ATOMIC_HCA = 1,
        IBV_ATOMIC_GLOB = 2,
    }
}

pub type ibv_mig_state = c_uint;

c_enum! {
    mlx5dv_obj_type: u64 {
        MLX5DV_OBJ_QP = 1 << 0,
        MLX5DV_OBJ_CQ = 1 << 1,
        MLX5DV_OBJ_SRQ = 1 << 2,
    }
}

pub const MLX5DV_CONTEXT_FLAGS_CQE_V1: u64 = 1 << 0;
pub const MLX5DV_SRQ_MASK_SRQN: u64 = 1 << 0;

// --------------------------------------------------------------- structs --

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_device_attr {
    pub fw_ver: [c_char; 64],
    /// Big-endian, as the device reports it.
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: c_int,
    pub max_qp_wr: c_int,
    pub device_cap_flags: c_uint,
    pub max_sge: c_int,
    pub max_sge_rd: c_int,
    pub max_cq: c_int,
    pub max_cqe: c_int,
    pub max_mr: c_int,
    pub max_pd: c_int,
    pub max_qp_rd_atom: c_int,
    pub max_ee_rd_atom: c_int,
    pub max_res_rd_atom: c_int,
    pub max_qp_init_rd_atom: c_int,
    pub max_ee_init_rd_atom: c_int,
    pub atomic_cap: ibv_atomic_cap,
    pub max_ee: c_int,
    pub max_rdd: c_int,
    pub max_mw: c_int,
    pub max_raw_ipv6_qp: c_int,
    pub max_raw_ethy_qp: c_int,
    pub max_mcast_grp: c_int,
    pub max_mcast_qp_attach: c_int,
    pub max_total_mcast_qp_attach: c_int,
    pub max_ah: c_int,
    pub max_fmr: c_int,
    pub max_map_per_fmr: c_int,
    pub max_srq: c_int,
    pub max_srq_wr: c_int,
    pub max_srq_sge: c_int,
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_port_attr {
    pub state: ibv_port_state,
    pub max_mtu: ibv_mtu,
    pub active_mtu: ibv_mtu,
    pub gid_tbl_len: c_int,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
    pub port_cap_flags2: u16,
}

/// The two 64-bit halves of a GID, both big-endian.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_gid_global {
    pub subnet_prefix: u64,
    pub interface_id: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union ibv_gid {
    pub raw: [u8; 16],
    pub global: ibv_gid_global,
}

impl Default for ibv_gid {
    fn default() -> Self {
        ibv_gid { raw: [0; 16] }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_global_route {
    pub dgid: ibv_gid,
    pub flow_label: u32,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_ah_attr {
    pub grh: ibv_global_route,
    pub dlid: u16,
    pub sl: u8,
    pub src_path_bits: u8,
    pub static_rate: u8,
    pub is_global: u8,
    pub port_num: u8,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_qp_cap {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_qp_init_attr {
    pub qp_context: *mut c_void,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut ibv_srq,
    pub cap: ibv_qp_cap,
    pub qp_type: ibv_qp_type,
    pub sq_sig_all: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_qp_attr {
    pub qp_state: ibv_qp_state,
    pub cur_qp_state: ibv_qp_state,
    pub path_mtu: ibv_mtu,
    pub path_mig_state: ibv_mig_state,
    pub qkey: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_qp_num: u32,
    pub qp_access_flags: c_uint,
    pub cap: ibv_qp_cap,
    pub ah_attr: ibv_ah_attr,
    pub alt_ah_attr: ibv_ah_attr,
    pub pkey_index: u16,
    pub alt_pkey_index: u16,
    pub en_sqd_async_notify: u8,
    pub sq_draining: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub port_num: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub alt_port_num: u8,
    pub alt_timeout: u8,
    pub rate_limit: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct ibv_srq_attr {
    pub max_wr: u32,
    pub max_sge: u32,
    pub srq_limit: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_srq_init_attr {
    pub srq_context: *mut c_void,
    pub attr: ibv_srq_attr,
}

/// The public head of a protection domain.
#[repr(C)]
pub struct ibv_pd {
    pub context: *mut ibv_context,
    pub handle: u32,
}

/// The public head of a memory registration: the keys are read from here.
#[repr(C)]
pub struct ibv_mr {
    pub context: *mut ibv_context,
    pub pd: *mut ibv_pd,
    pub addr: *mut c_void,
    pub length: usize,
    pub handle: u32,
    pub lkey: u32,
    pub rkey: u32,
}

/// The provider's operations table inside [`ibv_context`]. Only
/// `req_notify_cq` is typed (what the inline `ibv_req_notify_cq` calls);
/// the other slots keep their places as untyped pointers.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_context_ops {
    /// `_compat_query_device` .. `_compat_create_cq` (11 slots).
    pub leading: [*mut c_void; 11],
    pub poll_cq: *mut c_void,
    pub req_notify_cq:
        Option<unsafe extern "C" fn(cq: *mut ibv_cq, solicited_only: c_int) -> c_int>,
    /// `_compat_cq_event` .. `_compat_async_event` (19 slots).
    pub trailing: [*mut c_void; 19],
}

/// The public head of a device context (the mutex and what follows are
/// not mirrored: the library allocates contexts).
#[repr(C)]
pub struct ibv_context {
    pub device: *mut ibv_device,
    pub ops: ibv_context_ops,
    pub cmd_fd: c_int,
    pub async_fd: c_int,
    pub num_comp_vectors: c_int,
}

/// A completion channel: `fd` becomes readable when an armed CQ of the
/// channel gets a completion.
#[repr(C)]
pub struct ibv_comp_channel {
    pub context: *mut ibv_context,
    pub fd: c_int,
    pub refcnt: c_int,
}

/// A CQ; only its address is used (the ring comes from `mlx5dv_init_obj`),
/// so the pthread members behind `cqe` are not mirrored.
#[repr(C)]
pub struct ibv_cq {
    pub context: *mut ibv_context,
    pub channel: *mut ibv_comp_channel,
    pub cq_context: *mut c_void,
    pub handle: u32,
    pub cqe: c_int,
}

/// An SRQ; only its address is used.
#[repr(C)]
pub struct ibv_srq {
    pub context: *mut ibv_context,
    pub srq_context: *mut c_void,
    pub pd: *mut ibv_pd,
    pub handle: u32,
}

/// The public head of a QP: `qp_num` is read from here.
#[repr(C)]
pub struct ibv_qp {
    pub context: *mut ibv_context,
    pub qp_context: *mut c_void,
    pub pd: *mut ibv_pd,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut ibv_srq,
    pub handle: u32,
    pub qp_num: u32,
    pub state: ibv_qp_state,
    pub qp_type: ibv_qp_type,
}

/// A work queue inside [`mlx5dv_qp`] (the anonymous `sq`/`rq` structs).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct mlx5dv_qp_ring {
    pub buf: *mut c_void,
    pub wqe_cnt: u32,
    pub stride: u32,
}

/// The BlueFlame register of a QP (the anonymous `bf` struct).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct mlx5dv_qp_bf {
    pub reg: *mut c_void,
    pub size: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct mlx5dv_qp {
    pub dbrec: *mut u32,
    pub sq: mlx5dv_qp_ring,
    pub rq: mlx5dv_qp_ring,
    pub bf: mlx5dv_qp_bf,
    pub comp_mask: u64,
    pub uar_mmap_offset: libc::off_t,
    pub tirn: u32,
    pub tisn: u32,
    pub rqn: u32,
    pub sqn: u32,
    pub tir_icm_addr: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct mlx5dv_cq {
    pub buf: *mut c_void,
    pub dbrec: *mut u32,
    pub cqe_cnt: u32,
    pub cqe_size: u32,
    pub cq_uar: *mut c_void,
    pub cqn: u32,
    pub comp_mask: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct mlx5dv_srq {
    pub buf: *mut c_void,
    pub dbrec: *mut u32,
    pub stride: u32,
    pub head: u32,
    pub tail: u32,
    pub comp_mask: u64,
    pub srqn: u32,
}

/// One `in`/`out` pair of [`mlx5dv_obj`].
#[repr(C)]
pub struct mlx5dv_obj_pair<In, Out> {
    pub r#in: *mut In,
    pub out: *mut Out,
}

impl<In, Out> Default for mlx5dv_obj_pair<In, Out> {
    fn default() -> Self {
        mlx5dv_obj_pair {
            r#in: std::ptr::null_mut(),
            out: std::ptr::null_mut(),
        }
    }
}

/// The request of `mlx5dv_init_obj`. The members we never ask for keep
/// their place with untyped pointers.
#[repr(C)]
#[derive(Default)]
pub struct mlx5dv_obj {
    pub qp: mlx5dv_obj_pair<ibv_qp, mlx5dv_qp>,
    pub cq: mlx5dv_obj_pair<ibv_cq, mlx5dv_cq>,
    pub srq: mlx5dv_obj_pair<ibv_srq, mlx5dv_srq>,
    pub rwq: mlx5dv_obj_pair<ibv_wq, c_void>,
    pub dm: mlx5dv_obj_pair<ibv_dm, c_void>,
    pub ah: mlx5dv_obj_pair<ibv_ah, c_void>,
    pub pd: mlx5dv_obj_pair<ibv_pd, c_void>,
}

/// The head of `struct mlx5dv_context` (the fields this backend reads),
/// followed by room for the rest: the struct grows with rdma-core releases
/// and the library writes only the parts `comp_mask` asks for, but we keep
/// the whole current size (checked by the layout test) and more.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct mlx5dv_context {
    pub version: u8,
    pub flags: u64,
    pub comp_mask: u64,
    pub reserved: [u8; MLX5DV_CONTEXT_ROOM],
}

/// Bytes behind `comp_mask` in [`mlx5dv_context`].
pub const MLX5DV_CONTEXT_ROOM: usize = 488;

impl Default for mlx5dv_context {
    fn default() -> Self {
        mlx5dv_context {
            version: 0,
            flags: 0,
            comp_mask: 0,
            reserved: [0; MLX5DV_CONTEXT_ROOM],
        }
    }
}

// -------------------------------------------------------------- functions --

/// The libibverbs entry points, each resolved with its symbol version.
#[derive(Clone, Copy)]
pub struct IbvFns {
    pub get_device_list: unsafe extern "C" fn(num_devices: *mut c_int) -> *mut *mut ibv_device,
    pub free_device_list: unsafe extern "C" fn(list: *mut *mut ibv_device),
    pub get_device_name: unsafe extern "C" fn(device: *mut ibv_device) -> *const c_char,
    pub open_device: unsafe extern "C" fn(device: *mut ibv_device) -> *mut ibv_context,
    pub close_device: unsafe extern "C" fn(context: *mut ibv_context) -> c_int,
    pub query_device:
        unsafe extern "C" fn(context: *mut ibv_context, attr: *mut ibv_device_attr) -> c_int,
    /// The exported compat entry point (see the module documentation).
    pub query_port: unsafe extern "C" fn(
        context: *mut ibv_context,
        port: u8,
        attr: *mut ibv_port_attr,
    ) -> c_int,
    pub query_gid: unsafe extern "C" fn(
        context: *mut ibv_context,
        port: u8,
        index: c_int,
        gid: *mut ibv_gid,
    ) -> c_int,
    pub alloc_pd: unsafe extern "C" fn(context: *mut ibv_context) -> *mut ibv_pd,
    pub dealloc_pd: unsafe extern "C" fn(pd: *mut ibv_pd) -> c_int,
    pub reg_mr: unsafe extern "C" fn(
        pd: *mut ibv_pd,
        addr: *mut c_void,
        length: usize,
        access: c_int,
    ) -> *mut ibv_mr,
    pub dereg_mr: unsafe extern "C" fn(mr: *mut ibv_mr) -> c_int,
    pub create_comp_channel:
        unsafe extern "C" fn(context: *mut ibv_context) -> *mut ibv_comp_channel,
    pub destroy_comp_channel: unsafe extern "C" fn(channel: *mut ibv_comp_channel) -> c_int,
    pub create_cq: unsafe extern "C" fn(
        context: *mut ibv_context,
        cqe: c_int,
        cq_context: *mut c_void,
        channel: *mut ibv_comp_channel,
        comp_vector: c_int,
    ) -> *mut ibv_cq,
    pub destroy_cq: unsafe extern "C" fn(cq: *mut ibv_cq) -> c_int,
    pub get_cq_event: unsafe extern "C" fn(
        channel: *mut ibv_comp_channel,
        cq: *mut *mut ibv_cq,
        cq_context: *mut *mut c_void,
    ) -> c_int,
    pub ack_cq_events: unsafe extern "C" fn(cq: *mut ibv_cq, nevents: c_uint),
    pub create_srq:
        unsafe extern "C" fn(pd: *mut ibv_pd, attr: *mut ibv_srq_init_attr) -> *mut ibv_srq,
    pub destroy_srq: unsafe extern "C" fn(srq: *mut ibv_srq) -> c_int,
    pub create_qp:
        unsafe extern "C" fn(pd: *mut ibv_pd, attr: *mut ibv_qp_init_attr) -> *mut ibv_qp,
    pub modify_qp:
        unsafe extern "C" fn(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, mask: c_int) -> c_int,
    pub query_qp: unsafe extern "C" fn(
        qp: *mut ibv_qp,
        attr: *mut ibv_qp_attr,
        mask: c_int,
        init_attr: *mut ibv_qp_init_attr,
    ) -> c_int,
    pub destroy_qp: unsafe extern "C" fn(qp: *mut ibv_qp) -> c_int,
}

/// The libmlx5 (direct verbs) entry points.
#[derive(Clone, Copy)]
pub struct Mlx5Fns {
    pub init_obj: unsafe extern "C" fn(obj: *mut mlx5dv_obj, obj_type: u64) -> c_int,
    pub query_device:
        unsafe extern "C" fn(context: *mut ibv_context, attr: *mut mlx5dv_context) -> c_int,
    pub is_supported: unsafe extern "C" fn(device: *mut ibv_device) -> bool,
}

/// Both libraries, loaded. The libraries stay loaded for the life of the
/// process (never `dlclose`d), so the function pointers never dangle.
#[derive(Clone, Copy)]
pub struct Verbs {
    pub ibv: IbvFns,
    pub mlx5: Mlx5Fns,
    /// The `dlopen` handle of libibverbs (an address: handles are
    /// process-wide and never closed), for optional symbols.
    libibverbs_handle: usize,
}

/// The sonames the backend loads by default.
pub const LIBIBVERBS: &CStr = c"libibverbs.so.1";
pub const LIBMLX5: &CStr = c"libmlx5.so.1";

/// Test-only overrides of the library names (for a stand-in library, or a
/// bogus name to exercise the fallback). Not `UCX_*`: not a user setting.
pub const LIBIBVERBS_OVERRIDE_ENV: &str = "UCT_VERBS_LIBIBVERBS";
pub const LIBMLX5_OVERRIDE_ENV: &str = "UCT_VERBS_LIBMLX5";

/// Why rdma-core could not be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// `dlopen` failed: rdma-core (or this part of it) is not installed.
    #[error("cannot load {library} (is rdma-core installed?): {reason}")]
    LibraryMissing { library: String, reason: String },
    /// The library is there but lacks an entry point: rdma-core too old (or
    /// not rdma-core at all).
    #[error("{library} has no {symbol} (rdma-core too old or not rdma-core): {reason}")]
    SymbolMissing {
        library: String,
        symbol: String,
        reason: String,
    },
}

impl LoadError {
    pub fn status(&self) -> Status {
        match self {
            LoadError::LibraryMissing { .. } => Status::NoDevice,
            LoadError::SymbolMissing { .. } => Status::Unsupported,
        }
    }
}

/// The text of the last `dlerror()`, or a placeholder.
fn last_dl_error() -> String {
    // SAFETY: dlerror takes no arguments; it returns NULL or a pointer to a
    // NUL-terminated thread-local message valid until the next dl* call on
    // this thread, which we copy before making one.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        return "no dlerror message".to_string();
    }
    // SAFETY: non-NULL dlerror results are NUL-terminated strings (above).
    unsafe { CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned()
}

/// A `dlopen`ed library from which symbols are resolved.
struct Library {
    name: String,
    handle: *mut c_void,
}

impl Library {
    fn open(name: &CStr) -> Result<Library, LoadError> {
        // SAFETY: `name` is a NUL-terminated string. RTLD_LOCAL keeps the
        // library's symbols out of the global namespace; RTLD_NOW makes a
        // library with unresolvable dependencies fail here, not at a call.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        let display = name.to_string_lossy().into_owned();
        if handle.is_null() {
            return Err(LoadError::LibraryMissing {
                library: display,
                reason: last_dl_error(),
            });
        }
        Ok(Library {
            name: display,
            handle,
        })
    }

    /// The address of `symbol` in the version `version` (rdma-core versions
    /// its symbols; a library without version information, such as a
    /// stand-in, matches any version).
    fn symbol(&self, symbol: &CStr, version: &CStr) -> Result<*mut c_void, LoadError> {
        // SAFETY: `handle` came from a successful dlopen and is never closed;
        // both strings are NUL-terminated.
        let address = unsafe { libc::dlvsym(self.handle, symbol.as_ptr(), version.as_ptr()) };
        if address.is_null() {
            return Err(LoadError::SymbolMissing {
                library: self.name.clone(),
                symbol: format!("{}@{}", symbol.to_string_lossy(), version.to_string_lossy()),
                reason: last_dl_error(),
            });
        }
        Ok(address)
    }
}

/// Reinterprets a symbol address as the function pointer type `F`.
///
/// # Safety
/// `F` must be an `unsafe extern "C" fn` type whose signature is the C
/// prototype of the function at `address`.
unsafe fn function_at<F: Copy>(address: *mut c_void) -> F {
    const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<*mut c_void>()) };
    // SAFETY: same size (checked above); the caller guarantees that `F` is
    // the function's pointer type, and a non-NULL code address is a valid
    // value of such a type.
    unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) }
}

/// Resolves `$symbol@$version` from `$lib` as a function pointer of the
/// type of the field it is assigned to.
macro_rules! resolve {
    ($lib:expr, $symbol:literal, $version:literal) => {{
        let address = $lib.symbol($symbol, $version)?;
        // SAFETY: the symbol is rdma-core's function of that name and
        // version, whose C prototype (verbs.h / mlx5dv.h) the field type
        // mirrors (the signatures are reviewed against the headers; the
        // layouts they pass are checked by tests/verbs_layout.rs).
        unsafe { function_at(address) }
    }};
}

impl Verbs {
    /// Loads the two libraries by these names and resolves every entry point;
    /// the first thing missing is the error.
    pub fn load_from(libibverbs: &CStr, libmlx5: &CStr) -> Result<Verbs, LoadError> {
        let ibv_lib = Library::open(libibverbs)?;
        let ibv = IbvFns {
            get_device_list: resolve!(ibv_lib, c"ibv_get_device_list", c"IBVERBS_1.1"),
            free_device_list: resolve!(ibv_lib, c"ibv_free_device_list", c"IBVERBS_1.1"),
            get_device_name: resolve!(ibv_lib, c"ibv_get_device_name", c"IBVERBS_1.1"),
            open_device: resolve!(ibv_lib, c"ibv_open_device", c"IBVERBS_1.1"),
            close_device: resolve!(ibv_lib, c"ibv_close_device", c"IBVERBS_1.1"),
            query_device: resolve!(ibv_lib, c"ibv_query_device", c"IBVERBS_1.1"),
            query_port: resolve!(ibv_lib, c"ibv_query_port", c"IBVERBS_1.1"),
            query_gid: resolve!(ibv_lib, c"ibv_query_gid", c"IBVERBS_1.1"),
            alloc_pd: resolve!(ibv_lib, c"ibv_alloc_pd", c"IBVERBS_1.1"),
            dealloc_pd: resolve!(ibv_lib, c"ibv_dealloc_pd", c"IBVERBS_1.1"),
            reg_mr: resolve!(ibv_lib, c"ibv_reg_mr", c"IBVERBS_1.1"),
            dereg_mr: resolve!(ibv_lib, c"ibv_dereg_mr", c"IBVERBS_1.1"),
            create_comp_channel: resolve!(ibv_lib, c"ibv_create_comp_channel", c"IBVERBS_1.0"),
            destroy_comp_channel: resolve!(ibv_lib, c"ibv_destroy_comp_channel", c"IBVERBS_1.0"),
            create_cq: resolve!(ibv_lib, c"ibv_create_cq", c"IBVERBS_1.1"),
            destroy_cq: resolve!(ibv_lib, c"ibv_destroy_cq", c"IBVERBS_1.1"),
            get_cq_event: resolve!(ibv_lib, c"ibv_get_cq_event", c"IBVERBS_1.1"),
            ack_cq_events: resolve!(ibv_lib, c"ibv_ack_cq_events", c"IBVERBS_1.1"),
            create_srq: resolve!(ibv_lib, c"ibv_create_srq", c"IBVERBS_1.1"),
            destroy_srq: resolve!(ibv_lib, c"ibv_destroy_srq", c"IBVERBS_1.1"),
            create_qp: resolve!(ibv_lib, c"ibv_create_qp", c"IBVERBS_1.1"),
            modify_qp: resolve!(ibv_lib, c"ibv_modify_qp", c"IBVERBS_1.1"),
            query_qp: resolve!(ibv_lib, c"ibv_query_qp", c"IBVERBS_1.1"),
            destroy_qp: resolve!(ibv_lib, c"ibv_destroy_qp", c"IBVERBS_1.1"),
        };
        let mlx5_lib = Library::open(libmlx5)?;
        let mlx5 = Mlx5Fns {
            init_obj: resolve!(mlx5_lib, c"mlx5dv_init_obj", c"MLX5_1.2"),
            query_device: resolve!(mlx5_lib, c"mlx5dv_query_device", c"MLX5_1.0"),
            is_supported: resolve!(mlx5_lib, c"mlx5dv_is_supported", c"MLX5_1.8"),
        };
        // The handles are dropped without dlclose on purpose: the function
        // pointers above must stay valid for the life of the process.
        Ok(Verbs {
            ibv,
            mlx5,
            libibverbs_handle: ibv_lib.handle as usize,
        })
    }

    /// The address of the unversioned `symbol` in the loaded libibverbs
    /// (or its dependencies), if it has one: for entry points that only a
    /// test stand-in provides.
    pub fn optional_symbol(&self, symbol: &CStr) -> Option<*mut c_void> {
        // SAFETY: the handle came from a successful dlopen and is never
        // closed; `symbol` is NUL-terminated.
        let address =
            unsafe { libc::dlsym(self.libibverbs_handle as *mut c_void, symbol.as_ptr()) };
        (!address.is_null()).then_some(address)
    }

    /// Loads rdma-core by its sonames (or the test overrides in
    /// `UCT_VERBS_LIBIBVERBS` / `UCT_VERBS_LIBMLX5`).
    pub fn load() -> Result<Verbs, LoadError> {
        let from_env = |var: &str, default: &CStr| -> std::ffi::CString {
            std::env::var_os(var)
                .and_then(|v| {
                    std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(v.as_os_str()))
                        .ok()
                })
                .unwrap_or_else(|| default.to_owned())
        };
        let ibv = from_env(LIBIBVERBS_OVERRIDE_ENV, LIBIBVERBS);
        let mlx5 = from_env(LIBMLX5_OVERRIDE_ENV, LIBMLX5);
        Verbs::load_from(&ibv, &mlx5)
    }

    /// The process-wide instance, loaded on first use. A failure is logged
    /// once (debug: no rdma-core is the normal case on a machine without a
    /// NIC) and remembered.
    pub fn get() -> Result<&'static Verbs, &'static LoadError> {
        static VERBS: std::sync::OnceLock<Result<Verbs, LoadError>> = std::sync::OnceLock::new();
        VERBS
            .get_or_init(|| {
                let loaded = Verbs::load();
                match &loaded {
                    Ok(_) => tracing::debug!("verbs: rdma-core loaded (libibverbs, libmlx5)"),
                    Err(e) => tracing::debug!("verbs: not using rdma-core: {e}"),
                }
                loaded
            })
            .as_ref()
    }
}
