//! One RC queue pair: its state machine, attributes, queues and public entry
//! points. The requester half lives in `requester.rs`, the responder half in
//! `responder.rs`.

use std::collections::VecDeque;
use std::time::Duration;

use super::psn::{psn_add, PSN_MASK};
use super::time::{ack_timeout_from_ib, Instant};
use super::wr::{Completion, CompletionOpcode, CompletionStatus, RecvWr, SendWr, WorkQueue};
use super::Memory;
use crate::wire::{PacketRepr, DEFAULT_PKEY};

/// QP states (IBTA vol. 1, 10.3.1), without SQE/UD-only states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QpState {
    Reset,
    Init,
    /// Ready to receive: the responder runs.
    Rtr,
    /// Ready to send: requester and responder run.
    Rts,
    /// Send queue drained: requests already started finish, new ones wait.
    Sqd,
    Error,
}

/// Path MTU: the largest payload of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PathMtu {
    Mtu256,
    Mtu512,
    Mtu1024,
    Mtu2048,
    Mtu4096,
}

impl PathMtu {
    pub const fn bytes(self) -> u32 {
        match self {
            PathMtu::Mtu256 => 256,
            PathMtu::Mtu512 => 512,
            PathMtu::Mtu1024 => 1024,
            PathMtu::Mtu2048 => 2048,
            PathMtu::Mtu4096 => 4096,
        }
    }

    /// From a byte count (256, 512, 1024, 2048 or 4096).
    pub const fn from_bytes(bytes: u32) -> Option<PathMtu> {
        match bytes {
            256 => Some(PathMtu::Mtu256),
            512 => Some(PathMtu::Mtu512),
            1024 => Some(PathMtu::Mtu1024),
            2048 => Some(PathMtu::Mtu2048),
            4096 => Some(PathMtu::Mtu4096),
            _ => None,
        }
    }

    /// From the IB enumeration (`IBV_MTU_256` = 1 … `IBV_MTU_4096` = 5).
    pub const fn from_ib(value: u8) -> Option<PathMtu> {
        match value {
            1 => Some(PathMtu::Mtu256),
            2 => Some(PathMtu::Mtu512),
            3 => Some(PathMtu::Mtu1024),
            4 => Some(PathMtu::Mtu2048),
            5 => Some(PathMtu::Mtu4096),
            _ => None,
        }
    }
}

/// Creation parameters of a QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpConfig {
    /// This QP's number (24 bits); packets for another number are dropped.
    pub qpn: u32,
    pub pkey: u16,
    /// Most packets the requester keeps unacknowledged.
    pub send_window: u32,
    /// The requester asks for an ACK at least every this many packets of a
    /// long message (besides the last packet of every message).
    pub ack_req_interval: u32,
    /// A request the responder NAKs as invalid or as an access violation
    /// moves this QP to ERROR, as hardware does (the verbs report it as the
    /// affiliated events `QP_REQ_ERR` / `QP_ACCESS_ERR`). `false` keeps the
    /// QP running, which lets tests feed it a stream of bad packets.
    pub responder_errors_fatal: bool,
}

impl QpConfig {
    pub fn new(qpn: u32) -> QpConfig {
        QpConfig {
            qpn: qpn & PSN_MASK,
            pkey: DEFAULT_PKEY,
            send_window: 256,
            ack_req_interval: 16,
            responder_errors_fatal: true,
        }
    }
}

/// Attributes set by the INIT→RTR transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtrAttrs {
    pub dest_qpn: u32,
    /// First PSN the responder expects.
    pub rq_psn: u32,
    pub path_mtu: PathMtu,
    /// RNR timer code (5 bits) this responder puts in its RNR NAKs.
    pub min_rnr_timer: u8,
    /// READ/atomic requests this responder remembers for duplicates.
    pub max_dest_rd_atomic: u8,
}

impl Default for RtrAttrs {
    fn default() -> Self {
        RtrAttrs {
            dest_qpn: 0,
            rq_psn: 0,
            path_mtu: PathMtu::Mtu1024,
            min_rnr_timer: 12,
            max_dest_rd_atomic: 16,
        }
    }
}

/// Attributes set by the RTR→RTS transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtsAttrs {
    /// First PSN the requester sends.
    pub sq_psn: u32,
    /// Local ACK timeout; `None` waits forever. [`ack_timeout_from_ib`]
    /// converts the IB `timeout` attribute.
    pub ack_timeout: Option<Duration>,
    /// Retransmissions without progress before `RetryExceeded`. IB and the
    /// mlx5 QP context allow 0..=7; the engine accepts more so that tests on
    /// very lossy links can finish (a 30 % loss link fails about half of all
    /// round trips, so 8 in a row are not rare).
    pub retry_cnt: u8,
    /// RNR retries before `RnrRetryExceeded` (0..=7; 7 retries forever).
    pub rnr_retry: u8,
    /// READ/atomic requests outstanding at once (at least 1).
    pub max_rd_atomic: u8,
}

impl Default for RtsAttrs {
    fn default() -> Self {
        RtsAttrs {
            sq_psn: 0,
            ack_timeout: ack_timeout_from_ib(14),
            retry_cnt: 7,
            rnr_retry: 7,
            max_rd_atomic: 4,
        }
    }
}

/// A request the QP refuses in its current state or with these attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QpError {
    /// The operation is not allowed in this state.
    #[error("not allowed in QP state {0:?}")]
    InvalidState(QpState),
    /// An attribute is out of range.
    #[error("invalid QP attribute: {0}")]
    InvalidAttr(&'static str),
}

/// Per-QP counters (for tests, debugging and the device's statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpStats {
    pub packets_sent: u64,
    pub packets_retransmitted: u64,
    pub packets_received: u64,
    /// Received requests behind the expected PSN.
    pub duplicate_requests: u64,
    /// Received requests ahead of the expected PSN.
    pub out_of_sequence_requests: u64,
    pub sequence_naks_sent: u64,
    pub rnr_naks_sent: u64,
    pub access_naks_sent: u64,
    pub invalid_request_naks_sent: u64,
    pub operational_naks_sent: u64,
    /// Duplicate READ requests answered again from memory.
    pub reads_replayed: u64,
    /// Duplicate atomics answered from the saved result.
    pub atomics_replayed: u64,
    pub atomics_executed: u64,
    /// Responses that acknowledge nothing new or match no request.
    pub stale_responses: u64,
    pub rnr_naks_received: u64,
    pub sequence_naks_received: u64,
    pub error_naks_received: u64,
    pub timeouts: u64,
    /// Packets dropped: wrong QPN or P_Key, wrong state, malformed for the
    /// engine (e.g. missing header), or responses queue full.
    pub packets_dropped: u64,
}

/// A packet to send, owning its payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Headers; its `payload` is empty, see [`Transmit::payload`].
    pub header: PacketRepr<'static>,
    pub payload: Vec<u8>,
}

impl Transmit {
    /// The packet, ready to `emit`.
    pub fn repr(&self) -> PacketRepr<'_> {
        PacketRepr {
            payload: &self.payload,
            ..self.header
        }
    }
}

/// A send request in the send queue.
#[derive(Clone, Debug)]
pub(super) struct SendEntry {
    pub(super) wr: SendWr,
    pub(super) first_psn: u32,
    /// PSNs the request uses (READ: one per response packet; NOP: none).
    pub(super) npkts: u32,
    /// Message length, or the error the request completes with when started.
    pub(super) len: Result<u32, CompletionStatus>,
    /// The first packet has been sent (fence and READ/atomic limits passed).
    pub(super) started: bool,
    /// READ response packets or atomic responses accepted.
    pub(super) responses: u32,
}

/// The message the responder is in the middle of.
#[derive(Clone, Debug, Default)]
pub(super) enum Inbound {
    #[default]
    Idle,
    Send {
        recv: RecvWr,
        offset: u64,
    },
    Write {
        rkey: u32,
        va: u64,
        remaining: u64,
        total: u32,
    },
}

/// A response waiting to be sent by the responder.
#[derive(Clone, Debug)]
pub(super) enum Response {
    Ack {
        psn: u32,
        msn: u32,
    },
    Nak {
        psn: u32,
        syndrome: crate::wire::AethSyndrome,
        msn: u32,
    },
    Read(ReadJob),
    AtomicAck {
        psn: u32,
        orig: u64,
        msn: u32,
    },
}

/// READ response packets still to generate (read from memory lazily so a
/// large READ does not buffer its whole payload).
#[derive(Clone, Debug)]
pub(super) struct ReadJob {
    pub(super) first_psn: u32,
    pub(super) rkey: u32,
    pub(super) va: u64,
    pub(super) len: u32,
    pub(super) npkts: u32,
    pub(super) next: u32,
    pub(super) msn: u32,
}

/// The protocol engine of one reliable-connected QP. Pure: no I/O, no clock,
/// no threads. Drive it with `post_*`, [`Qp::handle_packet`] and
/// [`Qp::handle_timeout`], then drain [`Qp::poll_transmit`] and
/// [`Qp::poll_completion`] and sleep until [`Qp::next_timeout`].
#[derive(Debug)]
pub struct Qp {
    pub(super) cfg: QpConfig,
    pub(super) state: QpState,
    pub(super) rtr: RtrAttrs,
    pub(super) rts: RtsAttrs,

    // Requester.
    pub(super) sq: VecDeque<SendEntry>,
    /// PSN the next posted request starts at.
    pub(super) next_psn: u32,
    /// Oldest PSN not yet acknowledged (or READ response not yet received).
    pub(super) una: u32,
    /// Next PSN to transmit (rewinds to `una` on go-back-N).
    pub(super) tx_psn: u32,
    /// One past the highest PSN ever transmitted.
    pub(super) max_sent: u32,
    /// Index in `sq` of the request holding `tx_psn` (`sq.len()` if none).
    pub(super) cursor: usize,
    /// The PSN the responder is known to expect (from any ACK, NAK or
    /// response); it can run ahead of `una` when responses were lost.
    pub(super) peer_psn: u32,
    /// The last sequence NAK acted on, to ignore its duplicates.
    pub(super) last_seq_nak: Option<u32>,
    /// The READ resume PSN last re-requested because a later response
    /// arrived, so one gap causes one re-request.
    pub(super) last_read_gap: Option<u32>,
    pub(super) retries_left: u8,
    pub(super) rnr_retries_left: u8,
    pub(super) retx_deadline: Option<Instant>,
    pub(super) rnr_resume_at: Option<Instant>,
    pub(super) rd_atomic_outstanding: u32,

    // Responder.
    pub(super) rq: VecDeque<RecvWr>,
    /// `next_rcv_psn`: the PSN the responder expects next.
    pub(super) expected_psn: u32,
    pub(super) msn: u32,
    pub(super) inbound: Inbound,
    /// A NAK was sent for `expected_psn`; stay quiet until it arrives.
    pub(super) nak_sent: bool,
    pub(super) responses: VecDeque<Response>,
    /// `(psn, value before)` of the latest atomics, for duplicates.
    pub(super) atomic_results: VecDeque<(u32, u64)>,

    pub(super) completions: VecDeque<Completion>,
    pub(super) stats: QpStats,
}

/// Most PSNs one message may use (a quarter of the PSN space).
const MAX_MESSAGE_PSNS: u32 = 1 << 22;

/// Most responses (ACKs, NAKs, READ jobs) queued before further requests
/// needing one are dropped; bounds memory under a flood of duplicate READs.
pub(super) const MAX_QUEUED_RESPONSES: usize = 4096;

impl Qp {
    /// A QP in the RESET state.
    pub fn new(cfg: QpConfig) -> Qp {
        Qp {
            cfg: QpConfig {
                qpn: cfg.qpn & PSN_MASK,
                send_window: cfg.send_window.clamp(1, 1 << 22),
                ack_req_interval: cfg.ack_req_interval.max(1),
                ..cfg
            },
            state: QpState::Reset,
            rtr: RtrAttrs::default(),
            rts: RtsAttrs::default(),
            sq: VecDeque::new(),
            next_psn: 0,
            una: 0,
            tx_psn: 0,
            max_sent: 0,
            cursor: 0,
            peer_psn: 0,
            last_seq_nak: None,
            last_read_gap: None,
            retries_left: 0,
            rnr_retries_left: 0,
            retx_deadline: None,
            rnr_resume_at: None,
            rd_atomic_outstanding: 0,
            rq: VecDeque::new(),
            expected_psn: 0,
            msn: 0,
            inbound: Inbound::Idle,
            nak_sent: false,
            responses: VecDeque::new(),
            atomic_results: VecDeque::new(),
            completions: VecDeque::new(),
            stats: QpStats::default(),
        }
    }

    // ---- state machine ----

    /// RESET → INIT (receives may be posted from now on).
    pub fn modify_to_init(&mut self) -> Result<(), QpError> {
        match self.state {
            QpState::Reset | QpState::Init => {
                self.state = QpState::Init;
                Ok(())
            }
            s => Err(QpError::InvalidState(s)),
        }
    }

    /// INIT → RTR: the responder starts accepting requests at `rq_psn`.
    pub fn modify_to_rtr(&mut self, attrs: RtrAttrs) -> Result<(), QpError> {
        if self.state != QpState::Init {
            return Err(QpError::InvalidState(self.state));
        }
        if attrs.dest_qpn > PSN_MASK {
            return Err(QpError::InvalidAttr("dest_qpn"));
        }
        if attrs.rq_psn > PSN_MASK {
            return Err(QpError::InvalidAttr("rq_psn"));
        }
        if attrs.min_rnr_timer > 31 {
            return Err(QpError::InvalidAttr("min_rnr_timer"));
        }
        self.rtr = attrs;
        self.expected_psn = attrs.rq_psn;
        self.msn = 0;
        self.nak_sent = false;
        self.inbound = Inbound::Idle;
        self.state = QpState::Rtr;
        Ok(())
    }

    /// RTR → RTS: the requester starts at `sq_psn`. Also SQD → RTS, which
    /// resumes the send queue (only the timing attributes change then).
    pub fn modify_to_rts(&mut self, attrs: RtsAttrs) -> Result<(), QpError> {
        if attrs.sq_psn > PSN_MASK {
            return Err(QpError::InvalidAttr("sq_psn"));
        }
        if attrs.rnr_retry > 7 {
            return Err(QpError::InvalidAttr("rnr_retry"));
        }
        match self.state {
            QpState::Rtr => {
                self.rts = attrs;
                self.next_psn = attrs.sq_psn;
                self.una = attrs.sq_psn;
                self.tx_psn = attrs.sq_psn;
                self.max_sent = attrs.sq_psn;
                self.peer_psn = attrs.sq_psn;
                self.last_seq_nak = None;
            }
            QpState::Sqd => {
                // The PSNs in flight stay; only the timing attributes change.
                self.rts = RtsAttrs {
                    sq_psn: self.rts.sq_psn,
                    ..attrs
                };
            }
            s => return Err(QpError::InvalidState(s)),
        }
        self.retries_left = self.rts.retry_cnt;
        self.rnr_retries_left = self.rts.rnr_retry;
        self.state = QpState::Rts;
        Ok(())
    }

    /// RTS → SQD: requests already started finish; later ones wait for RTS.
    pub fn modify_to_sqd(&mut self) -> Result<(), QpError> {
        match self.state {
            QpState::Rts | QpState::Sqd => {
                self.state = QpState::Sqd;
                Ok(())
            }
            s => Err(QpError::InvalidState(s)),
        }
    }

    /// In SQD: whether every started request has completed.
    pub fn is_drained(&self) -> bool {
        self.state == QpState::Sqd && self.sq.iter().all(|e| !e.started)
    }

    /// Any state → ERROR: every outstanding request and receive completes
    /// with `WrFlushError`.
    pub fn modify_to_error(&mut self) {
        if self.state != QpState::Error {
            self.enter_error(None);
        }
    }

    /// Any state → RESET: queues are emptied without completions, counters
    /// and PSNs forgotten (statistics are kept).
    pub fn reset(&mut self) {
        let stats = self.stats;
        *self = Qp::new(self.cfg);
        self.stats = stats;
    }

    // ---- posting ----

    /// Queues a send request. In ERROR it completes at once with
    /// `WrFlushError`; before RTS it is refused.
    pub fn post_send(&mut self, wr: SendWr) -> Result<(), QpError> {
        match self.state {
            QpState::Rts | QpState::Sqd => {}
            QpState::Error => {
                self.push_send_completion(&wr, CompletionStatus::WrFlushError, 0);
                return Ok(());
            }
            s => return Err(QpError::InvalidState(s)),
        }
        let mtu = self.rtr.path_mtu.bytes();
        let mut len = super::message::message_len(&wr);
        let mut npkts = super::message::psn_count(&wr.op, len.unwrap_or(0), mtu);
        if npkts > MAX_MESSAGE_PSNS {
            // PSN comparisons only have a direction within half the space.
            len = Err(CompletionStatus::LocalLengthError);
            npkts = 1;
        }
        let entry = SendEntry {
            wr,
            first_psn: self.next_psn,
            npkts,
            len,
            started: false,
            responses: 0,
        };
        self.next_psn = psn_add(self.next_psn, npkts);
        self.sq.push_back(entry);
        Ok(())
    }

    /// Queues a receive. In ERROR it completes at once with `WrFlushError`;
    /// in RESET it is refused.
    pub fn post_recv(&mut self, wr: RecvWr) -> Result<(), QpError> {
        match self.state {
            QpState::Init | QpState::Rtr | QpState::Rts | QpState::Sqd => {
                self.rq.push_back(wr);
                Ok(())
            }
            QpState::Error => {
                self.push_recv_flush(&wr);
                Ok(())
            }
            s => Err(QpError::InvalidState(s)),
        }
    }

    // ---- driving ----

    /// Processes one received packet (already parsed and ICRC-checked).
    /// Anything that does not belong to this QP, or makes no sense in its
    /// state, is dropped and counted; nothing here panics on any input.
    pub fn handle_packet<M: Memory + ?Sized>(
        &mut self,
        now: Instant,
        packet: &PacketRepr<'_>,
        mem: &mut M,
    ) {
        self.stats.packets_received += 1;
        let bth = &packet.bth;
        if bth.dest_qp != self.cfg.qpn || bth.pkey != self.cfg.pkey {
            tracing::debug!(
                qpn = self.cfg.qpn,
                dest = bth.dest_qp,
                "packet for another QP or P_Key dropped"
            );
            self.stats.packets_dropped += 1;
            return;
        }
        // Datagrams belong to UD QPs (`UdQp`), never to a connection.
        if !packet.headers_match_opcode() || bth.opcode.is_ud() {
            self.stats.packets_dropped += 1;
            return;
        }
        if bth.opcode.is_request() {
            if matches!(self.state, QpState::Rtr | QpState::Rts | QpState::Sqd) {
                self.handle_request(packet, mem);
            } else {
                self.stats.packets_dropped += 1;
            }
        } else if matches!(self.state, QpState::Rts | QpState::Sqd) {
            self.handle_response(now, packet, mem);
        } else {
            self.stats.packets_dropped += 1;
        }
    }

    /// Fires the timers due at `now` (retransmission, RNR wait). Calling it
    /// early or often is harmless.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(at) = self.rnr_resume_at {
            if now >= at {
                self.rnr_resume_at = None;
            }
        }
        if let Some(at) = self.retx_deadline {
            if now >= at {
                self.retx_deadline = None;
                self.on_retransmit_timeout();
            }
        }
    }

    /// When [`Qp::handle_timeout`] next has something to do.
    pub fn next_timeout(&self) -> Option<Instant> {
        match (self.retx_deadline, self.rnr_resume_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next packet to send, if any. Responses go first, then requests.
    /// Call it until it returns `None` after every other call.
    pub fn poll_transmit<M: Memory + ?Sized>(
        &mut self,
        now: Instant,
        mem: &mut M,
    ) -> Option<Transmit> {
        if let Some(t) = self.next_response(mem) {
            self.stats.packets_sent += 1;
            return Some(t);
        }
        let t = self.next_request(now, mem)?;
        self.stats.packets_sent += 1;
        Some(t)
    }

    /// The next completion, in the order the device must report it (send
    /// completions in posting order, receives in arrival order).
    pub fn poll_completion(&mut self) -> Option<Completion> {
        self.completions.pop_front()
    }

    // ---- queries ----

    pub fn qpn(&self) -> u32 {
        self.cfg.qpn
    }

    pub fn state(&self) -> QpState {
        self.state
    }

    pub fn dest_qpn(&self) -> u32 {
        self.rtr.dest_qpn
    }

    /// The responder's next expected PSN (`next_rcv_psn`).
    pub fn next_rcv_psn(&self) -> u32 {
        self.expected_psn
    }

    /// The PSN the next posted send request will start at (`sq_psn`).
    pub fn send_psn(&self) -> u32 {
        self.next_psn
    }

    /// The oldest PSN the peer has not acknowledged yet.
    pub fn unacked_psn(&self) -> u32 {
        self.una
    }

    /// Send requests not yet completed.
    pub fn send_queue_len(&self) -> usize {
        self.sq.len()
    }

    /// Whether responses other than ACKs wait to be sent (READ responses,
    /// atomic results, NAKs). A device that handles several packets before
    /// sending should send these first: a later packet that moves the QP to
    /// ERROR discards what is queued, and unlike an ACK (implied by the NAK
    /// that follows) these carry what only they can tell the requester.
    pub fn owes_responses(&self) -> bool {
        self.responses
            .iter()
            .any(|r| !matches!(r, Response::Ack { .. }))
    }

    /// Receives posted and not yet consumed.
    pub fn recv_queue_len(&self) -> usize {
        self.rq.len()
    }

    pub fn rtr_attrs(&self) -> &RtrAttrs {
        &self.rtr
    }

    pub fn rts_attrs(&self) -> &RtsAttrs {
        &self.rts
    }

    pub fn config(&self) -> &QpConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &QpStats {
        &self.stats
    }

    // ---- shared helpers ----

    pub(super) fn push_send_completion(
        &mut self,
        wr: &SendWr,
        status: CompletionStatus,
        byte_len: u32,
    ) {
        self.completions.push_back(Completion {
            qpn: self.cfg.qpn,
            queue: WorkQueue::Send,
            wr_id: wr.wr_id,
            opcode: CompletionOpcode::of(&wr.op),
            status,
            byte_len,
            imm: None,
            solicited: false,
            src_qp: None,
        });
    }

    pub(super) fn push_recv_flush(&mut self, wr: &RecvWr) {
        self.completions.push_back(Completion {
            qpn: self.cfg.qpn,
            queue: WorkQueue::Recv,
            wr_id: wr.wr_id,
            opcode: CompletionOpcode::Recv,
            status: CompletionStatus::WrFlushError,
            byte_len: 0,
            imm: None,
            solicited: false,
            src_qp: None,
        });
    }

    /// Moves to ERROR. `failed` names the send request at that index in the
    /// queue that caused it and its status; every other outstanding request
    /// and every receive is flushed, all in queue order.
    pub(super) fn enter_error(&mut self, failed: Option<(usize, CompletionStatus)>) {
        tracing::debug!(qpn = self.cfg.qpn, ?failed, "QP to error");
        self.state = QpState::Error;
        let sq = std::mem::take(&mut self.sq);
        for (index, entry) in sq.into_iter().enumerate() {
            let status = match failed {
                Some((i, status)) if i == index => status,
                _ => CompletionStatus::WrFlushError,
            };
            self.push_send_completion(&entry.wr, status, 0);
        }
        if let Inbound::Send { recv, .. } = std::mem::take(&mut self.inbound) {
            self.push_recv_flush(&recv);
        }
        let rq = std::mem::take(&mut self.rq);
        for wr in rq {
            self.push_recv_flush(&wr);
        }
        self.cursor = 0;
        self.retx_deadline = None;
        self.rnr_resume_at = None;
        self.rd_atomic_outstanding = 0;
        self.responses.clear();
    }
}
