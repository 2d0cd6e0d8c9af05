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
use crate::core::callbackq::{Lifetime, ProgressQueue, CALLBACK_ID_NULL};
use crate::core::ucx_libucs::{return_ucx_call, ucx_function};
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

/// Our queue behind `cbq`: one `ucs_callbackq_init` made, or a worker's
/// `progress_q` (see [`progress_queue_of`]); `None` for anything else.
///
/// # Safety
/// `cbq` must be NULL or point at a readable `ucs_callbackq_t`.
unsafe fn our_queue<'a>(cbq: *mut ucs_callbackq_t) -> Option<&'a ProgressQueue> {
    if cbq.is_null() {
        return None;
    }
    // SAFETY: readable by the caller's contract.
    unsafe { caller_queue(cbq).or_else(|| progress_queue_of(cbq)) }
}

/// The queue `ucs_callbackq_init` made in `cbq`, or `None`.
///
/// # Safety
/// As [`our_queue`].
unsafe fn caller_queue<'a>(cbq: *mut ucs_callbackq_t) -> Option<&'a ProgressQueue> {
    if cbq.is_null() {
        return None;
    }
    // SAFETY: readable by the caller's contract.
    let first = unsafe { (*cbq).fast_elems[0] };
    // Our dispatcher is defined once, here, and only its address from this
    // crate is ever stored, so comparing addresses identifies our queues.
    let ours = first.cb.map(|cb| cb as *const ()) == Some(dispatch_caller_queue as *const ());
    if !ours || first.arg.is_null() {
        return None;
    }
    // SAFETY: our dispatcher's arg is always a live boxed ProgressQueue.
    Some(unsafe { &*(first.arg as *const ProgressQueue) })
}

/// `Ok(queue)` for one of ours, else a log line and `InvalidParam`.
///
/// # Safety
/// As [`our_queue`].
unsafe fn queue_ref<'a>(
    cbq: *mut ucs_callbackq_t,
    function: &str,
) -> Result<&'a ProgressQueue, Status> {
    non_null(cbq, function, "callback queue")?;
    // SAFETY: as this function's contract.
    unsafe { our_queue(cbq) }.ok_or_else(|| {
        crate::api::enter();
        tracing::warn!("{function}: {cbq:p} is not an initialised callback queue");
        Status::InvalidParam
    })
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

/// Frees the queue's state; callbacks still registered are dropped (with a
/// log line). Leaves `cbq` empty: a walk after this calls nothing.
///
/// # Safety
/// `cbq` NULL, ours, or UCX's; no walk of it may be running.
#[no_mangle]
pub unsafe extern "C" fn ucs_callbackq_cleanup(cbq: *mut ucs_callbackq_t) {
    // SAFETY: readable queue or NULL by the caller's contract.
    if !cbq.is_null() && unsafe { progress_queue_of(cbq) }.is_some() {
        crate::api::enter();
        tracing::warn!(
            "ucs_callbackq_cleanup: {cbq:p} is a worker's queue; uct_worker_destroy frees it"
        );
        return;
    }
    // SAFETY: readable queue or NULL by the caller's contract.
    let Some(queue) = (unsafe { caller_queue(cbq) }) else {
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
    // SAFETY: ours (checked), so writable; the entry is cleared before the
    // queue is freed, so no later walk reaches freed memory.
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

/// UCX's `ucs_callbackq_add` / `_add_safe`.
type AddFn =
    unsafe extern "C" fn(*mut ucs_callbackq_t, ucs_callback_t, *mut c_void, c_uint) -> c_int;
/// UCX's `ucs_callbackq_remove` / `_remove_safe`.
type RemoveFn = unsafe extern "C" fn(*mut ucs_callbackq_t, c_int);

/// A queue of UCX's goes to `ucx` (when UCX's libucs is loaded), ours here.
/// Adds `cb(arg)`; returns its id, or `UCS_CALLBACKQ_ID_NULL` (-1) with a log
/// line on bad input. `UCS_CALLBACKQ_FLAG_ONESHOT` runs it once;
/// `UCS_CALLBACKQ_FLAG_FAST` is accepted (every callback is equally fast).
unsafe fn add(
    cbq: *mut ucs_callbackq_t,
    cb: ucs_callback_t,
    arg: *mut c_void,
    flags: c_uint,
    ucx: impl FnOnce() -> Option<AddFn>,
    function: &str,
) -> c_int {
    // SAFETY: the caller's contract.
    if unsafe { our_queue(cbq) }.is_none() {
        if let Some(ucx) = ucx() {
            // SAFETY: UCX's function, same arguments as ours.
            return unsafe { ucx(cbq, cb, arg, flags) };
        }
    }
    // SAFETY: the caller's contract.
    let queue = match unsafe { queue_ref(cbq, function) } {
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

/// A queue of UCX's goes to `ucx` (when UCX's libucs is loaded), ours here.
///
/// # Safety
/// `cbq` NULL, ours or UCX's.
unsafe fn remove(
    cbq: *mut ucs_callbackq_t,
    id: c_int,
    ucx: impl FnOnce() -> Option<RemoveFn>,
    function: &str,
) {
    // SAFETY: the caller's contract.
    if unsafe { our_queue(cbq) }.is_none() {
        if let Some(ucx) = ucx() {
            // SAFETY: UCX's function, same arguments as ours.
            return unsafe { ucx(cbq, id) };
        }
    }
    // SAFETY: the caller's contract.
    let Ok(queue) = (unsafe { queue_ref(cbq, function) }) else {
        return;
    };
    if !queue.remove(id) {
        crate::api::enter();
        tracing::warn!("{function}: no callback with id {id}");
    }
}

/// Adds a callback (see `add`).
///
/// # Safety
/// `cbq` NULL, ours or UCX's; `cb(arg)` callable until removed.
#[no_mangle]
pub unsafe extern "C" fn ucs_callbackq_add(
    cbq: *mut ucs_callbackq_t,
    cb: ucs_callback_t,
    arg: *mut c_void,
    flags: c_uint,
) -> c_int {
    let ucx = || ucx_function!(ucs_callbackq_add: fn(*mut ucs_callbackq_t, ucs_callback_t, *mut c_void, c_uint) -> c_int);
    // SAFETY: the caller's contract.
    unsafe { add(cbq, cb, arg, flags, ucx, "ucs_callbackq_add") }
}

/// Adds a callback from any thread, also from inside a callback.
///
/// # Safety
/// As `ucs_callbackq_add`.
#[no_mangle]
pub unsafe extern "C" fn ucs_callbackq_add_safe(
    cbq: *mut ucs_callbackq_t,
    cb: ucs_callback_t,
    arg: *mut c_void,
    flags: c_uint,
) -> c_int {
    let ucx = || ucx_function!(ucs_callbackq_add_safe: fn(*mut ucs_callbackq_t, ucs_callback_t, *mut c_void, c_uint) -> c_int);
    // SAFETY: the caller's contract.
    unsafe { add(cbq, cb, arg, flags, ucx, "ucs_callbackq_add_safe") }
}

/// Removes callback `id`; it is never called again once this returns.
///
/// # Safety
/// `cbq` NULL, ours or UCX's.
#[no_mangle]
pub unsafe extern "C" fn ucs_callbackq_remove(cbq: *mut ucs_callbackq_t, id: c_int) {
    let ucx = || ucx_function!(ucs_callbackq_remove: fn(*mut ucs_callbackq_t, c_int));
    // SAFETY: the caller's contract.
    unsafe { remove(cbq, id, ucx, "ucs_callbackq_remove") }
}

/// Removes callback `id` from any thread, also from inside a callback.
///
/// # Safety
/// `cbq` NULL, ours or UCX's.
#[no_mangle]
pub unsafe extern "C" fn ucs_callbackq_remove_safe(cbq: *mut ucs_callbackq_t, id: c_int) {
    let ucx = || ucx_function!(ucs_callbackq_remove_safe: fn(*mut ucs_callbackq_t, c_int));
    // SAFETY: the caller's contract.
    unsafe { remove(cbq, id, ucx, "ucs_callbackq_remove_safe") }
}

/// Removes every callback for which `pred(elem, arg)` is non-zero; `elem`
/// shows the callback and its argument.
///
/// # Safety
/// `cbq` NULL, ours or UCX's; `pred` callable with `arg`.
#[no_mangle]
pub unsafe extern "C" fn ucs_callbackq_remove_if(
    cbq: *mut ucs_callbackq_t,
    pred: ucs_callbackq_predicate_t,
    arg: *mut c_void,
) {
    const FUNCTION: &str = "ucs_callbackq_remove_if";
    // SAFETY: the caller's contract.
    if unsafe { our_queue(cbq) }.is_none() {
        return_ucx_call!(ucs_callbackq_remove_if: fn(*mut ucs_callbackq_t, ucs_callbackq_predicate_t, *mut c_void); cbq, pred, arg);
    }
    // SAFETY: the caller's contract.
    let Ok(queue) = (unsafe { queue_ref(cbq, FUNCTION) }) else {
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
        // SAFETY: the caller's predicate, given an element that lives for
        // the call and the argument the caller passed.
        unsafe { pred(&elem, arg) != 0 }
    });
}
