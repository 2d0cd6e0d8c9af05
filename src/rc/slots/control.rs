//! The control slots: flush, fence, check and pending of eps and ifaces;
//! ep create, address, connect and destroy; iface close, progress and
//! events.

use std::ffi::{c_int, c_uint, c_void};

use super::args::{ep_and_iface, status_of};
use crate::abi::*;
use crate::hca::DeviceAddress;
use crate::mlx5;
use crate::rc::ep::{EpState, OpKind, PostSpec, RcEp, RemoteEp, EP_ADDR_LEN};
use crate::rc::iface::RcIface;

/// Flushes one ep: `Ok` when nothing is outstanding, `InProgress` after
/// making sure the last op will produce a CQE (a signalled NOP carrying
/// `comp` if needed). With `nop_when_idle` a NOP is posted even when nothing
/// is outstanding (an invalidated QP: the device flushes it with an error,
/// which fails the ep).
pub(super) fn flush_ep(
    ep: &mut RcEp,
    iface: &mut RcIface,
    flags: c_uint,
    comp: *mut uct_completion_t,
    nop_when_idle: bool,
) -> Result<(), Status> {
    if let EpState::Failed(status) = ep.state {
        return Err(status);
    }
    let needs_nop = match ep.ops.ops.back() {
        None if nop_when_idle => true,
        None => return Ok(()),
        Some(last) => !last.signaled || !comp.is_null(),
    };
    if needs_nop {
        let mut spec = PostSpec::new(OpKind::Flush, mlx5::MLX5_OPCODE_NOP, 0);
        spec.comp = comp;
        spec.force_signal = true;
        // Purge reports them back if the flush is replayed.
        spec.flush_flags = flags;
        ep.post(&mut iface.state.tx_credits, spec, |_| {})?;
    }
    Err(Status::InProgress)
}

pub(super) unsafe extern "C" fn ep_flush(
    ep: uct_ep_h,
    flags: c_uint,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    const F: &str = "uct_ep_flush";
    status_of((|| {
        // SAFETY: by the caller's contract.
        let (ep, iface) = unsafe { ep_and_iface(ep, F) }?;
        if flags & UCT_FLUSH_FLAG_CANCEL != 0 {
            if ep.state == EpState::Connected {
                if ep.ops.is_empty() {
                    ep.cancel()?;
                    return Ok(());
                }
                // Signalled NOP first (it is flushed like the rest and
                // carries `comp`), then the QP goes to error.
                let mut spec = PostSpec::new(OpKind::Flush, mlx5::MLX5_OPCODE_NOP, 0);
                spec.comp = comp;
                spec.force_signal = true;
                spec.flush_flags = flags;
                ep.post(&mut iface.state.tx_credits, spec, |_| {})?;
                ep.cancel()?;
                return Err(Status::InProgress);
            }
            return match ep.state {
                EpState::Failed(_) if ep.ops.is_empty() => Ok(()),
                EpState::Failed(_) => Err(Status::InProgress),
                _ => Ok(()),
            };
        }
        if !ep.pending.is_empty() {
            // After a plain uct_ep_invalidate the pending requests can never
            // go out (no flow-control grant crosses a QP in error), so the
            // flush posts its NOP now: the device flushes it with an error,
            // the ep fails the normal way and the error handler (which may
            // purge the pending requests) runs, as UCX's flush does.
            if !(ep.invalidated && ep.state == EpState::Connected) {
                return Err(Status::NoResource);
            }
            return flush_ep(ep, iface, flags, comp, true);
        }
        flush_ep(ep, iface, flags, comp, false)
    })())
}

pub(super) unsafe extern "C" fn ep_fence(ep: uct_ep_h, _flags: c_uint) -> ucs_status_t {
    status_of((|| {
        // SAFETY: by the caller's contract.
        let ep = unsafe { RcEp::from_handle(ep, "uct_ep_fence") }?;
        if let EpState::Failed(status) = ep.state {
            return Err(status);
        }
        ep.fence_next = true;
        Ok(())
    })())
}

/// Checks the connection: a failed ep reports its error through the error
/// handler already; a connected one is fine (the RC transport itself
/// detects a dead peer by retries).
pub(super) unsafe extern "C" fn ep_check(
    ep: uct_ep_h,
    flags: c_uint,
    _comp: *mut uct_completion_t,
) -> ucs_status_t {
    const F: &str = "uct_ep_check";
    status_of((|| {
        // SAFETY: by the caller's contract.
        let ep = unsafe { RcEp::from_handle(ep, F) }?;
        if flags != 0 {
            tracing::warn!("{F}: flags 0x{flags:x} are not supported");
            return Err(Status::InvalidParam);
        }
        match ep.state {
            EpState::Connected => Ok(()),
            EpState::Failed(status) => Err(status),
            EpState::Idle => Err(Status::NotConnected),
        }
    })())
}

pub(super) unsafe extern "C" fn ep_pending_add(
    ep: uct_ep_h,
    req: *mut uct_pending_req_t,
    _flags: c_uint,
) -> ucs_status_t {
    const F: &str = "uct_ep_pending_add";
    status_of((|| {
        // SAFETY: by the caller's contract.
        let (ep, iface) = unsafe { ep_and_iface(ep, F) }?;
        if req.is_null() {
            tracing::warn!("{F}: req is NULL");
            return Err(Status::InvalidParam);
        }
        // Resources available now: the caller should just retry (UCX's rule).
        // An exhausted flow-control window is a missing resource too.
        if ep.pending.is_empty()
            && ep.check_post(iface.state.tx_credits).is_ok()
            && ep.fc.has_window(&iface.state.fc)
        {
            return Err(Status::Busy);
        }
        if let EpState::Failed(status) = ep.state {
            return Err(status);
        }
        ep.pending.push_back(req);
        Ok(())
    })())
}

pub(super) unsafe extern "C" fn ep_pending_purge(
    ep: uct_ep_h,
    cb: uct_pending_purge_callback_t,
    arg: *mut c_void,
) {
    // SAFETY: by the caller's contract.
    let Ok(rc_ep) = (unsafe { RcEp::from_handle(ep, "uct_ep_pending_purge") }) else {
        return;
    };
    let ep_ptr: *mut RcEp = rc_ep;
    // SAFETY: live; the borrow ends before the callback.
    while let Some(req) = unsafe { (*ep_ptr).pending.pop_front() } {
        if let Some(cb) = cb {
            // SAFETY: the user's callback with its request and argument.
            unsafe { cb(req, arg) };
        }
    }
}

/// `uct_iface_flush`, as UCX's rc iface does it: a completion is not
/// supported (`UCS_ERR_UNSUPPORTED`: the caller polls with `comp == NULL`);
/// each ep is flushed without one, and the iface is in progress while any
/// ep is (an ep with pending requests or no room for its flush NOP counts
/// as in progress, not as an error). Failed eps have nothing left to flush.
pub(super) unsafe extern "C" fn iface_flush(
    iface: uct_iface_h,
    flags: c_uint,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    const F: &str = "uct_iface_flush";
    status_of((|| {
        // SAFETY: by the caller's contract.
        let rc = unsafe { RcIface::from_handle(iface, F) }?;
        if !comp.is_null() {
            tracing::debug!("{F}: a completion is not supported, poll with comp == NULL");
            return Err(Status::Unsupported);
        }
        let eps: Vec<*mut RcEp> = rc.state.eps.values().copied().collect();
        let mut in_progress = false;
        for ep in eps {
            // SAFETY: eps in the table are live; no callback runs here.
            let ep = unsafe { &mut *ep };
            // A failed ep never runs its pending requests again: nothing
            // of it is in progress (flush_ep below skips it too).
            if !ep.pending.is_empty() && !matches!(ep.state, EpState::Failed(_)) {
                in_progress = true;
                continue;
            }
            match flush_ep(ep, rc, flags, std::ptr::null_mut(), false) {
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
    })())
}

pub(super) unsafe extern "C" fn iface_fence(iface: uct_iface_h, _flags: c_uint) -> ucs_status_t {
    status_of((|| {
        // SAFETY: by the caller's contract.
        let rc = unsafe { RcIface::from_handle(iface, "uct_iface_fence") }?;
        for &ep in rc.state.eps.values() {
            // SAFETY: eps in the table are live.
            unsafe { (*ep).fence_next = true };
        }
        Ok(())
    })())
}

pub(super) unsafe extern "C" fn ep_create(
    params: *const uct_ep_params_t,
    ep_p: *mut uct_ep_h,
) -> ucs_status_t {
    const F: &str = "uct_ep_create";
    status_of((|| {
        if params.is_null() || ep_p.is_null() {
            tracing::warn!("{F}: NULL params or ep_p");
            return Err(Status::InvalidParam);
        }
        // SAFETY: non-NULL and valid per its field mask by the contract.
        let (field_mask, iface) = unsafe { ((*params).field_mask, (*params).iface) };
        if field_mask & UCT_EP_PARAM_FIELD_IFACE == 0 {
            tracing::warn!("{F}: UCT_EP_PARAM_FIELD_IFACE is not set");
            return Err(Status::InvalidParam);
        }
        if field_mask & (UCT_EP_PARAM_FIELD_IFACE_ADDR | UCT_EP_PARAM_FIELD_SOCKADDR) != 0 {
            tracing::warn!("{F}: rc_mlx5 connects ep to ep only (no iface or sockaddr connect)");
            return Err(Status::Unsupported);
        }
        // SAFETY: by the contract.
        let rc = unsafe { RcIface::from_handle(iface, F) }?;
        let rc_ptr: *mut RcIface = rc;
        let ep = RcEp::create(rc_ptr, &mut rc.state)?;
        let qpn = ep.qpn();
        let ep = rc.state.ep_yard.house(ep).as_ptr();
        rc.state.eps.insert(qpn, ep);
        // SAFETY: ep_p writable by the contract.
        unsafe { ep_p.write(ep as uct_ep_h) };
        tracing::debug!("{F}: ep {ep:p} QP 0x{qpn:x}");
        Ok(())
    })())
}

pub(super) unsafe extern "C" fn ep_destroy(ep: uct_ep_h) {
    // SAFETY: by the caller's contract.
    if let Ok(rc_ep) = unsafe { RcEp::from_handle(ep, "uct_ep_destroy") } {
        // SAFETY: a live ep, destroyed once.
        unsafe { RcIface::destroy_ep(rc_ep) };
    }
}

pub(super) unsafe extern "C" fn ep_get_address(
    ep: uct_ep_h,
    addr: *mut uct_ep_addr_t,
) -> ucs_status_t {
    const F: &str = "uct_ep_get_address";
    status_of((|| {
        // SAFETY: by the caller's contract.
        let ep = unsafe { RcEp::from_handle(ep, F) }?;
        if addr.is_null() {
            tracing::warn!("{F}: addr is NULL");
            return Err(Status::InvalidParam);
        }
        // A purged ep's address is that of its next QP.
        // SAFETY: live (from_handle).
        unsafe { RcEp::renew_qp_if_due(ep) }?;
        let mut packed = [0u8; EP_ADDR_LEN];
        ep.pack_address(&mut packed);
        // SAFETY: addr writable for ep_addr_len bytes by the contract.
        unsafe { std::ptr::copy_nonoverlapping(packed.as_ptr(), addr as *mut u8, EP_ADDR_LEN) };
        Ok(())
    })())
}

/// Connects `ep` to the peer's device and ep address.
///
/// # Safety
/// Addresses readable for their lengths.
pub(super) unsafe fn connect_to_ep(
    function: &str,
    ep: uct_ep_h,
    dev_addr: *const uct_device_addr_t,
    dev_addr_len: usize,
    ep_addr: *const uct_ep_addr_t,
) -> Result<(), Status> {
    if dev_addr.is_null() || ep_addr.is_null() {
        // SAFETY: by the caller's contract (checks the handle first).
        unsafe { ep_and_iface(ep, function) }?;
        tracing::warn!("{function}: NULL device or ep address");
        return Err(Status::InvalidParam);
    }
    // A purged ep connects with a new QP.
    // SAFETY: by the caller's contract.
    unsafe { RcEp::renew_qp_if_due(RcEp::from_handle(ep, function)?) }?;
    // SAFETY: by the caller's contract.
    let (ep, iface) = unsafe { ep_and_iface(ep, function) }?;
    // SAFETY: readable for their lengths by the contract.
    let (device, packed_ep) = unsafe {
        (
            std::slice::from_raw_parts(dev_addr as *const u8, dev_addr_len),
            &*(ep_addr as *const [u8; EP_ADDR_LEN]),
        )
    };
    let address = DeviceAddress::unpack(device)
        .inspect_err(|_| tracing::warn!("{function}: bad device address"))?;
    let (qpn, generation) = RcEp::unpack_address(packed_ep);
    ep.connect(
        &iface.state,
        RemoteEp {
            address,
            qpn,
            generation,
        },
    )
    .inspect_err(|status| tracing::warn!("{function}: QP connect failed: {status}"))
}

pub(super) unsafe extern "C" fn ep_connect_to_ep(
    ep: uct_ep_h,
    dev_addr: *const uct_device_addr_t,
    ep_addr: *const uct_ep_addr_t,
) -> ucs_status_t {
    // SAFETY: the slot's contract: addresses as written by our iface.
    status_of(unsafe {
        connect_to_ep(
            "uct_ep_connect_to_ep",
            ep,
            dev_addr,
            DeviceAddress::MAX_PACKED_LEN,
            ep_addr,
        )
    })
}

pub(super) unsafe fn ep_connect_to_ep_v2(
    ep: uct_ep_h,
    dev_addr: *const uct_device_addr_t,
    ep_addr: *const uct_ep_addr_t,
    params: &uct_ep_connect_to_ep_params_t,
) -> Result<(), Status> {
    const F: &str = "uct_ep_connect_to_ep_v2";
    let mut dev_len = DeviceAddress::MAX_PACKED_LEN;
    if params.field_mask & u64::from(UCT_EP_CONNECT_TO_EP_PARAM_FIELD_DEVICE_ADDR_LENGTH) != 0 {
        dev_len = params.device_addr_length;
    }
    if params.field_mask & u64::from(UCT_EP_CONNECT_TO_EP_PARAM_FIELD_EP_ADDR_LENGTH) != 0
        && params.ep_addr_length < EP_ADDR_LEN
    {
        tracing::warn!(
            "{F}: ep address of {} bytes is too short",
            params.ep_addr_length
        );
        return Err(Status::InvalidAddr);
    }
    // SAFETY: the entry point's contract.
    unsafe { connect_to_ep(F, ep, dev_addr, dev_len, ep_addr) }
}

pub(super) unsafe fn ep_is_connected(ep: uct_ep_h, params: &uct_ep_is_connected_params_t) -> bool {
    // SAFETY: by the caller's contract.
    let Ok(ep) = (unsafe { RcEp::from_handle(ep, "uct_ep_is_connected") }) else {
        return false;
    };
    let Some(remote) = ep.remote else {
        return false;
    };
    if params.field_mask & u64::from(UCT_EP_IS_CONNECTED_FIELD_EP_ADDR) != 0
        && !params.ep_addr.is_null()
    {
        // SAFETY: readable for our ep address length by the contract.
        let packed = unsafe { &*(params.ep_addr as *const [u8; EP_ADDR_LEN]) };
        let (qpn, _) = RcEp::unpack_address(packed);
        if qpn != remote.qpn {
            return false;
        }
    }
    if params.field_mask & u64::from(UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR) != 0
        && !params.device_addr.is_null()
    {
        // SAFETY: as above.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                params.device_addr as *const u8,
                DeviceAddress::MAX_PACKED_LEN,
            )
        };
        if DeviceAddress::unpack(bytes) != Ok(remote.address) {
            return false;
        }
    }
    true
}

pub(super) unsafe extern "C" fn iface_close(iface: uct_iface_h) {
    // SAFETY: by the caller's contract.
    if let Ok(rc) = unsafe { RcIface::from_handle(iface, "uct_iface_close") } {
        // SAFETY: live, closed once.
        unsafe { RcIface::close(rc) };
    }
}

pub(super) unsafe extern "C" fn iface_progress(iface: uct_iface_h) -> c_uint {
    // SAFETY: by the caller's contract.
    match unsafe { RcIface::from_handle(iface, "uct_iface_progress") } {
        // SAFETY: live iface.
        Ok(rc) => unsafe { RcIface::progress(rc) },
        Err(_) => 0,
    }
}

pub(super) unsafe extern "C" fn iface_progress_enable(iface: uct_iface_h, flags: c_uint) {
    // SAFETY: by the caller's contract.
    if let Ok(rc) = unsafe { RcIface::from_handle(iface, "uct_iface_progress_enable") } {
        rc.progress_enable(flags);
    }
}

pub(super) unsafe extern "C" fn iface_progress_disable(iface: uct_iface_h, flags: c_uint) {
    // SAFETY: by the caller's contract.
    if let Ok(rc) = unsafe { RcIface::from_handle(iface, "uct_iface_progress_disable") } {
        rc.progress_disable(flags);
    }
}

pub(super) unsafe extern "C" fn iface_event_fd_get(
    iface: uct_iface_h,
    fd_p: *mut c_int,
) -> ucs_status_t {
    const F: &str = "uct_iface_event_fd_get";
    status_of((|| {
        // SAFETY: by the caller's contract.
        let rc = unsafe { RcIface::from_handle(iface, F) }?;
        if fd_p.is_null() {
            tracing::warn!("{F}: fd_p is NULL");
            return Err(Status::InvalidParam);
        }
        // SAFETY: writable by the contract.
        unsafe { fd_p.write(rc.event_fd()) };
        Ok(())
    })())
}

pub(super) unsafe extern "C" fn iface_event_arm(
    iface: uct_iface_h,
    events: c_uint,
) -> ucs_status_t {
    status_of((|| {
        // SAFETY: by the caller's contract.
        let rc = unsafe { RcIface::from_handle(iface, "uct_iface_event_arm") }?;
        rc.event_arm(events)
    })())
}
