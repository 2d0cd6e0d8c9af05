//! `uct_mem_alloc` / `uct_mem_free` and `uct_iface_mem_alloc` /
//! `uct_iface_mem_free`: memory for zero-copy operations.
//!
//! The methods are UCX's, tried in the caller's order: `thp` (anonymous
//! mapping advised for transparent huge pages), `md` (skipped: no memory
//! domain of ours allocates, none advertises `UCT_MD_FLAG_ALLOC`), `heap`
//! (page-aligned `posix_memalign`), `mmap` (anonymous mapping, also at a
//! fixed address), `huge` (`MAP_HUGETLB`, when the system has huge pages).
//! `uct_iface_mem_alloc` allocates with `thp`, `mmap`, `heap` and registers
//! the memory with the interface's memory domain.
//!
//! `uct_allocated_memory_t` grew `sys_device` after UCX 1.13 (40 → 48 bytes,
//! outside 1.13's size): it is never written, so a 1.13 caller's 40-byte
//! struct is safe; callers built against our headers get the other fields.

use std::ffi::{c_char, c_int, c_uint, c_void};

use crate::abi::*;
use crate::api::checks::{non_null, status_entry_point};
use crate::core::c_boundary::{
    c_entry, null_argument, CRef, CSlice, CStrArg, FromC, IfaceHandle, Out,
};

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096).max(4096)
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
struct Request {
    length: usize,
    address: *mut c_void,
    fixed: bool,
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

/// The part of `uct_allocated_memory_t` that UCX 1.13 has (its first 40
/// bytes): all this library reads or writes of it.
#[repr(C)]
#[derive(Clone, Copy)]
struct Allocated113 {
    address: *mut c_void,
    length: usize,
    method: uct_alloc_method_t,
    mem_type: ucs_memory_type_t,
    md: uct_md_h,
    memh: uct_mem_h,
}

const _: () = assert!(std::mem::size_of::<Allocated113>() == 40);
const _: () = assert!(
    std::mem::offset_of!(Allocated113, memh) == std::mem::offset_of!(uct_allocated_memory_t, memh)
);

/// The `mem` argument to be filled: NULL or writable for UCX 1.13's part.
type MemOut<'a> = Out<'a, Allocated113>;

impl FromC<*mut uct_allocated_memory_t> for MemOut<'_> {
    /// Relies on: NULL or writable for 40 bytes.
    unsafe fn from_c(mem: *mut uct_allocated_memory_t) -> Self {
        // SAFETY: forwarded contract.
        unsafe { Out::from_raw(mem.cast()) }
    }
}

/// Memory described by a `uct_allocated_memory_t` this library filled: the
/// `mem` argument of the free calls.
struct AllocatedHere<'a>(CRef<'a, Allocated113>);

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
    fn get(&self, function: &str) -> Result<&'a Allocated113, Status> {
        self.0.get(function, "mem")
    }

    /// Releases the memory `allocate_with` made.
    fn free(&self, function: &str) -> Result<(), Status> {
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

/// Allocates with the first method in `methods` that works and fills
/// UCX 1.13's part of `mem` (no md, no registration).
fn allocate_with(
    methods: &[uct_alloc_method_t],
    request: &Request,
    mem: &MemOut,
    function: &str,
    name: &str,
) -> Result<Allocated113, Status> {
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
        return Ok(allocated);
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
fn name_text(name: CStrArg) -> String {
    name.c_str().map_or_else(
        || "anonymous".into(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// `uct_mem_alloc`'s parameters with the name taken over.
struct AllocParams<'a> {
    params: &'a uct_mem_alloc_params_t,
    name: CStrArg<'a>,
}

impl FromC<*const uct_mem_alloc_params_t> for Option<AllocParams<'_>> {
    /// Relies on: NULL or valid per its field mask, the name (when its bit
    /// is set) NULL or NUL-terminated.
    unsafe fn from_c(params: *const uct_mem_alloc_params_t) -> Self {
        // SAFETY: by the contract.
        let params = unsafe { params.as_ref() }?;
        let name = if params.field_mask & UCT_MEM_ALLOC_PARAM_FIELD_NAME as u64 != 0 {
            params.name
        } else {
            std::ptr::null()
        };
        // SAFETY: by the contract.
        let name = unsafe { CStrArg::from_c(name) };
        Some(AllocParams { params, name })
    }
}

c_entry! {
    no_log_setup
    /// Allocates `length` bytes with the first of `methods` that works (see
    /// the module documentation).
    fn uct_mem_alloc(
        length: usize,
        methods: *const uct_alloc_method_t,
        num_methods: c_uint,
        params: *const uct_mem_alloc_params_t,
        mem: *mut uct_allocated_memory_t,
    ) -> ucs_status_t;
    take methods: CSlice<uct_alloc_method_t> = (methods, num_methods),
        alloc_params: Option<AllocParams> = (params),
        mem: MemOut = (mem);
    {
        status_entry_point!(FUNCTION = "uct_mem_alloc", {
            non_null(methods.as_ptr(), FUNCTION, "methods")?;
            let Some(AllocParams { params, name }) = alloc_params else {
                return Err(null_argument(FUNCTION, "params"));
            };
            mem.check(FUNCTION, "mem")?;
            if length == 0 || num_methods == 0 {
                tracing::warn!(
                    "{FUNCTION}: length {length} and {num_methods} methods: nothing to allocate"
                );
                return Err(Status::InvalidParam);
            }
            let known = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS
                | UCT_MEM_ALLOC_PARAM_FIELD_ADDRESS
                | UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE
                | UCT_MEM_ALLOC_PARAM_FIELD_MDS
                | UCT_MEM_ALLOC_PARAM_FIELD_NAME
                | UCT_MEM_ALLOC_PARAM_FIELD_SYS_DEVICE;
            crate::api::checks::known_fields(params.field_mask, known as u64, FUNCTION, "params")?;
            let field = |bit: uct_mem_alloc_params_field_t| params.field_mask & bit as u64 != 0;
            let flags = if field(UCT_MEM_ALLOC_PARAM_FIELD_FLAGS) {
                params.flags
            } else {
                0
            };
            let address = if field(UCT_MEM_ALLOC_PARAM_FIELD_ADDRESS) {
                params.address
            } else {
                std::ptr::null_mut()
            };
            if field(UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE) && params.mem_type != UCS_MEMORY_TYPE_HOST
            {
                tracing::warn!(
                    "{FUNCTION}: memory type {} is not supported (host only)",
                    crate::api::memory_type::memory_type_name(params.mem_type)
                );
                return Err(Status::Unsupported);
            }
            let fixed = flags & UCT_MD_MEM_FLAG_FIXED != 0;
            if fixed && (address.is_null() || address as usize % page_size() != 0) {
                tracing::warn!(
                    "{FUNCTION}: UCT_MD_MEM_FLAG_FIXED needs a page-aligned address, got \
                     {address:p}"
                );
                return Err(Status::InvalidParam);
            }
            let name = name_text(name);
            let request = Request {
                length: length.div_ceil(page_size()) * page_size(),
                address,
                fixed,
            };
            allocate_with(methods.get(FUNCTION)?, &request, &mem, FUNCTION, &name).map(|_| ())
        })
    }
}

c_entry! {
    no_log_setup
    /// Frees memory from `uct_mem_alloc`.
    fn uct_mem_free(mem: *const uct_allocated_memory_t) -> ucs_status_t;
    take owner: AllocatedHere = (mem);
    {
        status_entry_point!(FUNCTION = "uct_mem_free", {
            owner.free(FUNCTION)
        })
    }
}

c_entry! {
    no_log_setup
    /// Allocates `length` bytes (`thp`, `mmap`, then `heap`) and registers
    /// them with the interface's memory domain (`flags`: `UCT_MD_MEM_*` as
    /// for `uct_md_mem_reg`). `mem->md` and `mem->memh` name the
    /// registration.
    fn uct_iface_mem_alloc(
        iface: uct_iface_h,
        length: usize,
        flags: c_uint,
        name: *const c_char,
        mem: *mut uct_allocated_memory_t,
    ) -> ucs_status_t;
    take iface: IfaceHandle = (iface), name: CStrArg = (name), mem: MemOut = (mem);
    {
        status_entry_point!(FUNCTION = "uct_iface_mem_alloc", {
            let md = iface.base(FUNCTION)?.md;
            mem.check(FUNCTION, "mem")?;
            if length == 0 {
                tracing::warn!("{FUNCTION}: length is 0");
                return Err(Status::InvalidParam);
            }
            let name = name_text(name);
            let request = Request {
                length: length.div_ceil(page_size()) * page_size(),
                address: std::ptr::null_mut(),
                fixed: false,
            };
            let methods = [
                UCT_ALLOC_METHOD_THP,
                UCT_ALLOC_METHOD_MMAP,
                UCT_ALLOC_METHOD_HEAP,
            ];
            let allocated = allocate_with(&methods, &request, &mem, FUNCTION, &name)?;
            let mut memh = std::ptr::null_mut();
            // SAFETY: the iface's md is live while the iface is; the memory
            // was just allocated with this length; memh is a local.
            let status = unsafe {
                crate::api::md::uct_md_mem_reg(
                    md,
                    allocated.address,
                    request.length,
                    flags & !UCT_MD_MEM_FLAG_FIXED,
                    &mut memh,
                )
            };
            if status != UCS_OK {
                let fresh = std::ptr::addr_of!(allocated).cast::<uct_allocated_memory_t>();
                // SAFETY: describes memory just allocated here, freed once.
                let _ = unsafe { AllocatedHere::from_c(fresh) }.free(FUNCTION);
                tracing::warn!(
                    "{FUNCTION}: registering {} bytes for '{name}' failed",
                    request.length
                );
                return Err(Status::from_raw(status).unwrap_or(Status::IoError));
            }
            mem.write(
                FUNCTION,
                "mem",
                Allocated113 {
                    md,
                    memh,
                    ..allocated
                },
            )
        })
    }
}

c_entry! {
    /// Deregisters and frees memory from `uct_iface_mem_alloc`.
    fn uct_iface_mem_free(mem: *const uct_allocated_memory_t);
    take owner: AllocatedHere = (mem);
    {
        const FUNCTION: &str = "uct_iface_mem_free";
        let Ok(mem) = owner.get(FUNCTION) else {
            return;
        };
        if !mem.memh.is_null() {
            // SAFETY: the registration uct_iface_mem_alloc made with this md
            // (AllocatedHere).
            let status = unsafe { crate::api::md::uct_md_mem_dereg(mem.md, mem.memh) };
            if status != UCS_OK {
                tracing::warn!("{FUNCTION}: deregistering {:p} failed", mem.address);
            }
        }
        let _ = owner.free(FUNCTION);
    }
}
