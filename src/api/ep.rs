//! Endpoint entry points. The data-path ones are inline functions in UCX's
//! `uct.h`; we export real functions that go through `ep->iface->ops` exactly
//! as the inline code does, so binaries built against either header reach the
//! same transport code.

use std::ffi::{c_uint, c_void};

use crate::abi::*;
use crate::api::checks::{finish, non_null};
use crate::api::cm::{cm_ep_create, CmEpParams};
use crate::api::dispatch::export_dispatch;
use crate::core::c_boundary::{c_entry, CRef, FromC, IfaceHandle, Out};

export_dispatch! {
    /// Short put (`ep->iface->ops.ep_put_short`).
    fn uct_ep_put_short(EpHandle ep: uct_ep_h, buffer: *const c_void, length: c_uint, remote_addr: u64, rkey: uct_rkey_t) -> ucs_status_t => ep_put_short;
    /// Buffered-copy put; returns the packed length or a negative status.
    fn uct_ep_put_bcopy(EpHandle ep: uct_ep_h, pack_cb: uct_pack_callback_t, arg: *mut c_void, remote_addr: u64, rkey: uct_rkey_t) -> isize => ep_put_bcopy;
    /// Zero-copy put.
    fn uct_ep_put_zcopy(EpHandle ep: uct_ep_h, iov: *const uct_iov_t, iovcnt: usize, remote_addr: u64, rkey: uct_rkey_t, comp: *mut uct_completion_t) -> ucs_status_t => ep_put_zcopy;
    /// Short get.
    fn uct_ep_get_short(EpHandle ep: uct_ep_h, buffer: *mut c_void, length: c_uint, remote_addr: u64, rkey: uct_rkey_t) -> ucs_status_t => ep_get_short;
    /// Buffered-copy get.
    fn uct_ep_get_bcopy(EpHandle ep: uct_ep_h, unpack_cb: uct_unpack_callback_t, arg: *mut c_void, length: usize, remote_addr: u64, rkey: uct_rkey_t, comp: *mut uct_completion_t) -> ucs_status_t => ep_get_bcopy;
    /// Zero-copy get.
    fn uct_ep_get_zcopy(EpHandle ep: uct_ep_h, iov: *const uct_iov_t, iovcnt: usize, remote_addr: u64, rkey: uct_rkey_t, comp: *mut uct_completion_t) -> ucs_status_t => ep_get_zcopy;
    /// Short active message.
    fn uct_ep_am_short(EpHandle ep: uct_ep_h, id: u8, header: u64, payload: *const c_void, length: c_uint) -> ucs_status_t => ep_am_short;
    /// Short active message from an iov.
    fn uct_ep_am_short_iov(EpHandle ep: uct_ep_h, id: u8, iov: *const uct_iov_t, iovcnt: usize) -> ucs_status_t => ep_am_short_iov;
    /// Buffered-copy active message; returns the packed length or a negative status.
    fn uct_ep_am_bcopy(EpHandle ep: uct_ep_h, id: u8, pack_cb: uct_pack_callback_t, arg: *mut c_void, flags: c_uint) -> isize => ep_am_bcopy;
    /// Zero-copy active message.
    fn uct_ep_am_zcopy(EpHandle ep: uct_ep_h, id: u8, header: *const c_void, header_length: c_uint, iov: *const uct_iov_t, iovcnt: usize, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t => ep_am_zcopy;
    /// 64-bit compare-and-swap.
    fn uct_ep_atomic_cswap64(EpHandle ep: uct_ep_h, compare: u64, swap: u64, remote_addr: u64, rkey: uct_rkey_t, result: *mut u64, comp: *mut uct_completion_t) -> ucs_status_t => ep_atomic_cswap64;
    /// 32-bit compare-and-swap.
    fn uct_ep_atomic_cswap32(EpHandle ep: uct_ep_h, compare: u32, swap: u32, remote_addr: u64, rkey: uct_rkey_t, result: *mut u32, comp: *mut uct_completion_t) -> ucs_status_t => ep_atomic_cswap32;
    /// 32-bit atomic without result.
    fn uct_ep_atomic32_post(EpHandle ep: uct_ep_h, opcode: uct_atomic_op_t, value: u32, remote_addr: u64, rkey: uct_rkey_t) -> ucs_status_t => ep_atomic32_post;
    /// 64-bit atomic without result.
    fn uct_ep_atomic64_post(EpHandle ep: uct_ep_h, opcode: uct_atomic_op_t, value: u64, remote_addr: u64, rkey: uct_rkey_t) -> ucs_status_t => ep_atomic64_post;
    /// 32-bit fetching atomic.
    fn uct_ep_atomic32_fetch(EpHandle ep: uct_ep_h, opcode: uct_atomic_op_t, value: u32, result: *mut u32, remote_addr: u64, rkey: uct_rkey_t, comp: *mut uct_completion_t) -> ucs_status_t => ep_atomic32_fetch;
    /// 64-bit fetching atomic.
    fn uct_ep_atomic64_fetch(EpHandle ep: uct_ep_h, opcode: uct_atomic_op_t, value: u64, result: *mut u64, remote_addr: u64, rkey: uct_rkey_t, comp: *mut uct_completion_t) -> ucs_status_t => ep_atomic64_fetch;
    /// Queues a request to be called when resources free up.
    fn uct_ep_pending_add(EpHandle ep: uct_ep_h, req: *mut uct_pending_req_t, flags: c_uint) -> ucs_status_t => ep_pending_add;
    /// Removes every pending request, calling `cb` for each.
    fn uct_ep_pending_purge(EpHandle ep: uct_ep_h, cb: uct_pending_purge_callback_t, arg: *mut c_void) -> () => ep_pending_purge;
    /// Flushes outstanding operations of the endpoint.
    fn uct_ep_flush(EpHandle ep: uct_ep_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t => ep_flush;
    /// Orders later operations after earlier ones.
    fn uct_ep_fence(EpHandle ep: uct_ep_h, flags: c_uint) -> ucs_status_t => ep_fence;
    /// Tagged eager short send.
    fn uct_ep_tag_eager_short(EpHandle ep: uct_ep_h, tag: uct_tag_t, data: *const c_void, length: usize) -> ucs_status_t => ep_tag_eager_short;
    /// Tagged eager buffered-copy send.
    fn uct_ep_tag_eager_bcopy(EpHandle ep: uct_ep_h, tag: uct_tag_t, imm: u64, pack_cb: uct_pack_callback_t, arg: *mut c_void, flags: c_uint) -> isize => ep_tag_eager_bcopy;
    /// Tagged eager zero-copy send.
    fn uct_ep_tag_eager_zcopy(EpHandle ep: uct_ep_h, tag: uct_tag_t, imm: u64, iov: *const uct_iov_t, iovcnt: usize, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t => ep_tag_eager_zcopy;
    /// Tagged rendezvous zero-copy send; returns an operation handle or an error pointer.
    fn uct_ep_tag_rndv_zcopy(EpHandle ep: uct_ep_h, tag: uct_tag_t, header: *const c_void, header_length: c_uint, iov: *const uct_iov_t, iovcnt: usize, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_ptr_t => ep_tag_rndv_zcopy;
    /// Cancels a rendezvous send.
    fn uct_ep_tag_rndv_cancel(EpHandle ep: uct_ep_h, op: *mut c_void) -> ucs_status_t => ep_tag_rndv_cancel;
    /// Software rendezvous request.
    fn uct_ep_tag_rndv_request(EpHandle ep: uct_ep_h, tag: uct_tag_t, header: *const c_void, header_length: c_uint, flags: c_uint) -> ucs_status_t => ep_tag_rndv_request;
    /// Checks that the connection is alive.
    fn uct_ep_check(EpHandle ep: uct_ep_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t => ep_check;
    /// Connects a connection-manager endpoint.
    fn uct_ep_connect(EpHandle ep: uct_ep_h, params: *const uct_ep_connect_params_t) -> ucs_status_t => ep_connect;
    /// Disconnects a connection-manager endpoint.
    fn uct_ep_disconnect(EpHandle ep: uct_ep_h, flags: c_uint) -> ucs_status_t => ep_disconnect;
    /// Client side: tells the server the connection is established.
    fn uct_cm_client_ep_conn_notify(EpHandle ep: uct_ep_h) -> ucs_status_t => cm_ep_conn_notify;
    /// Writes the endpoint's address (for `uct_ep_connect_to_ep`).
    fn uct_ep_get_address(EpHandle ep: uct_ep_h, addr: *mut uct_ep_addr_t) -> ucs_status_t => ep_get_address;
    /// Connects to a remote endpoint by its address.
    fn uct_ep_connect_to_ep(EpHandle ep: uct_ep_h, dev_addr: *const uct_device_addr_t, ep_addr: *const uct_ep_addr_t) -> ucs_status_t => ep_connect_to_ep;
    /// Destroys the endpoint.
    fn uct_ep_destroy(EpHandle ep: uct_ep_h) -> () => ep_destroy;
}

/// Records the first failure of a multi-part operation in `comp->status`
/// (an inline helper in UCX's `uct.h`).
///
/// # Safety
/// `comp` must be NULL or a valid completion.
#[no_mangle]
pub unsafe extern "C" fn uct_completion_update_status(
    comp: *mut uct_completion_t,
    status: ucs_status_t,
) {
    if non_null(comp, "uct_completion_update_status", "comp").is_err() {
        return;
    }
    // SAFETY: non-NULL and valid by the caller's contract.
    let comp = unsafe { &mut *comp };
    if status != UCS_OK && comp.status == UCS_OK {
        comp.status = status;
    }
}

c_entry! {
    no_log_setup
    /// Creates an endpoint on `params->iface` through that iface's
    /// `ep_create` operation, or with `UCT_EP_PARAM_FIELD_CM` a
    /// connection-manager endpoint (`crate::api::cm`).
    fn uct_ep_create(params: *const uct_ep_params_t, ep_p: *mut uct_ep_h) -> ucs_status_t;
    take params_arg: CRef<uct_ep_params_t> = (params), ep_p_arg: Out<uct_ep_h> = (ep_p);
    {
        const FUNCTION: &str = "uct_ep_create";
        let checked = params_arg
            .get(FUNCTION, "params")
            .and_then(|params| ep_p_arg.check(FUNCTION, "ep_p").map(|()| params));
        let params_ref = match checked {
            Ok(params_ref) => params_ref,
            Err(status) => return finish(FUNCTION, Err(status)),
        };
        if params_ref.field_mask & UCT_EP_PARAM_FIELD_CM != 0 {
            // SAFETY: `uct_ep_create`'s contract covers the pointers in
            // params.
            let cm_params = unsafe { CmEpParams::from_c(params_ref) };
            return finish(FUNCTION, cm_ep_create(cm_params, ep_p_arg));
        }
        if params_ref.field_mask & UCT_EP_PARAM_FIELD_IFACE == 0 {
            tracing::warn!("{FUNCTION}: UCT_EP_PARAM_FIELD_IFACE is not set in params->field_mask");
            return finish(FUNCTION, Err(Status::InvalidParam));
        }
        // SAFETY: the contract makes params->iface NULL or live, and the
        // transport's ep_create validates the rest of params (typed slot).
        unsafe {
            match IfaceHandle::from_c(params_ref.iface)
                .ops(FUNCTION)
                .and_then(|ops| ops.ep_create.ok_or(Status::Unsupported))
            {
                Ok(create) => create(params, ep_p),
                Err(status) => finish(FUNCTION, Err(status)),
            }
        }
    }
}
