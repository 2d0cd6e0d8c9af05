//! `uct_mem_alloc` with methods that do not apply fails quietly, as UCX's:
//! UCX's libucp tries one method per call (six calls per `ucp_mem_map`), so
//! a failed attempt is not an error of the program.

mod log_capture;

use uct::abi::*;
use uct::api::mem_alloc::uct_mem_alloc;

#[test]
fn a_method_that_does_not_apply_logs_below_warn() {
    let methods = [UCT_ALLOC_METHOD_MD];
    // SAFETY: plain data, all-zero valid.
    let mut params: uct_mem_alloc_params_t = unsafe { std::mem::zeroed() };
    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_NAME as u64;
    params.name = c"quiet".as_ptr();
    // SAFETY: plain data.
    let mut mem: uct_allocated_memory_t = unsafe { std::mem::zeroed() };
    let (status, logs) = log_capture::capture_logs(|| {
        // SAFETY: one method, complete params, writable mem.
        unsafe { uct_mem_alloc(4096, methods.as_ptr(), 1, &params, &mut mem) }
    });
    assert_eq!(status, UCS_ERR_NO_MEMORY);
    assert!(
        !logs.contains("ERROR") && !logs.contains("WARN"),
        "logged above debug: {logs}"
    );
    assert!(logs.contains("no allocation method"), "{logs}");
}
