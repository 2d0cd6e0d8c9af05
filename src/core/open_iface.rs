//! The base iface behind an iface or ep handle argument: what the entry
//! points that need more than the public ops (v2 queries, AM handlers)
//! take from [`IfaceHandle`] and [`EpHandle`]. Apart from the C boundary,
//! which knows no iface of ours.

use crate::abi::*;
use crate::core::c_boundary::{non_null, EpHandle, IfaceHandle};
use crate::core::iface::BaseIface;

/// A handle argument that leads to one of our ifaces.
pub(crate) trait BaseOfHandle {
    /// Our base iface behind the handle, or `InvalidParam` with a log line
    /// if it is NULL or not one of ours (for an ep: its status if it was
    /// destroyed, see [`crate::core::tombstone`]).
    fn base<'a>(self, function: &str) -> Result<&'a mut BaseIface, Status>;
}

impl BaseOfHandle for IfaceHandle {
    fn base<'a>(self, function: &str) -> Result<&'a mut BaseIface, Status> {
        let iface = self.raw();
        non_null(iface, function, "iface")?;
        // SAFETY: non-NULL and live (IfaceHandle's FromC); every iface this
        // library creates is a BaseIface at its start (core::iface), and the
        // magic check rejects most foreign pointers. It reads through a
        // shared reference first: the dead iface of destroyed eps
        // (core::tombstone) is a shared static and must never be borrowed
        // mutably.
        if !unsafe { &*(iface as *const BaseIface) }.is_valid() {
            tracing::warn!("{function}: {iface:p} is not an open iface of this library");
            return Err(Status::InvalidParam);
        }
        // SAFETY: as above; a valid magic means an open iface of ours.
        Ok(unsafe { &mut *(iface as *mut BaseIface) })
    }
}

impl BaseOfHandle for EpHandle {
    fn base<'a>(self, function: &str) -> Result<&'a mut BaseIface, Status> {
        let iface = self.iface_handle(function)?;
        if crate::core::tombstone::is_dead_iface(iface.raw()) {
            return Err(crate::core::destroyed_ep::destroyed_ep_call(
                function,
                self.raw() as *const std::ffi::c_void,
            ));
        }
        iface.base(function)
    }
}
