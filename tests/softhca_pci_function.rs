//! The PCI function a soft HCA device sits on: the one of the network
//! interface carrying its address (as Linux's rxe sits on its network
//! device's parent), none for loopback and virtual interfaces. Checked on
//! fake sysfs trees, on this machine's interfaces against the kernel's PCI
//! device list, and through `uct_md_query_tl_resources`' `sys_device`.

#[path = "uct_safe/mod.rs"]
mod uct_safe;

use std::ffi::{c_char, c_uint, CStr};
use std::net::Ipv4Addr;
use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::ptr::null_mut;
use std::sync::OnceLock;

use uct::abi::*;
use uct::api::topo::{ucs_topo_sys_device_bdf_name, ucs_topo_sys_device_get_name};
use uct::hca::netdev::{interface_pci_function, interface_with_ipv4, pci_function_of_ipv4};
use uct_safe::{md_close, md_open, query_components, release_component_list, tl_resources};

fn bdf_text(bus_id: &ucs_sys_bus_id_t) -> String {
    format!(
        "{:04x}:{:02x}:{:02x}.{:x}",
        bus_id.domain, bus_id.bus, bus_id.slot, bus_id.function
    )
}

/// A fake `/sys`: `devices/...` directories and `class/net/<interface>`
/// links to them, with `device` links as the kernel makes them.
struct FakeSysfs {
    root: PathBuf,
}

impl FakeSysfs {
    fn new(name: &str) -> FakeSysfs {
        let root = std::env::temp_dir().join(format!("uct-sysfs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("class/net")).unwrap();
        FakeSysfs { root }
    }

    fn class_net(&self) -> PathBuf {
        self.root.join("class/net")
    }

    /// Interface `name` at `devices/<parent>/net/<name>`; its `device` link
    /// points at `devices/<parent>` unless `parent` is under `virtual/`.
    fn interface(&self, name: &str, parent: &str) {
        let dir = self
            .root
            .join("devices")
            .join(parent)
            .join("net")
            .join(name);
        std::fs::create_dir_all(&dir).unwrap();
        if !parent.starts_with("virtual") {
            // The PCI function's own `device` file (its PCI device id).
            std::fs::write(
                self.root.join("devices").join(parent).join("device"),
                "0x1000\n",
            )
            .unwrap();
            symlink("../../", dir.join("device")).unwrap();
        }
        // class/net/<name> -> ../../devices/<parent>/net/<name>
        let target = format!("../../devices/{parent}/net/{name}");
        symlink(target, self.class_net().join(name)).unwrap();
    }
}

impl Drop for FakeSysfs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[test]
fn fake_sysfs_interfaces_sit_on_their_pci_function_or_on_none() {
    let sysfs = FakeSysfs::new("tree");
    // A NIC that is itself a PCI function.
    sysfs.interface("enp0s31f6", "pci0000:00/0000:00:1f.6");
    // Behind a bridge: the NIC's function, not the bridge's.
    sysfs.interface("ens1f1", "pci0000:3a/0000:3a:00.0/0000:3b:00.1");
    // virtio-net: a virtio device on its virtio-pci function.
    sysfs.interface("eth0", "pci0000:00/0000:00:03.0/virtio2");
    // A USB NIC: its parents are USB devices (the PCI function further up
    // is the USB controller's, not the interface's).
    sysfs.interface("usb0", "pci0000:00/0000:00:14.0/usb1/1-1/1-1:1.0");
    // Loopback and a veth: no `device` link.
    sysfs.interface("lo", "virtual");
    sysfs.interface("veth0", "virtual");
    let class_net = sysfs.class_net();
    let found = |name: &str| interface_pci_function(&class_net, name).map(|id| bdf_text(&id));
    assert_eq!(found("enp0s31f6").as_deref(), Some("0000:00:1f.6"));
    assert_eq!(found("ens1f1").as_deref(), Some("0000:3b:00.1"));
    assert_eq!(found("eth0").as_deref(), Some("0000:00:03.0"));
    assert_eq!(found("usb0"), None);
    assert_eq!(found("lo"), None);
    assert_eq!(found("veth0"), None);
    assert_eq!(found("no-such-interface"), None);
}

/// This machine's interfaces with an IPv4 address, as `ip` lists them
/// (`None` when `ip` cannot be run).
fn ipv4_interfaces() -> Option<Vec<(String, Ipv4Addr)>> {
    let output = std::process::Command::new("ip")
        .args(["-4", "-o", "addr", "show"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    // `2: eth0    inet 192.0.2.2/24 brd ... scope global eth0`
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    Some(
        text.lines()
            .filter_map(|line| {
                let mut words = line.split_whitespace().skip(1);
                let name = words.next()?.to_string();
                let address = words.skip_while(|w| *w != "inet").nth(1)?;
                Some((name, address.split('/').next()?.parse().ok()?))
            })
            .collect(),
    )
}

/// The PCI function under `interface` by the kernel's list of PCI devices
/// (`/sys/bus/pci/devices`): the one that is the interface's parent
/// device, or that device's parent.
fn pci_function_by_bus_list(interface: &str) -> Option<String> {
    let parent = std::fs::canonicalize(format!("/sys/class/net/{interface}/device")).ok()?;
    let functions: Vec<(String, PathBuf)> = std::fs::read_dir("/sys/bus/pci/devices")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let path = std::fs::canonicalize(entry.path()).ok()?;
            Some((entry.file_name().to_string_lossy().into_owned(), path))
        })
        .collect();
    parent.ancestors().take(2).find_map(|dir| {
        functions
            .iter()
            .find(|(_, path)| path == dir)
            .map(|(name, _)| name.clone())
    })
}

/// The first interface with an IPv4 address that sits on a PCI function,
/// with that address and the function.
fn first_pci_interface() -> Option<(String, Ipv4Addr, String)> {
    ipv4_interfaces()?
        .into_iter()
        .find_map(|(name, ip)| Some((name.clone(), ip, pci_function_by_bus_list(&name)?)))
}

#[test]
fn this_machines_addresses_sit_on_their_interfaces_pci_functions() {
    assert_eq!(pci_function_of_ipv4(Ipv4Addr::LOCALHOST), None);
    // TEST-NET-3: carried by no interface.
    assert_eq!(interface_with_ipv4(Ipv4Addr::new(203, 0, 113, 77)), None);
    assert_eq!(pci_function_of_ipv4(Ipv4Addr::new(203, 0, 113, 77)), None);
    let Some(interfaces) = ipv4_interfaces() else {
        eprintln!("`ip -4 -o addr show` did not run: only loopback is checked");
        return;
    };
    assert!(
        interfaces.iter().any(|(name, _)| name == "lo"),
        "`ip` lists no loopback: {interfaces:?}"
    );
    for (name, ip) in interfaces {
        assert_eq!(interface_with_ipv4(ip).as_deref(), Some(name.as_str()));
        let expected = pci_function_by_bus_list(&name);
        eprintln!("{name} {ip}: PCI function {expected:?}");
        assert_eq!(
            pci_function_of_ipv4(ip).map(|id| bdf_text(&id)),
            expected,
            "{name} ({ip})"
        );
    }
}

/// The devices of this process: `mlx5_0` on loopback, and `mlx5_1` on the
/// first address whose interface sits on a PCI function, if there is one.
fn setup() -> Option<&'static (String, Ipv4Addr, String)> {
    static PCI: OnceLock<Option<(String, Ipv4Addr, String)>> = OnceLock::new();
    PCI.get_or_init(|| {
        let pci = first_pci_interface();
        let mut devices = "mlx5_0@127.0.0.1".to_string();
        if let Some((_, ip, _)) = &pci {
            devices.push_str(&format!(",mlx5_1@{ip}"));
        }
        // Before the library's first look at its devices (only the test
        // below opens an md).
        std::env::set_var("UCX_SOFT_HCA_DEVICES", devices);
        pci
    })
    .as_ref()
}

/// The `sys_device` of the one tl resource of md `name`.
fn sys_device_of(name: &CStr) -> ucs_sys_device_t {
    let mut components = null_mut();
    let mut count: c_uint = 0;
    assert_eq!(query_components(&mut components, &mut count), UCS_OK);
    // SAFETY: the list has `count` >= 1 entries; the ib component is first.
    let ib = unsafe { *components };
    release_component_list(components);
    let mut md = null_mut();
    assert_eq!(md_open(ib, name, std::ptr::null(), &mut md), UCS_OK);
    let resources = tl_resources(md).expect("tl resources");
    md_close(md);
    assert_eq!(resources.len(), 1);
    resources[0].sys_device
}

#[test]
fn tl_resources_report_the_system_device_of_the_interface() {
    let pci = setup();
    assert_eq!(sys_device_of(c"mlx5_0"), UCS_SYS_DEVICE_ID_UNKNOWN);
    let Some((interface, ip, bdf)) = pci else {
        eprintln!("no IPv4 interface on a PCI function here: only loopback is checked");
        return;
    };
    let sys_device = sys_device_of(c"mlx5_1");
    assert_ne!(
        sys_device, UCS_SYS_DEVICE_ID_UNKNOWN,
        "mlx5_1 on {ip} ({interface}, {bdf})"
    );
    let mut buffer = [0 as c_char; 32];
    // SAFETY: a buffer of its length; the answer is NUL-terminated in it.
    let name = unsafe {
        CStr::from_ptr(ucs_topo_sys_device_bdf_name(
            sys_device,
            buffer.as_mut_ptr(),
            buffer.len(),
        ))
    };
    assert_eq!(name.to_str().unwrap(), bdf);
    // SAFETY: a NUL-terminated name that lives on.
    let device_name = unsafe { CStr::from_ptr(ucs_topo_sys_device_get_name(sys_device)) };
    assert_eq!(device_name.to_str().unwrap(), "mlx5_1");
    // The same system device at the next query.
    assert_eq!(sys_device_of(c"mlx5_1"), sys_device);
}
