//! An operation as its caller posted it ([`PostedOp`]): the one record a
//! transport keeps per outstanding operation, from the post to its
//! completion or purge. Each variant holds what its posting call took that
//! the transport does not keep elsewhere; the bytes a transport holds for
//! the op (inline data in its send ring, a bounce buffer) it hands in when
//! purge reports the op ([`PostedOp::op_info`] in [`crate::failover::purge`]).
//!
//! What classification sorts an op by is [`PostedOp::class`], defined here
//! once.

use std::ffi::{c_uint, c_void};

use crate::abi::*;
use crate::failover::classify::OpClass;
use crate::mlx5::AtomicSize;

/// The remote side of an RMA or atomic: the address and the caller's
/// `uct_rkey_t` exactly as passed to the posting call (not the device key),
/// so that the caller can tell which remote key to use on another rail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteTarget {
    pub address: u64,
    pub rkey: uct_rkey_t,
}

/// The transport's own traffic: completed by nobody, never reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InternalOp {
    /// A flow-control grant message (a SEND).
    FcGrant,
    /// The probe of `uct_ep_check` (a zero-length RDMA WRITE).
    Probe,
}

/// An outstanding operation as the caller posted it: what its completion
/// does and what a replay elsewhere needs. Raw pointers are the caller's
/// own (buffers, callback arguments, completions), kept untouched.
///
/// The bytes of short and bcopy ops are where the transport holds them;
/// purge takes them as an argument ([`PostedOp::op_info`]).
#[derive(Clone, Debug)]
pub enum PostedOp {
    /// `uct_ep_am_short(id, header, payload)` or `uct_ep_am_short_iov(id,
    /// iov)`; bytes: what followed the AM id on the wire (the header then
    /// the payload, or the IOV's concatenation).
    AmShort {
        am_id: u8,
    },
    /// `uct_ep_am_bcopy(id, pack, arg, flags)`; bytes: what `pack` wrote.
    AmBcopy {
        am_id: u8,
        flags: c_uint,
    },
    /// `uct_ep_am_zcopy(id, header, iov, flags, comp)`; bytes: the header.
    /// `iov` is a copy of the caller's entries.
    AmZcopy {
        am_id: u8,
        flags: c_uint,
        iov: Box<[uct_iov_t]>,
        comp: *mut uct_completion_t,
    },
    /// `uct_ep_put_short(buffer, remote, rkey)`; bytes: the buffer's.
    PutShort {
        remote: RemoteTarget,
    },
    /// `uct_ep_put_bcopy(pack, arg, remote, rkey)`; bytes: what `pack`
    /// wrote.
    PutBcopy {
        remote: RemoteTarget,
    },
    /// `uct_ep_put_zcopy(iov, remote, rkey, comp)`.
    PutZcopy {
        remote: RemoteTarget,
        iov: Box<[uct_iov_t]>,
        comp: *mut uct_completion_t,
    },
    /// `uct_ep_get_short(buffer, length, remote, rkey)`. The call answers
    /// its caller before it returns (the data is in `buffer`): once
    /// recorded, the op is the transport's own, like an internal one.
    GetShort {
        remote: RemoteTarget,
        buffer: *mut c_void,
        length: usize,
    },
    /// `uct_ep_get_bcopy(unpack_cb, arg, length, remote, rkey, comp)`:
    /// `unpack_cb` runs when the op completes.
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
        iov: Box<[uct_iov_t]>,
        comp: *mut uct_completion_t,
    },
    /// `uct_ep_atomic{32,64}_post(op, value, remote, rkey)`.
    AtomicPost {
        remote: RemoteTarget,
        op: uct_atomic_op_t,
        size: AtomicSize,
        value: u64,
    },
    /// `uct_ep_atomic{32,64}_fetch(op, value, result, remote, rkey, comp)`:
    /// the old value goes to `result` when the op completes.
    AtomicFetch {
        remote: RemoteTarget,
        op: uct_atomic_op_t,
        size: AtomicSize,
        value: u64,
        result: *mut c_void,
        comp: *mut uct_completion_t,
    },
    /// `uct_ep_atomic_cswap{32,64}(compare, swap, remote, rkey, result,
    /// comp)`: the old value goes to `result` when the op completes.
    AtomicCswap {
        remote: RemoteTarget,
        size: AtomicSize,
        compare: u64,
        swap: u64,
        result: *mut c_void,
        comp: *mut uct_completion_t,
    },
    /// `uct_ep_flush(flags, comp)`.
    Flush {
        flags: c_uint,
        comp: *mut uct_completion_t,
    },
    Internal(InternalOp),
}

impl PostedOp {
    /// How [`crate::failover::classify()`] treats this op.
    pub fn class(&self) -> OpClass {
        match self {
            PostedOp::AmShort { .. } | PostedOp::AmBcopy { .. } | PostedOp::AmZcopy { .. } => {
                OpClass::Am
            }
            PostedOp::PutShort { .. } | PostedOp::PutBcopy { .. } | PostedOp::PutZcopy { .. } => {
                OpClass::Put
            }
            PostedOp::GetBcopy { .. } | PostedOp::GetZcopy { .. } => OpClass::Get,
            PostedOp::AtomicPost { .. } => OpClass::AtomicPost,
            PostedOp::AtomicFetch { .. } => OpClass::AtomicFetch,
            PostedOp::AtomicCswap { .. } => OpClass::AtomicCswap,
            PostedOp::Flush { .. } => OpClass::Flush,
            // Answered to its caller when it was posted: purge neither
            // reports nor completes it (a READ on the wire, one PSN at
            // least, like a grant's SEND).
            PostedOp::GetShort { .. } | PostedOp::Internal(_) => OpClass::Internal,
        }
    }

    /// Whether the op is an active message of the user's.
    #[inline(always)]
    pub fn is_am(&self) -> bool {
        matches!(
            self,
            PostedOp::AmShort { .. } | PostedOp::AmBcopy { .. } | PostedOp::AmZcopy { .. }
        )
    }

    /// The caller's completion of the op, NULL when its posting call takes
    /// none (short and bcopy AM/PUT, GET short, atomic post) or it gave none.
    #[inline(always)]
    pub fn comp(&self) -> *mut uct_completion_t {
        self.comp_argument().unwrap_or(std::ptr::null_mut())
    }

    /// The completion argument of the op's posting call, `None` for the
    /// kinds whose call takes none (the argument itself may be NULL).
    #[inline(always)]
    pub(crate) fn comp_argument(&self) -> Option<*mut uct_completion_t> {
        match *self {
            PostedOp::AmZcopy { comp, .. }
            | PostedOp::PutZcopy { comp, .. }
            | PostedOp::GetBcopy { comp, .. }
            | PostedOp::GetZcopy { comp, .. }
            | PostedOp::AtomicFetch { comp, .. }
            | PostedOp::AtomicCswap { comp, .. }
            | PostedOp::Flush { comp, .. } => Some(comp),
            _ => None,
        }
    }

    /// The remote memory an RMA or atomic names.
    pub fn remote(&self) -> Option<RemoteTarget> {
        match *self {
            PostedOp::PutShort { remote }
            | PostedOp::PutBcopy { remote }
            | PostedOp::PutZcopy { remote, .. }
            | PostedOp::GetShort { remote, .. }
            | PostedOp::GetBcopy { remote, .. }
            | PostedOp::GetZcopy { remote, .. }
            | PostedOp::AtomicPost { remote, .. }
            | PostedOp::AtomicFetch { remote, .. }
            | PostedOp::AtomicCswap { remote, .. } => Some(remote),
            _ => None,
        }
    }

    /// The operation's name, as UCT's posting call names it (log lines).
    pub fn name(&self) -> &'static str {
        match self {
            PostedOp::AmShort { .. } => "am_short",
            PostedOp::AmBcopy { .. } => "am_bcopy",
            PostedOp::AmZcopy { .. } => "am_zcopy",
            PostedOp::PutShort { .. } => "put_short",
            PostedOp::PutBcopy { .. } => "put_bcopy",
            PostedOp::PutZcopy { .. } => "put_zcopy",
            PostedOp::GetShort { .. } => "get_short",
            PostedOp::GetBcopy { .. } => "get_bcopy",
            PostedOp::GetZcopy { .. } => "get_zcopy",
            PostedOp::AtomicPost { .. } => "atomic_post",
            PostedOp::AtomicFetch { .. } => "atomic_fetch",
            PostedOp::AtomicCswap { .. } => "atomic_cswap",
            PostedOp::Flush { .. } => "flush",
            PostedOp::Internal(InternalOp::FcGrant) => "fc_grant",
            PostedOp::Internal(InternalOp::Probe) => "probe",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_failover_class() {
        let remote = RemoteTarget {
            address: 0,
            rkey: 0,
        };
        let (result, comp) = (std::ptr::null_mut(), std::ptr::null_mut());
        let cswap = PostedOp::AtomicCswap {
            remote,
            size: AtomicSize::Bits64,
            compare: 1,
            swap: 2,
            result,
            comp,
        };
        assert_eq!(cswap.class(), OpClass::AtomicCswap);
        let fetch = PostedOp::AtomicFetch {
            remote,
            op: UCT_ATOMIC_OP_SWAP,
            size: AtomicSize::Bits32,
            value: 3,
            result,
            comp,
        };
        assert_eq!(fetch.class(), OpClass::AtomicFetch);
        let post = PostedOp::AtomicPost {
            remote,
            op: UCT_ATOMIC_OP_ADD,
            size: AtomicSize::Bits64,
            value: 3,
        };
        assert_eq!(post.class(), OpClass::AtomicPost);
        let zcopy = PostedOp::AmZcopy {
            am_id: 1,
            flags: 0,
            iov: Box::new([]),
            comp,
        };
        assert_eq!(zcopy.class(), OpClass::Am);
        assert_eq!(PostedOp::PutBcopy { remote }.class(), OpClass::Put);
        let get = PostedOp::GetShort {
            remote,
            buffer: result,
            length: 0,
        };
        assert_eq!(get.class(), OpClass::Internal);
        let get = PostedOp::GetZcopy {
            remote,
            iov: Box::new([]),
            comp,
        };
        assert_eq!(get.class(), OpClass::Get);
        assert_eq!(PostedOp::Flush { flags: 0, comp }.class(), OpClass::Flush);
        for internal in [InternalOp::FcGrant, InternalOp::Probe] {
            assert_eq!(PostedOp::Internal(internal).class(), OpClass::Internal);
        }
    }
}
