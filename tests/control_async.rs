//! Async contexts and their fd event handlers: delivery by the service
//! thread (thread modes) and by `ucs_async_poll` (poll mode), the context
//! block, removal (also from inside a handler), and bad input.

use std::ffi::{c_int, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use uct::abi::*;
use uct::api::async_context::{ucs_async_modify_handler, ucs_async_remove_handler};
use uct::core::async_context::AsyncContext;

#[path = "uct_safe/mod.rs"]
mod uct_safe;
use uct_safe::*;

struct Pipe {
    read: c_int,
    write: c_int,
}

impl Pipe {
    fn new() -> Pipe {
        let mut fds = [0 as c_int; 2];
        // SAFETY: fds has room for the two descriptors.
        assert_eq!(
            unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) },
            0
        );
        Pipe {
            read: fds[0],
            write: fds[1],
        }
    }

    fn poke(&self) {
        // SAFETY: writing one byte from a local to our pipe.
        assert_eq!(
            unsafe { libc::write(self.write, b"x".as_ptr().cast(), 1) },
            1
        );
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // SAFETY: closing our own descriptors once.
        unsafe {
            libc::close(self.read);
            libc::close(self.write);
        }
    }
}

/// Handler state: calls, last events, last id, and the thread that ran it.
#[derive(Default)]
struct Seen {
    calls: AtomicU32,
    events: AtomicU32,
    id: AtomicI32,
    thread: std::sync::Mutex<Option<std::thread::ThreadId>>,
}

/// Counts the call and drains the pipe (so a level-triggered fd goes quiet).
unsafe extern "C" fn on_event(id: c_int, events: ucs_event_set_types_t, arg: *mut c_void) {
    // SAFETY: tests pass a live Seen.
    let seen = unsafe { &*(arg as *const Seen) };
    let mut byte = 0u8;
    // SAFETY: reading into a local byte from the non-blocking pipe.
    while unsafe { libc::read(id, (&mut byte as *mut u8).cast(), 1) } == 1 {}
    seen.id.store(id, Ordering::SeqCst);
    seen.events.store(u32::from(events), Ordering::SeqCst);
    *seen.thread.lock().unwrap() = Some(std::thread::current().id());
    seen.calls.fetch_add(1, Ordering::SeqCst);
}

/// Removes its own handler synchronously from inside the call.
unsafe extern "C" fn remove_self(id: c_int, events: ucs_event_set_types_t, arg: *mut c_void) {
    // SAFETY: same contract as on_event.
    unsafe { on_event(id, events, arg) };
    assert_eq!(ucs_async_remove_handler(id, 1), UCS_OK);
}

fn create(mode: ucs_async_mode_t) -> *mut ucs_async_context_t {
    let mut context = null_mut();
    assert_eq!(async_context_create(mode, &mut context), UCS_OK);
    context
}

/// A new context of `mode` with `cb` watching a new pipe's reads, and
/// what the handler saw (boxed: the handler keeps its address).
fn watched(
    mode: ucs_async_mode_t,
    cb: ucs_async_event_cb_t,
) -> (*mut ucs_async_context_t, Pipe, Box<Seen>) {
    let context = create(mode);
    let pipe = Pipe::new();
    let seen = Box::<Seen>::default();
    let arg = &*seen as *const Seen as *mut c_void;
    let status = set_event_handler(mode, pipe.read, UCS_EVENT_SET_EVREAD, cb, arg, context);
    assert_eq!(status, UCS_OK);
    (context, pipe, seen)
}

fn wait_for(what: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if what() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

#[test]
fn poll_mode_delivers_only_when_polled() {
    let (context, pipe, seen) = watched(UCS_ASYNC_MODE_POLL, Some(on_event));
    async_poll(context);
    assert_eq!(seen.calls.load(Ordering::SeqCst), 0, "nothing pending");

    pipe.poke();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        seen.calls.load(Ordering::SeqCst),
        0,
        "no thread delivers in poll mode"
    );
    async_poll(context);
    assert_eq!(seen.calls.load(Ordering::SeqCst), 1);
    assert_eq!(seen.id.load(Ordering::SeqCst), pipe.read);
    assert_ne!(
        seen.events.load(Ordering::SeqCst) & u32::from(UCS_EVENT_SET_EVREAD),
        0
    );
    assert_eq!(
        *seen.thread.lock().unwrap(),
        Some(std::thread::current().id())
    );

    // Polling every (poll-mode) context with NULL reaches it too.
    pipe.poke();
    // NULL means all contexts.
    async_poll(null_mut());
    assert_eq!(seen.calls.load(Ordering::SeqCst), 2);

    assert_eq!(ucs_async_remove_handler(pipe.read, 1), UCS_OK);
    assert_eq!(ucs_async_remove_handler(pipe.read, 1), UCS_ERR_NO_ELEM);
    pipe.poke();
    async_poll(context);
    async_context_destroy(context);
    assert_eq!(
        seen.calls.load(Ordering::SeqCst),
        2,
        "removed handlers are not called"
    );
}

#[test]
fn thread_mode_delivers_from_the_service_thread() {
    for mode in [
        UCS_ASYNC_MODE_THREAD_SPINLOCK,
        UCS_ASYNC_MODE_THREAD_MUTEX,
        UCS_ASYNC_MODE_SIGNAL,
    ] {
        let (context, pipe, seen) = watched(mode, Some(on_event));
        pipe.poke();
        assert!(
            wait_for(|| seen.calls.load(Ordering::SeqCst) == 1),
            "mode {mode}: not delivered"
        );
        assert_ne!(
            *seen.thread.lock().unwrap(),
            Some(std::thread::current().id())
        );

        // Disarm reads: a write is not reported any more.
        assert_eq!(ucs_async_modify_handler(pipe.read, 0), UCS_OK);
        pipe.poke();
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(
            seen.calls.load(Ordering::SeqCst),
            1,
            "mode {mode}: events were disarmed"
        );
        assert_eq!(
            ucs_async_modify_handler(pipe.read, UCS_EVENT_SET_EVREAD),
            UCS_OK
        );
        assert!(
            wait_for(|| seen.calls.load(Ordering::SeqCst) == 2),
            "mode {mode}: re-armed"
        );

        assert_eq!(ucs_async_remove_handler(pipe.read, 1), UCS_OK);
        async_context_destroy(context);
    }
}

#[test]
fn block_holds_back_handlers() {
    let (context, pipe, seen) = watched(UCS_ASYNC_MODE_THREAD_MUTEX, Some(on_event));
    // SAFETY: the handle is our live AsyncContext.
    let rust_context = unsafe { &*(context as *const AsyncContext) };
    {
        let _blocked = rust_context.block();
        pipe.poke();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(seen.calls.load(Ordering::SeqCst), 0, "ran while blocked");
    }
    assert!(wait_for(|| seen.calls.load(Ordering::SeqCst) == 1));
    assert_eq!(ucs_async_remove_handler(pipe.read, 1), UCS_OK);
    async_context_destroy(context);
}

#[test]
fn handler_may_remove_itself_synchronously() {
    let (context, pipe, seen) = watched(UCS_ASYNC_MODE_THREAD_SPINLOCK, Some(remove_self));
    pipe.poke();
    assert!(wait_for(|| seen.calls.load(Ordering::SeqCst) == 1));
    assert!(wait_for(
        || ucs_async_remove_handler(pipe.read, 0) == UCS_ERR_NO_ELEM
    ));
    pipe.poke();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(seen.calls.load(Ordering::SeqCst), 1);
    async_context_destroy(context);
}

#[test]
fn destroy_drops_remaining_handlers() {
    let (context, pipe, _seen) = watched(UCS_ASYNC_MODE_THREAD_SPINLOCK, Some(on_event));
    async_context_destroy(context);
    assert_eq!(ucs_async_remove_handler(pipe.read, 1), UCS_ERR_NO_ELEM);
}

#[test]
fn event_handler_bad_input() {
    let context = create(UCS_ASYNC_MODE_POLL);
    let pipe = Pipe::new();
    let seen = Seen::default();
    let arg = &seen as *const Seen as *mut c_void;
    let read = UCS_EVENT_SET_EVREAD;
    let mut timer_id: c_int = -1;
    // Each call passes one bad argument; the context is live.
    let set = |mode, fd, cb: ucs_async_event_cb_t, context| {
        set_event_handler(mode, fd, read, cb, arg, context)
    };
    let poll = UCS_ASYNC_MODE_POLL;
    assert_eq!(
        set(poll, -1, Some(on_event), context),
        UCS_ERR_INVALID_PARAM
    );
    assert_eq!(
        set(poll, 1_000_000, Some(on_event), context),
        UCS_ERR_EXCEEDS_LIMIT
    );
    assert_eq!(set(poll, pipe.read, None, context), UCS_ERR_INVALID_PARAM);
    assert_eq!(
        set(poll, pipe.read, Some(on_event), null_mut()),
        UCS_ERR_INVALID_PARAM
    );
    assert_eq!(
        set(
            UCS_ASYNC_MODE_THREAD_MUTEX,
            pipe.read,
            Some(on_event),
            context
        ),
        UCS_ERR_INVALID_PARAM,
        "mode differs from the context's"
    );
    // An fd number that is not open.
    assert_eq!(
        set(poll, 999_999, Some(on_event), context),
        UCS_ERR_INVALID_PARAM
    );
    assert_eq!(set(poll, pipe.read, Some(on_event), context), UCS_OK);
    assert_eq!(
        set(poll, pipe.read, Some(on_event), context),
        UCS_ERR_ALREADY_EXISTS
    );
    assert_eq!(ucs_async_modify_handler(999_998, read), UCS_ERR_NO_ELEM);
    assert_eq!(ucs_async_remove_handler(999_998, 1), UCS_ERR_NO_ELEM);
    assert_eq!(
        add_timer(poll, 1000, Some(on_event), arg, context, &mut timer_id),
        UCS_ERR_UNSUPPORTED
    );
    assert_eq!(ucs_async_remove_handler(pipe.read, 1), UCS_OK);
    async_context_destroy(context);
    assert_eq!(seen.calls.load(Ordering::SeqCst), 0);
}
