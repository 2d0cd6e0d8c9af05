//! Memory domains: `uct_md_open/close`, `uct_md_query` (v1 and v2),
//! `uct_md_query_tl_resources`, `uct_release_tl_resource_list`, and the
//! memory-registration entry points (over `rc::domain`).

use std::ffi::{c_char, c_uint, c_void};

use crate::abi::*;
use crate::api::checks::{finish, known_fields, non_null};
use crate::api::component::component_arg;
use crate::api::cstr::{c_str_arg, fill_c_array};
use crate::core::config::{md_config_from_handle, read_md_config, IbMdConfig};
use crate::core::md::{local_cpus, Md, MdCapabilities};
use crate::rc::domain::{pack_rkey, Domain, MemHandle};

/// Every `uct_md_attr_v2_t` field we fill.
const MD_ATTR_V2_FIELDS: u64 = UCT_MD_ATTR_FIELD_MAX_ALLOC
    | UCT_MD_ATTR_FIELD_MAX_REG
    | UCT_MD_ATTR_FIELD_FLAGS
    | UCT_MD_ATTR_FIELD_REG_MEM_TYPES
    | UCT_MD_ATTR_FIELD_REG_NONBLOCK_MEM_TYPES
    | UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES
    | UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES
    | UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES
    | UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES
    | UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES
    | UCT_MD_ATTR_FIELD_REG_COST
    | UCT_MD_ATTR_FIELD_COMPONENT_NAME
    | UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE
    | UCT_MD_ATTR_FIELD_LOCAL_CPUS
    | UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE
    | UCT_MD_ATTR_FIELD_GLOBAL_ID
    | UCT_MD_ATTR_FIELD_REG_ALIGNMENT
    | UCT_MD_ATTR_FIELD_GVA_MEM_TYPES
    | UCT_MD_ATTR_FIELD_REQUIRED_MEM_FLAGS;

/// Turns a C handle into our md, or `InvalidParam` with a log line.
///
/// # Safety
/// `md` must be NULL or a handle from `uct_md_open` not closed yet.
pub(crate) unsafe fn md_ref<'a>(md: uct_md_h, function: &str) -> Result<&'a Md, Status> {
    non_null(md, function, "md")?;
    // SAFETY: non-NULL and, by the caller's contract, a live boxed Md.
    let md_ref = unsafe { &*(md as *const Md) };
    if !md_ref.is_valid() {
        tracing::warn!("{function}: {md:p} is not an open memory domain");
        return Err(Status::InvalidParam);
    }
    Ok(md_ref)
}

/// Opens the memory domain `md_name` of `component` with `config` (from
/// `uct_md_config_read`; NULL reads the environment as UCX's defaults would).
///
/// # Safety
/// `md_name` NULL or NUL-terminated; `md_p` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn uct_md_open(
    component: uct_component_h,
    md_name: *const c_char,
    config: *const uct_md_config_t,
    md_p: *mut uct_md_h,
) -> ucs_status_t {
    crate::api::enter();
    const FUNCTION: &str = "uct_md_open";
    let result = (|| {
        let component = component_arg(component, FUNCTION)?;
        // SAFETY: NULL or NUL-terminated by the caller's contract.
        let name = unsafe { c_str_arg(md_name, FUNCTION, "md_name") }?;
        non_null(md_p, FUNCTION, "md_p")?;
        let Some(device) = component.find_md_device(name) else {
            tracing::warn!(
                "{FUNCTION}: component '{}' has no memory domain '{name}'",
                component.name()
            );
            return Err(Status::NoDevice);
        };
        let md_config = if config.is_null() {
            read_md_config(None).and_then(|config| IbMdConfig::from_config(&config))
        } else {
            md_config_from_handle(config)
        }
        .inspect_err(|status| tracing::warn!("{FUNCTION}: unusable md configuration: {status}"))?;
        let md = Box::into_raw(Md::open(component, device, md_config));
        // SAFETY: `md` is a fresh Box allocation; md_p is writable.
        let handle = unsafe { (*md).as_handle() };
        // SAFETY: md_p is non-NULL and writable by the caller's contract.
        unsafe { md_p.write(handle) };
        tracing::debug!("{FUNCTION}: opened '{name}' as {handle:p}");
        Ok(())
    })();
    finish(FUNCTION, result)
}

/// Closes a memory domain; NULL is ignored.
///
/// # Safety
/// `md` must be NULL or open, with no iface still using it.
#[no_mangle]
pub unsafe extern "C" fn uct_md_close(md: uct_md_h) {
    const FUNCTION: &str = "uct_md_close";
    if md.is_null() {
        return;
    }
    // SAFETY: NULL-checked; live by the caller's contract.
    if unsafe { md_ref(md, FUNCTION) }.is_err() {
        return;
    }
    // SAFETY: the handle came from Box::into_raw in uct_md_open and is closed
    // once; the magic is cleared before the memory is released.
    let mut owned = unsafe { Box::from_raw(md as *mut Md) };
    owned.invalidate();
    drop(owned);
}

/// Fills the version-1 attributes.
///
/// Size: `uct_md_attr_t` is 224 bytes in UCX 1.13 and in master (the layouts
/// are identical; newer fields went to `uct_md_attr_v2_t` instead), so writing
/// the whole struct never goes past what a caller of either version allocated.
/// A layout test pins the size at 224.
///
/// # Safety
/// `md_attr` must be NULL or writable for `sizeof(uct_md_attr_t)` bytes.
#[no_mangle]
pub unsafe extern "C" fn uct_md_query(md: uct_md_h, md_attr: *mut uct_md_attr_t) -> ucs_status_t {
    const FUNCTION: &str = "uct_md_query";
    let result = (|| {
        // SAFETY: NULL or live by the caller's contract.
        let md = unsafe { md_ref(md, FUNCTION) }?;
        non_null(md_attr, FUNCTION, "md_attr")?;
        let caps = md.capabilities();
        let mut component_name = [0 as c_char; UCT_COMPONENT_NAME_MAX];
        fill_c_array(&mut component_name, md.component().name().as_bytes());
        let attr = uct_md_attr_t {
            cap: uct_md_attr_cap {
                max_alloc: caps.max_alloc,
                max_reg: caps.max_reg,
                flags: caps.flags,
                reg_mem_types: caps.reg_mem_types,
                detect_mem_types: caps.detect_mem_types,
                alloc_mem_types: caps.alloc_mem_types,
                access_mem_types: caps.access_mem_types,
            },
            reg_cost: caps.reg_cost,
            component_name,
            rkey_packed_size: caps.rkey_packed_size,
            local_cpus: local_cpus(),
        };
        // SAFETY: non-NULL and writable for one uct_md_attr_t by contract;
        // write() does not read the (possibly uninitialised) old contents.
        unsafe { md_attr.write(attr) };
        Ok(())
    })();
    finish(FUNCTION, result)
}

/// Writes each field of `*attr` that `field_mask` asks for, through raw
/// field pointers: the caller only initialised `field_mask`, so no reference
/// to the whole struct is ever formed.
///
/// # Safety
/// `attr` must be valid for writes of one `uct_md_attr_v2_t`.
unsafe fn fill_md_attr_v2(
    md: &Md,
    caps: &MdCapabilities,
    field_mask: u64,
    attr: *mut uct_md_attr_v2_t,
) {
    macro_rules! set {
        ($bit:expr, $field:ident, $value:expr) => {
            if field_mask & $bit != 0 {
                // SAFETY: `attr` is valid for writes (function contract);
                // addr_of_mut! forms no reference to uninitialised memory.
                unsafe { std::ptr::addr_of_mut!((*attr).$field).write($value) };
            }
        };
    }
    let mut component_name = [0 as c_char; UCT_COMPONENT_NAME_MAX];
    fill_c_array(&mut component_name, md.component().name().as_bytes());
    let mut global_id = [0 as c_char; UCT_MD_GLOBAL_ID_MAX];
    fill_c_array(&mut global_id, &md.global_id());

    set!(UCT_MD_ATTR_FIELD_MAX_ALLOC, max_alloc, caps.max_alloc);
    set!(UCT_MD_ATTR_FIELD_MAX_REG, max_reg, caps.max_reg);
    set!(UCT_MD_ATTR_FIELD_FLAGS, flags, caps.flags);
    set!(
        UCT_MD_ATTR_FIELD_REG_MEM_TYPES,
        reg_mem_types,
        caps.reg_mem_types
    );
    set!(
        UCT_MD_ATTR_FIELD_REG_NONBLOCK_MEM_TYPES,
        reg_nonblock_mem_types,
        caps.reg_nonblock_mem_types
    );
    set!(
        UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES,
        cache_mem_types,
        caps.cache_mem_types
    );
    set!(
        UCT_MD_ATTR_FIELD_GVA_MEM_TYPES,
        gva_mem_types,
        caps.gva_mem_types
    );
    set!(
        UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES,
        detect_mem_types,
        caps.detect_mem_types
    );
    set!(
        UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES,
        alloc_mem_types,
        caps.alloc_mem_types
    );
    set!(
        UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES,
        access_mem_types,
        caps.access_mem_types
    );
    set!(
        UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES,
        dmabuf_mem_types,
        caps.dmabuf_mem_types
    );
    set!(UCT_MD_ATTR_FIELD_REG_COST, reg_cost, caps.reg_cost);
    set!(
        UCT_MD_ATTR_FIELD_COMPONENT_NAME,
        component_name,
        component_name
    );
    set!(
        UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE,
        rkey_packed_size,
        caps.rkey_packed_size
    );
    set!(UCT_MD_ATTR_FIELD_LOCAL_CPUS, local_cpus, local_cpus());
    set!(
        UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE,
        exported_mkey_packed_size,
        caps.exported_mkey_packed_size
    );
    set!(UCT_MD_ATTR_FIELD_GLOBAL_ID, global_id, global_id);
    set!(
        UCT_MD_ATTR_FIELD_REG_ALIGNMENT,
        reg_alignment,
        caps.reg_alignment
    );
    set!(
        UCT_MD_ATTR_FIELD_REQUIRED_MEM_FLAGS,
        required_mem_flags,
        caps.required_mem_flags
    );
}

/// Fills the version-2 attributes selected by `md_attr->field_mask`; fields
/// not selected are left untouched. Bits we do not know are refused rather
/// than silently left unfilled.
///
/// # Safety
/// `md_attr` must be NULL or a valid `uct_md_attr_v2_t`.
#[no_mangle]
pub unsafe extern "C" fn uct_md_query_v2(
    md: uct_md_h,
    md_attr: *mut uct_md_attr_v2_t,
) -> ucs_status_t {
    const FUNCTION: &str = "uct_md_query_v2";
    let result = (|| {
        // SAFETY: NULL or live by the caller's contract.
        let md = unsafe { md_ref(md, FUNCTION) }?;
        non_null(md_attr, FUNCTION, "md_attr")?;
        // SAFETY: only the field_mask is read here, through a raw pointer,
        // because the caller need not initialise the rest of the struct.
        let field_mask = unsafe { std::ptr::addr_of!((*md_attr).field_mask).read() };
        known_fields(field_mask, MD_ATTR_V2_FIELDS, FUNCTION, "uct_md_attr_v2_t")?;
        // SAFETY: md_attr is non-NULL and writable by the caller's contract.
        unsafe { fill_md_attr_v2(md, &md.capabilities(), field_mask, md_attr) };
        Ok(())
    })();
    finish(FUNCTION, result)
}

/// Lists the transport resources of `md` (`rc_mlx5` on `<device>:1`); release
/// the array with `uct_release_tl_resource_list`.
///
/// # Safety
/// Both out-pointers must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn uct_md_query_tl_resources(
    md: uct_md_h,
    resources_p: *mut *mut uct_tl_resource_desc_t,
    num_resources_p: *mut c_uint,
) -> ucs_status_t {
    const FUNCTION: &str = "uct_md_query_tl_resources";
    let result = (|| {
        // SAFETY: NULL or live by the caller's contract.
        let md = unsafe { md_ref(md, FUNCTION) }?;
        non_null(resources_p, FUNCTION, "resources_p")?;
        non_null(num_resources_p, FUNCTION, "num_resources_p")?;
        let resources = md.tl_resources();
        let count = resources.len();
        // calloc: zeroed, so padding and unused name bytes hold no garbage;
        // a plain C array lets the release function free it without a length.
        // SAFETY: calloc has no preconditions; a NULL result is handled.
        let array =
            unsafe { libc::calloc(count.max(1), std::mem::size_of::<uct_tl_resource_desc_t>()) }
                as *mut uct_tl_resource_desc_t;
        if array.is_null() {
            tracing::error!("{FUNCTION}: out of memory for {count} resources");
            return Err(Status::NoMemory);
        }
        for (index, resource) in resources.iter().enumerate() {
            // SAFETY: index < count, inside the zeroed allocation.
            let slot = unsafe { &mut *array.add(index) };
            fill_c_array(&mut slot.tl_name, resource.tl_name.as_bytes());
            fill_c_array(&mut slot.dev_name, resource.dev_name.as_bytes());
            slot.dev_type = resource.dev_type;
            slot.sys_device = resource.sys_device;
        }
        // SAFETY: both out-pointers are non-NULL and writable by contract.
        unsafe {
            resources_p.write(array);
            num_resources_p.write(count as c_uint);
        }
        Ok(())
    })();
    finish(FUNCTION, result)
}

/// Frees an array from `uct_md_query_tl_resources`; NULL is ignored.
///
/// # Safety
/// `resources` must be NULL or an array from `uct_md_query_tl_resources` not
/// yet released.
#[no_mangle]
pub unsafe extern "C" fn uct_release_tl_resource_list(resources: *mut uct_tl_resource_desc_t) {
    // SAFETY: NULL or a calloc'ed array from uct_md_query_tl_resources.
    unsafe { libc::free(resources as *mut c_void) };
}

/// `uct_md_mem_reg` flags this md understands: the allocation hints (that
/// registration ignores), `HIDE_ERRORS`, the access rights and
/// `SYMMETRIC_RKEY` (a hint). `GVA` is known but refused: no `gva_mem_types`.
const MEM_REG_FLAGS: c_uint = UCT_MD_MEM_FLAG_NONBLOCK
    | UCT_MD_MEM_FLAG_FIXED
    | UCT_MD_MEM_FLAG_LOCK
    | UCT_MD_MEM_FLAG_HIDE_ERRORS
    | UCT_MD_MEM_ACCESS_ALL
    | UCT_MD_MEM_SYMMETRIC_RKEY;

/// `Err` with a log line for flags registration cannot honour.
fn check_mem_reg_flags(flags: c_uint, function: &str) -> Result<(), Status> {
    if flags & UCT_MD_MEM_GVA != 0 {
        tracing::warn!("{function}: global VA registration is not supported");
        return Err(Status::Unsupported);
    }
    let unknown = flags & !MEM_REG_FLAGS;
    if unknown != 0 {
        tracing::warn!("{function}: unknown flags 0x{unknown:x}");
        return Err(Status::InvalidParam);
    }
    Ok(())
}

/// Registers `length` bytes at `address` with the md's device. Every
/// access right is granted whatever `flags` ask for, as UCX's ib md does
/// (`UCT_MD_MEM_ACCESS_REMOTE_ATOMIC` included: atomics use the rkey
/// itself, see `domain::pack_rkey`); the handle's keys serve zcopy
/// operations and `uct_md_mkey_pack`. `UCT_MD_MEM_FLAG_NONBLOCK` registers
/// at once (no on-demand paging); `UCT_MD_MEM_FLAG_HIDE_ERRORS` logs a
/// failure at debug level only.
///
/// # Safety
/// Pointers must be NULL or valid as in UCX; the memory must stay valid until
/// `uct_md_mem_dereg`.
#[no_mangle]
pub unsafe extern "C" fn uct_md_mem_reg(
    md: uct_md_h,
    address: *mut c_void,
    length: usize,
    flags: c_uint,
    memh_p: *mut uct_mem_h,
) -> ucs_status_t {
    const FUNCTION: &str = "uct_md_mem_reg";
    let result = (|| {
        // SAFETY: NULL or live by the caller's contract.
        let md = unsafe { md_ref(md, FUNCTION) }?;
        non_null(address, FUNCTION, "address")?;
        non_null(memh_p, FUNCTION, "memh_p")?;
        if length == 0 {
            tracing::warn!("{FUNCTION}: length is 0");
            return Err(Status::InvalidParam);
        }
        check_mem_reg_flags(flags, FUNCTION)?;
        let domain = Domain::get(&md.device().name)?;
        let memh = MemHandle::register(domain, address.cast(), length)
            .inspect_err(|status| {
                if flags & UCT_MD_MEM_FLAG_HIDE_ERRORS != 0 {
                    tracing::debug!("{FUNCTION}: {length} bytes at {address:p}: {status}");
                } else {
                    tracing::warn!("{FUNCTION}: {length} bytes at {address:p}: {status}");
                }
            })?
            .into_handle();
        tracing::debug!("{FUNCTION}: {length} bytes at {address:p}, flags 0x{flags:x} -> {memh:p}");
        // SAFETY: memh_p is non-NULL and writable by the caller's contract.
        unsafe { memh_p.write(memh) };
        Ok(())
    })();
    finish(FUNCTION, result)
}

/// Advice on registered memory (`UCT_MD_FLAG_ADVISE`). Registrations are
/// pinned when made, so `UCT_MADV_WILLNEED` has nothing to prefetch: the
/// arguments are checked and the call succeeds.
///
/// # Safety
/// `md` NULL or live; `memh` NULL or a handle of this md.
#[no_mangle]
pub unsafe extern "C" fn uct_md_mem_advise(
    md: uct_md_h,
    memh: uct_mem_h,
    addr: *mut c_void,
    length: usize,
    advice: uct_mem_advice_t,
) -> ucs_status_t {
    const FUNCTION: &str = "uct_md_mem_advise";
    let result = (|| {
        // SAFETY: NULL or live by the caller's contract.
        unsafe { md_ref(md, FUNCTION) }?;
        non_null(memh, FUNCTION, "memh")?;
        // SAFETY: a handle from uct_md_mem_reg by the caller's contract.
        let handle = unsafe { MemHandle::from_handle(memh) }
            .inspect_err(|_| tracing::warn!("{FUNCTION}: {memh:p} is not a live memory handle"))?;
        if advice != UCT_MADV_NORMAL && advice != UCT_MADV_WILLNEED {
            tracing::warn!("{FUNCTION}: unknown advice {advice}");
            return Err(Status::InvalidParam);
        }
        if !handle.covers(addr as usize, length) {
            tracing::warn!(
                "{FUNCTION}: {length} bytes at {addr:p} are outside the registration {memh:p}"
            );
            return Err(Status::InvalidParam);
        }
        Ok(())
    })();
    finish(FUNCTION, result)
}

/// Deregisters memory registered by `uct_md_mem_reg`.
///
/// # Safety
/// `md` must be NULL or live; `memh` a live handle of this md.
#[no_mangle]
pub unsafe extern "C" fn uct_md_mem_dereg(md: uct_md_h, memh: uct_mem_h) -> ucs_status_t {
    const FUNCTION: &str = "uct_md_mem_dereg";
    let result = (|| {
        // SAFETY: NULL or live by the caller's contract.
        unsafe { md_ref(md, FUNCTION) }?;
        non_null(memh, FUNCTION, "memh")?;
        // SAFETY: a handle from uct_md_mem_reg by the caller's contract.
        unsafe { MemHandle::release(memh) }
            .inspect_err(|_| tracing::warn!("{FUNCTION}: {memh:p} is not a live memory handle"))
    })();
    finish(FUNCTION, result)
}

/// Packs the remote key of `memh` into `rkey_buffer` (`rkey_packed_size`
/// bytes: the 64-bit word of `domain::pack_rkey`, in host order as UCX's ib
/// md writes it).
///
/// # Safety
/// `md` must be NULL or live; `rkey_buffer` writable for `rkey_packed_size`.
#[no_mangle]
pub unsafe extern "C" fn uct_md_mkey_pack(
    md: uct_md_h,
    memh: uct_mem_h,
    rkey_buffer: *mut c_void,
) -> ucs_status_t {
    const FUNCTION: &str = "uct_md_mkey_pack";
    let result = (|| {
        // SAFETY: NULL or live by the caller's contract.
        unsafe { md_ref(md, FUNCTION) }?;
        non_null(memh, FUNCTION, "memh")?;
        non_null(rkey_buffer, FUNCTION, "rkey_buffer")?;
        // SAFETY: a handle from uct_md_mem_reg by the caller's contract.
        let handle = unsafe { MemHandle::from_handle(memh) }
            .inspect_err(|_| tracing::warn!("{FUNCTION}: {memh:p} is not a live memory handle"))?;
        let packed = pack_rkey(handle.mr.keys().rkey);
        // SAFETY: writable for RKEY_PACKED_SIZE (8) bytes by the contract;
        // callers' buffers need not be aligned.
        unsafe { (rkey_buffer as *mut u64).write_unaligned(packed) };
        Ok(())
    })();
    finish(FUNCTION, result)
}

/// Unpacks a remote key packed by `uct_md_mkey_pack` (possibly in another
/// process): the bundle's `rkey` is the packed 64-bit word, no handle.
///
/// # Safety
/// `rkey_buffer` readable for `rkey_packed_size` bytes; `rkey_ob` writable.
#[no_mangle]
pub unsafe extern "C" fn uct_rkey_unpack(
    component: uct_component_h,
    rkey_buffer: *const c_void,
    rkey_ob: *mut uct_rkey_bundle_t,
) -> ucs_status_t {
    const FUNCTION: &str = "uct_rkey_unpack";
    let result = (|| {
        component_arg(component, FUNCTION)?;
        non_null(rkey_buffer, FUNCTION, "rkey_buffer")?;
        non_null(rkey_ob, FUNCTION, "rkey_ob")?;
        // SAFETY: readable for 8 bytes by the contract; may be unaligned.
        let rkey = unsafe { (rkey_buffer as *const u64).read_unaligned() };
        // SAFETY: rkey_ob is non-NULL and writable by the contract.
        unsafe {
            rkey_ob.write(uct_rkey_bundle_t {
                rkey: rkey as uct_rkey_t,
                handle: std::ptr::null_mut(),
                r#type: component as *mut c_void,
            })
        };
        Ok(())
    })();
    finish(FUNCTION, result)
}

/// Releases an unpacked remote key (nothing was allocated for it).
///
/// # Safety
/// Pointers must be NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn uct_rkey_release(
    component: uct_component_h,
    rkey_ob: *const uct_rkey_bundle_t,
) -> ucs_status_t {
    const FUNCTION: &str = "uct_rkey_release";
    let result = (|| {
        component_arg(component, FUNCTION)?;
        non_null(rkey_ob, FUNCTION, "rkey_ob")?;
        Ok(())
    })();
    finish(FUNCTION, result)
}
