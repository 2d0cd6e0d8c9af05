//! Failover, the transport-independent part: the TX/RX token formats
//! ([`token`]), the record of a posted operation ([`op`]), the per-op
//! delivery decision from PSNs ([`classify`](mod@classify)), the
//! `uct_ep_op_info_t` builder ([`purge`]), the token parts of the C queries
//! ([`query`]) and the per-ep state ([`state`]).
//!
//! The transport supplies the facts (its connection identity, the responder
//! QP's `next_rcv_psn`, the op table with PSNs) and applies the effects
//! (completing, reporting, releasing ops); everything decided in between
//! lives here, is returned as plain data (verdicts), never calls back into
//! the transport, and is tested without a device. DESIGN §5 has the
//! promises, [`classify`](mod@classify) the exact rules.
//!
//! # What a transport calls
//!
//! Identity: each ep knows its own QP ([`QpIdentity`]: device id from its
//! [`crate::hca::DeviceAddress`] via [`DeviceId::from_address`], QPN, and a
//! generation, a random per-QP value) and the peer's (from the peer's ep
//! address: device, QPN, generation). The sender names the connection
//! [`ConnectionId::as_requester`]`(own, peer)`, the receiver the same one
//! [`ConnectionId::as_responder`]`(own, peer)`.
//!
//! - `uct_ep_failover_enable` → [`EpFailover::enable`]; on an error CQE,
//!   [`EpFailover::on_transport_error`] says whether to keep the op table
//!   (and suppress completions: [`EpFailover::is_holding`]) or to ask the
//!   iface error handler, whose answer goes to
//!   [`EpFailover::on_handler_result`] (`UCS_INPROGRESS` on a token iface
//!   keeps the table). The handler is called once, before the ops are
//!   touched.
//! - `uct_ep_invalidate(flags)` → [`EpFailover::on_invalidate`]`(flags &
//!   NO_COMPLETIONS != 0)`: keep at once, or move the QP to ERROR and let the
//!   flushed WQEs fail the ep as a transport error would.
//! - `uct_ep_query` → [`ep_query_tx_token`]`(attr, Some(&connection))`
//!   (`None` before `connect_to_ep`).
//! - `uct_iface_query_v2` → fill the other fields, then
//!   [`iface_query_tokens`]`(attr, Some(&mut lookup))`, where `lookup` finds
//!   the ep whose QPN is `claimed.responder.qpn` (else
//!   [`FailoverError::UnknownConnection`]) and answers its own
//!   `as_responder` view plus `qp.query()?.next_rcv_psn`.
//! - Each post records a [`PostedOp`] with its PSNs.
//! - `uct_ep_outstanding_purge` → [`EpFailover::check_purge`] (nothing left:
//!   `UCS_OK` at once); copy out of the ring what each op reports (inline
//!   data), build one [`OpPsns`] per op-table entry
//!   ([`PostedOp::class`], `first_psn`, `psn_count`, `cqe_seen`);
//!   [`prepare_purge`]`(request.rx_token, &connection, &ops,
//!   tx.next_psn)` gives one [`Verdict`] per op; on `Err` return it
//!   untouched. Then take the ops out of the table, [`EpFailover::purged`],
//!   and apply each [`Verdict::action`] in posting order: `Complete` runs
//!   the op's completion work only for `Ok` and calls `comp`; `Report`
//!   calls [`report_op`] with the op's bytes and the request's
//!   [`PurgeCallback`]; each releases the op's bounce buffer, ring blocks
//!   and CQ credit. A later `connect_to_ep` calls
//!   [`EpFailover::reconnected`].

pub mod classify;
pub mod error;
pub mod op;
pub mod purge;
pub mod query;
pub mod state;
pub mod token;

pub use classify::{classify, packets_for, Action, OpClass, OpPsns, Verdict, FETCH_LOST_STATUS};
pub use error::{FailoverError, TokenKind};
pub use op::{InternalOp, PostedOp, RemoteTarget};
pub use purge::{report_op, PurgeCallback, PurgeSummary};
pub use query::{ep_query_tx_token, iface_query_tokens, prepare_purge, ResponderLookup};
pub use state::{EpFailover, HoldReason, OnError, PurgeStep};
pub use token::{
    derive_rx_token, ConnectionId, DeviceId, QpIdentity, ResponderState, RxToken, TxToken,
    RX_TOKEN_LENGTH, TX_TOKEN_LENGTH,
};
