//! `UCX_SOFT_HCA=no` on a machine without a usable mlx5 device (rdma-core
//! made unloadable by the test-only override): no device is listed, a soft
//! device is not opened even though it is configured, and a warning says
//! why. One test per binary: the device list is made once per process.

mod log_capture;

use log_capture::capture_logs;
use uct::abi::ucs_status::Status;
use uct::hca::verbs::ffi::LIBIBVERBS_OVERRIDE_ENV;
use uct::hca::Device;

#[test]
fn soft_hca_no_without_real_devices_lists_and_opens_nothing() {
    std::env::set_var(LIBIBVERBS_OVERRIDE_ENV, "libibverbs-bogus-name.so.1");
    std::env::set_var("UCX_SOFT_HCA_DEVICES", "nosoft0@127.0.0.1");
    std::env::set_var("UCX_SOFT_HCA", "no");
    let (listed, logs) = capture_logs(Device::list);
    assert!(listed.is_empty(), "{listed:?}");
    assert!(
        logs.lines()
            .any(|l| l.contains("WARN") && l.contains("UCX_SOFT_HCA=no")),
        "no warning about the empty list: {logs:?}"
    );
    assert!(uct::hca::devices::hca_devices().is_empty());
    assert_eq!(Device::open("nosoft0").err(), Some(Status::NoDevice));
}
