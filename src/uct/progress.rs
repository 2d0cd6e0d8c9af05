//! An iface's registration with its worker's progress queue
//! (`uct_iface_progress_enable` / `uct_iface_progress_disable`), with UCX's
//! rules: the iface keeps the set of directions (`UCT_PROGRESS_SEND`,
//! `UCT_PROGRESS_RECV`) progress was enabled for; its callback is added
//! when that set stops being empty and removed when it becomes empty again
//! (disabling one direction of two keeps it). `UCT_PROGRESS_THREAD_SAFE`
//! only says how to add it, which our queue does the same way.

use std::ffi::{c_uint, c_void};

use crate::abi::*;
use crate::core::callbackq::{CallbackId, ProgressFn};
use crate::core::worker::Worker;

/// The directions progress can be enabled for.
const DIRECTIONS: c_uint = UCT_PROGRESS_SEND | UCT_PROGRESS_RECV;

/// Whether, and for which directions, an iface is on its worker's progress
/// queue.
#[derive(Debug, Default)]
pub struct ProgressRegistration {
    directions: c_uint,
    id: Option<CallbackId>,
}

impl ProgressRegistration {
    pub fn new() -> ProgressRegistration {
        ProgressRegistration::default()
    }

    /// The iface's callback is on the queue.
    pub fn is_registered(&self) -> bool {
        self.id.is_some()
    }

    /// Enables progress for the directions in `flags`: the first direction
    /// adds `callback(arg)` to `worker`'s queue.
    pub fn enable(
        &mut self,
        worker: &Worker,
        flags: c_uint,
        callback: ProgressFn,
        arg: *mut c_void,
    ) {
        let directions = flags & DIRECTIONS;
        if directions != 0 && self.directions == 0 && self.id.is_none() {
            self.id = Some(worker.register(callback, arg, 0));
        }
        self.directions |= directions;
    }

    /// Disables progress for the directions in `flags`: when none is left,
    /// the callback leaves `worker`'s queue.
    pub fn disable(&mut self, worker: &Worker, flags: c_uint) {
        self.directions &= !(flags & DIRECTIONS);
        if self.directions == 0 {
            self.remove(worker);
        }
    }

    /// Takes the callback off `worker`'s queue, whatever was enabled (the
    /// iface closes).
    pub fn remove(&mut self, worker: &Worker) {
        self.directions = 0;
        if let Some(id) = self.id.take() {
            worker.unregister(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn counts(arg: *mut c_void) -> c_uint {
        // SAFETY: the test registers a live counter.
        unsafe { *(arg as *mut c_uint) += 1 };
        1
    }

    #[test]
    fn registered_while_any_direction_is_enabled() {
        let worker = Worker::new(std::ptr::null_mut(), UCS_THREAD_MODE_SINGLE);
        let base = worker.callback_count();
        let mut calls: c_uint = 0;
        let arg = (&mut calls as *mut c_uint).cast();
        let mut registration = ProgressRegistration::new();
        // No direction: nothing to progress.
        registration.enable(&worker, UCT_PROGRESS_THREAD_SAFE, counts, arg);
        assert!(!registration.is_registered());
        registration.enable(&worker, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV, counts, arg);
        registration.enable(&worker, UCT_PROGRESS_RECV, counts, arg);
        assert_eq!(worker.callback_count(), base + 1);
        worker.progress();
        assert_eq!(calls, 1);
        // One direction of two disabled: still progressed.
        registration.disable(&worker, UCT_PROGRESS_SEND);
        assert!(registration.is_registered());
        registration.disable(&worker, UCT_PROGRESS_RECV);
        assert!(!registration.is_registered());
        assert_eq!(worker.callback_count(), base);
        worker.progress();
        assert_eq!(calls, 1);
        registration.enable(&worker, UCT_PROGRESS_SEND, counts, arg);
        registration.remove(&worker);
        assert_eq!(worker.callback_count(), base);
    }
}
