//! What every layer uses: the worker and its progress queue, the async
//! context, the component / memory-domain registry and the device list
//! (configuration and logging live here too).

pub mod async_context;
pub mod callbackq;
pub mod component;
pub mod config;
pub mod devices;
pub mod iface;
pub mod log;
pub mod md;
pub mod ops;
pub mod tombstone;
pub mod ucx_libucs;
pub mod worker;
