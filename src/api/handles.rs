//! The objects a C caller holds by handle (memory domains, workers): boxed
//! when created, recognised by a magic number while live, and marked dead
//! before their memory is freed, so that a stale handle is refused.

use crate::abi::*;
use crate::core::worker::Worker;
use crate::ib::md::Md;

pub(crate) trait HeldByHandle {
    type Handle;
    fn handle(&mut self) -> Self::Handle;
    fn mark_dead(&mut self);
}

/// The same two forwards for each type (its own `as_handle`, `invalidate`).
macro_rules! held_by_handle {
    ($($object:ty => $handle:ty),* $(,)?) => {$(
        impl HeldByHandle for $object {
            type Handle = $handle;
            fn handle(&mut self) -> $handle {
                self.as_handle()
            }
            fn mark_dead(&mut self) {
                self.invalidate();
            }
        }
    )*};
}

held_by_handle!(Md => uct_md_h, Worker => uct_worker_h);

/// Gives `object` to the C caller: its handle goes to `*handle_p` and is
/// returned; [`take_back`] frees it.
///
/// # Safety
/// `handle_p` non-NULL and writable.
pub(crate) unsafe fn hand_out<T: HeldByHandle>(
    object: Box<T>,
    handle_p: *mut T::Handle,
) -> T::Handle
where
    T::Handle: Copy,
{
    let handle = Box::leak(object).handle();
    // SAFETY: by the contract.
    unsafe { handle_p.write(handle) };
    handle
}

/// Frees an object given out by [`hand_out`], marking it dead first.
///
/// # Safety
/// `handle` came from `hand_out` for a `T`, is live, and is taken back once.
pub(crate) unsafe fn take_back<T: HeldByHandle, Opaque>(handle: *mut Opaque) {
    // SAFETY: by the contract, a pointer from the Box leaked in hand_out.
    let mut owned = unsafe { Box::from_raw(handle.cast::<T>()) };
    owned.mark_dead();
    drop(owned);
}
