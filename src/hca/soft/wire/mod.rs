//! RoCEv2 packets of the soft HCA: what goes in a UDP datagram.
//!
//! Two levels, in the smoltcp style:
//! - [`Packet`] is a length-checked view over a buffer: it is made only by
//!   [`Packet::new_checked`], so its accessors are infallible (they return
//!   values, not `Result`s) and cannot read out of bounds;
//! - [`PacketRepr`] is the parsed meaning (BTH plus whichever extension headers
//!   the opcode carries, payload without pad) with `parse` (checks that the
//!   headers match the opcode and verifies the ICRC) and `emit`.
//!
//! A datagram is `BTH | RETH? | AtomicETH? | ExtAtomicETH? | AETH? |
//! AtomicAckETH? | ImmDt? | payload | pad to 4 bytes | ICRC`. The UDP
//! destination port is not fixed to 4791: each device listens where its
//! address says.

mod bth;
#[doc(hidden)]
pub mod fuzzing;
mod headers;
mod icrc;
mod opcode;
mod packet;
pub mod pcap;

pub use bth::{Bth, BTH_LEN, DEFAULT_PKEY};
pub use headers::{
    Aeth, AethSyndrome, AtomicAckEth, AtomicEth, AtomicSize, ExtAtomicEth, NakCode, Reth, IMM_LEN,
    MAX_U24,
};
pub use icrc::{IcrcContext, ICRC_LEN};
pub use opcode::{HeaderLayout, Opcode};
pub use packet::{seal, Packet, PacketRepr, MAX_DATAGRAM_LEN};

use std::fmt;

/// Why a datagram was rejected or a packet could not be emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WireError {
    /// Shorter than the headers its opcode needs (or than BTH + ICRC).
    Truncated,
    /// Not an opcode of ours (e.g. UC/UD/RD, or a reserved value).
    UnknownOpcode(u8),
    /// BTH transport version other than 0.
    BadTransportVersion(u8),
    /// Pad count larger than the payload area, or payload plus pad not a
    /// whole number of 4-byte words.
    BadPad,
    /// Reserved AETH syndrome.
    BadAeth(u8),
    /// Malformed masked-atomic extension header.
    BadExtAtomic,
    /// The headers present (emit) do not match those the opcode carries.
    HeaderMismatch,
    /// A payload on an opcode that carries none.
    PayloadNotAllowed,
    /// The ICRC does not match the packet.
    BadIcrc { computed: u32, received: u32 },
    /// Emit: the output buffer is shorter than [`PacketRepr::buffer_len`].
    BufferTooSmall,
    /// Emit: a 24-bit field, a 5-bit code or a 32-bit atomic operand too big.
    FieldOutOfRange,
    /// Emit: larger than one UDP datagram can carry.
    TooLong,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated => write!(f, "packet truncated"),
            WireError::UnknownOpcode(op) => write!(f, "unknown BTH opcode 0x{op:02x}"),
            WireError::BadTransportVersion(v) => write!(f, "BTH transport version {v}"),
            WireError::BadPad => write!(f, "pad count exceeds payload"),
            WireError::BadAeth(s) => write!(f, "reserved AETH syndrome 0x{s:02x}"),
            WireError::BadExtAtomic => write!(f, "malformed masked-atomic header"),
            WireError::HeaderMismatch => write!(f, "extension headers do not match opcode"),
            WireError::PayloadNotAllowed => write!(f, "payload on an opcode without payload"),
            WireError::BadIcrc { computed, received } => write!(
                f,
                "ICRC mismatch: computed 0x{computed:08x}, received 0x{received:08x}"
            ),
            WireError::BufferTooSmall => write!(f, "output buffer too small"),
            WireError::FieldOutOfRange => write!(f, "field value out of range"),
            WireError::TooLong => write!(f, "packet longer than a UDP datagram"),
        }
    }
}

impl std::error::Error for WireError {}
