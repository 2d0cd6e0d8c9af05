//! The software HCA's sans-IO part (DESIGN.md §4): what the soft device in
//! `uct` (`src/hca/soft`: rings, doorbells, the UDP and shared-memory link,
//! the service thread) runs, with no I/O, no clock and no thread of its own.
//!
//! - [`engine`]: the RC protocol state machine per QP, driven by virtual
//!   time; [`engine::sim`] joins two over a simulated lossy link for tests;
//! - [`wire`]: RoCEv2 packets (BTH … ICRC) parsed with checked views and
//!   emitted, never panicking on any input;
//! - [`engine_fuzzing`]: the checks of the engine fuzz target (and of the
//!   seeded test that runs them without a fuzzer).
//!
//! It depends only on the mlx5 formats (`crates/mlx5`: PSN arithmetic,
//! packet counts, big-endian fields). The device half still implements
//! `uct`'s backend interface (`hca`) and returns its statuses, so it stays
//! in `uct` until those have a home below both crates.

pub mod batch;
pub mod engine;
pub mod engine_fuzzing;
pub mod link;
pub mod shm;
pub mod wire;
