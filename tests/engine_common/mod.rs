//! Shared by the soft HCA engine tests: the four-region memory map of the
//! op and failover tests, and draining a QP's completions.
#![allow(dead_code)]

use uct::hca::soft::engine::{CompletionStatus, Qp};

/// Requester-local buffers and receive buffers (`LOCAL_WRITE`).
pub const KEY_LOCAL: u32 = 1;
/// Target of RDMA WRITEs.
pub const KEY_WRITE: u32 = 2;
/// Source of RDMA READs (prefilled).
pub const KEY_READ: u32 = 3;
/// Atomic cells.
pub const KEY_ATOMIC: u32 = 4;
pub const BASE_LOCAL: u64 = 0x1000_0000;
pub const BASE_WRITE: u64 = 0x2000_0000;
pub const BASE_READ: u64 = 0x3000_0000;
pub const BASE_ATOMIC: u64 = 0x4000_0000;

/// Every completion `qp` has now: (wr_id, status), in order.
pub fn poll_all(qp: &mut Qp) -> Vec<(u64, CompletionStatus)> {
    std::iter::from_fn(|| qp.poll_completion())
        .map(|c| (c.wr_id, c.status))
        .collect()
}
