//! The mlx5 CQ arm request, as the CPU hands it to the device: a 32-bit
//! arm word (sequence number, command, consumer index) kept big-endian in
//! the CQ's doorbell record `dbrec[1]`, and the same word with the CQ
//! number rung as one 64-bit big-endian store at `MLX5_CQ_DOORBELL` of the
//! CQ's UAR page (`mlx5dv_cq.cq_uar`).
//!
//! We arm this way rather than with `ibv_req_notify_cq` because libmlx5's
//! arm uses libmlx5's own consumer index, which never moves: the transport
//! polls the ring itself and publishes its own index in `dbrec[0]`. An arm
//! naming an index the device has already passed fires at once, so every
//! blocking wait would wake immediately.
//!
//! Pure formats, shared by the backend (which writes them) and the test
//! stand-in (which reads them).

/// Offset of the CQ arm doorbell in the UAR page (`MLX5_CQ_DOORBELL`).
pub const MLX5_CQ_DOORBELL: usize = 0x20;
/// Index of the arm word in the CQ doorbell record (`MLX5_CQ_ARM_DB`;
/// index 0 is the consumer index, `MLX5_CQ_SET_CI`).
pub const MLX5_CQ_ARM_DB: usize = 1;
/// Command: an event for the next completion of any kind.
pub const MLX5_CQ_DB_REQ_NOT: u32 = 0;
/// Command: an event for the next solicited completion (or error).
pub const MLX5_CQ_DB_REQ_NOT_SOL: u32 = 1 << 24;

const CI_MASK: u32 = 0x00ff_ffff;
const CMD_MASK: u32 = 0x0f00_0000;
const SN_SHIFT: u32 = 28;
const SN_MASK: u32 = 3;

/// One arm request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqArm {
    /// Arm sequence number: the count of CQ events consumed so far, modulo
    /// 4. The device uses it to tell a new arm from a repeated one.
    pub sn: u32,
    pub solicited_only: bool,
    /// The consumer index the CPU has reached: the device fires at once if
    /// it has already written a CQE at or past it.
    pub ci: u32,
}

impl CqArm {
    /// The arm word (host order; stored big-endian).
    pub const fn word(&self) -> u32 {
        let cmd = if self.solicited_only {
            MLX5_CQ_DB_REQ_NOT_SOL
        } else {
            MLX5_CQ_DB_REQ_NOT
        };
        ((self.sn & SN_MASK) << SN_SHIFT) | cmd | (self.ci & CI_MASK)
    }

    /// The 64-bit doorbell value for CQ `cqn` (host order; rung big-endian).
    pub const fn doorbell(&self, cqn: u32) -> u64 {
        ((self.word() as u64) << 32) | (cqn & CI_MASK) as u64
    }

    /// The request in an arm word; `None` for an unknown command.
    pub const fn from_word(word: u32) -> Option<CqArm> {
        let solicited_only = match word & CMD_MASK {
            MLX5_CQ_DB_REQ_NOT => false,
            MLX5_CQ_DB_REQ_NOT_SOL => true,
            _ => return None,
        };
        Some(CqArm {
            sn: (word >> SN_SHIFT) & SN_MASK,
            solicited_only,
            ci: word & CI_MASK,
        })
    }

    /// The request and CQ number in a doorbell value (host order).
    pub const fn from_doorbell(value: u64) -> Option<(CqArm, u32)> {
        match CqArm::from_word((value >> 32) as u32) {
            Some(arm) => Some((arm, value as u32 & CI_MASK)),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_places_sn_command_and_24_bit_ci() {
        let arm = CqArm {
            sn: 2,
            solicited_only: true,
            ci: 0x0123_4567,
        };
        assert_eq!(arm.word(), 0x2123_4567);
        assert_eq!(arm.doorbell(0xabc), 0x2123_4567_0000_0abc);
        let any = CqArm {
            sn: 5,
            solicited_only: false,
            ci: 7,
        };
        // sn wraps at 4.
        assert_eq!(any.word(), 0x1000_0007);
    }

    #[test]
    fn doorbell_round_trips_and_rejects_unknown_commands() {
        let arm = CqArm {
            sn: 3,
            solicited_only: false,
            ci: 0x00ff_fffe,
        };
        assert_eq!(CqArm::from_doorbell(arm.doorbell(0x42)), Some((arm, 0x42)));
        assert_eq!(CqArm::from_word(0x0200_0000), None);
    }
}
