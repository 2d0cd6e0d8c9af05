//! The checked view over a whole RoCEv2 datagram and its parsed `Repr`.

use super::bth::{self, Bth, BTH_LEN};
use super::headers::{Aeth, AtomicAckEth, AtomicEth, Deth, ExtAtomicEth, ExtHeader, Reth, IMM_LEN};
use super::icrc::{IcrcContext, ICRC_LEN};
use super::{HeaderLayout, Opcode, WireError};
use mlx5::endian::{get_u16, get_u24, get_u32, put_u16, put_u24, put_u32};

/// Largest UDP payload over IPv4 (65535 - 20 - 8).
pub const MAX_DATAGRAM_LEN: usize = 65_507;

/// A checked view over the bytes of one RoCEv2 packet (the UDP payload).
///
/// The only way to get one is [`Packet::new_checked`], so every accessor is
/// infallible, as in smoltcp: the checks ran once, and the opcode they read
/// is kept. The writers are private to [`PacketRepr::emit`], which builds a
/// datagram of the length its opcode needs before writing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
    opcode: Opcode,
}

/// The checks of [`Packet::new_checked`]; the opcode they found.
fn check(b: &[u8]) -> Result<Opcode, WireError> {
    if b.len() < BTH_LEN + ICRC_LEN {
        return Err(WireError::Truncated);
    }
    let opcode = Opcode::from_u8(b[bth::OPCODE])?;
    let headers = BTH_LEN + opcode.layout().ext_len();
    if b.len() < headers + ICRC_LEN {
        return Err(WireError::Truncated);
    }
    let padded_payload = b.len() - headers - ICRC_LEN;
    // The pad makes the payload a whole number of 4-byte words.
    if usize::from(pad_count_of(b)) > padded_payload || padded_payload % 4 != 0 {
        return Err(WireError::BadPad);
    }
    Ok(opcode)
}

/// The pad count of a buffer holding at least a BTH.
#[inline]
fn pad_count_of(b: &[u8]) -> u8 {
    (b[bth::FLAGS] & bth::PAD_MASK) >> bth::PAD_SHIFT
}

/// The getters of one-bit BTH flags, `name: byte offset, bit;` each.
macro_rules! bth_flags {
    ($($name:ident: $at:expr, $bit:expr;)+) => {
        $(
            #[inline]
            pub fn $name(&self) -> bool {
                self.buffer.as_ref()[$at] & $bit != 0
            }
        )+
    };
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// A view whose accessors cannot fail or panic: the buffer holds a BTH
    /// with a known opcode, that opcode's extension headers, a payload area
    /// of whole 4-byte words that the pad count does not exceed, and an ICRC.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Packet<T>, WireError> {
        let opcode = check(buffer.as_ref())?;
        Ok(Packet { buffer, opcode })
    }

    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The raw opcode byte.
    #[inline]
    pub fn opcode_raw(&self) -> u8 {
        self.opcode.as_u8()
    }

    #[inline]
    pub fn opcode(&self) -> Opcode {
        self.opcode
    }

    bth_flags! {
        solicited: bth::FLAGS, bth::SE_BIT;
        migreq: bth::FLAGS, bth::MIGREQ_BIT;
        fecn: bth::ECN, bth::FECN_BIT;
        becn: bth::ECN, bth::BECN_BIT;
        ack_req: bth::ACK_REQ, bth::ACK_REQ_BIT;
    }

    /// Number of pad bytes (0..=3) between the payload and the ICRC.
    #[inline]
    pub fn pad_count(&self) -> u8 {
        pad_count_of(self.buffer.as_ref())
    }

    /// Transport header version (0 is the only one defined).
    #[inline]
    pub fn tver(&self) -> u8 {
        self.buffer.as_ref()[bth::FLAGS] & bth::TVER_MASK
    }

    #[inline]
    pub fn pkey(&self) -> u16 {
        get_u16(self.buffer.as_ref(), bth::PKEY)
    }

    #[inline]
    pub fn dest_qp(&self) -> u32 {
        get_u24(self.buffer.as_ref(), bth::DEST_QP)
    }

    #[inline]
    pub fn psn(&self) -> u32 {
        get_u24(self.buffer.as_ref(), bth::PSN)
    }

    /// The extension headers the opcode carries.
    #[inline]
    pub fn layout(&self) -> HeaderLayout {
        self.opcode.layout()
    }

    /// BTH plus extension headers.
    #[inline]
    pub fn header_len(&self) -> usize {
        BTH_LEN + self.layout().ext_len()
    }

    /// The bytes between the BTH and the payload.
    #[inline]
    pub fn ext_headers(&self) -> &[u8] {
        &self.buffer.as_ref()[BTH_LEN..self.header_len()]
    }

    /// Where the payload (without its pad) lies in the buffer: the check
    /// made sure the pad fits between the headers and the ICRC.
    #[inline]
    fn payload_range(&self) -> core::ops::Range<usize> {
        let end = self.buffer.as_ref().len() - ICRC_LEN - usize::from(self.pad_count());
        self.header_len()..end
    }

    /// The payload without its pad.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.payload_range()]
    }

    /// The ICRC as carried (its wire bytes are least-significant first).
    #[inline]
    pub fn icrc(&self) -> u32 {
        icrc_of(self.buffer.as_ref())
    }

    /// Everything the ICRC covers after the pseudo headers.
    #[inline]
    pub fn icrc_covered(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        &b[..b.len() - ICRC_LEN]
    }

    /// Whether the carried ICRC matches the packet.
    #[inline]
    pub fn verify_icrc(&self, ctx: &IcrcContext) -> Result<(), WireError> {
        let computed = ctx.compute(self.icrc_covered());
        let received = self.icrc();
        if computed == received {
            Ok(())
        } else {
            Err(WireError::BadIcrc { computed, received })
        }
    }
}

/// The ICRC at the end of a buffer of at least `ICRC_LEN` bytes.
#[inline]
fn icrc_of(b: &[u8]) -> u32 {
    let at = b.len() - ICRC_LEN;
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The extension header at the front of `rest` when the layout says it is
/// `present`, moving `rest` past it.
#[inline]
fn take_header<H: ExtHeader>(rest: &mut &[u8], present: bool) -> Result<Option<H>, WireError> {
    if !present {
        return Ok(None);
    }
    let header = H::parse(rest)?;
    *rest = &rest[H::LEN..];
    Ok(Some(header))
}

/// Writes `header`, if there is one, at `*at` of `out` and moves `*at` past
/// it.
#[inline]
fn put_header<H: ExtHeader>(
    out: &mut [u8],
    at: &mut usize,
    header: &Option<H>,
) -> Result<(), WireError> {
    if let Some(header) = header {
        header.emit(&mut out[*at..])?;
        *at += H::LEN;
    }
    Ok(())
}

/// The writer [`PacketRepr::emit`] fills a datagram through: BTH fields at
/// their fixed offsets and the ICRC. Not a view (nothing was checked), so
/// private to this file.
struct PacketWriter<'b> {
    buffer: &'b mut [u8],
}

impl PacketWriter<'_> {
    #[inline]
    fn set_bit(&mut self, at: usize, bit: u8, on: bool) {
        let b = &mut self.buffer[at];
        if on {
            *b |= bit;
        } else {
            *b &= !bit;
        }
    }

    #[inline]
    fn set_opcode(&mut self, opcode: Opcode) {
        self.buffer[bth::OPCODE] = opcode.as_u8();
    }

    #[inline]
    fn set_solicited(&mut self, on: bool) {
        self.set_bit(bth::FLAGS, bth::SE_BIT, on);
    }

    #[inline]
    fn set_migreq(&mut self, on: bool) {
        self.set_bit(bth::FLAGS, bth::MIGREQ_BIT, on);
    }

    /// Sets the pad count (low two bits of `pad`).
    #[inline]
    fn set_pad_count(&mut self, pad: u8) {
        let b = &mut self.buffer[bth::FLAGS];
        *b = (*b & !bth::PAD_MASK) | ((pad << bth::PAD_SHIFT) & bth::PAD_MASK);
    }

    /// Sets the transport version (low four bits of `tver`).
    #[inline]
    fn set_tver(&mut self, tver: u8) {
        let b = &mut self.buffer[bth::FLAGS];
        *b = (*b & !bth::TVER_MASK) | (tver & bth::TVER_MASK);
    }

    #[inline]
    fn set_pkey(&mut self, pkey: u16) {
        put_u16(self.buffer, bth::PKEY, pkey);
    }

    /// Sets FECN/BECN and clears the reserved bits of that byte.
    #[inline]
    fn set_ecn(&mut self, fecn: bool, becn: bool) {
        self.buffer[bth::ECN] =
            (if fecn { bth::FECN_BIT } else { 0 }) | (if becn { bth::BECN_BIT } else { 0 });
    }

    /// Sets the low 24 bits of `qpn`.
    #[inline]
    fn set_dest_qp(&mut self, qpn: u32) {
        put_u24(self.buffer, bth::DEST_QP, qpn);
    }

    /// Sets AckReq and clears the reserved bits of that byte.
    #[inline]
    fn set_ack_req(&mut self, on: bool) {
        self.buffer[bth::ACK_REQ] = if on { bth::ACK_REQ_BIT } else { 0 };
    }

    /// Sets the low 24 bits of `psn`.
    #[inline]
    fn set_psn(&mut self, psn: u32) {
        put_u24(self.buffer, bth::PSN, psn);
    }

    /// Computes and stores the ICRC.
    #[inline]
    fn fill_icrc(&mut self, ctx: &IcrcContext) {
        let at = self.buffer.len() - ICRC_LEN;
        let icrc = ctx.compute(&self.buffer[..at]);
        self.buffer[at..].copy_from_slice(&icrc.to_le_bytes());
    }
}

/// A parsed RoCEv2 packet: the BTH, the extension headers its opcode
/// carries (exactly those: `parse` and `emit` reject any other combination),
/// and the payload without pad.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketRepr<'a> {
    pub bth: Bth,
    pub deth: Option<Deth>,
    pub reth: Option<Reth>,
    pub aeth: Option<Aeth>,
    pub atomic: Option<AtomicEth>,
    pub atomic_ack: Option<AtomicAckEth>,
    pub ext_atomic: Option<ExtAtomicEth>,
    /// Immediate data, as the big-endian word on the wire read into a `u32`.
    pub imm: Option<u32>,
    pub payload: &'a [u8],
}

impl<'a> PacketRepr<'a> {
    /// A packet with only a BTH and a payload; set the extension headers the
    /// opcode needs before emitting.
    #[inline]
    pub const fn new(bth: Bth, payload: &'a [u8]) -> PacketRepr<'a> {
        PacketRepr {
            bth,
            deth: None,
            reth: None,
            aeth: None,
            atomic: None,
            atomic_ack: None,
            ext_atomic: None,
            imm: None,
            payload,
        }
    }

    /// Checks and parses a received datagram (the UDP payload), including
    /// its ICRC.
    #[inline]
    pub fn parse(datagram: &'a [u8], ctx: &IcrcContext) -> Result<PacketRepr<'a>, WireError> {
        let packet = Packet::new_checked(datagram)?;
        PacketRepr::parse_packet(&packet, ctx)
    }

    /// Parses a checked view, including its ICRC.
    pub fn parse_packet<T: AsRef<[u8]> + ?Sized>(
        packet: &Packet<&'a T>,
        ctx: &IcrcContext,
    ) -> Result<PacketRepr<'a>, WireError> {
        let repr = PacketRepr::parse_unverified(packet)?;
        packet.verify_icrc(ctx)?;
        Ok(repr)
    }

    /// Parses a checked view without looking at its ICRC (for tools and
    /// tests that inspect packets whose addresses they do not know).
    pub fn parse_unverified<T: AsRef<[u8]> + ?Sized>(
        packet: &Packet<&'a T>,
    ) -> Result<PacketRepr<'a>, WireError> {
        // `packet` borrows `T` for 'a, so the payload may outlive the view
        // (the same bytes, checked already).
        let view = Packet {
            buffer: packet.buffer.as_ref(),
            opcode: packet.opcode,
        };
        let opcode = view.opcode();
        if view.tver() != 0 {
            return Err(WireError::BadTransportVersion(view.tver()));
        }
        let layout = opcode.layout();
        let payload = &view.buffer[view.payload_range()];
        if !layout.payload && (!payload.is_empty() || view.pad_count() != 0) {
            return Err(WireError::PayloadNotAllowed);
        }
        let bth = Bth {
            opcode,
            solicited: view.solicited(),
            migreq: view.migreq(),
            pkey: view.pkey(),
            fecn: view.fecn(),
            becn: view.becn(),
            dest_qp: view.dest_qp(),
            ack_req: view.ack_req(),
            psn: view.psn(),
        };
        let mut repr = PacketRepr::new(bth, payload);
        // The checked view holds exactly the headers of `layout`.
        let mut rest = &view.buffer[BTH_LEN..view.header_len()];
        repr.deth = take_header(&mut rest, layout.deth)?;
        repr.reth = take_header(&mut rest, layout.reth)?;
        repr.atomic = take_header(&mut rest, layout.atomic)?;
        repr.ext_atomic = take_header(&mut rest, layout.ext_atomic)?;
        repr.aeth = take_header(&mut rest, layout.aeth)?;
        repr.atomic_ack = take_header(&mut rest, layout.atomic_ack)?;
        if layout.imm {
            repr.imm = Some(get_u32(&rest[..IMM_LEN], 0));
        }
        Ok(repr)
    }

    /// Whether the headers present are exactly those the opcode carries.
    #[inline]
    pub fn headers_match_opcode(&self) -> bool {
        let l = self.bth.opcode.layout();
        l.deth == self.deth.is_some()
            && l.reth == self.reth.is_some()
            && l.aeth == self.aeth.is_some()
            && l.atomic == self.atomic.is_some()
            && l.atomic_ack == self.atomic_ack.is_some()
            && l.ext_atomic == self.ext_atomic.is_some()
            && l.imm == self.imm.is_some()
    }

    /// Pad bytes after the payload.
    #[inline]
    pub fn pad_count(&self) -> usize {
        self.payload.len().wrapping_neg() & 3
    }

    /// Length of the datagram `emit` writes.
    #[inline]
    pub fn buffer_len(&self) -> usize {
        BTH_LEN
            + self.bth.opcode.layout().ext_len()
            + self.payload.len()
            + self.pad_count()
            + ICRC_LEN
    }

    /// Writes the datagram into the front of `buf` and returns its length.
    pub fn emit(&self, buf: &mut [u8], ctx: &IcrcContext) -> Result<usize, WireError> {
        let len = self.emit_unsealed(buf)?;
        seal(&mut buf[..len], ctx);
        Ok(len)
    }

    /// Writes the datagram as [`PacketRepr::emit`] does, with its ICRC left
    /// zero: [`seal`] computes it once the datagram's wire is known (a
    /// datagram for a same-host peer's ring needs none).
    pub fn emit_unsealed(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let layout = self.bth.opcode.layout();
        if !self.headers_match_opcode() {
            return Err(WireError::HeaderMismatch);
        }
        if !layout.payload && !self.payload.is_empty() {
            return Err(WireError::PayloadNotAllowed);
        }
        if !self.bth.fields_in_range() {
            return Err(WireError::FieldOutOfRange);
        }
        let len = self.buffer_len();
        if len > MAX_DATAGRAM_LEN {
            return Err(WireError::TooLong);
        }
        let out = buf.get_mut(..len).ok_or(WireError::BufferTooSmall)?;

        let mut packet = PacketWriter { buffer: &mut *out };
        packet.set_opcode(self.bth.opcode);
        packet.buffer[bth::FLAGS] = 0;
        packet.set_solicited(self.bth.solicited);
        packet.set_migreq(self.bth.migreq);
        packet.set_pad_count(self.pad_count() as u8);
        packet.set_tver(0);
        packet.set_pkey(self.bth.pkey);
        packet.set_ecn(self.bth.fecn, self.bth.becn);
        packet.set_dest_qp(self.bth.dest_qp);
        packet.set_ack_req(self.bth.ack_req);
        packet.set_psn(self.bth.psn);

        let mut at = BTH_LEN;
        put_header(out, &mut at, &self.deth)?;
        put_header(out, &mut at, &self.reth)?;
        put_header(out, &mut at, &self.atomic)?;
        put_header(out, &mut at, &self.ext_atomic)?;
        put_header(out, &mut at, &self.aeth)?;
        put_header(out, &mut at, &self.atomic_ack)?;
        if let Some(imm) = self.imm {
            put_u32(out, at, imm);
            at += IMM_LEN;
        }
        out[at..at + self.payload.len()].copy_from_slice(self.payload);
        at += self.payload.len();
        out[at..].fill(0);
        Ok(len)
    }
}

/// Computes and stores the ICRC of a datagram written by
/// [`PacketRepr::emit_unsealed`] (the whole datagram, ICRC included).
pub fn seal(datagram: &mut [u8], ctx: &IcrcContext) {
    if datagram.len() >= ICRC_LEN {
        PacketWriter { buffer: datagram }.fill_icrc(ctx);
    }
}
