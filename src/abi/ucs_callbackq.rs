//! `ucs/datastruct/callbackq.h`: the progress callback queue at the start of
//! every worker.
//!
//! Binaries built against UCX's headers walk `fast_elems` inline (calling each
//! `cb` until one is NULL), so its layout is part of the binary ABI.
//!
//! UCX 1.13 differs: its elements are 24 bytes (`cb`, `arg`, `flags`, `id`)
//! and the queue 264. A 1.13 binary reads element 1's `cb` at byte 24, which
//! in this (master) layout is element 1's `arg`. Both walks agree only when
//! element 0 is the single entry and element 1 is all zero, which is how the
//! worker must use the array.

use core::ffi::{c_int, c_uint, c_void};

/// Number of callbacks that fit in the inline array; one more slot holds the
/// NULL terminator.
pub const UCS_CALLBACKQ_FAST_COUNT: usize = 7;
/// A callback id that names no callback.
pub const UCS_CALLBACKQ_ID_NULL: c_int = -1;

// Flags of `uct_worker_progress_register_safe` (UCX's `enum
// ucs_callbackq_flags`; master moved it to `callbackq_compat.h`, which
// `uct.h` includes).
/// A fast-path callback (best effort).
pub const UCS_CALLBACKQ_FLAG_FAST: c_uint = 0x1;
/// Call the callback once, then drop it (not together with FAST).
pub const UCS_CALLBACKQ_FLAG_ONESHOT: c_uint = 0x2;

/// A progress callback: returns how many events it handled.
pub type ucs_callback_t = Option<unsafe extern "C" fn(arg: *mut c_void) -> c_uint>;

/// Key for one-shot callbacks.
pub type ucs_callbackq_key_t = *mut c_void;

/// Selects elements to remove (non-zero = remove).
pub type ucs_callbackq_predicate_t =
    Option<unsafe extern "C" fn(elem: *const ucs_callbackq_elem_t, arg: *mut c_void) -> c_int>;

/// One callback and its argument.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ucs_callbackq_elem {
    pub cb: ucs_callback_t,
    pub arg: *mut c_void,
}
pub type ucs_callbackq_elem_t = ucs_callbackq_elem;

/// The implementation's private state behind a callback queue (opaque).
pub struct ucs_callbackq_priv {
    _opaque: [u8; 0],
}
pub type ucs_callbackq_priv_t = ucs_callbackq_priv;

/// A callback queue: the inline array walked on every progress call, then a
/// pointer to the rest of the state. (`priv` is a Rust keyword, hence
/// `priv_`; the C header spells it `priv`.)
///
/// cbindgen:field-names=[fast_elems, priv]
#[repr(C)]
#[derive(Debug)]
pub struct ucs_callbackq {
    pub fast_elems: [ucs_callbackq_elem_t; 8],
    pub priv_: *mut ucs_callbackq_priv_t,
}
pub type ucs_callbackq_t = ucs_callbackq;
