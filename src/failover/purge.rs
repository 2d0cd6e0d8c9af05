//! The transport-neutral half of `uct_ep_outstanding_purge`'s effects: what
//! an outstanding op looks like to the caller ([`PostedOp::op_info`], the
//! `uct_ep_op_info_t`), handing it to the caller's callback
//! ([`report_op`]), and what a purge came to ([`PurgeSummary`]).
//!
//! A transport's purge is then:
//! 1. check the RX token against the ep's connection and classify the ops
//!    ([`crate::failover::prepare_purge`]: one [`Verdict`] per op) — on
//!    error, return its status *before touching anything*;
//! 2. take the ops out of the table (so the callback may post, even on this
//!    ep's iface, without aliasing the table) and apply each verdict's
//!    [`Verdict::action`] in posting order, in one loop of its own:
//!    complete the op, report it (via [`report_op`]) or drop it, and
//!    release what it holds (bounce buffers, ring space, credits).

use std::ffi::{c_uint, c_void};

use crate::abi::*;
use crate::failover::classify::{Action, Verdict};
use crate::failover::op::{PostedOp, RemoteTarget};
use crate::mlx5::AtomicSize;

impl PostedOp {
    /// The `uct_ep_op_info_t` the purge callback receives for this op, or
    /// `None` for internal ops. `bytes` are the op's bytes as the transport
    /// holds them (see [`PostedOp`]'s variants; ignored by the others), and
    /// must outlive the callback. Field-mask bits are set exactly for the
    /// fields that hold a value: `COMP` for the kinds whose posting call
    /// takes a completion (even when the caller passed NULL, which is then
    /// what a replay should pass), the group of the op's kind and, inside
    /// it, the members uct_v2.h lists for the operation.
    ///
    /// An `AmShort` is reported so that replaying it yields the same bytes
    /// (it may have been an `am_short_iov`): with 8 bytes or more as
    /// `AM_SHORT` (header = the first 8 bytes, read in host order as
    /// `uct_ep_am_short` writes its header), with fewer as `AM_BCOPY` with
    /// flags 0 (an `AM_SHORT` needs a full header word).
    pub fn op_info(&self, bytes: &[u8]) -> Option<uct_ep_op_info_t> {
        use PostedOp as Op;
        use UCT_EP_OP_INFO_ATOMIC_FIELD_COMPARE as COMPARE;
        use UCT_EP_OP_INFO_ATOMIC_FIELD_RESULT as RESULT;
        // One line per kind: the operation it is reported as and the
        // `detail` member that describes it.
        #[rustfmt::skip]
        let (operation, detail) = match *self {
            Op::AmShort { am_id } => match bytes.split_first_chunk::<8>() {
                Some((header, payload)) => (UCT_EP_OP_AM_SHORT, am_short(am_id, u64::from_ne_bytes(*header), payload)),
                None => (UCT_EP_OP_AM_BCOPY, am_bcopy(am_id, 0, bytes)),
            },
            Op::AmBcopy { am_id, flags } => (UCT_EP_OP_AM_BCOPY, am_bcopy(am_id, flags, bytes)),
            Op::AmZcopy { am_id, flags, ref iov, .. } => (UCT_EP_OP_AM_ZCOPY, am_zcopy(am_id, flags, bytes, iov)),
            Op::PutShort { remote } => (UCT_EP_OP_PUT_SHORT, rma_data(remote, data_of(bytes))),
            Op::PutBcopy { remote } => (UCT_EP_OP_PUT_BCOPY, rma_data(remote, data_of(bytes))),
            Op::PutZcopy { remote, ref iov, .. } => (UCT_EP_OP_PUT_ZCOPY, rma_zcopy(remote, iov)),
            Op::GetShort { remote, buffer, length } => (UCT_EP_OP_GET_SHORT, rma_data(remote, data(buffer, length))),
            Op::GetBcopy { remote, unpack_cb, arg, length, .. } => (UCT_EP_OP_GET_BCOPY, rma_unpack(remote, unpack_cb, arg, length)),
            Op::GetZcopy { remote, ref iov, .. } => (UCT_EP_OP_GET_ZCOPY, rma_zcopy(remote, iov)),
            Op::AtomicPost { remote, op, size, value } => (UCT_EP_OP_ATOMIC_POST, atomic(0, op, size, remote, value, 0, std::ptr::null_mut())),
            Op::AtomicFetch { remote, op, size, value, result, .. } => (UCT_EP_OP_ATOMIC_FETCH, atomic(RESULT, op, size, remote, value, 0, result)),
            Op::AtomicCswap { remote, size, compare, swap, result, .. } => (UCT_EP_OP_ATOMIC_FETCH, atomic(RESULT | COMPARE, UCT_ATOMIC_OP_CSWAP, size, remote, swap, compare, result)),
            Op::Flush { flags, .. } => (UCT_EP_OP_FLUSH, flush(flags)),
            Op::Internal(_) => return None,
        };
        let mut info = zeroed_op_info();
        info.operation = operation;
        info.field_mask = UCT_EP_OP_INFO_FIELD_OPERATION | detail.group;
        info.detail = detail.member;
        if let Some(comp) = self.comp_argument() {
            info.field_mask |= UCT_EP_OP_INFO_FIELD_COMP;
            info.comp = comp;
        }
        Some(info)
    }
}

/// What an op puts in `uct_ep_op_info_t::detail`, and the `field_mask`
/// group bit that says which member that is.
struct Detail {
    group: u64,
    member: uct_ep_op_info_detail,
}

const RMA_TARGET: u16 = UCT_EP_OP_INFO_RMA_FIELD_REMOTE_ADDR | UCT_EP_OP_INFO_RMA_FIELD_RKEY;
const ATOMIC_COMMON: u16 = UCT_EP_OP_INFO_ATOMIC_FIELD_OP
    | UCT_EP_OP_INFO_ATOMIC_FIELD_REMOTE_ADDR
    | UCT_EP_OP_INFO_ATOMIC_FIELD_RKEY
    | UCT_EP_OP_INFO_ATOMIC_FIELD_VALUE
    | UCT_EP_OP_INFO_ATOMIC_FIELD_SIZE;

fn zeroed_op_info() -> uct_ep_op_info_t {
    // SAFETY: uct_ep_op_info_t holds only integers, raw pointers and
    // Option<extern fn> (in unions of such), for all of which all-zero
    // bytes are a valid value (0, NULL, None).
    unsafe { std::mem::zeroed() }
}

fn zcopy(iov: &[uct_iov_t]) -> uct_ep_op_info_zcopy {
    uct_ep_op_info_zcopy {
        iov: iov.as_ptr(),
        iovcnt: iov.len(),
    }
}

fn data(buffer: *mut c_void, length: usize) -> uct_ep_op_info_data {
    uct_ep_op_info_data { buffer, length }
}

fn data_of(payload: &[u8]) -> uct_ep_op_info_data {
    data(payload.as_ptr().cast_mut().cast(), payload.len())
}

/// An AM detail: `fields` names the header and payload members set.
fn am(
    fields: u16,
    am_id: u8,
    flags: c_uint,
    header: uct_ep_op_info_am_header,
    payload: uct_ep_op_info_am_payload,
) -> Detail {
    let am = uct_ep_op_info_am {
        field_mask: UCT_EP_OP_INFO_AM_FIELD_AM_ID | fields,
        am_id,
        flags,
        header,
        payload,
    };
    Detail {
        group: UCT_EP_OP_INFO_FIELD_AM,
        member: uct_ep_op_info_detail { am },
    }
}

fn am_short(am_id: u8, header: u64, payload: &[u8]) -> Detail {
    am(
        UCT_EP_OP_INFO_AM_FIELD_HEADER_VALUE | UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_DATA,
        am_id,
        0,
        uct_ep_op_info_am_header { value: header },
        uct_ep_op_info_am_payload {
            data: data_of(payload),
        },
    )
}

fn am_bcopy(am_id: u8, flags: c_uint, payload: &[u8]) -> Detail {
    am(
        UCT_EP_OP_INFO_AM_FIELD_FLAGS | UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_DATA,
        am_id,
        flags,
        uct_ep_op_info_am_header { value: 0 },
        uct_ep_op_info_am_payload {
            data: data_of(payload),
        },
    )
}

fn am_zcopy(am_id: u8, flags: c_uint, header: &[u8], iov: &[uct_iov_t]) -> Detail {
    am(
        UCT_EP_OP_INFO_AM_FIELD_FLAGS
            | UCT_EP_OP_INFO_AM_FIELD_HEADER_ZCOPY
            | UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_ZCOPY,
        am_id,
        flags,
        uct_ep_op_info_am_header {
            zcopy: uct_ep_op_info_am_header_zcopy {
                buffer: header.as_ptr().cast(),
                length: header.len(),
            },
        },
        uct_ep_op_info_am_payload { zcopy: zcopy(iov) },
    )
}

/// An RMA detail: `payload_field` names the payload member set.
fn rma(remote: RemoteTarget, payload_field: u16, payload: uct_ep_op_info_rma_payload) -> Detail {
    let rma = uct_ep_op_info_rma {
        field_mask: RMA_TARGET | payload_field,
        remote_addr: remote.address,
        rkey: remote.rkey,
        payload,
    };
    Detail {
        group: UCT_EP_OP_INFO_FIELD_RMA,
        member: uct_ep_op_info_detail { rma },
    }
}

fn rma_data(remote: RemoteTarget, data: uct_ep_op_info_data) -> Detail {
    let payload = uct_ep_op_info_rma_payload { data };
    rma(remote, UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_DATA, payload)
}

fn rma_zcopy(remote: RemoteTarget, iov: &[uct_iov_t]) -> Detail {
    let payload = uct_ep_op_info_rma_payload { zcopy: zcopy(iov) };
    rma(remote, UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_ZCOPY, payload)
}

fn rma_unpack(
    remote: RemoteTarget,
    unpack_cb: uct_unpack_callback_t,
    arg: *mut c_void,
    length: usize,
) -> Detail {
    let unpack = uct_ep_op_info_unpack {
        unpack_cb,
        arg,
        length,
    };
    let payload = uct_ep_op_info_rma_payload { unpack };
    rma(remote, UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_UNPACK, payload)
}

/// An atomic detail: `fields` adds the result and compare members to the
/// ones every atomic sets.
fn atomic(
    fields: u16,
    op: uct_atomic_op_t,
    size: AtomicSize,
    remote: RemoteTarget,
    value: u64,
    compare: u64,
    result: *mut c_void,
) -> Detail {
    let atomic = uct_ep_op_info_atomic {
        field_mask: ATOMIC_COMMON | fields,
        op,
        remote_addr: remote.address,
        rkey: remote.rkey,
        value,
        compare,
        result,
        size: usize::from(size.bytes()),
    };
    Detail {
        group: UCT_EP_OP_INFO_FIELD_ATOMIC,
        member: uct_ep_op_info_detail { atomic },
    }
}

fn flush(flags: c_uint) -> Detail {
    let flush = uct_ep_op_info_flush {
        field_mask: UCT_EP_OP_INFO_FLUSH_FIELD_FLAGS,
        flags,
    };
    Detail {
        group: UCT_EP_OP_INFO_FIELD_FLUSH,
        member: uct_ep_op_info_detail { flush },
    }
}

pub use crate::core::iface::PurgeCallback;

/// Hands `op` to the caller's purge callback, with `bytes` as
/// [`PostedOp::op_info`] takes them (nothing for internal ops). Returns
/// whether the callback was called.
///
/// # Safety
/// `callback.cb` must be safe to call with a valid `uct_ep_op_info_t` and
/// `callback.arg` (the purge caller's contract). The callback may post on
/// any ep, so the caller must not hold borrows the callback could
/// invalidate (take the op out of the ep's table first).
pub unsafe fn report_op(op: &PostedOp, bytes: &[u8], callback: &PurgeCallback) -> bool {
    let Some(info) = op.op_info(bytes) else {
        return false;
    };
    // SAFETY: `info` lives on this stack frame for the whole call, and the
    // buffers it points at are borrowed by `op` and `bytes` for at least as
    // long; the callback's own soundness is the caller's contract (see
    // above).
    unsafe { (callback.cb)(&info, callback.arg) };
    true
}

/// How many ops a purge handled each way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PurgeSummary {
    /// Completed with `UCS_OK`.
    pub delivered: usize,
    /// Handed to the caller for replay (including GETs).
    pub reported: usize,
    /// Completed with an error (lost fetch results and flushes over them).
    pub failed: usize,
    /// Internal ops dropped.
    pub dropped: usize,
}

impl PurgeSummary {
    /// What the `verdicts` of one purge come to.
    pub fn of(verdicts: impl IntoIterator<Item = Verdict>) -> PurgeSummary {
        let mut summary = PurgeSummary::default();
        for verdict in verdicts {
            match verdict.action() {
                Action::Complete(Ok(())) => summary.delivered += 1,
                Action::Complete(Err(_)) => summary.failed += 1,
                Action::Report => summary.reported += 1,
                Action::Drop => summary.dropped += 1,
            }
        }
        summary
    }
}
