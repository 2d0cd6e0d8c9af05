//! Watching the connection manager's sockets with the worker's async
//! context, so that every callback to the user runs as UCX's connection
//! managers run theirs: from the context's event handler, with the context
//! blocked (UCP asserts that it is). The context is ours or, in a process
//! with UCX's `libucs`, UCX's; `ucs_async_*` send each call to the one that
//! made it.

use std::ffi::{c_int, c_void};

use crate::abi::ucs_status::result_of;
use crate::abi::*;
use crate::api::async_context::{
    is_our_context, ucs_async_modify_handler, ucs_async_remove_handler, ucs_async_set_event_handler,
};
use crate::core::async_context::{AsyncContext, AsyncMode};

/// Where `mode` sits in UCX 1.13's `struct ucs_async_context` (after the
/// union of the thread, signal and poll lock states; read off the 1.13
/// headers: the struct is 96 bytes, `mode` at 56).
const UCX_ASYNC_MODE_OFFSET: usize = 56;

/// The async context of a worker and its delivery mode.
#[derive(Clone, Copy, Debug)]
pub struct AsyncTarget {
    context: usize,
    mode: ucs_async_mode_t,
}

impl AsyncTarget {
    /// The context `uct_worker_create` was given.
    ///
    /// # Safety
    /// `context` must be a live async context, ours or UCX's.
    pub unsafe fn new(context: *mut ucs_async_context_t) -> Result<AsyncTarget, Status> {
        if context.is_null() {
            tracing::error!("cm: the worker has no async context");
            return Err(Status::InvalidParam);
        }
        // SAFETY: live by the contract; ours carry a magic word first.
        let mode = if unsafe { is_our_context(context) } {
            // SAFETY: ours, so an AsyncContext.
            let ours = unsafe { &*(context as *const AsyncContext) };
            match ours.mode() {
                AsyncMode::Signal => UCS_ASYNC_MODE_SIGNAL,
                AsyncMode::ThreadSpinlock => UCS_ASYNC_MODE_THREAD_SPINLOCK,
                AsyncMode::ThreadMutex => UCS_ASYNC_MODE_THREAD_MUTEX,
                AsyncMode::Poll => UCS_ASYNC_MODE_POLL,
            }
        } else {
            // SAFETY: UCX's context, whose layout puts the mode here.
            unsafe {
                context
                    .cast::<u8>()
                    .add(UCX_ASYNC_MODE_OFFSET)
                    .cast::<ucs_async_mode_t>()
                    .read_unaligned()
            }
        };
        if mode >= UCS_ASYNC_MODE_LAST {
            tracing::error!("cm: async context {context:p} has no known mode ({mode})");
            return Err(Status::Unsupported);
        }
        Ok(AsyncTarget {
            context: context as usize,
            mode,
        })
    }

    /// Calls `cb(fd, events, arg)` under the context when `fd` has `events`.
    ///
    /// # Safety
    /// `cb(…, arg)` must stay callable until [`AsyncTarget::remove`].
    pub unsafe fn add(
        &self,
        fd: c_int,
        events: ucs_event_set_types_t,
        cb: unsafe extern "C" fn(c_int, ucs_event_set_types_t, *mut c_void),
        arg: *mut c_void,
    ) -> Result<(), Status> {
        // SAFETY: the context is live while the cm is (the worker outlives
        // it); cb/arg per the contract.
        let status = unsafe {
            ucs_async_set_event_handler(
                self.mode,
                fd,
                events,
                Some(cb),
                arg,
                self.context as *mut ucs_async_context_t,
            )
        };
        result_of(status)
    }

    /// Changes the events watched on `fd`.
    pub fn modify(&self, fd: c_int, events: ucs_event_set_types_t) -> Result<(), Status> {
        result_of(ucs_async_modify_handler(fd, events))
    }

    /// Stops watching `fd`; no call of its handler runs after this returns
    /// (except one in progress on the calling thread).
    pub fn remove(&self, fd: c_int) {
        let status = ucs_async_remove_handler(fd, 1);
        if status != UCS_OK {
            tracing::warn!("cm: removing the handler of fd {fd}: status {status}");
        }
    }
}
