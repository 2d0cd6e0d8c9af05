//! The connection manager's configuration table (`UCX_RDMA_CM_*`, the
//! prefix of UCX's RDMA connection manager whose name the component takes).
//! It has no settings: the TCP handshake needs none, and UCX's
//! `RDMA_CM_TIMEOUT`/`RESERVED_QPN`/`SOURCE_ADDRESS` concern rdma_cm itself.

use crate::abi::ucs_status::Status;
use crate::core::config::{Config, ConfigTable, ProcessEnv};

pub static CM_CONFIG: ConfigTable = ConfigTable {
    name: "Connection manager",
    prefix: "RDMA_CM_",
    fields: &[],
};

/// The connection manager configuration from the process environment.
pub fn read_cm_config(app_prefix: Option<&str>) -> Result<Config, Status> {
    Config::read(&CM_CONFIG, app_prefix, &ProcessEnv)
}
