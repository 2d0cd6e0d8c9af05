//! C string helpers for the entry points: reading a caller's `const char *`
//! and filling UCX's fixed-size name arrays.

use std::ffi::c_char;

use crate::abi::*;
use crate::core::c_boundary::{CStrArg, FromC};

/// Reads a NUL-terminated argument as UTF-8; NULL or non-UTF-8 gives
/// `InvalidParam` with a log line.
///
/// # Safety
/// `text` must be NULL or point at a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn c_str_arg<'a>(
    text: *const c_char,
    function: &str,
    argument: &str,
) -> Result<&'a str, Status> {
    // SAFETY: forwarded contract.
    unsafe { CStrArg::from_c(text) }.get(function, argument)
}

/// Copies `text` into a fixed C name array, truncating so that a NUL always
/// fits, and zero-fills the rest (no stale bytes reach the caller).
pub(crate) fn fill_c_array(destination: &mut [c_char], text: &[u8]) {
    destination.fill(0);
    let room = destination.len().saturating_sub(1);
    for (slot, byte) in destination.iter_mut().zip(text.iter().take(room)) {
        *slot = *byte as c_char;
    }
}

/// Reads a fixed C name array back (up to its first NUL).
pub fn c_array_to_string(source: &[c_char]) -> String {
    let bytes: Vec<u8> = source
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
