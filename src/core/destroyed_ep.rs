//! What a call on a destroyed endpoint answers ([`DESTROYED_EP_STATUS`])
//! and the rate-limited line it logs: every slot of the tombstones' dead
//! iface ([`crate::core::tombstone`], its table from
//! [`crate::core::ops::dead_iface_ops`]) and the C boundary's handle
//! checks end here.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use crate::abi::*;

/// What every operation on a destroyed endpoint returns: the handle no
/// longer names an endpoint, which is an invalid argument (the closest
/// UCX status; UCX itself has none for "destroyed", and using a destroyed
/// ep is undefined there). It is also what an unknown handle has always
/// got from our handle checks, and it differs from every status a live ep
/// returns for a transport failure (`UCS_ERR_ENDPOINT_TIMEOUT`,
/// `UCS_ERR_CANCELED`, ...), so callers can tell a bug from a failure.
pub const DESTROYED_EP_STATUS: Status = Status::InvalidParam;

/// At most one log line per this many milliseconds about destroyed
/// endpoints (a caller retrying in a loop would flood the log otherwise).
const LOG_INTERVAL_MS: u64 = 1000;

/// Called by every slot of the dead iface: logs (rate-limited) that
/// `operation` was called on a destroyed endpoint and returns
/// [`DESTROYED_EP_STATUS`]. `handle` is the slot's first argument (the ep,
/// or for iface slots the dead iface itself), only printed.
#[cold]
#[inline(never)]
pub fn destroyed_ep_call(operation: &str, handle: *const c_void) -> Status {
    static GATE: LogGate = LogGate::new();
    let status = DESTROYED_EP_STATUS;
    if let Some(held_back) = GATE.admit(log_clock_ms()) {
        if held_back == 0 {
            tracing::warn!(
                "{operation}: {handle:p} is a destroyed endpoint: {status}, nothing done"
            );
        } else {
            tracing::warn!(
                "{operation}: {handle:p} is a destroyed endpoint: {status}, nothing done \
                 ({held_back} more such calls not logged)"
            );
        }
    }
    status
}

/// Lets one line through per interval and counts the ones held back.
struct LogGate {
    /// Milliseconds (since [`log_clock_ms`]'s start) before which nothing
    /// is logged.
    next_ms: AtomicU64,
    suppressed: AtomicU64,
}

impl LogGate {
    const fn new() -> LogGate {
        LogGate {
            next_ms: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    /// `Some(lines held back since the last one)` if a line may be logged
    /// at `now_ms`, else `None` (and the line is counted as held back).
    fn admit(&self, now_ms: u64) -> Option<u64> {
        let next = self.next_ms.load(Ordering::Relaxed);
        if now_ms >= next
            && self
                .next_ms
                .compare_exchange(
                    next,
                    now_ms + LOG_INTERVAL_MS,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            return Some(self.suppressed.swap(0, Ordering::Relaxed));
        }
        self.suppressed.fetch_add(1, Ordering::Relaxed);
        None
    }
}

fn log_clock_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_gate_admits_one_line_per_interval() {
        let gate = LogGate::new();
        assert_eq!(gate.admit(5), Some(0));
        assert_eq!(gate.admit(6), None);
        assert_eq!(gate.admit(5 + LOG_INTERVAL_MS - 1), None);
        assert_eq!(gate.admit(5 + LOG_INTERVAL_MS), Some(2));
        assert_eq!(gate.admit(5 + LOG_INTERVAL_MS), None);
    }
}
