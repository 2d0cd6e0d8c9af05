//! Global identifiers and the global route header (GRH) a UD receive finds
//! in front of its data.
//!
//! A soft device's port is a UDP endpoint `(IPv4, port)`; its one GID
//! encodes that endpoint as a link-local IPv6 address: `fe80::/64`, then
//! four zero bytes, the IPv4 octets and the UDP port, big-endian. Both ends
//! of a UD exchange (and the verbs stand-in, whose `ibv_query_gid` returns
//! it) use this one encoding.
//!
//! As RoCEv2 hardware does for a packet carried over IPv6, a UD receive
//! gets the packet's 40-byte IPv6 header ahead of its payload: version 6,
//! traffic class, flow label, payload length (the UDP datagram), next
//! header UDP, hop limit, then the source and destination GIDs.

use std::net::{Ipv4Addr, SocketAddrV4};

use mlx5::endian::{get_u16, get_u32, put_u16, put_u32};

use super::WireError;

/// Length of the GRH (an IPv6 header).
pub const GRH_LEN: usize = 40;

/// A 16-byte global identifier (an IPv6 address on RoCE).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// The GID of a soft device's UDP endpoint.
    pub fn from_endpoint(addr: SocketAddrV4) -> Gid {
        let mut raw = [0u8; 16];
        raw[0] = 0xfe;
        raw[1] = 0x80;
        raw[10..14].copy_from_slice(&addr.ip().octets());
        raw[14..16].copy_from_slice(&addr.port().to_be_bytes());
        Gid(raw)
    }

    /// The UDP endpoint a GID made by [`Gid::from_endpoint`] names; `None`
    /// for any other GID (another prefix, nonzero bytes 2..10, port 0).
    pub fn endpoint(&self) -> Option<SocketAddrV4> {
        let raw = &self.0;
        if raw[0] != 0xfe || raw[1] != 0x80 || raw[2..10].iter().any(|&b| b != 0) {
            return None;
        }
        let ip = Ipv4Addr::new(raw[10], raw[11], raw[12], raw[13]);
        let port = u16::from_be_bytes([raw[14], raw[15]]);
        (port != 0).then(|| SocketAddrV4::new(ip, port))
    }
}

/// IPv6 version number in the top nibble of the first byte.
const IPV6_VERSION: u32 = 6;
const NEXT_HEADER_UDP: u8 = 17;
/// What a soft device puts in the hop limit of the GRH it writes.
pub const DEFAULT_HOP_LIMIT: u8 = 64;

/// A GRH as a UD receive finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Grh {
    pub traffic_class: u8,
    /// 20 bits.
    pub flow_label: u32,
    /// Bytes after the GRH in the packet: the UDP header and the RoCEv2
    /// packet (BTH … ICRC).
    pub payload_len: u16,
    pub next_header: u8,
    pub hop_limit: u8,
    pub sgid: Gid,
    pub dgid: Gid,
}

impl Grh {
    /// The GRH of a RoCEv2 datagram of `roce_len` bytes (BTH … ICRC) from
    /// `sgid` to `dgid`.
    pub fn for_datagram(sgid: Gid, dgid: Gid, roce_len: usize) -> Grh {
        const UDP_HEADER_LEN: usize = 8;
        Grh {
            traffic_class: 0,
            flow_label: 0,
            payload_len: u16::try_from(UDP_HEADER_LEN + roce_len).unwrap_or(u16::MAX),
            next_header: NEXT_HEADER_UDP,
            hop_limit: DEFAULT_HOP_LIMIT,
            sgid,
            dgid,
        }
    }

    /// Writes the 40 bytes; `FieldOutOfRange` for a flow label over 20 bits.
    pub fn emit(&self, b: &mut [u8]) -> Result<(), WireError> {
        if self.flow_label > 0x000f_ffff {
            return Err(WireError::FieldOutOfRange);
        }
        let b = b.get_mut(..GRH_LEN).ok_or(WireError::BufferTooSmall)?;
        let word = (IPV6_VERSION << 28) | (u32::from(self.traffic_class) << 20) | self.flow_label;
        put_u32(b, 0, word);
        put_u16(b, 4, self.payload_len);
        b[6] = self.next_header;
        b[7] = self.hop_limit;
        b[8..24].copy_from_slice(&self.sgid.0);
        b[24..40].copy_from_slice(&self.dgid.0);
        Ok(())
    }

    /// Reads 40 bytes; anything but IP version 6 is `BadGrh`.
    pub fn parse(b: &[u8]) -> Result<Grh, WireError> {
        let b = b.get(..GRH_LEN).ok_or(WireError::Truncated)?;
        let word = get_u32(b, 0);
        if word >> 28 != IPV6_VERSION {
            return Err(WireError::BadGrh);
        }
        let mut sgid = Gid::default();
        sgid.0.copy_from_slice(&b[8..24]);
        let mut dgid = Gid::default();
        dgid.0.copy_from_slice(&b[24..40]);
        Ok(Grh {
            traffic_class: (word >> 20) as u8,
            flow_label: word & 0x000f_ffff,
            payload_len: get_u16(b, 4),
            next_header: b[6],
            hop_limit: b[7],
            sgid,
            dgid,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_gids_round_trip_and_others_are_refused() {
        let addr = SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 2), 0x1234);
        let gid = Gid::from_endpoint(addr);
        assert_eq!(
            gid.0,
            [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 127, 0, 0, 2, 0x12, 0x34]
        );
        assert_eq!(gid.endpoint(), Some(addr));
        let mut other = gid;
        other.0[5] = 1;
        assert_eq!(other.endpoint(), None);
        let mut mapped = gid;
        mapped.0[0] = 0;
        assert_eq!(mapped.endpoint(), None);
        let no_port = Gid::from_endpoint(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0));
        assert_eq!(no_port.endpoint(), None);
    }

    #[test]
    fn grh_byte_image() {
        let s = Gid::from_endpoint(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 7));
        let d = Gid::from_endpoint(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 8));
        let mut grh = Grh::for_datagram(s, d, 36);
        grh.traffic_class = 0xab;
        grh.flow_label = 0x0c_def0;
        let mut b = [0u8; GRH_LEN];
        grh.emit(&mut b).unwrap();
        assert_eq!(&b[..8], &[0x6a, 0xbc, 0xde, 0xf0, 0, 44, 17, 64]);
        assert_eq!(&b[8..24], &s.0);
        assert_eq!(&b[24..40], &d.0);
        assert_eq!(Grh::parse(&b), Ok(grh));
        b[0] = 0x45;
        assert_eq!(Grh::parse(&b), Err(WireError::BadGrh));
        assert_eq!(Grh::parse(&b[..39]), Err(WireError::Truncated));
        grh.flow_label = 1 << 20;
        assert_eq!(grh.emit(&mut b), Err(WireError::FieldOutOfRange));
    }
}
