//! The connection manager's messages on its TCP connection: an 8-byte
//! header (`b"CM"`, version, kind, payload length as a big-endian u32), then
//! the payload. A request and an accept carry the sender's device address
//! (one length byte, then the packed address) followed by the private data
//! of the layer above; a reject and a notify carry nothing. Disconnection is
//! the TCP half-close, not a message.
//!
//! [`FrameReader`] takes bytes as they arrive and hands out whole messages;
//! anything that is not a message of ours (bad magic, unknown version or
//! kind, a length over the limit, an address longer than its payload) is an
//! error, never a panic.

use crate::abi::ucs_status::Status;

const MAGIC: [u8; 2] = *b"CM";
const VERSION: u8 = 1;
/// Bytes before the payload.
pub const HEADER_LEN: usize = 8;

/// What a message says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Client to server: a connection request.
    Request = 1,
    /// Server to client: the request is accepted.
    Accept = 2,
    /// Server to client: the request is rejected.
    Reject = 3,
    /// Client to server: the client is connected (`uct_cm_client_ep_conn_notify`).
    Notify = 4,
}

impl Kind {
    fn from_byte(byte: u8) -> Option<Kind> {
        match byte {
            1 => Some(Kind::Request),
            2 => Some(Kind::Accept),
            3 => Some(Kind::Reject),
            4 => Some(Kind::Notify),
            _ => None,
        }
    }

    /// Whether the payload holds a device address and private data.
    fn carries_data(self) -> bool {
        matches!(self, Kind::Request | Kind::Accept)
    }
}

/// One whole message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub kind: Kind,
    pub device_address: Vec<u8>,
    pub private_data: Vec<u8>,
}

impl Message {
    pub fn signal(kind: Kind) -> Message {
        Message {
            kind,
            device_address: Vec::new(),
            private_data: Vec::new(),
        }
    }

    /// The bytes of this message on the wire; `InvalidParam` if the device
    /// address does not fit its length byte.
    pub fn encode(&self) -> Result<Vec<u8>, Status> {
        let mut payload = Vec::new();
        if self.kind.carries_data() {
            let address_len = u8::try_from(self.device_address.len()).map_err(|_| {
                tracing::error!(
                    "cm: a device address of {} bytes",
                    self.device_address.len()
                );
                Status::InvalidParam
            })?;
            payload.push(address_len);
            payload.extend_from_slice(&self.device_address);
            payload.extend_from_slice(&self.private_data);
        }
        let payload_len = u32::try_from(payload.len()).map_err(|_| Status::ExceedsLimit)?;
        let mut bytes = Vec::with_capacity(HEADER_LEN + payload.len());
        bytes.extend_from_slice(&MAGIC);
        bytes.push(VERSION);
        bytes.push(self.kind as u8);
        bytes.extend_from_slice(&payload_len.to_be_bytes());
        bytes.extend_from_slice(&payload);
        Ok(bytes)
    }
}

/// Collects received bytes into messages.
#[derive(Debug)]
pub struct FrameReader {
    buffer: Vec<u8>,
    max_payload: usize,
}

impl FrameReader {
    /// A reader refusing payloads over `max_payload` bytes.
    pub fn new(max_payload: usize) -> FrameReader {
        FrameReader {
            buffer: Vec::new(),
            max_payload,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// Bytes received that are not part of a whole message yet.
    pub fn pending(&self) -> usize {
        self.buffer.len()
    }

    /// The next whole message, `None` while it is incomplete, or
    /// `ConnectionReset` (with a log line) for bytes that are not ours.
    pub fn next_message(&mut self) -> Result<Option<Message>, Status> {
        let Some(header) = self.buffer.get(..HEADER_LEN) else {
            // Reject a foreign magic as soon as its bytes are in.
            let seen = self.buffer.len().min(MAGIC.len());
            if self.buffer[..seen] != MAGIC[..seen] {
                return Err(protocol_error("not a connection manager message"));
            }
            return Ok(None);
        };
        if header[..2] != MAGIC {
            return Err(protocol_error("not a connection manager message"));
        }
        if header[2] != VERSION {
            return Err(protocol_error("unknown protocol version"));
        }
        let kind = Kind::from_byte(header[3]).ok_or_else(|| protocol_error("unknown kind"))?;
        let payload_len = u32::from_be_bytes([header[4], header[5], header[6], header[7]]) as usize;
        if payload_len > self.max_payload || (!kind.carries_data() && payload_len != 0) {
            return Err(protocol_error("payload length out of range"));
        }
        if self.buffer.len() < HEADER_LEN + payload_len {
            return Ok(None);
        }
        let payload: Vec<u8> = self
            .buffer
            .drain(..HEADER_LEN + payload_len)
            .skip(HEADER_LEN)
            .collect();
        if !kind.carries_data() {
            return Ok(Some(Message::signal(kind)));
        }
        let (&address_len, rest) = payload
            .split_first()
            .ok_or_else(|| protocol_error("no device address"))?;
        let address_len = usize::from(address_len);
        if address_len > rest.len() {
            return Err(protocol_error("device address longer than the message"));
        }
        Ok(Some(Message {
            kind,
            device_address: rest[..address_len].to_vec(),
            private_data: rest[address_len..].to_vec(),
        }))
    }
}

#[cold]
fn protocol_error(what: &str) -> Status {
    tracing::warn!("cm: protocol error from the peer: {what}");
    Status::ConnectionReset
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Message {
        Message {
            kind: Kind::Request,
            device_address: vec![1, 127, 0, 0, 1, 0x12, 0x34],
            private_data: b"ucp address".to_vec(),
        }
    }

    #[test]
    fn messages_survive_byte_by_byte_delivery() {
        let mut bytes = request().encode().unwrap();
        bytes.extend(Message::signal(Kind::Notify).encode().unwrap());
        let mut reader = FrameReader::new(1024);
        let mut got = Vec::new();
        for byte in bytes {
            reader.push(&[byte]);
            while let Some(message) = reader.next_message().unwrap() {
                got.push(message);
            }
        }
        assert_eq!(got, [request(), Message::signal(Kind::Notify)]);
        assert_eq!(reader.pending(), 0);
    }

    #[test]
    fn foreign_bytes_are_refused() {
        let valid = request().encode().unwrap();
        let corrupt = |at: usize, value: u8| {
            let mut bytes = valid.clone();
            bytes[at] = value;
            bytes
        };
        let too_long = {
            let mut bytes = valid.clone();
            bytes[4..8].copy_from_slice(&5000u32.to_be_bytes());
            bytes
        };
        // A request whose address length (9) runs past its 1-byte payload.
        let address_overflow = b"CM\x01\x01\0\0\0\x01\x09".to_vec();
        let signal_with_payload = {
            let mut bytes = Message::signal(Kind::Reject).encode().unwrap();
            bytes[4..8].copy_from_slice(&1u32.to_be_bytes());
            bytes.push(0);
            bytes
        };
        for bytes in [
            b"GET / HTTP/1.1\r\n".to_vec(),
            corrupt(2, 9),
            corrupt(3, 0),
            corrupt(3, 77),
            too_long,
            address_overflow,
            signal_with_payload,
        ] {
            let mut reader = FrameReader::new(1024);
            reader.push(&bytes);
            assert_eq!(
                reader.next_message(),
                Err(Status::ConnectionReset),
                "{bytes:?}"
            );
        }
        let mut reader = FrameReader::new(1024);
        reader.push(b"X");
        assert_eq!(reader.next_message(), Err(Status::ConnectionReset));
    }
}
