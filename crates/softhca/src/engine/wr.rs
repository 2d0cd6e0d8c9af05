//! Work requests the engine accepts and the completions it reports. These are
//! device-independent: the device decodes mlx5 WQEs into them and encodes the
//! completions as CQE64s.

use crate::wire::AtomicSize;

/// One element of a local scatter/gather list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Sge {
    pub addr: u64,
    pub len: u32,
    pub lkey: u32,
}

/// A remote buffer: virtual address and rkey.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RemoteBuf {
    pub va: u64,
    pub rkey: u32,
}

/// The local data of a send work request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocalData {
    /// Gather (SEND/WRITE) or scatter (READ; atomic result) list.
    Sgl(Vec<Sge>),
    /// Data copied into the WQE (SEND/WRITE only).
    Inline(Vec<u8>),
}

impl LocalData {
    pub const EMPTY: LocalData = LocalData::Sgl(Vec::new());
}

/// An atomic operation on a remote (or, in [`super::Memory`], local) value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// 64-bit: if the value equals `compare`, replace it with `swap`.
    CompareSwap { compare: u64, swap: u64 },
    /// 64-bit wrapping add.
    FetchAdd { add: u64 },
    /// mlx5 masked compare-and-swap: if `(value ^ compare) & compare_mask`
    /// is zero, the bits of `swap_mask` take the bits of `swap`.
    MaskedCompareSwap {
        size: AtomicSize,
        compare: u64,
        compare_mask: u64,
        swap: u64,
        swap_mask: u64,
    },
    /// mlx5 masked fetch-and-add: a set bit in `field_boundary` ends a field,
    /// so no carry crosses from that bit into the next.
    MaskedFetchAdd {
        size: AtomicSize,
        add: u64,
        field_boundary: u64,
    },
}

impl AtomicOp {
    /// Operand width in bytes (4 or 8).
    pub fn size_bytes(&self) -> u8 {
        match self {
            AtomicOp::CompareSwap { .. } | AtomicOp::FetchAdd { .. } => 8,
            AtomicOp::MaskedCompareSwap { size, .. } | AtomicOp::MaskedFetchAdd { size, .. } => {
                size.bytes()
            }
        }
    }

    /// The bits of a `u64` the operand occupies.
    pub(super) fn width_mask(&self) -> u64 {
        if self.size_bytes() == 4 {
            u64::from(u32::MAX)
        } else {
            u64::MAX
        }
    }

    /// The value that replaces `old` (both within the operand width).
    pub fn apply(&self, old: u64) -> u64 {
        let width = self.width_mask();
        let old = old & width;
        match *self {
            AtomicOp::CompareSwap { compare, swap } => {
                if old == compare {
                    swap
                } else {
                    old
                }
            }
            AtomicOp::FetchAdd { add } => old.wrapping_add(add),
            AtomicOp::MaskedCompareSwap {
                compare,
                compare_mask,
                swap,
                swap_mask,
                ..
            } => {
                if (old ^ compare) & compare_mask & width == 0 {
                    ((old & !swap_mask) | (swap & swap_mask)) & width
                } else {
                    old
                }
            }
            AtomicOp::MaskedFetchAdd {
                add,
                field_boundary,
                ..
            } => {
                let bits = u32::from(self.size_bytes()) * 8;
                let mut sum = 0u64;
                let mut carry = 0u64;
                for bit in 0..bits {
                    let s = ((old >> bit) & 1) + ((add >> bit) & 1) + carry;
                    sum |= (s & 1) << bit;
                    carry = if (field_boundary >> bit) & 1 == 1 {
                        0
                    } else {
                        s >> 1
                    };
                }
                sum
            }
        }
    }
}

/// What a send work request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    Send {
        imm: Option<u32>,
    },
    Write {
        remote: RemoteBuf,
        imm: Option<u32>,
    },
    Read {
        remote: RemoteBuf,
    },
    /// The fetched value lands in the first bytes of the local list.
    Atomic {
        remote: RemoteBuf,
        op: AtomicOp,
    },
    /// Nothing on the wire; completes in order once earlier requests have.
    Nop,
}

/// A send work request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendWr {
    /// Returned in the completion (the device puts its WQE index here).
    pub wr_id: u64,
    pub op: SendOp,
    pub local: LocalData,
    /// Report a completion on success (errors are always reported).
    pub signaled: bool,
    /// Start only after every earlier READ and atomic has completed.
    pub fence: bool,
    /// Sets the solicited-event bit on the last packet of a SEND/WRITE-imm.
    pub solicited: bool,
}

impl SendWr {
    /// A signalled request without fence.
    pub fn new(wr_id: u64, op: SendOp, local: LocalData) -> SendWr {
        SendWr {
            wr_id,
            op,
            local,
            signaled: true,
            fence: false,
            solicited: false,
        }
    }
}

/// A receive work request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecvWr {
    pub wr_id: u64,
    pub sgl: Vec<Sge>,
}

/// Which queue a completion belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkQueue {
    Send,
    Recv,
}

/// The operation a completion reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompletionOpcode {
    Send,
    RdmaWrite,
    RdmaRead,
    CompareSwap,
    FetchAdd,
    MaskedCompareSwap,
    MaskedFetchAdd,
    Nop,
    /// A SEND arrived in a receive.
    Recv,
    /// An RDMA WRITE with immediate consumed a receive.
    RecvRdmaWithImm,
}

impl CompletionOpcode {
    pub(crate) fn of(op: &SendOp) -> CompletionOpcode {
        match op {
            SendOp::Send { .. } => CompletionOpcode::Send,
            SendOp::Write { .. } => CompletionOpcode::RdmaWrite,
            SendOp::Read { .. } => CompletionOpcode::RdmaRead,
            SendOp::Atomic { op, .. } => match op {
                AtomicOp::CompareSwap { .. } => CompletionOpcode::CompareSwap,
                AtomicOp::FetchAdd { .. } => CompletionOpcode::FetchAdd,
                AtomicOp::MaskedCompareSwap { .. } => CompletionOpcode::MaskedCompareSwap,
                AtomicOp::MaskedFetchAdd { .. } => CompletionOpcode::MaskedFetchAdd,
            },
            SendOp::Nop => CompletionOpcode::Nop,
        }
    }
}

/// How a work request ended (the `ibv_wc_status` meanings).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompletionStatus {
    Success,
    /// A receive too small for the SEND, or a local list too short.
    LocalLengthError,
    /// A request the QP cannot execute (e.g. inline data on a READ).
    LocalQpOperationError,
    /// A local key, range or right was refused.
    LocalProtectionError,
    /// The QP was in (or went to) the error state before this completed.
    WrFlushError,
    /// The responder NAKed the request as invalid.
    RemoteInvalidRequest,
    /// The responder refused the rkey, range or right.
    RemoteAccessError,
    /// The responder failed to execute the request.
    RemoteOperationalError,
    /// No acknowledgement after `retry_cnt` retransmissions.
    RetryExceeded,
    /// Still receiver-not-ready after `rnr_retry` retries.
    RnrRetryExceeded,
}

/// A completion the device turns into a CQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The QP's own number.
    pub qpn: u32,
    pub queue: WorkQueue,
    pub wr_id: u64,
    pub opcode: CompletionOpcode,
    pub status: CompletionStatus,
    /// Message length: bytes sent, written, read, received; atomic width.
    pub byte_len: u32,
    pub imm: Option<u32>,
    /// Receive side: the SEND asked for a solicited event.
    pub solicited: bool,
    /// Receive side of a UD QP: the sending QP's number; the receive
    /// buffer then starts with the packet's 40-byte GRH, which `byte_len`
    /// counts.
    pub src_qp: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_semantics() {
        let cs = AtomicOp::CompareSwap {
            compare: 5,
            swap: 9,
        };
        assert_eq!(cs.apply(5), 9);
        assert_eq!(cs.apply(6), 6);
        assert_eq!(AtomicOp::FetchAdd { add: 2 }.apply(u64::MAX), 1);
        let mcs = AtomicOp::MaskedCompareSwap {
            size: AtomicSize::Bits32,
            compare: 0x0000_00ab,
            compare_mask: 0x0000_00ff,
            swap: 0x1234_0000,
            swap_mask: 0xffff_0000,
        };
        assert_eq!(mcs.apply(0x5555_55ab), 0x1234_55ab);
        assert_eq!(mcs.apply(0x5555_55ac), 0x5555_55ac);
        // Two 16-bit fields: the low field wraps without carrying into the high.
        let mfa = AtomicOp::MaskedFetchAdd {
            size: AtomicSize::Bits32,
            add: 0x0001_0001,
            field_boundary: 0x8000_8000,
        };
        assert_eq!(mfa.apply(0x0005_ffff), 0x0006_0000);
        let mfa64 = AtomicOp::MaskedFetchAdd {
            size: AtomicSize::Bits64,
            add: 3,
            field_boundary: 0,
        };
        assert_eq!(mfa64.apply(u64::MAX), 2);
    }
}
