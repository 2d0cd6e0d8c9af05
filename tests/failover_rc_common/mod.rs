//! Token exchange and purge through the C API, shared by the rc failover
//! tests (the ifaces and eps come from `rc_common`).
#![allow(dead_code)]

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use uct::abi::*;

// The safe layer over the C API: every test that uses this module has
// `uct_safe` at its root (rc_common's, or its own).
use crate::uct_safe::{ep_invalidate, ep_query, iface_query_v2, outstanding_purge, zeroed};

/// `uct_iface_query_v2` for the capability flags and token lengths.
pub fn token_caps(iface: uct_iface_h) -> (u64, usize, usize) {
    let mut attr: uct_iface_attr_v2_t = zeroed();
    attr.field_mask = UCT_IFACE_ATTR_FIELD_CAP_FLAGS
        | UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH
        | UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH;
    assert_eq!(iface_query_v2(iface, &mut attr), UCS_OK);
    (attr.cap.flags, attr.tx_token_length, attr.rx_token_length)
}

/// The sender ep's TX token (`uct_ep_query`).
pub fn tx_token(ep: uct_ep_h, length: usize) -> Result<Vec<u8>, ucs_status_t> {
    let mut token = vec![0u8; length];
    let mut attr: uct_ep_attr_t = zeroed();
    attr.field_mask = UCT_EP_ATTR_FIELD_TX_TOKEN;
    // The buffer holds the TX token length.
    attr.tx_token = token.as_mut_ptr().cast();
    match ep_query(ep, &mut attr) {
        UCS_OK => Ok(token),
        status => Err(status),
    }
}

/// The receiving iface's RX token for a peer's TX token.
pub fn rx_token(iface: uct_iface_h, tx: &[u8], length: usize) -> Result<Vec<u8>, ucs_status_t> {
    let mut token = vec![0u8; length];
    let mut attr: uct_iface_attr_v2_t = zeroed();
    attr.field_mask = UCT_IFACE_ATTR_FIELD_TX_TOKEN | UCT_IFACE_ATTR_FIELD_RX_TOKEN;
    // Buffers of the advertised lengths.
    attr.tx_token = tx.as_ptr().cast();
    attr.rx_token = token.as_mut_ptr().cast();
    match iface_query_v2(iface, &mut attr) {
        UCS_OK => Ok(token),
        status => Err(status),
    }
}

/// The RX token `peer_iface` derives from `ep`'s TX token (token lengths
/// from `own_iface`, the iface of `ep`).
pub fn exchange_tokens(ep: uct_ep_h, own_iface: uct_iface_h, peer_iface: uct_iface_h) -> Vec<u8> {
    let (_, tx_len, rx_len) = token_caps(own_iface);
    let tx = tx_token(ep, tx_len).expect("tx token");
    rx_token(peer_iface, &tx, rx_len).expect("rx token")
}

/// `uct_ep_invalidate` with `flags`.
pub fn invalidate(ep: uct_ep_h, flags: u32) -> ucs_status_t {
    let params = uct_ep_invalidate_params_t {
        field_mask: UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS,
        flags,
    };
    ep_invalidate(ep, Some(&params))
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
    outstanding_purge(ep, Some(&params))
}

/// Calls the closure behind `arg` with one purged op.
unsafe extern "C" fn call_recorder<F: FnMut(&uct_ep_op_info_t)>(
    info: *const uct_ep_op_info_t,
    arg: *mut c_void,
) {
    // SAFETY: `arg` is the `F` of fail_over_purge, alive during the purge;
    // `info` is valid during the call.
    unsafe { (*(arg as *mut F))(&*info) }
}

/// The fail-over sequence of a user whose rail failed, each step asserted
/// to succeed: `uct_ep_invalidate(ep)` without completions, the TX token of
/// `ep`, the RX token the peer's iface `peer_iface` makes of it, and the
/// purge, which hands each outstanding op to `record`. Returns what
/// `record` made of them, in purge order. (Both ifaces are rc_mlx5, so the
/// peer's token lengths are the sender's too.)
pub fn fail_over_purge<T>(
    ep: uct_ep_h,
    peer_iface: uct_iface_h,
    mut record: impl FnMut(&uct_ep_op_info_t) -> T,
) -> Vec<T> {
    let (_, tx_len, rx_len) = token_caps(peer_iface);
    assert_eq!(
        invalidate(ep, UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS),
        UCS_OK
    );
    let tx = tx_token(ep, tx_len).expect("tx token");
    let rx = rx_token(peer_iface, &tx, rx_len).expect("rx token");
    let mut reported = Vec::new();
    let mut recorder = |info: &uct_ep_op_info_t| reported.push(record(info));
    assert_eq!(
        purge(
            ep,
            &rx,
            call_recorder_of(&recorder),
            &mut recorder as *mut _ as *mut c_void
        ),
        UCS_OK
    );
    reported
}

/// The trampoline for a recorder of type `F` (named by a value, since
/// closure types have no name).
fn call_recorder_of<F: FnMut(&uct_ep_op_info_t)>(
    _recorder: &F,
) -> unsafe extern "C" fn(*const uct_ep_op_info_t, *mut c_void) {
    call_recorder::<F>
}

/// The AM details of a purged op, if its field mask names them.
pub fn op_am(info: &uct_ep_op_info_t) -> Option<uct_ep_op_info_am> {
    if info.field_mask & UCT_EP_OP_INFO_FIELD_AM == 0 {
        return None;
    }
    // SAFETY: the union member the field mask names.
    Some(unsafe { info.detail.am })
}

/// The inline header of a short AM's details.
pub fn am_header_value(am: &uct_ep_op_info_am) -> u64 {
    // SAFETY: both members start with 8 initialised bytes; a short AM's
    // header is the value (what the tests read it for).
    unsafe { am.header.value }
}

/// The RMA details of a purged op, if its field mask names them.
pub fn op_rma(info: &uct_ep_op_info_t) -> Option<uct_ep_op_info_rma> {
    if info.field_mask & UCT_EP_OP_INFO_FIELD_RMA == 0 {
        return None;
    }
    // SAFETY: the union member the field mask names.
    Some(unsafe { info.detail.rma })
}

/// The data buffer and length of an RMA's details, if their mask names them.
pub fn rma_payload_data(rma: &uct_ep_op_info_rma) -> Option<uct_ep_op_info_data> {
    if rma.field_mask & UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_DATA == 0 {
        return None;
    }
    // SAFETY: the union member the field mask names.
    Some(unsafe { rma.payload.data })
}

/// The flush flags of a purged flush (`None` for any other op).
pub fn op_flush_flags(info: &uct_ep_op_info_t) -> Option<std::ffi::c_uint> {
    if info.operation != UCT_EP_OP_FLUSH {
        return None;
    }
    // SAFETY: the flush member, for a flush.
    Some(unsafe { info.detail.flush.flags })
}

/// A purged op's details, read from the union member its operation names.
#[derive(Clone, Copy)]
pub enum OpDetail {
    AmShort {
        am: uct_ep_op_info_am,
        header: u64,
        data: uct_ep_op_info_data,
    },
    AmBcopy {
        am: uct_ep_op_info_am,
        data: uct_ep_op_info_data,
    },
    AmZcopy {
        am: uct_ep_op_info_am,
        header: uct_ep_op_info_am_header_zcopy,
        iov: uct_ep_op_info_zcopy,
    },
    /// A put short or bcopy (its data) or a get short (its destination).
    RmaData {
        rma: uct_ep_op_info_rma,
        data: uct_ep_op_info_data,
    },
    /// A put or get zcopy: its iov.
    RmaZcopy {
        rma: uct_ep_op_info_rma,
        iov: uct_ep_op_info_zcopy,
    },
    GetBcopy {
        rma: uct_ep_op_info_rma,
        unpack: uct_ep_op_info_unpack,
    },
    Atomic(uct_ep_op_info_atomic),
    Flush(uct_ep_op_info_flush),
    /// An operation with no detail read here.
    Other,
}

impl OpDetail {
    pub fn of(info: &uct_ep_op_info_t) -> OpDetail {
        let detail = &info.detail;
        // SAFETY: each arm reads the members its operation names (UCX's
        // uct_v2.h), which the library fills for that operation.
        unsafe {
            match info.operation {
                UCT_EP_OP_AM_SHORT => OpDetail::AmShort {
                    am: detail.am,
                    header: detail.am.header.value,
                    data: detail.am.payload.data,
                },
                UCT_EP_OP_AM_BCOPY => OpDetail::AmBcopy {
                    am: detail.am,
                    data: detail.am.payload.data,
                },
                UCT_EP_OP_AM_ZCOPY => OpDetail::AmZcopy {
                    am: detail.am,
                    header: detail.am.header.zcopy,
                    iov: detail.am.payload.zcopy,
                },
                UCT_EP_OP_PUT_SHORT | UCT_EP_OP_PUT_BCOPY | UCT_EP_OP_GET_SHORT => {
                    OpDetail::RmaData {
                        rma: detail.rma,
                        data: detail.rma.payload.data,
                    }
                }
                UCT_EP_OP_PUT_ZCOPY | UCT_EP_OP_GET_ZCOPY => OpDetail::RmaZcopy {
                    rma: detail.rma,
                    iov: detail.rma.payload.zcopy,
                },
                UCT_EP_OP_GET_BCOPY => OpDetail::GetBcopy {
                    rma: detail.rma,
                    unpack: detail.rma.payload.unpack,
                },
                UCT_EP_OP_ATOMIC_POST | UCT_EP_OP_ATOMIC_FETCH => OpDetail::Atomic(detail.atomic),
                UCT_EP_OP_FLUSH => OpDetail::Flush(detail.flush),
                _ => OpDetail::Other,
            }
        }
    }
}

/// The bytes of a zcopy AM's header (valid during the purge callback).
pub fn header_bytes(header: &uct_ep_op_info_am_header_zcopy) -> &[u8] {
    if header.length == 0 {
        return &[];
    }
    // SAFETY: as in data_bytes.
    unsafe { std::slice::from_raw_parts(header.buffer as *const u8, header.length) }
}

/// The bytes an op info's data member names (valid during the purge
/// callback that was handed the op info).
pub fn data_bytes(data: &uct_ep_op_info_data) -> &[u8] {
    if data.length == 0 {
        return &[];
    }
    // SAFETY: the library reports `length` readable bytes at `buffer`,
    // alive while the callback runs (the borrow of the op info).
    unsafe { std::slice::from_raw_parts(data.buffer as *const u8, data.length) }
}

/// The iov entries an op info's zcopy member names (valid during the purge
/// callback).
pub fn zcopy_iov(zcopy: &uct_ep_op_info_zcopy) -> &[uct_iov_t] {
    if zcopy.iovcnt == 0 {
        return &[];
    }
    // SAFETY: as in data_bytes, `iovcnt` entries at `iov`.
    unsafe { std::slice::from_raw_parts(zcopy.iov, zcopy.iovcnt) }
}

/// Purge parameters as a caller could get them wrong.
pub fn purge_raw(ep: uct_ep_h, params: &uct_ep_outstanding_purge_params_t) -> ucs_status_t {
    outstanding_purge(ep, Some(params))
}

pub fn null_rx() -> *const c_void {
    null()
}

pub fn null_arg() -> *mut c_void {
    null_mut()
}
