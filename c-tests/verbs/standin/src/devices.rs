//! The stand-in's devices: one per soft HCA device named in
//! `UCX_SOFT_HCA_DEVICES` (whatever `UCX_SOFT_HCA` says), each with one
//! active RoCE port whose only GID encodes the soft device's UDP endpoint
//! (contract point 3), plus the two test hooks: the sysfs GID type files
//! under `UCT_VERBS_SYSFS_ROOT` and the trace file `UCT_STANDIN_TRACE`.

use std::ffi::c_char;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use uct::abi::ucs_status::Status;
use uct::hca::soft::SoftDevice;
use uct::hca::{AtomicResultOrder, DeviceAddress};

use crate::layout::{DeviceHead, NODE_CA, SYSFS_NAME_MAX, SYSFS_PATH_MAX, TRANSPORT_IB};

/// The environment variables the stand-in reads besides the soft HCA's own.
pub const SYSFS_ROOT_ENV: &str = "UCT_VERBS_SYSFS_ROOT";
pub const TRACE_ENV: &str = "UCT_STANDIN_TRACE";

/// What the sysfs GID type file of a RoCE v2 GID holds.
pub const ROCE_V2_TYPE_TEXT: &str = "RoCE v2\n";

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
    fn new(name: &str, ipv4: Ipv4Addr) -> Device {
        let mut head = DeviceHead {
            private_ops: [std::ptr::null_mut(); 2],
            node_type: NODE_CA,
            transport_type: TRANSPORT_IB,
            name: [0; SYSFS_NAME_MAX],
            dev_name: [0; SYSFS_NAME_MAX],
            dev_path: [0; SYSFS_PATH_MAX],
            ibdev_path: [0; SYSFS_PATH_MAX],
        };
        copy_name(&mut head.name, name);
        copy_name(&mut head.dev_name, &format!("uverbs-{name}"));
        copy_name(&mut head.dev_path, &format!("/standin/uverbs-{name}"));
        copy_name(&mut head.ibdev_path, &format!("/standin/{name}"));
        Device {
            head,
            name: name.to_string(),
            ipv4,
            soft: Mutex::new(None),
        }
    }

    /// The soft device, opened now if it is not yet.
    pub fn soft(&self) -> Result<SoftDevice, Status> {
        let mut slot = self.soft.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(device) = slot.as_ref() {
            return Ok(device.clone());
        }
        let device = SoftDevice::open_at(&self.name, self.ipv4)?;
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
        let specs = match uct::core::config::soft_hca_devices() {
            Ok(specs) => specs,
            Err(_) => {
                tracing::warn!("verbs stand-in: bad UCX_SOFT_HCA_DEVICES, no devices listed");
                Vec::new()
            }
        };
        specs
            .into_iter()
            .map(|spec| &*Box::leak(Box::new(Device::new(&spec.name, spec.ipv4))))
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

/// The GID of a soft device's UDP endpoint: fe80::/64 link-local prefix,
/// then zeros, the IPv4 octets and the UDP port big-endian (contract 3).
pub fn gid_of(addr: SocketAddrV4) -> [u8; 16] {
    let mut gid = [0u8; 16];
    gid[0] = 0xfe;
    gid[1] = 0x80;
    gid[10..14].copy_from_slice(&addr.ip().octets());
    gid[14..16].copy_from_slice(&addr.port().to_be_bytes());
    gid
}

/// The UDP endpoint a GID made by [`gid_of`] names; `None` for any other
/// GID (wrong prefix, port 0).
pub fn endpoint_of(gid: &[u8; 16]) -> Option<SocketAddrV4> {
    if gid[0] != 0xfe || gid[1] != 0x80 || gid[2..10].iter().any(|&b| b != 0) {
        return None;
    }
    let ip = Ipv4Addr::new(gid[10], gid[11], gid[12], gid[13]);
    let port = u16::from_be_bytes([gid[14], gid[15]]);
    (port != 0).then(|| SocketAddrV4::new(ip, port))
}

/// The UDP endpoint of an open soft device (a soft device has no other
/// kind of address).
pub fn endpoint(device: &SoftDevice) -> Option<SocketAddrV4> {
    match device.address() {
        DeviceAddress::Udp(addr) => Some(addr),
        _ => None,
    }
}

/// Writes `<root>/<dev>/ports/1/gid_attrs/types/0` = "RoCE v2" for every
/// device, when `UCT_VERBS_SYSFS_ROOT` is set. Written to a temporary file
/// and renamed, so a concurrent reader (the other test process) never sees
/// a half-written file.
pub fn write_sysfs_gid_types(devices: &[&'static Device]) {
    let Some(root) = std::env::var_os(SYSFS_ROOT_ENV) else {
        return;
    };
    for device in devices {
        let dir = Path::new(&root)
            .join(&device.name)
            .join("ports/1/gid_attrs/types");
        let result = std::fs::create_dir_all(&dir).and_then(|()| {
            let temporary = dir.join(format!(".0.{}", std::process::id()));
            std::fs::write(&temporary, ROCE_V2_TYPE_TEXT)?;
            std::fs::rename(&temporary, dir.join("0"))
        });
        if let Err(err) = result {
            tracing::warn!(
                "verbs stand-in: cannot write the GID type of {} under {}: {err}",
                device.name,
                dir.display()
            );
        }
    }
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
