//! The rdma-core backend: real ConnectX devices through libibverbs and
//! libmlx5, loaded with `dlopen` (no link-time dependency).
//!
//! * [`ffi`]: the hand-written C API subset and the loader (layouts checked
//!   against Debian's `libibverbs-dev` by `tests/verbs_layout.rs`).
//! * [`discovery`]: mlx5 devices with active ports, RoCE GID choice, the
//!   naming rule when real and soft devices are listed together.
//! * [`objects`]: device, PD, MR, CQ, SRQ, RC QP and doorbell on rdma-core,
//!   exposing the mlx5 rings in the `hca` ring types.
//!
//! Not yet: the `Verbs` variants of the `hca` handle enums (so the transport
//! still runs only on the soft HCA), CQ arming, and any run on a
//! device or on a stand-in library; nothing here has touched hardware.

pub mod discovery;
pub mod ffi;
pub mod objects;
