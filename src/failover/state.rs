//! An endpoint's failover state: the one place that says when outstanding
//! ops are kept instead of completed with errors, and when
//! `uct_ep_outstanding_purge` is allowed.
//!
//! - `uct_ep_failover_enable` arms it: a later transport error keeps the
//!   send queue (the iface error handler is still called, once).
//! - A transport error without it: the transport completes everything with
//!   the error, as UCT always did.
//! - `uct_ep_invalidate` with `NO_COMPLETIONS` keeps the queue whether or
//!   not failover was enabled; without the flag it is an ordinary error.
//! - Purge is allowed only while the queue is kept, and only once: after
//!   it the ep holds nothing and can only be destroyed.

use crate::abi::Status;

/// Why an ep's outstanding ops are being kept for purge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldReason {
    /// A transport error while failover was enabled.
    TransportError(Status),
    /// `uct_ep_invalidate(NO_COMPLETIONS)`.
    Invalidated,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    /// Working (or failed without failover): completions flow normally.
    #[default]
    Normal,
    /// Outstanding ops are kept; completions are suppressed.
    Holding(HoldReason),
    /// Purge ran: nothing outstanding any more.
    Purged,
}

/// What the transport does with its outstanding ops on a transport error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnError {
    /// Keep them for purge; suppress their completions.
    Keep,
    /// Complete them with the error (no failover).
    CompleteWithError,
}

/// Per-ep failover state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EpFailover {
    enabled: bool,
    phase: Phase,
}

impl EpFailover {
    /// `uct_ep_failover_enable`.
    pub fn enable(&mut self) {
        self.enabled = true;
    }

    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The transport saw an error on the ep (error CQE, retry exceeded).
    /// The first error decides; later ones keep what it decided.
    pub fn on_transport_error(&mut self, status: Status) -> OnError {
        match self.phase {
            Phase::Holding(_) => OnError::Keep,
            Phase::Normal if self.enabled => {
                self.phase = Phase::Holding(HoldReason::TransportError(status));
                OnError::Keep
            }
            Phase::Normal | Phase::Purged => OnError::CompleteWithError,
        }
    }

    /// `uct_ep_invalidate`; returns whether the outstanding ops are kept
    /// (`NO_COMPLETIONS`, or already held after an error).
    pub fn on_invalidate(&mut self, no_completions: bool) -> OnError {
        match self.phase {
            Phase::Holding(_) => OnError::Keep,
            Phase::Normal if no_completions => {
                self.phase = Phase::Holding(HoldReason::Invalidated);
                OnError::Keep
            }
            Phase::Normal | Phase::Purged => OnError::CompleteWithError,
        }
    }

    /// Whether completions of this ep's ops must be suppressed (the ops
    /// belong to the coming purge).
    pub fn is_holding(&self) -> bool {
        matches!(self.phase, Phase::Holding(_))
    }

    pub fn hold_reason(&self) -> Option<HoldReason> {
        match self.phase {
            Phase::Holding(reason) => Some(reason),
            _ => None,
        }
    }

    /// `Ok` when a purge may run now; otherwise `InvalidParam` with a log
    /// line saying why.
    pub fn check_purge(&self) -> Result<(), Status> {
        match self.phase {
            Phase::Holding(_) => Ok(()),
            Phase::Normal => {
                tracing::warn!(
                    "uct_ep_outstanding_purge: the ep has neither failed with failover enabled \
                     nor been invalidated with NO_COMPLETIONS"
                );
                Err(Status::InvalidParam)
            }
            Phase::Purged => {
                tracing::warn!("uct_ep_outstanding_purge: the ep was purged already");
                Err(Status::InvalidParam)
            }
        }
    }

    /// Purge finished: the ep holds nothing any more.
    pub fn purged(&mut self) {
        self.phase = Phase::Purged;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_without_failover_completes_and_forbids_purge() {
        let mut ep = EpFailover::default();
        assert_eq!(
            ep.on_transport_error(Status::EndpointTimeout),
            OnError::CompleteWithError
        );
        assert!(!ep.is_holding());
        assert_eq!(ep.check_purge(), Err(Status::InvalidParam));
    }

    #[test]
    fn error_with_failover_keeps_until_purged_once() {
        let mut ep = EpFailover::default();
        assert_eq!(ep.check_purge(), Err(Status::InvalidParam));
        ep.enable();
        assert_eq!(ep.check_purge(), Err(Status::InvalidParam));
        assert_eq!(
            ep.on_transport_error(Status::EndpointTimeout),
            OnError::Keep
        );
        assert_eq!(
            ep.hold_reason(),
            Some(HoldReason::TransportError(Status::EndpointTimeout))
        );
        // A second error (flushed WQEs) changes nothing.
        assert_eq!(ep.on_transport_error(Status::Canceled), OnError::Keep);
        assert_eq!(
            ep.hold_reason(),
            Some(HoldReason::TransportError(Status::EndpointTimeout))
        );
        assert!(ep.is_holding());
        assert_eq!(ep.check_purge(), Ok(()));
        ep.purged();
        assert!(!ep.is_holding());
        assert_eq!(ep.check_purge(), Err(Status::InvalidParam));
    }

    #[test]
    fn invalidate_keeps_only_with_no_completions() {
        let mut plain = EpFailover::default();
        assert_eq!(plain.on_invalidate(false), OnError::CompleteWithError);
        assert_eq!(plain.check_purge(), Err(Status::InvalidParam));

        let mut keep = EpFailover::default();
        assert_eq!(keep.on_invalidate(true), OnError::Keep);
        assert_eq!(keep.hold_reason(), Some(HoldReason::Invalidated));
        assert_eq!(keep.check_purge(), Ok(()));

        // Invalidating an ep already held after an error keeps holding.
        let mut failed = EpFailover::default();
        failed.enable();
        failed.on_transport_error(Status::IoError);
        assert_eq!(failed.on_invalidate(false), OnError::Keep);
        assert_eq!(failed.check_purge(), Ok(()));
    }
}
