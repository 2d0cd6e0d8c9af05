//! The control slots: flush, fence, check and pending of eps and ifaces;
//! ep create, address, connect and destroy; iface close, progress and
//! events.

use std::ffi::{c_int, c_uint, c_void};

use super::args::{
    mask_and_iface, null_argument, slot, status_of, CBytes, EpArg, EpParams, IfaceArg, InBytes,
    Out, OutBytes, PeerAddress, PendingPurgeCb,
};
use crate::abi::*;
use crate::failover::PostedOp;
use crate::hca::DeviceAddress;
use crate::mlx5;
use crate::rc::ep::{EpState, PostSpec, RcEp, RemoteEp, EP_ADDR_LEN};

/// Posts the signalled NOP of a flush, carrying `comp` (and `flags`, which
/// purge reports back if the flush is replayed).
fn post_flush_nop(
    ep: &mut RcEp,
    credits: &mut u32,
    flags: c_uint,
    comp: *mut uct_completion_t,
) -> Result<(), Status> {
    let flush = PostedOp::Flush { flags, comp };
    let spec = PostSpec::new(flush, mlx5::MLX5_OPCODE_NOP, 0).signaled();
    ep.ready_own(*credits)?.post(credits, spec, |_| {})
}

/// Makes sure `comp` (with the flush's `flags`) is completed when every op
/// posted on `ep` so far has: attached to the newest op if its WQE is
/// signalled (no send resources needed, as UCX's rc does), else carried by
/// a signalled NOP; with no `comp`, a NOP only when the newest WQE is
/// unsignalled (nothing would report its completion). With
/// `nop_when_idle`, a NOP also when nothing is outstanding.
fn flush_completion(
    ep: &mut RcEp,
    credits: &mut u32,
    flags: c_uint,
    comp: *mut uct_completion_t,
    nop_when_idle: bool,
) -> Result<(), Status> {
    match ep.txwq().last() {
        None if !nop_when_idle => Ok(()),
        Some(last) if last.signaled() && comp.is_null() => Ok(()),
        Some(last) if last.signaled() => ep.txwq_mut().attach_flush(comp, flags),
        _ => post_flush_nop(ep, credits, flags, comp),
    }
}

/// Flushes one ep: `Ok` when nothing is outstanding, `InProgress` after
/// making sure the last op will produce a completion that completes `comp`
/// ([`flush_completion`]). With `nop_when_idle` a NOP is posted even when
/// nothing is outstanding (an invalidated QP: the device flushes it with
/// an error, which fails the ep).
fn flush_ep(
    ep: &mut RcEp,
    credits: &mut u32,
    flags: c_uint,
    comp: *mut uct_completion_t,
    nop_when_idle: bool,
) -> Result<(), Status> {
    if let Some(status) = ep.state().failed_status() {
        return Err(status);
    }
    if ep.txwq().is_empty() && !nop_when_idle {
        return Ok(());
    }
    flush_completion(ep, credits, flags, comp, nop_when_idle)?;
    Err(Status::InProgress)
}

fn ep_flush_checked(ep: EpArg, flags: c_uint, comp: *mut uct_completion_t) -> Result<(), Status> {
    let (ep, iface) = ep.ep_and_iface("uct_ep_flush")?;
    let credits = &mut iface.state.tx_mut().credits;
    if flags & UCT_FLUSH_FLAG_CANCEL != 0 {
        if ep.state().is_connected() {
            if ep.txwq().is_empty() {
                ep.cancel()?;
                return Ok(());
            }
            // `comp` rides on the newest WQE or a NOP first (flushed like
            // the rest), then the QP goes to error.
            flush_completion(ep, credits, flags, comp, false)?;
            ep.cancel()?;
            return Err(Status::InProgress);
        }
        return match ep.state() {
            EpState::Failed(..) if ep.txwq().is_empty() => Ok(()),
            // Held ops fire nothing until purge, so nothing would ever call
            // `comp`: answered at once, as any flush of held ops is.
            EpState::Failed(..) if ep.failover.is_holding() => Err(Status::Canceled),
            // The device is flushing the ops already; the ep's failure is
            // the answer, as a flush without CANCEL gets it.
            EpState::Failed(status, _) => Err(status),
            _ => Ok(()),
        };
    }
    // A failed ep answers its failure, pending requests or not: they can
    // never go out (its error handler purges them), so "try again" would
    // be a promise nothing keeps.
    if let Some(status) = ep.state().failed_status() {
        return Err(status);
    }
    if !ep.pending().is_empty() {
        // After a plain uct_ep_invalidate the pending requests can never go
        // out (no flow-control grant crosses a QP in error), so the flush
        // posts its NOP now: the device flushes it with an error, the ep
        // fails the normal way and the error handler (which may purge the
        // pending requests) runs, as UCX's flush does.
        if ep.state() != EpState::Invalidated {
            return Err(Status::NoResource);
        }
        return flush_ep(ep, credits, flags, comp, true);
    }
    flush_ep(ep, credits, flags, comp, false)
}

slot! {
    fn ep_flush(ep: uct_ep_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t;
    take ep: EpArg = (ep);
    { status_of(ep_flush_checked(ep, flags, comp)) }
}

slot! {
    fn ep_fence(ep: uct_ep_h, _flags: c_uint) -> ucs_status_t;
    take ep: EpArg = (ep);
    { status_of(ep.ep("uct_ep_fence").and_then(|ep| ep.fence())) }
}

/// `uct_ep_check`, as UCX's rc_mlx5 does it: a connected ep posts a probe
/// the peer must acknowledge ([`RcEp::post_probe`]); a dead peer then fails
/// the ep and the iface's error handler hears of it. Nothing is posted
/// when a probe is already due, or when the ring is full (its signalled
/// ops report the peer's state already); without a CQ credit the probe
/// waits for progress. Held ops (design §5) answer `UCS_ERR_CANCELED`; a
/// failed ep its failure; flags and a completion are not supported (as
/// in UCX: `UCS_ERR_INVALID_PARAM`).
fn ep_check_checked(ep: EpArg, flags: c_uint, comp: *mut uct_completion_t) -> Result<(), Status> {
    const F: &str = "uct_ep_check";
    let (ep, iface) = ep.ep_and_iface(F)?;
    if flags != 0 {
        tracing::warn!("{F}: flags 0x{flags:x} are not supported");
        return Err(Status::InvalidParam);
    }
    if !comp.is_null() {
        tracing::warn!("{F}: a completion is not supported");
        return Err(Status::InvalidParam);
    }
    if ep.failover.is_holding() {
        return Err(Status::Canceled);
    }
    match ep.state() {
        EpState::Connected | EpState::Invalidated => {}
        EpState::Failed(status, _) => return Err(status),
        EpState::Idle => return Err(Status::NotConnected),
    }
    if ep.probe_due() {
        return Ok(());
    }
    let credits = &mut iface.state.tx_mut().credits;
    if *credits == 0 {
        ep.defer_probe();
        return Ok(());
    }
    match ep.post_probe(credits) {
        // A full ring: its signalled ops tell the peer's state.
        Ok(()) | Err(Status::NoResource) => Ok(()),
        Err(status) => Err(status),
    }
}

slot! {
    fn ep_check(ep: uct_ep_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t;
    take ep: EpArg = (ep);
    { status_of(ep_check_checked(ep, flags, comp)) }
}

fn ep_pending_add_checked(ep: EpArg, req: *mut uct_pending_req_t) -> Result<(), Status> {
    const F: &str = "uct_ep_pending_add";
    let (ep, iface) = ep.ep_and_iface(F)?;
    if req.is_null() {
        return Err(null_argument(F, "req"));
    }
    let room = ep.check_room(iface.state.tx().credits);
    // Nothing would ever run a request queued on an ep that is not
    // connected: refused as a post is (check_room logged why).
    if room == Err(Status::NotConnected) {
        return Err(Status::NotConnected);
    }
    // Resources available now: the caller should just retry (UCX's rule).
    // An exhausted flow-control window is a missing resource too.
    if ep.pending().is_empty() && room.is_ok() && ep.fc.has_window(iface.state.fc()) {
        return Err(Status::Busy);
    }
    if let Some(status) = ep.state().failed_status() {
        return Err(status);
    }
    // Kept as the caller's pointer: progress hands it back to its callback.
    ep.pending_mut().add(req);
    Ok(())
}

slot! {
    fn ep_pending_add(ep: uct_ep_h, req: *mut uct_pending_req_t, _flags: c_uint) -> ucs_status_t;
    take ep: EpArg = (ep);
    { status_of(ep_pending_add_checked(ep, req)) }
}

slot! {
    fn ep_pending_purge(ep: uct_ep_h, cb: uct_pending_purge_callback_t, arg: *mut c_void);
    take ep: EpArg = (ep), purge: PendingPurgeCb = (cb, arg);
    {
        // The handle is looked at again for each request: the callback may
        // destroy the ep, and no borrow of it is held across the call.
        let next = || ep.ep("uct_ep_pending_purge").ok()?.pending_mut().pop();
        while let Some(req) = next() {
            purge.call(req);
        }
    }
}

/// `uct_iface_flush`, as UCX's rc iface does it: a completion is not
/// supported (`UCS_ERR_UNSUPPORTED`: the caller polls with `comp == NULL`);
/// each ep is flushed without one, and the iface is in progress while any
/// ep is (an ep with pending requests or no room for its flush NOP counts
/// as in progress, not as an error). Failed eps have nothing left to flush.
fn iface_flush_checked(
    iface: IfaceArg,
    flags: c_uint,
    comp: *mut uct_completion_t,
) -> Result<(), Status> {
    const F: &str = "uct_iface_flush";
    let rc = iface.get(F)?;
    if !comp.is_null() {
        tracing::debug!("{F}: a completion is not supported, poll with comp == NULL");
        return Err(Status::Unsupported);
    }
    let mut in_progress = false;
    for ep in rc.state.ep_handles() {
        // SAFETY: eps in the table are live, each in its own allocation
        // apart from the iface state; no callback runs in this walk.
        let ep = unsafe { &mut *ep };
        // A failed ep never runs its pending requests again: nothing of it
        // is in progress (flush_ep below skips it too).
        if !ep.pending().is_empty() && ep.state().failed_status().is_none() {
            in_progress = true;
            continue;
        }
        let credits = &mut rc.state.tx_mut().credits;
        match flush_ep(ep, credits, flags, std::ptr::null_mut(), false) {
            Ok(())
            | Err(
                Status::EndpointTimeout
                | Status::ConnectionReset
                | Status::IoError
                | Status::Canceled,
            ) => {}
            Err(Status::InProgress | Status::NoResource) => in_progress = true,
            Err(status) => return Err(status),
        }
    }
    if in_progress {
        Err(Status::InProgress)
    } else {
        Ok(())
    }
}

slot! {
    fn iface_flush(iface: uct_iface_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t;
    take iface: IfaceArg = (iface);
    { status_of(iface_flush_checked(iface, flags, comp)) }
}

slot! {
    fn iface_fence(iface: uct_iface_h, _flags: c_uint) -> ucs_status_t;
    take iface: IfaceArg = (iface);
    {
        status_of(iface.get("uct_iface_fence").map(|rc| {
            rc.state.for_each_ep(|ep| ep.txwq_mut().fence());
        }))
    }
}

// ---------------------------------------------------------------- ep life

fn ep_create_checked(params: EpParams, ep_p: Out<uct_ep_h>) -> Result<(), Status> {
    const F: &str = "uct_ep_create";
    if params.as_ptr().is_null() || ep_p.is_null() {
        tracing::warn!("{F}: NULL params or ep_p");
        return Err(Status::InvalidParam);
    }
    let (field_mask, iface) = mask_and_iface(&params, F)?;
    if field_mask & UCT_EP_PARAM_FIELD_IFACE == 0 {
        tracing::warn!("{F}: UCT_EP_PARAM_FIELD_IFACE is not set");
        return Err(Status::InvalidParam);
    }
    if field_mask & (UCT_EP_PARAM_FIELD_IFACE_ADDR | UCT_EP_PARAM_FIELD_SOCKADDR) != 0 {
        tracing::warn!("{F}: rc_mlx5 connects ep to ep only (no iface or sockaddr connect)");
        return Err(Status::Unsupported);
    }
    let ep = iface.get(F)?.state.create_ep(iface.handle())?;
    ep_p.write(F, "ep_p", ep as uct_ep_h)?;
    tracing::debug!("{F}: ep {ep:p}");
    Ok(())
}

slot! {
    fn ep_create(params: *const uct_ep_params_t, ep_p: *mut uct_ep_h) -> ucs_status_t;
    take params: EpParams = (params), ep_p: Out<uct_ep_h> = (ep_p);
    { status_of(ep_create_checked(params, ep_p)) }
}

slot! {
    fn ep_destroy(ep: uct_ep_h);
    take ep: EpArg = (ep);
    { ep.destroy("uct_ep_destroy") }
}

fn ep_get_address_checked(ep: EpArg, addr: OutBytes<'_, EP_ADDR_LEN>) -> Result<(), Status> {
    const F: &str = "uct_ep_get_address";
    ep.ep(F)?;
    if addr.is_null() {
        return Err(null_argument(F, "addr"));
    }
    // A purged ep's address is that of its next QP.
    let (ep, iface) = ep.ep_and_iface(F)?;
    iface.state.renew_qp_if_due(ep)?;
    let mut packed = [0u8; EP_ADDR_LEN];
    ep.pack_address(&mut packed);
    addr.write(F, "addr", packed)
}

slot! {
    fn ep_get_address(ep: uct_ep_h, addr: *mut uct_ep_addr_t) -> ucs_status_t;
    take ep: EpArg = (ep), addr: OutBytes<'_, EP_ADDR_LEN> = (addr);
    { status_of(ep_get_address_checked(ep, addr)) }
}

/// Connects `ep` to the peer's device and ep address.
fn connect_to_ep(
    function: &str,
    ep: EpArg,
    device: CBytes,
    ep_addr: InBytes<'_, EP_ADDR_LEN>,
) -> Result<(), Status> {
    let Some(packed_ep) = ep_addr.get().filter(|_| !device.is_null()) else {
        // The handle first.
        ep.ep(function)?;
        tracing::warn!("{function}: NULL device or ep address");
        return Err(Status::InvalidParam);
    };
    let (ep, iface) = ep.ep_and_iface(function)?;
    // A purged ep connects with a new QP.
    iface.state.renew_qp_if_due(ep)?;
    let (address, path_mtu) = DeviceAddress::unpack_with_mtu(device.get(function)?)
        .inspect_err(|_| tracing::warn!("{function}: bad device address"))?;
    let (qpn, generation) = RcEp::unpack_address(packed_ep);
    let remote = RemoteEp {
        address,
        path_mtu,
        qpn,
        generation,
    };
    iface
        .state
        .connect_ep(ep, remote)
        .inspect_err(|status| tracing::warn!("{function}: QP connect failed: {status}"))
}

slot! {
    fn ep_connect_to_ep(
        ep: uct_ep_h,
        dev_addr: *const uct_device_addr_t,
        ep_addr: *const uct_ep_addr_t,
    ) -> ucs_status_t;
    // Addresses as our iface reports their lengths.
    take ep: EpArg = (ep),
        device: InBytes<'_, { DeviceAddress::MAX_PACKED_LEN }> = (dev_addr),
        ep_addr: InBytes<'_, EP_ADDR_LEN> = (ep_addr);
    { status_of(connect_to_ep("uct_ep_connect_to_ep", ep, device.into(), ep_addr)) }
}

slot! {
    internal fn ep_connect_to_ep_v2(
        ep: uct_ep_h,
        dev_addr: *const uct_device_addr_t,
        ep_addr: *const uct_ep_addr_t,
        params: &uct_ep_connect_to_ep_params_t,
    ) -> Result<(), Status>;
    take ep: EpArg = (ep), peer: PeerAddress = (dev_addr, ep_addr, params);
    {
        const F: &str = "uct_ep_connect_to_ep_v2";
        if params.field_mask & u64::from(UCT_EP_CONNECT_TO_EP_PARAM_FIELD_EP_ADDR_LENGTH) != 0
            && params.ep_addr_length < EP_ADDR_LEN
        {
            let length = params.ep_addr_length;
            tracing::warn!("{F}: ep address of {length} bytes is too short");
            return Err(Status::InvalidAddr);
        }
        connect_to_ep(F, ep, peer.device, peer.ep)
    }
}

slot! {
    internal fn ep_is_connected(ep: uct_ep_h, params: &uct_ep_is_connected_params_t) -> bool;
    take ep: EpArg = (ep), peer: PeerAddress = (params);
    {
        let Ok(ep) = ep.ep("uct_ep_is_connected") else {
            return false;
        };
        let Some(remote) = ep.remote() else {
            return false;
        };
        let other_ep = peer.ep.get().is_some_and(|packed| RcEp::unpack_address(packed).0 != remote.qpn);
        let other_device = !peer.device.is_null()
            && peer.device.get("").map(DeviceAddress::unpack) != Ok(Ok(remote.address));
        !(other_ep || other_device)
    }
}

// ---------------------------------------------------------------- iface

slot! {
    fn iface_close(iface: uct_iface_h);
    take iface: IfaceArg = (iface);
    { iface.close("uct_iface_close") }
}

slot! {
    fn iface_progress(iface: uct_iface_h) -> c_uint;
    take iface: IfaceArg = (iface);
    { iface.progress("uct_iface_progress") }
}

slot! {
    fn iface_progress_enable(iface: uct_iface_h, flags: c_uint);
    take iface: IfaceArg = (iface);
    {
        if let Ok(rc) = iface.get("uct_iface_progress_enable") {
            rc.progress_enable(flags);
        }
    }
}

slot! {
    fn iface_progress_disable(iface: uct_iface_h, flags: c_uint);
    take iface: IfaceArg = (iface);
    {
        if let Ok(rc) = iface.get("uct_iface_progress_disable") {
            rc.progress_disable(flags);
        }
    }
}

slot! {
    fn iface_event_fd_get(iface: uct_iface_h, fd_p: *mut c_int) -> ucs_status_t;
    take iface: IfaceArg = (iface), fd_p: Out<c_int> = (fd_p);
    {
        const F: &str = "uct_iface_event_fd_get";
        status_of(iface.get(F).and_then(|rc| fd_p.write(F, "fd_p", rc.event_fd())))
    }
}

slot! {
    fn iface_event_arm(iface: uct_iface_h, events: c_uint) -> ucs_status_t;
    take iface: IfaceArg = (iface);
    { status_of(iface.get("uct_iface_event_arm").and_then(|rc| rc.event_arm(events))) }
}
