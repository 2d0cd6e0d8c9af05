//! The arrays the list queries hand to C (`uct_query_components`,
//! `uct_md_query_tl_resources`): allocated with `calloc` so that their
//! release functions free them with a plain `free`, no length needed.

use std::ffi::c_uint;

use crate::abi::*;

/// Stores in `*array_p` a new C array with one element per item, zeroed and
/// then set by `fill`, and its length in `*count_p`; `NoMemory` with a log
/// line naming `what` when it cannot be allocated.
///
/// # Safety
/// `array_p` and `count_p` non-NULL and writable; all-zero bytes are a valid
/// `T` (a C struct of numbers, arrays and pointers).
pub(crate) unsafe fn hand_out_c_array<T, Item>(
    items: &[Item],
    fill: impl Fn(&mut T, &Item),
    array_p: *mut *mut T,
    count_p: *mut c_uint,
    function: &str,
    what: &str,
) -> Result<(), Status> {
    let count = items.len();
    // Zeroed: padding and unused name bytes reach the caller as zeros, not
    // as stale heap contents. At least one element: calloc(0) may be NULL.
    // SAFETY: calloc has no preconditions; a NULL result is handled.
    let array = unsafe { libc::calloc(count.max(1), std::mem::size_of::<T>()) } as *mut T;
    if array.is_null() {
        tracing::error!("{function}: out of memory for {count} {what}");
        return Err(Status::NoMemory);
    }
    for (index, item) in items.iter().enumerate() {
        // SAFETY: index < count, inside the zeroed allocation, and zeroed
        // memory is a valid T by the contract.
        fill(unsafe { &mut *array.add(index) }, item);
    }
    // SAFETY: both out-pointers are non-NULL and writable by the contract.
    unsafe {
        array_p.write(array);
        count_p.write(count as c_uint);
    }
    Ok(())
}
