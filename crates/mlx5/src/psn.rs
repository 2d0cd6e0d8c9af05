//! 24-bit packet sequence numbers.
//!
//! PSNs count modulo 2^24. IBTA compares two PSNs inside a window of half the
//! space: `b` is after `a` when `(b - a) mod 2^24` is in `1..2^23`. These
//! helpers are the one place that arithmetic lives.

/// Mask of the 24 PSN bits.
pub const PSN_MASK: u32 = 0x00ff_ffff;
/// Number of distinct PSNs.
pub const PSN_SPACE: u32 = 1 << 24;
/// Half the PSN space: the largest distance that still has a direction.
pub const PSN_HALF: u32 = 1 << 23;

/// How a request occupies the PSN space: the one rule for counting its
/// packets, shared by the transport, failover and the soft HCA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketShape {
    /// SEND, RDMA WRITE, RDMA READ: one PSN per path-MTU packet of its data
    /// (a READ: per response packet), at least one.
    Data,
    /// An atomic: one request, one PSN.
    Atomic,
    /// A NOP: nothing on the wire.
    None,
}

/// PSNs a request of `shape` moving `length` bytes uses with a path MTU of
/// `mtu` bytes; saturates instead of wrapping for lengths no QP can post.
#[inline]
pub fn packet_count(shape: PacketShape, length: u64, mtu: u32) -> u32 {
    match shape {
        PacketShape::Data => {
            u32::try_from(length.div_ceil(u64::from(mtu.max(1))).max(1)).unwrap_or(u32::MAX)
        }
        PacketShape::Atomic => 1,
        PacketShape::None => 0,
    }
}

/// `psn + n`, modulo 2^24.
#[inline]
pub const fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

/// `psn - n`, modulo 2^24.
#[inline]
pub const fn psn_sub(psn: u32, n: u32) -> u32 {
    psn.wrapping_sub(n) & PSN_MASK
}

/// Signed distance from `from` to `to`, in `-2^23 .. 2^23`: positive when
/// `to` is after `from`.
#[inline]
pub const fn psn_distance(from: u32, to: u32) -> i32 {
    // Shift the 24-bit difference into the top of an i32 and back, which
    // sign-extends bit 23.
    ((to.wrapping_sub(from) << 8) as i32) >> 8
}

/// `a` comes strictly before `b`.
#[inline]
pub const fn psn_lt(a: u32, b: u32) -> bool {
    psn_distance(a, b) > 0
}

/// `a` comes before `b` or equals it.
#[inline]
pub const fn psn_le(a: u32, b: u32) -> bool {
    psn_distance(a, b) >= 0
}

/// `psn` lies in `[first, first + len)`, modulo 2^24 (`len <= 2^24`).
#[inline]
pub const fn psn_in_range(psn: u32, first: u32, len: u32) -> bool {
    (psn.wrapping_sub(first) & PSN_MASK) < len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_counts_never_divide_by_zero_nor_wrap() {
        // (The per-shape counts are checked through failover's
        // `packets_for`, which maps op classes onto this rule.)
        assert_eq!(packet_count(PacketShape::Data, 5, 0), 5);
        assert_eq!(packet_count(PacketShape::Data, u64::MAX, 1), u32::MAX);
        assert_eq!(packet_count(PacketShape::Atomic, u64::MAX, 0), 1);
    }

    #[test]
    fn add_and_sub_wrap_at_2_pow_24() {
        assert_eq!(psn_add(0xff_fffe, 1), 0xff_ffff);
        assert_eq!(psn_add(0xff_ffff, 1), 0);
        assert_eq!(psn_add(0xff_fff0, 0x20), 0x10);
        assert_eq!(psn_sub(0, 1), 0xff_ffff);
        assert_eq!(psn_sub(0x10, 0x20), 0xff_fff0);
        // Bits above 24 in the input never leak out.
        assert_eq!(psn_add(0x0100_0005, 1), 6);
    }

    #[test]
    fn distance_is_signed_across_the_wrap() {
        assert_eq!(psn_distance(0xff_fffe, 1), 3);
        assert_eq!(psn_distance(1, 0xff_fffe), -3);
        assert_eq!(psn_distance(5, 5), 0);
        assert_eq!(psn_distance(0, 0x7f_ffff), 0x7f_ffff);
        // Exactly half the space away reads as "behind" (-2^23).
        assert_eq!(psn_distance(0, 0x80_0000), -0x80_0000);
        assert_eq!(psn_distance(0x80_0000, 0), -0x80_0000);
    }

    #[test]
    fn comparisons_use_the_half_window() {
        assert!(psn_lt(0xff_ffff, 0));
        assert!(!psn_lt(0, 0xff_ffff));
        assert!(psn_le(7, 7));
        assert!(!psn_lt(7, 7));
        assert!(psn_lt(0x10, 0x10 + 0x7f_ffff));
        assert!(!psn_lt(0x10, psn_add(0x10, 0x80_0000)));
    }

    #[test]
    fn range_membership_wraps() {
        assert!(psn_in_range(0xff_ffff, 0xff_fffe, 3));
        assert!(psn_in_range(0, 0xff_fffe, 3));
        assert!(!psn_in_range(1, 0xff_fffe, 3));
        assert!(!psn_in_range(0xff_fffd, 0xff_fffe, 3));
        assert!(!psn_in_range(5, 5, 0));
    }
}
