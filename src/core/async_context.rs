//! The asynchronous-event context (`ucs_async_context_t`) a worker is bound to.
//!
//! It records the delivery mode the caller asked for and keeps a list of event
//! handlers that layers above register (an iface polling a completion channel,
//! a timer). [`AsyncContext::poll`] runs them; `ucs_async_poll` calls it, and so
//! does anything that wants pending events handled now. The soft HCA drives its
//! own devices from service threads (DESIGN §4), so nothing here needs a thread
//! of its own yet; the thread modes are accepted and behave like poll mode.

use std::ffi::c_uint;
use std::sync::{Mutex, MutexGuard};

use crate::abi::*;

/// Tag at the start of every context we hand out, so a stale or foreign
/// pointer is caught before it is used as a context.
const ASYNC_CONTEXT_MAGIC: u64 = 0x7563_735f_6173_796e; // "ucs_asyn"

/// An event handler: called with nothing, returns how many events it handled.
pub type AsyncHandler = Box<dyn FnMut() -> c_uint + Send>;

/// Identifies a handler registered with [`AsyncContext::add_handler`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsyncHandlerId(u64);

struct HandlerSlot {
    id: AsyncHandlerId,
    handler: AsyncHandler,
}

#[derive(Default)]
struct Handlers {
    slots: Vec<HandlerSlot>,
    next_id: u64,
}

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
}

#[repr(C)]
pub struct AsyncContext {
    magic: u64,
    mode: AsyncMode,
    handlers: Mutex<Handlers>,
}

impl AsyncContext {
    pub fn new(mode: AsyncMode) -> Self {
        Self {
            magic: ASYNC_CONTEXT_MAGIC,
            mode,
            handlers: Mutex::new(Handlers::default()),
        }
    }

    pub fn mode(&self) -> AsyncMode {
        self.mode
    }

    /// True when this looks like a live context we created.
    pub fn is_valid(&self) -> bool {
        self.magic == ASYNC_CONTEXT_MAGIC
    }

    /// Marks the context dead so a use after destroy is caught while the
    /// memory is still mapped.
    pub fn invalidate(&mut self) {
        self.magic = 0;
    }

    fn lock(&self) -> MutexGuard<'_, Handlers> {
        // Poisoning cannot happen (panic = "abort"); the data stays consistent.
        self.handlers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn add_handler(&self, handler: AsyncHandler) -> AsyncHandlerId {
        let mut handlers = self.lock();
        let id = AsyncHandlerId(handlers.next_id);
        handlers.next_id += 1;
        handlers.slots.push(HandlerSlot { id, handler });
        id
    }

    /// Returns false if `id` is not registered. Must not be called from inside
    /// a handler of the same context (the list is locked while handlers run).
    pub fn remove_handler(&self, id: AsyncHandlerId) -> bool {
        let mut handlers = self.lock();
        let before = handlers.slots.len();
        handlers.slots.retain(|slot| slot.id != id);
        handlers.slots.len() != before
    }

    pub fn handler_count(&self) -> usize {
        self.lock().slots.len()
    }

    /// Runs every handler once; returns the number of events they handled.
    pub fn poll(&self) -> c_uint {
        let mut handlers = self.lock();
        handlers.slots.iter_mut().fold(0, |events: c_uint, slot| {
            events.wrapping_add((slot.handler)())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    #[test]
    fn handlers_run_on_poll_until_removed() {
        let context = AsyncContext::new(AsyncMode::Poll);
        let hits = Arc::new(AtomicU32::new(0));
        let counter = Arc::clone(&hits);
        let id = context.add_handler(Box::new(move || {
            counter.fetch_add(1, Ordering::Relaxed);
            2
        }));
        assert_eq!(context.poll(), 2);
        assert_eq!(hits.load(Ordering::Relaxed), 1);
        assert!(context.remove_handler(id));
        assert!(!context.remove_handler(id));
        assert_eq!(context.poll(), 0);
        assert_eq!(hits.load(Ordering::Relaxed), 1);
    }

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
}
