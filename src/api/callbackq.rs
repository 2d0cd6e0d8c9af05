//! `ucs_callbackq_*` (`ucs/datastruct/callbackq.h`): a progress callback
//! queue in the caller's storage, dispatched by the header's inline
//! `ucs_callbackq_dispatch` (a walk of `fast_elems` until a NULL `cb`).
//!
//! As in the worker (`crate::core::worker`), `fast_elems` holds exactly one
//! entry: a dispatcher whose `arg` is our [`ProgressQueue`], which holds the
//! real callbacks and tolerates changes from inside them. Element 0's `cb`
//! and `arg` sit at the same offsets in UCX 1.13's 24-byte elements and in
//! master's 16-byte ones, and the queue never touches `priv` (1.13 has none),
//! so a queue laid out by either version's header works. Both the plain and
//! the `_safe` calls are thread safe here.
//!
//! Our queues are recognised by their dispatcher: the ones made here and
//! every worker's `progress_q` (UCX 1.13's libucp calls
//! `ucs_callbackq_remove_if` on `&worker->progress_q` directly; handing our
//! worker to UCX's implementation would make it read its own, larger layout
//! out of our memory). `ucs_callbackq_init` never steps aside (see there);
//! a queue UCX's own code initialised goes to UCX (`crate::core::ucx_libucs`).

use std::ffi::{c_int, c_uint, c_void};

use crate::abi::*;
use crate::api::checks::{non_null, status_entry_point};
use crate::core::c_boundary::{c_entry, FromC};
use crate::core::callbackq::{Lifetime, ProgressQueue, CALLBACK_ID_NULL};
use crate::core::ucx_libucs::return_ucx_call;
use crate::core::worker::progress_queue_of;

/// Bytes from element 1 to the end of element 1 in either layout (1.13's
/// element 1 ends at byte 48, master's at 32): zeroing them ends every walk
/// after element 0.
const SECOND_ELEMENT_RANGE: std::ops::Range<usize> = 16..48;

unsafe extern "C" fn dispatch_caller_queue(arg: *mut c_void) -> c_uint {
    // SAFETY: `arg` is the ProgressQueue ucs_callbackq_init boxed for this
    // queue; it lives until ucs_callbackq_cleanup, which clears this entry.
    unsafe { &*(arg as *const ProgressQueue) }.dispatch()
}

/// A callback queue argument: NULL or pointing at a readable
/// `ucs_callbackq_t` (ours, a worker's, or UCX's).
///
/// cbindgen:ignore
#[derive(Clone, Copy)]
struct QueueArg(*mut ucs_callbackq_t);

impl FromC<*mut ucs_callbackq_t> for QueueArg {
    /// Relies on: NULL or a readable `ucs_callbackq_t` (ours or UCX's).
    unsafe fn from_c(cbq: *mut ucs_callbackq_t) -> Self {
        QueueArg(cbq)
    }
}

impl QueueArg {
    /// Our queue behind it: one `ucs_callbackq_init` made, or a worker's
    /// `progress_q` (see [`progress_queue_of`]); `None` for anything else.
    fn ours<'a>(self) -> Option<&'a ProgressQueue> {
        if self.0.is_null() {
            return None;
        }
        self.caller_queue().or_else(|| self.workers_queue())
    }

    /// A worker's queue (freed by `uct_worker_destroy`).
    fn is_workers(self) -> bool {
        self.workers_queue().is_some()
    }

    /// The queue of the worker whose `progress_q` this is, or `None`.
    fn workers_queue<'a>(self) -> Option<&'a ProgressQueue> {
        // SAFETY: non-NULL and readable (FromC).
        (!self.0.is_null())
            .then(|| unsafe { progress_queue_of(self.0) })
            .flatten()
    }

    /// The queue `ucs_callbackq_init` made in it, or `None`.
    fn caller_queue<'a>(self) -> Option<&'a ProgressQueue> {
        if self.0.is_null() {
            return None;
        }
        // SAFETY: non-NULL and readable (FromC).
        let first = unsafe { (*self.0).fast_elems[0] };
        let ours = first.cb.map(|cb| cb as *const ()) == Some(dispatch_caller_queue as *const ());
        if !ours || first.arg.is_null() {
            return None;
        }
        // SAFETY: element 0 is our dispatcher, so its argument is the
        // ProgressQueue ucs_callbackq_init leaked, live until cleanup.
        Some(unsafe { &*(first.arg as *const ProgressQueue) })
    }

    /// `Ok(queue)` for one of ours, else a log line and `InvalidParam`.
    fn get<'a>(self, function: &str) -> Result<&'a ProgressQueue, Status> {
        let cbq = self.0;
        non_null(cbq, function, "callback queue")?;
        self.ours().ok_or_else(|| {
            crate::api::enter();
            tracing::warn!("{function}: {cbq:p} is not an initialised callback queue");
            Status::InvalidParam
        })
    }
}

/// Makes `cbq` an empty queue. Always ours, also with UCX's libucs loaded:
/// it writes only the 48 bytes both layouts share, so a caller built against
/// master's smaller struct (our headers) is safe, and both inline dispatches
/// walk it (UCX's own init would write 1.13's 264 bytes).
///
/// # Safety
/// `cbq` must be NULL or point at writable storage of UCX 1.13's or master's
/// `ucs_callbackq_t` (at least 48 bytes: both are larger).
#[no_mangle]
pub unsafe extern "C" fn ucs_callbackq_init(cbq: *mut ucs_callbackq_t) -> ucs_status_t {
    status_entry_point!(FUNCTION = "ucs_callbackq_init", {
        non_null(cbq, FUNCTION, "callback queue")?;
        let queue = Box::into_raw(Box::new(ProgressQueue::new()));
        let bytes = cbq as *mut u8;
        // SAFETY: the caller's storage holds at least 48 bytes (contract);
        // element 0 and the bytes of element 1 are written, nothing else.
        unsafe {
            std::ptr::write_bytes(
                bytes.add(SECOND_ELEMENT_RANGE.start),
                0,
                SECOND_ELEMENT_RANGE.len(),
            );
            (*cbq).fast_elems[0] = ucs_callbackq_elem_t {
                cb: Some(dispatch_caller_queue),
                arg: queue.cast(),
            };
        }
        Ok(())
    })
}

c_entry! {
    no_log_setup
    /// Frees the queue's state; callbacks still registered are dropped (with
    /// a log line). Leaves `cbq` empty: a walk after this calls nothing. No
    /// walk of it may be running.
    fn ucs_callbackq_cleanup(cbq: *mut ucs_callbackq_t);
    take queue_arg: QueueArg = (cbq);
    {
        if queue_arg.is_workers() {
            crate::api::enter();
            tracing::warn!(
                "ucs_callbackq_cleanup: {cbq:p} is a worker's queue; uct_worker_destroy frees it"
            );
            return;
        }
        let Some(queue) = queue_arg.caller_queue() else {
            // A queue of UCX's, handed back to UCX.
            return_ucx_call!(ucs_callbackq_cleanup: fn(*mut ucs_callbackq_t); cbq);
            crate::api::enter();
            tracing::warn!("ucs_callbackq_cleanup: {cbq:p} is not an initialised callback queue");
            return;
        };
        if !queue.is_empty() {
            crate::api::enter();
            tracing::warn!(
                "ucs_callbackq_cleanup: {} callbacks still registered",
                queue.len()
            );
        }
        // SAFETY: ours (checked), so writable; the entry is cleared before
        // the queue is freed, so no later walk reaches freed memory.
        unsafe {
            (*cbq).fast_elems[0] = ucs_callbackq_elem_t {
                cb: None,
                arg: std::ptr::null_mut(),
            };
            drop(Box::from_raw(
                queue as *const ProgressQueue as *mut ProgressQueue,
            ));
        }
    }
}

/// Adds `cb(arg)` to our queue `cbq` (the entry points hand UCX's queues to
/// UCX first); returns its id, or `UCS_CALLBACKQ_ID_NULL` (-1) with a log
/// line on bad input. `UCS_CALLBACKQ_FLAG_ONESHOT` runs it once;
/// `UCS_CALLBACKQ_FLAG_FAST` is accepted (every callback is equally fast).
/// `cb(arg)` must be callable until removed (the entry points' contract).
fn add(
    cbq: QueueArg,
    cb: ucs_callback_t,
    arg: *mut c_void,
    flags: c_uint,
    function: &str,
) -> c_int {
    let queue = match cbq.get(function) {
        Ok(queue) => queue,
        Err(_) => return CALLBACK_ID_NULL,
    };
    let Some(cb) = cb else {
        crate::api::enter();
        tracing::warn!("{function}: callback is NULL");
        return CALLBACK_ID_NULL;
    };
    let known = UCS_CALLBACKQ_FLAG_FAST | UCS_CALLBACKQ_FLAG_ONESHOT;
    if flags & !known != 0 {
        crate::api::enter();
        tracing::warn!("{function}: unknown flags {:#x}", flags & !known);
        return CALLBACK_ID_NULL;
    }
    let lifetime = if flags & UCS_CALLBACKQ_FLAG_ONESHOT != 0 {
        Lifetime::OneShot
    } else {
        Lifetime::Persistent
    };
    queue.add(cb, arg, lifetime)
}

/// Removes callback `id` from our queue `cbq` (the entry points hand UCX's
/// queues to UCX first).
fn remove(cbq: QueueArg, id: c_int, function: &str) {
    let Ok(queue) = cbq.get(function) else {
        return;
    };
    if !queue.remove(id) {
        crate::api::enter();
        tracing::warn!("{function}: no callback with id {id}");
    }
}

c_entry! {
    no_log_setup
    /// Adds a callback (see `add`); `cb(arg)` callable until removed.
    fn ucs_callbackq_add(
        cbq: *mut ucs_callbackq_t,
        cb: ucs_callback_t,
        arg: *mut c_void,
        flags: c_uint,
    ) -> c_int;
    take queue: QueueArg = (cbq);
    {
        if queue.ours().is_none() {
            // A queue of UCX's, handed back to UCX.
            return_ucx_call!(ucs_callbackq_add: fn(*mut ucs_callbackq_t, ucs_callback_t, *mut c_void, c_uint) -> c_int; cbq, cb, arg, flags);
        }
        add(queue, cb, arg, flags, "ucs_callbackq_add")
    }
}

c_entry! {
    no_log_setup
    /// Adds a callback from any thread, also from inside a callback.
    fn ucs_callbackq_add_safe(
        cbq: *mut ucs_callbackq_t,
        cb: ucs_callback_t,
        arg: *mut c_void,
        flags: c_uint,
    ) -> c_int;
    take queue: QueueArg = (cbq);
    {
        if queue.ours().is_none() {
            // A queue of UCX's, handed back to UCX.
            return_ucx_call!(ucs_callbackq_add_safe: fn(*mut ucs_callbackq_t, ucs_callback_t, *mut c_void, c_uint) -> c_int; cbq, cb, arg, flags);
        }
        add(queue, cb, arg, flags, "ucs_callbackq_add_safe")
    }
}

c_entry! {
    no_log_setup
    /// Removes callback `id`; it is never called again once this returns.
    fn ucs_callbackq_remove(cbq: *mut ucs_callbackq_t, id: c_int);
    take queue: QueueArg = (cbq);
    {
        if queue.ours().is_none() {
            // A queue of UCX's, handed back to UCX.
            return_ucx_call!(ucs_callbackq_remove: fn(*mut ucs_callbackq_t, c_int); cbq, id);
        }
        remove(queue, id, "ucs_callbackq_remove")
    }
}

c_entry! {
    no_log_setup
    /// Removes callback `id` from any thread, also from inside a callback.
    fn ucs_callbackq_remove_safe(cbq: *mut ucs_callbackq_t, id: c_int);
    take queue: QueueArg = (cbq);
    {
        if queue.ours().is_none() {
            // A queue of UCX's, handed back to UCX.
            return_ucx_call!(ucs_callbackq_remove_safe: fn(*mut ucs_callbackq_t, c_int); cbq, id);
        }
        remove(queue, id, "ucs_callbackq_remove_safe")
    }
}

c_entry! {
    no_log_setup
    /// Removes every callback for which `pred(elem, arg)` is non-zero;
    /// `elem` shows the callback and its argument. `pred` must be callable
    /// with `arg`.
    fn ucs_callbackq_remove_if(
        cbq: *mut ucs_callbackq_t,
        pred: ucs_callbackq_predicate_t,
        arg: *mut c_void,
    );
    take queue: QueueArg = (cbq);
    {
        const FUNCTION: &str = "ucs_callbackq_remove_if";
        if queue.ours().is_none() {
            // A queue of UCX's, handed back to UCX.
            return_ucx_call!(ucs_callbackq_remove_if: fn(*mut ucs_callbackq_t, ucs_callbackq_predicate_t, *mut c_void); cbq, pred, arg);
        }
        let Ok(queue) = queue.get(FUNCTION) else {
            return;
        };
        let Some(pred) = pred else {
            crate::api::enter();
            tracing::warn!("{FUNCTION}: predicate is NULL");
            return;
        };
        queue.remove_if(|func, cb_arg| {
            let elem = ucs_callbackq_elem_t {
                cb: Some(func),
                arg: cb_arg,
            };
            // SAFETY: the caller's predicate with its own argument.
            unsafe { pred(&elem, arg) != 0 }
        });
    }
}
