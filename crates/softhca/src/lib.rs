//! The software HCA (DESIGN.md §4): a NIC in this process, with no RDMA
//! hardware, that `uct`'s rc_mlx5 datapath drives exactly as it drives a
//! real mlx5 device (WQEs into a ring, a doorbell, CQE64s back).
//!
//! - [`device`]: the device and its objects (protection domains, memory
//!   registrations, CQs, SRQs, QPs, doorbells, event channels), the
//!   process's devices and their faults, configured by a
//!   [`device::Settings`] handed in from above (nothing here reads the
//!   environment);
//! - [`engine`]: the RC and UD protocol state machines per QP, sans-IO,
//!   driven by virtual time; [`engine::sim`] joins two RC QPs over a
//!   simulated lossy link, and UD QPs on a simulated network, for tests;
//! - [`wire`]: RoCEv2 packets (BTH … ICRC) parsed with checked views and
//!   emitted, never panicking on any input;
//! - [`link`]: the device's port (UDP, and [`shm`] rings to devices on the
//!   same host), its faults and counters; [`batch`]: datagrams in batches
//!   (`sendmmsg`/`recvmmsg`);
//! - [`engine_fuzzing`]: the checks of the engine fuzz target (and of the
//!   seeded test that runs them without a fuzzer).
//!
//! It depends only on the mlx5 formats (`crates/mlx5`: WQE and CQE
//! layouts, the ring descriptions, PSN arithmetic). `uct` adapts the
//! device to its backend interface in `hca::soft`.

// Every unsafe operation sits in its own `unsafe {}` block with its SAFETY
// reason, also inside `unsafe fn`s.
#![deny(unsafe_op_in_unsafe_fn)]

mod batch;
pub mod device;
pub mod engine;
pub mod engine_fuzzing;
mod link;
mod shm;
pub mod wire;
