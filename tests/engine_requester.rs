//! The requester: segmentation at MTU boundaries (packets on the wire and
//! bytes that land), PSNs across the 2^24 wrap under loss, ACK requests, the
//! send window, fences and the READ/atomic limit.

mod engine_common;

use std::time::Duration;

use engine_common::poll_all;

use uct::hca::soft::engine::sim::{connected_pair, LinkConfig, PairSetup, Rng};
use uct::hca::soft::engine::{
    Access, AtomicOp, CompletionStatus, Instant, LocalData, PathMtu, Qp, QpConfig, RecvWr,
    RemoteBuf, RtrAttrs, RtsAttrs, SendOp, SendWr, Sge, SimMemory, Transmit, WorkQueue,
};
use uct::hca::soft::wire::Opcode;

const KEY: u32 = 1;
const BASE: u64 = 0x100_0000;
const SIZE: usize = 256 * 1024;

fn memory(seed: u64) -> SimMemory {
    let mut mem = SimMemory::new();
    mem.register(KEY, BASE, SIZE, Access::ALL);
    let mut rng = Rng::new(seed);
    for b in mem.region_mut(KEY).unwrap() {
        *b = rng.next_u64() as u8;
    }
    mem
}

fn sgl(offset: u64, len: u32) -> LocalData {
    LocalData::Sgl(vec![Sge {
        addr: BASE + offset,
        len,
        lkey: KEY,
    }])
}

fn remote(offset: u64) -> RemoteBuf {
    RemoteBuf {
        va: BASE + offset,
        rkey: KEY,
    }
}

#[test]
fn segmentation_at_mtu_boundaries() {
    for mtu in [PathMtu::Mtu256, PathMtu::Mtu4096] {
        let m = mtu.bytes();
        for len in [0, 1, m - 1, m, m + 1, 2 * m, 5 * m + 3] {
            for kind in 0..3 {
                let setup = PairSetup {
                    mtu,
                    ..PairSetup::default()
                };
                let mut p = connected_pair(setup, memory(1), memory(2), LinkConfig::default(), 3);
                let (op, local) = match kind {
                    0 => (SendOp::Send { imm: Some(7) }, sgl(0, len)),
                    1 => (
                        SendOp::Write {
                            remote: remote(4096),
                            imm: None,
                        },
                        sgl(0, len),
                    ),
                    _ => (
                        SendOp::Read {
                            remote: remote(8192),
                        },
                        sgl(0, len),
                    ),
                };
                p.b.qp
                    .post_recv(RecvWr {
                        wr_id: 1,
                        sgl: vec![Sge {
                            addr: BASE + 0x20000,
                            len: 0x10000,
                            lkey: KEY,
                        }],
                    })
                    .unwrap();
                let before_a = p.a.mem.region(KEY).unwrap().to_vec();
                let before_b = p.b.mem.region(KEY).unwrap().to_vec();
                p.a.qp.post_send(SendWr::new(9, op, local)).unwrap();
                assert!(p.run_until(Duration::from_millis(10), |p| !p.a.completions.is_empty()));
                let c = p.a.completions[0];
                assert_eq!(
                    (c.status, c.byte_len),
                    (CompletionStatus::Success, len),
                    "{kind} {len}"
                );
                let packets = len.div_ceil(m).max(1) as u64;
                let (a, b) = (p.a.qp.stats(), p.b.qp.stats());
                let after_a = p.a.mem.region(KEY).unwrap();
                let after_b = p.b.mem.region(KEY).unwrap();
                let l = len as usize;
                match kind {
                    0 => {
                        assert_eq!(a.packets_sent, packets, "SEND {len} at {m}");
                        assert_eq!(b.packets_sent, 1, "one coalesced ACK");
                        let r =
                            p.b.completions
                                .iter()
                                .find(|c| c.queue == WorkQueue::Recv)
                                .unwrap();
                        assert_eq!((r.byte_len, r.imm), (len, Some(7)));
                        assert_eq!(&after_b[0x20000..0x20000 + l], &before_a[..l]);
                        assert_eq!(&after_b[0x20000 + l..], &before_b[0x20000 + l..]);
                    }
                    1 => {
                        assert_eq!(a.packets_sent, packets, "WRITE {len} at {m}");
                        assert_eq!(&after_b[4096..4096 + l], &before_a[..l]);
                        assert_eq!(&after_b[4096 + l..], &before_b[4096 + l..]);
                        assert_eq!(&after_b[..4096], &before_b[..4096]);
                    }
                    _ => {
                        assert_eq!(a.packets_sent, 1, "one READ request");
                        assert_eq!(b.packets_sent, packets, "READ {len} at {m}: responses");
                        assert_eq!(&after_a[..l], &before_b[8192..8192 + l]);
                        assert_eq!(&after_a[l..], &before_a[l..]);
                    }
                }
            }
        }
    }
}

#[test]
fn psn_wrap_under_loss() {
    for seed in 0..10 {
        let setup = PairSetup {
            mtu: PathMtu::Mtu256,
            a_sq_psn: 0xff_ffff - seed as u32 * 3,
            b_sq_psn: 0xff_fff0,
            ..PairSetup::default()
        };
        let link = LinkConfig {
            loss: 0.1,
            duplicate: 0.05,
            reorder: 0.1,
            ..LinkConfig::default()
        };
        let mut p = connected_pair(setup, memory(seed), memory(seed + 100), link, seed);
        let mut rng = Rng::new(seed);
        let mut expect = Vec::new();
        for i in 0..12u64 {
            let len = rng.below(2000) as u32;
            let off = i * 4096;
            let op = match i % 3 {
                0 => SendOp::Write {
                    remote: remote(off),
                    imm: None,
                },
                1 => SendOp::Read {
                    remote: remote(off + 0x10000),
                },
                _ => SendOp::Atomic {
                    remote: remote(0x30000),
                    op: AtomicOp::FetchAdd { add: 1 },
                },
            };
            let local = if i % 3 == 2 {
                sgl(0x38000 + i * 8, 8)
            } else {
                sgl(off, len)
            };
            p.a.qp.post_send(SendWr::new(i, op, local)).unwrap();
            expect.push((i, len));
        }
        let before_a = p.a.mem.region(KEY).unwrap().to_vec();
        let before_b = p.b.mem.region(KEY).unwrap().to_vec();
        assert!(
            p.run_until(Duration::from_secs(5), |p| p.a.completions.len() == 12),
            "seed {seed}"
        );
        assert!(p
            .a
            .completions
            .iter()
            .all(|c| c.status == CompletionStatus::Success));
        let (after_a, after_b) = (p.a.mem.region(KEY).unwrap(), p.b.mem.region(KEY).unwrap());
        for (i, len) in expect {
            let (off, l) = ((i * 4096) as usize, len as usize);
            match i % 3 {
                0 => assert_eq!(&after_b[off..off + l], &before_a[off..off + l]),
                1 => assert_eq!(
                    &after_a[off..off + l],
                    &before_b[off + 0x10000..off + 0x10000 + l]
                ),
                _ => {}
            }
        }
        let counter = u64::from_ne_bytes(after_b[0x30000..0x30008].try_into().unwrap());
        let start = u64::from_ne_bytes(before_b[0x30000..0x30008].try_into().unwrap());
        assert_eq!(
            counter.wrapping_sub(start),
            4,
            "seed {seed}: four fetch-adds, once each"
        );
        assert_eq!(p.b.mem.atomics_executed(), 4);
        // The PSNs really wrapped.
        assert!(p.a.qp.send_psn() < 0x1000);
        assert_eq!(p.b.qp.next_rcv_psn(), p.a.qp.send_psn());
    }
}

fn lone_requester(max_rd_atomic: u8, window: u32) -> (Qp, SimMemory) {
    let mut cfg = QpConfig::new(1);
    cfg.send_window = window;
    let mut qp = Qp::new(cfg);
    qp.modify_to_init().unwrap();
    qp.modify_to_rtr(RtrAttrs {
        dest_qpn: 2,
        path_mtu: PathMtu::Mtu256,
        ..Default::default()
    })
    .unwrap();
    qp.modify_to_rts(RtsAttrs {
        sq_psn: 0,
        max_rd_atomic,
        ..Default::default()
    })
    .unwrap();
    (qp, memory(0))
}

fn drain(qp: &mut Qp, mem: &mut SimMemory) -> Vec<Transmit> {
    std::iter::from_fn(|| qp.poll_transmit(Instant::ZERO, mem)).collect()
}

/// Answers every request in `out` with a responder QP and feeds the answers
/// back to `qp`.
fn respond(
    qp: &mut Qp,
    mem: &mut SimMemory,
    responder: &mut Qp,
    rmem: &mut SimMemory,
    out: &[Transmit],
) {
    for t in out {
        responder.handle_packet(Instant::ZERO, &t.repr(), rmem);
    }
    for t in drain(responder, rmem) {
        qp.handle_packet(Instant::ZERO, &t.repr(), mem);
    }
}

fn lone_responder() -> (Qp, SimMemory) {
    let mut qp = Qp::new(QpConfig::new(2));
    qp.modify_to_init().unwrap();
    qp.modify_to_rtr(RtrAttrs {
        dest_qpn: 1,
        rq_psn: 0,
        path_mtu: PathMtu::Mtu256,
        ..Default::default()
    })
    .unwrap();
    (qp, memory(5))
}

/// Posts READ `wr_id` of `len` bytes from remote offset `offset` into the
/// start of the local buffer.
fn post_read(qp: &mut Qp, wr_id: u64, offset: u64, len: u32) {
    qp.post_send(SendWr::new(
        wr_id,
        SendOp::Read {
            remote: remote(offset),
        },
        sgl(0, len),
    ))
    .unwrap();
}

#[test]
fn fence_waits_for_earlier_reads() {
    let (mut qp, mut mem) = lone_requester(4, 64);
    let (mut responder, mut rmem) = lone_responder();
    post_read(&mut qp, 1, 0, 600);
    qp.post_send(SendWr::new(
        2,
        SendOp::Write {
            remote: remote(4096),
            imm: None,
        },
        sgl(8192, 10),
    ))
    .unwrap();
    let mut fenced = SendWr::new(
        3,
        SendOp::Write {
            remote: remote(4096),
            imm: None,
        },
        sgl(0, 600),
    );
    fenced.fence = true;
    qp.post_send(fenced).unwrap();
    let out = drain(&mut qp, &mut mem);
    // The READ and the unfenced WRITE go; the fenced WRITE waits.
    let ops: Vec<_> = out.iter().map(|t| t.header.bth.opcode).collect();
    assert_eq!(ops, vec![Opcode::ReadRequest, Opcode::WriteOnly]);
    respond(&mut qp, &mut mem, &mut responder, &mut rmem, &out);
    let c: Vec<_> = std::iter::from_fn(|| qp.poll_completion())
        .map(|c| c.wr_id)
        .collect();
    assert_eq!(c, vec![1, 2]);
    // Now the fenced WRITE carries the data the READ brought.
    let out = drain(&mut qp, &mut mem);
    assert_eq!(out.len(), 3);
    assert_eq!(out[0].header.bth.opcode, Opcode::WriteFirst);
    let read_back = &rmem.region(KEY).unwrap()[..256].to_vec();
    respond(&mut qp, &mut mem, &mut responder, &mut rmem, &out);
    assert_eq!(&rmem.region(KEY).unwrap()[4096..4096 + 256], &read_back[..]);
    assert_eq!(
        qp.poll_completion().map(|c| (c.wr_id, c.status)),
        Some((3, CompletionStatus::Success))
    );
}

#[test]
fn read_atomic_limit_and_send_window() {
    let (mut qp, mut mem) = lone_requester(2, 8);
    for i in 0..4 {
        qp.post_send(SendWr::new(
            i,
            SendOp::Read { remote: remote(0) },
            sgl(i * 1024, 100),
        ))
        .unwrap();
    }
    let out = drain(&mut qp, &mut mem);
    assert_eq!(out.len(), 2, "max_rd_atomic = 2");
    let (mut responder, mut rmem) = lone_responder();
    respond(&mut qp, &mut mem, &mut responder, &mut rmem, &out);
    let out = drain(&mut qp, &mut mem);
    assert_eq!(out.len(), 2, "two more after two responses");
    respond(&mut qp, &mut mem, &mut responder, &mut rmem, &out);
    assert_eq!(std::iter::from_fn(|| qp.poll_completion()).count(), 4);

    // Window of 8 PSNs: a 20-packet WRITE stops after 8 until ACKed; the
    // packet that fills the window asks for an ACK.
    qp.post_send(SendWr::new(
        9,
        SendOp::Write {
            remote: remote(0),
            imm: None,
        },
        sgl(0, 20 * 256),
    ))
    .unwrap();
    let out = drain(&mut qp, &mut mem);
    assert_eq!(out.len(), 8);
    assert!(out[7].header.bth.ack_req);
    assert!(!out[3].header.bth.ack_req);
    respond(&mut qp, &mut mem, &mut responder, &mut rmem, &out);
    assert_eq!(drain(&mut qp, &mut mem).len(), 8);
    assert_eq!(qp.unacked_psn(), qp.send_psn() - 12);
}

#[test]
fn retransmission_resends_the_same_packets() {
    let (mut qp, mut mem) = lone_requester(4, 64);
    qp.post_send(SendWr::new(1, SendOp::Send { imm: None }, sgl(0, 700)))
        .unwrap();
    let first = drain(&mut qp, &mut mem);
    assert_eq!(first.len(), 3);
    assert!(first[2].header.bth.ack_req, "last packet asks for an ACK");
    let deadline = qp.next_timeout().expect("retransmission timer armed");
    qp.handle_timeout(Instant::from_nanos(deadline.as_nanos() - 1));
    assert!(
        drain(&mut qp, &mut mem).is_empty(),
        "not before the deadline"
    );
    qp.handle_timeout(deadline);
    let again: Vec<_> = std::iter::from_fn(|| qp.poll_transmit(deadline, &mut mem)).collect();
    assert_eq!(again, first);
    assert_eq!(qp.stats().packets_retransmitted, 3);
    assert_eq!(qp.stats().timeouts, 1);
}

#[test]
fn oversized_messages_fail_locally() {
    let (mut qp, mut mem) = lone_requester(4, 64);
    // 2^31 bytes at MTU 256 would need 2^23 PSNs: half the PSN space.
    let huge = LocalData::Sgl(vec![Sge {
        addr: BASE,
        len: 1 << 31,
        lkey: KEY,
    }]);
    qp.post_send(SendWr::new(1, SendOp::Read { remote: remote(0) }, huge))
        .unwrap();
    // Over IB's 2^31 limit.
    let over = LocalData::Sgl(vec![
        Sge {
            addr: BASE,
            len: 1 << 31,
            lkey: KEY,
        },
        Sge {
            addr: BASE,
            len: 1,
            lkey: KEY,
        },
    ]);
    qp.post_send(SendWr::new(2, SendOp::Send { imm: None }, over))
        .unwrap();
    assert!(drain(&mut qp, &mut mem).is_empty());
    let got = poll_all(&mut qp);
    assert_eq!(
        got,
        vec![
            (1, CompletionStatus::LocalLengthError),
            (2, CompletionStatus::WrFlushError)
        ]
    );
}

#[test]
fn lost_read_responses_are_requested_again_from_the_gap() {
    let (mut qp, mut mem) = lone_requester(4, 64);
    let (mut responder, mut rmem) = lone_responder();
    qp.post_send(SendWr::new(
        1,
        SendOp::Read {
            remote: remote(1000),
        },
        sgl(0, 1200),
    ))
    .unwrap();
    qp.post_send(SendWr::new(
        2,
        SendOp::Write {
            remote: remote(9000),
            imm: None,
        },
        sgl(5000, 8),
    ))
    .unwrap();
    let out = drain(&mut qp, &mut mem);
    assert_eq!(out.len(), 2);
    for t in &out {
        responder.handle_packet(Instant::ZERO, &t.repr(), &mut rmem);
    }
    let answers = drain(&mut responder, &mut rmem);
    // Five READ responses (1200 bytes at 256) then the WRITE's ACK; only the
    // first two responses and the ACK arrive.
    assert_eq!(answers.len(), 6);
    for t in answers[..2].iter().chain(&answers[5..]) {
        qp.handle_packet(Instant::ZERO, &t.repr(), &mut mem);
    }
    // The ACK covers the WRITE, but the READ before it is not complete, so
    // nothing completes and the oldest unacknowledged PSN is the gap.
    assert!(qp.poll_completion().is_none());
    assert_eq!(qp.unacked_psn(), 2);
    let deadline = qp.next_timeout().unwrap();
    qp.handle_timeout(deadline);
    let again: Vec<_> = std::iter::from_fn(|| qp.poll_transmit(deadline, &mut mem)).collect();
    let reth = again[0].header.reth.unwrap();
    assert_eq!(again[0].header.bth.opcode, Opcode::ReadRequest);
    assert_eq!(again[0].header.bth.psn, 2);
    assert_eq!((reth.va, reth.dma_len), (BASE + 1000 + 512, 1200 - 512));
    // Go-back-N resends the WRITE too (a duplicate the responder re-ACKs).
    assert_eq!(again.len(), 2);
    respond(&mut qp, &mut mem, &mut responder, &mut rmem, &again);
    let got = poll_all(&mut qp);
    assert_eq!(
        got,
        vec![
            (1, CompletionStatus::Success),
            (2, CompletionStatus::Success)
        ]
    );
    assert_eq!(
        &mem.region(KEY).unwrap()[..1200],
        &rmem.region(KEY).unwrap()[1000..2200]
    );
    assert_eq!(responder.stats().reads_replayed, 1);
}

#[test]
fn a_response_past_a_gap_asks_again_at_once() {
    let (mut qp, mut mem) = lone_requester(4, 64);
    let (mut responder, mut rmem) = lone_responder();
    post_read(&mut qp, 1, 0, 1000);
    let out = drain(&mut qp, &mut mem);
    responder.handle_packet(Instant::ZERO, &out[0].repr(), &mut rmem);
    let answers = drain(&mut responder, &mut rmem);
    assert_eq!(answers.len(), 4);
    // Response 1 is lost; 2 and 3 arrive.
    qp.handle_packet(Instant::ZERO, &answers[0].repr(), &mut mem);
    qp.handle_packet(Instant::ZERO, &answers[2].repr(), &mut mem);
    qp.handle_packet(Instant::ZERO, &answers[3].repr(), &mut mem);
    let again = drain(&mut qp, &mut mem);
    assert_eq!(
        again.len(),
        1,
        "one re-request for one gap, before any timeout"
    );
    assert_eq!(again[0].header.bth.psn, 1);
    assert_eq!(again[0].header.reth.unwrap().dma_len, 1000 - 256);
    assert_eq!(qp.stats().timeouts, 0);
    respond(&mut qp, &mut mem, &mut responder, &mut rmem, &again);
    assert_eq!(
        qp.poll_completion().map(|c| c.status),
        Some(CompletionStatus::Success)
    );
    assert_eq!(
        &mem.region(KEY).unwrap()[..1000],
        &rmem.region(KEY).unwrap()[..1000]
    );
}

#[test]
fn zero_length_write_and_read_complete_whatever_their_remote_key() {
    // What a requester posts for a 0-byte put/get: no local element, and a
    // remote key and address that name no memory at the responder.
    let nowhere = RemoteBuf { va: 0, rkey: 0xbad };
    let mut p = connected_pair(
        PairSetup::default(),
        memory(1),
        memory(2),
        LinkConfig::default(),
        5,
    );
    let before_b = p.b.mem.region(KEY).unwrap().to_vec();
    let ops = [
        SendOp::Write {
            remote: nowhere,
            imm: None,
        },
        SendOp::Read { remote: nowhere },
        SendOp::Write {
            remote: nowhere,
            imm: None,
        },
    ];
    for (wr_id, op) in (1..).zip(ops) {
        p.a.qp
            .post_send(SendWr::new(wr_id, op, LocalData::Sgl(vec![])))
            .unwrap();
    }
    assert!(p.run_until(Duration::from_millis(10), |p| p.a.completions.len() == 3));
    let got: Vec<_> =
        p.a.completions
            .iter()
            .map(|c| (c.wr_id, c.status, c.byte_len))
            .collect();
    assert_eq!(
        got,
        vec![
            (1, CompletionStatus::Success, 0),
            (2, CompletionStatus::Success, 0),
            (3, CompletionStatus::Success, 0),
        ]
    );
    assert!(p.run_to_quiet(Duration::from_millis(10)));
    assert!(p.b.completions.is_empty(), "nothing fails at the responder");
    assert_eq!(p.a.qp.state(), uct::hca::soft::engine::QpState::Rts);
    assert_eq!(p.b.qp.state(), uct::hca::soft::engine::QpState::Rts);
    assert_eq!(p.b.mem.region(KEY).unwrap(), &before_b[..]);
}
