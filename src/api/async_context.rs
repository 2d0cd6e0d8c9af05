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
use crate::core::c_boundary::{c_entry, null_argument, FromC, Out};
use crate::core::ucx_libucs::{return_ucx_call, ucx_libucs_loaded};

/// An async context argument: NULL, a live context of ours, or one UCX's
/// libucs made (at least 8 readable bytes: its lock comes first).
///
/// cbindgen:ignore
#[derive(Clone, Copy)]
pub(crate) struct AsyncArg(*mut ucs_async_context_t);

impl FromC<*mut ucs_async_context_t> for AsyncArg {
    /// Relies on: NULL, a live context of ours (from
    /// `ucs_async_context_create`, not destroyed), or one of UCX's.
    unsafe fn from_c(async_context: *mut ucs_async_context_t) -> Self {
        AsyncArg(async_context)
    }
}

impl AsyncArg {
    /// True when it is a live context of ours (not UCX's).
    pub(crate) fn is_ours(self) -> bool {
        // SAFETY: non-NULL and at least 8 readable bytes (FromC).
        !self.0.is_null() && unsafe { AsyncContext::has_our_magic(self.0.cast()) }
    }

    /// Checks a context handed to `uct_worker_create`: ours and live, or,
    /// when UCX's libucs is loaded, any non-NULL context (UCX 1.13 does not
    /// publish its layout, and the transport never looks inside it).
    pub(crate) fn check_for_worker(self, function: &str) -> Result<(), Status> {
        let async_context = self.0;
        non_null(async_context, function, "async context")?;
        if self.is_ours() || ucx_libucs_loaded() {
            return Ok(());
        }
        tracing::warn!("{function}: {async_context:p} is not a live async context");
        Err(Status::InvalidParam)
    }

    /// Our context, or `InvalidParam` with a log line.
    pub(crate) fn get<'a>(self, function: &str) -> Result<&'a AsyncContext, Status> {
        let async_context = self.0;
        non_null(async_context, function, "async context")?;
        // The magic first, through 8 bytes only: a context another library
        // made must not be read as a whole AsyncContext.
        if !self.is_ours() {
            tracing::warn!("{function}: {async_context:p} is not a live async context");
            return Err(Status::InvalidParam);
        }
        // SAFETY: our magic, so a live AsyncContext we boxed in
        // ucs_async_context_create (FromC; the magic check catches most
        // violations but cannot make them sound).
        Ok(unsafe { &*(async_context as *const AsyncContext) })
    }
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

c_entry! {
    no_log_setup
    /// Creates an async context delivering events in `mode`.
    fn ucs_async_context_create(
        mode: ucs_async_mode_t,
        async_p: *mut *mut ucs_async_context_t,
    ) -> ucs_status_t;
    take out: Out<*mut ucs_async_context_t> = (async_p);
    {
        return_ucx_call!(ucs_async_context_create: fn(ucs_async_mode_t, *mut *mut ucs_async_context_t) -> ucs_status_t; mode, async_p);
        status_entry_point!(FUNCTION = "ucs_async_context_create", {
            if out.is_null() {
                return Err(null_argument(FUNCTION, "async_p"));
            }
            let Some(mode) = AsyncMode::from_raw(mode) else {
                tracing::warn!("{FUNCTION}: invalid async mode {mode}");
                return Err(Status::InvalidParam);
            };
            let context = Box::into_raw(Box::new(AsyncContext::new(mode)?));
            out.write(FUNCTION, "async_p", context as *mut ucs_async_context_t)?;
            tracing::debug!("{FUNCTION}: created {context:p} in mode {mode:?}");
            Ok(())
        })
    }
}

c_entry! {
    no_log_setup
    /// Destroys a context created by `ucs_async_context_create`: stops its
    /// service thread and drops its remaining handlers. NULL is ignored.
    ///
    /// No worker may still use the context.
    fn ucs_async_context_destroy(async_context: *mut ucs_async_context_t);
    take context_arg: AsyncArg = (async_context);
    {
        const FUNCTION: &str = "ucs_async_context_destroy";
        if async_context.is_null() {
            return;
        }
        if !context_arg.is_ours() {
            // A context of UCX's, handed back to UCX.
            return_ucx_call!(ucs_async_context_destroy: fn(*mut ucs_async_context_t); async_context);
        }
        if context_arg.get(FUNCTION).is_err() {
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
}

c_entry! {
    no_log_setup
    /// Runs the handlers whose events are pending now, in the calling thread;
    /// NULL polls every poll-mode context.
    fn ucs_async_poll(async_context: *mut ucs_async_context_t);
    take context_arg: AsyncArg = (async_context);
    {
        if async_context.is_null() {
            async_context::poll_all();
            // UCX's too: NULL means all of its contexts.
            return_ucx_call!(ucs_async_poll: fn(*mut ucs_async_context_t); async_context);
            return;
        }
        if !context_arg.is_ours() {
            // A context of UCX's, handed back to UCX.
            return_ucx_call!(ucs_async_poll: fn(*mut ucs_async_context_t); async_context);
        }
        if let Ok(context) = context_arg.get("ucs_async_poll") {
            context.poll();
        }
    }
}

c_entry! {
    no_log_setup
    /// Calls `cb(event_fd, events, arg)` when `event_fd` has `events`, from the
    /// context's service thread (thread modes) or from `ucs_async_poll` (poll
    /// mode). The handler id is `event_fd`. Unlike UCX, a context is required.
    ///
    /// `cb(…, arg)` must stay callable until the handler is removed.
    fn ucs_async_set_event_handler(
        mode: ucs_async_mode_t,
        event_fd: c_int,
        events: ucs_event_set_types_t,
        cb: ucs_async_event_cb_t,
        arg: *mut c_void,
        async_context: *mut ucs_async_context_t,
    ) -> ucs_status_t;
    take context_arg: AsyncArg = (async_context);
    {
        if !context_arg.is_ours() {
            return_ucx_call!(ucs_async_set_event_handler: fn(ucs_async_mode_t, c_int, ucs_event_set_types_t, ucs_async_event_cb_t, *mut c_void, *mut ucs_async_context_t) -> ucs_status_t; mode, event_fd, events, cb, arg, async_context);
        }
        status_entry_point!(FUNCTION = "ucs_async_set_event_handler", {
            let context = context_arg.get(FUNCTION)?;
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

c_entry! {
    no_log_setup
    /// Timers are not implemented: `UCS_ERR_UNSUPPORTED`, `*timer_id_p`
    /// untouched (no pointer argument is dereferenced).
    fn ucs_async_add_timer(
        mode: ucs_async_mode_t,
        interval: ucs_time_t,
        cb: ucs_async_event_cb_t,
        arg: *mut c_void,
        async_context: *mut ucs_async_context_t,
        timer_id_p: *mut c_int,
    ) -> ucs_status_t;
    take context_arg: AsyncArg = (async_context);
    {
        if !context_arg.is_ours() {
            return_ucx_call!(ucs_async_add_timer: fn(ucs_async_mode_t, ucs_time_t, ucs_async_event_cb_t, *mut c_void, *mut ucs_async_context_t, *mut c_int) -> ucs_status_t; mode, interval, cb, arg, async_context, timer_id_p);
        }
        crate::api::enter();
        tracing::warn!(
            "ucs_async_add_timer: timers are not implemented yet (mode {mode}, interval \
             {interval}, callback set: {}, arg {arg:p}, context {async_context:p}, id at \
             {timer_id_p:p})",
            cb.is_some()
        );
        UCS_ERR_UNSUPPORTED
    }
}

c_entry! {
    no_log_setup
    /// Delivers the events a blocked context missed (called by UCX's inline
    /// `ucs_async_check_miss`); for our contexts, the same as `ucs_async_poll`.
    ///
    /// The context must be live, ours or UCX's.
    fn __ucs_async_poll_missed(async_context: *mut ucs_async_context_t);
    take context_arg: AsyncArg = (async_context);
    {
        if !context_arg.is_ours() {
            // A context of UCX's, handed back to UCX.
            return_ucx_call!(__ucs_async_poll_missed: fn(*mut ucs_async_context_t); async_context);
        }
        if let Ok(context) = context_arg.get("__ucs_async_poll_missed") {
            context.poll();
        }
    }
}
