//! The software HCA: a device in this process that consumes the mlx5 rings
//! the transport writes, runs the RC protocol engine, talks RoCEv2 over UDP,
//! and writes CQE64s back (DESIGN.md §4).
//!
//! - `engine/`: the sans-IO RC state machine per QP;
//! - `wire/`: RoCEv2 packet parse/emit with ICRC;
//! - `device`, `qp`, `queues`, `translate`: rings, doorbells, CQ writing, the
//!   service thread;
//! - `link`: the UDP port, its faults and where a QP's packets go (`Tx`);
//!   `batch`: datagrams in batches (`sendmmsg`/`recvmmsg`); `shm`: the
//!   same-host rings; `registry`: process-wide devices; `limits`: what the
//!   device supports;
//! - `engine_fuzzing`: the checks of the engine fuzz target (tests only).

pub mod engine;
pub mod engine_fuzzing;
pub mod wire;

mod batch;
mod device;
mod handles;
mod limits;
mod link;
mod memory;
mod os;
mod qp;
mod queues;
mod registry;
mod settings;
mod shm;
mod translate;

pub use handles::{
    SoftCq, SoftDevice, SoftDoorbell, SoftEventChannel, SoftMr, SoftPd, SoftQp, SoftSrq,
};
pub use limits::{MAX_CQE, MAX_QP_WQEBB, MAX_RD_ATOMIC, MAX_SRQ_SGE, MAX_SRQ_WQE, PORT};
pub use link::{Faults, LinkStats};
pub use registry::{drop_next, set_faults};
pub use settings::{DeviceSpec, Settings, Wire};
