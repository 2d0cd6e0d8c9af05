//! The connection manager's configuration table (`UCX_RDMA_CM_*`, the
//! prefix of UCX's RDMA connection manager whose name the component takes).
//! `TIMEOUT` bounds each wait for the peer during the handshake, and how
//! long a server holds a request its user does not answer; UCX's
//! `RESERVED_QPN`/`SOURCE_ADDRESS` concern rdma_cm itself and are not here.

use std::time::Duration;

use crate::abi::ucs_status::Status;
use crate::core::config::handle::typed_from_handle;
use crate::core::config::table::{value, Config, ConfigTable};
use crate::core::config::value::{Kind, Value};
use crate::core::config::ProcessEnv;

pub static CM_CONFIG: ConfigTable = ConfigTable {
    name: "Connection manager",
    prefix: "RDMA_CM_",
    fields: &[value(
        "TIMEOUT",
        "10s",
        "Longest wait for the peer at each step of a connection's handshake \
         (the TCP connect, the server's answer, the client's request and its \
         notify); when it passes, the connection fails with UCS_ERR_UNREACHABLE. \
         Also how long a server holds a connection request that is neither \
         accepted nor rejected before it releases it.",
        Kind::Time,
    )],
};

/// The settings a connection manager applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmSettings {
    /// How long each handshake step may wait for the peer.
    pub handshake_timeout: Duration,
}

impl CmSettings {
    pub fn from_config(config: &Config) -> Result<CmSettings, Status> {
        let handshake_timeout = match config.value("TIMEOUT")? {
            Value::Time(seconds) => Duration::try_from_secs_f64(*seconds).map_err(|_| {
                tracing::error!("UCX_RDMA_CM_TIMEOUT: {seconds} s is not a time to wait");
                Status::InvalidParam
            })?,
            _ => {
                tracing::error!("UCX_RDMA_CM_TIMEOUT: not a time value");
                return Err(Status::InvalidParam);
            }
        };
        Ok(CmSettings { handshake_timeout })
    }

    /// The settings behind a `uct_cm_config_t` handle, or the defaults (and
    /// the process environment) for a NULL one.
    pub fn from_handle(handle: *const core::ffi::c_void) -> Result<CmSettings, Status> {
        if handle.is_null() {
            return CmSettings::from_config(&read_cm_config(None)?);
        }
        typed_from_handle(handle, &CM_CONFIG, CmSettings::from_config)
    }
}

/// The connection manager configuration from the process environment.
pub fn read_cm_config(app_prefix: Option<&str>) -> Result<Config, Status> {
    Config::read(&CM_CONFIG, app_prefix, &ProcessEnv)
}
