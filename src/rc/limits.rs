//! What an iface derives from its configuration once at open ([`Limits`]),
//! and the AM header every AM SEND starts with.

use std::time::Duration;

use crate::core::config::Ulunits;
use crate::mlx5;
use crate::rc::config::{RcMlx5IfaceConfig, SendOverhead};
use crate::rc::txwq::MAX_WQE_BBS;

/// Bytes of the AM header in every AM SEND, as UCX 1.13's rc_mlx5 lays it
/// out (`uct_rc_mlx5_hdr_t`), so that its AMs and ours read the same: a
/// tag-matching opcode byte ([`TMH_NO_TAG`]: no hardware tag matching),
/// then the AM id with the flow-control bits ([`crate::rc::fc`]).
pub const AM_HDR_LEN: usize = 2;
/// Offset of the AM id byte in the AM header.
pub const AM_ID_OFFSET: usize = 1;
/// `IBV_TMH_NO_TAG`: the first AM header byte of a message that is not a
/// hardware tag-matching one.
pub const TMH_NO_TAG: u8 = 0;

/// The AM header carrying `id_byte` (AM id and flow-control bits).
#[inline(always)]
pub fn am_header(id_byte: u8) -> [u8; AM_HDR_LEN] {
    [TMH_NO_TAG, id_byte]
}

/// Most iov entries of an am_zcopy (one data segment each), as UCX's
/// rc_mlx5 (`cap.am.max_iov`).
pub const AM_ZCOPY_MAX_IOV: usize = 3;

/// Largest am_zcopy header: inline with the AM header, in what the largest
/// WQE leaves after [`AM_ZCOPY_MAX_IOV`] data segments (UCX's rc_mlx5
/// `cap.am.max_hdr`).
pub const AM_ZCOPY_MAX_HDR: usize = inline_room(AM_ZCOPY_MAX_IOV) - AM_HDR_LEN;

/// Data bytes that fit inline in the largest WQE after the control segment
/// and `extra_units` 16-byte segments.
const fn inline_room(extra_units: usize) -> usize {
    (MAX_WQE_BBS as usize * 4 - 1 - extra_units) * mlx5::SEG_LEN - 4
}

/// Limits and settings derived from the configuration once at open.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Bounce buffer size (`UCX_RC_MLX5_SEG_SIZE`): the largest SEND.
    seg_size: usize,
    rx_headroom: usize,
    /// AM header + payload of `am_short` (the 8-byte header included).
    am_max_short: usize,
    am_max_bcopy: usize,
    /// AM zcopy: header bytes sent inline, and header + payload in total.
    am_max_hdr: usize,
    am_max_zcopy: usize,
    put_max_short: usize,
    put_max_bcopy: usize,
    /// get_short: a READ into a bounce buffer, copied out by the call once
    /// it completed.
    /// As large as put_short, so the short protocols of both directions
    /// switch to bcopy at the same size and the copy stays small.
    get_max_short: usize,
    get_max_bcopy: usize,
    max_zcopy: usize,
    /// Data segments of a zcopy RMA WQE.
    max_iov: usize,
    /// Signal at least every this many send blocks.
    tx_moderation: u32,
    tx_ring_bbs: u32,
    /// Most send blocks an ep may have outstanding: the ring less room for
    /// the largest WQE, and at most `UCX_RC_MLX5_TX_MAX_BB` (as UCX's
    /// rc_mlx5 counts its `bb_max`).
    tx_max_outstanding_bbs: u32,
    ack_timeout: Duration,
    retry_count: u8,
    rnr_timeout: Duration,
    rnr_retry_count: u8,
    max_rd_atomic: u8,
    tx_max_poll: u32,
    rx_max_poll: u32,
    /// SL, traffic class, hop limit of the QPs' address vectors.
    path: crate::hca::PathAttr,
    /// Estimated costs of a send (`UCX_RC_MLX5_SEND_OVERHEAD`), for
    /// `uct_iface_estimate_perf`.
    send_overhead: SendOverhead,
    /// How many eps can have operations outstanding at once: send-CQ
    /// entries per send queue, as UCX's rc estimates it.
    max_inflight_eps: usize,
}

/// Send-CQ entries the iface creates for `config`.
pub fn tx_cq_len(config: &RcMlx5IfaceConfig) -> u32 {
    config.tx_cq_len.max(64).next_power_of_two()
}

fn ulunits_or(value: Ulunits, auto: u64) -> u64 {
    match value {
        Ulunits::Value(v) => v,
        Ulunits::Inf => u64::MAX,
        Ulunits::Auto => auto,
    }
}

impl Limits {
    pub fn new(config: &RcMlx5IfaceConfig, rx_headroom: usize, max_rd_atomic_dev: u8) -> Limits {
        let seg_size = (config.seg_size.bytes_or(8192) as usize).clamp(256, 1 << 20);
        let tx_ring_bbs = (config.tx_queue_len.max(16) * u32::from(MAX_WQE_BBS))
            .next_power_of_two()
            .min(crate::hca::soft::MAX_QP_WQEBB);
        Limits {
            seg_size,
            rx_headroom,
            am_max_short: inline_room(0) - AM_HDR_LEN,
            am_max_bcopy: seg_size - AM_HDR_LEN,
            am_max_hdr: AM_ZCOPY_MAX_HDR,
            am_max_zcopy: seg_size - AM_HDR_LEN,
            put_max_short: inline_room(1),
            put_max_bcopy: seg_size,
            get_max_short: inline_room(1).min(seg_size),
            get_max_bcopy: seg_size,
            max_zcopy: 1 << 30,
            max_iov: MAX_WQE_BBS as usize * 4 - 2,
            tx_moderation: config.tx_cq_moderation.max(1),
            tx_ring_bbs,
            tx_max_outstanding_bbs: (tx_ring_bbs - u32::from(MAX_WQE_BBS) + 1)
                .min(config.tx_max_bb)
                .max(1),
            ack_timeout: config.timeout,
            retry_count: config.retry_count.min(7) as u8,
            rnr_timeout: config.rnr_timeout,
            rnr_retry_count: config.rnr_retry_count.min(7) as u8,
            max_rd_atomic: ulunits_or(config.max_rd_atomic, u64::from(max_rd_atomic_dev))
                .clamp(1, u64::from(max_rd_atomic_dev.max(1))) as u8,
            tx_max_poll: config.tx_max_poll.max(1),
            rx_max_poll: config.rx_max_poll.max(1),
            path: crate::hca::PathAttr::from_config(
                config.sl,
                config.traffic_class,
                config.hop_limit,
            ),
            send_overhead: config.send_overhead,
            max_inflight_eps: (tx_cq_len(config) / config.tx_queue_len.max(1)).max(1) as usize,
        }
    }
}

/// Read-only: the limits are fixed at open.
impl Limits {
    #[inline(always)]
    pub fn seg_size(&self) -> usize {
        self.seg_size
    }

    #[inline(always)]
    pub fn rx_headroom(&self) -> usize {
        self.rx_headroom
    }

    #[inline(always)]
    pub fn am_max_short(&self) -> usize {
        self.am_max_short
    }

    #[inline(always)]
    pub fn am_max_bcopy(&self) -> usize {
        self.am_max_bcopy
    }

    #[inline(always)]
    pub fn am_max_hdr(&self) -> usize {
        self.am_max_hdr
    }

    #[inline(always)]
    pub fn am_max_zcopy(&self) -> usize {
        self.am_max_zcopy
    }

    #[inline(always)]
    pub fn put_max_short(&self) -> usize {
        self.put_max_short
    }

    #[inline(always)]
    pub fn put_max_bcopy(&self) -> usize {
        self.put_max_bcopy
    }

    #[inline(always)]
    pub fn get_max_short(&self) -> usize {
        self.get_max_short
    }

    #[inline(always)]
    pub fn get_max_bcopy(&self) -> usize {
        self.get_max_bcopy
    }

    #[inline(always)]
    pub fn max_zcopy(&self) -> usize {
        self.max_zcopy
    }

    #[inline(always)]
    pub fn max_iov(&self) -> usize {
        self.max_iov
    }

    #[inline(always)]
    pub fn tx_moderation(&self) -> u32 {
        self.tx_moderation
    }

    #[inline(always)]
    pub fn tx_ring_bbs(&self) -> u32 {
        self.tx_ring_bbs
    }

    #[inline(always)]
    pub fn tx_max_outstanding_bbs(&self) -> u32 {
        self.tx_max_outstanding_bbs
    }

    #[inline(always)]
    pub fn ack_timeout(&self) -> Duration {
        self.ack_timeout
    }

    #[inline(always)]
    pub fn retry_count(&self) -> u8 {
        self.retry_count
    }

    #[inline(always)]
    pub fn rnr_timeout(&self) -> Duration {
        self.rnr_timeout
    }

    #[inline(always)]
    pub fn rnr_retry_count(&self) -> u8 {
        self.rnr_retry_count
    }

    #[inline(always)]
    pub fn max_rd_atomic(&self) -> u8 {
        self.max_rd_atomic
    }

    #[inline(always)]
    pub fn tx_max_poll(&self) -> u32 {
        self.tx_max_poll
    }

    #[inline(always)]
    pub fn rx_max_poll(&self) -> u32 {
        self.rx_max_poll
    }

    #[inline(always)]
    pub fn path(&self) -> crate::hca::PathAttr {
        self.path
    }

    #[inline(always)]
    pub fn send_overhead(&self) -> SendOverhead {
        self.send_overhead
    }

    #[inline(always)]
    pub fn max_inflight_eps(&self) -> usize {
        self.max_inflight_eps
    }
}
