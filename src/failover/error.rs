//! Why a token or a purge request was refused. Every variant says what was
//! wrong in words a log line can carry; [`FailoverError::status`] is what the
//! C entry point returns.

use std::fmt;

use crate::abi::Status;

/// Which of the two token formats a buffer claims to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    /// Written by the sender (`uct_ep_query`), names the connection.
    Tx,
    /// Written by the receiver (`uct_iface_query_v2`), adds `next_rcv_psn`.
    Rx,
}

impl fmt::Display for TokenKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TokenKind::Tx => "TX",
            TokenKind::Rx => "RX",
        })
    }
}

/// A refused token, RX-token derivation or purge classification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailoverError {
    /// Fewer bytes than the format needs.
    Truncated {
        kind: TokenKind,
        length: usize,
        needed: usize,
    },
    /// The first four bytes are no token magic at all: garbage.
    BadMagic {
        kind: TokenKind,
        found: u32,
    },
    /// A token of the other kind (a TX token where an RX token belongs, or
    /// the reverse).
    WrongKind {
        expected: TokenKind,
    },
    UnsupportedVersion {
        kind: TokenKind,
        found: u8,
    },
    /// The length the token states is not the length of its format.
    BadLength {
        kind: TokenKind,
        found: u16,
        expected: u16,
    },
    ReservedNotZero {
        kind: TokenKind,
        found: u8,
    },
    /// The checksum over the token does not match its contents.
    BadChecksum {
        kind: TokenKind,
        found: u32,
        computed: u32,
    },
    /// A 24-bit field (QPN, PSN) with bits above 24 set.
    FieldOutOfRange {
        field: &'static str,
        value: u32,
    },
    /// The token names another connection than the one it is applied to
    /// (another QP, a destroyed and recreated QP, another device).
    ConnectionMismatch {
        field: &'static str,
        ours: String,
        token: String,
    },
    /// The receiving iface has no QP the TX token names.
    UnknownConnection {
        responder_qpn: u32,
    },
    /// An output buffer shorter than the token.
    OutputTooSmall {
        length: usize,
        needed: usize,
    },
    /// The RX token's `next_rcv_psn` is outside the PSNs this ep can have
    /// sent and not had acknowledged: a stale token, or one of another QP.
    RxPsnOutsideWindow {
        rx_next_psn: u32,
        low: u32,
        high: u32,
    },
    /// The transport's own op list is inconsistent (PSN gaps, a data op
    /// without packets): a bug, not the caller's fault.
    InconsistentOps {
        index: usize,
        reason: String,
    },
}

impl FailoverError {
    /// The `ucs_status_t` the C entry point reports: the caller's input is
    /// wrong (`InvalidParam`), or our bookkeeping is (`IoError`).
    pub fn status(&self) -> Status {
        match self {
            FailoverError::InconsistentOps { .. } => Status::IoError,
            _ => Status::InvalidParam,
        }
    }
}

impl From<FailoverError> for Status {
    fn from(error: FailoverError) -> Status {
        error.status()
    }
}

impl fmt::Display for FailoverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailoverError::Truncated {
                kind,
                length,
                needed,
            } => write!(f, "{kind} token truncated: {length} bytes, {needed} needed"),
            FailoverError::BadMagic { kind, found } => {
                write!(f, "not a {kind} token: magic 0x{found:08x}")
            }
            FailoverError::WrongKind { expected } => {
                let other = match expected {
                    TokenKind::Tx => TokenKind::Rx,
                    TokenKind::Rx => TokenKind::Tx,
                };
                write!(f, "{other} token given where a {expected} token belongs")
            }
            FailoverError::UnsupportedVersion { kind, found } => {
                write!(f, "{kind} token version {found} not supported")
            }
            FailoverError::BadLength {
                kind,
                found,
                expected,
            } => write!(
                f,
                "{kind} token states length {found}, its format has {expected}"
            ),
            FailoverError::ReservedNotZero { kind, found } => {
                write!(f, "{kind} token reserved byte is 0x{found:02x}, not 0")
            }
            FailoverError::BadChecksum {
                kind,
                found,
                computed,
            } => write!(
                f,
                "{kind} token checksum 0x{found:08x} does not match its contents (0x{computed:08x})"
            ),
            FailoverError::FieldOutOfRange { field, value } => {
                write!(f, "token field {field} = 0x{value:x} exceeds 24 bits")
            }
            FailoverError::ConnectionMismatch { field, ours, token } => write!(
                f,
                "token is for another connection: {field} is {token}, this connection has {ours}"
            ),
            FailoverError::UnknownConnection { responder_qpn } => {
                write!(
                    f,
                    "TX token names QP 0x{responder_qpn:x}, which this iface does not have"
                )
            }
            FailoverError::OutputTooSmall { length, needed } => {
                write!(f, "token buffer of {length} bytes, {needed} needed")
            }
            FailoverError::RxPsnOutsideWindow {
                rx_next_psn,
                low,
                high,
            } => write!(
                f,
                "RX token next_rcv_psn 0x{rx_next_psn:06x} outside the unacknowledged window \
                 [0x{low:06x}, 0x{high:06x}]: stale or foreign token"
            ),
            FailoverError::InconsistentOps { index, reason } => {
                write!(f, "outstanding op {index}: {reason}")
            }
        }
    }
}

impl std::error::Error for FailoverError {}
