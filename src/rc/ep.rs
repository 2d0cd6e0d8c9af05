//! The rc_mlx5 endpoint: one RC QP, its send ring, and the table of
//! operations posted and not yet completed.
//!
//! # The send-path core, and how to add an operation
//!
//! Every data-path operation goes through [`RcEp::post`] (and nothing else
//! writes the send ring):
//! 1. validate the arguments (lengths against [`crate::rc::iface::Limits`],
//!    NULL buffers, keys) and return `InvalidParam` before touching the ep;
//! 2. call [`RcEp::check_post`] first if the op has side effects that must not
//!    happen when it cannot be posted (a bcopy pack callback);
//! 3. call [`RcEp::post`] with a [`PostSpec`] (opcode, op kind, bytes, the
//!    caller's completion, what to do when it completes) and a closure that
//!    adds the segments after the control segment with the
//!    [`crate::mlx5::WqeBuilder`] (remote address, atomic operands, data or
//!    inline segments). `post` checks the ep state, ring space and CQ
//!    credits (`NoResource`), builds the WQE at the producer index, decides
//!    signalling, records the op in the [`OpTable`], advances the PSN,
//!    publishes the doorbell record and rings the doorbell;
//! 4. return `UCS_OK` (no completion pending for the caller) or
//!    `UCS_INPROGRESS` (the caller's `comp` will be called).
//!
//! Completions come back through [`RcEp::complete_through`] (a signalled CQE
//! completes every op up to its WQE, in posting order) or
//! [`RcEp::fail`] (error CQE). An op that needs work at completion (copying a
//! READ into the caller's unpack callback, a fetching atomic's result) says
//! so with a [`CompletionAction`].

use std::collections::VecDeque;
use std::ffi::{c_uint, c_void};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::abi::*;
use crate::hca::{
    ack_timeout_exponent, rnr_timer_code, Access, DeviceAddress, Doorbell, Mtu, Qp, QpTransition,
    RtrAttr, RtsAttr, SendRing,
};
use crate::mlx5::{self, psn_add, CtrlSeg, RaddrSeg, WqeBuilder, PSN_MASK, SEND_WQE_BB};
use crate::rc::fc::{EpFc, FC_PURE_GRANT};
use crate::rc::iface::{am_header, IfaceState, RcIface, AM_HDR_LEN};
use crate::rc::pool::BufferPool;

/// Tag of a live [`RcEp`].
const EP_MAGIC: u64 = 0x7263_5f65_705f_5f5f; // "rc_ep___"

/// Largest WQE the datapath builds, in basic blocks (UCX's mlx5 limit too);
/// the ring always keeps this much room before a post is attempted.
pub const MAX_WQE_BBS: u16 = 4;

/// Bytes of an ep address, laid out as UCX 1.13's rc_mlx5
/// (`uct_rc_mlx5_ep_address_t`) so that its eps and ours connect: the QP
/// number (3 bytes, least significant first), then 3 bytes UCX uses only
/// with hardware tag matching (off: it neither writes nor reads them),
/// which carry our connection generation ([`RcEp::generation`]), then
/// UCX's atomic MR id (0: atomics use the registration's own key).
pub const EP_ADDR_LEN: usize = 7;

/// The PSN every connection starts from in both directions, as UCX's
/// rc_mlx5 connects its QPs (it does not exchange PSNs).
pub const START_PSN: u32 = 0;

/// What kind of operation a WQE carries. Failover uses it to decide whether
/// an op may be replayed (SEND/WRITE/READ) or must not be (fetching atomics
/// that executed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    AmShort,
    AmBcopy,
    AmZcopy,
    PutShort,
    PutBcopy,
    PutZcopy,
    /// A READ into a bounce buffer, copied to the caller's buffer when it
    /// completes.
    GetShort,
    GetBcopy,
    GetZcopy,
    /// Atomic without a result (post).
    AtomicPost,
    /// Atomic whose old value is fetched into the caller's buffer.
    AtomicFetch,
    /// A signalled NOP posted by flush to get a completion.
    Flush,
    /// The flow-control grant message ([`crate::rc::fc`]): the transport's
    /// own, never reported or completed to the user.
    FcGrant,
}

impl OpKind {
    /// Whether the op is a user AM (a SEND that raises a solicited event at
    /// the receiver, as UCX marks them, so `UCT_EVENT_RECV` waiters wake
    /// for AMs and not for flow-control grants).
    #[inline(always)]
    pub fn is_am(self) -> bool {
        matches!(self, OpKind::AmShort | OpKind::AmBcopy | OpKind::AmZcopy)
    }

    /// Whether the op is an RDMA READ or an atomic (what a fence orders).
    pub fn is_read_like(self) -> bool {
        matches!(
            self,
            OpKind::GetShort
                | OpKind::GetBcopy
                | OpKind::GetZcopy
                | OpKind::AtomicPost
                | OpKind::AtomicFetch
        )
    }
}

/// Work done when an op completes successfully, before the caller's
/// completion is called.
#[derive(Clone, Copy, Debug)]
pub enum CompletionAction {
    None,
    /// get_bcopy: hand `length` bytes of the bounce buffer's data to the
    /// caller's unpack callback.
    Unpack {
        unpack_cb: uct_unpack_callback_t,
        arg: *mut c_void,
        length: usize,
    },
    /// get_short: copy `length` bytes of the bounce buffer's data to the
    /// caller's `buffer` (valid until the op completes, by UCT's contract).
    CopyOut {
        buffer: *mut u8,
        length: usize,
    },
    /// A fetching atomic into a bounce buffer: copy `width` bytes (4 or 8)
    /// to `result`, byte-swapping when the device writes big-endian.
    FetchResult {
        result: *mut c_void,
        width: u8,
    },
}

/// A bounce buffer an op owns until it completes (bcopy data, READ target,
/// atomic result). `data` is where the op's bytes start.
#[derive(Clone, Copy, Debug)]
pub struct Bounce {
    pub buffer: *mut u8,
    pub data: *mut u8,
}

/// One posted WQE not yet known complete. Entries are kept in posting order;
/// the WQEs occupy the send ring from `wqe_index` for `wqebbs` blocks, and
/// the op used PSNs `first_psn .. first_psn + psn_count` (24-bit).
///
/// What replaying an op needs and where it is: inline data (am_short
/// header and payload, put_short data, the am_zcopy header) stays in the
/// send ring at `wqe_index` until the op completes (`mlx5::decode_send_wqe`
/// reads it back); bcopy data is in `bounce`; zcopy ops keep a copy of the
/// caller's iov in `iov`; gets keep their unpack callback in `action`.
#[derive(Clone, Debug)]
pub struct OutstandingOp {
    pub kind: OpKind,
    /// Send-ring index (in basic blocks, 16 bits) of the WQE's control
    /// segment: what a CQE's `wqe_counter` names.
    pub wqe_index: u16,
    pub wqebbs: u16,
    /// The mlx5 opcode and opmod of the WQE.
    pub opcode: u8,
    pub opmod: u8,
    /// Bytes the op moves (the payload on the wire incl. the AM header, the
    /// READ length, the atomic width).
    pub length: usize,
    pub first_psn: u32,
    /// PSNs the op uses on the wire (NOP: 0).
    pub psn_count: u32,
    /// AM id for AM ops.
    pub am_id: Option<u8>,
    /// Remote address and rkey for RMA/atomics (0 otherwise).
    pub remote_addr: u64,
    pub rkey: u32,
    /// The caller's `uct_rkey_t` as passed to the posting call (failover
    /// reports it, not the device key).
    pub uct_rkey: uct_rkey_t,
    /// `flags` of the `uct_ep_flush` that posted a flush NOP.
    pub flush_flags: c_uint,
    /// A CQE was requested for this WQE.
    pub signaled: bool,
    /// The caller's completion (NULL: none).
    pub comp: *mut uct_completion_t,
    pub bounce: Option<Bounce>,
    pub action: CompletionAction,
    /// zcopy ops: the caller's iov entries (buffers, lengths, memory
    /// handles), copied at post time.
    pub iov: Option<Box<[uct_iov_t]>>,
    /// `flags` of am_bcopy/am_zcopy.
    pub am_flags: c_uint,
}

/// The outstanding ops of an ep, oldest first.
#[derive(Default)]
pub struct OpTable {
    pub ops: VecDeque<OutstandingOp>,
}

impl OpTable {
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &OutstandingOp> {
        self.ops.iter()
    }
}

/// The producer side of the QP's send ring.
pub struct TxRing {
    pub ring: SendRing,
    pub doorbell: Doorbell,
    /// Next WQE index (in basic blocks; wraps at 2^16).
    pub pi: u16,
    /// First block not known to be consumed (end of the last completed op).
    pub ci: u16,
    /// Blocks posted since the last signalled WQE.
    pub unsignaled_bbs: u32,
    /// Signal at least every this many blocks.
    pub moderation: u32,
    /// Signal every WQE while the iface has at most this many CQ credits
    /// left: unsignaled WQEs hold credits until a later CQE, so when
    /// credits run low every ep's newest WQE must produce one (otherwise
    /// an idle ep's unsignaled tail could starve the others forever).
    pub credit_low_water: u32,
    /// PSN the next packet will carry.
    pub next_psn: u32,
}

impl TxRing {
    /// The empty send ring of a new QP, starting at [`START_PSN`].
    fn for_qp(qp: &Qp, state: &IfaceState) -> TxRing {
        let ring = qp.send_ring();
        let moderation = state.limits.tx_moderation.min(ring.wqebb_count / 4).max(1);
        TxRing {
            ring,
            doorbell: qp.doorbell(),
            pi: 0,
            ci: 0,
            unsignaled_bbs: 0,
            moderation,
            credit_low_water: (state.tx_credits_max / 2).max(1),
            next_psn: START_PSN,
        }
    }

    /// Blocks free in the ring.
    #[inline]
    pub fn free_bbs(&self) -> u32 {
        self.ring.wqebb_count - u32::from(self.pi.wrapping_sub(self.ci))
    }
}

/// Where the ep is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpState {
    /// Created; `uct_ep_connect_to_ep` not called yet.
    Idle,
    Connected,
    /// A transport error: posts fail with this status.
    Failed(Status),
}

/// What the peer's ep address says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteEp {
    pub address: DeviceAddress,
    pub qpn: u32,
    /// The peer's connection generation, from its ep address (what a
    /// UCX peer leaves there instead is not meaningful).
    pub generation: u32,
}

/// An endpoint (what a `uct_ep_h` points at).
#[repr(C)]
pub struct RcEp {
    /// What C sees: `ep->iface`; must stay the first field.
    pub uct: uct_ep,
    /// Read only by the debug check of [`RcEp::from_handle`].
    #[cfg_attr(not(debug_assertions), allow(dead_code))]
    magic: u64,
    pub iface: *mut RcIface,
    pub qp: Qp,
    pub tx: TxRing,
    pub ops: OpTable,
    pub state: EpState,
    /// A value that differs between QPs and runs (never 0), sent in the ep
    /// address: it names this connection in failover tokens, so that a
    /// token of an earlier connection on the same QP number is refused.
    pub generation: u32,
    pub remote: Option<RemoteEp>,
    pub path_mtu: Mtu,
    /// Requests from `uct_ep_pending_add`, oldest first.
    pub pending: VecDeque<*mut uct_pending_req_t>,
    /// The next WQE carries the fence flag (`uct_ep_fence`).
    pub fence_next: bool,
    /// The iface's error handler was called for this ep.
    pub error_reported: bool,
    /// `uct_ep_flush(UCT_FLUSH_FLAG_CANCEL)` moved the QP to error: the
    /// flushed ops complete with `UCS_ERR_CANCELED` and the error handler is
    /// not called (the caller asked for it).
    pub canceled: bool,
    /// Set by [`RcEp::cancel`], which fails the ep at once (the QP is in
    /// error, nothing posted from then on can succeed), until the first
    /// error CQE: that one still completes the ops executed before it.
    cancel_cqe_due: bool,
    /// A plain `uct_ep_invalidate` moved the QP to error while the ep is
    /// still connected (it fails at the first error CQE): a flush with
    /// requests pending then posts its NOP at once, since those requests
    /// can never go out.
    pub invalidated: bool,
    /// A post refused because the ep failed has been logged (once per
    /// failure: callers may retry in a loop).
    failed_post_logged: std::cell::Cell<bool>,
    /// Failover state (`crate::rc::failover`): whether an error or
    /// invalidation keeps the op table for `uct_ep_outstanding_purge`.
    pub failover: crate::failover::EpFailover,
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
    /// ([`RcEp::renew_qp_if_due`]), so that the purge does not pay for one
    /// and an ep destroyed after its purge never makes one.
    pub qp_renewal_due: bool,
}

/// What [`RcEp::post`] needs besides the segments.
pub struct PostSpec {
    pub kind: OpKind,
    pub opcode: u8,
    pub opmod: u8,
    pub imm: u32,
    pub length: usize,
    pub am_id: Option<u8>,
    pub remote_addr: u64,
    pub rkey: u32,
    pub uct_rkey: uct_rkey_t,
    pub flush_flags: c_uint,
    pub comp: *mut uct_completion_t,
    /// Request a CQE even without a completion.
    pub force_signal: bool,
    pub bounce: Option<Bounce>,
    pub action: CompletionAction,
    /// zcopy ops: a copy of the caller's iov (kept in the op table).
    pub iov: Option<Box<[uct_iov_t]>>,
    pub am_flags: c_uint,
}

impl PostSpec {
    /// A spec with no remote address, completion, bounce buffer or action.
    pub fn new(kind: OpKind, opcode: u8, length: usize) -> PostSpec {
        PostSpec {
            kind,
            opcode,
            opmod: 0,
            imm: 0,
            length,
            am_id: None,
            remote_addr: 0,
            rkey: 0,
            uct_rkey: 0,
            flush_flags: 0,
            comp: std::ptr::null_mut(),
            force_signal: false,
            bounce: None,
            action: CompletionAction::None,
            iov: None,
            am_flags: 0,
        }
    }
}

/// Calls a completion the way UCX's `uct_invoke_completion` does: records
/// the first error, counts down, calls `func` at zero.
///
/// # Safety
/// `comp` must be NULL or a live completion.
pub unsafe fn invoke_completion(comp: *mut uct_completion_t, status: ucs_status_t) {
    if comp.is_null() {
        return;
    }
    // SAFETY: live by the contract; the reference ends before the callback.
    let (remaining, func) = unsafe {
        let c = &mut *comp;
        if status != UCS_OK && c.status == UCS_OK {
            c.status = status;
        }
        c.count -= 1;
        (c.count, c.func)
    };
    if remaining == 0 {
        if let Some(func) = func {
            // SAFETY: the caller's callback for its completion.
            unsafe { func(comp) };
        }
    }
}

/// The status an error CQE's syndrome means for the user.
pub fn syndrome_status(syndrome: u8) -> Status {
    match syndrome {
        mlx5::MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR
        | mlx5::MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR => Status::EndpointTimeout,
        mlx5::MLX5_CQE_SYNDROME_WR_FLUSH_ERR => Status::Canceled,
        mlx5::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR
        | mlx5::MLX5_CQE_SYNDROME_REMOTE_OP_ERR
        | mlx5::MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR
        | mlx5::MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR => Status::ConnectionReset,
        _ => Status::IoError,
    }
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

/// Rings the send doorbell for the WQE at `ctrl`. Never inlined, so that
/// profiles show the doorbell (with the soft HCA: the whole device) apart
/// from the transport's own posting cost (`benches/BENCHMARKS.md`); the call
/// costs a few instructions.
#[inline(never)]
fn ring_doorbell(doorbell: &crate::hca::Doorbell, ctrl: *const u8) {
    doorbell.ring(ctrl);
}

/// Whether WQE index `a` was posted at or before `b` (16-bit ring counters).
#[inline]
fn index_at_or_before(a: u16, b: u16) -> bool {
    (b.wrapping_sub(a) as i16) >= 0
}

impl RcEp {
    /// Creates the QP of a new ep on `iface` (not connected yet). The caller
    /// houses it in the iface's tombstone yard (a stable address that stays
    /// a tombstone after destroy: [`crate::core::tombstone`]).
    pub fn create(iface: *mut RcIface, state: &mut IfaceState) -> Result<RcEp, Status> {
        let qp = state.create_qp()?;
        let tx = TxRing::for_qp(&qp, state);
        let op_capacity = tx.ring.wqebb_count as usize;
        let generation = generation(qp.qpn());
        // An RcIface starts with its BaseIface, which starts with uct_iface.
        let handle = iface as uct_iface_h;
        let ep = RcEp {
            uct: uct_ep { iface: handle },
            magic: EP_MAGIC,
            iface,
            qp,
            tx,
            // One op per WQE at most, so posting never grows it.
            ops: OpTable {
                ops: VecDeque::with_capacity(op_capacity),
            },
            state: EpState::Idle,
            generation,
            remote: None,
            path_mtu: state.path_mtu,
            pending: VecDeque::new(),
            fence_next: false,
            error_reported: false,
            canceled: false,
            cancel_cqe_due: false,
            invalidated: false,
            failed_post_logged: std::cell::Cell::new(false),
            failover: crate::failover::EpFailover::default(),
            fc: EpFc::new(&state.fc),
            retired_qps: Vec::new(),
            qp_renewal_due: false,
        };
        Ok(ep)
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

    /// Clears the tag before the ep becomes a tombstone (what the debug
    /// check of [`RcEp::from_handle`] reads).
    pub fn invalidate(&mut self) {
        self.magic = 0;
    }

    pub fn qpn(&self) -> u32 {
        self.tx.ring.qpn
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

    /// Connects the QP to the peer: RESET (if it was used) → INIT → RTR → RTS.
    pub fn connect(&mut self, state: &IfaceState, remote: RemoteEp) -> Result<(), Status> {
        if !self.ops.is_empty() || !self.pending.is_empty() {
            // Reusing the ring would orphan them: flush, purge (failover) or
            // destroy the ep first.
            tracing::warn!(
                "rc_mlx5 ep {:p}: cannot reconnect with {} outstanding and {} pending ops",
                self,
                self.ops.len(),
                self.pending.len()
            );
            return Err(Status::Busy);
        }
        if self.state != EpState::Idle {
            self.qp.modify(QpTransition::Reset)?;
            self.tx.pi = 0;
            self.tx.ci = 0;
            self.tx.unsignaled_bbs = 0;
            self.tx.next_psn = START_PSN;
        }
        let limits = &state.limits;
        self.qp.modify(QpTransition::Init {
            access: Access::ALL,
        })?;
        self.qp.modify(QpTransition::Rtr(RtrAttr {
            dest_qpn: remote.qpn,
            peer: remote.address,
            rq_psn: START_PSN,
            path_mtu: self.path_mtu,
            min_rnr_timer: rnr_timer_code(limits.rnr_timeout),
            max_dest_rd_atomic: limits.max_rd_atomic,
            path: limits.path,
        }))?;
        self.qp.modify(QpTransition::Rts(RtsAttr {
            sq_psn: START_PSN,
            timeout: ack_timeout_exponent(limits.ack_timeout),
            retry_cnt: limits.retry_count,
            rnr_retry: limits.rnr_retry_count,
            max_rd_atomic: limits.max_rd_atomic,
        }))?;
        self.remote = Some(remote);
        self.fc = EpFc::new(&state.fc);
        self.state = EpState::Connected;
        self.error_reported = false;
        self.failover.reconnected();
        self.canceled = false;
        self.cancel_cqe_due = false;
        self.invalidated = false;
        self.failed_post_logged.set(false);
        Ok(())
    }

    /// After a purge (when due, [`RcEp::renew_qp_if_due`]): a new QP
    /// replaces the failed one, and the ep is as
    /// new (not connected, nothing held, its address changed), ready for
    /// `uct_ep_connect_to_ep` to a fresh peer. Completions still due for
    /// the old QP (kept until the ep is destroyed) find no ep and are
    /// dropped, so they cannot be taken for the new connection's. Pending
    /// requests stay (the caller purges them); `uct_ep_failover_enable`
    /// stays armed.
    ///
    /// # Safety
    /// `self` is the ep `self_ptr` of the iface whose state is `state`.
    pub unsafe fn renew_qp(
        &mut self,
        self_ptr: *mut RcEp,
        state: &mut IfaceState,
    ) -> Result<(), Status> {
        debug_assert!(self.ops.is_empty());
        let qp = state.create_qp()?;
        let tx = TxRing::for_qp(&qp, state);
        let generation = generation(qp.qpn());
        let old_qpn = self.qpn();
        state.eps.remove(&old_qpn);
        self.retired_qps.push(std::mem::replace(&mut self.qp, qp));
        self.tx = tx;
        self.generation = generation;
        self.remote = None;
        self.state = EpState::Idle;
        self.fc = EpFc::new(&state.fc);
        self.fence_next = false;
        self.error_reported = false;
        self.canceled = false;
        self.cancel_cqe_due = false;
        self.invalidated = false;
        self.failed_post_logged.set(false);
        // The failover phase stays "purged" (a purge again is a no-op) until
        // `connect` starts the new connection.
        state.eps.insert(self.qpn(), self_ptr);
        tracing::debug!(
            "rc_mlx5 ep {self_ptr:p}: QP 0x{old_qpn:x} replaced by 0x{:x} after purge",
            self.qpn()
        );
        Ok(())
    }

    /// [`RcEp::renew_qp`] if a purge left it due.
    ///
    /// # Safety
    /// `ep` live.
    pub unsafe fn renew_qp_if_due(ep: *mut RcEp) -> Result<(), Status> {
        // SAFETY: live by the contract; its iface outlives it. The iface
        // state is borrowed apart from the ep (housed in its own allocation).
        unsafe {
            if !(*ep).qp_renewal_due {
                return Ok(());
            }
            let iface = (*ep).iface;
            (*ep).renew_qp(ep, &mut (*iface).state)?;
            (*ep).qp_renewal_due = false;
        }
        Ok(())
    }

    /// Whether an op could be posted now: the ep is connected, the ring has
    /// room for the largest WQE and the iface has a CQ credit. Errors: the
    /// ep's failure status, `NotConnected`, `NoResource`.
    #[inline]
    pub fn check_post(&self, credits: u32) -> Result<(), Status> {
        match self.state {
            EpState::Connected => {}
            EpState::Failed(status) => return Err(self.failed(status)),
            EpState::Idle => return Err(self.not_connected()),
        }
        if self.tx.free_bbs() < u32::from(MAX_WQE_BBS) || credits == 0 {
            return Err(Status::NoResource);
        }
        Ok(())
    }

    /// The logging half of [`RcEp::check_post`], kept out of the posting
    /// path.
    #[cold]
    #[inline(never)]
    fn not_connected(&self) -> Status {
        tracing::warn!("rc_mlx5 ep {:p}: not connected", self);
        Status::NotConnected
    }

    /// The logging half of [`RcEp::check_post`] for a failed ep: the first
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

    /// Posts one WQE (see the module docs). `segments` adds everything after
    /// the control segment. On error nothing is posted and the ring is
    /// unchanged.
    pub fn post(
        &mut self,
        credits: &mut u32,
        spec: PostSpec,
        segments: impl FnOnce(&mut WqeBuilder<'_>),
    ) -> Result<(), Status> {
        self.check_post(*credits)?;
        let index = self.tx.pi;
        let ring_len = self.ring_len();
        // SAFETY: the send ring is `ring_len` bytes of memory that stays
        // valid while the QP lives; only this ep writes it, and the device
        // reads only blocks below the published counter, which the blocks
        // written here are not yet.
        let ring = unsafe { std::slice::from_raw_parts_mut(self.tx.ring.buf, ring_len) };
        let mut builder = WqeBuilder::new(ring, index).ok_or(Status::IoError)?;
        segments(&mut builder);
        let wqebbs = (builder.ds() * mlx5::SEG_LEN).div_ceil(SEND_WQE_BB) as u16;
        if wqebbs > MAX_WQE_BBS {
            tracing::warn!(
                "rc_mlx5 ep {:p}: WQE of {wqebbs} blocks exceeds {MAX_WQE_BBS}",
                self
            );
            return Err(Status::InvalidParam);
        }
        let (signaled, fm_ce_se) = self.completion_flags(&spec, wqebbs, *credits);
        builder
            .finish(self.ctrl_template(&spec, fm_ce_se))
            .map_err(|error| {
                tracing::warn!("rc_mlx5 ep {:p}: cannot build WQE: {error:?}", self);
                Status::InvalidParam
            })?;
        let psn_count = self.psn_count(&spec);
        self.commit(credits, spec, index, wqebbs, signaled, psn_count);
        Ok(())
    }

    /// Posts a WQE of control, optional remote address and one inline
    /// segment (`head` then `data`): `put_short`, `am_short`. Same effect as
    /// [`RcEp::post`] with those segments, through
    /// [`mlx5::write_inline_wqe`] when the WQE does not wrap the ring.
    #[inline(always)]
    pub fn post_inline<const H: usize>(
        &mut self,
        credits: &mut u32,
        spec: PostSpec,
        raddr: Option<RaddrSeg>,
        head: &[u8; H],
        data: &[u8],
    ) -> Result<(), Status> {
        self.check_post(*credits)?;
        let index = self.tx.pi;
        let ds = mlx5::inline_wqe_ds(raddr.is_some(), H + data.len());
        let wqebbs = (ds * mlx5::SEG_LEN).div_ceil(SEND_WQE_BB) as u16;
        if wqebbs <= MAX_WQE_BBS {
            let (signaled, fm_ce_se) = self.completion_flags(&spec, wqebbs, *credits);
            let ctrl = self.ctrl_template(&spec, fm_ce_se);
            // SAFETY: as in `post`: the ring is valid, written only by this
            // ep, and these blocks are not yet published to the device.
            let ring = unsafe { std::slice::from_raw_parts_mut(self.tx.ring.buf, self.ring_len()) };
            // ds <= 4 blocks' worth (< MAX_DS); the ring is the QP's, whose
            // block count is a power of two (`commit` masks with it too).
            const _: () = assert!(
                MAX_WQE_BBS as usize * SEND_WQE_BB / mlx5::SEG_LEN <= mlx5::MAX_DS as usize
            );
            if mlx5::write_inline_wqe_prechecked(ring, index, ds, ctrl, raddr, head, data).is_some()
            {
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
        self.post_inline_wrapped(credits, spec, raddr, head, data)
    }

    /// The rare half of [`RcEp::post_inline`]: the WQE wraps the ring's end
    /// (or is too large: `post` reports it). Kept out of line so that the
    /// fast path's registers and stack frame stay small.
    #[cold]
    #[inline(never)]
    fn post_inline_wrapped<const H: usize>(
        &mut self,
        credits: &mut u32,
        spec: PostSpec,
        raddr: Option<RaddrSeg>,
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

    #[inline]
    fn ring_len(&self) -> usize {
        self.tx.ring.wqebb_count as usize * SEND_WQE_BB
    }

    /// Whether the WQE requests a CQE (selective signalling: a completion,
    /// the moderation count or low CQ credits), and its `fm_ce_se` byte.
    #[inline]
    fn completion_flags(&self, spec: &PostSpec, wqebbs: u16, credits: u32) -> (bool, u8) {
        let signaled = !spec.comp.is_null()
            || spec.force_signal
            || self.tx.unsignaled_bbs + u32::from(wqebbs) >= self.tx.moderation
            || credits <= self.tx.credit_low_water;
        let mut fm_ce_se = if signaled {
            mlx5::MLX5_WQE_CTRL_CQ_UPDATE
        } else {
            0
        };
        if self.fence_next {
            fm_ce_se |= mlx5::MLX5_FENCE_MODE_SMALL_AND_FENCE;
        }
        if spec.kind.is_am() {
            fm_ce_se |= mlx5::MLX5_WQE_CTRL_SOLICITED;
        }
        (signaled, fm_ce_se)
    }

    /// The control segment of the WQE `spec` describes (index and DS are
    /// filled in by whoever writes it).
    #[inline]
    fn ctrl_template(&self, spec: &PostSpec, fm_ce_se: u8) -> CtrlSeg {
        CtrlSeg {
            opcode: spec.opcode,
            opmod: spec.opmod,
            qpn: self.tx.ring.qpn,
            fm_ce_se,
            imm: spec.imm,
            ..CtrlSeg::default()
        }
    }

    /// PSNs the WQE of `spec` uses on the wire: one per path-MTU packet
    /// of its data (at least one), none for a NOP.
    #[inline]
    fn psn_count(&self, spec: &PostSpec) -> u32 {
        match spec.opcode {
            mlx5::MLX5_OPCODE_NOP => 0,
            mlx5::MLX5_OPCODE_SEND
            | mlx5::MLX5_OPCODE_SEND_IMM
            | mlx5::MLX5_OPCODE_RDMA_WRITE
            | mlx5::MLX5_OPCODE_RDMA_WRITE_IMM
            | mlx5::MLX5_OPCODE_RDMA_READ => (spec.length as u64)
                .div_ceil(u64::from(self.path_mtu.bytes()))
                .max(1) as u32,
            _ => 1,
        }
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
        self.ops.ops.push_back(OutstandingOp {
            kind: spec.kind,
            wqe_index: index,
            wqebbs,
            opcode: spec.opcode,
            opmod: spec.opmod,
            length: spec.length,
            first_psn: self.tx.next_psn,
            psn_count,
            am_id: spec.am_id,
            remote_addr: spec.remote_addr,
            rkey: spec.rkey,
            uct_rkey: spec.uct_rkey,
            flush_flags: spec.flush_flags,
            signaled,
            comp: spec.comp,
            bounce: spec.bounce,
            action: spec.action,
            iov: spec.iov,
            am_flags: spec.am_flags,
        });
        self.fence_next = false;
        self.tx.unsignaled_bbs = if signaled {
            0
        } else {
            self.tx.unsignaled_bbs + u32::from(wqebbs)
        };
        self.tx.next_psn = psn_add(self.tx.next_psn, psn_count);
        self.tx.pi = index.wrapping_add(wqebbs);
        *credits -= 1;
        // SAFETY: dbrec points at the QP's 8-byte, 4-aligned doorbell record,
        // valid while the QP lives; word 1 is the send counter, stored with
        // release ordering so the device sees the WQE bytes first.
        let counter = unsafe { &*(self.tx.ring.dbrec as *const AtomicU32).add(1) };
        counter.store(mlx5::dbrec_word(self.tx.pi), Ordering::Release);
        let ctrl_at = (usize::from(index) & (self.tx.ring.wqebb_count as usize - 1)) * SEND_WQE_BB;
        // SAFETY: ctrl_at is inside the ring (masked index).
        let ctrl_ptr = unsafe { self.tx.ring.buf.add(ctrl_at) };
        ring_doorbell(&self.tx.doorbell, ctrl_ptr);
    }

    /// Starts `uct_ep_flush(UCT_FLUSH_FLAG_CANCEL)`: the QP goes to error, so
    /// the device completes every outstanding WQE with a flush error, which
    /// completes its op with `UCS_ERR_CANCELED`. The ep fails at once
    /// (posts return `UCS_ERR_CANCELED`: the QP cannot execute them, and
    /// if every WQE had already completed no error CQE would ever say so)
    /// until it is connected again.
    pub fn cancel(&mut self) -> Result<(), Status> {
        if self.state != EpState::Connected {
            return Ok(());
        }
        self.canceled = true;
        self.qp.modify(QpTransition::Error)?;
        self.state = EpState::Failed(Status::Canceled);
        self.cancel_cqe_due = !self.ops.is_empty();
        Ok(())
    }

    /// Posts the flow-control grant message (a SEND of the AM header
    /// alone). It takes no window: grants must flow when windows are empty.
    pub fn post_fc_grant(&mut self, credits: &mut u32) -> Result<(), Status> {
        let spec = PostSpec::new(OpKind::FcGrant, mlx5::MLX5_OPCODE_SEND, AM_HDR_LEN);
        self.post_inline(credits, spec, None, &am_header(FC_PURE_GRANT), &[])
    }

    /// Completes, in order, every op posted at or before WQE `wqe_counter`
    /// (a signalled CQE: the device completes in order). Returns the number
    /// of ops completed.
    ///
    /// # Safety
    /// `ep` must be live; user callbacks run from here (they may post on
    /// this or other eps, so no borrow of the ep is held across them).
    pub unsafe fn complete_through(ep: *mut RcEp, wqe_counter: u16) -> u32 {
        // SAFETY: live by the contract.
        let (iface, qpn) = unsafe { ((*ep).iface, (*ep).qpn()) };
        let mut done = 0;
        loop {
            // A callback may have destroyed the ep: stop touching it then.
            // SAFETY: the iface outlives its eps' callbacks.
            if done > 0 && !unsafe { still_live(iface, ep, qpn) } {
                break;
            }
            // SAFETY: live by the contract; the borrow ends before callbacks.
            let (op, iface) = unsafe {
                let this = &mut *ep;
                match this.ops.ops.front() {
                    Some(op) if index_at_or_before(op.wqe_index, wqe_counter) => {}
                    _ => break,
                }
                let Some(op) = this.ops.ops.pop_front() else {
                    break;
                };
                this.tx.ci = op.wqe_index.wrapping_add(op.wqebbs);
                (op, this.iface)
            };
            // SAFETY: the ep's iface outlives it.
            unsafe { finish_op(iface, &op, UCS_OK) };
            done += 1;
        }
        done
    }

    /// An error CQE for WQE `wqe_counter` with `status`: ops before it
    /// completed, it and every later op did not. The ep fails (posts return
    /// `status`) and the iface's error handler is called once, before the
    /// ops are touched: its answer decides with the failover state
    /// ([`crate::failover::EpFailover`]) whether they are held for purge
    /// (failover enabled, `UCS_INPROGRESS`, invalidated with
    /// `NO_COMPLETIONS`) or completed with `status`.
    ///
    /// # Safety
    /// As for [`RcEp::complete_through`].
    pub unsafe fn fail(ep: *mut RcEp, wqe_counter: u16, status: Status) {
        use crate::failover::OnError;
        // SAFETY: live by the contract.
        let (already_failed, canceled, iface, qpn) = unsafe {
            let cancel_cqe = std::mem::take(&mut (*ep).cancel_cqe_due);
            (
                matches!((*ep).state, EpState::Failed(_)) && !cancel_cqe,
                (*ep).canceled,
                (*ep).iface,
                (*ep).qpn(),
            )
        };
        let status = if canceled { Status::Canceled } else { status };
        if !already_failed {
            // Everything before the failed WQE was executed.
            // SAFETY: as above.
            unsafe { Self::complete_through(ep, wqe_counter.wrapping_sub(1)) };
            // SAFETY: the iface outlives its eps' callbacks.
            if !unsafe { still_live(iface, ep, qpn) } {
                return;
            }
            // SAFETY: as above.
            unsafe { (*ep).state = EpState::Failed(status) };
        }
        // SAFETY: as above; the borrow ends before the handler.
        let (mut decision, report) = unsafe {
            let this = &mut *ep;
            // uct_ep_flush(CANCEL) asked for the ops to end canceled, and
            // for no error handler call.
            let decision = if canceled && !this.failover.is_holding() {
                OnError::CompleteWithError
            } else {
                this.failover.on_transport_error(status)
            };
            let report = !this.error_reported && !canceled;
            this.error_reported = true;
            (decision, report)
        };
        if report {
            tracing::debug!("rc_mlx5 ep {ep:p}: failed with {status}");
            // SAFETY: the ep's iface outlives it.
            let answer = unsafe { RcIface::report_error(iface, ep as uct_ep_h, status) };
            // The handler may destroy the ep.
            // SAFETY: as above.
            if !unsafe { still_live(iface, ep, qpn) } {
                return;
            }
            if decision == OnError::AskHandler {
                // SAFETY: live (checked); a short borrow.
                decision = unsafe {
                    let has_tokens = (*iface).advertises_query_token();
                    (*ep).failover.on_handler_result(status, answer, has_tokens)
                };
            }
        }
        if decision == OnError::Keep {
            return;
        }
        loop {
            // SAFETY: as above; the borrow ends before the callback.
            let next = unsafe {
                let this = &mut *ep;
                this.ops.ops.pop_front().map(|op| {
                    this.tx.ci = op.wqe_index.wrapping_add(op.wqebbs);
                    (op, this.iface)
                })
            };
            let Some((op, iface)) = next else { break };
            // SAFETY: the ep's iface outlives it.
            unsafe { finish_op(iface, &op, status.raw()) };
            // SAFETY: as above.
            if !unsafe { still_live(iface, ep, qpn) } {
                return;
            }
        }
    }
}

/// Whether `ep` (QP `qpn`) is still an ep of `iface`: a user callback run
/// during completion may have destroyed it.
///
/// # Safety
/// `iface` live.
#[inline]
unsafe fn still_live(iface: *mut RcIface, ep: *mut RcEp, qpn: u32) -> bool {
    // SAFETY: live by the contract; a short shared borrow of the table.
    let eps: &std::collections::HashMap<u32, *mut RcEp> = unsafe { &(*iface).state.eps };
    eps.get(&qpn) == Some(&ep)
}

/// Runs an op's completion work, releases its bounce buffer and credit, and
/// calls the caller's completion with `status`.
///
/// # Safety
/// `iface` live; `op` just removed from its ep's table.
pub(crate) unsafe fn finish_op(iface: *mut RcIface, op: &OutstandingOp, status: ucs_status_t) {
    if status == UCS_OK {
        match (op.action, op.bounce) {
            (
                CompletionAction::Unpack {
                    unpack_cb: Some(unpack),
                    arg,
                    length,
                },
                Some(bounce),
            ) => {
                // SAFETY: the READ wrote `length` bytes at bounce.data; the
                // callback is the caller's, with its argument.
                unsafe { unpack(arg, bounce.data as *const c_void, length) };
            }
            // Zero length: nothing to copy (the caller's buffer may be NULL).
            (CompletionAction::CopyOut { buffer, length }, Some(bounce)) if length > 0 => {
                // SAFETY: the READ wrote `length` bytes at bounce.data (at
                // most the data area); the caller's buffer holds `length`
                // bytes until the op completes, and the two never overlap.
                unsafe { std::ptr::copy_nonoverlapping(bounce.data, buffer, length) };
            }
            (CompletionAction::FetchResult { result, width }, Some(bounce)) => {
                // SAFETY: the atomic wrote `width` bytes at bounce.data; the
                // caller's result buffer is valid until completion.
                unsafe {
                    let big_endian = (*iface).state.atomic_result_order.big_endian(width);
                    match width {
                        4 => {
                            let v = (bounce.data as *const u32).read_unaligned();
                            let v = if big_endian { u32::from_be(v) } else { v };
                            (result as *mut u32).write_unaligned(v);
                        }
                        _ => {
                            let v = (bounce.data as *const u64).read_unaligned();
                            let v = if big_endian { u64::from_be(v) } else { v };
                            (result as *mut u64).write_unaligned(v);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    // SAFETY: live iface; a short borrow with no callback inside.
    unsafe {
        let state = &mut (*iface).state;
        if let Some(bounce) = op.bounce {
            state.tx_pool.put(bounce.buffer);
        }
        state.tx_credits += 1;
    }
    // SAFETY: the caller's completion, live until called.
    unsafe { invoke_completion(op.comp, status) };
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

/// A bounce buffer for a bcopy op, `offset` bytes into the data area.
pub fn bounce_from_pool(pool: &mut BufferPool, offset: usize) -> Result<Bounce, Status> {
    let buffer = pool.get()?;
    // SAFETY: the data area starts after the lkey word inside the buffer.
    let data = unsafe { buffer.add(crate::rc::pool::LKEY_BYTES + offset) };
    Ok(Bounce { buffer, data })
}

impl BufferPool {
    /// `lkey` of a bounce's buffer.
    pub fn bounce_lkey(bounce: &Bounce) -> u32 {
        // SAFETY: bounce buffers come from a BufferPool.
        unsafe { BufferPool::lkey(bounce.buffer) }
    }
}
