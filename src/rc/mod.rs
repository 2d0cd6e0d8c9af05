//! The `rc_mlx5` transport: reliable connected QPs driven by writing mlx5
//! WQEs into the send ring of a [`crate::hca`] device.
//!
//! - [`domain`]: the device and protection domain shared by a process's
//!   memory domains and ifaces of one HCA; memory handles and packed rkeys.
//! - [`iface`]: the iface (CQs, SRQ of bounce buffers, progress, query,
//!   addresses, the receive path and AM dispatch, error delivery).
//! - [`ep`]: the endpoint: QP, send ring ([`ep::TxRing`]), the table of
//!   outstanding operations ([`ep::OpTable`], what failover walks), the
//!   send-path core ([`ep::RcEp::post`]) and completion handling.
//! - [`ops`]: the `uct_iface_ops_t` slots of the data path, each a thin
//!   layer of argument checks over the core.

pub mod atomic;
pub mod domain;
pub mod ep;
pub mod failover;
pub mod iface;
pub mod ops;
pub mod pool;
