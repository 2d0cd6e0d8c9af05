//! The RMA slots: put and get, short, bcopy and zcopy.

use std::ffi::{c_uint, c_void};

use super::args::{
    c_bytes, check_len, ep_and_iface, iov_copy, iov_segments, null_buffer, status_of,
};
use crate::abi::*;
use crate::ib::rkey::rdma_rkey;
use crate::mlx5::{self, DataSeg, RaddrSeg};
use crate::rc::ep::{bounce_from_pool, CompletionAction, OpKind, PostSpec, RcEp};
use crate::rc::iface::RcIface;
use crate::rc::pool::BufferPool;

pub(super) unsafe extern "C" fn ep_put_short(
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
        ep.post_inline(&mut iface.state.tx_credits, spec, Some(raddr), &[], data)
    })())
}

pub(super) unsafe extern "C" fn ep_put_bcopy(
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
        ep.check_post(iface.state.tx_credits)?;
        let bounce = bounce_from_pool(&mut iface.state.tx_pool, 0)?;
        // SAFETY: the data area holds seg_size (= max_bcopy) bytes.
        let packed = unsafe { pack(bounce.data as *mut c_void, arg) };
        if packed > iface.state.limits.put_max_bcopy {
            tracing::error!("{F}: pack callback wrote {packed} bytes, more than max_bcopy");
            iface.state.tx_pool.put(bounce.buffer);
            return Err(Status::InvalidParam);
        }
        let (uct_rkey, rkey) = (rkey, rdma_rkey(rkey));
        let mut spec = PostSpec::new(OpKind::PutBcopy, mlx5::MLX5_OPCODE_RDMA_WRITE, packed);
        spec.remote_addr = remote_addr;
        spec.rkey = rkey;
        spec.uct_rkey = uct_rkey;
        spec.bounce = Some(bounce);
        let lkey = BufferPool::bounce_lkey(&bounce);
        ep.post(&mut iface.state.tx_credits, spec, |wqe| {
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
        .inspect_err(|_| iface.state.tx_pool.put(bounce.buffer))?;
        Ok(packed as isize)
    })();
    result.unwrap_or_else(|status| isize::from(status.raw()))
}

/// put_zcopy and get_zcopy: one WRITE/READ from/into registered memory.
///
/// # Safety
/// As the slots.
#[allow(clippy::too_many_arguments)] // the slot's arguments plus the op
pub(super) unsafe fn rma_zcopy(
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
        ep.post(&mut iface.state.tx_credits, spec, |wqe| {
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

pub(super) unsafe extern "C" fn ep_put_zcopy(
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

pub(super) unsafe extern "C" fn ep_get_zcopy(
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
pub(super) fn post_read_into_bounce(
    ep: &mut RcEp,
    iface: &mut RcIface,
    mut spec: PostSpec,
    remote_addr: u64,
    uct_rkey: uct_rkey_t,
) -> Result<(), Status> {
    ep.check_post(iface.state.tx_credits)?;
    let bounce = bounce_from_pool(&mut iface.state.tx_pool, 0)?;
    let rkey = rdma_rkey(uct_rkey);
    let length = spec.length;
    spec.remote_addr = remote_addr;
    spec.rkey = rkey;
    spec.uct_rkey = uct_rkey;
    spec.bounce = Some(bounce);
    let lkey = BufferPool::bounce_lkey(&bounce);
    ep.post(&mut iface.state.tx_credits, spec, |wqe| {
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
    .inspect_err(|_| iface.state.tx_pool.put(bounce.buffer))
}

/// get_short: an RDMA READ into a bounce buffer, copied into `buffer` when
/// its completion is processed. Returns `UCS_INPROGRESS` once posted, not
/// `UCS_OK`: UCX's callers read `UCS_OK` from get_short as "the data is in
/// `buffer`" (the copy transports finish it inside the call), which a
/// network read cannot promise. The data is in `buffer` when a later flush
/// completes (the flush's CQE completes this op first, in posting order).
pub(super) unsafe extern "C" fn ep_get_short(
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

pub(super) unsafe extern "C" fn ep_get_bcopy(
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
