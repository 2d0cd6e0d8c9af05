//! The software HCA: a device in this process that consumes the mlx5 rings
//! the transport writes, runs the RC protocol engine, talks RoCEv2 over UDP,
//! and writes CQE64s back (DESIGN.md §4).
//!
//! - `engine`, `wire`, `engine_fuzzing`: the sans-IO part (the RC state
//!   machine per QP, RoCEv2 packet parse/emit with ICRC, the engine fuzz
//!   checks), a crate of its own, `crates/softhca`, re-exported here;
//! - `device`, `qp`, `queues`, `translate`: rings, doorbells, CQ writing, the
//!   service thread;
//! - `link`: the UDP port, its faults and where a QP's packets go (`Tx`);
//!   `batch`: datagrams in batches (`sendmmsg`/`recvmmsg`); `shm`: the
//!   same-host rings; `registry`: process-wide devices; `limits`: what the
//!   device supports; `settings`: what the layer above hands in.
//!
//! This device half implements `hca`'s backend interface and returns its
//! statuses, so it stays in `uct` until those have a home below both
//! crates (see `crates/softhca`).

use softhca::{batch, link, shm};
/// The sans-IO part, a crate of its own (`crates/softhca`), under the
/// names the device half and the tests use.
pub use softhca::{engine, engine_fuzzing, wire};

mod device;
mod handles;
mod limits;
mod memory;
mod os;
mod qp;
mod queues;
mod registry;
mod settings;
mod translate;

pub use device::ReceiveMark;
pub use handles::{
    SoftCq, SoftDevice, SoftDoorbell, SoftEventChannel, SoftMr, SoftPd, SoftQp, SoftSrq,
};
pub use limits::{MAX_CQE, MAX_QP_WQEBB, MAX_RD_ATOMIC, MAX_SRQ_SGE, MAX_SRQ_WQE, PORT};
pub use link::{Faults, LinkStats};
pub use registry::{drop_next, set_faults};
pub use settings::{DeviceSpec, Settings, Wire};
