//! What the engine needs from memory: key lookup with bounds and access
//! rights, copies, and atomics.
//!
//! The engine only talks to [`Memory`]; the device implements it over the
//! process's registered memory, tests over [`SimMemory`].

use super::wr::{AtomicOp, Sge};
use std::ops::Range;

/// Access rights of a memory region (the `ibv_access_flags` bit values).
/// Local read is implied by any valid key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Access(pub u32);

impl Access {
    /// Local read only.
    pub const LOCAL_READ: Access = Access(0);
    pub const LOCAL_WRITE: Access = Access(1);
    pub const REMOTE_WRITE: Access = Access(2);
    pub const REMOTE_READ: Access = Access(4);
    pub const REMOTE_ATOMIC: Access = Access(8);
    /// Every right.
    pub const ALL: Access = Access(1 | 2 | 4 | 8);

    /// Whether every right in `needed` is granted.
    #[inline]
    pub const fn contains(self, needed: Access) -> bool {
        self.0 & needed.0 == needed.0
    }

    #[inline]
    pub const fn union(self, other: Access) -> Access {
        Access(self.0 | other.0)
    }

    /// Whether these rights let the device write the region (a local
    /// scatter, a remote write or an atomic).
    #[inline]
    pub const fn lets_device_write(self) -> bool {
        self.0 & (Self::LOCAL_WRITE.0 | Self::REMOTE_WRITE.0 | Self::REMOTE_ATOMIC.0) != 0
    }
}

/// Why a memory access was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemError {
    /// No region has this key.
    InvalidKey,
    /// The range leaves the region (or wraps the address space).
    OutOfBounds,
    /// The region does not grant the access.
    AccessDenied,
}

/// What a [`Memory`] access returns.
pub type MemResult<T = ()> = Result<T, MemError>;

/// Registered memory as the engine sees it.
///
/// Every method checks the whole range before touching anything, so a
/// refused access leaves memory as it was.
pub trait Memory {
    /// Whether `[addr, addr + len)` lies in the region of `key` and the
    /// region grants `access`.
    fn check(&self, key: u32, addr: u64, len: u64, access: Access) -> MemResult;

    /// Copies `buf.len()` bytes from `addr` into `buf`.
    fn read(&self, key: u32, addr: u64, buf: &mut [u8], access: Access) -> MemResult;

    /// Copies `data` to `addr`.
    fn write(&mut self, key: u32, addr: u64, data: &[u8], access: Access) -> MemResult;

    /// Executes `op` on the `op.size()`-byte value at `addr` (aligned, checked
    /// by the engine) atomically with respect to other users of this memory,
    /// and returns the value it held before.
    fn atomic(&mut self, key: u32, addr: u64, op: &AtomicOp, access: Access) -> MemResult<u64>;

    /// Stores the value an atomic fetched into the requester's local buffer.
    /// The default writes it in host byte order, `size` bytes wide (the
    /// same order [`SimMemory`] executes atomics in); a device whose memory
    /// holds atomic operands in another byte order overrides both.
    fn store_atomic_result(&mut self, key: u32, addr: u64, value: u64, size: u8) -> MemResult {
        if size == 4 {
            self.write(
                key,
                addr,
                &(value as u32).to_ne_bytes(),
                Access::LOCAL_WRITE,
            )
        } else {
            self.write(key, addr, &value.to_ne_bytes(), Access::LOCAL_WRITE)
        }
    }
}

/// Total length of a scatter/gather list, `None` if it overflows.
pub fn sgl_len(sgl: &[Sge]) -> Option<u64> {
    sgl.iter()
        .try_fold(0u64, |acc, sge| acc.checked_add(u64::from(sge.len)))
}

/// Checks every element of a scatter/gather list for `access`.
pub fn check_sgl<M: Memory + ?Sized>(mem: &M, sgl: &[Sge], access: Access) -> MemResult {
    for sge in sgl {
        mem.check(sge.lkey, sge.addr, u64::from(sge.len), access)?;
    }
    Ok(())
}

/// Calls `f(lkey, addr, range_in_data)` for each piece of `[offset, offset +
/// len)` of the list's byte stream, `addr` being where the piece starts in
/// its element. `Err(OutOfBounds)` if the range runs past the end of the
/// list (nothing is visited in that case).
#[inline]
fn for_each_piece(
    sgl: &[Sge],
    offset: u64,
    len: usize,
    mut f: impl FnMut(u32, u64, Range<usize>) -> MemResult,
) -> MemResult {
    let total = sgl_len(sgl).unwrap_or(u64::MAX);
    match offset.checked_add(len as u64) {
        Some(end) if end <= total => {}
        _ => return Err(MemError::OutOfBounds),
    }
    let mut skip = offset;
    let mut done = 0usize;
    for sge in sgl {
        if done == len {
            break;
        }
        let sge_len = u64::from(sge.len);
        if skip >= sge_len {
            skip -= sge_len;
            continue;
        }
        let avail = sge_len - skip;
        let take = usize::try_from(avail).unwrap_or(usize::MAX).min(len - done);
        let addr = sge.addr.checked_add(skip).ok_or(MemError::OutOfBounds)?;
        f(sge.lkey, addr, done..done + take)?;
        done += take;
        skip = 0;
    }
    Ok(())
}

/// Reads `buf.len()` bytes at byte `offset` of a gather list (local read).
/// `Err(OutOfBounds)` if the list is shorter.
pub fn gather<M: Memory + ?Sized>(mem: &M, sgl: &[Sge], offset: u64, buf: &mut [u8]) -> MemResult {
    for_each_piece(sgl, offset, buf.len(), |lkey, addr, range| {
        let dst = buf.get_mut(range).ok_or(MemError::OutOfBounds)?;
        mem.read(lkey, addr, dst, Access::LOCAL_READ)
    })
}

/// Writes `data` at byte `offset` of a scatter list (local write).
/// `Err(OutOfBounds)` if the list is shorter; the caller checks the list's
/// keys beforehand, so a refusal cannot leave a partial write behind.
pub fn scatter<M: Memory + ?Sized>(
    mem: &mut M,
    sgl: &[Sge],
    offset: u64,
    data: &[u8],
) -> MemResult {
    for_each_piece(sgl, offset, data.len(), |lkey, addr, range| {
        let src = data.get(range).ok_or(MemError::OutOfBounds)?;
        mem.write(lkey, addr, src, Access::LOCAL_WRITE)
    })
}

/// One registered region of a [`SimMemory`].
#[derive(Clone, Debug)]
struct SimRegion {
    key: u32,
    base: u64,
    access: Access,
    bytes: Vec<u8>,
}

/// Memory for tests: regions at chosen virtual addresses, each with one key
/// (used as both lkey and rkey, as mlx5 does), backed by a `Vec`. Counts the
/// atomics it executes so tests can check exactly-once execution, and the
/// writes it accepts so a fuzzer can see that inputs reach memory.
#[derive(Clone, Debug, Default)]
pub struct SimMemory {
    regions: Vec<SimRegion>,
    atomics_executed: u64,
    writes_accepted: u64,
}

impl SimMemory {
    pub fn new() -> SimMemory {
        SimMemory::default()
    }

    /// Registers `len` zeroed bytes at `base` under `key` (replacing any
    /// region with the same key).
    pub fn register(&mut self, key: u32, base: u64, len: usize, access: Access) {
        self.regions.retain(|r| r.key != key);
        self.regions.push(SimRegion {
            key,
            base,
            access,
            bytes: vec![0; len],
        });
    }

    /// Removes the region of `key`.
    pub fn deregister(&mut self, key: u32) {
        self.regions.retain(|r| r.key != key);
    }

    /// The bytes of the region of `key`.
    pub fn region(&self, key: u32) -> Option<&[u8]> {
        self.regions
            .iter()
            .find(|r| r.key == key)
            .map(|r| r.bytes.as_slice())
    }

    /// The bytes of the region of `key`, writable (to set up test data).
    pub fn region_mut(&mut self, key: u32) -> Option<&mut [u8]> {
        self.regions
            .iter_mut()
            .find(|r| r.key == key)
            .map(|r| r.bytes.as_mut_slice())
    }

    /// How many atomics this memory has executed.
    pub fn atomics_executed(&self) -> u64 {
        self.atomics_executed
    }

    /// How many writes and atomics this memory has accepted.
    pub fn writes_accepted(&self) -> u64 {
        self.writes_accepted
    }

    /// The index of the region of `key` and the range `[addr, addr + len)`
    /// of its bytes, once the key, the rights and the bounds are checked.
    fn locate(
        &self,
        key: u32,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<(usize, Range<usize>), MemError> {
        let (index, region) = self
            .regions
            .iter()
            .enumerate()
            .find(|(_, r)| r.key == key)
            .ok_or(MemError::InvalidKey)?;
        if !region.access.contains(access) {
            return Err(MemError::AccessDenied);
        }
        let start = addr.checked_sub(region.base).ok_or(MemError::OutOfBounds)?;
        let end = start.checked_add(len).ok_or(MemError::OutOfBounds)?;
        if end > region.bytes.len() as u64 {
            return Err(MemError::OutOfBounds);
        }
        // Both fit in usize: `end` is at most the region's length.
        Ok((index, start as usize..end as usize))
    }

    /// The checked bytes `[addr, addr + len)` of the region of `key`, writable.
    fn bytes_mut(
        &mut self,
        key: u32,
        addr: u64,
        len: usize,
        access: Access,
    ) -> MemResult<&mut [u8]> {
        let (index, range) = self.locate(key, addr, len as u64, access)?;
        Ok(&mut self.regions[index].bytes[range])
    }
}

impl Memory for SimMemory {
    fn check(&self, key: u32, addr: u64, len: u64, access: Access) -> MemResult {
        self.locate(key, addr, len, access).map(|_| ())
    }

    fn read(&self, key: u32, addr: u64, buf: &mut [u8], access: Access) -> MemResult {
        let (index, range) = self.locate(key, addr, buf.len() as u64, access)?;
        buf.copy_from_slice(&self.regions[index].bytes[range]);
        Ok(())
    }

    fn write(&mut self, key: u32, addr: u64, data: &[u8], access: Access) -> MemResult {
        self.bytes_mut(key, addr, data.len(), access)?
            .copy_from_slice(data);
        self.writes_accepted += 1;
        Ok(())
    }

    fn atomic(&mut self, key: u32, addr: u64, op: &AtomicOp, access: Access) -> MemResult<u64> {
        let cell = self.bytes_mut(key, addr, usize::from(op.size_bytes()), access)?;
        let old = if let Ok(word) = <[u8; 4]>::try_from(&*cell) {
            let old = u32::from_ne_bytes(word);
            cell.copy_from_slice(&(op.apply(u64::from(old)) as u32).to_ne_bytes());
            u64::from(old)
        } else {
            let mut word = [0u8; 8];
            word.copy_from_slice(cell);
            let old = u64::from_ne_bytes(word);
            cell.copy_from_slice(&op.apply(old).to_ne_bytes());
            old
        };
        self.atomics_executed += 1;
        self.writes_accepted += 1;
        Ok(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem() -> SimMemory {
        let mut m = SimMemory::new();
        m.register(1, 0x1000, 16, Access::LOCAL_WRITE);
        m.register(2, 0x9000, 8, Access::REMOTE_READ);
        m
    }

    #[test]
    fn bounds_and_rights() {
        let mut m = mem();
        assert_eq!(m.check(1, 0x1000, 16, Access::LOCAL_WRITE), Ok(()));
        assert_eq!(
            m.check(1, 0x1001, 16, Access::LOCAL_READ),
            Err(MemError::OutOfBounds)
        );
        assert_eq!(
            m.check(1, 0xfff, 1, Access::LOCAL_READ),
            Err(MemError::OutOfBounds)
        );
        assert_eq!(
            m.check(1, u64::MAX, 2, Access::LOCAL_READ),
            Err(MemError::OutOfBounds)
        );
        assert_eq!(
            m.check(3, 0x1000, 1, Access::LOCAL_READ),
            Err(MemError::InvalidKey)
        );
        assert_eq!(
            m.write(2, 0x9000, &[1], Access::LOCAL_WRITE),
            Err(MemError::AccessDenied)
        );
        assert_eq!(m.region(2), Some(&[0u8; 8][..]));
    }

    #[test]
    fn scatter_gather_across_elements() {
        let mut m = mem();
        let sgl = [
            Sge {
                addr: 0x1000,
                len: 3,
                lkey: 1,
            },
            Sge {
                addr: 0x1008,
                len: 5,
                lkey: 1,
            },
        ];
        scatter(&mut m, &sgl, 1, &[1, 2, 3, 4, 5]).unwrap();
        assert_eq!(
            &m.region(1).unwrap()[..12],
            &[0, 1, 2, 0, 0, 0, 0, 0, 3, 4, 5, 0]
        );
        let mut out = [0u8; 4];
        gather(&m, &sgl, 2, &mut out).unwrap();
        assert_eq!(out, [2, 3, 4, 5]);
        // Past the end of the list: refused, nothing written.
        assert_eq!(
            scatter(&mut m, &sgl, 6, &[9, 9, 9]),
            Err(MemError::OutOfBounds)
        );
        assert_eq!(m.region(1).unwrap()[13..16], [0, 0, 0]);
    }
}
