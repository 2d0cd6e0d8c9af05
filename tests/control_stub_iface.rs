//! Stub interfaces (`UCT_IFACE_OPEN_MODE_STUB`), as UCX 1.22's `libucp` opens
//! one under each proxy endpoint: no md, no worker, every internal operation
//! answers the status given at open.

use std::ptr::{null, null_mut};

use uct::abi::*;
use uct::api::iface::{uct_iface_close, uct_iface_open};
use uct::api::v2::{uct_ep_invalidate, uct_iface_estimate_perf, uct_iface_query_v2};

fn stub_params(status: ucs_status_t) -> uct_iface_params_t {
    // SAFETY: plain data, all-zero valid.
    let mut params: uct_iface_params_t = unsafe { std::mem::zeroed() };
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE;
    params.open_mode = UCT_IFACE_OPEN_MODE_STUB;
    params.mode.stub = uct_iface_params_mode_stub { status };
    params
}

#[test]
fn a_stub_iface_answers_its_status() {
    let params = stub_params(UCS_ERR_NO_RESOURCE);
    let mut iface: uct_iface_h = null_mut();
    // SAFETY: stub mode needs no md or worker; the rest are valid locals.
    unsafe {
        assert_eq!(
            uct_iface_open(null_mut(), null_mut(), &params, null(), &mut iface),
            UCS_OK
        );
        assert!(!iface.is_null());
        // SAFETY: plain data.
        let mut perf: uct_perf_attr_t = std::mem::zeroed();
        perf.field_mask = UCT_PERF_ATTR_FIELD_LATENCY;
        assert_eq!(
            uct_iface_estimate_perf(iface, &mut perf),
            UCS_ERR_NO_RESOURCE
        );
        // An ep of the stub iface (what UCP's proxy ep is to us).
        let mut ep = uct_ep { iface };
        assert_eq!(
            uct_ep_invalidate((&mut ep as *mut uct_ep).cast(), null()),
            UCS_ERR_NO_RESOURCE
        );
        let mut attr: uct_iface_attr_v2_t = std::mem::zeroed();
        attr.field_mask = UCT_IFACE_ATTR_FIELD_CAP_FLAGS;
        attr.cap.flags = u64::MAX;
        assert_eq!(uct_iface_query_v2(iface, &mut attr), UCS_OK);
        assert_eq!(attr.cap.flags, 0);
        uct_iface_close(iface);
    }
}

#[test]
fn without_stub_mode_md_and_worker_are_required() {
    // SAFETY: plain data.
    let mut params: uct_iface_params_t = unsafe { std::mem::zeroed() };
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE;
    params.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
    let mut iface: uct_iface_h = null_mut();
    // SAFETY: NULL handles are refused before use.
    let status = unsafe { uct_iface_open(null_mut(), null_mut(), &params, null(), &mut iface) };
    assert_eq!(status, UCS_ERR_INVALID_PARAM);
    assert!(iface.is_null());
}
