//! Send work-queue entries: opcodes, flags, and the 16-byte segments a WQE
//! is made of, with readers and writers over fixed-size byte arrays (so they
//! cannot go out of bounds), plus ring addressing with wrap-around.
//!
//! A send WQE is a control segment followed by opcode-specific segments, all
//! counted in 16-byte units ("DS"); it occupies whole 64-byte basic blocks
//! (WQEBBs). The ring is a power-of-two number of WQEBBs, and a WQE that runs
//! past the end of the ring continues at its start. All multi-byte fields are
//! big-endian, as the device reads them.

use crate::endian::{big_endian_fields, get_u16, get_u24, get_u32, get_u64, put_u32, put_u64};

/// One 16-byte unit of a WQE (the DS count counts these).
pub const SEG_LEN: usize = 16;
/// A WQE segment.
pub type Seg = [u8; SEG_LEN];
/// Bytes in a send WQE basic block.
pub const SEND_WQE_BB: usize = 64;
/// Segments per basic block.
pub const SEGS_PER_BB: usize = SEND_WQE_BB / SEG_LEN;
/// Largest DS count the 6-bit field holds.
pub const MAX_DS: u8 = 0x3f;

// Send opcodes (low byte of `opmod_idx_opcode`).
pub const MLX5_OPCODE_NOP: u8 = 0x00;
pub const MLX5_OPCODE_SEND_INVAL: u8 = 0x01;
pub const MLX5_OPCODE_RDMA_WRITE: u8 = 0x08;
pub const MLX5_OPCODE_RDMA_WRITE_IMM: u8 = 0x09;
pub const MLX5_OPCODE_SEND: u8 = 0x0a;
pub const MLX5_OPCODE_SEND_IMM: u8 = 0x0b;
pub const MLX5_OPCODE_RDMA_READ: u8 = 0x10;
pub const MLX5_OPCODE_ATOMIC_CS: u8 = 0x11;
pub const MLX5_OPCODE_ATOMIC_FA: u8 = 0x12;
pub const MLX5_OPCODE_ATOMIC_MASKED_CS: u8 = 0x14;
pub const MLX5_OPCODE_ATOMIC_MASKED_FA: u8 = 0x15;

/// Opcode modifier of an extended (masked) atomic: `8 | (log2(size) - 2)`.
pub const OPMOD_EXT_ATOMIC_32: u8 = 0x08;
pub const OPMOD_EXT_ATOMIC_64: u8 = 0x09;

// `fm_ce_se` byte of the control segment.
/// Solicited event at the receiver.
pub const MLX5_WQE_CTRL_SOLICITED: u8 = 1 << 1;
/// Completion-event mode mask (bits 3..2).
pub const MLX5_WQE_CTRL_CE_MASK: u8 = 3 << 2;
/// Always write a CQE for this WQE (otherwise only on error).
pub const MLX5_WQE_CTRL_CQ_UPDATE: u8 = 2 << 2;
/// Fence-mode mask (bits 7..5).
pub const MLX5_WQE_CTRL_FM_MASK: u8 = 7 << 5;
pub const MLX5_FENCE_MODE_NONE: u8 = 0;
pub const MLX5_FENCE_MODE_INITIATOR_SMALL: u8 = 1 << 5;
pub const MLX5_FENCE_MODE_FENCE: u8 = 2 << 5;
pub const MLX5_FENCE_MODE_STRONG_ORDERING: u8 = 3 << 5;
/// What libmlx5 uses for `IBV_SEND_FENCE` (`MLX5_WQE_CTRL_FENCE`): wait for
/// earlier RDMA READs and atomics to complete before executing this WQE.
pub const MLX5_FENCE_MODE_SMALL_AND_FENCE: u8 = 4 << 5;

/// Flag in an inline segment's byte count that tells it from a data pointer.
pub const MLX5_INLINE_SEG: u32 = 0x8000_0000;
/// The lkey that ends a receive WQE's scatter list early.
pub const MLX5_INVALID_LKEY: u32 = 0x100;

/// Operand width of a masked (extended) atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicSize {
    Bits32,
    Bits64,
}

impl AtomicSize {
    /// Width in bytes.
    #[inline]
    pub const fn bytes(self) -> u8 {
        match self {
            AtomicSize::Bits32 => 4,
            AtomicSize::Bits64 => 8,
        }
    }

    /// The ctrl-segment opmod of a masked atomic of this width.
    #[inline]
    pub const fn opmod(self) -> u8 {
        match self {
            AtomicSize::Bits32 => OPMOD_EXT_ATOMIC_32,
            AtomicSize::Bits64 => OPMOD_EXT_ATOMIC_64,
        }
    }

    /// The width a masked-atomic opmod names.
    #[inline]
    pub const fn from_opmod(opmod: u8) -> Option<AtomicSize> {
        match opmod {
            OPMOD_EXT_ATOMIC_32 => Some(AtomicSize::Bits32),
            OPMOD_EXT_ATOMIC_64 => Some(AtomicSize::Bits64),
            _ => None,
        }
    }
}

/// Control segment: first 16 bytes of every send WQE.
///
/// Layout: `opmod(1) | wqe_index(2) | opcode(1) | qpn(3) | ds(1) |
/// signature(1) | stream/channel id(2) | fm_ce_se(1) | imm(4)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CtrlSeg {
    pub opcode: u8,
    pub opmod: u8,
    /// The producer index of this WQE (low 16 bits).
    pub wqe_index: u16,
    /// The QP number (24 bits).
    pub qpn: u32,
    /// Size of the WQE in 16-byte units, this segment included (6 bits).
    pub ds: u8,
    pub signature: u8,
    /// DC stream / channel id; zero for RC.
    pub stream_channel_id: u16,
    /// Fence mode, completion mode and solicited bits.
    pub fm_ce_se: u8,
    /// Immediate data (SEND_IMM, WRITE_IMM) or invalidated rkey, as the
    /// big-endian word read into a `u32`.
    pub imm: u32,
}

impl CtrlSeg {
    #[inline]
    pub fn read(seg: &Seg) -> CtrlSeg {
        CtrlSeg {
            opmod: seg[0],
            wqe_index: get_u16(seg, 1),
            opcode: seg[3],
            qpn: get_u24(seg, 4),
            ds: seg[7],
            signature: seg[8],
            stream_channel_id: get_u16(seg, 9),
            fm_ce_se: seg[11],
            imm: get_u32(seg, 12),
        }
    }

    /// Writes the segment; `qpn` is cut to 24 bits.
    #[inline(always)]
    pub fn write(&self, seg: &mut Seg) {
        // Two big-endian 8-byte stores instead of nine field stores: this
        // runs on every post.
        let first = u64::from(self.opmod) << 56
            | u64::from(self.wqe_index) << 40
            | u64::from(self.opcode) << 32
            | u64::from(self.qpn & 0x00ff_ffff) << 8
            | u64::from(self.ds);
        let second = u64::from(self.signature) << 56
            | u64::from(self.stream_channel_id) << 40
            | u64::from(self.fm_ce_se) << 32
            | u64::from(self.imm);
        put_u64(seg, 0, first);
        put_u64(seg, 8, second);
    }

    /// A CQE is requested for this WQE even on success.
    #[inline]
    pub const fn cq_update(&self) -> bool {
        self.fm_ce_se & MLX5_WQE_CTRL_CE_MASK == MLX5_WQE_CTRL_CQ_UPDATE
    }

    #[inline]
    pub const fn solicited(&self) -> bool {
        self.fm_ce_se & MLX5_WQE_CTRL_SOLICITED != 0
    }

    /// One of the `MLX5_FENCE_MODE_*` values.
    #[inline]
    pub const fn fence_mode(&self) -> u8 {
        self.fm_ce_se & MLX5_WQE_CTRL_FM_MASK
    }

    /// Number of basic blocks the WQE occupies.
    #[inline]
    pub const fn wqebbs(&self) -> usize {
        (self.ds as usize * SEG_LEN).div_ceil(SEND_WQE_BB)
    }
}

big_endian_fields! {
    /// Remote address segment of RDMA and atomic WQEs.
    pub struct RaddrSeg[SEG_LEN] {
        pub raddr: u64 @ 0,
        pub rkey: u32 @ 8,
    }
    reserved: u32 @ 12
}

/// `dqp_dct` bit of a datagram segment: the full 48-byte address vector
/// (GRH part included) follows, not only its first 16 bytes.
pub const MLX5_EXTENDED_UD_AV: u32 = 0x8000_0000;
/// `grh_gid_fl` bit of a datagram segment: the packet carries a GRH (always
/// on RoCE).
pub const MLX5_AV_GRH: u32 = 1 << 30;

/// The datagram segment of a UD send WQE (`mlx5_wqe_datagram_seg`, an
/// address vector), right after the control segment: 48 bytes, three
/// units.
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 4 | Q_Key |
/// | 4 | 4 | reserved |
/// | 8 | 4 | `dqp_dct`: [`MLX5_EXTENDED_UD_AV`] \| destination QPN (24 bits) |
/// | 12 | 1 | `stat_rate_sl`: static rate (high nibble), SL (low) |
/// | 13 | 1 | `fl_mlid`: force loopback (bit 7), source path bits |
/// | 14 | 2 | remote LID (on RoCE: the UDP source port) |
/// | 16 | 4 | reserved |
/// | 20 | 6 | remote MAC |
/// | 26 | 1 | traffic class |
/// | 27 | 1 | hop limit |
/// | 28 | 4 | `grh_gid_fl`: [`MLX5_AV_GRH`] \| SGID index << 20 \| flow label |
/// | 32 | 16 | remote GID |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct DatagramSeg {
    pub qkey: u32,
    /// `dqp_dct` as written: flag bits and the destination QPN.
    pub dqp_dct: u32,
    pub stat_rate_sl: u8,
    pub fl_mlid: u8,
    pub rlid: u16,
    pub rmac: [u8; 6],
    pub tclass: u8,
    pub hop_limit: u8,
    pub grh_gid_fl: u32,
    pub rgid: [u8; 16],
}

impl DatagramSeg {
    pub const LEN: usize = 48;
    /// 16-byte units it takes in a WQE.
    pub const UNITS: usize = Self::LEN / SEG_LEN;

    /// The destination QP number.
    #[inline]
    pub const fn dest_qpn(&self) -> u32 {
        self.dqp_dct & 0x00ff_ffff
    }

    /// Whether the packet carries a GRH (a global address).
    #[inline]
    pub const fn has_grh(&self) -> bool {
        self.grh_gid_fl & MLX5_AV_GRH != 0
    }

    /// The flow label of the GRH (20 bits).
    #[inline]
    pub const fn flow_label(&self) -> u32 {
        self.grh_gid_fl & 0x000f_ffff
    }

    /// Reads the 48 bytes at the front of `b` (at least [`Self::LEN`]).
    #[inline]
    pub fn read(b: &[u8]) -> DatagramSeg {
        let mut rmac = [0u8; 6];
        rmac.copy_from_slice(&b[20..26]);
        let mut rgid = [0u8; 16];
        rgid.copy_from_slice(&b[32..48]);
        DatagramSeg {
            qkey: get_u32(b, 0),
            dqp_dct: get_u32(b, 8),
            stat_rate_sl: b[12],
            fl_mlid: b[13],
            rlid: get_u16(b, 14),
            rmac,
            tclass: b[26],
            hop_limit: b[27],
            grh_gid_fl: get_u32(b, 28),
            rgid,
        }
    }

    /// Writes the 48 bytes at the front of `b` (at least [`Self::LEN`]),
    /// reserved bytes zero.
    #[inline]
    pub fn write(&self, b: &mut [u8]) {
        put_u32(b, 0, self.qkey);
        put_u32(b, 4, 0);
        put_u32(b, 8, self.dqp_dct);
        b[12] = self.stat_rate_sl;
        b[13] = self.fl_mlid;
        b[14..16].copy_from_slice(&self.rlid.to_be_bytes());
        put_u32(b, 16, 0);
        b[20..26].copy_from_slice(&self.rmac);
        b[26] = self.tclass;
        b[27] = self.hop_limit;
        put_u32(b, 28, self.grh_gid_fl);
        b[32..48].copy_from_slice(&self.rgid);
    }
}

big_endian_fields! {
    /// Data pointer segment: a local buffer (gather for SEND/WRITE, scatter
    /// for READ and atomic results, and the entries of receive WQEs).
    pub struct DataSeg[SEG_LEN] {
        pub byte_count: u32 @ 0,
        pub lkey: u32 @ 4,
        pub addr: u64 @ 8,
    }
}

/// Inline data segment: a 4-byte header (`length | MLX5_INLINE_SEG`)
/// followed directly by the data, padded to a whole number of 16-byte units.
pub struct InlineSeg;

impl InlineSeg {
    /// Bytes of data that fit in the first unit, after the header.
    pub const FIRST_UNIT_DATA: usize = SEG_LEN - 4;

    /// Writes the header of `len` bytes of inline data.
    #[inline]
    pub fn write_header(seg: &mut Seg, len: u32) {
        put_u32(seg, 0, len | MLX5_INLINE_SEG);
    }

    /// Whether a segment starts with an inline header.
    #[inline]
    pub fn is_inline(seg: &Seg) -> bool {
        get_u32(seg, 0) & MLX5_INLINE_SEG != 0
    }

    /// The data length in an inline header.
    #[inline]
    pub fn len(seg: &Seg) -> u32 {
        get_u32(seg, 0) & !MLX5_INLINE_SEG
    }

    /// 16-byte units an inline segment of `len` data bytes occupies.
    #[inline]
    pub const fn units(len: usize) -> usize {
        (4 + len).div_ceil(SEG_LEN)
    }
}

/// The two big-endian 64-bit words of a 64-bit atomic operand unit (the
/// layout of [`AtomicSeg`] and of each unit of the 64-bit masked forms).
#[inline]
fn get_u64_pair(seg: &Seg) -> (u64, u64) {
    (get_u64(seg, 0), get_u64(seg, 8))
}

#[inline]
fn put_u64_pair(seg: &mut Seg, first: u64, second: u64) {
    put_u64(seg, 0, first);
    put_u64(seg, 8, second);
}

/// Atomic segment of the standard 64-bit CS and FA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AtomicSeg {
    /// Swap value (CS) or addend (FA).
    pub swap_add: u64,
    /// Compare value (CS).
    pub compare: u64,
}

impl AtomicSeg {
    #[inline]
    pub fn read(seg: &Seg) -> AtomicSeg {
        let (swap_add, compare) = get_u64_pair(seg);
        AtomicSeg { swap_add, compare }
    }

    #[inline]
    pub fn write(&self, seg: &mut Seg) {
        put_u64_pair(seg, self.swap_add, self.compare);
    }
}

/// Masked compare-and-swap operands. 32-bit: one unit
/// `swap | compare | swap_mask | compare_mask` (4 bytes each). 64-bit: two
/// units, `swap | compare` then `swap_mask | compare_mask` (8 bytes each);
/// the second may wrap to the start of the ring, hence two arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MaskedCsSeg {
    pub swap: u64,
    pub compare: u64,
    pub swap_mask: u64,
    pub compare_mask: u64,
}

impl MaskedCsSeg {
    /// Units the operands take for a width.
    #[inline]
    pub const fn units(size: AtomicSize) -> usize {
        match size {
            AtomicSize::Bits32 => 1,
            AtomicSize::Bits64 => 2,
        }
    }

    /// Reads the 32-bit form (values zero-extended).
    #[inline]
    pub fn read32(seg: &Seg) -> MaskedCsSeg {
        MaskedCsSeg {
            swap: u64::from(get_u32(seg, 0)),
            compare: u64::from(get_u32(seg, 4)),
            swap_mask: u64::from(get_u32(seg, 8)),
            compare_mask: u64::from(get_u32(seg, 12)),
        }
    }

    /// Writes the 32-bit form (values cut to 32 bits).
    #[inline]
    pub fn write32(&self, seg: &mut Seg) {
        put_u32(seg, 0, self.swap as u32);
        put_u32(seg, 4, self.compare as u32);
        put_u32(seg, 8, self.swap_mask as u32);
        put_u32(seg, 12, self.compare_mask as u32);
    }

    #[inline]
    pub fn read64(first: &Seg, second: &Seg) -> MaskedCsSeg {
        let (swap, compare) = get_u64_pair(first);
        let (swap_mask, compare_mask) = get_u64_pair(second);
        MaskedCsSeg {
            swap,
            compare,
            swap_mask,
            compare_mask,
        }
    }

    #[inline]
    pub fn write64(&self, first: &mut Seg, second: &mut Seg) {
        put_u64_pair(first, self.swap, self.compare);
        put_u64_pair(second, self.swap_mask, self.compare_mask);
    }
}

/// Masked fetch-and-add operands, one unit. 32-bit:
/// `add | field_boundary | reserved(8)`; 64-bit: `add | field_boundary`.
/// A set bit in `field_boundary` marks the top bit of a field: the carry out
/// of that bit is dropped, so several independent counters share one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MaskedFaSeg {
    pub add: u64,
    pub field_boundary: u64,
}

impl MaskedFaSeg {
    #[inline]
    pub fn read(seg: &Seg, size: AtomicSize) -> MaskedFaSeg {
        match size {
            AtomicSize::Bits32 => MaskedFaSeg {
                add: u64::from(get_u32(seg, 0)),
                field_boundary: u64::from(get_u32(seg, 4)),
            },
            AtomicSize::Bits64 => {
                let (add, field_boundary) = get_u64_pair(seg);
                MaskedFaSeg {
                    add,
                    field_boundary,
                }
            }
        }
    }

    #[inline]
    pub fn write(&self, seg: &mut Seg, size: AtomicSize) {
        match size {
            AtomicSize::Bits32 => {
                put_u32(seg, 0, self.add as u32);
                put_u32(seg, 4, self.field_boundary as u32);
                put_u64(seg, 8, 0);
            }
            AtomicSize::Bits64 => put_u64_pair(seg, self.add, self.field_boundary),
        }
    }
}

/// Whether `len` bytes can be a send ring: a power of two number of WQEBBs.
#[inline]
pub const fn ring_len_is_valid(len: usize) -> bool {
    len >= SEND_WQE_BB && len.is_power_of_two()
}

/// Byte offset of 16-byte unit `unit` of the WQE at `wqe_index`, in a ring of
/// `ring_len` bytes (see [`ring_len_is_valid`]), wrapping at the ring's end.
#[inline]
pub const fn seg_offset(ring_len: usize, wqe_index: u16, unit: usize) -> usize {
    (wqe_index as usize * SEND_WQE_BB + unit * SEG_LEN) & (ring_len.wrapping_sub(1))
}

/// Unit `unit` of the WQE at `wqe_index`; `None` if the ring length is not
/// valid.
#[inline]
pub fn ring_seg(ring: &[u8], wqe_index: u16, unit: usize) -> Option<&Seg> {
    if !ring_len_is_valid(ring.len()) {
        return None;
    }
    let at = seg_offset(ring.len(), wqe_index, unit);
    ring.get(at..at + SEG_LEN)?.try_into().ok()
}

/// Mutable unit `unit` of the WQE at `wqe_index`; `None` if the ring length
/// is not valid.
#[inline]
pub fn ring_seg_mut(ring: &mut [u8], wqe_index: u16, unit: usize) -> Option<&mut Seg> {
    if !ring_len_is_valid(ring.len()) {
        return None;
    }
    let at = seg_offset(ring.len(), wqe_index, unit);
    ring.get_mut(at..at + SEG_LEN)?.try_into().ok()
}

/// Writes an inline segment (header and data, zero padding to the unit)
/// starting at unit `unit` of the WQE at `wqe_index`, wrapping at the ring's
/// end. Returns the units used, or `None` if the ring length is invalid or
/// the data is longer than the ring.
#[inline]
pub fn write_inline(ring: &mut [u8], wqe_index: u16, unit: usize, data: &[u8]) -> Option<usize> {
    write_inline_parts(ring, wqe_index, unit, &[data])
}

/// Like [`write_inline`], with the data given as consecutive pieces (e.g. an
/// active-message header and its payload) that form one inline segment.
///
/// A segment that does not cross the ring's end (the common case) is written
/// with one copy per piece; one that does goes through
/// [`write_inline_parts_wrapping`]. Both write the same bytes.
#[inline]
pub fn write_inline_parts(
    ring: &mut [u8],
    wqe_index: u16,
    unit: usize,
    parts: &[&[u8]],
) -> Option<usize> {
    let (len, units) = inline_extent(ring.len(), parts)?;
    let at = seg_offset(ring.len(), wqe_index, unit);
    match ring.get_mut(at..at + units * SEG_LEN) {
        Some(segment) => {
            write_inline_contiguous(segment, len, parts)?;
            Some(units)
        }
        None => write_inline_parts_wrapping(ring, at, parts),
    }
}

/// The data length of `parts` and the units their inline segment takes;
/// `None` if the ring length is invalid or the segment is longer than the
/// ring.
#[inline]
fn inline_extent(ring_len: usize, parts: &[&[u8]]) -> Option<(usize, usize)> {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let units = InlineSeg::units(len);
    (ring_len_is_valid(ring_len) && units * SEG_LEN <= ring_len).then_some((len, units))
}

/// Writes one inline segment (header, `parts` holding `len` bytes in all,
/// zero padding) into `segment`, which must be exactly its whole units long.
#[inline]
fn write_inline_contiguous(segment: &mut [u8], len: usize, parts: &[&[u8]]) -> Option<()> {
    let (header, mut rest) = segment.split_at_mut_checked(4)?;
    header.copy_from_slice(&(u32::try_from(len).ok()? | MLX5_INLINE_SEG).to_be_bytes());
    for part in parts {
        let (now, later) = rest.split_at_mut_checked(part.len())?;
        now.copy_from_slice(part);
        rest = later;
    }
    rest.fill(0);
    Some(())
}

/// The general form of [`write_inline_parts`] for the segment starting at
/// byte `start` of the ring (a unit boundary, as [`seg_offset`] gives):
/// handles a segment crossing the ring's end (it continues at the ring's
/// start). `None` for an invalid ring or a `start` that is not a unit inside
/// it. Public so that tests can check the fast path against it.
pub fn write_inline_parts_wrapping(
    ring: &mut [u8],
    start: usize,
    parts: &[&[u8]],
) -> Option<usize> {
    let (len, units) = inline_extent(ring.len(), parts)?;
    if start % SEG_LEN != 0 {
        return None;
    }
    let header: &mut Seg = ring.get_mut(start..start + SEG_LEN)?.try_into().ok()?;
    InlineSeg::write_header(header, u32::try_from(len).ok()?);
    let mask = ring.len() - 1;
    let mut at = start + 4;
    for part in parts {
        let mut rest: &[u8] = part;
        while !rest.is_empty() {
            let room = ring.len() - at;
            let (now, later) = rest.split_at(rest.len().min(room));
            ring.get_mut(at..at + now.len())?.copy_from_slice(now);
            at = (at + now.len()) & mask;
            rest = later;
        }
    }
    // Zero the pad up to the end of the last unit.
    let mut pad = units * SEG_LEN - 4 - len;
    while pad > 0 {
        let now = pad.min(ring.len() - at);
        ring.get_mut(at..at + now)?.fill(0);
        at = (at + now) & mask;
        pad -= now;
    }
    Some(units)
}
