//! The software HCA's settings (`UCX_SOFT_HCA*`, ours: UCX has no
//! counterpart): the table, and the typed settings the device layer reads.

use crate::abi::ucs_status::Status;
use crate::core::config::table::{value, Config, ConfigTable, Field};
use crate::core::config::typed::Reader;
use crate::core::config::value::{Kind, SoftDeviceSpec, Ulunits, Value};
use crate::core::config::{Env, ProcessEnv};

/// Soft HCA mode names.
pub const SOFT_HCA_MODE_NAMES: &[&str] = &["auto", "yes", "no"];

/// Soft HCA wire names.
pub const SOFT_HCA_WIRE_NAMES: &[&str] = &["auto", "udp"];

/// Our own variables for the software HCA (no UCX counterpart).
static SOFT_HCA_FIELDS: &[Field] = &[
    value(
        "SOFT_HCA",
        "auto",
        "Use the software HCA: 'auto' where no mlx5 device is usable, 'yes'\nalways, 'no' never.",
        Kind::Enum(SOFT_HCA_MODE_NAMES),
    ),
    value(
        "SOFT_HCA_DEVICES",
        "mlx5_0@127.0.0.1",
        "Software HCA devices: <name>@<IPv4 address the device's link binds to>.",
        Kind::SoftDevices,
    ),
    value(
        "SOFT_HCA_LOSS",
        "0",
        "Fraction of packets the software HCA's link drops, 0..1 (fault injection).",
        Kind::Fraction,
    ),
    value(
        "SOFT_HCA_SEED",
        "auto",
        "Seed of the software HCA's packet drop decisions, for reproducible lossy\nruns; 'auto' picks a random one.",
        Kind::Ulunits,
    ),
    value(
        "SOFT_HCA_WIRE",
        "auto",
        "How the software HCA carries its RoCEv2 datagrams: 'auto' through shared\nmemory to devices on this host (same network namespace) and UDP to the\nothers, 'udp' always over UDP.",
        Kind::Enum(SOFT_HCA_WIRE_NAMES),
    ),
    value(
        "SOFT_HCA_GSO",
        "y",
        "Send runs of equal-sized datagrams to one peer as one UDP GSO message, and\nreceive coalesced (GRO) messages, where the kernel has them. A capture on\nthe interface then shows the unsegmented messages.",
        Kind::Bool,
    ),
];

pub static SOFT_HCA_CONFIG: ConfigTable = ConfigTable {
    name: "Soft HCA",
    prefix: "",
    fields: SOFT_HCA_FIELDS,
};

/// Whether to use the software HCA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SoftHcaMode {
    /// Where no usable mlx5 device exists.
    Auto,
    Yes,
    No,
}

/// How soft devices carry datagrams (`UCX_SOFT_HCA_WIRE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SoftHcaWire {
    /// Shared memory to devices on this host, UDP to the others.
    Auto,
    /// UDP only.
    Udp,
}

/// `UCX_SOFT_HCA*`.
#[derive(Debug, Clone, PartialEq)]
pub struct SoftHcaConfig {
    pub wire: SoftHcaWire,
    /// UDP GSO on send and GRO on receive (`UCX_SOFT_HCA_GSO`).
    pub udp_offload: bool,
    pub mode: SoftHcaMode,
    pub devices: Vec<SoftDeviceSpec>,
    /// Fraction of packets dropped, 0..=1.
    pub loss: f64,
    /// Seed of the drop decisions; `None` (`auto`) means random.
    pub seed: Option<u64>,
}

impl SoftHcaConfig {
    pub fn from_config(config: &Config) -> Result<SoftHcaConfig, Status> {
        let r = Reader(config);
        let mode = match r.enum_index("SOFT_HCA")? {
            1 => SoftHcaMode::Yes,
            2 => SoftHcaMode::No,
            _ => SoftHcaMode::Auto,
        };
        let devices = match config.value("SOFT_HCA_DEVICES")? {
            Value::Devices(devices) => devices.clone(),
            _ => return r.mismatch("SOFT_HCA_DEVICES"),
        };
        Ok(SoftHcaConfig {
            udp_offload: r.boolean("SOFT_HCA_GSO")?,
            wire: match r.enum_index("SOFT_HCA_WIRE")? {
                1 => SoftHcaWire::Udp,
                _ => SoftHcaWire::Auto,
            },
            mode,
            devices,
            loss: r.double("SOFT_HCA_LOSS")?,
            seed: match r.ulunits("SOFT_HCA_SEED")? {
                Ulunits::Value(seed) => Some(seed),
                Ulunits::Auto | Ulunits::Inf => None,
            },
        })
    }
}

/// `UCX_SOFT_HCA`, `UCX_SOFT_HCA_DEVICES`, `UCX_SOFT_HCA_LOSS` from `env`.
pub fn soft_hca_config_from(env: &dyn Env) -> Result<SoftHcaConfig, Status> {
    let config = Config::read(&SOFT_HCA_CONFIG, None, env)?;
    SoftHcaConfig::from_config(&config)
}

/// The soft HCA settings of this process.
pub fn soft_hca_config() -> Result<SoftHcaConfig, Status> {
    soft_hca_config_from(&ProcessEnv)
}

/// The soft HCA devices of this process (`UCX_SOFT_HCA_DEVICES`); a bad list
/// is `InvalidParam` with an error line naming the bad entry.
pub fn soft_hca_devices() -> Result<Vec<SoftDeviceSpec>, Status> {
    Ok(soft_hca_config()?.devices)
}
