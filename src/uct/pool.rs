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
//! segment. Every buffer starts with a reserved header of [`LKEY_BYTES`]; the
//! pool knows each chunk's address range and registration, so
//! [`BufferPool::put`] takes any buffer back to the class it came from and
//! [`BufferPool::lkey`] names its key.

use std::sync::Arc;

use crate::abi::ucs_status::Status;
use crate::hca::{Access, Mr};
use crate::ib::domain::Domain;

/// Bytes reserved at the start of each buffer (data starts after them).
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
    /// Where the memory is, and the lkey of its registration.
    base: usize,
    len: usize,
    lkey: u32,
}

/// Where a pool's buffers are aligned: `buffer + offset` is a multiple of
/// `align` (a power of two) for every buffer (receive buffers honour the
/// `am_alignment` and `am_align_offset` iface parameters with it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alignment {
    pub align: usize,
    pub offset: usize,
}

impl Alignment {
    /// No requirement beyond the pool's own (8-byte chunks, 64-byte
    /// strides).
    pub const NONE: Alignment = Alignment {
        align: 1,
        offset: 0,
    };
}

/// Buffers of one size: registered chunks and a free list.
struct SizeClass {
    /// Bytes per buffer (a multiple of 64 and of the alignment).
    stride: usize,
    alignment: Alignment,
    buffers_per_chunk: usize,
    chunks: Vec<Chunk>,
    free: Vec<*mut u8>,
    /// Upper bound on buffers (`usize::MAX`: no bound).
    max_buffers: usize,
    allocated: usize,
}

impl SizeClass {
    fn new(
        buffer_len: usize,
        buffers_per_chunk: usize,
        max_buffers: usize,
        alignment: Alignment,
    ) -> SizeClass {
        SizeClass {
            // Both powers of two: the larger is a multiple of the other.
            stride: buffer_len
                .max(LKEY_BYTES)
                .next_multiple_of(alignment.align.max(64)),
            alignment,
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
        // Room to move the first buffer up to the alignment.
        let pad_room = self.alignment.align - 1;
        let bytes = count
            .checked_mul(self.stride)
            .and_then(|bytes| bytes.checked_add(pad_room))
            .ok_or(Status::NoMemory)?;
        let mut memory = vec![0u64; bytes.div_ceil(8)].into_boxed_slice();
        let base = memory.as_mut_ptr() as *mut u8;
        let mr = domain.pd.reg_mr(base, bytes, Access::LOCAL_WRITE)?;
        let lkey = mr.keys().lkey;
        let Alignment { align, offset } = self.alignment;
        let pad = (align - (base as usize).wrapping_add(offset) % align) % align;
        let first = base.wrapping_add(pad);
        // pad <= pad_room and index < count: every buffer lies inside
        // `memory`, which lives (boxed, never moved out) as long as the
        // pool; the stride is a multiple of `align`, so each is aligned as
        // the first.
        self.free.extend(
            (0..count)
                .rev()
                .map(|index| first.wrapping_add(index * self.stride)),
        );
        self.allocated += count;
        self.chunks.push(Chunk {
            _memory: memory,
            _mr: mr,
            base: base as usize,
            len: bytes,
            lkey,
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

    /// The chunk `buffer` lies in, if it is one of this class's.
    fn chunk_of(&self, buffer: *const u8) -> Option<&Chunk> {
        let at = buffer as usize;
        self.chunks
            .iter()
            .find(|chunk| at >= chunk.base && at < chunk.base + chunk.len)
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
        BufferPool::aligned(
            domain,
            buffer_len,
            buffers_per_chunk,
            max_buffers,
            Alignment::NONE,
        )
    }

    /// [`BufferPool::new`] with segments aligned as `alignment` says.
    pub fn aligned(
        domain: Arc<Domain>,
        buffer_len: usize,
        buffers_per_chunk: usize,
        max_buffers: usize,
        alignment: Alignment,
    ) -> BufferPool {
        BufferPool {
            domain,
            segments: SizeClass::new(buffer_len, buffers_per_chunk, max_buffers, alignment),
            small: SizeClass::new(
                SMALL_BUFFER_LEN,
                SMALL_BUFFERS_PER_CHUNK,
                usize::MAX,
                Alignment::NONE,
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
        if self.small.chunk_of(buffer).is_some() {
            self.small.free.push(buffer);
        } else if self.segments.chunk_of(buffer).is_some() {
            self.segments.free.push(buffer);
        } else {
            tracing::error!("buffer {buffer:p} returned to a pool it is not from");
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

    /// The lkey of a buffer from this pool (`MLX5_INVALID_LKEY` for any
    /// other pointer, which the device refuses).
    pub fn lkey(&self, buffer: *const u8) -> u32 {
        self.small
            .chunk_of(buffer)
            .or_else(|| self.segments.chunk_of(buffer))
            .map_or(crate::mlx5::MLX5_INVALID_LKEY, |chunk| chunk.lkey)
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
    fn aligned_segments_are_aligned_at_their_offset() {
        let domain = Domain::get("mlx5_0").expect("the default soft device opens");
        for (align, offset) in [(1, 0), (8, 3), (64, 40), (512, 17), (4096, 4095)] {
            let alignment = Alignment { align, offset };
            let mut pool = BufferPool::aligned(Arc::clone(&domain), 1000, 3, 7, alignment);
            assert_eq!(pool.stride() % align.max(64), 0);
            let buffers: Vec<_> = (0..7).map(|_| pool.get().unwrap()).collect();
            for buffer in &buffers {
                assert_eq!((*buffer as usize + offset) % align, 0, "{align}/{offset}");
                assert_ne!(pool.lkey(*buffer), crate::mlx5::MLX5_INVALID_LKEY);
            }
            for buffer in buffers {
                pool.put(buffer);
            }
            assert_eq!(pool.in_use(), 0);
        }
    }

    #[test]
    fn buffers_carry_the_lkey_of_a_registration() {
        let mut pool = pool(usize::MAX);
        let small = pool.get_small(usize::MAX).unwrap();
        let segment = pool.get().unwrap();
        let (small_lkey, segment_lkey) = (pool.lkey(small), pool.lkey(segment));
        // Distinct chunks, distinct registrations.
        assert_ne!(small_lkey, segment_lkey);
        pool.put(small);
        pool.put(segment);
    }
}
