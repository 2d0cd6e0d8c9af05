//! The requester half of a QP: segmentation, PSNs, ACK requests, the send
//! window, go-back-N retransmission, RNR waits, READ/atomic responses and
//! in-order completion.

use super::memory::{check_sgl, gather, scatter, Access, Memory};
use super::psn::{psn_add, psn_diff, psn_prev};
use super::qp::{Qp, QpState, SendEntry, Transmit};
use super::time::{rnr_timer_duration, Instant};
use super::wr::{AtomicOp, CompletionStatus, LocalData, SendOp};
use crate::wire::{AethSyndrome, AtomicEth, Bth, ExtAtomicEth, NakCode, Opcode, PacketRepr, Reth};

impl SendEntry {
    fn end_psn(&self) -> u32 {
        psn_add(self.first_psn, self.npkts)
    }

    fn is_rd_atomic(&self) -> bool {
        matches!(self.wr.op, SendOp::Read { .. } | SendOp::Atomic { .. })
    }

    fn contains(&self, psn: u32) -> bool {
        let d = psn_diff(psn, self.first_psn);
        d >= 0 && (d as u32) < self.npkts
    }

    /// READ/atomic: every response has arrived.
    fn responses_done(&self) -> bool {
        self.responses >= self.npkts
    }

    fn byte_len(&self) -> u32 {
        self.len.unwrap_or(0)
    }
}

impl Qp {
    fn rtx_timeout_arm(&mut self, now: Instant) {
        if self.retx_deadline.is_none() {
            if let Some(timeout) = self.rts.ack_timeout {
                self.retx_deadline = Some(now + timeout);
            }
        }
    }

    /// Something has been sent and not acknowledged.
    fn has_unacked(&self) -> bool {
        psn_diff(self.tx_psn, self.una) > 0
    }

    /// Points the transmit cursor at `psn` (at or after `una`).
    fn rewind_to(&mut self, psn: u32) {
        self.tx_psn = psn;
        self.cursor = self
            .sq
            .iter()
            .position(|e| {
                e.contains(psn) || (e.npkts == 0 && !e.started && psn_diff(e.first_psn, psn) >= 0)
            })
            .unwrap_or(self.sq.len());
        if !self.has_unacked() {
            self.retx_deadline = None;
        }
    }

    /// Go-back-N: send again from the oldest unacknowledged PSN.
    fn go_back_n(&mut self) {
        self.rewind_to(self.una);
        self.retx_deadline = None;
        tracing::trace!(
            qpn = self.cfg.qpn,
            una = self.una,
            cursor = self.cursor,
            entry = ?self.sq.get(self.cursor).map(|e| (e.first_psn, e.npkts, e.started, e.responses, e.wr.wr_id)),
            head = ?self.sq.front().map(|e| (e.first_psn, e.npkts, e.started, e.responses, e.wr.wr_id)),
            "go back");
    }

    /// Everything before `new_una` is acknowledged (never past a READ or
    /// atomic whose responses have not arrived; the caller limits it).
    fn advance_una(&mut self, now: Instant, new_una: u32) {
        if psn_diff(new_una, self.una) <= 0 {
            return;
        }
        self.una = new_una;
        self.last_seq_nak = None;
        self.note_peer(new_una);
        self.retries_left = self.rts.retry_cnt;
        self.rnr_retries_left = self.rts.rnr_retry;
        if psn_diff(self.tx_psn, self.una) < 0 {
            // Acknowledged beyond what we were about to resend.
            self.rewind_to(self.una);
        }
        self.retire();
        self.retx_deadline = None;
        if self.has_unacked() {
            self.rtx_timeout_arm(now);
        }
    }

    /// The responder has received everything before `psn`. Its progress
    /// counts as progress for the retry counter even when `una` is held back
    /// by a READ or atomic whose response was lost.
    fn note_peer(&mut self, psn: u32) {
        if psn_diff(psn, self.peer_psn) > 0 && psn_diff(self.max_sent, psn) >= 0 {
            self.peer_psn = psn;
            self.retries_left = self.rts.retry_cnt;
        }
    }

    /// Completes finished requests at the head of the queue, in order.
    fn retire(&mut self) {
        while let Some(front) = self.sq.front() {
            let finished = match front.wr.op {
                SendOp::Read { .. } | SendOp::Atomic { .. } => front.responses_done(),
                SendOp::Nop => front.started && psn_diff(self.una, front.first_psn) >= 0,
                _ => front.started && psn_diff(self.una, front.end_psn()) >= 0,
            };
            if !finished {
                break;
            }
            let Some(entry) = self.sq.pop_front() else {
                break;
            };
            self.cursor = self.cursor.saturating_sub(1);
            if entry.is_rd_atomic() {
                self.rd_atomic_outstanding = self.rd_atomic_outstanding.saturating_sub(1);
            }
            if entry.wr.signaled {
                self.push_send_completion(&entry.wr, CompletionStatus::Success, entry.byte_len());
            }
        }
        if self.state == QpState::Sqd && self.is_drained() {
            tracing::debug!(qpn = self.cfg.qpn, "send queue drained");
        }
    }

    /// An acknowledgement of every PSN up to and including `psn`: moves
    /// `una`, but not past a READ or atomic still waiting for its responses.
    fn ack_through(&mut self, now: Instant, psn: u32) {
        let target = psn_add(psn, 1);
        let mut new_una = target;
        for e in &self.sq {
            if psn_diff(e.first_psn, target) >= 0 {
                break;
            }
            if e.is_rd_atomic() && !e.responses_done() {
                new_una = psn_add(e.first_psn, e.responses);
                break;
            }
        }
        self.advance_una(now, new_una);
    }

    /// Index of the request holding `psn`, else of the oldest unfinished one.
    fn entry_at(&self, psn: u32) -> usize {
        self.sq.iter().position(|e| e.contains(psn)).unwrap_or(0)
    }

    /// A response PSN inside the unacknowledged window `[una, max_sent)`.
    fn in_flight(&self, psn: u32) -> bool {
        psn_diff(psn, self.una) >= 0 && psn_diff(self.max_sent, psn) > 0
    }

    pub(super) fn on_retransmit_timeout(&mut self) {
        if !matches!(self.state, QpState::Rts | QpState::Sqd) || !self.has_unacked() {
            return;
        }
        self.stats.timeouts += 1;
        tracing::trace!(
            qpn = self.cfg.qpn,
            una = self.una,
            tx = self.tx_psn,
            left = self.retries_left,
            "retransmit timeout"
        );
        if self.spend_retry() {
            self.go_back_n();
        }
    }

    /// Spends one retry. With none left, fails the oldest request with
    /// `RetryExceeded` (the QP enters ERROR) and returns `false`.
    fn spend_retry(&mut self) -> bool {
        if self.retries_left == 0 {
            let index = self.entry_at(self.una);
            self.enter_error(Some((index, CompletionStatus::RetryExceeded)));
            return false;
        }
        self.retries_left -= 1;
        true
    }

    /// A packet from the responder: ACK/NAK, READ response, atomic ACK.
    pub(super) fn handle_response<M: Memory + ?Sized>(
        &mut self,
        now: Instant,
        packet: &PacketRepr<'_>,
        mem: &mut M,
    ) {
        let psn = packet.bth.psn;
        match packet.bth.opcode {
            Opcode::Acknowledge => {
                let Some(aeth) = packet.aeth else {
                    self.stats.packets_dropped += 1;
                    return;
                };
                self.handle_ack(now, psn, aeth.syndrome);
            }
            Opcode::ReadResponseFirst
            | Opcode::ReadResponseMiddle
            | Opcode::ReadResponseLast
            | Opcode::ReadResponseOnly => self.handle_read_response(now, packet, mem),
            Opcode::AtomicAcknowledge => {
                let Some(ack) = packet.atomic_ack else {
                    self.stats.packets_dropped += 1;
                    return;
                };
                self.handle_atomic_ack(now, psn, ack.orig, mem);
            }
            _ => self.stats.packets_dropped += 1,
        }
    }

    fn handle_ack(&mut self, now: Instant, psn: u32, syndrome: AethSyndrome) {
        tracing::trace!(
            qpn = self.cfg.qpn,
            psn,
            ?syndrome,
            una = self.una,
            "ACK/NAK received"
        );
        match syndrome {
            AethSyndrome::Ack { .. } => {
                // `psn` is the last PSN acknowledged: `una - 1` is a repeat.
                if psn == psn_prev(self.una) {
                    return;
                }
                if !self.in_flight(psn) {
                    self.stats.stale_responses += 1;
                    return;
                }
                self.ack_through(now, psn);
                self.note_peer(psn_add(psn, 1));
            }
            AethSyndrome::RnrNak { timer } => {
                if !self.in_flight(psn) {
                    self.stats.stale_responses += 1;
                    return;
                }
                self.stats.rnr_naks_received += 1;
                self.ack_through(now, psn_prev(psn));
                if self.rts.rnr_retry != 7 {
                    if self.rnr_retries_left == 0 {
                        let index = self.entry_at(psn);
                        self.enter_error(Some((index, CompletionStatus::RnrRetryExceeded)));
                        return;
                    }
                    self.rnr_retries_left -= 1;
                }
                self.go_back_n();
                self.rnr_resume_at = Some(now + rnr_timer_duration(timer));
            }
            AethSyndrome::Nak(NakCode::PsnSequenceError) => {
                // The responder expects `psn`; it may equal `max_sent` only if
                // it got everything, which a sequence NAK contradicts.
                if !self.in_flight(psn) {
                    self.stats.stale_responses += 1;
                    return;
                }
                self.stats.sequence_naks_received += 1;
                tracing::trace!(
                    qpn = self.cfg.qpn,
                    psn,
                    una = self.una,
                    left = self.retries_left,
                    "sequence NAK"
                );
                // Older than what the responder has told us since (the link
                // reordered it), or a copy of the NAK already acted on.
                let behind = psn_diff(psn, self.peer_psn);
                if behind < 0 || (behind == 0 && self.last_seq_nak == Some(psn)) {
                    self.stats.stale_responses += 1;
                    return;
                }
                let (una_before, peer_before) = (self.una, self.peer_psn);
                self.ack_through(now, psn_prev(psn));
                self.note_peer(psn);
                self.last_seq_nak = Some(psn);
                // No progress counts like a timeout, so forged or looping
                // NAKs cannot keep the QP busy forever.
                if self.una == una_before && self.peer_psn == peer_before && !self.spend_retry() {
                    return;
                }
                self.go_back_n();
            }
            AethSyndrome::Nak(code) => {
                if !self.in_flight(psn) {
                    self.stats.stale_responses += 1;
                    return;
                }
                self.stats.error_naks_received += 1;
                self.ack_through(now, psn_prev(psn));
                let status = match code {
                    NakCode::RemoteAccessError => CompletionStatus::RemoteAccessError,
                    NakCode::RemoteOperationalError => CompletionStatus::RemoteOperationalError,
                    _ => CompletionStatus::RemoteInvalidRequest,
                };
                let index = self.entry_at(psn);
                self.enter_error(Some((index, status)));
            }
        }
    }

    /// The oldest READ/atomic still waiting for a response.
    fn oldest_pending_rd_atomic(&self) -> Option<usize> {
        self.sq
            .iter()
            .position(|e| e.is_rd_atomic() && !e.responses_done())
    }

    fn handle_read_response<M: Memory + ?Sized>(
        &mut self,
        now: Instant,
        packet: &PacketRepr<'_>,
        mem: &mut M,
    ) {
        let psn = packet.bth.psn;
        let mtu = self.rtr.path_mtu.bytes();
        let Some(index) = self.oldest_pending_rd_atomic() else {
            self.stats.stale_responses += 1;
            return;
        };
        if !self.in_flight(psn) {
            self.stats.stale_responses += 1;
            return;
        }
        self.note_peer(psn_add(psn, 1));
        let Some(entry) = self.sq.get(index) else {
            return;
        };
        let SendOp::Read { .. } = entry.wr.op else {
            self.stats.stale_responses += 1;
            return;
        };
        // Responses arrive in order; anything else is a duplicate or follows
        // a lost one. A response past the gap is an implicit NAK: ask again
        // for the rest, once per gap (the timer covers a lost re-request).
        let resume = psn_add(entry.first_psn, entry.responses);
        if !entry.started || psn != resume {
            tracing::trace!(
                qpn = self.cfg.qpn,
                psn,
                expected = resume,
                "READ response out of order"
            );
            self.stats.stale_responses += 1;
            if entry.started && psn_diff(psn, resume) > 0 && self.last_read_gap != Some(resume) {
                self.last_read_gap = Some(resume);
                self.go_back_n();
            }
            return;
        }
        let k = entry.responses;
        let is_last = k + 1 == entry.npkts;
        // The PSN places the data. First/Middle/Last/Only are relative to the
        // request that produced the response, and a re-request after lost
        // responses restarts at First, so only "last or not" is checked.
        let says_last = matches!(
            packet.bth.opcode,
            Opcode::ReadResponseLast | Opcode::ReadResponseOnly
        );
        let offset = u64::from(k) * u64::from(mtu);
        let expected_len = u64::from(entry.byte_len())
            .saturating_sub(offset)
            .min(u64::from(mtu));
        if says_last != is_last || packet.payload.len() as u64 != expected_len {
            tracing::debug!(qpn = self.cfg.qpn, psn, opcode = ?packet.bth.opcode, len = packet.payload.len(), "READ response does not fit its request");
            self.stats.stale_responses += 1;
            return;
        }
        let LocalData::Sgl(sgl) = &entry.wr.local else {
            return;
        };
        if scatter(mem, sgl, offset, packet.payload).is_err() {
            self.enter_error(Some((index, CompletionStatus::LocalProtectionError)));
            return;
        }
        if let Some(entry) = self.sq.get_mut(index) {
            entry.responses += 1;
        }
        self.advance_una(now, psn_add(psn, 1));
    }

    fn handle_atomic_ack<M: Memory + ?Sized>(
        &mut self,
        now: Instant,
        psn: u32,
        orig: u64,
        mem: &mut M,
    ) {
        let Some(index) = self.oldest_pending_rd_atomic() else {
            self.stats.stale_responses += 1;
            return;
        };
        let Some(entry) = self.sq.get(index) else {
            return;
        };
        let SendOp::Atomic { op, .. } = entry.wr.op else {
            self.stats.stale_responses += 1;
            return;
        };
        if !self.in_flight(psn) {
            self.stats.stale_responses += 1;
            return;
        }
        let (started, first_psn) = (entry.started, entry.first_psn);
        let first_sge = match &entry.wr.local {
            LocalData::Sgl(sgl) => sgl.first().copied(),
            LocalData::Inline(_) => None,
        };
        self.note_peer(psn_add(psn, 1));
        if !started || psn != first_psn {
            self.stats.stale_responses += 1;
            return;
        }
        let Some(sge) = first_sge else {
            return;
        };
        let size = op.size_bytes();
        // `message_len` checked the list holds `size` bytes; the result goes
        // to the first element, which must hold them by itself.
        if sge.len < u32::from(size)
            || mem
                .store_atomic_result(sge.lkey, sge.addr, orig, size)
                .is_err()
        {
            self.enter_error(Some((index, CompletionStatus::LocalProtectionError)));
            return;
        }
        if let Some(entry) = self.sq.get_mut(index) {
            entry.responses = 1;
        }
        self.advance_una(now, psn_add(psn, 1));
    }

    /// Builds the next request packet, if the window, fences, the READ/atomic
    /// limit and the RNR wait allow.
    pub(super) fn next_request<M: Memory + ?Sized>(
        &mut self,
        now: Instant,
        mem: &mut M,
    ) -> Option<Transmit> {
        if !matches!(self.state, QpState::Rts | QpState::Sqd) {
            return None;
        }
        if let Some(at) = self.rnr_resume_at {
            if now < at {
                return None;
            }
            self.rnr_resume_at = None;
        }
        loop {
            let index = self.cursor;
            let entry = self.sq.get(index)?;
            if !entry.started {
                if self.state == QpState::Sqd {
                    return None;
                }
                if entry.wr.fence && self.rd_atomic_outstanding > 0 {
                    return None;
                }
                if entry.is_rd_atomic()
                    && self.rd_atomic_outstanding >= u32::from(self.rts.max_rd_atomic.max(1))
                {
                    return None;
                }
            }
            if entry.npkts == 0 {
                // NOP: nothing on the wire; it completes in order.
                if let Some(e) = self.sq.get_mut(index) {
                    e.started = true;
                }
                self.cursor += 1;
                self.retire();
                continue;
            }
            if psn_diff(self.tx_psn, self.una) >= self.cfg.send_window as i32 {
                return None;
            }
            if !entry.started {
                if let Err(status) = self.start_checks(entry, mem) {
                    self.enter_error(Some((index, status)));
                    return None;
                }
                if entry.is_rd_atomic() {
                    self.rd_atomic_outstanding += 1;
                }
                if let Some(e) = self.sq.get_mut(index) {
                    e.started = true;
                }
            }
            let entry = self.sq.get(index)?;
            let pkt_index = psn_diff(self.tx_psn, entry.first_psn).max(0) as u32;
            let packet = match self.build_request(entry, pkt_index, mem) {
                Ok(p) => p,
                Err(status) => {
                    self.enter_error(Some((index, status)));
                    return None;
                }
            };
            let (next_psn, entry_done) = match entry.wr.op {
                SendOp::Read { .. } => (entry.end_psn(), true),
                _ => (psn_add(self.tx_psn, 1), pkt_index + 1 >= entry.npkts),
            };
            if psn_diff(self.tx_psn, self.max_sent) < 0 {
                self.stats.packets_retransmitted += 1;
            }
            self.tx_psn = next_psn;
            if entry_done {
                self.cursor += 1;
            }
            if psn_diff(self.tx_psn, self.max_sent) > 0 {
                self.max_sent = self.tx_psn;
            }
            self.rtx_timeout_arm(now);
            return Some(packet);
        }
    }

    /// Local checks when a request starts: its length and its local keys.
    fn start_checks<M: Memory + ?Sized>(
        &self,
        entry: &SendEntry,
        mem: &M,
    ) -> Result<(), CompletionStatus> {
        entry.len?;
        let LocalData::Sgl(sgl) = &entry.wr.local else {
            return Ok(());
        };
        let access = match entry.wr.op {
            SendOp::Read { .. } | SendOp::Atomic { .. } => Access::LOCAL_WRITE,
            _ => Access::LOCAL_READ,
        };
        check_sgl(mem, sgl, access).map_err(|_| CompletionStatus::LocalProtectionError)
    }

    fn build_request<M: Memory + ?Sized>(
        &self,
        entry: &SendEntry,
        pkt_index: u32,
        mem: &M,
    ) -> Result<Transmit, CompletionStatus> {
        let mtu = self.rtr.path_mtu.bytes();
        let psn = psn_add(entry.first_psn, pkt_index);
        let len = entry.len?;
        let is_first = pkt_index == 0;
        let is_last = pkt_index + 1 >= entry.npkts;
        let offset = u64::from(pkt_index) * u64::from(mtu);
        let chunk = u64::from(len).saturating_sub(offset).min(u64::from(mtu)) as usize;

        let mut bth = Bth::new(Opcode::Acknowledge, self.rtr.dest_qpn, psn);
        bth.pkey = self.cfg.pkey;
        let mut header = PacketRepr::new(bth, &[]);
        let mut payload = Vec::new();
        let load_payload = |payload: &mut Vec<u8>| -> Result<(), CompletionStatus> {
            payload.resize(chunk, 0);
            match &entry.wr.local {
                LocalData::Inline(bytes) => {
                    let start = usize::try_from(offset).unwrap_or(usize::MAX);
                    let src = bytes
                        .get(start..start.saturating_add(chunk))
                        .ok_or(CompletionStatus::LocalLengthError)?;
                    payload.copy_from_slice(src);
                    Ok(())
                }
                LocalData::Sgl(sgl) => gather(mem, sgl, offset, payload)
                    .map_err(|_| CompletionStatus::LocalProtectionError),
            }
        };
        let ack_req_interval = self.cfg.ack_req_interval;
        let window_fills = psn_diff(psn_add(psn, 1), self.una) >= self.cfg.send_window as i32;
        let periodic = (pkt_index + 1) % ack_req_interval == 0;
        match entry.wr.op {
            SendOp::Send { imm } => {
                header.bth.opcode =
                    message_opcode(Opcode::SendFirst, is_first, is_last, imm.is_some());
                if is_last {
                    header.imm = imm;
                    header.bth.solicited = entry.wr.solicited;
                }
                load_payload(&mut payload)?;
            }
            SendOp::Write { remote, imm } => {
                header.bth.opcode =
                    message_opcode(Opcode::WriteFirst, is_first, is_last, imm.is_some());
                if is_first {
                    header.reth = Some(Reth {
                        va: remote.va,
                        rkey: remote.rkey,
                        dma_len: len,
                    });
                }
                if is_last {
                    header.imm = imm;
                    header.bth.solicited = entry.wr.solicited && imm.is_some();
                }
                load_payload(&mut payload)?;
            }
            SendOp::Read { remote } => {
                // A re-request after lost responses asks only for the rest.
                header.bth.opcode = Opcode::ReadRequest;
                header.reth = Some(Reth {
                    va: remote.va.wrapping_add(offset),
                    rkey: remote.rkey,
                    dma_len: u32::try_from(u64::from(len).saturating_sub(offset)).unwrap_or(0),
                });
                header.bth.ack_req = true;
            }
            SendOp::Atomic { remote, op } => {
                header.bth.ack_req = true;
                let (va, rkey) = (remote.va, remote.rkey);
                // A masked operation's operands travel cut to its width.
                let width = op.width_mask();
                let masked =
                    |size, swap_add: u64, compare: u64, swap_add_mask: u64, compare_mask: u64| {
                        Some(ExtAtomicEth {
                            va,
                            rkey,
                            size,
                            swap_add: swap_add & width,
                            compare: compare & width,
                            swap_add_mask: swap_add_mask & width,
                            compare_mask: compare_mask & width,
                        })
                    };
                match op {
                    AtomicOp::CompareSwap { compare, swap } => {
                        header.bth.opcode = Opcode::CompareSwap;
                        header.atomic = Some(AtomicEth {
                            va,
                            rkey,
                            swap_add: swap,
                            compare,
                        });
                    }
                    AtomicOp::FetchAdd { add } => {
                        header.bth.opcode = Opcode::FetchAdd;
                        header.atomic = Some(AtomicEth {
                            va,
                            rkey,
                            swap_add: add,
                            compare: 0,
                        });
                    }
                    AtomicOp::MaskedCompareSwap {
                        size,
                        compare,
                        compare_mask,
                        swap,
                        swap_mask,
                    } => {
                        header.bth.opcode = Opcode::MaskedCompareSwap;
                        header.ext_atomic = masked(size, swap, compare, swap_mask, compare_mask);
                    }
                    AtomicOp::MaskedFetchAdd {
                        size,
                        add,
                        field_boundary,
                    } => {
                        header.bth.opcode = Opcode::MaskedFetchAdd;
                        header.ext_atomic = masked(size, add, 0, field_boundary, 0);
                    }
                }
            }
            SendOp::Nop => return Err(CompletionStatus::LocalQpOperationError),
        }
        if is_last || periodic || window_fills {
            header.bth.ack_req = true;
        }
        Ok(Transmit { header, payload })
    }
}

/// The opcode of one packet of a SEND or WRITE message. Both families are
/// numbered alike from their first opcode (`SendFirst`, `WriteFirst`):
/// first, middle, last, last with immediate, only, only with immediate.
#[inline]
fn message_opcode(family: Opcode, is_first: bool, is_last: bool, imm: bool) -> Opcode {
    let step = match (is_first, is_last, imm) {
        (true, false, _) => 0,
        (false, false, _) => 1,
        (false, true, false) => 2,
        (false, true, true) => 3,
        (true, true, false) => 4,
        (true, true, true) => 5,
    };
    // `Opcode::ALL` lists the opcodes in numeric order from 0.
    Opcode::ALL[family as usize + step]
}
