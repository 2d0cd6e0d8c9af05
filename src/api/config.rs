//! `uct_md_config_read`, `uct_md_iface_config_read`, `uct_config_release`,
//! `uct_config_get`, `uct_config_modify`, `uct_config_print`.
//!
//! Semantics are UCX's (see `core::config::table` for the name rules). The
//! configuration handles are keys into `core::config::handle`'s registry, so
//! a stale or foreign handle is rejected with `UCS_ERR_INVALID_PARAM`
//! instead of being dereferenced.

use core::ffi::{c_char, c_void};

use super::checks::{finish, non_null, status_entry_point};
pub use super::config_tables::ALL_TABLES;
use crate::abi::*;
use crate::core::c_boundary::{c_entry, CSliceMut, CStrArg, Out};
use crate::core::config::{handle, warn_misspelled_env_vars_once, Config, ProcessEnv};
use crate::ib::component::Component;

/// The `ib` MD configuration from the process environment, after warning
/// (once) about `UCX_*` variables that look like a misspelling of ours.
pub(crate) fn read_md_config(app_prefix: Option<&str>) -> Result<Config, Status> {
    let config = crate::ib::config::read_md_config(app_prefix)?;
    warn_misspelled_env_vars_once(&ProcessEnv, &ALL_TABLES);
    Ok(config)
}

/// The interface configuration of transport `tl_name` from the process
/// environment, after the same warning; `NoDevice` for a transport we do
/// not have (as UCX).
pub(crate) fn read_iface_config(tl_name: &str, app_prefix: Option<&str>) -> Result<Config, Status> {
    let config = crate::rc::config::read_iface_config(tl_name, app_prefix)?;
    warn_misspelled_env_vars_once(&ProcessEnv, &ALL_TABLES);
    Ok(config)
}

/// Registers `config` and stores its handle in `config_p`.
fn hand_out<T>(config: Config, config_p: &Out<*mut T>, function: &str) -> Result<(), Status> {
    let handle = handle::into_handle(config);
    config_p.write(function, "config_p", handle.cast())
}

c_entry! {
    no_log_setup
    /// Reads the memory domain configuration of `component` from `ucx.conf`
    /// files and the environment (`UCX_IB_*`, and `<env_prefix>_UCX_IB_*`
    /// overriding them). `filename` is ignored, as in UCX.
    fn uct_md_config_read(
        component: uct_component_h,
        env_prefix: *const c_char,
        _filename: *const c_char,
        config_p: *mut *mut uct_md_config_t,
    ) -> ucs_status_t;
    take env_prefix: CStrArg = (env_prefix), config_p: Out<*mut uct_md_config_t> = (config_p);
    {
        status_entry_point!(FUNCTION = "uct_md_config_read", {
            config_p.check(FUNCTION, "config_p")?;
            if Component::from_handle(component).is_none() {
                tracing::warn!("{FUNCTION}: {component:p} is not a component of this library");
                return Err(Status::InvalidParam);
            }
            let env_prefix = env_prefix.opt(FUNCTION, "env_prefix")?;
            let config = read_md_config(env_prefix).inspect_err(|_| {
                tracing::error!("Failed to read MD config");
            })?;
            crate::api::ucx_env::mark_our_env_vars_used();
            hand_out(config, &config_p, FUNCTION)
        })
    }
}

c_entry! {
    no_log_setup
    /// Reads the interface configuration of transport `tl_name` (only
    /// `rc_mlx5`) from `ucx.conf` files and the environment
    /// (`UCX_RC_MLX5_*` over `UCX_RC_*` over `UCX_IB_*` over `UCX_*`).
    /// Unknown or NULL `tl_name` is `UCS_ERR_NO_DEVICE`, as in UCX.
    fn uct_md_iface_config_read(
        md: uct_md_h,
        tl_name: *const c_char,
        env_prefix: *const c_char,
        _filename: *const c_char,
        config_p: *mut *mut uct_iface_config_t,
    ) -> ucs_status_t;
    take tl_name: CStrArg = (tl_name),
        env_prefix: CStrArg = (env_prefix),
        config_p: Out<*mut uct_iface_config_t> = (config_p);
    {
        status_entry_point!(FUNCTION = "uct_md_iface_config_read", {
            non_null(md, FUNCTION, "md")?;
            config_p.check(FUNCTION, "config_p")?;
            if tl_name.is_null() {
                tracing::error!("There is no sockaddr transport registered on the md");
                return Err(Status::NoDevice);
            }
            let tl_name = tl_name.get(FUNCTION, "tl_name")?;
            let env_prefix = env_prefix.opt(FUNCTION, "env_prefix")?;
            let config = read_iface_config(tl_name, env_prefix).inspect_err(|status| {
                if *status != Status::NoDevice {
                    tracing::error!("Failed to read iface config");
                }
            })?;
            crate::api::ucx_env::mark_our_env_vars_used();
            hand_out(config, &config_p, FUNCTION)
        })
    }
}

/// Frees a configuration from `uct_md_config_read`/`uct_md_iface_config_read`.
/// NULL or an unknown pointer is logged and ignored.
///
/// # Safety
/// Any pointer value is accepted; it is only compared, never dereferenced.
#[no_mangle]
pub unsafe extern "C" fn uct_config_release(config: *mut c_void) {
    crate::core::log::init();
    if config.is_null() {
        tracing::warn!("uct_config_release: config is NULL");
        return;
    }
    let _ = handle::release(config);
}

c_entry! {
    no_log_setup
    /// Copies the printed value of `name` into `value` (at most `max` bytes,
    /// always NUL-terminated when `max > 0`). `name` is UCX's path through
    /// the nested tables (`RC_RC_IB_TX_QUEUE_LEN`) or a name
    /// `uct_config_modify` accepts (`RC_TIMEOUT`). `value` may be NULL when
    /// `max` is 0 (existence check). Unknown name: `UCS_ERR_NO_ELEM`.
    fn uct_config_get(
        config: *mut c_void,
        name: *const c_char,
        value: *mut c_char,
        max: usize,
    ) -> ucs_status_t;
    take name: CStrArg = (name), buffer: CSliceMut<c_char> = (value, max);
    {
        status_entry_point!(FUNCTION = "uct_config_get", {
            non_null(config, FUNCTION, "config")?;
            let name = name.get(FUNCTION, "name")?;
            if buffer.is_null() && max > 0 {
                tracing::warn!("{FUNCTION}: value is NULL but max is {max}");
                return Err(Status::InvalidParam);
            }
            let text = handle::with_config(config, |config| config.get(name))??;
            buffer.write_c_string(text.as_bytes());
            Ok(())
        })
    }
}

c_entry! {
    no_log_setup
    /// Sets every field whose name matches the glob `name` (without `UCX_`,
    /// with a table prefix: `RC_TIMEOUT`, `RC_MLX5_TIMEOUT`,
    /// `IB_TX_QUEUE_LEN`, `*TIMEOUT`). Unknown name: `UCS_ERR_NO_ELEM`; bad
    /// value: `UCS_ERR_INVALID_PARAM`, the old value kept.
    fn uct_config_modify(
        config: *mut c_void,
        name: *const c_char,
        value: *const c_char,
    ) -> ucs_status_t;
    take name: CStrArg = (name), value: CStrArg = (value);
    {
        status_entry_point!(FUNCTION = "uct_config_modify", {
            non_null(config, FUNCTION, "config")?;
            let name = name.get(FUNCTION, "name")?;
            let value = value.get(FUNCTION, "value")?;
            handle::with_config(config, |config| config.modify(name, value))?
        })
    }
}

c_entry! {
    /// Prints the configuration to `stream` (NULL or an open `FILE *`) in
    /// UCX's layout (`print_flags`: `UCS_CONFIG_PRINT_*`). UCX removed this
    /// call from its API in 1.4; it is kept for programs built against older
    /// headers.
    fn uct_config_print(
        config: *const c_void,
        stream: *mut libc::FILE,
        title: *const c_char,
        print_flags: ucs_config_print_flags_t,
    );
    take title: CStrArg = (title);
    {
    const FUNCTION: &str = "uct_config_print";
    let result = (|| {
        non_null(config, FUNCTION, "config")?;
        non_null(stream, FUNCTION, "stream")?;
        let title = title.opt(FUNCTION, "title")?.unwrap_or("");
        let text = handle::with_config(config, |config| {
            config.print(title, print_flags, &ProcessEnv)
        })?;
        // SAFETY: stream is a non-NULL open FILE* (caller's contract) and
        // `text` is valid for `text.len()` bytes.
        let written = unsafe { libc::fwrite(text.as_ptr().cast(), 1, text.len(), stream) };
        if written != text.len() {
            tracing::warn!("{FUNCTION}: short write to stream");
        }
        Ok(())
    })();
    let _ = finish(FUNCTION, result);
    }
}
