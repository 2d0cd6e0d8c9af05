//! Exported functions that reach an iface's operations table from a handle,
//! the way UCX's inline functions do (`iface->ops`, `ep->iface->ops`, through
//! [`crate::core::c_boundary::IfaceHandle::ops`] and `EpHandle::ops`), with
//! the NULL checks an exported function can afford; and turning a `Status`
//! into each C return type a slot can have.

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
                // SAFETY: the handle is NULL or live by the caller's contract
                // (what FromC requires).
                let handle = unsafe {
                    <$crate::core::c_boundary::$via as $crate::core::c_boundary::FromC<_>>::from_c($handle)
                };
                match handle.ops(stringify!($name)) {
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
