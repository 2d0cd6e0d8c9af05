//! The public heads of rdma-core objects that `uct::hca::verbs::ffi` keeps
//! opaque (the backend never looks inside them) but a provider must lay out
//! as `infiniband/verbs.h` does: `struct ibv_device`, `struct ibv_context`
//! with its `ops` table (the inline `ibv_req_notify_cq` calls
//! `cq->context->ops.req_notify_cq`), and the pthread tail of `struct ibv_cq`.
//! Everything the backend does read or fill is reused from `ffi`.
//!
//! Offsets below were read off Debian's rdma-core 44 headers; the unit
//! tests pin them.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};

use uct::hca::verbs::ffi::ibv_cq;

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

/// `ibv_context_ops::req_notify_cq`.
pub type ReqNotifyCq = unsafe extern "C" fn(cq: *mut ibv_cq, solicited_only: c_int) -> c_int;

/// Slots of `struct ibv_context_ops` before `req_notify_cq` (the
/// `_compat_*` entries, `alloc_mw`, `bind_mw`, `dealloc_mw`, `poll_cq`)
/// and after it (up to `_compat_async_event`); 32 pointers in all.
pub const OPS_BEFORE_REQ_NOTIFY: usize = 12;
pub const OPS_AFTER_REQ_NOTIFY: usize = 19;

/// `struct ibv_context_ops`. Only `req_notify_cq` is provided: the other
/// slots are NULL, like a provider that lacks them (the backend calls none).
#[repr(C)]
pub struct ContextOps {
    pub before: [*mut c_void; OPS_BEFORE_REQ_NOTIFY],
    pub req_notify_cq: Option<ReqNotifyCq>,
    pub after: [*mut c_void; OPS_AFTER_REQ_NOTIFY],
}

/// `pthread_mutex_t` on x86_64/aarch64 glibc: 40 bytes, 8-aligned.
pub type PthreadMutex = [u64; 5];

/// `struct ibv_context`.
#[repr(C)]
pub struct ContextHead {
    pub device: *mut uct::hca::verbs::ffi::ibv_device,
    pub ops: ContextOps,
    pub cmd_fd: c_int,
    pub async_fd: c_int,
    pub num_comp_vectors: c_int,
    pub mutex: PthreadMutex,
    pub abi_compat: *mut c_void,
}

/// What follows the mirrored part of `struct ibv_cq` (`mutex`, `cond`,
/// `comp_events_completed`, `async_events_completed`): 40 + 48 + 8 bytes,
/// kept so the object has the size rdma-core's has.
pub type CqTail = [u64; 12];

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn heads_have_the_rdma_core_layout() {
        assert_eq!(offset_of!(DeviceHead, node_type), 16);
        assert_eq!(offset_of!(DeviceHead, name), 24);
        assert_eq!(size_of::<DeviceHead>(), 664);
        assert_eq!(size_of::<ContextOps>(), 32 * 8);
        assert_eq!(offset_of!(ContextHead, ops), 8);
        assert_eq!(
            offset_of!(ContextHead, ops) + offset_of!(ContextOps, req_notify_cq),
            104
        );
        assert_eq!(offset_of!(ContextHead, cmd_fd), 264);
        assert_eq!(offset_of!(ContextHead, num_comp_vectors), 272);
        assert_eq!(offset_of!(ContextHead, mutex), 280);
        assert_eq!(size_of::<ContextHead>(), 328);
        assert_eq!(size_of::<ibv_cq>() + size_of::<CqTail>(), 128);
    }
}
