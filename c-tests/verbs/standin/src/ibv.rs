//! The libibverbs entry points the backend resolves (`Verbs::load_from`),
//! implemented on the soft HCA, plus `ops.req_notify_cq` of each context.
//!
//! Errors follow rdma-core: functions returning a pointer return NULL and
//! set errno; functions returning int return the errno value (and set
//! errno), except `ibv_query_gid` and `ibv_get_cq_event` which return -1.
//! A NULL or unknown handle, an unsupported attribute or mask bit is
//! EINVAL (or EOPNOTSUPP), logged, never a crash.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use uct::abi::ucs_status::Status;
use uct::hca::soft::{
    UdTransition, MAX_CQE, MAX_QP_WQEBB, MAX_RD_ATOMIC, MAX_SRQ_SGE, MAX_SRQ_WQE, PORT,
};
use uct::hca::verbs::cq_arm;
use uct::hca::verbs::ffi::*;
use uct::hca::{
    Access, DeviceAddress, Mtu, PathAttr, PortState, QpState, QpTransition, RtrAttr, RtsAttr,
    SrqInitAttr,
};

use crate::devices::{self, trace};
use crate::layout::{ContextHead, IbvRecvWr};
use crate::objects::{
    self, adopt, get, release, Channel, Context, Cq, Kind, Mr, Page, Pd, Qp, Srq,
};
use crate::simulate;
use crate::trapped_doorbell::RegisterPage;
use crate::verbs_post;
use crate::watcher;

pub fn set_errno(errno: c_int) {
    // SAFETY: __errno_location returns this thread's errno slot.
    unsafe { *libc::__errno_location() = errno };
}

/// Sets errno and returns NULL.
fn null_errno<T>(errno: c_int) -> *mut T {
    set_errno(errno);
    null_mut()
}

/// Sets errno and returns it (rdma-core's int convention).
fn fail(errno: c_int) -> c_int {
    set_errno(errno);
    errno
}

fn errno_of(status: Status) -> c_int {
    match status {
        Status::NoMemory => libc::ENOMEM,
        Status::InvalidParam => libc::EINVAL,
        Status::NoDevice => libc::ENODEV,
        Status::Busy => libc::EBUSY,
        Status::NoResource => libc::ENOSPC,
        Status::Unsupported => libc::EOPNOTSUPP,
        _ => libc::EIO,
    }
}

/// Logs a refused call (one line, the function and why).
macro_rules! refuse {
    ($function:literal, $($why:tt)+) => {
        tracing::warn!("verbs stand-in: {}: {}", $function, format_args!($($why)+))
    };
}

fn dec(counter: &AtomicU32) {
    counter.fetch_sub(1, Ordering::AcqRel);
}

fn inc(counter: &AtomicU32) {
    counter.fetch_add(1, Ordering::AcqRel);
}

// ------------------------------------------------------------- devices --

/// rdma-core's `ibv_get_device_list`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_get_device_list(num_devices: *mut c_int) -> *mut *mut ibv_device {
    uct::core::log::init();
    let devices = devices::all();
    devices::write_sysfs_tree(devices);
    // SAFETY: calloc of (n + 1) pointers, checked; NULL-terminated array.
    let list = unsafe { libc::calloc(devices.len() + 1, std::mem::size_of::<*mut ibv_device>()) }
        .cast::<*mut ibv_device>();
    if list.is_null() {
        return null_errno(libc::ENOMEM);
    }
    for (slot, device) in devices.iter().enumerate() {
        // SAFETY: `slot < len`, inside the allocation.
        unsafe { *list.add(slot) = device.as_ibv() };
    }
    objects::register(list.cast_const().cast(), Kind::DeviceList);
    if !num_devices.is_null() {
        // SAFETY: the caller passes NULL or a writable int.
        unsafe { *num_devices = c_int::try_from(devices.len()).unwrap_or(c_int::MAX) };
    }
    list
}

/// rdma-core's `ibv_free_device_list`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_free_device_list(list: *mut *mut ibv_device) {
    if !objects::unregister(list.cast_const().cast(), Kind::DeviceList) {
        refuse!("ibv_free_device_list", "{list:p} is not a device list");
        return;
    }
    // SAFETY: made by calloc in ibv_get_device_list, freed once (the table
    // entry is gone).
    unsafe { libc::free(list.cast()) };
}

/// rdma-core's `ibv_get_device_name`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_get_device_name(device: *mut ibv_device) -> *const c_char {
    match devices::find(device) {
        Some(device) => device.head.name.as_ptr(),
        None => {
            refuse!("ibv_get_device_name", "unknown device {device:p}");
            null_errno(libc::EINVAL)
        }
    }
}

/// `ibv_context.ops.req_notify_cq`: arms the CQ for one event.
///
/// # Safety
/// `cq` must be NULL or a CQ of this library (checked).
unsafe extern "C" fn req_notify_cq(cq: *mut ibv_cq, _solicited_only: c_int) -> c_int {
    // SAFETY: live-handle lookup.
    let Some(cq) = (unsafe { get::<Cq, _>(cq) }) else {
        refuse!("req_notify_cq", "unknown CQ {cq:p}");
        return fail(libc::EINVAL);
    };
    // Solicited-only arming is not distinguished: an event for every
    // completion is a superset (a spurious wake-up at worst).
    cq.soft.arm();
    0
}

/// Slots of `post_srq_recv`, `post_send` and `post_recv` in
/// `ibv_context_ops.trailing` (which starts at the 14th function pointer).
const TRAILING_POST_SRQ_RECV: usize = 7;
const TRAILING_POST_SEND: usize = 12;
const TRAILING_POST_RECV: usize = 13;

/// The trailing slots of the context's ops: the verbs post functions
/// (`verbs_post`); the rest NULL.
fn trailing_ops() -> [*mut c_void; 19] {
    let not_served = verbs_post::post_not_served
        as unsafe extern "C" fn(*mut c_void, *mut c_void, *mut *mut c_void) -> c_int;
    let post_recv = verbs_post::post_recv
        as unsafe extern "C" fn(*mut ibv_qp, *mut IbvRecvWr, *mut *mut IbvRecvWr) -> c_int;
    let mut slots = [null_mut(); 19];
    slots[TRAILING_POST_SRQ_RECV] = not_served as *mut c_void;
    slots[TRAILING_POST_SEND] = not_served as *mut c_void;
    slots[TRAILING_POST_RECV] = post_recv as *mut c_void;
    slots
}

/// rdma-core's `ibv_open_device`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_open_device(device: *mut ibv_device) -> *mut ibv_context {
    open_context("ibv_open_device", device)
}

/// Opens a context on one of our devices (`ibv_open_device`, and
/// `mlx5dv_open_device` without DEVX). Its `async_fd` is an eventfd of its
/// own, as rdma-core's is a descriptor of the kernel's: callers make it
/// non-blocking and poll it; it turns readable only when an asynchronous
/// event is queued, and the stand-in queues none (a port that never
/// changes, QPs that never hit a fatal error outside their CQEs).
pub fn open_context(function: &str, device: *mut ibv_device) -> *mut ibv_context {
    uct::core::log::init();
    if simulate::fails("open_device") {
        return null_errno(libc::ENOMEM);
    }
    let Some(device) = devices::find(device) else {
        tracing::warn!("verbs stand-in: {function}: unknown device {device:p}");
        return null_errno(libc::ENODEV);
    };
    let soft = match device.soft() {
        Ok(soft) => soft,
        Err(status) => {
            tracing::warn!(
                "verbs stand-in: {function}: {}: soft device does not open",
                device.name
            );
            return null_errno(errno_of(status));
        }
    };
    // SAFETY: plain syscall, result checked.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        let errno = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        tracing::warn!("verbs stand-in: {function}: eventfd failed (errno {errno})");
        return null_errno(errno);
    }
    // SAFETY: a new descriptor nobody else owns.
    let async_events = unsafe { OwnedFd::from_raw_fd(fd) };
    let context = adopt(Context {
        head: ContextHead {
            public: ibv_context {
                device: device.as_ibv(),
                // req_notify_cq and the work-request functions
                // (`verbs_post`); the other slots stay NULL, like a
                // provider lacking them (nobody here calls them).
                ops: ibv_context_ops {
                    leading: [null_mut(); 11],
                    poll_cq: verbs_post::poll_not_served as *mut c_void,
                    req_notify_cq: Some(req_notify_cq),
                    trailing: trailing_ops(),
                },
                cmd_fd: -1,
                async_fd: fd,
                num_comp_vectors: 1,
            },
            mutex: [0; 5],
            abi_compat: null_mut(),
        },
        device,
        soft,
        async_events,
        children: AtomicU32::new(0),
    });
    trace(format_args!("open {}", device.name));
    context.cast()
}

/// rdma-core's `ibv_close_device`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_close_device(context: *mut ibv_context) -> c_int {
    // SAFETY: live-handle lookup.
    let Some(ctx) = (unsafe { get::<Context, _>(context) }) else {
        refuse!("ibv_close_device", "unknown context {context:p}");
        return fail(libc::EINVAL);
    };
    if ctx.children.load(Ordering::Acquire) != 0 {
        refuse!(
            "ibv_close_device",
            "{} still has PDs, CQs or channels",
            ctx.device.name
        );
        return fail(libc::EBUSY);
    }
    // SAFETY: no reference to the context is used after this.
    drop(unsafe { release::<Context, _>(context) });
    0
}

/// rdma-core's `ibv_query_device`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_device(
    context: *mut ibv_context,
    attr: *mut ibv_device_attr,
) -> c_int {
    // SAFETY: live-handle lookup.
    let Some(ctx) = (unsafe { get::<Context, _>(context) }) else {
        refuse!("ibv_query_device", "unknown context {context:p}");
        return fail(libc::EINVAL);
    };
    if attr.is_null() {
        refuse!("ibv_query_device", "NULL attr");
        return fail(libc::EINVAL);
    }
    let soft = ctx.soft.attr();
    let int = |v: u32| c_int::try_from(v).unwrap_or(c_int::MAX);
    // SAFETY: all-zero is a valid ibv_device_attr.
    let mut out: ibv_device_attr = unsafe { std::mem::zeroed() };
    for (slot, byte) in out.fw_ver.iter_mut().zip(devices::FW_VERSION.bytes()) {
        *slot = byte as c_char;
    }
    out.node_guid = ctx.device.guid_be();
    out.sys_image_guid = ctx.device.guid_be();
    out.max_mr_size = u64::MAX;
    out.page_size_cap = 0xffff_f000;
    out.vendor_id = devices::VENDOR_OUI;
    out.vendor_part_id = u32::from(devices::PCI_DEVICE);
    out.max_qp = 1 << 16;
    out.max_qp_wr = int(MAX_QP_WQEBB);
    out.max_sge = 1;
    out.max_sge_rd = 1;
    out.max_cq = 1 << 16;
    out.max_cqe = int(MAX_CQE);
    out.max_mr = 1 << 20;
    out.max_pd = 1 << 16;
    out.max_qp_rd_atom = c_int::from(MAX_RD_ATOMIC);
    out.max_res_rd_atom = c_int::from(MAX_RD_ATOMIC) << 16;
    out.max_qp_init_rd_atom = c_int::from(MAX_RD_ATOMIC);
    out.atomic_cap = if soft.atomics {
        IBV_ATOMIC_HCA
    } else {
        IBV_ATOMIC_NONE
    };
    out.max_srq = 1 << 16;
    out.max_srq_wr = int(MAX_SRQ_WQE);
    out.max_srq_sge = int(MAX_SRQ_SGE);
    out.max_pkeys = 1;
    out.local_ca_ack_delay = 16;
    out.phys_port_cnt = soft.port_count;
    // SAFETY: `attr` is a writable ibv_device_attr (the caller's contract).
    unsafe { attr.write(out) };
    0
}

/// rdma-core's `ibv_query_port`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_port(
    context: *mut ibv_context,
    port: u8,
    attr: *mut ibv_port_attr,
) -> c_int {
    // SAFETY: live-handle lookup.
    let Some(ctx) = (unsafe { get::<Context, _>(context) }) else {
        refuse!("ibv_query_port", "unknown context {context:p}");
        return fail(libc::EINVAL);
    };
    if attr.is_null() {
        refuse!("ibv_query_port", "NULL attr");
        return fail(libc::EINVAL);
    }
    let soft = match ctx.soft.port_attr(port) {
        Ok(soft) => soft,
        Err(_) => {
            refuse!("ibv_query_port", "{} has no port {port}", ctx.device.name);
            return fail(libc::EINVAL);
        }
    };
    let up = soft.state == PortState::Active && !simulate::port_down(&ctx.device.name);
    let out = ibv_port_attr {
        state: if up { IBV_PORT_ACTIVE } else { IBV_PORT_DOWN },
        max_mtu: soft.max_mtu as u32,
        active_mtu: soft.active_mtu as u32,
        gid_tbl_len: 1,
        port_cap_flags: 0,
        max_msg_sz: 1 << 30,
        pkey_tbl_len: 1,
        lid: 0,
        active_width: 2,
        active_speed: 32,
        // 5 = LinkUp, 3 = Disabled (IBTA port physical state).
        phys_state: if up { 5 } else { 3 },
        link_layer: IBV_LINK_LAYER_ETHERNET,
        ..Default::default()
    };
    // The exported symbol fills rdma-core's compat struct: everything up
    // to and including `flags`, never `port_cap_flags2`.
    let prefix = std::mem::offset_of!(ibv_port_attr, flags) + 1;
    // SAFETY: the caller's struct holds at least the compat prefix; `out`
    // is a distinct local.
    unsafe {
        std::ptr::copy_nonoverlapping(
            (&out as *const ibv_port_attr).cast::<u8>(),
            attr.cast::<u8>(),
            prefix,
        )
    };
    0
}

/// rdma-core's `ibv_query_gid`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_gid(
    context: *mut ibv_context,
    port: u8,
    index: c_int,
    gid: *mut ibv_gid,
) -> c_int {
    // SAFETY: live-handle lookup.
    let Some(ctx) = (unsafe { get::<Context, _>(context) }) else {
        refuse!("ibv_query_gid", "unknown context {context:p}");
        set_errno(libc::EINVAL);
        return -1;
    };
    if gid.is_null() || port != PORT || index != 0 {
        refuse!(
            "ibv_query_gid",
            "no GID {index} on port {port} (or NULL gid)"
        );
        set_errno(libc::EINVAL);
        return -1;
    }
    let Some(endpoint) = devices::endpoint(&ctx.soft) else {
        refuse!("ibv_query_gid", "{} has no UDP endpoint", ctx.device.name);
        set_errno(libc::EIO);
        return -1;
    };
    let raw = devices::gid_of(endpoint);
    // SAFETY: writable ibv_gid (checked non-NULL).
    unsafe { gid.write(ibv_gid { raw }) };
    0
}

// ------------------------------------------------------------ PD and MR --

/// rdma-core's `ibv_alloc_pd`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_alloc_pd(context: *mut ibv_context) -> *mut ibv_pd {
    if simulate::fails("alloc_pd") {
        return null_errno(libc::ENOMEM);
    }
    // SAFETY: live-handle lookup.
    let Some(ctx) = (unsafe { get::<Context, _>(context) }) else {
        refuse!("ibv_alloc_pd", "unknown context {context:p}");
        return null_errno(libc::EINVAL);
    };
    let soft = ctx.soft.alloc_pd();
    inc(&ctx.children);
    let pd = adopt(Pd {
        head: ibv_pd { context, handle: 0 },
        context: ctx,
        soft,
        children: AtomicU32::new(0),
    });
    // SAFETY: just made; the handle number only needs to be distinct.
    unsafe { (*pd).head.handle = (pd as usize as u32) >> 4 };
    pd.cast()
}

/// rdma-core's `ibv_dealloc_pd`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_dealloc_pd(pd: *mut ibv_pd) -> c_int {
    // SAFETY: live-handle lookup.
    let Some(object) = (unsafe { get::<Pd, _>(pd) }) else {
        refuse!("ibv_dealloc_pd", "unknown PD {pd:p}");
        return fail(libc::EINVAL);
    };
    if object.children.load(Ordering::Acquire) != 0 {
        refuse!("ibv_dealloc_pd", "PD still has MRs, SRQs or QPs");
        return fail(libc::EBUSY);
    }
    // SAFETY: the context outlives its children (close refuses while any).
    unsafe { dec(&(*object.context).children) };
    // SAFETY: no reference to the PD is used after this.
    drop(unsafe { release::<Pd, _>(pd) });
    0
}

const KNOWN_ACCESS: u32 = IBV_ACCESS_LOCAL_WRITE
    | IBV_ACCESS_REMOTE_WRITE
    | IBV_ACCESS_REMOTE_READ
    | IBV_ACCESS_REMOTE_ATOMIC;

/// `IBV_ACCESS_OPTIONAL_RANGE`: bits a provider may ignore when it does
/// not support them (relaxed ordering, which UCX asks for on some hosts,
/// is one); rdma-core's `ibv_reg_mr` drops the ones it cannot honour.
const OPTIONAL_ACCESS: u32 = 0x3ff0_0000;

/// The soft HCA's access rights of verbs access bits (the same values);
/// optional bits are ignored; other unsupported bits, or remote
/// write/atomic without local write (which rdma-core refuses too), are
/// EINVAL.
fn access_of(bits: u32) -> Result<Access, c_int> {
    let bits = bits & !OPTIONAL_ACCESS;
    if bits & !KNOWN_ACCESS != 0 {
        return Err(libc::EINVAL);
    }
    let needs_local_write = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
    if bits & needs_local_write != 0 && bits & IBV_ACCESS_LOCAL_WRITE == 0 {
        return Err(libc::EINVAL);
    }
    Ok(Access(bits))
}

/// rdma-core's `ibv_reg_mr`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_reg_mr(
    pd: *mut ibv_pd,
    addr: *mut c_void,
    length: usize,
    access: c_int,
) -> *mut ibv_mr {
    // SAFETY: the caller's contract, passed on.
    unsafe { reg_mr(pd, addr, length, access) }
}

/// rdma-core's `ibv_reg_mr_iova2` (what `ibv_reg_mr` of rdma-core's
/// headers calls when optional access bits are given), on the soft HCA.
/// The soft device addresses registered memory by virtual address, so
/// `iova` must equal `addr` (EOPNOTSUPP otherwise, logged).
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_reg_mr_iova2(
    pd: *mut ibv_pd,
    addr: *mut c_void,
    length: usize,
    iova: u64,
    access: c_uint,
) -> *mut ibv_mr {
    if iova != addr as u64 {
        refuse!(
            "ibv_reg_mr_iova2",
            "iova {iova:#x} differs from the address {addr:p} (not supported)"
        );
        return null_errno(libc::EOPNOTSUPP);
    }
    // SAFETY: the caller's contract, passed on.
    unsafe { reg_mr(pd, addr, length, access as c_int) }
}

/// # Safety
/// As `ibv_reg_mr`.
unsafe fn reg_mr(pd: *mut ibv_pd, addr: *mut c_void, length: usize, access: c_int) -> *mut ibv_mr {
    if simulate::fails("reg_mr") {
        return null_errno(libc::ENOMEM);
    }
    // SAFETY: live-handle lookup.
    let Some(object) = (unsafe { get::<Pd, _>(pd) }) else {
        refuse!("ibv_reg_mr", "unknown PD {pd:p}");
        return null_errno(libc::EINVAL);
    };
    let rights = match u32::try_from(access)
        .map_err(|_| libc::EINVAL)
        .and_then(access_of)
    {
        Ok(rights) => rights,
        Err(errno) => {
            refuse!("ibv_reg_mr", "unsupported access flags {access:#x}");
            return null_errno(errno);
        }
    };
    let soft = match object.soft.reg_mr(addr.cast(), length, rights) {
        Ok(soft) => soft,
        Err(status) => {
            refuse!("ibv_reg_mr", "cannot register {addr:p}+{length}");
            return null_errno(errno_of(status));
        }
    };
    let keys = soft.keys();
    inc(&object.children);
    let mr = adopt(Mr {
        head: ibv_mr {
            context: object.head.context,
            pd,
            addr,
            length,
            handle: keys.lkey,
            lkey: keys.lkey,
            rkey: keys.rkey,
        },
        pd: object,
        soft,
    });
    mr.cast()
}

/// rdma-core's `ibv_dereg_mr`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_dereg_mr(mr: *mut ibv_mr) -> c_int {
    // SAFETY: live-handle lookup, then release of the same handle.
    let Some(object) = (unsafe { release::<Mr, _>(mr) }) else {
        refuse!("ibv_dereg_mr", "unknown MR {mr:p}");
        return fail(libc::EINVAL);
    };
    // SAFETY: a PD outlives its MRs (dealloc refuses while any).
    unsafe { dec(&(*object.pd).children) };
    drop(object);
    0
}

// ------------------------------------------------------ channels and CQs --

/// rdma-core's `ibv_create_comp_channel`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_create_comp_channel(
    context: *mut ibv_context,
) -> *mut ibv_comp_channel {
    // SAFETY: live-handle lookup.
    let Some(ctx) = (unsafe { get::<Context, _>(context) }) else {
        refuse!("ibv_create_comp_channel", "unknown context {context:p}");
        return null_errno(libc::EINVAL);
    };
    // SAFETY: plain syscall, result checked.
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd < 0 {
        let errno = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        refuse!(
            "ibv_create_comp_channel",
            "epoll_create1 failed (errno {errno})"
        );
        return null_errno(errno);
    }
    // SAFETY: a new descriptor nobody else owns.
    let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
    inc(&ctx.children);
    let channel = adopt(Channel {
        head: ibv_comp_channel {
            context,
            fd,
            refcnt: 0,
        },
        context: ctx,
        epoll,
        cqs: AtomicU32::new(0),
    });
    channel.cast()
}

/// rdma-core's `ibv_destroy_comp_channel`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_destroy_comp_channel(channel: *mut ibv_comp_channel) -> c_int {
    // SAFETY: live-handle lookup.
    let Some(object) = (unsafe { get::<Channel, _>(channel) }) else {
        refuse!("ibv_destroy_comp_channel", "unknown channel {channel:p}");
        return fail(libc::EINVAL);
    };
    if object.cqs.load(Ordering::Acquire) != 0 {
        refuse!("ibv_destroy_comp_channel", "channel still has CQs");
        return fail(libc::EBUSY);
    }
    // SAFETY: the context outlives its children.
    unsafe { dec(&(*object.context).children) };
    // SAFETY: no reference is used after this.
    drop(unsafe { release::<Channel, _>(channel) });
    0
}

fn epoll_ctl(epoll: &OwnedFd, op: c_int, fd: c_int, data: u64) -> c_int {
    let mut event = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: data,
    };
    // SAFETY: valid descriptors and a live event struct.
    unsafe { libc::epoll_ctl(epoll.as_raw_fd(), op, fd, &mut event) }
}

/// rdma-core's `ibv_create_cq`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_create_cq(
    context: *mut ibv_context,
    cqe: c_int,
    cq_context: *mut c_void,
    channel: *mut ibv_comp_channel,
    comp_vector: c_int,
) -> *mut ibv_cq {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        create_cq(
            context,
            cqe,
            cq_context,
            channel,
            comp_vector,
            uct::mlx5::CQE_LEN,
        )
    }
}

/// `ibv_create_cq` with entries of `cqe_size` bytes (64, or 128 for
/// `mlx5dv_create_cq`).
///
/// # Safety
/// As `ibv_create_cq`.
pub unsafe fn create_cq(
    context: *mut ibv_context,
    cqe: c_int,
    cq_context: *mut c_void,
    channel: *mut ibv_comp_channel,
    comp_vector: c_int,
    cqe_size: usize,
) -> *mut ibv_cq {
    if simulate::fails("create_cq") {
        return null_errno(libc::ENOMEM);
    }
    // SAFETY: live-handle lookup.
    let Some(ctx) = (unsafe { get::<Context, _>(context) }) else {
        refuse!("ibv_create_cq", "unknown context {context:p}");
        return null_errno(libc::EINVAL);
    };
    let channel_object = if channel.is_null() {
        None
    } else {
        // SAFETY: live-handle lookup.
        match unsafe { get::<Channel, _>(channel) } {
            Some(ch) if std::ptr::eq(ch.context, ctx) => Some(ch),
            _ => {
                refuse!(
                    "ibv_create_cq",
                    "unknown channel {channel:p}, or of another context"
                );
                return null_errno(libc::EINVAL);
            }
        }
    };
    let entries = match u32::try_from(cqe) {
        Ok(n) if (1..=MAX_CQE).contains(&n) && comp_vector == 0 => n,
        _ => {
            refuse!(
                "ibv_create_cq",
                "{cqe} entries on vector {comp_vector} (1..={MAX_CQE}, vector 0)"
            );
            return null_errno(libc::EINVAL);
        }
    };
    let events = match channel_object {
        None => None,
        Some(_) => match ctx.soft.create_event_channel() {
            Ok(events) => Some(events),
            Err(status) => return null_errno(errno_of(status)),
        },
    };
    let mut soft = match ctx.soft.create_cq_sized(entries, cqe_size, events.as_ref()) {
        Ok(soft) => soft,
        Err(status) => {
            refuse!("ibv_create_cq", "soft CQ of {entries} entries refused");
            return null_errno(errno_of(status));
        }
    };
    if soft.ring().cqn == 0 {
        // CQ number 0 would make an all-zero arm doorbell, which the
        // watcher cannot tell from "not written": take the next number.
        soft = match ctx.soft.create_cq_sized(entries, cqe_size, events.as_ref()) {
            Ok(soft) => soft,
            Err(status) => return null_errno(errno_of(status)),
        };
    }
    let Some(uar) = Page::new() else {
        return null_errno(libc::ENOMEM);
    };
    let ring_entries = soft.ring().cqe_count;
    let cq = adopt(Cq {
        head: ibv_cq {
            context,
            channel,
            cq_context,
            handle: soft.ring().cqn,
            cqe: c_int::try_from(ring_entries).unwrap_or(c_int::MAX),
        },
        tail: [0; 32],
        context: ctx,
        channel: channel_object.map_or(std::ptr::null(), |c| c as *const Channel),
        soft,
        events,
        uar,
        users: AtomicU32::new(0),
        events_delivered: AtomicU32::new(0),
        events_acked: AtomicU32::new(0),
    });
    // SAFETY: just made, live.
    let object = unsafe { &*cq };
    if let (Some(ch), Some(events)) = (channel_object, object.events.as_ref()) {
        if epoll_ctl(
            &ch.epoll,
            libc::EPOLL_CTL_ADD,
            events.fd(),
            cq as usize as u64,
        ) != 0
        {
            let errno = std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            refuse!("ibv_create_cq", "epoll_ctl failed (errno {errno})");
            // SAFETY: not handed out yet.
            drop(unsafe { release::<Cq, _>(cq) });
            return null_errno(errno);
        }
        inc(&ch.cqs);
        // The public refcount (CQs on the channel), as rdma-core keeps it.
        // SAFETY: the channel is live; only the stand-in writes the field.
        unsafe { (*(ch as *const Channel).cast_mut()).head.refcnt += 1 };
    }
    inc(&ctx.children);
    // SAFETY: the UAR page and the CQ live until ibv_destroy_cq, which
    // unwatches first; the doorbell offset is 8-aligned inside the page.
    unsafe { watcher::watch_cq(cq, object.uar.word_at(cq_arm::MLX5_CQ_DOORBELL)) };
    cq.cast()
}

/// rdma-core's `ibv_destroy_cq`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_destroy_cq(cq: *mut ibv_cq) -> c_int {
    // SAFETY: live-handle lookup.
    let Some(object) = (unsafe { get::<Cq, _>(cq) }) else {
        refuse!("ibv_destroy_cq", "unknown CQ {cq:p}");
        return fail(libc::EINVAL);
    };
    if object.users.load(Ordering::Acquire) != 0 {
        refuse!("ibv_destroy_cq", "CQ still used by QPs");
        return fail(libc::EBUSY);
    }
    let delivered = object.events_delivered.load(Ordering::Acquire);
    let acked = object.events_acked.load(Ordering::Acquire);
    if delivered != acked {
        // rdma-core would wait here forever for the missing acks.
        tracing::warn!(
            "verbs stand-in: ibv_destroy_cq: {delivered} events delivered, {acked} acked"
        );
    }
    if let (false, Some(events)) = (object.channel.is_null(), object.events.as_ref()) {
        // SAFETY: a channel outlives its CQs (destroy refuses while any).
        let ch = unsafe { &*object.channel };
        epoll_ctl(&ch.epoll, libc::EPOLL_CTL_DEL, events.fd(), 0);
        dec(&ch.cqs);
        // SAFETY: as in create.
        unsafe { (*object.channel.cast_mut()).head.refcnt -= 1 };
    }
    // SAFETY: the context outlives its children.
    unsafe { dec(&(*object.context).children) };
    watcher::unwatch(cq as usize);
    // SAFETY: no reference is used after this.
    drop(unsafe { release::<Cq, _>(cq) });
    0
}

/// rdma-core's `ibv_get_cq_event`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_get_cq_event(
    channel: *mut ibv_comp_channel,
    cq: *mut *mut ibv_cq,
    cq_context: *mut *mut c_void,
) -> c_int {
    // SAFETY: live-handle lookup.
    let Some(ch) = (unsafe { get::<Channel, _>(channel) }) else {
        refuse!("ibv_get_cq_event", "unknown channel {channel:p}");
        set_errno(libc::EINVAL);
        return -1;
    };
    if cq.is_null() || cq_context.is_null() {
        refuse!("ibv_get_cq_event", "NULL output");
        set_errno(libc::EINVAL);
        return -1;
    }
    // As a read() of rdma-core's channel fd: blocks unless the caller made
    // the descriptor non-blocking.
    // SAFETY: plain fcntl on our descriptor.
    let flags = unsafe { libc::fcntl(ch.epoll.as_raw_fd(), libc::F_GETFL) };
    let timeout = if flags >= 0 && flags & libc::O_NONBLOCK != 0 {
        0
    } else {
        -1
    };
    loop {
        let mut event = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: one live event slot.
        let n = unsafe { libc::epoll_wait(ch.epoll.as_raw_fd(), &mut event, 1, timeout) };
        if n < 0 {
            return -1; // errno from epoll_wait (EINTR)
        }
        if n == 0 {
            set_errno(libc::EAGAIN);
            return -1;
        }
        let fired = event.u64 as usize as *mut ibv_cq;
        // SAFETY: live-handle lookup (a CQ leaves the set before it dies).
        let Some(object) = (unsafe { get::<Cq, _>(fired) }) else {
            continue;
        };
        if let Some(events) = &object.events {
            events.clear();
        }
        inc(&object.events_delivered);
        // SAFETY: both outputs checked non-NULL.
        unsafe {
            *cq = fired;
            *cq_context = object.head.cq_context;
        }
        return 0;
    }
}

/// rdma-core's `ibv_ack_cq_events`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_ack_cq_events(cq: *mut ibv_cq, nevents: c_uint) {
    // SAFETY: live-handle lookup.
    match unsafe { get::<Cq, _>(cq) } {
        Some(object) => {
            object.events_acked.fetch_add(nevents, Ordering::AcqRel);
        }
        None => refuse!("ibv_ack_cq_events", "unknown CQ {cq:p}"),
    }
}

// ------------------------------------------------------------------ SRQ --

/// rdma-core's `ibv_create_srq`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_create_srq(
    pd: *mut ibv_pd,
    attr: *mut ibv_srq_init_attr,
) -> *mut ibv_srq {
    if simulate::fails("create_srq") {
        return null_errno(libc::ENOMEM);
    }
    // SAFETY: live-handle lookup.
    let Some(object) = (unsafe { get::<Pd, _>(pd) }) else {
        refuse!("ibv_create_srq", "unknown PD {pd:p}");
        return null_errno(libc::EINVAL);
    };
    if attr.is_null() {
        refuse!("ibv_create_srq", "NULL attr");
        return null_errno(libc::EINVAL);
    }
    // SAFETY: readable (checked non-NULL).
    let init = unsafe { *attr };
    let soft = match object.soft.create_srq(SrqInitAttr {
        wqe_count: init.attr.max_wr,
        max_sge: init.attr.max_sge,
    }) {
        Ok(soft) => soft,
        Err(status) => {
            refuse!(
                "ibv_create_srq",
                "{} WQEs of {} SGEs refused",
                init.attr.max_wr,
                init.attr.max_sge
            );
            return null_errno(errno_of(status));
        }
    };
    let ring = soft.ring();
    link_srq_free_list(&ring);
    inc(&object.children);
    let srq = adopt(Srq {
        head: ibv_srq {
            context: object.head.context,
            srq_context: init.srq_context,
            pd,
            handle: ring.srqn,
        },
        pd: object,
        soft,
        users: AtomicU32::new(0),
    });
    // The sizes actually made, as the provider reports them.
    // SAFETY: writable (checked non-NULL).
    unsafe {
        (*attr).attr.max_wr = ring.wqe_count;
        (*attr).attr.max_sge = ring.max_sge;
    }
    srq.cast()
}

/// Links every WQE of a new SRQ ring to the next (the last back to the
/// first), as the mlx5 provider prepares its free list.
fn link_srq_free_list(ring: &uct::hca::RecvRing) {
    for index in 0..ring.wqe_count {
        let next = uct::mlx5::SrqNextSeg {
            next_wqe_index: ((index + 1) % ring.wqe_count) as u16,
            signature: 0,
        };
        let mut seg = [0u8; uct::mlx5::SEG_LEN];
        next.write(&mut seg);
        // SAFETY: WQE `index` starts `index * stride` bytes into the ring
        // (wqe_count * stride bytes), and a stride holds at least one
        // segment; nobody else uses the ring yet.
        unsafe {
            std::ptr::copy_nonoverlapping(
                seg.as_ptr(),
                ring.buf.add(index as usize * ring.stride as usize),
                seg.len(),
            )
        };
    }
}

/// rdma-core's `ibv_destroy_srq`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_destroy_srq(srq: *mut ibv_srq) -> c_int {
    // SAFETY: live-handle lookup.
    let Some(object) = (unsafe { get::<Srq, _>(srq) }) else {
        refuse!("ibv_destroy_srq", "unknown SRQ {srq:p}");
        return fail(libc::EINVAL);
    };
    if object.users.load(Ordering::Acquire) != 0 {
        refuse!("ibv_destroy_srq", "SRQ still used by QPs");
        return fail(libc::EBUSY);
    }
    // SAFETY: a PD outlives its SRQs.
    unsafe { dec(&(*object.pd).children) };
    // SAFETY: no reference is used after this.
    drop(unsafe { release::<Srq, _>(srq) });
    0
}

// ------------------------------------------------------------------- QP --

/// rdma-core's `ibv_create_qp`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_create_qp(
    pd: *mut ibv_pd,
    attr: *mut ibv_qp_init_attr,
) -> *mut ibv_qp {
    if attr.is_null() {
        refuse!("ibv_create_qp", "NULL attr");
        return null_errno(libc::EINVAL);
    }
    // SAFETY: readable (checked non-NULL).
    let mut init = unsafe { *attr };
    // SAFETY: the caller's contract, passed on.
    let qp = unsafe { create_qp(pd, &mut init, None) };
    if !qp.is_null() {
        // SAFETY: writable (checked non-NULL): the capabilities made.
        unsafe { (*attr).cap = init.cap };
    }
    qp
}

/// `ibv_create_qp` (and `mlx5dv_create_qp`): `init.cap` is updated to
/// what was made; `scatter_to_cqe` overrides the device's default
/// (libmlx5's: on) for this QP.
///
/// # Safety
/// As `ibv_create_qp`.
pub unsafe fn create_qp(
    pd: *mut ibv_pd,
    init: &mut ibv_qp_init_attr,
    scatter_to_cqe: Option<bool>,
) -> *mut ibv_qp {
    if simulate::fails("create_qp") {
        return null_errno(libc::ENOMEM);
    }
    // SAFETY: live-handle lookup.
    let Some(pd_object) = (unsafe { get::<Pd, _>(pd) }) else {
        refuse!("ibv_create_qp", "unknown PD {pd:p}");
        return null_errno(libc::EINVAL);
    };
    if init.qp_type != IBV_QPT_RC && init.qp_type != IBV_QPT_UD {
        // A feature the stand-in lacks (UC, raw packet, XRC), not bad
        // input: UCX probes QP types.
        tracing::debug!(
            "verbs stand-in: ibv_create_qp: QP type {} (RC and UD only)",
            init.qp_type
        );
        return null_errno(libc::EOPNOTSUPP);
    }
    // SAFETY: live-handle lookups.
    let (send_cq, recv_cq) = unsafe { (get::<Cq, _>(init.send_cq), get::<Cq, _>(init.recv_cq)) };
    let (Some(send_cq), Some(recv_cq)) = (send_cq, recv_cq) else {
        refuse!("ibv_create_qp", "unknown send or receive CQ");
        return null_errno(libc::EINVAL);
    };
    let srq = if init.srq.is_null() {
        None
    } else {
        // SAFETY: live-handle lookup.
        let Some(srq) = (unsafe { get::<Srq, _>(init.srq) }) else {
            refuse!("ibv_create_qp", "unknown SRQ {:p}", init.srq);
            return null_errno(libc::EINVAL);
        };
        Some(srq)
    };
    let context = pd_object.context;
    if !std::ptr::eq(send_cq.context, context)
        || !std::ptr::eq(recv_cq.context, context)
        || srq.is_some_and(|srq| !std::ptr::eq(srq.pd, pd_object))
    {
        refuse!(
            "ibv_create_qp",
            "CQ of another context or SRQ of another PD"
        );
        return null_errno(libc::EINVAL);
    }
    let made = match (init.qp_type, srq) {
        (IBV_QPT_UD, Some(srq)) => pd_object.soft.create_ud_qp(
            &send_cq.soft,
            &recv_cq.soft,
            &srq.soft,
            init.cap.max_send_wr,
        ),
        (IBV_QPT_UD, None) => pd_object.soft.create_ud_qp_with_rq(
            &send_cq.soft,
            &recv_cq.soft,
            init.cap.max_recv_wr,
            init.cap.max_recv_sge,
            init.cap.max_send_wr,
        ),
        (_, Some(srq)) => pd_object.soft.create_qp(
            &send_cq.soft,
            &recv_cq.soft,
            &srq.soft,
            init.cap.max_send_wr,
        ),
        (_, None) => {
            // A feature the stand-in lacks (RC with a receive queue of its
            // own), which UCX's rc_verbs probes: EOPNOTSUPP and a debug line.
            tracing::debug!("verbs stand-in: ibv_create_qp: no SRQ: RC QPs on an SRQ only");
            return null_errno(libc::EOPNOTSUPP);
        }
    };
    let soft = match made {
        Ok(soft) => soft,
        Err(status) => {
            refuse!(
                "ibv_create_qp",
                "QP type {}: {} send WRs, {} receive WRs of {} SGEs refused",
                init.qp_type,
                init.cap.max_send_wr,
                init.cap.max_recv_wr,
                init.cap.max_recv_sge
            );
            return null_errno(errno_of(status));
        }
    };
    let Some(blueflame) = RegisterPage::new(soft.doorbell()) else {
        return null_errno(libc::ENOMEM);
    };
    if let Some(on) = scatter_to_cqe {
        soft.set_scatter_to_cqe(on);
    }
    let ring = soft.send_ring();
    init.cap.max_send_wr = ring.wqebb_count;
    match soft.recv_ring() {
        Some(rq) => {
            init.cap.max_recv_wr = rq.wqe_count;
            init.cap.max_recv_sge = rq.max_sge;
        }
        None => init.cap.max_recv_wr = 0,
    }
    let doorbell = soft.doorbell();
    let trapped = blueflame.trapped();
    let qp = adopt(Qp {
        head: ibv_qp {
            context: pd_object.head.context,
            qp_context: init.qp_context,
            pd,
            send_cq: init.send_cq,
            recv_cq: init.recv_cq,
            srq: init.srq,
            handle: ring.qpn,
            qp_num: ring.qpn,
            state: IBV_QPS_RESET,
            qp_type: init.qp_type,
        },
        pd: pd_object,
        send_cq,
        recv_cq,
        srq: srq.map_or(std::ptr::null(), |srq| srq as *const Srq),
        soft,
        blueflame,
        init: *init,
        attrs: Mutex::new(ibv_qp_attr::default()),
        verbs_receives: Mutex::new(0),
    });
    inc(&pd_object.children);
    inc(&send_cq.users);
    inc(&recv_cq.users);
    if let Some(srq) = srq {
        inc(&srq.users);
    }
    // SAFETY: `dbrec` points at the soft QP's two doorbell words, valid
    // until the QP is dropped; ibv_destroy_qp unwatches before that.
    unsafe { watcher::watch(qp as usize, ring.dbrec.add(1), doorbell, trapped) };
    trace(format_args!("qp {:#x}", ring.qpn));
    qp.cast()
}

/// rdma-core's `ibv_destroy_qp`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_destroy_qp(qp: *mut ibv_qp) -> c_int {
    // SAFETY: live-handle lookup.
    if unsafe { get::<Qp, _>(qp) }.is_none() {
        refuse!("ibv_destroy_qp", "unknown QP {qp:p}");
        return fail(libc::EINVAL);
    }
    watcher::unwatch(qp as usize);
    // SAFETY: live (checked above); no reference is used after this.
    let Some(object) = (unsafe { release::<Qp, _>(qp) }) else {
        return fail(libc::EINVAL);
    };
    // SAFETY: PDs, CQs and SRQs outlive their QPs (their destroy refuses
    // while a QP uses them); a UD QP with its own receive queue has a NULL
    // SRQ, which `as_ref` skips.
    unsafe {
        dec(&(*object.pd).children);
        dec(&(*object.send_cq).users);
        dec(&(*object.recv_cq).users);
        if let Some(srq) = object.srq.as_ref() {
            dec(&srq.users);
        }
    }
    drop(object);
    0
}

const KNOWN_QP_MASK: c_uint = IBV_QP_STATE
    | IBV_QP_CUR_STATE
    | IBV_QP_ACCESS_FLAGS
    | IBV_QP_PKEY_INDEX
    | IBV_QP_PORT
    | IBV_QP_QKEY
    | IBV_QP_AV
    | IBV_QP_PATH_MTU
    | IBV_QP_TIMEOUT
    | IBV_QP_RETRY_CNT
    | IBV_QP_RNR_RETRY
    | IBV_QP_RQ_PSN
    | IBV_QP_MAX_QP_RD_ATOMIC
    | IBV_QP_MIN_RNR_TIMER
    | IBV_QP_SQ_PSN
    | IBV_QP_MAX_DEST_RD_ATOMIC
    | IBV_QP_DEST_QPN;

fn mtu_of(code: ibv_mtu) -> Option<Mtu> {
    Some(match code {
        IBV_MTU_256 => Mtu::Mtu256,
        IBV_MTU_512 => Mtu::Mtu512,
        IBV_MTU_1024 => Mtu::Mtu1024,
        IBV_MTU_2048 => Mtu::Mtu2048,
        IBV_MTU_4096 => Mtu::Mtu4096,
        _ => return None,
    })
}

fn psn24(value: u32) -> Result<u32, String> {
    if value > 0x00ff_ffff {
        return Err(format!("{value:#x} does not fit 24 bits"));
    }
    Ok(value)
}

/// A modify mask must hold `required` and nothing beyond `allowed`, the
/// state bits aside.
fn check_modify_mask(
    qp_kind: &str,
    mask: u32,
    state: u32,
    required: u32,
    allowed: u32,
) -> Result<(), String> {
    let allowed = IBV_QP_STATE | IBV_QP_CUR_STATE | allowed;
    if mask & required != required || mask & !allowed != 0 {
        return Err(format!(
            "{qp_kind} mask {mask:#x} for state {state}: needs {required:#x}, allows {allowed:#x}"
        ));
    }
    Ok(())
}

/// The soft device has one port and one P_Key.
fn check_port(attr: &ibv_qp_attr) -> Result<(), String> {
    if attr.port_num != PORT || attr.pkey_index != 0 {
        return Err(format!(
            "port {} / pkey index {}",
            attr.port_num, attr.pkey_index
        ));
    }
    Ok(())
}
/// The soft transition of a verbs modify: the target state decides which
/// mask bits are required and which are allowed (as the kernel checks).
fn transition_of(attr: &ibv_qp_attr, mask: c_uint) -> Result<QpTransition, String> {
    if mask & !KNOWN_QP_MASK != 0 {
        return Err(format!(
            "unsupported mask bits {:#x}",
            mask & !KNOWN_QP_MASK
        ));
    }
    if mask & IBV_QP_STATE == 0 {
        return Err("no IBV_QP_STATE (attribute-only changes are not supported)".into());
    }
    let (required, optional) = match attr.qp_state {
        IBV_QPS_INIT => (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0),
        IBV_QPS_RTR => (
            IBV_QP_AV
                | IBV_QP_PATH_MTU
                | IBV_QP_DEST_QPN
                | IBV_QP_RQ_PSN
                | IBV_QP_MAX_DEST_RD_ATOMIC
                | IBV_QP_MIN_RNR_TIMER,
            IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
        ),
        IBV_QPS_RTS => (
            IBV_QP_SQ_PSN
                | IBV_QP_TIMEOUT
                | IBV_QP_RETRY_CNT
                | IBV_QP_RNR_RETRY
                | IBV_QP_MAX_QP_RD_ATOMIC,
            IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER,
        ),
        IBV_QPS_ERR | IBV_QPS_RESET => (0, 0),
        other => return Err(format!("target state {other} not supported")),
    };
    check_modify_mask("RC", mask, attr.qp_state, required, required | optional)?;
    Ok(match attr.qp_state {
        IBV_QPS_INIT => {
            check_port(attr)?;
            let access = access_of(attr.qp_access_flags)
                .map_err(|_| format!("access flags {:#x}", attr.qp_access_flags))?;
            QpTransition::Init { access }
        }
        IBV_QPS_RTR => {
            let ah = &attr.ah_attr;
            if ah.is_global != 1
                || ah.grh.sgid_index != 0
                || (ah.port_num != 0 && ah.port_num != PORT)
            {
                return Err(format!(
                    "address vector: is_global {}, sgid_index {}, port {} (RoCE needs a GRH from GID 0 of port 1)",
                    ah.is_global, ah.grh.sgid_index, ah.port_num
                ));
            }
            // SAFETY: every bit pattern is a valid `raw` array.
            let dgid = unsafe { ah.grh.dgid.raw };
            let peer = devices::endpoint_of(&dgid)
                .ok_or_else(|| format!("destination GID {dgid:02x?} is not a stand-in GID"))?;
            QpTransition::Rtr(RtrAttr {
                dest_qpn: psn24(attr.dest_qp_num)?,
                peer: DeviceAddress::Udp(peer),
                rq_psn: psn24(attr.rq_psn)?,
                path_mtu: mtu_of(attr.path_mtu)
                    .ok_or_else(|| format!("path MTU code {}", attr.path_mtu))?,
                min_rnr_timer: attr.min_rnr_timer,
                max_dest_rd_atomic: attr.max_dest_rd_atomic,
                // Kept for query_qp; the soft device routes by UDP address.
                path: PathAttr {
                    sl: ah.sl,
                    traffic_class: ah.grh.traffic_class,
                    hop_limit: ah.grh.hop_limit,
                },
            })
        }
        IBV_QPS_RTS => QpTransition::Rts(RtsAttr {
            sq_psn: psn24(attr.sq_psn)?,
            timeout: attr.timeout,
            retry_cnt: attr.retry_cnt,
            rnr_retry: attr.rnr_retry,
            max_rd_atomic: attr.max_rd_atomic,
        }),
        IBV_QPS_ERR => QpTransition::Error,
        _ => QpTransition::Reset,
    })
}

/// The soft transition of a verbs modify of a UD QP: RESET→INIT takes the
/// P_Key index, port and Q_Key; INIT→RTR nothing more; RTR→RTS the send
/// PSN (the kernel's required attributes for UD). A Q_Key change outside
/// RESET→INIT is not supported by the soft QP and refused.
fn ud_transition_of(attr: &ibv_qp_attr, mask: c_uint) -> Result<UdTransition, String> {
    if mask & !KNOWN_QP_MASK != 0 {
        return Err(format!(
            "unsupported mask bits {:#x}",
            mask & !KNOWN_QP_MASK
        ));
    }
    if mask & IBV_QP_STATE == 0 {
        return Err("no IBV_QP_STATE (attribute-only changes are not supported)".into());
    }
    let required = match attr.qp_state {
        IBV_QPS_INIT => IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
        IBV_QPS_RTS => IBV_QP_SQ_PSN,
        IBV_QPS_RTR | IBV_QPS_ERR | IBV_QPS_RESET => 0,
        other => return Err(format!("target state {other} not supported")),
    };
    check_modify_mask("UD", mask, attr.qp_state, required, required)?;
    Ok(match attr.qp_state {
        IBV_QPS_INIT => {
            check_port(attr)?;
            UdTransition::Init { qkey: attr.qkey }
        }
        IBV_QPS_RTR => UdTransition::Rtr,
        IBV_QPS_RTS => UdTransition::Rts {
            sq_psn: psn24(attr.sq_psn)?,
        },
        IBV_QPS_ERR => UdTransition::Error,
        _ => UdTransition::Reset,
    })
}

/// Copies the attributes named by `mask` into the remembered set.
fn remember(saved: &mut ibv_qp_attr, attr: &ibv_qp_attr, mask: c_uint) {
    let has = |bit: c_uint| mask & bit != 0;
    saved.qp_state = attr.qp_state;
    if has(IBV_QP_ACCESS_FLAGS) {
        saved.qp_access_flags = attr.qp_access_flags;
    }
    if has(IBV_QP_PKEY_INDEX) {
        saved.pkey_index = attr.pkey_index;
    }
    if has(IBV_QP_PORT) {
        saved.port_num = attr.port_num;
    }
    if has(IBV_QP_QKEY) {
        saved.qkey = attr.qkey;
    }
    if has(IBV_QP_AV) {
        saved.ah_attr = attr.ah_attr;
    }
    if has(IBV_QP_PATH_MTU) {
        saved.path_mtu = attr.path_mtu;
    }
    if has(IBV_QP_TIMEOUT) {
        saved.timeout = attr.timeout;
    }
    if has(IBV_QP_RETRY_CNT) {
        saved.retry_cnt = attr.retry_cnt;
    }
    if has(IBV_QP_RNR_RETRY) {
        saved.rnr_retry = attr.rnr_retry;
    }
    if has(IBV_QP_MAX_QP_RD_ATOMIC) {
        saved.max_rd_atomic = attr.max_rd_atomic;
    }
    if has(IBV_QP_MAX_DEST_RD_ATOMIC) {
        saved.max_dest_rd_atomic = attr.max_dest_rd_atomic;
    }
    if has(IBV_QP_MIN_RNR_TIMER) {
        saved.min_rnr_timer = attr.min_rnr_timer;
    }
}

/// rdma-core's `ibv_modify_qp`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_modify_qp(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    mask: c_int,
) -> c_int {
    // SAFETY: live-handle lookup.
    let Some(object) = (unsafe { get::<Qp, _>(qp) }) else {
        refuse!("ibv_modify_qp", "unknown QP {qp:p}");
        return fail(libc::EINVAL);
    };
    if attr.is_null() {
        refuse!("ibv_modify_qp", "NULL attr");
        return fail(libc::EINVAL);
    }
    // SAFETY: readable (checked non-NULL).
    let attr = unsafe { &*attr };
    let mask = mask as c_uint;
    let modified = if object.head.qp_type == IBV_QPT_UD {
        ud_transition_of(attr, mask).map(|transition| {
            object
                .soft
                .modify_ud(transition)
                .map_err(|status| format!("soft QP refused {transition:?} ({status:?})"))
        })
    } else {
        transition_of(attr, mask).map(|transition| {
            object
                .soft
                .modify(transition)
                .map_err(|status| format!("soft QP refused {transition:?} ({status:?})"))
        })
    };
    if let Err(why) = modified.and_then(|done| done) {
        refuse!("ibv_modify_qp", "QP {:#x}: {why}", object.head.qp_num);
        return fail(libc::EINVAL);
    }
    let mut saved = object.attrs.lock().unwrap_or_else(|p| p.into_inner());
    if attr.qp_state == IBV_QPS_RESET {
        *saved = ibv_qp_attr::default();
    }
    remember(&mut saved, attr, mask);
    // SAFETY: the public `state` field of our own live object.
    unsafe { (*qp).state = attr.qp_state };
    0
}

fn ibv_state(state: QpState) -> ibv_qp_state {
    match state {
        QpState::Reset => IBV_QPS_RESET,
        QpState::Init => IBV_QPS_INIT,
        QpState::Rtr => IBV_QPS_RTR,
        QpState::Rts => IBV_QPS_RTS,
        QpState::Error => IBV_QPS_ERR,
    }
}

/// Bits `ibv_query_qp` accepts (verbs.h defines up to IBV_QP_RATE_LIMIT).
const QUERYABLE_QP_MASK: c_uint = (1 << 26) - 1;

/// rdma-core's `ibv_query_qp`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_qp(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    mask: c_int,
    init_attr: *mut ibv_qp_init_attr,
) -> c_int {
    // SAFETY: live-handle lookup.
    let Some(object) = (unsafe { get::<Qp, _>(qp) }) else {
        refuse!("ibv_query_qp", "unknown QP {qp:p}");
        return fail(libc::EINVAL);
    };
    if attr.is_null() || (mask as c_uint) & !QUERYABLE_QP_MASK != 0 {
        refuse!(
            "ibv_query_qp",
            "NULL attr or unknown mask bits in {mask:#x}"
        );
        return fail(libc::EINVAL);
    }
    let info = match object.soft.query() {
        Ok(info) => info,
        Err(status) => return fail(errno_of(status)),
    };
    let mut out = *object.attrs.lock().unwrap_or_else(|p| p.into_inner());
    out.qp_state = ibv_state(info.state);
    out.cur_qp_state = out.qp_state;
    out.rq_psn = info.next_rcv_psn;
    out.sq_psn = info.sq_psn;
    out.dest_qp_num = info.dest_qpn;
    out.cap = object.init.cap;
    // SAFETY: writable outputs (attr checked; init_attr may be NULL here,
    // which rdma-core would not allow, and is then skipped).
    unsafe {
        attr.write(out);
        if !init_attr.is_null() {
            init_attr.write(object.init);
        }
    }
    0
}
