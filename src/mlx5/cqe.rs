//! 64-byte completion queue entries (CQE64) and the CQ ownership rule.
//!
//! Offsets (big-endian fields): 24 `flags_rqpn` (remote QPN in the low 24
//! bits), 32 `srqn_uidx`, 36 `imm_inval_pkey`, 44 `byte_cnt`, 48 timestamp,
//! 56 `sop_drop_qpn` (the WQE opcode in the top byte of requester CQEs, the
//! QPN in the low 24 bits), 60 `wqe_counter`, 62 signature, 63 `op_own`
//! (CQE opcode in the high nibble, format in bits 3..2, solicited in bit 1,
//! owner in bit 0). Error CQEs put the vendor syndrome at 54 and the
//! syndrome at 55, inside what is otherwise the timestamp.

use crate::mlx5::endian::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};

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
            put_u32(&mut b, 24, self.remote_qpn & 0x00ff_ffff);
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
            cqe.imm_inval_pkey = get_u32(b, 36);
            cqe.byte_cnt = get_u32(b, 44);
            cqe.timestamp = get_u64(b, 48);
        }
        cqe
    }
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
