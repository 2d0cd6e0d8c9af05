//! The UCT worker: a progress queue that C code walks inline.
//!
//! Binary layout: a [`Worker`] starts with `uct_worker` (its `ucs_callbackq`),
//! and `fast_elems` holds exactly one entry, `{dispatch_progress_queue,
//! worker}`, for the worker's whole life; every other element is zero. That
//! single entry works for both inline walks that exist in the wild:
//! - UCX master headers: 16-byte elements `{cb, arg}`; element 1's `cb` is at
//!   byte 16 → NULL, the walk stops after our dispatcher.
//! - UCX 1.13 headers: 24-byte elements `{cb, arg, flags, id}`; element 1's
//!   `cb` is at byte 24 → NULL as well (bytes 16..32 are all zero).
//!
//! The dispatcher walks the real list ([`ProgressQueue`]), which tolerates
//! registration and removal from inside callbacks; see `callbackq.rs` for why
//! the array itself is never edited.

use std::ffi::{c_uint, c_void};

use crate::abi::*;
use crate::core::c_boundary::{BoxedHandle, ByHandle};
use crate::core::callbackq::{CallbackId, Lifetime, ProgressFn, ProgressQueue};

/// Tag after the C-visible header, to catch stale or foreign worker handles.
const WORKER_MAGIC: u64 = 0x7563_745f_776f_726b; // "uct_work"

/// Turns a C handle into our worker, or `InvalidParam` with a log line.
///
/// # Safety
/// `worker` must be NULL or a handle from `uct_worker_create` not destroyed yet.
pub unsafe fn worker_ref<'a>(worker: uct_worker_h, function: &str) -> Result<&'a Worker, Status> {
    // SAFETY: forwarded contract.
    unsafe { Worker::lookup(worker, function) }
}

impl BoxedHandle for Worker {
    type Raw = uct_worker_h;
    const ARGUMENT: &'static str = "worker";
    const LIVE: &'static str = "a live worker";

    fn is_live(&self) -> bool {
        self.is_valid()
    }

    fn retire(&mut self) {
        self.invalidate();
    }
}

#[repr(C)]
pub struct Worker {
    /// What C code sees through `uct_worker_h`; must stay the first field.
    header: uct_worker,
    magic: u64,
    queue: ProgressQueue,
    async_context: *mut ucs_async_context_t,
    thread_mode: ucs_thread_mode_t,
}

/// The one entry of every worker's `fast_elems`.
unsafe extern "C" fn dispatch_progress_queue(arg: *mut c_void) -> c_uint {
    // SAFETY: `arg` is the worker that owns this fast_elems entry (set in
    // Worker::new); it is alive because C may only progress live workers.
    let worker = unsafe { &*(arg as *const Worker) };
    worker.queue.dispatch()
}

/// The progress queue of the worker whose `progress_q` is `cbq`, or `None`
/// when `cbq` is not a live worker's. UCX 1.13's libucp edits
/// `&worker->progress_q` directly (`ucs_callbackq_remove_if`), so the
/// `ucs_callbackq_*` entry points must know worker queues too.
///
/// # Safety
/// `cbq` must point at a readable `ucs_callbackq_t` (ours or UCX's layout).
pub unsafe fn progress_queue_of<'a>(cbq: *const ucs_callbackq_t) -> Option<&'a ProgressQueue> {
    // SAFETY: readable by the caller's contract.
    let first = unsafe { (*cbq).fast_elems[0] };
    // Our dispatcher is defined once, here; only its address from this
    // crate is ever stored, so comparing addresses identifies worker queues.
    let ours = first.cb.map(|cb| cb as *const ()) == Some(dispatch_progress_queue as *const ());
    if !ours || first.arg.is_null() {
        return None;
    }
    // SAFETY: our dispatcher's argument is always its worker, alive while C
    // may touch its queue.
    let worker = unsafe { &*(first.arg as *const Worker) };
    worker.is_valid().then_some(&worker.queue)
}

impl Worker {
    /// Allocates a worker at a fixed address (its queue header points back at
    /// it, so it must never move).
    pub fn new(
        async_context: *mut ucs_async_context_t,
        thread_mode: ucs_thread_mode_t,
    ) -> Box<Worker> {
        let empty = ucs_callbackq_elem_t {
            cb: None,
            arg: std::ptr::null_mut(),
        };
        let mut worker = Box::new(Worker {
            header: uct_worker {
                progress_q: ucs_callbackq_t {
                    fast_elems: [empty; UCS_CALLBACKQ_FAST_COUNT + 1],
                    priv_: std::ptr::null_mut(),
                },
            },
            magic: WORKER_MAGIC,
            queue: ProgressQueue::new(),
            async_context,
            thread_mode,
        });
        let self_ptr = &mut *worker as *mut Worker as *mut c_void;
        worker.header.progress_q.fast_elems[0] = ucs_callbackq_elem_t {
            cb: Some(dispatch_progress_queue),
            arg: self_ptr,
        };
        worker
    }

    pub fn is_valid(&self) -> bool {
        self.magic == WORKER_MAGIC
    }

    /// Marks the worker dead before its memory is released.
    pub fn invalidate(&mut self) {
        self.magic = 0;
    }

    pub fn as_handle(&mut self) -> uct_worker_h {
        self as *mut Worker as uct_worker_h
    }

    pub fn async_context(&self) -> *mut ucs_async_context_t {
        self.async_context
    }

    pub fn thread_mode(&self) -> ucs_thread_mode_t {
        self.thread_mode
    }

    /// Runs the progress callbacks the same way C does: walk `fast_elems`
    /// until a NULL callback. (Only our dispatcher is there, but walking the
    /// array keeps the exported and the inline `uct_worker_progress` identical.)
    pub fn progress(&self) -> c_uint {
        let mut work: c_uint = 0;
        for element in self.header.progress_q.fast_elems.iter() {
            let Some(callback) = element.cb else { break };
            // SAFETY: the only non-NULL entry is our dispatcher with this
            // worker as argument, installed in Worker::new.
            work = work.wrapping_add(unsafe { callback(element.arg) });
        }
        work
    }

    /// Registers `func(arg)`; `flags` may hold `UCS_CALLBACKQ_FLAG_ONESHOT`
    /// (`UCS_CALLBACKQ_FLAG_FAST` is accepted and means nothing extra here).
    pub fn register(&self, func: ProgressFn, arg: *mut c_void, flags: c_uint) -> CallbackId {
        let lifetime = if flags & UCS_CALLBACKQ_FLAG_ONESHOT != 0 {
            Lifetime::OneShot
        } else {
            Lifetime::Persistent
        };
        self.queue.add(func, arg, lifetime)
    }

    /// Returns false when `id` names no registered callback.
    pub fn unregister(&self, id: CallbackId) -> bool {
        self.queue.remove(id)
    }

    /// Number of callbacks registered now.
    pub fn callback_count(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_has_only_the_dispatcher_and_zero_tail() {
        let mut worker = Worker::new(std::ptr::null_mut(), UCS_THREAD_MODE_SINGLE);
        let handle = worker.as_handle();
        assert_eq!(handle as usize, &*worker as *const Worker as usize);
        let elems = &worker.header.progress_q.fast_elems;
        assert!(elems[0].cb.is_some());
        assert_eq!(elems[0].arg, handle as *mut c_void);
        // Bytes 16..32 must be zero so that both the 16-byte (master) and the
        // 24-byte (1.13) element walks stop after element 0.
        // SAFETY: the header is at least 32 bytes long and fully initialised.
        let bytes = unsafe { std::slice::from_raw_parts(handle as *const u8, 32) };
        assert!(bytes[16..32].iter().all(|&b| b == 0));
        assert_eq!(worker.progress(), 0);
    }
}
