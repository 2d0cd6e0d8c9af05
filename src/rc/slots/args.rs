//! The argument core of the slots: from a C handle to the ep and its
//! iface, from C buffers and iov arrays to slices and data segments, and
//! the length and NULL checks with their log lines.

use std::ffi::c_void;

use crate::abi::*;
use crate::ib::domain::MemHandle;
use crate::mlx5::DataSeg;
use crate::rc::ep::RcEp;
use crate::rc::iface::RcIface;

/// Largest iov count of `am_short_iov`.
pub(super) const MAX_SHORT_IOV: usize = 8;

/// Maps a `Result` to a slot's status.
#[inline]
pub(super) fn status_of(result: Result<(), Status>) -> ucs_status_t {
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
pub(super) unsafe fn ep_and_iface<'a>(
    ep: uct_ep_h,
    function: &str,
) -> Result<(&'a mut RcEp, &'a mut RcIface), Status> {
    // SAFETY: by the contract.
    let rc_ep = unsafe { RcEp::from_handle(ep, function) }?;
    // SAFETY: the ep's iface outlives it.
    let iface = unsafe { &mut *rc_ep.iface };
    Ok((rc_ep, iface))
}

#[inline(always)]
pub(super) fn check_len(function: &str, length: usize, max: usize) -> Result<(), Status> {
    if length > max {
        return Err(length_exceeded(function, length, max));
    }
    Ok(())
}

/// The logging half of [`check_len`], kept out of the posting path.
#[cold]
#[inline(never)]
pub(super) fn length_exceeded(function: &str, length: usize, max: usize) -> Status {
    tracing::warn!("{function}: length {length} exceeds the limit {max}");
    Status::InvalidParam
}

#[cold]
#[inline(never)]
pub(super) fn null_buffer(function: &str, length: usize) -> Status {
    tracing::warn!("{function}: NULL buffer with length {length}");
    Status::InvalidParam
}

/// A byte slice from a C buffer; NULL is allowed only when `length` is 0.
///
/// # Safety
/// `buffer` readable for `length` bytes when non-NULL.
#[inline(always)]
pub(super) unsafe fn c_bytes<'a>(
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

/// The data segments of a zcopy iov, empty entries left out: returns how
/// many were written to `segments` and the total length. Every entry must
/// lie in its memory handle's registration.
///
/// # Safety
/// `iov` readable for `iovcnt` entries when non-NULL.
pub(super) unsafe fn iov_segments(
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
pub(super) unsafe fn iov_copy(iov: *const uct_iov_t, iovcnt: usize) -> Box<[uct_iov_t]> {
    if iovcnt == 0 || iov.is_null() {
        return Box::default();
    }
    // SAFETY: iovcnt readable entries by the contract.
    unsafe { std::slice::from_raw_parts(iov, iovcnt) }.into()
}
