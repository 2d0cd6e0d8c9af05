//! The soft device: a NIC in this process that consumes the mlx5 rings its
//! user writes, runs one RC or UD [`engine`](crate::engine) per QP, carries their
//! packets over its [`link`](crate::link) (UDP, same-host rings), and writes
//! CQE64s back (DESIGN.md §4).
//!
//! The interface is the objects of `handles` ([`Device`], [`Pd`], [`Mr`],
//! [`Cq`], [`Srq`], [`Qp`], [`Doorbell`], [`EventChannel`]), the process's
//! devices and their faults ([`drop_next`], [`set_faults`]), all configured
//! by [`Settings`] handed in from above, and refused with an [`Error`].
//! Inside: `opened` (the open device: its objects behind one mutex, the
//! service thread), `qp` (one QP: engine plus rings), `queues` (CQ and SRQ
//! rings), `translate` (WQEs to work requests, completions to CQEs),
//! `memory` (registrations), `registry` (process-wide devices), `os`
//! (page-aligned buffers, eventfd, poll), `limits`.

mod handles;
pub mod limits;
mod memory;
mod opened;
mod os;
mod qp;
mod queues;
mod registry;
mod settings;
mod translate;

pub use crate::link::{Faults, LinkStats};
pub use handles::{Ah, Cq, Device, Doorbell, EventChannel, Mr, Pd, Qp, Srq};
pub use opened::ReceiveMark;
pub use qp::{QpStatus, Transition};
pub use registry::{drop_next, set_faults};
pub use settings::{DeviceSpec, Settings, Wire};

/// Why the soft device refused a call (each refusal is also logged where
/// it happens).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// An argument out of range, or objects that do not belong together.
    #[error("invalid parameter")]
    InvalidParam,
    /// No device (or port) by that name or number.
    #[error("no such device")]
    NoDevice,
    /// The device is open on another address.
    #[error("device busy")]
    Busy,
    /// No such object (a QP already destroyed).
    #[error("no such element")]
    NoElem,
    /// Out of memory for a ring.
    #[error("out of memory")]
    NoMemory,
    /// Out of a kernel resource (threads).
    #[error("out of resources")]
    NoResource,
    /// A system call failed (socket, eventfd).
    #[error("I/O error")]
    IoError,
}

/// Maps keyed by a number the device hands out (QPN, memory key), looked
/// up on every packet and completion: hashed with Fx (a multiply), not
/// SipHash. Keys come from the device, so a peer forging packets can at
/// worst make lookups in its own small table collide.
type IdMap<V> = std::collections::HashMap<u32, V, rustc_hash::FxBuildHasher>;
