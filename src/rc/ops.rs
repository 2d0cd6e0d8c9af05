//! The `uct_iface_ops_t` slots of rc_mlx5: control operations (query,
//! addresses, ep create/connect/destroy, progress, events, flush, pending)
//! and the data-path operations. Each data-path op validates its arguments,
//! then hands one WQE to [`RcEp::post`] (see `ep.rs` for how to add one).

use std::ffi::{c_int, c_uint, c_void};

use crate::abi::*;
use crate::core::iface::{query_v2_defaults, IfaceInternalOps};
use crate::core::ops::unsupported_iface_ops;
use crate::hca::DeviceAddress;
use crate::ib::domain::MemHandle;
use crate::ib::rkey::rdma_rkey;
use crate::mlx5::{self, DataSeg, RaddrSeg};
use crate::rc::ep::{
    bounce_from_pool, CompletionAction, EpState, OpKind, PostSpec, RcEp, RemoteEp, EP_ADDR_LEN,
};
use crate::rc::iface::{am_header, RcIface, AM_HDR_LEN};
use crate::rc::pool::BufferPool;

/// Largest iov count of `am_short_iov`.
const MAX_SHORT_IOV: usize = 8;

/// The public ops table of an rc_mlx5 iface.
pub fn iface_ops() -> uct_iface_ops_t {
    uct_iface_ops_t {
        ep_put_short: Some(ep_put_short),
        ep_put_bcopy: Some(ep_put_bcopy),
        ep_put_zcopy: Some(ep_put_zcopy),
        ep_get_short: Some(ep_get_short),
        ep_get_bcopy: Some(ep_get_bcopy),
        ep_get_zcopy: Some(ep_get_zcopy),
        ep_am_short: Some(ep_am_short),
        ep_am_short_iov: Some(ep_am_short_iov),
        ep_am_bcopy: Some(ep_am_bcopy),
        ep_am_zcopy: Some(ep_am_zcopy),
        ep_check: Some(ep_check),
        ep_pending_add: Some(ep_pending_add),
        ep_pending_purge: Some(ep_pending_purge),
        ep_flush: Some(ep_flush),
        ep_fence: Some(ep_fence),
        ep_create: Some(ep_create),
        ep_destroy: Some(ep_destroy),
        ep_get_address: Some(ep_get_address),
        ep_connect_to_ep: Some(ep_connect_to_ep),
        iface_flush: Some(iface_flush),
        iface_fence: Some(iface_fence),
        iface_progress_enable: Some(iface_progress_enable),
        iface_progress_disable: Some(iface_progress_disable),
        iface_progress: Some(iface_progress),
        iface_event_fd_get: Some(iface_event_fd_get),
        iface_event_arm: Some(iface_event_arm),
        iface_close: Some(iface_close),
        iface_query: Some(iface_query),
        iface_get_device_address: Some(iface_get_device_address),
        iface_get_address: Some(iface_get_address),
        iface_is_reachable: Some(iface_is_reachable),
        // Atomics live in rc::atomic.
        ep_atomic32_post: Some(crate::rc::atomic::ep_atomic32_post),
        ep_atomic64_post: Some(crate::rc::atomic::ep_atomic64_post),
        ep_atomic32_fetch: Some(crate::rc::atomic::ep_atomic32_fetch),
        ep_atomic64_fetch: Some(crate::rc::atomic::ep_atomic64_fetch),
        ep_atomic_cswap32: Some(crate::rc::atomic::ep_atomic_cswap32),
        ep_atomic_cswap64: Some(crate::rc::atomic::ep_atomic_cswap64),
        ..unsupported_iface_ops()
    }
}

/// Operations outside the public table.
pub static INTERNAL_OPS: IfaceInternalOps = IfaceInternalOps {
    // Failover and tokens live in rc::failover (which calls iface_query_v2).
    iface_query_v2: crate::rc::failover::iface_query_v2,
    ep_query: crate::rc::failover::ep_query,
    ep_invalidate: crate::rc::failover::ep_invalidate,
    ep_failover_enable: crate::rc::failover::ep_failover_enable,
    ep_outstanding_purge: crate::rc::failover::ep_outstanding_purge,
    iface_is_reachable_v2,
    ep_connect_to_ep_v2,
    ep_is_connected,
};

/// The capability flags of what works today.
pub const CAP_FLAGS: u64 = UCT_IFACE_FLAG_AM_SHORT
    | UCT_IFACE_FLAG_AM_BCOPY
    | UCT_IFACE_FLAG_AM_ZCOPY
    | UCT_IFACE_FLAG_EP_CHECK
    | UCT_IFACE_FLAG_PUT_SHORT
    | UCT_IFACE_FLAG_PUT_BCOPY
    | UCT_IFACE_FLAG_PUT_ZCOPY
    | UCT_IFACE_FLAG_GET_SHORT
    | UCT_IFACE_FLAG_GET_BCOPY
    | UCT_IFACE_FLAG_GET_ZCOPY
    | UCT_IFACE_FLAG_PENDING
    | UCT_IFACE_FLAG_CONNECT_TO_EP
    | UCT_IFACE_FLAG_CB_SYNC
    | UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE
    | UCT_IFACE_FLAG_INTER_NODE;

/// Event capabilities.
pub const EVENT_FLAGS: u64 =
    UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV | UCT_IFACE_FLAG_EVENT_FD;

/// Maps a `Result` to a slot's status.
#[inline]
fn status_of(result: Result<(), Status>) -> ucs_status_t {
    match result {
        Ok(()) => UCS_OK,
        Err(status) => status.raw(),
    }
}

/// The ep and its iface for a data-path op.
///
/// # Safety
/// `ep` NULL or an ep of this transport.
#[inline]
unsafe fn ep_and_iface<'a>(
    ep: uct_ep_h,
    function: &str,
) -> Result<(&'a mut RcEp, &'a mut RcIface), Status> {
    // SAFETY: by the contract.
    let rc_ep = unsafe { RcEp::from_handle(ep, function) }?;
    // SAFETY: the ep's iface outlives it.
    let iface = unsafe { &mut *(rc_ep.iface_handle() as *mut RcIface) };
    Ok((rc_ep, iface))
}

/// The flow-control bits of the next AM on `ep`. An exhausted window means
/// `UCS_ERR_NO_RESOURCE` only while a grant can still come: a failed or
/// cancelled ep answers its own status, or retry loops would spin forever.
#[inline(always)]
fn am_fc_bits(ep: &mut RcEp, iface: &RcIface) -> Result<u8, Status> {
    match ep.fc.am_bits(&iface.state.fc) {
        Ok(bits) => Ok(bits),
        Err(window_closed) => Err(fc_refusal(ep, iface.state.tx.credits, window_closed)),
    }
}

/// The rare half of [`am_fc_bits`]: the ep's own refusal, if it has one,
/// wins over the closed window.
#[cold]
#[inline(never)]
fn fc_refusal(ep: &RcEp, credits: u32, window_closed: Status) -> Status {
    match ep.check_post(credits) {
        Err(status) if status != Status::NoResource => status,
        _ => window_closed,
    }
}

#[inline(always)]
fn check_len(function: &str, length: usize, max: usize) -> Result<(), Status> {
    if length > max {
        return Err(length_exceeded(function, length, max));
    }
    Ok(())
}

/// The logging half of [`check_len`], kept out of the posting path.
#[cold]
#[inline(never)]
fn length_exceeded(function: &str, length: usize, max: usize) -> Status {
    tracing::warn!("{function}: length {length} exceeds the limit {max}");
    Status::InvalidParam
}

#[inline(always)]
fn check_am_id(function: &str, id: u8) -> Result<(), Status> {
    if u32::from(id) >= UCT_AM_ID_MAX {
        return Err(bad_am_id(function, id));
    }
    Ok(())
}

/// The logging half of [`check_am_id`], kept out of the posting path.
#[cold]
#[inline(never)]
fn bad_am_id(function: &str, id: u8) -> Status {
    tracing::warn!("{function}: active message id {id} is not below {UCT_AM_ID_MAX}");
    Status::InvalidParam
}

#[cold]
#[inline(never)]
fn null_buffer(function: &str, length: usize) -> Status {
    tracing::warn!("{function}: NULL buffer with length {length}");
    Status::InvalidParam
}

/// A byte slice from a C buffer; NULL is allowed only when `length` is 0.
///
/// # Safety
/// `buffer` readable for `length` bytes when non-NULL.
#[inline(always)]
unsafe fn c_bytes<'a>(
    function: &str,
    buffer: *const c_void,
    length: usize,
) -> Result<&'a [u8], Status> {
    if length == 0 {
        return Ok(&[]);
    }
    if buffer.is_null() {
        return Err(null_buffer(function, length));
    }
    // SAFETY: by the contract.
    Ok(unsafe { std::slice::from_raw_parts(buffer as *const u8, length) })
}

// ---------------------------------------------------------------- AM

unsafe extern "C" fn ep_am_short(
    ep: uct_ep_h,
    id: u8,
    header: u64,
    payload: *const c_void,
    length: c_uint,
) -> ucs_status_t {
    const F: &str = "uct_ep_am_short";
    status_of((|| {
        // SAFETY: by the caller's contract.
        let (ep, iface) = unsafe { ep_and_iface(ep, F) }?;
        check_am_id(F, id)?;
        let length = length as usize;
        check_len(F, 8 + length, iface.state.limits.am_max_short)?;
        // SAFETY: payload readable for length bytes by the caller's contract.
        let payload = unsafe { c_bytes(F, payload, length) }?;
        let fc_bits = am_fc_bits(ep, iface)?;
        // The AM header byte then the user's 8-byte header: one fixed-size
        // prefix of the inline data.
        let mut head = [0u8; AM_HDR_LEN + 8];
        head[..AM_HDR_LEN].copy_from_slice(&am_header(id | fc_bits));
        head[AM_HDR_LEN..].copy_from_slice(&header.to_ne_bytes());
        let mut spec = PostSpec::new(
            OpKind::AmShort,
            mlx5::MLX5_OPCODE_SEND,
            AM_HDR_LEN + 8 + length,
        );
        spec.am_id = Some(id);
        ep.post_inline(&mut iface.state.tx.credits, spec, None, &head, payload)?;
        ep.fc.sent(fc_bits, &iface.state.fc);
        Ok(())
    })())
}

unsafe extern "C" fn ep_am_short_iov(
    ep: uct_ep_h,
    id: u8,
    iov: *const uct_iov_t,
    iovcnt: usize,
) -> ucs_status_t {
    const F: &str = "uct_ep_am_short_iov";
    status_of((|| {
        // SAFETY: by the caller's contract.
        let (ep, iface) = unsafe { ep_and_iface(ep, F) }?;
        check_am_id(F, id)?;
        if iovcnt > MAX_SHORT_IOV || (iovcnt > 0 && iov.is_null()) {
            tracing::warn!("{F}: bad iov ({iovcnt} entries at {iov:p})");
            return Err(Status::InvalidParam);
        }
        let fc_bits = am_fc_bits(ep, iface)?;
        let id_bytes = am_header(id | fc_bits);
        let mut parts: [&[u8]; MAX_SHORT_IOV + 1] = [&[]; MAX_SHORT_IOV + 1];
        parts[0] = &id_bytes;
        let mut total = 0usize;
        for index in 0..iovcnt {
            // SAFETY: iov holds iovcnt entries by the caller's contract.
            let entry = unsafe { &*iov.add(index) };
            let len = entry.length.saturating_mul(entry.count.max(1) as usize);
            if entry.count > 1 {
                tracing::warn!(
                    "{F}: iov count {} (strided entries) is not supported",
                    entry.count
                );
                return Err(Status::InvalidParam);
            }
            // SAFETY: the entry's buffer is readable by the caller's contract.
            parts[index + 1] = unsafe { c_bytes(F, entry.buffer, len) }?;
            total = total.saturating_add(len);
        }
        check_len(F, total, iface.state.limits.am_max_short)?;
        let mut spec = PostSpec::new(OpKind::AmShort, mlx5::MLX5_OPCODE_SEND, AM_HDR_LEN + total);
        spec.am_id = Some(id);
        ep.post(&mut iface.state.tx.credits, spec, |wqe| {
            wqe.inline(&parts[..iovcnt + 1]);
        })?;
        ep.fc.sent(fc_bits, &iface.state.fc);
        Ok(())
    })())
}

unsafe extern "C" fn ep_am_bcopy(
    ep: uct_ep_h,
    id: u8,
    pack_cb: uct_pack_callback_t,
    arg: *mut c_void,
    flags: c_uint,
) -> isize {
    const F: &str = "uct_ep_am_bcopy";
    let result = (|| {
        // SAFETY: by the caller's contract.
        let (ep, iface) = unsafe { ep_and_iface(ep, F) }?;
        check_am_id(F, id)?;
        let Some(pack) = pack_cb else {
            tracing::warn!("{F}: pack_cb is NULL");
            return Err(Status::InvalidParam);
        };
        // Both before packing: the callback must not run for a refused post.
        let fc_bits = am_fc_bits(ep, iface)?;
        ep.check_post(iface.state.tx.credits)?;
        let bounce = bounce_from_pool(&mut iface.state.tx.pool, 0)?;
        // SAFETY: the bounce data area holds seg_size bytes; the AM header
        // first, the caller packs at most max_bcopy after it.
        let packed = unsafe {
            let header = am_header(id | fc_bits);
            std::ptr::copy_nonoverlapping(header.as_ptr(), bounce.data, AM_HDR_LEN);
            pack(bounce.data.add(AM_HDR_LEN) as *mut c_void, arg)
        };
        if packed > iface.state.limits.am_max_bcopy {
            tracing::error!("{F}: pack callback wrote {packed} bytes, more than max_bcopy");
            iface.state.tx.pool.put(bounce.buffer);
            return Err(Status::InvalidParam);
        }
        let total = AM_HDR_LEN + packed;
        let mut spec = PostSpec::new(OpKind::AmBcopy, mlx5::MLX5_OPCODE_SEND, total);
        spec.am_id = Some(id);
        spec.am_flags = flags;
        spec.bounce = Some(bounce);
        let lkey = BufferPool::bounce_lkey(&bounce);
        ep.post(&mut iface.state.tx.credits, spec, |wqe| {
            wqe.data(DataSeg {
                byte_count: total as u32,
                lkey,
                addr: bounce.data as u64,
            });
        })
        .inspect_err(|_| iface.state.tx.pool.put(bounce.buffer))?;
        ep.fc.sent(fc_bits, &iface.state.fc);
        Ok(packed as isize)
    })();
    result.unwrap_or_else(|status| isize::from(status.raw()))
}

unsafe extern "C" fn ep_am_zcopy(
    ep: uct_ep_h,
    id: u8,
    header: *const c_void,
    header_length: c_uint,
    iov: *const uct_iov_t,
    iovcnt: usize,
    flags: c_uint,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    const F: &str = "uct_ep_am_zcopy";
    let result = (|| -> Result<(), Status> {
        // SAFETY: by the caller's contract.
        let (ep, iface) = unsafe { ep_and_iface(ep, F) }?;
        check_am_id(F, id)?;
        let header_length = header_length as usize;
        check_len(F, header_length, iface.state.limits.am_max_hdr)?;
        // SAFETY: header readable for header_length bytes by the contract.
        let header = unsafe { c_bytes(F, header, header_length) }?;
        let mut segments = [DataSeg::default(); 16];
        // No iov at all is a header-only AM (UCX allows it; `iov` may then
        // be NULL).
        let (count, total) = if iovcnt == 0 {
            (0, 0)
        } else {
            // SAFETY: by the caller's contract.
            unsafe { iov_segments(F, iov, iovcnt, MAX_SHORT_IOV, &mut segments) }?
        };
        check_len(F, header_length + total, iface.state.limits.am_max_zcopy)?;
        let fc_bits = am_fc_bits(ep, iface)?;
        let mut spec = PostSpec::new(
            OpKind::AmZcopy,
            mlx5::MLX5_OPCODE_SEND,
            AM_HDR_LEN + header_length + total,
        );
        spec.am_id = Some(id);
        spec.comp = comp;
        spec.am_flags = flags;
        // SAFETY: iov was checked by iov_segments (or iovcnt is 0).
        spec.iov = Some(unsafe { iov_copy(iov, iovcnt) });
        ep.post(&mut iface.state.tx.credits, spec, |wqe| {
            wqe.inline(&[&am_header(id | fc_bits), header]);
            for segment in &segments[..count] {
                wqe.data(*segment);
            }
        })?;
        ep.fc.sent(fc_bits, &iface.state.fc);
        Ok(())
    })();
    match result {
        Ok(()) => UCS_INPROGRESS,
        Err(status) => status.raw(),
    }
}

// ---------------------------------------------------------------- RMA

unsafe extern "C" fn ep_put_short(
    ep: uct_ep_h,
    buffer: *const c_void,
    length: c_uint,
    remote_addr: u64,
    rkey: uct_rkey_t,
) -> ucs_status_t {
    const F: &str = "uct_ep_put_short";
    status_of((|| {
        // SAFETY: by the caller's contract.
        let (ep, iface) = unsafe { ep_and_iface(ep, F) }?;
        let length = length as usize;
        check_len(F, length, iface.state.limits.put_max_short)?;
        // SAFETY: buffer readable for length bytes by the caller's contract.
        let data = unsafe { c_bytes(F, buffer, length) }?;
        let (uct_rkey, rkey) = (rkey, rdma_rkey(rkey));
        let mut spec = PostSpec::new(OpKind::PutShort, mlx5::MLX5_OPCODE_RDMA_WRITE, length);
        spec.remote_addr = remote_addr;
        spec.rkey = rkey;
        spec.uct_rkey = uct_rkey;
        let raddr = RaddrSeg {
            raddr: remote_addr,
            rkey,
        };
        ep.post_inline(&mut iface.state.tx.credits, spec, Some(raddr), &[], data)
    })())
}

unsafe extern "C" fn ep_put_bcopy(
    ep: uct_ep_h,
    pack_cb: uct_pack_callback_t,
    arg: *mut c_void,
    remote_addr: u64,
    rkey: uct_rkey_t,
) -> isize {
    const F: &str = "uct_ep_put_bcopy";
    let result = (|| {
        // SAFETY: by the caller's contract.
        let (ep, iface) = unsafe { ep_and_iface(ep, F) }?;
        let Some(pack) = pack_cb else {
            tracing::warn!("{F}: pack_cb is NULL");
            return Err(Status::InvalidParam);
        };
        ep.check_post(iface.state.tx.credits)?;
        let bounce = bounce_from_pool(&mut iface.state.tx.pool, 0)?;
        // SAFETY: the data area holds seg_size (= max_bcopy) bytes.
        let packed = unsafe { pack(bounce.data as *mut c_void, arg) };
        if packed > iface.state.limits.put_max_bcopy {
            tracing::error!("{F}: pack callback wrote {packed} bytes, more than max_bcopy");
            iface.state.tx.pool.put(bounce.buffer);
            return Err(Status::InvalidParam);
        }
        let (uct_rkey, rkey) = (rkey, rdma_rkey(rkey));
        let mut spec = PostSpec::new(OpKind::PutBcopy, mlx5::MLX5_OPCODE_RDMA_WRITE, packed);
        spec.remote_addr = remote_addr;
        spec.rkey = rkey;
        spec.uct_rkey = uct_rkey;
        spec.bounce = Some(bounce);
        let lkey = BufferPool::bounce_lkey(&bounce);
        ep.post(&mut iface.state.tx.credits, spec, |wqe| {
            wqe.raddr(RaddrSeg {
                raddr: remote_addr,
                rkey,
            });
            if packed > 0 {
                wqe.data(DataSeg {
                    byte_count: packed as u32,
                    lkey,
                    addr: bounce.data as u64,
                });
            }
        })
        .inspect_err(|_| iface.state.tx.pool.put(bounce.buffer))?;
        Ok(packed as isize)
    })();
    result.unwrap_or_else(|status| isize::from(status.raw()))
}

/// The data segments of a zcopy iov, empty entries left out: returns how
/// many were written to `segments` and the total length. Every entry must
/// lie in its memory handle's registration.
///
/// # Safety
/// `iov` readable for `iovcnt` entries when non-NULL.
unsafe fn iov_segments(
    function: &str,
    iov: *const uct_iov_t,
    iovcnt: usize,
    max_iov: usize,
    segments: &mut [DataSeg; 16],
) -> Result<(usize, usize), Status> {
    if iovcnt == 0 || iovcnt > max_iov.min(segments.len()) || iov.is_null() {
        tracing::warn!("{function}: bad iov ({iovcnt} entries at {iov:p}, limit {max_iov})");
        return Err(Status::InvalidParam);
    }
    let mut total = 0usize;
    let mut count = 0usize;
    for index in 0..iovcnt {
        // SAFETY: iovcnt entries by the contract.
        let entry = unsafe { &*iov.add(index) };
        if entry.count > 1 {
            tracing::warn!(
                "{function}: iov count {} (strided entries) is not supported",
                entry.count
            );
            return Err(Status::InvalidParam);
        }
        let length = if entry.count == 0 { 0 } else { entry.length };
        if length > 0 && entry.buffer.is_null() {
            tracing::warn!("{function}: iov[{index}] has a NULL buffer");
            return Err(Status::InvalidParam);
        }
        // SAFETY: memh is NULL or a handle from uct_md_mem_reg.
        let memh = unsafe { MemHandle::from_handle(entry.memh) }.inspect_err(|_| {
            tracing::warn!("{function}: iov[{index}] has no valid memory handle")
        })?;
        if !memh.covers(entry.buffer as usize, length) {
            tracing::warn!("{function}: iov[{index}] is outside its registration");
            return Err(Status::InvalidParam);
        }
        // An empty entry needs no data segment (and a byte count of 0 is not
        // "nothing" to every mlx5 device).
        if length > 0 {
            segments[count] = DataSeg {
                byte_count: length as u32,
                lkey: memh.mr.keys().lkey,
                addr: entry.buffer as u64,
            };
            count += 1;
        }
        total = total.saturating_add(length);
    }
    Ok((count, total))
}

/// The op table's copy of a zcopy iov (purge reports it back). Empty for
/// `iovcnt == 0`, where `iov` may be NULL.
///
/// # Safety
/// `iov` holds `iovcnt` entries when `iovcnt > 0` (checked by
/// [`iov_segments`] before this is called).
unsafe fn iov_copy(iov: *const uct_iov_t, iovcnt: usize) -> Box<[uct_iov_t]> {
    if iovcnt == 0 || iov.is_null() {
        return Box::default();
    }
    // SAFETY: iovcnt readable entries by the contract.
    unsafe { std::slice::from_raw_parts(iov, iovcnt) }.into()
}

/// put_zcopy and get_zcopy: one WRITE/READ from/into registered memory.
///
/// # Safety
/// As the slots.
#[allow(clippy::too_many_arguments)] // the slot's arguments plus the op
unsafe fn rma_zcopy(
    function: &str,
    kind: OpKind,
    opcode: u8,
    ep: uct_ep_h,
    iov: *const uct_iov_t,
    iovcnt: usize,
    remote_addr: u64,
    rkey: uct_rkey_t,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    let result = (|| {
        // SAFETY: by the caller's contract.
        let (ep, iface) = unsafe { ep_and_iface(ep, function) }?;
        let mut segments = [DataSeg::default(); 16];
        // No iov is a zero-length WRITE/READ (UCX allows it; `iov` may then
        // be NULL).
        let (count, total) = if iovcnt == 0 {
            (0, 0)
        } else {
            // SAFETY: by the caller's contract.
            unsafe {
                iov_segments(
                    function,
                    iov,
                    iovcnt,
                    iface.state.limits.max_iov,
                    &mut segments,
                )
            }?
        };
        check_len(function, total, iface.state.limits.max_zcopy)?;
        let (uct_rkey, rkey) = (rkey, rdma_rkey(rkey));
        let mut spec = PostSpec::new(kind, opcode, total);
        spec.remote_addr = remote_addr;
        spec.rkey = rkey;
        spec.uct_rkey = uct_rkey;
        spec.comp = comp;
        // SAFETY: iov was checked by iov_segments (or iovcnt is 0).
        spec.iov = Some(unsafe { iov_copy(iov, iovcnt) });
        ep.post(&mut iface.state.tx.credits, spec, |wqe| {
            wqe.raddr(RaddrSeg {
                raddr: remote_addr,
                rkey,
            });
            for segment in &segments[..count] {
                wqe.data(*segment);
            }
        })
    })();
    match result {
        Ok(()) => UCS_INPROGRESS,
        Err(status) => status.raw(),
    }
}

unsafe extern "C" fn ep_put_zcopy(
    ep: uct_ep_h,
    iov: *const uct_iov_t,
    iovcnt: usize,
    remote_addr: u64,
    rkey: uct_rkey_t,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    // SAFETY: the slot's contract.
    unsafe {
        rma_zcopy(
            "uct_ep_put_zcopy",
            OpKind::PutZcopy,
            mlx5::MLX5_OPCODE_RDMA_WRITE,
            ep,
            iov,
            iovcnt,
            remote_addr,
            rkey,
            comp,
        )
    }
}

unsafe extern "C" fn ep_get_zcopy(
    ep: uct_ep_h,
    iov: *const uct_iov_t,
    iovcnt: usize,
    remote_addr: u64,
    rkey: uct_rkey_t,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    // SAFETY: the slot's contract.
    unsafe {
        rma_zcopy(
            "uct_ep_get_zcopy",
            OpKind::GetZcopy,
            mlx5::MLX5_OPCODE_RDMA_READ,
            ep,
            iov,
            iovcnt,
            remote_addr,
            rkey,
            comp,
        )
    }
}

/// Posts the RDMA READ of `spec.length` bytes at `remote_addr` into a bounce
/// buffer of the send pool (get_short and get_bcopy: `spec.action` says what
/// happens to the data at completion). On error nothing is posted and the
/// buffer goes back.
fn post_read_into_bounce(
    ep: &mut RcEp,
    iface: &mut RcIface,
    mut spec: PostSpec,
    remote_addr: u64,
    uct_rkey: uct_rkey_t,
) -> Result<(), Status> {
    ep.check_post(iface.state.tx.credits)?;
    let bounce = bounce_from_pool(&mut iface.state.tx.pool, 0)?;
    let rkey = rdma_rkey(uct_rkey);
    let length = spec.length;
    spec.remote_addr = remote_addr;
    spec.rkey = rkey;
    spec.uct_rkey = uct_rkey;
    spec.bounce = Some(bounce);
    let lkey = BufferPool::bounce_lkey(&bounce);
    ep.post(&mut iface.state.tx.credits, spec, |wqe| {
        wqe.raddr(RaddrSeg {
            raddr: remote_addr,
            rkey,
        });
        if length > 0 {
            wqe.data(DataSeg {
                byte_count: length as u32,
                lkey,
                addr: bounce.data as u64,
            });
        }
    })
    .inspect_err(|_| iface.state.tx.pool.put(bounce.buffer))
}

/// get_short: an RDMA READ into a bounce buffer, copied into `buffer` when
/// its completion is processed. Returns `UCS_INPROGRESS` once posted, not
/// `UCS_OK`: UCX's callers read `UCS_OK` from get_short as "the data is in
/// `buffer`" (the copy transports finish it inside the call), which a
/// network read cannot promise. The data is in `buffer` when a later flush
/// completes (the flush's CQE completes this op first, in posting order).
unsafe extern "C" fn ep_get_short(
    ep: uct_ep_h,
    buffer: *mut c_void,
    length: c_uint,
    remote_addr: u64,
    rkey: uct_rkey_t,
) -> ucs_status_t {
    const F: &str = "uct_ep_get_short";
    let posted = (|| {
        // SAFETY: by the caller's contract.
        let (ep, iface) = unsafe { ep_and_iface(ep, F) }?;
        let length = length as usize;
        check_len(F, length, iface.state.limits.get_max_short)?;
        if length > 0 && buffer.is_null() {
            return Err(null_buffer(F, length));
        }
        let mut spec = PostSpec::new(OpKind::GetShort, mlx5::MLX5_OPCODE_RDMA_READ, length);
        spec.action = CompletionAction::CopyOut {
            buffer: buffer.cast(),
            length,
        };
        post_read_into_bounce(ep, iface, spec, remote_addr, rkey)
    })();
    match posted {
        Ok(()) => UCS_INPROGRESS,
        Err(status) => status.raw(),
    }
}

unsafe extern "C" fn ep_get_bcopy(
    ep: uct_ep_h,
    unpack_cb: uct_unpack_callback_t,
    arg: *mut c_void,
    length: usize,
    remote_addr: u64,
    rkey: uct_rkey_t,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    const F: &str = "uct_ep_get_bcopy";
    let result = (|| {
        // SAFETY: by the caller's contract.
        let (ep, iface) = unsafe { ep_and_iface(ep, F) }?;
        if unpack_cb.is_none() {
            tracing::warn!("{F}: unpack_cb is NULL");
            return Err(Status::InvalidParam);
        }
        check_len(F, length, iface.state.limits.get_max_bcopy)?;
        let mut spec = PostSpec::new(OpKind::GetBcopy, mlx5::MLX5_OPCODE_RDMA_READ, length);
        spec.comp = comp;
        spec.force_signal = true;
        spec.action = CompletionAction::Unpack {
            unpack_cb,
            arg,
            length,
        };
        post_read_into_bounce(ep, iface, spec, remote_addr, rkey)
    })();
    match result {
        Ok(()) => UCS_INPROGRESS,
        Err(status) => status.raw(),
    }
}

// ---------------------------------------------------------------- flush, fence, pending

/// Flushes one ep: `Ok` when nothing is outstanding, `InProgress` after
/// making sure the last op will produce a CQE (a signalled NOP carrying
/// `comp` if needed). With `nop_when_idle` a NOP is posted even when nothing
/// is outstanding (an invalidated QP: the device flushes it with an error,
/// which fails the ep).
fn flush_ep(
    ep: &mut RcEp,
    iface: &mut RcIface,
    flags: c_uint,
    comp: *mut uct_completion_t,
    nop_when_idle: bool,
) -> Result<(), Status> {
    if let Some(status) = ep.state().failed_status() {
        return Err(status);
    }
    let needs_nop = match ep.txwq().last() {
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
        ep.post(&mut iface.state.tx.credits, spec, |_| {})?;
    }
    Err(Status::InProgress)
}

unsafe extern "C" fn ep_flush(
    ep: uct_ep_h,
    flags: c_uint,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    const F: &str = "uct_ep_flush";
    status_of((|| {
        // SAFETY: by the caller's contract.
        let (ep, iface) = unsafe { ep_and_iface(ep, F) }?;
        if flags & UCT_FLUSH_FLAG_CANCEL != 0 {
            if ep.state().is_connected() {
                if ep.txwq().is_empty() {
                    ep.cancel()?;
                    return Ok(());
                }
                // Signalled NOP first (it is flushed like the rest and
                // carries `comp`), then the QP goes to error.
                let mut spec = PostSpec::new(OpKind::Flush, mlx5::MLX5_OPCODE_NOP, 0);
                spec.comp = comp;
                spec.force_signal = true;
                spec.flush_flags = flags;
                ep.post(&mut iface.state.tx.credits, spec, |_| {})?;
                ep.cancel()?;
                return Err(Status::InProgress);
            }
            return match ep.state() {
                EpState::Failed(..) if ep.txwq().is_empty() => Ok(()),
                EpState::Failed(..) => Err(Status::InProgress),
                _ => Ok(()),
            };
        }
        if !ep.pending.is_empty() {
            // After a plain uct_ep_invalidate the pending requests can never
            // go out (no flow-control grant crosses a QP in error), so the
            // flush posts its NOP now: the device flushes it with an error,
            // the ep fails the normal way and the error handler (which may
            // purge the pending requests) runs, as UCX's flush does.
            if ep.state() != EpState::Invalidated {
                return Err(Status::NoResource);
            }
            return flush_ep(ep, iface, flags, comp, true);
        }
        flush_ep(ep, iface, flags, comp, false)
    })())
}

unsafe extern "C" fn ep_fence(ep: uct_ep_h, _flags: c_uint) -> ucs_status_t {
    status_of((|| {
        // SAFETY: by the caller's contract.
        let ep = unsafe { RcEp::from_handle(ep, "uct_ep_fence") }?;
        ep.fence()
    })())
}

/// Checks the connection: a failed ep reports its error through the error
/// handler already; a connected one is fine (the RC transport itself
/// detects a dead peer by retries).
unsafe extern "C" fn ep_check(
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
        match ep.state() {
            EpState::Connected | EpState::Invalidated => Ok(()),
            EpState::Failed(status, _) => Err(status),
            EpState::Idle => Err(Status::NotConnected),
        }
    })())
}

unsafe extern "C" fn ep_pending_add(
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
            && ep.check_post(iface.state.tx.credits).is_ok()
            && ep.fc.has_window(&iface.state.fc)
        {
            return Err(Status::Busy);
        }
        if let Some(status) = ep.state().failed_status() {
            return Err(status);
        }
        ep.pending.push_back(req);
        Ok(())
    })())
}

unsafe extern "C" fn ep_pending_purge(
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
unsafe extern "C" fn iface_flush(
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
        let eps = rc.state.ep_handles();
        let mut in_progress = false;
        for ep in eps {
            // SAFETY: eps in the table are live; no callback runs here.
            let ep = unsafe { &mut *ep };
            // A failed ep never runs its pending requests again: nothing
            // of it is in progress (flush_ep below skips it too).
            if !ep.pending.is_empty() && ep.state().failed_status().is_none() {
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

unsafe extern "C" fn iface_fence(iface: uct_iface_h, _flags: c_uint) -> ucs_status_t {
    status_of((|| {
        // SAFETY: by the caller's contract.
        let rc = unsafe { RcIface::from_handle(iface, "uct_iface_fence") }?;
        rc.state.for_each_ep(|ep| ep.txwq_mut().fence());
        Ok(())
    })())
}

// ---------------------------------------------------------------- ep life

unsafe extern "C" fn ep_create(
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
        let ep = rc.state.create_ep(iface)?;
        // SAFETY: ep_p writable by the contract.
        unsafe { ep_p.write(ep as uct_ep_h) };
        tracing::debug!("{F}: ep {ep:p}");
        Ok(())
    })())
}

unsafe extern "C" fn ep_destroy(ep: uct_ep_h) {
    // SAFETY: by the caller's contract.
    if let Ok((rc_ep, iface)) = unsafe { ep_and_iface(ep, "uct_ep_destroy") } {
        iface.state.destroy_ep(rc_ep);
    }
}

unsafe extern "C" fn ep_get_address(ep: uct_ep_h, addr: *mut uct_ep_addr_t) -> ucs_status_t {
    const F: &str = "uct_ep_get_address";
    status_of((|| {
        // SAFETY: by the caller's contract.
        let ep = unsafe { RcEp::from_handle(ep, F) }?;
        if addr.is_null() {
            tracing::warn!("{F}: addr is NULL");
            return Err(Status::InvalidParam);
        }
        // A purged ep's address is that of its next QP.
        // SAFETY: an ep's handle names its live iface, an RcIface.
        let iface = unsafe { &mut *(ep.iface_handle() as *mut RcIface) };
        iface.state.renew_qp_if_due(ep)?;
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
unsafe fn connect_to_ep(
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
    // SAFETY: by the caller's contract.
    let (ep, iface) = unsafe { ep_and_iface(ep, function) }?;
    // A purged ep connects with a new QP.
    iface.state.renew_qp_if_due(ep)?;
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
    iface
        .state
        .connect_ep(
            ep,
            RemoteEp {
                address,
                qpn,
                generation,
            },
        )
        .inspect_err(|status| tracing::warn!("{function}: QP connect failed: {status}"))
}

unsafe extern "C" fn ep_connect_to_ep(
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

unsafe fn ep_connect_to_ep_v2(
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

unsafe fn ep_is_connected(ep: uct_ep_h, params: &uct_ep_is_connected_params_t) -> bool {
    // SAFETY: by the caller's contract.
    let Ok(ep) = (unsafe { RcEp::from_handle(ep, "uct_ep_is_connected") }) else {
        return false;
    };
    let Some(remote) = ep.remote() else {
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

// ---------------------------------------------------------------- iface

unsafe extern "C" fn iface_close(iface: uct_iface_h) {
    // SAFETY: by the caller's contract.
    if let Ok(rc) = unsafe { RcIface::from_handle(iface, "uct_iface_close") } {
        // SAFETY: live, closed once.
        unsafe { RcIface::close(rc) };
    }
}

unsafe extern "C" fn iface_progress(iface: uct_iface_h) -> c_uint {
    // SAFETY: by the caller's contract.
    match unsafe { RcIface::from_handle(iface, "uct_iface_progress") } {
        // SAFETY: live iface.
        Ok(rc) => unsafe { RcIface::progress(rc) },
        Err(_) => 0,
    }
}

unsafe extern "C" fn iface_progress_enable(iface: uct_iface_h, flags: c_uint) {
    // SAFETY: by the caller's contract.
    if let Ok(rc) = unsafe { RcIface::from_handle(iface, "uct_iface_progress_enable") } {
        rc.progress_enable(flags);
    }
}

unsafe extern "C" fn iface_progress_disable(iface: uct_iface_h, flags: c_uint) {
    // SAFETY: by the caller's contract.
    if let Ok(rc) = unsafe { RcIface::from_handle(iface, "uct_iface_progress_disable") } {
        rc.progress_disable(flags);
    }
}

unsafe extern "C" fn iface_event_fd_get(iface: uct_iface_h, fd_p: *mut c_int) -> ucs_status_t {
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

unsafe extern "C" fn iface_event_arm(iface: uct_iface_h, events: c_uint) -> ucs_status_t {
    status_of((|| {
        // SAFETY: by the caller's contract.
        let rc = unsafe { RcIface::from_handle(iface, "uct_iface_event_arm") }?;
        rc.event_arm(events)
    })())
}

unsafe extern "C" fn iface_get_device_address(
    iface: uct_iface_h,
    addr: *mut uct_device_addr_t,
) -> ucs_status_t {
    const F: &str = "uct_iface_get_device_address";
    status_of((|| {
        // SAFETY: by the caller's contract.
        let rc = unsafe { RcIface::from_handle(iface, F) }?;
        if addr.is_null() {
            tracing::warn!("{F}: addr is NULL");
            return Err(Status::InvalidParam);
        }
        // All `device_addr_len` bytes are written, the unused tail as
        // zeros: callers send the whole reported length to the peer.
        let mut packed = [0u8; DeviceAddress::MAX_PACKED_LEN];
        rc.state.address.pack(&mut packed)?;
        // SAFETY: writable for device_addr_len (= MAX_PACKED_LEN) bytes by
        // the contract.
        unsafe { std::ptr::copy_nonoverlapping(packed.as_ptr(), addr as *mut u8, packed.len()) };
        Ok(())
    })())
}

unsafe extern "C" fn iface_get_address(
    iface: uct_iface_h,
    addr: *mut uct_iface_addr_t,
) -> ucs_status_t {
    // rc connects ep to ep; the iface address is UCX 1.13 rc_mlx5's one
    // byte, its address type: basic (no hardware tag matching).
    status_of((|| {
        // SAFETY: by the caller's contract.
        unsafe { RcIface::from_handle(iface, "uct_iface_get_address") }?;
        if addr.is_null() {
            tracing::warn!("uct_iface_get_address: NULL addr");
            return Err(Status::InvalidParam);
        }
        // SAFETY: writable for iface_addr_len (1) bytes by the contract.
        unsafe { addr.cast::<u8>().write(IFACE_ADDR_TYPE_BASIC) };
        Ok(())
    })())
}

/// Bytes of the iface address, and its only value (UCX 1.13's rc_mlx5
/// `UCT_RC_MLX5_IFACE_ADDR_TYPE_BASIC`; a peer with hardware tag matching
/// sends another type and is not reachable).
const IFACE_ADDR_LEN: usize = 1;
const IFACE_ADDR_TYPE_BASIC: u8 = 0;

/// Whether a peer's iface address (NULL: not given) is of a type we talk to.
///
/// # Safety
/// `iface_addr` NULL or readable for [`IFACE_ADDR_LEN`] bytes.
unsafe fn iface_addr_reachable(iface_addr: *const uct_iface_addr_t) -> bool {
    // SAFETY: by the contract.
    iface_addr.is_null() || unsafe { iface_addr.cast::<u8>().read() } == IFACE_ADDR_TYPE_BASIC
}

/// Whether a peer's device address is one we can reach.
///
/// # Safety
/// `dev_addr` NULL or readable for `len` bytes.
unsafe fn device_reachable(dev_addr: *const uct_device_addr_t, len: usize) -> bool {
    if dev_addr.is_null() {
        return false;
    }
    // SAFETY: by the contract.
    let bytes = unsafe { std::slice::from_raw_parts(dev_addr as *const u8, len) };
    DeviceAddress::unpack(bytes).is_ok()
}

unsafe extern "C" fn iface_is_reachable(
    iface: uct_iface_h,
    dev_addr: *const uct_device_addr_t,
    iface_addr: *const uct_iface_addr_t,
) -> c_int {
    // SAFETY: by the caller's contract.
    if unsafe { RcIface::from_handle(iface, "uct_iface_is_reachable") }.is_err() {
        return 0;
    }
    // SAFETY: a device address of ours is MAX_PACKED_LEN bytes; an iface
    // address IFACE_ADDR_LEN.
    c_int::from(unsafe {
        iface_addr_reachable(iface_addr)
            && device_reachable(dev_addr, DeviceAddress::MAX_PACKED_LEN)
    })
}

unsafe fn iface_is_reachable_v2(
    iface: uct_iface_h,
    params: &uct_iface_is_reachable_params_t,
) -> bool {
    // SAFETY: by the caller's contract.
    if unsafe { RcIface::from_handle(iface, "uct_iface_is_reachable_v2") }.is_err() {
        return false;
    }
    if params.field_mask & u64::from(UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR) == 0 {
        return false;
    }
    if params.field_mask & u64::from(UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR) != 0
        // SAFETY: readable for IFACE_ADDR_LEN bytes (or NULL) by the contract.
        && !unsafe { iface_addr_reachable(params.iface_addr) }
    {
        return false;
    }
    let len = if params.field_mask & u64::from(UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH) != 0
    {
        params.device_addr_length
    } else {
        DeviceAddress::MAX_PACKED_LEN
    };
    // SAFETY: readable for len bytes by the contract.
    unsafe { device_reachable(params.device_addr, len) }
}

/// The `uct_iface_attr_t` of an iface.
pub fn attributes(rc: &RcIface) -> uct_iface_attr_t {
    let limits = &rc.state.limits;
    // SAFETY: uct_iface_attr_t is plain data (numbers, a sockaddr_storage);
    // all-zero is a valid value of every field.
    let mut attr: uct_iface_attr_t = unsafe { std::mem::zeroed() };
    let mtu = rc.state.path_mtu.bytes() as usize;
    attr.cap.put.max_short = limits.put_max_short;
    attr.cap.put.max_bcopy = limits.put_max_bcopy;
    attr.cap.put.min_zcopy = 0;
    attr.cap.put.max_zcopy = limits.max_zcopy;
    attr.cap.put.opt_zcopy_align = 512;
    attr.cap.put.align_mtu = mtu;
    attr.cap.put.max_iov = limits.max_iov;
    attr.cap.get.max_short = limits.get_max_short;
    attr.cap.get.max_bcopy = limits.get_max_bcopy;
    attr.cap.get.min_zcopy = 0;
    attr.cap.get.max_zcopy = limits.max_zcopy;
    attr.cap.get.opt_zcopy_align = 512;
    attr.cap.get.align_mtu = mtu;
    attr.cap.get.max_iov = limits.max_iov;
    attr.cap.am.max_short = limits.am_max_short;
    attr.cap.am.max_bcopy = limits.am_max_bcopy;
    attr.cap.am.min_zcopy = 0;
    attr.cap.am.max_zcopy = limits.am_max_zcopy;
    attr.cap.am.opt_zcopy_align = 512;
    attr.cap.am.align_mtu = mtu;
    attr.cap.am.max_hdr = limits.am_max_hdr;
    attr.cap.am.max_iov = MAX_SHORT_IOV;
    attr.cap.flags = CAP_FLAGS;
    crate::rc::atomic::advertise(&mut attr, rc.state.domain.device.attr().atomics);
    attr.cap.event_flags = EVENT_FLAGS;
    attr.device_addr_len = DeviceAddress::MAX_PACKED_LEN;
    attr.iface_addr_len = IFACE_ADDR_LEN;
    attr.ep_addr_len = EP_ADDR_LEN;
    attr.max_conn_priv = 0;
    // Estimates for the soft HCA (RoCEv2 over UDP in software).
    attr.overhead = 40e-9;
    attr.bandwidth = uct_ppn_bandwidth_t {
        dedicated: 0.0,
        shared: 1.0e9,
    };
    attr.latency = ucs_linear_func_t { c: 10e-6, m: 1e-9 };
    attr.priority = 0;
    attr.max_num_eps = usize::MAX;
    attr.dev_num_paths = 1;
    attr.ctl_device = UCS_SYS_DEVICE_ID_UNKNOWN;
    attr
}

unsafe extern "C" fn iface_query(
    iface: uct_iface_h,
    iface_attr: *mut uct_iface_attr_t,
) -> ucs_status_t {
    const F: &str = "uct_iface_query";
    status_of((|| {
        // SAFETY: by the caller's contract.
        let rc = unsafe { RcIface::from_handle(iface, F) }?;
        if iface_attr.is_null() {
            tracing::warn!("{F}: iface_attr is NULL");
            return Err(Status::InvalidParam);
        }
        // SAFETY: writable for sizeof(uct_iface_attr_t) (536 bytes in 1.13
        // and master, our struct's size) by the contract.
        unsafe { iface_attr.write(attributes(rc)) };
        Ok(())
    })())
}

pub(crate) unsafe fn iface_query_v2(
    iface: uct_iface_h,
    attr: *mut uct_iface_attr_v2_t,
) -> Result<(), Status> {
    // SAFETY: valid per the entry point's checks.
    unsafe { query_v2_defaults(attr) }?;
    // SAFETY: by the caller's contract.
    unsafe { RcIface::from_handle(iface, "uct_iface_query_v2") }?;
    Ok(())
}
