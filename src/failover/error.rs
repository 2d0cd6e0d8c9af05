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

impl TokenKind {
    /// The other format.
    pub fn other(self) -> TokenKind {
        match self {
            TokenKind::Tx => TokenKind::Rx,
            TokenKind::Rx => TokenKind::Tx,
        }
    }
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
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FailoverError {
    /// Fewer bytes than the format needs.
    #[error("{kind} token truncated: {length} bytes, {needed} needed")]
    Truncated {
        kind: TokenKind,
        length: usize,
        needed: usize,
    },
    /// The first four bytes are no token magic at all: garbage.
    #[error("not a {kind} token: magic 0x{found:08x}")]
    BadMagic { kind: TokenKind, found: u32 },
    /// A token of the other kind (a TX token where an RX token belongs, or
    /// the reverse).
    #[error("{} token given where a {expected} token belongs", expected.other())]
    WrongKind { expected: TokenKind },
    #[error("{kind} token version {found} not supported")]
    UnsupportedVersion { kind: TokenKind, found: u8 },
    /// The length the token states is not the length of its format.
    #[error("{kind} token states length {found}, its format has {expected}")]
    BadLength {
        kind: TokenKind,
        found: u16,
        expected: u16,
    },
    #[error("{kind} token reserved byte is 0x{found:02x}, not 0")]
    ReservedNotZero { kind: TokenKind, found: u8 },
    /// The checksum over the token does not match its contents.
    #[error("{kind} token checksum 0x{found:08x} does not match its contents (0x{computed:08x})")]
    BadChecksum {
        kind: TokenKind,
        found: u32,
        computed: u32,
    },
    /// A 24-bit field (QPN, PSN) with bits above 24 set.
    #[error("token field {field} = 0x{value:x} exceeds 24 bits")]
    FieldOutOfRange { field: &'static str, value: u32 },
    /// The token names another connection than the one it is applied to
    /// (another QP, a destroyed and recreated QP, another device).
    #[error("token is for another connection: {field} is {token}, this connection has {ours}")]
    ConnectionMismatch {
        field: &'static str,
        ours: String,
        token: String,
    },
    /// The receiving iface has no QP the TX token names.
    #[error("TX token names QP 0x{responder_qpn:x}, which this iface does not have")]
    UnknownConnection { responder_qpn: u32 },
    /// An output buffer shorter than the token.
    #[error("token buffer of {length} bytes, {needed} needed")]
    OutputTooSmall { length: usize, needed: usize },
    /// The RX token's `next_rcv_psn` is outside the PSNs this ep can have
    /// sent and not had acknowledged: a stale token, or one of another QP.
    #[error(
        "RX token next_rcv_psn 0x{rx_next_psn:06x} outside the unacknowledged window \
         [0x{low:06x}, 0x{high:06x}]: stale or foreign token"
    )]
    RxPsnOutsideWindow {
        rx_next_psn: u32,
        low: u32,
        high: u32,
    },
    /// The transport's own op list is inconsistent (PSN gaps, a data op
    /// without packets): a bug, not the caller's fault.
    #[error("outstanding op {index}: {reason}")]
    InconsistentOps { index: usize, reason: String },
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
