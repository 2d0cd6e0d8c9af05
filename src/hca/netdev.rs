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
    let addresses = interface_ipv4_addresses()
        .inspect_err(|error| tracing::debug!("getifaddrs failed: {error}"))
        .ok()?;
    addresses
        .into_iter()
        .find_map(|(name, address)| (address == ip).then_some(name))
}

/// Every IPv4 address of a network interface, with the interface's name
/// (`getifaddrs`).
fn interface_ipv4_addresses() -> std::io::Result<Vec<(String, Ipv4Addr)>> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `list` is a valid out-pointer; the list is freed below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut found = Vec::new();
    // SAFETY: `list` is the list getifaddrs just made, read node by node
    // (NULL-terminated) before it is freed, once, at the end: a node's
    // address is read as a sockaddr_in only when its family is AF_INET, and
    // its name, NUL-terminated, is copied.
    unsafe {
        let mut entry = list;
        while let Some(ifa) = entry.as_ref() {
            entry = ifa.ifa_next;
            let Some(address) = ifa.ifa_addr.as_ref() else {
                continue;
            };
            if ifa.ifa_name.is_null() || i32::from(address.sa_family) != libc::AF_INET {
                continue;
            }
            let address = &*ifa.ifa_addr.cast::<libc::sockaddr_in>();
            found.push((
                CStr::from_ptr(ifa.ifa_name).to_string_lossy().into_owned(),
                Ipv4Addr::from(u32::from_be(address.sin_addr.s_addr)),
            ));
        }
        libc::freeifaddrs(list);
    }
    Ok(found)
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
