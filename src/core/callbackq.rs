//! The worker's progress queue: callbacks that `uct_worker_progress` calls.
//!
//! Why a private list behind a single dispatcher entry (and not the caller-visible
//! `fast_elems` array itself): binaries built against UCX's headers walk
//! `fast_elems` inline, element by element, until a NULL `cb`. If we inserted and
//! removed entries in that array while such a walk runs (a callback that
//! unregisters itself or another one), the walk could skip an entry, call one
//! twice, or call one whose `arg` the owner has just freed. So the array holds one
//! entry forever — [`ProgressQueue::dispatch`] — and that function walks this
//! list instead. The cost is one extra indirect call per progress.
//!
//! The list is copy-on-write: registration and removal (thread safe, as UCX
//! promises) build a new snapshot under a mutex; a walk takes the lock once to
//! grab the current snapshot and then calls its entries without any lock, so
//! callbacks may register and unregister freely. Removal also clears the
//! entry's `live` flag, which a running walk checks before each call: a
//! removed callback is never called again, even by the walk in progress.
//! Callbacks added during a walk are first called by the next walk.

use std::ffi::{c_uint, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A progress callback as C passes it (`ucs_callback_t`): returns how much work
/// it did (0 = none).
pub type ProgressFn = unsafe extern "C" fn(arg: *mut c_void) -> c_uint;

/// Identifier of a registered callback (`uct_worker_cb_id_t`, a C `int`).
pub type CallbackId = i32;

/// The id that means "no callback" (`UCS_CALLBACKQ_ID_NULL`).
pub const CALLBACK_ID_NULL: CallbackId = -1;

/// How a callback stays in the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifetime {
    /// Called on every progress until removed.
    Persistent,
    /// Called once, then removed by the queue (`UCS_CALLBACKQ_FLAG_ONESHOT`).
    OneShot,
}

struct Entry {
    id: CallbackId,
    func: ProgressFn,
    /// The C argument, kept as an address so the queue is `Send`; the queue
    /// never dereferences it, only hands it back to `func`.
    arg: usize,
    lifetime: Lifetime,
    /// Cleared by removal (or by the walk that consumes a one-shot).
    live: AtomicBool,
}

type Snapshot = Arc<[Arc<Entry>]>;

struct QueueState {
    entries: Snapshot,
    next_id: CallbackId,
}

impl QueueState {
    fn allocate_id(&mut self) -> CallbackId {
        // Ids are small non-negative ints like UCX's; after wrap-around skip
        // any id still in use so an old handle never names a new callback.
        loop {
            let candidate = self.next_id;
            self.next_id = if candidate == CallbackId::MAX {
                0
            } else {
                candidate + 1
            };
            if !self.entries.iter().any(|entry| entry.id == candidate) {
                return candidate;
            }
        }
    }

    /// Replaces the snapshot with the live entries plus `extra`.
    fn rebuild(&mut self, extra: Option<Arc<Entry>>) {
        let entries: Vec<Arc<Entry>> = self
            .entries
            .iter()
            .filter(|entry| entry.live.load(Ordering::SeqCst))
            .cloned()
            .chain(extra)
            .collect();
        self.entries = entries.into();
    }
}

/// A thread-safe list of progress callbacks that may be changed from inside
/// its own callbacks.
pub struct ProgressQueue {
    state: Mutex<QueueState>,
}

impl Default for ProgressQueue {
    fn default() -> Self {
        Self {
            state: Mutex::new(QueueState {
                entries: Arc::new([]),
                next_id: 0,
            }),
        }
    }
}

impl ProgressQueue {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        // A panic while holding the lock aborts the process (panic = "abort"),
        // so a poisoned lock still holds consistent data.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds a callback; it is first called by the next walk that starts after
    /// this returns.
    pub fn add(&self, func: ProgressFn, arg: *mut c_void, lifetime: Lifetime) -> CallbackId {
        let mut state = self.lock();
        let id = state.allocate_id();
        let entry = Arc::new(Entry {
            id,
            func,
            arg: arg as usize,
            lifetime,
            live: AtomicBool::new(true),
        });
        state.rebuild(Some(entry));
        id
    }

    /// Removes a callback. After this returns it is never called again, even by
    /// a walk that is running now. Returns false when no live callback has `id`
    /// (never added, already removed, or a one-shot that already ran).
    pub fn remove(&self, id: CallbackId) -> bool {
        let mut state = self.lock();
        let Some(entry) = state.entries.iter().find(|entry| entry.id == id) else {
            return false;
        };
        let was_live = entry.live.swap(false, Ordering::SeqCst);
        state.rebuild(None);
        was_live
    }

    /// Removes every live callback for which `remove(func, arg)` is true
    /// (`ucs_callbackq_remove_if`); returns how many were removed. The
    /// predicate runs without the lock held, so it may use the queue.
    pub fn remove_if(&self, mut remove: impl FnMut(ProgressFn, *mut c_void) -> bool) -> usize {
        let snapshot = Arc::clone(&self.lock().entries);
        let mut removed = 0;
        for entry in snapshot.iter() {
            if entry.live.load(Ordering::SeqCst)
                && remove(entry.func, entry.arg as *mut c_void)
                && entry.live.swap(false, Ordering::SeqCst)
            {
                removed += 1;
            }
        }
        self.lock().rebuild(None);
        removed
    }

    /// Number of callbacks that would run on the next walk.
    pub fn len(&self) -> usize {
        let state = self.lock();
        state
            .entries
            .iter()
            .filter(|entry| entry.live.load(Ordering::SeqCst))
            .count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls every live callback once, in registration order, and returns the
    /// sum of their results. Callbacks added during the walk wait for the next
    /// one; callbacks removed during the walk are not called.
    pub fn dispatch(&self) -> c_uint {
        let snapshot = Arc::clone(&self.lock().entries);
        let mut work: c_uint = 0;
        let mut consumed_oneshot = false;
        for entry in snapshot.iter() {
            let callable = match entry.lifetime {
                Lifetime::Persistent => entry.live.load(Ordering::SeqCst),
                // Claiming it atomically: only one walk ever calls a one-shot.
                Lifetime::OneShot => entry.live.swap(false, Ordering::SeqCst),
            };
            if !callable {
                continue;
            }
            consumed_oneshot |= entry.lifetime == Lifetime::OneShot;
            // SAFETY: `func` and `arg` were registered together by the
            // caller, who promised (UCX contract) that `func(arg)` is valid
            // until it unregisters; removed entries are skipped above.
            work = work.wrapping_add(unsafe { (entry.func)(entry.arg as *mut c_void) });
        }
        if consumed_oneshot {
            self.lock().rebuild(None);
        }
        work
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    thread_local! {
        static CALLS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    }

    unsafe extern "C" fn record(arg: *mut c_void) -> c_uint {
        CALLS.with(|calls| calls.borrow_mut().push(arg as usize));
        1
    }

    fn take_calls() -> Vec<usize> {
        CALLS.with(|calls| std::mem::take(&mut *calls.borrow_mut()))
    }

    #[test]
    fn calls_in_order_and_sums_work() {
        let queue = ProgressQueue::new();
        let first = queue.add(record, 10 as *mut c_void, Lifetime::Persistent);
        let second = queue.add(record, 20 as *mut c_void, Lifetime::Persistent);
        assert_ne!(first, second);
        assert_eq!(queue.dispatch(), 2);
        assert_eq!(take_calls(), vec![10, 20]);
        assert!(queue.remove(first));
        assert!(!queue.remove(first));
        assert_eq!(queue.dispatch(), 1);
        assert_eq!(take_calls(), vec![20]);
    }

    #[test]
    fn oneshot_runs_once() {
        let queue = ProgressQueue::new();
        let id = queue.add(record, 7 as *mut c_void, Lifetime::OneShot);
        assert_eq!(queue.dispatch(), 1);
        assert_eq!(queue.dispatch(), 0);
        assert_eq!(take_calls(), vec![7]);
        assert!(!queue.remove(id));
        assert!(queue.is_empty());
    }

    #[test]
    fn ids_are_not_reused_while_live() {
        let queue = ProgressQueue::new();
        queue.lock().next_id = CallbackId::MAX;
        let last = queue.add(record, std::ptr::null_mut(), Lifetime::Persistent);
        let wrapped = queue.add(record, std::ptr::null_mut(), Lifetime::Persistent);
        assert_eq!(last, CallbackId::MAX);
        assert_eq!(wrapped, 0);
        queue.lock().next_id = 0;
        let third = queue.add(record, std::ptr::null_mut(), Lifetime::Persistent);
        assert_eq!(third, 1);
        assert_ne!(third, CALLBACK_ID_NULL);
    }
}
