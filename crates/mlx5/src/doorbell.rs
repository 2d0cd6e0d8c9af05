//! Doorbell records and doorbell register writes.
//!
//! The QP doorbell record is two big-endian 32-bit words in host memory:
//! word 0 the receive counter, word 1 the send counter (each the producer
//! index, low 16 bits). After updating it, the sender writes the first
//! 8 bytes of the last WQE's control segment (`opmod_idx_opcode`, `qpn_ds`)
//! to the doorbell / BlueFlame register as one 64-bit store of those bytes.
//!
//! The CQ doorbell record is word 0 the consumer index (24 bits) and word 1
//! the arm word `sn << 28 | cmd | ci`; arming also writes
//! `arm word << 32 | cqn`, big-endian, to the CQ doorbell register.

use crate::endian::{get_u32, put_u32};
use crate::wqe::Seg;

/// Bytes in a doorbell record.
pub const DBREC_LEN: usize = 8;
/// Offset of the receive counter word.
pub const MLX5_RCV_DBR: usize = 0;
/// Offset of the send counter word.
pub const MLX5_SND_DBR: usize = 4;

/// A QP doorbell record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QpDoorbellRecord {
    pub recv_counter: u16,
    pub send_counter: u16,
}

impl QpDoorbellRecord {
    #[inline]
    pub fn encode(&self) -> [u8; DBREC_LEN] {
        let mut b = [0u8; DBREC_LEN];
        put_u32(&mut b, MLX5_RCV_DBR, u32::from(self.recv_counter));
        put_u32(&mut b, MLX5_SND_DBR, u32::from(self.send_counter));
        b
    }

    #[inline]
    pub fn decode(b: &[u8; DBREC_LEN]) -> QpDoorbellRecord {
        QpDoorbellRecord {
            recv_counter: get_u32(b, MLX5_RCV_DBR) as u16,
            send_counter: get_u32(b, MLX5_SND_DBR) as u16,
        }
    }
}

/// The value one counter word of a doorbell record holds for `counter`, as
/// a `u32` whose in-memory bytes are the big-endian word: store it with a
/// single (volatile/atomic) 32-bit write.
#[inline]
pub const fn dbrec_word(counter: u16) -> u32 {
    (counter as u32).to_be()
}

/// The 8 bytes the sender writes to the doorbell register for the WQE whose
/// control segment is `ctrl`.
#[inline]
pub fn send_doorbell(ctrl: &Seg) -> [u8; 8] {
    let mut b = [0u8; 8];
    b.copy_from_slice(&ctrl[..8]);
    b
}

/// What a send doorbell write says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendDoorbell {
    pub opmod: u8,
    pub wqe_index: u16,
    pub opcode: u8,
    pub qpn: u32,
    pub ds: u8,
}

impl SendDoorbell {
    #[inline]
    pub fn decode(b: &[u8; 8]) -> SendDoorbell {
        let w0 = get_u32(b, 0);
        let w1 = get_u32(b, 4);
        SendDoorbell {
            opmod: (w0 >> 24) as u8,
            wqe_index: (w0 >> 8) as u16,
            opcode: w0 as u8,
            qpn: w1 >> 8,
            ds: w1 as u8,
        }
    }
}

/// Offset of the CQ arm doorbell in a UAR page.
pub const MLX5_CQ_DOORBELL: usize = 0x20;
/// Arm command: next completion of any kind raises an event.
pub const MLX5_CQ_DB_REQ_NOT: u32 = 0;
/// Arm command: only a solicited (or error) completion raises an event.
pub const MLX5_CQ_DB_REQ_NOT_SOL: u32 = 1 << 24;
/// Offset of the consumer-index word of a CQ doorbell record.
pub const MLX5_CQ_SET_CI: usize = 0;
/// Offset of the arm word of a CQ doorbell record.
pub const MLX5_CQ_ARM_DB: usize = 4;

/// A CQ doorbell record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CqDoorbellRecord {
    /// Consumer index (24 bits).
    pub ci: u32,
    /// Arm sequence number (2 bits).
    pub arm_sn: u8,
    /// `MLX5_CQ_DB_REQ_NOT` or `MLX5_CQ_DB_REQ_NOT_SOL`.
    pub arm_cmd: u32,
    /// Consumer index at arming (24 bits).
    pub arm_ci: u32,
}

impl CqDoorbellRecord {
    /// The arm word `sn << 28 | cmd | ci`.
    #[inline]
    pub const fn arm_word(&self) -> u32 {
        ((self.arm_sn as u32 & 3) << 28) | (self.arm_cmd & (3 << 24)) | (self.arm_ci & 0x00ff_ffff)
    }

    #[inline]
    pub fn encode(&self) -> [u8; DBREC_LEN] {
        let mut b = [0u8; DBREC_LEN];
        put_u32(&mut b, MLX5_CQ_SET_CI, self.ci & 0x00ff_ffff);
        put_u32(&mut b, MLX5_CQ_ARM_DB, self.arm_word());
        b
    }

    #[inline]
    pub fn decode(b: &[u8; DBREC_LEN]) -> CqDoorbellRecord {
        let arm = get_u32(b, MLX5_CQ_ARM_DB);
        CqDoorbellRecord {
            ci: get_u32(b, MLX5_CQ_SET_CI) & 0x00ff_ffff,
            arm_sn: (arm >> 28) as u8 & 3,
            arm_cmd: arm & (3 << 24),
            arm_ci: arm & 0x00ff_ffff,
        }
    }

    /// The 8 bytes written to the CQ doorbell register when arming CQ `cqn`.
    #[inline]
    pub fn arm_doorbell(&self, cqn: u32) -> [u8; 8] {
        ((u64::from(self.arm_word()) << 32) | u64::from(cqn & 0x00ff_ffff)).to_be_bytes()
    }
}
