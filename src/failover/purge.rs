//! The transport-neutral half of `uct_ep_outstanding_purge`: what an
//! outstanding op looks like to the caller ([`OpDescriptor`] →
//! `uct_ep_op_info_t`), and the driver that applies the verdicts of
//! [`crate::failover::classify`](mod@crate::failover::classify) in posting order.
//!
//! A transport's purge is then:
//! 1. decode and check the RX token against the ep's connection
//!    ([`crate::failover::RxToken::decode_for`]);
//! 2. build an [`OpPsns`] per table entry and [`classify`] them — on error,
//!    log it and return its status *before touching anything*;
//! 3. take the ops out of the table (so the callback may post, even on this
//!    ep's iface, without aliasing the table) and [`run_purge`] them with a
//!    [`PurgeSink`] that completes, reports (via [`report_op`]) or drops
//!    each and releases its resources (bounce buffers, ring space, credits).
//!
//! [`OpPsns`]: crate::failover::OpPsns
//! [`classify`]: crate::failover::classify()

use std::ffi::{c_uint, c_void};

use crate::abi::*;
use crate::failover::classify::{Action, OpClass, Verdict};

/// Width of an atomic operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicWidth {
    Bits32,
    Bits64,
}

impl AtomicWidth {
    pub fn bytes(self) -> usize {
        match self {
            AtomicWidth::Bits32 => 4,
            AtomicWidth::Bits64 => 8,
        }
    }
}

/// The remote side of an RMA or atomic: the address and the caller's
/// `uct_rkey_t` exactly as passed to the posting call (not the device key),
/// so that the caller can tell which remote key to use on another rail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteTarget {
    pub address: u64,
    pub rkey: uct_rkey_t,
}

/// An outstanding operation as the caller posted it, everything needed to
/// post it again elsewhere. Borrowed data (`&'a [u8]`, `&'a [uct_iov_t]`) is
/// what the transport holds for the op (an inline copy, a bounce buffer, its
/// saved copy of the caller's IOV array); it must live until the purge
/// callback returns. Raw pointers are the caller's own buffers, passed back
/// untouched.
#[derive(Clone, Copy, Debug)]
pub enum OpDescriptor<'a> {
    /// `uct_ep_am_short(id, header, payload)`.
    AmShort {
        am_id: u8,
        header: u64,
        payload: &'a [u8],
    },
    /// `uct_ep_am_short_iov(id, iov)`: `data` is the concatenation of the
    /// IOV, as it went on the wire after the AM id.
    AmShortIov { am_id: u8, data: &'a [u8] },
    /// `uct_ep_am_bcopy(id, pack, arg, flags)`: `payload` is what `pack`
    /// wrote.
    AmBcopy {
        am_id: u8,
        flags: c_uint,
        payload: &'a [u8],
    },
    /// `uct_ep_am_zcopy(id, header, iov, flags, comp)`.
    AmZcopy {
        am_id: u8,
        flags: c_uint,
        header: &'a [u8],
        iov: &'a [uct_iov_t],
        comp: *mut uct_completion_t,
    },
    /// `uct_ep_put_short(buffer, remote, rkey)`.
    PutShort {
        remote: RemoteTarget,
        payload: &'a [u8],
    },
    /// `uct_ep_put_bcopy(pack, arg, remote, rkey)`: `payload` is what
    /// `pack` wrote.
    PutBcopy {
        remote: RemoteTarget,
        payload: &'a [u8],
    },
    /// `uct_ep_put_zcopy(iov, remote, rkey, comp)`.
    PutZcopy {
        remote: RemoteTarget,
        iov: &'a [uct_iov_t],
        comp: *mut uct_completion_t,
    },
    /// `uct_ep_get_short(buffer, length, remote, rkey)`: `buffer` is the
    /// caller's destination. (rc_mlx5 never reports one: its get_short
    /// answers the caller before returning.)
    GetShort {
        remote: RemoteTarget,
        buffer: *mut c_void,
        length: usize,
    },
    /// `uct_ep_get_bcopy(unpack_cb, arg, length, remote, rkey, comp)`.
    GetBcopy {
        remote: RemoteTarget,
        unpack_cb: uct_unpack_callback_t,
        arg: *mut c_void,
        length: usize,
        comp: *mut uct_completion_t,
    },
    /// `uct_ep_get_zcopy(iov, remote, rkey, comp)`.
    GetZcopy {
        remote: RemoteTarget,
        iov: &'a [uct_iov_t],
        comp: *mut uct_completion_t,
    },
    /// `uct_ep_atomic{32,64}_post(op, value, remote, rkey)`.
    AtomicPost {
        op: uct_atomic_op_t,
        width: AtomicWidth,
        value: u64,
        remote: RemoteTarget,
    },
    /// `uct_ep_atomic{32,64}_fetch(op, value, result, remote, rkey, comp)`.
    AtomicFetch {
        op: uct_atomic_op_t,
        width: AtomicWidth,
        value: u64,
        result: *mut c_void,
        remote: RemoteTarget,
        comp: *mut uct_completion_t,
    },
    /// `uct_ep_atomic_cswap{32,64}(compare, swap, remote, rkey, result, comp)`.
    AtomicCswap {
        width: AtomicWidth,
        compare: u64,
        swap: u64,
        result: *mut c_void,
        remote: RemoteTarget,
        comp: *mut uct_completion_t,
    },
    /// `uct_ep_flush(flags, comp)`.
    Flush {
        flags: c_uint,
        comp: *mut uct_completion_t,
    },
    /// The transport's own traffic (flow-control grant, NOP): never reported.
    Internal,
}

impl OpDescriptor<'_> {
    /// How [`crate::failover::classify()`] treats this op.
    pub fn class(&self) -> OpClass {
        match self {
            OpDescriptor::AmShort { .. }
            | OpDescriptor::AmShortIov { .. }
            | OpDescriptor::AmBcopy { .. }
            | OpDescriptor::AmZcopy { .. } => OpClass::Am,
            OpDescriptor::PutShort { .. }
            | OpDescriptor::PutBcopy { .. }
            | OpDescriptor::PutZcopy { .. } => OpClass::Put,
            OpDescriptor::GetShort { .. }
            | OpDescriptor::GetBcopy { .. }
            | OpDescriptor::GetZcopy { .. } => OpClass::Get,
            OpDescriptor::AtomicPost { .. } => OpClass::AtomicPost,
            OpDescriptor::AtomicFetch { .. } => OpClass::AtomicFetch,
            OpDescriptor::AtomicCswap { .. } => OpClass::AtomicCswap,
            OpDescriptor::Flush { .. } => OpClass::Flush,
            OpDescriptor::Internal => OpClass::Internal,
        }
    }

    /// The caller's completion of the op, NULL when its posting call takes
    /// none (short and bcopy AM/PUT, GET short, atomic post) or it gave none.
    pub fn comp(&self) -> *mut uct_completion_t {
        self.comp_argument().unwrap_or(std::ptr::null_mut())
    }

    /// The completion argument of the op's posting call, `None` for the
    /// kinds whose call takes none (the argument itself may be NULL).
    fn comp_argument(&self) -> Option<*mut uct_completion_t> {
        match *self {
            OpDescriptor::AmZcopy { comp, .. }
            | OpDescriptor::PutZcopy { comp, .. }
            | OpDescriptor::GetBcopy { comp, .. }
            | OpDescriptor::GetZcopy { comp, .. }
            | OpDescriptor::AtomicFetch { comp, .. }
            | OpDescriptor::AtomicCswap { comp, .. }
            | OpDescriptor::Flush { comp, .. } => Some(comp),
            _ => None,
        }
    }

    /// The `uct_ep_op_info_t` the purge callback receives for this op, or
    /// `None` for internal ops. Field-mask bits are set exactly for the
    /// fields that hold a value: `COMP` for the kinds whose posting call
    /// takes a completion (even when the caller passed NULL, which is then
    /// what a replay should pass), the group of the op's kind and, inside
    /// it, the members uct_v2.h lists for the operation.
    ///
    /// `AmShortIov` is reported so that replaying it yields the same bytes:
    /// with 8 bytes or more as `AM_SHORT` (header = the first 8 bytes, read
    /// in host order as `uct_ep_am_short` writes its header), with fewer as
    /// `AM_BCOPY` with flags 0 (an `AM_SHORT` needs a full header word).
    pub fn op_info(&self) -> Option<uct_ep_op_info_t> {
        use OpDescriptor as Op;
        use UCT_EP_OP_INFO_ATOMIC_FIELD_COMPARE as COMPARE;
        use UCT_EP_OP_INFO_ATOMIC_FIELD_RESULT as RESULT;
        // One line per kind: the operation it is reported as and the
        // `detail` member that describes it.
        #[rustfmt::skip]
        let (operation, detail) = match *self {
            Op::AmShort { am_id, header, payload } => (UCT_EP_OP_AM_SHORT, am_short(am_id, header, payload)),
            Op::AmShortIov { am_id, data } => match data.split_first_chunk::<8>() {
                Some((header, payload)) => (UCT_EP_OP_AM_SHORT, am_short(am_id, u64::from_ne_bytes(*header), payload)),
                None => (UCT_EP_OP_AM_BCOPY, am_bcopy(am_id, 0, data)),
            },
            Op::AmBcopy { am_id, flags, payload } => (UCT_EP_OP_AM_BCOPY, am_bcopy(am_id, flags, payload)),
            Op::AmZcopy { am_id, flags, header, iov, .. } => (UCT_EP_OP_AM_ZCOPY, am_zcopy(am_id, flags, header, iov)),
            Op::PutShort { remote, payload } => (UCT_EP_OP_PUT_SHORT, rma_data(remote, bytes(payload))),
            Op::PutBcopy { remote, payload } => (UCT_EP_OP_PUT_BCOPY, rma_data(remote, bytes(payload))),
            Op::PutZcopy { remote, iov, .. } => (UCT_EP_OP_PUT_ZCOPY, rma_zcopy(remote, iov)),
            Op::GetShort { remote, buffer, length } => (UCT_EP_OP_GET_SHORT, rma_data(remote, data(buffer, length))),
            Op::GetBcopy { remote, unpack_cb, arg, length, .. } => (UCT_EP_OP_GET_BCOPY, rma_unpack(remote, unpack_cb, arg, length)),
            Op::GetZcopy { remote, iov, .. } => (UCT_EP_OP_GET_ZCOPY, rma_zcopy(remote, iov)),
            Op::AtomicPost { op, width, value, remote } => (UCT_EP_OP_ATOMIC_POST, atomic(0, op, width, remote, value, 0, std::ptr::null_mut())),
            Op::AtomicFetch { op, width, value, result, remote, .. } => (UCT_EP_OP_ATOMIC_FETCH, atomic(RESULT, op, width, remote, value, 0, result)),
            Op::AtomicCswap { width, compare, swap, result, remote, .. } => (UCT_EP_OP_ATOMIC_FETCH, atomic(RESULT | COMPARE, UCT_ATOMIC_OP_CSWAP, width, remote, swap, compare, result)),
            Op::Flush { flags, .. } => (UCT_EP_OP_FLUSH, flush(flags)),
            Op::Internal => return None,
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

fn bytes(payload: &[u8]) -> uct_ep_op_info_data {
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
            data: bytes(payload),
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
            data: bytes(payload),
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
    width: AtomicWidth,
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
        size: width.bytes(),
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

/// Hands `op` to the caller's purge callback (nothing for internal ops).
/// Returns whether the callback was called.
///
/// # Safety
/// `callback.cb` must be safe to call with a valid `uct_ep_op_info_t` and
/// `callback.arg` (the purge caller's contract). The callback may post on
/// any ep, so the caller must not hold borrows the callback could
/// invalidate (take the op out of the ep's table first).
pub unsafe fn report_op(op: &OpDescriptor<'_>, callback: &PurgeCallback) -> bool {
    let Some(info) = op.op_info() else {
        return false;
    };
    // SAFETY: `info` lives on this stack frame for the whole call, and the
    // buffers it points at are borrowed by `op` for at least as long; the
    // callback's own soundness is the caller's contract (see above).
    unsafe { (callback.cb)(&info, callback.arg) };
    true
}

/// What the transport does with each op, called by [`run_purge`] in
/// posting order. Each op is handed over by value exactly once; the
/// implementation releases what the op holds after acting on it.
pub trait PurgeSink<Op> {
    /// Run the op's completion work (unpack, fetch result) when `status` is
    /// `Ok`, then call its completion (if any) with `status`.
    fn complete(&mut self, op: Op, status: Result<(), Status>);
    /// Hand the op to the caller's callback ([`report_op`]); its completion
    /// is *not* called: it travels in the op info to the replay.
    fn report(&mut self, op: Op);
    /// Internal op: release it silently.
    fn drop_internal(&mut self, op: Op);
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

/// Applies each op's verdict through `sink`, strictly in the order given
/// (posting order), and counts what happened.
pub fn run_purge<Op>(
    ops: impl IntoIterator<Item = (Op, Verdict)>,
    sink: &mut impl PurgeSink<Op>,
) -> PurgeSummary {
    let mut summary = PurgeSummary::default();
    for (op, verdict) in ops {
        match verdict.action() {
            Action::Complete(Ok(())) => {
                summary.delivered += 1;
                sink.complete(op, Ok(()));
            }
            Action::Complete(Err(status)) => {
                summary.failed += 1;
                sink.complete(op, Err(status));
            }
            Action::Report => {
                summary.reported += 1;
                sink.report(op);
            }
            Action::Drop => {
                summary.dropped += 1;
                sink.drop_internal(op);
            }
        }
    }
    summary
}
