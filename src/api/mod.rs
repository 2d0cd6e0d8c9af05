//! The `extern "C"` entry points, one file per UCX API group. Each validates
//! its arguments, logs one line on bad input and returns a `ucs_status_t`;
//! none of them can panic.

pub mod async_context;
mod c_array;
pub mod callbackq;
pub mod caller_version;
mod checks;
pub mod cm;
pub mod component;
pub mod config;
mod config_tables;
pub mod cstr;
mod dispatch;
pub mod ep;
pub mod event_set;
mod handles;
pub mod iface;
mod iface_attr_v2;
pub mod md;
pub mod mem_alloc;
pub mod memory_type;
pub mod names;
mod perf;
pub mod soft_hca;
pub mod stats;
pub mod status;
mod stub_iface;
pub mod topo;
mod ucx_env;
pub mod unsupported;
pub mod v2;
pub mod worker;

/// Run at the top of the entry points a program calls first, so that logging
/// is set up before anything logs.
pub(crate) fn enter() {
    crate::core::log::init();
}
