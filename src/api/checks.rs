//! Argument checks shared by the `extern "C"` entry points: each failed check
//! logs one line naming the function and the argument, and yields the status
//! the entry point returns.

use crate::abi::*;

/// `Err(InvalidParam)` with a log line when `ptr` is NULL.
pub(crate) fn non_null<T>(ptr: *const T, function: &str, argument: &str) -> Result<(), Status> {
    if ptr.is_null() {
        crate::api::enter();
        tracing::warn!("{function}: {argument} is NULL");
        return Err(Status::InvalidParam);
    }
    Ok(())
}

/// `Err(InvalidParam)` with a log line when `field_mask` has bits outside
/// `known`: a caller asking for a field we do not know would otherwise get
/// garbage back silently.
pub(crate) fn known_fields(
    field_mask: u64,
    known: u64,
    function: &str,
    structure: &str,
) -> Result<(), Status> {
    let unknown = field_mask & !known;
    if unknown != 0 {
        crate::api::enter();
        tracing::warn!("{function}: {structure}.field_mask has unsupported bits 0x{unknown:x}");
        return Err(Status::InvalidParam);
    }
    Ok(())
}

/// `UCS_OK` or the error's code, logging at debug level which call failed.
pub(crate) fn finish(function: &str, result: Result<(), Status>) -> ucs_status_t {
    match result {
        Ok(()) => UCS_OK,
        Err(status) => {
            tracing::debug!("{function}: returning {status}");
            status.raw()
        }
    }
}
