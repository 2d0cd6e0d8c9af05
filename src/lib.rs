//! A Rust implementation of UCX's transport layer (`libuct`): the `rc_mlx5`
//! transport, the failover API of UCX master, and a software HCA so that all
//! of it runs without RDMA hardware. See `DESIGN.md` in the steering repo and
//! the README for the layering.

pub mod abi;
pub mod api;
pub mod core;
pub mod failover;
pub mod hca;
pub mod ib;
pub mod mlx5;
pub mod rc;
