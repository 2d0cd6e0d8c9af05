//! `uct/api/tl.h`: the transport operations table and the objects whose first
//! member callers read directly (`uct_worker`, `uct_iface`, `uct_ep`,
//! `uct_recv_desc`). Binaries compiled against UCX's headers jump through
//! `ep->iface->ops.<slot>`, so slot order and types here are binary ABI.

use core::ffi::{c_int, c_uint, c_void};

use super::ucs_callbackq::ucs_callbackq_t;
use super::ucs_status::{ucs_status_ptr_t, ucs_status_t};
use super::uct_api::*;
use super::uct_def::*;

pub type uct_ep_put_short_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        buffer: *const c_void,
        length: c_uint,
        remote_addr: u64,
        rkey: uct_rkey_t,
    ) -> ucs_status_t,
>;
pub type uct_ep_put_bcopy_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        pack_cb: uct_pack_callback_t,
        arg: *mut c_void,
        remote_addr: u64,
        rkey: uct_rkey_t,
    ) -> libc::ssize_t,
>;
pub type uct_ep_put_zcopy_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        iov: *const uct_iov_t,
        iovcnt: usize,
        remote_addr: u64,
        rkey: uct_rkey_t,
        comp: *mut uct_completion_t,
    ) -> ucs_status_t,
>;
pub type uct_ep_get_short_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        buffer: *mut c_void,
        length: c_uint,
        remote_addr: u64,
        rkey: uct_rkey_t,
    ) -> ucs_status_t,
>;
pub type uct_ep_get_bcopy_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        unpack_cb: uct_unpack_callback_t,
        arg: *mut c_void,
        length: usize,
        remote_addr: u64,
        rkey: uct_rkey_t,
        comp: *mut uct_completion_t,
    ) -> ucs_status_t,
>;
pub type uct_ep_get_zcopy_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        iov: *const uct_iov_t,
        iovcnt: usize,
        remote_addr: u64,
        rkey: uct_rkey_t,
        comp: *mut uct_completion_t,
    ) -> ucs_status_t,
>;
pub type uct_ep_am_short_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        id: u8,
        header: u64,
        payload: *const c_void,
        length: c_uint,
    ) -> ucs_status_t,
>;
pub type uct_ep_am_short_iov_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        id: u8,
        iov: *const uct_iov_t,
        iovcnt: usize,
    ) -> ucs_status_t,
>;
pub type uct_ep_am_bcopy_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        id: u8,
        pack_cb: uct_pack_callback_t,
        arg: *mut c_void,
        flags: c_uint,
    ) -> libc::ssize_t,
>;
pub type uct_ep_am_zcopy_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        id: u8,
        header: *const c_void,
        header_length: c_uint,
        iov: *const uct_iov_t,
        iovcnt: usize,
        flags: c_uint,
        comp: *mut uct_completion_t,
    ) -> ucs_status_t,
>;
pub type uct_ep_atomic_cswap64_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        compare: u64,
        swap: u64,
        remote_addr: u64,
        rkey: uct_rkey_t,
        result: *mut u64,
        comp: *mut uct_completion_t,
    ) -> ucs_status_t,
>;
pub type uct_ep_atomic_cswap32_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        compare: u32,
        swap: u32,
        remote_addr: u64,
        rkey: uct_rkey_t,
        result: *mut u32,
        comp: *mut uct_completion_t,
    ) -> ucs_status_t,
>;
pub type uct_ep_atomic32_post_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        opcode: c_uint,
        value: u32,
        remote_addr: u64,
        rkey: uct_rkey_t,
    ) -> ucs_status_t,
>;
pub type uct_ep_atomic64_post_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        opcode: c_uint,
        value: u64,
        remote_addr: u64,
        rkey: uct_rkey_t,
    ) -> ucs_status_t,
>;
pub type uct_ep_atomic32_fetch_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        opcode: c_uint,
        value: u32,
        result: *mut u32,
        remote_addr: u64,
        rkey: uct_rkey_t,
        comp: *mut uct_completion_t,
    ) -> ucs_status_t,
>;
pub type uct_ep_atomic64_fetch_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        opcode: c_uint,
        value: u64,
        result: *mut u64,
        remote_addr: u64,
        rkey: uct_rkey_t,
        comp: *mut uct_completion_t,
    ) -> ucs_status_t,
>;
pub type uct_ep_tag_eager_short_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        tag: uct_tag_t,
        data: *const c_void,
        length: usize,
    ) -> ucs_status_t,
>;
pub type uct_ep_tag_eager_bcopy_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        tag: uct_tag_t,
        imm: u64,
        pack_cb: uct_pack_callback_t,
        arg: *mut c_void,
        flags: c_uint,
    ) -> libc::ssize_t,
>;
pub type uct_ep_tag_eager_zcopy_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        tag: uct_tag_t,
        imm: u64,
        iov: *const uct_iov_t,
        iovcnt: usize,
        flags: c_uint,
        comp: *mut uct_completion_t,
    ) -> ucs_status_t,
>;
pub type uct_ep_tag_rndv_zcopy_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        tag: uct_tag_t,
        header: *const c_void,
        header_length: c_uint,
        iov: *const uct_iov_t,
        iovcnt: usize,
        flags: c_uint,
        comp: *mut uct_completion_t,
    ) -> ucs_status_ptr_t,
>;
pub type uct_ep_tag_rndv_cancel_func_t =
    Option<unsafe extern "C" fn(ep: uct_ep_h, op: *mut c_void) -> ucs_status_t>;
pub type uct_ep_tag_rndv_request_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        tag: uct_tag_t,
        header: *const c_void,
        header_length: c_uint,
        flags: c_uint,
    ) -> ucs_status_t,
>;
pub type uct_iface_tag_recv_zcopy_func_t = Option<
    unsafe extern "C" fn(
        iface: uct_iface_h,
        tag: uct_tag_t,
        tag_mask: uct_tag_t,
        iov: *const uct_iov_t,
        iovcnt: usize,
        ctx: *mut uct_tag_context_t,
    ) -> ucs_status_t,
>;
pub type uct_iface_tag_recv_cancel_func_t = Option<
    unsafe extern "C" fn(
        iface: uct_iface_h,
        ctx: *mut uct_tag_context_t,
        force: c_int,
    ) -> ucs_status_t,
>;
pub type uct_ep_pending_add_func_t = Option<
    unsafe extern "C" fn(ep: uct_ep_h, n: *mut uct_pending_req_t, flags: c_uint) -> ucs_status_t,
>;
pub type uct_ep_pending_purge_func_t =
    Option<unsafe extern "C" fn(ep: uct_ep_h, cb: uct_pending_purge_callback_t, arg: *mut c_void)>;
pub type uct_ep_flush_func_t = Option<
    unsafe extern "C" fn(ep: uct_ep_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t,
>;
pub type uct_ep_fence_func_t =
    Option<unsafe extern "C" fn(ep: uct_ep_h, flags: c_uint) -> ucs_status_t>;
pub type uct_ep_check_func_t = Option<
    unsafe extern "C" fn(ep: uct_ep_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t,
>;
pub type uct_ep_create_func_t = Option<
    unsafe extern "C" fn(params: *const uct_ep_params_t, ep_p: *mut uct_ep_h) -> ucs_status_t,
>;
pub type uct_ep_connect_func_t = Option<
    unsafe extern "C" fn(ep: uct_ep_h, params: *const uct_ep_connect_params_t) -> ucs_status_t,
>;
pub type uct_ep_disconnect_func_t =
    Option<unsafe extern "C" fn(ep: uct_ep_h, flags: c_uint) -> ucs_status_t>;
pub type uct_cm_ep_conn_notify_func_t = Option<unsafe extern "C" fn(ep: uct_ep_h) -> ucs_status_t>;
pub type uct_ep_destroy_func_t = Option<unsafe extern "C" fn(ep: uct_ep_h)>;
pub type uct_ep_get_address_func_t =
    Option<unsafe extern "C" fn(ep: uct_ep_h, addr: *mut uct_ep_addr_t) -> ucs_status_t>;
pub type uct_ep_connect_to_ep_func_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        dev_addr: *const uct_device_addr_t,
        ep_addr: *const uct_ep_addr_t,
    ) -> ucs_status_t,
>;
pub type uct_iface_accept_func_t = Option<
    unsafe extern "C" fn(iface: uct_iface_h, conn_request: uct_conn_request_h) -> ucs_status_t,
>;
pub type uct_iface_reject_func_t = Option<
    unsafe extern "C" fn(iface: uct_iface_h, conn_request: uct_conn_request_h) -> ucs_status_t,
>;
pub type uct_iface_flush_func_t = Option<
    unsafe extern "C" fn(
        iface: uct_iface_h,
        flags: c_uint,
        comp: *mut uct_completion_t,
    ) -> ucs_status_t,
>;
pub type uct_iface_fence_func_t =
    Option<unsafe extern "C" fn(iface: uct_iface_h, flags: c_uint) -> ucs_status_t>;
pub type uct_iface_progress_enable_func_t =
    Option<unsafe extern "C" fn(iface: uct_iface_h, flags: c_uint)>;
pub type uct_iface_progress_disable_func_t =
    Option<unsafe extern "C" fn(iface: uct_iface_h, flags: c_uint)>;
pub type uct_iface_progress_func_t = Option<unsafe extern "C" fn(iface: uct_iface_h) -> c_uint>;
pub type uct_iface_event_fd_get_func_t =
    Option<unsafe extern "C" fn(iface: uct_iface_h, fd_p: *mut c_int) -> ucs_status_t>;
pub type uct_iface_event_arm_func_t =
    Option<unsafe extern "C" fn(iface: uct_iface_h, events: c_uint) -> ucs_status_t>;
pub type uct_iface_close_func_t = Option<unsafe extern "C" fn(iface: uct_iface_h)>;
pub type uct_iface_query_func_t = Option<
    unsafe extern "C" fn(iface: uct_iface_h, iface_attr: *mut uct_iface_attr_t) -> ucs_status_t,
>;
pub type uct_iface_get_device_address_func_t =
    Option<unsafe extern "C" fn(iface: uct_iface_h, addr: *mut uct_device_addr_t) -> ucs_status_t>;
pub type uct_iface_get_address_func_t =
    Option<unsafe extern "C" fn(iface: uct_iface_h, addr: *mut uct_iface_addr_t) -> ucs_status_t>;
pub type uct_iface_is_reachable_func_t = Option<
    unsafe extern "C" fn(
        iface: uct_iface_h,
        dev_addr: *const uct_device_addr_t,
        iface_addr: *const uct_iface_addr_t,
    ) -> c_int,
>;

/// The table of transport operations every interface starts with, in UCX's
/// slot order (50 pointers, 400 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_iface_ops {
    pub ep_put_short: uct_ep_put_short_func_t,
    pub ep_put_bcopy: uct_ep_put_bcopy_func_t,
    pub ep_put_zcopy: uct_ep_put_zcopy_func_t,
    pub ep_get_short: uct_ep_get_short_func_t,
    pub ep_get_bcopy: uct_ep_get_bcopy_func_t,
    pub ep_get_zcopy: uct_ep_get_zcopy_func_t,
    pub ep_am_short: uct_ep_am_short_func_t,
    pub ep_am_short_iov: uct_ep_am_short_iov_func_t,
    pub ep_am_bcopy: uct_ep_am_bcopy_func_t,
    pub ep_am_zcopy: uct_ep_am_zcopy_func_t,
    pub ep_atomic_cswap64: uct_ep_atomic_cswap64_func_t,
    pub ep_atomic_cswap32: uct_ep_atomic_cswap32_func_t,
    pub ep_atomic32_post: uct_ep_atomic32_post_func_t,
    pub ep_atomic64_post: uct_ep_atomic64_post_func_t,
    pub ep_atomic32_fetch: uct_ep_atomic32_fetch_func_t,
    pub ep_atomic64_fetch: uct_ep_atomic64_fetch_func_t,
    pub ep_tag_eager_short: uct_ep_tag_eager_short_func_t,
    pub ep_tag_eager_bcopy: uct_ep_tag_eager_bcopy_func_t,
    pub ep_tag_eager_zcopy: uct_ep_tag_eager_zcopy_func_t,
    pub ep_tag_rndv_zcopy: uct_ep_tag_rndv_zcopy_func_t,
    pub ep_tag_rndv_cancel: uct_ep_tag_rndv_cancel_func_t,
    pub ep_tag_rndv_request: uct_ep_tag_rndv_request_func_t,
    pub iface_tag_recv_zcopy: uct_iface_tag_recv_zcopy_func_t,
    pub iface_tag_recv_cancel: uct_iface_tag_recv_cancel_func_t,
    pub ep_pending_add: uct_ep_pending_add_func_t,
    pub ep_pending_purge: uct_ep_pending_purge_func_t,
    pub ep_flush: uct_ep_flush_func_t,
    pub ep_fence: uct_ep_fence_func_t,
    pub ep_check: uct_ep_check_func_t,
    pub ep_create: uct_ep_create_func_t,
    pub ep_connect: uct_ep_connect_func_t,
    pub ep_disconnect: uct_ep_disconnect_func_t,
    pub cm_ep_conn_notify: uct_cm_ep_conn_notify_func_t,
    pub ep_destroy: uct_ep_destroy_func_t,
    pub ep_get_address: uct_ep_get_address_func_t,
    pub ep_connect_to_ep: uct_ep_connect_to_ep_func_t,
    pub iface_accept: uct_iface_accept_func_t,
    pub iface_reject: uct_iface_reject_func_t,
    pub iface_flush: uct_iface_flush_func_t,
    pub iface_fence: uct_iface_fence_func_t,
    pub iface_progress_enable: uct_iface_progress_enable_func_t,
    pub iface_progress_disable: uct_iface_progress_disable_func_t,
    pub iface_progress: uct_iface_progress_func_t,
    pub iface_event_fd_get: uct_iface_event_fd_get_func_t,
    pub iface_event_arm: uct_iface_event_arm_func_t,
    pub iface_close: uct_iface_close_func_t,
    pub iface_query: uct_iface_query_func_t,
    pub iface_get_device_address: uct_iface_get_device_address_func_t,
    pub iface_get_address: uct_iface_get_address_func_t,
    pub iface_is_reachable: uct_iface_is_reachable_func_t,
}
pub type uct_iface_ops_t = uct_iface_ops;

/// A worker: the callback queue `uct_worker_progress` walks comes first.
#[repr(C)]
#[derive(Debug)]
pub struct uct_worker {
    pub progress_q: ucs_callbackq_t,
}
pub type uct_worker_t = uct_worker;

/// An interface: the operations table comes first.
#[repr(C)]
#[derive(Debug)]
pub struct uct_iface {
    pub ops: uct_iface_ops_t,
}
pub type uct_iface_t = uct_iface;

/// An endpoint: the interface it belongs to comes first.
#[repr(C)]
#[derive(Debug)]
pub struct uct_ep {
    pub iface: uct_iface_h,
}
pub type uct_ep_t = uct_ep;

/// A listener of a connection manager.
#[repr(C)]
#[derive(Debug)]
pub struct uct_listener {
    pub cm: uct_cm_h,
}
pub type uct_listener_t = uct_listener;

/// The release hook of a receive descriptor: a pointer to one of these sits
/// in the 8 bytes just before the data pointer handed to an AM callback with
/// `UCT_CB_PARAM_FLAG_DESC`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_recv_desc {
    pub cb: uct_desc_release_callback_t,
}
pub type uct_recv_desc_t = uct_recv_desc;

/// Releases a received descriptor the user kept.
pub type uct_desc_release_callback_t =
    Option<unsafe extern "C" fn(self_: *mut uct_recv_desc_t, desc: *mut c_void)>;
