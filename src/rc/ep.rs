//! The rc_mlx5 endpoint: connection state only. It owns its send queue
//! ([`TxWq`]: the QP, the ring and the table of outstanding operations),
//! its flow-control window and pending requests, and one [`EpState`] for
//! where the connection is; it holds no pointer to its iface. What happens
//! at completion (user callbacks) is the iface's: completions go there and
//! come back to the ep only as state changes.
//!
//! # The send-path core, and how to add an operation
//!
//! Every data-path operation posts through [`RcEp::ready`], which checks
//! the ep, then [`TxWq::post`] or [`TxWq::post_inline`] (and nothing else
//! writes the send ring):
//! 1. validate the arguments (lengths against [`crate::rc::limits::Limits`],
//!    NULL buffers, keys) and return `InvalidParam` before touching the ep;
//! 2. call [`RcEp::check_post`] first if the op has side effects that must not
//!    happen when it cannot be posted (a bcopy pack callback);
//! 3. call `ep.ready(credits)?.post(..)` with a [`PostSpec`] (the op as the
//!    caller posted it, a [`PostedOp`], with the WQE's opcode and length and
//!    the bounce buffer the op owns) and a closure that
//!    adds the segments after the control segment with the
//!    [`crate::mlx5::WqeBuilder`] (remote address, atomic operands, data or
//!    inline segments). `ready` checks the ep state and room, then
//!    [`TxWq::post`] does the rest;
//! 4. return `UCS_OK` (no completion pending for the caller) or
//!    `UCS_INPROGRESS` (the caller's `comp` will be called).
//!
//! What an op needs at completion (copying a READ into the caller's
//! unpack callback, a fetching atomic's result) is in its [`PostedOp`];
//! the iface's send CQ does it.

use crate::abi::*;
use crate::failover::{EpFailover, InternalOp, OnError, PostedOp};
use crate::hca::{
    ack_timeout_exponent, rnr_timer_code, Access, DeviceAddress, Mtu, Qp, QpTransition, RtrAttr,
    RtsAttr,
};
use crate::mlx5::{self, InlineSegs, PSN_MASK};
use crate::rc::fc::{EpFc, FcConfig, FC_PURE_GRANT};
use crate::rc::limits::{am_header, Limits, AM_HDR_LEN};
pub use crate::rc::txwq::{
    bounce_from_pool, Bounce, OutstandingOp, PostSpec, TxParams, TxWq, MAX_WQE_BBS, START_PSN,
};
use crate::uct::pending::PendingQueue;

/// Tag of a live [`RcEp`].
const EP_MAGIC: u64 = 0x7263_5f65_705f_5f5f; // "rc_ep___"

/// Bytes of an ep address, laid out as UCX 1.13's rc_mlx5
/// (`uct_rc_mlx5_ep_address_t`) so that its eps and ours connect: the QP
/// number (3 bytes, least significant first), then 3 bytes UCX uses only
/// with hardware tag matching (off: it neither writes nor reads them),
/// which carry our connection generation ([`RcEp::generation`]), then
/// UCX's atomic MR id (0: atomics use the registration's own key).
pub const EP_ADDR_LEN: usize = 7;

/// How a failed ep got there, and what is left to do about it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Failure {
    /// `uct_ep_flush(UCT_FLUSH_FLAG_CANCEL)` moved the QP to error: the
    /// flushed ops complete with `UCS_ERR_CANCELED` and the error handler is
    /// not called (the caller asked for it).
    pub canceled: bool,
    /// Set by [`RcEp::cancel`], which fails the ep at once (the QP is in
    /// error, nothing posted from then on can succeed), until the first
    /// error CQE: that one still completes the ops executed before it.
    pub cancel_cqe_due: bool,
    /// The iface's error handler was called for this ep (or the ops were
    /// taken over by a held invalidate, which calls none).
    pub reported: bool,
}

/// Where the ep is in its life. A one-byte tag first (`repr(u8)`), so the
/// posting path's state check is one compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum EpState {
    /// Created; `uct_ep_connect_to_ep` not called yet.
    Idle,
    Connected,
    /// A plain `uct_ep_invalidate` moved the QP to error while the ep is
    /// still connected (it fails at the first error CQE): a flush with
    /// requests pending then posts its NOP at once, since those requests
    /// can never go out.
    Invalidated,
    /// A transport error, a cancel or a held invalidate: posts fail with
    /// this status.
    Failed(Status, Failure),
}

impl EpState {
    /// Connected, invalidated or not: posts go to the QP.
    #[inline(always)]
    pub fn is_connected(self) -> bool {
        matches!(self, EpState::Connected | EpState::Invalidated)
    }

    /// The status posts fail with, for a failed ep.
    #[inline(always)]
    pub fn failed_status(self) -> Option<Status> {
        match self {
            EpState::Failed(status, _) => Some(status),
            _ => None,
        }
    }
}

/// What the peer's ep address says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteEp {
    pub address: DeviceAddress,
    /// The path MTU the peer's iface connects with, from its device
    /// address (4096 when the address gives none, as UCX reads it).
    pub path_mtu: Mtu,
    pub qpn: u32,
    /// The peer's connection generation, from its ep address (what a
    /// UCX peer leaves there instead is not meaningful).
    pub generation: u32,
}

/// What an error CQE means for the ep's ops, decided before any of them is
/// touched ([`RcEp::begin_error`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorCqe {
    /// The first error CQE of this failure: the ops before its WQE executed
    /// and complete successfully first.
    pub first: bool,
    /// The status the failed ops complete with.
    pub status: Status,
}

/// An endpoint (what a `uct_ep_h` points at).
#[repr(C)]
pub struct RcEp {
    /// What C sees: `ep->iface`; must stay the first field.
    pub uct: uct_ep,
    /// Read only by the debug check of [`RcEp::from_handle`].
    #[cfg_attr(not(debug_assertions), allow(dead_code))]
    magic: u64,
    txwq: TxWq,
    state: EpState,
    /// A value that differs between QPs and runs (never 0), sent in the ep
    /// address: it names this connection in failover tokens, so that a
    /// token of an earlier connection on the same QP number is refused.
    generation: u32,
    remote: Option<RemoteEp>,
    /// The address of the iface's device (this end of the connection).
    local: DeviceAddress,
    /// The iface's path MTU: a connection runs at the smaller of it and the
    /// peer's ([`RcEp::connect`]).
    path_mtu: Mtu,
    /// Requests from `uct_ep_pending_add`.
    pending: PendingQueue,
    /// `uct_ep_check` found no CQ credit for its probe: progress posts it
    /// (before pending requests) once one returns.
    probe_due: bool,
    /// A post refused because the ep failed has been logged (once per
    /// failure: callers may retry in a loop).
    failed_post_logged: std::cell::Cell<bool>,
    /// Failover state (`crate::rc::failover`): whether an error or
    /// invalidation keeps the op table for `uct_ep_outstanding_purge`.
    pub failover: EpFailover,
    /// AM flow control ([`crate::rc::fc`]).
    pub fc: EpFc,
    /// QPs this ep used before a purge gave it a new one
    /// ([`RcEp::renew_qp`]), kept (in error) until the ep is destroyed, as
    /// the failed QP always was: destroying it at purge time made the
    /// two-process failover stress hang about once in 300 trials (not
    /// understood yet; a receive it had taken from the shared SRQ is the
    /// suspect).
    retired_qps: Vec<Qp>,
    /// Set by a purge: the next `uct_ep_get_address` or
    /// `uct_ep_connect_to_ep` first gives the ep a new QP
    /// ([`RcEp::renew_qp`]), so that the purge does not pay for one and an
    /// ep destroyed after its purge never makes one.
    qp_renewal_due: bool,
}

/// A post refused because pending requests of the ep wait: out of the
/// posting path, so that the compiler lays the path out for the post that
/// goes.
#[cold]
#[inline(never)]
fn held_by_pending() -> Status {
    Status::NoResource
}

/// The logging half of [`RcEp::from_handle`], kept out of the posting path.
#[cold]
#[inline(never)]
fn bad_ep_handle(function: &str, ep: uct_ep_h) -> Status {
    if ep.is_null() {
        tracing::warn!("{function}: ep is NULL");
    } else {
        tracing::warn!("{function}: {ep:p} is not a live rc_mlx5 endpoint");
    }
    Status::InvalidParam
}

/// A connection generation that differs between QPs and runs (24 bits,
/// never 0), so that a stale peer is unlikely to match.
fn generation(qpn: u32) -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    ((qpn.wrapping_mul(0x9e37_79b9) ^ nanos) & PSN_MASK).max(1)
}

impl RcEp {
    /// A new ep of the iface `iface` on `qp` (not connected yet). The caller
    /// houses it in the iface's tombstone yard (a stable address that stays
    /// a tombstone after destroy: [`crate::core::tombstone`]).
    pub fn new(
        iface: uct_iface_h,
        local: DeviceAddress,
        qp: Qp,
        tx: TxParams,
        fc: &FcConfig,
    ) -> RcEp {
        let generation = generation(qp.qpn());
        RcEp {
            uct: uct_ep { iface },
            magic: EP_MAGIC,
            txwq: TxWq::new(qp, tx),
            state: EpState::Idle,
            generation,
            remote: None,
            local,
            path_mtu: tx.path_mtu,
            pending: PendingQueue::new(),
            probe_due: false,
            failed_post_logged: std::cell::Cell::new(false),
            failover: EpFailover::default(),
            fc: EpFc::new(fc),
            retired_qps: Vec::new(),
            qp_renewal_due: false,
        }
    }

    /// Our ep behind `ep`, or `InvalidParam` with a log line for NULL.
    ///
    /// No liveness check: our slots are reached only through a live ep's
    /// `ep->iface->ops`, and a destroyed ep's first word leads to the dead
    /// iface's table instead ([`crate::core::tombstone`]), so a tombstone
    /// never gets here. Debug builds still check the tag (and refuse with a
    /// log line, no panic: this runs under the C boundary) to catch a path
    /// that bypasses the table.
    ///
    /// # Safety
    /// `ep` must be NULL or a live ep of this transport.
    #[inline(always)]
    pub unsafe fn from_handle<'a>(ep: uct_ep_h, function: &str) -> Result<&'a mut RcEp, Status> {
        if ep.is_null() {
            return Err(bad_ep_handle(function, ep));
        }
        let rc_ep = ep as *mut RcEp;
        // SAFETY: non-NULL and by the contract an RcEp's memory (live, or a
        // tombstone whose tag was cleared before it was buried): the tag
        // word is inside it; read through the raw pointer, no reference.
        #[cfg(debug_assertions)]
        if unsafe { std::ptr::addr_of!((*rc_ep).magic).read() } != EP_MAGIC {
            return Err(bad_ep_handle(function, ep));
        }
        // SAFETY: a live RcEp by the contract.
        Ok(unsafe { &mut *rc_ep })
    }

    pub fn as_handle(&mut self) -> uct_ep_h {
        self as *mut RcEp as uct_ep_h
    }

    /// The handle of the ep's iface (what C sees as `ep->iface`).
    #[inline(always)]
    pub fn iface_handle(&self) -> uct_iface_h {
        self.uct.iface
    }

    /// Clears the tag before the ep becomes a tombstone (what the debug
    /// check of [`RcEp::from_handle`] reads).
    pub fn invalidate(&mut self) {
        self.magic = 0;
    }

    #[inline(always)]
    pub fn qpn(&self) -> u32 {
        self.txwq.qpn()
    }

    pub fn qp(&self) -> &Qp {
        self.txwq.qp()
    }

    /// The send queue (read only: posts go through [`RcEp::ready`]).
    pub fn txwq(&self) -> &TxWq {
        &self.txwq
    }

    /// The send queue, for the iface's completion handling and failover.
    pub fn txwq_mut(&mut self) -> &mut TxWq {
        &mut self.txwq
    }

    /// The ep's pending requests (`uct_ep_pending_*`).
    pub fn pending(&self) -> &PendingQueue {
        &self.pending
    }

    pub fn pending_mut(&mut self) -> &mut PendingQueue {
        &mut self.pending
    }

    #[inline(always)]
    pub fn state(&self) -> EpState {
        self.state
    }

    pub fn generation(&self) -> u32 {
        self.generation
    }

    pub fn remote(&self) -> Option<RemoteEp> {
        self.remote
    }

    /// The address of the device this ep's QP is on.
    pub fn local_address(&self) -> &DeviceAddress {
        &self.local
    }

    /// The next WQE carries the fence flag (`uct_ep_fence`).
    pub fn fence(&mut self) -> Result<(), Status> {
        if let Some(status) = self.state.failed_status() {
            return Err(status);
        }
        self.txwq.fence();
        Ok(())
    }

    /// Writes the ep address ([`EP_ADDR_LEN`] bytes).
    pub fn pack_address(&self, out: &mut [u8; EP_ADDR_LEN]) {
        out[..3].copy_from_slice(&self.qpn().to_le_bytes()[..3]);
        out[3..6].copy_from_slice(&self.generation.to_le_bytes()[..3]);
        out[6] = 0;
    }

    /// Reads a peer's ep address: its QP number and generation.
    pub fn unpack_address(bytes: &[u8; EP_ADDR_LEN]) -> (u32, u32) {
        let qpn = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], 0]);
        let generation = u32::from_le_bytes([bytes[3], bytes[4], bytes[5], 0]);
        (qpn, generation)
    }

    /// Connects the QP to the peer: RESET (if it was used) → INIT → RTR → RTS,
    /// at the smaller of the two ifaces' path MTUs: both ends of a
    /// connection then send and accept packets of the same size (a responder
    /// refuses a packet longer than its QP's MTU). UCX's rc_mlx5 takes the
    /// peer's MTU when its address gives one, else its own: the same for
    /// every pair of MTUs where one of them is 4096.
    pub fn connect(
        &mut self,
        limits: &Limits,
        fc: &FcConfig,
        remote: RemoteEp,
    ) -> Result<(), Status> {
        if !self.txwq.is_empty() || !self.pending.is_empty() {
            // Reusing the ring would orphan them: flush, purge (failover) or
            // destroy the ep first.
            tracing::warn!(
                "rc_mlx5 ep {:p}: cannot reconnect with {} outstanding and {} pending ops",
                self,
                self.txwq.len(),
                self.pending.len()
            );
            return Err(Status::Busy);
        }
        let qp = self.txwq.qp();
        if self.state != EpState::Idle {
            qp.modify(QpTransition::Reset)?;
            self.txwq.reset();
        }
        let path_mtu = self.path_mtu.min(remote.path_mtu);
        if path_mtu != self.path_mtu {
            tracing::debug!(
                "rc_mlx5 ep {:p}: path MTU {} (the peer's), not {}",
                self,
                path_mtu.bytes(),
                self.path_mtu.bytes()
            );
        }
        self.txwq.set_path_mtu(path_mtu);
        let qp = self.txwq.qp();
        qp.modify(QpTransition::Init {
            access: Access::ALL,
        })?;
        qp.modify(QpTransition::Rtr(RtrAttr {
            dest_qpn: remote.qpn,
            peer: remote.address,
            rq_psn: START_PSN,
            path_mtu,
            min_rnr_timer: rnr_timer_code(limits.rnr_timeout()),
            max_dest_rd_atomic: limits.max_rd_atomic(),
            path: limits.path(),
        }))?;
        qp.modify(QpTransition::Rts(RtsAttr {
            sq_psn: START_PSN,
            timeout: ack_timeout_exponent(limits.ack_timeout()),
            retry_cnt: limits.retry_count(),
            rnr_retry: limits.rnr_retry_count(),
            max_rd_atomic: limits.max_rd_atomic(),
        }))?;
        self.remote = Some(remote);
        self.fc = EpFc::new(fc);
        self.state = EpState::Connected;
        self.failover.reconnected();
        self.failed_post_logged.set(false);
        Ok(())
    }

    /// Whether a purge left the ep due for a new QP.
    pub fn qp_renewal_due(&self) -> bool {
        self.qp_renewal_due
    }

    /// A purge ended: the next `uct_ep_get_address` or
    /// `uct_ep_connect_to_ep` gives the ep a new QP first.
    pub fn renew_qp_later(&mut self) {
        self.qp_renewal_due = true;
    }

    /// After a purge (when due): the new QP `qp` replaces the failed one,
    /// and the ep is as new (not connected, nothing held, its address
    /// changed), ready for `uct_ep_connect_to_ep` to a fresh peer.
    /// Completions still due for the old QP (kept until the ep is
    /// destroyed) find no ep and are dropped, so they cannot be taken for
    /// the new connection's. Pending requests stay (the caller purges
    /// them); `uct_ep_failover_enable` stays armed. Returns the old QPN
    /// (the iface's table moves the ep to the new one).
    pub fn renew_qp(&mut self, qp: Qp, tx: TxParams, fc: &FcConfig) -> u32 {
        let old_qpn = self.qpn();
        let generation = generation(qp.qpn());
        let txwq = TxWq::new(qp, tx);
        self.retired_qps
            .push(std::mem::replace(&mut self.txwq, txwq).into_qp());
        self.generation = generation;
        self.remote = None;
        self.state = EpState::Idle;
        self.fc = EpFc::new(fc);
        self.failed_post_logged.set(false);
        self.qp_renewal_due = false;
        // The failover phase stays "purged" (a purge again is a no-op) until
        // `connect` starts the new connection.
        tracing::debug!(
            "rc_mlx5 ep {:p}: QP 0x{old_qpn:x} replaced by 0x{:x} after purge",
            self,
            self.qpn()
        );
        old_qpn
    }

    /// Whether an op of the user could be posted now: as
    /// [`RcEp::check_room`], and no pending request of the ep waits (the
    /// op would overtake it; a pending callback of this ep posts past the
    /// requests behind it). Errors: the ep's failure status,
    /// `NotConnected`, `NoResource`.
    #[inline]
    pub fn check_post(&self, credits: u32) -> Result<(), Status> {
        self.check_room(credits)?;
        if self.pending.holds_posts() {
            return Err(held_by_pending());
        }
        Ok(())
    }

    /// Whether the transport could post now (a grant, a flush NOP, or the
    /// pending dispatch asking whether a request may run): the ep is
    /// connected, the ring has room for the largest WQE and the iface has a
    /// CQ credit. Errors: the ep's failure status, `NotConnected`,
    /// `NoResource`.
    #[inline]
    pub fn check_room(&self, credits: u32) -> Result<(), Status> {
        match self.state {
            EpState::Connected | EpState::Invalidated => {}
            EpState::Failed(status, _) => return Err(self.failed(status)),
            EpState::Idle => return Err(self.not_connected()),
        }
        if !self.txwq.has_room(credits) {
            return Err(Status::NoResource);
        }
        Ok(())
    }

    /// The logging half of [`RcEp::check_room`], kept out of the posting
    /// path.
    #[cold]
    #[inline(never)]
    fn not_connected(&self) -> Status {
        tracing::warn!("rc_mlx5 ep {:p}: not connected", self);
        Status::NotConnected
    }

    /// The logging half of [`RcEp::check_room`] for a failed ep: the first
    /// refused post after a failure says why, later ones are quiet.
    #[cold]
    #[inline(never)]
    fn failed(&self, status: Status) -> Status {
        if !self.failed_post_logged.replace(true) {
            tracing::warn!(
                "rc_mlx5 ep {:p}: posts refused, the endpoint failed: {status}",
                self
            );
        }
        status
    }

    /// The send queue, once [`RcEp::check_post`] says an op of the user
    /// can go now: every such post goes through it ([`TxWq::post`],
    /// [`TxWq::post_inline`]).
    #[inline(always)]
    pub fn ready(&mut self, credits: u32) -> Result<&mut TxWq, Status> {
        self.check_post(credits)?;
        Ok(&mut self.txwq)
    }

    /// The send queue for the transport's own messages (grants, flush
    /// NOPs), once [`RcEp::check_room`] says one can go now: they are not
    /// ordered behind pending requests.
    #[inline]
    pub fn ready_own(&mut self, credits: u32) -> Result<&mut TxWq, Status> {
        self.check_room(credits)?;
        Ok(&mut self.txwq)
    }

    /// Starts `uct_ep_flush(UCT_FLUSH_FLAG_CANCEL)`: the QP goes to error, so
    /// the device completes every outstanding WQE with a flush error, which
    /// completes its op with `UCS_ERR_CANCELED`. The ep fails at once
    /// (posts return `UCS_ERR_CANCELED`: the QP cannot execute them, and
    /// if every WQE had already completed no error CQE would ever say so)
    /// until it is connected again.
    pub fn cancel(&mut self) -> Result<(), Status> {
        if !self.state.is_connected() {
            return Ok(());
        }
        self.txwq.qp().modify(QpTransition::Error)?;
        self.state = EpState::Failed(
            Status::Canceled,
            Failure {
                canceled: true,
                cancel_cqe_due: !self.txwq.is_empty(),
                reported: false,
            },
        );
        Ok(())
    }

    /// `uct_ep_invalidate` took the ops over (held for purge): the ep
    /// refuses posts with `UCS_ERR_CANCELED` and no error handler is called.
    pub fn hold_for_purge(&mut self) {
        match &mut self.state {
            EpState::Failed(_, failure) => failure.reported = true,
            state => {
                *state = EpState::Failed(
                    Status::Canceled,
                    Failure {
                        reported: true,
                        ..Failure::default()
                    },
                )
            }
        }
    }

    /// A plain `uct_ep_invalidate` moved the connected ep's QP to error.
    pub fn mark_invalidated(&mut self) {
        if self.state == EpState::Connected {
            self.state = EpState::Invalidated;
        }
    }

    /// Posts the flow-control grant message (a SEND of the AM header
    /// alone). It takes no window: grants must flow when windows are empty.
    pub fn post_fc_grant(&mut self, credits: &mut u32) -> Result<(), Status> {
        let grant = PostedOp::Internal(InternalOp::FcGrant);
        let spec = PostSpec::new(grant, mlx5::MLX5_OPCODE_SEND, AM_HDR_LEN);
        self.ready_own(*credits)?.post_inline(
            credits,
            spec,
            InlineSegs {
                raddr: None,
                head: &am_header(FC_PURE_GRANT),
                data: &[],
            },
        )
    }

    /// Work progress owes this ep: pending requests, or a grant message or
    /// probe that waited for room ([`RcEp::post_deferred`]).
    pub fn has_deferred_work(&self) -> bool {
        !self.pending.is_empty() || self.fc.pure_grant_due() || self.probe_due
    }

    /// `uct_ep_check` found no CQ credit for its probe: progress posts it
    /// (before pending requests) once one returns.
    pub fn defer_probe(&mut self) {
        self.probe_due = true;
    }

    pub fn probe_due(&self) -> bool {
        self.probe_due
    }

    /// Posts what waited for room before the ep's pending requests: the
    /// grant message the peer's window waits for, then a due probe. One
    /// that fails for another reason than room is dropped (logged: the ep
    /// failed, its error tells the rest). `NoResource`: still no room, what
    /// is left stays due.
    pub fn post_deferred(&mut self, credits: &mut u32) -> Result<(), Status> {
        if self.fc.pure_grant_due() {
            match self.post_fc_grant(credits) {
                Ok(()) => self.fc.pure_grant_settled(),
                Err(Status::NoResource) => return Err(Status::NoResource),
                Err(status) => {
                    tracing::debug!("rc_mlx5 ep {:p}: grant not sent: {status}", self);
                    self.fc.pure_grant_settled();
                }
            }
        }
        if self.probe_due {
            match self.post_probe(credits) {
                Ok(()) => self.probe_due = false,
                Err(Status::NoResource) => return Err(Status::NoResource),
                Err(status) => {
                    tracing::debug!("rc_mlx5 ep {:p}: probe not sent: {status}", self);
                    self.probe_due = false;
                }
            }
        }
        Ok(())
    }

    /// Posts the probe of `uct_ep_check` ([`InternalOp::Probe`]): a signalled
    /// zero-length RDMA WRITE to address 0 with key 0, which the peer's
    /// responder acknowledges without looking at memory (InfiniBand checks
    /// no key for a zero-length transfer). A peer that is gone never
    /// acknowledges it: the retries run out and the ep fails, reporting to
    /// the error handler as any transport error does.
    pub fn post_probe(&mut self, credits: &mut u32) -> Result<(), Status> {
        let probe = PostedOp::Internal(InternalOp::Probe);
        let spec = PostSpec::new(probe, mlx5::MLX5_OPCODE_RDMA_WRITE, 0).signaled();
        self.ready_own(*credits)?.post(credits, spec, |wqe| {
            wqe.raddr(mlx5::RaddrSeg { raddr: 0, rkey: 0 });
        })
    }

    /// An error CQE with `status` arrived: whether it is the first of this
    /// failure, and the status its ops fail with (a cancel's ops end
    /// canceled).
    pub fn begin_error(&mut self, status: Status) -> ErrorCqe {
        match &mut self.state {
            EpState::Failed(_, failure) => {
                let cancel_cqe = std::mem::take(&mut failure.cancel_cqe_due);
                ErrorCqe {
                    first: cancel_cqe,
                    status: if failure.canceled {
                        Status::Canceled
                    } else {
                        status
                    },
                }
            }
            _ => ErrorCqe {
                first: true,
                status,
            },
        }
    }

    /// The ep fails with `status` (the ops before the failed WQE are done).
    pub fn set_failed(&mut self, status: Status) {
        let failure = match self.state {
            EpState::Failed(_, failure) => failure,
            _ => Failure::default(),
        };
        self.state = EpState::Failed(status, failure);
    }

    /// What to do with the ops of a failed ep, and whether the iface's error
    /// handler is to be called (once per failure, never for a cancel). The
    /// ep counts as reported from here on.
    pub fn error_decision(&mut self, status: Status) -> (OnError, bool) {
        let EpState::Failed(_, failure) = &mut self.state else {
            return (OnError::CompleteWithError, false);
        };
        let canceled = failure.canceled;
        let report = !failure.reported && !canceled;
        failure.reported = true;
        // uct_ep_flush(CANCEL) asked for the ops to end canceled, and for no
        // error handler call.
        let decision = if canceled && !self.failover.is_holding() {
            OnError::CompleteWithError
        } else {
            self.failover.on_transport_error(status)
        };
        (decision, report)
    }
}
