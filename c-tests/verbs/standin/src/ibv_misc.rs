//! The rest of libibverbs that programs built against rdma-core import
//! (Debian's UCX modules, `ibv_devinfo`, `ibv_devices`) beyond what our
//! backend resolves: address handles, asynchronous events, P_Keys,
//! `ibv_fork_init`, the name strings, the device GUID, sysfs reads and the
//! GID type.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::os::fd::AsRawFd;

use uct::hca::soft::{SoftAh, PORT};
use uct::hca::verbs::ffi::*;
use uct::mlx5;

use crate::devices;
use crate::ibv::set_errno;
use crate::layout::{AhHead, AsyncEvent};
use crate::objects::{adopt, get, release, Ah, Context, Pd};

macro_rules! refuse {
    ($function:literal, $($why:tt)+) => {
        tracing::warn!("verbs stand-in: {}: {}", $function, format_args!($($why)+))
    };
}

/// rdma-core's `ibv_fork_init`: nothing to prepare (the soft device's
/// registrations pin nothing), so success.
#[no_mangle]
pub extern "C" fn ibv_fork_init() -> c_int {
    0
}

/// rdma-core's `ibv_query_pkey`: the port's one P_Key (index 0), the
/// default full-membership 0xffff, big-endian as verbs returns it.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_pkey(
    context: *mut ibv_context,
    port: u8,
    index: c_int,
    pkey: *mut u16,
) -> c_int {
    // SAFETY: live-handle lookup.
    if unsafe { get::<Context, _>(context) }.is_none()
        || pkey.is_null()
        || port != PORT
        || index != 0
    {
        refuse!(
            "ibv_query_pkey",
            "context {context:p}, port {port}, index {index} (port 1, index 0 only)"
        );
        set_errno(libc::EINVAL);
        return -1;
    }
    // SAFETY: writable (checked non-NULL).
    unsafe { pkey.write(0xffffu16.to_be()) };
    0
}

/// rdma-core's `ibv_create_ah`, on the soft HCA: an address handle for a
/// soft HCA port, named by its GID (RoCE: `is_global` with SGID index 0 of
/// port 1). A GID no soft port has is refused (EINVAL), as a RoCE kernel
/// refuses a destination it cannot resolve. The handle keeps the mlx5
/// address vector that `mlx5dv_init_obj(MLX5DV_OBJ_AH)` returns.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_create_ah(pd: *mut ibv_pd, attr: *mut ibv_ah_attr) -> *mut c_void {
    // SAFETY: live-handle lookup.
    let Some(object) = (unsafe { get::<Pd, _>(pd) }) else {
        refuse!("ibv_create_ah", "unknown PD {pd:p}");
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    };
    if attr.is_null() {
        refuse!("ibv_create_ah", "NULL attr");
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    // SAFETY: readable (checked non-NULL).
    let attr = unsafe { *attr };
    if attr.port_num != PORT || attr.is_global != 1 || attr.grh.sgid_index != 0 {
        refuse!(
            "ibv_create_ah",
            "port {}, is_global {}, sgid_index {} (RoCE: a GRH from GID 0 of port 1)",
            attr.port_num,
            attr.is_global,
            attr.grh.sgid_index
        );
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    // SAFETY: every bit pattern is a valid `raw` array.
    let dgid = unsafe { attr.grh.dgid.raw };
    let soft = match object.soft.create_ah(dgid) {
        Ok(soft) => soft,
        Err(_) => {
            refuse!("ibv_create_ah", "GID {dgid:02x?} is no soft HCA port");
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
    };
    let ah = adopt(Ah {
        head: AhHead {
            context: object.head.context,
            pd,
            handle: 0,
        },
        pd: object,
        attr,
        soft,
        av: address_vector(&soft, &attr),
    });
    ah.cast()
}

/// The mlx5 address vector of an AH: the soft device's datagram segment
/// for that port (no destination QPN, no Q_Key: the send WQE supplies
/// them) with the caller's SL, traffic class, hop limit and flow label.
fn address_vector(soft: &SoftAh, attr: &ibv_ah_attr) -> [u8; mlx5::DatagramSeg::LEN] {
    let mut seg = soft.datagram(0, 0);
    seg.stat_rate_sl = attr.sl & 0x0f;
    seg.tclass = attr.grh.traffic_class;
    seg.hop_limit = attr.grh.hop_limit;
    seg.grh_gid_fl = mlx5::MLX5_AV_GRH | (attr.grh.flow_label & 0x000f_ffff);
    let mut av = [0u8; mlx5::DatagramSeg::LEN];
    seg.write(&mut av);
    av
}

/// rdma-core's `ibv_destroy_ah`.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused).
#[no_mangle]
pub unsafe extern "C" fn ibv_destroy_ah(ah: *mut c_void) -> c_int {
    // SAFETY: live-handle lookup and release of the same handle.
    match unsafe { release::<Ah, _>(ah) } {
        Some(object) => {
            drop(object);
            0
        }
        None => {
            refuse!("ibv_destroy_ah", "unknown AH {ah:p}");
            set_errno(libc::EINVAL);
            libc::EINVAL
        }
    }
}

/// rdma-core's `ibv_get_async_event`: reads the context's `async_fd`,
/// blocking unless the caller made it non-blocking (then -1, EAGAIN, when
/// nothing is queued). The stand-in queues no asynchronous events (see
/// `open_context`), so a blocking call waits as on a quiet NIC.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_get_async_event(
    context: *mut ibv_context,
    event: *mut AsyncEvent,
) -> c_int {
    // SAFETY: live-handle lookup.
    let Some(ctx) = (unsafe { get::<Context, _>(context) }) else {
        refuse!("ibv_get_async_event", "unknown context {context:p}");
        set_errno(libc::EINVAL);
        return -1;
    };
    if event.is_null() {
        refuse!("ibv_get_async_event", "NULL event");
        set_errno(libc::EINVAL);
        return -1;
    }
    let mut count = 0u64;
    // SAFETY: 8 bytes into a live u64 from our own eventfd.
    let n = unsafe {
        libc::read(
            ctx.async_events.as_raw_fd(),
            std::ptr::from_mut(&mut count).cast(),
            8,
        )
    };
    if n < 0 {
        return -1; // errno from read (EAGAIN when non-blocking and empty)
    }
    // Nothing writes the descriptor, so a read that returns has no event
    // to name.
    refuse!(
        "ibv_get_async_event",
        "descriptor readable with no event queued"
    );
    set_errno(libc::EIO);
    -1
}

/// rdma-core's `ibv_ack_async_event`: nothing to count (no event is ever
/// handed out, see `ibv_get_async_event`).
#[no_mangle]
pub extern "C" fn ibv_ack_async_event(_event: *mut AsyncEvent) {}

/// The name of entry `value` of `names`, else "unknown".
fn name_of(names: &'static [&'static CStr], value: c_int) -> *const c_char {
    usize::try_from(value)
        .ok()
        .and_then(|i| names.get(i))
        .copied()
        .unwrap_or(c"unknown")
        .as_ptr()
}

/// rdma-core's `ibv_node_type_str` (`enum ibv_node_type`, -1 .. 6).
#[no_mangle]
pub extern "C" fn ibv_node_type_str(node_type: c_int) -> *const c_char {
    const NAMES: [&CStr; 7] = [
        c"unknown",
        c"channel adapter",
        c"switch",
        c"router",
        c"RNIC",
        c"usNIC",
        c"usNIC UDP",
    ];
    name_of(&NAMES, node_type)
}

/// rdma-core's `ibv_port_state_str` (`enum ibv_port_state`).
#[no_mangle]
pub extern "C" fn ibv_port_state_str(state: c_int) -> *const c_char {
    const NAMES: [&CStr; 6] = [
        c"PORT_NOP",
        c"PORT_DOWN",
        c"PORT_INIT",
        c"PORT_ARMED",
        c"PORT_ACTIVE",
        c"PORT_ACTIVE_DEFER",
    ];
    name_of(&NAMES, state)
}

/// rdma-core's `ibv_event_type_str` (`enum ibv_event_type`).
#[no_mangle]
pub extern "C" fn ibv_event_type_str(event: c_int) -> *const c_char {
    const NAMES: [&CStr; 20] = [
        c"CQ error",
        c"local work queue catastrophic error",
        c"invalid request local work queue error",
        c"local access violation work queue error",
        c"communication established",
        c"send queue drained",
        c"path migrated",
        c"path migration request error",
        c"local catastrophic error",
        c"port active",
        c"port error",
        c"LID change",
        c"P_Key change",
        c"SM change",
        c"SRQ catastrophic error",
        c"SRQ limit reached",
        c"last WQE reached",
        c"client reregistration",
        c"GID table change",
        c"WQ fatal",
    ];
    name_of(&NAMES, event)
}

/// rdma-core's `ibv_wc_status_str` (`enum ibv_wc_status`).
#[no_mangle]
pub extern "C" fn ibv_wc_status_str(status: c_int) -> *const c_char {
    const NAMES: [&CStr; 24] = [
        c"success",
        c"local length error",
        c"local QP operation error",
        c"local EE context operation error",
        c"local protection error",
        c"Work Request Flushed Error",
        c"memory management operation error",
        c"bad response error",
        c"local access error",
        c"remote invalid request error",
        c"remote access error",
        c"remote operation error",
        c"transport retry counter exceeded",
        c"RNR retry counter exceeded",
        c"local RDD violation error",
        c"remote invalid RD request",
        c"aborted error",
        c"invalid EE context number",
        c"invalid EE context state",
        c"fatal error",
        c"response timeout error",
        c"general error",
        c"TM error",
        c"TM rendezvous error",
    ];
    name_of(&NAMES, status)
}

/// rdma-core's `ibv_get_device_guid`: the node GUID, big-endian (0 and
/// errno EINVAL for a device not ours).
///
/// # Safety
/// `device` must be NULL or a device of this library (checked).
#[no_mangle]
pub unsafe extern "C" fn ibv_get_device_guid(device: *mut ibv_device) -> u64 {
    match devices::find(device) {
        Some(device) => device.guid_be(),
        None => {
            refuse!("ibv_get_device_guid", "unknown device {device:p}");
            set_errno(libc::EINVAL);
            0
        }
    }
}

/// rdma-core's `ibv_read_sysfs_file`: reads `<dir>/<file>` into `buf`
/// (NUL-terminated, a trailing newline removed); the length read, or -1.
///
/// # Safety
/// `dir` and `file` must be NUL-terminated strings, `buf` writable for
/// `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn ibv_read_sysfs_file(
    dir: *const c_char,
    file: *const c_char,
    buf: *mut c_char,
    size: usize,
) -> c_int {
    if dir.is_null() || file.is_null() || buf.is_null() || size == 0 {
        set_errno(libc::EINVAL);
        return -1;
    }
    // SAFETY: NUL-terminated per the contract (checked non-NULL).
    let (dir, file) = unsafe { (CStr::from_ptr(dir), CStr::from_ptr(file)) };
    let path = std::path::Path::new(
        <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(dir.to_bytes()),
    )
    .join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(file.to_bytes()));
    let Ok(mut text) = std::fs::read(&path) else {
        set_errno(libc::ENOENT);
        return -1;
    };
    text.truncate(size - 1);
    if text.last() == Some(&b'\n') {
        text.pop();
    }
    // SAFETY: `text.len() + 1 <= size` bytes into the caller's buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), text.len());
        *buf.add(text.len()) = 0;
    }
    c_int::try_from(text.len()).unwrap_or(c_int::MAX)
}

/// `IBV_GID_TYPE_SYSFS_ROCE_V2` (`enum ibv_gid_type_sysfs`).
const GID_TYPE_SYSFS_ROCE_V2: c_int = 1;

/// rdma-core's private `ibv_query_gid_type` (what `ibv_devinfo` prints per
/// GID): the one GID is RoCE v2.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); `gid_type` must be writable.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_gid_type(
    context: *mut ibv_context,
    port: u8,
    index: u32,
    gid_type: *mut c_int,
) -> c_int {
    // SAFETY: live-handle lookup.
    if unsafe { get::<Context, _>(context) }.is_none()
        || gid_type.is_null()
        || port != PORT
        || index != 0
    {
        set_errno(libc::EINVAL);
        return -1;
    }
    // SAFETY: writable (checked non-NULL).
    unsafe { gid_type.write(GID_TYPE_SYSFS_ROCE_V2) };
    0
}
