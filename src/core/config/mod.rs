//! `UCX_*` configuration the UCX way: the machinery. UCX's variable names,
//! nesting and prefixes, UCX's value syntax, `uct_config_*` semantics. The
//! tables themselves live with their owners: `crate::core::uct_config` (UCX's
//! uct/base tables), `crate::core::log` (the UCS log settings),
//! `crate::hca::config` (the soft HCA), `crate::ib::config` (the ib md and
//! the IB/mlx5 interface tables), `crate::rc::config` (rc_mlx5).
//!
//! * [`value`]: value types (time, memory units, ternary, …), parse and print.
//! * [`table`]: the table model: defaults, environment, modify/get, print.
//! * [`typed`]: typed reads of a filled table, for the owners' settings structs.
//! * [`handle`]: configurations behind C handles.
//! * [`file`]: UCX's `ucx.conf` configuration files.
//! * [`unused`]: warnings for misspelled `UCX_*` variables.

pub mod env;
pub mod file;
pub mod handle;
pub mod table;
pub mod typed;
pub mod unused;
pub mod value;

pub use env::{Env, MapEnv, ProcessEnv};
pub use table::{Config, ConfigTable};
pub use unused::warn_misspelled_env_vars_once;
pub use value::{MemUnits, SoftDeviceSpec, Ternary, TimeUnits, Ulunits};
