//! The objects a C caller holds by handle (memory domains, workers): boxed
//! when created, recognised by a magic number while live, and marked dead
//! before their memory is freed, so that a stale handle is refused.

use crate::abi::*;
use crate::core::c_boundary::{ByHandle, Closing, Out, ReleasedByHandle};
use crate::core::worker::Worker;
use crate::ib::md::Md;

pub(crate) trait HeldByHandle: ByHandle<Raw = *mut Self::Opaque> {
    /// The opaque C type a handle points at.
    type Opaque;
    fn handle(&mut self) -> *mut Self::Opaque;
}

impl HeldByHandle for Md {
    type Opaque = uct_md;
    fn handle(&mut self) -> *mut uct_md {
        self.as_handle()
    }
}

impl HeldByHandle for Worker {
    type Opaque = declared::uct_worker;
    fn handle(&mut self) -> *mut declared::uct_worker {
        self.as_handle()
    }
}

/// Gives `object` to the C caller: its handle goes to `handle_p` and is
/// returned; [`release`] frees it. A NULL `handle_p` is refused (logged)
/// before anything is leaked.
pub(crate) fn hand_out<T: HeldByHandle>(
    object: impl FnOnce() -> Box<T>,
    handle_p: Out<*mut T::Opaque>,
    function: &str,
    what: &str,
) -> Result<*mut T::Opaque, Status> {
    handle_p.check(function, what)?;
    let handle = Box::leak(object()).handle();
    handle_p.write(function, what, handle)?;
    Ok(handle)
}

/// Frees the object given out by [`hand_out`], after `last_look` has seen
/// it. NULL is ignored and a handle that is not live refused (logged by the
/// lookup), as the close calls promise.
pub(crate) fn release<T: HeldByHandle + ReleasedByHandle>(
    handle: Closing<T>,
    function: &str,
    last_look: impl FnOnce(&T),
) {
    if handle.raw().is_null() {
        return;
    }
    handle.release_with(function, last_look);
}
