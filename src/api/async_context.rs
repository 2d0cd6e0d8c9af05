//! `ucs_async_*`: async contexts and their event handlers
//! (`ucs/async/async_fwd.h`).
//!
//! When UCX's own `libucs` is loaded in the process, these step aside as
//! `crate::core::ucx_libucs` describes: new contexts are UCX's, calls on a
//! context go to whoever made it (ours carry a magic word at offset 0).

use std::ffi::{c_char, c_int, c_void};

use crate::abi::*;
use crate::api::checks::{finish, non_null, status_entry_point};
use crate::api::memory_type::CStringTable;
use crate::core::async_context::{self, AsyncContext, AsyncMode};
use crate::core::ucx_libucs::{return_ucx_call, ucx_function, ucx_libucs_loaded};

/// True when `async_context` is a live context of ours (not UCX's).
///
/// # Safety
/// `async_context` must be NULL, one of ours, or a context UCX's libucs made
/// (at least 8 readable bytes: its lock comes first).
pub(crate) unsafe fn is_our_context(async_context: *mut ucs_async_context_t) -> bool {
    // SAFETY: non-NULL and at least 8 readable bytes by the caller's contract.
    !async_context.is_null() && unsafe { AsyncContext::has_our_magic(async_context.cast()) }
}

/// Checks a context handed to `uct_worker_create`: ours and live, or, when
/// UCX's libucs is loaded, any non-NULL context (UCX 1.13 does not publish
/// its layout, and the transport never looks inside it).
///
/// # Safety
/// As [`is_our_context`].
pub(crate) unsafe fn check_worker_async_context(
    async_context: *mut ucs_async_context_t,
    function: &str,
) -> Result<(), Status> {
    non_null(async_context, function, "async context")?;
    // SAFETY: as this function's contract.
    if unsafe { is_our_context(async_context) } || ucx_libucs_loaded() {
        return Ok(());
    }
    tracing::warn!("{function}: {async_context:p} is not a live async context");
    Err(Status::InvalidParam)
}

/// Names of the async modes, indexed by `ucs_async_mode_t`, NULL-terminated
/// (UCX exports this table for configuration printing).
#[no_mangle]
pub static ucs_async_mode_names: CStringTable<{ UCS_ASYNC_MODE_LAST as usize + 1 }> =
    CStringTable([
        c"signal".as_ptr(),
        c"thread_spinlock".as_ptr(),
        c"thread_mutex".as_ptr(),
        c"poll".as_ptr(),
        std::ptr::null::<c_char>(),
    ]);

/// Turns a C handle into our context, or `InvalidParam` with a log line.
///
/// # Safety
/// `async_context` must be NULL or a pointer returned by
/// `ucs_async_context_create` that was not destroyed yet (the magic check
/// catches most violations but cannot make them sound).
pub(crate) unsafe fn async_context_ref<'a>(
    async_context: *mut ucs_async_context_t,
    function: &str,
) -> Result<&'a AsyncContext, Status> {
    non_null(async_context, function, "async context")?;
    // The magic first, through 8 bytes only: a context another library
    // made must not be read as a whole AsyncContext.
    // SAFETY: non-NULL, and by the caller's contract at least 8 readable bytes.
    if !unsafe { AsyncContext::has_our_magic(async_context.cast()) } {
        tracing::warn!("{function}: {async_context:p} is not a live async context");
        return Err(Status::InvalidParam);
    }
    // SAFETY: our magic, so by the caller's contract a live AsyncContext we
    // boxed in ucs_async_context_create.
    Ok(unsafe { &*(async_context as *const AsyncContext) })
}

/// Creates an async context delivering events in `mode`.
///
/// # Safety
/// `async_p` must be NULL or point at writable storage for one pointer.
#[no_mangle]
pub unsafe extern "C" fn ucs_async_context_create(
    mode: ucs_async_mode_t,
    async_p: *mut *mut ucs_async_context_t,
) -> ucs_status_t {
    return_ucx_call!(ucs_async_context_create: fn(ucs_async_mode_t, *mut *mut ucs_async_context_t) -> ucs_status_t; mode, async_p);
    status_entry_point!(FUNCTION = "ucs_async_context_create", {
        non_null(async_p, FUNCTION, "async_p")?;
        let Some(mode) = AsyncMode::from_raw(mode) else {
            tracing::warn!("{FUNCTION}: invalid async mode {mode}");
            return Err(Status::InvalidParam);
        };
        let context = Box::into_raw(Box::new(AsyncContext::new(mode)?));
        // SAFETY: async_p is non-NULL and writable by the caller's contract.
        unsafe { async_p.write(context as *mut ucs_async_context_t) };
        tracing::debug!("{FUNCTION}: created {context:p} in mode {mode:?}");
        Ok(())
    })
}

/// Destroys a context created by `ucs_async_context_create`: stops its
/// service thread and drops its remaining handlers. NULL is ignored.
///
/// # Safety
/// `async_context` must be NULL or a live context; no worker may still use it.
#[no_mangle]
pub unsafe extern "C" fn ucs_async_context_destroy(async_context: *mut ucs_async_context_t) {
    const FUNCTION: &str = "ucs_async_context_destroy";
    if async_context.is_null() {
        return;
    }
    // SAFETY: NULL, ours or UCX's by the caller's contract.
    if !unsafe { is_our_context(async_context) } {
        // A context of UCX's, handed back to UCX.
        return_ucx_call!(ucs_async_context_destroy: fn(*mut ucs_async_context_t); async_context);
    }
    // SAFETY: non-NULL live context by the caller's contract.
    if unsafe { async_context_ref(async_context, FUNCTION) }.is_err() {
        return;
    }
    // SAFETY: the pointer came from Box::into_raw in ucs_async_context_create
    // and the caller destroys it once. shut_down clears the magic before the
    // memory is freed, which makes an accidental second destroy likely to be
    // refused above.
    let mut context = unsafe { Box::from_raw(async_context as *mut AsyncContext) };
    context.shut_down();
    drop(context);
}

/// Runs the handlers whose events are pending now, in the calling thread;
/// NULL polls every poll-mode context.
///
/// # Safety
/// `async_context` must be NULL or a live context.
#[no_mangle]
pub unsafe extern "C" fn ucs_async_poll(async_context: *mut ucs_async_context_t) {
    let ucx = ucx_function!(ucs_async_poll: fn(*mut ucs_async_context_t));
    if async_context.is_null() {
        async_context::poll_all();
        if let Some(ucx) = ucx {
            // SAFETY: UCX's function; NULL means all of its contexts.
            unsafe { ucx(async_context) };
        }
        return;
    }
    // SAFETY: ours or UCX's by the caller's contract.
    if let (false, Some(ucx)) = (unsafe { is_our_context(async_context) }, ucx) {
        // SAFETY: a context of UCX's, handed back to UCX.
        return unsafe { ucx(async_context) };
    }
    // SAFETY: live context by the caller's contract.
    if let Ok(context) = unsafe { async_context_ref(async_context, "ucs_async_poll") } {
        context.poll();
    }
}

/// Calls `cb(event_fd, events, arg)` when `event_fd` has `events`, from the
/// context's service thread (thread modes) or from `ucs_async_poll` (poll
/// mode). The handler id is `event_fd`. Unlike UCX, a context is required.
///
/// # Safety
/// `async_context` NULL or live; `cb(…, arg)` must stay callable until the
/// handler is removed.
#[no_mangle]
pub unsafe extern "C" fn ucs_async_set_event_handler(
    mode: ucs_async_mode_t,
    event_fd: c_int,
    events: ucs_event_set_types_t,
    cb: ucs_async_event_cb_t,
    arg: *mut c_void,
    async_context: *mut ucs_async_context_t,
) -> ucs_status_t {
    // SAFETY: NULL, ours or UCX's by the caller's contract.
    if !unsafe { is_our_context(async_context) } {
        return_ucx_call!(ucs_async_set_event_handler: fn(ucs_async_mode_t, c_int, ucs_event_set_types_t, ucs_async_event_cb_t, *mut c_void, *mut ucs_async_context_t) -> ucs_status_t; mode, event_fd, events, cb, arg, async_context);
    }
    status_entry_point!(FUNCTION = "ucs_async_set_event_handler", {
        // SAFETY: NULL or live by the caller's contract.
        let context = unsafe { async_context_ref(async_context, FUNCTION) }?;
        if AsyncMode::from_raw(mode) != Some(context.mode()) {
            tracing::warn!(
                "{FUNCTION}: mode {mode} differs from the context's {:?}",
                context.mode()
            );
            return Err(Status::InvalidParam);
        }
        let Some(cb) = cb else {
            tracing::warn!("{FUNCTION}: callback is NULL");
            return Err(Status::InvalidParam);
        };
        context.add_fd_handler(event_fd, events, cb, arg)
    })
}

/// Removes handler `id`; with `sync` non-zero, waits until no call of it is
/// running (except the caller's own). `UCS_ERR_NO_ELEM` for an unknown id.
#[no_mangle]
pub extern "C" fn ucs_async_remove_handler(id: c_int, sync: c_int) -> ucs_status_t {
    const FUNCTION: &str = "ucs_async_remove_handler";
    crate::api::enter();
    let result = async_context::remove_handler(id, sync != 0);
    if result.is_err() {
        // UCX's function; the id is not one of ours, so UCX's.
        return_ucx_call!(ucs_async_remove_handler: fn(c_int, c_int) -> ucs_status_t; id, sync);
    }
    finish(
        FUNCTION,
        result.inspect_err(|_| tracing::warn!("{FUNCTION}: no async handler with id {id}")),
    )
}

/// Changes the events the handler of `fd` waits for.
#[no_mangle]
pub extern "C" fn ucs_async_modify_handler(
    fd: c_int,
    events: ucs_event_set_types_t,
) -> ucs_status_t {
    const FUNCTION: &str = "ucs_async_modify_handler";
    crate::api::enter();
    let result = async_context::modify_handler(fd, events);
    if result == Err(Status::NoElem) {
        // UCX's function; the fd has no handler of ours.
        return_ucx_call!(ucs_async_modify_handler: fn(c_int, ucs_event_set_types_t) -> ucs_status_t; fd, events);
    }
    let result = result.inspect_err(|status| {
        tracing::warn!("{FUNCTION}: cannot modify the handler of fd {fd}: {status}")
    });
    finish(FUNCTION, result)
}

/// Timers are not implemented: `UCS_ERR_UNSUPPORTED`, `*timer_id_p` untouched.
///
/// # Safety
/// No pointer argument is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn ucs_async_add_timer(
    mode: ucs_async_mode_t,
    interval: ucs_time_t,
    cb: ucs_async_event_cb_t,
    arg: *mut c_void,
    async_context: *mut ucs_async_context_t,
    timer_id_p: *mut c_int,
) -> ucs_status_t {
    // SAFETY: NULL, ours or UCX's by the caller's contract.
    if !unsafe { is_our_context(async_context) } {
        return_ucx_call!(ucs_async_add_timer: fn(ucs_async_mode_t, ucs_time_t, ucs_async_event_cb_t, *mut c_void, *mut ucs_async_context_t, *mut c_int) -> ucs_status_t; mode, interval, cb, arg, async_context, timer_id_p);
    }
    crate::api::enter();
    tracing::warn!(
        "ucs_async_add_timer: timers are not implemented yet (mode {mode}, interval {interval}, \
         callback set: {}, arg {arg:p}, context {async_context:p}, id at {timer_id_p:p})",
        cb.is_some()
    );
    UCS_ERR_UNSUPPORTED
}

/// Delivers the events a blocked context missed (called by UCX's inline
/// `ucs_async_check_miss`); for our contexts, the same as `ucs_async_poll`.
///
/// # Safety
/// `async_context` must be a live context, ours or UCX's.
#[no_mangle]
pub unsafe extern "C" fn __ucs_async_poll_missed(async_context: *mut ucs_async_context_t) {
    // SAFETY: ours or UCX's by the caller's contract.
    if !unsafe { is_our_context(async_context) } {
        // A context of UCX's, handed back to UCX.
        return_ucx_call!(__ucs_async_poll_missed: fn(*mut ucs_async_context_t); async_context);
    }
    // SAFETY: as this function's contract.
    if let Ok(context) = unsafe { async_context_ref(async_context, "__ucs_async_poll_missed") } {
        context.poll();
    }
}
