//! How the soft HCA is set up: a plain struct the layer that owns the
//! `UCX_SOFT_HCA_*` configuration (uct's `hca`) reads and hands in to every
//! call that opens a device or names one; nothing here reads the
//! environment.

use std::net::Ipv4Addr;

/// How soft devices carry datagrams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wire {
    /// Shared memory to devices on this host, UDP to the others.
    #[default]
    Auto,
    /// UDP only.
    Udp,
}

/// A configured device: its name and the IPv4 address its port binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSpec {
    pub name: String,
    pub ipv4: Ipv4Addr,
}

/// Everything the soft HCA is told from above.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The devices of the process (the first call that names or opens a
    /// device fixes the table; later calls may add devices by address).
    pub devices: Vec<DeviceSpec>,
    /// Fraction of datagrams each new device drops, 0..=1.
    pub loss: f64,
    /// Seed of the drop decisions; `None`: random per process.
    pub seed: Option<u64>,
    pub wire: Wire,
    /// UDP GSO on send and GRO on receive, where the kernel has them.
    pub udp_offload: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            devices: Vec::new(),
            loss: 0.0,
            seed: None,
            wire: Wire::Auto,
            udp_offload: true,
        }
    }
}
