//! Argument checks shared by the `extern "C"` entry points: each failed check
//! logs one line naming the function and the argument, and yields the status
//! the entry point returns.

pub(crate) use crate::core::c_boundary::{finish, known_fields, non_null, required_fields};

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
