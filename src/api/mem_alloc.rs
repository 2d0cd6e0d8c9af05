//! `uct_mem_alloc` / `uct_mem_free` and `uct_iface_mem_alloc` /
//! `uct_iface_mem_free`: memory for zero-copy operations.
//!
//! The methods are UCX's, tried in the caller's order: `thp` (anonymous
//! mapping advised for transparent huge pages), `md` (skipped: no memory
//! domain of ours allocates, none advertises `UCT_MD_FLAG_ALLOC`), `heap`
//! (page-aligned `posix_memalign`), `mmap` (anonymous mapping, also at a
//! fixed address), `huge` (`MAP_HUGETLB`, when the system has huge pages).
//! `uct_iface_mem_alloc` allocates with `thp`, `mmap`, `heap` and registers
//! the memory with the interface's memory domain. The allocation itself, and
//! the `uct_allocated_memory_t` describing it (UCX 1.13's 40 bytes of it),
//! are [`crate::core::host_memory`]'s.

use std::ffi::{c_char, c_uint};

use crate::abi::*;
use crate::api::checks::{finish, non_null, status_entry_point};
use crate::core::c_boundary::{c_entry, null_argument, CSlice, CStrArg, IfaceHandle};
use crate::core::host_memory::{
    allocate_with, name_text, page_size, AllocParams, Allocated113, AllocatedHere, MemOut, Request,
};
use crate::core::open_iface::BaseOfHandle;

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
        const FUNCTION: &str = "uct_mem_free";
        crate::api::enter();
        finish(FUNCTION, owner.free(FUNCTION))
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
            let fresh = allocate_with(&methods, &request, &mem, FUNCTION, &name)?;
            let allocated = fresh.describe();
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
                let _ = fresh.free(FUNCTION);
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
