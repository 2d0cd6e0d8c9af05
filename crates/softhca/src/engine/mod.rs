//! The sans-IO protocol engine of the soft HCA (DESIGN.md §4): RC queue
//! pairs ([`Qp`]) and UD queue pairs ([`UdQp`]).
//!
//! One [`Qp`] per queue pair: a pure state machine driven by virtual time and
//! events (posted work requests, received packets, timer ticks) that produces
//! packets to transmit and completions to report, in the style of
//! quinn-proto and smoltcp. It never does I/O, never reads a clock, never
//! spawns anything: the device layer (rings, UDP link, service thread) feeds
//! it and drains it; the tests drive it over a simulated link.
//!
//! Memory is reached only through the [`Memory`] trait (lkey/rkey lookup with
//! bounds and access rights), so tests use [`SimMemory`] and the device uses
//! the process's registered memory.
//!
//! Driving one QP (what the device's service thread and progress do):
//!
//! 1. `modify_to_init`, `modify_to_rtr(RtrAttrs)`, `modify_to_rts(RtsAttrs)`
//!    as the transport modifies the QP; `modify_to_error`, `reset`.
//! 2. `post_send(SendWr)` for each WQE decoded from the send ring,
//!    `post_recv(RecvWr)` for receives.
//! 3. `handle_packet(now, &PacketRepr, &mut mem)` for each datagram whose
//!    BTH names this QP (parsed and ICRC-checked by `wire`).
//! 4. `handle_timeout(now)` when `next_timeout()` is due.
//! 5. After any of the above: `poll_transmit(now, &mut mem)` until `None`
//!    (emit each [`Transmit::repr`] to the peer), then `poll_completion()`
//!    until `None` (write CQEs). Send completions come in posting order;
//!    unsignalled successes produce none; errors and flushes always do.
//!
//! `now` only has to be monotonic; [`Instant`] is nanoseconds since any
//! epoch. Nothing here blocks, allocates without bound on input, or panics on
//! any packet.

mod memory;
mod message;
mod psn;
mod qp;
mod requester;
mod responder;
pub mod sim;
mod time;
mod ud;
mod wr;

pub use memory::{
    check_sgl, gather, scatter, sgl_len, Access, MemError, MemResult, Memory, SimMemory,
};
pub use qp::{PathMtu, Qp, QpConfig, QpError, QpState, QpStats, RtrAttrs, RtsAttrs, Transmit};
pub use time::{ack_timeout_from_ib, rnr_timer_duration, Instant};
pub use ud::{UdConfig, UdDest, UdQp, UdSendWr, UdStats, UdTransmit, QKEY_USE_QP};
pub use wr::{
    AtomicOp, Completion, CompletionOpcode, CompletionStatus, LocalData, RecvWr, RemoteBuf, SendOp,
    SendWr, Sge, WorkQueue,
};
