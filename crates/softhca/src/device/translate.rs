//! Between the mlx5 formats of the rings and the engine's work requests and
//! completions: WQEs are decoded by `crate::mlx5::decode_send_wqe` /
//! `decode_recv_wqe` and CQEs encoded by `crate::mlx5::Cqe64`; this file
//! only maps fields.

use super::os::DmaBuffer;
use crate::engine::{
    AtomicOp, Completion, CompletionOpcode, CompletionStatus, LocalData, RemoteBuf, SendOp, SendWr,
    Sge, UdDest, UdSendWr,
};
use crate::wire::Gid;
use mlx5::{self, Cqe64, CqeBytes, DataEntry, SendWqe};

/// Largest send WQE: 63 16-byte units round up to 16 basic blocks.
pub const MAX_WQE_BBS: usize = 16;
pub const MAX_WQE_BYTES: usize = MAX_WQE_BBS * mlx5::SEND_WQE_BB;

/// Copies the WQE at `index` of the send ring into `scratch`, laid out as a
/// ring of `MAX_WQE_BBS` blocks holding that WQE at the same index (so its
/// wrap-around is preserved), and returns that ring. The device never holds
/// a reference into the transport's ring while the transport may write it.
/// `None` if the control segment's size does not fit the ring.
pub fn copy_from_ring<'a>(
    ring: &DmaBuffer,
    wqebb_count: u32,
    index: u16,
    scratch: &'a mut [u8; MAX_WQE_BYTES],
) -> Option<&'a [u8]> {
    let ring_bbs = wqebb_count as usize;
    let local_bbs = ring_bbs.min(MAX_WQE_BBS);
    let read_bb = |k: usize, out: &mut [u8]| -> bool {
        let bb = (usize::from(index) + k) & (ring_bbs - 1);
        ring.read(bb * mlx5::SEND_WQE_BB, out)
    };
    let mut ctrl = [0u8; mlx5::SEG_LEN];
    if !read_bb(0, &mut ctrl) {
        return None;
    }
    let ds = usize::from(ctrl[7] & 0x3f);
    let bbs = (ds * mlx5::SEG_LEN).div_ceil(mlx5::SEND_WQE_BB).max(1);
    if bbs > local_bbs {
        return None;
    }
    let local = &mut scratch[..local_bbs * mlx5::SEND_WQE_BB];
    for k in 0..bbs {
        let at = ((usize::from(index) + k) & (local_bbs - 1)) * mlx5::SEND_WQE_BB;
        if !read_bb(k, &mut local[at..at + mlx5::SEND_WQE_BB]) {
            return None;
        }
    }
    Some(local)
}

/// Packs what a send CQE needs into the engine's `wr_id`.
fn wr_id(ctrl: &mlx5::CtrlSeg) -> u64 {
    u64::from(ctrl.wqe_index) | (u64::from(ctrl.opcode) << 16)
}

fn wr_id_index(wr_id: u64) -> u16 {
    wr_id as u16
}

fn wr_id_opcode(wr_id: u64) -> u8 {
    (wr_id >> 16) as u8
}

/// Why a WQE could not become a work request: the basic blocks to skip and
/// the mlx5 opcode for the error CQE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadWqe {
    pub wqebbs: u16,
    pub opcode: u8,
    pub status: CompletionStatus,
}

/// Decodes the WQE at `index` of `ring` (as returned by [`copy_from_ring`])
/// into a work request; `read_local` gathers registered memory for WQEs that
/// mix inline data and pointers (the engine takes one or the other).
pub fn to_work_request(
    ring: &[u8],
    index: u16,
    read_local: impl Fn(&Sge, &mut Vec<u8>) -> bool,
) -> Result<(u16, SendWr), BadWqe> {
    let wqe =
        mlx5::decode_send_wqe(ring, index).map_err(|err| undecodable(ring, index, "WQE", err))?;
    let wqebbs = wqe.wqebbs().max(1) as u16;
    let bad = |status| BadWqe {
        wqebbs,
        opcode: wqe.ctrl.opcode,
        status,
    };
    let remote_of = |r: &mlx5::RaddrSeg| RemoteBuf {
        va: r.raddr,
        rkey: r.rkey,
    };
    let atomic = |r: &mlx5::RaddrSeg, op| SendOp::Atomic {
        remote: remote_of(r),
        op,
    };
    let op = match wqe.op {
        mlx5::SendOp::Nop => SendOp::Nop,
        mlx5::SendOp::Send { imm } => SendOp::Send { imm },
        mlx5::SendOp::SendInval { .. } => return Err(bad(CompletionStatus::LocalQpOperationError)),
        mlx5::SendOp::RdmaWrite { remote, imm } => SendOp::Write {
            remote: remote_of(&remote),
            imm,
        },
        mlx5::SendOp::RdmaRead { remote } => SendOp::Read {
            remote: remote_of(&remote),
        },
        mlx5::SendOp::AtomicCs {
            remote,
            swap,
            compare,
        } => atomic(&remote, AtomicOp::CompareSwap { compare, swap }),
        mlx5::SendOp::AtomicFa { remote, add } => atomic(&remote, AtomicOp::FetchAdd { add }),
        mlx5::SendOp::MaskedCs { remote, size, ops } => atomic(
            &remote,
            AtomicOp::MaskedCompareSwap {
                size,
                compare: ops.compare,
                compare_mask: ops.compare_mask,
                swap: ops.swap,
                swap_mask: ops.swap_mask,
            },
        ),
        mlx5::SendOp::MaskedFa { remote, size, ops } => atomic(
            &remote,
            AtomicOp::MaskedFetchAdd {
                size,
                add: ops.add,
                field_boundary: ops.field_boundary,
            },
        ),
    };
    let local =
        local_data(&wqe, read_local).ok_or_else(|| bad(CompletionStatus::LocalProtectionError))?;
    let ctrl = &wqe.ctrl;
    let wr = SendWr {
        wr_id: wr_id(ctrl),
        op,
        local,
        signaled: ctrl.cq_update(),
        fence: ctrl.fence_mode() != mlx5::MLX5_FENCE_MODE_NONE,
        solicited: ctrl.solicited(),
    };
    Ok((wqebbs, wr))
}

/// What a WQE of a UD QP's send ring asks for: a datagram to send, or a
/// NOP (nothing on the wire, only its completion).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UdRequest {
    Send(UdSendWr),
    Nop { wr_id: u64, signaled: bool },
}

/// Decodes the WQE at `index` of a UD QP's ring (as returned by
/// [`copy_from_ring`]): the destination comes from its datagram segment
/// (remote GID, QPN and Q_Key), the bytes from its data list.
pub fn to_ud_request(
    ring: &[u8],
    index: u16,
    read_local: impl Fn(&Sge, &mut Vec<u8>) -> bool,
) -> Result<(u16, UdRequest), BadWqe> {
    let wqe = mlx5::decode_ud_send_wqe(ring, index)
        .map_err(|err| undecodable(ring, index, "UD WQE", err))?;
    let wqebbs = wqe.wqebbs().max(1) as u16;
    let ctrl = &wqe.ctrl;
    let (imm, av) = match (wqe.op, wqe.datagram) {
        (mlx5::SendOp::Send { imm }, Some(av)) => (imm, av),
        _ => {
            let nop = UdRequest::Nop {
                wr_id: wr_id(ctrl),
                signaled: ctrl.cq_update(),
            };
            return Ok((wqebbs, nop));
        }
    };
    let local = local_data(&wqe, read_local).ok_or(BadWqe {
        wqebbs,
        opcode: ctrl.opcode,
        status: CompletionStatus::LocalProtectionError,
    })?;
    let wr = UdSendWr {
        wr_id: wr_id(ctrl),
        dest: UdDest {
            gid: Gid(av.rgid),
            qpn: av.dest_qpn(),
            qkey: av.qkey,
        },
        imm,
        local,
        signaled: ctrl.cq_update(),
        solicited: ctrl.solicited(),
    };
    Ok((wqebbs, UdRequest::Send(wr)))
}

/// A WQE the decoder refused: a local QP operation error over the blocks its
/// control segment claims (at least one), logged with why.
fn undecodable(ring: &[u8], index: u16, kind: &str, err: impl std::fmt::Display) -> BadWqe {
    tracing::debug!("soft hca: {kind} {index}: {err}");
    let ctrl = ring_ctrl(ring, index);
    BadWqe {
        wqebbs: ctrl.wqebbs().max(1) as u16,
        opcode: ctrl.opcode,
        status: CompletionStatus::LocalQpOperationError,
    }
}

fn ring_ctrl(ring: &[u8], index: u16) -> mlx5::CtrlSeg {
    mlx5::ring_seg(ring, index, 0)
        .map(mlx5::CtrlSeg::read)
        .unwrap_or_default()
}

/// The engine's local data: a pointer list as is, inline bytes as is, and a
/// mix of both (an AM header inline followed by zero-copy data) gathered
/// into one inline buffer now, which is what the HCA would read later: the
/// buffers may not change before the WQE completes anyway.
fn local_data(
    wqe: &SendWqe<'_>,
    read_local: impl Fn(&Sge, &mut Vec<u8>) -> bool,
) -> Option<LocalData> {
    let has_inline = wqe.data().any(|e| matches!(e, DataEntry::Inline(_)));
    if !has_inline {
        let sgl = wqe
            .data()
            .filter_map(|e| match e {
                DataEntry::Pointer(d) => Some(Sge {
                    addr: d.addr,
                    len: d.byte_count,
                    lkey: d.lkey,
                }),
                DataEntry::Inline(_) => None,
            })
            .collect();
        return Some(LocalData::Sgl(sgl));
    }
    // `data_len` comes from the WQE: reserve from it only up to a bound.
    const RESERVE_LIMIT: u64 = 64 * 1024;
    let mut bytes = Vec::with_capacity(wqe.data_len.min(RESERVE_LIMIT) as usize);
    for entry in wqe.data() {
        match entry {
            DataEntry::Inline(inline) => {
                bytes.extend_from_slice(inline.head);
                bytes.extend_from_slice(inline.tail);
            }
            DataEntry::Pointer(d) => {
                let sge = Sge {
                    addr: d.addr,
                    len: d.byte_count,
                    lkey: d.lkey,
                };
                if !read_local(&sge, &mut bytes) {
                    return None;
                }
            }
        }
    }
    Some(LocalData::Inline(bytes))
}

/// The CQE syndrome of an error status.
fn syndrome(status: CompletionStatus) -> u8 {
    match status {
        CompletionStatus::Success => 0,
        CompletionStatus::LocalLengthError => mlx5::MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR,
        CompletionStatus::LocalQpOperationError => mlx5::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR,
        CompletionStatus::LocalProtectionError => mlx5::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
        CompletionStatus::WrFlushError => mlx5::MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
        CompletionStatus::RemoteInvalidRequest => mlx5::MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR,
        CompletionStatus::RemoteAccessError => mlx5::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR,
        CompletionStatus::RemoteOperationalError => mlx5::MLX5_CQE_SYNDROME_REMOTE_OP_ERR,
        CompletionStatus::RetryExceeded => mlx5::MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
        CompletionStatus::RnrRetryExceeded => mlx5::MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR,
    }
}

/// An error CQE for a WQE the engine never accepted.
pub fn error_cqe(qpn: u32, index: u16, mlx5_opcode: u8, status: CompletionStatus) -> CqeBytes {
    Cqe64 {
        opcode: mlx5::MLX5_CQE_REQ_ERR,
        wqe_counter: index,
        qpn,
        wqe_opcode: mlx5_opcode,
        syndrome: syndrome(status),
        ..Cqe64::default()
    }
    .encode()
}

/// The CQE of a send-queue completion.
pub fn send_cqe(completion: &Completion) -> CqeBytes {
    let index = wr_id_index(completion.wr_id);
    let opcode = wr_id_opcode(completion.wr_id);
    if completion.status != CompletionStatus::Success {
        return error_cqe(completion.qpn, index, opcode, completion.status);
    }
    Cqe64 {
        opcode: mlx5::MLX5_CQE_REQ,
        wqe_counter: index,
        qpn: completion.qpn,
        wqe_opcode: opcode,
        byte_cnt: completion.byte_len,
        ..Cqe64::default()
    }
    .encode()
}

/// The CQE of a receive completion (the `wr_id` is the SRQ WQE index);
/// `remote_qpn` is the connected peer's QPN, used unless the completion
/// names its datagram's source QP.
pub fn recv_cqe(completion: &Completion, srqn: u32, remote_qpn: u32) -> CqeBytes {
    let index = completion.wr_id as u16;
    if completion.status != CompletionStatus::Success {
        return Cqe64 {
            opcode: mlx5::MLX5_CQE_RESP_ERR,
            wqe_counter: index,
            qpn: completion.qpn,
            srqn,
            syndrome: syndrome(completion.status),
            ..Cqe64::default()
        }
        .encode();
    }
    let opcode = match (completion.opcode, completion.imm) {
        (CompletionOpcode::RecvRdmaWithImm, _) => mlx5::MLX5_CQE_RESP_WR_IMM,
        (_, Some(_)) => mlx5::MLX5_CQE_RESP_SEND_IMM,
        _ => mlx5::MLX5_CQE_RESP_SEND,
    };
    Cqe64 {
        opcode,
        solicited: completion.solicited,
        wqe_counter: index,
        qpn: completion.qpn,
        byte_cnt: completion.byte_len,
        imm_inval_pkey: completion.imm.unwrap_or(0),
        remote_qpn: completion.src_qp.unwrap_or(remote_qpn),
        grh_in_data: completion.src_qp.is_some(),
        // The GRH a UD receive gets is the IPv6-format header of a RoCE v2
        // (UDP) packet between link-local GIDs.
        roce_packet_type: if completion.src_qp.is_some() {
            mlx5::MLX5_CQE_ROCE_L3_IPV6 | mlx5::MLX5_CQE_ROCE_UDP
        } else {
            0
        },
        srqn,
        ..Cqe64::default()
    }
    .encode()
}
