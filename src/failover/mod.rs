//! Failover, the transport-independent part: the TX/RX token formats
//! ([`token`]), the per-op delivery decision from PSNs ([`classify`]), and
//! the purge driver with the `uct_ep_op_info_t` builder ([`purge`]).
//!
//! The rc transport supplies the facts (its connection identity, the
//! responder QP's `next_rcv_psn`, the op table with PSNs) and the effects
//! (completing, reporting, releasing ops); everything decided in between
//! lives here and is tested without a device. See DESIGN §5 for the
//! promises and [`classify`] for the exact rules.

pub mod classify;
pub mod error;
pub mod purge;
pub mod query;
pub mod state;
pub mod token;

pub use classify::{classify, packets_for, Action, OpClass, OpPsns, Verdict, FETCH_LOST_STATUS};
pub use error::{FailoverError, TokenKind};
pub use purge::{
    report_op, run_purge, AtomicWidth, OpDescriptor, PurgeCallback, PurgeSink, PurgeSummary,
    RemoteTarget,
};
pub use query::{ep_query_tx_token, iface_query_tokens, prepare_purge, ResponderLookup};
pub use state::{EpFailover, HoldReason, OnError};
pub use token::{
    derive_rx_token, ConnectionId, DeviceId, QpIdentity, ResponderState, RxToken, TxToken,
    RX_TOKEN_LENGTH, TX_TOKEN_LENGTH,
};
