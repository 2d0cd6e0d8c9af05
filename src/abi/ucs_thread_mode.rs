//! `ucs/type/thread_mode.h`: how many threads may use an object at once.

use core::ffi::c_uint;

/// Thread-safety level an object is created with.
pub type ucs_thread_mode_t = c_uint;
/// Only the creating thread uses the object.
pub const UCS_THREAD_MODE_SINGLE: ucs_thread_mode_t = 0;
/// Several threads, but never two at the same time.
pub const UCS_THREAD_MODE_SERIALIZED: ucs_thread_mode_t = 1;
/// Several threads concurrently.
pub const UCS_THREAD_MODE_MULTI: ucs_thread_mode_t = 2;
pub const UCS_THREAD_MODE_LAST: ucs_thread_mode_t = 3;
