//! One QP of the soft device, RC or UD: the engine plus the rings it is
//! bound to.
//! Turns WQEs from the send ring into work requests, received datagrams into
//! engine input, engine output into datagrams and CQE64s.

use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::memory::{MrTable, ProcessMemory};
use super::os::DmaBuffer;
use super::queues::{CqShared, SrqShared, TakenRecv};
use super::translate as wqe;
use super::Error;
use crate::engine::{
    ack_timeout_from_ib, Access, Completion, CompletionOpcode, CompletionStatus, Instant, Memory,
    Qp as RcEngine, QpConfig, QpError, QpState, RecvWr, RtrAttrs, RtsAttrs, SendWr, Sge, UdConfig,
    UdQp, WorkQueue,
};
use crate::link::bump;
use crate::link::Tx;
use crate::wire::{Gid, IcrcContext, Opcode, Packet, PacketRepr};

/// One `modify QP` call of the soft device: the transitions RC and UD use
/// (a QP refuses those of the other kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// RESET→INIT.
    Init,
    /// INIT→RTR: the peer's port (its UDP endpoint) and what the responder
    /// expects.
    Rtr { peer: SocketAddrV4, attrs: RtrAttrs },
    /// RTR→RTS: the requester's side.
    Rts {
        /// First PSN the requester sends (24 bits).
        sq_psn: u32,
        /// Local ACK timeout, IB encoding: 4.096 µs × 2^timeout (0 =
        /// infinite, at most 31).
        timeout: u8,
        /// Retransmissions after a timeout or a sequence NAK.
        retry_cnt: u8,
        /// Retries after an RNR NAK (7 = infinite).
        rnr_retry: u8,
        /// READ/atomic requests kept in flight (0 counts as 1).
        max_rd_atomic: u8,
    },
    /// UD: RESET→INIT (or INIT→INIT) with the Q_Key datagrams must carry.
    UdInit { qkey: u32 },
    /// UD: INIT→RTR (no peer: each send names its own).
    UdRtr,
    /// UD: RTR→RTS, first PSN `sq_psn` (24 bits).
    UdRts { sq_psn: u32 },
    /// Any state → ERR: outstanding and later WQEs complete with flush errors.
    Error,
    /// Any state → RESET: forget everything (rings are reused from index 0).
    Reset,
}

/// What `query QP` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpStatus {
    pub state: QpState,
    /// Next PSN the responder expects.
    pub next_rcv_psn: u32,
    /// Next PSN the requester will send.
    pub sq_psn: u32,
    pub dest_qpn: u32,
    /// The Q_Key of a UD QP (0 for RC).
    pub qkey: u32,
}

/// The protocol engine behind a QP: reliable connected or unreliable
/// datagram.
// A QP's context stays where the device's table put it; boxing the RC
// engine to even the sizes would add a pointer chase to every RC packet.
#[allow(clippy::large_enum_variant)]
pub(crate) enum QpEngine {
    Rc(RcEngine),
    Ud(UdQp),
}

impl QpEngine {
    /// An RC engine for QP `qpn`.
    pub fn rc(qpn: u32) -> QpEngine {
        QpEngine::Rc(RcEngine::new(QpConfig::new(qpn)))
    }

    /// A UD engine for QP `qpn` on the port whose GID is `gid`.
    pub fn ud(qpn: u32, gid: Gid) -> QpEngine {
        QpEngine::Ud(UdQp::new(UdConfig::new(qpn, gid)))
    }

    fn qpn(&self) -> u32 {
        match self {
            QpEngine::Rc(e) => e.qpn(),
            QpEngine::Ud(e) => e.qpn(),
        }
    }

    fn recv_queue_len(&self) -> usize {
        match self {
            QpEngine::Rc(e) => e.recv_queue_len(),
            QpEngine::Ud(e) => e.recv_queue_len(),
        }
    }

    fn post_recv(&mut self, wr: RecvWr) -> Result<(), QpError> {
        match self {
            QpEngine::Rc(e) => e.post_recv(wr),
            QpEngine::Ud(e) => e.post_recv(wr),
        }
    }

    fn poll_completion(&mut self) -> Option<Completion> {
        match self {
            QpEngine::Rc(e) => e.poll_completion(),
            QpEngine::Ud(e) => e.poll_completion(),
        }
    }

    fn modify_to_error(&mut self) {
        match self {
            QpEngine::Rc(e) => e.modify_to_error(),
            QpEngine::Ud(e) => e.modify_to_error(),
        }
    }
}

/// A WQE decoded for the engine of its QP.
enum Decoded {
    Rc(SendWr),
    Ud(wqe::UdRequest),
}

/// The doorbell flag of one QP, shared by its [`Doorbell`](super::Doorbell)s and
/// the device: set when the transport rings, cleared by the device just
/// before it reads the doorbell record.
#[derive(Debug, Default)]
pub(crate) struct QpBell {
    pub rung: AtomicBool,
}

/// The device side of one QP.
pub(crate) struct QpContext {
    engine: QpEngine,
    bell: Arc<QpBell>,
    /// Datagrams arrived since the last [`QpContext::pump`]: the device
    /// answers them all at the end of its pass (one ACK for several).
    pub needs_pump: bool,
    pd: u32,
    ring: Arc<DmaBuffer>,
    dbrec: Arc<DmaBuffer>,
    wqebb_count: u32,
    /// Index of the next WQE the device reads (free-running, 16 bits as the
    /// mlx5 counters).
    sq_ci: u16,
    send_cq: Arc<CqShared>,
    recv_cq: Arc<CqShared>,
    srq: Arc<SrqShared>,
    /// This device's port address, for the ICRC.
    local: Option<SocketAddrV4>,
    peer: Option<SocketAddrV4>,
    /// A receive taken from the SRQ for a SEND the engine then refused
    /// (duplicate, out of sequence): it waits in the engine for the next
    /// SEND, and goes back to the SRQ if the QP is flushed.
    parked: Option<TakenRecv>,
    /// The receive the engine holds (at most one: a new one is given only
    /// when it holds none): where a scattered-to-CQE message came from.
    engine_recv: Option<TakenRecv>,
    /// Receives of at most 32 bytes (64 on a CQ of 128-byte entries) go
    /// into the CQE, as mlx5 does with libmlx5's default scatter-to-CQE
    /// (see [`QpContext::set_scatter_to_cqe`]).
    scatter_to_cqe: bool,
    /// The last pump stopped with packets left in the engine: the peer's
    /// ring had no room (see [`QpContext::waits_for_room`]).
    waits_for_room: bool,
    /// The device has this QP on its list of QPs to pump again.
    pub listed_waiting: bool,
}

/// Destination QP number of a datagram, if it is long enough for a BTH.
pub(crate) fn dest_qpn_of(datagram: &[u8]) -> Option<u32> {
    Packet::new_checked(datagram).ok().map(|p| p.dest_qp())
}

impl QpContext {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        engine: QpEngine,
        bell: Arc<QpBell>,
        pd: u32,
        ring: Arc<DmaBuffer>,
        dbrec: Arc<DmaBuffer>,
        wqebb_count: u32,
        send_cq: Arc<CqShared>,
        recv_cq: Arc<CqShared>,
        srq: Arc<SrqShared>,
    ) -> QpContext {
        QpContext {
            engine,
            bell,
            needs_pump: false,
            pd,
            ring,
            dbrec,
            wqebb_count,
            sq_ci: 0,
            send_cq,
            recv_cq,
            srq,
            local: None,
            peer: None,
            parked: None,
            engine_recv: None,
            scatter_to_cqe: false,
            waits_for_room: false,
            listed_waiting: false,
        }
    }

    /// Whether the last pump left packets in the engine because the peer
    /// could not take them: the device pumps this QP again on its next
    /// passes until it has sent everything.
    pub fn waits_for_room(&self) -> bool {
        self.waits_for_room
    }

    pub fn qpn(&self) -> u32 {
        self.engine.qpn()
    }

    /// Makes successful SEND receives of at most 32 bytes arrive in the
    /// receive CQE (format 1, `MLX5_INLINE_SCATTER_32`) instead of the
    /// receive buffer, as mlx5 does for an RC QP with 64-byte CQEs when
    /// libmlx5 enables scatter-to-CQE (its default).
    pub fn set_scatter_to_cqe(&mut self, on: bool) {
        // A UD receive starts with its 40-byte GRH: too long for the CQE.
        self.scatter_to_cqe = on && matches!(self.engine, QpEngine::Rc(_));
    }

    pub fn recv_cq(&self) -> &Arc<CqShared> {
        &self.recv_cq
    }

    pub fn peer(&self) -> Option<SocketAddrV4> {
        self.peer
    }

    /// Whether a datagram from `from` may reach this QP: an RC QP takes
    /// only its peer's, a UD QP anyone's.
    pub fn accepts_from(&self, from: SocketAddrV4) -> bool {
        match self.engine {
            QpEngine::Rc(_) => self.peer == Some(from),
            QpEngine::Ud(_) => true,
        }
    }

    pub fn next_timeout(&self) -> Option<Instant> {
        match &self.engine {
            QpEngine::Rc(e) => e.next_timeout(),
            QpEngine::Ud(_) => None,
        }
    }

    pub fn query(&self) -> QpStatus {
        match &self.engine {
            QpEngine::Rc(e) => QpStatus {
                state: e.state(),
                next_rcv_psn: e.next_rcv_psn(),
                sq_psn: e.send_psn(),
                dest_qpn: e.dest_qpn(),
                qkey: 0,
            },
            QpEngine::Ud(e) => QpStatus {
                state: e.state(),
                next_rcv_psn: 0,
                sq_psn: e.send_psn(),
                dest_qpn: 0,
                qkey: e.qkey(),
            },
        }
    }

    pub fn modify(
        &mut self,
        transition: Transition,
        now: Instant,
        tx: &mut Tx<'_>,
        mrs: &MrTable,
    ) -> Result<(), Error> {
        let qpn = self.qpn();
        let engine = match (&mut self.engine, transition) {
            (QpEngine::Rc(engine), _) => engine,
            (QpEngine::Ud(engine), _) => {
                let result = match transition {
                    Transition::UdInit { qkey } => engine.modify_to_init(qkey),
                    Transition::UdRtr => {
                        let result = engine.modify_to_rtr();
                        if result.is_ok() {
                            self.local = Some(tx.link.local_addr());
                        }
                        result
                    }
                    Transition::UdRts { sq_psn } => engine.modify_to_rts(sq_psn),
                    Transition::Error => {
                        engine.modify_to_error();
                        Ok(())
                    }
                    Transition::Reset => {
                        engine.reset();
                        Ok(())
                    }
                    Transition::Init | Transition::Rtr { .. } | Transition::Rts { .. } => {
                        tracing::warn!("soft hca: QP 0x{qpn:x} is UD: {transition:?} refused");
                        return Err(Error::InvalidParam);
                    }
                };
                return self.finish_modify(transition, result, now, tx, mrs);
            }
        };
        let result = match transition {
            Transition::Init => engine.modify_to_init(),
            Transition::UdInit { .. } | Transition::UdRtr | Transition::UdRts { .. } => {
                tracing::warn!("soft hca: QP 0x{qpn:x} is RC: {transition:?} refused");
                return Err(Error::InvalidParam);
            }
            Transition::Rtr { peer, attrs } => {
                let result = engine.modify_to_rtr(attrs);
                if result.is_ok() {
                    self.peer = Some(peer);
                    self.local = Some(tx.link.local_addr());
                }
                result
            }
            Transition::Rts {
                sq_psn,
                timeout,
                retry_cnt,
                rnr_retry,
                max_rd_atomic,
            } => {
                if timeout > 31 {
                    tracing::warn!("soft hca: QP 0x{qpn:x}: timeout exponent {timeout} > 31");
                    return Err(Error::InvalidParam);
                }
                engine.modify_to_rts(RtsAttrs {
                    sq_psn,
                    ack_timeout: ack_timeout_from_ib(timeout),
                    retry_cnt,
                    rnr_retry,
                    max_rd_atomic: max_rd_atomic.max(1),
                })
            }
            Transition::Error => {
                engine.modify_to_error();
                Ok(())
            }
            Transition::Reset => {
                engine.reset();
                Ok(())
            }
        };
        self.finish_modify(transition, result, now, tx, mrs)
    }

    /// What every transition does once the engine took (or refused) it.
    fn finish_modify(
        &mut self,
        transition: Transition,
        result: Result<(), QpError>,
        now: Instant,
        tx: &mut Tx<'_>,
        mrs: &MrTable,
    ) -> Result<(), Error> {
        let qpn = self.qpn();
        if transition == Transition::Reset {
            self.sq_ci = 0;
            self.peer = None;
            if let Some(recv) = self.parked.take() {
                self.srq.give_back(recv);
            }
        }
        if let Err(err) = result {
            tracing::warn!("soft hca: QP 0x{qpn:x}: {transition:?} refused: {err}");
            return Err(Error::InvalidParam);
        }
        self.pump(now, tx, mrs);
        Ok(())
    }

    /// The transport rang the doorbell: take every WQE up to the producer
    /// index it published in `dbrec[1]`.
    pub fn doorbell(&mut self, now: Instant, tx: &mut Tx<'_>, mrs: &MrTable) {
        // Cleared before the record is read: a ring after this point sets
        // the flag again and queues the QP for the next pass.
        self.bell.rung.swap(false, Ordering::AcqRel);
        let producer = self.dbrec.load_be32(mlx5::MLX5_SND_DBR) as u16;
        let mut scratch = [0u8; wqe::MAX_WQE_BYTES];
        while self.sq_ci != producer {
            let index = self.sq_ci;
            // A WQE never takes the consumer past what was published, even
            // if its control segment claims more blocks (garbage must not
            // make the device walk the whole 16-bit index space).
            let published = producer.wrapping_sub(index);
            let Some(ring) = wqe::copy_from_ring(&self.ring, self.wqebb_count, index, &mut scratch)
            else {
                tracing::warn!(
                    "soft hca: QP 0x{:x}: WQE at {index} larger than the ring",
                    self.qpn()
                );
                self.sq_ci = index.wrapping_add(1);
                self.fail_wqe_and_flush(index, 0, CompletionStatus::LocalQpOperationError, mrs);
                continue;
            };
            let memory = ProcessMemory {
                table: mrs,
                pd: self.pd,
            };
            let read_local = |sge: &Sge, out: &mut Vec<u8>| {
                // Check before growing the buffer: the length is the
                // transport's word, the registration is the limit.
                let len = u64::from(sge.len);
                if memory
                    .check(sge.lkey, sge.addr, len, Access::LOCAL_READ)
                    .is_err()
                {
                    return false;
                }
                let start = out.len();
                out.resize(start + sge.len as usize, 0);
                memory
                    .read(sge.lkey, sge.addr, &mut out[start..], Access::LOCAL_READ)
                    .is_ok()
            };
            let decoded = match self.engine {
                QpEngine::Rc(_) => wqe::to_work_request(ring, index, read_local)
                    .map(|(wqebbs, wr)| (wqebbs, Decoded::Rc(wr))),
                QpEngine::Ud(_) => wqe::to_ud_request(ring, index, read_local)
                    .map(|(wqebbs, request)| (wqebbs, Decoded::Ud(request))),
            };
            match decoded {
                Ok((wqebbs, decoded)) => {
                    self.sq_ci = index.wrapping_add(wqebbs.clamp(1, published));
                    let (wr_id, posted) = match (&mut self.engine, decoded) {
                        (QpEngine::Rc(engine), Decoded::Rc(wr)) => (wr.wr_id, engine.post_send(wr)),
                        (QpEngine::Ud(engine), Decoded::Ud(wqe::UdRequest::Send(wr))) => {
                            (wr.wr_id, engine.post_send(wr))
                        }
                        (
                            QpEngine::Ud(engine),
                            Decoded::Ud(wqe::UdRequest::Nop { wr_id, signaled }),
                        ) => (wr_id, engine.post_nop(wr_id, signaled)),
                        _ => continue,
                    };
                    let opcode = (wr_id >> 16) as u8;
                    if let Err(err) = posted {
                        tracing::warn!(
                            "soft hca: QP 0x{:x}: WQE {index} refused: {err}",
                            self.qpn()
                        );
                        self.fail_wqe(index, opcode, CompletionStatus::LocalQpOperationError);
                    }
                }
                Err(bad) => {
                    tracing::warn!(
                        "soft hca: QP 0x{:x}: bad WQE at {index}: {:?}",
                        self.qpn(),
                        bad.status
                    );
                    self.sq_ci = index.wrapping_add(bad.wqebbs.clamp(1, published));
                    self.fail_wqe_and_flush(index, bad.opcode, bad.status, mrs);
                }
            }
        }
        self.pump(now, tx, mrs);
    }

    /// A WQE the engine never saw: report it like hardware reports a bad
    /// WQE, with an error CQE on the send CQ.
    fn fail_wqe(&mut self, index: u16, mlx5_opcode: u8, status: CompletionStatus) {
        let cqe = wqe::error_cqe(self.qpn(), index, mlx5_opcode, status);
        self.send_cq.push(cqe);
    }

    /// A WQE that cannot run moves the QP to error: the WQEs before it
    /// complete (flushed) first, in order, then its own error CQE.
    fn fail_wqe_and_flush(
        &mut self,
        index: u16,
        mlx5_opcode: u8,
        status: CompletionStatus,
        mrs: &MrTable,
    ) {
        self.engine.modify_to_error();
        self.write_completions(mrs);
        self.fail_wqe(index, mlx5_opcode, status);
    }

    /// One datagram for this QP, whose source the device already matched
    /// against the peer. Its completions are written now; what the engine
    /// sends in answer waits for [`QpContext::pump`] at the end of the
    /// device's pass (`needs_pump`), so that the answers to a batch of
    /// datagrams go out together and ACKs coalesce. `via_ring`: it came
    /// through the shared-memory ring, whose bytes nothing between the two
    /// devices can corrupt; its ICRC is not computed there (see
    /// `Link::flush`) nor checked: one CRC pass over every byte less on
    /// each side.
    pub fn receive(
        &mut self,
        datagram: &[u8],
        from: SocketAddrV4,
        via_ring: bool,
        now: Instant,
        tx: &mut Tx<'_>,
        mrs: &MrTable,
    ) {
        let Some(local) = self.local else { return };
        if matches!(&self.engine, QpEngine::Rc(e) if e.owes_responses()) {
            // READ data or atomic results of an earlier packet of this batch
            // go out before this packet can discard them (see
            // `owes_responses`): as a NIC would have sent them already.
            self.pump(now, tx, mrs);
        }
        let link = tx.link;
        let parsed = if via_ring {
            Packet::new_checked(datagram).and_then(|view| PacketRepr::parse_unverified(&view))
        } else {
            PacketRepr::parse(datagram, &IcrcContext::new(from, local))
        };
        let packet = match parsed {
            Ok(packet) => packet,
            Err(err) => {
                bump(&link.counters.rx_malformed);
                tracing::debug!(
                    "soft hca: QP 0x{:x}: bad datagram from {from}: {err}",
                    self.qpn()
                );
                return;
            }
        };
        if self.consumes_receive(&packet) && self.engine.recv_queue_len() == 0 {
            if let Some(recv) = self.srq.take() {
                let wr = RecvWr {
                    wr_id: u64::from(recv.wqe_index),
                    sgl: recv.sgl.clone(),
                };
                if self.engine.post_recv(wr).is_ok() {
                    self.engine_recv = Some(recv.clone());
                    self.parked = Some(recv);
                } else {
                    self.srq.give_back(recv);
                }
            }
        }
        {
            let mut memory = ProcessMemory {
                table: mrs,
                pd: self.pd,
            };
            match &mut self.engine {
                QpEngine::Rc(engine) => engine.handle_packet(now, &packet, &mut memory),
                QpEngine::Ud(engine) => {
                    engine.handle_packet(&packet, Gid::from_endpoint(from), &mut memory)
                }
            }
        }
        if self.engine.recv_queue_len() == 0 {
            // The engine started (or finished) the message in that receive.
            self.parked = None;
        }
        self.write_completions(mrs);
        self.needs_pump = true;
    }

    /// Whether this packet would take a receive if it is the one expected:
    /// the first packet of a SEND, or the packet of a WRITE with immediate
    /// that carries the immediate.
    /// For a UD QP: a datagram addressed to it.
    fn consumes_receive(&self, packet: &PacketRepr<'_>) -> bool {
        let opcode = packet.bth.opcode;
        match &self.engine {
            QpEngine::Rc(engine) => {
                let takes = (opcode.is_send() && opcode.is_first())
                    || matches!(opcode, Opcode::WriteOnlyImm | Opcode::WriteLastImm);
                takes && packet.bth.psn == engine.next_rcv_psn()
            }
            QpEngine::Ud(engine) => opcode.is_ud() && packet.bth.dest_qp == engine.qpn(),
        }
    }

    pub fn handle_timeout(&mut self, now: Instant, tx: &mut Tx<'_>, mrs: &MrTable) {
        if let QpEngine::Rc(engine) = &mut self.engine {
            engine.handle_timeout(now);
        }
        self.pump(now, tx, mrs);
    }

    /// Sends every packet the engine has ready, as far as the peer can take
    /// them (the engine builds each packet when asked, so what waits costs
    /// nothing: [`QpContext::waits_for_room`]), and writes every completion.
    /// Completions go first: a receive's CQE must not wait for the
    /// `sendto` of its ACK (one system call off the latency path). Starting
    /// a request can fail it locally, so completions are written again after.
    pub fn pump(&mut self, now: Instant, tx: &mut Tx<'_>, mrs: &MrTable) {
        self.needs_pump = false;
        self.waits_for_room = false;
        self.write_completions(mrs);
        let mut memory = ProcessMemory {
            table: mrs,
            pd: self.pd,
        };
        // The link seals (ICRC) what leaves by UDP when it sends it.
        let qpn = self.qpn();
        if let (QpEngine::Ud(engine), Some(_)) = (&mut self.engine, self.local) {
            while let Some(dest) = engine.next_dest() {
                let peer = dest.endpoint();
                if peer.is_some_and(|peer| !tx.has_room(peer)) {
                    self.waits_for_room = true;
                    break;
                }
                let Some(transmit) = engine.poll_transmit(&mut memory) else {
                    break;
                };
                let Some(peer) = peer else {
                    // As a NIC would: the datagram leaves and reaches no one.
                    tracing::debug!(
                        "soft hca: QP 0x{qpn:x}: datagram for GID {:02x?}, not a soft HCA port: lost",
                        dest.0
                    );
                    continue;
                };
                let repr = transmit.repr();
                tx.transmit(peer, |slot| match repr.emit_unsealed(slot) {
                    Ok(len) => Some(len),
                    Err(err) => {
                        tracing::warn!("soft hca: QP 0x{qpn:x}: cannot emit a datagram: {err}");
                        None
                    }
                });
            }
        }
        if let (QpEngine::Rc(engine), Some(peer), Some(_)) =
            (&mut self.engine, self.peer, self.local)
        {
            loop {
                if !tx.has_room(peer) {
                    self.waits_for_room = true;
                    break;
                }
                let Some(transmit) = engine.poll_transmit(now, &mut memory) else {
                    break;
                };
                let repr = transmit.repr();
                tx.transmit(peer, |slot| match repr.emit_unsealed(slot) {
                    Ok(len) => Some(len),
                    Err(err) => {
                        tracing::warn!(
                            "soft hca: QP 0x{qpn:x}: cannot emit {:?}: {err}",
                            repr.bth.opcode
                        );
                        None
                    }
                });
            }
        }
        self.write_completions(mrs);
    }

    fn write_completions(&mut self, mrs: &MrTable) {
        while let Some(completion) = self.engine.poll_completion() {
            self.complete(&completion, mrs);
        }
    }

    fn complete(&mut self, completion: &Completion, mrs: &MrTable) {
        match completion.queue {
            WorkQueue::Send => {
                self.send_cq.push(wqe::send_cqe(completion));
            }
            WorkQueue::Recv => {
                let parked_here = self
                    .parked
                    .as_ref()
                    .is_some_and(|r| u64::from(r.wqe_index) == completion.wr_id);
                if completion.status == CompletionStatus::WrFlushError && parked_here {
                    // Never used by this QP: other QPs of the SRQ may take it.
                    if let Some(recv) = self.parked.take() {
                        self.srq.give_back(recv);
                    }
                    return;
                }
                let dest_qpn = match &self.engine {
                    QpEngine::Rc(engine) => engine.dest_qpn(),
                    QpEngine::Ud(_) => 0,
                };
                let mut cqe = wqe::recv_cqe(completion, self.srq.srqn, dest_qpn);
                let recv = self
                    .engine_recv
                    .take_if(|r| u64::from(r.wqe_index) == completion.wr_id);
                let mut data = [0u8; 2 * mlx5::CQE_INLINE_DATA_MAX];
                let mut in_front = None;
                if let Some(recv) = recv.filter(|_| self.scatter_to_cqe) {
                    in_front = self.scatter_into_cqe(completion, &recv, &mut cqe, &mut data, mrs);
                }
                self.recv_cq.push_with_data(cqe, in_front);
            }
        }
    }
}

impl QpContext {
    /// Moves a short SEND's bytes from the receive buffer into the CQE and
    /// leaves the buffer holding [`STALE_RECV_BYTE`]: on hardware the
    /// buffer keeps whatever it held before, so a consumer that ignores the
    /// CQE's format bits reads wrong data here too. Up to 32 bytes go into
    /// `cqe` itself (`MLX5_INLINE_SCATTER_32`); on a CQ of 128-byte entries
    /// 33..=64 bytes go into the 64 bytes in front of it
    /// (`MLX5_INLINE_SCATTER_64`): those are returned, in `data`.
    fn scatter_into_cqe<'d>(
        &self,
        completion: &Completion,
        recv: &TakenRecv,
        cqe: &mut mlx5::CqeBytes,
        data: &'d mut [u8; 2 * mlx5::CQE_INLINE_DATA_MAX],
        mrs: &MrTable,
    ) -> Option<&'d [u8]> {
        let len = completion.byte_len as usize;
        let max = if self.recv_cq.cqe_size() > mlx5::CQE_LEN {
            data.len()
        } else {
            mlx5::CQE_INLINE_DATA_MAX
        };
        if completion.status != CompletionStatus::Success
            || completion.opcode != CompletionOpcode::Recv
            || len > max
        {
            return None;
        }
        let mut memory = ProcessMemory {
            table: mrs,
            pd: self.pd,
        };
        let mut filled = 0;
        let mut pieces = Vec::new();
        for sge in &recv.sgl {
            if filled == len {
                break;
            }
            let take = (len - filled).min(sge.len as usize);
            if memory
                .read(
                    sge.lkey,
                    sge.addr,
                    &mut data[filled..filled + take],
                    Access::LOCAL_WRITE,
                )
                .is_err()
            {
                // The engine wrote there a moment ago; if it is gone now
                // the ordinary CQE is all we can give.
                return None;
            }
            pieces.push((sge.lkey, sge.addr, take));
            filled += take;
        }
        if filled != len {
            return None;
        }
        let in_front = if len <= mlx5::CQE_INLINE_DATA_MAX {
            if !mlx5::put_cqe_inline_data(cqe, &data[..len]) {
                return None;
            }
            None
        } else {
            mlx5::mark_cqe_inline_data_in_front(cqe);
            let data: &'d [u8] = data;
            Some(&data[..len])
        };
        let stale = [STALE_RECV_BYTE; 2 * mlx5::CQE_INLINE_DATA_MAX];
        for (lkey, addr, take) in pieces {
            // Best effort: the range was just read, so it is registered.
            let _ = memory.write(lkey, addr, &stale[..take], Access::LOCAL_WRITE);
        }
        in_front
    }
}

/// What a receive buffer holds after its message went into the CQE.
pub(crate) const STALE_RECV_BYTE: u8 = 0xa5;

impl Drop for QpContext {
    fn drop(&mut self) {
        // What went wrong on the wire shows here (a stall hunt starts with
        // "were there RNR waits or retransmissions?").
        match &self.engine {
            QpEngine::Rc(engine) => {
                let stats = engine.stats();
                tracing::debug!("soft HCA QP {:#x} closes: {stats:?}", self.qpn());
            }
            QpEngine::Ud(engine) => {
                let stats = engine.stats();
                tracing::debug!("soft HCA UD QP {:#x} closes: {stats:?}", self.qpn());
            }
        }
        if let Some(recv) = self.parked.take() {
            self.srq.give_back(recv);
        }
    }
}
