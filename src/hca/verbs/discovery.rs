//! Which real mlx5 devices this machine has: rdma-core's device list, kept
//! to mlx5 devices (`mlx5dv_is_supported`) with at least one active port,
//! each port with its link layer and, for RoCE, the GID to use.
//!
//! Discovery never fails: no rdma-core, no device, a device that does not
//! open or a port that is down each give fewer entries and one debug line,
//! so the caller falls back to the soft HCA.

use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::OnceLock;

use super::ffi::{self, Live};
use super::owned::{DeviceList, Owned};
use crate::abi::ucs_sys_bus_id_t;
use crate::hca::attrs::{DeviceAddress, LinkLayer, Mtu, IB_DEFAULT_SUBNET_PREFIX};

/// Where the kernel describes RDMA devices (GID types live below it).
pub const SYSFS_INFINIBAND: &str = "/sys/class/infiniband";

/// Test hook: another directory to read in place of [`SYSFS_INFINIBAND`]
/// (a stand-in library writes its GID types there). Not a user setting.
pub const SYSFS_ROOT_OVERRIDE_ENV: &str = "UCT_VERBS_SYSFS_ROOT";

/// The sysfs root to read GID types from: [`SYSFS_ROOT_OVERRIDE_ENV`] if
/// set, else [`SYSFS_INFINIBAND`].
pub fn sysfs_root() -> std::path::PathBuf {
    std::env::var_os(SYSFS_ROOT_OVERRIDE_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(|| SYSFS_INFINIBAND.into(), Into::into)
}

/// The GID table index to use (`UCX_IB_GID_INDEX`, a setting of the ib
/// memory domain's configuration), as the ib layer hands it down.
static CONFIGURED_GID_INDEX: OnceLock<Option<u8>> = OnceLock::new();

/// Sets the GID table index every device discovered or opened from now on
/// uses (`None`: chosen per port); only the first call counts. The ib layer
/// calls it before it first lists devices.
pub fn set_configured_gid_index(index: Option<u8>) {
    let _ = CONFIGURED_GID_INDEX.set(index);
}

/// The GID table index handed down, `None` for `auto` or none given.
pub fn configured_gid_index() -> Option<u8> {
    CONFIGURED_GID_INDEX.get().copied().flatten()
}

/// The RoCE version of a GID table entry, as sysfs names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GidType {
    /// "IB/RoCE v1": RoCE v1 frames (or an InfiniBand GID).
    RoceV1,
    /// "RoCE v2": UDP/IP encapsulation, routable; what we prefer.
    RoceV2,
}

impl GidType {
    /// Parses the content of `gid_attrs/types/<index>`; unknown text is None.
    pub fn parse(text: &str) -> Option<GidType> {
        match text.trim() {
            "RoCE v2" => Some(GidType::RoceV2),
            "IB/RoCE v1" | "RoCE v1" => Some(GidType::RoceV1),
            _ => None,
        }
    }
}

/// One readable entry of a port's GID table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GidEntry {
    pub index: u8,
    pub gid: [u8; 16],
    pub kind: GidType,
}

impl GidEntry {
    /// The IPv4 address of an IPv4-mapped GID (`::ffff:a.b.c.d`).
    pub fn ipv4(&self) -> Option<Ipv4Addr> {
        let (prefix, addr) = self.gid.split_at(12);
        let mapped = prefix[..10].iter().all(|&b| b == 0) && prefix[10..] == [0xff, 0xff];
        mapped.then(|| Ipv4Addr::new(addr[0], addr[1], addr[2], addr[3]))
    }

    fn is_zero(&self) -> bool {
        self.gid.iter().all(|&b| b == 0)
    }
}

/// The GID a RoCE port should use. With `wanted` (`UCX_IB_GID_INDEX`)
/// that entry, whatever its type, if it is readable and not empty. Else
/// RoCE v2 with an IPv4-mapped address first (routable, and what IPv4
/// fabrics configure), then any other RoCE v2 GID, then RoCE v1; the lowest
/// index wins within a rank. Empty (all-zero) entries are never chosen.
pub fn select_roce_gid(entries: &[GidEntry], wanted: Option<u8>) -> Option<GidEntry> {
    let usable = entries.iter().filter(|e| !e.is_zero());
    if let Some(index) = wanted {
        return usable.into_iter().find(|e| e.index == index).copied();
    }
    let rank = |e: &GidEntry| match (e.kind, e.ipv4().is_some()) {
        (GidType::RoceV2, true) => 0,
        (GidType::RoceV2, false) => 1,
        (GidType::RoceV1, _) => 2,
    };
    usable.min_by_key(|e| (rank(e), e.index)).copied()
}

/// The GID type of `device`'s `port` entry `index` from sysfs below `root`,
/// None when the file is absent or unreadable (the entry is then skipped).
pub fn read_gid_type(root: &Path, device: &str, port: u8, index: u8) -> Option<GidType> {
    let path = root
        .join(device)
        .join("ports")
        .join(port.to_string())
        .join("gid_attrs/types")
        .join(index.to_string());
    GidType::parse(&std::fs::read_to_string(path).ok()?)
}

/// The PCI function `device` sits on, from the kernel's description of it
/// below `root` (`/sys/class/infiniband`): `<root>/<device>` resolves to
/// `.../<pci function>/infiniband/<device>` for a physical function, or to
/// `.../<pci function>/<sub-function id>/infiniband/<device>` for a
/// sub-function; the PCI function is the directory that has a `device`
/// file (its PCI device id). `None` for a device on no PCI function (a
/// software device such as rxe resolves under `/sys/devices/virtual`),
/// as UCX's ib md decides.
pub fn pci_bus_id(root: &Path, device: &str) -> Option<ucs_sys_bus_id_t> {
    let resolved = std::fs::canonicalize(root.join(device)).ok()?;
    // Two levels up for a physical function, three for a sub-function.
    let function = resolved
        .ancestors()
        .skip(2)
        .take(2)
        .find(|dir| dir.join("device").exists())?;
    parse_pci_address(function.file_name()?.to_str()?)
}

/// A PCI address as sysfs names it: `dddd:bb:ss.f`, or `bb:ss.f` in
/// domain 0 (hexadecimal fields); `None` for anything else.
pub fn parse_pci_address(text: &str) -> Option<ucs_sys_bus_id_t> {
    let (location, function) = text.rsplit_once('.')?;
    let fields: Vec<&str> = location.split(':').collect();
    let (domain, bus, slot) = match fields.as_slice() {
        [domain, bus, slot] => (*domain, *bus, *slot),
        [bus, slot] => ("0", *bus, *slot),
        _ => return None,
    };
    let hex = |field: &str, digits: usize| -> Option<u32> {
        let valid = !field.is_empty()
            && field.len() <= digits
            && field.bytes().all(|b| b.is_ascii_hexdigit());
        valid.then(|| u32::from_str_radix(field, 16).ok())?
    };
    Some(ucs_sys_bus_id_t {
        domain: u16::try_from(hex(domain, 4)?).ok()?,
        bus: u8::try_from(hex(bus, 2)?).ok()?,
        slot: u8::try_from(hex(slot, 2)?).ok()?,
        function: u8::try_from(hex(function, 1)?).ok()?,
    })
}

/// An active port of a real device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerbsPort {
    pub number: u8,
    pub link_layer: LinkLayer,
    pub max_mtu: Mtu,
    pub active_mtu: Mtu,
    /// The port's LID (InfiniBand; 0 on RoCE).
    pub lid: u16,
    /// The GID chosen for RoCE (None on InfiniBand).
    pub gid: Option<GidEntry>,
    /// The GID table index packets leave from (RoCE: the chosen GID's;
    /// InfiniBand: `UCX_IB_GID_INDEX` or 0, used when a GRH is sent).
    pub sgid_index: u8,
    /// What peers are given to reach this port.
    pub address: DeviceAddress,
}

/// A real mlx5 device with at least one active port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerbsDevice {
    pub name: String,
    /// The node GUID as the device reports it (big-endian bytes).
    pub node_guid: u64,
    /// The PCI function it sits on ([`pci_bus_id`]).
    pub pci_bus_id: Option<ucs_sys_bus_id_t>,
    pub ports: Vec<VerbsPort>,
}

impl VerbsDevice {
    /// The IPv4 address a connection manager reaches `port` at: that of the
    /// RoCE GID its QPs use, when the GID is IPv4-mapped. None on
    /// InfiniBand (its IP address is IPoIB's, on another interface) and for
    /// a GID that is not IPv4-mapped.
    pub fn port_ipv4(&self, port: u8) -> Option<Ipv4Addr> {
        self.ports.iter().find(|p| p.number == port)?.gid?.ipv4()
    }
}

/// The real mlx5 devices of this machine through the process-wide rdma-core
/// (empty when rdma-core is not installed).
pub fn discover() -> Vec<VerbsDevice> {
    match ffi::Verbs::get() {
        Ok(verbs) => discover_with(verbs, &sysfs_root(), configured_gid_index()),
        Err(_) => Vec::new(), // logged once by Verbs::get
    }
}

/// [`discover`] through `verbs`, reading GID types below `sysfs_root`,
/// using GID table entry `gid_index` if given.
pub fn discover_with(
    verbs: &ffi::Verbs,
    sysfs_root: &Path,
    gid_index: Option<u8>,
) -> Vec<VerbsDevice> {
    let list = match DeviceList::get(verbs) {
        Ok(list) => list,
        Err(error) => {
            tracing::debug!("verbs: no RDMA devices (ibv_get_device_list: {error})");
            return Vec::new();
        }
    };
    let found: Vec<VerbsDevice> = list
        .devices()
        .filter_map(|device| probe_device(verbs, &list, device, sysfs_root, gid_index))
        .collect();
    if found.is_empty() {
        tracing::debug!(
            "verbs: rdma-core lists {} device(s), none is an active mlx5 device",
            list.count()
        );
    }
    found
}

fn probe_device(
    verbs: &ffi::Verbs,
    list: &DeviceList<'_>,
    device: &Live<ffi::ibv_device>,
    sysfs_root: &Path,
    gid_index: Option<u8>,
) -> Option<VerbsDevice> {
    let name = list.name(device)?;
    if !(verbs.mlx5.is_supported)(device) {
        tracing::debug!("verbs: {name} is not an mlx5 device, skipped");
        return None;
    }
    let Some(created) = (verbs.ibv.open_device)(device) else {
        tracing::debug!(
            "verbs: cannot open {name}: {}, skipped",
            std::io::Error::last_os_error()
        );
        return None;
    };
    // Closed when this returns.
    let context = Owned::new(verbs, created, name.as_str());
    let (attr, ports) = probe_ports(verbs, context.live(), &name, sysfs_root, gid_index)?;
    if ports.is_empty() {
        tracing::debug!("verbs: {name} has no active port, skipped");
        return None;
    }
    Some(VerbsDevice {
        pci_bus_id: pci_bus_id(sysfs_root, &name),
        name,
        node_guid: attr.node_guid,
        ports,
    })
}

/// The device attributes and the usable ports of an open device: active,
/// with a known MTU, and (RoCE) a usable GID or (InfiniBand) a LID. `None`
/// when the device cannot be queried.
pub(crate) fn probe_ports(
    verbs: &ffi::Verbs,
    context: &Live<ffi::ibv_context>,
    name: &str,
    sysfs_root: &Path,
    gid_index: Option<u8>,
) -> Option<(ffi::ibv_device_attr, Vec<VerbsPort>)> {
    let mut attr = ffi::ibv_device_attr::default();
    if (verbs.ibv.query_device)(context, &mut attr) != 0 {
        tracing::debug!(
            "verbs: ibv_query_device({name}) failed: {}, skipped",
            std::io::Error::last_os_error()
        );
        return None;
    }
    let mut ports = Vec::new();
    for number in 1..=attr.phys_port_cnt {
        let mut port = ffi::ibv_port_attr::default();
        // A zeroed full-size struct; the exported query_port writes only
        // its compat prefix (see ffi's module doc).
        if (verbs.ibv.query_port)(context, number, &mut port) != 0 {
            tracing::debug!("verbs: ibv_query_port({name}:{number}) failed, skipped");
            continue;
        }
        if port.state != ffi::IBV_PORT_ACTIVE {
            tracing::debug!(
                "verbs: {name}:{number} is not active (state {}), skipped",
                port.state
            );
            continue;
        }
        let Some(active_mtu) = u8::try_from(port.active_mtu).ok().and_then(mtu_from_ibv) else {
            tracing::debug!(
                "verbs: {name}:{number} reports MTU code {}, skipped",
                port.active_mtu
            );
            continue;
        };
        let max_mtu = u8::try_from(port.max_mtu)
            .ok()
            .and_then(mtu_from_ibv)
            .map_or(active_mtu, |max| max.max(active_mtu));
        let (link_layer, gid, sgid_index, address) = match port.link_layer {
            ffi::IBV_LINK_LAYER_ETHERNET => {
                let entries = read_gid_table(verbs, context, name, number, &port, sysfs_root);
                match select_roce_gid(&entries, gid_index) {
                    Some(gid) => (
                        LinkLayer::Ethernet,
                        Some(gid),
                        gid.index,
                        DeviceAddress::Roce { gid: gid.gid },
                    ),
                    None => {
                        match gid_index {
                            Some(index) => tracing::debug!(
                                "verbs: {name}:{number} (RoCE) has no usable GID at \
                                 UCX_IB_GID_INDEX={index}, skipped"
                            ),
                            None => tracing::debug!(
                                "verbs: {name}:{number} (RoCE) has no usable GID, skipped"
                            ),
                        }
                        continue;
                    }
                }
            }
            // An unspecified link layer is InfiniBand (older kernels).
            _ => {
                if port.lid == 0 || port.lid >= 0xc000 {
                    tracing::debug!(
                        "verbs: {name}:{number} (InfiniBand) has no unicast LID {:#x} \
                         (no subnet manager?), skipped",
                        port.lid
                    );
                    continue;
                }
                let sgid_index = gid_index.unwrap_or(0);
                let gid = query_gid(verbs, context, number, sgid_index)
                    .filter(|gid| gid[..8] != IB_DEFAULT_SUBNET_PREFIX && gid != &[0; 16]);
                (
                    LinkLayer::InfiniBand,
                    None,
                    sgid_index,
                    DeviceAddress::Ib { lid: port.lid, gid },
                )
            }
        };
        ports.push(VerbsPort {
            number,
            link_layer,
            max_mtu,
            active_mtu,
            lid: port.lid,
            gid,
            sgid_index,
            address,
        });
    }
    Some((attr, ports))
}

/// GID table entry `index` of `port`, None if it cannot be read.
fn query_gid(
    verbs: &ffi::Verbs,
    context: &Live<ffi::ibv_context>,
    port: u8,
    index: u8,
) -> Option<[u8; 16]> {
    let mut gid = [0; 16];
    ((verbs.ibv.query_gid)(context, port, index.into(), &mut gid) == 0).then_some(gid)
}

fn read_gid_table(
    verbs: &ffi::Verbs,
    context: &Live<ffi::ibv_context>,
    name: &str,
    port_number: u8,
    port: &ffi::ibv_port_attr,
    sysfs_root: &Path,
) -> Vec<GidEntry> {
    let table_len = u8::try_from(port.gid_tbl_len.clamp(0, 255)).unwrap_or(u8::MAX);
    let mut entries = Vec::new();
    for index in 0..table_len {
        let Some(kind) = read_gid_type(sysfs_root, name, port_number, index) else {
            continue;
        };
        let Some(gid) = query_gid(verbs, context, port_number, index) else {
            continue;
        };
        entries.push(GidEntry { index, gid, kind });
    }
    entries
}

/// The MTU of a verbs `ibv_mtu` value (the codes of [`Mtu::from_code`]).
pub(crate) fn mtu_from_ibv(code: u8) -> Option<Mtu> {
    const _: () = assert!(
        ffi::IBV_MTU_256 == Mtu::Mtu256 as u32
            && ffi::IBV_MTU_512 == Mtu::Mtu512 as u32
            && ffi::IBV_MTU_1024 == Mtu::Mtu1024 as u32
            && ffi::IBV_MTU_2048 == Mtu::Mtu2048 as u32
            && ffi::IBV_MTU_4096 == Mtu::Mtu4096 as u32
    );
    Mtu::from_code(code)
}

/// Where a listed device comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceOrigin {
    Verbs,
    Soft,
}

/// The device names listed when real and soft devices are shown together.
/// Real devices keep their kernel names. A soft device keeps its configured
/// name unless a real device has it; then it is listed as `soft_<name>`
/// (with a warning), so `UCX_NET_DEVICES=mlx5_0:1` always means the NIC.
/// With `UCX_SOFT_HCA=auto` the soft devices are used only when `real` is
/// empty, so no renaming happens then.
pub fn combined_device_names(real: &[String], soft: &[String]) -> Vec<(DeviceOrigin, String)> {
    let mut names: Vec<(DeviceOrigin, String)> = real
        .iter()
        .map(|n| (DeviceOrigin::Verbs, n.clone()))
        .collect();
    for name in soft {
        let mut listed = name.clone();
        while names.iter().any(|(_, n)| *n == listed) {
            listed = format!("soft_{listed}");
        }
        if listed != *name {
            tracing::warn!(
                "soft HCA device {name} is listed as {listed}: a real device has that name"
            );
        }
        names.push((DeviceOrigin::Soft, listed));
    }
    names
}
