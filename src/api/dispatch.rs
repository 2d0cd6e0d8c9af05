//! Reaching an iface's operations table from a handle, the way UCX's inline
//! functions do (`iface->ops`, `ep->iface->ops`), plus the NULL checks an
//! exported function can afford; and turning a `Status` into each C return
//! type a slot can have.

use crate::abi::*;
use crate::api::checks::non_null;

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
