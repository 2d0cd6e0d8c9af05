//! mlx5 formats shared by the datapath and the soft HCA (pure, no I/O): send
//! WQE segments and ring addressing, the WQE decoder, CQE64, doorbell
//! records, the ring descriptions a driver and its device share, and 24-bit
//! PSN arithmetic. Field layouts and values follow
//! rdma-core's `mlx5dv.h` and the kernel's `include/linux/mlx5/`; everything
//! multi-byte is big-endian where the device reads or writes it.

pub mod builder;
pub mod cqe;
pub mod decode;
pub mod doorbell;
pub mod endian;
pub mod psn;
pub mod rings;
pub mod wqe;

pub use builder::{
    inline_wqe_ds, write_inline_wqe, write_inline_wqe_prechecked, InlineSegs, WqeBuilder,
};
pub use cqe::*;
pub use decode::{
    decode_recv_wqe, decode_send_wqe, decode_ud_send_wqe, DataEntry, DataIter, InlineData, RecvWqe,
    SendOp, SendWqe, SrqNextSeg, WqeError,
};
pub use doorbell::*;
pub use psn::*;
pub use rings::{AtomicResultOrder, CqRing, RecvRing, SendRing};
pub use wqe::*;
