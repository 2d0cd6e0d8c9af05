//! Small OS pieces the soft device needs: page-aligned zeroed buffers that
//! both the transport and the device write through raw pointers, an eventfd,
//! a `poll` wrapper, and populating a registered range.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::time::Duration;

use super::Error;

/// Zeroed memory shared with the transport (rings, doorbell records). It is
/// only ever accessed through raw pointers, never through references that
/// would assert exclusive access.
#[derive(Debug)]
pub struct DmaBuffer {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the buffer is plain memory owned by this value; every access goes
// through raw pointers with the atomics/fences the ring protocol requires, so
// sharing the pointer between threads is the whole point and is sound.
unsafe impl Send for DmaBuffer {}
// SAFETY: as above; `&DmaBuffer` only exposes the pointer and length.
unsafe impl Sync for DmaBuffer {}

const PAGE: usize = 4096;

impl DmaBuffer {
    pub fn new(len: usize) -> Result<DmaBuffer, Error> {
        let layout = Layout::from_size_align(len.max(64), PAGE).map_err(|_| Error::InvalidParam)?;
        // SAFETY: the layout has a non-zero size (at least 64 bytes).
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::NoMemory);
        }
        Ok(DmaBuffer { ptr, layout })
    }

    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Bytes in the buffer.
    pub fn size(&self) -> usize {
        self.layout.size()
    }

    /// Copies `out.len()` bytes starting at `offset` out of the buffer.
    /// Returns false (copying nothing) if the range is outside the buffer.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> bool {
        let Some(end) = offset.checked_add(out.len()) else {
            return false;
        };
        if end > self.size() {
            return false;
        }
        // SAFETY: `offset..end` is inside the allocation (checked above) and
        // `out` is a distinct Rust buffer, so the ranges do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(offset), out.as_mut_ptr(), out.len()) };
        true
    }

    /// Copies `data` into the buffer at `offset` (no ordering: a later
    /// [`publish`](Self::publish) makes it visible). Returns false (copying
    /// nothing) if the range is outside the buffer.
    pub fn write(&self, offset: usize, data: &[u8]) -> bool {
        let Some(end) = offset.checked_add(data.len()) else {
            return false;
        };
        if end > self.size() {
            return false;
        }
        // SAFETY: `offset..end` is inside the allocation (checked above) and
        // `data` is a distinct Rust buffer, so the ranges do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(offset), data.len()) };
        true
    }

    /// Loads a big-endian 32-bit word at `offset` (4-aligned) with acquire
    /// ordering: the transport publishes doorbell records this way.
    pub fn load_be32(&self, offset: usize) -> u32 {
        debug_assert!(offset % 4 == 0 && offset + 4 <= self.size());
        // SAFETY: the allocation is page-aligned and `offset` is a 4-aligned
        // index inside it, so the pointer is valid and aligned for an
        // AtomicU32, which has the same layout as u32.
        let word = unsafe { &*(self.ptr.add(offset) as *const AtomicU32) };
        u32::from_be(word.load(Ordering::Acquire))
    }

    /// Writes a CQE-like record so a reader that sees its last byte also
    /// sees the rest: all bytes but the last are copied, then a release
    /// fence, then the last byte (the owner byte of a CQE64).
    pub fn publish(&self, offset: usize, record: &[u8]) -> bool {
        let Some(end) = offset.checked_add(record.len()) else {
            return false;
        };
        let Some((&last, head)) = record.split_last() else {
            return false;
        };
        if end > self.size() {
            return false;
        }
        // SAFETY: `offset..end` is inside the allocation (checked above);
        // `record` is a distinct Rust buffer. The final byte is stored through
        // an AtomicU8 (same layout as u8, any alignment) with release order.
        unsafe {
            std::ptr::copy_nonoverlapping(head.as_ptr(), self.ptr.add(offset), head.len());
            let owner = &*(self.ptr.add(end - 1) as *const AtomicU8);
            owner.store(last, Ordering::Release);
        }
        true
    }
}

impl Drop for DmaBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed(self.layout)` and is freed once.
        unsafe { dealloc(self.ptr, self.layout) };
    }
}

/// A non-blocking eventfd: a counter another thread can make readable.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: plain syscall; the result is checked before use.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a freshly created descriptor nobody else owns.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Makes the descriptor readable (adds one to the counter).
    pub fn signal(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our own descriptor. A
        // failure (counter overflow, EAGAIN) means it is already readable.
        unsafe { libc::write(self.fd(), (&one as *const u64).cast(), 8) };
    }

    /// Resets the counter so the descriptor is no longer readable.
    pub fn drain(&self) {
        let mut value: u64 = 0;
        // SAFETY: reads 8 bytes into a live u64 from our own non-blocking
        // descriptor; EAGAIN (nothing pending) is fine.
        unsafe { libc::read(self.fd(), (&mut value as *mut u64).cast(), 8) };
    }
}

/// Sleeps until one of `fds` is readable or `timeout` passes (`None`:
/// forever). Returns which descriptors are readable.
pub fn poll_readable<const N: usize>(fds: [RawFd; N], timeout: Option<Duration>) -> [bool; N] {
    let mut pollfds = fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    let timeout_ms: libc::c_int = match timeout {
        None => -1,
        // Round up so a timer 0.3 ms away does not turn into a busy loop.
        Some(t) => t.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int,
    };
    // SAFETY: `pollfds` is a live array of N pollfd structures.
    let rc = unsafe { libc::poll(pollfds.as_mut_ptr(), N as libc::nfds_t, timeout_ms) };
    if rc <= 0 {
        return [false; N];
    }
    pollfds.map(|p| p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0)
}

/// Faults in the pages of `len` bytes at `addr`, for writing when
/// `writable`, as a NIC driver's registration pins them (the kernel's
/// `ib_umem_get`): the first touch of a page then happens at registration,
/// not in the datapath, where a fresh receive buffer would otherwise cost a
/// page fault on the receive (about 1 µs each on this VM: `uct_bench`'s
/// am_short ping-pong right after connecting took twice as long).
/// `madvise(MADV_POPULATE_*)` (Linux 5.14) fails with an error rather than a
/// signal on a range it cannot populate (e.g. a read-only mapping asked for
/// writing); older kernels answer `EINVAL`.
/// Best effort either way: the registration itself never depends on it.
pub fn populate(addr: usize, len: usize, writable: bool) -> io::Result<()> {
    let start = addr & !(PAGE - 1);
    let Some(end) = addr
        .checked_add(len)
        .and_then(|end| end.checked_next_multiple_of(PAGE))
    else {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    };
    let advice = if writable {
        libc::MADV_POPULATE_WRITE
    } else {
        libc::MADV_POPULATE_READ
    };
    // SAFETY: madvise only reads the range's mappings; the POPULATE
    // advices fault pages in as an access would, without changing data.
    let rc = unsafe { libc::madvise(start as *mut libc::c_void, end - start, advice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages of `len` bytes at `addr` that are resident (`mincore`).
    fn resident_pages(addr: *mut libc::c_void, len: usize) -> usize {
        let mut vec = vec![0u8; len.div_ceil(PAGE)];
        // SAFETY: a live mapping of `len` bytes; `vec` has one byte a page.
        let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
        assert_eq!(rc, 0, "mincore: {}", io::Error::last_os_error());
        vec.iter().filter(|&&page| page & 1 != 0).count()
    }

    #[test]
    fn populate_faults_in_every_page_of_the_range() {
        let len = 16 * PAGE;
        // SAFETY: a fresh anonymous mapping, checked, unmapped below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(map, libc::MAP_FAILED);
        assert_eq!(resident_pages(map, len), 0, "a fresh mapping has no page");
        // An unaligned range: the pages it touches, first and last included.
        match populate(map as usize + 100, len - 200, true) {
            Ok(()) => assert_eq!(resident_pages(map, len), 16),
            Err(err) => assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{err}"),
        }
        // SAFETY: the mapping made above, no longer used.
        unsafe { libc::munmap(map, len) };
    }

    #[test]
    fn populate_refuses_a_range_that_wraps() {
        let err = populate(usize::MAX - 10, 5, true).expect_err("no such range");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
