//! UCX's `uct/ib/base`: the `ib` component ([`component`]), its memory
//! domains ([`md`]: one per HCA device, what each can do, its transport
//! resource), the device and protection domain they share with the ifaces
//! and the memory handles registered through them ([`domain`]), and remote
//! keys ([`rkey`]).
//!
//! Layering: `ib` sits on `hca` and `core` and under `rc` and `api`. The
//! device list itself is [`crate::hca::devices`] rather than a module here
//! (DESIGN.md §6 puts it in `ib`): the hca opens a device by its listed
//! name with the backend that listed it, and the hca must not import `ib`.

pub mod component;
pub mod config;
pub mod domain;
pub mod md;
pub mod rkey;
