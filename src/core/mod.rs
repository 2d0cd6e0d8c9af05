//! What every layer uses: the worker and its progress queue, the async
//! context, the generic iface and ep headers, configuration and logging.
//! `core` imports nothing above it (only `abi`); the component, memory
//! domains and devices are `ib`'s and `hca`'s.

pub mod async_context;
pub mod c_boundary;
pub mod callbackq;
pub mod config;
pub mod data_trace;
pub mod destroyed_ep;
pub(crate) mod epoll;
pub(crate) mod host_memory;
pub mod id_map;
pub mod iface;
pub mod log;
pub(crate) mod open_iface;
pub mod ops;
pub mod tombstone;
pub mod uct_config;
pub mod ucx_libucs;
pub mod worker;
