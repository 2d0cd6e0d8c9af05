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
//! A datagram is `BTH | DETH? | RETH? | AtomicETH? | ExtAtomicETH? | AETH? |
//! AtomicAckETH? | ImmDt? | payload | pad to 4 bytes | ICRC`. The UDP
//! destination port is not fixed to 4791: each device listens where its
//! address says.

mod bth;
#[doc(hidden)]
pub mod fuzzing;
mod grh;
mod headers;
mod icrc;
mod opcode;
mod packet;
pub mod pcap;

pub use bth::{Bth, BTH_LEN, DEFAULT_PKEY};
pub use grh::{Gid, Grh, DEFAULT_HOP_LIMIT, GRH_LEN};
pub use headers::{
    Aeth, AethSyndrome, AtomicAckEth, AtomicEth, AtomicSize, Deth, ExtAtomicEth, NakCode, Reth,
    IMM_LEN, MAX_U24,
};
pub use icrc::{IcrcContext, ICRC_LEN};
pub use opcode::{HeaderLayout, Opcode};
pub use packet::{seal, Packet, PacketRepr, MAX_DATAGRAM_LEN};

/// Largest datagram a soft device sends or accepts: a 4096-byte MTU payload
/// plus every RoCEv2 header, rounded up generously.
pub const MAX_DATAGRAM: usize = 4096 + 256;

/// Why a datagram was rejected or a packet could not be emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum WireError {
    /// Shorter than the headers its opcode needs (or than BTH + ICRC).
    #[error("packet truncated")]
    Truncated,
    /// Not an opcode of ours (e.g. UC/RD, or a reserved value).
    #[error("unknown BTH opcode 0x{0:02x}")]
    UnknownOpcode(u8),
    /// BTH transport version other than 0.
    #[error("BTH transport version {0}")]
    BadTransportVersion(u8),
    /// Pad count larger than the payload area, or payload plus pad not a
    /// whole number of 4-byte words.
    #[error("pad count exceeds payload")]
    BadPad,
    /// Reserved AETH syndrome.
    #[error("reserved AETH syndrome 0x{0:02x}")]
    BadAeth(u8),
    /// Malformed masked-atomic extension header.
    #[error("malformed masked-atomic header")]
    BadExtAtomic,
    /// The headers present (emit) do not match those the opcode carries.
    #[error("extension headers do not match opcode")]
    HeaderMismatch,
    /// A payload on an opcode that carries none.
    #[error("payload on an opcode without payload")]
    PayloadNotAllowed,
    /// A GRH that is not an IPv6 header.
    #[error("GRH is not an IPv6 header")]
    BadGrh,
    /// The ICRC does not match the packet.
    #[error("ICRC mismatch: computed 0x{computed:08x}, received 0x{received:08x}")]
    BadIcrc { computed: u32, received: u32 },
    /// Emit: the output buffer is shorter than [`PacketRepr::buffer_len`].
    #[error("output buffer too small")]
    BufferTooSmall,
    /// Emit: a 24-bit field, a 5-bit code or a 32-bit atomic operand too big.
    #[error("field value out of range")]
    FieldOutOfRange,
    /// Emit: larger than one UDP datagram can carry.
    #[error("packet longer than a UDP datagram")]
    TooLong,
}
