//! `uct/api/uct_def.h`: UCT's basic limits, handle types and callback
//! signatures. The header also carries forward typedefs of structs that
//! `uct.h` and `uct_v2.h` complete (`uct_completion_t`, `uct_iface_attr_t`,
//! ...): in Rust each sits beside its struct and tools/headergen places it
//! here, so this file imports nothing above it.

use core::ffi::{c_int, c_uint, c_void};

use super::ucs_config::ucs_sock_addr_t;
use super::ucs_status::ucs_status_t;

pub const UCT_COMPONENT_NAME_MAX: usize = 16;
pub const UCT_MD_GLOBAL_ID_MAX: usize = 256;
pub const UCT_TL_NAME_MAX: usize = 10;
pub const UCT_MD_NAME_MAX: usize = 16;
pub const UCT_DEVICE_NAME_MAX: usize = 32;
/// Bytes of `uct_pending_req_t::priv` a transport may use.
pub const UCT_PENDING_REQ_PRIV_LEN: usize = 40;
/// Bytes of `uct_tag_context_t::priv` a transport may use.
pub const UCT_TAG_PRIV_LEN: usize = 32;
pub const UCT_AM_ID_BITS: c_uint = 5;
/// Number of active-message ids (ids are `0..UCT_AM_ID_MAX`).
pub const UCT_AM_ID_MAX: c_uint = 32;
/// A remote key value that names no key. (The C header defines it as a
/// macro, `((uintptr_t)(-1))`.)
/// cbindgen:ignore
pub const UCT_INVALID_RKEY: uct_rkey_t = usize::MAX;
/// "No dmabuf file descriptor".
pub const UCT_DMABUF_FD_INVALID: c_int = -1;

/// Direction/outcome of a traced active message.
pub type uct_am_trace_type_t = c_uint;
pub const UCT_AM_TRACE_TYPE_SEND: uct_am_trace_type_t = 0;
pub const UCT_AM_TRACE_TYPE_RECV: uct_am_trace_type_t = 1;
pub const UCT_AM_TRACE_TYPE_SEND_DROP: uct_am_trace_type_t = 2;
pub const UCT_AM_TRACE_TYPE_RECV_DROP: uct_am_trace_type_t = 3;
pub const UCT_AM_TRACE_TYPE_LAST: uct_am_trace_type_t = 4;

/// Flags passed to active-message and tag callbacks.
/// The data pointer is a descriptor the callee may keep (return
/// `UCS_INPROGRESS` and later `uct_iface_release_desc`).
pub const UCT_CB_PARAM_FLAG_DESC: c_uint = 0x1;
/// First fragment of a multi-fragment message.
pub const UCT_CB_PARAM_FLAG_FIRST: c_uint = 0x2;
/// More fragments follow.
pub const UCT_CB_PARAM_FLAG_MORE: c_uint = 0x4;

// Handles.
pub type uct_component_h = *mut uct_component;
pub type uct_iface_h = *mut declared::uct_iface;
pub type uct_ep_h = *mut declared::uct_ep;
pub type uct_md_h = *mut uct_md;
pub type uct_worker_h = *mut declared::uct_worker;
pub type uct_cm_h = *mut uct_cm;
pub type uct_listener_h = *mut declared::uct_listener;
pub type uct_device_ep_h = *mut uct_device_ep;
/// Registered memory handle (transport-defined).
pub type uct_mem_h = *mut c_void;
/// A remote key as used by the data path (transport-defined).
pub type uct_rkey_t = libc::uintptr_t;
pub type uct_rkey_ctx_h = *mut c_void;
/// A connection request handed to a server's callback.
pub type uct_conn_request_h = *mut c_void;
/// A tag of the tag-matching API.
pub type uct_tag_t = u64;
/// Id of a progress callback registered on a worker.
pub type uct_worker_cb_id_t = c_int;

/// The objects the handles point to, declared but not completed, as C's
/// `uct_def.h` declares them: tl.h completes them (`uct_tl::{uct_iface,
/// uct_ep, uct_worker, uct_listener}`, the members callers read) and refers
/// back to the handles and callbacks declared here. Code that reads a member
/// casts the handle to the completed type.
///
/// cbindgen:ignore
pub mod declared {
    /// An interface.
    pub struct uct_iface {
        _declared: [u8; 0],
    }
    /// An endpoint.
    pub struct uct_ep {
        _declared: [u8; 0],
    }
    /// A worker.
    pub struct uct_worker {
        _declared: [u8; 0],
    }
    /// A listener of a connection manager.
    pub struct uct_listener {
        _declared: [u8; 0],
    }
}

// Opaque objects.
/// A transport component (`ib`, `self`, ...).
pub struct uct_component {
    _opaque: [u8; 0],
}
/// A memory domain.
pub struct uct_md {
    _opaque: [u8; 0],
}
pub type uct_md_t = uct_md;
/// The operations table of a memory domain (internal).
pub struct uct_md_ops {
    _opaque: [u8; 0],
}
pub type uct_md_ops_t = uct_md_ops;
/// Configuration of a memory domain, from `uct_md_config_read`.
pub struct uct_md_config {
    _opaque: [u8; 0],
}
pub type uct_md_config_t = uct_md_config;
/// Configuration of an interface, from `uct_md_iface_config_read`.
pub struct uct_iface_config {
    _opaque: [u8; 0],
}
pub type uct_iface_config_t = uct_iface_config;
/// Configuration of a connection manager.
pub struct uct_cm_config {
    _opaque: [u8; 0],
}
pub type uct_cm_config_t = uct_cm_config;
/// A connection manager.
pub struct uct_cm {
    _opaque: [u8; 0],
}
pub type uct_cm_t = uct_cm;
/// A device-side endpoint (GPU-initiated communication; not supported).
pub struct uct_device_ep {
    _opaque: [u8; 0],
}
/// A device-side memory element (a union of the transports' device views;
/// declared in C as `typedef union uct_device_mem_elem uct_device_mem_elem_t`).
/// cbindgen:ignore
pub struct uct_device_mem_elem {
    _opaque: [u8; 0],
}
/// cbindgen:ignore
pub type uct_device_mem_elem_t = uct_device_mem_elem;
/// Bytes of a device address (transport-defined length).
pub struct uct_device_addr {
    _opaque: [u8; 0],
}
pub type uct_device_addr_t = uct_device_addr;
/// Bytes of an interface address (transport-defined length).
pub struct uct_iface_addr {
    _opaque: [u8; 0],
}
pub type uct_iface_addr_t = uct_iface_addr;
/// Bytes of an endpoint address (transport-defined length).
pub struct uct_ep_addr {
    _opaque: [u8; 0],
}
pub type uct_ep_addr_t = uct_ep_addr;

/// One entry of a scatter/gather list: `count` blocks of `length` bytes,
/// `stride` bytes apart, starting at `buffer`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_iov {
    pub buffer: *mut c_void,
    pub length: usize,
    pub memh: uct_mem_h,
    pub stride: usize,
    pub count: c_uint,
}
pub type uct_iov_t = uct_iov;

// Connection-manager callback arguments.
pub const UCT_CM_EP_PRIV_DATA_PACK_ARGS_FIELD_DEVICE_NAME: u64 = 0x1;

pub const UCT_CM_EP_RESOLVE_ARGS_FIELD_DEV_NAME: u64 = 0x1;
pub const UCT_CM_EP_RESOLVE_ARGS_FIELD_STATUS: u64 = 0x2;

/// Arguments of the private-data pack callback.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_cm_ep_priv_data_pack_args {
    pub field_mask: u64,
    pub dev_name: [core::ffi::c_char; UCT_DEVICE_NAME_MAX],
}
pub type uct_cm_ep_priv_data_pack_args_t = uct_cm_ep_priv_data_pack_args;

/// Arguments of the address-resolved callback.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_cm_ep_resolve_args {
    pub field_mask: u64,
    pub dev_name: [core::ffi::c_char; UCT_DEVICE_NAME_MAX],
    pub status: ucs_status_t,
}
pub type uct_cm_ep_resolve_args_t = uct_cm_ep_resolve_args;

pub const UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR: u64 = 0x1;
pub const UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR_LENGTH: u64 = 0x2;
pub const UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA: u64 = 0x4;
pub const UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA_LENGTH: u64 = 0x8;

/// What the peer sent during connection establishment.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_cm_remote_data {
    pub field_mask: u64,
    pub dev_addr: *const uct_device_addr_t,
    pub dev_addr_length: usize,
    pub conn_priv_data: *const c_void,
    pub conn_priv_data_length: usize,
}
pub type uct_cm_remote_data_t = uct_cm_remote_data;

pub const UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_DEV_NAME: u64 = 0x1;
pub const UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CONN_REQUEST: u64 = 0x2;
pub const UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_REMOTE_DATA: u64 = 0x4;
pub const UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CLIENT_ADDR: u64 = 0x8;

/// Arguments of a listener's connection-request callback.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_cm_listener_conn_request_args {
    pub field_mask: u64,
    pub dev_name: [core::ffi::c_char; UCT_DEVICE_NAME_MAX],
    pub conn_request: uct_conn_request_h,
    pub remote_data: *const uct_cm_remote_data_t,
    pub client_address: ucs_sock_addr_t,
}
pub type uct_cm_listener_conn_request_args_t = uct_cm_listener_conn_request_args;

pub const UCT_CM_EP_CLIENT_CONNECT_ARGS_FIELD_REMOTE_DATA: u64 = 0x1;
pub const UCT_CM_EP_CLIENT_CONNECT_ARGS_FIELD_STATUS: u64 = 0x2;

/// Arguments of a client's connected callback.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_cm_ep_client_connect_args {
    pub field_mask: u64,
    pub remote_data: *const uct_cm_remote_data_t,
    pub status: ucs_status_t,
}
pub type uct_cm_ep_client_connect_args_t = uct_cm_ep_client_connect_args;

pub const UCT_CM_EP_SERVER_CONN_NOTIFY_ARGS_FIELD_STATUS: u64 = 0x1;

/// Arguments of a server's connection-established notification.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct uct_cm_ep_server_conn_notify_args {
    pub field_mask: u64,
    pub status: ucs_status_t,
}
pub type uct_cm_ep_server_conn_notify_args_t = uct_cm_ep_server_conn_notify_args;

// Callback signatures.

/// Active-message handler: `data`/`length` is the message (header first),
/// `flags` are `UCT_CB_PARAM_FLAG_*`. Returns `UCS_OK` when done with the data,
/// `UCS_INPROGRESS` to keep a descriptor.
pub type uct_am_callback_t = Option<
    unsafe extern "C" fn(
        arg: *mut c_void,
        data: *mut c_void,
        length: usize,
        flags: c_uint,
    ) -> ucs_status_t,
>;

/// Writes a human-readable line about an active message into `buffer`.
pub type uct_am_tracer_t = Option<
    unsafe extern "C" fn(
        arg: *mut c_void,
        type_: uct_am_trace_type_t,
        id: u8,
        data: *const c_void,
        length: usize,
        buffer: *mut core::ffi::c_char,
        max: usize,
    ),
>;

/// Called on a transport error of an endpoint.
pub type uct_error_handler_t = Option<
    unsafe extern "C" fn(arg: *mut c_void, ep: uct_ep_h, status: ucs_status_t) -> ucs_status_t,
>;

/// Packs a message into `dest`; returns the number of bytes written.
pub type uct_pack_callback_t =
    Option<unsafe extern "C" fn(dest: *mut c_void, arg: *mut c_void) -> usize>;

/// Consumes `length` bytes of fetched data.
pub type uct_unpack_callback_t =
    Option<unsafe extern "C" fn(arg: *mut c_void, data: *const c_void, length: usize)>;

/// Server side of the (deprecated) iface-level sockaddr connection setup.
pub type uct_sockaddr_conn_request_callback_t = Option<
    unsafe extern "C" fn(
        iface: uct_iface_h,
        arg: *mut c_void,
        conn_request: uct_conn_request_h,
        conn_priv_data: *const c_void,
        length: usize,
    ),
>;

/// A listener got a connection request.
pub type uct_cm_listener_conn_request_callback_t = Option<
    unsafe extern "C" fn(
        listener: uct_listener_h,
        arg: *mut c_void,
        conn_req_args: *const uct_cm_listener_conn_request_args_t,
    ),
>;

/// A server endpoint is connected.
pub type uct_cm_ep_server_conn_notify_callback_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        arg: *mut c_void,
        connect_args: *const uct_cm_ep_server_conn_notify_args_t,
    ),
>;

/// A client endpoint is connected (or failed to).
pub type uct_cm_ep_client_connect_callback_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        arg: *mut c_void,
        connect_args: *const uct_cm_ep_client_connect_args_t,
    ),
>;

/// The peer disconnected.
pub type uct_ep_disconnect_cb_t = Option<unsafe extern "C" fn(ep: uct_ep_h, arg: *mut c_void)>;

/// Packs connection private data; returns its length or a negative status.
pub type uct_cm_ep_priv_data_pack_callback_t = Option<
    unsafe extern "C" fn(
        arg: *mut c_void,
        pack_args: *const uct_cm_ep_priv_data_pack_args_t,
        priv_data: *mut c_void,
    ) -> libc::ssize_t,
>;

/// The address of a client endpoint was resolved.
pub type uct_cm_ep_resolve_callback_t = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        resolve_args: *const uct_cm_ep_resolve_args_t,
    ) -> ucs_status_t,
>;

/// An unexpected eager tagged message arrived.
pub type uct_tag_unexp_eager_cb_t = Option<
    unsafe extern "C" fn(
        arg: *mut c_void,
        data: *mut c_void,
        length: usize,
        flags: c_uint,
        stag: uct_tag_t,
        imm: u64,
        context: *mut *mut c_void,
    ) -> ucs_status_t,
>;

/// An unexpected rendezvous request arrived.
pub type uct_tag_unexp_rndv_cb_t = Option<
    unsafe extern "C" fn(
        arg: *mut c_void,
        flags: c_uint,
        stag: u64,
        header: *const c_void,
        header_length: c_uint,
        remote_addr: u64,
        length: usize,
        rkey_buf: *const c_void,
    ) -> ucs_status_t,
>;

/// An asynchronous event of an interface.
pub type uct_async_event_cb_t = Option<unsafe extern "C" fn(arg: *mut c_void, flags: c_uint)>;
