//! The RMA slots: put and get, short, bcopy and zcopy.

use std::ffi::{c_uint, c_void};

use super::args::{
    check_len, in_progress, null_argument, null_buffer, slot, status_of, CBytes, CIov, EpArg,
    PackCb,
};
use crate::abi::*;
use crate::ib::rkey::rdma_rkey;
use crate::mlx5::{self, DataSeg, InlineSegs, RaddrSeg};
use crate::rc::ep::{bounce_from_pool, Bounce, CompletionAction, OpKind, PostSpec, RcEp};
use crate::rc::iface::RcIface;
use crate::rc::pool::BufferPool;

/// A spec for an op on remote memory at `remote_addr` with the user's
/// `rkey`, and the RADDR segment of its WQE.
#[inline(always)]
fn remote_spec(
    kind: OpKind,
    opcode: u8,
    length: usize,
    remote_addr: u64,
    uct_rkey: uct_rkey_t,
) -> (PostSpec, RaddrSeg) {
    let rkey = rdma_rkey(uct_rkey);
    let mut spec = PostSpec::new(kind, opcode, length);
    spec.posted.remote_addr = remote_addr;
    spec.posted.rkey = rkey;
    spec.posted.uct_rkey = uct_rkey;
    let raddr = RaddrSeg {
        raddr: remote_addr,
        rkey,
    };
    (spec, raddr)
}

#[inline(always)]
fn put_short(ep: EpArg, data: CBytes, remote_addr: u64, rkey: uct_rkey_t) -> Result<(), Status> {
    const F: &str = "uct_ep_put_short";
    let (ep, iface) = ep.ep_and_iface(F)?;
    let length = data.len();
    check_len(F, length, iface.state.limits.put_max_short)?;
    let data = data.get(F)?;
    let (spec, raddr) = remote_spec(
        OpKind::PutShort,
        mlx5::MLX5_OPCODE_RDMA_WRITE,
        length,
        remote_addr,
        rkey,
    );
    let credits = &mut iface.state.tx.credits;
    ep.ready(*credits)?.post_inline(
        credits,
        spec,
        InlineSegs {
            raddr: Some(raddr),
            head: &[],
            data,
        },
    )
}

slot! {
    fn ep_put_short(
        ep: uct_ep_h,
        buffer: *const c_void,
        length: c_uint,
        remote_addr: u64,
        rkey: uct_rkey_t,
    ) -> ucs_status_t;
    take ep: EpArg = (ep), data: CBytes = (buffer, length);
    { status_of(put_short(ep, data, remote_addr, rkey)) }
}

/// Posts a WRITE/READ of `length` bytes between remote memory and
/// `bounce` (put_bcopy, get_short, get_bcopy). On error nothing is posted
/// and the buffer goes back to the pool.
fn post_with_bounce(
    ep: &mut RcEp,
    iface: &mut RcIface,
    (mut spec, raddr): (PostSpec, RaddrSeg),
    bounce: Bounce,
) -> Result<(), Status> {
    let length = spec.posted.length;
    spec.posted.bounce = Some(bounce);
    let lkey = BufferPool::bounce_lkey(&bounce);
    let credits = &mut iface.state.tx.credits;
    ep.ready(*credits)?
        .post(credits, spec, |wqe| {
            wqe.raddr(raddr);
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

fn put_bcopy(ep: EpArg, pack: PackCb, remote_addr: u64, rkey: uct_rkey_t) -> Result<isize, Status> {
    const F: &str = "uct_ep_put_bcopy";
    let (ep, iface) = ep.ep_and_iface(F)?;
    pack.check(F)?;
    ep.check_post(iface.state.tx.credits)?;
    let bounce = bounce_from_pool(&mut iface.state.tx.pool, 0)?;
    let packed = pack.pack(&bounce, &[]);
    if packed > iface.state.limits.put_max_bcopy {
        tracing::error!("{F}: pack callback wrote {packed} bytes, more than max_bcopy");
        iface.state.tx.pool.put(bounce.buffer);
        return Err(Status::InvalidParam);
    }
    let spec = remote_spec(
        OpKind::PutBcopy,
        mlx5::MLX5_OPCODE_RDMA_WRITE,
        packed,
        remote_addr,
        rkey,
    );
    post_with_bounce(ep, iface, spec, bounce)?;
    Ok(packed as isize)
}

slot! {
    fn ep_put_bcopy(
        ep: uct_ep_h,
        pack_cb: uct_pack_callback_t,
        arg: *mut c_void,
        remote_addr: u64,
        rkey: uct_rkey_t,
    ) -> isize;
    take ep: EpArg = (ep), pack: PackCb = (pack_cb, arg);
    { put_bcopy(ep, pack, remote_addr, rkey).unwrap_or_else(|status| isize::from(status.raw())) }
}

/// put_zcopy and get_zcopy: one WRITE/READ from/into registered memory.
fn rma_zcopy(
    function: &str,
    (kind, opcode): (OpKind, u8),
    ep: EpArg,
    iov: CIov,
    remote_addr: u64,
    rkey: uct_rkey_t,
    comp: *mut uct_completion_t,
) -> Result<(), Status> {
    let (ep, iface) = ep.ep_and_iface(function)?;
    let mut segments = [DataSeg::default(); 16];
    // No iov is a zero-length WRITE/READ (UCX allows it; `iov` may then be
    // NULL).
    let (count, total) = if iov.len() == 0 {
        (0, 0)
    } else {
        iov.segments(function, iface.state.limits.max_iov, &mut segments)?
    };
    check_len(function, total, iface.state.limits.max_zcopy)?;
    let (mut spec, raddr) = remote_spec(kind, opcode, total, remote_addr, rkey);
    spec.posted.comp = comp;
    spec.posted.iov = Some(iov.copy());
    let credits = &mut iface.state.tx.credits;
    ep.ready(*credits)?.post(credits, spec, |wqe| {
        wqe.raddr(raddr);
        for segment in &segments[..count] {
            wqe.data(*segment);
        }
    })
}

/// put_zcopy and get_zcopy: the same slot over [`rma_zcopy`].
macro_rules! rma_zcopy_slot {
    ($($name:ident: $function:literal, $kind:ident, $opcode:ident;)+) => {$(
        slot! {
            fn $name(ep: uct_ep_h, iov: *const uct_iov_t, iovcnt: usize, remote_addr: u64,
                     rkey: uct_rkey_t, comp: *mut uct_completion_t) -> ucs_status_t;
            take ep: EpArg = (ep), iov: CIov = (iov, iovcnt);
            {
                let op = (OpKind::$kind, mlx5::$opcode);
                in_progress(rma_zcopy($function, op, ep, iov, remote_addr, rkey, comp))
            }
        }
    )+};
}

rma_zcopy_slot! {
    ep_put_zcopy: "uct_ep_put_zcopy", PutZcopy, MLX5_OPCODE_RDMA_WRITE;
    ep_get_zcopy: "uct_ep_get_zcopy", GetZcopy, MLX5_OPCODE_RDMA_READ;
}

/// Posts the RDMA READ of `spec.length` bytes at `remote_addr` into a
/// bounce buffer of the send pool, which the op owns (get_short reads it
/// once the READ completed; for get_bcopy `spec.action` says what happens
/// to the data at completion).
fn post_read_into_bounce(
    ep: &mut RcEp,
    iface: &mut RcIface,
    spec: (PostSpec, RaddrSeg),
) -> Result<Bounce, Status> {
    ep.check_post(iface.state.tx.credits)?;
    let bounce = bounce_from_pool(&mut iface.state.tx.pool, 0)?;
    post_with_bounce(ep, iface, spec, bounce)?;
    Ok(bounce)
}

/// get_short: synchronous, as UCX's callers use it (UCP treats any answer
/// but `UCS_OK` as a failure; UCX's copy transports finish it inside the
/// call). An RDMA READ into a bounce buffer, signalled; the call waits for
/// its CQE ([`crate::rc::iface::IfaceState::wait_for_send_cqe`]: no CQE is
/// taken and no callback runs), copies the data into `buffer` and returns
/// `UCS_OK`, or the status of the READ's error CQE. The op stays in the
/// send queue, holding its ring blocks, CQ credit and bounce buffer, until
/// progress takes the CQE; from then on it is the caller's no more (purge
/// drops it: [`OpKind::class`]).
fn get_short(
    ep: EpArg,
    buffer: *mut c_void,
    length: c_uint,
    remote_addr: u64,
    rkey: uct_rkey_t,
) -> Result<(), Status> {
    const F: &str = "uct_ep_get_short";
    let (ep, iface) = ep.ep_and_iface(F)?;
    let length = length as usize;
    check_len(F, length, iface.state.limits.get_max_short)?;
    if length > 0 && buffer.is_null() {
        return Err(null_buffer(F, length));
    }
    let mut spec = remote_spec(
        OpKind::GetShort,
        mlx5::MLX5_OPCODE_RDMA_READ,
        length,
        remote_addr,
        rkey,
    );
    spec.0.force_signal = true;
    let bounce = post_read_into_bounce(ep, iface, spec)?;
    // The READ just posted is the newest op of the ep.
    let Some(wqe_index) = ep.txwq().last().map(|op| op.wqe_index) else {
        tracing::error!("{F}: the READ just posted is not in the send queue");
        return Err(Status::IoError);
    };
    iface.state.wait_for_send_cqe(ep.qp(), wqe_index)?;
    if length > 0 {
        // SAFETY: the READ's CQE says its `length` bytes are at
        // bounce.data, which the op owns until progress takes that CQE
        // (not before this call returns); the caller's buffer holds
        // `length` bytes, and the two never overlap.
        unsafe { std::ptr::copy_nonoverlapping(bounce.data, buffer.cast::<u8>(), length) };
    }
    ep.txwq_mut().completion_seen(wqe_index);
    Ok(())
}

slot! {
    fn ep_get_short(
        ep: uct_ep_h,
        buffer: *mut c_void,
        length: c_uint,
        remote_addr: u64,
        rkey: uct_rkey_t,
    ) -> ucs_status_t;
    take ep: EpArg = (ep);
    { status_of(get_short(ep, buffer, length, remote_addr, rkey)) }
}

slot! {
    fn ep_get_bcopy(ep: uct_ep_h, unpack_cb: uct_unpack_callback_t, arg: *mut c_void, length: usize,
                    remote_addr: u64, rkey: uct_rkey_t, comp: *mut uct_completion_t) -> ucs_status_t;
    take ep: EpArg = (ep);
    {
        const F: &str = "uct_ep_get_bcopy";
        in_progress((|| {
            let (ep, iface) = ep.ep_and_iface(F)?;
            if unpack_cb.is_none() {
                return Err(null_argument(F, "unpack_cb"));
            }
            check_len(F, length, iface.state.limits.get_max_bcopy)?;
            let mut spec = remote_spec(
                OpKind::GetBcopy,
                mlx5::MLX5_OPCODE_RDMA_READ,
                length,
                remote_addr,
                rkey,
            );
            spec.0.posted.comp = comp;
            spec.0.force_signal = true;
            // The callback runs at completion, from the op table's Unpack.
            spec.0.posted.action = CompletionAction::Unpack {
                unpack_cb,
                arg,
                length,
            };
            post_read_into_bounce(ep, iface, spec).map(|_| ())
        })())
    }
}
