//! The list of every configuration table of this library, each kept by its
//! owner (rc_mlx5, ib md, connection manager, soft HCA, logging): read by
//! `config` (misspelling warnings) and `ucx_env` (telling UCX's libucs
//! which `UCX_*` variables are ours).

use crate::cm::config::CM_CONFIG;
use crate::core::config::ConfigTable;
use crate::core::log::LOG_CONFIG;
use crate::hca::config::SOFT_HCA_CONFIG;
use crate::ib::config::IB_MD_CONFIG;
use crate::rc::config::RC_MLX5_IFACE_CONFIG;

/// Every configuration table of this library, for checks over all known
/// variable names.
pub static ALL_TABLES: [&ConfigTable; 5] = [
    &IB_MD_CONFIG,
    &CM_CONFIG,
    &RC_MLX5_IFACE_CONFIG,
    &SOFT_HCA_CONFIG,
    &LOG_CONFIG,
];
