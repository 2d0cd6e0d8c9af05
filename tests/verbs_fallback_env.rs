//! The process-wide rdma-core loader with a bogus library name (the
//! test-only override `UCT_VERBS_LIBIBVERBS`): discovery returns nothing,
//! logs why, and the soft HCA is listed and opens as usual (`UCX_SOFT_HCA`
//! auto). One test per binary: the loader and the device list are made once
//! per process.

mod log_capture;

use log_capture::capture_logs;
use uct::hca::verbs::discovery;
use uct::hca::verbs::ffi::{Verbs, LIBIBVERBS_OVERRIDE_ENV};

#[test]
fn absent_libibverbs_gives_no_devices_and_one_log_line() {
    std::env::set_var(LIBIBVERBS_OVERRIDE_ENV, "libibverbs-bogus-name.so.1");
    std::env::set_var("UCX_SOFT_HCA_DEVICES", "fallback0@127.0.0.1");
    std::env::remove_var("UCX_SOFT_HCA");
    let (devices, logs) = capture_logs(|| {
        let first = discovery::discover();
        let second = discovery::discover();
        assert_eq!(first, second);
        first
    });
    assert!(devices.is_empty(), "{devices:?}");
    let lines: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("libibverbs-bogus-name.so.1"))
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "expected one line naming the library, got: {logs:?}"
    );
    assert!(lines[0].contains("DEBUG"), "{}", lines[0]);
    let err = Verbs::get().err().expect("the bogus name cannot load");
    assert_eq!(err.status(), uct::abi::ucs_status::Status::NoDevice);

    // The soft HCA stays usable: listed, opened, port up.
    assert_eq!(uct::hca::Device::list(), ["fallback0"]);
    let device = uct::hca::Device::open("fallback0").expect("the soft device opens");
    assert!(matches!(device, uct::hca::Device::Soft(_)));
    let port = device.port_attr(1).expect("port 1");
    assert_eq!(port.state, uct::hca::PortState::Active);
    assert!(matches!(port.address, uct::hca::DeviceAddress::Udp(_)));
}
