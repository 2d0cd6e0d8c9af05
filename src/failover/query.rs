//! The token parts of the C queries, so that a transport's
//! `iface_query_v2`, `ep_query` and `ep_outstanding_purge` only supply its
//! facts: [`iface_query_tokens`] (capability bit, lengths, RX token
//! derivation), [`ep_query_tx_token`], and [`prepare_purge`] (RX token
//! check + classification). Each refusal logs one line with the reason and
//! returns the status the entry point reports.
//!
//! The entry points in `api/v2.rs` have already checked the field masks
//! against the known bits; these functions read a pointer member only when
//! its bit is set, through raw field pointers, because a caller initialises
//! only the members it asks for.

use std::ptr::{addr_of, addr_of_mut};

use crate::abi::*;
use crate::failover::classify::{classify, OpPsns, Verdict};
use crate::failover::error::FailoverError;
use crate::failover::token::{
    derive_rx_token, ConnectionId, ResponderState, RxToken, TxToken, RX_TOKEN_LENGTH,
    TX_TOKEN_LENGTH,
};

const TOKEN_QUERY_FIELDS: u64 = UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH
    | UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH
    | UCT_IFACE_ATTR_FIELD_TX_TOKEN
    | UCT_IFACE_ATTR_FIELD_RX_TOKEN;

/// The receiving iface's lookup of the QP a TX token names (see
/// [`derive_rx_token`]).
pub type ResponderLookup<'a> =
    &'a mut dyn FnMut(&ConnectionId) -> Result<ResponderState, FailoverError>;

fn refuse(function: &str, error: FailoverError) -> Status {
    tracing::warn!("{function}: {error}");
    error.status()
}

/// The token part of `uct_iface_query_v2`; call it after filling the other
/// fields. With `responder` `None` (the iface cannot do failover) the
/// `UCT_IFACE_FLAG_V2_QUERY_TOKEN` bit is cleared and any token field
/// asked for is `Unsupported`. With `responder` (looks up the QP a TX
/// token names, see [`derive_rx_token`]) the bit is set, the lengths are
/// reported, and `TX_TOKEN` + `RX_TOKEN` (both or neither:
/// `InvalidParam`) derive the RX token from the peer's TX token.
///
/// # Safety
/// `attr` points at a caller's `uct_iface_attr_v2_t` whose `field_mask` is
/// set and whose `tx_token`/`rx_token`, when their bits are set, are NULL
/// or point at `TX_TOKEN_LENGTH` readable / `RX_TOKEN_LENGTH` writable bytes.
pub unsafe fn iface_query_tokens(
    attr: *mut uct_iface_attr_v2_t,
    responder: Option<ResponderLookup<'_>>,
) -> Result<(), Status> {
    const FUNCTION: &str = "uct_iface_query_v2";
    // SAFETY: field_mask is always set by the caller.
    let field_mask = unsafe { addr_of!((*attr).field_mask).read() };
    if field_mask & UCT_IFACE_ATTR_FIELD_CAP_FLAGS != 0 {
        // SAFETY: the bit says `cap` is the caller's to receive.
        unsafe {
            let flags = addr_of_mut!((*attr).cap.flags);
            if responder.is_some() {
                flags.write(flags.read() | UCT_IFACE_FLAG_V2_QUERY_TOKEN);
            } else {
                flags.write(flags.read() & !UCT_IFACE_FLAG_V2_QUERY_TOKEN);
            }
        }
    }
    let Some(responder) = responder else {
        if field_mask & TOKEN_QUERY_FIELDS != 0 {
            tracing::debug!("{FUNCTION}: tokens are not supported by this iface");
            return Err(Status::Unsupported);
        }
        return Ok(());
    };
    if field_mask & UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH != 0 {
        // SAFETY: output member asked for by its bit.
        unsafe { addr_of_mut!((*attr).tx_token_length).write(TX_TOKEN_LENGTH) };
    }
    if field_mask & UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH != 0 {
        // SAFETY: output member asked for by its bit.
        unsafe { addr_of_mut!((*attr).rx_token_length).write(RX_TOKEN_LENGTH) };
    }
    let wants_tx = field_mask & UCT_IFACE_ATTR_FIELD_TX_TOKEN != 0;
    let wants_rx = field_mask & UCT_IFACE_ATTR_FIELD_RX_TOKEN != 0;
    if wants_tx != wants_rx {
        tracing::warn!(
            "{FUNCTION}: TX_TOKEN and RX_TOKEN must be asked for together (an RX token is \
             derived from a peer's TX token)"
        );
        return Err(Status::InvalidParam);
    }
    if !wants_rx {
        return Ok(());
    }
    // SAFETY: both members are set by the caller together with their bits.
    let (tx_token, rx_token) = unsafe {
        (
            addr_of!((*attr).tx_token).read(),
            addr_of!((*attr).rx_token).read(),
        )
    };
    if tx_token.is_null() || rx_token.is_null() {
        tracing::warn!("{FUNCTION}: iface_attr->tx_token or ->rx_token is NULL");
        return Err(Status::InvalidParam);
    }
    // SAFETY: non-NULL, and by the contract TX_TOKEN_LENGTH readable bytes
    // that stay unchanged during the call (we only read them: tx_token is
    // const).
    let tx = unsafe { std::slice::from_raw_parts(tx_token.cast::<u8>(), TX_TOKEN_LENGTH) };
    let mut rx = [0u8; RX_TOKEN_LENGTH];
    derive_rx_token(tx, responder, &mut rx).map_err(|error| refuse(FUNCTION, error))?;
    // SAFETY: non-NULL, RX_TOKEN_LENGTH writable bytes by the contract;
    // written only once the token is complete.
    unsafe { std::ptr::copy_nonoverlapping(rx.as_ptr(), rx_token.cast::<u8>(), RX_TOKEN_LENGTH) };
    Ok(())
}

/// The `UCT_EP_ATTR_FIELD_TX_TOKEN` part of `uct_ep_query`: writes the TX
/// token of `connection` (`None`: the ep is not connected →
/// `NotConnected`). Does nothing when the bit is not set.
///
/// # Safety
/// `attr` points at a caller's `uct_ep_attr_t` whose `field_mask` is set and
/// whose `tx_token`, when its bit is set, is NULL or points at
/// `TX_TOKEN_LENGTH` writable bytes.
pub unsafe fn ep_query_tx_token(
    attr: *mut uct_ep_attr_t,
    connection: Option<&ConnectionId>,
) -> Result<(), Status> {
    const FUNCTION: &str = "uct_ep_query";
    // SAFETY: field_mask is always set by the caller.
    let field_mask = unsafe { addr_of!((*attr).field_mask).read() };
    if field_mask & UCT_EP_ATTR_FIELD_TX_TOKEN == 0 {
        return Ok(());
    }
    // SAFETY: set by the caller together with its bit.
    let out = unsafe { addr_of!((*attr).tx_token).read() };
    if out.is_null() {
        tracing::warn!("{FUNCTION}: ep_attr->tx_token is NULL");
        return Err(Status::InvalidParam);
    }
    let Some(connection) = connection else {
        tracing::warn!("{FUNCTION}: the ep is not connected, it has no TX token");
        return Err(Status::NotConnected);
    };
    let mut token = [0u8; TX_TOKEN_LENGTH];
    TxToken {
        connection: *connection,
    }
    .encode(&mut token)
    .map_err(|error| refuse(FUNCTION, error))?;
    // SAFETY: non-NULL, TX_TOKEN_LENGTH writable bytes by the contract.
    unsafe { std::ptr::copy_nonoverlapping(token.as_ptr(), out.cast::<u8>(), TX_TOKEN_LENGTH) };
    Ok(())
}

/// The checks and decisions of `uct_ep_outstanding_purge` before any op is
/// touched: decodes the RX token of the request (`rx_token`, checked by the
/// entry point), refuses one for another connection than `ours`, and
/// classifies `ops` (posting order; `next_psn` = the ep's next PSN). One
/// verdict per op.
pub fn prepare_purge(
    rx_token: &[u8],
    ours: &ConnectionId,
    ops: &[OpPsns],
    next_psn: u32,
) -> Result<(RxToken, Vec<Verdict>), Status> {
    const FUNCTION: &str = "uct_ep_outstanding_purge";
    let rx = RxToken::decode_for(rx_token, ours).map_err(|error| refuse(FUNCTION, error))?;
    let verdicts =
        classify(ops, next_psn, rx.next_rcv_psn).map_err(|error| refuse(FUNCTION, error))?;
    tracing::debug!(
        "{FUNCTION}: {} outstanding ops, responder next PSN 0x{:06x}, ep next PSN 0x{next_psn:06x}",
        ops.len(),
        rx.next_rcv_psn
    );
    Ok((rx, verdicts))
}
