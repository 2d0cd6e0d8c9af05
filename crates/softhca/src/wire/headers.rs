//! The extension headers that follow the BTH, as plain values (`Repr`s) with
//! length-checked `parse` from and `emit` into byte slices.

use super::WireError;
use mlx5::endian::{big_endian_fields, get_u32, get_u64, put_u32, put_u64};
pub use mlx5::AtomicSize;

/// Largest value of a 24-bit field (PSN, QPN, MSN).
pub const MAX_U24: u32 = 0x00ff_ffff;

/// Gives a header declared with [`big_endian_fields!`] a length-checked
/// `parse` and `emit`.
macro_rules! plain_header {
    ($header:ident) => {
        impl $header {
            #[inline]
            pub fn parse(b: &[u8]) -> Result<$header, WireError> {
                let b = b.get(..Self::LEN).ok_or(WireError::Truncated)?;
                Ok(Self::read(b))
            }

            #[inline]
            pub fn emit(&self, b: &mut [u8]) -> Result<(), WireError> {
                let b = b.get_mut(..Self::LEN).ok_or(WireError::BufferTooSmall)?;
                self.write(b);
                Ok(())
            }
        }
    };
}

/// An extension header as a packet carries it: a fixed length and the
/// length-checked `parse` / `emit` of the type's own (inherent) methods.
pub trait ExtHeader: Sized {
    const LEN: usize;
    fn parse(b: &[u8]) -> Result<Self, WireError>;
    fn emit(&self, b: &mut [u8]) -> Result<(), WireError>;
}

macro_rules! ext_header {
    ($($header:ident),+) => {
        $(impl ExtHeader for $header {
            const LEN: usize = $header::LEN;
            #[inline]
            fn parse(b: &[u8]) -> Result<Self, WireError> {
                $header::parse(b)
            }
            #[inline]
            fn emit(&self, b: &mut [u8]) -> Result<(), WireError> {
                $header::emit(self, b)
            }
        })+
    };
}

ext_header!(Reth, AtomicEth, ExtAtomicEth, Aeth, AtomicAckEth, Deth);

/// Length of the immediate-data header (ImmDt): one big-endian 32-bit word.
pub const IMM_LEN: usize = 4;

big_endian_fields! {
    /// RDMA extended transport header: the remote buffer of a WRITE or READ.
    pub struct Reth[16] {
        /// Remote virtual address.
        pub va: u64 @ 0,
        pub rkey: u32 @ 8,
        /// Length of the whole message (not of this packet).
        pub dma_len: u32 @ 12,
    }
}
plain_header!(Reth);

/// The NAK codes of an AETH syndrome (IBTA vol. 1, 9.7.5.2.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum NakCode {
    PsnSequenceError = 0,
    InvalidRequest = 1,
    RemoteAccessError = 2,
    RemoteOperationalError = 3,
    /// Only meaningful for reliable datagram; parsed so it can be counted.
    InvalidRdRequest = 4,
}

/// What an AETH says: bits 6..5 of the syndrome select the kind, bits 4..0
/// carry its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AethSyndrome {
    /// Positive acknowledgement with the responder's end-to-end credit count
    /// (5-bit code; [`Aeth::CREDITS_INVALID`] means "no credit information").
    Ack {
        credits: u8,
    },
    /// Receiver not ready: the 5-bit RNR timer code the requester must wait.
    RnrNak {
        timer: u8,
    },
    Nak(NakCode),
}

impl AethSyndrome {
    const KIND_ACK: u8 = 0b00 << 5;
    const KIND_RNR: u8 = 0b01 << 5;
    const KIND_NAK: u8 = 0b11 << 5;
    const VALUE_MASK: u8 = 0x1f;

    /// The syndrome byte.
    #[inline]
    pub fn to_u8(self) -> Result<u8, WireError> {
        match self {
            AethSyndrome::Ack { credits } if credits <= Self::VALUE_MASK => {
                Ok(Self::KIND_ACK | credits)
            }
            AethSyndrome::RnrNak { timer } if timer <= Self::VALUE_MASK => {
                Ok(Self::KIND_RNR | timer)
            }
            AethSyndrome::Nak(code) => Ok(Self::KIND_NAK | code as u8),
            _ => Err(WireError::FieldOutOfRange),
        }
    }

    /// Decodes a syndrome byte; reserved kinds and codes are `BadAeth`.
    #[inline]
    pub fn from_u8(b: u8) -> Result<AethSyndrome, WireError> {
        let value = b & Self::VALUE_MASK;
        match b & !Self::VALUE_MASK {
            Self::KIND_ACK => Ok(AethSyndrome::Ack { credits: value }),
            Self::KIND_RNR => Ok(AethSyndrome::RnrNak { timer: value }),
            Self::KIND_NAK => Ok(AethSyndrome::Nak(match value {
                0 => NakCode::PsnSequenceError,
                1 => NakCode::InvalidRequest,
                2 => NakCode::RemoteAccessError,
                3 => NakCode::RemoteOperationalError,
                4 => NakCode::InvalidRdRequest,
                _ => return Err(WireError::BadAeth(b)),
            })),
            // 0b10 is reserved, and bit 7 must be zero.
            _ => Err(WireError::BadAeth(b)),
        }
    }
}

/// ACK extended transport header: syndrome and message sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Aeth {
    pub syndrome: AethSyndrome,
    /// Message sequence number (24 bits): messages completed by the responder.
    pub msn: u32,
}

impl Aeth {
    pub const LEN: usize = 4;
    /// Credit code meaning "the responder does not report credits".
    pub const CREDITS_INVALID: u8 = 0x1f;

    #[inline]
    pub fn parse(b: &[u8]) -> Result<Aeth, WireError> {
        let b = b.get(..Self::LEN).ok_or(WireError::Truncated)?;
        Ok(Aeth {
            syndrome: AethSyndrome::from_u8(b[0])?,
            msn: get_u32(b, 0) & MAX_U24,
        })
    }

    #[inline]
    pub fn emit(&self, b: &mut [u8]) -> Result<(), WireError> {
        if self.msn > MAX_U24 {
            return Err(WireError::FieldOutOfRange);
        }
        let syndrome = self.syndrome.to_u8()?;
        let b = b.get_mut(..Self::LEN).ok_or(WireError::BufferTooSmall)?;
        put_u32(b, 0, (u32::from(syndrome) << 24) | self.msn);
        Ok(())
    }
}

big_endian_fields! {
    /// Atomic extended transport header of a standard 64-bit CmpSwap/FetchAdd.
    pub struct AtomicEth[28] {
        /// Remote virtual address (8-byte aligned, checked by the responder).
        pub va: u64 @ 0,
        pub rkey: u32 @ 8,
        /// The swap value (CmpSwap) or the addend (FetchAdd).
        pub swap_add: u64 @ 12,
        /// The compare value (CmpSwap; zero for FetchAdd).
        pub compare: u64 @ 20,
    }
}
plain_header!(AtomicEth);

big_endian_fields! {
    /// Atomic acknowledge header: the value the remote location held before
    /// the atomic (zero-extended for 32-bit masked atomics).
    pub struct AtomicAckEth[8] {
        pub orig: u64 @ 0,
    }
}
plain_header!(AtomicAckEth);

/// The largest operand value of a width.
#[inline]
const fn operand_limit(size: AtomicSize) -> u64 {
    match size {
        AtomicSize::Bits32 => u32::MAX as u64,
        AtomicSize::Bits64 => u64::MAX,
    }
}

/// Our extension header for mlx5's masked ("extended") atomics, which IBTA
/// does not define. It follows the BTH of opcodes `MaskedCompareSwap` (0xC0)
/// and `MaskedFetchAdd` (0xC1), is answered with a standard Atomic
/// Acknowledge, and is 48 bytes:
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 8 | remote VA |
/// | 8 | 4 | R_Key |
/// | 12 | 1 | operand size in bytes: 4 or 8 |
/// | 13 | 3 | reserved, zero |
/// | 16 | 8 | swap value (CS) / addend (FA) |
/// | 24 | 8 | compare value (CS) / zero (FA) |
/// | 32 | 8 | swap mask (CS) / field boundary mask (FA) |
/// | 40 | 8 | compare mask (CS) / zero (FA) |
///
/// All big-endian. 32-bit operands sit in the low half of each field and the
/// high half must be zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtAtomicEth {
    pub va: u64,
    pub rkey: u32,
    pub size: AtomicSize,
    pub swap_add: u64,
    pub compare: u64,
    pub swap_add_mask: u64,
    pub compare_mask: u64,
}

impl ExtAtomicEth {
    pub const LEN: usize = 48;

    #[inline]
    pub fn parse(b: &[u8]) -> Result<ExtAtomicEth, WireError> {
        let b = b.get(..Self::LEN).ok_or(WireError::Truncated)?;
        let size = match b[12] {
            4 => AtomicSize::Bits32,
            8 => AtomicSize::Bits64,
            _ => return Err(WireError::BadExtAtomic),
        };
        if b[13..16] != [0, 0, 0] {
            return Err(WireError::BadExtAtomic);
        }
        let repr = ExtAtomicEth {
            va: get_u64(b, 0),
            rkey: get_u32(b, 8),
            size,
            swap_add: get_u64(b, 16),
            compare: get_u64(b, 24),
            swap_add_mask: get_u64(b, 32),
            compare_mask: get_u64(b, 40),
        };
        if !repr.operands_fit() {
            return Err(WireError::BadExtAtomic);
        }
        Ok(repr)
    }

    #[inline]
    pub fn emit(&self, b: &mut [u8]) -> Result<(), WireError> {
        if !self.operands_fit() {
            return Err(WireError::FieldOutOfRange);
        }
        let b = b.get_mut(..Self::LEN).ok_or(WireError::BufferTooSmall)?;
        put_u64(b, 0, self.va);
        put_u32(b, 8, self.rkey);
        put_u32(b, 12, u32::from(self.size.bytes()) << 24);
        put_u64(b, 16, self.swap_add);
        put_u64(b, 24, self.compare);
        put_u64(b, 32, self.swap_add_mask);
        put_u64(b, 40, self.compare_mask);
        Ok(())
    }

    #[inline]
    fn operands_fit(&self) -> bool {
        let limit = operand_limit(self.size);
        self.swap_add <= limit
            && self.compare <= limit
            && self.swap_add_mask <= limit
            && self.compare_mask <= limit
    }
}

/// Datagram extended transport header, carried by every unreliable-datagram
/// packet: the Q_Key the receiving QP must hold, and the sending QP's
/// number (IBTA vol. 1, 9.3.3). Byte 4 is reserved: zero on emit, ignored
/// on parse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Deth {
    pub qkey: u32,
    /// Source queue pair number (24 bits).
    pub src_qp: u32,
}

impl Deth {
    pub const LEN: usize = 8;

    #[inline]
    pub fn parse(b: &[u8]) -> Result<Deth, WireError> {
        let b = b.get(..Self::LEN).ok_or(WireError::Truncated)?;
        Ok(Deth {
            qkey: get_u32(b, 0),
            src_qp: get_u32(b, 4) & MAX_U24,
        })
    }

    #[inline]
    pub fn emit(&self, b: &mut [u8]) -> Result<(), WireError> {
        if self.src_qp > MAX_U24 {
            return Err(WireError::FieldOutOfRange);
        }
        let b = b.get_mut(..Self::LEN).ok_or(WireError::BufferTooSmall)?;
        put_u32(b, 0, self.qkey);
        put_u32(b, 4, self.src_qp);
        Ok(())
    }
}
