//! Virtual time for the engine, and the IB encodings of its timers.
//!
//! The engine never reads a clock: every entry point takes `now`, so tests run
//! on simulated time and the device maps its monotonic clock onto [`Instant`].

use std::ops::Add;
use std::time::Duration;

/// A point in (virtual) time: nanoseconds since an epoch the caller chooses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    nanos: u64,
}

impl Instant {
    pub const ZERO: Instant = Instant { nanos: 0 };

    #[inline]
    pub const fn from_nanos(nanos: u64) -> Instant {
        Instant { nanos }
    }

    #[inline]
    pub const fn from_micros(micros: u64) -> Instant {
        Instant {
            nanos: micros.saturating_mul(1_000),
        }
    }

    #[inline]
    pub const fn as_nanos(self) -> u64 {
        self.nanos
    }

    /// Time elapsed since `earlier`, zero if `earlier` is later.
    #[inline]
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.nanos.saturating_sub(earlier.nanos))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    /// Saturates at the end of time rather than overflowing.
    #[inline]
    fn add(self, d: Duration) -> Instant {
        let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Instant {
            nanos: self.nanos.saturating_add(d),
        }
    }
}

/// The local ACK timeout of a QP attribute `timeout` (5 bits): 4.096 µs ×
/// 2^timeout; 0 means "wait forever" (`None`). Values above 31 are clamped.
pub fn ack_timeout_from_ib(timeout: u8) -> Option<Duration> {
    if timeout == 0 {
        return None;
    }
    let exp = u32::from(timeout.min(31));
    Some(Duration::from_nanos(4_096u64 << exp))
}

/// The RNR NAK timer codes (IBTA vol. 1, table 45), in units of 10 µs.
/// Code 0 is the longest wait, 655.36 ms.
const RNR_TIMER_10US: [u32; 32] = [
    65_536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1_024,
    1_536, 2_048, 3_072, 4_096, 6_144, 8_192, 12_288, 16_384, 24_576, 32_768, 49_152,
];

/// How long a requester waits after an RNR NAK carrying timer `code` (5 bits;
/// higher bits are ignored).
pub fn rnr_timer_duration(code: u8) -> Duration {
    let ticks = RNR_TIMER_10US
        .get(usize::from(code & 0x1f))
        .copied()
        .unwrap_or(1);
    Duration::from_micros(u64::from(ticks) * 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ib_timeout_scale() {
        assert_eq!(ack_timeout_from_ib(0), None);
        assert_eq!(ack_timeout_from_ib(1), Some(Duration::from_nanos(8_192)));
        // 14 is UCX's default: 4.096 µs × 16384 ≈ 67 ms.
        assert_eq!(
            ack_timeout_from_ib(14),
            Some(Duration::from_nanos(67_108_864))
        );
        assert_eq!(ack_timeout_from_ib(200), ack_timeout_from_ib(31));
    }

    #[test]
    fn rnr_codes() {
        assert_eq!(rnr_timer_duration(0), Duration::from_micros(655_360));
        assert_eq!(rnr_timer_duration(1), Duration::from_micros(10));
        assert_eq!(rnr_timer_duration(12), Duration::from_micros(640));
        assert_eq!(rnr_timer_duration(31), Duration::from_micros(491_520));
        assert_eq!(rnr_timer_duration(0x20 | 1), Duration::from_micros(10));
    }

    #[test]
    fn instant_saturates() {
        let t = Instant::from_nanos(u64::MAX - 1) + Duration::from_secs(5);
        assert_eq!(t.as_nanos(), u64::MAX);
        assert_eq!(
            Instant::ZERO.saturating_duration_since(Instant::from_nanos(9)),
            Duration::ZERO
        );
    }
}
