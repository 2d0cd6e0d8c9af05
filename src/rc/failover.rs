//! rc_mlx5's side of failover: the facts the transport-neutral core in
//! [`crate::failover`] needs (connection identities, the responder's
//! `next_rcv_psn`, the op table as [`OpPsns`] and [`OpDescriptor`]s) and
//! the effects it asks for (completing, reporting, releasing ops), behind
//! the failover slots of [`crate::rc::slots::INTERNAL_OPS`] (their handle
//! and attribute arguments are taken over in `rc/slots/failover.rs`; the
//! purge entry point is here).
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
    prepare_purge, report_op, run_purge, AtomicWidth, ConnectionId, DeviceId, FailoverError,
    OnError, OpDescriptor, OpPsns, PurgeCallback, PurgeSink, PurgeStep, QpIdentity, RemoteTarget,
    ResponderState,
};
use crate::hca::QpTransition;
use crate::mlx5::{self, AtomicSize, DataEntry};
use crate::rc::atomic::{outstanding_call, UctAtomic};
use crate::rc::ep::{CompletionAction, EpState, OpKind, OutstandingOp, RcEp};
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

/// An outstanding op taken out of the table with copies of what purge
/// reports from the send ring (inline data, the atomic call).
struct PurgedOp {
    op: OutstandingOp,
    /// The WQE's inline bytes, contiguous (copied before the ring can wrap
    /// or be reused).
    inline: Vec<u8>,
    atomic: Option<UctAtomic>,
}

/// Reads what `op` needs from the send ring; `None` if its WQE does not
/// decode (a bug: the ring holds outstanding WQEs unchanged).
fn capture(ep: &RcEp, op: &OutstandingOp) -> Option<(Vec<u8>, Option<UctAtomic>)> {
    let has_inline = matches!(
        op.posted.kind,
        OpKind::AmShort | OpKind::AmZcopy | OpKind::PutShort
    );
    let mut inline = Vec::new();
    if has_inline {
        // An outstanding op's blocks are not rewritten (the ep is failed).
        let wqe = mlx5::decode_send_wqe(ep.txwq().ring_bytes(), op.wqe_index).ok()?;
        for entry in wqe.data() {
            if let DataEntry::Inline(data) = entry {
                inline.extend_from_slice(data.head);
                inline.extend_from_slice(data.tail);
            }
        }
    }
    let atomic = match op.posted.kind {
        OpKind::AtomicPost | OpKind::AtomicFetch => Some(outstanding_call(ep, op)?),
        _ => None,
    };
    Some((inline, atomic))
}

fn width(size: AtomicSize) -> AtomicWidth {
    match size {
        AtomicSize::Bits32 => AtomicWidth::Bits32,
        AtomicSize::Bits64 => AtomicWidth::Bits64,
    }
}

impl PurgedOp {
    /// The op as the caller posted it; `None` if the table entry lacks
    /// what its kind needs (a bug, logged by the caller).
    fn descriptor(&self) -> Option<OpDescriptor<'_>> {
        let op = &self.op;
        let remote = RemoteTarget {
            address: op.posted.remote_addr,
            rkey: op.posted.uct_rkey,
        };
        let iov = || op.posted.iov.as_deref();
        let bounce = |offset: usize, length: usize| -> Option<&[u8]> {
            let bounce = op.posted.bounce?;
            // SAFETY: the op owns its bounce buffer until it is released
            // after the callback; its data area holds the op's bytes.
            Some(unsafe { std::slice::from_raw_parts(bounce.data.add(offset), length) })
        };
        let after_am_id = || self.inline.get(AM_HDR_LEN..);
        Some(match op.posted.kind {
            OpKind::AmShort => OpDescriptor::AmShortIov {
                am_id: op.posted.am_id?,
                data: after_am_id()?,
            },
            OpKind::AmBcopy => OpDescriptor::AmBcopy {
                am_id: op.posted.am_id?,
                flags: op.posted.am_flags,
                payload: bounce(AM_HDR_LEN, op.posted.length.checked_sub(AM_HDR_LEN)?)?,
            },
            OpKind::AmZcopy => OpDescriptor::AmZcopy {
                am_id: op.posted.am_id?,
                flags: op.posted.am_flags,
                header: after_am_id()?,
                iov: iov()?,
                comp: op.posted.comp,
            },
            OpKind::PutShort => OpDescriptor::PutShort {
                remote,
                payload: &self.inline,
            },
            OpKind::PutBcopy => OpDescriptor::PutBcopy {
                remote,
                payload: bounce(0, op.posted.length)?,
            },
            OpKind::PutZcopy => OpDescriptor::PutZcopy {
                remote,
                iov: iov()?,
                comp: op.posted.comp,
            },
            OpKind::GetBcopy => match op.posted.action {
                CompletionAction::Unpack {
                    unpack_cb,
                    arg,
                    length,
                } => OpDescriptor::GetBcopy {
                    remote,
                    unpack_cb,
                    arg,
                    length,
                    comp: op.posted.comp,
                },
                _ => return None,
            },
            OpKind::GetZcopy => OpDescriptor::GetZcopy {
                remote,
                iov: iov()?,
                comp: op.posted.comp,
            },
            OpKind::AtomicPost => match self.atomic? {
                UctAtomic::Op {
                    op: atomic,
                    size,
                    value,
                } => OpDescriptor::AtomicPost {
                    op: atomic,
                    width: width(size),
                    value,
                    remote,
                },
                UctAtomic::Cswap { .. } => return None,
            },
            OpKind::AtomicFetch => {
                let CompletionAction::FetchResult { result, .. } = op.posted.action else {
                    return None;
                };
                match self.atomic? {
                    UctAtomic::Op {
                        op: atomic,
                        size,
                        value,
                    } => OpDescriptor::AtomicFetch {
                        op: atomic,
                        width: width(size),
                        value,
                        result,
                        remote,
                        comp: op.posted.comp,
                    },
                    UctAtomic::Cswap {
                        size,
                        compare,
                        swap,
                    } => OpDescriptor::AtomicCswap {
                        width: width(size),
                        compare,
                        swap,
                        result,
                        remote,
                        comp: op.posted.comp,
                    },
                }
            }
            OpKind::Flush => OpDescriptor::Flush {
                flags: op.posted.flush_flags,
                comp: op.posted.comp,
            },
            // get_short answered its caller before returning.
            OpKind::GetShort | OpKind::FcGrant | OpKind::Probe => OpDescriptor::Internal,
        })
    }
}

/// Completes, reports or drops purged ops of one ep on its iface.
struct RcPurgeSink {
    iface: *mut RcIface,
    callback: PurgeCallback,
}

impl RcPurgeSink {
    /// Returns the op's bounce buffer and CQ credit without completing it.
    fn release(&mut self, purged: &PurgedOp) {
        // SAFETY: the iface outlives its eps; a short borrow, no callback.
        unsafe { (*self.iface).state.tx.release(&purged.op) };
    }
}

impl PurgeSink<PurgedOp> for RcPurgeSink {
    fn complete(&mut self, purged: PurgedOp, status: Result<(), Status>) {
        let raw = match status {
            Ok(()) => UCS_OK,
            Err(status) => status.raw(),
        };
        // SAFETY: the op was taken out of its ep's table; the iface is live.
        unsafe { RcIface::finish_op(self.iface, purged.op, raw) };
    }

    fn report(&mut self, purged: PurgedOp) {
        match purged.descriptor() {
            // SAFETY: the descriptor borrows `purged`, alive until after
            // the callback; the callback is the caller's with its arg.
            Some(descriptor) => unsafe {
                report_op(&descriptor, &self.callback);
            },
            None => tracing::error!(
                "uct_ep_outstanding_purge: op {:?} at WQE {} cannot be described, not reported",
                purged.op.posted.kind,
                purged.op.wqe_index
            ),
        }
        self.release(&purged);
    }

    fn drop_internal(&mut self, purged: PurgedOp) {
        self.release(&purged);
    }
}

/// `uct_ep_outstanding_purge` (see the module docs of
/// [`crate::failover`]).
///
/// # Safety
/// As `IfaceInternalOps::ep_outstanding_purge`: `ep` NULL or an ep of
/// this library (the request is checked by the entry point).
pub unsafe fn ep_outstanding_purge(ep: uct_ep_h, request: PurgeRequest<'_>) -> Result<(), Status> {
    const F: &str = "uct_ep_outstanding_purge";
    // SAFETY: by the caller's contract.
    let rc_ep = unsafe { RcEp::from_handle(ep, F) }?;
    if rc_ep.failover.check_purge(rc_ep.txwq().len())? == PurgeStep::NothingLeft {
        return Ok(());
    }
    let iface = rc_ep.iface_handle() as *mut RcIface;
    let Some(connection) = requester_connection(rc_ep) else {
        tracing::warn!("{F}: the ep was never connected");
        return Err(Status::InvalidParam);
    };
    // Copy everything reported out of the ring before any op is touched,
    // so a failure leaves the ep as it was.
    let mut captured = Vec::with_capacity(rc_ep.txwq().len());
    for op in rc_ep.txwq().ops() {
        let Some(copy) = capture(rc_ep, op) else {
            tracing::error!(
                "{F}: the WQE of outstanding op {:?} at {} does not decode",
                op.posted.kind,
                op.wqe_index
            );
            return Err(Status::IoError);
        };
        captured.push(copy);
    }
    let psns: Vec<OpPsns> = rc_ep
        .txwq()
        .ops()
        .map(|op| OpPsns {
            class: op.class(),
            first_psn: op.first_psn,
            psn_count: op.psn_count,
            cqe_seen: op.completion_seen,
        })
        .collect();
    let next_psn = rc_ep.txwq().next_psn();
    let (_, verdicts) = prepare_purge(request.rx_token, &connection, &psns, next_psn)?;
    let ops: Vec<PurgedOp> = rc_ep
        .txwq_mut()
        .take_all()
        .zip(captured)
        .map(|(op, (inline, atomic))| PurgedOp { op, inline, atomic })
        .collect();
    rc_ep.failover.purged();
    let mut sink = RcPurgeSink {
        iface,
        callback: request.callback,
    };
    // No borrow of the ep is used from here on: the callback may post on
    // any other ep, of this iface too.
    let qpn = rc_ep.qpn();
    let ep_ptr: *mut RcEp = rc_ep;
    let summary = run_purge(ops.into_iter().zip(verdicts), &mut sink);
    // Marks the purged ep for a new QP before it is connected again,
    // unless a purge callback destroyed it.
    // SAFETY: the iface outlives the purge (its callbacks may not close it).
    if let Some(ep) = unsafe { (*iface).state.live_ep(ep_ptr, qpn) } {
        ep.renew_qp_later();
    }
    tracing::debug!(
        "{F}: ep {ep:p}: {} delivered, {} reported, {} failed, {} dropped",
        summary.delivered,
        summary.reported,
        summary.failed,
        summary.dropped
    );
    Ok(())
}
