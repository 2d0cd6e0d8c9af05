//! 64-byte completion queue entries (CQE64) and the CQ ownership rule.
//!
//! Offsets (big-endian fields): 24 `flags_rqpn` (remote QPN in the low 24
//! bits; bit 28 says a UD receive's buffer starts with the packet's GRH;
//! bits 27..24 of a RoCE UD receive are the packet type: its L3 header in
//! bits 26..24, bit 27 for a UDP header), 32 `srqn_uidx`, 36 `imm_inval_pkey`, 44 `byte_cnt`, 48 timestamp,
//! 56 `sop_drop_qpn` (the WQE opcode in the top byte of requester CQEs, the
//! QPN in the low 24 bits), 60 `wqe_counter`, 62 signature, 63 `op_own`
//! (CQE opcode in the high nibble, format in bits 3..2, solicited in bit 1,
//! owner in bit 0). Format 1 (the `MLX5_INLINE_SCATTER_32` bit) means the
//! device scattered a receive of at most 32 bytes into CQE bytes 0..32
//! instead of the receive buffer (libmlx5 turns this on by default);
//! format 2 (`MLX5_INLINE_SCATTER_64`) is the same for 128-byte CQEs (up to
//! 64 bytes, in the first half of the entry; only the soft device's CQs for
//! the verbs stand-in have them), and format 3 marks compressed CQEs, never
//! enabled. Error CQEs put the vendor syndrome at 54 and the
//! syndrome at 55, inside what is otherwise the timestamp.

use crate::endian::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};

/// `flags_rqpn` bit of a receive CQE: the packet's L3 header (the GRH)
/// is in front of the data in the receive buffer.
pub const MLX5_CQE_L3_IN_DATA: u32 = 1 << 28;

/// RoCE packet type of a UD receive CQE (bits 27..24 of `flags_rqpn`,
/// where InfiniBand puts the SL): the L3 header was an IPv6 header (or the
/// GRH of RoCE v1), in the low three bits.
pub const MLX5_CQE_ROCE_L3_IPV6: u8 = 0x1;
/// The L3 header was IPv4: its 20 bytes are in the second half of the
/// 40-byte area in front of the data.
pub const MLX5_CQE_ROCE_L3_IPV4: u8 = 0x2;
/// The frame had a UDP header (RoCE v2).
pub const MLX5_CQE_ROCE_UDP: u8 = 0x8;

/// Bytes in a CQE.
pub const CQE_LEN: usize = 64;
/// A CQE's bytes.
pub type CqeBytes = [u8; CQE_LEN];
/// Offset of the `op_own` byte, which a producer must store last (with
/// release ordering) because it hands the entry to the consumer.
pub const CQE_OP_OWN_OFFSET: usize = 63;

// CQE opcodes (high nibble of op_own).
pub const MLX5_CQE_REQ: u8 = 0;
pub const MLX5_CQE_RESP_WR_IMM: u8 = 1;
pub const MLX5_CQE_RESP_SEND: u8 = 2;
pub const MLX5_CQE_RESP_SEND_IMM: u8 = 3;
pub const MLX5_CQE_RESP_SEND_INV: u8 = 4;
pub const MLX5_CQE_REQ_ERR: u8 = 13;
pub const MLX5_CQE_RESP_ERR: u8 = 14;
/// Opcode of an entry never written (how a fresh CQ is initialised).
pub const MLX5_CQE_INVALID: u8 = 15;

pub const MLX5_CQE_OWNER_MASK: u8 = 1;
pub const MLX5_CQE_SE_MASK: u8 = 1 << 1;
/// op_own bit: the received data is in CQE bytes 0..32 (format 1).
pub const MLX5_INLINE_SCATTER_32: u8 = 1 << 2;
/// op_own bit: the received data is in the 64 bytes before this CQE of a
/// 128-byte CQE (format 2); never valid for our 64-byte CQEs.
pub const MLX5_INLINE_SCATTER_64: u8 = 1 << 3;
/// The format bits (3..2) of op_own; zero for an ordinary CQE.
pub const MLX5_CQE_FORMAT_MASK: u8 = MLX5_INLINE_SCATTER_32 | MLX5_INLINE_SCATTER_64;
/// Most bytes a 64-byte CQE carries inline.
pub const CQE_INLINE_DATA_MAX: usize = 32;

// Error syndromes.
pub const MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR: u8 = 0x01;
pub const MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR: u8 = 0x02;
pub const MLX5_CQE_SYNDROME_LOCAL_PROT_ERR: u8 = 0x04;
pub const MLX5_CQE_SYNDROME_WR_FLUSH_ERR: u8 = 0x05;
pub const MLX5_CQE_SYNDROME_MW_BIND_ERR: u8 = 0x06;
pub const MLX5_CQE_SYNDROME_BAD_RESP_ERR: u8 = 0x10;
pub const MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR: u8 = 0x11;
pub const MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR: u8 = 0x12;
pub const MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR: u8 = 0x13;
pub const MLX5_CQE_SYNDROME_REMOTE_OP_ERR: u8 = 0x14;
pub const MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR: u8 = 0x15;
pub const MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR: u8 = 0x16;
pub const MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR: u8 = 0x22;

/// What an error syndrome says, for log lines.
pub fn syndrome_text(syndrome: u8) -> &'static str {
    match syndrome {
        MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR => "local length error",
        MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR => "local QP operation error",
        MLX5_CQE_SYNDROME_LOCAL_PROT_ERR => "local protection error",
        MLX5_CQE_SYNDROME_WR_FLUSH_ERR => "work request flushed (QP in error)",
        MLX5_CQE_SYNDROME_MW_BIND_ERR => "memory window bind error",
        MLX5_CQE_SYNDROME_BAD_RESP_ERR => "bad response",
        MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR => "local access error",
        MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR => "remote invalid request",
        MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR => "remote access error",
        MLX5_CQE_SYNDROME_REMOTE_OP_ERR => "remote operation error",
        MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR => "transport retry count exceeded",
        MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR => "RNR retry count exceeded",
        MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR => "remote side aborted",
        _ => "error",
    }
}

/// The fields of a CQE64 we produce and consume. `encode` places each where
/// the CQE's opcode says it goes; `decode` reads them back the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Cqe64 {
    /// One of the `MLX5_CQE_*` opcodes.
    pub opcode: u8,
    pub owner: bool,
    /// The sender asked for a solicited event (receive completions).
    pub solicited: bool,
    /// Send CQE: index of the completed WQE; receive CQE: index of the
    /// consumed receive WQE.
    pub wqe_counter: u16,
    /// Local QP number (24 bits).
    pub qpn: u32,
    /// Requester CQE (also error): the mlx5 opcode of the completed WQE.
    pub wqe_opcode: u8,
    /// Bytes received (receive), read (RDMA READ), or the atomic width.
    /// Not carried by error CQEs.
    pub byte_cnt: u32,
    /// Immediate data or invalidated rkey, as the big-endian word read into
    /// a `u32`. Not carried by error CQEs.
    pub imm_inval_pkey: u32,
    /// Receive CQE: the remote QPN (24 bits).
    pub remote_qpn: u32,
    /// Receive CQE of a UD QP: the receive buffer starts with the packet's
    /// 40-byte GRH ([`MLX5_CQE_L3_IN_DATA`] in `flags_rqpn`).
    pub grh_in_data: bool,
    /// Receive CQE of a UD QP on RoCE: the packet type
    /// (`MLX5_CQE_ROCE_*`, 4 bits).
    pub roce_packet_type: u8,
    /// Receive CQE through an SRQ: its number (24 bits).
    pub srqn: u32,
    pub timestamp: u64,
    /// Error CQE only.
    pub syndrome: u8,
    /// Error CQE only.
    pub vendor_syndrome: u8,
}

impl Cqe64 {
    /// Whether the opcode is an error completion.
    #[inline]
    pub const fn is_error(&self) -> bool {
        self.opcode == MLX5_CQE_REQ_ERR || self.opcode == MLX5_CQE_RESP_ERR
    }

    /// The `op_own` byte.
    #[inline]
    pub const fn op_own(&self) -> u8 {
        (self.opcode << 4)
            | (if self.solicited { MLX5_CQE_SE_MASK } else { 0 })
            | (if self.owner { MLX5_CQE_OWNER_MASK } else { 0 })
    }

    /// The entry's bytes. Store bytes `..CQE_OP_OWN_OFFSET` first and the
    /// `op_own` byte last: that order is what hands the CQE over.
    #[inline]
    pub fn encode(&self) -> CqeBytes {
        let mut b = [0u8; CQE_LEN];
        if !self.is_error() {
            let grh = if self.grh_in_data {
                MLX5_CQE_L3_IN_DATA
            } else {
                0
            };
            let packet_type = u32::from(self.roce_packet_type & 0x0f) << 24;
            put_u32(
                &mut b,
                24,
                grh | packet_type | (self.remote_qpn & 0x00ff_ffff),
            );
            put_u32(&mut b, 36, self.imm_inval_pkey);
            put_u32(&mut b, 44, self.byte_cnt);
            put_u64(&mut b, 48, self.timestamp);
        } else {
            b[54] = self.vendor_syndrome;
            b[55] = self.syndrome;
        }
        put_u32(&mut b, 32, self.srqn & 0x00ff_ffff);
        put_u32(
            &mut b,
            56,
            (u32::from(self.wqe_opcode) << 24) | (self.qpn & 0x00ff_ffff),
        );
        put_u16(&mut b, 60, self.wqe_counter);
        b[CQE_OP_OWN_OFFSET] = self.op_own();
        b
    }

    /// Reads an entry (any bytes decode to some value).
    #[inline]
    pub fn decode(b: &CqeBytes) -> Cqe64 {
        let op_own = b[CQE_OP_OWN_OFFSET];
        let mut cqe = Cqe64 {
            opcode: op_own >> 4,
            owner: op_own & MLX5_CQE_OWNER_MASK != 0,
            solicited: op_own & MLX5_CQE_SE_MASK != 0,
            wqe_counter: get_u16(b, 60),
            qpn: get_u32(b, 56) & 0x00ff_ffff,
            wqe_opcode: b[56],
            srqn: get_u32(b, 32) & 0x00ff_ffff,
            ..Cqe64::default()
        };
        if cqe.is_error() {
            cqe.vendor_syndrome = b[54];
            cqe.syndrome = b[55];
        } else {
            cqe.remote_qpn = get_u32(b, 24) & 0x00ff_ffff;
            cqe.grh_in_data = get_u32(b, 24) & MLX5_CQE_L3_IN_DATA != 0;
            cqe.roce_packet_type = b[24] & 0x0f;
            cqe.imm_inval_pkey = get_u32(b, 36);
            cqe.byte_cnt = get_u32(b, 44);
            cqe.timestamp = get_u64(b, 48);
        }
        cqe
    }
}

/// Whether `op_own` says anything but an ordinary CQE in its format bits:
/// the one test a consumer's fast path needs.
#[inline]
pub const fn cqe_format_is_special(op_own: u8) -> bool {
    op_own & MLX5_CQE_FORMAT_MASK != 0
}

/// The received bytes of a CQE whose format is 1 (data inline in this
/// CQE): bytes `0..byte_cnt`. `None` for any other format, or when
/// `byte_cnt` (big-endian at 44) is more than the 32 bytes a CQE holds.
#[inline]
pub fn cqe_inline_data(b: &CqeBytes) -> Option<&[u8]> {
    if b[CQE_OP_OWN_OFFSET] & MLX5_CQE_FORMAT_MASK != MLX5_INLINE_SCATTER_32 {
        return None;
    }
    let len = usize::try_from(get_u32(b, 44)).ok()?;
    b.get(..len).filter(|_| len <= CQE_INLINE_DATA_MAX)
}

/// Marks an encoded receive CQE of a 128-byte entry as having its data
/// (`byte_cnt` bytes, at most 64) in the 64 bytes in front of it (format 2).
pub fn mark_cqe_inline_data_in_front(b: &mut CqeBytes) {
    b[CQE_OP_OWN_OFFSET] = (b[CQE_OP_OWN_OFFSET] & !MLX5_CQE_FORMAT_MASK) | MLX5_INLINE_SCATTER_64;
}

/// Marks an encoded receive CQE as carrying `data` (at most 32 bytes)
/// inline, as a device with scatter-to-CQE writes it. The data covers
/// `flags_rqpn` (24..28) as on hardware, so such a CQE carries no remote
/// QPN (RC needs none). Returns false, and
/// leaves the entry alone, if `data` is too long.
pub fn put_cqe_inline_data(b: &mut CqeBytes, data: &[u8]) -> bool {
    let Some(dst) = b.get_mut(..data.len()) else {
        return false;
    };
    if data.len() > CQE_INLINE_DATA_MAX {
        return false;
    }
    dst.copy_from_slice(data);
    b[CQE_OP_OWN_OFFSET] = (b[CQE_OP_OWN_OFFSET] & !MLX5_CQE_FORMAT_MASK) | MLX5_INLINE_SCATTER_32;
    true
}

/// The owner bit a producer writes into entry number `index` (counting all
/// entries ever produced) of a CQ with `cq_len` entries (a power of two): it
/// flips on each pass over the ring, starting at 0.
#[inline]
pub const fn cqe_owner_for(index: u32, cq_len: u32) -> bool {
    index & cq_len != 0
}

/// Whether the entry with `op_own` at consumer index `ci` of a CQ with
/// `cq_len` entries (a power of two) holds a new completion for software:
/// written (opcode not INVALID) in the current pass (owner bit matches).
#[inline]
pub const fn cqe_is_sw_owned(op_own: u8, ci: u32, cq_len: u32) -> bool {
    (op_own >> 4) != MLX5_CQE_INVALID
        && ((op_own & MLX5_CQE_OWNER_MASK) != 0) == cqe_owner_for(ci, cq_len)
}

/// The `op_own` byte of a freshly initialised CQ entry: INVALID, owned by
/// hardware for the first pass.
pub const CQE_INIT_OP_OWN: u8 = MLX5_CQE_INVALID << 4;

#[cfg(test)]
mod tests {
    use super::*;

    fn recv_cqe(byte_cnt: u32) -> CqeBytes {
        Cqe64 {
            opcode: MLX5_CQE_RESP_SEND,
            owner: true,
            byte_cnt,
            qpn: 0x12,
            ..Cqe64::default()
        }
        .encode()
    }

    #[test]
    fn inline_scatter_bit_values() {
        // Bits 3..2 of op_own: format 1 and 2 are these two bits.
        assert_eq!(MLX5_INLINE_SCATTER_32, 0x4);
        assert_eq!(MLX5_INLINE_SCATTER_64, 0x8);
    }

    #[test]
    fn ordinary_cqe_has_no_inline_data() {
        let b = recv_cqe(8);
        assert!(!cqe_format_is_special(b[CQE_OP_OWN_OFFSET]));
        assert_eq!(cqe_inline_data(&b), None);
    }

    #[test]
    fn inline_data_round_trip_keeps_the_rest() {
        for len in [0usize, 1, 24, 31, 32] {
            let data: Vec<u8> = (0..len as u8).map(|i| i ^ 0x5a).collect();
            let mut b = recv_cqe(len as u32);
            assert!(put_cqe_inline_data(&mut b, &data));
            let op_own = b[CQE_OP_OWN_OFFSET];
            assert!(cqe_format_is_special(op_own));
            assert_eq!(cqe_inline_data(&b), Some(&data[..]));
            // Opcode, owner and the fields past byte 32 are untouched, and
            // the format bits are not mistaken for the solicited bit.
            let decoded = Cqe64::decode(&b);
            assert_eq!(decoded.opcode, MLX5_CQE_RESP_SEND);
            assert!(decoded.owner && !decoded.solicited);
            assert_eq!((decoded.qpn, decoded.byte_cnt), (0x12, len as u32));
        }
    }

    #[test]
    fn refuses_too_long_or_other_formats() {
        let mut b = recv_cqe(33);
        assert!(!put_cqe_inline_data(&mut b, &[7u8; 33]));
        assert!(!cqe_format_is_special(b[CQE_OP_OWN_OFFSET]));
        // A byte count past 32 with the flag set is not believed.
        b[CQE_OP_OWN_OFFSET] |= MLX5_INLINE_SCATTER_32;
        assert_eq!(cqe_inline_data(&b), None);
        // Format 2 (128-byte CQEs) and 3 (compressed) are not format 1.
        for format in [MLX5_INLINE_SCATTER_64, MLX5_CQE_FORMAT_MASK] {
            let mut b = recv_cqe(4);
            b[CQE_OP_OWN_OFFSET] |= format;
            assert!(cqe_format_is_special(b[CQE_OP_OWN_OFFSET]));
            assert_eq!(cqe_inline_data(&b), None);
        }
    }
}
