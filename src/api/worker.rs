//! `uct_worker_*`: create/destroy, progress, and callback registration.

use std::ffi::{c_uint, c_void};

use crate::abi::*;
use crate::api::async_context::AsyncArg;
use crate::api::checks::{non_null, status_entry_point};
use crate::api::handles::{hand_out, release};
use crate::core::c_boundary::c_entry;
use crate::core::worker::{worker_ref, Worker};

c_entry! {
    /// Creates a worker bound to `async_context` (a live async context).
    fn uct_worker_create(
        async_context: *mut ucs_async_context_t,
        thread_mode: ucs_thread_mode_t,
        worker_p: *mut uct_worker_h,
    ) -> ucs_status_t;
    take context_arg: AsyncArg = (async_context);
    {
        status_entry_point!(FUNCTION = "uct_worker_create", {
            non_null(worker_p, FUNCTION, "worker_p")?;
            context_arg.check_for_worker(FUNCTION)?;
            if thread_mode >= UCS_THREAD_MODE_LAST {
                tracing::warn!("{FUNCTION}: invalid thread mode {thread_mode}");
                return Err(Status::InvalidParam);
            }
            // SAFETY: worker_p is non-NULL and writable by the caller's
            // contract.
            let handle = unsafe { hand_out(Worker::new(async_context, thread_mode), worker_p) };
            tracing::debug!("{FUNCTION}: created worker {handle:p}");
            Ok(())
        })
    }
}

/// Destroys a worker; NULL is ignored.
///
/// # Safety
/// `worker` must be NULL or live, and no iface may still use it.
#[no_mangle]
pub unsafe extern "C" fn uct_worker_destroy(worker: uct_worker_h) {
    const FUNCTION: &str = "uct_worker_destroy";
    // SAFETY: NULL or, by the caller's contract, from uct_worker_create and
    // destroyed once.
    unsafe {
        release::<Worker>(worker, FUNCTION, |live| {
            if live.callback_count() != 0 {
                tracing::debug!(
                    "{FUNCTION}: {worker:p} destroyed with {} progress callbacks registered",
                    live.callback_count()
                );
            }
        })
    };
}

/// Calls every registered progress callback once; returns the work they did.
/// Binaries built against UCX headers do the same walk inline.
///
/// # Safety
/// `worker` must be NULL or live.
#[no_mangle]
pub unsafe extern "C" fn uct_worker_progress(worker: uct_worker_h) -> c_uint {
    // SAFETY: NULL or live by the caller's contract.
    match unsafe { worker_ref(worker, "uct_worker_progress") } {
        Ok(worker) => worker.progress(),
        Err(_) => 0,
    }
}

/// The worker of the `uct_worker_progress_*_safe` calls, once both it and
/// their callback-id slot `id_p` are usable; else `InvalidParam` (logged).
///
/// # Safety
/// `worker` must be NULL or live.
unsafe fn worker_with_id_slot<'a>(
    worker: uct_worker_h,
    id_p: *mut uct_worker_cb_id_t,
    function: &str,
) -> Result<&'a Worker, Status> {
    // SAFETY: NULL or live by the caller's contract.
    let worker = unsafe { worker_ref(worker, function) }?;
    non_null(id_p, function, "id_p")?;
    Ok(worker)
}

/// Adds `func(arg)` to the worker's progress if `*id_p` is
/// `UCS_CALLBACKQ_ID_NULL`, storing the new id there; otherwise does nothing.
/// Thread safe, and safe to call from inside a progress callback.
///
/// # Safety
/// `worker` NULL or live; `id_p` NULL or a valid `int`; `func(arg)` must stay
/// callable until the callback is removed.
#[no_mangle]
pub unsafe extern "C" fn uct_worker_progress_register_safe(
    worker: uct_worker_h,
    func: ucs_callback_t,
    arg: *mut c_void,
    flags: c_uint,
    id_p: *mut uct_worker_cb_id_t,
) {
    const FUNCTION: &str = "uct_worker_progress_register_safe";
    // SAFETY: NULL or live by the caller's contract.
    let Ok(worker) = (unsafe { worker_with_id_slot(worker, id_p, FUNCTION) }) else {
        return;
    };
    let Some(func) = func else {
        tracing::warn!("{FUNCTION}: callback function is NULL");
        return;
    };
    // SAFETY: id_p is non-NULL and points at an int by the caller's contract.
    if unsafe { id_p.read() } != UCS_CALLBACKQ_ID_NULL {
        return;
    }
    let id = worker.register(func, arg, flags);
    // SAFETY: as above.
    unsafe { id_p.write(id) };
}

/// Removes the callback `*id_p` names (if not `UCS_CALLBACKQ_ID_NULL`) and
/// resets `*id_p`. After it returns the callback is never called again.
///
/// # Safety
/// `worker` NULL or live; `id_p` NULL or a valid `int`.
#[no_mangle]
pub unsafe extern "C" fn uct_worker_progress_unregister_safe(
    worker: uct_worker_h,
    id_p: *mut uct_worker_cb_id_t,
) {
    const FUNCTION: &str = "uct_worker_progress_unregister_safe";
    // SAFETY: NULL or live by the caller's contract.
    let Ok(worker) = (unsafe { worker_with_id_slot(worker, id_p, FUNCTION) }) else {
        return;
    };
    // SAFETY: id_p is non-NULL and points at an int by the caller's contract.
    let id = unsafe { id_p.read() };
    if id == UCS_CALLBACKQ_ID_NULL {
        return;
    }
    if !worker.unregister(id) {
        // Also the normal fate of a one-shot callback that already ran.
        tracing::debug!("{FUNCTION}: no callback with id {id} (already gone)");
    }
    // SAFETY: as above.
    unsafe { id_p.write(UCS_CALLBACKQ_ID_NULL) };
}
