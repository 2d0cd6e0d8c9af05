//! Configuration of the soft devices from the environment, read once per
//! process (so this binary holds a single test that sets it first):
//! `UCX_SOFT_HCA_DEVICES`, `UCX_SOFT_HCA_LOSS` applied at open, and a seeded,
//! reproducible drop pattern.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};

use uct::hca::{Device, DeviceAddress, PortState};

#[test]
fn environment_configures_devices_and_loss() {
    std::env::set_var(
        "UCX_SOFT_HCA_DEVICES",
        "envdev0@127.0.0.1,envdev1@127.0.0.2",
    );
    std::env::set_var("UCX_SOFT_HCA_LOSS", "0.5");
    std::env::set_var("UCX_SOFT_HCA_SEED", "12345");

    let names = Device::list();
    assert!(
        names.contains(&"envdev0".to_string()) && names.contains(&"envdev1".to_string()),
        "{names:?}"
    );
    let dev = Device::open("envdev1").expect("configured device opens");
    let Device::Soft(soft) = &dev else {
        panic!("not a soft HCA device")
    };
    assert!(
        (soft.loss() - 0.5).abs() < 1e-9,
        "UCX_SOFT_HCA_LOSS applied at open"
    );
    let port = dev.port_attr(1).expect("port 1");
    assert_eq!(port.state, PortState::Active);
    let DeviceAddress::Udp(addr) = port.address else {
        panic!("not a soft HCA")
    };
    assert_eq!(
        *addr.ip(),
        Ipv4Addr::new(127, 0, 0, 2),
        "bound to the configured address"
    );
    assert_ne!(addr.port(), 0);
    assert!(dev.port_attr(2).is_err());

    // Half of what arrives is dropped: send 400 garbage datagrams and count
    // what the port let through (as malformed) against what it dropped.
    let sender = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).expect("bind");
    for _ in 0..400 {
        sender.send_to(&[0u8; 8], addr).expect("send");
    }
    let stats = softhca_wait(|| {
        dev.progress();
        let s = soft.link_stats();
        (s.rx_dropped_loss + s.rx_malformed >= 400).then_some(s)
    })
    .expect("all 400 datagrams seen");
    assert!(
        (120..=280).contains(&stats.rx_dropped_loss),
        "about half dropped: {stats:?}"
    );
}

fn softhca_wait<T>(mut f: impl FnMut() -> Option<T>) -> Option<T> {
    for _ in 0..1000 {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    None
}
