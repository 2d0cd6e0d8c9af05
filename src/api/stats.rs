//! `ucs_stats_get_root` (`ucs/stats/stats_fwd.h`): statistics are not
//! collected here, so there is no root node (UCX built without statistics
//! answers the same); with UCX's libucs loaded, UCX answers.

use crate::abi::*;
use crate::core::ucx_libucs::ucx_function;

/// The root of the statistics tree: NULL (statistics are not collected).
#[no_mangle]
pub extern "C" fn ucs_stats_get_root() -> *mut ucs_stats_node_t {
    if let Some(ucx) = ucx_function!(ucs_stats_get_root: fn() -> *mut ucs_stats_node_t) {
        // SAFETY: UCX's function, no arguments.
        return unsafe { ucx() };
    }
    std::ptr::null_mut()
}
