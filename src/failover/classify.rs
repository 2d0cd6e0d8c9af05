//! Deciding, per outstanding operation, what `uct_ep_outstanding_purge` does
//! with it, from the PSNs the ep used and the responder's `next_rcv_psn`.
//!
//! # What the inputs mean
//!
//! Every op of the ep that is still in its table, in posting order, with the
//! first PSN it used and how many (an RC requester numbers packets, not
//! messages: SEND/WRITE/READ use `max(1, ceil(len / path MTU))`, an atomic
//! 1, a NOP 0; [`packets_for`] is that rule), what kind of op it is, and
//! whether a *successful* completion (CQE) covering it was polled (an error
//! CQE and the flush errors after it say nothing about delivery: the op that
//! failed may or may not have reached the peer). `next_psn` is the PSN
//! the ep would give its next packet. The RX token's `next_rcv_psn` is the
//! first PSN the responder has *not* accepted: every packet before it was
//! received in order and acted on (data placed, message delivered, atomic
//! executed, read answered).
//!
//! # The rules, and why
//!
//! An op is *accepted* when `next_rcv_psn` is past its last PSN. An op is
//! *locally complete* when it or any op after it has a successful CQE: an RC
//! send queue completes in order, and a CQE covers every WQE before it.
//!
//! | op | locally complete | accepted, no CQE | not (fully) accepted |
//! |---|---|---|---|
//! | AM, PUT (SEND, WRITE) | `Delivered` | `Delivered` | `Replay` |
//! | atomic post | `Delivered` | `Delivered` | `Replay` |
//! | GET (READ) | `Delivered` | `GetReplay` | `GetReplay` |
//! | fetching atomic, cswap | `Delivered` | `FetchLost` | `Replay` |
//! | internal (FC grant, NOP) | `InternalConsumed` | `InternalConsumed` | `InternalConsumed` |
//!
//! - SEND and WRITE are done once the responder accepted their last packet:
//!   the message was handed to the receiver, the bytes are in place. The
//!   missing ACK changes nothing, so they complete with `UCS_OK` and are not
//!   replayed (replaying would deliver the AM twice).
//! - A partially accepted multi-packet SEND never reached the receiver (the
//!   responder delivers a message only with its last packet) and a partial
//!   WRITE is overwritten in full by the replay, so both are replayed.
//! - A READ's acceptance only says the responder *sent* the data; whether
//!   it arrived is known only from the local CQE. Without it the local
//!   buffer may hold nothing or part of the data, so the GET is reported
//!   for replay (reading again is harmless) and never completed as
//!   delivered.
//! - An atomic with a result that the responder accepted has been applied
//!   to remote memory, but its old value never came back. Replaying it would
//!   apply it twice, and completing it with `UCS_OK` would hand the caller
//!   an unwritten result: it completes with [`FETCH_LOST_STATUS`]. If the
//!   responder did not accept it, it never executed, so replaying it is
//!   exact.
//! - Flow-control grants and NOPs are the transport's own traffic: they
//!   mean nothing on another connection and are dropped silently.
//! - A flush is about the ops posted before it. It is `Delivered` when all of
//!   them were delivered (and, if the flush itself uses packets, those were
//!   accepted), `Replay` (as a flush, after the replayed ops) when any of them
//!   is reported for replay, and [`Verdict::FlushAfterLoss`] (completed with
//!   [`FETCH_LOST_STATUS`]) when the only ones not delivered are fetches
//!   whose results were lost: the flush cannot report success for them, and
//!   replaying it would wait for nothing.
//!
//! # What is refused
//!
//! The responder cannot have accepted fewer packets than the ep saw
//! completed, nor more than the ep sent, so `next_rcv_psn` must lie in
//! `[end of the last locally complete op (or first outstanding PSN), next_psn]`
//! (inclusive, modulo 2^24). Anything else is a stale token (derived
//! before packets the ep saw acknowledged) or one of another QP:
//! [`FailoverError::RxPsnOutsideWindow`], never a guess. The op list itself
//! must be contiguous in PSN space, end at `next_psn`, span less than 2^23
//! PSNs (so that comparisons have a direction) and give every data op at
//! least one packet; otherwise [`FailoverError::InconsistentOps`].
//!
//! # A limit of any PSN scheme
//!
//! The RX token must be derived after the sender's QP stopped sending (it
//! is in error once failover purges it): a packet still in flight when the
//! token is taken and accepted afterwards would be both replayed and
//! delivered. With the sender's QP in error nothing is retransmitted, so the
//! window is at most one link latency after the failure.

use crate::abi::Status;
use crate::failover::error::FailoverError;
use crate::mlx5::{packet_count, psn_add, psn_distance, PacketShape, PSN_HALF, PSN_MASK};

/// How an op is treated by classification (what its PSNs and CQE mean).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpClass {
    /// Active message (SEND), any flavour.
    Am,
    /// RDMA WRITE, any flavour.
    Put,
    /// RDMA READ, any flavour.
    Get,
    /// Atomic without a result.
    AtomicPost,
    /// Atomic whose old value is fetched.
    AtomicFetch,
    /// Compare-and-swap (always fetches).
    AtomicCswap,
    Flush,
    /// The transport's own traffic (flow-control grants, NOPs), and ops
    /// whose caller already has their outcome (a synchronous get_short).
    Internal,
}

impl OpClass {
    /// Whether the op moves data or executes at the responder (and so must
    /// use at least one PSN).
    pub fn uses_packets(self) -> bool {
        !matches!(self, OpClass::Flush | OpClass::Internal)
    }
}

/// Packets (PSNs) an op of `class` moving `length` bytes uses with a path
/// MTU of `mtu` bytes: SEND/WRITE/READ `max(1, ceil(length / mtu))`, an
/// atomic 1, a flush or internal NOP 0. (A flow-control grant is a SEND:
/// pass [`OpClass::Am`] for it.)
pub fn packets_for(class: OpClass, length: usize, mtu: u32) -> u32 {
    let shape = match class {
        OpClass::Am | OpClass::Put | OpClass::Get => PacketShape::Data,
        OpClass::AtomicPost | OpClass::AtomicFetch | OpClass::AtomicCswap => PacketShape::Atomic,
        OpClass::Flush | OpClass::Internal => PacketShape::None,
    };
    // Longer than the PSN space cannot be posted: the count saturates rather
    // than wraps, so the contiguity check refuses it.
    packet_count(shape, length as u64, mtu)
}

/// What classification needs to know of one outstanding op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpPsns {
    pub class: OpClass,
    /// First PSN the op used (24 bits); for 0-packet ops, the PSN the next
    /// packet would carry when it was posted.
    pub first_psn: u32,
    pub psn_count: u32,
    /// A successful CQE covering this op was polled (not an error or flush
    /// CQE).
    pub cqe_seen: bool,
}

/// What purge does with one op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The peer has it: complete with `UCS_OK`.
    Delivered,
    /// The peer does not have it: report it to the caller for replay.
    Replay,
    /// A GET whose data did not arrive: report it for replay.
    GetReplay,
    /// A fetching atomic the peer executed without the result arriving:
    /// complete with [`FETCH_LOST_STATUS`], never replay.
    FetchLost,
    /// Transport-internal: drop without completion or report.
    InternalConsumed,
    /// A flush after ops whose only failures are lost fetches: complete
    /// with [`FETCH_LOST_STATUS`].
    FlushAfterLoss,
}

/// What the purge driver does for a [`Verdict`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Call the op's completion with this status (`Ok` = `UCS_OK`).
    Complete(Result<(), Status>),
    /// Hand the op to the caller's purge callback.
    Report,
    /// Release the op's resources, nothing else.
    Drop,
}

/// The status a fetching atomic completes with when the peer executed it
/// but its result never arrived (and a flush that covers only such losses).
/// `UCS_ERR_IO_ERROR`: the operation took effect, its output is lost.
pub const FETCH_LOST_STATUS: Status = Status::IoError;

impl Verdict {
    pub fn action(self) -> Action {
        match self {
            Verdict::Delivered => Action::Complete(Ok(())),
            Verdict::Replay | Verdict::GetReplay => Action::Report,
            Verdict::FetchLost | Verdict::FlushAfterLoss => {
                Action::Complete(Err(FETCH_LOST_STATUS))
            }
            Verdict::InternalConsumed => Action::Drop,
        }
    }
}

/// Classifies `ops` (posting order) against the responder's
/// `rx_next_psn`; `next_psn` is the PSN the ep's next packet would carry.
/// Returns one verdict per op, same order.
pub fn classify(
    ops: &[OpPsns],
    next_psn: u32,
    rx_next_psn: u32,
) -> Result<Vec<Verdict>, FailoverError> {
    let next_psn = checked_psn(next_psn, "next_psn", ops.len())?;
    if rx_next_psn & !PSN_MASK != 0 {
        return Err(FailoverError::FieldOutOfRange {
            field: "next_rcv_psn",
            value: rx_next_psn,
        });
    }
    let window_start = check_contiguous(ops, next_psn)?;

    // Everything at or before the last polled CQE is locally complete.
    let locally_complete = ops.iter().rposition(|op| op.cqe_seen).map_or(0, |i| i + 1);
    let low = match locally_complete {
        0 => window_start,
        n => end_psn(&ops[n - 1]),
    };
    let in_window = psn_distance(low, rx_next_psn) >= 0 && psn_distance(rx_next_psn, next_psn) >= 0;
    if !in_window {
        return Err(FailoverError::RxPsnOutsideWindow {
            rx_next_psn,
            low,
            high: next_psn,
        });
    }

    let accepted = |op: &OpPsns| psn_distance(op.first_psn, rx_next_psn) >= op.psn_count as i32;
    let mut verdicts = Vec::with_capacity(ops.len());
    // What the ops before the current one came to, for flushes.
    let mut earlier_replayed = false;
    let mut earlier_lost = false;
    for (index, op) in ops.iter().enumerate() {
        let complete = index < locally_complete;
        let verdict = match op.class {
            OpClass::Internal => Verdict::InternalConsumed,
            OpClass::Flush => {
                if earlier_replayed {
                    Verdict::Replay
                } else if earlier_lost {
                    Verdict::FlushAfterLoss
                } else if complete || op.psn_count == 0 || accepted(op) {
                    Verdict::Delivered
                } else {
                    Verdict::Replay
                }
            }
            _ if complete => Verdict::Delivered,
            OpClass::Get => Verdict::GetReplay,
            OpClass::AtomicFetch | OpClass::AtomicCswap if accepted(op) => Verdict::FetchLost,
            _ if accepted(op) => Verdict::Delivered,
            _ => Verdict::Replay,
        };
        match verdict {
            Verdict::Replay | Verdict::GetReplay => earlier_replayed = true,
            Verdict::FetchLost | Verdict::FlushAfterLoss => earlier_lost = true,
            Verdict::Delivered | Verdict::InternalConsumed => {}
        }
        verdicts.push(verdict);
    }
    Ok(verdicts)
}

fn end_psn(op: &OpPsns) -> u32 {
    psn_add(op.first_psn, op.psn_count)
}

fn checked_psn(psn: u32, what: &str, index: usize) -> Result<u32, FailoverError> {
    if psn & !PSN_MASK != 0 {
        return Err(FailoverError::InconsistentOps {
            index,
            reason: format!("{what} 0x{psn:x} exceeds 24 bits"),
        });
    }
    Ok(psn)
}

/// Checks that the ops tile the PSN space without gaps up to `next_psn`
/// within half the space; returns the first outstanding PSN.
fn check_contiguous(ops: &[OpPsns], next_psn: u32) -> Result<u32, FailoverError> {
    let Some(first) = ops.first() else {
        return Ok(next_psn);
    };
    let start = checked_psn(first.first_psn, "first_psn", 0)?;
    let mut expected = start;
    let mut span: u64 = 0;
    for (index, op) in ops.iter().enumerate() {
        checked_psn(op.first_psn, "first_psn", index)?;
        if op.first_psn != expected {
            return Err(FailoverError::InconsistentOps {
                index,
                reason: format!(
                    "first PSN 0x{:06x}, the op before ends at 0x{expected:06x}",
                    op.first_psn
                ),
            });
        }
        if op.class.uses_packets() && op.psn_count == 0 {
            return Err(FailoverError::InconsistentOps {
                index,
                reason: format!("{:?} op without packets", op.class),
            });
        }
        span += u64::from(op.psn_count);
        if span >= u64::from(PSN_HALF) {
            return Err(FailoverError::InconsistentOps {
                index,
                reason: format!("outstanding PSNs span {span}, at least 2^23"),
            });
        }
        expected = end_psn(op);
    }
    if expected != next_psn {
        return Err(FailoverError::InconsistentOps {
            index: ops.len() - 1,
            reason: format!("last op ends at 0x{expected:06x}, next PSN is 0x{next_psn:06x}"),
        });
    }
    Ok(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_counts_follow_the_mtu() {
        assert_eq!(packets_for(OpClass::Am, 0, 1024), 1);
        assert_eq!(packets_for(OpClass::Put, 1024, 1024), 1);
        assert_eq!(packets_for(OpClass::Put, 1025, 1024), 2);
        assert_eq!(packets_for(OpClass::Get, 4096 * 3 + 1, 4096), 4);
        assert_eq!(packets_for(OpClass::AtomicCswap, 8, 256), 1);
        assert_eq!(packets_for(OpClass::Flush, 0, 256), 0);
        assert_eq!(packets_for(OpClass::Internal, 0, 256), 0);
    }

    #[test]
    fn empty_list_accepts_only_next_psn() {
        assert_eq!(classify(&[], 5, 5), Ok(vec![]));
        assert!(matches!(
            classify(&[], 5, 4),
            Err(FailoverError::RxPsnOutsideWindow { .. })
        ));
    }
}
