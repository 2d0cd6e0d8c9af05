//! `ucs_async_context_create` / `ucs_async_context_destroy` / `ucs_async_poll`.

use std::ffi::c_char;

use crate::abi::*;
use crate::api::checks::{finish, non_null};
use crate::api::memory_type::CStringTable;
use crate::core::async_context::{AsyncContext, AsyncMode};

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
    // SAFETY: non-NULL, and by the caller's contract it points at a live
    // AsyncContext we boxed in ucs_async_context_create.
    let context = unsafe { &*(async_context as *const AsyncContext) };
    if !context.is_valid() {
        tracing::warn!("{function}: {async_context:p} is not a live async context");
        return Err(Status::InvalidParam);
    }
    Ok(context)
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
    crate::api::enter();
    const FUNCTION: &str = "ucs_async_context_create";
    let result = (|| {
        non_null(async_p, FUNCTION, "async_p")?;
        let Some(mode) = AsyncMode::from_raw(mode) else {
            tracing::warn!("{FUNCTION}: invalid async mode {mode}");
            return Err(Status::InvalidParam);
        };
        let context = Box::into_raw(Box::new(AsyncContext::new(mode)));
        // SAFETY: async_p is non-NULL and writable by the caller's contract.
        unsafe { async_p.write(context as *mut ucs_async_context_t) };
        tracing::debug!("{FUNCTION}: created {context:p} in mode {mode:?}");
        Ok(())
    })();
    finish(FUNCTION, result)
}

/// Destroys a context created by `ucs_async_context_create`; NULL is ignored.
///
/// # Safety
/// `async_context` must be NULL or a live context; no worker may still use it.
#[no_mangle]
pub unsafe extern "C" fn ucs_async_context_destroy(async_context: *mut ucs_async_context_t) {
    const FUNCTION: &str = "ucs_async_context_destroy";
    if async_context.is_null() {
        return;
    }
    // SAFETY: non-NULL live context by the caller's contract.
    if unsafe { async_context_ref(async_context, FUNCTION) }.is_err() {
        return;
    }
    // SAFETY: the pointer came from Box::into_raw in ucs_async_context_create
    // and the caller destroys it once. Clearing the magic before the memory is
    // freed makes an accidental second destroy likely to be refused above.
    let mut context = unsafe { Box::from_raw(async_context as *mut AsyncContext) };
    context.invalidate();
    if context.handler_count() != 0 {
        tracing::warn!(
            "{FUNCTION}: {async_context:p} destroyed with {} handlers still registered",
            context.handler_count()
        );
    }
    drop(context);
}

/// Runs the context's pending event handlers now.
///
/// # Safety
/// `async_context` must be NULL or a live context.
#[no_mangle]
pub unsafe extern "C" fn ucs_async_poll(async_context: *mut ucs_async_context_t) {
    // SAFETY: NULL or a live context by the caller's contract.
    if let Ok(context) = unsafe { async_context_ref(async_context, "ucs_async_poll") } {
        context.poll();
    }
}
