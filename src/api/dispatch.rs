//! Reaching an iface's operations table from a handle, the way UCX's inline
//! functions do (`iface->ops`, `ep->iface->ops`), plus the NULL checks an
//! exported function can afford; and turning a `Status` into each C return
//! type a slot can have.

use crate::abi::*;
use crate::api::checks::non_null;
use crate::core::iface::BaseIface;

/// `iface->ops`, or `InvalidParam` with a log line for a NULL iface.
///
/// # Safety
/// `iface` must be NULL or a live iface (any transport's: only the public
/// ops table at its start is read).
pub(crate) unsafe fn iface_ops<'a>(
    iface: uct_iface_h,
    function: &str,
) -> Result<&'a uct_iface_ops_t, Status> {
    non_null(iface, function, "iface")?;
    // SAFETY: a live iface starts with its ops table (binary ABI).
    Ok(unsafe { &(*iface).ops })
}

/// `ep->iface->ops`, or `InvalidParam` with a log line for a NULL ep or an ep
/// without an iface.
///
/// # Safety
/// `ep` must be NULL, a live endpoint, or a destroyed one of ours whose
/// iface is still open (its tombstone leads to the dead iface's table).
pub(crate) unsafe fn ep_ops<'a>(
    ep: uct_ep_h,
    function: &str,
) -> Result<&'a uct_iface_ops_t, Status> {
    non_null(ep, function, "ep")?;
    // SAFETY: a live ep starts with its iface pointer (binary ABI).
    let iface = unsafe { (*ep).iface };
    if iface.is_null() {
        tracing::warn!("{function}: ep {ep:p} has no iface");
        return Err(Status::InvalidParam);
    }
    // SAFETY: the ep's iface is live while the ep is.
    unsafe { iface_ops(iface, function) }
}

/// Our base iface behind `iface`, for the entry points that need more than
/// the public ops (v2 queries, AM handlers). `InvalidParam` if it is NULL or
/// not one of ours.
///
/// # Safety
/// `iface` must be NULL or a live iface created by this library.
pub(crate) unsafe fn base_iface<'a>(
    iface: uct_iface_h,
    function: &str,
) -> Result<&'a mut BaseIface, Status> {
    non_null(iface, function, "iface")?;
    // SAFETY: every iface this library creates is a BaseIface at its start
    // (core::iface); the magic check rejects most foreign pointers. It reads
    // through a shared reference first: the dead iface of destroyed eps
    // (core::tombstone) is a shared static and must never be borrowed
    // mutably.
    if !unsafe { &*(iface as *const BaseIface) }.is_valid() {
        tracing::warn!("{function}: {iface:p} is not an open iface of this library");
        return Err(Status::InvalidParam);
    }
    // SAFETY: as above; a valid magic means an open iface of ours.
    Ok(unsafe { &mut *(iface as *mut BaseIface) })
}

/// The base iface of `ep`'s iface; for a destroyed ep (a tombstone, see
/// [`crate::core::tombstone`]) its status, logged like every op on it.
///
/// # Safety
/// `ep` must be NULL, a live endpoint of this library or a destroyed one
/// whose iface is still open.
pub(crate) unsafe fn ep_base_iface<'a>(
    ep: uct_ep_h,
    function: &str,
) -> Result<&'a mut BaseIface, Status> {
    non_null(ep, function, "ep")?;
    // SAFETY: a live ep or a tombstone starts with its iface pointer.
    let iface = unsafe { (*ep).iface };
    if crate::core::tombstone::is_dead_iface(iface) {
        return Err(crate::core::tombstone::destroyed_ep_call(
            function,
            ep as *const std::ffi::c_void,
        ));
    }
    // SAFETY: the ep's iface is live while the ep is.
    unsafe { base_iface(iface, function) }
}

/// How a failure is returned through each C return type of the ops slots
/// (defined with the ops table).
pub(crate) use crate::core::ops::FromStatus;

/// Generates exported functions that call an ops slot exactly like UCX's
/// inline functions do (`<handle>->ops.<slot>(args)`), after a NULL check.
/// `ep` functions reach the table through `ep->iface`.
macro_rules! export_dispatch {
    ($(
        $(#[$doc:meta])*
        fn $name:ident($via:ident $handle:ident : $handle_ty:ty $(, $arg:ident : $ty:ty)*) -> $ret:ty => $slot:ident;
    )*) => {
        $(
            $(#[$doc])*
            ///
            /// # Safety
            /// Same contract as UCX's function of this name: the handle must
            /// be live and every pointer argument valid for the operation.
            #[no_mangle]
            pub unsafe extern "C" fn $name($handle: $handle_ty $(, $arg: $ty)*) -> $ret {
                // SAFETY: the handle is NULL or live by the caller's contract.
                match unsafe { $crate::api::dispatch::$via($handle, stringify!($name)) } {
                    Ok(ops) => match ops.$slot {
                        // SAFETY: the slot has exactly this signature (typed
                        // field) and the arguments are passed through as the
                        // caller gave them, as the inline version does.
                        Some(operation) => unsafe { operation($handle $(, $arg)*) },
                        None => {
                            tracing::debug!("{}: slot {} is empty", stringify!($name), stringify!($slot));
                            <$ret as $crate::api::dispatch::FromStatus>::from_status(Status::Unsupported)
                        }
                    },
                    Err(status) => <$ret as $crate::api::dispatch::FromStatus>::from_status(status),
                }
            }
        )*
    };
}
pub(crate) use export_dispatch;
