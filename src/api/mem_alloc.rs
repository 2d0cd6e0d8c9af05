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
use crate::api::dispatch::base_iface;

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

/// Allocates with the first method in `methods` that works and fills the
/// first 40 bytes of `mem` (UCX 1.13's struct).
///
/// # Safety
/// `methods` readable for `count` entries; `mem` writable (40 bytes).
unsafe fn allocate_with(
    methods: &[uct_alloc_method_t],
    request: &Request,
    mem: *mut uct_allocated_memory_t,
    function: &str,
    name: &str,
) -> Result<(), Status> {
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
        // SAFETY: writable by the caller's contract; only 1.13's fields.
        unsafe {
            (*mem).address = address;
            (*mem).length = request.length;
            (*mem).method = method;
            (*mem).mem_type = UCS_MEMORY_TYPE_HOST;
            (*mem).md = std::ptr::null_mut();
            (*mem).memh = std::ptr::null_mut();
        }
        tracing::debug!(
            "{function}: {} bytes for '{name}' at {address:p} by {}",
            request.length,
            method_name(method)
        );
        return Ok(());
    }
    // A failure the caller handles (UCX's libucp goes on to its next
    // method): debug, as UCX logs it.
    tracing::debug!(
        "{function}: no allocation method could provide {} bytes for '{name}'",
        request.length
    );
    Err(Status::NoMemory)
}

/// Releases memory `allocate_with` made.
///
/// # Safety
/// `mem` describes memory allocated here and not freed yet.
unsafe fn release(mem: &uct_allocated_memory_t, function: &str) -> Result<(), Status> {
    match mem.method {
        UCT_ALLOC_METHOD_HEAP => {
            // SAFETY: from posix_memalign, freed once (caller's contract).
            unsafe { libc::free(mem.address) };
            Ok(())
        }
        UCT_ALLOC_METHOD_THP | UCT_ALLOC_METHOD_MMAP | UCT_ALLOC_METHOD_HUGE => {
            // SAFETY: a mapping of exactly this length made here (contract).
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

/// The name in `params`, for log lines.
///
/// # Safety
/// `name` NULL or NUL-terminated.
unsafe fn name_text(name: *const c_char) -> String {
    if name.is_null() {
        return "anonymous".into();
    }
    // SAFETY: NUL-terminated by the caller's contract.
    unsafe { std::ffi::CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned()
}

/// Allocates `length` bytes with the first of `methods` that works (see the
/// module documentation).
///
/// # Safety
/// `methods` readable for `num_methods`; `params` NULL or valid per its
/// field mask; `mem` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn uct_mem_alloc(
    length: usize,
    methods: *const uct_alloc_method_t,
    num_methods: c_uint,
    params: *const uct_mem_alloc_params_t,
    mem: *mut uct_allocated_memory_t,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_mem_alloc", {
        non_null(methods, FUNCTION, "methods")?;
        non_null(params, FUNCTION, "params")?;
        non_null(mem, FUNCTION, "mem")?;
        if length == 0 || num_methods == 0 {
            tracing::warn!(
                "{FUNCTION}: length {length} and {num_methods} methods: nothing to allocate"
            );
            return Err(Status::InvalidParam);
        }
        // SAFETY: non-NULL, valid per its field mask (contract).
        let params = unsafe { &*params };
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
        if field(UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE) && params.mem_type != UCS_MEMORY_TYPE_HOST {
            tracing::warn!(
                "{FUNCTION}: memory type {} is not supported (host only)",
                crate::api::memory_type::memory_type_name(params.mem_type)
            );
            return Err(Status::Unsupported);
        }
        let fixed = flags & UCT_MD_MEM_FLAG_FIXED != 0;
        if fixed && (address.is_null() || address as usize % page_size() != 0) {
            tracing::warn!(
                "{FUNCTION}: UCT_MD_MEM_FLAG_FIXED needs a page-aligned address, got {address:p}"
            );
            return Err(Status::InvalidParam);
        }
        // SAFETY: NUL-terminated when the field is set (contract).
        let name = unsafe {
            name_text(if field(UCT_MEM_ALLOC_PARAM_FIELD_NAME) {
                params.name
            } else {
                std::ptr::null()
            })
        };
        let request = Request {
            length: length.div_ceil(page_size()) * page_size(),
            address,
            fixed,
        };
        // SAFETY: readable for num_methods entries (contract).
        let methods = unsafe { std::slice::from_raw_parts(methods, num_methods as usize) };
        // SAFETY: `mem` writable (contract).
        unsafe { allocate_with(methods, &request, mem, FUNCTION, &name) }
    })
}

/// Frees memory from `uct_mem_alloc`.
///
/// # Safety
/// `mem` NULL or describing memory from `uct_mem_alloc`, not freed yet.
#[no_mangle]
pub unsafe extern "C" fn uct_mem_free(mem: *const uct_allocated_memory_t) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_mem_free", {
        non_null(mem, FUNCTION, "mem")?;
        // SAFETY: non-NULL; valid by the caller's contract.
        unsafe { release(&*mem, FUNCTION) }
    })
}

/// Allocates `length` bytes (`thp`, `mmap`, then `heap`) and registers them
/// with the interface's memory domain (`flags`: `UCT_MD_MEM_*` as for
/// `uct_md_mem_reg`). `mem->md` and `mem->memh` name the registration.
///
/// # Safety
/// `iface` NULL or live; `name` NULL or NUL-terminated; `mem` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn uct_iface_mem_alloc(
    iface: uct_iface_h,
    length: usize,
    flags: c_uint,
    name: *const c_char,
    mem: *mut uct_allocated_memory_t,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_iface_mem_alloc", {
        // SAFETY: NULL or live by the caller's contract.
        let md = unsafe { base_iface(iface, FUNCTION) }?.md;
        non_null(mem, FUNCTION, "mem")?;
        if length == 0 {
            tracing::warn!("{FUNCTION}: length is 0");
            return Err(Status::InvalidParam);
        }
        // SAFETY: NULL or NUL-terminated (contract).
        let name = unsafe { name_text(name) };
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
        // SAFETY: `mem` writable (contract).
        unsafe { allocate_with(&methods, &request, mem, FUNCTION, &name) }?;
        let mut memh = std::ptr::null_mut();
        // SAFETY: our live md; the memory was just allocated with this length.
        let status = unsafe {
            crate::api::md::uct_md_mem_reg(
                md,
                (*mem).address,
                request.length,
                flags & !UCT_MD_MEM_FLAG_FIXED,
                &mut memh,
            )
        };
        if status != UCS_OK {
            // SAFETY: just allocated here, freed once.
            let _ = unsafe { release(&*mem, FUNCTION) };
            tracing::warn!(
                "{FUNCTION}: registering {} bytes for '{name}' failed",
                request.length
            );
            return Err(Status::from_raw(status).unwrap_or(Status::IoError));
        }
        // SAFETY: writable (contract).
        unsafe {
            (*mem).md = md;
            (*mem).memh = memh;
        }
        Ok(())
    })
}

/// Deregisters and frees memory from `uct_iface_mem_alloc`.
///
/// # Safety
/// `mem` NULL or describing memory from `uct_iface_mem_alloc`, not freed yet.
#[no_mangle]
pub unsafe extern "C" fn uct_iface_mem_free(mem: *const uct_allocated_memory_t) {
    const FUNCTION: &str = "uct_iface_mem_free";
    if non_null(mem, FUNCTION, "mem").is_err() {
        return;
    }
    // SAFETY: non-NULL, valid by the caller's contract.
    let mem = unsafe { &*mem };
    if !mem.memh.is_null() {
        // SAFETY: the registration uct_iface_mem_alloc made with this md.
        let status = unsafe { crate::api::md::uct_md_mem_dereg(mem.md, mem.memh) };
        if status != UCS_OK {
            tracing::warn!("{FUNCTION}: deregistering {:p} failed", mem.address);
        }
    }
    // SAFETY: allocated by uct_iface_mem_alloc, freed once (contract).
    let _ = unsafe { release(mem, FUNCTION) };
}
