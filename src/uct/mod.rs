//! What every UCT transport of ours shares, so that a second transport
//! (ud_mlx5 beside rc_mlx5) uses it rather than writing it again. A
//! transport gets:
//!
//! - [`iface`]: [`iface::IfaceBase`], the first field of a transport's
//!   `#[repr(C)]` iface: the handle head every iface of ours starts with
//!   (the public ops table, md, worker, internal ops), the AM table and the
//!   progress registration; and [`iface::TRANSPORT_INTERNAL_OPS`], the
//!   start of a transport's internal-ops table, which routes
//!   `uct_iface_set_am_handler` / `_set_am_tracer` to that AM table.
//! - [`am`]: the AM handler table and its dispatch (`uct_iface_set_am_handler`
//!   rules: the id range, the reserved flag, synchronous handlers only where
//!   the iface advertises `CB_SYNC`, the default handler that drops with a
//!   warning), and the AM tracer.
//! - [`progress`]: the iface's callback on its worker's progress queue,
//!   present while progress is enabled for any direction.
//! - [`pending`]: an ep's pending requests in UCX's order and the dispatch
//!   round that gives the eps turns (`uct_ep_pending_add`/`_purge`, the
//!   arbiter); the transport says when an ep may take a turn.
//! - [`pool`]: registered bounce buffers in two size classes (segments and
//!   one-cache-line slots), each buffer with its lkey, aligned on request:
//!   receive segments, bcopy send buffers, fetching-atomic results.
//!
//! A transport keeps for itself what depends on its wire and queue pairs:
//! its send queue and op records, its receive path (where it calls
//! [`am::AmHandler::call`]), flow control, and when an ep may post or take
//! a pending turn.
//!
//! This layer sits above the devices (`hca`, `ib`) and the failover
//! decisions, below the transports (`rc`, and `ud` to come); it knows no
//! transport.

pub mod am;
pub mod iface;
pub mod pending;
pub mod pool;
pub mod progress;
