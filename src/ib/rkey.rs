//! Remote keys as UCX's ib md packs them: one 64-bit word per registration,
//! read back by `uct_rkey_unpack` in any process, and the two keys RDMA and
//! atomics take from it.

use crate::abi::*;
use crate::ib::domain::MemHandle;

/// Bytes of a packed remote key: one 64-bit word, the size UCX's ib md
/// reports (what goes into it arrives with memory registration).
pub const RKEY_PACKED_SIZE: usize = 8;

/// The value of an invalid memory key (UCX's `UCT_IB_INVALID_MKEY`).
pub const INVALID_MKEY: u32 = 0xffff_ffff;

/// The packed rkey (8 bytes, `RKEY_PACKED_SIZE`), as UCX's ib md packs it:
/// the RDMA rkey in the low 32 bits, the atomic rkey in the high 32 bits
/// (`INVALID_MKEY` when atomics use the same key). `uct_rkey_unpack` turns
/// the packed bytes back into this 64-bit `uct_rkey_t`.
pub fn pack_rkey(rkey: u32) -> u64 {
    (u64::from(INVALID_MKEY) << 32) | u64::from(rkey)
}

// The packed rkey is exactly one 64-bit word.
const _: () = assert!(RKEY_PACKED_SIZE == std::mem::size_of::<u64>());

/// The packed rkey of `handle`: `RKEY_PACKED_SIZE` bytes, in host order as
/// UCX's ib md stores it.
pub fn packed_rkey(handle: &MemHandle) -> [u8; RKEY_PACKED_SIZE] {
    pack_rkey(handle.mr.keys().rkey).to_ne_bytes()
}

/// The `uct_rkey_t` a packed rkey unpacks to: the packed word itself (no
/// handle is needed to use it).
pub fn unpacked_rkey(packed: [u8; RKEY_PACKED_SIZE]) -> uct_rkey_t {
    u64::from_ne_bytes(packed) as uct_rkey_t
}

/// The key RDMA READ/WRITE use from an unpacked `uct_rkey_t`.
#[inline]
pub fn rdma_rkey(rkey: uct_rkey_t) -> u32 {
    rkey as u32
}

/// The key atomics use from an unpacked `uct_rkey_t`: the atomic key when
/// one was packed, otherwise the RDMA key.
#[inline]
pub fn atomic_rkey(rkey: uct_rkey_t) -> u32 {
    match (rkey >> 32) as u32 {
        INVALID_MKEY => rkey as u32,
        atomic => atomic,
    }
}
