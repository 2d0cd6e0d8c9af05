//! The engine's spelling of the 24-bit PSN arithmetic of [`mlx5::psn`]
//! (the one place it lives): "a minus b" reads better in the protocol code.

pub(super) use mlx5::psn::{psn_add, PSN_MASK};
use mlx5::psn::{psn_distance, psn_sub};

/// `psn - 1` modulo 2^24.
#[inline]
pub(super) fn psn_prev(psn: u32) -> u32 {
    psn_sub(psn, 1)
}

/// Signed distance `a - b` in the 24-bit circle: positive when `a` is after
/// `b`.
#[inline]
pub(super) fn psn_diff(a: u32, b: u32) -> i32 {
    psn_distance(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_as_a_minus_b() {
        assert_eq!(psn_diff(2, PSN_MASK), 3);
        assert_eq!(psn_diff(PSN_MASK, 2), -3);
        assert_eq!(psn_prev(0), PSN_MASK);
        assert_eq!(psn_add(PSN_MASK, 1), 0);
    }
}
