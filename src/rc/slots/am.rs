//! The active-message slots: am_short, am_short_iov, am_bcopy, am_zcopy.

use std::ffi::{c_uint, c_void};

use super::args::{
    c_bytes, check_len, ep_and_iface, iov_copy, iov_segments, status_of, MAX_SHORT_IOV,
};
use crate::abi::*;
use crate::mlx5::{self, DataSeg};
use crate::rc::ep::{bounce_from_pool, OpKind, PostSpec, RcEp};
use crate::rc::iface::{am_header, RcIface, AM_HDR_LEN};
use crate::rc::pool::BufferPool;

/// The flow-control bits of the next AM on `ep`. An exhausted window means
/// `UCS_ERR_NO_RESOURCE` only while a grant can still come: a failed or
/// cancelled ep answers its own status, or retry loops would spin forever.
#[inline(always)]
pub(super) fn am_fc_bits(ep: &mut RcEp, iface: &RcIface) -> Result<u8, Status> {
    match ep.fc.am_bits(&iface.state.fc) {
        Ok(bits) => Ok(bits),
        Err(window_closed) => Err(fc_refusal(ep, iface.state.tx_credits, window_closed)),
    }
}

/// The rare half of [`am_fc_bits`]: the ep's own refusal, if it has one,
/// wins over the closed window.
#[cold]
#[inline(never)]
pub(super) fn fc_refusal(ep: &RcEp, credits: u32, window_closed: Status) -> Status {
    match ep.check_post(credits) {
        Err(status) if status != Status::NoResource => status,
        _ => window_closed,
    }
}

#[inline(always)]
pub(super) fn check_am_id(function: &str, id: u8) -> Result<(), Status> {
    if u32::from(id) >= UCT_AM_ID_MAX {
        return Err(bad_am_id(function, id));
    }
    Ok(())
}

/// The logging half of [`check_am_id`], kept out of the posting path.
#[cold]
#[inline(never)]
pub(super) fn bad_am_id(function: &str, id: u8) -> Status {
    tracing::warn!("{function}: active message id {id} is not below {UCT_AM_ID_MAX}");
    Status::InvalidParam
}

pub(super) unsafe extern "C" fn ep_am_short(
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
        ep.post_inline(&mut iface.state.tx_credits, spec, None, &head, payload)?;
        ep.fc.sent(fc_bits, &iface.state.fc);
        Ok(())
    })())
}

pub(super) unsafe extern "C" fn ep_am_short_iov(
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
        ep.post(&mut iface.state.tx_credits, spec, |wqe| {
            wqe.inline(&parts[..iovcnt + 1]);
        })?;
        ep.fc.sent(fc_bits, &iface.state.fc);
        Ok(())
    })())
}

pub(super) unsafe extern "C" fn ep_am_bcopy(
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
        ep.check_post(iface.state.tx_credits)?;
        let bounce = bounce_from_pool(&mut iface.state.tx_pool, 0)?;
        // SAFETY: the bounce data area holds seg_size bytes; the AM header
        // first, the caller packs at most max_bcopy after it.
        let packed = unsafe {
            let header = am_header(id | fc_bits);
            std::ptr::copy_nonoverlapping(header.as_ptr(), bounce.data, AM_HDR_LEN);
            pack(bounce.data.add(AM_HDR_LEN) as *mut c_void, arg)
        };
        if packed > iface.state.limits.am_max_bcopy {
            tracing::error!("{F}: pack callback wrote {packed} bytes, more than max_bcopy");
            iface.state.tx_pool.put(bounce.buffer);
            return Err(Status::InvalidParam);
        }
        let total = AM_HDR_LEN + packed;
        let mut spec = PostSpec::new(OpKind::AmBcopy, mlx5::MLX5_OPCODE_SEND, total);
        spec.am_id = Some(id);
        spec.am_flags = flags;
        spec.bounce = Some(bounce);
        let lkey = BufferPool::bounce_lkey(&bounce);
        ep.post(&mut iface.state.tx_credits, spec, |wqe| {
            wqe.data(DataSeg {
                byte_count: total as u32,
                lkey,
                addr: bounce.data as u64,
            });
        })
        .inspect_err(|_| iface.state.tx_pool.put(bounce.buffer))?;
        ep.fc.sent(fc_bits, &iface.state.fc);
        Ok(packed as isize)
    })();
    result.unwrap_or_else(|status| isize::from(status.raw()))
}

pub(super) unsafe extern "C" fn ep_am_zcopy(
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
        ep.post(&mut iface.state.tx_credits, spec, |wqe| {
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
