//! How a send request is cut into packets: its message length (or the
//! error it completes with) and the PSNs it takes. Used when it is posted
//! (`qp`) and when its packets are built (`requester`).

use super::memory::sgl_len;
use super::wr::{CompletionStatus, LocalData, SendOp, SendWr};
use mlx5::{packet_count, PacketShape};

/// Largest message IB allows (2^31 bytes).
const MAX_MESSAGE_LEN: u64 = 1 << 31;

/// The length of a request's message, or the error it will complete with.
pub(super) fn message_len(wr: &SendWr) -> Result<u32, CompletionStatus> {
    let data_len = match &wr.local {
        LocalData::Sgl(sgl) => sgl_len(sgl).ok_or(CompletionStatus::LocalLengthError)?,
        LocalData::Inline(bytes) => bytes.len() as u64,
    };
    let inline = matches!(wr.local, LocalData::Inline(_));
    match &wr.op {
        SendOp::Send { .. } | SendOp::Write { .. } => {}
        SendOp::Read { .. } if inline => return Err(CompletionStatus::LocalQpOperationError),
        SendOp::Read { .. } => {}
        SendOp::Atomic { op, .. } => {
            if inline {
                return Err(CompletionStatus::LocalQpOperationError);
            }
            let size = u64::from(op.size_bytes());
            return if data_len < size {
                Err(CompletionStatus::LocalLengthError)
            } else {
                Ok(size as u32)
            };
        }
        SendOp::Nop => return Ok(0),
    }
    if data_len > MAX_MESSAGE_LEN {
        return Err(CompletionStatus::LocalLengthError);
    }
    u32::try_from(data_len).map_err(|_| CompletionStatus::LocalLengthError)
}

/// PSNs a request uses: one per MTU-sized packet (READ: per response
/// packet), at least one; NOP uses none.
pub(super) fn psn_count(op: &SendOp, len: u32, mtu: u32) -> u32 {
    let shape = match op {
        SendOp::Nop => PacketShape::None,
        SendOp::Atomic { .. } => PacketShape::Atomic,
        SendOp::Send { .. } | SendOp::Write { .. } | SendOp::Read { .. } => PacketShape::Data,
    };
    packet_count(shape, u64::from(len), mtu)
}
