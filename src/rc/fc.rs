//! Flow control of active messages, the protocol of UCX's rc transports, so
//! that a sender does not run a peer's receive queue dry (which would cost
//! RNR NAKs and the RNR back-off timer).
//!
//! # The protocol
//!
//! Each ep may send `wnd_size` AMs (`UCX_RC_FC_WND_SIZE`, at most the
//! receive queue length) before it needs a grant from the peer. The top
//! three bits of the AM id byte of the AM header (the AM id takes the low
//! five, as `UCT_AM_ID_MAX` is 32; see `rc::iface::AM_HDR_LEN`) carry the
//! protocol:
//!
//! - [`FC_SOFT_REQ`]: sent on the AM that brings the window down to the
//!   soft threshold. The peer owes a grant and piggybacks it on its next AM
//!   to us, if it sends one.
//! - [`FC_HARD_REQ`]: sent at the hard threshold. The peer sends a grant at
//!   once, as a message of its own ([`FC_PURE_GRANT`]).
//! - [`FC_GRANT`]: set on any AM (with or without a request bit): the
//!   receiver of it resets its window to `wnd_size`.
//! - [`FC_PURE_GRANT`] (all three bits, AM id 0, no payload): the grant
//!   message. It is the transport's own: no AM handler sees it, it has no
//!   user completion, and failover purge drops it without reporting it.
//!
//! With the window at 0, AM ops return `UCS_ERR_NO_RESOURCE` and
//! `uct_ep_pending_add` accepts; pending requests of the ep wait for the
//! grant (for all ops, as UCX does, so that ordering holds). The grant is a
//! receive: a caller that retries on `UCS_ERR_NO_RESOURCE` must progress
//! the worker in between (flushing an ep with nothing outstanding does not),
//! as with UCX. The window is
//! not exact credit accounting (grants answer requests, and the receive
//! queue is shared by every ep of the iface): it keeps the sender from
//! running far ahead of the receiver. With `UCX_RC_FC_ENABLE=n` the window
//! is never checked; requests from a peer are still answered, so a peer
//! that uses flow control never waits for nothing.
//!
//! # Input from the peer
//!
//! The header byte comes from the network. A grant that no request of ours
//! asked for, a grant for an ep that failed or is gone, a grant message with
//! a payload or an AM id, and a header with both request bits are logged
//! and ignored; nothing a peer sends makes the window larger than
//! `wnd_size` or panics.

use crate::rc::config::RcMlx5IfaceConfig;

/// Bits of the AM header byte that carry the AM id (`UCT_AM_ID_BITS` = 5).
pub const AM_ID_MASK: u8 = 0x1f;
/// Soft credit request: grant on your next AM to me.
pub const FC_SOFT_REQ: u8 = 1 << 5;
/// Hard credit request: send a grant now.
pub const FC_HARD_REQ: u8 = 1 << 6;
/// Credit grant: reset your window.
pub const FC_GRANT: u8 = 1 << 7;
/// The grant message (all protocol bits; not an AM of the user).
pub const FC_PURE_GRANT: u8 = FC_SOFT_REQ | FC_HARD_REQ | FC_GRANT;
/// All protocol bits.
pub const FC_MASK: u8 = FC_PURE_GRANT;

/// The iface's flow-control settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FcConfig {
    enabled: bool,
    /// AMs an ep may send per grant.
    wnd_size: i16,
    /// Window left when the hard request is sent (at least 1).
    hard_thresh: i16,
    /// Window left when the soft request is sent (0 when disabled: the
    /// slow path then only refills the window).
    soft_thresh: i16,
}

impl FcConfig {
    /// The settings of `config` for an iface whose receive queue holds
    /// `rx_queue_len` buffers (the window never exceeds it). The thresholds
    /// were range-checked when the configuration was read.
    pub fn new(config: &RcMlx5IfaceConfig, rx_queue_len: u32) -> FcConfig {
        if !config.fc_enable {
            return FcConfig {
                enabled: false,
                wnd_size: i16::MAX,
                hard_thresh: 0,
                soft_thresh: 0,
            };
        }
        let wnd_size = config
            .fc_wnd_size
            .min(rx_queue_len)
            .clamp(1, i16::MAX as u32) as i16;
        let fraction = |f: f64| ((f64::from(wnd_size) * f) as i16).max(1);
        let hard_thresh = fraction(config.fc_hard_thresh);
        // The soft request must come first to mean anything; with a tiny
        // window both may fall on the same count, and then the hard one
        // wins (it is the one that guarantees a grant).
        let soft_thresh = fraction(config.fc_soft_thresh).max(hard_thresh);
        FcConfig {
            enabled: true,
            wnd_size,
            hard_thresh,
            soft_thresh,
        }
    }
}

/// What a received AM header asks of the receiving iface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxHeader {
    /// A user AM with this id; `grant`: it carries a grant for our ep;
    /// `request`: the peer asks for credits.
    Am {
        id: u8,
        grant: bool,
        request: Option<Request>,
    },
    /// The grant message.
    PureGrant,
    /// Not a valid header (logged by [`RxHeader::parse`]); drop the
    /// message.
    Malformed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    Soft,
    Hard,
}

impl RxHeader {
    /// Reads the header byte of a message of `payload_len` bytes after it.
    /// Only called when some protocol bit is set.
    #[cold]
    pub fn parse(byte: u8, payload_len: usize) -> RxHeader {
        let id = byte & AM_ID_MASK;
        let bits = byte & FC_MASK;
        if bits == FC_PURE_GRANT {
            if id != 0 || payload_len != 0 {
                tracing::warn!(
                    "rc_mlx5: dropped a flow-control grant with AM id {id} and {payload_len} payload bytes"
                );
                return RxHeader::Malformed;
            }
            return RxHeader::PureGrant;
        }
        let request = match (bits & FC_SOFT_REQ != 0, bits & FC_HARD_REQ != 0) {
            (false, false) => None,
            (true, false) => Some(Request::Soft),
            (false, true) => Some(Request::Hard),
            (true, true) => {
                // Only the grant message has both; as an AM header it is
                // not something a peer sends. The AM itself is delivered.
                tracing::warn!(
                    "rc_mlx5: AM id {id} with both credit request bits: flow-control bits ignored"
                );
                return RxHeader::Am {
                    id,
                    grant: false,
                    request: None,
                };
            }
        };
        RxHeader::Am {
            id,
            grant: bits & FC_GRANT != 0,
            request,
        }
    }
}

/// Read-only: the settings are fixed at open.
impl FcConfig {
    #[inline(always)]
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    #[inline(always)]
    pub fn wnd_size(&self) -> i16 {
        self.wnd_size
    }

    #[inline(always)]
    pub fn hard_thresh(&self) -> i16 {
        self.hard_thresh
    }

    #[inline(always)]
    pub fn soft_thresh(&self) -> i16 {
        self.soft_thresh
    }
}

/// An ep's flow-control state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpFc {
    /// AMs that may still be sent before a grant.
    wnd: i16,
    /// The window at or below which the next AM needs the slow path: the
    /// soft threshold, then (soft request sent) the hard one, then (hard
    /// request sent) 0. Kept in the ep so the fast path reads nothing of
    /// the iface, and so the slow path runs three times per window.
    mark: i16,
    /// [`FC_GRANT`] when the peer sent a soft request (our next AM carries
    /// it), else 0: kept as the header bits so posting just ORs it in.
    owed_bits: u8,
    /// The peer sent a hard request and the grant message could not be
    /// posted yet: progress posts it before any pending request.
    pure_grant_pending: bool,
    /// We asked for credits (set when a request is handed out) and no
    /// grant came back yet; a grant without this is unexpected and ignored.
    requested: bool,
}

impl EpFc {
    pub fn new(config: &FcConfig) -> EpFc {
        EpFc {
            wnd: config.wnd_size,
            mark: config.soft_thresh,
            owed_bits: 0,
            pure_grant_pending: false,
            requested: false,
        }
    }

    /// The protocol bits for the next AM, or `NoResource` when the window
    /// is exhausted. Call [`EpFc::sent`] once the AM is posted.
    #[inline(always)]
    pub fn am_bits(&mut self, config: &FcConfig) -> Result<u8, crate::abi::Status> {
        let mut bits = self.owed_bits;
        if self.wnd <= self.mark {
            bits |= self.at_mark(config)?;
        }
        Ok(bits)
    }

    /// The rare part of [`EpFc::am_bits`]: the window reached the mark.
    /// Changes nothing but the disabled refill: the mark moves only once
    /// the request is posted ([`EpFc::sent`]), so a refused post asks again.
    #[cold]
    #[inline(never)]
    fn at_mark(&mut self, config: &FcConfig) -> Result<u8, crate::abi::Status> {
        if !config.enabled {
            // Never checked: just keep the counter away from 0.
            self.wnd = i16::MAX;
            self.mark = 0;
            return Ok(0);
        }
        if self.wnd <= 0 {
            return Err(crate::abi::Status::NoResource);
        }
        Ok(if self.wnd <= config.hard_thresh {
            FC_HARD_REQ
        } else {
            FC_SOFT_REQ
        })
    }

    /// An AM with `bits` (from [`EpFc::am_bits`]) was posted.
    #[inline(always)]
    pub fn sent(&mut self, bits: u8, config: &FcConfig) {
        self.wnd -= 1;
        self.owed_bits = 0;
        if bits & (FC_SOFT_REQ | FC_HARD_REQ) != 0 {
            self.requested_sent(bits, config);
        }
    }

    /// A credit request went out: wait for the next mark (or for 0).
    #[cold]
    #[inline(never)]
    fn requested_sent(&mut self, bits: u8, config: &FcConfig) {
        self.requested = true;
        self.mark = if bits & FC_HARD_REQ != 0 {
            0
        } else {
            config.hard_thresh
        };
    }

    /// The peer sent a soft request: grant on our next AM.
    pub fn owe_grant(&mut self) {
        self.owed_bits = FC_GRANT;
    }

    pub fn grant_owed(&self) -> bool {
        self.owed_bits != 0
    }

    /// The peer sent a hard request and the grant message found no room:
    /// it is owed until [`EpFc::pure_grant_settled`].
    pub fn defer_pure_grant(&mut self) {
        self.pure_grant_pending = true;
    }

    /// A grant message is owed to a hard request.
    pub fn pure_grant_due(&self) -> bool {
        self.pure_grant_pending
    }

    /// The owed grant message went out (or cannot: the ep failed).
    pub fn pure_grant_settled(&mut self) {
        self.pure_grant_pending = false;
    }

    /// AMs that may still be sent before a grant.
    pub fn window(&self) -> i16 {
        self.wnd
    }

    /// A credit request is out and no grant came back yet.
    pub fn is_requested(&self) -> bool {
        self.requested
    }

    /// Whether ops may be posted as far as flow control goes (pending
    /// requests are held while the window is exhausted).
    #[inline]
    pub fn has_window(&self, config: &FcConfig) -> bool {
        self.wnd > 0 || !config.enabled
    }

    /// A grant arrived. Returns whether the window had been exhausted
    /// (pending requests of the ep get another chance then); a grant we
    /// did not ask for is ignored (`false`).
    pub fn granted(&mut self, config: &FcConfig) -> bool {
        if !self.requested {
            tracing::debug!(
                "rc_mlx5: ignored a flow-control grant no request asked for (window {})",
                self.wnd
            );
            return false;
        }
        let was_exhausted = self.wnd <= 0;
        self.requested = false;
        self.wnd = config.wnd_size;
        self.mark = config.soft_thresh;
        was_exhausted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(wnd: i16, hard: i16, soft: i16) -> FcConfig {
        FcConfig {
            enabled: true,
            wnd_size: wnd,
            hard_thresh: hard,
            soft_thresh: soft,
        }
    }

    #[test]
    fn requests_at_the_thresholds_then_no_resource() {
        let cfg = config(8, 2, 4);
        let mut fc = EpFc::new(&cfg);
        let mut seen = Vec::new();
        while let Ok(bits) = fc.am_bits(&cfg) {
            seen.push(bits);
            fc.sent(bits, &cfg);
        }
        assert_eq!(seen, vec![0, 0, 0, 0, FC_SOFT_REQ, 0, FC_HARD_REQ, 0]);
        assert_eq!(fc.wnd, 0);
        assert!(!fc.has_window(&cfg));
        assert!(fc.granted(&cfg));
        assert_eq!(fc.wnd, 8);
        // A second grant for the same requests is ignored.
        assert!(!fc.granted(&cfg));
        assert_eq!(fc.wnd, 8);
    }

    #[test]
    fn owed_grant_rides_on_the_next_am_only() {
        let cfg = config(8, 2, 4);
        let mut fc = EpFc::new(&cfg);
        fc.owe_grant();
        let bits = fc.am_bits(&cfg).unwrap();
        assert_eq!(bits, FC_GRANT);
        fc.sent(bits, &cfg);
        assert_eq!(fc.am_bits(&cfg).unwrap(), 0);
    }

    #[test]
    fn disabled_never_runs_out() {
        let cfg = FcConfig {
            enabled: false,
            wnd_size: i16::MAX,
            hard_thresh: 0,
            soft_thresh: 0,
        };
        let mut fc = EpFc::new(&cfg);
        fc.wnd = 1;
        for _ in 0..5 {
            let bits = fc.am_bits(&cfg).unwrap();
            assert_eq!(bits, 0);
            fc.sent(bits, &cfg);
        }
        assert!(fc.has_window(&cfg));
    }

    #[test]
    fn headers_from_the_wire() {
        assert_eq!(RxHeader::parse(FC_PURE_GRANT, 0), RxHeader::PureGrant);
        assert_eq!(RxHeader::parse(FC_PURE_GRANT, 3), RxHeader::Malformed);
        assert_eq!(RxHeader::parse(FC_PURE_GRANT | 1, 0), RxHeader::Malformed);
        assert_eq!(
            RxHeader::parse(FC_GRANT | FC_SOFT_REQ | 7, 10),
            RxHeader::Am {
                id: 7,
                grant: true,
                request: Some(Request::Soft)
            }
        );
        assert_eq!(
            RxHeader::parse(FC_HARD_REQ | 31, 0),
            RxHeader::Am {
                id: 31,
                grant: false,
                request: Some(Request::Hard)
            }
        );
        assert_eq!(
            RxHeader::parse(FC_SOFT_REQ | FC_HARD_REQ | 3, 1),
            RxHeader::Am {
                id: 3,
                grant: false,
                request: None
            }
        );
        // Every byte parses without panicking.
        for byte in 0..=255u8 {
            for len in [0, 1, 100] {
                let _ = RxHeader::parse(byte, len);
            }
        }
    }
}
