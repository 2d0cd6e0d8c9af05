//! Remote keys as UCX's ib md packs them: one 64-bit word per registration,
//! read back by `uct_rkey_unpack` in any process, and the two keys RDMA and
//! atomics take from it.

use std::ffi::c_void;

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

/// Writes the packed rkey of `handle` (`RKEY_PACKED_SIZE` bytes, in host
/// order as UCX's ib md stores it) at `buffer`.
///
/// # Safety
/// `buffer` must be writable for `RKEY_PACKED_SIZE` bytes; it need not be
/// aligned.
pub unsafe fn store_packed_rkey(handle: &MemHandle, buffer: *mut c_void) {
    let packed = pack_rkey(handle.mr.keys().rkey);
    // SAFETY: writable for 8 bytes by the contract; write_unaligned has no
    // alignment requirement.
    unsafe { buffer.cast::<u64>().write_unaligned(packed) };
}

/// The `uct_rkey_t` a packed rkey at `buffer` unpacks to: the packed word
/// itself (no handle is needed to use it).
///
/// # Safety
/// `buffer` must be readable for `RKEY_PACKED_SIZE` bytes; it need not be
/// aligned.
pub unsafe fn load_packed_rkey(buffer: *const c_void) -> uct_rkey_t {
    // SAFETY: readable for 8 bytes by the contract; read_unaligned has no
    // alignment requirement.
    unsafe { buffer.cast::<u64>().read_unaligned() as uct_rkey_t }
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
