//! `#[repr(C)]` mirrors of UCX's public UCS/UCT types and constants (UCX
//! master, plus the failover additions), one file per UCX header. No logic
//! beyond the `Status` conversions. Everything is re-exported here, so users
//! write `crate::abi::uct_iface_attr_t`.
//!
//! The C headers under `include/` are generated from these files
//! (`cargo run -p headergen`); the file → header map lives in
//! `tools/headergen`. `uct/api/uct.h` maps to `uct_api.rs`: a module named
//! `uct` would clash with the crate's name in `use uct::abi::*`.
#![allow(non_camel_case_types)]

pub mod ucs_async;
pub mod ucs_callbackq;
pub mod ucs_config;
pub mod ucs_cpu_set;
pub mod ucs_linear_func;
pub mod ucs_memory_type;
pub mod ucs_stats;
pub mod ucs_status;
pub mod ucs_thread_mode;
pub mod ucs_time;
pub mod ucs_topo;
pub mod uct_api;
pub mod uct_def;
pub mod uct_tl;
pub mod uct_v2;

pub use ucs_async::*;
pub use ucs_callbackq::*;
pub use ucs_config::*;
pub use ucs_cpu_set::*;
pub use ucs_linear_func::*;
pub use ucs_memory_type::*;
pub use ucs_stats::*;
pub use ucs_status::*;
pub use ucs_thread_mode::*;
pub use ucs_time::*;
pub use ucs_topo::*;
pub use uct_api::*;
pub use uct_def::*;
pub use uct_tl::*;
pub use uct_v2::*;
