//! The three rings a device and its driver share, as addresses and sizes:
//! the send queue (WQE basic blocks), the completion queue (CQE64 entries)
//! and the shared receive queue (linked-list receive WQEs), each with its
//! doorbell record; and the byte order of fetched atomic results. The
//! datapath and every device behind it (rdma-core's mlx5, the soft HCA)
//! describe their queues with these.

/// A completion queue ring: `cqe_count` CQE64 entries (a power of two) at
/// `buf`, written by the device with the owner bit of the pass
/// (`(index / cqe_count) & 1`); every entry starts with the INVALID opcode,
/// so [`crate::cqe_is_sw_owned`] tells new entries from old ones. The
/// transport sizes the CQ so that it cannot overflow (the soft device never
/// stops at unread entries; rdma-core CQs are created without UCX's
/// "overrun ignore", so there an overflow would be a CQ error). `dbrec[0]` holds the consumer
/// index the transport publishes (big-endian, 24 bits) and `dbrec[1]` the
/// arm word the driver writes to arm the CQ on rdma-core; the soft device reads
/// neither.
#[derive(Clone, Copy, Debug)]
pub struct CqRing {
    pub buf: *mut u8,
    pub cqe_count: u32,
    pub dbrec: *mut u32,
    pub cqn: u32,
}

/// A shared receive queue ring: `wqe_count` WQEs (a power of two) of
/// `stride` bytes at `buf`, each a 16-byte SRQ next-segment followed by
/// `max_sge` data segments (a shorter list ends with lkey
/// `MLX5_INVALID_LKEY`). The device takes WQEs as an mlx5 linked-list
/// SRQ does: starting at index 0, then following each taken WQE's
/// `next_wqe_index` (write `index + 1` to use the ring cyclically).
/// `dbrec[0]` is the receive counter the transport publishes
/// (`dbrec_word(count of WQEs posted so far)`); a receive CQE's
/// `wqe_counter` is the index of the WQE it consumed.
#[derive(Clone, Copy, Debug)]
pub struct RecvRing {
    pub buf: *mut u8,
    pub wqe_count: u32,
    pub stride: u32,
    pub max_sge: u32,
    pub dbrec: *mut u32,
    pub srqn: u32,
}

/// A send queue ring: `wqebb_count` 64-byte basic blocks (a power of two) at
/// `buf`. `dbrec[1]` is the send counter the transport publishes
/// (`dbrec_word(next_index)`, one atomic 32-bit store with release
/// ordering) before it rings the doorbell; the device consumes every WQE
/// up to that counter.
#[derive(Clone, Copy, Debug)]
pub struct SendRing {
    pub buf: *mut u8,
    pub wqebb_count: u32,
    pub dbrec: *mut u32,
    pub qpn: u32,
}

// SAFETY (all six): a ring description is addresses and sizes, copied by
// value; moving or sharing one between threads dereferences nothing. Every
// access through its pointers is an `unsafe` block of the ring's one user
// (the transport's poster or poller, or the device), justified there.
unsafe impl Send for CqRing {}
unsafe impl Sync for CqRing {}
unsafe impl Send for RecvRing {}
unsafe impl Sync for RecvRing {}
unsafe impl Send for SendRing {}
unsafe impl Sync for SendRing {}

/// Which fetched atomic values the device stores big-endian in the local
/// buffer rather than in host order; the transport byte-swaps exactly
/// those. The value at the responder is always in the responder's host
/// order. An mlx5 NIC whose firmware runs 8-byte atomics in host-endian
/// mode (the only mode in which its kernel driver reports
/// `IBV_ATOMIC_HCA`) returns 8-byte results in host order but still
/// returns 4-byte (masked) results big-endian; the soft HCA uses host
/// order for both unless told otherwise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicResultOrder {
    pub width32_big_endian: bool,
    pub width64_big_endian: bool,
}

impl AtomicResultOrder {
    /// What mlx5 hardware in host-endian 8-byte mode does.
    pub const MLX5_HOST_ENDIAN_8B: Self = Self {
        width32_big_endian: true,
        width64_big_endian: false,
    };

    /// Whether a result of `width_bytes` (4 or 8) arrives big-endian.
    pub fn big_endian(self, width_bytes: u8) -> bool {
        if width_bytes == 4 {
            self.width32_big_endian
        } else {
            self.width64_big_endian
        }
    }
}
