//! One unreliable-datagram (UD) queue pair: no connection, no PSN window,
//! no acknowledgement. Each send names its destination (an address handle:
//! GID, QP number, Q_Key) and goes out as one `UD SEND Only` packet; it
//! completes once sent. Each received datagram whose DETH carries this
//! QP's Q_Key takes one receive, which gets the packet's GRH (40 bytes)
//! followed by the payload; anything else is dropped and counted.

use std::collections::VecDeque;

use super::memory::{check_sgl, gather, scatter, sgl_len, Access, Memory};
use super::psn::{psn_add, PSN_MASK};
use super::qp::{PathMtu, QpError, QpState};
use super::wr::{Completion, CompletionOpcode, CompletionStatus, LocalData, RecvWr, WorkQueue};
use crate::wire::{
    Bth, Deth, Gid, Grh, Opcode, PacketRepr, DEFAULT_PKEY, GRH_LEN, MAX_DATAGRAM_LEN,
};

/// A Q_Key with this bit set in a send request means "use the QP's own
/// Q_Key" (IBTA vol. 1, 10.2.5; such keys are privileged in a QP).
pub const QKEY_USE_QP: u32 = 0x8000_0000;

/// Creation parameters of a UD QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdConfig {
    /// This QP's number (24 bits).
    pub qpn: u32,
    pub pkey: u16,
    /// The port's GID: the destination GID of the GRH written on receive.
    pub gid: Gid,
    /// Largest message: one packet of the port's MTU.
    pub mtu: PathMtu,
}

impl UdConfig {
    pub fn new(qpn: u32, gid: Gid) -> UdConfig {
        UdConfig {
            qpn: qpn & PSN_MASK,
            pkey: DEFAULT_PKEY,
            gid,
            mtu: PathMtu::Mtu4096,
        }
    }
}

/// Where a UD send goes: what an address handle plus the request's remote
/// QPN and Q_Key name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UdDest {
    pub gid: Gid,
    /// Destination QP number (24 bits).
    pub qpn: u32,
    /// The Q_Key the destination QP must hold ([`QKEY_USE_QP`] set: this
    /// QP's own).
    pub qkey: u32,
}

/// A send request of a UD QP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UdSendWr {
    /// Returned in the completion.
    pub wr_id: u64,
    pub dest: UdDest,
    pub imm: Option<u32>,
    pub local: LocalData,
    /// Report a completion on success (errors are always reported).
    pub signaled: bool,
    /// Sets the solicited-event bit of the packet.
    pub solicited: bool,
}

/// A datagram to send and the GID of the port it goes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UdTransmit {
    pub dest: Gid,
    /// Headers; its `payload` is empty, see [`UdTransmit::payload`].
    pub header: PacketRepr<'static>,
    pub payload: Vec<u8>,
}

impl UdTransmit {
    /// The packet, ready to `emit`.
    pub fn repr(&self) -> PacketRepr<'_> {
        PacketRepr {
            payload: &self.payload,
            ..self.header
        }
    }
}

/// Counters of a UD QP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdStats {
    pub packets_sent: u64,
    pub packets_received: u64,
    /// Datagrams delivered into a receive.
    pub delivered: u64,
    /// Datagrams whose Q_Key is not this QP's.
    pub qkey_mismatches: u64,
    /// Datagrams that found no receive posted.
    pub no_receive: u64,
    /// Datagrams for another QP or P_Key, not UD, or in a state that takes
    /// none.
    pub dropped: u64,
}

/// A send-queue entry of a UD QP.
#[derive(Clone, Debug)]
enum UdEntry {
    Send(UdSendWr),
    /// Nothing on the wire; completes in order.
    Nop {
        wr_id: u64,
        signaled: bool,
    },
}

/// The engine of one UD QP. Pure: drive it with `post_*` and
/// [`UdQp::handle_packet`], then drain [`UdQp::poll_transmit`] and
/// [`UdQp::poll_completion`]. It has no timers.
#[derive(Debug)]
pub struct UdQp {
    cfg: UdConfig,
    state: QpState,
    qkey: u32,
    /// PSN of the next datagram (UD receivers do not check it).
    next_psn: u32,
    sq: VecDeque<UdEntry>,
    rq: VecDeque<RecvWr>,
    completions: VecDeque<Completion>,
    stats: UdStats,
}

impl UdQp {
    /// A UD QP in the RESET state.
    pub fn new(cfg: UdConfig) -> UdQp {
        UdQp {
            cfg: UdConfig {
                qpn: cfg.qpn & PSN_MASK,
                ..cfg
            },
            state: QpState::Reset,
            qkey: 0,
            next_psn: 0,
            sq: VecDeque::new(),
            rq: VecDeque::new(),
            completions: VecDeque::new(),
            stats: UdStats::default(),
        }
    }

    // ---- state machine ----

    /// RESET → INIT with the QP's Q_Key (INIT → INIT changes it).
    pub fn modify_to_init(&mut self, qkey: u32) -> Result<(), QpError> {
        match self.state {
            QpState::Reset | QpState::Init => {
                self.qkey = qkey;
                self.state = QpState::Init;
                Ok(())
            }
            s => Err(QpError::InvalidState(s)),
        }
    }

    /// INIT → RTR: datagrams are received from now on.
    pub fn modify_to_rtr(&mut self) -> Result<(), QpError> {
        if self.state != QpState::Init {
            return Err(QpError::InvalidState(self.state));
        }
        self.state = QpState::Rtr;
        Ok(())
    }

    /// RTR → RTS: sends go out from now on, the first with PSN `sq_psn`.
    pub fn modify_to_rts(&mut self, sq_psn: u32) -> Result<(), QpError> {
        if sq_psn > PSN_MASK {
            return Err(QpError::InvalidAttr("sq_psn"));
        }
        if self.state != QpState::Rtr {
            return Err(QpError::InvalidState(self.state));
        }
        self.next_psn = sq_psn;
        self.state = QpState::Rts;
        Ok(())
    }

    /// Any state → ERROR: every queued send and receive completes with
    /// `WrFlushError`.
    pub fn modify_to_error(&mut self) {
        if self.state != QpState::Error {
            self.enter_error(None);
        }
    }

    /// Any state → RESET: queues emptied without completions (counters
    /// kept).
    pub fn reset(&mut self) {
        let stats = self.stats;
        *self = UdQp::new(self.cfg);
        self.stats = stats;
    }

    // ---- posting ----

    /// Queues a send. In ERROR it completes at once with `WrFlushError`;
    /// before RTS it is refused.
    pub fn post_send(&mut self, wr: UdSendWr) -> Result<(), QpError> {
        match self.state {
            QpState::Rts => {
                self.sq.push_back(UdEntry::Send(wr));
                Ok(())
            }
            QpState::Error => {
                self.push_send_completion(wr.wr_id, CompletionStatus::WrFlushError, 0);
                Ok(())
            }
            s => Err(QpError::InvalidState(s)),
        }
    }

    /// Queues a NOP: it completes (if signalled) once every send before it
    /// has gone out. Refused and flushed as [`UdQp::post_send`].
    pub fn post_nop(&mut self, wr_id: u64, signaled: bool) -> Result<(), QpError> {
        match self.state {
            QpState::Rts => {
                self.sq.push_back(UdEntry::Nop { wr_id, signaled });
                Ok(())
            }
            QpState::Error => {
                self.push_completion(wr_id, CompletionOpcode::Nop, CompletionStatus::WrFlushError);
                Ok(())
            }
            s => Err(QpError::InvalidState(s)),
        }
    }

    /// Where the next datagram goes, if one waits (NOPs ahead of it are
    /// completed now): a device checks that it can carry it before taking
    /// it with [`UdQp::poll_transmit`].
    pub fn next_dest(&mut self) -> Option<Gid> {
        if self.state != QpState::Rts {
            return None;
        }
        self.complete_leading_nops();
        match self.sq.front() {
            Some(UdEntry::Send(wr)) => Some(wr.dest.gid),
            _ => None,
        }
    }

    fn complete_leading_nops(&mut self) {
        while let Some(UdEntry::Nop { wr_id, signaled }) = self.sq.front() {
            let (wr_id, signaled) = (*wr_id, *signaled);
            self.sq.pop_front();
            if signaled {
                self.push_completion(wr_id, CompletionOpcode::Nop, CompletionStatus::Success);
            }
        }
    }

    /// Queues a receive. In ERROR it completes at once with
    /// `WrFlushError`; in RESET it is refused.
    pub fn post_recv(&mut self, wr: RecvWr) -> Result<(), QpError> {
        match self.state {
            QpState::Init | QpState::Rtr | QpState::Rts | QpState::Sqd => {
                self.rq.push_back(wr);
                Ok(())
            }
            QpState::Error => {
                self.push_recv_completion(wr.wr_id, CompletionStatus::WrFlushError);
                Ok(())
            }
            s => Err(QpError::InvalidState(s)),
        }
    }

    // ---- driving ----

    /// One received datagram (parsed and ICRC-checked) from the port whose
    /// GID is `src_gid`. It goes into the first posted receive, GRH first,
    /// if it is a UD SEND for this QP and P_Key with this QP's Q_Key;
    /// otherwise it is dropped, as UD drops (no NAK exists).
    pub fn handle_packet<M: Memory + ?Sized>(
        &mut self,
        packet: &PacketRepr<'_>,
        src_gid: Gid,
        mem: &mut M,
    ) {
        self.stats.packets_received += 1;
        let bth = &packet.bth;
        let receiving = matches!(self.state, QpState::Rtr | QpState::Rts | QpState::Sqd);
        let Some(deth) = packet.deth.filter(|_| {
            receiving
                && bth.opcode.is_ud()
                && bth.dest_qp == self.cfg.qpn
                && bth.pkey == self.cfg.pkey
                && packet.headers_match_opcode()
        }) else {
            tracing::debug!(qpn = self.cfg.qpn, opcode = ?bth.opcode, dest = bth.dest_qp, state = ?self.state, "datagram dropped");
            self.stats.dropped += 1;
            return;
        };
        if deth.qkey != self.qkey {
            tracing::debug!(
                qpn = self.cfg.qpn,
                qkey = deth.qkey,
                expected = self.qkey,
                "datagram with another Q_Key dropped"
            );
            self.stats.qkey_mismatches += 1;
            return;
        }
        let Some(recv) = self.rq.pop_front() else {
            self.stats.no_receive += 1;
            return;
        };
        let byte_len = GRH_LEN + packet.payload.len();
        let fits = sgl_len(&recv.sgl).is_some_and(|capacity| capacity >= byte_len as u64);
        if !fits {
            self.receive_failed(recv, CompletionStatus::LocalLengthError);
            return;
        }
        if check_sgl(mem, &recv.sgl, Access::LOCAL_WRITE).is_err() {
            self.receive_failed(recv, CompletionStatus::LocalProtectionError);
            return;
        }
        let mut grh = [0u8; GRH_LEN];
        let header = Grh::for_datagram(src_gid, self.cfg.gid, packet.buffer_len());
        // A GRH built here always fits its 40 bytes (flow label 0).
        let written = header.emit(&mut grh).is_ok()
            && scatter(mem, &recv.sgl, 0, &grh).is_ok()
            && scatter(mem, &recv.sgl, GRH_LEN as u64, packet.payload).is_ok();
        if !written {
            self.receive_failed(recv, CompletionStatus::LocalProtectionError);
            return;
        }
        self.stats.delivered += 1;
        self.completions.push_back(Completion {
            qpn: self.cfg.qpn,
            queue: WorkQueue::Recv,
            wr_id: recv.wr_id,
            opcode: CompletionOpcode::Recv,
            status: CompletionStatus::Success,
            byte_len: byte_len as u32,
            imm: packet.imm,
            solicited: bth.solicited,
            src_qp: Some(deth.src_qp),
        });
    }

    /// The next datagram to send, if any; each send completes (if
    /// signalled) as it is handed out. A send that cannot go (longer than
    /// the MTU, local memory refused) completes in error and moves the QP
    /// to ERROR, flushing what follows.
    pub fn poll_transmit<M: Memory + ?Sized>(&mut self, mem: &mut M) -> Option<UdTransmit> {
        if self.state != QpState::Rts {
            return None;
        }
        self.complete_leading_nops();
        let UdEntry::Send(wr) = self.sq.pop_front()? else {
            return None;
        };
        let payload = match self.payload_of(&wr, mem) {
            Ok(payload) => payload,
            Err(status) => {
                tracing::debug!(
                    qpn = self.cfg.qpn,
                    wr_id = wr.wr_id,
                    ?status,
                    "UD send failed"
                );
                self.enter_error(Some((wr.wr_id, status)));
                return None;
            }
        };
        let qkey = if wr.dest.qkey & QKEY_USE_QP != 0 {
            self.qkey
        } else {
            wr.dest.qkey
        };
        let opcode = if wr.imm.is_some() {
            Opcode::UdSendOnlyImm
        } else {
            Opcode::UdSendOnly
        };
        let mut bth = Bth::new(opcode, wr.dest.qpn & PSN_MASK, self.next_psn);
        bth.pkey = self.cfg.pkey;
        bth.solicited = wr.solicited;
        self.next_psn = psn_add(self.next_psn, 1);
        let mut header = PacketRepr::new(bth, &[]);
        header.deth = Some(Deth {
            qkey,
            src_qp: self.cfg.qpn,
        });
        header.imm = wr.imm;
        if wr.signaled {
            self.push_send_completion(wr.wr_id, CompletionStatus::Success, payload.len() as u32);
        }
        self.stats.packets_sent += 1;
        Some(UdTransmit {
            dest: wr.dest.gid,
            header,
            payload,
        })
    }

    /// The next completion: sends in posting order, receives in arrival
    /// order.
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

    pub fn qkey(&self) -> u32 {
        self.qkey
    }

    /// The PSN of the next datagram.
    pub fn send_psn(&self) -> u32 {
        self.next_psn
    }

    pub fn send_queue_len(&self) -> usize {
        self.sq.len()
    }

    pub fn recv_queue_len(&self) -> usize {
        self.rq.len()
    }

    pub fn config(&self) -> &UdConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &UdStats {
        &self.stats
    }

    // ---- helpers ----

    /// The bytes of a send, or the error it completes with.
    fn payload_of<M: Memory + ?Sized>(
        &self,
        wr: &UdSendWr,
        mem: &M,
    ) -> Result<Vec<u8>, CompletionStatus> {
        let mtu = u64::from(self.cfg.mtu.bytes());
        match &wr.local {
            LocalData::Inline(bytes) => {
                if bytes.len() as u64 > mtu {
                    return Err(CompletionStatus::LocalLengthError);
                }
                Ok(bytes.clone())
            }
            LocalData::Sgl(sgl) => {
                let len = sgl_len(sgl).ok_or(CompletionStatus::LocalLengthError)?;
                if len > mtu || len as usize > MAX_DATAGRAM_LEN {
                    return Err(CompletionStatus::LocalLengthError);
                }
                let mut payload = vec![0u8; len as usize];
                gather(mem, sgl, 0, &mut payload)
                    .map_err(|_| CompletionStatus::LocalProtectionError)?;
                Ok(payload)
            }
        }
    }

    fn push_send_completion(&mut self, wr_id: u64, status: CompletionStatus, byte_len: u32) {
        self.push_completion(wr_id, CompletionOpcode::Send, status);
        if let Some(last) = self.completions.back_mut() {
            last.byte_len = byte_len;
        }
    }

    fn push_completion(&mut self, wr_id: u64, opcode: CompletionOpcode, status: CompletionStatus) {
        self.completions.push_back(Completion {
            qpn: self.cfg.qpn,
            queue: WorkQueue::Send,
            wr_id,
            opcode,
            status,
            byte_len: 0,
            imm: None,
            solicited: false,
            src_qp: None,
        });
    }

    fn push_recv_completion(&mut self, wr_id: u64, status: CompletionStatus) {
        self.completions.push_back(Completion {
            qpn: self.cfg.qpn,
            queue: WorkQueue::Recv,
            wr_id,
            opcode: CompletionOpcode::Recv,
            status,
            byte_len: 0,
            imm: None,
            solicited: false,
            src_qp: None,
        });
    }

    /// A receive could not take a datagram: it completes in error and the
    /// QP goes to ERROR, as on hardware.
    fn receive_failed(&mut self, recv: RecvWr, status: CompletionStatus) {
        tracing::debug!(
            qpn = self.cfg.qpn,
            wr_id = recv.wr_id,
            ?status,
            "UD receive failed"
        );
        self.push_recv_completion(recv.wr_id, status);
        self.enter_error(None);
    }

    /// Moves to ERROR: `failed` is a send already taken from the queue and
    /// its status (completed first); every queued send and receive is
    /// flushed, in order.
    fn enter_error(&mut self, failed: Option<(u64, CompletionStatus)>) {
        self.state = QpState::Error;
        if let Some((wr_id, status)) = failed {
            self.push_send_completion(wr_id, status, 0);
        }
        for entry in std::mem::take(&mut self.sq) {
            match entry {
                UdEntry::Send(wr) => {
                    self.push_send_completion(wr.wr_id, CompletionStatus::WrFlushError, 0)
                }
                UdEntry::Nop { wr_id, .. } => self.push_completion(
                    wr_id,
                    CompletionOpcode::Nop,
                    CompletionStatus::WrFlushError,
                ),
            }
        }
        for wr in std::mem::take(&mut self.rq) {
            self.push_recv_completion(wr.wr_id, CompletionStatus::WrFlushError);
        }
    }
}
