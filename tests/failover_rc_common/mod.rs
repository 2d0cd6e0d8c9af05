//! Token exchange and purge through the C API, shared by the rc failover
//! tests (the ifaces and eps come from `rc_common`).
#![allow(dead_code)]

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use uct::abi::*;
use uct::api::v2::*;

/// `uct_iface_query_v2` for the capability flags and token lengths.
pub fn token_caps(iface: uct_iface_h) -> (u64, usize, usize) {
    // SAFETY: all-zero is a valid attr; only masked fields are written.
    let mut attr: uct_iface_attr_v2_t = unsafe { std::mem::zeroed() };
    attr.field_mask = UCT_IFACE_ATTR_FIELD_CAP_FLAGS
        | UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH
        | UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH;
    // SAFETY: live iface, valid attr.
    assert_eq!(unsafe { uct_iface_query_v2(iface, &mut attr) }, UCS_OK);
    (attr.cap.flags, attr.tx_token_length, attr.rx_token_length)
}

/// The sender ep's TX token (`uct_ep_query`).
pub fn tx_token(ep: uct_ep_h, length: usize) -> Result<Vec<u8>, ucs_status_t> {
    let mut token = vec![0u8; length];
    // SAFETY: all-zero is a valid attr.
    let mut attr: uct_ep_attr_t = unsafe { std::mem::zeroed() };
    attr.field_mask = UCT_EP_ATTR_FIELD_TX_TOKEN;
    attr.tx_token = token.as_mut_ptr().cast();
    // SAFETY: live ep; the buffer holds the TX token length.
    match unsafe { uct_ep_query(ep, &mut attr) } {
        UCS_OK => Ok(token),
        status => Err(status),
    }
}

/// The receiving iface's RX token for a peer's TX token.
pub fn rx_token(iface: uct_iface_h, tx: &[u8], length: usize) -> Result<Vec<u8>, ucs_status_t> {
    let mut token = vec![0u8; length];
    // SAFETY: all-zero is a valid attr.
    let mut attr: uct_iface_attr_v2_t = unsafe { std::mem::zeroed() };
    attr.field_mask = UCT_IFACE_ATTR_FIELD_TX_TOKEN | UCT_IFACE_ATTR_FIELD_RX_TOKEN;
    attr.tx_token = tx.as_ptr().cast();
    attr.rx_token = token.as_mut_ptr().cast();
    // SAFETY: live iface; buffers of the advertised lengths.
    match unsafe { uct_iface_query_v2(iface, &mut attr) } {
        UCS_OK => Ok(token),
        status => Err(status),
    }
}

/// `uct_ep_invalidate` with `flags`.
pub fn invalidate(ep: uct_ep_h, flags: u32) -> ucs_status_t {
    let params = uct_ep_invalidate_params_t {
        field_mask: UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS,
        flags,
    };
    // SAFETY: live ep, valid params.
    unsafe { uct_ep_invalidate(ep, &params) }
}

/// `uct_ep_outstanding_purge` with all three fields.
pub fn purge(
    ep: uct_ep_h,
    rx: &[u8],
    cb: unsafe extern "C" fn(*const uct_ep_op_info_t, *mut c_void),
    arg: *mut c_void,
) -> ucs_status_t {
    let params = uct_ep_outstanding_purge_params_t {
        field_mask: UCT_EP_OUTSTANDING_FIELD_RX_TOKEN
            | UCT_EP_OUTSTANDING_FIELD_CB
            | UCT_EP_OUTSTANDING_FIELD_ARG,
        rx_token: rx.as_ptr().cast(),
        cb: Some(cb),
        arg,
    };
    // SAFETY: live ep, valid params.
    unsafe { uct_ep_outstanding_purge(ep, &params) }
}

/// Purge parameters as a caller could get them wrong.
pub fn purge_raw(ep: uct_ep_h, params: &uct_ep_outstanding_purge_params_t) -> ucs_status_t {
    // SAFETY: live ep, params valid per its mask.
    unsafe { uct_ep_outstanding_purge(ep, params) }
}

pub fn null_rx() -> *const c_void {
    null()
}

pub fn null_arg() -> *mut c_void {
    null_mut()
}
