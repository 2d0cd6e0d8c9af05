//! The RMA slots: put and get, short, bcopy and zcopy.

use std::ffi::{c_uint, c_void};

use super::args::{
    check_len, in_progress, null_argument, null_buffer, slot, status_of, CBytes, CIov, EpArg,
    PackCb,
};
use crate::abi::*;
use crate::failover::{PostedOp, RemoteTarget};
use crate::ib::rkey::rdma_rkey;
use crate::mlx5::{self, DataSeg, InlineSegs, RaddrSeg};
use crate::rc::ep::{bounce_from_pool, Bounce, PostSpec, RcEp};
use crate::rc::iface::RcIface;
use crate::uct::pool::BufferPool;

/// Remote memory at `remote_addr` with the user's `rkey`: as the op
/// records it, and as the RADDR segment of its WQE names it (the device
/// key).
#[inline(always)]
fn remote_target(remote_addr: u64, rkey: uct_rkey_t) -> (RemoteTarget, RaddrSeg) {
    let remote = RemoteTarget {
        address: remote_addr,
        rkey,
    };
    let raddr = RaddrSeg {
        raddr: remote_addr,
        rkey: rdma_rkey(rkey),
    };
    (remote, raddr)
}

/// A spec for `op` on the remote memory of `raddr`.
#[inline(always)]
fn remote_spec(op: PostedOp, opcode: u8, length: usize, raddr: RaddrSeg) -> (PostSpec, RaddrSeg) {
    (PostSpec::new(op, opcode, length).rkey(raddr.rkey), raddr)
}

#[inline(always)]
fn put_short(ep: EpArg, data: CBytes, remote_addr: u64, rkey: uct_rkey_t) -> Result<(), Status> {
    const F: &str = "uct_ep_put_short";
    let (ep, iface) = ep.ep_and_iface(F)?;
    let length = data.len();
    check_len(F, length, iface.state.limits().put_max_short())?;
    let data = data.get(F)?;
    let (remote, raddr) = remote_target(remote_addr, rkey);
    let (spec, raddr) = remote_spec(
        PostedOp::PutShort { remote },
        mlx5::MLX5_OPCODE_RDMA_WRITE,
        length,
        raddr,
    );
    let credits = &mut iface.state.tx_mut().credits;
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
    (spec, raddr): (PostSpec, RaddrSeg),
    bounce: Bounce,
) -> Result<(), Status> {
    let length = spec.length();
    let spec = spec.bounce(bounce);
    let lkey = BufferPool::bounce_lkey(&bounce);
    let credits = &mut iface.state.tx_mut().credits;
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
        .inspect_err(|_| iface.state.tx_mut().pool.put(bounce.buffer))
}

fn put_bcopy(ep: EpArg, pack: PackCb, remote_addr: u64, rkey: uct_rkey_t) -> Result<isize, Status> {
    const F: &str = "uct_ep_put_bcopy";
    let (ep, iface) = ep.ep_and_iface(F)?;
    pack.check(F)?;
    ep.check_post(iface.state.tx().credits)?;
    let bounce = bounce_from_pool(&mut iface.state.tx_mut().pool, 0)?;
    let packed = pack.pack(&bounce, &[]);
    if packed > iface.state.limits().put_max_bcopy() {
        tracing::error!("{F}: pack callback wrote {packed} bytes, more than max_bcopy");
        iface.state.tx_mut().pool.put(bounce.buffer);
        return Err(Status::InvalidParam);
    }
    let (remote, raddr) = remote_target(remote_addr, rkey);
    let spec = remote_spec(
        PostedOp::PutBcopy { remote },
        mlx5::MLX5_OPCODE_RDMA_WRITE,
        packed,
        raddr,
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

/// What [`rma_zcopy`] records: put_zcopy or get_zcopy on this remote
/// memory with this iov and completion.
type ZcopyOp = fn(RemoteTarget, Box<[uct_iov_t]>, *mut uct_completion_t) -> PostedOp;

/// put_zcopy and get_zcopy: one WRITE/READ from/into registered memory.
fn rma_zcopy(
    function: &str,
    (zcopy_op, opcode): (ZcopyOp, u8),
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
        iov.segments(function, iface.state.limits().max_iov(), &mut segments)?
    };
    check_len(function, total, iface.state.limits().max_zcopy())?;
    let (remote, raddr) = remote_target(remote_addr, rkey);
    let op = zcopy_op(remote, iov.copy(), comp);
    let (spec, raddr) = remote_spec(op, opcode, total, raddr);
    let credits = &mut iface.state.tx_mut().credits;
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
                let zcopy_op: ZcopyOp = |remote, iov, comp| PostedOp::$kind { remote, iov, comp };
                let op = (zcopy_op, mlx5::$opcode);
                in_progress(rma_zcopy($function, op, ep, iov, remote_addr, rkey, comp))
            }
        }
    )+};
}

rma_zcopy_slot! {
    ep_put_zcopy: "uct_ep_put_zcopy", PutZcopy, MLX5_OPCODE_RDMA_WRITE;
    ep_get_zcopy: "uct_ep_get_zcopy", GetZcopy, MLX5_OPCODE_RDMA_READ;
}

/// Posts the RDMA READ of `spec.length()` bytes into a bounce buffer of the
/// send pool, which the op owns (get_short reads it once the READ
/// completed; for get_bcopy the op says what happens to the data at
/// completion).
fn post_read_into_bounce(
    ep: &mut RcEp,
    iface: &mut RcIface,
    spec: (PostSpec, RaddrSeg),
) -> Result<Bounce, Status> {
    ep.check_post(iface.state.tx().credits)?;
    let bounce = bounce_from_pool(&mut iface.state.tx_mut().pool, 0)?;
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
/// drops it: [`PostedOp::class`]).
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
    check_len(F, length, iface.state.limits().get_max_short())?;
    if length > 0 && buffer.is_null() {
        return Err(null_buffer(F, length));
    }
    let (remote, raddr) = remote_target(remote_addr, rkey);
    let get = PostedOp::GetShort {
        remote,
        buffer,
        length,
    };
    let (spec, raddr) = remote_spec(get, mlx5::MLX5_OPCODE_RDMA_READ, length, raddr);
    let bounce = post_read_into_bounce(ep, iface, (spec.signaled(), raddr))?;
    // The READ just posted is the newest op of the ep.
    let Some(wqe_index) = ep.txwq().last().map(|op| op.wqe_index()) else {
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
            check_len(F, length, iface.state.limits().get_max_bcopy())?;
            let (remote, raddr) = remote_target(remote_addr, rkey);
            // The callback runs at completion, on the bounce buffer.
            let get = PostedOp::GetBcopy {
                remote,
                unpack_cb,
                arg,
                length,
                comp,
            };
            let (spec, raddr) = remote_spec(get, mlx5::MLX5_OPCODE_RDMA_READ, length, raddr);
            post_read_into_bounce(ep, iface, (spec.signaled(), raddr)).map(|_| ())
        })())
    }
}
