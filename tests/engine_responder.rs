//! The responder fed packet by packet: duplicates (READ re-executed, atomics
//! answered from the saved result, never executed twice), one sequence NAK
//! per gap, invalid opcode sequences, ACK coalescing, and forged input that
//! must never panic or touch memory it may not.

use uct::hca::soft::engine::sim::Rng;
use uct::hca::soft::engine::{
    Access, CompletionStatus, Instant, PathMtu, Qp, QpConfig, RecvWr, RtrAttrs, RtsAttrs, Sge,
    SimMemory, Transmit, WorkQueue,
};
use uct::hca::soft::wire::{
    Aeth, AethSyndrome, AtomicAckEth, AtomicEth, AtomicSize, Bth, ExtAtomicEth, NakCode, Opcode,
    PacketRepr, Reth,
};

const QPN: u32 = 0x33;
const PEER: u32 = 0x44;
const RQ_PSN: u32 = 0xff_fff0;
const KEY: u32 = 5;
const BASE: u64 = 0x7000;
const KEY_PRIVATE: u32 = 6;
const BASE_PRIVATE: u64 = 0x9_0000;

/// A responder that survives the bad requests it NAKs, so one QP can be fed
/// many of them.
fn responder() -> (Qp, SimMemory) {
    let mut cfg = QpConfig::new(QPN);
    cfg.responder_errors_fatal = false;
    let mut qp = Qp::new(cfg);
    qp.modify_to_init().unwrap();
    qp.modify_to_rtr(RtrAttrs {
        dest_qpn: PEER,
        rq_psn: RQ_PSN,
        path_mtu: PathMtu::Mtu256,
        min_rnr_timer: 3,
        max_dest_rd_atomic: 4,
    })
    .unwrap();
    qp.modify_to_rts(RtsAttrs {
        sq_psn: 0,
        ..Default::default()
    })
    .unwrap();
    let mut mem = SimMemory::new();
    mem.register(KEY, BASE, 4096, Access::ALL);
    mem.register(KEY_PRIVATE, BASE_PRIVATE, 4096, Access::LOCAL_WRITE);
    for (i, b) in mem.region_mut(KEY).unwrap().iter_mut().enumerate() {
        *b = i as u8;
    }
    (qp, mem)
}

fn packet(opcode: Opcode, psn: u32) -> PacketRepr<'static> {
    PacketRepr::new(Bth::new(opcode, QPN, psn & 0xff_ffff), &[])
}

fn drain(qp: &mut Qp, mem: &mut SimMemory) -> Vec<Transmit> {
    std::iter::from_fn(|| qp.poll_transmit(Instant::ZERO, mem)).collect()
}

fn read_request(psn: u32, va: u64, len: u32) -> PacketRepr<'static> {
    let mut p = packet(Opcode::ReadRequest, psn);
    p.reth = Some(Reth {
        va,
        rkey: KEY,
        dma_len: len,
    });
    p
}

fn aeth_of(t: &Transmit) -> AethSyndrome {
    t.header.aeth.expect("AETH").syndrome
}

#[test]
fn duplicate_read_is_answered_again_from_memory() {
    // 600 bytes at MTU 256: three responses, PSNs wrapping past 2^24.
    let (_, mut mem) = responder();
    let psn = 0xff_fffe;
    let mut qp = Qp::new(QpConfig::new(QPN));
    qp.modify_to_init().unwrap();
    qp.modify_to_rtr(RtrAttrs {
        dest_qpn: PEER,
        rq_psn: psn,
        path_mtu: PathMtu::Mtu256,
        ..Default::default()
    })
    .unwrap();
    let req = read_request(psn, BASE + 100, 600);
    qp.handle_packet(Instant::ZERO, &req, &mut mem);
    let first = drain(&mut qp, &mut mem);
    assert_eq!(qp.next_rcv_psn(), 1, "three PSNs consumed across the wrap");
    let opcodes: Vec<_> = first
        .iter()
        .map(|t| (t.header.bth.opcode, t.header.bth.psn, t.payload.len()))
        .collect();
    assert_eq!(
        opcodes,
        vec![
            (Opcode::ReadResponseFirst, 0xff_fffe, 256),
            (Opcode::ReadResponseMiddle, 0xff_ffff, 256),
            (Opcode::ReadResponseLast, 0, 88),
        ]
    );
    let data: Vec<u8> = first.iter().flat_map(|t| t.payload.clone()).collect();
    assert_eq!(&data[..], &mem.region(KEY).unwrap()[100..700]);
    assert_eq!(first[2].header.bth.dest_qp, PEER);

    // The same request again: answered again, with the memory's current data.
    mem.region_mut(KEY).unwrap()[100] = 0xaa;
    qp.handle_packet(Instant::ZERO, &req, &mut mem);
    let again = drain(&mut qp, &mut mem);
    assert_eq!(again.len(), 3);
    assert_eq!(again[0].payload[0], 0xaa);
    assert_eq!(qp.stats().reads_replayed, 1);
    // A re-request for the rest after the first response was received.
    let rest = read_request(0xff_ffff, BASE + 356, 344);
    qp.handle_packet(Instant::ZERO, &rest, &mut mem);
    let tail = drain(&mut qp, &mut mem);
    let got: Vec<_> = tail
        .iter()
        .map(|t| (t.header.bth.opcode, t.header.bth.psn, t.payload.len()))
        .collect();
    assert_eq!(
        got,
        vec![
            (Opcode::ReadResponseFirst, 0xff_ffff, 256),
            (Opcode::ReadResponseLast, 0, 88)
        ]
    );
    // A "duplicate" that reaches past what was accepted is not answered.
    let beyond = read_request(0xff_ffff, BASE, 1024);
    qp.handle_packet(Instant::ZERO, &beyond, &mut mem);
    assert!(drain(&mut qp, &mut mem).is_empty());
    assert_eq!(qp.next_rcv_psn(), 1);
}

#[test]
fn duplicate_atomic_is_never_executed_twice() {
    let (mut qp, mut mem) = responder();
    let mut fa = packet(Opcode::FetchAdd, RQ_PSN);
    fa.atomic = Some(AtomicEth {
        va: BASE + 8,
        rkey: KEY,
        swap_add: 5,
        compare: 0,
    });
    let mut cs = packet(Opcode::MaskedCompareSwap, RQ_PSN + 1);
    cs.ext_atomic = Some(ExtAtomicEth {
        va: BASE + 16,
        rkey: KEY,
        size: AtomicSize::Bits32,
        swap_add: 0xffff_ffff,
        compare: 0x1312_1110,
        swap_add_mask: 0x0000_ff00,
        compare_mask: 0xffff_ffff,
    });
    let before8 = u64::from_ne_bytes(mem.region(KEY).unwrap()[8..16].try_into().unwrap());
    for _ in 0..3 {
        qp.handle_packet(Instant::ZERO, &fa, &mut mem);
        qp.handle_packet(Instant::ZERO, &cs, &mut mem);
    }
    let out = drain(&mut qp, &mut mem);
    assert_eq!(out.len(), 6, "every copy is answered");
    for pair in out.chunks(2) {
        assert_eq!(pair[0].header.bth.opcode, Opcode::AtomicAcknowledge);
        assert_eq!(
            pair[0].header.atomic_ack,
            Some(AtomicAckEth { orig: before8 })
        );
        assert_eq!(
            pair[1].header.atomic_ack,
            Some(AtomicAckEth { orig: 0x1312_1110 })
        );
    }
    assert_eq!(mem.atomics_executed(), 2);
    assert_eq!(qp.stats().atomics_replayed, 4);
    let r = mem.region(KEY).unwrap();
    assert_eq!(
        u64::from_ne_bytes(r[8..16].try_into().unwrap()),
        before8 + 5
    );
    // Only the masked byte changed.
    assert_eq!(
        u32::from_ne_bytes(r[16..20].try_into().unwrap()),
        0x1312_ff10
    );
}

#[test]
fn one_sequence_nak_per_gap_then_in_order_again() {
    let (mut qp, mut mem) = responder();
    qp.post_recv(RecvWr {
        wr_id: 1,
        sgl: vec![Sge {
            addr: BASE_PRIVATE,
            len: 4096,
            lkey: KEY_PRIVATE,
        }],
    })
    .unwrap();
    for ahead in 1..5 {
        let mut p = packet(Opcode::SendOnly, RQ_PSN + ahead);
        p.bth.ack_req = true;
        qp.handle_packet(Instant::ZERO, &p, &mut mem);
    }
    let out = drain(&mut qp, &mut mem);
    assert_eq!(out.len(), 1);
    assert_eq!(
        aeth_of(&out[0]),
        AethSyndrome::Nak(NakCode::PsnSequenceError)
    );
    assert_eq!(out[0].header.bth.psn, RQ_PSN);
    assert_eq!(qp.stats().sequence_naks_sent, 1);
    assert_eq!(qp.stats().out_of_sequence_requests, 4);
    // The expected one arrives: accepted, ACKed.
    let payload = [7u8; 10];
    let mut p = PacketRepr::new(Bth::new(Opcode::SendOnly, QPN, RQ_PSN), &payload);
    p.bth.ack_req = true;
    qp.handle_packet(Instant::ZERO, &p, &mut mem);
    let out = drain(&mut qp, &mut mem);
    assert_eq!(out.len(), 1);
    assert!(matches!(aeth_of(&out[0]), AethSyndrome::Ack { .. }));
    assert_eq!(out[0].header.bth.psn, RQ_PSN);
    assert_eq!(out[0].header.aeth.unwrap().msn, 1);
    assert_eq!(qp.next_rcv_psn(), RQ_PSN + 1);
    let c = qp.poll_completion().unwrap();
    assert_eq!(
        (c.queue, c.wr_id, c.status, c.byte_len),
        (WorkQueue::Recv, 1, CompletionStatus::Success, 10)
    );
    assert_eq!(&mem.region(KEY_PRIVATE).unwrap()[..10], &payload);
    // A new gap NAKs again.
    qp.handle_packet(
        Instant::ZERO,
        &packet(Opcode::SendOnly, RQ_PSN + 3),
        &mut mem,
    );
    assert_eq!(drain(&mut qp, &mut mem).len(), 1);
    assert_eq!(qp.stats().sequence_naks_sent, 2);
}

#[test]
fn acks_coalesce_and_duplicates_are_acked() {
    let (mut qp, mut mem) = responder();
    let data = [1u8; 256];
    // Three ack-requesting WRITEs before the device drains: one ACK.
    for i in 0..3 {
        let mut p = PacketRepr::new(Bth::new(Opcode::WriteOnly, QPN, RQ_PSN + i), &data[..4]);
        p.reth = Some(Reth {
            va: BASE + u64::from(i) * 4,
            rkey: KEY,
            dma_len: 4,
        });
        p.bth.ack_req = true;
        qp.handle_packet(Instant::ZERO, &p, &mut mem);
    }
    let out = drain(&mut qp, &mut mem);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].header.bth.psn, RQ_PSN + 2);
    assert_eq!(out[0].header.aeth.unwrap().msn, 3);
    assert_eq!(&mem.region(KEY).unwrap()[..12], &[1u8; 12]);
    // A duplicate (even without AckReq) is acknowledged with the latest PSN.
    let mut dup = PacketRepr::new(Bth::new(Opcode::WriteOnly, QPN, RQ_PSN), &data[..4]);
    dup.reth = Some(Reth {
        va: BASE,
        rkey: KEY,
        dma_len: 4,
    });
    qp.handle_packet(Instant::ZERO, &dup, &mut mem);
    let out = drain(&mut qp, &mut mem);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].header.bth.psn, RQ_PSN + 2);
    assert_eq!(qp.stats().duplicate_requests, 1);
}

#[test]
fn invalid_opcode_sequences_are_naked() {
    let (mut qp, mut mem) = responder();
    let before = mem.region(KEY).unwrap().to_vec();
    let data = [9u8; 256];
    // MIDDLE without FIRST.
    qp.handle_packet(
        Instant::ZERO,
        &PacketRepr::new(Bth::new(Opcode::WriteMiddle, QPN, RQ_PSN), &data),
        &mut mem,
    );
    let out = drain(&mut qp, &mut mem);
    assert_eq!(out.len(), 1);
    assert_eq!(aeth_of(&out[0]), AethSyndrome::Nak(NakCode::InvalidRequest));
    assert_eq!(qp.next_rcv_psn(), RQ_PSN);
    // FIRST with a payload shorter than the MTU.
    let mut first = PacketRepr::new(Bth::new(Opcode::WriteFirst, QPN, RQ_PSN), &data[..100]);
    first.reth = Some(Reth {
        va: BASE,
        rkey: KEY,
        dma_len: 1000,
    });
    qp.handle_packet(Instant::ZERO, &first, &mut mem);
    assert_eq!(
        aeth_of(&drain(&mut qp, &mut mem)[0]),
        AethSyndrome::Nak(NakCode::InvalidRequest)
    );
    // ONLY whose payload disagrees with the RETH length.
    let mut only = PacketRepr::new(Bth::new(Opcode::WriteOnly, QPN, RQ_PSN), &data[..10]);
    only.reth = Some(Reth {
        va: BASE,
        rkey: KEY,
        dma_len: 11,
    });
    qp.handle_packet(Instant::ZERO, &only, &mut mem);
    assert_eq!(
        aeth_of(&drain(&mut qp, &mut mem)[0]),
        AethSyndrome::Nak(NakCode::InvalidRequest)
    );
    // A READ in the middle of a WRITE message.
    let mut first = PacketRepr::new(Bth::new(Opcode::WriteFirst, QPN, RQ_PSN), &data);
    first.reth = Some(Reth {
        va: BASE,
        rkey: KEY,
        dma_len: 600,
    });
    qp.handle_packet(Instant::ZERO, &first, &mut mem);
    qp.handle_packet(Instant::ZERO, &read_request(RQ_PSN + 1, BASE, 10), &mut mem);
    let out = drain(&mut qp, &mut mem);
    assert_eq!(
        aeth_of(out.last().unwrap()),
        AethSyndrome::Nak(NakCode::InvalidRequest)
    );
    assert_eq!(qp.stats().invalid_request_naks_sent, 4);
    // Only the accepted FIRST packet wrote anything.
    assert_eq!(&mem.region(KEY).unwrap()[..256], &data[..]);
    assert_eq!(&mem.region(KEY).unwrap()[256..], &before[256..]);
}

#[test]
fn no_receive_means_rnr_nak_with_the_configured_timer() {
    let (mut qp, mut mem) = responder();
    let mut p = packet(Opcode::SendFirst, RQ_PSN);
    let data = [0u8; 256];
    p.payload = &data;
    qp.handle_packet(Instant::ZERO, &p, &mut mem);
    let out = drain(&mut qp, &mut mem);
    assert_eq!(aeth_of(&out[0]), AethSyndrome::RnrNak { timer: 3 });
    assert_eq!(out[0].header.bth.psn, RQ_PSN);
    assert_eq!(qp.next_rcv_psn(), RQ_PSN);
}

/// Random packets, mostly near the expected PSN and aimed at real keys:
/// nothing panics, the private region is never written, atomics on it are
/// never executed, and the QP's counters account for the garbage.
#[test]
fn forged_packets_never_panic_nor_touch_private_memory() {
    let opcodes = Opcode::ALL;
    for seed in 0..40u64 {
        let mut rng = Rng::new(seed);
        let (mut qp, mut mem) = responder();
        let mut requester_cfg = QpConfig::new(QPN);
        requester_cfg.responder_errors_fatal = false;
        let mut requester = Qp::new(requester_cfg);
        requester.modify_to_init().unwrap();
        requester
            .modify_to_rtr(RtrAttrs {
                dest_qpn: PEER,
                rq_psn: 0,
                ..Default::default()
            })
            .unwrap();
        requester
            .modify_to_rts(RtsAttrs {
                sq_psn: 10,
                ..Default::default()
            })
            .unwrap();
        let mut rmem = SimMemory::new();
        rmem.register(1, 0x100, 4096, Access::LOCAL_WRITE);
        requester
            .post_send(uct::hca::soft::engine::SendWr::new(
                1,
                uct::hca::soft::engine::SendOp::Read {
                    remote: uct::hca::soft::engine::RemoteBuf { va: 0, rkey: 1 },
                },
                uct::hca::soft::engine::LocalData::Sgl(vec![Sge {
                    addr: 0x100,
                    len: 3000,
                    lkey: 1,
                }]),
            ))
            .unwrap();
        let _ = drain(&mut requester, &mut rmem);
        qp.post_recv(RecvWr {
            wr_id: 1,
            sgl: vec![Sge {
                addr: BASE_PRIVATE,
                len: 64,
                lkey: KEY_PRIVATE,
            }],
        })
        .unwrap();
        let private_before = mem.region(KEY_PRIVATE).unwrap().to_vec();
        let payload: Vec<u8> = (0..600).map(|_| rng.next_u64() as u8).collect();
        for _ in 0..400 {
            let opcode = opcodes[rng.below(opcodes.len() as u64) as usize];
            let psn_base = if rng.chance(0.5) {
                qp.next_rcv_psn()
            } else {
                10
            };
            let psn = (psn_base + rng.below(5) as u32).wrapping_sub(2) & 0xff_ffff;
            let len = rng.below(payload.len() as u64 + 1) as usize;
            let mut p = PacketRepr::new(Bth::new(opcode, QPN, psn), &payload[..len]);
            p.bth.ack_req = rng.chance(0.5);
            let layout = opcode.layout();
            let key = [KEY, KEY_PRIVATE, 77][rng.below(3) as usize];
            let va = [BASE, BASE_PRIVATE, BASE + 4000, u64::MAX - 8][rng.below(4) as usize]
                .wrapping_add(rng.below(16));
            if layout.reth {
                p.reth = Some(Reth {
                    va,
                    rkey: key,
                    dma_len: rng.below(5000) as u32,
                });
            }
            if layout.atomic {
                p.atomic = Some(AtomicEth {
                    va,
                    rkey: key,
                    swap_add: rng.next_u64(),
                    compare: rng.next_u64(),
                });
            }
            if layout.ext_atomic {
                p.ext_atomic = Some(ExtAtomicEth {
                    va,
                    rkey: key,
                    size: AtomicSize::Bits64,
                    swap_add: rng.next_u64(),
                    compare: rng.next_u64(),
                    swap_add_mask: rng.next_u64(),
                    compare_mask: rng.next_u64(),
                });
            }
            if layout.aeth {
                let syndrome = match rng.below(4) {
                    0 => AethSyndrome::Ack { credits: 31 },
                    1 => AethSyndrome::RnrNak {
                        timer: rng.below(32) as u8,
                    },
                    2 => AethSyndrome::Nak(NakCode::PsnSequenceError),
                    _ => AethSyndrome::Nak(NakCode::RemoteAccessError),
                };
                p.aeth = Some(Aeth {
                    syndrome,
                    msn: rng.below(1 << 24) as u32,
                });
            }
            if layout.atomic_ack {
                p.atomic_ack = Some(AtomicAckEth {
                    orig: rng.next_u64(),
                });
            }
            if layout.imm {
                p.imm = Some(rng.next_u64() as u32);
            }
            if !layout.payload {
                p.payload = &[];
            }
            if rng.chance(0.05) {
                p.bth.dest_qp = 0x99;
            }
            let now = Instant::from_micros(rng.below(1_000_000));
            qp.handle_packet(now, &p, &mut mem);
            requester.handle_packet(now, &p, &mut rmem);
            requester.handle_timeout(now);
            let _ = drain(&mut qp, &mut mem);
            let _ = drain(&mut requester, &mut rmem);
        }
        assert_eq!(mem.region(KEY_PRIVATE).unwrap().len(), private_before.len());
        // Remote requests can reach the private region only through the
        // posted receive (64 bytes at its start).
        assert_eq!(
            &mem.region(KEY_PRIVATE).unwrap()[64..],
            &private_before[64..],
            "seed {seed}"
        );
        let s = qp.stats();
        assert_eq!(s.packets_received, 400);
        assert!(s.packets_dropped + s.duplicate_requests + s.out_of_sequence_requests > 0);
    }
}

/// Real packets with random bytes flipped (the ICRC check skipped, as if a
/// forger computed it): never a panic, never a write into memory the peer has
/// no right to.
#[test]
fn mutated_real_packets_are_harmless() {
    use uct::hca::soft::engine::{AtomicOp, LocalData, RemoteBuf, SendOp, SendWr};
    use uct::hca::soft::wire::{IcrcContext, Packet};
    let ctx = IcrcContext::new("10.0.0.1:1".parse().unwrap(), "10.0.0.2:2".parse().unwrap());
    // A requester (QPN PEER) talking to the responder under test (QPN).
    let mut requester = Qp::new(QpConfig::new(PEER));
    requester.modify_to_init().unwrap();
    requester
        .modify_to_rtr(RtrAttrs {
            dest_qpn: QPN,
            rq_psn: 0,
            path_mtu: PathMtu::Mtu256,
            ..Default::default()
        })
        .unwrap();
    requester
        .modify_to_rts(RtsAttrs {
            sq_psn: RQ_PSN,
            ..Default::default()
        })
        .unwrap();
    let mut rmem = SimMemory::new();
    rmem.register(1, 0x100, 8192, Access::LOCAL_WRITE);
    let local = |len| {
        LocalData::Sgl(vec![Sge {
            addr: 0x100,
            len,
            lkey: 1,
        }])
    };
    let remote = RemoteBuf {
        va: BASE,
        rkey: KEY,
    };
    for (i, op) in [
        SendOp::Send { imm: Some(3) },
        SendOp::Write { remote, imm: None },
        SendOp::Write {
            remote,
            imm: Some(4),
        },
        SendOp::Read { remote },
        SendOp::Atomic {
            remote,
            op: AtomicOp::FetchAdd { add: 1 },
        },
        SendOp::Atomic {
            remote,
            op: AtomicOp::MaskedCompareSwap {
                size: AtomicSize::Bits32,
                compare: 0,
                compare_mask: 0,
                swap: 1,
                swap_mask: 1,
            },
        },
    ]
    .into_iter()
    .enumerate()
    {
        let len = if matches!(op, SendOp::Atomic { .. }) {
            8
        } else {
            700
        };
        requester
            .post_send(SendWr::new(i as u64, op, local(len)))
            .unwrap();
    }
    let (mut qp, mut mem) = responder();
    for i in 0..3 {
        qp.post_recv(RecvWr {
            wr_id: i,
            sgl: vec![Sge {
                addr: BASE_PRIVATE,
                len: 1024,
                lkey: KEY_PRIVATE,
            }],
        })
        .unwrap();
    }
    let mut datagrams = Vec::new();
    for t in drain(&mut requester, &mut rmem) {
        qp.handle_packet(Instant::ZERO, &t.repr(), &mut mem);
        let mut buf = vec![0u8; t.repr().buffer_len()];
        let n = t.repr().emit(&mut buf, &ctx).unwrap();
        buf.truncate(n);
        datagrams.push(buf);
    }
    for t in drain(&mut qp, &mut mem) {
        let mut buf = vec![0u8; t.repr().buffer_len()];
        let n = t.repr().emit(&mut buf, &ctx).unwrap();
        buf.truncate(n);
        datagrams.push(buf);
    }
    assert!(datagrams.len() > 10);

    let mut rng = Rng::new(99);
    let mut parsed = 0;
    for round in 0..3000 {
        let (mut target, mut tmem) = responder();
        tmem.register(KEY_PRIVATE, BASE_PRIVATE, 4096, Access::LOCAL_WRITE);
        let private_before = tmem.region(KEY_PRIVATE).unwrap().to_vec();
        for _ in 0..8 {
            let mut d = datagrams[rng.below(datagrams.len() as u64) as usize].clone();
            for _ in 0..=rng.below(4) {
                let at = rng.below(d.len() as u64) as usize;
                d[at] ^= 1 << rng.below(8);
            }
            // Aim most of them at the QP under test and near its PSN.
            if rng.chance(0.8) && d.len() >= 12 {
                d[5..8].copy_from_slice(&QPN.to_be_bytes()[1..]);
            }
            let Ok(view) = Packet::new_checked(&d[..]) else {
                continue;
            };
            let Ok(repr) = PacketRepr::parse_unverified(&view) else {
                continue;
            };
            parsed += 1;
            target.handle_packet(Instant::from_micros(round), &repr, &mut tmem);
            target.handle_timeout(Instant::from_micros(round));
            let _ = drain(&mut target, &mut tmem);
        }
        assert_eq!(
            tmem.region(KEY_PRIVATE).unwrap(),
            &private_before[..],
            "round {round}"
        );
    }
    assert!(
        parsed > 1000,
        "the mutations must mostly still parse ({parsed})"
    );
}

#[test]
fn a_naked_request_moves_a_default_responder_to_error() {
    for bad_rkey in [true, false] {
        let (_, mut mem) = responder();
        let mut qp = Qp::new(QpConfig::new(QPN));
        qp.modify_to_init().unwrap();
        qp.modify_to_rtr(RtrAttrs {
            dest_qpn: PEER,
            rq_psn: RQ_PSN,
            ..Default::default()
        })
        .unwrap();
        qp.post_recv(RecvWr {
            wr_id: 4,
            sgl: vec![],
        })
        .unwrap();
        let before = mem.region(KEY).unwrap().to_vec();
        let data = [5u8; 8];
        let p = if bad_rkey {
            let mut p = PacketRepr::new(Bth::new(Opcode::WriteOnly, QPN, RQ_PSN), &data);
            p.reth = Some(Reth {
                va: BASE,
                rkey: 999,
                dma_len: 8,
            });
            p
        } else {
            PacketRepr::new(Bth::new(Opcode::SendMiddle, QPN, RQ_PSN), &data)
        };
        qp.handle_packet(Instant::ZERO, &p, &mut mem);
        let out = drain(&mut qp, &mut mem);
        assert_eq!(out.len(), 1, "the NAK still goes out");
        let code = if bad_rkey {
            NakCode::RemoteAccessError
        } else {
            NakCode::InvalidRequest
        };
        assert_eq!(aeth_of(&out[0]), AethSyndrome::Nak(code));
        assert_eq!(qp.state(), uct::hca::soft::engine::QpState::Error);
        let c = qp.poll_completion().unwrap();
        assert_eq!((c.wr_id, c.status), (4, CompletionStatus::WrFlushError));
        assert_eq!(mem.region(KEY).unwrap(), &before[..]);
        // Later requests are dropped.
        qp.handle_packet(Instant::ZERO, &p, &mut mem);
        assert!(drain(&mut qp, &mut mem).is_empty());
    }
}

#[test]
fn zero_length_write_and_read_look_at_no_key() {
    // A default responder: any NAK would move it to ERROR.
    let (_, mut mem) = responder();
    let mut qp = Qp::new(QpConfig::new(QPN));
    qp.modify_to_init().unwrap();
    qp.modify_to_rtr(RtrAttrs {
        dest_qpn: PEER,
        rq_psn: RQ_PSN,
        ..Default::default()
    })
    .unwrap();
    qp.post_recv(RecvWr {
        wr_id: 8,
        sgl: vec![],
    })
    .unwrap();
    let before = mem.region(KEY).unwrap().to_vec();
    // No region has key 999, and address 0 is in none: neither is looked at.
    let nowhere = Reth {
        va: 0,
        rkey: 999,
        dma_len: 0,
    };
    let mut write = PacketRepr::new(Bth::new(Opcode::WriteOnly, QPN, RQ_PSN), &[]);
    write.reth = Some(nowhere);
    write.bth.ack_req = true;
    qp.handle_packet(Instant::ZERO, &write, &mut mem);
    let out = drain(&mut qp, &mut mem);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].header.bth.opcode, Opcode::Acknowledge);
    assert!(matches!(aeth_of(&out[0]), AethSyndrome::Ack { .. }));
    assert_eq!(out[0].header.bth.psn, RQ_PSN);

    let mut read = packet(Opcode::ReadRequest, RQ_PSN + 1);
    read.reth = Some(nowhere);
    qp.handle_packet(Instant::ZERO, &read, &mut mem);
    let out = drain(&mut qp, &mut mem);
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].header.bth.opcode, out[0].header.bth.psn),
        (Opcode::ReadResponseOnly, RQ_PSN + 1)
    );
    assert!(out[0].payload.is_empty());
    assert!(matches!(aeth_of(&out[0]), AethSyndrome::Ack { .. }));

    // With immediate data it still consumes and completes a receive.
    let mut write_imm = PacketRepr::new(Bth::new(Opcode::WriteOnlyImm, QPN, RQ_PSN + 2), &[]);
    write_imm.reth = Some(nowhere);
    write_imm.imm = Some(0x1234);
    qp.handle_packet(Instant::ZERO, &write_imm, &mut mem);
    let c = qp.poll_completion().expect("the receive completes");
    assert_eq!(
        (c.wr_id, c.status, c.byte_len, c.imm),
        (8, CompletionStatus::Success, 0, Some(0x1234))
    );

    // A duplicate of the READ is answered again, still without a key.
    qp.handle_packet(Instant::ZERO, &read, &mut mem);
    let out = drain(&mut qp, &mut mem);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].header.bth.opcode, Opcode::ReadResponseOnly);

    assert_eq!(qp.state(), uct::hca::soft::engine::QpState::Rtr);
    assert_eq!(qp.next_rcv_psn(), RQ_PSN + 3);
    assert_eq!(qp.stats().access_naks_sent, 0);
    assert_eq!(mem.region(KEY).unwrap(), &before[..]);

    // One byte under the same key is refused: the exemption is for zero only.
    let mut one = PacketRepr::new(Bth::new(Opcode::WriteOnly, QPN, RQ_PSN + 3), &[1]);
    one.reth = Some(Reth {
        dma_len: 1,
        ..nowhere
    });
    qp.handle_packet(Instant::ZERO, &one, &mut mem);
    let out = drain(&mut qp, &mut mem);
    assert_eq!(
        aeth_of(&out[0]),
        AethSyndrome::Nak(NakCode::RemoteAccessError)
    );
}
