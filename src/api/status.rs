//! `ucs_status_string`: the text of a status code.
//!
//! The texts are the ones UCX prints (callers show them to users and scripts
//! match on them), so they must stay word for word. Codes UCX does not name
//! get `Unknown error <code>` like UCX, from a table built once, so the
//! returned pointer is never NULL, never changes and is safe to use from any
//! thread (UCX formats into one shared buffer instead).

use std::ffi::{c_char, CStr, CString};
use std::sync::OnceLock;

use crate::abi::*;

/// UCX's message for a named status code, `None` for codes UCX does not name.
pub fn status_message(status: ucs_status_t) -> Option<&'static CStr> {
    let text: &'static CStr = match status {
        UCS_OK => c"Success",
        UCS_INPROGRESS => c"Operation in progress",
        UCS_ERR_NO_MESSAGE => c"No pending message",
        UCS_ERR_NO_RESOURCE => c"No resources are available to initiate the operation",
        UCS_ERR_IO_ERROR => c"Input/output error",
        UCS_ERR_NO_MEMORY => c"Out of memory",
        UCS_ERR_INVALID_PARAM => c"Invalid parameter",
        UCS_ERR_UNREACHABLE => c"Destination is unreachable",
        UCS_ERR_INVALID_ADDR => c"Address not valid",
        UCS_ERR_NOT_IMPLEMENTED => c"Function not implemented",
        UCS_ERR_MESSAGE_TRUNCATED => c"Message truncated",
        UCS_ERR_NO_PROGRESS => c"No progress",
        UCS_ERR_BUFFER_TOO_SMALL => c"Provided buffer is too small",
        UCS_ERR_NO_ELEM => c"No such element",
        UCS_ERR_SOME_CONNECTS_FAILED => c"Failed to connect some of the requested endpoints",
        UCS_ERR_NO_DEVICE => c"No such device",
        UCS_ERR_BUSY => c"Device is busy",
        UCS_ERR_CANCELED => c"Request canceled",
        UCS_ERR_SHMEM_SEGMENT => c"Shared memory error",
        UCS_ERR_ALREADY_EXISTS => c"Element already exists",
        UCS_ERR_OUT_OF_RANGE => c"Index out of range",
        UCS_ERR_TIMED_OUT => c"Operation timed out",
        UCS_ERR_EXCEEDS_LIMIT => c"User-defined limit was reached",
        UCS_ERR_UNSUPPORTED => c"Unsupported operation",
        UCS_ERR_REJECTED => c"Operation rejected by remote peer",
        UCS_ERR_NOT_CONNECTED => c"Endpoint is not connected",
        UCS_ERR_CONNECTION_RESET => c"Connection reset by remote peer",
        UCS_ERR_ENDPOINT_TIMEOUT => c"Endpoint timeout",
        _ => return None,
    };
    Some(text)
}

/// `Unknown error <code>` for each of the 256 possible codes, built on first use.
fn unknown_status_texts() -> &'static [CString] {
    static TEXTS: OnceLock<Vec<CString>> = OnceLock::new();
    TEXTS.get_or_init(|| {
        (i8::MIN..=i8::MAX)
            .map(|code| {
                // A formatted integer never contains a NUL byte.
                CString::new(format!("Unknown error {code}")).unwrap_or_default()
            })
            .collect()
    })
}

/// The text of `status` as a Rust string (for log lines).
pub fn status_text(status: ucs_status_t) -> &'static CStr {
    status_message(status).unwrap_or_else(|| {
        let index = (i16::from(status) - i16::from(i8::MIN)) as usize;
        unknown_status_texts()[index].as_c_str()
    })
}

/// Returns UCX's text for `status`; never NULL. With UCX's libucs loaded,
/// its own function answers (`crate::core::ucx_libucs`).
#[no_mangle]
pub extern "C" fn ucs_status_string(status: ucs_status_t) -> *const c_char {
    if let Some(ucx) =
        crate::core::ucx_libucs::ucx_function!(ucs_status_string: fn(ucs_status_t) -> *const c_char)
    {
        // SAFETY: UCX's function, same argument as ours.
        return unsafe { ucx(status) };
    }
    status_text(status).as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_status_has_a_message() {
        for status in Status::ALL {
            assert!(status_message(status.raw()).is_some(), "{status}");
        }
        assert_eq!(status_text(UCS_OK).to_str(), Ok("Success"));
    }

    #[test]
    fn unknown_codes_are_formatted_like_ucx() {
        assert_eq!(status_text(-37).to_str(), Ok("Unknown error -37"));
        assert_eq!(status_text(i8::MIN).to_str(), Ok("Unknown error -128"));
        assert_eq!(status_text(i8::MAX).to_str(), Ok("Unknown error 127"));
        assert_eq!(status_text(2).to_str(), Ok("Unknown error 2"));
    }
}
