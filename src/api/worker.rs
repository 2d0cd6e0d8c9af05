//! `uct_worker_*`: create/destroy, progress, and callback registration.

use std::ffi::{c_uint, c_void};

use crate::abi::*;
use crate::api::async_context::AsyncArg;
use crate::api::checks::status_entry_point;
use crate::api::handles::{hand_out, release};
use crate::core::c_boundary::{c_entry, CMut, Closing, Live, Out};
use crate::core::worker::Worker;

c_entry! {
    /// Creates a worker bound to `async_context` (a live async context).
    fn uct_worker_create(
        async_context: *mut ucs_async_context_t,
        thread_mode: ucs_thread_mode_t,
        worker_p: *mut uct_worker_h,
    ) -> ucs_status_t;
    take context_arg: AsyncArg = (async_context), worker_p: Out<uct_worker_h> = (worker_p);
    {
        status_entry_point!(FUNCTION = "uct_worker_create", {
            worker_p.check(FUNCTION, "worker_p")?;
            context_arg.check_for_worker(FUNCTION)?;
            if thread_mode >= UCS_THREAD_MODE_LAST {
                tracing::warn!("{FUNCTION}: invalid thread mode {thread_mode}");
                return Err(Status::InvalidParam);
            }
            let handle = hand_out(
                || Worker::new(async_context, thread_mode),
                worker_p,
                FUNCTION,
                "worker_p",
            )?;
            tracing::debug!("{FUNCTION}: created worker {handle:p}");
            Ok(())
        })
    }
}

c_entry! {
    no_log_setup
    /// Destroys a worker; NULL is ignored. No iface may still use it.
    fn uct_worker_destroy(worker: uct_worker_h);
    take closing: Closing<Worker> = (worker);
    {
        const FUNCTION: &str = "uct_worker_destroy";
        release(closing, FUNCTION, |live| {
            if live.callback_count() != 0 {
                tracing::debug!(
                    "{FUNCTION}: {worker:p} destroyed with {} progress callbacks registered",
                    live.callback_count()
                );
            }
        });
    }
}

/// A worker handle argument: NULL or live.
///
/// cbindgen:ignore
type WorkerArg<'a> = Live<'a, Worker>;

c_entry! {
    no_log_setup
    /// Calls every registered progress callback once; returns the work they
    /// did. Binaries built against UCX headers do the same walk inline.
    fn uct_worker_progress(worker: uct_worker_h) -> c_uint;
    take worker: WorkerArg = (worker);
    {
        match worker.get("uct_worker_progress") {
            Ok(worker) => worker.progress(),
            Err(_) => 0,
        }
    }
}

c_entry! {
    no_log_setup
    /// Adds `func(arg)` to the worker's progress if `*id_p` is
    /// `UCS_CALLBACKQ_ID_NULL`, storing the new id there; otherwise does
    /// nothing. Thread safe, and safe to call from inside a progress
    /// callback. `func(arg)` must stay callable until the callback is
    /// removed.
    fn uct_worker_progress_register_safe(
        worker: uct_worker_h,
        func: ucs_callback_t,
        arg: *mut c_void,
        flags: c_uint,
        id_p: *mut uct_worker_cb_id_t,
    );
    take worker: WorkerArg = (worker), id_slot: CMut<uct_worker_cb_id_t> = (id_p);
    {
        const FUNCTION: &str = "uct_worker_progress_register_safe";
        let Ok(worker) = worker.get(FUNCTION) else {
            return;
        };
        let Ok(current) = id_slot.read(FUNCTION, "id_p") else {
            return;
        };
        let Some(func) = func else {
            tracing::warn!("{FUNCTION}: callback function is NULL");
            return;
        };
        if current != UCS_CALLBACKQ_ID_NULL {
            return;
        }
        id_slot.write(worker.register(func, arg, flags));
    }
}

c_entry! {
    no_log_setup
    /// Removes the callback `*id_p` names (if not `UCS_CALLBACKQ_ID_NULL`)
    /// and resets `*id_p`. After it returns the callback is never called
    /// again.
    fn uct_worker_progress_unregister_safe(
        worker: uct_worker_h,
        id_p: *mut uct_worker_cb_id_t,
    );
    take worker: WorkerArg = (worker), id_slot: CMut<uct_worker_cb_id_t> = (id_p);
    {
        const FUNCTION: &str = "uct_worker_progress_unregister_safe";
        let Ok(worker) = worker.get(FUNCTION) else {
            return;
        };
        let Ok(id) = id_slot.read(FUNCTION, "id_p") else {
            return;
        };
        if id == UCS_CALLBACKQ_ID_NULL {
            return;
        }
        if !worker.unregister(id) {
            // Also the normal fate of a one-shot callback that already ran.
            tracing::debug!("{FUNCTION}: no callback with id {id} (already gone)");
        }
        id_slot.write(UCS_CALLBACKQ_ID_NULL);
    }
}
