//! Memory domains: one per HCA device of the `ib` component.
//!
//! An [`Md`] knows its device and what it can do ([`MdCapabilities`]); the
//! `api` layer copies those facts into whichever attribute struct the caller
//! passed (old `uct_md_attr_t` or `uct_md_attr_v2_t`), so both queries report
//! the same values from one place.

use crate::abi::*;
use crate::core::c_boundary::BoxedHandle;
use crate::hca::devices::{Backend, HcaDevice, DEVICE_PORT};
use crate::ib::component::Component;
use crate::ib::config::IbMdConfig;
use crate::ib::domain::{Domain, MemHandle};
use crate::ib::rkey::RKEY_PACKED_SIZE;

/// The transport an `ib` memory domain offers.
pub const RC_MLX5_TL_NAME: &str = "rc_mlx5";

/// The `uct_md_attr_v2_t` members [`Md::capabilities`] sets.
pub const MD_CAPABILITY_FIELDS: u64 = UCT_MD_ATTR_FIELD_MAX_ALLOC
    | UCT_MD_ATTR_FIELD_MAX_REG
    | UCT_MD_ATTR_FIELD_FLAGS
    | UCT_MD_ATTR_FIELD_REG_MEM_TYPES
    | UCT_MD_ATTR_FIELD_REG_NONBLOCK_MEM_TYPES
    | UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES
    | UCT_MD_ATTR_FIELD_GVA_MEM_TYPES
    | UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES
    | UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES
    | UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES
    | UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES
    | UCT_MD_ATTR_FIELD_REG_COST
    | UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE
    | UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE
    | UCT_MD_ATTR_FIELD_REG_ALIGNMENT
    | UCT_MD_ATTR_FIELD_REQUIRED_MEM_FLAGS;

/// First field of every md (opaque to C): catches stale or foreign handles.
const MD_MAGIC: u64 = 0x7563_745f_6d64_5f5f; // "uct_md__"

/// An open memory domain (what a `uct_md_h` points at).
#[repr(C)]
pub struct Md {
    magic: u64,
    component: &'static Component,
    device: &'static HcaDevice,
    config: IbMdConfig,
}

impl Md {
    pub fn open(
        component: &'static Component,
        device: &'static HcaDevice,
        config: IbMdConfig,
    ) -> Box<Md> {
        Box::new(Md {
            magic: MD_MAGIC,
            component,
            device,
            config,
        })
    }

    /// The md options it was opened with (`UCX_IB_*`).
    pub fn config(&self) -> &IbMdConfig {
        &self.config
    }

    pub fn is_valid(&self) -> bool {
        self.magic == MD_MAGIC
    }

    /// Marks the md dead before its memory is released.
    pub fn invalidate(&mut self) {
        self.magic = 0;
    }

    pub fn component(&self) -> &'static Component {
        self.component
    }

    pub fn device(&self) -> &'static HcaDevice {
        self.device
    }

    pub fn as_handle(&mut self) -> uct_md_h {
        self as *mut Md as uct_md_h
    }

    /// The capabilities of an HCA memory domain in UCX's own record: the
    /// `uct_md_attr_v2_t` members that say what the md can do, named by its
    /// `field_mask` (the component name, global id and CPU set are the query
    /// entry point's to add). Registration: memory handles are needed by
    /// zcopy and rkeys by RMA/atomics, as UCX's ib md reports.
    pub fn capabilities(&self) -> uct_md_attr_v2_t {
        let host = 1u64 << UCS_MEMORY_TYPE_HOST;
        uct_md_attr_v2_t {
            field_mask: MD_CAPABILITY_FIELDS,
            // As UCX's ib md (ULONG_MAX for both): no device limit is
            // known. Allocation itself is not offered (no
            // `UCT_MD_FLAG_ALLOC`): `uct_mem_alloc` never asks this md.
            max_alloc: u64::MAX,
            max_reg: usize::MAX,
            // As UCX's ib md: ADVISE is accepted (registrations are pinned,
            // so there is nothing to prefetch); no ALLOC, INVALIDATE or
            // EXPORTED_MKEY, which it adds only with device support.
            flags: UCT_MD_FLAG_REG
                | UCT_MD_FLAG_NEED_MEMH
                | UCT_MD_FLAG_NEED_RKEY
                | UCT_MD_FLAG_ADVISE,
            reg_mem_types: host,
            reg_nonblock_mem_types: 0,
            cache_mem_types: host,
            gva_mem_types: 0,
            detect_mem_types: 0,
            alloc_mem_types: 0,
            access_mem_types: host,
            dmabuf_mem_types: 0,
            // UCX_IB_MEM_REG_OVERHEAD / UCX_IB_MEM_REG_GROWTH, as UCX reports them.
            reg_cost: ucs_linear_func_t {
                c: self.config.mem_reg_overhead.as_secs_f64(),
                m: self.config.mem_reg_growth,
            },
            component_name: [0; UCT_COMPONENT_NAME_MAX],
            rkey_packed_size: RKEY_PACKED_SIZE,
            local_cpus: ucs_cpu_set_t { ucs_bits: [0; 16] },
            exported_mkey_packed_size: 0,
            global_id: [0; UCT_MD_GLOBAL_ID_MAX],
            reg_alignment: 1,
            // UCX's ib md registers only memory that is registrable.
            required_mem_flags: UCS_MEM_FLAG_REGISTRABLE as u8,
        }
    }

    /// The transport resources of this md: `rc_mlx5` on `<device>:1`.
    pub fn tl_resources(&self) -> Vec<TlResource> {
        vec![TlResource {
            tl_name: RC_MLX5_TL_NAME,
            dev_name: port_name(self.device),
            dev_type: UCT_DEVICE_TYPE_NET,
            pci_bus_id: self.device.pci_bus_id(),
        }]
    }

    /// `Err` with a log line unless memory of `mem_type` can be registered.
    /// `UCS_MEMORY_TYPE_UNKNOWN` is let through: registration itself tells
    /// (as UCX's ib md, which registers whatever it is given).
    pub fn check_mem_type(
        &self,
        mem_type: ucs_memory_type_t,
        function: &str,
    ) -> Result<(), Status> {
        if mem_type > UCS_MEMORY_TYPE_UNKNOWN {
            tracing::warn!("{function}: params->mem_type {mem_type} is not a memory type");
            return Err(Status::InvalidParam);
        }
        if mem_type != UCS_MEMORY_TYPE_UNKNOWN
            && self.capabilities().reg_mem_types & (1 << mem_type) == 0
        {
            tracing::warn!("{function}: memory type {mem_type} is not in the md's reg_mem_types");
            return Err(Status::Unsupported);
        }
        Ok(())
    }

    /// Registers `length` bytes at `address` with this md's device (every
    /// access right, see [`MemHandle::register`]).
    pub fn register(&self, address: *mut u8, length: usize) -> Result<Box<MemHandle>, Status> {
        let domain = Domain::get(&self.device.name)?;
        MemHandle::register(domain, address, length)
    }

    /// Bytes that identify the device across processes (`global_id`): the
    /// device name and its link address, NUL-padded.
    pub fn global_id(&self) -> Vec<u8> {
        match &self.device.backend {
            Backend::Soft {
                soft_name, spec, ..
            } => format!("soft-hca:{soft_name}@{}", spec.ipv4).into_bytes(),
            Backend::Verbs { node_guid, .. } => format!("ib-guid:{node_guid:016x}").into_bytes(),
        }
    }
}

/// Registration flags this md understands: the allocation hints (that
/// registration ignores), `HIDE_ERRORS`, the access rights and
/// `SYMMETRIC_RKEY` (a hint). `GVA` is known but refused: no `gva_mem_types`.
const MEM_REG_FLAGS: u64 = (UCT_MD_MEM_FLAG_NONBLOCK
    | UCT_MD_MEM_FLAG_FIXED
    | UCT_MD_MEM_FLAG_LOCK
    | UCT_MD_MEM_FLAG_HIDE_ERRORS
    | UCT_MD_MEM_ACCESS_ALL
    | UCT_MD_MEM_SYMMETRIC_RKEY) as u64;

/// `Err` with a log line for flags registration cannot honour.
pub fn check_mem_reg_flags(flags: u64, function: &str) -> Result<(), Status> {
    if flags & UCT_MD_MEM_GVA as u64 != 0 {
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

/// `Err` for deregistration flags this md cannot honour (a warning for
/// unknown ones):
/// `UCT_MD_MEM_DEREG_FLAG_INVALIDATE` is unsupported, as in UCX's verbs ib
/// md (no `UCT_MD_FLAG_INVALIDATE`).
pub fn check_mem_dereg_flags(flags: u32, function: &str) -> Result<(), Status> {
    let unknown = flags & !UCT_MD_MEM_DEREG_FLAG_INVALIDATE;
    if unknown != 0 {
        tracing::warn!("{function}: unknown flags 0x{unknown:x}");
        return Err(Status::InvalidParam);
    }
    if flags & UCT_MD_MEM_DEREG_FLAG_INVALIDATE != 0 {
        // The status is the answer, as UCX's: callers probe for support.
        tracing::debug!("{function}: invalidation is not supported (no UCT_MD_FLAG_INVALIDATE)");
        return Err(Status::Unsupported);
    }
    Ok(())
}

/// `Err` with a log line for key-packing flags this md cannot honour: it
/// advertises neither invalidation nor `UCT_MD_FLAG_EXPORTED_MKEY`.
pub fn check_mkey_pack_flags(flags: u32, function: &str) -> Result<(), Status> {
    let known = UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA
        | UCT_MD_MKEY_PACK_FLAG_INVALIDATE_AMO
        | UCT_MD_MKEY_PACK_FLAG_EXPORT;
    let unknown = flags & !known;
    if unknown != 0 {
        tracing::warn!("{function}: unknown flags 0x{unknown:x}");
        return Err(Status::InvalidParam);
    }
    if flags & UCT_MD_MKEY_PACK_FLAG_EXPORT != 0 {
        tracing::warn!(
            "{function}: exported keys are not supported (no UCT_MD_FLAG_EXPORTED_MKEY)"
        );
        return Err(Status::Unsupported);
    }
    if flags != 0 {
        tracing::warn!("{function}: invalidatable keys are not supported (flags 0x{flags:x})");
        return Err(Status::Unsupported);
    }
    Ok(())
}

/// The transport device name of `device`: `<name>:<port>` (e.g. `mlx5_0:1`).
pub fn port_name(device: &HcaDevice) -> String {
    format!("{}:{}", device.name, DEVICE_PORT)
}

/// One transport resource of an md.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlResource {
    pub tl_name: &'static str,
    pub dev_name: String,
    pub dev_type: uct_device_type_t,
    /// The PCI function under the resource (its `ucs_topo` system device
    /// is registered by the entry point that reports it).
    pub pci_bus_id: Option<ucs_sys_bus_id_t>,
}

/// CPUs the device is local to: all CPUs the system has (a soft device has no
/// NUMA affinity), as a `ucs_cpu_set_t`.
pub fn local_cpus() -> ucs_cpu_set_t {
    let mut set = ucs_cpu_set_t { ucs_bits: [0; 16] };
    let bits_per_word = 8 * std::mem::size_of::<ucs_cpu_mask_t>();
    // SAFETY: sysconf has no preconditions.
    let configured = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    let cpus = usize::try_from(configured)
        .unwrap_or(1)
        .clamp(1, set.ucs_bits.len() * bits_per_word);
    for cpu in 0..cpus {
        set.ucs_bits[cpu / bits_per_word] |= 1 << (cpu % bits_per_word);
    }
    set
}

impl BoxedHandle for Md {
    type Raw = uct_md_h;
    const ARGUMENT: &'static str = "md";
    const LIVE: &'static str = "an open memory domain";

    fn is_live(&self) -> bool {
        self.is_valid()
    }

    fn retire(&mut self) {
        self.invalidate();
    }
}
