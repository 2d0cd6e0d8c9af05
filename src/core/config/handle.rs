//! Configurations handed to C as opaque handles (`uct_md_config_t *`,
//! `uct_iface_config_t *`).
//!
//! Each live configuration is boxed in a registry keyed by its address, and
//! the handle is that address. A handle from C is only ever used as a key:
//! a NULL, stale or foreign pointer is simply not found (`InvalidParam`),
//! never dereferenced.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use super::table::{Config, ConfigTable};
use crate::abi::ucs_status::Status;

static LIVE: Mutex<Option<HashMap<usize, Box<Config>>>> = Mutex::new(None);

fn live() -> MutexGuard<'static, Option<HashMap<usize, Box<Config>>>> {
    // A panic while holding the lock cannot leave a half-updated map (every
    // update is a single insert/remove), so a poisoned lock is still usable.
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Registers `config` and returns its handle.
pub fn into_handle(config: Config) -> *mut core::ffi::c_void {
    let boxed = Box::new(config);
    let address = &*boxed as *const Config as usize;
    live()
        .get_or_insert_with(HashMap::new)
        .insert(address, boxed);
    address as *mut core::ffi::c_void
}

/// Runs `f` on the configuration behind `handle` (the registry stays locked
/// meanwhile, so a concurrent release waits).
pub fn with_config<R>(
    handle: *const core::ffi::c_void,
    f: impl FnOnce(&mut Config) -> R,
) -> Result<R, Status> {
    let mut guard = live();
    match guard
        .as_mut()
        .and_then(|map| map.get_mut(&(handle as usize)))
    {
        Some(config) => Ok(f(config)),
        None => {
            tracing::warn!("{handle:p} is not a configuration returned by uct_md_config_read or uct_md_iface_config_read");
            Err(Status::InvalidParam)
        }
    }
}

/// Forgets and frees the configuration behind `handle`.
pub fn release(handle: *const core::ffi::c_void) -> Result<(), Status> {
    let removed = live()
        .as_mut()
        .and_then(|map| map.remove(&(handle as usize)));
    match removed {
        Some(_) => Ok(()),
        None => {
            tracing::warn!("uct_config_release: {handle:p} is not a live configuration");
            Err(Status::InvalidParam)
        }
    }
}

fn check_table(config: &Config, expected: &'static ConfigTable) -> Result<(), Status> {
    if config.table().name == expected.name {
        Ok(())
    } else {
        tracing::warn!(
            "configuration handle holds {} settings, {} expected",
            config.table().name,
            expected.name
        );
        Err(Status::InvalidParam)
    }
}

/// The typed settings `build` makes of the configuration behind `handle`,
/// which must be one of `table` (a configuration of another table is
/// `InvalidParam` with a log line).
pub fn typed_from_handle<T>(
    handle: *const core::ffi::c_void,
    table: &'static ConfigTable,
    build: impl FnOnce(&Config) -> Result<T, Status>,
) -> Result<T, Status> {
    with_config(handle, |config| {
        check_table(config, table)?;
        build(config)
    })?
}
