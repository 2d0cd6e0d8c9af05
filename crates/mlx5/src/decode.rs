//! Reading WQEs back: what the soft HCA does with the rings the datapath
//! wrote. Every input, including garbage, yields a value or an error, never a
//! panic or an out-of-bounds read.

use super::wqe::*;

/// Why a WQE could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum WqeError {
    /// The ring (or receive stride) is not a power-of-two size the format allows.
    #[error("ring size is not a valid power of two")]
    BadRing,
    /// The control segment carries another WQE index than the one expected.
    #[error("WQE index {found} where {expected} was expected")]
    IndexMismatch { expected: u16, found: u16 },
    /// DS count zero, over 63, larger than the ring, or too small for the
    /// segments the opcode needs.
    #[error("bad DS count {0}")]
    BadDsCount(u8),
    #[error("unknown send opcode 0x{0:02x}")]
    UnknownOpcode(u8),
    /// A masked atomic with an opmod that names no operand width.
    #[error("bad masked-atomic opmod 0x{0:02x}")]
    BadOpmod(u8),
    /// An opcode a QP of this type does not execute (a UD QP only sends).
    #[error("send opcode 0x{0:02x} on a UD QP")]
    NotForUd(u8),
    /// A data or inline segment runs past the DS count.
    #[error("segment runs past the WQE")]
    Truncated,
    /// Building: the segments need more units than the DS field or the ring
    /// holds.
    #[error("WQE larger than the DS field or the ring")]
    TooLarge,
}

/// What a send WQE asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    Nop,
    Send {
        imm: Option<u32>,
    },
    /// SEND that invalidates `rkey` at the responder.
    SendInval {
        rkey: u32,
    },
    RdmaWrite {
        remote: RaddrSeg,
        imm: Option<u32>,
    },
    RdmaRead {
        remote: RaddrSeg,
    },
    AtomicCs {
        remote: RaddrSeg,
        swap: u64,
        compare: u64,
    },
    AtomicFa {
        remote: RaddrSeg,
        add: u64,
    },
    MaskedCs {
        remote: RaddrSeg,
        size: AtomicSize,
        ops: MaskedCsSeg,
    },
    MaskedFa {
        remote: RaddrSeg,
        size: AtomicSize,
        ops: MaskedFaSeg,
    },
}

/// An entry of a WQE's data list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataEntry<'a> {
    /// A local buffer named by lkey and address.
    Pointer(DataSeg),
    /// Bytes carried in the WQE itself.
    Inline(InlineData<'a>),
}

impl DataEntry<'_> {
    /// Bytes this entry describes.
    #[inline]
    pub fn len(&self) -> u64 {
        match self {
            DataEntry::Pointer(d) => u64::from(d.byte_count),
            DataEntry::Inline(i) => i.len() as u64,
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Inline bytes; `tail` is non-empty only when they wrap past the ring's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineData<'a> {
    pub head: &'a [u8],
    pub tail: &'a [u8],
}

impl InlineData<'_> {
    #[inline]
    pub fn len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies the bytes into the front of `out`; returns how many were copied
    /// (less than `len()` only if `out` is shorter).
    #[inline]
    pub fn copy_to(&self, out: &mut [u8]) -> usize {
        let h = self.head.len().min(out.len());
        out[..h].copy_from_slice(&self.head[..h]);
        let t = self.tail.len().min(out.len() - h);
        out[h..h + t].copy_from_slice(&self.tail[..t]);
        h + t
    }
}

/// A decoded send WQE. The data list (gather list of SEND/WRITE, scatter
/// list of READ, result buffer of atomics) is read lazily by [`SendWqe::data`]
/// from the ring, and was validated by the decoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWqe<'a> {
    pub ctrl: CtrlSeg,
    pub op: SendOp,
    /// The address of a UD send ([`decode_ud_send_wqe`]).
    pub datagram: Option<DatagramSeg>,
    /// Number of entries in the data list.
    pub data_count: usize,
    /// Sum of the data list's byte counts.
    pub data_len: u64,
    ring: &'a [u8],
    data_first_unit: usize,
    data_end_unit: usize,
}

impl<'a> SendWqe<'a> {
    /// Basic blocks the WQE occupies (how far the consumer index moves).
    #[inline]
    pub fn wqebbs(&self) -> usize {
        self.ctrl.wqebbs()
    }

    /// The data list.
    #[inline]
    pub fn data(&self) -> DataIter<'a> {
        DataIter {
            ring: self.ring,
            wqe_index: self.ctrl.wqe_index,
            unit: self.data_first_unit,
            end: self.data_end_unit,
        }
    }
}

/// Iterator over a send WQE's data list.
#[derive(Clone, Debug)]
pub struct DataIter<'a> {
    ring: &'a [u8],
    wqe_index: u16,
    unit: usize,
    end: usize,
}

impl<'a> Iterator for DataIter<'a> {
    type Item = DataEntry<'a>;

    fn next(&mut self) -> Option<DataEntry<'a>> {
        let (entry, units) = read_data_entry(self.ring, self.wqe_index, self.unit, self.end)?;
        self.unit += units;
        Some(entry)
    }
}

/// Reads the data entry at `unit`, if it lies entirely before `end`; returns
/// it with the number of units it occupies.
fn read_data_entry(
    ring: &[u8],
    wqe_index: u16,
    unit: usize,
    end: usize,
) -> Option<(DataEntry<'_>, usize)> {
    if unit >= end {
        return None;
    }
    let seg = ring_seg(ring, wqe_index, unit)?;
    if !InlineSeg::is_inline(seg) {
        return Some((DataEntry::Pointer(DataSeg::read(seg)), 1));
    }
    let len = usize::try_from(InlineSeg::len(seg)).ok()?;
    // Bound by the ring before computing units, so nothing can overflow.
    if len > ring.len() {
        return None;
    }
    let units = InlineSeg::units(len);
    if unit + units > end {
        return None;
    }
    let start = seg_offset(ring.len(), wqe_index, unit) + 4;
    let head_len = len.min(ring.len() - start);
    let head = ring.get(start..start + head_len)?;
    let tail = ring.get(..len - head_len)?;
    Some((DataEntry::Inline(InlineData { head, tail }), units))
}

/// Decodes the send WQE at producer index `wqe_index` of `ring` (a power of
/// two number of 64-byte blocks), following the ring's wrap-around.
pub fn decode_send_wqe(ring: &[u8], wqe_index: u16) -> Result<SendWqe<'_>, WqeError> {
    decode(ring, wqe_index, false)
}

/// Decodes a send WQE of a UD QP: a NOP, or a SEND (with immediate)
/// whose control segment is followed by a [`DatagramSeg`] and then the
/// data list. Any other opcode is `NotForUd`.
pub fn decode_ud_send_wqe(ring: &[u8], wqe_index: u16) -> Result<SendWqe<'_>, WqeError> {
    decode(ring, wqe_index, true)
}

fn decode(ring: &[u8], wqe_index: u16, ud: bool) -> Result<SendWqe<'_>, WqeError> {
    if !ring_len_is_valid(ring.len()) {
        return Err(WqeError::BadRing);
    }
    let seg = |unit: usize| ring_seg(ring, wqe_index, unit).ok_or(WqeError::BadRing);
    let ctrl = CtrlSeg::read(seg(0)?);
    if ctrl.wqe_index != wqe_index {
        return Err(WqeError::IndexMismatch {
            expected: wqe_index,
            found: ctrl.wqe_index,
        });
    }
    let ds = usize::from(ctrl.ds);
    if ctrl.ds == 0 || ctrl.ds > MAX_DS || ds * SEG_LEN > ring.len() {
        return Err(WqeError::BadDsCount(ctrl.ds));
    }

    if ud {
        return decode_ud(ring, wqe_index, ctrl);
    }
    // The fixed segments after the control segment, by opcode.
    let imm = Some(ctrl.imm);
    let (op, fixed_units) = match ctrl.opcode {
        MLX5_OPCODE_NOP => (SendOp::Nop, 0),
        MLX5_OPCODE_SEND => (SendOp::Send { imm: None }, 0),
        MLX5_OPCODE_SEND_IMM => (SendOp::Send { imm }, 0),
        MLX5_OPCODE_SEND_INVAL => (SendOp::SendInval { rkey: ctrl.imm }, 0),
        MLX5_OPCODE_RDMA_WRITE
        | MLX5_OPCODE_RDMA_WRITE_IMM
        | MLX5_OPCODE_RDMA_READ
        | MLX5_OPCODE_ATOMIC_CS
        | MLX5_OPCODE_ATOMIC_FA
        | MLX5_OPCODE_ATOMIC_MASKED_CS
        | MLX5_OPCODE_ATOMIC_MASKED_FA => {
            if ds < 2 {
                return Err(WqeError::BadDsCount(ctrl.ds));
            }
            let remote = RaddrSeg::read(seg(1)?);
            match ctrl.opcode {
                MLX5_OPCODE_RDMA_WRITE => (SendOp::RdmaWrite { remote, imm: None }, 1),
                MLX5_OPCODE_RDMA_WRITE_IMM => (SendOp::RdmaWrite { remote, imm }, 1),
                MLX5_OPCODE_RDMA_READ => (SendOp::RdmaRead { remote }, 1),
                MLX5_OPCODE_ATOMIC_CS | MLX5_OPCODE_ATOMIC_FA => {
                    if ds < 3 {
                        return Err(WqeError::BadDsCount(ctrl.ds));
                    }
                    let a = AtomicSeg::read(seg(2)?);
                    let op = if ctrl.opcode == MLX5_OPCODE_ATOMIC_CS {
                        SendOp::AtomicCs {
                            remote,
                            swap: a.swap_add,
                            compare: a.compare,
                        }
                    } else {
                        SendOp::AtomicFa {
                            remote,
                            add: a.swap_add,
                        }
                    };
                    (op, 2)
                }
                _ => {
                    let size =
                        AtomicSize::from_opmod(ctrl.opmod).ok_or(WqeError::BadOpmod(ctrl.opmod))?;
                    if ctrl.opcode == MLX5_OPCODE_ATOMIC_MASKED_CS {
                        let units = MaskedCsSeg::units(size);
                        if ds < 2 + units {
                            return Err(WqeError::BadDsCount(ctrl.ds));
                        }
                        let ops = match size {
                            AtomicSize::Bits32 => MaskedCsSeg::read32(seg(2)?),
                            AtomicSize::Bits64 => MaskedCsSeg::read64(seg(2)?, seg(3)?),
                        };
                        (SendOp::MaskedCs { remote, size, ops }, 1 + units)
                    } else {
                        if ds < 3 {
                            return Err(WqeError::BadDsCount(ctrl.ds));
                        }
                        let ops = MaskedFaSeg::read(seg(2)?, size);
                        (SendOp::MaskedFa { remote, size, ops }, 2)
                    }
                }
            }
        }
        other => return Err(WqeError::UnknownOpcode(other)),
    };
    with_data_list(ring, ctrl, op, None, fixed_units)
}

/// The UD part of [`decode_ud_send_wqe`], once the control segment is
/// read and its index and DS count checked.
fn decode_ud(ring: &[u8], wqe_index: u16, ctrl: CtrlSeg) -> Result<SendWqe<'_>, WqeError> {
    let imm = Some(ctrl.imm);
    let op = match ctrl.opcode {
        MLX5_OPCODE_NOP => return with_data_list(ring, ctrl, SendOp::Nop, None, 0),
        MLX5_OPCODE_SEND => SendOp::Send { imm: None },
        MLX5_OPCODE_SEND_IMM => SendOp::Send { imm },
        other => return Err(WqeError::NotForUd(other)),
    };
    if usize::from(ctrl.ds) < 1 + DatagramSeg::UNITS {
        return Err(WqeError::BadDsCount(ctrl.ds));
    }
    let mut av = [0u8; DatagramSeg::LEN];
    for (k, chunk) in av.chunks_exact_mut(SEG_LEN).enumerate() {
        chunk.copy_from_slice(ring_seg(ring, wqe_index, 1 + k).ok_or(WqeError::BadRing)?);
    }
    let datagram = DatagramSeg::read(&av);
    with_data_list(ring, ctrl, op, Some(datagram), DatagramSeg::UNITS)
}

/// Checks the data list that follows the control segment and
/// `fixed_units` more, and makes the decoded WQE.
fn with_data_list(
    ring: &[u8],
    ctrl: CtrlSeg,
    op: SendOp,
    datagram: Option<DatagramSeg>,
    fixed_units: usize,
) -> Result<SendWqe<'_>, WqeError> {
    let wqe_index = ctrl.wqe_index;
    let ds = usize::from(ctrl.ds);
    let data_first_unit = 1 + fixed_units;
    let mut data_count = 0;
    let mut data_len = 0u64;
    // A NOP's remaining units (if any) are padding, not a data list.
    let data_end = if op == SendOp::Nop {
        data_first_unit
    } else {
        ds
    };
    let mut unit = data_first_unit;
    while unit < data_end {
        let (entry, units) =
            read_data_entry(ring, wqe_index, unit, data_end).ok_or(WqeError::Truncated)?;
        data_count += 1;
        data_len += entry.len();
        unit += units;
    }
    Ok(SendWqe {
        ctrl,
        op,
        datagram,
        data_count,
        data_len,
        ring,
        data_first_unit,
        data_end_unit: data_end,
    })
}

/// Next-segment header that starts each WQE of a linked-list SRQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SrqNextSeg {
    /// Index of the next free WQE in the list.
    pub next_wqe_index: u16,
    pub signature: u8,
}

impl SrqNextSeg {
    #[inline]
    pub fn read(seg: &Seg) -> SrqNextSeg {
        SrqNextSeg {
            next_wqe_index: crate::endian::get_u16(seg, 2),
            signature: seg[4],
        }
    }

    #[inline]
    pub fn write(&self, seg: &mut Seg) {
        seg.fill(0);
        crate::endian::put_u16(seg, 2, self.next_wqe_index);
        seg[4] = self.signature;
    }
}

/// A receive WQE: optional SRQ next segment, then data segments up to the
/// stride or to the first with lkey [`MLX5_INVALID_LKEY`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWqe<'a> {
    /// Present for SRQ WQEs.
    pub next: Option<SrqNextSeg>,
    /// Sum of the scatter list's byte counts.
    pub data_len: u64,
    /// Number of scatter entries.
    pub data_count: usize,
    bytes: &'a [u8],
}

impl<'a> RecvWqe<'a> {
    /// The scatter list.
    #[inline]
    pub fn data(&self) -> impl Iterator<Item = DataSeg> + 'a {
        self.bytes
            .chunks_exact(SEG_LEN)
            .map(DataSeg::read)
            .take_while(|d| d.lkey != MLX5_INVALID_LKEY)
    }
}

/// Decodes receive WQE `wqe_index` of `ring`, whose WQEs are `stride` bytes
/// (a power of two, at least 16, dividing the ring). `srq` says whether each
/// WQE starts with an [`SrqNextSeg`].
pub fn decode_recv_wqe(
    ring: &[u8],
    wqe_index: u16,
    stride: usize,
    srq: bool,
) -> Result<RecvWqe<'_>, WqeError> {
    if stride < SEG_LEN
        || !stride.is_power_of_two()
        || !ring.len().is_power_of_two()
        || ring.len() < stride
        || (srq && stride < 2 * SEG_LEN)
    {
        return Err(WqeError::BadRing);
    }
    let at = (usize::from(wqe_index) * stride) & (ring.len() - 1);
    let wqe = ring.get(at..at + stride).ok_or(WqeError::BadRing)?;
    let (next, bytes) = if srq {
        let (head, rest) = wqe.split_at(SEG_LEN);
        let head: &Seg = head.try_into().map_err(|_| WqeError::BadRing)?;
        (Some(SrqNextSeg::read(head)), rest)
    } else {
        (None, wqe)
    };
    let mut repr = RecvWqe {
        next,
        data_len: 0,
        data_count: 0,
        bytes,
    };
    for d in repr.data() {
        repr.data_count += 1;
        repr.data_len += u64::from(d.byte_count);
    }
    Ok(repr)
}
