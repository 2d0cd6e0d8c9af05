//! The rdma-core backend: real ConnectX devices through libibverbs and
//! libmlx5, loaded with `dlopen` (no link-time dependency).
//!
//! * [`ffi`]: the hand-written C API subset and the loader (layouts checked
//!   against Debian's `libibverbs-dev` by `tests/verbs_layout.rs`); the
//!   entry points are typed so that most calls are safe.
//! * [`owned`]: the owners of rdma-core objects and of the device list,
//!   the only source of the live-object references the calls take.
//! * [`discovery`]: mlx5 devices with active ports, RoCE GID choice, the
//!   naming rule when real and soft devices are listed together.
//! * [`objects`]: device, PD, MR, channel, CQ, SRQ, RC QP and doorbell on
//!   rdma-core, exposing the mlx5 rings in the `hca` ring types: the
//!   `Verbs` variants of the `hca` handles.
//! * [`cq_arm`]: the mlx5 CQ arm doorbell format (the backend arms CQs
//!   itself with the transport's consumer index).
//! * [`faults`]: the soft HCA fault calls for a device served by rdma-core
//!   (forwarded to a test stand-in that has them, else unsupported).
//!
//! The WQEs are the transport's, unchanged: a zero-length RDMA WRITE or
//! READ is a remote-address segment and no data segment (mlx5 may read a
//! byte count of 0 as 2 GiB), and it relies on the NIC checking neither
//! the R_Key nor the address at length 0, as the InfiniBand spec has every
//! responder do and the soft HCA does (its `remote_access_allowed`).
//!
//! Nothing here has run on a ConnectX NIC; the success paths run against
//! the test stand-in library only (see docs/connectx.md).

pub mod cq_arm;
pub mod discovery;
pub mod faults;
pub mod ffi;
pub mod objects;
pub mod owned;

pub use objects::{
    VerbsChannel, VerbsCq, VerbsDevice, VerbsDoorbell, VerbsMr, VerbsPd, VerbsQp, VerbsSrq,
};
