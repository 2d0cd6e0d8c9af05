//! The HCA devices this process sees, and which backend opens each one
//! ([`Backend`]; [`crate::hca::Device::open`] follows it). The `ib` layer
//! lists each as a memory domain of its component with one `rc_mlx5`
//! transport resource on port 1 ([`crate::ib`]); the list lives here, below
//! `ib`, because opening a device by its listed name is the hca's job.
//!
//! Two sources: real mlx5 devices found through rdma-core
//! (`hca::verbs::discovery`) and the soft HCA devices of
//! `UCX_SOFT_HCA_DEVICES`. `UCX_SOFT_HCA` chooses ([`select_devices`]):
//! `auto` lists the real devices if there are any, else the soft ones; `no`
//! only real ones; `yes` the soft ones always, next to any real ones, a soft
//! device renamed `soft_<name>` when a real device has its name.
//!
//! The list is made once per process: a caller sizes arrays from one query
//! and fills them with the next, so it must not change within a process.

use std::sync::OnceLock;

use crate::abi::ucs_status::Status;
use crate::abi::ucs_sys_bus_id_t;
use crate::core::config::SoftDeviceSpec;
use crate::hca::config::{SoftHcaConfig, SoftHcaMode, SoftHcaWire};
use crate::hca::soft::{self, SoftDevice};
use crate::hca::verbs::discovery::{self, combined_device_names, DeviceOrigin};

/// The port every device exposes (`mlx5_0:1`). A real device is listed only
/// when its port 1 is usable (ConnectX adapters expose each port as its own
/// device, so this is the only port in practice).
pub const DEVICE_PORT: u8 = 1;

/// Which backend opens a listed device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A real device through rdma-core (opened by its listed name).
    Verbs {
        /// The node GUID (identifies the adapter across processes).
        node_guid: u64,
        /// The PCI function of the adapter, when sysfs names one.
        pci_bus_id: Option<ucs_sys_bus_id_t>,
        /// The IPv4 address of port 1's RoCE GID, when that GID is
        /// IPv4-mapped (the connection manager's address for the device).
        ipv4: Option<std::net::Ipv4Addr>,
    },
    /// A soft HCA device, opened by its configured name (the listed name
    /// differs when it was renamed next to a real device).
    Soft {
        soft_name: String,
        spec: SoftDeviceSpec,
        /// The PCI function of the network interface carrying the
        /// device's address, if it sits on one ([`crate::hca::netdev`]).
        pci_bus_id: Option<ucs_sys_bus_id_t>,
    },
}

/// One device of the process, as listed to UCX.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HcaDevice {
    /// The md name (`mlx5_0`, or `soft_mlx5_0` for a renamed soft device).
    pub name: String,
    pub backend: Backend,
}

impl HcaDevice {
    pub fn is_soft(&self) -> bool {
        matches!(self.backend, Backend::Soft { .. })
    }

    /// The PCI function the device sits on: a real adapter's, as sysfs
    /// names it; a soft device's network interface's; `None` for a device
    /// on none (a soft device bound to loopback or a virtual interface, as
    /// Linux's rxe on one).
    pub fn pci_bus_id(&self) -> Option<ucs_sys_bus_id_t> {
        match self.backend {
            Backend::Verbs { pci_bus_id, .. } | Backend::Soft { pci_bus_id, .. } => pci_bus_id,
        }
    }
}

/// One entry chosen by [`select_devices`]: origin, listed name, and the
/// name its backend knows it by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selected {
    pub origin: DeviceOrigin,
    pub listed: String,
    pub backend_name: String,
}

/// Which devices to list, from the names of the usable real devices, the
/// configured soft devices and `UCX_SOFT_HCA` (pure: the policy of the
/// module documentation).
pub fn select_devices(real: &[String], soft: &[String], mode: SoftHcaMode) -> Vec<Selected> {
    let keep = |origin: DeviceOrigin, names: &[String]| -> Vec<Selected> {
        names
            .iter()
            .map(|n| Selected {
                origin,
                listed: n.clone(),
                backend_name: n.clone(),
            })
            .collect()
    };
    match mode {
        SoftHcaMode::Auto if !real.is_empty() => keep(DeviceOrigin::Verbs, real),
        SoftHcaMode::Auto => keep(DeviceOrigin::Soft, soft),
        SoftHcaMode::No => keep(DeviceOrigin::Verbs, real),
        SoftHcaMode::Yes => {
            let mut soft_names = soft.iter();
            combined_device_names(real, soft)
                .into_iter()
                .map(|(origin, listed)| {
                    let backend_name = match origin {
                        DeviceOrigin::Verbs => listed.clone(),
                        // combined_device_names keeps the soft order.
                        DeviceOrigin::Soft => soft_names.next().cloned().unwrap_or_default(),
                    };
                    Selected {
                        origin,
                        listed,
                        backend_name,
                    }
                })
                .collect()
        }
    }
}

/// The devices of this process, discovered and selected on first use. A
/// bad `UCX_SOFT_HCA*` setting was reported by the configuration module;
/// the soft HCA then counts as `auto` with no devices.
pub fn hca_devices() -> &'static [HcaDevice] {
    static DEVICES: OnceLock<Vec<HcaDevice>> = OnceLock::new();
    DEVICES.get_or_init(discover_devices)
}

/// The listed device named `name`.
pub fn find_device(name: &str) -> Option<&'static HcaDevice> {
    hca_devices().iter().find(|d| d.name == name)
}

fn discover_devices() -> Vec<HcaDevice> {
    let (mode, soft_specs) = match crate::hca::config::soft_hca_config() {
        Ok(config) => (config.mode, config.devices),
        Err(_) => (SoftHcaMode::Auto, Vec::new()),
    };
    let real_devices = discovery::discover();
    let real: Vec<String> = real_devices
        .iter()
        .filter(|d| d.ports.iter().any(|p| p.number == DEVICE_PORT))
        .map(|d| d.name.clone())
        .collect();
    let soft: Vec<String> = soft_specs.iter().map(|s| s.name.clone()).collect();
    let selected = select_devices(&real, &soft, mode);
    if mode == SoftHcaMode::No && real.is_empty() {
        tracing::warn!("UCX_SOFT_HCA=no, and no usable mlx5 device was found: no HCA devices");
    }
    let devices: Vec<HcaDevice> = selected
        .into_iter()
        .filter_map(|s| {
            let backend = match s.origin {
                DeviceOrigin::Verbs => {
                    let real = real_devices.iter().find(|d| d.name == s.backend_name);
                    Backend::Verbs {
                        node_guid: real.map_or(0, |d| d.node_guid),
                        pci_bus_id: real.and_then(|d| d.pci_bus_id),
                        ipv4: real.and_then(|d| {
                            d.port_ipv4(DEVICE_PORT, crate::hca::netdev::ipv4_of_interface)
                        }),
                    }
                }
                DeviceOrigin::Soft => {
                    let spec = soft_specs
                        .iter()
                        .find(|spec| spec.name == s.backend_name)?
                        .clone();
                    Backend::Soft {
                        pci_bus_id: crate::hca::netdev::pci_function_of_ipv4(spec.ipv4),
                        spec,
                        soft_name: s.backend_name,
                    }
                }
            };
            Some(HcaDevice {
                name: s.listed,
                backend,
            })
        })
        .collect();
    tracing::debug!(
        "hca devices (UCX_SOFT_HCA={mode:?}): {}",
        devices
            .iter()
            .map(|d| format!(
                "{}({})",
                d.name,
                if d.is_soft() { "soft" } else { "rdma-core" }
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    devices
}

/// The soft HCA's settings, from `UCX_SOFT_HCA*` read now: the one place
/// they are read for it (at each open, so that a test may change the seed
/// or the wire between devices). A bad setting was reported by the
/// configuration module; the soft HCA then has its defaults and, like
/// `UCX_SOFT_HCA=no`, no configured device.
pub fn soft_hca_settings() -> soft::Settings {
    let Ok(config) = crate::hca::config::soft_hca_config() else {
        return soft::Settings::default();
    };
    let SoftHcaConfig {
        wire,
        udp_offload,
        mode,
        devices,
        loss,
        seed,
    } = config;
    let devices = if mode == SoftHcaMode::No {
        Vec::new()
    } else {
        devices
            .into_iter()
            .map(|d| soft::DeviceSpec {
                name: d.name,
                ipv4: d.ipv4,
            })
            .collect()
    };
    soft::Settings {
        devices,
        loss,
        seed,
        wire: match wire {
            SoftHcaWire::Auto => soft::Wire::Auto,
            SoftHcaWire::Udp => soft::Wire::Udp,
        },
        udp_offload,
    }
}

/// Opens the configured soft device `name`.
pub fn open_soft(name: &str) -> Result<SoftDevice, Status> {
    SoftDevice::open(name, &soft_hca_settings())
}

/// Opens soft device `name` on `ipv4`, adding it to the process's devices if
/// it is not configured (tests: two devices on two loopback addresses).
pub fn open_soft_at(name: &str, ipv4: std::net::Ipv4Addr) -> Result<SoftDevice, Status> {
    SoftDevice::open_at(name, ipv4, &soft_hca_settings())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn listed(selected: &[Selected]) -> Vec<(DeviceOrigin, &str, &str)> {
        selected
            .iter()
            .map(|s| (s.origin, s.listed.as_str(), s.backend_name.as_str()))
            .collect()
    }

    #[test]
    fn auto_prefers_real_devices_and_falls_back_to_soft() {
        let real = names(&["mlx5_0", "mlx5_1"]);
        let soft = names(&["mlx5_0", "mlx5_9"]);
        assert_eq!(
            listed(&select_devices(&real, &soft, SoftHcaMode::Auto)),
            [
                (DeviceOrigin::Verbs, "mlx5_0", "mlx5_0"),
                (DeviceOrigin::Verbs, "mlx5_1", "mlx5_1")
            ]
        );
        assert_eq!(
            listed(&select_devices(&[], &soft, SoftHcaMode::Auto)),
            [
                (DeviceOrigin::Soft, "mlx5_0", "mlx5_0"),
                (DeviceOrigin::Soft, "mlx5_9", "mlx5_9")
            ]
        );
        assert!(select_devices(&[], &[], SoftHcaMode::Auto).is_empty());
    }

    #[test]
    fn no_lists_only_real_devices_even_when_there_are_none() {
        let soft = names(&["mlx5_0"]);
        assert!(select_devices(&[], &soft, SoftHcaMode::No).is_empty());
        assert_eq!(
            listed(&select_devices(&names(&["mlx5_3"]), &soft, SoftHcaMode::No)),
            [(DeviceOrigin::Verbs, "mlx5_3", "mlx5_3")]
        );
    }

    #[test]
    fn yes_lists_both_and_renames_clashing_soft_devices() {
        let real = names(&["mlx5_0"]);
        let soft = names(&["mlx5_0", "mlx5_1"]);
        assert_eq!(
            listed(&select_devices(&real, &soft, SoftHcaMode::Yes)),
            [
                (DeviceOrigin::Verbs, "mlx5_0", "mlx5_0"),
                (DeviceOrigin::Soft, "soft_mlx5_0", "mlx5_0"),
                (DeviceOrigin::Soft, "mlx5_1", "mlx5_1"),
            ]
        );
        assert_eq!(
            listed(&select_devices(&[], &soft, SoftHcaMode::Yes)),
            [
                (DeviceOrigin::Soft, "mlx5_0", "mlx5_0"),
                (DeviceOrigin::Soft, "mlx5_1", "mlx5_1"),
            ]
        );
    }
}
