//! The query slots: iface attributes (v1 and the generic part of v2),
//! device and iface addresses, reachability.

use std::ffi::c_int;

use super::args::{status_of, MAX_SHORT_IOV};
use crate::abi::*;
use crate::core::iface::query_v2_defaults;
use crate::hca::DeviceAddress;
use crate::rc::ep::EP_ADDR_LEN;
use crate::rc::iface::RcIface;

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
    | UCT_IFACE_FLAG_CB_SYNC
    | UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE
    | UCT_IFACE_FLAG_INTER_NODE;

/// Event capabilities.
pub const EVENT_FLAGS: u64 =
    UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV | UCT_IFACE_FLAG_EVENT_FD;

pub(super) unsafe extern "C" fn iface_get_device_address(
    iface: uct_iface_h,
    addr: *mut uct_device_addr_t,
) -> ucs_status_t {
    const F: &str = "uct_iface_get_device_address";
    status_of((|| {
        // SAFETY: by the caller's contract.
        let rc = unsafe { RcIface::from_handle(iface, F) }?;
        if addr.is_null() {
            tracing::warn!("{F}: addr is NULL");
            return Err(Status::InvalidParam);
        }
        // All `device_addr_len` bytes are written, the unused tail as
        // zeros: callers send the whole reported length to the peer.
        let mut packed = [0u8; DeviceAddress::MAX_PACKED_LEN];
        rc.state.address.pack(&mut packed)?;
        // SAFETY: writable for device_addr_len (= MAX_PACKED_LEN) bytes by
        // the contract.
        unsafe { std::ptr::copy_nonoverlapping(packed.as_ptr(), addr as *mut u8, packed.len()) };
        Ok(())
    })())
}

pub(super) unsafe extern "C" fn iface_get_address(
    iface: uct_iface_h,
    addr: *mut uct_iface_addr_t,
) -> ucs_status_t {
    // rc connects ep to ep; the iface address is UCX 1.13 rc_mlx5's one
    // byte, its address type: basic (no hardware tag matching).
    status_of((|| {
        // SAFETY: by the caller's contract.
        unsafe { RcIface::from_handle(iface, "uct_iface_get_address") }?;
        if addr.is_null() {
            tracing::warn!("uct_iface_get_address: NULL addr");
            return Err(Status::InvalidParam);
        }
        // SAFETY: writable for iface_addr_len (1) bytes by the contract.
        unsafe { addr.cast::<u8>().write(IFACE_ADDR_TYPE_BASIC) };
        Ok(())
    })())
}

/// Bytes of the iface address, and its only value (UCX 1.13's rc_mlx5
/// `UCT_RC_MLX5_IFACE_ADDR_TYPE_BASIC`; a peer with hardware tag matching
/// sends another type and is not reachable).
pub(super) const IFACE_ADDR_LEN: usize = 1;

pub(super) const IFACE_ADDR_TYPE_BASIC: u8 = 0;

/// Whether a peer's iface address (NULL: not given) is of a type we talk to.
///
/// # Safety
/// `iface_addr` NULL or readable for [`IFACE_ADDR_LEN`] bytes.
pub(super) unsafe fn iface_addr_reachable(iface_addr: *const uct_iface_addr_t) -> bool {
    // SAFETY: by the contract.
    iface_addr.is_null() || unsafe { iface_addr.cast::<u8>().read() } == IFACE_ADDR_TYPE_BASIC
}

/// Whether a peer's device address is one we can reach.
///
/// # Safety
/// `dev_addr` NULL or readable for `len` bytes.
pub(super) unsafe fn device_reachable(dev_addr: *const uct_device_addr_t, len: usize) -> bool {
    if dev_addr.is_null() {
        return false;
    }
    // SAFETY: by the contract.
    let bytes = unsafe { std::slice::from_raw_parts(dev_addr as *const u8, len) };
    DeviceAddress::unpack(bytes).is_ok()
}

pub(super) unsafe extern "C" fn iface_is_reachable(
    iface: uct_iface_h,
    dev_addr: *const uct_device_addr_t,
    iface_addr: *const uct_iface_addr_t,
) -> c_int {
    // SAFETY: by the caller's contract.
    if unsafe { RcIface::from_handle(iface, "uct_iface_is_reachable") }.is_err() {
        return 0;
    }
    // SAFETY: a device address of ours is MAX_PACKED_LEN bytes; an iface
    // address IFACE_ADDR_LEN.
    c_int::from(unsafe {
        iface_addr_reachable(iface_addr)
            && device_reachable(dev_addr, DeviceAddress::MAX_PACKED_LEN)
    })
}

pub(super) unsafe fn iface_is_reachable_v2(
    iface: uct_iface_h,
    params: &uct_iface_is_reachable_params_t,
) -> bool {
    // SAFETY: by the caller's contract.
    if unsafe { RcIface::from_handle(iface, "uct_iface_is_reachable_v2") }.is_err() {
        return false;
    }
    if params.field_mask & u64::from(UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR) == 0 {
        return false;
    }
    if params.field_mask & u64::from(UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR) != 0
        // SAFETY: readable for IFACE_ADDR_LEN bytes (or NULL) by the contract.
        && !unsafe { iface_addr_reachable(params.iface_addr) }
    {
        return false;
    }
    let len = if params.field_mask & u64::from(UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH) != 0
    {
        params.device_addr_length
    } else {
        DeviceAddress::MAX_PACKED_LEN
    };
    // SAFETY: readable for len bytes by the contract.
    unsafe { device_reachable(params.device_addr, len) }
}

/// The `uct_iface_attr_t` of an iface.
pub fn attributes(rc: &RcIface) -> uct_iface_attr_t {
    let limits = &rc.state.limits;
    // SAFETY: uct_iface_attr_t is plain data (numbers, a sockaddr_storage);
    // all-zero is a valid value of every field.
    let mut attr: uct_iface_attr_t = unsafe { std::mem::zeroed() };
    let mtu = rc.state.path_mtu.bytes() as usize;
    attr.cap.put.max_short = limits.put_max_short;
    attr.cap.put.max_bcopy = limits.put_max_bcopy;
    attr.cap.put.min_zcopy = 0;
    attr.cap.put.max_zcopy = limits.max_zcopy;
    attr.cap.put.opt_zcopy_align = 512;
    attr.cap.put.align_mtu = mtu;
    attr.cap.put.max_iov = limits.max_iov;
    attr.cap.get.max_short = limits.get_max_short;
    attr.cap.get.max_bcopy = limits.get_max_bcopy;
    attr.cap.get.min_zcopy = 0;
    attr.cap.get.max_zcopy = limits.max_zcopy;
    attr.cap.get.opt_zcopy_align = 512;
    attr.cap.get.align_mtu = mtu;
    attr.cap.get.max_iov = limits.max_iov;
    attr.cap.am.max_short = limits.am_max_short;
    attr.cap.am.max_bcopy = limits.am_max_bcopy;
    attr.cap.am.min_zcopy = 0;
    attr.cap.am.max_zcopy = limits.am_max_zcopy;
    attr.cap.am.opt_zcopy_align = 512;
    attr.cap.am.align_mtu = mtu;
    attr.cap.am.max_hdr = limits.am_max_hdr;
    attr.cap.am.max_iov = MAX_SHORT_IOV;
    attr.cap.flags = CAP_FLAGS;
    crate::rc::atomic::advertise(&mut attr, rc.state.domain.device.attr().atomics);
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

pub(super) unsafe extern "C" fn iface_query(
    iface: uct_iface_h,
    iface_attr: *mut uct_iface_attr_t,
) -> ucs_status_t {
    const F: &str = "uct_iface_query";
    status_of((|| {
        // SAFETY: by the caller's contract.
        let rc = unsafe { RcIface::from_handle(iface, F) }?;
        if iface_attr.is_null() {
            tracing::warn!("{F}: iface_attr is NULL");
            return Err(Status::InvalidParam);
        }
        // SAFETY: writable for sizeof(uct_iface_attr_t) (536 bytes in 1.13
        // and master, our struct's size) by the contract.
        unsafe { iface_attr.write(attributes(rc)) };
        Ok(())
    })())
}

pub(crate) unsafe fn iface_query_v2(
    iface: uct_iface_h,
    attr: *mut uct_iface_attr_v2_t,
) -> Result<(), Status> {
    // SAFETY: valid per the entry point's checks.
    unsafe { query_v2_defaults(attr) }?;
    // SAFETY: by the caller's contract.
    unsafe { RcIface::from_handle(iface, "uct_iface_query_v2") }?;
    Ok(())
}
