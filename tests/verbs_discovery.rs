//! The verbs backend's loading and device discovery on a machine without a
//! NIC: rdma-core present but no device, libraries or symbols missing, the
//! RoCE GID choice and an InfiniBand port's IPoIB interfaces from fake
//! sysfs trees, the name rule for soft devices, and that the built library
//! does not link rdma-core.

mod log_capture;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use log_capture::capture_logs;
use uct::abi::ucs_status::Status;
use uct::hca::verbs::discovery::{
    self, combined_device_names, read_gid_type, select_roce_gid, DeviceOrigin, GidEntry, GidType,
};
use uct::hca::verbs::ffi::{LoadError, Verbs, LIBIBVERBS, LIBMLX5};
use uct::hca::{DeviceAddress, LinkLayer, Mtu};

fn rdma_core() -> Verbs {
    Verbs::load_from(LIBIBVERBS, LIBMLX5).unwrap_or_else(|e| {
        panic!("rdma-core must be installed for this test (libibverbs-dev): {e}")
    })
}

#[test]
fn installed_rdma_core_without_devices_lists_none_with_a_debug_line() {
    let verbs = rdma_core();
    let sysfs = Path::new(discovery::SYSFS_INFINIBAND);
    let (devices, logs) = capture_logs(|| discovery::discover_with(&verbs, sysfs, None));
    if sysfs.exists() {
        // A machine with RDMA devices: whatever is listed must be real.
        for device in &devices {
            assert!(
                sysfs.join(&device.name).exists(),
                "{} is not in sysfs",
                device.name
            );
            assert!(!device.ports.is_empty());
        }
    } else {
        assert!(
            devices.is_empty(),
            "no /sys/class/infiniband, yet found {devices:?}"
        );
        assert!(
            logs.contains("verbs:"),
            "no debug line about the empty list: {logs:?}"
        );
        println!("discovery said: {logs}");
    }
}

#[test]
fn missing_libibverbs_is_no_device_naming_the_library() {
    let err = Verbs::load_from(c"libibverbs-not-installed.so.1", LIBMLX5)
        .err()
        .expect("a library that does not exist cannot load");
    match &err {
        LoadError::LibraryMissing { library, .. } => {
            assert_eq!(library, "libibverbs-not-installed.so.1")
        }
        other => panic!("wrong error {other:?}"),
    }
    assert_eq!(err.status(), Status::NoDevice);
    assert!(err.to_string().contains("libibverbs-not-installed.so.1"));
}

#[test]
fn missing_libmlx5_is_no_device() {
    let err = Verbs::load_from(LIBIBVERBS, c"libmlx5-not-installed.so.1")
        .err()
        .expect("must fail");
    assert!(
        matches!(err, LoadError::LibraryMissing { ref library, .. } if library == "libmlx5-not-installed.so.1")
    );
    assert_eq!(err.status(), Status::NoDevice);
}

#[test]
fn library_without_the_verbs_symbols_is_unsupported_naming_the_symbol() {
    // libc is a real library that has none of the verbs entry points: as a
    // too-old or foreign libibverbs would, it fails on the first symbol.
    let err = Verbs::load_from(c"libc.so.6", LIBMLX5)
        .err()
        .expect("must fail");
    match &err {
        LoadError::SymbolMissing {
            library, symbol, ..
        } => {
            assert_eq!(library, "libc.so.6");
            assert_eq!(symbol, "ibv_get_device_list@IBVERBS_1.1");
        }
        other => panic!("wrong error {other:?}"),
    }
    assert_eq!(err.status(), Status::Unsupported);
    assert!(err.to_string().contains("ibv_get_device_list"));

    // libibverbs in place of libmlx5: the first direct-verbs symbol is named.
    let err = Verbs::load_from(LIBIBVERBS, LIBIBVERBS)
        .err()
        .expect("must fail");
    assert!(
        matches!(err, LoadError::SymbolMissing { ref symbol, .. } if symbol == "mlx5dv_init_obj@MLX5_1.2"),
        "{err:?}"
    );
}

fn entry(index: u8, kind: GidType, gid: [u8; 16]) -> GidEntry {
    GidEntry { index, gid, kind }
}

fn ipv4_gid(a: [u8; 4]) -> [u8; 16] {
    let mut gid = [0u8; 16];
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid[12..].copy_from_slice(&a);
    gid
}

fn link_local_gid(last: u8) -> [u8; 16] {
    let mut gid = [0u8; 16];
    gid[0] = 0xfe;
    gid[1] = 0x80;
    gid[15] = last;
    gid
}

#[test]
fn roce_gid_prefers_v2_ipv4_then_v2_then_v1_and_skips_empty_entries() {
    let v1_ll = entry(0, GidType::RoceV1, link_local_gid(1));
    let v2_ll = entry(1, GidType::RoceV2, link_local_gid(1));
    let v1_ip = entry(2, GidType::RoceV1, ipv4_gid([10, 0, 0, 1]));
    let v2_ip = entry(3, GidType::RoceV2, ipv4_gid([10, 0, 0, 1]));
    let v2_zero = entry(4, GidType::RoceV2, [0; 16]);

    assert_eq!(
        select_roce_gid(&[v1_ll, v2_ll, v1_ip, v2_ip, v2_zero], None),
        Some(v2_ip)
    );
    assert_eq!(select_roce_gid(&[v1_ll, v2_ll, v1_ip], None), Some(v2_ll));
    assert_eq!(
        select_roce_gid(&[v1_ip, v1_ll], None),
        Some(v1_ll),
        "lowest index within a rank"
    );
    assert_eq!(select_roce_gid(&[v2_zero], None), None);
    assert_eq!(select_roce_gid(&[], None), None);
    assert_eq!(v2_ip.ipv4(), Some(std::net::Ipv4Addr::new(10, 0, 0, 1)));
    assert_eq!(v2_ll.ipv4(), None);
}

#[test]
fn gid_index_from_config_wins_over_the_preference_but_not_over_emptiness() {
    let v1_ll = entry(0, GidType::RoceV1, link_local_gid(1));
    let v2_ip = entry(3, GidType::RoceV2, ipv4_gid([10, 0, 0, 1]));
    let v2_zero = entry(4, GidType::RoceV2, [0; 16]);
    let table = [v1_ll, v2_ip, v2_zero];
    assert_eq!(select_roce_gid(&table, Some(0)), Some(v1_ll));
    assert_eq!(select_roce_gid(&table, Some(3)), Some(v2_ip));
    assert_eq!(select_roce_gid(&table, Some(4)), None, "empty entry");
    assert_eq!(select_roce_gid(&table, Some(9)), None, "absent entry");
}

#[test]
fn stand_in_style_gid_is_accepted_without_an_ipv4_mapped_one() {
    // fe80:: + IPv4 + UDP port (not IPv4-mapped), as the stand-in encodes
    // a soft device: the only RoCE v2 entry, so it is chosen.
    let mut gid = link_local_gid(0);
    gid[10..14].copy_from_slice(&[127, 0, 0, 1]);
    gid[14..16].copy_from_slice(&4791u16.to_be_bytes());
    let only = entry(0, GidType::RoceV2, gid);
    assert_eq!(only.ipv4(), None);
    assert_eq!(select_roce_gid(&[only], None), Some(only));
}

fn device_with_port(gid: Option<GidEntry>, lid: u16) -> discovery::VerbsDevice {
    ib_device_with_port(gid, lid, Vec::new())
}

fn ib_device_with_port(
    gid: Option<GidEntry>,
    lid: u16,
    ipoib_interfaces: Vec<String>,
) -> discovery::VerbsDevice {
    let (link_layer, address) = match gid {
        Some(gid) => (LinkLayer::Ethernet, DeviceAddress::Roce { gid: gid.gid }),
        None => (LinkLayer::InfiniBand, DeviceAddress::Ib { lid, gid: None }),
    };
    discovery::VerbsDevice {
        name: "mlx5_0".into(),
        node_guid: 1,
        pci_bus_id: None,
        ports: vec![discovery::VerbsPort {
            number: 1,
            link_layer,
            max_mtu: Mtu::Mtu4096,
            active_mtu: Mtu::Mtu1024,
            lid,
            gid,
            sgid_index: gid.map_or(0, |g| g.index),
            ipoib_interfaces,
            address,
        }],
    }
}

#[test]
fn connection_manager_address_is_the_ipv4_of_the_roce_gid_in_use() {
    let v2_ip = entry(3, GidType::RoceV2, ipv4_gid([10, 0, 0, 7]));
    let roce = device_with_port(Some(v2_ip), 0);
    // RoCE never asks for interface addresses.
    let any_interface = |_: &str| Some(Ipv4Addr::new(172, 16, 0, 1));
    assert_eq!(
        roce.port_ipv4(1, any_interface),
        Some(Ipv4Addr::new(10, 0, 0, 7))
    );
    assert_eq!(roce.port_ipv4(2, any_interface), None, "no such port");
    let v2_ll = entry(1, GidType::RoceV2, link_local_gid(1));
    assert_eq!(
        device_with_port(Some(v2_ll), 0).port_ipv4(1, any_interface),
        None,
        "IPv6-only GID"
    );
    assert_eq!(
        device_with_port(None, 5).port_ipv4(1, any_interface),
        None,
        "InfiniBand without IPoIB"
    );
}

/// One network interface of a fake sysfs tree: its name and the files the
/// kernel gives it (absent when `None`).
struct FakeInterface {
    name: &'static str,
    kind: Option<&'static str>,
    dev_port: Option<&'static str>,
    dev_id: Option<&'static str>,
}

/// `<root>/<device>` as the kernel lays it out: a link into the PCI
/// function's `infiniband/<device>` directory, whose `device` link leads
/// back to the function, whose `net/` holds `interfaces`; returns the root.
fn sysfs_with_interfaces(scratch: &Path, device: &str, interfaces: &[FakeInterface]) -> PathBuf {
    let function = scratch.join("devices/pci0000:00/0000:3b:00.0");
    let ibdev = function.join("infiniband").join(device);
    std::fs::create_dir_all(&ibdev).unwrap();
    std::os::unix::fs::symlink("../..", ibdev.join("device")).unwrap();
    for interface in interfaces {
        let dir = function.join("net").join(interface.name);
        std::fs::create_dir_all(&dir).unwrap();
        for (file, text) in [
            ("type", interface.kind),
            ("dev_port", interface.dev_port),
            ("dev_id", interface.dev_id),
        ] {
            if let Some(text) = text {
                std::fs::write(dir.join(file), format!("{text}\n")).unwrap();
            }
        }
    }
    let root = scratch.join("class");
    std::fs::create_dir_all(&root).unwrap();
    std::os::unix::fs::symlink(&ibdev, root.join(device)).unwrap();
    root
}

#[test]
fn an_infiniband_port_is_reached_at_its_ipoib_interface_address() {
    let scratch = scratch_dir("ipoib");
    let ib = |name, dev_port, dev_id| FakeInterface {
        name,
        kind: Some("32"),
        dev_port,
        dev_id,
    };
    let root = sysfs_with_interfaces(
        &scratch,
        "mlx5_0",
        &[
            // Port 1: its interface and a child (P_Key) interface.
            ib("ib0", Some("0"), Some("0x0")),
            ib("ib0.8001", Some("0"), Some("0x0")),
            // Port 2: one interface, and one from a kernel without dev_port.
            ib("ib1", Some("1"), Some("0x0")),
            ib("ib2", None, Some("0x1")),
            // An Ethernet function of the same device, and garbage.
            FakeInterface {
                name: "eth0",
                kind: Some("1"),
                dev_port: Some("0"),
                dev_id: Some("0x0"),
            },
            ib("ib9", Some("many"), None),
            ib("ib8", None, None),
        ],
    );
    assert_eq!(
        discovery::ipoib_interfaces(&root, "mlx5_0", 1),
        ["ib0", "ib0.8001"]
    );
    assert_eq!(
        discovery::ipoib_interfaces(&root, "mlx5_0", 2),
        ["ib1", "ib2"]
    );
    assert!(discovery::ipoib_interfaces(&root, "mlx5_0", 3).is_empty());
    assert!(discovery::ipoib_interfaces(&root, "mlx5_1", 1).is_empty());

    // The first interface of the port with an address (ib0 has none).
    let addresses = |name: &str| match name {
        "ib0.8001" => Some(Ipv4Addr::new(192, 168, 1, 5)),
        "ib2" => Some(Ipv4Addr::new(10, 0, 0, 2)),
        "eth0" => Some(Ipv4Addr::new(172, 16, 0, 1)),
        _ => None,
    };
    let port = |number| {
        ib_device_with_port(
            None,
            5,
            discovery::ipoib_interfaces(&root, "mlx5_0", number),
        )
    };
    assert_eq!(
        port(1).port_ipv4(1, addresses),
        Some(Ipv4Addr::new(192, 168, 1, 5))
    );
    assert_eq!(
        port(2).port_ipv4(1, addresses),
        Some(Ipv4Addr::new(10, 0, 0, 2))
    );
    assert_eq!(port(3).port_ipv4(1, addresses), None);
    std::fs::remove_dir_all(&scratch).unwrap();

    // Through the machine's own interface addresses: the loopback
    // interface standing in for IPoIB.
    let scratch = scratch_dir("ipoib-lo");
    let root = sysfs_with_interfaces(&scratch, "mlx5_0", &[ib("lo", Some("0"), None)]);
    let device = ib_device_with_port(None, 5, discovery::ipoib_interfaces(&root, "mlx5_0", 1));
    assert_eq!(
        device.port_ipv4(1, uct::hca::netdev::ipv4_of_interface),
        Some(Ipv4Addr::LOCALHOST)
    );
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn sysfs_root_follows_the_test_hook() {
    // The variable is read at each call; this test owns it in this binary.
    std::env::remove_var(discovery::SYSFS_ROOT_OVERRIDE_ENV);
    assert_eq!(
        discovery::sysfs_root(),
        Path::new(discovery::SYSFS_INFINIBAND)
    );
    std::env::set_var(discovery::SYSFS_ROOT_OVERRIDE_ENV, "/tmp/fake-sysfs");
    assert_eq!(discovery::sysfs_root(), Path::new("/tmp/fake-sysfs"));
    std::env::set_var(discovery::SYSFS_ROOT_OVERRIDE_ENV, "");
    assert_eq!(
        discovery::sysfs_root(),
        Path::new(discovery::SYSFS_INFINIBAND)
    );
    std::env::remove_var(discovery::SYSFS_ROOT_OVERRIDE_ENV);
}

#[test]
fn gid_types_are_read_from_sysfs_layout() {
    let root = std::env::temp_dir().join(format!("uct-verbs-sysfs-{}", std::process::id()));
    let types = root.join("mlx5_0/ports/1/gid_attrs/types");
    std::fs::create_dir_all(&types).unwrap();
    std::fs::write(types.join("0"), "IB/RoCE v1\n").unwrap();
    std::fs::write(types.join("1"), "RoCE v2\n").unwrap();
    std::fs::write(types.join("2"), "something else\n").unwrap();

    assert_eq!(read_gid_type(&root, "mlx5_0", 1, 0), Some(GidType::RoceV1));
    assert_eq!(read_gid_type(&root, "mlx5_0", 1, 1), Some(GidType::RoceV2));
    assert_eq!(read_gid_type(&root, "mlx5_0", 1, 2), None);
    assert_eq!(read_gid_type(&root, "mlx5_0", 1, 3), None, "absent entry");
    assert_eq!(read_gid_type(&root, "mlx5_0", 2, 0), None, "absent port");
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn soft_device_names_never_clash_with_real_ones() {
    let real = vec!["mlx5_0".to_string(), "mlx5_1".to_string()];
    let soft = vec!["mlx5_0".to_string(), "mlx5_7".to_string()];
    let names = combined_device_names(&real, &soft);
    assert_eq!(
        names,
        vec![
            (DeviceOrigin::Verbs, "mlx5_0".to_string()),
            (DeviceOrigin::Verbs, "mlx5_1".to_string()),
            (DeviceOrigin::Soft, "soft_mlx5_0".to_string()),
            (DeviceOrigin::Soft, "mlx5_7".to_string()),
        ]
    );
    // A soft device already called soft_mlx5_0 pushes the renamed one further.
    let soft = vec!["soft_mlx5_0".to_string(), "mlx5_0".to_string()];
    let names: Vec<String> = combined_device_names(&real, &soft)
        .into_iter()
        .map(|(_, n)| n)
        .collect();
    assert_eq!(
        names,
        ["mlx5_0", "mlx5_1", "soft_mlx5_0", "soft_soft_mlx5_0"]
    );
    // Without real devices the soft names are kept as configured.
    let names = combined_device_names(&[], &["mlx5_0".to_string()]);
    assert_eq!(names, vec![(DeviceOrigin::Soft, "mlx5_0".to_string())]);
}

/// The cdylib cargo built next to this test's `deps/` directory.
fn built_library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let lib = profile_dir.join("libuct.so");
    assert!(lib.exists(), "{} not built", lib.display());
    lib
}

#[test]
fn built_library_does_not_link_rdma_core() {
    let lib = built_library();
    let output = std::process::Command::new("readelf")
        .arg("-d")
        .arg(&lib)
        .output()
        .expect("readelf (binutils) must be installed");
    assert!(output.status.success());
    let dynamic = String::from_utf8_lossy(&output.stdout);
    let needed: Vec<&str> = dynamic.lines().filter(|l| l.contains("(NEEDED)")).collect();
    assert!(
        needed.iter().any(|l| l.contains("libc.so")),
        "no NEEDED list read: {dynamic}"
    );
    for line in &needed {
        assert!(
            !line.contains("ibverbs") && !line.contains("mlx5") && !line.contains("rdma"),
            "libuct.so links rdma-core: {line}"
        );
    }
    // And no undefined verbs symbol waits for some other object to supply it.
    let output = std::process::Command::new("nm")
        .args(["-D", "--undefined-only"])
        .arg(&lib)
        .output()
        .expect("nm (binutils) must be installed");
    let undefined = String::from_utf8_lossy(&output.stdout);
    assert!(
        undefined.contains("memcpy"),
        "no import list read: {undefined}"
    );
    for symbol in ["ibv_", "mlx5dv_"] {
        assert!(!undefined.contains(symbol), "libuct.so imports {symbol}*");
    }
}

/// `<root>/<name>` resolving into a PCI function directory, as the kernel
/// lays out a physical function (`sub_function`: one more level, as for a
/// sub-function); returns the root.
fn sysfs_with_device(scratch: &Path, name: &str, function: &str, sub_function: bool) -> PathBuf {
    let root = scratch.join("class");
    let mut dir = scratch.join("devices/pci0000:00").join(function);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("device"), "0x101b\n").unwrap();
    if sub_function {
        dir = dir.join("mlx5_core.sf.2");
        std::fs::create_dir_all(&dir).unwrap();
    }
    let ibdev = dir.join("infiniband").join(name);
    std::fs::create_dir_all(&ibdev).unwrap();
    std::fs::create_dir_all(&root).unwrap();
    std::os::unix::fs::symlink(&ibdev, root.join(name)).unwrap();
    root
}

fn scratch_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("uct-pci-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn bus_id(domain: u16, bus: u8, slot: u8, function: u8) -> uct::abi::ucs_sys_bus_id_t {
    uct::abi::ucs_sys_bus_id_t {
        domain,
        bus,
        slot,
        function,
    }
}

#[test]
fn pci_function_of_a_physical_and_a_sub_function_device() {
    let scratch = scratch_dir("pf-sf");
    let root = sysfs_with_device(&scratch.join("pf"), "mlx5_0", "0000:3b:00.1", false);
    assert_eq!(
        discovery::pci_bus_id(&root, "mlx5_0"),
        Some(bus_id(0, 0x3b, 0, 1))
    );
    let root = sysfs_with_device(&scratch.join("sf"), "mlx5_4", "0001:af:1f.7", true);
    assert_eq!(
        discovery::pci_bus_id(&root, "mlx5_4"),
        Some(bus_id(1, 0xaf, 0x1f, 7))
    );
    let _ = std::fs::remove_dir_all(&scratch);
}

#[test]
fn device_on_no_pci_function_has_none() {
    // A software device (rxe, siw) resolves below /sys/devices/virtual:
    // no level above it has a `device` file.
    let scratch = scratch_dir("virtual");
    let root = scratch.join("class");
    let ibdev = scratch.join("devices/virtual/infiniband/rxe0");
    std::fs::create_dir_all(&ibdev).unwrap();
    std::fs::create_dir_all(&root).unwrap();
    std::os::unix::fs::symlink(&ibdev, root.join("rxe0")).unwrap();
    assert_eq!(discovery::pci_bus_id(&root, "rxe0"), None);
    // Not in sysfs at all.
    assert_eq!(discovery::pci_bus_id(&root, "mlx5_9"), None);
    let _ = std::fs::remove_dir_all(&scratch);
}

#[test]
fn pci_addresses_parse_as_sysfs_writes_them() {
    use discovery::parse_pci_address as parse;
    assert_eq!(parse("0000:03:00.0"), Some(bus_id(0, 3, 0, 0)));
    assert_eq!(parse("ffff:ff:1f.7"), Some(bus_id(0xffff, 0xff, 0x1f, 7)));
    assert_eq!(parse("3b:00.1"), Some(bus_id(0, 0x3b, 0, 1)));
    for bad in [
        "",
        "mlx5_core.sf.2",
        "0000:03:00",
        "00000:03:00.0",
        "0000:103:00.0",
        "0000:03:00.10",
        "0000:0g:00.0",
        "0000:03:00.",
        "1:2:3:4.5",
        ":03:00.0",
    ] {
        assert_eq!(parse(bad), None, "{bad:?}");
    }
}
