//! The device behind the rings: the backend interface, the software HCA, and
//! (later) rdma-core.

pub mod soft;
