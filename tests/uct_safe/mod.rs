//! A safe layer over the C API for the tests: each function takes the
//! test's Rust values (slices, `&mut` results, device names as `&CStr`) and
//! makes the one C call, so test files do not each repeat an `unsafe` block
//! per call.
//!
//! What the compiler cannot check, and every caller here keeps: handles are
//! live (opened by the helpers of `rc_common`, not yet closed); memory an
//! operation still uses after it returned `UCS_INPROGRESS` (a completion,
//! a get's destination, a fetched result, a zcopy iov) outlives the
//! operation: the tests own it in locals until a flush, a wait or a purge
//! has seen the operation finish; bcopy data fits the iface's bcopy limit
//! (the bounce buffer). A completion is passed as the raw pointer
//! `CountingCompletion::as_ptr` gives (NULL for none). Bad-input tests
//! pass NULL or foreign handles the library is specified to reject: it
//! checks them before use.
#![allow(dead_code)]

use std::ffi::{c_uint, c_void, CStr};
use std::ptr::null_mut;

use uct::abi::*;
use uct::api::async_context::*;
use uct::api::component::*;
use uct::api::ep::*;
use uct::api::iface::*;
use uct::api::md::*;
use uct::api::soft_hca::*;
use uct::api::v2::*;
use uct::api::worker::*;

// ------------------------------------------------------------- structs --

/// A C struct for which all-zero bytes are a valid value: integers, arrays,
/// raw pointers (NULL), `Option` of function pointers (`None`) and unions
/// of those, nothing else.
///
/// # Safety
/// Only for such structs.
pub unsafe trait AllZeroValid: Sized {}

// SAFETY (each impl below): the struct's fields are integers, arrays,
// raw pointers, Option<fn> and unions of those (see src/abi).
unsafe impl AllZeroValid for uct_allocated_memory_t {}
unsafe impl AllZeroValid for uct_component_attr_t {}
unsafe impl AllZeroValid for uct_ep_attr_t {}
unsafe impl AllZeroValid for uct_ep_is_connected_params_t {}
unsafe impl AllZeroValid for uct_ep_params_t {}
unsafe impl AllZeroValid for uct_iface_attr_t {}
unsafe impl AllZeroValid for uct_iface_attr_v2_t {}
unsafe impl AllZeroValid for uct_iface_is_reachable_params_t {}
unsafe impl AllZeroValid for uct_iface_params_t {}
unsafe impl AllZeroValid for uct_md_attr_t {}
unsafe impl AllZeroValid for uct_md_attr_v2_t {}

/// An all-zero `T` (a C struct to fill field by field).
pub fn zeroed<T: AllZeroValid>() -> T {
    // SAFETY: all-zero is a valid T (the trait's contract).
    unsafe { std::mem::zeroed() }
}

// ------------------------------------------------------------------ AM --

/// `uct_ep_am_short` of `payload` after the 8-byte `header`.
pub fn am_short(ep: uct_ep_h, id: u8, header: u64, payload: &[u8]) -> ucs_status_t {
    // SAFETY: a live ep; `payload` is read during the call only.
    unsafe {
        uct_ep_am_short(
            ep,
            id,
            header,
            payload.as_ptr().cast(),
            payload.len() as c_uint,
        )
    }
}

/// `uct_ep_am_short_iov` of the bytes `iov` names.
pub fn am_short_iov(ep: uct_ep_h, id: u8, iov: &[uct_iov_t]) -> ucs_status_t {
    // SAFETY: a live ep; the iov buffers are read during the call only.
    unsafe { uct_ep_am_short_iov(ep, id, iov.as_ptr(), iov.len()) }
}

/// Copies the slice behind `arg` into the bounce buffer.
unsafe extern "C" fn pack_slice(dest: *mut c_void, arg: *mut c_void) -> usize {
    // SAFETY: `arg` is the `&[u8]` of the wrappers below, alive during the
    // post that calls this; `dest` has room for the iface's bcopy limit,
    // which the data fits (module contract).
    unsafe {
        let bytes = &*(arg as *const &[u8]);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), dest.cast(), bytes.len());
        bytes.len()
    }
}

/// `uct_ep_am_bcopy` of `bytes` (packed during the call).
pub fn am_bcopy(ep: uct_ep_h, id: u8, bytes: &[u8], flags: c_uint) -> isize {
    let mut slice = bytes;
    // SAFETY: a live ep; the pack callback reads `slice` during the call.
    unsafe {
        uct_ep_am_bcopy(
            ep,
            id,
            Some(pack_slice),
            &mut slice as *mut &[u8] as *mut c_void,
            flags,
        )
    }
}

/// `uct_ep_am_zcopy` of `header` and `iov` (registered memory).
pub fn am_zcopy(
    ep: uct_ep_h,
    id: u8,
    header: &[u8],
    iov: &[uct_iov_t],
    flags: c_uint,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    // SAFETY: a live ep; the header is copied during the call; the iov
    // buffers and `comp` outlive the op (module contract).
    unsafe {
        uct_ep_am_zcopy(
            ep,
            id,
            header.as_ptr().cast(),
            header.len() as c_uint,
            iov.as_ptr(),
            iov.len(),
            flags,
            comp,
        )
    }
}

/// Sets AM handler `id` of `iface` (`None` removes it).
pub fn set_am_handler(
    iface: uct_iface_h,
    id: u8,
    cb: uct_am_callback_t,
    arg: *mut c_void,
    flags: u32,
) -> ucs_status_t {
    // SAFETY: a live iface; `arg` is the handler's, kept alive by the test.
    unsafe { uct_iface_set_am_handler(iface, id, cb, arg, flags) }
}

// ----------------------------------------------------------------- RMA --

/// `uct_ep_put_short` of `data` to `remote_addr`.
pub fn put_short(ep: uct_ep_h, data: &[u8], remote_addr: u64, rkey: uct_rkey_t) -> ucs_status_t {
    // SAFETY: a live ep; `data` is read during the call only.
    unsafe {
        uct_ep_put_short(
            ep,
            data.as_ptr().cast(),
            data.len() as c_uint,
            remote_addr,
            rkey,
        )
    }
}

/// `uct_ep_put_bcopy` of `data` (packed during the call).
pub fn put_bcopy(ep: uct_ep_h, data: &[u8], remote_addr: u64, rkey: uct_rkey_t) -> isize {
    let mut slice = data;
    // SAFETY: a live ep; the pack callback reads `slice` during the call.
    unsafe {
        uct_ep_put_bcopy(
            ep,
            Some(pack_slice),
            &mut slice as *mut &[u8] as *mut c_void,
            remote_addr,
            rkey,
        )
    }
}

/// `uct_ep_put_zcopy` of `iov` (registered memory).
pub fn put_zcopy(
    ep: uct_ep_h,
    iov: &[uct_iov_t],
    remote_addr: u64,
    rkey: uct_rkey_t,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    // SAFETY: a live ep; the iov buffers and `comp` outlive the op.
    unsafe { uct_ep_put_zcopy(ep, iov.as_ptr(), iov.len(), remote_addr, rkey, comp) }
}

/// `uct_ep_get_short` into `dest` (the data is there when it answers
/// `UCS_OK`).
pub fn get_short(
    ep: uct_ep_h,
    dest: &mut [u8],
    remote_addr: u64,
    rkey: uct_rkey_t,
) -> ucs_status_t {
    // SAFETY: a live ep; `dest` outlives the op (module contract).
    unsafe {
        uct_ep_get_short(
            ep,
            dest.as_mut_ptr().cast(),
            dest.len() as c_uint,
            remote_addr,
            rkey,
        )
    }
}

/// `uct_ep_get_zcopy` into `iov` (registered memory).
pub fn get_zcopy(
    ep: uct_ep_h,
    iov: &[uct_iov_t],
    remote_addr: u64,
    rkey: uct_rkey_t,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    // SAFETY: a live ep; the iov buffers and `comp` outlive the op.
    unsafe { uct_ep_get_zcopy(ep, iov.as_ptr(), iov.len(), remote_addr, rkey, comp) }
}

/// `uct_ep_get_bcopy` of `length` bytes, handed to `unpack` with `arg`
/// when the get completes.
pub fn get_bcopy(
    ep: uct_ep_h,
    unpack: uct_unpack_callback_t,
    arg: *mut c_void,
    length: usize,
    remote_addr: u64,
    rkey: uct_rkey_t,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    // SAFETY: a live ep; `arg` is what `unpack` expects and, with `comp`,
    // outlives the op.
    unsafe { uct_ep_get_bcopy(ep, unpack, arg, length, remote_addr, rkey, comp) }
}

// ------------------------------------------------------------- atomics --

/// `uct_ep_atomic64_post`.
pub fn atomic64_post(
    ep: uct_ep_h,
    op: uct_atomic_op_t,
    value: u64,
    remote_addr: u64,
    rkey: uct_rkey_t,
) -> ucs_status_t {
    // SAFETY: a live ep; nothing is kept.
    unsafe { uct_ep_atomic64_post(ep, op, value, remote_addr, rkey) }
}

/// `uct_ep_atomic32_post`.
pub fn atomic32_post(
    ep: uct_ep_h,
    op: uct_atomic_op_t,
    value: u32,
    remote_addr: u64,
    rkey: uct_rkey_t,
) -> ucs_status_t {
    // SAFETY: a live ep; nothing is kept.
    unsafe { uct_ep_atomic32_post(ep, op, value, remote_addr, rkey) }
}

/// `uct_ep_atomic64_fetch` into `result` (written when it completes).
pub fn atomic64_fetch(
    ep: uct_ep_h,
    op: uct_atomic_op_t,
    value: u64,
    result: &mut u64,
    remote_addr: u64,
    rkey: uct_rkey_t,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    // SAFETY: a live ep; `result` and `comp` outlive the op.
    unsafe { uct_ep_atomic64_fetch(ep, op, value, result, remote_addr, rkey, comp) }
}

/// `uct_ep_atomic32_fetch` into `result` (written when it completes).
pub fn atomic32_fetch(
    ep: uct_ep_h,
    op: uct_atomic_op_t,
    value: u32,
    result: &mut u32,
    remote_addr: u64,
    rkey: uct_rkey_t,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    // SAFETY: a live ep; `result` and `comp` outlive the op.
    unsafe { uct_ep_atomic32_fetch(ep, op, value, result, remote_addr, rkey, comp) }
}

/// `uct_ep_atomic_cswap64` into `result` (written when it completes).
pub fn cswap64(
    ep: uct_ep_h,
    compare: u64,
    swap: u64,
    remote_addr: u64,
    rkey: uct_rkey_t,
    result: &mut u64,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    // SAFETY: a live ep; `result` and `comp` outlive the op.
    unsafe { uct_ep_atomic_cswap64(ep, compare, swap, remote_addr, rkey, result, comp) }
}

/// `uct_ep_atomic_cswap32` into `result` (written when it completes).
pub fn cswap32(
    ep: uct_ep_h,
    compare: u32,
    swap: u32,
    remote_addr: u64,
    rkey: uct_rkey_t,
    result: &mut u32,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    // SAFETY: a live ep; `result` and `comp` outlive the op.
    unsafe { uct_ep_atomic_cswap32(ep, compare, swap, remote_addr, rkey, result, comp) }
}

// ---------------------------------------------------- flush, fence, ep --

/// `uct_ep_flush` (one call, no waiting).
pub fn ep_flush(ep: uct_ep_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t {
    // SAFETY: a live ep; `comp` (if any) outlives the flush.
    unsafe { uct_ep_flush(ep, flags, comp) }
}

/// `uct_iface_flush` (one call, no waiting).
pub fn iface_flush(iface: uct_iface_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t {
    // SAFETY: a live iface; `comp` (if any) outlives the flush.
    unsafe { uct_iface_flush(iface, flags, comp) }
}

/// `uct_ep_fence`.
pub fn ep_fence(ep: uct_ep_h) -> ucs_status_t {
    // SAFETY: a live ep.
    unsafe { uct_ep_fence(ep, 0) }
}

/// `uct_ep_pending_add` of `req` (kept until dispatched or purged).
pub fn pending_add(ep: uct_ep_h, req: &mut uct_pending_req_t, flags: c_uint) -> ucs_status_t {
    // SAFETY: a live ep; `req` outlives its time on the queue.
    unsafe { uct_ep_pending_add(ep, req, flags) }
}

/// `uct_ep_pending_purge` with `cb` (or none).
pub fn pending_purge(ep: uct_ep_h, cb: uct_pending_purge_callback_t, arg: *mut c_void) {
    // SAFETY: a live ep; `arg` is what `cb` expects.
    unsafe { uct_ep_pending_purge(ep, cb, arg) }
}

/// `uct_ep_destroy`.
pub fn ep_destroy(ep: uct_ep_h) {
    // SAFETY: a live ep, destroyed once.
    unsafe { uct_ep_destroy(ep) }
}

/// `uct_iface_release_desc` of a descriptor an AM handler kept (it
/// answered `UCS_INPROGRESS` for it).
pub fn release_desc(desc: *mut c_void) {
    // SAFETY: a kept descriptor, released once (module contract).
    unsafe { uct_iface_release_desc(desc) }
}

/// `uct_iface_progress` of one iface.
pub fn iface_progress(iface: uct_iface_h) -> c_uint {
    // SAFETY: a live iface.
    unsafe { uct_iface_progress(iface) }
}

/// `uct_ep_check`.
pub fn ep_check(ep: uct_ep_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t {
    // SAFETY: a live ep; `comp` (if any) outlives the check.
    unsafe { uct_ep_check(ep, flags, comp) }
}

/// `uct_ep_is_connected` with `params` (their address fields point at
/// buffers the caller holds).
pub fn ep_is_connected(ep: uct_ep_h, params: &uct_ep_is_connected_params_t) -> i32 {
    // SAFETY: a live ep; valid params.
    unsafe { uct_ep_is_connected(ep, params) }
}

/// `uct_ep_connect_to_ep` with the peer's device and ep addresses.
pub fn connect_to_ep(ep: uct_ep_h, device_addr: &[u8], ep_addr: &[u8]) -> ucs_status_t {
    // SAFETY: a live ep; the addresses are read during the call only.
    unsafe { uct_ep_connect_to_ep(ep, device_addr.as_ptr().cast(), ep_addr.as_ptr().cast()) }
}

/// `uct_ep_invalidate` with `params` (`None`: NULL, as UCX's own tests
/// call it).
pub fn ep_invalidate(ep: uct_ep_h, params: Option<&uct_ep_invalidate_params_t>) -> ucs_status_t {
    let params = params.map_or(std::ptr::null(), |p| p as *const _);
    // SAFETY: a live ep; NULL or valid params.
    unsafe { uct_ep_invalidate(ep, params) }
}

/// `uct_ep_query` into `attr` (its field mask set by the caller; a TX
/// token pointer, if asked for, points at a buffer the caller holds).
pub fn ep_query(ep: uct_ep_h, attr: &mut uct_ep_attr_t) -> ucs_status_t {
    // SAFETY: NULL or a live ep; a valid attr.
    unsafe { uct_ep_query(ep, attr) }
}

/// `uct_ep_outstanding_purge` with `params` (`None`: NULL).
pub fn outstanding_purge(
    ep: uct_ep_h,
    params: Option<&uct_ep_outstanding_purge_params_t>,
) -> ucs_status_t {
    let params = params.map_or(std::ptr::null(), |p| p as *const _);
    // SAFETY: NULL or a live ep; NULL or params whose token, if set, is a
    // buffer the caller holds and whose callback takes `arg`.
    unsafe { uct_ep_outstanding_purge(ep, params) }
}

/// `uct_ep_failover_enable`.
pub fn failover_enable(ep: uct_ep_h) -> ucs_status_t {
    // SAFETY: a live ep.
    unsafe { uct_ep_failover_enable(ep) }
}

// --------------------------------------------------------------- iface --

/// `uct_iface_open` on `md` and `worker` with `params` (their names
/// NUL-terminated or NULL) and `config` (NULL: defaults) into `iface`.
pub fn iface_open(
    md: uct_md_h,
    worker: uct_worker_h,
    params: &uct_iface_params_t,
    config: *const uct_iface_config_t,
    iface: &mut uct_iface_h,
) -> ucs_status_t {
    // SAFETY: NULL or live md, worker and config (checked by the library);
    // valid params; a writable out-pointer.
    unsafe { uct_iface_open(md, worker, params, config, iface) }
}

/// `uct_iface_close` (NULL is ignored).
pub fn iface_close(iface: uct_iface_h) {
    // SAFETY: NULL or a live iface, closed once.
    unsafe { uct_iface_close(iface) }
}

/// `uct_iface_query`: the attributes, or the status.
pub fn iface_query(iface: uct_iface_h) -> Result<uct_iface_attr_t, ucs_status_t> {
    let mut attr: uct_iface_attr_t = zeroed();
    // SAFETY: a live iface, a writable attr.
    match unsafe { uct_iface_query(iface, &mut attr) } {
        UCS_OK => Ok(attr),
        status => Err(status),
    }
}

/// `uct_iface_query_v2` into `attr` (its field mask set by the caller; its
/// token pointers, if asked for, point at buffers the caller holds).
pub fn iface_query_v2(iface: uct_iface_h, attr: &mut uct_iface_attr_v2_t) -> ucs_status_t {
    // SAFETY: a live iface; valid attr.
    unsafe { uct_iface_query_v2(iface, attr) }
}

/// `uct_iface_is_reachable_v2` with `params`.
pub fn is_reachable_v2(iface: uct_iface_h, params: &uct_iface_is_reachable_params_t) -> i32 {
    // SAFETY: a live iface; valid params.
    unsafe { uct_iface_is_reachable_v2(iface, params) }
}

/// `uct_iface_event_fd_get` into `fd`.
pub fn event_fd_get(iface: uct_iface_h, fd: &mut i32) -> ucs_status_t {
    // SAFETY: a live iface; a writable int.
    unsafe { uct_iface_event_fd_get(iface, fd) }
}

/// `uct_iface_event_arm` for `events`.
pub fn event_arm(iface: uct_iface_h, events: c_uint) -> ucs_status_t {
    // SAFETY: a live iface.
    unsafe { uct_iface_event_arm(iface, events) }
}

// ------------------------------------------------------------------ md --

/// `uct_md_mem_dereg`.
pub fn mem_dereg(md: uct_md_h, memh: uct_mem_h) -> ucs_status_t {
    // SAFETY: a live md; `memh` one of its registrations, released once.
    unsafe { uct_md_mem_dereg(md, memh) }
}

/// `uct_md_mem_reg` of `len` bytes at `address`: the handle, or the status.
pub fn mem_reg(
    md: uct_md_h,
    address: *mut u8,
    len: usize,
    flags: c_uint,
) -> Result<uct_mem_h, ucs_status_t> {
    let mut memh = null_mut();
    // SAFETY: a live md; the memory stays valid while registered (the
    // test deregisters before freeing it).
    match unsafe { uct_md_mem_reg(md, address.cast(), len, flags, &mut memh) } {
        UCS_OK => Ok(memh),
        status => Err(status),
    }
}

/// `uct_query_components` into `list` and `count`.
pub fn query_components(list: &mut *mut uct_component_h, count: &mut c_uint) -> ucs_status_t {
    // SAFETY: writable out-pointers.
    unsafe { uct_query_components(list, count) }
}

/// `uct_release_component_list` (NULL is ignored).
pub fn release_component_list(list: *mut uct_component_h) {
    // SAFETY: NULL or a list from uct_query_components, released once.
    unsafe { uct_release_component_list(list) }
}

/// `uct_component_query` into `attr` (its field mask set by the caller, its
/// resource array, if asked for, with room for every md).
pub fn component_query(
    component: uct_component_h,
    attr: &mut uct_component_attr_t,
) -> ucs_status_t {
    // SAFETY: NULL, foreign or a live component (checked); valid attr.
    unsafe { uct_component_query(component, attr) }
}

/// `uct_md_open` of `name` with `config` (NULL: defaults) into `md`.
pub fn md_open(
    component: uct_component_h,
    name: &CStr,
    config: *const uct_md_config_t,
    md: &mut uct_md_h,
) -> ucs_status_t {
    // SAFETY: NULL, foreign or a live component and config (checked); a
    // NUL-terminated name; a writable out-pointer.
    unsafe { uct_md_open(component, name.as_ptr(), config, md) }
}

/// `uct_md_close` (NULL is ignored).
pub fn md_close(md: uct_md_h) {
    // SAFETY: NULL or a live md, closed once.
    unsafe { uct_md_close(md) }
}

/// `uct_md_query` into `attr`.
pub fn md_query(md: uct_md_h, attr: &mut uct_md_attr_t) -> ucs_status_t {
    // SAFETY: NULL or a live md; a writable attr.
    unsafe { uct_md_query(md, attr) }
}

/// `uct_md_query_v2` into `attr` (its field mask set by the caller).
pub fn md_query_v2(md: uct_md_h, attr: &mut uct_md_attr_v2_t) -> ucs_status_t {
    // SAFETY: NULL or a live md; a writable attr.
    unsafe { uct_md_query_v2(md, attr) }
}

/// `uct_md_query_tl_resources` of `md`: the resources (copied out of the
/// released list), or the status.
pub fn tl_resources(md: uct_md_h) -> Result<Vec<uct_tl_resource_desc_t>, ucs_status_t> {
    let mut list = null_mut();
    let mut count: c_uint = 0;
    // SAFETY: NULL or a live md; writable out-pointers.
    let status = unsafe { uct_md_query_tl_resources(md, &mut list, &mut count) };
    if status != UCS_OK {
        return Err(status);
    }
    // SAFETY: the list has `count` entries; released once, after copying.
    unsafe {
        let resources = std::slice::from_raw_parts(list, count as usize).to_vec();
        uct_release_tl_resource_list(list);
        Ok(resources)
    }
}

// ------------------------------------------------------------ soft HCA --

/// `uct_soft_hca_drop_next`: `device` drops its next `count` packets.
pub fn drop_next(device: &CStr, count: c_uint) -> ucs_status_t {
    // SAFETY: a NUL-terminated name.
    unsafe { uct_soft_hca_drop_next(device.as_ptr(), count) }
}

/// `uct_soft_hca_loss_set`: `device` drops this fraction of its packets.
pub fn loss_set(device: &CStr, drop_ratio: f64) -> ucs_status_t {
    // SAFETY: a NUL-terminated name.
    unsafe { uct_soft_hca_loss_set(device.as_ptr(), drop_ratio) }
}

/// `uct_soft_hca_link_set`: `device`'s cable in (`true`) or out.
pub fn link_set(device: &CStr, up: bool) -> ucs_status_t {
    // SAFETY: a NUL-terminated name.
    unsafe { uct_soft_hca_link_set(device.as_ptr(), i32::from(up)) }
}

// -------------------------------------------------------- async, worker --

/// `ucs_async_context_create` into `context` (untouched on failure).
pub fn async_context_create(
    mode: ucs_async_mode_t,
    context: &mut *mut ucs_async_context_t,
) -> ucs_status_t {
    // SAFETY: a writable out-pointer.
    unsafe { ucs_async_context_create(mode, context) }
}

/// `ucs_async_context_destroy` (NULL is ignored).
pub fn async_context_destroy(context: *mut ucs_async_context_t) {
    // SAFETY: NULL or a live context, destroyed once.
    unsafe { ucs_async_context_destroy(context) }
}

/// `ucs_async_poll` of `context` (NULL: every poll-mode context).
pub fn async_poll(context: *mut ucs_async_context_t) {
    // SAFETY: NULL or a live context.
    unsafe { ucs_async_poll(context) }
}

/// `ucs_async_set_event_handler` for `fd`.
pub fn set_event_handler(
    mode: ucs_async_mode_t,
    fd: i32,
    events: ucs_event_set_types_t,
    cb: ucs_async_event_cb_t,
    arg: *mut c_void,
    context: *mut ucs_async_context_t,
) -> ucs_status_t {
    // SAFETY: NULL or a live context; `arg` is what `cb` expects and
    // outlives the handler.
    unsafe { ucs_async_set_event_handler(mode, fd, events, cb, arg, context) }
}

/// `ucs_async_add_timer` into `timer_id`.
pub fn add_timer(
    mode: ucs_async_mode_t,
    interval: ucs_time_t,
    cb: ucs_async_event_cb_t,
    arg: *mut c_void,
    context: *mut ucs_async_context_t,
    timer_id: &mut i32,
) -> ucs_status_t {
    // SAFETY: as in set_event_handler; a writable id.
    unsafe { ucs_async_add_timer(mode, interval, cb, arg, context, timer_id) }
}

/// `uct_worker_create` on `context` into `worker` (untouched on failure).
pub fn worker_create(
    context: *mut ucs_async_context_t,
    mode: ucs_thread_mode_t,
    worker: &mut uct_worker_h,
) -> ucs_status_t {
    // SAFETY: NULL, foreign or a live context (checked by the library); a
    // writable out-pointer.
    unsafe { uct_worker_create(context, mode, worker) }
}

/// `uct_worker_destroy` (NULL is ignored).
pub fn worker_destroy(worker: uct_worker_h) {
    // SAFETY: NULL or a live worker, destroyed once.
    unsafe { uct_worker_destroy(worker) }
}

/// `uct_worker_progress`.
pub fn worker_progress(worker: uct_worker_h) -> c_uint {
    // SAFETY: NULL or a live worker.
    unsafe { uct_worker_progress(worker) }
}

/// `uct_worker_progress_register_safe` of `func(arg)` into `id`.
pub fn progress_register(
    worker: uct_worker_h,
    func: ucs_callback_t,
    arg: *mut c_void,
    flags: c_uint,
    id: &mut uct_worker_cb_id_t,
) {
    // SAFETY: NULL or a live worker; `arg` outlives the registration.
    unsafe { uct_worker_progress_register_safe(worker, func, arg, flags, id) }
}

/// `uct_worker_progress_unregister_safe` of `id` (reset to NULL).
pub fn progress_unregister(worker: uct_worker_h, id: &mut uct_worker_cb_id_t) {
    // SAFETY: NULL or a live worker; an id from its registration or NULL.
    unsafe { uct_worker_progress_unregister_safe(worker, id) }
}

/// A value the library writes behind the compiler's back (a fetched
/// result, a completion's fields), read afresh.
pub fn read_volatile<T: Copy>(value: &T) -> T {
    // SAFETY: a valid, aligned reference.
    unsafe { std::ptr::read_volatile(value) }
}

/// Whether `fd` becomes readable within `timeout` (one `poll`).
pub fn fd_readable(fd: i32, timeout: std::time::Duration) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut pfd, 1, timeout.as_millis() as i32) };
    n == 1 && pfd.revents & libc::POLLIN != 0
}

/// One contiguous iov entry of `length` bytes at `buffer` (`memh` from its
/// registration, or NULL where the op takes unregistered memory).
pub fn iov_entry<T>(buffer: *mut T, length: usize, memh: uct_mem_h) -> uct_iov_t {
    uct_iov_t {
        buffer: buffer.cast(),
        length,
        memh,
        stride: 0,
        count: 1,
    }
}
