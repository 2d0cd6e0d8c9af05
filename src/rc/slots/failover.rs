//! The failover entry points of rc_mlx5 (internal ops behind
//! `uct_iface_query_v2`, `uct_ep_query`, `uct_ep_invalidate`,
//! `uct_ep_failover_enable` and `uct_ep_outstanding_purge`): the handle and
//! attributes taken over once, then [`crate::rc::failover`].

use std::ffi::c_uint;

use super::args::{slot, EpArg, EpAttr, IfaceArg, IfaceAttrV2};
use crate::abi::*;
use crate::core::iface::PurgeRequest;
use crate::failover::{ConnectionId, ResponderLookup};
use crate::rc::failover;

slot! {
    /// The generic fields, then the tokens.
    internal fn iface_query_v2(iface: uct_iface_h, attr: *mut uct_iface_attr_v2_t)
        -> Result<(), Status>;
    take iface: IfaceArg = (iface), attr: IfaceAttrV2 = (attr);
    {
        let rc = iface.get("uct_iface_query_v2")?;
        let tokens = rc.advertises_query_token();
        let mut lookup = |claimed: &ConnectionId| failover::responder_state(rc, claimed);
        let responder: Option<ResponderLookup<'_>> = if tokens { Some(&mut lookup) } else { None };
        attr.fill(responder)
    }
}

slot! {
    /// Only the TX token: sockaddrs do not exist for rc.
    internal fn ep_query(ep: uct_ep_h, attr: *mut uct_ep_attr_t) -> Result<(), Status>;
    take ep: EpArg = (ep), attr: EpAttr = (attr);
    {
        const F: &str = "uct_ep_query";
        let ep = ep.ep(F)?;
        let sockaddrs = UCT_EP_ATTR_FIELD_LOCAL_SOCKADDR | UCT_EP_ATTR_FIELD_REMOTE_SOCKADDR;
        if attr.field_mask() & sockaddrs != 0 {
            tracing::debug!("{F}: rc_mlx5 eps have no socket addresses");
            return Err(Status::Unsupported);
        }
        attr.fill_tx_token(failover::requester_connection(ep).as_ref())
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

slot! {
    /// The request was checked by the entry point. The caller's callbacks
    /// run from here: no reference to the ep is held across them.
    internal fn ep_outstanding_purge(ep: uct_ep_h, request: PurgeRequest<'_>)
        -> Result<(), Status>;
    take ep: EpArg = (ep);
    { ep.purge("uct_ep_outstanding_purge", request) }
}
