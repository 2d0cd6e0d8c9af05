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
use std::mem::transmute;

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
        IBV_QP_QKEY = 1 << 6,
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
        IBV_QPT_UD = 4,
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

/// A mirrored struct of integers, arrays of them and raw pointers: all-zero
/// bytes are a valid value of it (pointers NULL).
///
/// # Safety
/// Implement only for such structs (no references, no `NonNull`, no
/// function pointers that are not `Option`, no enums).
pub unsafe trait Zeroable: Sized {}

/// The all-zero value of `T`, as C code gets from `memset(0)`.
pub fn zeroed<T: Zeroable>() -> T {
    // SAFETY: `T: Zeroable`: all-zero bytes are a valid `T`.
    unsafe { std::mem::zeroed() }
}

// The structs `derive(Default)` cannot do (raw pointers, long arrays)
// default to all-zero, as C code gets from `memset(0)`.

// SAFETY: integers and a byte array only (its definition below).
unsafe impl Zeroable for ibv_device_attr {}

impl Default for ibv_device_attr {
    fn default() -> Self {
        zeroed()
    }
}

// SAFETY: raw pointers and integers only (its definition below).
unsafe impl Zeroable for ibv_qp_init_attr {}

impl Default for ibv_qp_init_attr {
    fn default() -> Self {
        zeroed()
    }
}

// SAFETY: raw pointers and integers only (its definition below).
unsafe impl Zeroable for mlx5dv_qp {}

impl Default for mlx5dv_qp {
    fn default() -> Self {
        zeroed()
    }
}

// SAFETY: raw pointers and integers only (its definition below).
unsafe impl Zeroable for mlx5dv_cq {}

impl Default for mlx5dv_cq {
    fn default() -> Self {
        zeroed()
    }
}

// SAFETY: raw pointers and integers only (its definition below).
unsafe impl Zeroable for mlx5dv_srq {}

impl Default for mlx5dv_srq {
    fn default() -> Self {
        zeroed()
    }
}

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
#[derive(Clone, Copy)]
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
#[derive(Clone, Copy)]
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
#[derive(Clone, Copy)]
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

// ------------------------------------------------------- typed arguments --

/// A live rdma-core object of type `T`, as the typed entry points take it.
/// Zero-sized and without a constructor outside this module: a `&Live<T>`
/// is the object's address, and the ones made are by
/// [`Owned::live`](super::owned::Owned::live) and
/// [`DeviceList::devices`](super::owned::DeviceList::devices) for objects
/// they keep alive for the reference's lifetime, and for the CQ of an
/// unacknowledged completion event
/// ([`VerbsChannel::clear`](super::objects::VerbsChannel::clear)).
/// Zero-sized, the reference asserts nothing about the object's bytes,
/// which the library changes.
#[repr(C)]
pub struct Live<T> {
    _private: [u8; 0],
    _object: std::marker::PhantomData<*mut T>,
}

impl<T> Live<T> {
    /// The object's address, for the calls that take it untyped.
    pub fn as_ptr(&self) -> *mut T {
        std::ptr::from_ref(self).cast_mut().cast()
    }
}

/// An object a creating entry point just returned (NULL is `None` in the
/// return type): nothing else refers to it, and its owner is the one that
/// takes it (see [`Owned`](super::owned::Owned)). No constructor outside
/// this module.
#[repr(transparent)]
pub struct Created<T>(std::ptr::NonNull<T>);

impl<T> Created<T> {
    pub fn into_raw(self) -> std::ptr::NonNull<T> {
        self.0
    }
}

impl<T: Copy> Created<T> {
    /// A copy of the object's public head (keys, numbers, fd), read while
    /// nothing else can touch the fresh object.
    pub fn head(&self) -> T {
        // SAFETY: the library returned this pointer for a live object whose
        // allocation begins with the mirrored `T`; no call has been made on
        // it yet (a `Created` is only taken by its owner), so nothing writes
        // it during the read.
        unsafe { self.0.as_ptr().read() }
    }
}

// -------------------------------------------------------------- functions --

/// The libibverbs entry points, each resolved with its symbol version.
///
/// A call is safe where every argument is typed: live objects as
/// [`Live`] references, buffers as `&mut` of the mirrored struct, created
/// objects returned as [`Created`]. The entry points left `unsafe` take an
/// object to destroy, memory to register, or raw pointers stored for later
/// (`reg_mr`, `create_cq`, `create_qp`, the destroy calls).
#[derive(Clone, Copy)]
pub struct IbvFns {
    pub get_device_list: extern "C" fn(num_devices: &mut c_int) -> *mut *mut ibv_device,
    pub free_device_list: unsafe extern "C" fn(list: *mut *mut ibv_device),
    pub get_device_name: extern "C" fn(device: &Live<ibv_device>) -> *const c_char,
    pub open_device: extern "C" fn(device: &Live<ibv_device>) -> Option<Created<ibv_context>>,
    pub close_device: unsafe extern "C" fn(context: *mut ibv_context) -> c_int,
    pub query_device:
        extern "C" fn(context: &Live<ibv_context>, attr: &mut ibv_device_attr) -> c_int,
    /// The exported compat entry point (see the module documentation).
    pub query_port:
        extern "C" fn(context: &Live<ibv_context>, port: u8, attr: &mut ibv_port_attr) -> c_int,
    /// The GID as its 16 raw bytes (`union ibv_gid` is those bytes).
    pub query_gid: extern "C" fn(
        context: &Live<ibv_context>,
        port: u8,
        index: c_int,
        gid: &mut [u8; 16],
    ) -> c_int,
    pub alloc_pd: extern "C" fn(context: &Live<ibv_context>) -> Option<Created<ibv_pd>>,
    pub dealloc_pd: unsafe extern "C" fn(pd: *mut ibv_pd) -> c_int,
    pub reg_mr: unsafe extern "C" fn(
        pd: &Live<ibv_pd>,
        addr: *mut c_void,
        length: usize,
        access: c_int,
    ) -> Option<Created<ibv_mr>>,
    pub dereg_mr: unsafe extern "C" fn(mr: *mut ibv_mr) -> c_int,
    pub create_comp_channel:
        extern "C" fn(context: &Live<ibv_context>) -> Option<Created<ibv_comp_channel>>,
    pub destroy_comp_channel: unsafe extern "C" fn(channel: *mut ibv_comp_channel) -> c_int,
    pub create_cq: unsafe extern "C" fn(
        context: &Live<ibv_context>,
        cqe: c_int,
        cq_context: *mut c_void,
        channel: Option<&Live<ibv_comp_channel>>,
        comp_vector: c_int,
    ) -> Option<Created<ibv_cq>>,
    pub destroy_cq: unsafe extern "C" fn(cq: *mut ibv_cq) -> c_int,
    pub get_cq_event: extern "C" fn(
        channel: &Live<ibv_comp_channel>,
        cq: &mut *mut ibv_cq,
        cq_context: &mut *mut c_void,
    ) -> c_int,
    pub ack_cq_events: extern "C" fn(cq: &Live<ibv_cq>, nevents: c_uint),
    pub create_srq:
        extern "C" fn(pd: &Live<ibv_pd>, attr: &mut ibv_srq_init_attr) -> Option<Created<ibv_srq>>,
    pub destroy_srq: unsafe extern "C" fn(srq: *mut ibv_srq) -> c_int,
    pub create_qp: unsafe extern "C" fn(
        pd: &Live<ibv_pd>,
        attr: *mut ibv_qp_init_attr,
    ) -> Option<Created<ibv_qp>>,
    pub modify_qp: extern "C" fn(qp: &Live<ibv_qp>, attr: &mut ibv_qp_attr, mask: c_int) -> c_int,
    pub query_qp: extern "C" fn(
        qp: &Live<ibv_qp>,
        attr: &mut ibv_qp_attr,
        mask: c_int,
        init_attr: &mut ibv_qp_init_attr,
    ) -> c_int,
    pub destroy_qp: unsafe extern "C" fn(qp: *mut ibv_qp) -> c_int,
}

/// The libmlx5 (direct verbs) entry points, typed as [`IbvFns`]'s.
#[derive(Clone, Copy)]
pub struct Mlx5Fns {
    pub init_obj: unsafe extern "C" fn(obj: *mut mlx5dv_obj, obj_type: u64) -> c_int,
    pub query_device:
        extern "C" fn(context: &Live<ibv_context>, attr: &mut mlx5dv_context) -> c_int,
    pub is_supported: extern "C" fn(device: &Live<ibv_device>) -> bool,
}

/// Both libraries, loaded. The libraries stay loaded for the life of the
/// process (never `dlclose`d), so the function pointers never dangle.
#[derive(Clone, Copy)]
pub struct Verbs {
    pub ibv: IbvFns,
    pub mlx5: Mlx5Fns,
    /// libibverbs, for optional symbols.
    libibverbs: Library,
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
    // SAFETY: dlerror takes no arguments and returns NULL or a NUL-terminated
    // thread-local message valid until the next dl* call on this thread; it
    // is copied here, before any other.
    let message = unsafe {
        let message = libc::dlerror();
        (!message.is_null()).then(|| CStr::from_ptr(message).to_string_lossy().into_owned())
    };
    message.unwrap_or_else(|| "no dlerror message".to_string())
}

/// A `dlopen`ed library from which symbols are resolved. Never closed: the
/// addresses resolved from it stay valid for the life of the process.
#[derive(Clone, Copy)]
struct Library {
    /// The `dlopen` handle (an address: handles are process-wide).
    handle: usize,
}

impl Library {
    fn open(name: &CStr) -> Result<Library, LoadError> {
        // SAFETY: `name` is a NUL-terminated string. RTLD_LOCAL keeps the
        // library's symbols out of the global namespace; RTLD_NOW makes a
        // library with unresolvable dependencies fail here, not at a call.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(LoadError::LibraryMissing {
                library: name.to_string_lossy().into_owned(),
                reason: last_dl_error(),
            });
        }
        Ok(Library {
            handle: handle as usize,
        })
    }

    /// The address of `symbol`, of `version` if given (rdma-core versions
    /// its symbols; a library without version information, such as a
    /// stand-in, matches any version); NULL if there is none.
    fn address(&self, symbol: &CStr, version: Option<&CStr>) -> *mut c_void {
        let handle = self.handle as *mut c_void;
        // SAFETY: `handle` came from a successful dlopen and is never
        // closed; the strings are NUL-terminated. Resolving runs no code of
        // the library.
        unsafe {
            match version {
                Some(version) => libc::dlvsym(handle, symbol.as_ptr(), version.as_ptr()),
                None => libc::dlsym(handle, symbol.as_ptr()),
            }
        }
    }
}

/// Resolves entry points of one library, naming the library in errors.
struct Resolver<'a> {
    library: Library,
    name: &'a CStr,
}

impl Resolver<'_> {
    /// The address of `symbol@version`; the first one missing is the error.
    fn symbol(&self, symbol: &CStr, version: &CStr) -> Result<*mut c_void, LoadError> {
        let address = self.library.address(symbol, Some(version));
        if address.is_null() {
            return Err(LoadError::SymbolMissing {
                library: self.name.to_string_lossy().into_owned(),
                symbol: format!("{}@{}", symbol.to_string_lossy(), version.to_string_lossy()),
                reason: last_dl_error(),
            });
        }
        Ok(address)
    }
}

impl IbvFns {
    #[allow(
        clippy::missing_transmute_annotations,
        reason = "each target type is the type of the field it fills, declared above"
    )]
    fn resolve(lib: &Resolver<'_>) -> Result<IbvFns, LoadError> {
        let f = |symbol: &CStr, version: &CStr| lib.symbol(symbol, version);
        let v1_1 = c"IBVERBS_1.1";
        let v1_0 = c"IBVERBS_1.0";
        // SAFETY: each address (non-NULL, the same size as a function
        // pointer: `transmute` checks) is libibverbs' function of that name
        // and version, whose C prototype (verbs.h) the field's type mirrors:
        // pointers to the objects as `Live`/`Created`/`Option` (the same
        // ABI as a nullable pointer), buffers as `&mut` of the mirrored
        // structs (layouts checked by tests/verbs_layout.rs). The fields
        // typed safe are sound with any argument values of their types:
        // their objects are live (`Live`), their buffers writable and as
        // large as the library's structs, and they create objects,
        // query, or modify a QP's state, none of which frees memory or
        // keeps a pointer of ours.
        unsafe {
            Ok(IbvFns {
                get_device_list: transmute::<*mut c_void, _>(f(c"ibv_get_device_list", v1_1)?),
                free_device_list: transmute::<*mut c_void, _>(f(c"ibv_free_device_list", v1_1)?),
                get_device_name: transmute::<*mut c_void, _>(f(c"ibv_get_device_name", v1_1)?),
                open_device: transmute::<*mut c_void, _>(f(c"ibv_open_device", v1_1)?),
                close_device: transmute::<*mut c_void, _>(f(c"ibv_close_device", v1_1)?),
                query_device: transmute::<*mut c_void, _>(f(c"ibv_query_device", v1_1)?),
                query_port: transmute::<*mut c_void, _>(f(c"ibv_query_port", v1_1)?),
                query_gid: transmute::<*mut c_void, _>(f(c"ibv_query_gid", v1_1)?),
                alloc_pd: transmute::<*mut c_void, _>(f(c"ibv_alloc_pd", v1_1)?),
                dealloc_pd: transmute::<*mut c_void, _>(f(c"ibv_dealloc_pd", v1_1)?),
                reg_mr: transmute::<*mut c_void, _>(f(c"ibv_reg_mr", v1_1)?),
                dereg_mr: transmute::<*mut c_void, _>(f(c"ibv_dereg_mr", v1_1)?),
                create_comp_channel: transmute::<*mut c_void, _>(f(
                    c"ibv_create_comp_channel",
                    v1_0,
                )?),
                destroy_comp_channel: transmute::<*mut c_void, _>(f(
                    c"ibv_destroy_comp_channel",
                    v1_0,
                )?),
                create_cq: transmute::<*mut c_void, _>(f(c"ibv_create_cq", v1_1)?),
                destroy_cq: transmute::<*mut c_void, _>(f(c"ibv_destroy_cq", v1_1)?),
                get_cq_event: transmute::<*mut c_void, _>(f(c"ibv_get_cq_event", v1_1)?),
                ack_cq_events: transmute::<*mut c_void, _>(f(c"ibv_ack_cq_events", v1_1)?),
                create_srq: transmute::<*mut c_void, _>(f(c"ibv_create_srq", v1_1)?),
                destroy_srq: transmute::<*mut c_void, _>(f(c"ibv_destroy_srq", v1_1)?),
                create_qp: transmute::<*mut c_void, _>(f(c"ibv_create_qp", v1_1)?),
                modify_qp: transmute::<*mut c_void, _>(f(c"ibv_modify_qp", v1_1)?),
                query_qp: transmute::<*mut c_void, _>(f(c"ibv_query_qp", v1_1)?),
                destroy_qp: transmute::<*mut c_void, _>(f(c"ibv_destroy_qp", v1_1)?),
            })
        }
    }
}

impl Mlx5Fns {
    #[allow(
        clippy::missing_transmute_annotations,
        reason = "each target type is the type of the field it fills, declared above"
    )]
    fn resolve(lib: &Resolver<'_>) -> Result<Mlx5Fns, LoadError> {
        let f = |symbol: &CStr, version: &CStr| lib.symbol(symbol, version);
        // SAFETY: as in `IbvFns::resolve`, for libmlx5's functions
        // (mlx5dv.h); `query_device` writes at most the struct's current
        // size, which `mlx5dv_context` exceeds, and `is_supported` only
        // reads the device.
        unsafe {
            Ok(Mlx5Fns {
                init_obj: transmute::<*mut c_void, _>(f(c"mlx5dv_init_obj", c"MLX5_1.2")?),
                query_device: transmute::<*mut c_void, _>(f(c"mlx5dv_query_device", c"MLX5_1.0")?),
                is_supported: transmute::<*mut c_void, _>(f(c"mlx5dv_is_supported", c"MLX5_1.8")?),
            })
        }
    }
}

impl Verbs {
    /// Loads the two libraries by these names and resolves every entry point;
    /// the first thing missing is the error.
    pub fn load_from(libibverbs: &CStr, libmlx5: &CStr) -> Result<Verbs, LoadError> {
        let ibv_lib = Library::open(libibverbs)?;
        let ibv = IbvFns::resolve(&Resolver {
            library: ibv_lib,
            name: libibverbs,
        })?;
        let mlx5 = Mlx5Fns::resolve(&Resolver {
            library: Library::open(libmlx5)?,
            name: libmlx5,
        })?;
        Ok(Verbs {
            ibv,
            mlx5,
            libibverbs: ibv_lib,
        })
    }

    /// The address of the unversioned `symbol` in the loaded libibverbs
    /// (or its dependencies), if it has one: for entry points that only a
    /// test stand-in provides.
    pub fn optional_symbol(&self, symbol: &CStr) -> Option<*mut c_void> {
        let address = self.libibverbs.address(symbol, None);
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
