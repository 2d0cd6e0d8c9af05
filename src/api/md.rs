//! Memory domains: `uct_md_open/close`, `uct_md_query` (v1 and v2),
//! `uct_md_query_tl_resources`, `uct_release_tl_resource_list`, and the
//! memory-registration entry points (over `ib`): each v1 call fills
//! the v2 parameter struct as UCX does and shares the v2 call's one
//! implementation (`mem_reg`, `mem_dereg`, `mkey_pack`, `rkey_unpack`).

use std::ffi::{c_char, c_int, c_uint, c_void};

use crate::abi::*;
use crate::api::c_array::{hand_out_c_array, HandedOutArray};
use crate::api::caller_version::{caller_version, UcxVersion};
use crate::api::checks::{finish, non_null, required_fields, status_entry_point};
use crate::api::component::component_arg;
use crate::api::config::read_md_config;
use crate::api::cstr::fill_c_array;
use crate::api::handles::{hand_out, release};
use crate::core::c_boundary::{
    c_entry, masked_member, masked_write, null_argument, CRef, CStrArg, Closing, FromC, Live,
    Masked, MaskedOut, Out,
};
use crate::ib::config::{md_config_from_handle, IbMdConfig};
use crate::ib::domain::MemHandle;
use crate::ib::md::{
    check_mem_dereg_flags, check_mem_reg_flags, check_mkey_pack_flags, local_cpus, Md,
    MD_CAPABILITY_FIELDS,
};
use crate::ib::rkey::{packed_rkey, unpacked_rkey, RKEY_PACKED_SIZE};

/// Every `uct_md_attr_v2_t` field we fill: the md's capabilities and the
/// names and CPU set added by [`all_attributes`].
const MD_ATTR_V2_FIELDS: u64 = MD_CAPABILITY_FIELDS
    | UCT_MD_ATTR_FIELD_COMPONENT_NAME
    | UCT_MD_ATTR_FIELD_LOCAL_CPUS
    | UCT_MD_ATTR_FIELD_GLOBAL_ID;

/// Every attribute of `md`, all of [`MD_ATTR_V2_FIELDS`] set: what both
/// queries report from.
fn all_attributes(md: &Md) -> uct_md_attr_v2_t {
    let mut attr = md.capabilities();
    fill_c_array(&mut attr.component_name, md.component().name().as_bytes());
    attr.local_cpus = local_cpus();
    fill_c_array(&mut attr.global_id, &md.global_id());
    attr.field_mask = MD_ATTR_V2_FIELDS;
    attr
}

/// An md handle argument: NULL or a handle from `uct_md_open` not closed
/// yet.
///
/// cbindgen:ignore
pub(crate) type MdArg<'a> = Live<'a, Md>;

c_entry! {
    no_log_setup
    /// Opens the memory domain `md_name` of `component` with `config` (from
    /// `uct_md_config_read`; NULL reads the environment as UCX's defaults
    /// would).
    fn uct_md_open(
        component: uct_component_h,
        md_name: *const c_char,
        config: *const uct_md_config_t,
        md_p: *mut uct_md_h,
    ) -> ucs_status_t;
    take md_name: CStrArg = (md_name), md_p: Out<uct_md_h> = (md_p);
    {
        status_entry_point!(FUNCTION = "uct_md_open", {
            let component = component_arg(component, FUNCTION)?;
            let name = md_name.get(FUNCTION, "md_name")?;
            md_p.check(FUNCTION, "md_p")?;
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
            .inspect_err(|status| {
                tracing::warn!("{FUNCTION}: unusable md configuration: {status}")
            })?;
            let handle = hand_out(
                || Md::open(component, device, md_config),
                md_p,
                FUNCTION,
                "md_p",
            )?;
            tracing::debug!("{FUNCTION}: opened '{name}' as {handle:p}");
            Ok(())
        })
    }
}

c_entry! {
    no_log_setup
    /// Closes a memory domain; NULL is ignored. No iface may still use it.
    fn uct_md_close(md: uct_md_h);
    take md: Closing<Md> = (md);
    {
        release(md, "uct_md_close", |_| ());
    }
}

c_entry! {
    /// Fills the version-1 attributes.
    ///
    /// Size: `uct_md_attr_t` is 224 bytes in UCX 1.13 and in master (the layouts
    /// are identical; newer fields went to `uct_md_attr_v2_t` instead), so writing
    /// the whole struct never goes past what a caller of either version allocated.
    /// A layout test pins the size at 224.
    ///
    /// `md_attr` must be NULL or writable for `sizeof(uct_md_attr_t)` bytes.
    fn uct_md_query(md: uct_md_h, md_attr: *mut uct_md_attr_t) -> ucs_status_t;
    take md: MdArg = (md), md_attr: Out<uct_md_attr_t> = (md_attr);
    {
        status_entry_point!(FUNCTION = "uct_md_query", {
            let md = md.get(FUNCTION)?;
            if md_attr.is_null() {
                return Err(null_argument(FUNCTION, "md_attr"));
            }
            let all = all_attributes(md);
            let attr = uct_md_attr_t {
                cap: uct_md_attr_cap {
                    max_alloc: all.max_alloc,
                    max_reg: all.max_reg,
                    flags: all.flags,
                    reg_mem_types: all.reg_mem_types,
                    detect_mem_types: all.detect_mem_types,
                    alloc_mem_types: all.alloc_mem_types,
                    access_mem_types: all.access_mem_types,
                },
                reg_cost: all.reg_cost,
                component_name: all.component_name,
                rkey_packed_size: all.rkey_packed_size,
                local_cpus: all.local_cpus,
            };
            // write() does not read the (possibly uninitialised) old contents.
            md_attr.write(FUNCTION, "md_attr", attr)
        })
    }
}

/// Writes each field of `*attr` that `field_mask` asks for, from `all`,
/// through raw field pointers: the caller only initialised `field_mask`, so
/// no reference to the whole struct is ever formed.
fn copy_md_attr_v2(all: &uct_md_attr_v2_t, field_mask: u64, attr: &MaskedOut<uct_md_attr_v2_t>) {
    macro_rules! copy {
        ($($bit:ident => $field:ident,)+) => {
            $(masked_write!(attr, field_mask, $bit => $field = all.$field);)+
        };
    }
    copy! {
        UCT_MD_ATTR_FIELD_MAX_ALLOC => max_alloc,
        UCT_MD_ATTR_FIELD_MAX_REG => max_reg,
        UCT_MD_ATTR_FIELD_FLAGS => flags,
        UCT_MD_ATTR_FIELD_REG_MEM_TYPES => reg_mem_types,
        UCT_MD_ATTR_FIELD_REG_NONBLOCK_MEM_TYPES => reg_nonblock_mem_types,
        UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES => cache_mem_types,
        UCT_MD_ATTR_FIELD_GVA_MEM_TYPES => gva_mem_types,
        UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES => detect_mem_types,
        UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES => alloc_mem_types,
        UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES => access_mem_types,
        UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES => dmabuf_mem_types,
        UCT_MD_ATTR_FIELD_REG_COST => reg_cost,
        UCT_MD_ATTR_FIELD_COMPONENT_NAME => component_name,
        UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE => rkey_packed_size,
        UCT_MD_ATTR_FIELD_LOCAL_CPUS => local_cpus,
        UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE => exported_mkey_packed_size,
        UCT_MD_ATTR_FIELD_GLOBAL_ID => global_id,
        UCT_MD_ATTR_FIELD_REG_ALIGNMENT => reg_alignment,
        UCT_MD_ATTR_FIELD_REQUIRED_MEM_FLAGS => required_mem_flags,
    }
}

c_entry! {
    /// Fills the version-2 attributes selected by `md_attr->field_mask`; fields
    /// not selected are left untouched. Bits we do not know are ignored with a
    /// debug line, as UCX ignores them.
    ///
    /// `md_attr` must be NULL or a valid `uct_md_attr_v2_t`.
    fn uct_md_query_v2(
        md: uct_md_h,
        md_attr: *mut uct_md_attr_v2_t,
    ) -> ucs_status_t;
    take md_handle: MdArg = (md), masked: MaskedOut<uct_md_attr_v2_t> = (md_attr);
    {
        status_entry_point!(FUNCTION = "uct_md_query_v2", {
            let md = md_handle.get(FUNCTION)?;
            // As UCX: fields this version does not know are left alone.
            let field_mask = masked.tolerant_mask(MD_ATTR_V2_FIELDS, FUNCTION, "md_attr")?;
            copy_md_attr_v2(&all_attributes(md), field_mask & MD_ATTR_V2_FIELDS, &masked);
            Ok(())
        })
    }
}

c_entry! {
    no_log_setup
    /// Lists the transport resources of `md` (`rc_mlx5` on `<device>:1`);
    /// release the array with `uct_release_tl_resource_list`.
    fn uct_md_query_tl_resources(
        md: uct_md_h,
        resources_p: *mut *mut uct_tl_resource_desc_t,
        num_resources_p: *mut c_uint,
    ) -> ucs_status_t;
    take md: MdArg = (md),
        resources_p: Out<*mut uct_tl_resource_desc_t> = (resources_p),
        num_resources_p: Out<c_uint> = (num_resources_p);
    {
        status_entry_point!(FUNCTION = "uct_md_query_tl_resources", {
            let md = md.get(FUNCTION)?;
            hand_out_c_array(
                &md.tl_resources(),
                |slot: &mut uct_tl_resource_desc_t, resource| {
                    fill_c_array(&mut slot.tl_name, resource.tl_name.as_bytes());
                    fill_c_array(&mut slot.dev_name, resource.dev_name.as_bytes());
                    slot.dev_type = resource.dev_type;
                    slot.sys_device = resource
                        .pci_bus_id
                        .map_or(UCS_SYS_DEVICE_ID_UNKNOWN, |bus_id| {
                            crate::api::topo::system_device(&bus_id, &md.device().name)
                        });
                },
                resources_p,
                num_resources_p,
                (FUNCTION, "resources_p", "num_resources_p"),
                "resources",
            )
        })
    }
}

/// Whether `sockaddr` can be reached through `md` (the deprecated
/// `UCT_MD_FLAG_SOCKADDR` capability, which no md of ours has): never, as
/// UCX's ib md answers; client-server wire-up is a connection manager's
/// job. A debug line only: callers probe it.
///
/// # Safety
/// None needed: the address is not read.
#[no_mangle]
pub unsafe extern "C" fn uct_md_is_sockaddr_accessible(
    md: uct_md_h,
    sockaddr: *const ucs_sock_addr_t,
    mode: uct_sockaddr_accessibility_t,
) -> std::ffi::c_int {
    crate::api::enter();
    tracing::debug!(
        "uct_md_is_sockaddr_accessible: md {md:p} reaches no socket address ({sockaddr:p}, \
         mode {mode})"
    );
    0
}

c_entry! {
    no_log_setup
    /// Frees an array from `uct_md_query_tl_resources`; NULL is ignored.
    fn uct_release_tl_resource_list(resources: *mut uct_tl_resource_desc_t);
    take resources: HandedOutArray<uct_tl_resource_desc_t> = (resources);
    {
        resources.free();
    }
}

/// `uct_md_mem_reg_params_t` fields this md reads.
const MEM_REG_FIELDS: u64 = (UCT_MD_MEM_REG_FIELD_FLAGS
    | UCT_MD_MEM_REG_FIELD_DMABUF_FD
    | UCT_MD_MEM_REG_FIELD_DMABUF_OFFSET
    | UCT_MD_MEM_REG_FIELD_MEM_TYPE) as u64;

/// `uct_md_mem_dereg_params_t` fields this md reads.
const MEM_DEREG_FIELDS: u64 = (UCT_MD_MEM_DEREG_FIELD_MEMH
    | UCT_MD_MEM_DEREG_FIELD_FLAGS
    | UCT_MD_MEM_DEREG_FIELD_COMPLETION) as u64;

/// `uct_md_mkey_pack_params_t` fields this md reads.
const MKEY_PACK_FIELDS: u64 = UCT_MD_MKEY_PACK_FIELD_FLAGS as u64;

/// `uct_rkey_unpack_params_t` fields this md reads.
const RKEY_UNPACK_FIELDS: u64 = UCT_RKEY_UNPACK_FIELD_SYS_DEVICE as u64;

/// The one registration, behind `uct_md_mem_reg` (its flags as the only
/// field, as UCX passes them) and `uct_md_mem_reg_v2`; `function` names the
/// entry point in log lines.
///
/// `address` is only registered, never read here.
fn mem_reg(
    function: &str,
    md: MdArg,
    address: *mut c_void,
    length: usize,
    params: Masked<uct_md_mem_reg_params_t>,
    memh_p: Out<uct_mem_h>,
) -> Result<(), Status> {
    let md = md.get(function)?;
    if memh_p.is_null() {
        return Err(null_argument(function, "memh_p"));
    }
    let field_mask = params.tolerant_mask(MEM_REG_FIELDS, function, "params")?;
    let flags =
        masked_member!(params, field_mask, UCT_MD_MEM_REG_FIELD_FLAGS => flags).unwrap_or(0);
    check_mem_reg_flags(flags, function)?;
    let hide_errors = flags & UCT_MD_MEM_FLAG_HIDE_ERRORS as u64 != 0;
    let log_failure = |what: &dyn std::fmt::Display| {
        if hide_errors {
            tracing::debug!("{function}: {length} bytes at {address:p}: {what}");
        } else {
            tracing::warn!("{function}: {length} bytes at {address:p}: {what}");
        }
    };
    if length == 0 {
        log_failure(&"length is 0");
        return Err(Status::InvalidParam);
    }
    non_null(address, function, "address")?;
    let dmabuf_fd = masked_member!(params, field_mask, UCT_MD_MEM_REG_FIELD_DMABUF_FD => dmabuf_fd)
        .unwrap_or(UCT_DMABUF_FD_INVALID);
    if dmabuf_fd != UCT_DMABUF_FD_INVALID {
        tracing::warn!("{function}: dmabuf registration (fd {dmabuf_fd}) is not supported");
        return Err(Status::Unsupported);
    }
    let mem_type = masked_member!(params, field_mask, UCT_MD_MEM_REG_FIELD_MEM_TYPE => mem_type)
        .unwrap_or(UCS_MEMORY_TYPE_HOST);
    md.check_mem_type(mem_type, function)?;
    let memh = md
        .register(address.cast(), length)
        .inspect_err(|status| log_failure(status))?
        .into_handle();
    tracing::debug!("{function}: {length} bytes at {address:p}, flags 0x{flags:x} -> {memh:p}");
    memh_p.write(function, "memh_p", memh)
}

c_entry! {
    /// Registers `length` bytes at `address` with the md's device: as
    /// `uct_md_mem_reg_v2` with `flags` as the only field.
    ///
    /// Pointers must be NULL or valid as in UCX; the memory must stay valid until
    /// it is deregistered.
    fn uct_md_mem_reg(
        md: uct_md_h,
        address: *mut c_void,
        length: usize,
        flags: c_uint,
        memh_p: *mut uct_mem_h,
    ) -> ucs_status_t;
    take md: MdArg = (md), memh_p: Out<uct_mem_h> = (memh_p);
    {
        const FUNCTION: &str = "uct_md_mem_reg";
        let params = uct_md_mem_reg_params_t {
            field_mask: UCT_MD_MEM_REG_FIELD_FLAGS as u64,
            flags: flags.into(),
            dmabuf_fd: UCT_DMABUF_FD_INVALID,
            dmabuf_offset: 0,
            mem_type: UCS_MEMORY_TYPE_HOST,
        };
        finish(
            FUNCTION,
            mem_reg(FUNCTION, md, address, length, Masked::of(&params), memh_p),
        )
    }
}

c_entry! {
    /// Registers `length` bytes at `address` with the md's device as `params`
    /// asks (fields `FLAGS`, `DMABUF_FD`, `DMABUF_OFFSET`, `MEM_TYPE`, all
    /// optional; other bits refused). Every access right is granted whatever the
    /// flags ask for, as UCX's ib md does (`UCT_MD_MEM_ACCESS_REMOTE_ATOMIC`
    /// included: atomics use the rkey itself); the handle serves zcopy
    /// operations and `uct_md_mkey_pack(_v2)`. `UCT_MD_MEM_FLAG_NONBLOCK`
    /// registers at once (no on-demand paging); `UCT_MD_MEM_FLAG_HIDE_ERRORS`
    /// logs a failed registration at debug level only; `UCT_MD_MEM_GVA` is
    /// unsupported. A dmabuf fd other than `UCT_DMABUF_FD_INVALID` is unsupported
    /// (no `UCT_MD_FLAG_REG_DMABUF`); `dmabuf_offset` without one is ignored, as
    /// in UCX. Memory types outside `reg_mem_types` (host) are unsupported;
    /// `UCS_MEMORY_TYPE_UNKNOWN` is registered as given.
    ///
    /// As `uct_md_mem_reg`; `params` NULL or valid for the fields its
    /// `field_mask` names.
    fn uct_md_mem_reg_v2(
        md: uct_md_h,
        address: *mut c_void,
        length: usize,
        params: *const uct_md_mem_reg_params_t,
        memh_p: *mut uct_mem_h,
    ) -> ucs_status_t;
    take md: MdArg = (md),
        params: Masked<uct_md_mem_reg_params_t> = (params),
        memh_p: Out<uct_mem_h> = (memh_p);
    {
        const FUNCTION: &str = "uct_md_mem_reg_v2";
        finish(FUNCTION, mem_reg(FUNCTION, md, address, length, params, memh_p))
    }
}

c_entry! {
    no_log_setup
    /// Advice on registered memory (`UCT_MD_FLAG_ADVISE`). Registrations are
    /// pinned when made, so `UCT_MADV_WILLNEED` has nothing to prefetch: the
    /// arguments are checked and the call succeeds. `memh` NULL or a handle
    /// of this md.
    fn uct_md_mem_advise(
        md: uct_md_h,
        memh: uct_mem_h,
        addr: *mut c_void,
        length: usize,
        advice: uct_mem_advice_t,
    ) -> ucs_status_t;
    take md: MdArg = (md), handle: Live<MemHandle> = (memh);
    {
        status_entry_point!(FUNCTION = "uct_md_mem_advise", {
            md.get(FUNCTION)?;
            let handle = handle.get(FUNCTION)?;
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
        })
    }
}

/// The one deregistration, behind `uct_md_mem_dereg` (only the handle, as
/// UCX passes it) and `uct_md_mem_dereg_v2`.
///
/// `memh` must be a live handle of this md (the entry points' contract).
fn mem_dereg(
    function: &str,
    md: MdArg,
    params: Masked<uct_md_mem_dereg_params_t>,
) -> Result<(), Status> {
    md.get(function)?;
    let field_mask = params.tolerant_mask(MEM_DEREG_FIELDS, function, "params")?;
    required_fields(
        field_mask,
        UCT_MD_MEM_DEREG_FIELD_MEMH as u64,
        function,
        "uct_md_mem_dereg_params_t",
    )?;
    let memh = masked_member!(params, field_mask, UCT_MD_MEM_DEREG_FIELD_MEMH => memh)
        .unwrap_or(std::ptr::null_mut());
    non_null(memh, function, "memh")?;
    let flags =
        masked_member!(params, field_mask, UCT_MD_MEM_DEREG_FIELD_FLAGS => flags).unwrap_or(0);
    check_mem_dereg_flags(flags, function)?;
    // SAFETY: a handle from uct_md_mem_reg(_v2) by the entry points'
    // contract.
    unsafe { MemHandle::release(memh) }
        .inspect_err(|_| tracing::warn!("{function}: {memh:p} is not a live memory handle"))
}

c_entry! {
    /// Deregisters memory registered by `uct_md_mem_reg` or
    /// `uct_md_mem_reg_v2`: as `uct_md_mem_dereg_v2` with `memh` as the only
    /// field. `memh` must be a live handle of this md.
    fn uct_md_mem_dereg(md: uct_md_h, memh: uct_mem_h) -> ucs_status_t;
    take md: MdArg = (md);
    {
        const FUNCTION: &str = "uct_md_mem_dereg";
        let params = uct_md_mem_dereg_params_t {
            field_mask: UCT_MD_MEM_DEREG_FIELD_MEMH as u64,
            flags: 0,
            memh,
            comp: std::ptr::null_mut(),
        };
        finish(FUNCTION, mem_dereg(FUNCTION, md, Masked::of(&params)))
    }
}

c_entry! {
    /// Deregisters `params->memh` (fields `MEMH`, required, `FLAGS`,
    /// `COMPLETION`). `UCT_MD_MEM_DEREG_FLAG_INVALIDATE` is unsupported, as in
    /// UCX's verbs ib md: this md advertises no `UCT_MD_FLAG_INVALIDATE` (nor
    /// `INVALIDATE_RMA`/`AMO`). The completion serves only invalidation, so it
    /// is not called (UCX's own UCP passes one on every deregistration and
    /// relies on exactly that). `params->memh` must be a live handle of this
    /// md.
    fn uct_md_mem_dereg_v2(
        md: uct_md_h,
        params: *const uct_md_mem_dereg_params_t,
    ) -> ucs_status_t;
    take md: MdArg = (md), params: Masked<uct_md_mem_dereg_params_t> = (params);
    {
        finish("uct_md_mem_dereg_v2", mem_dereg("uct_md_mem_dereg_v2", md, params))
    }
}

/// The buffer a packed rkey is written to or read from: NULL or valid for
/// `RKEY_PACKED_SIZE` bytes, any alignment.
///
/// cbindgen:ignore
type PackedRkey = [u8; RKEY_PACKED_SIZE];

/// The one key packing, behind `uct_md_mkey_pack` (no fields, as UCX
/// passes) and `uct_md_mkey_pack_v2`: `ib::rkey::packed_rkey`.
fn mkey_pack(
    function: &str,
    md: MdArg,
    memh: Live<MemHandle>,
    params: Masked<uct_md_mkey_pack_params_t>,
    mkey_buffer: Out<PackedRkey>,
) -> Result<(), Status> {
    crate::api::enter();
    md.get(function)?;
    non_null(memh.raw(), function, "memh")?;
    mkey_buffer.check(function, "mkey_buffer")?;
    let field_mask = params.tolerant_mask(MKEY_PACK_FIELDS, function, "params")?;
    let flags =
        masked_member!(params, field_mask, UCT_MD_MKEY_PACK_FIELD_FLAGS => flags).unwrap_or(0);
    check_mkey_pack_flags(flags, function)?;
    let handle = memh.get(function)?;
    mkey_buffer.write(function, "mkey_buffer", packed_rkey(handle))?;
    tracing::trace!("{function}: packed {:p}", memh.raw());
    Ok(())
}

c_entry! {
    no_log_setup
    /// Packs the remote key of `memh` into `rkey_buffer` (writable for
    /// `rkey_packed_size` bytes): as `uct_md_mkey_pack_v2` without fields.
    fn uct_md_mkey_pack(
        md: uct_md_h,
        memh: uct_mem_h,
        rkey_buffer: *mut c_void,
    ) -> ucs_status_t;
    take md: MdArg = (md), memh: Live<MemHandle> = (memh),
        rkey_buffer: Out<PackedRkey> = (rkey_buffer);
    {
        const FUNCTION: &str = "uct_md_mkey_pack";
        // No fields set, as UCX passes.
        let params = Default::default();
        finish(
            FUNCTION,
            mkey_pack(FUNCTION, md, memh, Masked::of(&params), rkey_buffer),
        )
    }
}

/// The arguments of `uct_md_mkey_pack_v2` after the handles: the parameters
/// and the buffer, taken from where the caller's form of the call put them.
///
/// cbindgen:ignore
struct MkeyPackArgs<'a> {
    params: Masked<'a, uct_md_mkey_pack_params_t>,
    mkey_buffer: Out<'a, PackedRkey>,
}

impl
    FromC<(
        *mut c_void,
        usize,
        *const uct_md_mkey_pack_params_t,
        *mut c_void,
    )> for MkeyPackArgs<'_>
{
    /// Relies on: the parameters NULL or valid for the fields their mask
    /// names, the buffer NULL or writable for `rkey_packed_size` bytes; in
    /// the four-argument form of UCX 1.15 and older, in the places of
    /// `address` and `length`.
    unsafe fn from_c(
        (address, length, params, mkey_buffer): (
            *mut c_void,
            usize,
            *const uct_md_mkey_pack_params_t,
            *mut c_void,
        ),
    ) -> Self {
        let (params, mkey_buffer) = if caller_version() < UcxVersion::MKEY_PACK_WITH_RANGE {
            // The four-argument form: its params and buffer came in the
            // registers of our `address` and `length`; the last two are
            // unset.
            (
                address as *const uct_md_mkey_pack_params_t,
                length as *mut c_void,
            )
        } else {
            // The key covers the whole registration: the range is not needed.
            (params, mkey_buffer)
        };
        // SAFETY: by the contract.
        unsafe {
            MkeyPackArgs {
                params: Masked::from_c(params),
                mkey_buffer: Out::from_c(mkey_buffer),
            }
        }
    }
}

c_entry! {
    no_log_setup
    /// Packs the remote key of `memh` into `mkey_buffer` as `params` asks
    /// (field `FLAGS`): `rkey_packed_size` bytes (one 64-bit word in host
    /// order, as UCX's ib md packs it), the same bytes `uct_md_mkey_pack`
    /// writes. The key covers the whole registration, so `address` and
    /// `length` are not needed (UCX's verbs ib md ignores them too).
    /// `UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA` / `_AMO` and `_EXPORT` are
    /// unsupported: this md advertises neither invalidation nor
    /// `UCT_MD_FLAG_EXPORTED_MKEY`.
    ///
    /// Callers built against UCX 1.15 or older call it with four arguments,
    /// `(md, memh, params, mkey_buffer)`: when the process's UCX is that old
    /// (see `api/caller_version.rs`), the third and fourth arguments are read
    /// as those.
    fn uct_md_mkey_pack_v2(
        md: uct_md_h,
        memh: uct_mem_h,
        address: *mut c_void,
        length: usize,
        params: *const uct_md_mkey_pack_params_t,
        mkey_buffer: *mut c_void,
    ) -> ucs_status_t;
    take md: MdArg = (md), memh: Live<MemHandle> = (memh),
        args: MkeyPackArgs = (address, length, params, mkey_buffer);
    {
        const FUNCTION: &str = "uct_md_mkey_pack_v2";
        finish(
            FUNCTION,
            mkey_pack(FUNCTION, md, memh, args.params, args.mkey_buffer),
        )
    }
}

c_entry! {
    no_log_setup
    /// Packs the device-side (GPU-initiated) view of a registration or a
    /// remote key into `mem_elem`. No md of ours serves device endpoints
    /// (none of our transports advertises `UCT_IFACE_FLAG_DEVICE_EP`):
    /// `UCS_ERR_UNSUPPORTED`, as UCX's mds without device support answer.
    /// UCX 1.22's `libucp` calls it only while building a device memory list
    /// (`ucp_device_mem_list_create`), and passes the status on. UCX master
    /// adds a fifth argument, `release_handle_p`; it is not written on
    /// failure, so both forms are served. `mem_elem` is never written.
    fn uct_md_mem_elem_pack(
        md: uct_md_h,
        memh: uct_mem_h,
        rkey: uct_rkey_t,
        mem_elem: *mut uct_device_mem_elem_t,
        release_handle_p: *mut *mut c_void,
    ) -> ucs_status_t;
    take md: MdArg = (md);
    {
        status_entry_point!(FUNCTION = "uct_md_mem_elem_pack", {
            md.get(FUNCTION)?;
            non_null(mem_elem, FUNCTION, "mem_elem")?;
            let _ = (memh, rkey, release_handle_p);
            tracing::debug!("{FUNCTION}: no device memory elements on this md");
            Err(Status::Unsupported)
        })
    }
}

c_entry! {
    /// Releases what `uct_md_mem_elem_pack` allocated: nothing, since it
    /// never succeeds here.
    fn uct_md_mem_elem_release(md: uct_md_h, release_handle: *mut c_void);
    take md: MdArg = (md);
    {
        if md.get("uct_md_mem_elem_release").is_ok() && !release_handle.is_null() {
            tracing::warn!(
                "uct_md_mem_elem_release: {release_handle:p} was not handed out by this md"
            );
        }
    }
}

/// The one key unpacking, behind `uct_rkey_unpack` (no fields, as UCX
/// passes) and `uct_rkey_unpack_v2`: `ib::rkey::unpacked_rkey`.
fn rkey_unpack(
    function: &str,
    component: uct_component_h,
    rkey_buffer: CRef<PackedRkey>,
    params: Masked<uct_rkey_unpack_params_t>,
    rkey_ob: Out<uct_rkey_bundle_t>,
) -> Result<(), Status> {
    crate::api::enter();
    component_arg(component, function)?;
    let packed = rkey_buffer.get(function, "rkey_buffer")?;
    rkey_ob.check(function, "rkey_ob")?;
    params.tolerant_mask(RKEY_UNPACK_FIELDS, function, "params")?;
    let bundle = uct_rkey_bundle_t {
        rkey: unpacked_rkey(*packed),
        handle: std::ptr::null_mut(),
        r#type: component as *mut c_void,
    };
    rkey_ob.write(function, "rkey_ob", bundle)
}

c_entry! {
    no_log_setup
    /// Unpacks a remote key packed by `uct_md_mkey_pack(_v2)`, possibly in
    /// another process: as `uct_rkey_unpack_v2` without fields.
    /// `rkey_buffer` readable for `rkey_packed_size` bytes.
    fn uct_rkey_unpack(
        component: uct_component_h,
        rkey_buffer: *const c_void,
        rkey_ob: *mut uct_rkey_bundle_t,
    ) -> ucs_status_t;
    take rkey_buffer: CRef<PackedRkey> = (rkey_buffer), rkey_ob: Out<uct_rkey_bundle_t> = (rkey_ob);
    {
        const FUNCTION: &str = "uct_rkey_unpack";
        let params = uct_rkey_unpack_params_t {
            field_mask: 0,
            sys_device: UCS_SYS_DEVICE_ID_UNKNOWN,
        };
        finish(
            FUNCTION,
            rkey_unpack(FUNCTION, component, rkey_buffer, Masked::of(&params), rkey_ob),
        )
    }
}

c_entry! {
    no_log_setup
    /// Unpacks a remote key packed by `uct_md_mkey_pack(_v2)`, possibly in
    /// another process, as `params` asks (field `SYS_DEVICE`): the bundle's
    /// `rkey` is the packed word and its `handle` NULL, so `uct_rkey_release`
    /// has nothing to free. The key is the same on every device of the
    /// component, so `sys_device` is accepted and not needed.
    fn uct_rkey_unpack_v2(
        component: uct_component_h,
        rkey_buffer: *const c_void,
        params: *const uct_rkey_unpack_params_t,
        rkey_ob: *mut uct_rkey_bundle_t,
    ) -> ucs_status_t;
    take rkey_buffer: CRef<PackedRkey> = (rkey_buffer),
        params: Masked<uct_rkey_unpack_params_t> = (params),
        rkey_ob: Out<uct_rkey_bundle_t> = (rkey_ob);
    {
        const FUNCTION: &str = "uct_rkey_unpack_v2";
        finish(
            FUNCTION,
            rkey_unpack(FUNCTION, component, rkey_buffer, params, rkey_ob),
        )
    }
}

c_entry! {
    no_log_setup
    /// Orders two keys unpacked by this component, as UCX's base comparison
    /// does: `*result` is -1, 0 or 1 as `rkey1` is below, equal to or above
    /// `rkey2` (equal keys reach the same memory with the same rights). No
    /// `params` fields are defined, so any `field_mask` bit is refused.
    fn uct_rkey_compare(
        component: uct_component_h,
        rkey1: uct_rkey_t,
        rkey2: uct_rkey_t,
        params: *const uct_rkey_compare_params_t,
        result: *mut c_int,
    ) -> ucs_status_t;
    take params: Masked<uct_rkey_compare_params_t> = (params), result: Out<c_int> = (result);
    {
        const FUNCTION: &str = "uct_rkey_compare";
        let outcome = (|| {
            crate::api::enter();
            component_arg(component, FUNCTION)?;
            params.checked_mask(0, FUNCTION, "params")?;
            result.write(FUNCTION, "result", rkey1.cmp(&rkey2) as c_int)
        })();
        finish(FUNCTION, outcome)
    }
}

/// Releases a key unpacked by `uct_rkey_unpack(_v2)` (nothing was allocated
/// for it).
///
/// # Safety
/// Pointers must be NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn uct_rkey_release(
    component: uct_component_h,
    rkey_ob: *const uct_rkey_bundle_t,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_rkey_release", {
        component_arg(component, FUNCTION)?;
        non_null(rkey_ob, FUNCTION, "rkey_ob")?;
        Ok(())
    })
}
