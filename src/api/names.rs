//! Name tables UCX exports as data, with UCX 1.13's sizes and contents: a
//! binary built against 1.13 copies each of them at load time (copy
//! relocation) with the size it was built with, and UCX's own libraries read
//! whichever definition wins (`crate::core::ucx_libucs`). Each ends like
//! UCX's: a NULL after the last name where UCX has one.

use std::ffi::c_char;

use crate::abi::*;
use crate::api::memory_type::CStringTable;

/// `uct_device_type_t` names, indexed by the device type.
#[no_mangle]
pub static uct_device_type_names: CStringTable<{ UCT_DEVICE_TYPE_LAST as usize }> = CStringTable([
    c"network".as_ptr(),
    c"intra-node".as_ptr(),
    c"accelerator".as_ptr(),
    c"loopback".as_ptr(),
]);

/// `uct_alloc_method_t` names, indexed by the method, then NULL.
#[no_mangle]
pub static uct_alloc_method_names: CStringTable<{ UCT_ALLOC_METHOD_LAST as usize + 1 }> =
    CStringTable([
        c"thp".as_ptr(),
        c"md".as_ptr(),
        c"heap".as_ptr(),
        c"mmap".as_ptr(),
        c"huge".as_ptr(),
        std::ptr::null::<c_char>(),
    ]);

/// `ucs_thread_mode_t` names, indexed by the mode.
#[no_mangle]
pub static ucs_thread_mode_names: CStringTable<{ UCS_THREAD_MODE_LAST as usize }> = CStringTable([
    c"single".as_ptr(),
    c"serialized".as_ptr(),
    c"multi".as_ptr(),
]);

/// Statistics output formats (`ucs_stats_formats_t`), then NULL.
#[no_mangle]
pub static ucs_stats_formats_names: CStringTable<4> = CStringTable([
    c"full".as_ptr(),
    c"agg".as_ptr(),
    c"summary".as_ptr(),
    std::ptr::null::<c_char>(),
]);

/// `uct_ep_operation_t` names, indexed by the operation, then NULL: UCX
/// 1.13's (and 1.22's) table, which ends before `UCT_EP_OP_FLUSH` (its index
/// holds the NULL).
#[no_mangle]
pub static uct_ep_operation_names: CStringTable<{ UCT_EP_OP_FLUSH as usize + 1 }> = CStringTable([
    c"am_short".as_ptr(),
    c"am_bcopy".as_ptr(),
    c"am_zcopy".as_ptr(),
    c"put_short".as_ptr(),
    c"put_bcopy".as_ptr(),
    c"put_zcopy".as_ptr(),
    c"get_short".as_ptr(),
    c"get_bcopy".as_ptr(),
    c"get_zcopy".as_ptr(),
    c"eager_short".as_ptr(),
    c"eager_bcopy".as_ptr(),
    c"eager_zcopy".as_ptr(),
    c"rndv_zcopy".as_ptr(),
    c"atomic_post".as_ptr(),
    c"atomic_fetch".as_ptr(),
    std::ptr::null::<c_char>(),
]);
