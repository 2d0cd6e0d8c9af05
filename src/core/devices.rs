//! The HCA devices this process sees: each one is a memory domain of the `ib`
//! component and carries one `rc_mlx5` transport resource on port 1.
//!
//! Until the soft HCA provides the list, it comes from `UCX_SOFT_HCA_DEVICES`
//! (`name@ipv4[,name@ipv4…]`, default `mlx5_0@127.0.0.1`). [`hca_devices`] is
//! the one place that decides where the list comes from, so switching to the
//! configuration module or the soft HCA changes only that function.

use std::net::Ipv4Addr;
use std::sync::OnceLock;

/// Longest device name that fits UCX's `md_name[UCT_MD_NAME_MAX]` with its NUL.
pub const MAX_DEVICE_NAME_LEN: usize = 15;

/// Environment variable naming the soft HCA devices.
pub const SOFT_HCA_DEVICES_ENV: &str = "UCX_SOFT_HCA_DEVICES";

/// Device list used when the environment does not name one.
pub const DEFAULT_SOFT_HCA_DEVICES: &str = "mlx5_0@127.0.0.1";

/// The port every device exposes (`mlx5_0:1`).
pub const DEVICE_PORT: u8 = 1;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HcaDevice {
    /// e.g. `mlx5_0`; ASCII, at most [`MAX_DEVICE_NAME_LEN`] bytes, no NUL.
    pub name: String,
    /// Address the soft HCA's link binds to.
    pub ipv4: Ipv4Addr,
}

impl HcaDevice {
    /// The transport device name, `<name>:<port>` (e.g. `mlx5_0:1`).
    pub fn port_name(&self) -> String {
        format!("{}:{}", self.name, DEVICE_PORT)
    }
}

/// Parses `name@ipv4[,name@ipv4…]`. Bad or duplicate entries are skipped with a
/// warning, so one typo does not hide the other devices.
pub fn parse_device_list(spec: &str) -> Vec<HcaDevice> {
    let mut devices: Vec<HcaDevice> = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match parse_device(item) {
            Ok(device) if devices.iter().any(|d| d.name == device.name) => {
                tracing::warn!(
                    "{SOFT_HCA_DEVICES_ENV}: duplicate device '{}' ignored",
                    device.name
                );
            }
            Ok(device) => devices.push(device),
            Err(reason) => {
                tracing::warn!("{SOFT_HCA_DEVICES_ENV}: ignoring '{item}': {reason}");
            }
        }
    }
    devices
}

fn parse_device(item: &str) -> Result<HcaDevice, String> {
    let (name, address) = item
        .split_once('@')
        .ok_or_else(|| "expected name@ipv4".to_string())?;
    let name = name.trim();
    if name.is_empty() || name.len() > MAX_DEVICE_NAME_LEN {
        return Err(format!(
            "device name must have 1..={MAX_DEVICE_NAME_LEN} characters"
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err("device name may hold only letters, digits, '_' and '-'".to_string());
    }
    let ipv4 = address
        .trim()
        .parse::<Ipv4Addr>()
        .map_err(|_| format!("'{address}' is not an IPv4 address"))?;
    Ok(HcaDevice {
        name: name.to_string(),
        ipv4,
    })
}

/// The devices of this process, read once: handles given to C (component
/// resources, opened MDs) must keep naming the same devices.
pub fn hca_devices() -> &'static [HcaDevice] {
    static DEVICES: OnceLock<Vec<HcaDevice>> = OnceLock::new();
    DEVICES.get_or_init(|| {
        let spec = std::env::var(SOFT_HCA_DEVICES_ENV)
            .unwrap_or_else(|_| DEFAULT_SOFT_HCA_DEVICES.to_string());
        parse_device_list(&spec)
    })
}

/// Looks a device up by its MD name (`mlx5_0`).
pub fn find_device(name: &str) -> Option<&'static HcaDevice> {
    hca_devices().iter().find(|device| device.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_default_and_lists() {
        let devices = parse_device_list(DEFAULT_SOFT_HCA_DEVICES);
        assert_eq!(devices.len(), 1);
        assert_eq!(devices[0].name, "mlx5_0");
        assert_eq!(devices[0].ipv4, Ipv4Addr::LOCALHOST);
        assert_eq!(devices[0].port_name(), "mlx5_0:1");

        let devices = parse_device_list(" mlx5_0@10.0.0.1 , mlx5_1@10.0.0.2,");
        let names: Vec<_> = devices.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["mlx5_0", "mlx5_1"]);
        assert_eq!(devices[1].ipv4, Ipv4Addr::new(10, 0, 0, 2));
    }

    #[test]
    fn skips_bad_entries() {
        let devices = parse_device_list(
            "noaddr,x@999.1.1.1,@1.2.3.4,a_very_long_device_name@1.1.1.1,bad/name@1.1.1.1,ok@1.1.1.1,ok@2.2.2.2",
        );
        assert_eq!(devices.len(), 1);
        assert_eq!(devices[0].name, "ok");
        assert_eq!(devices[0].ipv4, Ipv4Addr::new(1, 1, 1, 1));
        assert!(parse_device_list("").is_empty());
    }
}
