//! An endpoint's failover state: the one place that says when outstanding
//! ops are kept instead of completed with errors, and when
//! `uct_ep_outstanding_purge` runs.
//!
//! Ops are held for purge (phase `Holding`) in three ways, all one
//! mechanism:
//! - `uct_ep_failover_enable` armed the ep before a transport error
//!   (PR 11582/11810's API);
//! - the iface error handler returned `UCS_INPROGRESS` for the failure, on
//!   an iface that advertises `UCT_IFACE_FLAG_V2_QUERY_TOKEN` (UCX master,
//!   11823/11829/11849);
//! - `uct_ep_invalidate` with `NO_COMPLETIONS`.
//!
//! Otherwise a transport error (or a plain `uct_ep_invalidate`, which fails
//! the ep the same way) completes every op with the error, as UCT always
//! did. The error handler is called once per failure either way.
//!
//! Purge empties the held queue. A later purge, or one with nothing held
//! since, answers `UCS_OK` and calls nothing (upstream treats anything else
//! as a bug). After a purge the ep may be destroyed, or reconnected with
//! `uct_ep_connect_to_ep` ([`EpFailover::reconnected`]) and used again.

use crate::abi::{ucs_status_t, Status, UCS_INPROGRESS};

/// Why an ep's outstanding ops are being kept for purge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldReason {
    /// A transport error while failover was enabled.
    TransportError(Status),
    /// The error handler answered `UCS_INPROGRESS` for this failure.
    ErrorHandler(Status),
    /// `uct_ep_invalidate(NO_COMPLETIONS)`.
    Invalidated,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    /// Working (or failed without holding): completions flow normally.
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
    /// Complete them with the error (nothing holds them).
    CompleteWithError,
    /// Not decided before the error handler has answered: call
    /// [`EpFailover::on_handler_result`] with its return value.
    AskHandler,
}

/// What `uct_ep_outstanding_purge` does now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PurgeStep {
    /// Ops are held: purge them.
    Run,
    /// Purged already, nothing held since: `UCS_OK`, no callback.
    NothingLeft,
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

    /// The transport saw an error on the ep (error CQE, retry exceeded,
    /// flushed WQEs after `uct_ep_invalidate`). Held ops stay held; an
    /// enabled ep starts holding; otherwise the error handler decides.
    pub fn on_transport_error(&mut self, status: Status) -> OnError {
        match self.phase {
            Phase::Holding(_) => OnError::Keep,
            Phase::Normal if self.enabled => {
                self.phase = Phase::Holding(HoldReason::TransportError(status));
                OnError::Keep
            }
            Phase::Normal | Phase::Purged => OnError::AskHandler,
        }
    }

    /// The error handler answered `result` for a failure with `status`
    /// after [`OnError::AskHandler`]. `UCS_INPROGRESS` holds the ops when
    /// the iface advertises token queries (without tokens no purge could
    /// ever take them); any other answer completes them with the error. The
    /// handler may also have held (invalidate with `NO_COMPLETIONS`) or
    /// purged them itself: that stands.
    pub fn on_handler_result(
        &mut self,
        status: Status,
        result: ucs_status_t,
        iface_has_tokens: bool,
    ) -> OnError {
        match self.phase {
            Phase::Holding(_) => OnError::Keep,
            _ if result == UCS_INPROGRESS && iface_has_tokens => {
                self.phase = Phase::Holding(HoldReason::ErrorHandler(status));
                OnError::Keep
            }
            _ => {
                if result == UCS_INPROGRESS {
                    tracing::warn!(
                        "error handler returned UCS_INPROGRESS on an iface without \
                         UCT_IFACE_FLAG_V2_QUERY_TOKEN: the ops complete with {status}"
                    );
                }
                OnError::CompleteWithError
            }
        }
    }

    /// `uct_ep_invalidate`: with `NO_COMPLETIONS` (or already held, or
    /// failover enabled) the ops are kept; without, the ep fails as on a
    /// transport error ([`OnError::AskHandler`] when its error arrives).
    pub fn on_invalidate(&mut self, no_completions: bool) -> OnError {
        match self.phase {
            Phase::Holding(_) => OnError::Keep,
            _ if no_completions || self.enabled => {
                self.phase = Phase::Holding(HoldReason::Invalidated);
                OnError::Keep
            }
            _ => OnError::AskHandler,
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

    /// What a purge does now, given how many ops the ep still has
    /// outstanding. Nothing left (purged before, or nothing held and nothing
    /// outstanding, e.g. every op already completed with the failure's
    /// error): `NothingLeft`, so the purge answers `UCS_OK` and calls
    /// nothing. Ops outstanding that nothing holds (they complete on their
    /// own): `InvalidParam` with a log line.
    pub fn check_purge(&self, outstanding_ops: usize) -> Result<PurgeStep, Status> {
        match self.phase {
            Phase::Holding(_) => Ok(PurgeStep::Run),
            Phase::Purged => {
                tracing::debug!("uct_ep_outstanding_purge: nothing left to purge");
                Ok(PurgeStep::NothingLeft)
            }
            Phase::Normal if outstanding_ops == 0 => {
                tracing::debug!("uct_ep_outstanding_purge: no outstanding ops, nothing to purge");
                Ok(PurgeStep::NothingLeft)
            }
            Phase::Normal => {
                tracing::warn!(
                    "uct_ep_outstanding_purge: nothing holds the ep's ops (no failure with \
                     failover enabled, no error handler answering UCS_INPROGRESS, no \
                     invalidate with NO_COMPLETIONS)"
                );
                Err(Status::InvalidParam)
            }
        }
    }

    /// Purge finished: the ep holds nothing any more.
    pub fn purged(&mut self) {
        self.phase = Phase::Purged;
    }

    /// The ep was connected again (`uct_ep_connect_to_ep` after a purge):
    /// a new connection, nothing held. `failover_enable` stays armed.
    pub fn reconnected(&mut self) {
        self.phase = Phase::Normal;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{UCS_ERR_CANCELED, UCS_OK};

    /// A first transport error on an ep not holding asks the handler; what
    /// its `answer` makes of the ops.
    fn ask_handler(
        ep: &mut EpFailover,
        error: Status,
        answer: ucs_status_t,
        tokens: bool,
    ) -> OnError {
        assert_eq!(ep.on_transport_error(error), OnError::AskHandler);
        ep.on_handler_result(error, answer, tokens)
    }

    #[test]
    fn error_without_holding_asks_the_handler() {
        // Every answer but INPROGRESS with tokens completes the ops: OK, an
        // error status, INPROGRESS from a caller that has no tokens.
        for (error, answer, tokens) in [
            (Status::EndpointTimeout, UCS_OK, true),
            (Status::Canceled, UCS_INPROGRESS, false),
            (Status::Canceled, UCS_ERR_CANCELED, true),
        ] {
            let mut ep = EpFailover::default();
            assert_eq!(
                ask_handler(&mut ep, error, answer, tokens),
                OnError::CompleteWithError,
                "{error:?} answered {answer} (tokens {tokens})"
            );
            assert!(!ep.is_holding());
            assert_eq!(ep.check_purge(1), Err(Status::InvalidParam));
            assert_eq!(ep.check_purge(0), Ok(PurgeStep::NothingLeft));
        }
    }

    #[test]
    fn handler_inprogress_holds_only_with_tokens() {
        let mut ep = EpFailover::default();
        assert_eq!(
            ask_handler(&mut ep, Status::Canceled, UCS_INPROGRESS, true),
            OnError::Keep
        );
        assert_eq!(
            ep.hold_reason(),
            Some(HoldReason::ErrorHandler(Status::Canceled))
        );
        // Later errors (the flushed WQEs) keep holding without asking again.
        assert_eq!(ep.on_transport_error(Status::Canceled), OnError::Keep);
        assert_eq!(ep.check_purge(1), Ok(PurgeStep::Run));
    }

    #[test]
    fn handler_that_invalidated_or_purged_itself_stands() {
        let mut ep = EpFailover::default();
        ep.on_transport_error(Status::Canceled);
        // Inside the handler: invalidate(NO_COMPLETIONS), then purge.
        assert_eq!(ep.on_invalidate(true), OnError::Keep);
        assert_eq!(
            ep.on_handler_result(Status::Canceled, UCS_OK, true),
            OnError::Keep
        );
        ep.purged();
        assert_eq!(
            ep.on_handler_result(Status::Canceled, UCS_OK, true),
            OnError::CompleteWithError,
            "an empty table: nothing is left to complete"
        );
    }

    #[test]
    fn enabled_ep_holds_on_error_until_purged_then_purge_is_a_no_op() {
        let mut ep = EpFailover::default();
        assert_eq!(ep.check_purge(1), Err(Status::InvalidParam));
        ep.enable();
        assert_eq!(ep.check_purge(1), Err(Status::InvalidParam));
        assert_eq!(ep.check_purge(0), Ok(PurgeStep::NothingLeft));
        assert_eq!(
            ep.on_transport_error(Status::EndpointTimeout),
            OnError::Keep
        );
        assert_eq!(
            ep.hold_reason(),
            Some(HoldReason::TransportError(Status::EndpointTimeout))
        );
        assert_eq!(ep.on_transport_error(Status::Canceled), OnError::Keep);
        assert_eq!(
            ep.hold_reason(),
            Some(HoldReason::TransportError(Status::EndpointTimeout))
        );
        assert_eq!(ep.check_purge(2), Ok(PurgeStep::Run));
        ep.purged();
        assert!(!ep.is_holding());
        assert_eq!(ep.check_purge(0), Ok(PurgeStep::NothingLeft));
        assert_eq!(ep.check_purge(0), Ok(PurgeStep::NothingLeft));
        // Reconnected: a new connection, still armed.
        ep.reconnected();
        assert_eq!(ep.check_purge(1), Err(Status::InvalidParam));
        assert_eq!(ep.on_transport_error(Status::IoError), OnError::Keep);
    }

    #[test]
    fn invalidate_holds_with_no_completions_or_failover_enabled() {
        let mut plain = EpFailover::default();
        assert_eq!(plain.on_invalidate(false), OnError::AskHandler);
        assert_eq!(plain.check_purge(1), Err(Status::InvalidParam));

        let mut keep = EpFailover::default();
        assert_eq!(keep.on_invalidate(true), OnError::Keep);
        assert_eq!(keep.hold_reason(), Some(HoldReason::Invalidated));
        assert_eq!(keep.check_purge(1), Ok(PurgeStep::Run));

        let mut enabled = EpFailover::default();
        enabled.enable();
        assert_eq!(enabled.on_invalidate(false), OnError::Keep);

        // Invalidating an ep already held after an error keeps holding.
        let mut failed = EpFailover::default();
        failed.enable();
        failed.on_transport_error(Status::IoError);
        assert_eq!(failed.on_invalidate(false), OnError::Keep);
        assert_eq!(
            failed.hold_reason(),
            Some(HoldReason::TransportError(Status::IoError))
        );
    }
}
