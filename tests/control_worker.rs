//! Async contexts, workers and the progress queue: creation and bad input,
//! callback registration with UCX's id semantics, changes from inside
//! callbacks, and the inline `fast_elems` walk a UCX-compiled binary does
//! (both the master 16-byte and the 1.13 24-byte element layouts).

use std::ffi::{c_uint, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use uct::abi::*;
use uct::api::async_context::ucs_async_context_create;
use uct::api::worker::{uct_worker_create, uct_worker_progress_register_safe};

#[path = "uct_safe/mod.rs"]
mod uct_safe;
use uct_safe::*;

struct Fixture {
    async_context: *mut ucs_async_context_t,
    worker: uct_worker_h,
}

impl Fixture {
    fn new() -> Self {
        let mut async_context = null_mut();
        let status = async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &mut async_context);
        assert_eq!(status, UCS_OK);
        assert!(!async_context.is_null());
        let mut worker = null_mut();
        let status = worker_create(async_context, UCS_THREAD_MODE_SINGLE, &mut worker);
        assert_eq!(status, UCS_OK);
        assert!(!worker.is_null());
        Fixture {
            async_context,
            worker,
        }
    }

    fn register(
        &self,
        func: ucs_callback_t,
        arg: *mut c_void,
        flags: c_uint,
    ) -> uct_worker_cb_id_t {
        let mut id = UCS_CALLBACKQ_ID_NULL;
        // The callbacks' arguments outlive their use.
        progress_register(self.worker, func, arg, flags, &mut id);
        assert_ne!(id, UCS_CALLBACKQ_ID_NULL);
        id
    }

    fn progress(&self) -> c_uint {
        worker_progress(self.worker)
    }

    /// One inline walk of the worker's callbacks with `WORDS`-word elements.
    fn inline_progress<const WORDS: usize>(&self) -> c_uint {
        // SAFETY: the fixture's worker is live.
        unsafe { inline_progress::<WORDS>(self.worker) }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        worker_destroy(self.worker);
        async_context_destroy(self.async_context);
    }
}

/// A counter callback: adds 1 to the AtomicU32 `arg` points at, returns 1.
unsafe extern "C" fn count(arg: *mut c_void) -> c_uint {
    // SAFETY: tests pass a pointer to a live AtomicU32.
    unsafe { &*(arg as *const AtomicU32) }.fetch_add(1, Ordering::SeqCst);
    1
}

/// Walks `fast_elems` the way an inline `uct_worker_progress` compiled
/// against UCX does: elements of `WORDS` machine words, `{cb, arg, ...}`,
/// until a NULL `cb`. UCX master's elements are 2 words (16 bytes), 1.13's
/// are 3 (`{cb, arg, flags, id}`, 24 bytes).
unsafe fn inline_progress<const WORDS: usize>(worker: uct_worker_h) -> c_uint {
    let mut element = worker as *const [usize; WORDS];
    let mut total: c_uint = 0;
    loop {
        // SAFETY: the worker starts with its callback queue; the walk stops
        // at the first NULL cb, which is inside fast_elems.
        let words = unsafe { element.read() };
        let (cb, arg) = (words[0], words[1]);
        if cb == 0 {
            return total;
        }
        // SAFETY: a non-NULL cb in fast_elems is a ucs_callback_t.
        let cb: unsafe extern "C" fn(*mut c_void) -> c_uint = unsafe { std::mem::transmute(cb) };
        // SAFETY: called with its registered arg; the next element is still
        // inside fast_elems (the NULL end has not been reached).
        unsafe {
            total += cb(arg as *mut c_void);
            element = element.add(1);
        }
    }
}

/// Words in an element of a UCX master binary's walk.
const MASTER: usize = 2;
/// Words in an element of a UCX 1.13 binary's walk.
const V113: usize = 3;

#[test]
fn async_context_bad_input() {
    // SAFETY: NULL out-pointer is the bad input under test.
    assert_eq!(
        unsafe { ucs_async_context_create(UCS_ASYNC_MODE_POLL, null_mut()) },
        UCS_ERR_INVALID_PARAM
    );
    let mut context = null_mut();
    assert_eq!(
        async_context_create(UCS_ASYNC_MODE_LAST, &mut context),
        UCS_ERR_INVALID_PARAM
    );
    assert!(context.is_null(), "nothing written on failure");
    for mode in [
        UCS_ASYNC_MODE_SIGNAL,
        UCS_ASYNC_MODE_THREAD_MUTEX,
        UCS_ASYNC_MODE_POLL,
    ] {
        assert_eq!(async_context_create(mode, &mut context), UCS_OK);
        async_poll(context);
        async_context_destroy(context);
    }
    // NULL is accepted and ignored.
    async_context_destroy(null_mut());
    async_poll(null_mut());
}

#[test]
fn worker_bad_input() {
    let fixture = Fixture::new();
    let mut worker = null_mut();
    // Each call passes one bad argument.
    let single = UCS_THREAD_MODE_SINGLE;
    assert_eq!(
        worker_create(null_mut(), single, &mut worker),
        UCS_ERR_INVALID_PARAM
    );
    // SAFETY: the NULL out-pointer is the bad input under test.
    assert_eq!(
        unsafe { uct_worker_create(fixture.async_context, single, null_mut()) },
        UCS_ERR_INVALID_PARAM
    );
    assert_eq!(
        worker_create(fixture.async_context, UCS_THREAD_MODE_LAST, &mut worker),
        UCS_ERR_INVALID_PARAM
    );
    // A pointer to something that is not an async context.
    let mut not_a_context = [0u64; 8];
    assert_eq!(
        worker_create(not_a_context.as_mut_ptr().cast(), single, &mut worker),
        UCS_ERR_INVALID_PARAM
    );
    assert!(worker.is_null());
    // NULL handles are ignored / report no work.
    worker_destroy(null_mut());
    assert_eq!(worker_progress(null_mut()), 0);
    let mut id = UCS_CALLBACKQ_ID_NULL;
    progress_register(null_mut(), Some(count), null_mut(), 0, &mut id);
    assert_eq!(id, UCS_CALLBACKQ_ID_NULL);
    progress_register(fixture.worker, None, null_mut(), 0, &mut id);
    assert_eq!(id, UCS_CALLBACKQ_ID_NULL, "NULL callback is refused");
    // SAFETY: the NULL id pointers are the bad input under test.
    unsafe {
        uct_worker_progress_register_safe(fixture.worker, Some(count), null_mut(), 0, null_mut());
        uct::api::worker::uct_worker_progress_unregister_safe(fixture.worker, null_mut());
    }
    assert_eq!(fixture.progress(), 0, "nothing was registered");
    for mode in [UCS_THREAD_MODE_SERIALIZED, UCS_THREAD_MODE_MULTI] {
        assert_eq!(
            worker_create(fixture.async_context, mode, &mut worker),
            UCS_OK
        );
        worker_destroy(worker);
    }
}

#[test]
fn register_progress_unregister() {
    let fixture = Fixture::new();
    let hits = AtomicU32::new(0);
    let arg = &hits as *const AtomicU32 as *mut c_void;
    assert_eq!(fixture.progress(), 0);

    let mut id = UCS_CALLBACKQ_ID_NULL;
    // `hits` outlives the registration.
    progress_register(fixture.worker, Some(count), arg, 0, &mut id);
    assert_ne!(id, UCS_CALLBACKQ_ID_NULL);
    let first_id = id;
    // A second register with a non-NULL id does nothing (UCX semantics).
    progress_register(fixture.worker, Some(count), arg, 0, &mut id);
    assert_eq!(id, first_id);

    assert_eq!(fixture.progress(), 1, "registered once, called once");
    assert_eq!(fixture.progress(), 1);
    assert_eq!(hits.load(Ordering::SeqCst), 2);

    progress_unregister(fixture.worker, &mut id);
    assert_eq!(id, UCS_CALLBACKQ_ID_NULL, "unregister resets the id");
    assert_eq!(fixture.progress(), 0);
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    // Unregistering a NULL id is a no-op.
    progress_unregister(fixture.worker, &mut id);
    assert_eq!(id, UCS_CALLBACKQ_ID_NULL);
}

#[test]
fn oneshot_runs_once_and_late_unregister_is_harmless() {
    let fixture = Fixture::new();
    let hits = AtomicU32::new(0);
    let mut id = fixture.register(
        Some(count),
        &hits as *const _ as *mut c_void,
        UCS_CALLBACKQ_FLAG_ONESHOT,
    );
    assert_eq!(fixture.progress(), 1);
    assert_eq!(fixture.progress(), 0);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // The one-shot already removed itself.
    progress_unregister(fixture.worker, &mut id);
    assert_eq!(id, UCS_CALLBACKQ_ID_NULL);
}

#[test]
fn inline_walks_of_both_layouts_reach_the_same_callbacks() {
    let fixture = Fixture::new();
    let hits = AtomicU32::new(0);
    let arg = &hits as *const AtomicU32 as *mut c_void;
    // Half of them ask for the fast path, which changes nothing but is accepted.
    let ids: Vec<_> = (0..10)
        .map(|i| {
            let flags = if i % 2 == 0 {
                UCS_CALLBACKQ_FLAG_FAST
            } else {
                0
            };
            fixture.register(Some(count), arg, flags)
        })
        .collect();
    assert_eq!(ids.len(), 10);
    // More callbacks than UCS_CALLBACKQ_FAST_COUNT: all still run once per walk.
    assert_eq!(fixture.inline_progress::<MASTER>(), 10);
    assert_eq!(fixture.inline_progress::<V113>(), 10);
    assert_eq!(fixture.progress(), 10);
    assert_eq!(hits.load(Ordering::SeqCst), 30);
}

/// State for callbacks that change the queue while it is being walked.
struct Reentrant {
    worker: uct_worker_h,
    log: Mutex<Vec<&'static str>>,
    victim_id: Mutex<uct_worker_cb_id_t>,
    own_id: Mutex<uct_worker_cb_id_t>,
    added_id: Mutex<uct_worker_cb_id_t>,
}

unsafe extern "C" fn remove_victim_and_self(arg: *mut c_void) -> c_uint {
    // SAFETY: tests pass a live Reentrant.
    let state = unsafe { &*(arg as *const Reentrant) };
    state.log.lock().unwrap().push("remover");
    let mut victim = *state.victim_id.lock().unwrap();
    let mut own = *state.own_id.lock().unwrap();
    progress_unregister(state.worker, &mut victim);
    progress_unregister(state.worker, &mut own);
    *state.victim_id.lock().unwrap() = victim;
    *state.own_id.lock().unwrap() = own;
    // Register a new callback from inside the walk.
    let mut added = UCS_CALLBACKQ_ID_NULL;
    // `state` outlives the registration.
    progress_register(state.worker, Some(added_cb), arg, 0, &mut added);
    *state.added_id.lock().unwrap() = added;
    1
}

/// Logs `name` into the Reentrant behind `arg`.
unsafe fn log_call(arg: *mut c_void, name: &'static str) -> c_uint {
    // SAFETY: tests pass a live Reentrant.
    unsafe { &*(arg as *const Reentrant) }
        .log
        .lock()
        .unwrap()
        .push(name);
    1
}

unsafe extern "C" fn victim_cb(arg: *mut c_void) -> c_uint {
    // SAFETY: the arg of a callback of this test.
    unsafe { log_call(arg, "victim") }
}

unsafe extern "C" fn added_cb(arg: *mut c_void) -> c_uint {
    // SAFETY: the arg of a callback of this test.
    unsafe { log_call(arg, "added") }
}

#[test]
fn callbacks_may_unregister_and_register_during_the_walk() {
    let fixture = Fixture::new();
    let state = Box::new(Reentrant {
        worker: fixture.worker,
        log: Mutex::new(Vec::new()),
        victim_id: Mutex::new(UCS_CALLBACKQ_ID_NULL),
        own_id: Mutex::new(UCS_CALLBACKQ_ID_NULL),
        added_id: Mutex::new(UCS_CALLBACKQ_ID_NULL),
    });
    let arg = &*state as *const Reentrant as *mut c_void;
    *state.own_id.lock().unwrap() = fixture.register(Some(remove_victim_and_self), arg, 0);
    // The victim comes after the remover, so the running walk would reach it.
    *state.victim_id.lock().unwrap() = fixture.register(Some(victim_cb), arg, 0);

    // The walk is done the way a UCX 1.13 binary does it, inline.
    let work = fixture.inline_progress::<V113>();
    assert_eq!(work, 1, "only the remover ran");
    assert_eq!(*state.log.lock().unwrap(), ["remover"]);
    assert_eq!(*state.victim_id.lock().unwrap(), UCS_CALLBACKQ_ID_NULL);
    assert_eq!(*state.own_id.lock().unwrap(), UCS_CALLBACKQ_ID_NULL);
    assert_ne!(*state.added_id.lock().unwrap(), UCS_CALLBACKQ_ID_NULL);

    // Next walk: only the callback added during the previous one.
    assert_eq!(fixture.inline_progress::<MASTER>(), 1);
    assert_eq!(*state.log.lock().unwrap(), ["remover", "added"]);

    let mut added = *state.added_id.lock().unwrap();
    progress_unregister(fixture.worker, &mut added);
    assert_eq!(fixture.progress(), 0);
}

/// Each call unregisters the callback whose id is stored in the slot.
unsafe extern "C" fn unregister_self(arg: *mut c_void) -> c_uint {
    // SAFETY: tests pass a live (worker, id) pair.
    let (worker, id) = unsafe { &mut *(arg as *mut (uct_worker_h, uct_worker_cb_id_t)) };
    progress_unregister(*worker, id);
    1
}

#[test]
fn self_removal_runs_exactly_once() {
    let fixture = Fixture::new();
    let mut slot = Box::new((fixture.worker, UCS_CALLBACKQ_ID_NULL));
    let arg = &mut *slot as *mut (uct_worker_h, uct_worker_cb_id_t) as *mut c_void;
    slot.1 = fixture.register(Some(unregister_self), arg, 0);
    assert_eq!(fixture.progress(), 1);
    assert_eq!(slot.1, UCS_CALLBACKQ_ID_NULL);
    assert_eq!(fixture.progress(), 0);
}

unsafe extern "C" fn bump(arg: *mut c_void) -> c_uint {
    // SAFETY: tests pass a live AtomicUsize.
    unsafe { &*(arg as *const AtomicUsize) }.fetch_add(1, Ordering::SeqCst);
    0
}

#[test]
fn registration_from_another_thread_while_progressing() {
    let fixture = Fixture::new();
    let worker_addr = fixture.worker as usize;
    let hits = Arc::new(AtomicUsize::new(0));
    let registrar = {
        let hits = Arc::clone(&hits);
        std::thread::spawn(move || {
            let worker = worker_addr as uct_worker_h;
            for _ in 0..200 {
                let mut id = UCS_CALLBACKQ_ID_NULL;
                let arg = Arc::as_ptr(&hits) as *mut c_void;
                // The worker outlives this thread (joined below); `hits` is
                // kept alive by the Arc until the end of the test.
                progress_register(worker, Some(bump), arg, 0, &mut id);
                assert_ne!(id, UCS_CALLBACKQ_ID_NULL);
                progress_unregister(worker, &mut id);
                assert_eq!(id, UCS_CALLBACKQ_ID_NULL);
            }
        })
    };
    while !registrar.is_finished() {
        fixture.progress();
    }
    registrar.join().expect("registrar panicked");
    let before = hits.load(Ordering::SeqCst);
    fixture.progress();
    assert_eq!(
        hits.load(Ordering::SeqCst),
        before,
        "every callback was removed"
    );
}
