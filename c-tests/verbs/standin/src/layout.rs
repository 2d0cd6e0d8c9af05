//! The parts of rdma-core objects that `uct::hca::verbs::ffi` does not
//! mirror (the backend never looks at them) but a provider must lay out as
//! `infiniband/verbs.h` does: `struct ibv_device`, the tail of `struct
//! ibv_context` behind its ops table, and the pthread tail of `struct
//! ibv_cq`. Everything the backend reads or fills is reused from `ffi`.
//!
//! Offsets below were read off Debian's rdma-core 44 headers; the unit
//! tests pin them.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};

/// `IBV_SYSFS_NAME_MAX` / `IBV_SYSFS_PATH_MAX`.
pub const SYSFS_NAME_MAX: usize = 64;
pub const SYSFS_PATH_MAX: usize = 256;

/// `IBV_NODE_CA`, `IBV_TRANSPORT_IB`.
pub const NODE_CA: c_int = 1;
pub const TRANSPORT_IB: c_int = 0;

/// `struct ibv_device`: two provider-private pointers, then node and
/// transport type and the names.
#[repr(C)]
pub struct DeviceHead {
    pub private_ops: [*mut c_void; 2],
    pub node_type: c_int,
    pub transport_type: c_int,
    pub name: [c_char; SYSFS_NAME_MAX],
    pub dev_name: [c_char; SYSFS_NAME_MAX],
    pub dev_path: [c_char; SYSFS_PATH_MAX],
    pub ibdev_path: [c_char; SYSFS_PATH_MAX],
}

/// `pthread_mutex_t` on x86_64/aarch64 glibc: 40 bytes, 8-aligned.
pub type PthreadMutex = [u64; 5];

/// `struct ibv_context`: the head `ffi` mirrors (device, ops table, fds),
/// then the members it leaves out.
#[repr(C)]
pub struct ContextHead {
    pub public: uct::hca::verbs::ffi::ibv_context,
    pub mutex: PthreadMutex,
    pub abi_compat: *mut c_void,
}

/// What follows the mirrored part of `struct ibv_cq` (`mutex`, `cond`,
/// `comp_events_completed`, `async_events_completed`: 40 + 48 + 8 bytes),
/// then the rest of `struct ibv_cq_ex` (`comp_mask` and its poll function
/// pointers, all NULL: a CQ made by `mlx5dv_create_cq` is an `ibv_cq_ex`,
/// and a caller that looks for the extended poll API finds none).
pub type CqTail = [u64; 32];

/// `struct ibv_cq_init_attr_ex` (`ibv_create_cq_ex`, `mlx5dv_create_cq`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CqInitAttrEx {
    pub cqe: u32,
    pub cq_context: *mut c_void,
    pub channel: *mut uct::hca::verbs::ffi::ibv_comp_channel,
    pub comp_vector: u32,
    pub wc_flags: u64,
    pub comp_mask: u32,
    pub flags: u32,
    pub parent_domain: *mut c_void,
}

/// `IBV_CQ_INIT_ATTR_MASK_FLAGS`; `IBV_CREATE_CQ_ATTR_SINGLE_THREADED` /
/// `_IGNORE_OVERRUN` (flags the stand-in can honour by doing nothing).
pub const CQ_INIT_ATTR_MASK_FLAGS: u32 = 1 << 0;
pub const CREATE_CQ_ATTR_SINGLE_THREADED: u32 = 1 << 0;
pub const CREATE_CQ_ATTR_IGNORE_OVERRUN: u32 = 1 << 1;

/// `struct mlx5dv_cq_init_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Mlx5CqInitAttr {
    pub comp_mask: u64,
    pub cqe_comp_res_format: u8,
    pub flags: u32,
    pub cqe_size: u16,
}

/// `MLX5DV_CQ_INIT_ATTR_MASK_FLAGS` / `_CQE_SIZE` (bit 0, compressed
/// CQEs, is refused); `MLX5DV_CQ_INIT_ATTR_FLAGS_CQE_PAD`.
pub const MLX5_CQ_INIT_ATTR_MASK_FLAGS: u64 = 1 << 1;
pub const MLX5_CQ_INIT_ATTR_MASK_CQE_SIZE: u64 = 1 << 2;
pub const MLX5_CQ_INIT_ATTR_FLAGS_CQE_PAD: u32 = 1 << 0;

/// `struct ibv_qp_init_attr_ex` up to `send_ops_flags` (136 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct QpInitAttrEx {
    pub qp_context: *mut c_void,
    pub send_cq: *mut uct::hca::verbs::ffi::ibv_cq,
    pub recv_cq: *mut uct::hca::verbs::ffi::ibv_cq,
    pub srq: *mut uct::hca::verbs::ffi::ibv_srq,
    pub cap: uct::hca::verbs::ffi::ibv_qp_cap,
    pub qp_type: u32,
    pub sq_sig_all: c_int,
    pub comp_mask: u32,
    pub pd: *mut uct::hca::verbs::ffi::ibv_pd,
    pub xrcd: *mut c_void,
    pub create_flags: u32,
    pub max_tso_header: u16,
    pub rwq_ind_tbl: *mut c_void,
    pub rx_hash_conf: [u64; 3],
    pub source_qpn: u32,
    pub send_ops_flags: u64,
}

/// `IBV_QP_INIT_ATTR_PD` / `_CREATE_FLAGS`; `IBV_QPT_DRIVER` (DC QPs).
pub const QP_INIT_ATTR_PD: u32 = 1 << 0;
pub const QP_INIT_ATTR_CREATE_FLAGS: u32 = 1 << 2;
pub const QPT_DRIVER: u32 = 255;

/// `struct mlx5dv_qp_init_attr` (40 bytes; the DC part is not read).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Mlx5QpInitAttr {
    pub comp_mask: u64,
    pub create_flags: u32,
    pub dc_init_attr: [u64; 2],
    pub send_ops_flags: u64,
}

/// `MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS` (the others, DC and send
/// ops, are refused); `MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE` /
/// `_ALLOW_SCATTER_TO_CQE`.
pub const MLX5_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS: u64 = 1 << 0;
pub const MLX5_QP_CREATE_DISABLE_SCATTER_TO_CQE: u32 = 1 << 3;
pub const MLX5_QP_CREATE_ALLOW_SCATTER_TO_CQE: u32 = 1 << 4;

/// `struct mlx5dv_context_attr`; `MLX5DV_CONTEXT_FLAGS_DEVX`.
#[repr(C)]
pub struct Mlx5ContextAttr {
    pub flags: u32,
    pub comp_mask: u64,
}
pub const MLX5_CONTEXT_FLAGS_DEVX: u32 = 1 << 0;

/// `struct ibv_async_event`: the object (CQ, QP, SRQ, WQ or port number)
/// and `enum ibv_event_type`.
#[repr(C)]
pub struct AsyncEvent {
    pub element: u64,
    pub event_type: u32,
}

/// `struct ibv_ah`.
#[repr(C)]
pub struct AhHead {
    pub context: *mut uct::hca::verbs::ffi::ibv_context,
    pub pd: *mut uct::hca::verbs::ffi::ibv_pd,
    pub handle: u32,
}

/// `mlx5dv_init_obj`'s object type bit for address handles.
pub const MLX5DV_OBJ_AH: u64 = 1 << 5;

/// `struct mlx5dv_ah`: where the AH's 48-byte mlx5 address vector is.
#[repr(C)]
pub struct Mlx5dvAh {
    pub av: *mut u8,
    pub comp_mask: u64,
}

/// `struct ibv_sge`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct IbvSge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// `struct ibv_recv_wr`.
#[repr(C)]
pub struct IbvRecvWr {
    pub wr_id: u64,
    pub next: *mut IbvRecvWr,
    pub sg_list: *mut IbvSge,
    pub num_sge: std::ffi::c_int,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};
    use uct::hca::verbs::ffi::ibv_cq;

    #[test]
    fn heads_have_the_rdma_core_layout() {
        assert_eq!(offset_of!(DeviceHead, node_type), 16);
        assert_eq!(offset_of!(DeviceHead, name), 24);
        assert_eq!(size_of::<DeviceHead>(), 664);
        assert_eq!(offset_of!(ContextHead, mutex), 280);
        assert_eq!(size_of::<ContextHead>(), 328);
        assert_eq!(size_of::<ibv_cq>() + size_of::<CqTail>(), 288);
        assert_eq!(size_of::<CqInitAttrEx>(), 56);
        assert_eq!(offset_of!(CqInitAttrEx, wc_flags), 32);
        assert_eq!(offset_of!(CqInitAttrEx, parent_domain), 48);
        assert_eq!(size_of::<Mlx5CqInitAttr>(), 24);
        assert_eq!(offset_of!(Mlx5CqInitAttr, flags), 12);
        assert_eq!(offset_of!(Mlx5CqInitAttr, cqe_size), 16);
        assert_eq!(size_of::<QpInitAttrEx>(), 136);
        assert_eq!(offset_of!(QpInitAttrEx, qp_type), 52);
        assert_eq!(offset_of!(QpInitAttrEx, comp_mask), 60);
        assert_eq!(offset_of!(QpInitAttrEx, pd), 64);
        assert_eq!(offset_of!(QpInitAttrEx, create_flags), 80);
        assert_eq!(offset_of!(QpInitAttrEx, source_qpn), 120);
        assert_eq!(size_of::<Mlx5QpInitAttr>(), 40);
        assert_eq!(offset_of!(Mlx5QpInitAttr, send_ops_flags), 32);
        assert_eq!(size_of::<Mlx5ContextAttr>(), 16);
        assert_eq!(size_of::<AsyncEvent>(), 16);
        assert_eq!(size_of::<AhHead>(), 24);
        assert_eq!(size_of::<Mlx5dvAh>(), 16);
        assert_eq!(size_of::<IbvSge>(), 16);
        assert_eq!(size_of::<IbvRecvWr>(), 32);
        assert_eq!(offset_of!(IbvRecvWr, num_sge), 24);
    }
}
