//! The responder half of a QP: the in-order PSN check, duplicates (ACKed
//! again, READs re-executed, atomics answered from saved results), SEND into
//! receives, RDMA WRITE, READ responses, atomics, access checks, NAKs and
//! ACK coalescing.

use super::memory::{check_sgl, scatter, sgl_len, Access, Memory};
use super::psn::{psn_add, psn_diff, psn_prev, PSN_MASK};
use super::qp::{Inbound, Qp, QpState, ReadJob, Response, Transmit, MAX_QUEUED_RESPONSES};
use super::wr::{AtomicOp, Completion, CompletionOpcode, CompletionStatus, RecvWr, WorkQueue};
use crate::wire::{Aeth, AethSyndrome, AtomicAckEth, Bth, NakCode, Opcode, PacketRepr, Reth};

/// Why an in-order request was not executed.
enum Reject {
    /// No receive posted: RNR NAK, try again later.
    ReceiverNotReady,
    /// NAK with this code; the QP stays usable.
    Nak(NakCode),
    /// A local error moved the QP to ERROR; NAK with this code.
    Fatal(NakCode),
    /// Silently dropped (e.g. no room to queue the response).
    Drop,
}

/// Fewest atomic results kept for duplicates, whatever `max_dest_rd_atomic`.
const MIN_ATOMIC_RESULTS: usize = 16;

impl Qp {
    fn mtu(&self) -> u32 {
        self.rtr.path_mtu.bytes()
    }

    pub(super) fn handle_request<M: Memory + ?Sized>(
        &mut self,
        packet: &PacketRepr<'_>,
        mem: &mut M,
    ) {
        let psn = packet.bth.psn;
        let d = psn_diff(psn, self.expected_psn);
        tracing::trace!(qpn = self.cfg.qpn, psn, expected = self.expected_psn, opcode = ?packet.bth.opcode, "request");
        if d > 0 {
            // A gap: NAK once, then wait for the requester to go back.
            self.stats.out_of_sequence_requests += 1;
            if !self.nak_sent {
                self.nak_sent = true;
                self.stats.sequence_naks_sent += 1;
                self.queue_nak(
                    self.expected_psn,
                    AethSyndrome::Nak(NakCode::PsnSequenceError),
                );
            }
            return;
        }
        if d < 0 {
            self.stats.duplicate_requests += 1;
            self.handle_duplicate(packet, mem);
            return;
        }
        match self.execute(packet, mem) {
            Ok(()) => {
                self.nak_sent = false;
                let responds_itself =
                    packet.bth.opcode == Opcode::ReadRequest || packet.bth.opcode.is_atomic();
                if packet.bth.ack_req && !responds_itself {
                    self.queue_ack(psn);
                }
            }
            Err(Reject::ReceiverNotReady) => {
                self.nak_sent = true;
                self.stats.rnr_naks_sent += 1;
                let timer = self.rtr.min_rnr_timer & 0x1f;
                self.queue_nak(psn, AethSyndrome::RnrNak { timer });
            }
            Err(Reject::Nak(code)) | Err(Reject::Fatal(code)) => {
                self.nak_sent = true;
                match code {
                    NakCode::RemoteAccessError => self.stats.access_naks_sent += 1,
                    NakCode::RemoteOperationalError => self.stats.operational_naks_sent += 1,
                    _ => self.stats.invalid_request_naks_sent += 1,
                }
                tracing::debug!(qpn = self.cfg.qpn, psn, ?code, "request NAKed");
                if self.cfg.responder_errors_fatal && self.state != QpState::Error {
                    // Before queueing the NAK: entering ERROR drops queued
                    // responses, and this NAK must still go out.
                    self.enter_error(None);
                }
                self.queue_nak(psn, AethSyndrome::Nak(code));
            }
            Err(Reject::Drop) => {
                tracing::debug!(qpn = self.cfg.qpn, psn, "request dropped");
                self.stats.packets_dropped += 1;
            }
        }
    }

    fn handle_duplicate<M: Memory + ?Sized>(&mut self, packet: &PacketRepr<'_>, mem: &mut M) {
        let psn = packet.bth.psn;
        let opcode = packet.bth.opcode;
        if opcode == Opcode::ReadRequest {
            // The responses were lost: read again (READs are idempotent), but
            // only inside what was already accepted.
            let Some(reth) = packet.reth else { return };
            let job = self.read_job(psn, reth);
            if psn_diff(self.expected_psn, psn_add(psn, job.npkts)) < 0
                || !remote_access_allowed(mem, &reth, Access::REMOTE_READ)
                || self.responses.len() >= MAX_QUEUED_RESPONSES
            {
                tracing::debug!(qpn = self.cfg.qpn, psn, "duplicate READ refused");
                self.stats.packets_dropped += 1;
                return;
            }
            self.stats.reads_replayed += 1;
            self.responses.push_back(Response::Read(job));
        } else if opcode.is_atomic() {
            // Never execute twice: answer with the value saved the first time.
            let saved = self
                .atomic_results
                .iter()
                .find(|(p, _)| *p == psn)
                .map(|(_, orig)| *orig);
            match saved {
                Some(orig) if self.responses.len() < MAX_QUEUED_RESPONSES => {
                    self.stats.atomics_replayed += 1;
                    self.responses.push_back(Response::AtomicAck {
                        psn,
                        orig,
                        msn: self.msn,
                    });
                }
                _ => {
                    tracing::debug!(
                        qpn = self.cfg.qpn,
                        psn,
                        "duplicate atomic without saved result"
                    );
                    self.stats.packets_dropped += 1;
                }
            }
        } else {
            // SEND/WRITE already executed: acknowledge again so a requester
            // whose ACK was lost moves on.
            self.queue_ack(psn_prev(self.expected_psn));
        }
    }

    fn advance_expected(&mut self, n: u32) {
        self.expected_psn = psn_add(self.expected_psn, n);
    }

    fn message_done(&mut self) {
        self.msn = psn_add(self.msn, 1);
    }

    fn execute<M: Memory + ?Sized>(
        &mut self,
        packet: &PacketRepr<'_>,
        mem: &mut M,
    ) -> Result<(), Reject> {
        let opcode = packet.bth.opcode;
        let mtu = u64::from(self.mtu());
        let len = packet.payload.len() as u64;
        match opcode {
            Opcode::SendFirst | Opcode::SendOnly | Opcode::SendOnlyImm => {
                if !matches!(self.inbound, Inbound::Idle) {
                    return Err(Reject::Nak(NakCode::InvalidRequest));
                }
                let only = opcode != Opcode::SendFirst;
                if (only && len > mtu) || (!only && len != mtu) {
                    return Err(Reject::Nak(NakCode::InvalidRequest));
                }
                let Some(recv) = self.rq.pop_front() else {
                    return Err(Reject::ReceiverNotReady);
                };
                if check_sgl(mem, &recv.sgl, Access::LOCAL_WRITE).is_err() {
                    return Err(self.receive_failed(recv, CompletionStatus::LocalProtectionError));
                }
                let recv = self.deliver(recv, 0, packet.payload, mem)?;
                self.advance_expected(1);
                if only {
                    self.message_done();
                    self.complete_recv(&recv, CompletionOpcode::Recv, len, packet);
                } else {
                    self.inbound = Inbound::Send { recv, offset: len };
                }
                Ok(())
            }
            Opcode::SendMiddle | Opcode::SendLast | Opcode::SendLastImm => {
                let Inbound::Send { .. } = self.inbound else {
                    return Err(Reject::Nak(NakCode::InvalidRequest));
                };
                let last = opcode != Opcode::SendMiddle;
                if (last && (len == 0 || len > mtu)) || (!last && len != mtu) {
                    return Err(Reject::Nak(NakCode::InvalidRequest));
                }
                let Inbound::Send { recv, offset } = std::mem::take(&mut self.inbound) else {
                    return Err(Reject::Nak(NakCode::InvalidRequest));
                };
                let recv = self.deliver(recv, offset, packet.payload, mem)?;
                let total = offset + len;
                self.advance_expected(1);
                if last {
                    self.message_done();
                    self.complete_recv(&recv, CompletionOpcode::Recv, total, packet);
                } else {
                    self.inbound = Inbound::Send {
                        recv,
                        offset: total,
                    };
                }
                Ok(())
            }
            Opcode::WriteFirst | Opcode::WriteOnly | Opcode::WriteOnlyImm => {
                if !matches!(self.inbound, Inbound::Idle) {
                    return Err(Reject::Nak(NakCode::InvalidRequest));
                }
                let reth = packet.reth.ok_or(Reject::Nak(NakCode::InvalidRequest))?;
                let total = u64::from(reth.dma_len);
                let only = opcode != Opcode::WriteFirst;
                if (only && len != total) || (!only && (len != mtu || total <= mtu)) {
                    return Err(Reject::Nak(NakCode::InvalidRequest));
                }
                // The whole range is checked before the first byte lands.
                if !remote_access_allowed(mem, &reth, Access::REMOTE_WRITE) {
                    return Err(Reject::Nak(NakCode::RemoteAccessError));
                }
                if opcode == Opcode::WriteOnlyImm && self.rq.is_empty() {
                    return Err(Reject::ReceiverNotReady);
                }
                if !packet.payload.is_empty() {
                    mem.write(reth.rkey, reth.va, packet.payload, Access::REMOTE_WRITE)
                        .map_err(|_| Reject::Nak(NakCode::RemoteAccessError))?;
                }
                self.advance_expected(1);
                if only {
                    self.finish_write(opcode == Opcode::WriteOnlyImm, total, packet);
                } else {
                    self.inbound = Inbound::Write {
                        rkey: reth.rkey,
                        va: reth.va.wrapping_add(len),
                        remaining: total - len,
                        total: reth.dma_len,
                    };
                }
                Ok(())
            }
            Opcode::WriteMiddle | Opcode::WriteLast | Opcode::WriteLastImm => {
                let Inbound::Write {
                    rkey,
                    va,
                    remaining,
                    total,
                } = self.inbound
                else {
                    return Err(Reject::Nak(NakCode::InvalidRequest));
                };
                let last = opcode != Opcode::WriteMiddle;
                if (last && len != remaining) || (!last && (len != mtu || remaining <= mtu)) {
                    return Err(Reject::Nak(NakCode::InvalidRequest));
                }
                if opcode == Opcode::WriteLastImm && self.rq.is_empty() {
                    return Err(Reject::ReceiverNotReady);
                }
                mem.write(rkey, va, packet.payload, Access::REMOTE_WRITE)
                    .map_err(|_| Reject::Nak(NakCode::RemoteAccessError))?;
                self.advance_expected(1);
                if last {
                    self.inbound = Inbound::Idle;
                    self.finish_write(opcode == Opcode::WriteLastImm, u64::from(total), packet);
                } else {
                    self.inbound = Inbound::Write {
                        rkey,
                        va: va.wrapping_add(len),
                        remaining: remaining - len,
                        total,
                    };
                }
                Ok(())
            }
            Opcode::ReadRequest => {
                if !matches!(self.inbound, Inbound::Idle) {
                    return Err(Reject::Nak(NakCode::InvalidRequest));
                }
                let reth = packet.reth.ok_or(Reject::Nak(NakCode::InvalidRequest))?;
                let npkts = self.read_packets(reth.dma_len);
                if npkts > PSN_MASK / 2 {
                    return Err(Reject::Nak(NakCode::InvalidRequest));
                }
                if !remote_access_allowed(mem, &reth, Access::REMOTE_READ) {
                    return Err(Reject::Nak(NakCode::RemoteAccessError));
                }
                if self.responses.len() >= MAX_QUEUED_RESPONSES {
                    return Err(Reject::Drop);
                }
                self.advance_expected(npkts);
                self.message_done();
                let job = self.read_job(packet.bth.psn, reth);
                self.responses.push_back(Response::Read(job));
                Ok(())
            }
            Opcode::CompareSwap
            | Opcode::FetchAdd
            | Opcode::MaskedCompareSwap
            | Opcode::MaskedFetchAdd => {
                if !matches!(self.inbound, Inbound::Idle) {
                    return Err(Reject::Nak(NakCode::InvalidRequest));
                }
                let (va, rkey, op) =
                    atomic_of(packet).ok_or(Reject::Nak(NakCode::InvalidRequest))?;
                if va % u64::from(op.size_bytes()) != 0 {
                    return Err(Reject::Nak(NakCode::InvalidRequest));
                }
                if self.responses.len() >= MAX_QUEUED_RESPONSES {
                    return Err(Reject::Drop);
                }
                let orig = mem
                    .atomic(rkey, va, &op, Access::REMOTE_ATOMIC)
                    .map_err(|_| Reject::Nak(NakCode::RemoteAccessError))?;
                self.stats.atomics_executed += 1;
                let keep = usize::from(self.rtr.max_dest_rd_atomic).max(MIN_ATOMIC_RESULTS);
                while self.atomic_results.len() >= keep {
                    self.atomic_results.pop_front();
                }
                let psn = packet.bth.psn;
                self.atomic_results.push_back((psn, orig));
                self.advance_expected(1);
                self.message_done();
                self.responses.push_back(Response::AtomicAck {
                    psn,
                    orig,
                    msn: self.msn,
                });
                Ok(())
            }
            // Responses are not requests; `handle_packet` never sends them here.
            _ => Err(Reject::Drop),
        }
    }

    /// Writes SEND data into a receive at `offset`, or fails the receive
    /// (too small: local length error) and the QP.
    fn deliver<M: Memory + ?Sized>(
        &mut self,
        recv: RecvWr,
        offset: u64,
        data: &[u8],
        mem: &mut M,
    ) -> Result<RecvWr, Reject> {
        let capacity = sgl_len(&recv.sgl).unwrap_or(0);
        let end = offset.saturating_add(data.len() as u64);
        if end > capacity {
            return Err(self.receive_failed(recv, CompletionStatus::LocalLengthError));
        }
        if scatter(mem, &recv.sgl, offset, data).is_err() {
            return Err(self.receive_failed(recv, CompletionStatus::LocalProtectionError));
        }
        Ok(recv)
    }

    /// A receive could not take a SEND: it completes in error and the QP
    /// goes to ERROR, as the responder of an RC QP does on a local error.
    fn receive_failed(&mut self, recv: RecvWr, status: CompletionStatus) -> Reject {
        self.completions.push_back(Completion {
            qpn: self.cfg.qpn,
            queue: WorkQueue::Recv,
            wr_id: recv.wr_id,
            opcode: CompletionOpcode::Recv,
            status,
            byte_len: 0,
            imm: None,
            solicited: false,
            src_qp: None,
        });
        self.enter_error(None);
        Reject::Fatal(match status {
            CompletionStatus::LocalLengthError => NakCode::InvalidRequest,
            _ => NakCode::RemoteOperationalError,
        })
    }

    fn complete_recv(
        &mut self,
        recv: &RecvWr,
        opcode: CompletionOpcode,
        byte_len: u64,
        packet: &PacketRepr<'_>,
    ) {
        self.completions.push_back(Completion {
            qpn: self.cfg.qpn,
            queue: WorkQueue::Recv,
            wr_id: recv.wr_id,
            opcode,
            status: CompletionStatus::Success,
            byte_len: u32::try_from(byte_len).unwrap_or(u32::MAX),
            imm: packet.imm,
            solicited: packet.bth.solicited,
            src_qp: None,
        });
    }

    /// Queues an ACK of everything through `psn`, merged into an ACK still
    /// waiting at the tail (coalescing).
    fn queue_ack(&mut self, psn: u32) {
        let msn = self.msn;
        if let Some(Response::Ack { psn: p, msn: m }) = self.responses.back_mut() {
            *p = psn;
            *m = msn;
            return;
        }
        if self.responses.len() < MAX_QUEUED_RESPONSES {
            self.responses.push_back(Response::Ack { psn, msn });
        }
    }

    fn queue_nak(&mut self, psn: u32, syndrome: AethSyndrome) {
        if self.responses.len() < MAX_QUEUED_RESPONSES {
            let msn = self.msn;
            self.responses
                .push_back(Response::Nak { psn, syndrome, msn });
        }
    }

    fn response_header(&self, opcode: Opcode, psn: u32) -> PacketRepr<'static> {
        let mut bth = Bth::new(opcode, self.rtr.dest_qpn, psn);
        bth.pkey = self.cfg.pkey;
        PacketRepr::new(bth, &[])
    }

    /// Ends a WRITE message of `total` bytes; one with immediate data
    /// consumes a receive and completes it.
    fn finish_write(&mut self, with_imm: bool, total: u64, packet: &PacketRepr<'_>) {
        self.message_done();
        if with_imm {
            if let Some(recv) = self.rq.pop_front() {
                self.complete_recv(&recv, CompletionOpcode::RecvRdmaWithImm, total, packet);
            }
        }
    }

    /// How many response packets a READ of `len` bytes takes (at least one).
    fn read_packets(&self, len: u32) -> u32 {
        len.div_ceil(self.mtu()).max(1)
    }

    /// The job that answers a READ of `reth` whose first response is `psn`,
    /// reporting the current MSN.
    fn read_job(&self, psn: u32, reth: Reth) -> ReadJob {
        ReadJob {
            first_psn: psn,
            rkey: reth.rkey,
            va: reth.va,
            len: reth.dma_len,
            npkts: self.read_packets(reth.dma_len),
            next: 0,
            msn: self.msn,
        }
    }

    fn aeth(syndrome: AethSyndrome, msn: u32) -> Aeth {
        Aeth {
            syndrome,
            msn: msn & PSN_MASK,
        }
    }

    fn ack_aeth(msn: u32) -> Aeth {
        Self::aeth(
            AethSyndrome::Ack {
                credits: Aeth::CREDITS_INVALID,
            },
            msn,
        )
    }

    /// The next response packet, if any (sent in any state, so the NAK of a
    /// request that moved this QP to ERROR still goes out).
    pub(super) fn next_response<M: Memory + ?Sized>(&mut self, mem: &M) -> Option<Transmit> {
        let mtu = self.mtu();
        let front = self.responses.front_mut()?;
        let (header, payload, finished) = match front {
            Response::Ack { psn, msn } => {
                let (psn, msn) = (*psn, *msn);
                let mut header = self.response_header(Opcode::Acknowledge, psn);
                header.aeth = Some(Self::ack_aeth(msn));
                (header, Vec::new(), true)
            }
            Response::Nak { psn, syndrome, msn } => {
                let (psn, syndrome, msn) = (*psn, *syndrome, *msn);
                let mut header = self.response_header(Opcode::Acknowledge, psn);
                header.aeth = Some(Self::aeth(syndrome, msn));
                (header, Vec::new(), true)
            }
            Response::AtomicAck { psn, orig, msn } => {
                let (psn, orig, msn) = (*psn, *orig, *msn);
                let mut header = self.response_header(Opcode::AtomicAcknowledge, psn);
                header.aeth = Some(Self::ack_aeth(msn));
                header.atomic_ack = Some(AtomicAckEth { orig });
                (header, Vec::new(), true)
            }
            Response::Read(job) => {
                let k = job.next;
                job.next = job.next.saturating_add(1);
                let job = job.clone();
                let psn = psn_add(job.first_psn, k);
                let offset = u64::from(k) * u64::from(mtu);
                let chunk = u64::from(job.len)
                    .saturating_sub(offset)
                    .min(u64::from(mtu)) as usize;
                let mut payload = vec![0u8; chunk];
                let addr = job.va.wrapping_add(offset);
                // A zero-length READ touches no memory, so its key is never
                // looked at (see `remote_access_allowed`).
                if chunk > 0
                    && mem
                        .read(job.rkey, addr, &mut payload, Access::REMOTE_READ)
                        .is_err()
                {
                    // Deregistered since the request was checked: a NAK ends
                    // the response.
                    self.stats.access_naks_sent += 1;
                    let mut header = self.response_header(Opcode::Acknowledge, psn);
                    header.aeth = Some(Self::aeth(
                        AethSyndrome::Nak(NakCode::RemoteAccessError),
                        job.msn,
                    ));
                    (header, Vec::new(), true)
                } else {
                    let is_last = k + 1 >= job.npkts;
                    let opcode = match (k == 0, is_last) {
                        (true, true) => Opcode::ReadResponseOnly,
                        (true, false) => Opcode::ReadResponseFirst,
                        (false, true) => Opcode::ReadResponseLast,
                        (false, false) => Opcode::ReadResponseMiddle,
                    };
                    let mut header = self.response_header(opcode, psn);
                    if opcode != Opcode::ReadResponseMiddle {
                        header.aeth = Some(Self::ack_aeth(job.msn));
                    }
                    (header, payload, is_last)
                }
            }
        };
        if finished {
            self.responses.pop_front();
        }
        Some(Transmit { header, payload })
    }
}

/// Whether the whole range a RETH names may be accessed with `access`. A
/// zero-length RDMA WRITE or READ passes whatever its R_Key and virtual
/// address: the InfiniBand spec (vol. 1, 9.7.4.1) has the responder check
/// them only when the DMA length is non-zero, and a zero-length access is
/// how requesters probe a connection without naming any memory.
fn remote_access_allowed<M: Memory + ?Sized>(mem: &M, reth: &Reth, access: Access) -> bool {
    reth.dma_len == 0
        || mem
            .check(reth.rkey, reth.va, u64::from(reth.dma_len), access)
            .is_ok()
}

/// The remote address, rkey and operation of an atomic request.
fn atomic_of(packet: &PacketRepr<'_>) -> Option<(u64, u32, AtomicOp)> {
    match packet.bth.opcode {
        Opcode::CompareSwap => {
            let a = packet.atomic?;
            Some((
                a.va,
                a.rkey,
                AtomicOp::CompareSwap {
                    compare: a.compare,
                    swap: a.swap_add,
                },
            ))
        }
        Opcode::FetchAdd => {
            let a = packet.atomic?;
            Some((a.va, a.rkey, AtomicOp::FetchAdd { add: a.swap_add }))
        }
        Opcode::MaskedCompareSwap => {
            let a = packet.ext_atomic?;
            Some((
                a.va,
                a.rkey,
                AtomicOp::MaskedCompareSwap {
                    size: a.size,
                    compare: a.compare,
                    compare_mask: a.compare_mask,
                    swap: a.swap_add,
                    swap_mask: a.swap_add_mask,
                },
            ))
        }
        Opcode::MaskedFetchAdd => {
            let a = packet.ext_atomic?;
            Some((
                a.va,
                a.rkey,
                AtomicOp::MaskedFetchAdd {
                    size: a.size,
                    add: a.swap_add,
                    field_boundary: a.swap_add_mask,
                },
            ))
        }
        _ => None,
    }
}
