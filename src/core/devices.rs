//! The HCA devices this process sees: each one is a memory domain of the `ib`
//! component and carries one `rc_mlx5` transport resource on port 1.
//!
//! The list is the soft HCA configuration (`UCX_SOFT_HCA_DEVICES`, parsed by
//! `core::config`), read once: a caller sizes arrays from one query and fills
//! them with the next, so the list must not change within a process.

use std::sync::OnceLock;

pub use crate::core::config::SoftDeviceSpec as HcaDevice;

/// The port every device exposes (`mlx5_0:1`).
pub const DEVICE_PORT: u8 = 1;

/// The transport device name of `device`: `<name>:<port>` (e.g. `mlx5_0:1`).
pub fn port_name(device: &HcaDevice) -> String {
    format!("{}:{}", device.name, DEVICE_PORT)
}

/// The devices of this process. A bad `UCX_SOFT_HCA_DEVICES` was reported by
/// the configuration module; the process then has no devices.
pub fn hca_devices() -> &'static [HcaDevice] {
    static DEVICES: OnceLock<Vec<HcaDevice>> = OnceLock::new();
    DEVICES.get_or_init(|| crate::core::config::soft_hca_devices().unwrap_or_default())
}
