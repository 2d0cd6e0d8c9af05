//! `ucs_memory_type_names` / `ucs_memory_type_descs`: the data symbols UCX
//! exports for printing memory types (`uct_hello_world` indexes the first one).
//!
//! The tables follow master's memory types (the ones `crate::abi` declares);
//! index `UCS_MEMORY_TYPE_LAST` is "unknown" and a NULL ends the names table,
//! as in UCX. A binary built against UCX 1.13 (5 memory types) sees the same
//! names for its types 0..=4.

use std::ffi::c_char;

use crate::abi::*;

/// An array of C string pointers that C code reads as `const char *x[]`.
/// `repr(transparent)` keeps the array's layout; the wrapper only exists so
/// the static can be `Sync`.
#[repr(transparent)]
pub struct CStringTable<const N: usize>(pub [*const c_char; N]);

// SAFETY: every pointer in a table points at a `'static` string literal that
// is never written, so sharing the table between threads is sound.
unsafe impl<const N: usize> Sync for CStringTable<N> {}

const NAME_COUNT: usize = UCS_MEMORY_TYPE_LAST as usize + 2;
const DESC_COUNT: usize = UCS_MEMORY_TYPE_LAST as usize + 1;

/// Short names (`host`, `cuda`, …), `unknown` at `UCS_MEMORY_TYPE_LAST`,
/// then NULL.
#[no_mangle]
pub static ucs_memory_type_names: CStringTable<NAME_COUNT> = CStringTable([
    c"host".as_ptr(),
    c"cuda".as_ptr(),
    c"cuda-managed".as_ptr(),
    c"rocm".as_ptr(),
    c"rocm-managed".as_ptr(),
    c"rdma".as_ptr(),
    c"ze-host".as_ptr(),
    c"ze-device".as_ptr(),
    c"ze-managed".as_ptr(),
    c"gaudi".as_ptr(),
    c"unknown".as_ptr(),
    std::ptr::null(),
]);

/// One-line descriptions, `unknown` at `UCS_MEMORY_TYPE_LAST`.
#[no_mangle]
pub static ucs_memory_type_descs: CStringTable<DESC_COUNT> = CStringTable([
    c"System memory".as_ptr(),
    c"NVIDIA GPU memory".as_ptr(),
    c"NVIDIA GPU managed/unified memory".as_ptr(),
    c"AMD/ROCm GPU memory".as_ptr(),
    c"AMD/ROCm GPU managed memory".as_ptr(),
    c"RDMA device memory".as_ptr(),
    c"Intel/Ze USM host memory".as_ptr(),
    c"Intel/Ze GPU memory".as_ptr(),
    c"Intel/Ze GPU managed memory".as_ptr(),
    c"HabanaLabs Gaudi memory".as_ptr(),
    c"unknown".as_ptr(),
]);

/// The name of `memory_type` for log lines; "unknown" for out-of-range values.
pub fn memory_type_name(memory_type: ucs_memory_type_t) -> &'static str {
    const NAMES: [&str; UCS_MEMORY_TYPE_LAST as usize] = [
        "host",
        "cuda",
        "cuda-managed",
        "rocm",
        "rocm-managed",
        "rdma",
        "ze-host",
        "ze-device",
        "ze-managed",
        "gaudi",
    ];
    NAMES
        .get(memory_type as usize)
        .copied()
        .unwrap_or("unknown")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn c_table_matches_rust_names() {
        for memory_type in 0..=UCS_MEMORY_TYPE_LAST {
            let ptr = ucs_memory_type_names.0[memory_type as usize];
            // SAFETY: every non-final entry points at a NUL-terminated literal.
            let c_name = unsafe { CStr::from_ptr(ptr) };
            assert_eq!(c_name.to_str(), Ok(memory_type_name(memory_type)));
        }
        assert!(ucs_memory_type_names.0[NAME_COUNT - 1].is_null());
        assert_eq!(memory_type_name(UCS_MEMORY_TYPE_LAST + 5), "unknown");
    }
}
