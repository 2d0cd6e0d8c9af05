//! The RoCEv2 invariant CRC.
//!
//! RoCEv2 protects each packet with a CRC-32 (the Ethernet polynomial,
//! reflected, initial value all ones, final complement) computed over:
//! eight bytes of 0xFF standing for the InfiniBand LRH that RoCEv2 does not
//! have, the IPv4 header with TOS, TTL and header checksum replaced by ones,
//! the UDP header with its checksum replaced by ones, the BTH with its byte 4
//! (FECN, BECN and reserved bits) replaced by ones, and everything after the
//! BTH up to the ICRC (extension headers, payload, pad). The result goes on
//! the wire least-significant byte first, like an Ethernet FCS.
//!
//! We send through ordinary UDP sockets, so the kernel writes the real IP
//! header and we never see it. Both ends therefore rebuild it from what they
//! know (the two socket addresses and the datagram length) under these
//! assumptions: IPv4 without options, identification 0, Don't-Fragment set,
//! protocol UDP. The link (`soft::link`) makes them hold: its unconnected
//! socket sends with `IP_PMTUDISC_DO`, for which Linux sets DF and id 0 (in
//! the default "want" mode it sets DF but a varying id). The capture test
//! checks every captured frame's ICRC against its real headers.

use std::net::SocketAddrV4;

use super::bth::BTH_LEN;

/// Length of the ICRC trailer.
pub const ICRC_LEN: usize = 4;

const MASKED_LRH: [u8; 8] = [0xff; 8];
const IPV4_HEADER_LEN: usize = 20;
const UDP_HEADER_LEN: usize = 8;
const IPPROTO_UDP: u8 = 17;
/// Flags/fragment-offset word with only Don't-Fragment set.
const IPV4_FLAGS_DF: u16 = 0x4000;
/// Offset of the BTH byte holding FECN, BECN and reserved bits.
const BTH_MASKED_BYTE: usize = 4;

/// The addresses the ICRC covers: the datagram's source and destination.
/// A receiver uses (peer address it received from, its own address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IcrcContext {
    pub src: SocketAddrV4,
    pub dst: SocketAddrV4,
}

impl IcrcContext {
    #[inline]
    pub const fn new(src: SocketAddrV4, dst: SocketAddrV4) -> IcrcContext {
        IcrcContext { src, dst }
    }

    /// The context of the opposite direction (for an answer).
    #[inline]
    pub const fn reversed(&self) -> IcrcContext {
        IcrcContext {
            src: self.dst,
            dst: self.src,
        }
    }

    /// The ICRC of a RoCEv2 packet, given everything the ICRC covers after the
    /// pseudo headers: the packet from the BTH up to, not including, the ICRC.
    pub fn compute(&self, covered: &[u8]) -> u32 {
        // Lengths that do not fit 16 bits cannot be sent as one datagram; we
        // still produce a value (never panic), the emitter rejects such sizes.
        let roce_len = covered.len() + ICRC_LEN;
        let udp_len = (UDP_HEADER_LEN + roce_len) as u16;
        let ip_len = (IPV4_HEADER_LEN + UDP_HEADER_LEN + roce_len) as u16;

        let mut pseudo = [0u8; IPV4_HEADER_LEN + UDP_HEADER_LEN];
        pseudo[0] = 0x45; // version 4, five 32-bit words
        pseudo[1] = 0xff; // TOS, masked
        pseudo[2..4].copy_from_slice(&ip_len.to_be_bytes());
        // [4..6] identification: 0
        pseudo[6..8].copy_from_slice(&IPV4_FLAGS_DF.to_be_bytes());
        pseudo[8] = 0xff; // TTL, masked
        pseudo[9] = IPPROTO_UDP;
        pseudo[10] = 0xff; // header checksum, masked
        pseudo[11] = 0xff;
        pseudo[12..16].copy_from_slice(&self.src.ip().octets());
        pseudo[16..20].copy_from_slice(&self.dst.ip().octets());
        pseudo[20..22].copy_from_slice(&self.src.port().to_be_bytes());
        pseudo[22..24].copy_from_slice(&self.dst.port().to_be_bytes());
        pseudo[24..26].copy_from_slice(&udp_len.to_be_bytes());
        pseudo[26] = 0xff; // UDP checksum, masked
        pseudo[27] = 0xff;

        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&MASKED_LRH);
        hasher.update(&pseudo);
        let bth_len = covered.len().min(BTH_LEN);
        let mut bth = [0u8; BTH_LEN];
        bth[..bth_len].copy_from_slice(&covered[..bth_len]);
        if bth_len > BTH_MASKED_BYTE {
            bth[BTH_MASKED_BYTE] = 0xff;
        }
        hasher.update(&bth[..bth_len]);
        hasher.update(&covered[bth_len..]);
        hasher.finalize()
    }
}
