//! Memory registrations of the soft device and the engine's [`Memory`] over
//! them: which byte ranges of this process the device may touch, under which
//! key, with which rights.
//!
//! Every DMA the device does (gathering a send, scattering a receive, serving
//! a remote WRITE, READ or atomic) is checked against the table first, so a
//! bad key, a range past the region's end, a region of another protection
//! domain or a missing right is refused before any byte moves.

use super::IdMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::engine::{Access, AtomicOp, MemError, MemResult, Memory};
use mlx5::AtomicResultOrder;

/// One registered region. `addr..addr + len` is process memory the caller
/// promised stays valid until deregistration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub addr: usize,
    pub len: usize,
    pub access: Access,
    pub pd: u32,
}

/// Keys are `index << 8 | generation`: the low byte changes each time a key
/// is made, so a stale key of a deregistered region is refused.
#[derive(Debug, Default)]
pub struct MrTable {
    regions: IdMap<Region>,
    next_index: u32,
    generation: u8,
    /// The byte order of fetched-atomic results in the requester's buffer,
    /// per width. Host order by default; the test stand-in for
    /// libibverbs/libmlx5 sets mlx5's order, which its users expect.
    pub atomic_result_order: AtomicResultOrder,
}

impl MrTable {
    /// Registers a region and returns its key (used as both lkey and rkey,
    /// as mlx5 does).
    pub fn insert(&mut self, region: Region) -> u32 {
        self.next_index = (self.next_index.wrapping_add(1)) & 0x00ff_ffff;
        if self.next_index == 0 {
            self.next_index = 1;
        }
        self.generation = self.generation.wrapping_add(1);
        let mut key = (self.next_index << 8) | u32::from(self.generation);
        // After 2^24 registrations indices wrap; skip keys still in use.
        while self.regions.contains_key(&key) {
            key = key.wrapping_add(0x100);
        }
        self.regions.insert(key, region);
        key
    }

    pub fn remove(&mut self, key: u32) -> Option<Region> {
        self.regions.remove(&key)
    }

    /// Checks that `[addr, addr + len)` lies inside the region of `key`, in
    /// protection domain `pd`, with `access`; returns the address. A region
    /// of another PD is refused as an invalid key, as hardware does.
    pub fn locate(
        &self,
        pd: u32,
        key: u32,
        addr: u64,
        len: u64,
        access: Access,
    ) -> MemResult<*mut u8> {
        let region = self
            .regions
            .get(&key)
            .filter(|r| r.pd == pd)
            .ok_or(MemError::InvalidKey)?;
        if !region.access.contains(access) {
            return Err(MemError::AccessDenied);
        }
        let start = usize::try_from(addr).map_err(|_| MemError::OutOfBounds)?;
        let len = usize::try_from(len).map_err(|_| MemError::OutOfBounds)?;
        let end = start.checked_add(len).ok_or(MemError::OutOfBounds)?;
        let region_end = region
            .addr
            .checked_add(region.len)
            .ok_or(MemError::OutOfBounds)?;
        if len != 0 && (start < region.addr || end > region_end) {
            return Err(MemError::OutOfBounds);
        }
        Ok(start as *mut u8)
    }
}

/// The engine's view of this process's memory, for one QP (its PD).
///
/// Copies go through raw pointers: the application may touch the same bytes
/// concurrently (that is what RDMA is), and the table guarantees the range
/// is registered memory that stays valid while the device lock is held
/// (deregistration takes the same lock).
pub struct ProcessMemory<'a> {
    pub table: &'a MrTable,
    pub pd: u32,
}

impl Memory for ProcessMemory<'_> {
    fn check(&self, key: u32, addr: u64, len: u64, access: Access) -> MemResult {
        self.table
            .locate(self.pd, key, addr, len, access)
            .map(|_| ())
    }

    fn read(&self, key: u32, addr: u64, buf: &mut [u8], access: Access) -> MemResult {
        let src = self
            .table
            .locate(self.pd, key, addr, buf.len() as u64, access)?;
        if !buf.is_empty() {
            // SAFETY: `locate` proved `src..src + buf.len()` is inside a
            // registered region, which the registrant keeps valid until it
            // deregisters (not possible while we hold the device lock); `buf`
            // is a Rust buffer and cannot overlap registered memory we copy
            // from in a way that matters for a byte copy.
            unsafe { std::ptr::copy(src, buf.as_mut_ptr(), buf.len()) };
        }
        Ok(())
    }

    fn write(&mut self, key: u32, addr: u64, data: &[u8], access: Access) -> MemResult {
        let dst = self
            .table
            .locate(self.pd, key, addr, data.len() as u64, access)?;
        if !data.is_empty() {
            // SAFETY: as in `read`, the destination range is registered,
            // valid memory with the right granted; `copy` tolerates overlap.
            unsafe { std::ptr::copy(data.as_ptr(), dst, data.len()) };
        }
        Ok(())
    }

    fn store_atomic_result(&mut self, key: u32, addr: u64, value: u64, size: u8) -> MemResult {
        let width = if size == 4 { 4 } else { 8 };
        let narrowed = if width == 4 {
            u64::from(value as u32)
        } else {
            value
        };
        let mut bytes = [0u8; 8];
        if self.table.atomic_result_order.big_endian(size) {
            bytes[..width].copy_from_slice(&narrowed.to_be_bytes()[8 - width..]);
        } else if width == 4 {
            bytes[..4].copy_from_slice(&(narrowed as u32).to_ne_bytes());
        } else {
            bytes.copy_from_slice(&narrowed.to_ne_bytes());
        }
        self.write(key, addr, &bytes[..width], Access::LOCAL_WRITE)
    }

    fn atomic(&mut self, key: u32, addr: u64, op: &AtomicOp, access: Access) -> MemResult<u64> {
        let size = u64::from(op.size_bytes());
        let target = self.table.locate(self.pd, key, addr, size, access)?;
        if (target as usize) % (size as usize) != 0 {
            // Never build a misaligned atomic reference; the engine already
            // NAKs misaligned atomics, this is the device's own guard.
            return Err(MemError::OutOfBounds);
        }
        // The closure never refuses, so `fetch_update` cannot fail.
        let old = if size == 4 {
            // SAFETY: `target` is 4-byte aligned, inside registered memory
            // (checked above), and AtomicU32 has u32's layout. Other threads
            // of the process may use the word concurrently, hence atomics.
            let cell = unsafe { &*(target as *const AtomicU32) };
            cell.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |old| {
                Some(op.apply(u64::from(old)) as u32)
            })
            .map_or_else(u64::from, u64::from)
        } else {
            // SAFETY: as above for an 8-byte aligned AtomicU64.
            let cell = unsafe { &*(target as *const AtomicU64) };
            cell.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |old| {
                Some(op.apply(old))
            })
            .unwrap_or_else(|old| old)
        };
        Ok(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_rights_pd_and_stale_keys() {
        let mut buf = vec![0u64; 4];
        let addr = buf.as_mut_ptr() as usize;
        let mut table = MrTable::default();
        let key = table.insert(Region {
            addr,
            len: 32,
            access: Access::LOCAL_WRITE.union(Access::REMOTE_ATOMIC),
            pd: 7,
        });
        let a = addr as u64;
        assert!(table.locate(7, key, a, 32, Access::LOCAL_WRITE).is_ok());
        assert_eq!(
            table.locate(7, key, a + 1, 32, Access::LOCAL_READ),
            Err(MemError::OutOfBounds)
        );
        assert_eq!(
            table.locate(7, key, a - 1, 1, Access::LOCAL_READ),
            Err(MemError::OutOfBounds)
        );
        assert_eq!(
            table.locate(7, key, u64::MAX, 2, Access::LOCAL_READ),
            Err(MemError::OutOfBounds)
        );
        assert_eq!(
            table.locate(7, key, a, 8, Access::REMOTE_WRITE),
            Err(MemError::AccessDenied)
        );
        assert_eq!(
            table.locate(8, key, a, 8, Access::LOCAL_READ),
            Err(MemError::InvalidKey)
        );

        let mut mem = ProcessMemory {
            table: &table,
            pd: 7,
        };
        mem.write(key, a + 8, &5u64.to_ne_bytes(), Access::LOCAL_WRITE)
            .unwrap();
        let old = mem
            .atomic(
                key,
                a + 8,
                &AtomicOp::FetchAdd { add: 3 },
                Access::REMOTE_ATOMIC,
            )
            .unwrap();
        assert_eq!(old, 5);
        assert_eq!(
            mem.atomic(
                key,
                a + 4,
                &AtomicOp::FetchAdd { add: 3 },
                Access::REMOTE_ATOMIC
            ),
            Err(MemError::OutOfBounds)
        );
        let mut out = [0u8; 8];
        mem.read(key, a + 8, &mut out, Access::LOCAL_READ).unwrap();
        assert_eq!(u64::from_ne_bytes(out), 8);
        assert_eq!(buf[1], 8);

        assert!(table.remove(key).is_some());
        assert_eq!(
            table.locate(7, key, a, 8, Access::LOCAL_READ),
            Err(MemError::InvalidKey)
        );
        let again = table.insert(Region {
            addr,
            len: 32,
            access: Access::ALL,
            pd: 7,
        });
        assert_ne!(again, key, "a new registration never reuses the old key");
    }

    #[test]
    fn atomic_results_in_host_or_big_endian_order() {
        let mut buf = [0u8; 16];
        let addr = buf.as_mut_ptr() as usize;
        let mut table = MrTable::default();
        let key = table.insert(Region {
            addr,
            len: 16,
            access: Access::LOCAL_WRITE,
            pd: 1,
        });
        let a = addr as u64;
        let value = 0x0102_0304_0506_0708u64;
        let mut mem = ProcessMemory {
            table: &table,
            pd: 1,
        };
        mem.store_atomic_result(key, a, value, 8).unwrap();
        mem.store_atomic_result(key, a + 8, value, 4).unwrap();
        assert_eq!(buf[..8], value.to_ne_bytes());
        assert_eq!(buf[8..12], 0x0506_0708u32.to_ne_bytes());
        assert_eq!(buf[12..], [0; 4], "a 32-bit result writes 4 bytes");

        table.atomic_result_order = AtomicResultOrder::MLX5_HOST_ENDIAN_8B;
        let mut mem = ProcessMemory {
            table: &table,
            pd: 1,
        };
        mem.store_atomic_result(key, a, value, 8).unwrap();
        mem.store_atomic_result(key, a + 8, value, 4).unwrap();
        assert_eq!(buf[..8], value.to_ne_bytes(), "64-bit stays host order");
        assert_eq!(buf[8..12], [5, 6, 7, 8], "32-bit big-endian");
        assert_eq!(buf[12..], [0; 4]);

        table.atomic_result_order = AtomicResultOrder {
            width32_big_endian: false,
            width64_big_endian: true,
        };
        let mut mem = ProcessMemory {
            table: &table,
            pd: 1,
        };
        mem.store_atomic_result(key, a, value, 8).unwrap();
        mem.store_atomic_result(key, a + 8, value, 4).unwrap();
        assert_eq!(buf[..8], [1, 2, 3, 4, 5, 6, 7, 8], "64-bit big-endian");
        assert_eq!(
            buf[8..12],
            0x0506_0708u32.to_ne_bytes(),
            "32-bit host order"
        );
        assert_eq!(buf[12..], [0; 4]);
    }
}
