//! The TX and RX tokens: how the two sides of a failed connection agree on
//! what the receiver got.
//!
//! The sender asks its ep for a TX token (`uct_ep_query`), ships it to the
//! peer over a surviving rail, the peer's iface turns it into an RX token
//! (`uct_iface_query_v2`) by looking up the QP the token names and reading
//! its `next_rcv_psn`, and ships that back for `uct_ep_outstanding_purge`.
//! Both travel between hosts and processes, so both are self-describing and
//! checked before anything acts on them:
//!
//! ```text
//! offset size  field (all integers big-endian)
//!  0     4     magic: "rcTX" (0x72635458) or "rcRX" (0x72635258)
//!  4     1     version (1)
//!  5     1     reserved, 0
//!  6     2     total length of the token in bytes (60 TX, 64 RX)
//!  8     24    requester (sender) QP: device id [16], QPN u32, generation u32
//! 32     24    responder (receiver) QP: the same three fields
//! 56     4     RX only: the responder's next_rcv_psn (24 bits)
//! 56/60  4     CRC-32 (IEEE) of every byte before it
//! ```
//!
//! The identity names both ends because each side checks the half it can
//! see: the responder looks its QP up by the responder QPN and checks that
//! the QP is connected to the requester QP the token names; the requester
//! checks that an RX token echoes exactly its own connection. The
//! *generation* is a value both sides learned when the connection was set
//! up and that a QP destroyed and recreated under the same number would not
//! reproduce (the rc transport draws a random 24-bit value per QP and
//! carries it in the ep address; PSNs themselves start at 0, as UCX's), so a token that outlived its QP is
//! refused instead of being applied to the QP's successor.

use crate::failover::error::{FailoverError, TokenKind};
use crate::hca::DeviceAddress;
use crate::mlx5::PSN_MASK;

/// Bytes of a TX token (`uct_iface_attr_v2_t::tx_token_length`).
pub const TX_TOKEN_LENGTH: usize = 60;
/// Bytes of an RX token (`uct_iface_attr_v2_t::rx_token_length`).
pub const RX_TOKEN_LENGTH: usize = 64;

/// "rcTX".
pub const TX_TOKEN_MAGIC: u32 = u32::from_be_bytes(*b"rcTX");
/// "rcRX".
pub const RX_TOKEN_MAGIC: u32 = u32::from_be_bytes(*b"rcRX");
/// The token format version this code writes and reads.
pub const TOKEN_VERSION: u8 = 1;

const HEADER_LENGTH: usize = 8;
const QP_IDENTITY_LENGTH: usize = DeviceId::LENGTH + 8;
const CONNECTION_ID_LENGTH: usize = 2 * QP_IDENTITY_LENGTH;
const IDENTITY_END: usize = HEADER_LENGTH + CONNECTION_ID_LENGTH;

/// The identity of a device port as the peers know it, 16 opaque bytes
/// (room for an IB GID). The soft HCA's is its packed [`DeviceAddress`]
/// (kind, IPv4, UDP port), zero-padded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DeviceId(pub [u8; DeviceId::LENGTH]);

impl DeviceId {
    pub const LENGTH: usize = 16;

    /// The id of the device reachable at `address`.
    pub fn from_address(address: &DeviceAddress) -> DeviceId {
        // The port's GID where it has one, else its packed address
        // zero-padded (`DeviceAddress::identity`).
        DeviceId(address.identity())
    }
}

/// One end of an RC connection: which device, which QP, which incarnation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct QpIdentity {
    pub device: DeviceId,
    /// QP number (24 bits).
    pub qpn: u32,
    /// Distinguishes this QP from an earlier or later one with the same
    /// number; both ends must know it (rc: a random value per QP, sent in the
    /// ep address).
    pub generation: u32,
}

/// An RC connection as both ends name it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ConnectionId {
    /// The sender: the QP whose outstanding operations are purged.
    pub requester: QpIdentity,
    /// The receiver: the QP whose `next_rcv_psn` the RX token carries.
    pub responder: QpIdentity,
}

impl ConnectionId {
    /// The connection as the sending ep sees it: `local` is its own QP,
    /// `remote` the peer QP it is connected to (from the peer's ep address).
    pub fn as_requester(local: QpIdentity, remote: QpIdentity) -> ConnectionId {
        ConnectionId {
            requester: local,
            responder: remote,
        }
    }

    /// The same connection as the receiving ep sees it: `local` is its own
    /// QP (the responder), `remote` the sender's QP.
    pub fn as_responder(local: QpIdentity, remote: QpIdentity) -> ConnectionId {
        ConnectionId {
            requester: remote,
            responder: local,
        }
    }

    /// `Ok` when `token` names exactly this connection; otherwise the first
    /// field that differs, for the log line.
    pub fn check_matches(&self, token: &ConnectionId) -> Result<(), FailoverError> {
        let ends = [
            ("requester", &self.requester, &token.requester),
            ("responder", &self.responder, &token.responder),
        ];
        for (end, ours, theirs) in ends {
            let field = |name: &'static str| -> &'static str {
                match (end, name) {
                    ("requester", "qpn") => "requester QPN",
                    ("requester", "generation") => "requester generation",
                    ("requester", _) => "requester device",
                    (_, "qpn") => "responder QPN",
                    (_, "generation") => "responder generation",
                    _ => "responder device",
                }
            };
            if ours.qpn != theirs.qpn {
                return Err(FailoverError::ConnectionMismatch {
                    field: field("qpn"),
                    ours: format!("0x{:x}", ours.qpn),
                    token: format!("0x{:x}", theirs.qpn),
                });
            }
            if ours.generation != theirs.generation {
                return Err(FailoverError::ConnectionMismatch {
                    field: field("generation"),
                    ours: format!("0x{:x}", ours.generation),
                    token: format!("0x{:x}", theirs.generation),
                });
            }
            if ours.device != theirs.device {
                return Err(FailoverError::ConnectionMismatch {
                    field: field("device"),
                    ours: hex(&ours.device.0),
                    token: hex(&theirs.device.0),
                });
            }
        }
        Ok(())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sender's token: which connection it is asking about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxToken {
    pub connection: ConnectionId,
}

/// The receiver's answer: the same connection, and the first PSN its
/// responder has not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxToken {
    pub connection: ConnectionId,
    /// The responder's next expected PSN when the token was derived
    /// (24 bits): every packet before it was accepted.
    pub next_rcv_psn: u32,
}

/// What the receiving iface knows about the QP a TX token names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponderState {
    /// The connection as the responder's own ep records it.
    pub connection: ConnectionId,
    /// From the responder QP's query.
    pub next_rcv_psn: u32,
}

impl TxToken {
    pub const LENGTH: usize = TX_TOKEN_LENGTH;

    /// Writes the token into the first [`TX_TOKEN_LENGTH`] bytes of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), FailoverError> {
        check_identity_ranges(&self.connection)?;
        let out = output(out, TX_TOKEN_LENGTH)?;
        write_header(out, TX_TOKEN_MAGIC, TX_TOKEN_LENGTH);
        write_connection(&mut out[HEADER_LENGTH..IDENTITY_END], &self.connection);
        seal(out);
        Ok(())
    }

    /// Reads and checks a TX token (the first [`TX_TOKEN_LENGTH`] bytes of
    /// `bytes`; any more are ignored).
    pub fn decode(bytes: &[u8]) -> Result<TxToken, FailoverError> {
        let token = checked_frame(bytes, TokenKind::Tx)?;
        let connection = read_connection(&token[HEADER_LENGTH..IDENTITY_END])?;
        Ok(TxToken { connection })
    }
}

impl RxToken {
    pub const LENGTH: usize = RX_TOKEN_LENGTH;

    /// Writes the token into the first [`RX_TOKEN_LENGTH`] bytes of `out`.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), FailoverError> {
        check_identity_ranges(&self.connection)?;
        check_24_bits("next_rcv_psn", self.next_rcv_psn)?;
        let out = output(out, RX_TOKEN_LENGTH)?;
        write_header(out, RX_TOKEN_MAGIC, RX_TOKEN_LENGTH);
        write_connection(&mut out[HEADER_LENGTH..IDENTITY_END], &self.connection);
        out[IDENTITY_END..IDENTITY_END + 4].copy_from_slice(&self.next_rcv_psn.to_be_bytes());
        seal(out);
        Ok(())
    }

    /// Reads and checks an RX token (the first [`RX_TOKEN_LENGTH`] bytes of
    /// `bytes`; any more are ignored).
    pub fn decode(bytes: &[u8]) -> Result<RxToken, FailoverError> {
        let token = checked_frame(bytes, TokenKind::Rx)?;
        let connection = read_connection(&token[HEADER_LENGTH..IDENTITY_END])?;
        let next_rcv_psn = read_u32(token, IDENTITY_END);
        check_24_bits("next_rcv_psn", next_rcv_psn)?;
        Ok(RxToken {
            connection,
            next_rcv_psn,
        })
    }

    /// [`RxToken::decode`], then refuses a token for any connection other
    /// than `ours` (the ep being purged).
    pub fn decode_for(bytes: &[u8], ours: &ConnectionId) -> Result<RxToken, FailoverError> {
        let token = RxToken::decode(bytes)?;
        ours.check_matches(&token.connection)?;
        Ok(token)
    }
}

/// The receiver's side of the exchange: checks `tx_token`, asks `lookup`
/// for the state of the responder QP it names (lookup gets the token's
/// connection and answers [`FailoverError::UnknownConnection`] when the
/// iface has no such QP), refuses the token unless that QP's own view of its
/// connection is exactly the token's, and writes the RX token into `out`.
pub fn derive_rx_token(
    tx_token: &[u8],
    lookup: impl FnOnce(&ConnectionId) -> Result<ResponderState, FailoverError>,
    out: &mut [u8],
) -> Result<RxToken, FailoverError> {
    output(out, RX_TOKEN_LENGTH)?;
    let tx = TxToken::decode(tx_token)?;
    let state = lookup(&tx.connection)?;
    state.connection.check_matches(&tx.connection)?;
    let rx = RxToken {
        connection: tx.connection,
        next_rcv_psn: state.next_rcv_psn & PSN_MASK,
    };
    rx.encode(out)?;
    Ok(rx)
}

fn output(out: &mut [u8], needed: usize) -> Result<&mut [u8], FailoverError> {
    let length = out.len();
    out.get_mut(..needed)
        .ok_or(FailoverError::OutputTooSmall { length, needed })
}

fn check_24_bits(field: &'static str, value: u32) -> Result<(), FailoverError> {
    if value & !PSN_MASK != 0 {
        return Err(FailoverError::FieldOutOfRange { field, value });
    }
    Ok(())
}

fn check_identity_ranges(connection: &ConnectionId) -> Result<(), FailoverError> {
    check_24_bits("requester QPN", connection.requester.qpn)?;
    check_24_bits("responder QPN", connection.responder.qpn)
}

fn write_header(out: &mut [u8], magic: u32, length: usize) {
    out[0..4].copy_from_slice(&magic.to_be_bytes());
    out[4] = TOKEN_VERSION;
    out[5] = 0;
    // Token lengths are small consts (60/64), so the cast is exact.
    out[6..8].copy_from_slice(&(length as u16).to_be_bytes());
}

fn write_connection(out: &mut [u8], connection: &ConnectionId) {
    let (requester, responder) = out.split_at_mut(QP_IDENTITY_LENGTH);
    write_qp(requester, &connection.requester);
    write_qp(responder, &connection.responder);
}

fn write_qp(out: &mut [u8], qp: &QpIdentity) {
    out[..DeviceId::LENGTH].copy_from_slice(&qp.device.0);
    out[DeviceId::LENGTH..DeviceId::LENGTH + 4].copy_from_slice(&qp.qpn.to_be_bytes());
    out[DeviceId::LENGTH + 4..QP_IDENTITY_LENGTH].copy_from_slice(&qp.generation.to_be_bytes());
}

/// Writes the CRC of everything before the last four bytes into them.
fn seal(token: &mut [u8]) {
    let body = token.len() - 4;
    let crc = crc32fast::hash(&token[..body]);
    token[body..].copy_from_slice(&crc.to_be_bytes());
}

fn read_u32(bytes: &[u8], offset: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[offset..offset + 4]);
    u32::from_be_bytes(word)
}

fn read_connection(bytes: &[u8]) -> Result<ConnectionId, FailoverError> {
    let connection = ConnectionId {
        requester: read_qp(&bytes[..QP_IDENTITY_LENGTH]),
        responder: read_qp(&bytes[QP_IDENTITY_LENGTH..CONNECTION_ID_LENGTH]),
    };
    check_identity_ranges(&connection)?;
    Ok(connection)
}

fn read_qp(bytes: &[u8]) -> QpIdentity {
    let mut device = [0u8; DeviceId::LENGTH];
    device.copy_from_slice(&bytes[..DeviceId::LENGTH]);
    QpIdentity {
        device: DeviceId(device),
        qpn: read_u32(bytes, DeviceId::LENGTH),
        generation: read_u32(bytes, DeviceId::LENGTH + 4),
    }
}

/// Checks the frame of a token of `kind` (magic, version, reserved byte,
/// length, checksum) and returns exactly its bytes.
fn checked_frame(bytes: &[u8], kind: TokenKind) -> Result<&[u8], FailoverError> {
    let (magic, other_magic, needed) = match kind {
        TokenKind::Tx => (TX_TOKEN_MAGIC, RX_TOKEN_MAGIC, TX_TOKEN_LENGTH),
        TokenKind::Rx => (RX_TOKEN_MAGIC, TX_TOKEN_MAGIC, RX_TOKEN_LENGTH),
    };
    let truncated = FailoverError::Truncated {
        kind,
        length: bytes.len(),
        needed,
    };
    if bytes.len() < HEADER_LENGTH {
        return Err(truncated);
    }
    let found_magic = read_u32(bytes, 0);
    if found_magic == other_magic {
        return Err(FailoverError::WrongKind { expected: kind });
    }
    if found_magic != magic {
        return Err(FailoverError::BadMagic {
            kind,
            found: found_magic,
        });
    }
    if bytes[4] != TOKEN_VERSION {
        return Err(FailoverError::UnsupportedVersion {
            kind,
            found: bytes[4],
        });
    }
    if bytes[5] != 0 {
        return Err(FailoverError::ReservedNotZero {
            kind,
            found: bytes[5],
        });
    }
    let stated = u16::from_be_bytes([bytes[6], bytes[7]]);
    if usize::from(stated) != needed {
        return Err(FailoverError::BadLength {
            kind,
            found: stated,
            expected: needed as u16,
        });
    }
    let token = bytes.get(..needed).ok_or(truncated)?;
    let body = needed - 4;
    let found = read_u32(token, body);
    let computed = crc32fast::hash(&token[..body]);
    if found != computed {
        return Err(FailoverError::BadChecksum {
            kind,
            found,
            computed,
        });
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection() -> ConnectionId {
        ConnectionId {
            requester: QpIdentity {
                device: DeviceId([1; 16]),
                qpn: 0x00_0102,
                generation: 0xdead_beef,
            },
            responder: QpIdentity {
                device: DeviceId([2; 16]),
                qpn: 0xff_fffe,
                generation: 7,
            },
        }
    }

    #[test]
    fn layout_is_big_endian_at_documented_offsets() {
        let mut bytes = [0u8; RX_TOKEN_LENGTH];
        RxToken {
            connection: connection(),
            next_rcv_psn: 0x12_3456,
        }
        .encode(&mut bytes)
        .unwrap();
        assert_eq!(&bytes[0..4], b"rcRX");
        assert_eq!(bytes[4], 1);
        assert_eq!(&bytes[6..8], &[0, 64]);
        assert_eq!(&bytes[8..24], &[1; 16]);
        assert_eq!(&bytes[24..28], &[0, 0, 1, 2]);
        assert_eq!(&bytes[28..32], &[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(&bytes[32..48], &[2; 16]);
        assert_eq!(&bytes[48..52], &[0, 0xff, 0xff, 0xfe]);
        assert_eq!(&bytes[52..56], &[0, 0, 0, 7]);
        assert_eq!(&bytes[56..60], &[0, 0x12, 0x34, 0x56]);
        assert_eq!(
            u32::from_be_bytes([bytes[60], bytes[61], bytes[62], bytes[63]]),
            crc32fast::hash(&bytes[..60])
        );
    }

    #[test]
    fn encode_refuses_out_of_range_fields_and_short_buffers() {
        let mut bad = connection();
        bad.responder.qpn = 0x0100_0000;
        let mut out = [0u8; TX_TOKEN_LENGTH];
        assert!(matches!(
            TxToken { connection: bad }.encode(&mut out),
            Err(FailoverError::FieldOutOfRange { .. })
        ));
        let mut short = [0u8; TX_TOKEN_LENGTH - 1];
        assert_eq!(
            TxToken {
                connection: connection()
            }
            .encode(&mut short),
            Err(FailoverError::OutputTooSmall {
                length: TX_TOKEN_LENGTH - 1,
                needed: TX_TOKEN_LENGTH
            })
        );
    }

    #[test]
    fn device_id_of_a_soft_address_is_its_packed_form() {
        let address = DeviceAddress::Udp("127.0.0.2:4791".parse().unwrap());
        let id = DeviceId::from_address(&address);
        let mut packed = [0u8; DeviceAddress::MAX_PACKED_LEN];
        let length = address.pack(&mut packed).unwrap();
        assert_eq!(&id.0[..length], &packed[..length]);
        assert!(id.0[length..].iter().all(|&b| b == 0));
        let other = DeviceId::from_address(&DeviceAddress::Udp("127.0.0.1:4791".parse().unwrap()));
        assert_ne!(id, other);
    }
}
