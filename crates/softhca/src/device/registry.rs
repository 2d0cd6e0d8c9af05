//! The process-wide table of soft devices: each name is opened at most once
//! and shared by every memory domain and iface of the process, so a fault
//! set on a device reaches all of its QPs. Fault settings made while a
//! device is closed are kept and applied when it opens.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use super::opened::{Opened, ReceiveMark};
use super::settings::Settings;
use super::Error;
use crate::link::Faults;

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

static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();

/// The table, made from `settings` on first use.
fn registry(settings: &Settings) -> MutexGuard<'static, Registry> {
    let lock = REGISTRY.get_or_init(|| {
        let entries = settings
            .devices
            .iter()
            .map(|d| {
                let faults = Faults {
                    link_up: true,
                    loss: settings.loss,
                };
                (
                    d.name.clone(),
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
            initial_loss: settings.loss,
            opened: 0,
        })
    });
    // A panic while holding this lock cannot leave the table inconsistent
    // (every update is a single insert/assign), so poisoning is ignored.
    lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The seed of the `opened`-th device's drop decisions: the configured one
/// (taken at each open, so that a test may set it after the first device
/// of the process opened) or a random one, mixed with `opened` so that two
/// devices do not drop the same packet pattern.
fn loss_seed(settings: &Settings, opened: u64) -> u64 {
    let base = settings.seed.unwrap_or_else(random_seed);
    base ^ opened.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// Names of the devices this process can open.
pub fn names(settings: &Settings) -> Vec<String> {
    let mut names: Vec<String> = registry(settings).entries.keys().cloned().collect();
    names.sort();
    names
}

/// Opens `name` (or shares it if open). `ipv4` adds or re-addresses a device
/// that is not configured (tests use it to get two devices on two loopback
/// addresses in one process); `None` needs a configured name.
pub(crate) fn open(
    name: &str,
    ipv4: Option<Ipv4Addr>,
    settings: &Settings,
) -> Result<Arc<Opened>, Error> {
    let mut reg = registry(settings);
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
            return Err(Error::Busy);
        }
    }
    let entry = reg.entries.get_mut(name).ok_or_else(|| {
        tracing::warn!("soft hca: no device named '{name}'");
        Error::NoDevice
    })?;
    if let Some(device) = entry.open.upgrade() {
        return Ok(device);
    }
    let device = Opened::start(
        name,
        entry.ipv4,
        entry.faults,
        loss_seed(settings, opened_count),
        settings.wire,
        settings.udp_offload,
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
pub fn drop_next(name: &str, count: u64, settings: &Settings) -> Result<(), Error> {
    let mut reg = registry(settings);
    let entry = reg.entries.get_mut(name).ok_or(Error::NoDevice)?;
    match entry.open.upgrade() {
        Some(device) => device.core.link.drop_next(count),
        None => entry.pending_drops = count,
    }
    Ok(())
}

/// Changes the faults of `name`: applied now if it is open, and kept for
/// later opens.
pub fn set_faults(
    name: &str,
    settings: &Settings,
    change: impl FnOnce(&mut Faults),
) -> Result<(), Error> {
    let mut reg = registry(settings);
    let entry = reg.entries.get_mut(name).ok_or(Error::NoDevice)?;
    change(&mut entry.faults);
    if let Some(device) = entry.open.upgrade() {
        device.apply_faults(entry.faults);
    }
    Ok(())
}

/// [`Core::receive_mark`](super::opened::Core::receive_mark) of every soft
/// device open in this process, as one mark.
pub(crate) fn receive_mark_all() -> ReceiveMark {
    let open: Vec<Arc<Opened>> = match REGISTRY.get() {
        Some(table) => table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entries
            .values()
            .filter_map(|entry| entry.open.upgrade())
            .collect(),
        None => Vec::new(),
    };
    let mut mark = ReceiveMark::default();
    for device in &open {
        mark.add(device.core.receive_mark());
    }
    mark
}
