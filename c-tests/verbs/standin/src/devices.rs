//! The stand-in's devices: one per soft HCA device named in
//! `UCX_SOFT_HCA_DEVICES` (whatever `UCX_SOFT_HCA` says), each with one
//! active RoCE port whose only GID encodes the soft device's UDP endpoint
//! (contract point 3), plus the two test hooks: the device's sysfs tree
//! under `UCT_VERBS_SYSFS_ROOT` (see [`write_sysfs_tree`]) and the trace
//! file `UCT_STANDIN_TRACE`.

use std::ffi::c_char;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use uct::abi::ucs_status::Status;
use uct::hca::soft::wire::Gid;
use uct::hca::soft::SoftDevice;
use uct::hca::{AtomicResultOrder, DeviceAddress};

use crate::layout::{DeviceHead, NODE_CA, SYSFS_NAME_MAX, SYSFS_PATH_MAX, TRANSPORT_IB};

/// The environment variables the stand-in reads besides the soft HCA's own.
pub const SYSFS_ROOT_ENV: &str = "UCT_VERBS_SYSFS_ROOT";
pub const TRACE_ENV: &str = "UCT_STANDIN_TRACE";

/// What the sysfs GID type file of a RoCE v2 GID holds.
pub const ROCE_V2_TYPE_TEXT: &str = "RoCE v2\n";

/// The PCI identity every device shows: Mellanox (0x15b3) ConnectX-5
/// (0x1017), the part `ibv_query_device` reports (`vendor_part_id` 4119).
pub const PCI_VENDOR: u16 = 0x15b3;
pub const PCI_DEVICE: u16 = 0x1017;
/// `ibv_device_attr.vendor_id`: the IEEE OUI mlx5 reports (0x02c9).
pub const VENDOR_OUI: u32 = 0x02c9;

/// Where the PCI functions of the devices live in the sysfs tree (a hidden
/// directory of the class directory, so that listing the class shows only
/// the devices).
const PCI_DIR: &str = ".pci";

/// One listed device. Lives for the whole process (leaked on purpose:
/// device pointers handed out by `ibv_get_device_list` stay valid, as
/// rdma-core's do while contexts use them).
#[repr(C)]
pub struct Device {
    /// Must stay first: `ibv_device *` points here.
    pub head: DeviceHead,
    pub name: String,
    pub ipv4: Ipv4Addr,
    /// The soft device, opened on the first `ibv_open_device` and then kept
    /// open, so its UDP port (hence its GID) never changes while the
    /// process runs, like a NIC's address.
    soft: Mutex<Option<SoftDevice>>,
}

// SAFETY: the raw pointers in `head` are NULL and never used; everything
// else is Send/Sync (the soft device behind a mutex).
unsafe impl Send for Device {}
// SAFETY: as above.
unsafe impl Sync for Device {}

fn copy_name(out: &mut [c_char], text: &str) {
    let room = out.len().saturating_sub(1);
    for (slot, byte) in out.iter_mut().zip(text.bytes().take(room)) {
        *slot = byte as c_char;
    }
}

impl Device {
    fn new(index: usize, name: &str, ipv4: Ipv4Addr) -> Device {
        let mut head = DeviceHead {
            private_ops: [std::ptr::null_mut(); 2],
            node_type: NODE_CA,
            transport_type: TRANSPORT_IB,
            name: [0; SYSFS_NAME_MAX],
            dev_name: [0; SYSFS_NAME_MAX],
            dev_path: [0; SYSFS_PATH_MAX],
            ibdev_path: [0; SYSFS_PATH_MAX],
        };
        // As the kernel names them: uverbs<N> under infiniband_verbs, the
        // device under the infiniband class (the stand-in's tree when
        // UCT_VERBS_SYSFS_ROOT is set: readers follow ibdev_path to the
        // PCI function, UCX does).
        let uverbs = format!("uverbs{index}");
        let ibdev_path = match std::env::var_os(SYSFS_ROOT_ENV) {
            Some(root) => Path::new(&root).join(name).display().to_string(),
            None => format!("/sys/class/infiniband/{name}"),
        };
        copy_name(&mut head.name, name);
        copy_name(&mut head.dev_name, &uverbs);
        copy_name(
            &mut head.dev_path,
            &format!("/sys/class/infiniband_verbs/{uverbs}"),
        );
        copy_name(&mut head.ibdev_path, &ibdev_path);
        Device {
            head,
            name: name.to_string(),
            ipv4,
            soft: Mutex::new(None),
        }
    }

    /// The node GUID, big-endian as verbs hands it out: the mlx5 OUI
    /// pattern around the device's IPv4 address.
    pub fn guid_be(&self) -> u64 {
        let ip = self.ipv4.octets();
        u64::from_be_bytes([0x02, 0xc9, 0xff, 0xfe, ip[0], ip[1], ip[2], ip[3]]).to_be()
    }

    /// The PCI address of the device's function in the sysfs tree.
    fn pci_address(&self, index: usize) -> String {
        format!("0000:{:02x}:00.0", index + 3)
    }

    /// The soft device, opened now if it is not yet.
    pub fn soft(&self) -> Result<SoftDevice, Status> {
        let mut slot = self.soft.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(device) = slot.as_ref() {
            return Ok(device.clone());
        }
        let device = uct::hca::devices::open_soft_at(&self.name, self.ipv4)?;
        // Behave as mlx5 firmware in host-endian 8-byte atomic mode (the mode
        // in which its driver reports IBV_ATOMIC_HCA): 8-byte results in
        // host order, 4-byte (masked) results big-endian (contract point 7).
        device.set_atomic_result_order(AtomicResultOrder::MLX5_HOST_ENDIAN_8B);
        // libmlx5 enables scatter-to-CQE by default: short receives of an
        // RC QP arrive in the CQE, and the transport must take them there.
        device.set_scatter_to_cqe(true);
        *slot = Some(device.clone());
        Ok(device)
    }

    /// `ibv_device *` of this device.
    pub fn as_ibv(&'static self) -> *mut uct::hca::verbs::ffi::ibv_device {
        (self as *const Device).cast_mut().cast()
    }
}

/// The devices of this process, read from the soft HCA configuration once.
pub fn all() -> &'static [&'static Device] {
    static DEVICES: OnceLock<Vec<&'static Device>> = OnceLock::new();
    DEVICES.get_or_init(|| {
        let specs = match uct::hca::config::soft_hca_devices() {
            Ok(specs) => specs,
            Err(_) => {
                tracing::warn!("verbs stand-in: bad UCX_SOFT_HCA_DEVICES, no devices listed");
                Vec::new()
            }
        };
        specs
            .into_iter()
            .enumerate()
            .map(|(index, spec)| &*Box::leak(Box::new(Device::new(index, &spec.name, spec.ipv4))))
            .collect()
    })
}

/// The device at `ptr`, if it is one of ours.
pub fn find(ptr: *const uct::hca::verbs::ffi::ibv_device) -> Option<&'static Device> {
    all()
        .iter()
        .copied()
        .find(|d| std::ptr::eq((*d as *const Device).cast(), ptr))
}

/// The GID of a soft device's UDP endpoint (contract 3), as the soft HCA
/// encodes it ([`Gid::from_endpoint`]: the GID its UD receives carry).
pub fn gid_of(addr: SocketAddrV4) -> [u8; 16] {
    Gid::from_endpoint(addr).0
}

/// The UDP endpoint a GID made by [`gid_of`] names; `None` for any other
/// GID (wrong prefix, port 0).
pub fn endpoint_of(gid: &[u8; 16]) -> Option<SocketAddrV4> {
    Gid(*gid).endpoint()
}

/// The UDP endpoint of an open soft device (a soft device has no other
/// kind of address).
pub fn endpoint(device: &SoftDevice) -> Option<SocketAddrV4> {
    match device.address() {
        DeviceAddress::Udp(addr) => Some(addr),
        _ => None,
    }
}

/// Writes each device's sysfs entries under `UCT_VERBS_SYSFS_ROOT` (which
/// plays `/sys/class/infiniband`), when it is set, as the kernel lays them
/// out for a ConnectX-5 PCI function:
///
/// - `<root>/<dev>`: a symlink to `.pci/<bdf>/infiniband/<dev>`, holding
///   `ports/1/gid_attrs/types/0` ("RoCE v2"), `ports/1/gid_attrs/ndevs/0`
///   (`lo`), `node_type`, `node_guid`, `fw_ver`, `hca_type`, `board_id`, and
///   `device`, a symlink to the PCI function two levels up;
/// - `.pci/<bdf>`: `vendor` 0x15b3, `device` 0x1017, `numa_node`,
///   `local_cpus`, `current_link_width`, `current_link_speed`.
///
/// UCX follows `ibv_device.ibdev_path` to the PCI function to decide that
/// a device is an mlx5 one, and reads `/sys/class/infiniband/<dev>/...`
/// directly (`c-tests/thirdparty/with_standin_sysfs.sh` binds that path to
/// the root). Every file is written to a temporary name and renamed, so a
/// concurrent reader (the other test process) never sees half of one.
pub fn write_sysfs_tree(devices: &[&'static Device]) {
    let Some(root) = std::env::var_os(SYSFS_ROOT_ENV) else {
        return;
    };
    let root = Path::new(&root);
    for (index, device) in devices.iter().enumerate() {
        if let Err(err) = write_device_tree(root, index, device) {
            tracing::warn!(
                "verbs stand-in: cannot write the sysfs entries of {} under {}: {err}",
                device.name,
                root.display()
            );
        }
    }
}

fn write_device_tree(root: &Path, index: usize, device: &Device) -> std::io::Result<()> {
    let bdf = device.pci_address(index);
    let pci = root.join(PCI_DIR).join(&bdf);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get().min(32));
    let cpu_mask = if cpus == 32 {
        u32::MAX
    } else {
        (1u32 << cpus) - 1
    };
    for (file, text) in [
        ("vendor", format!("{PCI_VENDOR:#06x}\n")),
        ("device", format!("{PCI_DEVICE:#06x}\n")),
        ("numa_node", "-1\n".to_string()),
        ("local_cpus", format!("{cpu_mask:08x}\n")),
        ("current_link_width", "16\n".to_string()),
        ("current_link_speed", "8.0 GT/s PCIe\n".to_string()),
    ] {
        write_file(&pci, file, &text)?;
    }
    let ibdev = pci.join("infiniband").join(&device.name);
    let guid = u64::from_be(device.guid_be()).to_be_bytes();
    let guid_text = format!(
        "{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}\n",
        guid[0], guid[1], guid[2], guid[3], guid[4], guid[5], guid[6], guid[7]
    );
    for (file, text) in [
        ("node_type", "1: CA\n".to_string()),
        ("node_guid", guid_text),
        ("fw_ver", format!("{FW_VERSION}\n")),
        ("hca_type", "MT4119\n".to_string()),
        ("board_id", "SOFT_HCA_STANDIN\n".to_string()),
    ] {
        write_file(&ibdev, file, &text)?;
    }
    let gid_attrs = ibdev.join("ports/1/gid_attrs");
    write_file(&gid_attrs.join("types"), "0", ROCE_V2_TYPE_TEXT)?;
    write_file(&gid_attrs.join("ndevs"), "0", "lo\n")?;
    write_symlink(&ibdev, "device", Path::new("../.."))?;
    let target = Path::new(PCI_DIR)
        .join(&bdf)
        .join("infiniband")
        .join(&device.name);
    write_symlink(root, &device.name, &target)
}

/// What `ibv_query_device` and the sysfs `fw_ver` say.
pub const FW_VERSION: &str = "16.35.0 (soft HCA stand-in)";

fn write_file(dir: &Path, name: &str, text: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let temporary = dir.join(format!(".{name}.{}", std::process::id()));
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, dir.join(name))
}

fn write_symlink(dir: &Path, name: &str, target: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let temporary = dir.join(format!(".{name}.{}", std::process::id()));
    let _ = std::fs::remove_file(&temporary);
    std::os::unix::fs::symlink(target, &temporary)?;
    std::fs::rename(&temporary, dir.join(name))
}

/// Appends one line to the trace file named by `UCT_STANDIN_TRACE`, if
/// set. One `write` of an O_APPEND file: lines of concurrent processes do
/// not interleave.
pub fn trace(line: std::fmt::Arguments<'_>) {
    let Some(path) = std::env::var_os(TRACE_ENV) else {
        return;
    };
    let text = format!("{line} pid {}\n", std::process::id());
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| file.write_all(text.as_bytes()));
    if let Err(err) = written {
        tracing::warn!(
            "verbs stand-in: cannot append to {}: {err}",
            Path::new(&path).display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gid_round_trip_and_refusals() {
        let addr = SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 2), 0xbeef);
        let gid = gid_of(addr);
        assert_eq!(&gid[..2], &[0xfe, 0x80]);
        assert_eq!(&gid[10..], &[127, 0, 0, 2, 0xbe, 0xef]);
        assert_eq!(endpoint_of(&gid), Some(addr));
        let mut mapped = gid;
        mapped[0] = 0;
        mapped[1] = 0;
        assert_eq!(endpoint_of(&mapped), None);
        let mut no_port = gid;
        no_port[14] = 0;
        no_port[15] = 0;
        assert_eq!(endpoint_of(&no_port), None);
    }
}
