//! Registered bounce buffers: the receive segments the SRQ points at and the
//! send buffers of bcopy operations. Buffers are carved from registered
//! chunks that grow on demand and are never returned to the system before
//! the pool is dropped (UCX's memory pools behave the same way), so a
//! buffer pointer stays valid while the pool lives.
//!
//! Every buffer starts with the lkey of its chunk (first 4 bytes); what
//! follows is the owner's layout.

use std::sync::Arc;

use crate::abi::ucs_status::Status;
use crate::hca::{Access, Mr};
use crate::rc::domain::Domain;

/// Bytes at the start of each buffer that hold its lkey.
pub const LKEY_BYTES: usize = 8;

struct Chunk {
    /// Owns the memory (u64 for 8-byte alignment); never resized.
    _memory: Box<[u64]>,
    _mr: Mr,
}

pub struct BufferPool {
    domain: Arc<Domain>,
    /// Bytes per buffer (a multiple of 64).
    stride: usize,
    buffers_per_chunk: usize,
    chunks: Vec<Chunk>,
    free: Vec<*mut u8>,
    /// Upper bound on buffers (`usize::MAX`: no bound).
    max_buffers: usize,
    allocated: usize,
}

impl BufferPool {
    /// A pool of `buffer_len`-byte buffers (rounded up to 64 bytes).
    pub fn new(
        domain: Arc<Domain>,
        buffer_len: usize,
        buffers_per_chunk: usize,
        max_buffers: usize,
    ) -> BufferPool {
        BufferPool {
            domain,
            stride: buffer_len.next_multiple_of(64),
            buffers_per_chunk: buffers_per_chunk.max(1),
            chunks: Vec::new(),
            free: Vec::new(),
            max_buffers,
            allocated: 0,
        }
    }

    pub fn stride(&self) -> usize {
        self.stride
    }

    fn grow(&mut self) -> Result<(), Status> {
        let count = self
            .buffers_per_chunk
            .min(self.max_buffers.saturating_sub(self.allocated));
        if count == 0 {
            return Err(Status::NoResource);
        }
        let bytes = count.checked_mul(self.stride).ok_or(Status::NoMemory)?;
        let mut memory = vec![0u64; bytes / 8].into_boxed_slice();
        let base = memory.as_mut_ptr() as *mut u8;
        let mr = self.domain.pd.reg_mr(base, bytes, Access::LOCAL_WRITE)?;
        let lkey = mr.keys().lkey;
        for index in (0..count).rev() {
            // SAFETY: index < count, so the buffer lies inside `memory`,
            // which is 8-aligned and lives (boxed, never moved out) as long
            // as the pool.
            let buffer = unsafe { base.add(index * self.stride) };
            // SAFETY: as above; the first 4 bytes are in the buffer.
            unsafe { (buffer as *mut u32).write(lkey) };
            self.free.push(buffer);
        }
        self.allocated += count;
        self.chunks.push(Chunk {
            _memory: memory,
            _mr: mr,
        });
        Ok(())
    }

    /// A free buffer; `NoResource` when the pool is at its bound.
    pub fn get(&mut self) -> Result<*mut u8, Status> {
        if self.free.is_empty() {
            self.grow()?;
        }
        self.free.pop().ok_or(Status::NoResource)
    }

    /// Returns a buffer from [`BufferPool::get`].
    pub fn put(&mut self, buffer: *mut u8) {
        self.free.push(buffer);
    }

    /// Buffers handed out and not returned (tests check that purge and
    /// destroy give every one back).
    pub fn in_use(&self) -> usize {
        self.allocated.saturating_sub(self.free.len())
    }

    /// The lkey of a buffer from this pool.
    ///
    /// # Safety
    /// `buffer` must come from [`BufferPool::get`] of a live pool.
    #[inline]
    pub unsafe fn lkey(buffer: *const u8) -> u32 {
        // SAFETY: every buffer starts with its chunk's lkey (grow()).
        unsafe { (buffer as *const u32).read() }
    }
}
