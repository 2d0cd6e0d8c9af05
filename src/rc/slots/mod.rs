//! The `uct_iface_ops_t` slots of rc_mlx5 (DESIGN.md §6, `rc/slots/`):
//! thin `extern "C"` wrappers by op group over the ep and iface.
//!
//! - [`args`]: the handle and argument core every slot starts with (ep and
//!   iface handles, C buffers, iov arrays, length limits).
//! - [`am`]: the active messages (short, short iov, bcopy, zcopy).
//! - [`rma`]: put and get (short, bcopy, zcopy).
//! - [`atomic`]: the atomic slots over [`crate::rc::atomic`] (the WQEs).
//! - [`control`]: flush, fence, check, pending; ep create, connect,
//!   destroy; iface close, progress and events.
//! - [`query`]: iface attributes, addresses and reachability.
//! - [`failover`]: the handles of `uct_iface_query_v2`, `uct_ep_query`,
//!   `uct_ep_invalidate`, `uct_ep_failover_enable` and
//!   `uct_ep_outstanding_purge`, over [`crate::rc::failover`].
//!
//! Failover and tokens are in [`crate::rc::failover`]. Each data-path op
//! validates its arguments, then hands one WQE to
//! [`crate::rc::ep::RcEp::ready`] (see `ep.rs` for how to add one).

mod am;
mod args;
mod atomic;
mod control;
mod failover;
mod query;
mod rma;

use self::am::{ep_am_bcopy, ep_am_short, ep_am_short_iov, ep_am_zcopy};
use self::atomic::{
    ep_atomic32_fetch, ep_atomic32_post, ep_atomic64_fetch, ep_atomic64_post, ep_atomic_cswap32,
    ep_atomic_cswap64,
};
use self::control::{
    ep_check, ep_connect_to_ep, ep_connect_to_ep_v2, ep_create, ep_destroy, ep_fence, ep_flush,
    ep_get_address, ep_is_connected, ep_pending_add, ep_pending_purge, iface_close,
    iface_event_arm, iface_event_fd_get, iface_fence, iface_flush, iface_progress,
    iface_progress_disable, iface_progress_enable,
};
use self::failover::{
    ep_failover_enable, ep_invalidate, ep_outstanding_purge, ep_query, iface_query_v2,
};
use self::query::{
    iface_estimate_perf, iface_get_address, iface_get_device_address, iface_is_reachable,
    iface_is_reachable_v2, iface_query,
};
use self::rma::{
    ep_get_bcopy, ep_get_short, ep_get_zcopy, ep_put_bcopy, ep_put_short, ep_put_zcopy,
};
use crate::abi::*;
use crate::core::iface::IfaceInternalOps;
use crate::core::ops::unsupported_iface_ops;
use crate::uct::iface::TRANSPORT_INTERNAL_OPS;

/// The public ops table of an rc_mlx5 iface.
pub fn iface_ops() -> uct_iface_ops_t {
    uct_iface_ops_t {
        ep_put_short: Some(ep_put_short),
        ep_put_bcopy: Some(ep_put_bcopy),
        ep_put_zcopy: Some(ep_put_zcopy),
        ep_get_short: Some(ep_get_short),
        ep_get_bcopy: Some(ep_get_bcopy),
        ep_get_zcopy: Some(ep_get_zcopy),
        ep_am_short: Some(ep_am_short),
        ep_am_short_iov: Some(ep_am_short_iov),
        ep_am_bcopy: Some(ep_am_bcopy),
        ep_am_zcopy: Some(ep_am_zcopy),
        ep_check: Some(ep_check),
        ep_pending_add: Some(ep_pending_add),
        ep_pending_purge: Some(ep_pending_purge),
        ep_flush: Some(ep_flush),
        ep_fence: Some(ep_fence),
        ep_create: Some(ep_create),
        ep_destroy: Some(ep_destroy),
        ep_get_address: Some(ep_get_address),
        ep_connect_to_ep: Some(ep_connect_to_ep),
        iface_flush: Some(iface_flush),
        iface_fence: Some(iface_fence),
        iface_progress_enable: Some(iface_progress_enable),
        iface_progress_disable: Some(iface_progress_disable),
        iface_progress: Some(iface_progress),
        iface_event_fd_get: Some(iface_event_fd_get),
        iface_event_arm: Some(iface_event_arm),
        iface_close: Some(iface_close),
        iface_query: Some(iface_query),
        iface_get_device_address: Some(iface_get_device_address),
        iface_get_address: Some(iface_get_address),
        iface_is_reachable: Some(iface_is_reachable),
        ep_atomic32_post: Some(ep_atomic32_post),
        ep_atomic64_post: Some(ep_atomic64_post),
        ep_atomic32_fetch: Some(ep_atomic32_fetch),
        ep_atomic64_fetch: Some(ep_atomic64_fetch),
        ep_atomic_cswap32: Some(ep_atomic_cswap32),
        ep_atomic_cswap64: Some(ep_atomic_cswap64),
        ..unsupported_iface_ops()
    }
}

/// Operations outside the public table.
pub static INTERNAL_OPS: IfaceInternalOps = IfaceInternalOps {
    iface_query_v2,
    ep_query,
    ep_invalidate,
    ep_failover_enable,
    ep_outstanding_purge,
    iface_is_reachable_v2,
    ep_connect_to_ep_v2,
    ep_is_connected,
    iface_estimate_perf,
    ..TRANSPORT_INTERNAL_OPS
};

/// The handle check of rc ifaces lives with the slot tables it compares
/// against (the iface itself does not know them).
impl crate::rc::iface::RcIface {
    /// Our iface behind `iface`, or `InvalidParam`.
    ///
    /// # Safety
    /// `iface` NULL or an iface of this library.
    pub unsafe fn from_handle<'a>(
        iface: uct_iface_h,
        function: &str,
    ) -> Result<&'a mut crate::rc::iface::RcIface, Status> {
        if iface.is_null() {
            tracing::warn!("{function}: iface is NULL");
            return Err(Status::InvalidParam);
        }
        // SAFETY: non-NULL; every iface of this library starts with a
        // BaseIface (its magic and internal-ops table tell an open rc iface).
        let base = unsafe { &*(iface as *const crate::core::iface::BaseIface) };
        if !base.is_valid() || !std::ptr::eq(base.internal_ops, &INTERNAL_OPS) {
            tracing::warn!("{function}: {iface:p} is not an open rc_mlx5 iface");
            return Err(Status::InvalidParam);
        }
        // SAFETY: an rc iface (checked above) is an RcIface.
        Ok(unsafe { &mut *(iface as *mut crate::rc::iface::RcIface) })
    }
}
