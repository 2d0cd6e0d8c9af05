//! `UCX_*` configuration the UCX way: UCX's variable names, nesting and
//! prefixes, UCX's value syntax, `uct_config_*` semantics.
//!
//! * [`value`]: value types (time, memory units, ternary, …), parse and print.
//! * [`table`]: the table model: defaults, environment, modify/get, print.
//! * [`tables`]: our tables (IB md, `rc_mlx5` iface, soft HCA, logging).
//! * [`typed`]: typed structs the rest of the library reads.
//! * [`handle`]: configurations behind C handles.
//! * [`file`]: UCX's `ucx.conf` configuration files.

pub mod env;
pub mod file;
pub mod handle;
pub mod table;
pub mod tables;
pub mod typed;
pub mod unused;
pub mod value;

pub use env::{Env, MapEnv, ProcessEnv};
pub use handle::{iface_config_from_handle, md_config_from_handle};
pub use table::{Config, ConfigTable};
pub use typed::{IbMdConfig, RcMlx5IfaceConfig, SoftHcaConfig, SoftHcaMode, SoftHcaWire};
pub use unused::warn_misspelled_env_vars_once;
pub use value::{MemUnits, SoftDeviceSpec, Ternary, TimeUnits, Ulunits};

use crate::abi::ucs_status::Status;

/// Transport names this library has an interface configuration for.
pub const RC_MLX5_TL_NAME: &str = "rc_mlx5";

/// The `ib` MD configuration from the process environment.
pub fn read_md_config(app_prefix: Option<&str>) -> Result<Config, Status> {
    let config = Config::read(&tables::IB_MD_CONFIG, app_prefix, &ProcessEnv)?;
    warn_misspelled_env_vars_once(&ProcessEnv);
    Ok(config)
}

/// The connection manager configuration from the process environment.
pub fn read_cm_config(app_prefix: Option<&str>) -> Result<Config, Status> {
    Config::read(&tables::CM_CONFIG, app_prefix, &ProcessEnv)
}

/// The interface configuration of transport `tl_name` from the process
/// environment; `NoDevice` for a transport we do not have (as UCX).
pub fn read_iface_config(tl_name: &str, app_prefix: Option<&str>) -> Result<Config, Status> {
    if tl_name != RC_MLX5_TL_NAME {
        tracing::error!("Transport '{tl_name}' does not exist");
        return Err(Status::NoDevice);
    }
    let config = Config::read(&tables::RC_MLX5_IFACE_CONFIG, app_prefix, &ProcessEnv)?;
    warn_misspelled_env_vars_once(&ProcessEnv);
    Ok(config)
}

/// `UCX_SOFT_HCA`, `UCX_SOFT_HCA_DEVICES`, `UCX_SOFT_HCA_LOSS` from `env`.
pub fn soft_hca_config_from(env: &dyn Env) -> Result<SoftHcaConfig, Status> {
    let config = Config::read(&tables::SOFT_HCA_CONFIG, None, env)?;
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
