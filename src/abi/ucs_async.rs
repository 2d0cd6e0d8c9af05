//! `ucs/async/async_fwd.h`: the asynchronous-event context a worker is bound to.

use core::ffi::{c_int, c_void};

/// Bit set of fd events (`UCS_EVENT_SET_EV*`).
pub type ucs_event_set_types_t = u8;
pub const UCS_EVENT_SET_EVREAD: ucs_event_set_types_t = 0x1;
pub const UCS_EVENT_SET_EVWRITE: ucs_event_set_types_t = 0x2;
pub const UCS_EVENT_SET_EVERR: ucs_event_set_types_t = 0x4;
pub const UCS_EVENT_SET_EDGE_TRIGGERED: ucs_event_set_types_t = 0x8;

/// An asynchronous-event context. Opaque to C callers; created by
/// `ucs_async_context_create`.
pub struct ucs_async_context {
    _opaque: [u8; 0],
}
pub type ucs_async_context_t = ucs_async_context;

/// Called when a registered fd becomes ready or a timer expires.
pub type ucs_async_event_cb_t =
    Option<unsafe extern "C" fn(id: c_int, events: ucs_event_set_types_t, arg: *mut c_void)>;

/// A set of file descriptors to wait on (opaque; `ucs_event_set_create`).
pub struct ucs_sys_event_set {
    _opaque: [u8; 0],
}
pub type ucs_sys_event_set_t = ucs_sys_event_set;

/// Called once per ready fd by `ucs_event_set_wait`.
pub type ucs_event_set_handler_t = Option<
    unsafe extern "C" fn(
        callback_data: *mut c_void,
        events: ucs_event_set_types_t,
        arg: *mut c_void,
    ),
>;
