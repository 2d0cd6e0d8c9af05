//! One open soft device: its port (the UDP link), its objects (memory
//! registrations, CQs, SRQs, QPs) behind one mutex, and its service thread.
//!
//! Work happens in whichever thread gets there first, always under the
//! device mutex: the caller's thread when it calls progress (a doorbell only
//! flags its QP; no thread wake-up on the latency path), and the service
//! thread, which sleeps in `poll` on the socket, a wake-up eventfd and the
//! shared-memory ring's wake-up socket until a packet arrives, a doorbell
//! is rung while nobody progresses, or the earliest engine timer is due
//! (or, while the ring's head slot is reserved, a millisecond: see
//! `InboundRing::skip_dead_reservation`), so one-sided operations complete
//! while the target process never calls progress. A memory deregistration
//! also runs a pass before the region goes ([`Core::deregister`]).

use super::IdMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use super::memory::MrTable;
use super::os::{poll_readable, EventFd};
use super::qp::QpContext;
use super::queues::CqShared;
use super::settings::Wire;
use super::Error;
use crate::batch::{RxBatch, TxBatch, RX_BATCH};
use crate::engine::Instant;
use crate::link::Faults;
use crate::link::{bump, Link, Tx};
use crate::shm::{Head, InboundRing, RESERVATION_PATIENCE_NANOS};
use crate::wire::MAX_DATAGRAM;

/// How long after the caller's last progress call the service thread leaves
/// the socket to the caller.
const CALLER_ACTIVE_NANOS: u64 = 1_000_000;

/// After a datagram arrived by UDP, the caller's progress reads the socket
/// at every pass for this long.
const UDP_BUSY_NANOS: u64 = 10_000_000;

/// With the shared-memory wire on and no UDP traffic, how often the
/// caller's progress still reads the socket (a peer on another host, or one
/// with `UCX_SOFT_HCA_WIRE=udp`, starts sending): its first datagram waits
/// at most this long.
const SOCKET_IDLE_READ_NANOS: u64 = 50_000;

/// How many passes in a row one caller thread may start from an earlier
/// pass's clock reading ([`Core::pass_clock`]). What such an estimate
/// decides (whether the pass has work, the socket's idle read, whether a
/// timer is due, the caller's window) works in tens of microseconds or
/// more.
const IDLE_PASSES_PER_CLOCK: u32 = 16;

/// The time of one caller's pass: an estimate (an earlier pass's reading,
/// never ahead of the clock) for deciding whether there is anything to do,
/// and the clock itself, read once, for anything the pass does (packets
/// and timers are stamped with it, so a stale time never arms a timer that
/// is already overdue).
struct PassClock<'a> {
    core: &'a Core,
    estimate: Instant,
    fresh: bool,
}

impl PassClock<'_> {
    fn estimate(&self) -> Instant {
        self.estimate
    }

    fn now(&mut self) -> Instant {
        if !self.fresh {
            self.estimate = self.core.read_caller_clock();
            self.fresh = true;
        }
        self.estimate
    }
}

thread_local! {
    /// How many passes in a row this thread started from an earlier clock
    /// reading ([`Core::pass_clock`]). Per thread: a count that two threads
    /// progressing one device both wrote at every pass would bounce between
    /// their cores. No destructor, so usable until the thread's very end.
    static IDLE_PASSES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// While packets wait for room in a peer's ring, how long the service
/// thread sleeps before it tries again (`poll` rounds it up to a
/// millisecond: a full ring's 1024 datagrams per millisecond at least).
const ROOM_RETRY: Duration = Duration::from_micros(100);

/// Lists `qp` (number `qpn`) among the QPs to pump again if its last pump
/// left packets waiting for room, once.
fn list_if_waiting(waiting: &mut Vec<u32>, qpn: u32, qp: &mut QpContext) {
    if qp.waits_for_room() && !qp.listed_waiting {
        qp.listed_waiting = true;
        waiting.push(qpn);
    }
}

/// The receive completions a device had written at some moment ([`Core::receive_mark`]), to tell when the transport has taken
/// them all from its CQs.
#[derive(Default)]
pub struct ReceiveMark {
    /// Each CQ with completions then, and its producer index then.
    cqs: Vec<(Arc<CqShared>, u32)>,
}

impl ReceiveMark {
    /// Adds `other`'s CQs to this mark.
    pub fn add(&mut self, other: ReceiveMark) {
        self.cqs.extend(other.cqs);
    }

    /// Whether the transport has taken every marked completion.
    pub fn taken(&self) -> bool {
        self.cqs.iter().all(|(cq, mark)| cq.taken_up_to(*mark))
    }

    /// Completions taken from the marked CQs so far (any count that grows
    /// as the transport polls): a caller waiting for [`Self::taken`] sees
    /// whether the transport still polls.
    pub fn consumed(&self) -> u64 {
        self.cqs
            .iter()
            .map(|(cq, _)| u64::from(cq.consumer_index()))
            .sum()
    }
}

/// "No timer pending" in the deadline atomics.
pub(crate) const NO_DEADLINE: u64 = u64::MAX;

/// Everything the device owns that the caller's thread and the service
/// thread share.
pub(crate) struct Core {
    pub name: String,
    pub link: Link,
    /// Wakes the service thread (stop, or a timer earlier than it sleeps to).
    wake: EventFd,
    stop: AtomicBool,
    epoch: std::time::Instant,
    /// Nanoseconds since `epoch` at which the service thread wakes up on its
    /// own; a caller that arms an earlier timer signals `wake`.
    service_deadline: AtomicU64,
    /// When the caller's thread last called progress (nanoseconds since
    /// `epoch`; 0 = never).
    caller_progress_at: AtomicU64,
    /// The latest clock reading of a caller's pass (nanoseconds since
    /// `epoch`; 0 = none yet); [`IDLE_PASSES`] counts the passes that
    /// reused it.
    caller_clock: AtomicU64,
    /// Earliest timer of any QP (nanoseconds since `epoch`), so that the
    /// caller's progress only takes the lock for timers when one is due.
    next_deadline: AtomicU64,
    /// QPs whose doorbell was rung since the device last took them.
    rung: Mutex<Vec<u32>>,
    /// `rung` may hold QPs (checked without its lock on every pass).
    doorbells_pending: AtomicBool,
    /// The service thread sleeps watching the socket, not the caller:
    /// a doorbell must wake it.
    service_watching: AtomicBool,
    /// A caller's pass left answers in `State::tx` for its next pass (set
    /// and cleared under the device mutex; read without it by the service
    /// thread, which does not sleep past them).
    answers_held: AtomicBool,
    /// The shared-memory ring same-host peers send into (`None`: UDP only).
    inbound: Option<InboundRing>,
    /// When the caller's progress last read the socket, and until when it
    /// reads it at every pass (a datagram came by UDP recently); see
    /// [`Core::socket_due`]. Written under the device mutex, read without.
    socket_read_at: AtomicU64,
    udp_busy_until: AtomicU64,
    /// `State::waiting` holds QPs (published at the end of each pass, so
    /// that a caller's pass can see without the mutex that it has work).
    waiting_listed: AtomicBool,
    state: Mutex<State>,
}

/// The device's objects, under the device mutex.
pub(crate) struct State {
    pub mrs: MrTable,
    pub qps: IdMap<QpContext>,
    next_pd: u32,
    next_qpn: u32,
    next_cqn: u32,
    next_srqn: u32,
    /// New QPs scatter short receives into the CQE (see
    /// `Device::set_scatter_to_cqe`).
    pub scatter_to_cqe: bool,
    /// Datagrams read by one `recvmmsg`.
    rx: RxBatch,
    /// Datagrams built in this pass, sent at its end (`sendmmsg`).
    pub tx: TxBatch,
    /// QPs that received datagrams in the batch being handled.
    touched: Vec<u32>,
    /// QPs whose packets wait for room in a peer's ring
    /// ([`QpContext::waits_for_room`]), pumped again at every pass.
    waiting: Vec<u32>,
    /// The rung QPs being taken (swapped with `Core::rung`, so that neither
    /// allocates once grown).
    rung_taken: Vec<u32>,
    /// A datagram taken from the shared-memory ring.
    shm_buf: Box<[u8]>,
}

impl State {
    /// The QPs with what stepping one needs: the memory table, the way out
    /// through `link` (this pass's batch), and the list of QPs waiting for
    /// room in a peer's ring.
    fn qps_with_io<'a>(
        &'a mut self,
        link: &'a Link,
    ) -> (
        &'a mut IdMap<QpContext>,
        &'a MrTable,
        Tx<'a>,
        &'a mut Vec<u32>,
    ) {
        let tx = Tx {
            link,
            batch: &mut self.tx,
        };
        (&mut self.qps, &self.mrs, tx, &mut self.waiting)
    }
}

impl Core {
    /// Nanoseconds since the device opened: the engine's clock.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(
            self.epoch
                .elapsed()
                .as_nanos()
                .min(u128::from(u64::MAX - 1)) as u64,
        )
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        // A panic under this lock would abort (panic = "abort"), so a
        // poisoned mutex cannot be observed; take the guard regardless.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn try_lock(&self) -> Option<MutexGuard<'_, State>> {
        match self.state.try_lock() {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    pub fn alloc_pd(&self) -> u32 {
        let mut state = self.lock();
        state.next_pd += 1;
        state.next_pd
    }

    pub fn alloc_cqn(&self) -> u32 {
        let mut state = self.lock();
        state.next_cqn = (state.next_cqn + 1) & 0x00ff_ffff;
        state.next_cqn
    }

    pub fn alloc_srqn(&self) -> u32 {
        let mut state = self.lock();
        state.next_srqn = (state.next_srqn + 1) & 0x00ff_ffff;
        state.next_srqn
    }

    /// A QP number not in use (24 bits, never 0 or 1: those are special QPs
    /// in InfiniBand).
    pub fn alloc_qpn(state: &mut State) -> u32 {
        loop {
            state.next_qpn = (state.next_qpn + 1) & 0x00ff_ffff;
            if state.next_qpn >= 2 && !state.qps.contains_key(&state.next_qpn) {
                return state.next_qpn;
            }
        }
    }

    /// A doorbell was rung on QP `qpn` (its flag was clear): queue it for
    /// the next pass, and wake the service thread if it sleeps watching the
    /// socket (the caller does not progress the device, so nobody else would
    /// take the WQEs). While the caller progresses, no system call here.
    pub fn doorbell_rung(&self, qpn: u32) {
        self.rung
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(qpn);
        // SeqCst pairs with the service thread's store of `service_watching`
        // and its load of `doorbells_pending`: one of the two sees the other.
        if !self.doorbells_pending.swap(true, Ordering::SeqCst)
            && self.service_watching.load(Ordering::SeqCst)
        {
            self.wake.signal();
        }
    }

    /// Takes the WQEs of every QP whose doorbell was rung since the last
    /// pass.
    fn take_doorbells(&self, state: &mut State, now: Instant) {
        if !self.doorbells_pending.load(Ordering::Relaxed)
            || !self.doorbells_pending.swap(false, Ordering::SeqCst)
        {
            return;
        }
        let mut rung = std::mem::take(&mut state.rung_taken);
        std::mem::swap(
            &mut *self
                .rung
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
            &mut rung,
        );
        self.step_qps(state, &mut rung, now, QpContext::doorbell);
        state.rung_taken = rung;
    }

    /// Runs `step` (taking WQEs, answering packets) on each QP listed in
    /// `qpns`, emptying the list; a QP destroyed since it was listed is gone
    /// from the table and skipped. A step can arm a timer (RNR wait,
    /// retransmission): its deadline is published so that whoever progresses
    /// next sees it due.
    fn step_qps(
        &self,
        state: &mut State,
        qpns: &mut Vec<u32>,
        now: Instant,
        step: impl Fn(&mut QpContext, Instant, &mut Tx<'_>, &MrTable),
    ) {
        let (qps, mrs, mut tx, waiting) = state.qps_with_io(&self.link);
        for qpn in qpns.drain(..) {
            let Some(qp) = qps.get_mut(&qpn) else {
                continue;
            };
            step(qp, now, &mut tx, mrs);
            if let Some(deadline) = qp.next_timeout() {
                self.next_deadline
                    .fetch_min(deadline.as_nanos(), Ordering::Relaxed);
            }
            list_if_waiting(waiting, qpn, qp);
        }
    }

    /// Pumps the QPs whose packets waited for room in a peer's ring; those
    /// that still cannot send everything stay listed.
    fn resume_waiting(&self, state: &mut State, now: Instant) {
        if state.waiting.is_empty() {
            return;
        }
        let mut resumed = std::mem::take(&mut state.waiting);
        for qpn in &resumed {
            if let Some(qp) = state.qps.get_mut(qpn) {
                qp.listed_waiting = false;
            }
        }
        self.step_qps(state, &mut resumed, now, QpContext::pump);
        // `step_qps` emptied it; keep its allocation if nothing relisted.
        if state.waiting.is_empty() {
            state.waiting = resumed;
        }
    }

    /// Hands one datagram to its QP (checked against the faults and the
    /// QP's peer); the QP answers at the end of the batch.
    #[allow(clippy::too_many_arguments)]
    fn handle_datagram(
        &self,
        qps: &mut IdMap<QpContext>,
        mrs: &MrTable,
        tx: &mut TxBatch,
        touched: &mut Vec<u32>,
        datagram: &[u8],
        from: SocketAddrV4,
        via_ring: bool,
        now: Instant,
    ) {
        if !self.link.accept(from) {
            return;
        }
        let len = datagram.len();
        let Some(dest_qpn) = super::qp::dest_qpn_of(datagram) else {
            bump(&self.link.counters.rx_malformed);
            tracing::debug!(
                "soft hca {}: malformed datagram of {len} bytes from {from}",
                self.name
            );
            return;
        };
        let Some(qp) = qps.get_mut(&dest_qpn) else {
            bump(&self.link.counters.rx_unknown_qp);
            tracing::debug!(
                "soft hca {}: datagram from {from} for unknown QP 0x{dest_qpn:x}",
                self.name
            );
            return;
        };
        if !qp.accepts_from(from) {
            bump(&self.link.counters.rx_forged_source);
            tracing::debug!(
                "soft hca {}: QP 0x{dest_qpn:x} got a datagram from {from}, its peer is {:?}; dropped",
                self.name,
                qp.peer()
            );
            return;
        }
        if !qp.needs_pump {
            touched.push(dest_qpn);
        }
        let mut tx = Tx {
            link: &self.link,
            batch: tx,
        };
        qp.receive(datagram, from, via_ring, now, &mut tx, mrs);
    }

    /// Lets each QP that received datagrams in this batch answer them.
    fn answer_batch(&self, state: &mut State, now: Instant) {
        let mut touched = std::mem::take(&mut state.touched);
        self.step_qps(state, &mut touched, now, QpContext::pump);
        state.touched = touched;
    }

    /// Reads every datagram waiting in the shared-memory ring, a batch at a
    /// time, past the slot of a producer that died before publishing it
    /// ([`InboundRing::skip_dead_reservation`]).
    fn drain_ring(&self, state: &mut State, now: Instant) {
        let Some(ring) = &self.inbound else { return };
        loop {
            let mut taken = 0;
            while taken < RX_BATCH {
                let State {
                    qps,
                    mrs,
                    tx,
                    touched,
                    shm_buf,
                    ..
                } = &mut *state;
                let Some((len, from)) = ring.pop(shm_buf) else {
                    break;
                };
                taken += 1;
                bump(&self.link.counters.rx_shm);
                self.handle_datagram(qps, mrs, tx, touched, &shm_buf[..len], from, true, now);
            }
            self.answer_batch(state, now);
            if taken < RX_BATCH {
                if ring.skip_dead_reservation(now.as_nanos()) {
                    bump(&self.link.counters.rx_shm_dead_skipped);
                    continue;
                }
                break;
            }
        }
    }

    /// Reads every datagram waiting on the socket, a batch per system call,
    /// and lets each QP that got some answer them once per batch.
    fn drain_socket(&self, state: &mut State, now: Instant) {
        loop {
            let read = {
                let State {
                    rx,
                    qps,
                    mrs,
                    tx,
                    touched,
                    ..
                } = &mut *state;
                let read = self.link.recv_batch(rx);
                for index in 0..rx.len() {
                    let (datagram, from) = rx.get(index);
                    self.handle_datagram(qps, mrs, tx, touched, datagram, from, false, now);
                }
                read
            };
            if read > 0 && !state.touched.is_empty() {
                self.udp_busy_until.store(
                    now.as_nanos().saturating_add(UDP_BUSY_NANOS),
                    Ordering::Relaxed,
                );
            }
            self.answer_batch(state, now);
            if read < RX_BATCH {
                break;
            }
        }
    }

    /// Whether the caller's progress should read the socket now. With the
    /// shared-memory wire the socket usually carries nothing (same-host
    /// peers use the ring), and an empty `recvmmsg` would be most of a
    /// pass's cost: it is read at every pass only while datagrams arrive
    /// over UDP, else once per [`SOCKET_IDLE_READ_NANOS`].
    fn socket_due(&self, now: Instant) -> bool {
        let now = now.as_nanos();
        self.inbound.is_none()
            || now < self.udp_busy_until.load(Ordering::Relaxed)
            || now.saturating_sub(self.socket_read_at.load(Ordering::Relaxed))
                >= SOCKET_IDLE_READ_NANOS
    }

    /// Whether a caller's pass at `now` has anything to do, decided from
    /// the device's published flags alone: no mutex, no write. Two threads
    /// that spin on progress of one device (UCX's perf test runs its two
    /// sides so) would otherwise bounce the mutex's cache line between
    /// their cores at every pass, each `try_lock` a locked write.
    fn caller_has_work(&self, now: Instant) -> bool {
        self.doorbells_pending.load(Ordering::Relaxed)
            || self.waiting_listed.load(Ordering::Relaxed)
            || self.answers_held.load(Ordering::Relaxed)
            || self.inbound.as_ref().is_some_and(InboundRing::has_data)
            || self.socket_due(now)
            || self.next_deadline.load(Ordering::Relaxed) <= now.as_nanos()
    }

    /// Runs due timers and recomputes the earliest deadline.
    fn run_timers(&self, state: &mut State, now: Instant) -> u64 {
        let (qps, mrs, mut tx, waiting) = state.qps_with_io(&self.link);
        let mut earliest = NO_DEADLINE;
        for (&qpn, qp) in qps.iter_mut() {
            if let Some(deadline) = qp.next_timeout() {
                if deadline <= now {
                    qp.handle_timeout(now, &mut tx, mrs);
                    list_if_waiting(waiting, qpn, qp);
                }
            }
            if let Some(deadline) = qp.next_timeout() {
                earliest = earliest.min(deadline.as_nanos());
            }
        }
        self.next_deadline.store(earliest, Ordering::Relaxed);
        earliest
    }

    /// Sends what the pass built.
    fn flush(&self, state: &mut State) {
        if !state.tx.is_empty() {
            self.link.flush(&mut state.tx);
        }
        if self.answers_held.load(Ordering::Relaxed) {
            self.answers_held.store(false, Ordering::Relaxed);
        }
    }

    /// Everything due now: rung doorbells, packets waiting for room,
    /// incoming datagrams and timers.
    fn service(&self, state: &mut State) -> u64 {
        let now = self.now();
        self.take_doorbells(state, now);
        self.resume_waiting(state, now);
        self.flush(state);
        self.drain_ring(state, now);
        self.drain_socket(state, now);
        let deadline = self.run_timers(state, now);
        self.flush(state);
        self.publish_waiting(state);
        deadline
    }

    /// Publishes whether QPs wait for room, for [`Core::caller_has_work`];
    /// at the end of each pass (the last change to the list is its own).
    fn publish_waiting(&self, state: &State) {
        let listed = !state.waiting.is_empty();
        if self.waiting_listed.load(Ordering::Relaxed) != listed {
            self.waiting_listed.store(listed, Ordering::Relaxed);
        }
    }

    /// Deregisters memory key `key`, after one full pass of the device.
    ///
    /// A NIC starts on a WQE when its doorbell rings; this device takes it
    /// at the next pass (the caller's progress, or the service thread once
    /// the caller's window ends). A program that posts a WRITE or READ to a
    /// peer of this device and deregisters the target right away, without
    /// progressing (UCX's gtest does: its buffers go away at the end of a
    /// test, the flush comes after), would have its WQE executed after the
    /// region is gone: a remote access error where a NIC, long done with
    /// the WQE, reports none. The pass first takes every rung doorbell,
    /// sends, and handles what arrived, so what this device was handed
    /// before the deregistration and can carry out within the device (its
    /// own QPs as both ends) meets the region still registered.
    pub fn deregister(&self, key: u32) {
        let deadline = {
            let mut state = self.lock();
            let deadline = self.service(&mut state);
            state.mrs.remove(key);
            deadline
        };
        // The pass may have armed timers (a request sent, awaiting its ACK)
        // earlier than the service thread sleeps to.
        if deadline != NO_DEADLINE {
            self.timer_changed(Some(Instant::from_nanos(deadline)));
        }
    }

    /// Turns every datagram that has reached the device into its
    /// completions now, as a NIC does the moment a packet arrives (the
    /// caller's progress or the service thread would on their next pass),
    /// and marks how far its receive CQs then reach: see [`ReceiveMark`].
    pub fn receive_mark(&self) -> ReceiveMark {
        let mut state = self.lock();
        let now = self.now();
        self.drain_ring(&mut state, now);
        self.drain_socket(&mut state, now);
        self.flush(&mut state);
        let mut cqs: Vec<(Arc<CqShared>, u32)> = Vec::new();
        for qp in state.qps.values() {
            let cq = qp.recv_cq();
            if !cq.all_taken() && !cqs.iter().any(|(marked, _)| Arc::ptr_eq(marked, cq)) {
                cqs.push((Arc::clone(cq), cq.produced()));
            }
        }
        ReceiveMark { cqs }
    }

    /// After the caller's thread changed a QP: make sure the service thread
    /// will wake up in time for that QP's timer.
    pub fn timer_changed(&self, deadline: Option<Instant>) {
        let Some(deadline) = deadline else { return };
        let deadline = deadline.as_nanos();
        self.next_deadline.fetch_min(deadline, Ordering::Relaxed);
        if deadline < self.service_deadline.load(Ordering::Relaxed) {
            self.service_deadline.store(deadline, Ordering::Relaxed);
            self.wake.signal();
        }
    }

    /// Progress from the caller's thread: cheap when idle (one `recvmmsg`
    /// that finds nothing, or on the shared-memory wire no system call and
    /// mostly no clock reading), skipped entirely when the service thread is
    /// busy with the device (it is doing the same work).
    pub fn progress(&self) {
        let mut clock = self.pass_clock();
        // Stored only when it changed (an idle pass reuses an earlier
        // reading): a shared line written at every pass would bounce
        // between the cores of two threads progressing this device.
        let at = clock.estimate().as_nanos();
        if self.caller_progress_at.load(Ordering::Relaxed) != at {
            self.caller_progress_at.store(at, Ordering::Relaxed);
        }
        if !self.caller_has_work(clock.estimate()) {
            return;
        }
        let Some(mut state) = self.try_lock() else {
            return;
        };
        // What the caller posted goes out before the socket is read: one
        // system call less on the latency path of a reply.
        if self.doorbells_pending.load(Ordering::Relaxed) {
            self.take_doorbells(&mut state, clock.now());
            self.flush(&mut state);
        }
        if !state.waiting.is_empty() {
            self.resume_waiting(&mut state, clock.now());
        }
        if self.inbound.as_ref().is_some_and(InboundRing::has_data) {
            self.drain_ring(&mut state, clock.now());
        }
        if self.socket_due(clock.estimate()) {
            self.socket_read_at
                .store(clock.estimate().as_nanos(), Ordering::Relaxed);
            self.drain_socket(&mut state, clock.now());
        }
        // The estimate is never ahead of the clock: no timer runs early.
        if self.next_deadline.load(Ordering::Relaxed) <= clock.estimate().as_nanos() {
            self.run_timers(&mut state, clock.now());
        }
        // On the UDP wire, when this pass built only answers (the ACK of a
        // message the caller is about to see, say), they wait for the
        // caller's next pass, one pass at most, and leave in one `sendmmsg`
        // with what the caller posts meanwhile (its reply): a system call
        // less on the latency path of a ping-pong. Requests never wait:
        // their retransmission timers are running. A caller that does not
        // come back leaves them to the service thread: within its 1 ms
        // window when it watches the caller, at once when it sleeps
        // (`answers_held` and `service_watching`, SeqCst both ways, as the
        // doorbells do: one side sees the other). On the shared-memory wire
        // a send is no system call: nothing waits.
        if self.inbound.is_none()
            && !self.answers_held.load(Ordering::Relaxed)
            && !state.tx.is_empty()
            && state.tx.only_responses()
        {
            self.answers_held.store(true, Ordering::SeqCst);
            if self.service_watching.load(Ordering::SeqCst) {
                self.flush(&mut state);
            }
        } else {
            self.flush(&mut state);
        }
        self.publish_waiting(&state);
    }

    /// The clock of a caller's pass. On the shared-memory wire a spinning
    /// caller's passes mostly find nothing, and reading the clock was most
    /// of their cost (perf of ucx_perftest put_bw zcopy: ~25 % of the CPU in
    /// `clock_gettime`): an idle pass starts from the reading of an earlier
    /// one, [`IDLE_PASSES_PER_CLOCK`] passes in a row at most, and reads the
    /// clock only when it acts (see [`PassClock`]).
    fn pass_clock(&self) -> PassClock<'_> {
        // Without the ring (UDP wire) every pass reads the socket, a system
        // call that costs far more than the clock.
        let idle = IDLE_PASSES.get();
        let cached = self.caller_clock.load(Ordering::Relaxed);
        if self.inbound.is_some() && idle < IDLE_PASSES_PER_CLOCK && cached != 0 {
            IDLE_PASSES.set(idle + 1);
            return PassClock {
                core: self,
                estimate: Instant::from_nanos(cached),
                fresh: false,
            };
        }
        PassClock {
            core: self,
            estimate: self.read_caller_clock(),
            fresh: true,
        }
    }

    /// Reads the clock for a caller's pass and keeps it for the next idle
    /// ones; monotonic across caller threads (`fetch_max`).
    fn read_caller_clock(&self) -> Instant {
        IDLE_PASSES.set(0);
        let now = self.now().as_nanos();
        let previous = self.caller_clock.fetch_max(now, Ordering::Relaxed);
        Instant::from_nanos(now.max(previous))
    }

    /// The caller is about to sleep (it armed a CQ): the service thread
    /// takes the socket back now instead of when the caller's progress
    /// window runs out, so the completion it waits for is not delayed.
    pub fn caller_sleeps(&self) {
        let last = self.caller_progress_at.swap(0, Ordering::Relaxed);
        if last != 0 && last.saturating_add(CALLER_ACTIVE_NANOS) > self.now().as_nanos() {
            self.wake.signal();
        }
    }

    /// How long the caller's thread still counts as progressing the device
    /// (it called progress less than `CALLER_ACTIVE_NANOS` ago), if it does.
    fn caller_window(&self) -> Option<Duration> {
        let caller_at = self.caller_progress_at.load(Ordering::Relaxed);
        let caller_until = caller_at.saturating_add(CALLER_ACTIVE_NANOS);
        let now = self.now().as_nanos();
        (caller_at != 0 && now < caller_until).then(|| Duration::from_nanos(caller_until - now))
    }

    fn service_loop(self: Arc<Core>) {
        // poll ignores a negative descriptor: no ring, no ring wake-ups.
        let ring_wake = self.inbound.as_ref().map_or(-1, InboundRing::wake_fd);
        let fds = [self.link.raw_fd(), self.wake.fd(), ring_wake];
        while !self.stop.load(Ordering::Acquire) {
            // While the caller's thread progresses the device it also runs
            // the timers: stay out of its way (no lock, no socket read, which
            // on two cores would preempt a spinning caller every window) and
            // only watch for the caller to stop or to wake us.
            if let Some(window) = self.caller_window() {
                if poll_readable([self.wake.fd()], Some(window))[0] {
                    self.wake.drain();
                }
                continue;
            }
            let sleep = {
                let mut state = self.lock();
                let deadline = self.service(&mut state);
                // Stored under the lock: a caller arming an earlier timer
                // after this point sees it and wakes us.
                self.service_deadline.store(deadline, Ordering::Relaxed);
                let timer = (deadline != NO_DEADLINE)
                    .then(|| Duration::from_nanos(deadline.saturating_sub(self.now().as_nanos())));
                // A peer's ring frees up without telling us: look again soon.
                if state.waiting.is_empty() && state.tx.is_empty() {
                    timer
                } else {
                    Some(timer.map_or(ROOM_RETRY, |t| t.min(ROOM_RETRY)))
                }
            };
            // While the caller's thread progresses the device it reads the
            // socket itself: do not also wake up for every packet (a context
            // switch each, on machines with two cores), only for timers and
            // wake-ups, and look at the socket again once it stops.
            let woken = match self.caller_window() {
                Some(window) => poll_readable(
                    [self.wake.fd()],
                    Some(sleep.map_or(window, |s| s.min(window))),
                )[0],
                None => {
                    // Nobody else drives the device now: doorbells wake us.
                    // SeqCst pairs with `doorbell_rung`.
                    self.service_watching.store(true, Ordering::SeqCst);
                    if let Some(ring) = &self.inbound {
                        ring.set_sleeping(true);
                    }
                    let ring_head = self.inbound.as_ref().map_or(Head::Empty, InboundRing::head);
                    let woken = self.doorbells_pending.load(Ordering::SeqCst)
                        || self.answers_held.load(Ordering::SeqCst)
                        || ring_head == Head::Published
                        || {
                            // A reservation at the head is published within
                            // microseconds, or its producer died: look again
                            // once the patience is over.
                            let sleep = if ring_head == Head::Reserved {
                                let patience = Duration::from_nanos(RESERVATION_PATIENCE_NANOS);
                                Some(sleep.map_or(patience, |s| s.min(patience)))
                            } else {
                                sleep
                            };
                            let ready = poll_readable(fds, sleep);
                            if ready[2] {
                                if let Some(ring) = &self.inbound {
                                    ring.drain_wake_ups();
                                }
                            }
                            ready[1]
                        };
                    if let Some(ring) = &self.inbound {
                        ring.set_sleeping(false);
                    }
                    self.service_watching.store(false, Ordering::SeqCst);
                    woken
                }
            };
            if woken {
                self.wake.drain();
            }
        }
    }
}

/// A device while at least one handle (device, PD, MR, CQ, SRQ, QP) to it
/// lives; dropping the last one stops the service thread and closes the
/// socket.
pub(crate) struct Opened {
    pub core: Arc<Core>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "soft hca {} at {}",
            self.core.name,
            self.core.link.local_addr()
        )
    }
}

impl Opened {
    pub fn start(
        name: &str,
        ipv4: Ipv4Addr,
        faults: Faults,
        loss_seed: u64,
        wire: Wire,
        udp_offload: bool,
    ) -> Result<Arc<Opened>, Error> {
        let link = Link::bind(ipv4, loss_seed, udp_offload).map_err(|err| {
            tracing::warn!("soft hca {name}: cannot bind a UDP socket to {ipv4}: {err}");
            Error::NoDevice
        })?;
        let inbound = match wire {
            Wire::Udp => None,
            Wire::Auto => match InboundRing::create(link.local_addr()) {
                Ok(ring) => Some(ring),
                Err(err) => {
                    // Same-host peers then reach this device over UDP.
                    tracing::debug!("soft hca {name}: no shared-memory ring ({err}); UDP only");
                    None
                }
            },
        };
        let shm = inbound.is_some();
        let link_gro = link.gro();
        let wake = EventFd::new().map_err(|err| {
            tracing::warn!("soft hca {name}: eventfd: {err}");
            Error::IoError
        })?;
        let core = Arc::new(Core {
            name: name.to_string(),
            link,
            wake,
            stop: AtomicBool::new(false),
            epoch: std::time::Instant::now(),
            service_deadline: AtomicU64::new(NO_DEADLINE),
            next_deadline: AtomicU64::new(NO_DEADLINE),
            caller_progress_at: AtomicU64::new(0),
            caller_clock: AtomicU64::new(0),
            rung: Mutex::new(Vec::new()),
            doorbells_pending: AtomicBool::new(false),
            service_watching: AtomicBool::new(false),
            answers_held: AtomicBool::new(false),
            inbound,
            socket_read_at: AtomicU64::new(0),
            udp_busy_until: AtomicU64::new(0),
            waiting_listed: AtomicBool::new(false),
            state: Mutex::new(State {
                mrs: MrTable::default(),
                qps: IdMap::default(),
                next_pd: 0,
                next_qpn: 0x100,
                next_cqn: 0,
                next_srqn: 0,
                scatter_to_cqe: false,
                rx: RxBatch::new(link_gro),
                tx: TxBatch::new(shm),
                touched: Vec::new(),
                waiting: Vec::new(),
                rung_taken: Vec::new(),
                shm_buf: vec![0u8; MAX_DATAGRAM].into_boxed_slice(),
            }),
        });
        let opened_core = Arc::clone(&core);
        let thread = std::thread::Builder::new()
            .name(format!("softhca-{name}"))
            .spawn(move || opened_core.service_loop())
            .map_err(|err| {
                tracing::warn!("soft hca {name}: cannot start the service thread: {err}");
                Error::NoResource
            })?;
        let opened = Arc::new(Opened {
            core,
            thread: Some(thread),
        });
        opened.apply_faults(faults);
        tracing::debug!("soft hca {name}: open at {}", opened.core.link.local_addr());
        Ok(opened)
    }

    pub fn apply_faults(&self, faults: Faults) {
        self.core.link.set_up(faults.link_up);
        self.core.link.set_loss(faults.loss);
    }

    pub fn local_addr(&self) -> SocketAddrV4 {
        self.core.link.local_addr()
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        self.core.stop.store(true, Ordering::Release);
        self.core.wake.signal();
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::warn!(
                    "soft hca {}: service thread ended abnormally",
                    self.core.name
                );
            }
        }
        // What a last pass held (an ACK the peer waits for) still leaves.
        let mut state = self.core.lock();
        self.core.flush(&mut state);
    }
}
