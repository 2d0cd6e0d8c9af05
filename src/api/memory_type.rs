//! `ucs_memory_type_names` / `ucs_memory_type_descs`: the data symbols UCX
//! exports for printing memory types (`uct_hello_world` indexes the first one).
//!
//! Their size and contents are UCX 1.13's (five memory types, `unknown` at
//! index 5, then NULL in the names table): a 1.13-built binary copies them at
//! load time with that size, and UCX's own libraries, when loaded beside us,
//! read whichever definition wins (`crate::core::ucx_libucs`). The memory
//! types master added after ROCm (`crate::abi`, from `UCS_MEMORY_TYPE_RDMA`
//! up) are not in them: use [`memory_type_name`] (or `ucs_memory_type_names`
//! only for types below `UCS_MEMORY_TYPE_RDMA`).

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

/// Memory types UCX 1.13 knows (host, CUDA, CUDA managed, ROCm, ROCm managed).
const UCX_1_13_MEMORY_TYPE_COUNT: usize = 5;
const NAME_COUNT: usize = UCX_1_13_MEMORY_TYPE_COUNT + 2;
const DESC_COUNT: usize = UCX_1_13_MEMORY_TYPE_COUNT + 1;

/// Short names (`host`, `cuda`, …), `unknown` at index 5 (1.13's
/// `UCS_MEMORY_TYPE_LAST`), then NULL.
#[no_mangle]
pub static ucs_memory_type_names: CStringTable<NAME_COUNT> = CStringTable([
    c"host".as_ptr(),
    c"cuda".as_ptr(),
    c"cuda-managed".as_ptr(),
    c"rocm".as_ptr(),
    c"rocm-managed".as_ptr(),
    c"unknown".as_ptr(),
    std::ptr::null(),
]);

/// One-line descriptions, `unknown` at index 5.
#[no_mangle]
pub static ucs_memory_type_descs: CStringTable<DESC_COUNT> = CStringTable([
    c"System memory".as_ptr(),
    c"NVIDIA GPU memory".as_ptr(),
    c"NVIDIA GPU managed/unified memory".as_ptr(),
    c"AMD/ROCm GPU memory".as_ptr(),
    c"AMD/ROCm GPU managed memory".as_ptr(),
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
        for memory_type in 0..UCX_1_13_MEMORY_TYPE_COUNT {
            let ptr = ucs_memory_type_names.0[memory_type];
            // SAFETY: every non-final entry points at a NUL-terminated literal.
            let c_name = unsafe { CStr::from_ptr(ptr) };
            assert_eq!(
                c_name.to_str(),
                Ok(memory_type_name(memory_type as ucs_memory_type_t))
            );
        }
        // SAFETY: as above.
        let unknown = unsafe { CStr::from_ptr(ucs_memory_type_names.0[NAME_COUNT - 2]) };
        assert_eq!(unknown.to_str(), Ok("unknown"));
        assert!(ucs_memory_type_names.0[NAME_COUNT - 1].is_null());
        assert_eq!(memory_type_name(UCS_MEMORY_TYPE_LAST + 5), "unknown");
    }
}
