//! The process-wide table of soft devices: each name is opened at most once
//! and shared by every memory domain and iface of the process, so a fault
//! set on a device reaches all of its QPs. Fault settings made while a
//! device is closed are kept and applied when it opens.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use super::device::Opened;
use crate::abi::ucs_status::Status;
use crate::hca::config::{SoftHcaMode, SoftHcaWire};

/// Faults of one device name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Faults {
    pub link_up: bool,
    pub loss: f64,
}

#[derive(Debug)]
struct Entry {
    ipv4: Ipv4Addr,
    faults: Faults,
    /// `drop_next` asked for while the device was closed.
    pending_drops: u64,
    open: Weak<Opened>,
}

#[derive(Debug)]
struct Registry {
    entries: HashMap<String, Entry>,
    /// `UCX_SOFT_HCA_LOSS`, for devices added by `open_at`.
    initial_loss: f64,
    /// Number of devices opened so far, mixed into each device's loss seed
    /// so that two devices do not drop the same packet pattern.
    opened: u64,
}

fn registry() -> MutexGuard<'static, Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    let lock = REGISTRY.get_or_init(|| {
        // A bad configuration was already reported by the config module;
        // the process then has no configured device (tests may still add
        // some with `open_at`).
        let (devices, loss) = match crate::hca::config::soft_hca_config() {
            // `UCX_SOFT_HCA=no`: no configured soft device in this process.
            Ok(config) if config.mode == SoftHcaMode::No => (Vec::new(), config.loss),
            Ok(config) => (config.devices, config.loss),
            Err(_) => (Vec::new(), 0.0),
        };
        let entries = devices
            .into_iter()
            .map(|d| {
                let faults = Faults {
                    link_up: true,
                    loss,
                };
                (
                    d.name,
                    Entry {
                        ipv4: d.ipv4,
                        faults,
                        pending_drops: 0,
                        open: Weak::new(),
                    },
                )
            })
            .collect();
        Mutex::new(Registry {
            entries,
            initial_loss: loss,
            opened: 0,
        })
    });
    // A panic while holding this lock cannot leave the table inconsistent
    // (every update is a single insert/assign), so poisoning is ignored.
    lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn loss_seed(opened: u64) -> u64 {
    // Read at each open (not once with the device table) so that a test
    // may set `UCX_SOFT_HCA_SEED` after the first device of the process
    // opened. A bad value was reported by the config module.
    let configured = crate::hca::config::soft_hca_config()
        .ok()
        .and_then(|config| config.seed);
    let base = configured.unwrap_or_else(random_seed);
    base ^ opened.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// `UCX_SOFT_HCA_WIRE`, read at each open like the seed (a bad value was
/// reported by the config module; the default then applies).
fn wire() -> SoftHcaWire {
    crate::hca::config::soft_hca_config().map_or(SoftHcaWire::Auto, |config| config.wire)
}

/// `UCX_SOFT_HCA_GSO`, read at each open.
fn udp_offload() -> bool {
    crate::hca::config::soft_hca_config().map_or(true, |config| config.udp_offload)
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// Names of the devices this process can open.
pub fn names() -> Vec<String> {
    let mut names: Vec<String> = registry().entries.keys().cloned().collect();
    names.sort();
    names
}

/// Opens `name` (or shares it if open). `ipv4` adds or re-addresses a device
/// that is not configured (tests use it to get two devices on two loopback
/// addresses in one process); `None` needs a configured name.
pub(crate) fn open(name: &str, ipv4: Option<Ipv4Addr>) -> Result<Arc<Opened>, Status> {
    let mut reg = registry();
    let opened_count = reg.opened;
    let initial_loss = reg.initial_loss;
    if let Some(ip) = ipv4 {
        let entry = reg
            .entries
            .entry(name.to_string())
            .or_insert_with(|| Entry {
                ipv4: ip,
                faults: Faults {
                    link_up: true,
                    loss: initial_loss,
                },
                pending_drops: 0,
                open: Weak::new(),
            });
        if entry.open.strong_count() == 0 {
            entry.ipv4 = ip;
        } else if entry.ipv4 != ip {
            tracing::warn!("soft hca {name}: already open on {}, not {ip}", entry.ipv4);
            return Err(Status::Busy);
        }
    }
    let entry = reg.entries.get_mut(name).ok_or_else(|| {
        tracing::warn!("soft hca: no device named '{name}'");
        Status::NoDevice
    })?;
    if let Some(device) = entry.open.upgrade() {
        return Ok(device);
    }
    let device = Opened::start(
        name,
        entry.ipv4,
        entry.faults,
        loss_seed(opened_count),
        wire(),
        udp_offload(),
    )?;
    device
        .core
        .link
        .drop_next(std::mem::take(&mut entry.pending_drops));
    entry.open = Arc::downgrade(&device);
    reg.opened += 1;
    Ok(device)
}

/// Drops the next `count` datagrams device `name` sends: now if it is
/// open, else from when it opens.
pub fn drop_next(name: &str, count: u64) -> Result<(), Status> {
    let mut reg = registry();
    let entry = reg.entries.get_mut(name).ok_or(Status::NoDevice)?;
    match entry.open.upgrade() {
        Some(device) => device.core.link.drop_next(count),
        None => entry.pending_drops = count,
    }
    Ok(())
}

/// Changes the faults of `name`: applied now if it is open, and kept for
/// later opens.
pub fn set_faults(name: &str, change: impl FnOnce(&mut Faults)) -> Result<(), Status> {
    let mut reg = registry();
    let entry = reg.entries.get_mut(name).ok_or(Status::NoDevice)?;
    change(&mut entry.faults);
    if let Some(device) = entry.open.upgrade() {
        device.apply_faults(entry.faults);
    }
    Ok(())
}
