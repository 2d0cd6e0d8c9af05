//! `ucs_stats_get_root` (`ucs/stats/stats_fwd.h`): statistics are not
//! collected here, so there is no root node (UCX built without statistics
//! answers the same); with UCX's libucs loaded, UCX answers.

use crate::abi::*;
use crate::core::ucx_libucs::return_ucx_call;

/// The root of the statistics tree: NULL (statistics are not collected).
#[no_mangle]
pub extern "C" fn ucs_stats_get_root() -> *mut ucs_stats_node_t {
    return_ucx_call!(ucs_stats_get_root: fn() -> *mut ucs_stats_node_t);
    std::ptr::null_mut()
}
