//! A deterministic simulated link between two engines, for tests (ours and
//! the device's): virtual time, seeded loss, duplication, reordering and a
//! cut. Packets really go through the wire format (`emit`, then `parse` with
//! the ICRC check), so the engine is tested with what the link will carry.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

use super::{Completion, Instant, Qp, SimMemory};
use crate::wire::{IcrcContext, PacketRepr};

/// A small seeded PRNG (SplitMix64): deterministic across platforms.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[0, n)` (`0` if `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }
}

/// What the link does to packets (each direction independently).
#[derive(Clone, Copy, Debug)]
pub struct LinkConfig {
    /// Fraction of packets dropped.
    pub loss: f64,
    /// Fraction of packets delivered twice.
    pub duplicate: f64,
    /// Fraction of packets delayed by up to `reorder_delay` extra, so later
    /// packets overtake them.
    pub reorder: f64,
    pub reorder_delay: Duration,
    /// One-way delay of every packet.
    pub delay: Duration,
    /// From this time on every packet is dropped (a pulled cable).
    pub cut_at: Option<Instant>,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_delay: Duration::from_micros(20),
            delay: Duration::from_micros(2),
            cut_at: None,
        }
    }
}

/// One end: a QP, its memory and the completions it reported.
#[derive(Debug)]
pub struct Host {
    pub qp: Qp,
    pub mem: SimMemory,
    pub completions: Vec<Completion>,
}

impl Host {
    pub fn new(qp: Qp, mem: SimMemory) -> Host {
        Host {
            qp,
            mem,
            completions: Vec::new(),
        }
    }
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct InFlight {
    arrival: Reverse<Instant>,
    seq: Reverse<u64>,
    to_b: bool,
    datagram: Vec<u8>,
}

/// Two hosts joined by a simulated link.
#[derive(Debug)]
pub struct SimPair {
    pub a: Host,
    pub b: Host,
    pub link: LinkConfig,
    pub rng: Rng,
    pub now: Instant,
    in_flight: BinaryHeap<InFlight>,
    seq: u64,
    ctx_a_to_b: IcrcContext,
    /// Datagrams the link dropped (loss or cut).
    pub dropped: u64,
    /// Datagrams delivered (duplicates included).
    pub delivered: u64,
    /// Received datagrams the wire parser rejected (must stay 0).
    pub parse_errors: u64,
    /// Packets from an engine the wire could not emit (must stay 0).
    pub emit_errors: u64,
}

impl SimPair {
    pub fn new(a: Host, b: Host, link: LinkConfig, seed: u64) -> SimPair {
        let addr_a = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 4791);
        let addr_b = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 4791);
        SimPair {
            a,
            b,
            link,
            rng: Rng::new(seed),
            now: Instant::ZERO,
            in_flight: BinaryHeap::new(),
            seq: 0,
            ctx_a_to_b: IcrcContext::new(addr_a, addr_b),
            dropped: 0,
            delivered: 0,
            parse_errors: 0,
            emit_errors: 0,
        }
    }

    fn send_from(&mut self, from_a: bool) {
        loop {
            let now = self.now;
            let host = if from_a { &mut self.a } else { &mut self.b };
            let Some(t) = host.qp.poll_transmit(now, &mut host.mem) else {
                break;
            };
            let repr = t.repr();
            let ctx = if from_a {
                self.ctx_a_to_b
            } else {
                self.ctx_a_to_b.reversed()
            };
            let mut datagram = vec![0u8; repr.buffer_len()];
            match repr.emit(&mut datagram, &ctx) {
                Ok(n) => datagram.truncate(n),
                Err(e) => {
                    tracing::warn!("engine produced a packet the wire cannot emit: {e} {repr:?}");
                    self.emit_errors += 1;
                    continue;
                }
            }
            tracing::trace!(from_a, psn = repr.bth.psn, opcode = ?repr.bth.opcode, "link: sent");
            if self.link.cut_at.is_some_and(|cut| now >= cut) || self.rng.chance(self.link.loss) {
                tracing::trace!(from_a, psn = repr.bth.psn, "link: lost");
                self.dropped += 1;
                continue;
            }
            let copies = if self.rng.chance(self.link.duplicate) {
                2
            } else {
                1
            };
            for _ in 0..copies {
                let mut arrival = now + self.link.delay;
                if self.rng.chance(self.link.reorder) {
                    let extra = self
                        .rng
                        .below(self.link.reorder_delay.as_nanos() as u64 + 1);
                    arrival = arrival + Duration::from_nanos(extra);
                }
                self.seq += 1;
                self.in_flight.push(InFlight {
                    arrival: Reverse(arrival),
                    seq: Reverse(self.seq),
                    to_b: from_a,
                    datagram: datagram.clone(),
                });
            }
        }
    }

    fn collect_completions(&mut self) {
        for host in [&mut self.a, &mut self.b] {
            while let Some(c) = host.qp.poll_completion() {
                host.completions.push(c);
            }
        }
    }

    /// Lets both ends transmit and collects their completions.
    pub fn flush(&mut self) {
        self.send_from(true);
        self.send_from(false);
        self.collect_completions();
    }

    /// Runs until `done(self)` holds (true), or for `limit` of virtual time
    /// (false; when nothing is left to happen the clock jumps to the end).
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&SimPair) -> bool) -> bool {
        let deadline = self.now + limit;
        loop {
            self.flush();
            if done(self) {
                return true;
            }
            let next = [
                self.in_flight.peek().map(|p| p.arrival.0),
                self.a.qp.next_timeout(),
                self.b.qp.next_timeout(),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next else {
                // Nothing can happen any more: the time passes idle.
                self.now = self.now.max(deadline);
                return false;
            };
            if next > deadline {
                self.now = deadline;
                return false;
            }
            self.now = self.now.max(next);
            while self
                .in_flight
                .peek()
                .is_some_and(|p| p.arrival.0 <= self.now)
            {
                let Some(p) = self.in_flight.pop() else { break };
                self.deliver(p);
            }
            let now = self.now;
            self.a.qp.handle_timeout(now);
            self.b.qp.handle_timeout(now);
        }
    }

    fn deliver(&mut self, p: InFlight) {
        let ctx = if p.to_b {
            self.ctx_a_to_b
        } else {
            self.ctx_a_to_b.reversed()
        };
        let Ok(repr) = PacketRepr::parse(&p.datagram, &ctx) else {
            self.parse_errors += 1;
            return;
        };
        self.delivered += 1;
        let now = self.now;
        let host = if p.to_b { &mut self.b } else { &mut self.a };
        host.qp.handle_packet(now, &repr, &mut host.mem);
    }

    /// Runs until both send queues are empty and nothing is in flight.
    pub fn run_to_quiet(&mut self, limit: Duration) -> bool {
        self.run_until(limit, |s| {
            s.a.qp.send_queue_len() == 0 && s.b.qp.send_queue_len() == 0 && s.in_flight.is_empty()
        })
    }

    /// Packets currently on the wire.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }
}

/// How [`connected_pair`] sets up two QPs.
#[derive(Clone, Copy, Debug)]
pub struct PairSetup {
    pub mtu: super::PathMtu,
    /// Initial send PSN of A (B's responder expects it).
    pub a_sq_psn: u32,
    /// Initial send PSN of B (A's responder expects it).
    pub b_sq_psn: u32,
    pub rts: super::RtsAttrs,
    pub min_rnr_timer: u8,
    pub max_rd_atomic: u8,
    pub send_window: u32,
    /// See [`super::QpConfig::responder_errors_fatal`].
    pub responder_errors_fatal: bool,
}

impl Default for PairSetup {
    fn default() -> Self {
        PairSetup {
            mtu: super::PathMtu::Mtu1024,
            a_sq_psn: 100,
            b_sq_psn: 5_000,
            rts: super::RtsAttrs {
                sq_psn: 0,
                ack_timeout: Some(Duration::from_micros(100)),
                retry_cnt: 7,
                rnr_retry: 7,
                max_rd_atomic: 4,
            },
            // 10 µs.
            min_rnr_timer: 1,
            max_rd_atomic: 4,
            send_window: 64,
            responder_errors_fatal: true,
        }
    }
}

/// QPN of host A in a [`connected_pair`].
pub const QPN_A: u32 = 0x11;
/// QPN of host B in a [`connected_pair`].
pub const QPN_B: u32 = 0x22;

fn rts_qp(qpn: u32, dest: u32, rq_psn: u32, sq_psn: u32, setup: &PairSetup) -> Qp {
    let mut cfg = super::QpConfig::new(qpn);
    cfg.send_window = setup.send_window;
    cfg.responder_errors_fatal = setup.responder_errors_fatal;
    let mut qp = Qp::new(cfg);
    // These transitions only fail on out-of-range attributes, which a
    // caller's PairSetup can produce; the QP then stays where it stopped
    // and every post is refused, which the test sees.
    let _ = qp.modify_to_init();
    let _ = qp.modify_to_rtr(super::RtrAttrs {
        dest_qpn: dest,
        rq_psn,
        path_mtu: setup.mtu,
        min_rnr_timer: setup.min_rnr_timer,
        max_dest_rd_atomic: setup.max_rd_atomic,
    });
    let _ = qp.modify_to_rts(super::RtsAttrs {
        sq_psn,
        max_rd_atomic: setup.max_rd_atomic,
        ..setup.rts
    });
    qp
}

/// Two QPs in RTS connected to each other over a link, with the given
/// memories.
pub fn connected_pair(
    setup: PairSetup,
    mem_a: SimMemory,
    mem_b: SimMemory,
    link: LinkConfig,
    seed: u64,
) -> SimPair {
    let a = rts_qp(QPN_A, QPN_B, setup.b_sq_psn, setup.a_sq_psn, &setup);
    let b = rts_qp(QPN_B, QPN_A, setup.a_sq_psn, setup.b_sq_psn, &setup);
    SimPair::new(Host::new(a, mem_a), Host::new(b, mem_b), link, seed)
}

/// One port of a [`UdNet`]: a UD QP, its memory and the completions it
/// reported.
#[derive(Debug)]
pub struct UdHost {
    pub addr: SocketAddrV4,
    pub qp: super::UdQp,
    pub mem: SimMemory,
    pub completions: Vec<Completion>,
}

/// UD hosts on a simulated network: each datagram is emitted with the
/// ICRC of its two endpoints, may be lost (seeded), arrives after
/// `delay` of virtual time, and is parsed (ICRC checked) at the port its
/// destination GID names. A datagram for a GID no host has is counted in
/// `unroutable`.
#[derive(Debug)]
pub struct UdNet {
    pub hosts: Vec<UdHost>,
    pub loss: f64,
    pub delay: Duration,
    pub rng: Rng,
    pub now: Instant,
    in_flight: BinaryHeap<UdInFlight>,
    seq: u64,
    pub dropped: u64,
    pub delivered: u64,
    pub unroutable: u64,
    pub parse_errors: u64,
    pub emit_errors: u64,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct UdInFlight {
    arrival: Reverse<Instant>,
    seq: Reverse<u64>,
    from: SocketAddrV4,
    to: SocketAddrV4,
    datagram: Vec<u8>,
}

impl UdNet {
    pub fn new(seed: u64) -> UdNet {
        UdNet {
            hosts: Vec::new(),
            loss: 0.0,
            delay: Duration::from_micros(2),
            rng: Rng::new(seed),
            now: Instant::ZERO,
            in_flight: BinaryHeap::new(),
            seq: 0,
            dropped: 0,
            delivered: 0,
            unroutable: 0,
            parse_errors: 0,
            emit_errors: 0,
        }
    }

    /// Adds a host at `addr` with a UD QP numbered `qpn` in RTS holding
    /// `qkey`; returns its index.
    pub fn add_host(&mut self, addr: SocketAddrV4, qpn: u32, qkey: u32, mem: SimMemory) -> usize {
        let mut qp = super::UdQp::new(super::UdConfig::new(
            qpn,
            crate::wire::Gid::from_endpoint(addr),
        ));
        // Only an out-of-range PSN fails these, and 0 is in range.
        let _ = qp.modify_to_init(qkey);
        let _ = qp.modify_to_rtr();
        let _ = qp.modify_to_rts(0);
        self.hosts.push(UdHost {
            addr,
            qp,
            mem,
            completions: Vec::new(),
        });
        self.hosts.len() - 1
    }

    /// The GID of host `index`.
    pub fn gid(&self, index: usize) -> crate::wire::Gid {
        crate::wire::Gid::from_endpoint(self.hosts[index].addr)
    }

    fn send_all(&mut self) {
        for index in 0..self.hosts.len() {
            loop {
                let host = &mut self.hosts[index];
                let Some(t) = host.qp.poll_transmit(&mut host.mem) else {
                    break;
                };
                let from = host.addr;
                let Some(to) = t.dest.endpoint() else {
                    self.unroutable += 1;
                    continue;
                };
                let repr = t.repr();
                let mut datagram = vec![0u8; repr.buffer_len()];
                if repr
                    .emit(&mut datagram, &IcrcContext::new(from, to))
                    .is_err()
                {
                    self.emit_errors += 1;
                    continue;
                }
                if self.rng.chance(self.loss) {
                    self.dropped += 1;
                    continue;
                }
                self.seq += 1;
                self.in_flight.push(UdInFlight {
                    arrival: Reverse(self.now + self.delay),
                    seq: Reverse(self.seq),
                    from,
                    to,
                    datagram,
                });
            }
            let host = &mut self.hosts[index];
            while let Some(c) = host.qp.poll_completion() {
                host.completions.push(c);
            }
        }
    }

    /// Sends what every host has queued and delivers everything in flight,
    /// advancing virtual time, until nothing is left to do.
    pub fn run(&mut self) {
        loop {
            self.send_all();
            let Some(next) = self.in_flight.peek().map(|p| p.arrival.0) else {
                return;
            };
            self.now = self.now.max(next);
            while self
                .in_flight
                .peek()
                .is_some_and(|p| p.arrival.0 <= self.now)
            {
                let Some(p) = self.in_flight.pop() else { break };
                self.deliver(p);
            }
        }
    }

    fn deliver(&mut self, p: UdInFlight) {
        let Some(host) = self.hosts.iter_mut().find(|h| h.addr == p.to) else {
            self.unroutable += 1;
            return;
        };
        let Ok(repr) = PacketRepr::parse(&p.datagram, &IcrcContext::new(p.from, p.to)) else {
            self.parse_errors += 1;
            return;
        };
        self.delivered += 1;
        host.qp.handle_packet(
            &repr,
            crate::wire::Gid::from_endpoint(p.from),
            &mut host.mem,
        );
        while let Some(c) = host.qp.poll_completion() {
            host.completions.push(c);
        }
    }
}
