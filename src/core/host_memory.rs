//! Host memory for zero-copy operations, by UCX's allocation methods
//! (`thp`, `heap`, `mmap`, `huge`; `md` is skipped: no memory domain of ours
//! allocates), and the `uct_allocated_memory_t` that describes it: what
//! `uct_mem_alloc` and `uct_iface_mem_alloc` (api/mem_alloc.rs) do.
//!
//! `uct_allocated_memory_t` grew `sys_device` after UCX 1.13 (40 → 48 bytes,
//! outside 1.13's size): only its first 40 bytes are read or written here.

use std::ffi::{c_int, c_void};

use crate::abi::*;
pub(crate) use crate::core::c_boundary::{AllocParams, Allocated113};
use crate::core::c_boundary::{CRef, CStrArg, FromC, Out};

pub(crate) fn page_size() -> usize {
    rustix::param::page_size().max(4096)
}

fn method_name(method: uct_alloc_method_t) -> &'static str {
    match method {
        UCT_ALLOC_METHOD_THP => "thp",
        UCT_ALLOC_METHOD_MD => "md",
        UCT_ALLOC_METHOD_HEAP => "heap",
        UCT_ALLOC_METHOD_MMAP => "mmap",
        UCT_ALLOC_METHOD_HUGE => "huge",
        _ => "unknown",
    }
}

/// What the caller asked for, read per its field mask.
pub(crate) struct Request {
    pub(crate) length: usize,
    pub(crate) address: *mut c_void,
    pub(crate) fixed: bool,
}

/// One method's attempt: the memory, or `None` to try the next method.
fn allocate(method: uct_alloc_method_t, request: &Request) -> Option<*mut c_void> {
    let map = |extra_flags: c_int| -> Option<*mut c_void> {
        let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra_flags;
        if request.fixed {
            flags |= libc::MAP_FIXED_NOREPLACE;
        }
        // SAFETY: an anonymous mapping; MAP_FIXED_NOREPLACE never replaces
        // an existing mapping, and the result is checked.
        let address = unsafe {
            libc::mmap(
                request.address,
                request.length,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                -1,
                0,
            )
        };
        if address == libc::MAP_FAILED || (request.fixed && address != request.address) {
            return None;
        }
        Some(address)
    };
    match method {
        UCT_ALLOC_METHOD_MMAP => map(0),
        UCT_ALLOC_METHOD_HUGE => map(libc::MAP_HUGETLB),
        UCT_ALLOC_METHOD_THP => {
            let address = map(0)?;
            // SAFETY: advice on the mapping just made; failure only means no
            // huge pages, which is fine.
            unsafe { libc::madvise(address, request.length, libc::MADV_HUGEPAGE) };
            Some(address)
        }
        UCT_ALLOC_METHOD_HEAP if !request.fixed => {
            let mut address = std::ptr::null_mut();
            // SAFETY: writes `address` on success only; checked.
            let rc = unsafe { libc::posix_memalign(&mut address, page_size(), request.length) };
            (rc == 0).then_some(address)
        }
        _ => None,
    }
}

/// The `mem` argument to be filled: NULL or writable for UCX 1.13's part.
pub(crate) type MemOut<'a> = Out<'a, Allocated113>;

/// Memory described by a `uct_allocated_memory_t` this library filled: the
/// `mem` argument of the free calls.
pub(crate) struct AllocatedHere<'a>(CRef<'a, Allocated113>);

impl FromC<*const uct_allocated_memory_t> for AllocatedHere<'_> {
    /// Relies on: NULL or describing memory from `uct_mem_alloc` or
    /// `uct_iface_mem_alloc` (as the call says), not freed yet and not used
    /// after the call.
    unsafe fn from_c(mem: *const uct_allocated_memory_t) -> Self {
        // SAFETY: forwarded contract (UCX 1.13's part is read).
        AllocatedHere(unsafe { CRef::from_c(mem.cast::<Allocated113>()) })
    }
}

impl<'a> AllocatedHere<'a> {
    /// The description, or `InvalidParam` with a log line for NULL.
    pub(crate) fn get(&self, function: &str) -> Result<&'a Allocated113, Status> {
        self.0.get(function, "mem")
    }

    /// Releases the memory `allocate_with` made.
    pub(crate) fn free(&self, function: &str) -> Result<(), Status> {
        let mem = self.get(function)?;
        match mem.method {
            UCT_ALLOC_METHOD_HEAP => {
                // SAFETY: from posix_memalign, freed once (AllocatedHere).
                unsafe { libc::free(mem.address) };
                Ok(())
            }
            UCT_ALLOC_METHOD_THP | UCT_ALLOC_METHOD_MMAP | UCT_ALLOC_METHOD_HUGE => {
                // SAFETY: a mapping of exactly this length made here
                // (AllocatedHere).
                if unsafe { libc::munmap(mem.address, mem.length) } != 0 {
                    let error = std::io::Error::last_os_error();
                    tracing::warn!(
                        "{function}: munmap({:p}, {}) failed: {error}",
                        mem.address,
                        mem.length
                    );
                    return Err(Status::InvalidParam);
                }
                Ok(())
            }
            method => {
                tracing::warn!(
                    "{function}: memory of method {method} was not allocated by this library"
                );
                Err(Status::InvalidParam)
            }
        }
    }
}

/// Memory `allocate_with` just made, not handed to anyone else yet.
pub(crate) struct Fresh(Allocated113);

impl Fresh {
    /// What describes it.
    pub(crate) fn describe(&self) -> Allocated113 {
        self.0
    }

    /// Frees it again (its registration failed).
    pub(crate) fn free(self, function: &str) -> Result<(), Status> {
        AllocatedHere(CRef::of(&self.0)).free(function)
    }
}

/// Allocates with the first method in `methods` that works and fills
/// UCX 1.13's part of `mem` (no md, no registration).
pub(crate) fn allocate_with(
    methods: &[uct_alloc_method_t],
    request: &Request,
    mem: &MemOut,
    function: &str,
    name: &str,
) -> Result<Fresh, Status> {
    for &method in methods {
        if method == UCT_ALLOC_METHOD_MD {
            // Attempts that do not apply are traced, as UCX traces them:
            // UCX's libucp tries one method per call.
            tracing::trace!("{function}: method md skipped: no memory domain of ours allocates");
            continue;
        }
        if method >= UCT_ALLOC_METHOD_LAST {
            tracing::warn!("{function}: invalid allocation method {method}");
            return Err(Status::InvalidParam);
        }
        let Some(address) = allocate(method, request) else {
            tracing::trace!(
                "{function}: method {} failed for {} bytes",
                method_name(method),
                request.length
            );
            continue;
        };
        let allocated = Allocated113 {
            address,
            length: request.length,
            method,
            mem_type: UCS_MEMORY_TYPE_HOST,
            md: std::ptr::null_mut(),
            memh: std::ptr::null_mut(),
        };
        mem.write(function, "mem", allocated)?;
        tracing::debug!(
            "{function}: {} bytes for '{name}' at {address:p} by {}",
            request.length,
            method_name(method)
        );
        return Ok(Fresh(allocated));
    }
    // A failure the caller handles (UCX's libucp goes on to its next
    // method): debug, as UCX logs it.
    tracing::debug!(
        "{function}: no allocation method could provide {} bytes for '{name}'",
        request.length
    );
    Err(Status::NoMemory)
}

/// The name for log lines.
pub(crate) fn name_text(name: CStrArg) -> String {
    name.c_str().map_or_else(
        || "anonymous".into(),
        |name| name.to_string_lossy().into_owned(),
    )
}
