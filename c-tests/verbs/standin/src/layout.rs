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
/// `comp_events_completed`, `async_events_completed`): 40 + 48 + 8 bytes,
/// kept so the object has the size rdma-core's has.
pub type CqTail = [u64; 12];

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
        assert_eq!(size_of::<ibv_cq>() + size_of::<CqTail>(), 128);
    }
}
