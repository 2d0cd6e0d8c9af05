//! What every UCT transport of ours shares, so that a second transport
//! (ud_mlx5 beside rc_mlx5) uses it rather than writing it again. A
//! transport gets:
//!
//! - [`pool`]: registered bounce buffers in two size classes (segments and
//!   one-cache-line slots), each buffer with its lkey, aligned on request:
//!   receive segments, bcopy send buffers, fetching-atomic results.
//! - [`pending`]: an ep's pending requests in UCX's order and the dispatch
//!   round that gives the eps turns (`uct_ep_pending_add`/`_purge`, the
//!   arbiter); the transport says when an ep may take a turn.
//!
//! This layer sits above the devices (`hca`, `ib`) and the failover
//! decisions, below the transports (`rc`, and `ud` to come); it knows no
//! transport.

pub mod pending;
pub mod pool;
