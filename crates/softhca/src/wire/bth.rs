//! The base transport header (BTH): field offsets and its `Repr`.

use super::headers::MAX_U24;
use super::Opcode;

/// Length of the BTH.
pub const BTH_LEN: usize = 12;

/// The default partition key (full membership of the default partition).
pub const DEFAULT_PKEY: u16 = 0xffff;

// Byte offsets and bits inside the BTH (IBTA vol. 1, 9.2).
pub(crate) const OPCODE: usize = 0;
pub(crate) const FLAGS: usize = 1; // SE | M | PadCnt(2) | TVer(4)
pub(crate) const PKEY: usize = 2;
pub(crate) const ECN: usize = 4; // FECN | BECN | reserved(6)
pub(crate) const DEST_QP: usize = 5;
pub(crate) const ACK_REQ: usize = 8; // AckReq | reserved(7)
pub(crate) const PSN: usize = 9;

pub(crate) const SE_BIT: u8 = 0x80;
pub(crate) const MIGREQ_BIT: u8 = 0x40;
pub(crate) const PAD_SHIFT: u8 = 4;
pub(crate) const PAD_MASK: u8 = 0x30;
pub(crate) const TVER_MASK: u8 = 0x0f;
pub(crate) const FECN_BIT: u8 = 0x80;
pub(crate) const BECN_BIT: u8 = 0x40;
pub(crate) const ACK_REQ_BIT: u8 = 0x80;

/// The BTH fields a sender chooses. The pad count is not here: it follows
/// from the payload length, and emit computes it. The transport version is
/// always 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bth {
    pub opcode: Opcode,
    /// Solicited event: the receiver should raise a completion event.
    pub solicited: bool,
    /// Migration request (automatic path migration; we leave it clear).
    pub migreq: bool,
    pub pkey: u16,
    /// Forward explicit congestion notification.
    pub fecn: bool,
    /// Backward explicit congestion notification.
    pub becn: bool,
    /// Destination queue pair number (24 bits).
    pub dest_qp: u32,
    /// The requester asks for an acknowledgement of this packet.
    pub ack_req: bool,
    /// Packet sequence number (24 bits).
    pub psn: u32,
}

impl Bth {
    /// A BTH with the default partition and all flags clear.
    #[inline]
    pub const fn new(opcode: Opcode, dest_qp: u32, psn: u32) -> Bth {
        Bth {
            opcode,
            solicited: false,
            migreq: false,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp,
            ack_req: false,
            psn,
        }
    }

    #[inline]
    pub(crate) const fn fields_in_range(&self) -> bool {
        self.dest_qp <= MAX_U24 && self.psn <= MAX_U24
    }
}
