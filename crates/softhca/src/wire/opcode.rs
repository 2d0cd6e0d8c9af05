//! BTH opcodes of the reliable-connected and unreliable-datagram transports
//! and the extension headers each one carries.

use super::WireError;

/// A BTH opcode this device sends or accepts.
///
/// `0x00..=0x14` are the IBTA reliable-connected opcodes, `0x64` and `0x65`
/// the two unreliable-datagram ones (a UD message is one packet). The two masked
/// atomics are mlx5 "extended atomics", which have no standard wire form; we
/// carry them in the manufacturer-specific opcode range (`0xC0..=0xFF`, top
/// three bits `110`), so they can never be confused with a standard opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Opcode {
    SendFirst = 0x00,
    SendMiddle = 0x01,
    SendLast = 0x02,
    SendLastImm = 0x03,
    SendOnly = 0x04,
    SendOnlyImm = 0x05,
    WriteFirst = 0x06,
    WriteMiddle = 0x07,
    WriteLast = 0x08,
    WriteLastImm = 0x09,
    WriteOnly = 0x0a,
    WriteOnlyImm = 0x0b,
    ReadRequest = 0x0c,
    ReadResponseFirst = 0x0d,
    ReadResponseMiddle = 0x0e,
    ReadResponseLast = 0x0f,
    ReadResponseOnly = 0x10,
    Acknowledge = 0x11,
    AtomicAcknowledge = 0x12,
    CompareSwap = 0x13,
    FetchAdd = 0x14,
    /// Unreliable datagram SEND (one packet), carries a [`super::Deth`].
    UdSendOnly = 0x64,
    /// Unreliable datagram SEND with immediate data.
    UdSendOnlyImm = 0x65,
    /// Masked compare-and-swap (32- or 64-bit), carries an [`super::ExtAtomicEth`].
    MaskedCompareSwap = 0xc0,
    /// Masked fetch-and-add (32- or 64-bit), carries an [`super::ExtAtomicEth`].
    MaskedFetchAdd = 0xc1,
}

/// Which extension headers follow the BTH, and whether a payload may follow
/// them. The order on the wire is fixed: DETH, RETH, AtomicETH /
/// ExtAtomicETH, AETH, AtomicAckETH, ImmDt, payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderLayout {
    pub deth: bool,
    pub reth: bool,
    pub atomic: bool,
    pub ext_atomic: bool,
    pub aeth: bool,
    pub atomic_ack: bool,
    pub imm: bool,
    pub payload: bool,
}

impl HeaderLayout {
    const NONE: HeaderLayout = HeaderLayout {
        deth: false,
        reth: false,
        atomic: false,
        ext_atomic: false,
        aeth: false,
        atomic_ack: false,
        imm: false,
        payload: false,
    };

    /// Total length of the extension headers (everything between the BTH
    /// and the payload).
    #[inline]
    pub const fn ext_len(&self) -> usize {
        (if self.deth { super::Deth::LEN } else { 0 })
            + (if self.reth { super::Reth::LEN } else { 0 })
            + (if self.atomic {
                super::AtomicEth::LEN
            } else {
                0
            })
            + (if self.ext_atomic {
                super::ExtAtomicEth::LEN
            } else {
                0
            })
            + (if self.aeth { super::Aeth::LEN } else { 0 })
            + (if self.atomic_ack {
                super::AtomicAckEth::LEN
            } else {
                0
            })
            + (if self.imm { super::IMM_LEN } else { 0 })
    }
}

impl Opcode {
    /// A responder's answer (ACK, READ response data, atomic result), as
    /// opposed to a request.
    pub fn is_response(self) -> bool {
        matches!(
            self,
            Opcode::ReadResponseFirst
                | Opcode::ReadResponseMiddle
                | Opcode::ReadResponseLast
                | Opcode::ReadResponseOnly
                | Opcode::Acknowledge
                | Opcode::AtomicAcknowledge
        )
    }

    /// Every opcode, in numeric order (handy for tests and tables).
    pub const ALL: [Opcode; 25] = [
        Opcode::SendFirst,
        Opcode::SendMiddle,
        Opcode::SendLast,
        Opcode::SendLastImm,
        Opcode::SendOnly,
        Opcode::SendOnlyImm,
        Opcode::WriteFirst,
        Opcode::WriteMiddle,
        Opcode::WriteLast,
        Opcode::WriteLastImm,
        Opcode::WriteOnly,
        Opcode::WriteOnlyImm,
        Opcode::ReadRequest,
        Opcode::ReadResponseFirst,
        Opcode::ReadResponseMiddle,
        Opcode::ReadResponseLast,
        Opcode::ReadResponseOnly,
        Opcode::Acknowledge,
        Opcode::AtomicAcknowledge,
        Opcode::CompareSwap,
        Opcode::FetchAdd,
        Opcode::UdSendOnly,
        Opcode::UdSendOnlyImm,
        Opcode::MaskedCompareSwap,
        Opcode::MaskedFetchAdd,
    ];

    /// The opcode for a BTH opcode byte, or `UnknownOpcode`.
    #[inline]
    pub const fn from_u8(value: u8) -> Result<Opcode, WireError> {
        Ok(match value {
            0x00 => Opcode::SendFirst,
            0x01 => Opcode::SendMiddle,
            0x02 => Opcode::SendLast,
            0x03 => Opcode::SendLastImm,
            0x04 => Opcode::SendOnly,
            0x05 => Opcode::SendOnlyImm,
            0x06 => Opcode::WriteFirst,
            0x07 => Opcode::WriteMiddle,
            0x08 => Opcode::WriteLast,
            0x09 => Opcode::WriteLastImm,
            0x0a => Opcode::WriteOnly,
            0x0b => Opcode::WriteOnlyImm,
            0x0c => Opcode::ReadRequest,
            0x0d => Opcode::ReadResponseFirst,
            0x0e => Opcode::ReadResponseMiddle,
            0x0f => Opcode::ReadResponseLast,
            0x10 => Opcode::ReadResponseOnly,
            0x11 => Opcode::Acknowledge,
            0x12 => Opcode::AtomicAcknowledge,
            0x13 => Opcode::CompareSwap,
            0x14 => Opcode::FetchAdd,
            0x64 => Opcode::UdSendOnly,
            0x65 => Opcode::UdSendOnlyImm,
            0xc0 => Opcode::MaskedCompareSwap,
            0xc1 => Opcode::MaskedFetchAdd,
            other => return Err(WireError::UnknownOpcode(other)),
        })
    }

    /// The opcode byte.
    #[inline]
    pub const fn as_u8(self) -> u8 {
        self as u8
    }

    /// The extension headers this opcode carries.
    #[inline]
    pub const fn layout(self) -> HeaderLayout {
        let n = HeaderLayout::NONE;
        match self {
            Opcode::SendFirst | Opcode::SendMiddle | Opcode::SendLast | Opcode::SendOnly => {
                HeaderLayout { payload: true, ..n }
            }
            Opcode::SendLastImm | Opcode::SendOnlyImm => HeaderLayout {
                imm: true,
                payload: true,
                ..n
            },
            Opcode::WriteFirst | Opcode::WriteOnly => HeaderLayout {
                reth: true,
                payload: true,
                ..n
            },
            Opcode::WriteMiddle | Opcode::WriteLast => HeaderLayout { payload: true, ..n },
            Opcode::WriteLastImm => HeaderLayout {
                imm: true,
                payload: true,
                ..n
            },
            Opcode::WriteOnlyImm => HeaderLayout {
                reth: true,
                imm: true,
                payload: true,
                ..n
            },
            Opcode::ReadRequest => HeaderLayout { reth: true, ..n },
            Opcode::ReadResponseFirst | Opcode::ReadResponseLast | Opcode::ReadResponseOnly => {
                HeaderLayout {
                    aeth: true,
                    payload: true,
                    ..n
                }
            }
            Opcode::ReadResponseMiddle => HeaderLayout { payload: true, ..n },
            Opcode::Acknowledge => HeaderLayout { aeth: true, ..n },
            Opcode::AtomicAcknowledge => HeaderLayout {
                aeth: true,
                atomic_ack: true,
                ..n
            },
            Opcode::CompareSwap | Opcode::FetchAdd => HeaderLayout { atomic: true, ..n },
            Opcode::MaskedCompareSwap | Opcode::MaskedFetchAdd => HeaderLayout {
                ext_atomic: true,
                ..n
            },
            Opcode::UdSendOnly => HeaderLayout {
                deth: true,
                payload: true,
                ..n
            },
            Opcode::UdSendOnlyImm => HeaderLayout {
                deth: true,
                imm: true,
                payload: true,
                ..n
            },
        }
    }

    /// A reliable-connected SEND packet (any position, with or without
    /// immediate).
    #[inline]
    pub const fn is_send(self) -> bool {
        (self as u8) <= 0x05
    }

    /// An unreliable-datagram packet (a SEND, with or without immediate).
    #[inline]
    pub const fn is_ud(self) -> bool {
        matches!(self, Opcode::UdSendOnly | Opcode::UdSendOnlyImm)
    }

    /// An RDMA WRITE packet (any position, with or without immediate).
    #[inline]
    pub const fn is_write(self) -> bool {
        matches!(self as u8, 0x06..=0x0b)
    }

    /// An RDMA READ response packet (any position).
    #[inline]
    pub const fn is_read_response(self) -> bool {
        matches!(self as u8, 0x0d..=0x10)
    }

    /// An atomic request (standard or masked).
    #[inline]
    pub const fn is_atomic(self) -> bool {
        matches!(
            self,
            Opcode::CompareSwap
                | Opcode::FetchAdd
                | Opcode::MaskedCompareSwap
                | Opcode::MaskedFetchAdd
        )
    }

    /// Sent by a requester (as opposed to a response from the responder).
    #[inline]
    pub const fn is_request(self) -> bool {
        !matches!(self as u8, 0x0d..=0x12)
    }

    /// The first packet of a message (a First or an Only opcode; READ
    /// requests and atomics are single-packet messages).
    #[inline]
    pub const fn is_first(self) -> bool {
        matches!(
            self,
            Opcode::SendFirst
                | Opcode::SendOnly
                | Opcode::SendOnlyImm
                | Opcode::WriteFirst
                | Opcode::WriteOnly
                | Opcode::WriteOnlyImm
                | Opcode::ReadRequest
                | Opcode::ReadResponseFirst
                | Opcode::ReadResponseOnly
                | Opcode::Acknowledge
                | Opcode::AtomicAcknowledge
                | Opcode::CompareSwap
                | Opcode::FetchAdd
                | Opcode::MaskedCompareSwap
                | Opcode::MaskedFetchAdd
                | Opcode::UdSendOnly
                | Opcode::UdSendOnlyImm
        )
    }

    /// The last packet of a message (a Last or an Only opcode, or a
    /// single-packet message).
    #[inline]
    pub const fn is_last(self) -> bool {
        !matches!(
            self,
            Opcode::SendFirst
                | Opcode::SendMiddle
                | Opcode::WriteFirst
                | Opcode::WriteMiddle
                | Opcode::ReadResponseFirst
                | Opcode::ReadResponseMiddle
        )
    }
}

impl TryFrom<u8> for Opcode {
    type Error = WireError;
    #[inline]
    fn try_from(value: u8) -> Result<Self, Self::Error> {
        Opcode::from_u8(value)
    }
}

impl From<Opcode> for u8 {
    #[inline]
    fn from(op: Opcode) -> u8 {
        op as u8
    }
}
