//! Captures of soft-HCA traffic in the classic pcap format, readable by
//! Wireshark/tshark (`-d udp.port==N,infiniband`).
//!
//! We only see UDP payloads, so each record is rebuilt as a raw IPv4 packet
//! (link type 101) with the header fields the ICRC assumes (identification
//! 0, Don't-Fragment, see [`super::icrc`]), TTL 64, a valid header checksum
//! and no UDP checksum (allowed over IPv4).

use std::io::{self, Write};
use std::net::SocketAddrV4;
use std::time::Duration;

/// pcap link type of raw IP packets.
pub const LINKTYPE_RAW: u32 = 101;
const PCAP_MAGIC_MICROS: u32 = 0xa1b2_c3d4;
const SNAPLEN: u32 = 65_535;
const IPV4_UDP_HEADERS: usize = 28;
const TTL: u8 = 64;

/// Writes `payload` wrapped in IPv4 and UDP headers to the end of `out`.
/// Fails with `InvalidInput` if the datagram would not fit an IPv4 packet.
pub fn ipv4_udp_frame(
    src: SocketAddrV4,
    dst: SocketAddrV4,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let total = u16::try_from(IPV4_UDP_HEADERS + payload.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "datagram too long"))?;
    let udp_len = total - 20;
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[6] = 0x40; // Don't Fragment
    ip[8] = TTL;
    ip[9] = 17; // UDP
    ip[12..16].copy_from_slice(&src.ip().octets());
    ip[16..20].copy_from_slice(&dst.ip().octets());
    let checksum = ipv4_header_checksum(&ip);
    ip[10..12].copy_from_slice(&checksum.to_be_bytes());
    out.extend_from_slice(&ip);
    out.extend_from_slice(&src.port().to_be_bytes());
    out.extend_from_slice(&dst.port().to_be_bytes());
    out.extend_from_slice(&udp_len.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(payload);
    Ok(())
}

/// The one's-complement checksum of an IPv4 header (checksum field zero).
fn ipv4_header_checksum(header: &[u8; 20]) -> u16 {
    let mut sum: u32 = header
        .chunks_exact(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A pcap file being written: the global header first, then one record per
/// datagram.
pub struct PcapWriter<W: Write> {
    out: W,
    frame: Vec<u8>,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the global header (microsecond timestamps, raw IPv4 link type).
    pub fn new(mut out: W) -> io::Result<PcapWriter<W>> {
        let mut header = [0u8; 24];
        header[0..4].copy_from_slice(&PCAP_MAGIC_MICROS.to_le_bytes());
        header[4..6].copy_from_slice(&2u16.to_le_bytes()); // version 2.4
        header[6..8].copy_from_slice(&4u16.to_le_bytes());
        // [8..16]: time zone offset and timestamp accuracy, both zero.
        header[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
        header[20..24].copy_from_slice(&LINKTYPE_RAW.to_le_bytes());
        out.write_all(&header)?;
        Ok(PcapWriter {
            out,
            frame: Vec::new(),
        })
    }

    /// Appends one UDP datagram from `src` to `dst`, stamped `time` (since the
    /// Unix epoch).
    pub fn write_datagram(
        &mut self,
        time: Duration,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        payload: &[u8],
    ) -> io::Result<()> {
        self.frame.clear();
        ipv4_udp_frame(src, dst, payload, &mut self.frame)?;
        let len = self.frame.len() as u32; // < 65536 by construction
        let mut record = [0u8; 16];
        record[0..4].copy_from_slice(&(time.as_secs() as u32).to_le_bytes());
        record[4..8].copy_from_slice(&time.subsec_micros().to_le_bytes());
        record[8..12].copy_from_slice(&len.to_le_bytes());
        record[12..16].copy_from_slice(&len.to_le_bytes());
        self.out.write_all(&record)?;
        self.out.write_all(&self.frame)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn ipv4_header_checksum_of_a_known_header() {
        // A textbook example header; its checksum is 0xb861.
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ipv4_header_checksum(&h), 0xb861);
        h[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
        // A header with its checksum in place sums to zero.
        assert_eq!(ipv4_header_checksum(&h), 0);
    }

    #[test]
    fn records_have_the_pcap_layout() {
        let a = SocketAddrV4::new(Ipv4Addr::new(192, 168, 0, 1), 1000);
        let b = SocketAddrV4::new(Ipv4Addr::new(192, 168, 0, 199), 2000);
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_datagram(Duration::new(5, 7_000), a, b, &[1, 2, 3, 4])
            .unwrap();
        let f = w.into_inner();
        assert_eq!(f.len(), 24 + 16 + 28 + 4);
        assert_eq!(&f[0..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
        assert_eq!(&f[20..24], &[101, 0, 0, 0]);
        assert_eq!(&f[24..28], &[5, 0, 0, 0]);
        assert_eq!(&f[28..32], &[7, 0, 0, 0]);
        assert_eq!(&f[32..36], &[32, 0, 0, 0]);
        let ip = &f[40..60];
        assert_eq!(&ip[2..4], &[0, 32]);
        let mut hdr = [0u8; 20];
        hdr.copy_from_slice(ip);
        assert_eq!(ipv4_header_checksum(&hdr), 0);
        assert_eq!(&f[60..68], &[0x03, 0xe8, 0x07, 0xd0, 0, 12, 0, 0]);
        assert_eq!(&f[68..], &[1, 2, 3, 4]);
    }
}
