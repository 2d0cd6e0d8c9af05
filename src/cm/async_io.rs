//! Watching the connection manager's sockets with the worker's async
//! context, so that every callback to the user runs as UCX's connection
//! managers run theirs: from the context's event handler, with the context
//! blocked (UCP asserts that it is). The context is ours, or in a process
//! with UCX's `libucs` UCX's (`crate::core::ucx_libucs`): then its handlers
//! are registered with UCX's own functions.

use std::ffi::{c_int, c_void};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use crate::abi::ucs_status::result_of;
use crate::abi::*;
use crate::core::async_context::{self, AsyncContext, AsyncMode};
use crate::core::ucx_libucs::ucx_function;

/// Where `mode` may sit in UCX's `struct ucs_async_context` (1.13 and 1.22
/// alike): after the union of the lock states, whose largest member, the
/// thread mutex, is 56 bytes when UCX was built with assertions (Debian's
/// build is) and 40 without.
const UCX_ASYNC_MODE_OFFSETS: [usize; 2] = [56, 40];

type EventCallback = unsafe extern "C" fn(c_int, ucs_event_set_types_t, *mut c_void);

/// The async context of a worker.
#[derive(Clone, Copy, Debug)]
pub enum AsyncTarget {
    /// One of ours (its address).
    Ours(usize),
    /// UCX's, and its delivery mode.
    Ucx {
        context: usize,
        mode: ucs_async_mode_t,
    },
}

impl AsyncTarget {
    /// Whether event handlers run in a thread of their own (thread modes),
    /// not inside the worker's progress (poll mode).
    pub fn handlers_run_apart(&self) -> bool {
        match *self {
            AsyncTarget::Ours(context) => {
                // SAFETY: a live context of ours (see `AsyncTarget::new`).
                let context = unsafe { &*(context as *const AsyncContext) };
                context.mode() != AsyncMode::Poll
            }
            AsyncTarget::Ucx { mode, .. } => mode != UCS_ASYNC_MODE_POLL,
        }
    }

    /// The context `uct_worker_create` was given.
    ///
    /// # Safety
    /// `context` must be a live async context, ours or UCX's.
    pub unsafe fn new(context: *mut ucs_async_context_t) -> Result<AsyncTarget, Status> {
        if context.is_null() {
            tracing::error!("cm: the worker has no async context");
            return Err(Status::InvalidParam);
        }
        // SAFETY: live by the contract; ours carry a magic word first, and
        // any context has at least 8 readable bytes.
        if unsafe { AsyncContext::has_our_magic(context as *const c_void) } {
            return Ok(AsyncTarget::Ours(context as usize));
        }
        // The first offset holding a thread or poll mode. In the other
        // layout that word is zero (an unused part of the lock union) or
        // half of the miss queue's tail pointer, never 1..=3. Signal mode
        // (0) cannot be told apart and is refused; UCP uses thread modes.
        let mode = UCX_ASYNC_MODE_OFFSETS.iter().find_map(|&offset| {
            // SAFETY: UCX's context is larger than 60 bytes in every layout.
            let mode = unsafe {
                context
                    .cast::<u8>()
                    .add(offset)
                    .cast::<ucs_async_mode_t>()
                    .read_unaligned()
            };
            (UCS_ASYNC_MODE_THREAD_SPINLOCK..UCS_ASYNC_MODE_LAST)
                .contains(&mode)
                .then_some(mode)
        });
        let Some(mode) = mode else {
            tracing::error!("cm: UCX's async context {context:p} is in no thread or poll mode");
            return Err(Status::Unsupported);
        };
        Ok(AsyncTarget::Ucx {
            context: context as usize,
            mode,
        })
    }

    /// Calls `cb(fd, events, arg)` under the context when `fd` has `events`.
    ///
    /// # Safety
    /// `cb(…, arg)` must stay callable until [`AsyncTarget::remove`]; the
    /// context must outlive the registration (the worker outlives its cm).
    pub unsafe fn add(
        &self,
        fd: c_int,
        events: ucs_event_set_types_t,
        cb: EventCallback,
        arg: *mut c_void,
    ) -> Result<(), Status> {
        match *self {
            AsyncTarget::Ours(context) => {
                // SAFETY: a live context of ours by the contract.
                let context = unsafe { &*(context as *const AsyncContext) };
                context.add_fd_handler(fd, events, cb, arg)
            }
            AsyncTarget::Ucx { context, mode } => {
                let Some(set) = ucx_function!(ucs_async_set_event_handler: fn(ucs_async_mode_t, c_int, ucs_event_set_types_t, ucs_async_event_cb_t, *mut c_void, *mut ucs_async_context_t) -> ucs_status_t)
                else {
                    tracing::error!("cm: UCX's async context, but no UCX libucs");
                    return Err(Status::NoDevice);
                };
                // SAFETY: UCX's function on UCX's live context; cb/arg per
                // the contract.
                result_of(unsafe {
                    set(
                        mode,
                        fd,
                        events,
                        Some(cb),
                        arg,
                        context as *mut ucs_async_context_t,
                    )
                })
            }
        }
    }

    /// Changes the events watched on `fd`.
    pub fn modify(&self, fd: c_int, events: ucs_event_set_types_t) -> Result<(), Status> {
        match self {
            AsyncTarget::Ours(_) => async_context::modify_handler(fd, events),
            AsyncTarget::Ucx { .. } => {
                let modify = ucx_function!(ucs_async_modify_handler: fn(c_int, ucs_event_set_types_t) -> ucs_status_t)
                    .ok_or(Status::NoDevice)?;
                // SAFETY: UCX's function; the fd is registered with it.
                result_of(unsafe { modify(fd, events) })
            }
        }
    }

    /// Stops watching `fd`; no call of its handler runs after this returns
    /// (except one in progress on the calling thread).
    pub fn remove(&self, fd: c_int) {
        let result = match self {
            AsyncTarget::Ours(_) => async_context::remove_handler(fd, true),
            AsyncTarget::Ucx { .. } => {
                match ucx_function!(ucs_async_remove_handler: fn(c_int, c_int) -> ucs_status_t) {
                    // SAFETY: UCX's function; the fd is registered with it.
                    Some(remove) => result_of(unsafe { remove(fd, 1) }),
                    None => Err(Status::NoDevice),
                }
            }
        };
        if let Err(status) = result {
            tracing::warn!("cm: removing the handler of fd {fd}: {status}");
        }
    }
}

/// A one-shot timer as a file descriptor (Linux's timerfd), so that the
/// async context watches it as it watches a socket: it turns readable when
/// it expires. A connection's handshake deadline.
#[derive(Debug)]
pub struct Timer {
    fd: OwnedFd,
}

impl Timer {
    pub fn new() -> Result<Timer, Status> {
        // SAFETY: plain system call; the fd returned is owned below.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            let error = std::io::Error::last_os_error();
            tracing::error!("cm: cannot create a timer: {error}");
            return Err(Status::IoError);
        }
        // SAFETY: a new descriptor nobody else owns.
        Ok(Timer {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    pub fn fd(&self) -> c_int {
        self.fd.as_raw_fd()
    }

    /// Expires once after `after`, or never (`None`); any expiry not yet
    /// taken by [`Timer::take_expiry`] is forgotten.
    pub fn arm(&self, after: Option<Duration>) -> Result<(), Status> {
        // A zero time disarms a timerfd: a zero wait expires at once instead.
        let after = after.map(|after| after.max(Duration::from_nanos(1)));
        let value = after.map_or(
            libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            |after| libc::timespec {
                tv_sec: libc::time_t::try_from(after.as_secs()).unwrap_or(libc::time_t::MAX),
                tv_nsec: libc::c_long::from(after.subsec_nanos()),
            },
        );
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: value,
        };
        // SAFETY: our timer fd; `spec` is valid, the old value not wanted.
        if unsafe { libc::timerfd_settime(self.fd(), 0, &spec, std::ptr::null_mut()) } != 0 {
            let error = std::io::Error::last_os_error();
            tracing::warn!("cm: cannot arm a timer: {error}");
            return Err(Status::IoError);
        }
        Ok(())
    }

    /// Whether the timer expired since it was last armed (taking the expiry:
    /// the fd is no longer readable after this).
    pub fn take_expiry(&self) -> bool {
        let mut count = [0u8; 8];
        // SAFETY: our timer fd; a timerfd read fills 8 bytes or fails.
        let read = unsafe { libc::read(self.fd(), count.as_mut_ptr().cast(), count.len()) };
        read == 8 && u64::from_ne_bytes(count) != 0
    }
}
