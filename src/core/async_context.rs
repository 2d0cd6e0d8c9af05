//! The asynchronous-event context (`ucs_async_context_t`) a worker is bound
//! to: file-descriptor event handlers, delivered by a service thread (thread
//! modes) or when the owner polls (poll mode), and the context lock that
//! keeps handlers from running while the owner is inside a critical section
//! (UCX's `UCS_ASYNC_BLOCK`).
//!
//! Handler ids are the file descriptors, process-wide, as in UCX (so
//! `ucs_async_remove_handler(fd)` needs no context). One epoll set per
//! context: it supports UCX's edge-triggered flag, and the service thread
//! sleeps in the kernel until an fd or the wake-up eventfd fires (no spinning:
//! machines have 2 cores). Signal mode is accepted and delivered like the
//! thread modes (no signal handlers are installed). Timers are not
//! implemented.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::{JoinHandle, ThreadId};

use crate::abi::*;
use crate::core::epoll;

/// Tag at the start of every context we hand out, so a stale or foreign
/// pointer is caught before it is used as a context.
const ASYNC_CONTEXT_MAGIC: u64 = 0x7563_735f_6173_796e; // "ucs_asyn"

/// Handler ids from here up are UCX's timer ids; fds must stay below.
pub const ASYNC_TIMER_ID_MIN: c_int = 1_000_000;

/// Most events one epoll_wait call returns.
const EVENTS_PER_WAIT: usize = 16;

/// epoll user data that marks the context's wake-up eventfd.
const WAKE_TOKEN: u64 = u64::MAX;

/// Delivery modes we accept (all of UCX's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsyncMode {
    Signal,
    ThreadSpinlock,
    ThreadMutex,
    Poll,
}

impl AsyncMode {
    pub fn from_raw(mode: ucs_async_mode_t) -> Option<Self> {
        match mode {
            UCS_ASYNC_MODE_SIGNAL => Some(Self::Signal),
            UCS_ASYNC_MODE_THREAD_SPINLOCK => Some(Self::ThreadSpinlock),
            UCS_ASYNC_MODE_THREAD_MUTEX => Some(Self::ThreadMutex),
            UCS_ASYNC_MODE_POLL => Some(Self::Poll),
            _ => None,
        }
    }

    /// True when a service thread delivers events.
    fn has_thread(self) -> bool {
        self != Self::Poll
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic aborts the process (panic = "abort"), so a poisoned lock still
    // guards consistent data.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A lock the same thread may take again (UCX's async block is recursive: a
/// handler may call code that blocks the context it runs in).
#[derive(Default)]
struct RecursiveLock {
    state: Mutex<(Option<ThreadId>, u32)>,
    released: Condvar,
}

impl RecursiveLock {
    fn acquire(&self) {
        let me = std::thread::current().id();
        let mut state = lock(&self.state);
        loop {
            match state.0 {
                Some(owner) if owner != me => {
                    state = self
                        .released
                        .wait(state)
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                }
                _ => {
                    state.0 = Some(me);
                    state.1 += 1;
                    return;
                }
            }
        }
    }

    fn release(&self) {
        let mut state = lock(&self.state);
        state.1 = state.1.saturating_sub(1);
        if state.1 == 0 {
            state.0 = None;
            self.released.notify_one();
        }
    }
}

/// While alive, no event handler of the context runs (on other threads).
pub struct AsyncBlock<'a> {
    lock: &'a RecursiveLock,
}

impl Drop for AsyncBlock<'_> {
    fn drop(&mut self) {
        self.lock.release();
    }
}

/// A C event callback: `cb(id, events, arg)`.
type EventCallback = unsafe extern "C" fn(c_int, ucs_event_set_types_t, *mut c_void);

struct EventHandler {
    fd: c_int,
    events: AtomicU8,
    cb: EventCallback,
    /// The C argument, kept as an address; only handed back to `cb`.
    arg: usize,
    /// Calls in progress, and the thread making them (for a synchronous
    /// remove from inside the handler itself).
    active: AtomicU32,
    caller: Mutex<Option<ThreadId>>,
    removed: AtomicBool,
}

/// What the service thread shares with the context.
struct Shared {
    /// Poll mode: events are delivered only by polling.
    polled: bool,
    epoll: OwnedFd,
    wake: OwnedFd,
    stop: AtomicBool,
    block: RecursiveLock,
    handlers: Mutex<HashMap<c_int, Arc<EventHandler>>>,
}

/// Every registered handler of the process, by id (fd), with its context.
fn registry() -> MutexGuard<'static, HashMap<c_int, Arc<Shared>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<c_int, Arc<Shared>>>> = OnceLock::new();
    lock(REGISTRY.get_or_init(Default::default))
}

fn os_error(what: &str) -> Status {
    let error = std::io::Error::last_os_error();
    tracing::error!("async: {what} failed: {error}");
    Status::IoError
}

pub(crate) fn epoll_flags(events: ucs_event_set_types_t) -> u32 {
    let mut flags = 0;
    if events & UCS_EVENT_SET_EVREAD != 0 {
        flags |= libc::EPOLLIN as u32;
    }
    if events & UCS_EVENT_SET_EVWRITE != 0 {
        flags |= libc::EPOLLOUT as u32;
    }
    if events & UCS_EVENT_SET_EVERR != 0 {
        flags |= libc::EPOLLERR as u32;
    }
    if events & UCS_EVENT_SET_EDGE_TRIGGERED != 0 {
        flags |= libc::EPOLLET as u32;
    }
    flags
}

pub(crate) fn ucs_events(flags: u32) -> ucs_event_set_types_t {
    let mut events = 0;
    if flags & (libc::EPOLLIN as u32 | libc::EPOLLHUP as u32) != 0 {
        events |= UCS_EVENT_SET_EVREAD;
    }
    if flags & libc::EPOLLOUT as u32 != 0 {
        events |= UCS_EVENT_SET_EVWRITE;
    }
    if flags & libc::EPOLLERR as u32 != 0 {
        events |= UCS_EVENT_SET_EVERR;
    }
    events
}

impl Shared {
    fn new(polled: bool) -> Result<Self, Status> {
        let epoll = epoll::create().map_err(|_| os_error("epoll_create1"))?;
        let wake = rustix::event::eventfd(
            0,
            rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
        )
        .map_err(|_| os_error("eventfd"))?;
        let shared = Shared {
            polled,
            epoll,
            wake,
            stop: AtomicBool::new(false),
            block: RecursiveLock::default(),
            handlers: Mutex::new(HashMap::new()),
        };
        shared.epoll_ctl(
            libc::EPOLL_CTL_ADD,
            shared.wake.as_raw_fd(),
            libc::EPOLLIN as u32,
            WAKE_TOKEN,
        )?;
        Ok(shared)
    }

    fn epoll_ctl(&self, op: c_int, fd: c_int, flags: u32, token: u64) -> Result<(), Status> {
        epoll::control(self.epoll.as_fd(), op, fd, flags, token).map_err(|error| {
            tracing::warn!("async: cannot watch fd {fd}: {error}");
            Status::InvalidParam
        })
    }

    fn wake(&self) {
        // A full counter (EAGAIN) already means "wake up", so the result is
        // not needed.
        let _ = rustix::io::write(&self.wake, &1u64.to_ne_bytes());
    }

    fn drain_wake(&self) {
        let mut count = [0u8; 8];
        // Non-blocking: nothing to take is fine.
        let _ = rustix::io::read(&self.wake, &mut count);
    }

    /// Waits up to `timeout_ms` (-1 = forever) and runs the handlers of the
    /// fds that fired; returns how many handlers ran.
    fn wait_and_dispatch(&self, timeout_ms: c_int) -> u32 {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; EVENTS_PER_WAIT];
        let Ok(ready) = epoll::wait(self.epoll.as_fd(), &mut events, timeout_ms) else {
            // EINTR and friends: the caller loops.
            return 0;
        };
        let mut handled = 0;
        for event in &events[..ready] {
            let (token, flags) = (event.u64, event.events);
            if token == WAKE_TOKEN {
                self.drain_wake();
                continue;
            }
            let fd = token as c_int;
            let handler = lock(&self.handlers).get(&fd).cloned();
            if let Some(handler) = handler {
                self.dispatch(&handler, ucs_events(flags));
                handled += 1;
            }
        }
        handled
    }

    fn dispatch(&self, handler: &EventHandler, events: ucs_event_set_types_t) {
        handler.active.fetch_add(1, Ordering::SeqCst);
        if !handler.removed.load(Ordering::SeqCst) {
            *lock(&handler.caller) = Some(std::thread::current().id());
            self.block.acquire();
            // SAFETY: the owner registered `cb` with `arg` and promised they
            // stay valid until the handler is removed; removal waits for
            // calls in progress (sync) and `removed` stops new ones.
            unsafe { (handler.cb)(handler.fd, events, handler.arg as *mut c_void) };
            self.block.release();
            *lock(&handler.caller) = None;
        }
        handler.active.fetch_sub(1, Ordering::SeqCst);
    }
}

fn service_loop(shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        shared.wait_and_dispatch(-1);
    }
}

#[repr(C)]
pub struct AsyncContext {
    magic: u64,
    mode: AsyncMode,
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl AsyncContext {
    pub fn new(mode: AsyncMode) -> Result<Self, Status> {
        Ok(Self {
            magic: ASYNC_CONTEXT_MAGIC,
            mode,
            shared: Arc::new(Shared::new(!mode.has_thread())?),
            thread: Mutex::new(None),
        })
    }

    pub fn mode(&self) -> AsyncMode {
        self.mode
    }

    /// True when this looks like a live context we created.
    pub fn is_valid(&self) -> bool {
        self.magic == ASYNC_CONTEXT_MAGIC
    }

    /// True when the 8 bytes at `context` hold our magic: reads only those
    /// bytes, so it is safe on a context another library made (no
    /// reference to a whole `AsyncContext` is formed over foreign memory).
    ///
    /// # Safety
    /// `context` points at 8 readable bytes.
    pub unsafe fn has_our_magic(context: *const c_void) -> bool {
        // SAFETY: 8 readable bytes by the contract; `magic` is the first
        // field of this repr(C) struct, so those bytes are where ours keeps it.
        unsafe { (context as *const u64).read_unaligned() == ASYNC_CONTEXT_MAGIC }
    }

    /// Keeps this context's handlers from running until the guard drops
    /// (`UCS_ASYNC_BLOCK` / `UCS_ASYNC_UNBLOCK`). Recursive.
    pub fn block(&self) -> AsyncBlock<'_> {
        self.shared.block.acquire();
        AsyncBlock {
            lock: &self.shared.block,
        }
    }

    fn ensure_thread(&self) -> Result<(), Status> {
        if !self.mode.has_thread() {
            return Ok(());
        }
        let mut thread = lock(&self.thread);
        if thread.is_none() {
            let shared = Arc::clone(&self.shared);
            let handle = std::thread::Builder::new()
                .name("ucs-async".into())
                .spawn(move || service_loop(shared))
                .map_err(|error| {
                    tracing::error!("async: cannot start the service thread: {error}");
                    Status::NoResource
                })?;
            *thread = Some(handle);
        }
        Ok(())
    }

    /// Calls `cb(fd, events, arg)` whenever `fd` has one of `events`. The id
    /// of the handler is `fd`.
    pub fn add_fd_handler(
        &self,
        fd: c_int,
        events: ucs_event_set_types_t,
        cb: EventCallback,
        arg: *mut c_void,
    ) -> Result<(), Status> {
        if fd < 0 {
            tracing::warn!("async: invalid fd {fd}");
            return Err(Status::InvalidParam);
        }
        if fd >= ASYNC_TIMER_ID_MIN {
            tracing::warn!("async: fd {fd} is too large to be a handler id");
            return Err(Status::ExceedsLimit);
        }
        let mut registry = registry();
        if registry.contains_key(&fd) {
            tracing::warn!("async: fd {fd} already has a handler");
            return Err(Status::AlreadyExists);
        }
        self.ensure_thread()?;
        let handler = Arc::new(EventHandler {
            fd,
            events: AtomicU8::new(events),
            cb,
            arg: arg as usize,
            active: AtomicU32::new(0),
            caller: Mutex::new(None),
            removed: AtomicBool::new(false),
        });
        lock(&self.shared.handlers).insert(fd, handler);
        if let Err(status) =
            self.shared
                .epoll_ctl(libc::EPOLL_CTL_ADD, fd, epoll_flags(events), fd as u64)
        {
            lock(&self.shared.handlers).remove(&fd);
            return Err(status);
        }
        registry.insert(fd, Arc::clone(&self.shared));
        Ok(())
    }

    /// Runs the handlers whose fds are ready now (poll mode, or to deliver
    /// events early); returns how many ran.
    pub fn poll(&self) -> u32 {
        self.shared.wait_and_dispatch(0)
    }

    pub fn handler_count(&self) -> usize {
        lock(&self.shared.handlers).len()
    }

    /// Stops the service thread and forgets every handler; called by destroy.
    pub fn shut_down(&mut self) {
        self.magic = 0;
        let ids: Vec<c_int> = lock(&self.shared.handlers).keys().copied().collect();
        if !ids.is_empty() {
            tracing::warn!("async: context destroyed with handlers {ids:?} still set");
        }
        for id in ids {
            // Not sync: the context is going away with its handlers.
            let _ = remove_handler(id, false);
        }
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake();
        if let Some(thread) = lock(&self.thread).take() {
            if thread.thread().id() == std::thread::current().id() {
                // Destroyed from one of its own handlers: the loop sees
                // `stop` when the handler returns; joining would deadlock.
                return;
            }
            if thread.join().is_err() {
                tracing::error!("async: the service thread failed");
            }
        }
    }
}

/// Removes handler `id` (an fd). With `sync`, waits until no call of it is
/// running (other than the caller's own, when called from the handler).
pub fn remove_handler(id: c_int, sync: bool) -> Result<(), Status> {
    let Some(shared) = registry().remove(&id) else {
        return Err(Status::NoElem);
    };
    let handler = lock(&shared.handlers).remove(&id);
    // The fd may already be closed; epoll then dropped it by itself.
    let _ = shared.epoll_ctl(libc::EPOLL_CTL_DEL, id, 0, 0);
    let Some(handler) = handler else {
        return Ok(());
    };
    handler.removed.store(true, Ordering::SeqCst);
    if sync {
        let me = std::thread::current().id();
        let own_call = u32::from(*lock(&handler.caller) == Some(me));
        while handler.active.load(Ordering::SeqCst) > own_call {
            std::thread::yield_now();
        }
    }
    Ok(())
}

/// Runs the ready handlers of every poll-mode context
/// (`ucs_async_poll(NULL)`); returns how many ran. Thread-mode contexts
/// deliver by themselves, and a second poller would only race their thread.
pub fn poll_all() -> u32 {
    let mut contexts: Vec<Arc<Shared>> = Vec::new();
    for shared in registry().values().filter(|shared| shared.polled) {
        if !contexts.iter().any(|known| Arc::ptr_eq(known, shared)) {
            contexts.push(Arc::clone(shared));
        }
    }
    contexts
        .iter()
        .map(|shared| shared.wait_and_dispatch(0))
        .sum()
}

/// Changes the events handler `fd` waits for.
pub fn modify_handler(fd: c_int, events: ucs_event_set_types_t) -> Result<(), Status> {
    let Some(shared) = registry().get(&fd).cloned() else {
        return Err(Status::NoElem);
    };
    if let Some(handler) = lock(&shared.handlers).get(&fd) {
        handler.events.store(events, Ordering::SeqCst);
    }
    shared.epoll_ctl(libc::EPOLL_CTL_MOD, fd, epoll_flags(events), fd as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_map_from_c_values() {
        assert_eq!(
            AsyncMode::from_raw(UCS_ASYNC_MODE_THREAD),
            Some(AsyncMode::ThreadSpinlock)
        );
        assert_eq!(
            AsyncMode::from_raw(UCS_ASYNC_MODE_POLL),
            Some(AsyncMode::Poll)
        );
        assert_eq!(AsyncMode::from_raw(UCS_ASYNC_MODE_LAST), None);
    }

    #[test]
    fn block_is_recursive_and_excludes_other_threads() {
        let context = Arc::new(AsyncContext::new(AsyncMode::Poll).expect("context"));
        let outer = context.block();
        let inner = context.block();
        let other = {
            let context = Arc::clone(&context);
            std::thread::spawn(move || {
                let _guard = context.block();
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!other.is_finished(), "blocked while this thread holds it");
        drop(inner);
        drop(outer);
        other.join().expect("other thread");
    }
}
