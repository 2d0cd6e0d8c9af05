//! A Rust implementation of UCX's transport layer (`libuct`): the `rc_mlx5`
//! transport, the failover API of UCX master, and a software HCA so that all
//! of it runs without RDMA hardware. See `DESIGN.md` in the steering repo and
//! the README for the layering.
//!
//! Where the folders go beyond `DESIGN.md` §6 (each for one owner or one
//! rule the sketch leaves without a home):
//! - `hca/rings.rs`: the safe owners of ring memory (send ring, CQ poll,
//!   SRQ, doorbell records), so no transport code derives raw slices;
//!   `hca/devices.rs`: which backend opens which device.
//! - `rc/limits.rs` (configured sizes and the AM header layout),
//!   `rc/fc.rs` (AM flow control),
//!   `rc/atomic.rs` (atomic WQEs), `rc/failover.rs` (rc's side of tokens and
//!   purge: the op table's facts; the rules stay in `failover/`).
//! - `core/id_map.rs` (the Fx-hashed QPN/handle maps), `core/tombstone.rs`
//!   (destroyed-handle detection), `core/ucx_libucs.rs` (sharing a process
//!   with UCX's own libucs).
//! - `api/handles.rs`, `api/c_array.rs`, `api/checks.rs`: the one place each
//!   C-argument check lives, used by every entry-point file.

// Every unsafe operation sits in its own `unsafe {}` block with its SAFETY
// reason, also inside `unsafe fn`s, so the blocks are the whole count.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod abi;
pub mod api;
pub mod cm;
pub mod core;
pub mod failover;
pub mod hca;
pub mod ib;
pub mod rc;
pub mod uct;

/// The mlx5 formats (`crates/mlx5`), under the name every layer uses.
pub use ::mlx5;
