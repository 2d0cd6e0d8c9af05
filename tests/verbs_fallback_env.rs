//! The process-wide rdma-core loader with a bogus library name (the
//! test-only override `UCT_VERBS_LIBIBVERBS`): discovery returns nothing,
//! logs why, and the soft HCA is listed and opens as usual (`UCX_SOFT_HCA`
//! auto). One test per binary: the loader and the device list are made once
//! per process.

use std::io::Write;
use std::sync::{Arc, Mutex};

use uct::hca::verbs::discovery;
use uct::hca::verbs::ffi::{Verbs, LIBIBVERBS_OVERRIDE_ENV};

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn absent_libibverbs_gives_no_devices_and_one_log_line() {
    std::env::set_var(LIBIBVERBS_OVERRIDE_ENV, "libibverbs-bogus-name.so.1");
    std::env::set_var("UCX_SOFT_HCA_DEVICES", "fallback0@127.0.0.1");
    std::env::remove_var("UCX_SOFT_HCA");
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let devices = tracing::subscriber::with_default(subscriber, || {
        let first = discovery::discover();
        let second = discovery::discover();
        assert_eq!(first, second);
        first
    });
    assert!(devices.is_empty(), "{devices:?}");
    let logs = String::from_utf8_lossy(&buffer.0.lock().unwrap()).into_owned();
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
