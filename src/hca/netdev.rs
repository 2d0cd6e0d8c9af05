//! The PCI function a soft HCA device sits on. A soft device is bound to an
//! IPv4 address, so it sits where the network interface carrying that
//! address sits, as Linux's rxe sits on the parent of the network device it
//! is bound to: the interface's `device` link in sysfs
//! (`/sys/class/net/<interface>/device`) names that parent. An interface
//! without one (loopback, veth, bridges, other virtual interfaces) sits on
//! no PCI function, and neither does a device bound to an address no
//! interface carries.

use std::ffi::CStr;
use std::net::Ipv4Addr;
use std::path::Path;

use crate::abi::ucs_sys_bus_id_t;
use crate::hca::verbs::discovery::parse_pci_address;

/// Where the kernel lists the network interfaces.
pub const SYSFS_CLASS_NET: &str = "/sys/class/net";

/// The PCI function under the interface `interface`, from the kernel's
/// description of it below `class_net` ([`SYSFS_CLASS_NET`]):
/// `<class_net>/<interface>/device` resolves to the interface's parent
/// device, which is a PCI function (its directory is named by its PCI
/// address) or a device on one (a virtio network device, on its virtio-pci
/// function: the next directory up). `None` when there is no such link or
/// neither directory is named by a PCI address.
pub fn interface_pci_function(class_net: &Path, interface: &str) -> Option<ucs_sys_bus_id_t> {
    let parent = std::fs::canonicalize(class_net.join(interface).join("device")).ok()?;
    parent
        .ancestors()
        .take(2)
        .find_map(|dir| parse_pci_address(dir.file_name()?.to_str()?))
}

/// The name of the interface that carries the IPv4 address `ip`, if one
/// does.
pub fn interface_with_ipv4(ip: Ipv4Addr) -> Option<String> {
    ipv4_interfaces()
        .into_iter()
        .find_map(|(name, address)| (address == ip).then_some(name))
}

/// The first IPv4 address of the interface named `interface`, if it has
/// one.
pub fn ipv4_of_interface(interface: &str) -> Option<Ipv4Addr> {
    ipv4_interfaces()
        .into_iter()
        .find_map(|(name, address)| (name == interface).then_some(address))
}

/// Every IPv4 address of the machine's interfaces with its interface's
/// name, in the kernel's order (empty when they cannot be listed).
fn ipv4_interfaces() -> Vec<(String, Ipv4Addr)> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `list` is a valid out-pointer; freed below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        tracing::debug!("getifaddrs failed: {}", std::io::Error::last_os_error());
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut entry = list;
    while !entry.is_null() {
        // SAFETY: a node of the list getifaddrs returned, not freed yet.
        let ifa = unsafe { &*entry };
        entry = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: a non-NULL address of the list; its family says which
        // sockaddr it is, read only as sockaddr_in when it is AF_INET.
        let address = unsafe {
            if i32::from((*ifa.ifa_addr).sa_family) != libc::AF_INET {
                continue;
            }
            &*(ifa.ifa_addr as *const libc::sockaddr_in)
        };
        // SAFETY: a non-NULL, NUL-terminated name of the list.
        let name = unsafe { CStr::from_ptr(ifa.ifa_name) };
        found.push((
            name.to_string_lossy().into_owned(),
            Ipv4Addr::from(u32::from_be(address.sin_addr.s_addr)),
        ));
    }
    // SAFETY: the list from getifaddrs above, freed once; nothing of it is
    // used after (the names were copied).
    unsafe { libc::freeifaddrs(list) };
    found
}

/// The PCI function under the interface carrying `ip` (`None`: no
/// interface carries it, or its interface sits on no PCI function), with
/// a debug line saying which.
pub fn pci_function_of_ipv4(ip: Ipv4Addr) -> Option<ucs_sys_bus_id_t> {
    let Some(interface) = interface_with_ipv4(ip) else {
        tracing::debug!("{ip}: no network interface carries it: no PCI function");
        return None;
    };
    let function = interface_pci_function(Path::new(SYSFS_CLASS_NET), &interface);
    match function {
        Some(bus_id) => tracing::debug!(
            "{ip}: on {interface}, PCI {:04x}:{:02x}:{:02x}.{:x}",
            bus_id.domain,
            bus_id.bus,
            bus_id.slot,
            bus_id.function
        ),
        None => tracing::debug!("{ip}: on {interface}, which sits on no PCI function"),
    }
    function
}
