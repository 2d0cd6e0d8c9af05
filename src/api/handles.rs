//! The objects a C caller holds by handle (memory domains, workers): boxed
//! when created, recognised by a magic number while live, and marked dead
//! before their memory is freed, so that a stale handle is refused.

use crate::abi::*;
use crate::api::md::md_ref;
use crate::core::worker::{worker_ref, Worker};
use crate::ib::md::Md;

pub(crate) trait HeldByHandle: Sized {
    /// The opaque C type a handle points at.
    type Opaque;
    fn handle(&mut self) -> *mut Self::Opaque;
    fn mark_dead(&mut self);
    /// The live object behind a non-NULL `handle`, or `InvalidParam` with a
    /// log line naming `function`.
    ///
    /// # Safety
    /// `handle` non-NULL and, by the C caller's contract, live.
    unsafe fn live<'a>(handle: *mut Self::Opaque, function: &str) -> Result<&'a Self, Status>;
}

/// The same forwards for each type (its own `as_handle`, `invalidate` and
/// checked lookup).
macro_rules! held_by_handle {
    ($($object:ty => $opaque:ty, $lookup:ident;)*) => {$(
        impl HeldByHandle for $object {
            type Opaque = $opaque;
            fn handle(&mut self) -> *mut $opaque {
                self.as_handle()
            }
            fn mark_dead(&mut self) {
                self.invalidate();
            }
            unsafe fn live<'a>(handle: *mut $opaque, function: &str) -> Result<&'a Self, Status> {
                // SAFETY: forwarded contract.
                unsafe { $lookup(handle, function) }
            }
        }
    )*};
}

held_by_handle! {
    Md => uct_md, md_ref;
    Worker => uct_worker, worker_ref;
}

/// Gives `object` to the C caller: its handle goes to `*handle_p` and is
/// returned; [`release`] frees it.
///
/// # Safety
/// `handle_p` non-NULL and writable.
pub(crate) unsafe fn hand_out<T: HeldByHandle>(
    object: Box<T>,
    handle_p: *mut *mut T::Opaque,
) -> *mut T::Opaque {
    let handle = Box::leak(object).handle();
    // SAFETY: by the contract.
    unsafe { handle_p.write(handle) };
    handle
}

/// Frees the object given out by [`hand_out`] as `handle`, marking it dead
/// first, after `last_look` has seen it. NULL is ignored and a handle that
/// is not live refused (logged by the lookup), as the close calls promise.
///
/// # Safety
/// `handle` NULL or from `hand_out` for a `T`, and released once.
pub(crate) unsafe fn release<T: HeldByHandle>(
    handle: *mut T::Opaque,
    function: &str,
    last_look: impl FnOnce(&T),
) {
    if handle.is_null() {
        return;
    }
    // SAFETY: non-NULL; live by the contract.
    let Ok(live) = (unsafe { T::live(handle, function) }) else {
        return;
    };
    last_look(live);
    // SAFETY: the pointer of the Box leaked in hand_out, live (checked
    // above) and released once by the contract.
    let mut owned = unsafe { Box::from_raw(handle.cast::<T>()) };
    owned.mark_dead();
    drop(owned);
}
