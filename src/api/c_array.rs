//! The arrays the list queries hand to C (`uct_query_components`,
//! `uct_md_query_tl_resources`): allocated with `calloc` so that their
//! release functions free them with a plain `free`, no length needed.

use std::ffi::{c_uint, c_void};

use crate::abi::*;
use crate::core::c_boundary::{FromC, Out};

/// A C type for which all-zero bytes are a valid value (a struct of
/// numbers, arrays and pointers).
///
/// # Safety
/// Implement only for such types.
pub(crate) unsafe trait ZeroValid {}

// SAFETY: a C struct of numbers and char arrays.
unsafe impl ZeroValid for uct_tl_resource_desc_t {}
// SAFETY: a raw pointer (all-zero is NULL).
unsafe impl ZeroValid for uct_component_h {}

/// Stores in `array_p` a new C array with one element per item, zeroed and
/// then set by `fill`, and its length in `count_p`; `InvalidParam` for a
/// NULL out-pointer and `NoMemory` when it cannot be allocated, each with a
/// log line (naming `what`).
pub(crate) fn hand_out_c_array<T: ZeroValid, Item>(
    items: &[Item],
    fill: impl Fn(&mut T, &Item),
    array_p: Out<*mut T>,
    count_p: Out<c_uint>,
    (function, array_name, count_name): (&str, &str, &str),
    what: &str,
) -> Result<(), Status> {
    array_p.check(function, array_name)?;
    count_p.check(function, count_name)?;
    let count = items.len();
    // Zeroed: padding and unused name bytes reach the caller as zeros, not
    // as stale heap contents. At least one element: calloc(0) may be NULL.
    // SAFETY: calloc has no preconditions; a NULL result is handled.
    let array = unsafe { libc::calloc(count.max(1), std::mem::size_of::<T>()) } as *mut T;
    if array.is_null() {
        tracing::error!("{function}: out of memory for {count} {what}");
        return Err(Status::NoMemory);
    }
    // SAFETY: a zeroed allocation of `count` (or one) T, and zeroed memory
    // is a valid T (ZeroValid).
    let elements = unsafe { std::slice::from_raw_parts_mut(array, count) };
    for (element, item) in elements.iter_mut().zip(items) {
        fill(element, item);
    }
    array_p.write(function, array_name, array)?;
    count_p.write(function, count_name, count as c_uint)
}

/// An array argument to a release function: NULL or from
/// [`hand_out_c_array`], not released yet and not used afterwards.
pub(crate) struct HandedOutArray<T>(*mut T);

impl<T> FromC<*mut T> for HandedOutArray<T> {
    /// Relies on: NULL or from `hand_out_c_array`, released once.
    unsafe fn from_c(array: *mut T) -> Self {
        HandedOutArray(array)
    }
}

impl<T> HandedOutArray<T> {
    /// Frees the array (nothing for NULL).
    pub(crate) fn free(self) {
        // SAFETY: NULL or calloc'ed by hand_out_c_array, freed once (FromC).
        unsafe { libc::free(self.0 as *mut c_void) };
    }
}
