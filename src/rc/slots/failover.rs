//! The failover entry points of rc_mlx5 (internal ops behind
//! `uct_ep_query`, `uct_ep_invalidate` and `uct_ep_failover_enable`): the
//! handle taken over once, then [`crate::rc::failover`]. (The purge and
//! `uct_iface_query_v2` are called there directly: a purge runs user
//! callbacks, so it holds no reference to the ep across them.)

use std::ffi::c_uint;

use super::args::{slot, EpArg};
use crate::abi::*;
use crate::rc::failover;

slot! {
    internal fn ep_query(ep: uct_ep_h, attr: *mut uct_ep_attr_t) -> Result<(), Status>;
    take ep: EpArg = (ep);
    {
        let (ep, iface) = ep.ep_and_iface("uct_ep_query")?;
        // SAFETY: attr as the entry point checked it (the op's contract).
        unsafe { failover::ep_query(ep, iface, attr) }
    }
}

slot! {
    internal fn ep_invalidate(ep: uct_ep_h, flags: c_uint) -> Result<(), Status>;
    take ep: EpArg = (ep);
    { failover::ep_invalidate(ep.ep("uct_ep_invalidate")?, flags) }
}

slot! {
    internal fn ep_failover_enable(ep: uct_ep_h) -> Result<(), Status>;
    take ep: EpArg = (ep);
    {
        ep.ep("uct_ep_failover_enable")?.failover.enable();
        Ok(())
    }
}
