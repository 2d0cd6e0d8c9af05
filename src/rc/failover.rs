//! rc_mlx5's side of failover: the facts the transport-neutral core in
//! [`crate::failover`] needs (connection identities, the responder's
//! `next_rcv_psn`, the op table as [`OpPsns`], the inline bytes of its
//! WQEs) and the effects of its verdicts (completing, reporting, releasing
//! ops), behind the failover slots of [`crate::rc::slots::INTERNAL_OPS`]
//! (their handle and attribute arguments are taken over in
//! `rc/slots/failover.rs`).
//!
//! Identity: an ep's QP is (its iface's device, its QPN, its generation: a
//! random 24-bit value per QP, carried in bytes 3..6 of the ep address); the
//! peer's comes from the peer's ep address. The
//! sending ep names the connection as requester, the receiving iface finds
//! its ep by the responder QPN a TX token names.
//!
//! An op left in the table has had no successful CQE polled (a successful
//! CQE removes every op up to its WQE, and an error CQE first completes the
//! ops before the failed WQE). Only a get_short may have seen its CQE still
//! in the CQ (it waits for it without taking it): that op is `cqe_seen`,
//! which makes it and every op before it locally complete.
//!
//! Deriving an RX token moves the named responder QP to ERROR before
//! reading its `next_rcv_psn`: a packet still in flight could otherwise be
//! accepted after the token said it was not, and be applied again when
//! purge reports it for replay. The connection is being failed over, so
//! its receiving QP is not needed any more (its own outstanding sends, if
//! any, are flushed like any QP error).

use std::ffi::c_uint;

use crate::abi::*;
use crate::core::iface::PurgeRequest;
use crate::failover::{
    prepare_purge, report_op, Action, ConnectionId, DeviceId, FailoverError, OnError, OpPsns,
    PostedOp, PurgeStep, PurgeSummary, QpIdentity, ResponderState, Verdict,
};
use crate::hca::QpTransition;
use crate::mlx5::{self, DataEntry};
use crate::rc::ep::{EpState, OutstandingOp, RcEp};
use crate::rc::iface::RcIface;
use crate::rc::limits::AM_HDR_LEN;

/// This ep's own QP and its peer's, or `None` before `connect_to_ep`.
fn ends(ep: &RcEp) -> Option<(QpIdentity, QpIdentity)> {
    let remote = ep.remote()?;
    let own = QpIdentity {
        device: DeviceId::from_address(ep.local_address()),
        qpn: ep.qpn(),
        generation: ep.generation(),
    };
    let peer = QpIdentity {
        device: DeviceId::from_address(&remote.address),
        qpn: remote.qpn,
        generation: remote.generation,
    };
    Some((own, peer))
}

/// The connection with this ep as the sender (whose ops are purged).
pub fn requester_connection(ep: &RcEp) -> Option<ConnectionId> {
    ends(ep).map(|(own, peer)| ConnectionId::as_requester(own, peer))
}

/// The connection with this ep as the receiver (whose `next_rcv_psn` an RX
/// token carries).
pub fn responder_connection(ep: &RcEp) -> Option<ConnectionId> {
    ends(ep).map(|(own, peer)| ConnectionId::as_responder(own, peer))
}

/// What the receiving iface knows of the connection a TX token names (the
/// lookup of `uct_iface_query_v2`'s RX token derivation).
pub fn responder_state(
    rc: &mut RcIface,
    claimed: &ConnectionId,
) -> Result<ResponderState, FailoverError> {
    let responder_qpn = claimed.responder.qpn;
    let unknown = || FailoverError::UnknownConnection { responder_qpn };
    let Some(ep) = rc.state.ep(responder_qpn) else {
        return Err(unknown());
    };
    let Some(connection) = responder_connection(ep) else {
        return Err(unknown());
    };
    // Only the connection the token names may be stopped: a well-formed
    // token of another connection whose QPN happens to match is refused
    // before it can touch this one.
    connection.check_matches(claimed)?;
    // Freeze the responder first: a packet of this connection still in
    // flight must not be accepted after the RX token promised it was not
    // (purge will report it for replay on another rail). The connection
    // is being failed over; its QP is of no further use.
    ep.qp().modify(QpTransition::Error).map_err(|status| {
        tracing::warn!("uct_iface_query_v2: QP 0x{responder_qpn:x} cannot be stopped: {status}");
        unknown()
    })?;
    let info = ep.qp().query().map_err(|status| {
        tracing::warn!("uct_iface_query_v2: query of QP 0x{responder_qpn:x} failed: {status}");
        unknown()
    })?;
    Ok(ResponderState {
        connection,
        next_rcv_psn: info.next_rcv_psn,
    })
}

/// `uct_ep_invalidate`: the QP goes to error, in one of two modes.
///
/// - Held (`NO_COMPLETIONS`, or failover enabled): the outstanding ops are
///   kept for `uct_ep_outstanding_purge` at once, the ep refuses posts with
///   `UCS_ERR_CANCELED` and the error handler is not called (the caller
///   took the ops over).
/// - Plain (`params` NULL or no flag): the ep fails as on a transport
///   error, as UCX's rc_mlx5 does: the device flushes every outstanding WQE
///   (and any posted before the flush is seen) with `WR_FLUSH_ERR`, which
///   progress turns into `UCS_ERR_CANCELED`; the error handler is called
///   once with it, and its answer holds (`UCS_INPROGRESS`) or completes the
///   ops (the send CQ in `rc::iface`). Posts fail from then on. An ep with nothing
///   outstanding fails at its next post, like UCX's.
///
pub fn ep_invalidate(ep: &mut RcEp, flags: c_uint) -> Result<(), Status> {
    const F: &str = "uct_ep_invalidate";
    let no_completions = flags & UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS != 0;
    let connected = ep.state() == EpState::Connected;
    // The QP first: if the device refuses, the ep is left as it was.
    if ep.state().is_connected() {
        ep.qp().modify(QpTransition::Error)?;
    }
    match ep.failover.on_invalidate(no_completions) {
        OnError::Keep => {
            ep.hold_for_purge();
            tracing::debug!(
                "{F}: ep {:p} holds {} outstanding ops for purge",
                ep as *const RcEp,
                ep.txwq().len()
            );
        }
        OnError::AskHandler | OnError::CompleteWithError => {
            if connected {
                ep.mark_invalidated();
                tracing::debug!(
                    "{F}: ep {:p} moved to error with {} outstanding ops",
                    ep as *const RcEp,
                    ep.txwq().len()
                );
            }
        }
    }
    Ok(())
}

/// An outstanding op taken out of the table for purge, with the inline
/// bytes its WQE carried (copied out before the ring can be reused).
struct PurgedOp {
    op: OutstandingOp,
    inline: Vec<u8>,
}

impl PurgedOp {
    /// The bytes purge reports with the op ([`PostedOp::op_info`]): the
    /// inline copy, or for bcopy ops what `pack` wrote in the bounce
    /// buffer.
    fn bytes(&self) -> &[u8] {
        let packed = |offset: usize| match self.op.bounce() {
            // SAFETY: the op owns its bounce buffer until it is released
            // after the callback; its data area holds the op's `length`
            // bytes (the AM header first for AMs).
            Some(bounce) => unsafe {
                std::slice::from_raw_parts(
                    bounce.data.add(offset),
                    self.op.length().saturating_sub(offset),
                )
            },
            None => &[],
        };
        match self.op.op() {
            PostedOp::AmBcopy { .. } => packed(AM_HDR_LEN),
            PostedOp::PutBcopy { .. } => packed(0),
            _ => &self.inline,
        }
    }
}

/// What purge reports of `op`'s inline data, read back from the send ring
/// (an outstanding op's blocks are not rewritten): the bytes after the AM
/// id for am_short and am_zcopy, the data of put_short, nothing for the
/// others. `None` if the WQE does not decode (a bug: the ring holds
/// outstanding WQEs unchanged).
fn inline_bytes(ep: &RcEp, op: &OutstandingOp) -> Option<Vec<u8>> {
    let skip = match op.op() {
        PostedOp::AmShort { .. } | PostedOp::AmZcopy { .. } => AM_HDR_LEN,
        PostedOp::PutShort { .. } => 0,
        _ => return Some(Vec::new()),
    };
    let wqe = mlx5::decode_send_wqe(ep.txwq().ring_bytes(), op.wqe_index()).ok()?;
    let mut inline = Vec::new();
    for entry in wqe.data() {
        if let DataEntry::Inline(data) = entry {
            inline.extend_from_slice(data.head);
            inline.extend_from_slice(data.tail);
        }
    }
    // An AM's inline data starts with its AM header.
    inline.get(skip..).map(<[u8]>::to_vec)
}

/// The checks and decisions of `uct_ep_outstanding_purge`, before any op is
/// touched and with no callback: `None` when nothing is left to purge,
/// else the ops taken out of the table (the ep is marked purged), each with
/// its verdict, in posting order. On error the ep is as it was.
fn take_for_purge(
    ep: &mut RcEp,
    rx_token: &[u8],
) -> Result<Option<Vec<(PurgedOp, Verdict)>>, Status> {
    const F: &str = "uct_ep_outstanding_purge";
    if ep.failover.check_purge(ep.txwq().len())? == PurgeStep::NothingLeft {
        return Ok(None);
    }
    let Some(connection) = requester_connection(ep) else {
        tracing::warn!("{F}: the ep was never connected");
        return Err(Status::InvalidParam);
    };
    // Copy everything reported out of the ring before any op is touched,
    // so a failure leaves the ep as it was.
    let mut inline = Vec::with_capacity(ep.txwq().len());
    for op in ep.txwq().ops() {
        let Some(bytes) = inline_bytes(ep, op) else {
            tracing::error!(
                "{F}: the WQE of outstanding op {} at {} does not decode",
                op.op().name(),
                op.wqe_index()
            );
            return Err(Status::IoError);
        };
        inline.push(bytes);
    }
    let psns: Vec<OpPsns> = ep.txwq().ops().map(OutstandingOp::psns).collect();
    let next_psn = ep.txwq().next_psn();
    let (_, verdicts) = prepare_purge(rx_token, &connection, &psns, next_psn)?;
    let ops = ep
        .txwq_mut()
        .take_all()
        .zip(inline)
        .map(|(op, inline)| PurgedOp { op, inline })
        .zip(verdicts)
        .collect();
    ep.failover.purged();
    Ok(Some(ops))
}

/// `uct_ep_outstanding_purge` of `ep` on `iface` (see the module docs of
/// [`crate::failover`]): the decisions first, with no callback, then each
/// op's verdict applied in posting order.
///
/// # Safety
/// `iface` live and `ep` one of its live eps; no borrow of either held
/// (the caller's callbacks run from here and may post on any ep, this
/// iface's too, or destroy this one).
pub unsafe fn ep_outstanding_purge(
    iface: *mut RcIface,
    ep: *mut RcEp,
    request: PurgeRequest<'_>,
) -> Result<(), Status> {
    // SAFETY: live by the contract; the borrow ends before any callback.
    let (qpn, taken) = unsafe { ((*ep).qpn(), take_for_purge(&mut *ep, request.rx_token)?) };
    let Some(ops) = taken else {
        return Ok(());
    };
    let summary = PurgeSummary::of(ops.iter().map(|(_, verdict)| *verdict));
    // The op has left its table and the iface is live (a callback may not
    // close it): each step below borrows it briefly, between callbacks.
    for (purged, verdict) in ops {
        match verdict.action() {
            Action::Complete(status) => {
                let raw = status.map_or_else(Status::raw, |()| UCS_OK);
                // SAFETY: as above; completions are the caller's callbacks.
                unsafe { RcIface::finish_op(iface, purged.op, raw) };
            }
            Action::Report => {
                // SAFETY: the op and its bytes live until after the
                // callback, the request's callback with its argument.
                unsafe { report_op(purged.op.op(), purged.bytes(), &request.callback) };
                // SAFETY: as above, after the callback.
                unsafe { (*iface).state.tx_mut().release(&purged.op) };
            }
            // SAFETY: as above.
            Action::Drop => unsafe { (*iface).state.tx_mut().release(&purged.op) },
        }
    }
    // Marks the purged ep for a new QP before it is connected again,
    // unless a purge callback destroyed it.
    // SAFETY: the iface is live; no callback runs from here.
    if let Some(ep) = unsafe { (*iface).state.live_ep(ep, qpn) } {
        ep.renew_qp_later();
    }
    tracing::debug!(
        "uct_ep_outstanding_purge: ep {ep:p}: {} delivered, {} reported, {} failed, {} dropped",
        summary.delivered,
        summary.reported,
        summary.failed,
        summary.dropped
    );
    Ok(())
}
