//! The `rc_mlx5` transport: reliable connected QPs driven by writing mlx5
//! WQEs into the send ring of a [`crate::hca`] device.
//!
//! - [`iface`]: the iface (open/close and the ep table; the send CQ; the
//!   receive path, SRQ, AM dispatch and flow-control headers; progress):
//!   the only place that calls back into the user.
//! - [`ep`]: the endpoint: connection state only (one [`ep::EpState`]),
//!   its flow-control window and pending requests; no pointer to its iface.
//! - [`txwq`]: the send queue (QP, ring indexes, PSN, the table of
//!   outstanding operations), the only code that moves them, and
//!   [`txwq::TxResources`], where an op's buffer and credit go back.
//! - [`slots`]: the `uct_iface_ops_t` slots by op group (AM, RMA,
//!   atomics, control, query), each a thin wrapper over safe code;
//!   [`atomic`]: the atomic WQEs;
//!   [`failover`]: tokens, invalidate and purge over the op table.
//! - [`limits`]: what the configuration allows (sizes, timeouts) and the AM
//!   header layout.
//! - [`fc`]: flow control of AMs (window, credit requests and grants in
//!   the AM header byte, the grant message).
//!
//! What is not rc's own comes from [`crate::uct`]: the iface base (handle
//! head, AM handler table, progress registration), the pending queue and
//! its dispatch round, and the registered buffer pools.
//!
//! Resources and their bounds: each ep's send ring holds
//! `UCX_RC_MLX5_TX_QUEUE_LEN` × 4 basic blocks; the iface's send CQ has
//! `UCX_RC_TX_CQ_LEN` entries and half of them are credits (one per posted
//! WQE, since after an error every WQE gets a CQE); a post needs room for
//! the largest WQE and one credit, else `UCS_ERR_NO_RESOURCE`; AMs also
//! need room in the ep's flow-control window ([`fc`]). A CQE is
//! requested every `UCX_RC_TX_CQ_MODERATION` blocks, for every op with a
//! completion, and for every WQE while credits are low. A destroyed ep
//! keeps only its `RcEp` struct (320 bytes) as a tombstone
//! ([`crate::core::tombstone`]): an iface holds at most its peak number of
//! live eps plus 1025 such structs, all freed at close.

pub mod atomic;
pub mod config;
pub mod ep;
pub mod failover;
pub mod fc;
pub mod iface;
pub mod limits;
pub mod slots;
pub mod txwq;
