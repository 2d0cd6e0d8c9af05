//! The send queue of one ep: the QP's send ring ([`SendQueue`]), its
//! producer and consumer indexes, the next PSN, and the table of operations
//! posted and not yet completed. [`TxWq`] is the only code that moves them:
//! posting appends an op ([`TxWq::post`], [`TxWq::post_inline`]),
//! completions take ops off the front ([`TxWq::complete_next`],
//! [`TxWq::fail_next`], [`TxWq::take_all`]) and hand them to the caller,
//! which releases what they hold with [`TxResources::release`].
//!
//! # How a post goes
//! `post` checks ring space and CQ credits (`NoResource`), builds the WQE
//! at the producer index (the caller's closure adds the segments after the
//! control segment with the [`crate::mlx5::WqeBuilder`]), decides
//! signalling, records the op, advances the PSN, publishes the doorbell
//! record and rings the doorbell.

use std::collections::VecDeque;
use std::ffi::c_uint;

use crate::abi::*;
use crate::core::data_trace;
use crate::failover::{OpPsns, PostedOp};
use crate::hca::{Mtu, Qp, SendQueue};
use crate::mlx5::{
    self, packet_count, psn_add, CtrlSeg, InlineSegs, PacketShape, WqeBuilder, SEND_WQE_BB,
};
use crate::uct::pool::BufferPool;

/// Largest WQE the datapath builds, in basic blocks (UCX's mlx5 limit too);
/// the ring always keeps this much room before a post is attempted.
pub const MAX_WQE_BBS: u16 = 4;

/// The PSN every connection starts from in both directions, as UCX's
/// rc_mlx5 connects its QPs (it does not exchange PSNs).
pub const START_PSN: u32 = 0;

/// A bounce buffer an op owns until it completes (bcopy data, READ target,
/// atomic result). `data` is where the op's bytes start.
#[derive(Clone, Copy, Debug)]
pub struct Bounce {
    pub buffer: *mut u8,
    pub data: *mut u8,
    /// The lkey of the buffer's registration.
    pub lkey: u32,
}

/// One posted WQE not yet known complete: the operation as the caller
/// posted it ([`PostedOp`]), what the transport holds for it, and where it
/// is in the ring and the PSN space. Entries are kept in posting order; the
/// WQE occupies the send ring from `wqe_index` for `wqebbs` blocks, and the
/// op used PSNs `first_psn .. first_psn + psn_count` (24-bit). A flush
/// completion attached to the signalled WQE before it
/// ([`TxWq::attach_flush`]) has `wqebbs` 0: it names that WQE's index and
/// holds no ring block, CQ credit or PSN of its own.
///
/// What replaying an op needs and where it is: inline data (am_short
/// header and payload, put_short data, the am_zcopy header) stays in the
/// send ring at the op's `wqe_index` until the op completes
/// (`mlx5::decode_send_wqe` reads it back); bcopy data is in `bounce`;
/// everything else is in the [`PostedOp`].
#[derive(Clone, Debug)]
pub struct OutstandingOp {
    op: PostedOp,
    bounce: Option<Bounce>,
    /// Bytes the WQE moves (the payload on the wire incl. the AM header,
    /// the READ length, the atomic width).
    length: usize,
    /// The device key of the remote memory (0: none).
    rkey: u32,
    /// The mlx5 opcode of the WQE.
    opcode: u8,
    /// A CQE was requested for this WQE.
    signaled: bool,
    /// Send-ring index (in basic blocks, 16 bits) of the WQE's control
    /// segment: what a CQE's `wqe_counter` names.
    wqe_index: u16,
    wqebbs: u16,
    first_psn: u32,
    /// PSNs the op uses on the wire (NOP: 0).
    psn_count: u32,
    /// A successful CQE covering this WQE is known to be in the send CQ,
    /// not yet taken by progress (get_short waited for it): the op and
    /// every op before it are complete.
    completion_seen: bool,
}

impl OutstandingOp {
    /// The operation as the caller posted it.
    #[inline(always)]
    pub fn op(&self) -> &PostedOp {
        &self.op
    }

    /// The bounce buffer the op owns, if any.
    #[inline(always)]
    pub fn bounce(&self) -> Option<Bounce> {
        self.bounce
    }

    /// Bytes the WQE moves (AM header included).
    pub fn length(&self) -> usize {
        self.length
    }

    /// The ring index of the op's WQE.
    pub fn wqe_index(&self) -> u16 {
        self.wqe_index
    }

    /// Whether a CQE was requested for the op's WQE.
    pub fn signaled(&self) -> bool {
        self.signaled
    }

    /// Whether the op has a WQE of its own (else it is an attached flush
    /// completion).
    #[inline]
    pub fn has_wqe(&self) -> bool {
        self.wqebbs != 0
    }

    /// What failover classifies the op by.
    pub fn psns(&self) -> OpPsns {
        OpPsns {
            class: self.op.class(),
            first_psn: self.first_psn,
            psn_count: self.psn_count,
            cqe_seen: self.completion_seen,
        }
    }
}

/// What [`TxWq::post`] needs besides the segments: the op and the WQE's
/// opcode and length, and what the builders add.
pub struct PostSpec {
    op: PostedOp,
    bounce: Option<Bounce>,
    length: usize,
    rkey: u32,
    opcode: u8,
    opmod: u8,
    /// Request a CQE even without a completion.
    force_signal: bool,
}

impl PostSpec {
    /// A WQE of `opcode` moving `length` bytes for `op`.
    #[inline(always)]
    pub fn new(op: PostedOp, opcode: u8, length: usize) -> PostSpec {
        PostSpec {
            op,
            bounce: None,
            length,
            rkey: 0,
            opcode,
            opmod: 0,
            force_signal: false,
        }
    }

    /// The device key of the remote memory the WQE names.
    #[inline(always)]
    pub fn rkey(mut self, rkey: u32) -> PostSpec {
        self.rkey = rkey;
        self
    }

    /// The control segment's opcode modifier.
    #[inline(always)]
    pub fn opmod(mut self, opmod: u8) -> PostSpec {
        self.opmod = opmod;
        self
    }

    /// The bounce buffer the op owns until it completes.
    #[inline(always)]
    pub fn bounce(mut self, bounce: Bounce) -> PostSpec {
        self.bounce = Some(bounce);
        self
    }

    /// Requests a CQE even without a completion.
    #[inline(always)]
    pub fn signaled(mut self) -> PostSpec {
        self.force_signal = true;
        self
    }

    /// Bytes the WQE moves.
    #[inline(always)]
    pub fn length(&self) -> usize {
        self.length
    }
}

/// What posted ops hold on the iface until they complete: a send-CQ credit
/// each, and bounce buffers of the send pool.
pub struct TxResources {
    pub pool: BufferPool,
    /// Send CQEs that may still arrive without overflowing the send CQ: one
    /// per outstanding WQE (after an error every WQE gets a CQE).
    pub credits: u32,
    /// `credits` when nothing is outstanding.
    pub credits_max: u32,
}

impl TxResources {
    /// Returns what `op` holds (its bounce buffer and CQ credit): the one
    /// place an op's resources go back, whether it completed, failed, was
    /// purged or its ep was destroyed.
    #[inline]
    pub fn release(&mut self, op: &OutstandingOp) {
        if let Some(bounce) = op.bounce {
            self.pool.put(bounce.buffer);
        }
        if op.has_wqe() {
            self.credits += 1;
        }
    }
}

/// Whether WQE index `a` was posted at or before `b` (16-bit ring counters).
#[inline]
pub(crate) fn index_at_or_before(a: u16, b: u16) -> bool {
    (b.wrapping_sub(a) as i16) >= 0
}

/// Signalling and fencing of the next WQE.
struct CtrlRule {
    qpn: u32,
    /// Blocks posted since the last signalled WQE.
    unsignaled_bbs: u32,
    /// Signal at least every this many blocks.
    moderation: u32,
    /// Signal every WQE while the iface has at most this many CQ credits
    /// left: unsignaled WQEs hold credits until a later CQE, so when
    /// credits run low every ep's newest WQE must produce one (otherwise
    /// an idle ep's unsignaled tail could starve the others forever).
    credit_low_water: u32,
    /// The next WQE carries the fence flag (`uct_ep_fence`).
    fence_next: bool,
}

impl CtrlRule {
    /// Whether the WQE requests a CQE (selective signalling: a completion,
    /// the moderation count or low CQ credits), and its control segment
    /// (index and DS are filled in by whoever writes it).
    #[inline]
    fn ctrl(&self, spec: &PostSpec, wqebbs: u16, credits: u32) -> (bool, CtrlSeg) {
        let signaled = !spec.op.comp().is_null()
            || spec.force_signal
            || self.unsignaled_bbs + u32::from(wqebbs) >= self.moderation
            || credits <= self.credit_low_water;
        let mut fm_ce_se = if signaled {
            mlx5::MLX5_WQE_CTRL_CQ_UPDATE
        } else {
            0
        };
        if self.fence_next {
            fm_ce_se |= mlx5::MLX5_FENCE_MODE_SMALL_AND_FENCE;
        }
        // User AMs raise a solicited event at the receiver, as UCX marks
        // them, so `UCT_EVENT_RECV` waiters wake for AMs, not for grants.
        if spec.op.is_am() {
            fm_ce_se |= mlx5::MLX5_WQE_CTRL_SOLICITED;
        }
        let ctrl = CtrlSeg {
            opcode: spec.opcode,
            opmod: spec.opmod,
            qpn: self.qpn,
            fm_ce_se,
            ..CtrlSeg::default()
        };
        (signaled, ctrl)
    }
}

/// What a new send queue takes from its iface.
#[derive(Clone, Copy, Debug)]
pub struct TxParams {
    /// Signal at least every this many send blocks.
    pub moderation: u32,
    /// Most send blocks outstanding at once
    /// ([`crate::rc::limits::Limits::tx_max_outstanding_bbs`]).
    pub max_outstanding_bbs: u32,
    /// The iface's CQ credits when nothing is outstanding.
    pub credits_max: u32,
    pub path_mtu: Mtu,
}

/// The send queue of one ep (see the module docs).
pub struct TxWq {
    sq: SendQueue,
    /// Next WQE index (in basic blocks; wraps at 2^16).
    pi: u16,
    /// First block not known to be consumed (end of the last completed op).
    ci: u16,
    /// Blocks that may be outstanding at once: a post needs fewer.
    max_outstanding_bbs: u32,
    /// How the next WQE's control segment is made (apart from the ring,
    /// so that it can be read while a WQE is being built there).
    ctrl: CtrlRule,
    /// PSN the next packet will carry.
    next_psn: u32,
    path_mtu: Mtu,
    /// Posted ops not known complete, oldest first.
    ops: VecDeque<OutstandingOp>,
}

impl TxWq {
    /// The empty send queue of a new QP, starting at [`START_PSN`], with
    /// the iface's moderation, CQ credits and block limit (`tx`).
    pub fn new(qp: Qp, tx: TxParams) -> TxWq {
        let sq = SendQueue::new(qp);
        let wqebb_count = sq.wqebb_count();
        // Room for the largest WQE is always kept: the limit never lets the
        // ring overflow, whatever the configuration says.
        let max_outstanding_bbs = tx
            .max_outstanding_bbs
            .min(wqebb_count - u32::from(MAX_WQE_BBS) + 1)
            .max(1);
        TxWq {
            pi: 0,
            ci: 0,
            max_outstanding_bbs,
            ctrl: CtrlRule {
                qpn: sq.qpn(),
                unsignaled_bbs: 0,
                moderation: tx.moderation.min(max_outstanding_bbs / 4).max(1),
                credit_low_water: (tx.credits_max / 2).max(1),
                fence_next: false,
            },
            sq,
            next_psn: START_PSN,
            path_mtu: tx.path_mtu,
            // One op per WQE at most, so posting never grows it.
            ops: VecDeque::with_capacity(wqebb_count as usize),
        }
    }

    #[inline(always)]
    pub fn qp(&self) -> &Qp {
        self.sq.qp()
    }

    /// Gives the QP up (the queue must be empty: the QP is retired).
    pub fn into_qp(self) -> Qp {
        debug_assert!(self.ops.is_empty());
        self.sq.into_qp()
    }

    #[inline(always)]
    pub fn qpn(&self) -> u32 {
        self.sq.qpn()
    }

    /// The outstanding ops, oldest first.
    pub fn ops(&self) -> impl ExactSizeIterator<Item = &OutstandingOp> + '_ {
        self.ops.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// The newest outstanding op.
    pub fn last(&self) -> Option<&OutstandingOp> {
        self.ops.back()
    }

    /// PSN the next packet will carry.
    pub fn next_psn(&self) -> u32 {
        self.next_psn
    }

    /// The send ring's bytes (failover reads outstanding WQEs back).
    pub fn ring_bytes(&self) -> &[u8] {
        self.sq.bytes()
    }

    /// The next WQE carries the fence flag.
    pub fn fence(&mut self) {
        self.ctrl.fence_next = true;
    }

    /// Blocks posted and not known consumed.
    #[inline]
    pub fn outstanding_bbs(&self) -> u32 {
        u32::from(self.pi.wrapping_sub(self.ci))
    }

    /// Whether a post has room: fewer blocks outstanding than the limit
    /// (which keeps room for the largest WQE in the ring), one CQ credit.
    #[inline(always)]
    pub fn has_room(&self, credits: u32) -> bool {
        self.outstanding_bbs() < self.max_outstanding_bbs && credits != 0
    }

    /// Back to the empty ring of a QP just reset (nothing outstanding).
    /// The path MTU of the connection (set before it starts): how many
    /// packets, so PSNs, each op takes.
    pub fn set_path_mtu(&mut self, path_mtu: Mtu) {
        debug_assert!(self.ops.is_empty());
        self.path_mtu = path_mtu;
    }

    pub fn reset(&mut self) {
        debug_assert!(self.ops.is_empty());
        self.pi = 0;
        self.ci = 0;
        self.ctrl.unsignaled_bbs = 0;
        self.next_psn = START_PSN;
    }

    /// Posts one WQE: `segments` adds everything after the control segment.
    /// The caller checked [`TxWq::has_room`]. On error nothing is posted and
    /// the ring is unchanged.
    pub fn post(
        &mut self,
        credits: &mut u32,
        spec: PostSpec,
        segments: impl FnOnce(&mut WqeBuilder<'_>),
    ) -> Result<(), Status> {
        let index = self.pi;
        let mut builder = WqeBuilder::new(self.sq.bytes_mut(), index).ok_or(Status::IoError)?;
        segments(&mut builder);
        let wqebbs = (builder.ds() * mlx5::SEG_LEN).div_ceil(SEND_WQE_BB) as u16;
        if wqebbs > MAX_WQE_BBS {
            tracing::warn!(
                "rc_mlx5 QP 0x{:x}: WQE of {wqebbs} blocks exceeds {MAX_WQE_BBS}",
                self.ctrl.qpn
            );
            return Err(Status::InvalidParam);
        }
        let (signaled, ctrl) = self.ctrl.ctrl(&spec, wqebbs, *credits);
        if let Err(error) = builder.finish(ctrl) {
            tracing::warn!(
                "rc_mlx5 QP 0x{:x}: cannot build WQE: {error:?}",
                self.ctrl.qpn
            );
            return Err(Status::InvalidParam);
        }
        let psn_count = self.psn_count(&spec);
        self.commit(credits, spec, index, wqebbs, signaled, psn_count);
        Ok(())
    }

    /// Posts a WQE of control, optional remote address and one inline
    /// segment (`head` then `data`): `put_short`, `am_short`. Same effect as
    /// [`TxWq::post`] with those segments, through
    /// [`mlx5::write_inline_wqe`] when the WQE does not wrap the ring.
    #[inline(always)]
    pub fn post_inline<const H: usize>(
        &mut self,
        credits: &mut u32,
        spec: PostSpec,
        segs: InlineSegs<'_, H>,
    ) -> Result<(), Status> {
        let index = self.pi;
        let ds = segs.ds();
        let wqebbs = (ds * mlx5::SEG_LEN).div_ceil(SEND_WQE_BB) as u16;
        if wqebbs <= MAX_WQE_BBS {
            let (signaled, ctrl) = self.ctrl.ctrl(&spec, wqebbs, *credits);
            // ds <= 4 blocks' worth (< MAX_DS); the ring is the QP's, whose
            // block count is a power of two (`publish` masks with it too).
            const _: () = assert!(
                MAX_WQE_BBS as usize * SEND_WQE_BB / mlx5::SEG_LEN <= mlx5::MAX_DS as usize
            );
            let ring = self.sq.bytes_mut();
            if mlx5::write_inline_wqe_prechecked(ring, index, ds, ctrl, segs).is_some() {
                // A WQE of at most MAX_WQE_BBS blocks carries fewer inline
                // bytes than the smallest path MTU: one packet, one PSN
                // (SEND and RDMA WRITE are the only inline opcodes).
                const _: () =
                    assert!(MAX_WQE_BBS as usize * SEND_WQE_BB <= Mtu::Mtu256.bytes() as usize);
                debug_assert!(matches!(
                    spec.opcode,
                    mlx5::MLX5_OPCODE_SEND | mlx5::MLX5_OPCODE_RDMA_WRITE
                ));
                self.commit(credits, spec, index, wqebbs, signaled, 1);
                return Ok(());
            }
        }
        self.post_inline_wrapped(credits, spec, segs.raddr, segs.head, segs.data)
    }

    /// The rare half of [`TxWq::post_inline`]: the WQE wraps the ring's end
    /// (or is too large: `post` reports it). Kept out of line so that the
    /// fast path's registers and stack frame stay small.
    #[cold]
    #[inline(never)]
    fn post_inline_wrapped<const H: usize>(
        &mut self,
        credits: &mut u32,
        spec: PostSpec,
        raddr: Option<mlx5::RaddrSeg>,
        head: &[u8; H],
        data: &[u8],
    ) -> Result<(), Status> {
        self.post(credits, spec, |wqe| {
            if let Some(raddr) = raddr {
                wqe.raddr(raddr);
            }
            wqe.inline(&[head, data]);
        })
    }

    /// PSNs the WQE of `spec` uses on the wire ([`mlx5::packet_count`]).
    #[inline]
    fn psn_count(&self, spec: &PostSpec) -> u32 {
        let shape = match spec.opcode {
            mlx5::MLX5_OPCODE_NOP => PacketShape::None,
            mlx5::MLX5_OPCODE_SEND
            | mlx5::MLX5_OPCODE_SEND_IMM
            | mlx5::MLX5_OPCODE_RDMA_WRITE
            | mlx5::MLX5_OPCODE_RDMA_WRITE_IMM
            | mlx5::MLX5_OPCODE_RDMA_READ => PacketShape::Data,
            _ => PacketShape::Atomic,
        };
        packet_count(shape, spec.length as u64, self.path_mtu.bytes())
    }

    /// Records the op of the WQE just written at `index`, advances the ring
    /// and rings the doorbell.
    #[inline(always)]
    fn commit(
        &mut self,
        credits: &mut u32,
        spec: PostSpec,
        index: u16,
        wqebbs: u16,
        signaled: bool,
        psn_count: u32,
    ) {
        // An AM's data-path line is written by its slot, which checks
        // whether tracing is on once (this check folds away for AMs).
        let traced = !spec.op.is_am();
        self.ops.push_back(OutstandingOp {
            op: spec.op,
            bounce: spec.bounce,
            length: spec.length,
            rkey: spec.rkey,
            opcode: spec.opcode,
            signaled,
            wqe_index: index,
            wqebbs,
            first_psn: self.next_psn,
            psn_count,
            completion_seen: false,
        });
        self.ctrl.fence_next = false;
        self.ctrl.unsignaled_bbs = if signaled {
            0
        } else {
            self.ctrl.unsignaled_bbs + u32::from(wqebbs)
        };
        self.next_psn = psn_add(self.next_psn, psn_count);
        self.pi = index.wrapping_add(wqebbs);
        *credits -= 1;
        // Before the doorbell, as UCX's rc_mlx5 logs its WQEs: `self` is
        // still in a register here, so the check costs no reload.
        if traced && data_trace::enabled() {
            self.trace_posted();
        }
        self.sq.publish(self.pi, index);
    }

    /// The data-path line of the WQE just posted (not an AM's: its slot
    /// writes that, [`TxWq::describe_last`] plus the AM and its tracer's
    /// text, once the payload is known).
    #[cold]
    #[inline(never)]
    fn trace_posted(&self) {
        data_trace::emit(data_trace::source_site!(), &self.describe_last());
    }

    /// The newest posted WQE in words: QP, ring index, opcode, signalled
    /// or not, length, remote address and key.
    pub fn describe_last(&self) -> String {
        let Some(op) = self.ops.back() else {
            return format!("QP 0x{:x} no WQE", self.ctrl.qpn);
        };
        let opcode = match op.opcode {
            mlx5::MLX5_OPCODE_NOP => "NOP",
            mlx5::MLX5_OPCODE_RDMA_WRITE => "RDMA_WRITE",
            mlx5::MLX5_OPCODE_RDMA_WRITE_IMM => "RDMA_WRITE_IMM",
            mlx5::MLX5_OPCODE_SEND => "SEND",
            mlx5::MLX5_OPCODE_SEND_IMM => "SEND_IMM",
            mlx5::MLX5_OPCODE_RDMA_READ => "RDMA_READ",
            mlx5::MLX5_OPCODE_ATOMIC_CS => "CSWAP",
            mlx5::MLX5_OPCODE_ATOMIC_FA => "FETCH_ADD",
            mlx5::MLX5_OPCODE_ATOMIC_MASKED_CS => "MASKED_CSWAP",
            mlx5::MLX5_OPCODE_ATOMIC_MASKED_FA => "MASKED_FETCH_ADD",
            _ => "UNKNOWN",
        };
        let mut line = format!(
            "QP 0x{:x} [{:03}] {opcode} {} len {}",
            self.ctrl.qpn,
            u32::from(op.wqe_index) & self.sq.wqebb_count().wrapping_sub(1),
            if op.signaled { "s" } else { "-" },
            op.length
        );
        let remote_addr = op.op.remote().map_or(0, |remote| remote.address);
        if op.rkey != 0 || remote_addr != 0 {
            line.push_str(&format!(" [rva 0x{remote_addr:x} rkey 0x{:x}]", op.rkey));
        }
        line
    }

    /// Takes the oldest op if it was posted at or before WQE `wqe_counter`
    /// (a signalled CQE completes every op up to its WQE, in order).
    #[inline]
    pub fn complete_next(&mut self, wqe_counter: u16) -> Option<OutstandingOp> {
        if !index_at_or_before(self.ops.front()?.wqe_index, wqe_counter) {
            return None;
        }
        self.fail_next()
    }

    /// Takes the oldest op whatever its index (an error CQE: it and every
    /// later op did not complete).
    #[inline]
    pub fn fail_next(&mut self) -> Option<OutstandingOp> {
        let op = self.ops.pop_front()?;
        if op.has_wqe() {
            self.ci = op.wqe_index.wrapping_add(op.wqebbs);
        }
        Some(op)
    }

    /// Attaches the completion `comp` of a flush (with its `flags`) to the
    /// newest op, whose WQE is signalled: it completes with that WQE's CQE,
    /// without a WQE, CQ credit or PSN of its own (as UCX's rc completes a
    /// flush on the last signalled WQE), so a flush needs no send resources
    /// when nothing unsignalled is outstanding. `NoResource` when the
    /// newest op is not signalled (a NOP is needed) or the table is full
    /// (one entry per ring block: attached completions cannot pile up
    /// without bound).
    pub fn attach_flush(
        &mut self,
        comp: *mut uct_completion_t,
        flags: c_uint,
    ) -> Result<(), Status> {
        let rider = match self.ops.back() {
            Some(op) if op.signaled => op.wqe_index,
            _ => return Err(Status::NoResource),
        };
        if self.ops.len() >= self.sq.wqebb_count() as usize {
            return Err(Status::NoResource);
        }
        self.ops.push_back(OutstandingOp {
            op: PostedOp::Flush { flags, comp },
            bounce: None,
            length: 0,
            rkey: 0,
            opcode: mlx5::MLX5_OPCODE_NOP,
            signaled: true,
            wqe_index: rider,
            wqebbs: 0,
            first_psn: self.next_psn,
            psn_count: 0,
            completion_seen: false,
        });
        Ok(())
    }

    /// Notes that a successful CQE of WQE `wqe_index` is in the send CQ,
    /// not yet taken by progress (get_short waited for it): the op and
    /// every op before it are complete ([`OutstandingOp::psns`]).
    pub fn completion_seen(&mut self, wqe_index: u16) {
        if let Some(op) = self
            .ops
            .iter_mut()
            .rev()
            .find(|op| op.has_wqe() && op.wqe_index == wqe_index)
        {
            op.completion_seen = true;
        }
    }

    /// Takes every outstanding op (purge, destroy): the ring is free again.
    pub fn take_all(&mut self) -> impl Iterator<Item = OutstandingOp> + '_ {
        self.ci = self.pi;
        self.ops.drain(..)
    }
}

/// A bounce buffer for a bcopy op, `offset` bytes into the data area.
pub fn bounce_from_pool(pool: &mut BufferPool, offset: usize) -> Result<Bounce, Status> {
    let buffer = pool.get()?;
    Ok(Bounce {
        buffer,
        data: buffer.wrapping_add(crate::uct::pool::LKEY_BYTES + offset),
        lkey: pool.lkey(buffer),
    })
}

impl BufferPool {
    /// `lkey` of a bounce's buffer.
    pub fn bounce_lkey(bounce: &Bounce) -> u32 {
        bounce.lkey
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cqe_completes_the_ops_posted_at_or_before_its_index() {
        assert!(index_at_or_before(5, 5));
        assert!(index_at_or_before(4, 5));
        assert!(!index_at_or_before(6, 5));
        // 16-bit ring counters wrap.
        assert!(index_at_or_before(u16::MAX, 2));
        assert!(!index_at_or_before(2, u16::MAX));
    }
}
