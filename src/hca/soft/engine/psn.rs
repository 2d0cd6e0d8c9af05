//! 24-bit packet sequence number arithmetic, modulo 2^24.

/// PSNs, QPNs and MSNs are 24-bit fields.
pub const PSN_MASK: u32 = 0x00ff_ffff;

/// `psn + n` modulo 2^24.
#[inline]
pub fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

/// `psn - 1` modulo 2^24.
#[inline]
pub fn psn_prev(psn: u32) -> u32 {
    psn.wrapping_sub(1) & PSN_MASK
}

/// Signed distance `a - b` in the 24-bit circle, in `-2^23 ..= 2^23 - 1`:
/// positive when `a` is ahead of `b`.
#[inline]
pub fn psn_diff(a: u32, b: u32) -> i32 {
    // Shift the 24-bit difference into the top of an i32 and back, which
    // sign-extends bit 23.
    ((a.wrapping_sub(b) << 8) as i32) >> 8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps() {
        assert_eq!(psn_add(PSN_MASK, 1), 0);
        assert_eq!(psn_add(PSN_MASK - 1, 5), 3);
        assert_eq!(psn_prev(0), PSN_MASK);
        assert_eq!(psn_diff(2, PSN_MASK), 3);
        assert_eq!(psn_diff(PSN_MASK, 2), -3);
        assert_eq!(psn_diff(7, 7), 0);
        assert_eq!(psn_diff(0x80_0000, 0), -0x80_0000);
        assert_eq!(psn_diff(0x7f_ffff, 0), 0x7f_ffff);
    }
}
