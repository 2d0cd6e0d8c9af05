//! The rdma-core backend: real ConnectX devices through libibverbs and
//! libmlx5, loaded with `dlopen` (no link-time dependency).
//!
//! Today: the FFI ([`ffi`], layout-checked against Debian's headers) and
//! device discovery ([`discovery`]). Not yet: the `Verbs` variants of the
//! `hca` handles (PD, MR, CQ, SRQ, QP through `mlx5dv_init_obj`, doorbells),
//! so the transport still runs only on the soft HCA.

pub mod discovery;
pub mod ffi;
pub mod objects;
