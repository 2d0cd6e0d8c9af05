//! Watching the connection manager's sockets with the worker's async
//! context, so that every callback to the user runs as UCX's connection
//! managers run theirs: from the context's event handler, with the context
//! blocked (UCP asserts that it is). The context is ours, or in a process
//! with UCX's `libucs` UCX's (`crate::core::ucx_libucs`): then its handlers
//! are registered with UCX's own functions.

use std::ffi::{c_int, c_void};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
    Timespec,
};

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
            AsyncTarget::Ours(context) => Self::ours(context).mode() != AsyncMode::Poll,
            AsyncTarget::Ucx { mode, .. } => mode != UCS_ASYNC_MODE_POLL,
        }
    }

    /// Our context at `address` (an [`AsyncTarget::Ours`]).
    fn ours<'a>(address: usize) -> &'a AsyncContext {
        // SAFETY: `AsyncTarget::new` found one of ours at this address,
        // live while the target is used (its contract).
        unsafe { &*(address as *const AsyncContext) }
    }

    /// The context `uct_worker_create` was given.
    ///
    /// # Safety
    /// `context` must be a live async context, ours or UCX's, and stay live
    /// while the target is used (a worker outlives its cm).
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

    /// Has the context call `on_event(object)` when `fd` has `events`,
    /// until [`Watch::end`]; the watch holds a reference to `object` until
    /// then.
    pub fn watch<T: Send + Sync + 'static>(
        &self,
        fd: c_int,
        events: ucs_event_set_types_t,
        object: &Arc<T>,
        on_event: fn(&Arc<T>),
    ) -> Result<Watch<T>, Status> {
        let registration = Arc::new(Registration {
            object: object.clone(),
            on_event,
        });
        let arg = Arc::into_raw(registration.clone()) as *mut c_void;
        // SAFETY: `arg` is the context's reference to the registration,
        // dropped only in `Watch::end` after the handler is removed, so
        // `dispatch::<T>(…, arg)` stays callable while registered.
        if let Err(status) = unsafe { self.add(fd, events, dispatch::<T>, arg) } {
            // SAFETY: the context's reference taken above, never handed
            // out (the handler was not added).
            unsafe { Arc::decrement_strong_count(arg as *const Registration<T>) };
            tracing::error!("cm: cannot watch fd {fd}: {status}");
            return Err(status);
        }
        Ok(Watch {
            target: *self,
            fd,
            registration,
        })
    }

    /// Calls `cb(fd, events, arg)` under the context when `fd` has `events`.
    ///
    /// # Safety
    /// `cb(…, arg)` must stay callable until [`AsyncTarget::remove`].
    unsafe fn add(
        &self,
        fd: c_int,
        events: ucs_event_set_types_t,
        cb: EventCallback,
        arg: *mut c_void,
    ) -> Result<(), Status> {
        match *self {
            AsyncTarget::Ours(context) => Self::ours(context).add_fd_handler(fd, events, cb, arg),
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
    fn modify(&self, fd: c_int, events: ucs_event_set_types_t) -> Result<(), Status> {
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
    fn remove(&self, fd: c_int) {
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

/// What a [`Watch`] registered: the object and its event function.
struct Registration<T> {
    object: Arc<T>,
    on_event: fn(&Arc<T>),
}

/// A handler registered by [`AsyncTarget::watch`] for one fd. The context
/// holds a reference to the registration until [`Watch::end`]; a watch
/// never ended keeps its object alive (a leak, never a dangling handler).
#[must_use = "a watch is ended with Watch::end"]
pub struct Watch<T> {
    target: AsyncTarget,
    fd: c_int,
    registration: Arc<Registration<T>>,
}

impl<T> std::fmt::Debug for Watch<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Watch(fd {})", self.fd)
    }
}

impl<T> Watch<T> {
    /// Changes the events watched.
    pub fn modify(&self, events: ucs_event_set_types_t) -> Result<(), Status> {
        self.target.modify(self.fd, events)
    }

    /// Stops watching (waiting for a handler call on another thread, so
    /// never under a lock the handler takes) and drops the context's
    /// reference.
    pub fn end(self) {
        self.target.remove(self.fd);
        // SAFETY: the context's reference from `AsyncTarget::watch`; the
        // handler is removed, so the context no longer uses it (a call in
        // progress on this thread holds a reference of its own), and
        // `self.registration` keeps the memory alive past this line.
        unsafe { Arc::decrement_strong_count(Arc::as_ptr(&self.registration)) };
    }
}

/// The async handler of every [`Watch`].
unsafe extern "C" fn dispatch<T>(_fd: c_int, _events: ucs_event_set_types_t, arg: *mut c_void) {
    let registration = arg as *const Registration<T>;
    // SAFETY: `arg` is the context's reference (see `AsyncTarget::watch`),
    // alive until the handler is removed, which waits for this call; a
    // reference of our own keeps it alive through the call, even if the
    // handler ends its own watch.
    let registration = unsafe {
        Arc::increment_strong_count(registration);
        Arc::from_raw(registration)
    };
    (registration.on_event)(&registration.object);
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
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )
        .map_err(|error| {
            tracing::error!("cm: cannot create a timer: {error}");
            Status::IoError
        })?;
        Ok(Timer { fd })
    }

    pub fn fd(&self) -> c_int {
        self.fd.as_raw_fd()
    }

    /// Expires once after `after`, or never (`None`); any expiry not yet
    /// taken by [`Timer::take_expiry`] is forgotten.
    pub fn arm(&self, after: Option<Duration>) -> Result<(), Status> {
        // A zero time disarms a timerfd: a zero wait expires at once instead.
        let after = after.map(|after| after.max(Duration::from_nanos(1)));
        let never = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let value = after.map_or(never, |after| Timespec {
            tv_sec: i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: after.subsec_nanos().into(),
        });
        let spec = Itimerspec {
            it_interval: never,
            it_value: value,
        };
        if let Err(error) = timerfd_settime(&self.fd, TimerfdTimerFlags::empty(), &spec) {
            tracing::warn!("cm: cannot arm a timer: {error}");
            return Err(Status::IoError);
        }
        Ok(())
    }

    /// Whether the timer expired since it was last armed (taking the expiry:
    /// the fd is no longer readable after this).
    pub fn take_expiry(&self) -> bool {
        let mut count = [0u8; 8];
        // A timerfd read fills 8 bytes or fails.
        matches!(rustix::io::read(&self.fd, &mut count), Ok(8)) && u64::from_ne_bytes(count) != 0
    }
}
