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
    refuse_mask_bits(field_mask & !known, "has unsupported", function, structure)
}

/// `Err(InvalidParam)` with a log line unless every bit of `required` is set.
pub(crate) fn required_fields(
    field_mask: u64,
    required: u64,
    function: &str,
    structure: &str,
) -> Result<(), Status> {
    refuse_mask_bits(
        required & !field_mask,
        "lacks required",
        function,
        structure,
    )
}

/// `Err(InvalidParam)`, logging `structure.field_mask <problem> bits`, when
/// any of the `offending` bits is set.
fn refuse_mask_bits(
    offending: u64,
    problem: &str,
    function: &str,
    structure: &str,
) -> Result<(), Status> {
    if offending != 0 {
        crate::api::enter();
        tracing::warn!("{function}: {structure}.field_mask {problem} bits 0x{offending:x}");
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

/// The skeleton of an `extern "C"` entry point that returns `ucs_status_t`:
/// logging is set up first (any of them may be the first call a program
/// makes), `$body` is a block of checks and work giving `Result<(), Status>`
/// (`?` returns early from it), and its outcome goes to C through [`finish`].
/// `FUNCTION = "name"` also defines the name the body's log lines use; a
/// bare `FUNCTION` uses a `const FUNCTION` the entry point already has.
macro_rules! status_entry_point {
    ($function:ident = $name:literal, $body:block) => {{
        const $function: &str = $name;
        $crate::api::checks::status_entry_point!($function, $body)
    }};
    ($function:ident, $body:block) => {{
        $crate::api::enter();
        $crate::api::checks::finish($function, (|| $body)())
    }};
}
pub(crate) use status_entry_point;
