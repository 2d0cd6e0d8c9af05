//! Registered bounce buffers: the receive segments the SRQ points at, the
//! send buffers of bcopy operations and the result slots of fetching
//! atomics. Buffers are carved from registered chunks that grow on demand
//! and are never returned to the system before the pool is dropped (UCX's
//! memory pools behave the same way), so a buffer pointer stays valid while
//! the pool lives.
//!
//! A pool has two size classes with separate free lists and bounds:
//! segments (the size the pool was made for) and small slots (one cache
//! line, for the 4- or 8-byte result of a fetching atomic, as UCX keeps
//! atomics in a pool of their own). Neither class can use up the other's
//! buffers, and a 64-byte slot costs an atomic far less memory than a
//! segment. Every buffer starts with a header: the lkey of its chunk
//! (4 bytes) and its class (4 bytes), so [`BufferPool::put`] takes any
//! buffer back to the class it came from.

use std::sync::Arc;

use crate::abi::ucs_status::Status;
use crate::hca::{Access, Mr};
use crate::ib::domain::Domain;

/// Bytes at the start of each buffer that hold its lkey and class.
pub const LKEY_BYTES: usize = 8;

/// Bytes of a small slot: one cache line, header included.
pub const SMALL_BUFFER_LEN: usize = 64;

/// Small slots added per growth (one registration each).
const SMALL_BUFFERS_PER_CHUNK: usize = 256;

/// Which free list a buffer returns to (stored in its header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum BufferClass {
    Segment = 0,
    Small = 1,
}

/// Fields drop in declaration order: the registration goes before the
/// memory it covers is freed.
struct Chunk {
    _mr: Mr,
    /// Owns the memory (u64 for 8-byte alignment); never resized.
    _memory: Box<[u64]>,
}

/// Buffers of one size: registered chunks and a free list.
struct SizeClass {
    class: BufferClass,
    /// Bytes per buffer (a multiple of 64).
    stride: usize,
    buffers_per_chunk: usize,
    chunks: Vec<Chunk>,
    free: Vec<*mut u8>,
    /// Upper bound on buffers (`usize::MAX`: no bound).
    max_buffers: usize,
    allocated: usize,
}

impl SizeClass {
    fn new(
        class: BufferClass,
        buffer_len: usize,
        buffers_per_chunk: usize,
        max_buffers: usize,
    ) -> SizeClass {
        SizeClass {
            class,
            stride: buffer_len.max(LKEY_BYTES).next_multiple_of(64),
            buffers_per_chunk: buffers_per_chunk.max(1),
            chunks: Vec::new(),
            free: Vec::new(),
            max_buffers,
            allocated: 0,
        }
    }

    fn grow(&mut self, domain: &Domain) -> Result<(), Status> {
        let count = self
            .buffers_per_chunk
            .min(self.max_buffers.saturating_sub(self.allocated));
        if count == 0 {
            return Err(Status::NoResource);
        }
        let bytes = count.checked_mul(self.stride).ok_or(Status::NoMemory)?;
        let mut memory = vec![0u64; bytes / 8].into_boxed_slice();
        let base = memory.as_mut_ptr() as *mut u8;
        let mr = domain.pd.reg_mr(base, bytes, Access::LOCAL_WRITE)?;
        let lkey = mr.keys().lkey;
        for index in (0..count).rev() {
            // SAFETY: index < count, so the buffer lies inside `memory`,
            // which is 8-aligned and lives (boxed, never moved out) as long
            // as the pool.
            let buffer = unsafe { base.add(index * self.stride) };
            // SAFETY: as above; the 8-byte header is inside the buffer
            // (stride >= LKEY_BYTES) and 8-aligned (stride is a multiple
            // of 64 from an 8-aligned base).
            unsafe {
                (buffer as *mut u32).write(lkey);
                (buffer as *mut u32).add(1).write(self.class as u32);
            }
            self.free.push(buffer);
        }
        self.allocated += count;
        self.chunks.push(Chunk {
            _memory: memory,
            _mr: mr,
        });
        Ok(())
    }

    fn get(&mut self, domain: &Domain) -> Result<*mut u8, Status> {
        if self.free.is_empty() {
            self.grow(domain)?;
        }
        self.free.pop().ok_or(Status::NoResource)
    }

    fn in_use(&self) -> usize {
        self.allocated.saturating_sub(self.free.len())
    }
}

pub struct BufferPool {
    domain: Arc<Domain>,
    segments: SizeClass,
    small: SizeClass,
}

impl BufferPool {
    /// A pool of `buffer_len`-byte segments (rounded up to 64 bytes), at
    /// most `max_buffers` of them, and of small slots ([`BufferPool::get_small`]).
    pub fn new(
        domain: Arc<Domain>,
        buffer_len: usize,
        buffers_per_chunk: usize,
        max_buffers: usize,
    ) -> BufferPool {
        BufferPool {
            domain,
            segments: SizeClass::new(
                BufferClass::Segment,
                buffer_len,
                buffers_per_chunk,
                max_buffers,
            ),
            small: SizeClass::new(
                BufferClass::Small,
                SMALL_BUFFER_LEN,
                SMALL_BUFFERS_PER_CHUNK,
                usize::MAX,
            ),
        }
    }

    /// Bytes per segment.
    pub fn stride(&self) -> usize {
        self.segments.stride
    }

    /// A free segment; `NoResource` when the segments are at their bound.
    pub fn get(&mut self) -> Result<*mut u8, Status> {
        self.segments.get(&self.domain)
    }

    /// A free small slot ([`SMALL_BUFFER_LEN`] bytes, header included), with
    /// at most `bound` slots in existence: `NoResource` when all of them are
    /// in use. The bound is the caller's sizing rule; a smaller bound than
    /// slots already made only stops further growth.
    pub fn get_small(&mut self, bound: usize) -> Result<*mut u8, Status> {
        self.small.max_buffers = bound;
        self.small.get(&self.domain)
    }

    /// Returns a buffer from [`BufferPool::get`] or
    /// [`BufferPool::get_small`] to its class.
    pub fn put(&mut self, buffer: *mut u8) {
        // SAFETY: every buffer of this pool starts with its header (grow()).
        let class = unsafe { (buffer as *const u32).add(1).read() };
        if class == BufferClass::Small as u32 {
            self.small.free.push(buffer);
        } else {
            self.segments.free.push(buffer);
        }
    }

    /// Buffers of both classes handed out and not returned (tests check
    /// that completion, purge and destroy give every one back).
    pub fn in_use(&self) -> usize {
        self.segments.in_use() + self.small.in_use()
    }

    /// Buffers of `class` handed out and not returned.
    pub fn in_use_of(&self, class: BufferClass) -> usize {
        match class {
            BufferClass::Segment => self.segments.in_use(),
            BufferClass::Small => self.small.in_use(),
        }
    }

    /// Buffers of `class` made so far (in use or free).
    pub fn allocated_of(&self, class: BufferClass) -> usize {
        match class {
            BufferClass::Segment => self.segments.allocated,
            BufferClass::Small => self.small.allocated,
        }
    }

    /// The lkey of a buffer from this pool.
    ///
    /// # Safety
    /// `buffer` must come from [`BufferPool::get`] or
    /// [`BufferPool::get_small`] of a live pool.
    #[inline]
    pub unsafe fn lkey(buffer: *const u8) -> u32 {
        // SAFETY: every buffer starts with its chunk's lkey (grow()).
        unsafe { (buffer as *const u32).read() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(max_segments: usize) -> BufferPool {
        let domain = Domain::get("mlx5_0").expect("the default soft device opens");
        BufferPool::new(domain, 1000, 2, max_segments)
    }

    #[test]
    fn classes_have_their_own_bounds_and_free_lists() {
        let mut pool = pool(3);
        assert_eq!(pool.stride(), 1024);
        let segments: Vec<_> = (0..3).map(|_| pool.get().unwrap()).collect();
        assert_eq!(pool.get(), Err(Status::NoResource));
        // Segments exhausted: small slots still come, up to their own bound.
        let small: Vec<_> = (0..4).map(|_| pool.get_small(4).unwrap()).collect();
        assert_eq!(pool.get_small(4), Err(Status::NoResource));
        assert_eq!(pool.in_use_of(BufferClass::Segment), 3);
        assert_eq!(pool.in_use_of(BufferClass::Small), 4);
        assert_eq!(pool.in_use(), 7);
        // Small slots are one cache line apart, 64-aligned after the first.
        let mut sorted = small.clone();
        sorted.sort();
        assert_eq!(sorted[1] as usize - sorted[0] as usize, SMALL_BUFFER_LEN);
        // put() returns each buffer to its own class, whatever the order.
        pool.put(small[0]);
        pool.put(segments[1]);
        assert_eq!(pool.in_use_of(BufferClass::Segment), 2);
        assert_eq!(pool.in_use_of(BufferClass::Small), 3);
        assert_eq!(pool.get().unwrap(), segments[1]);
        assert_eq!(pool.get_small(4).unwrap(), small[0]);
        for buffer in segments.iter().chain(&small) {
            pool.put(*buffer);
        }
        assert_eq!(pool.in_use(), 0);
        assert_eq!(pool.allocated_of(BufferClass::Small), 4);
        assert_eq!(pool.allocated_of(BufferClass::Segment), 3);
    }

    #[test]
    fn buffers_carry_the_lkey_of_a_registration() {
        let mut pool = pool(usize::MAX);
        let small = pool.get_small(usize::MAX).unwrap();
        let segment = pool.get().unwrap();
        // SAFETY: both from this live pool.
        let (small_lkey, segment_lkey) =
            unsafe { (BufferPool::lkey(small), BufferPool::lkey(segment)) };
        // Distinct chunks, distinct registrations.
        assert_ne!(small_lkey, segment_lkey);
        pool.put(small);
        pool.put(segment);
    }
}
