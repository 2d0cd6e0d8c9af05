//! mlx5 formats: byte images derived by hand from the mlx5 layouts
//! (rdma-core `mlx5dv.h`), round trips, ring wrap, the decoder on garbage,
//! CQ ownership and doorbell records.

mod seeded_rng;

use seeded_rng::Rng;
use uct::mlx5::*;

fn seg_at(ring: &mut [u8], idx: u16, unit: usize) -> &mut Seg {
    ring_seg_mut(ring, idx, unit).expect("valid ring")
}

#[test]
fn ctrl_seg_byte_image() {
    let ctrl = CtrlSeg {
        opcode: MLX5_OPCODE_SEND,
        opmod: 0,
        wqe_index: 0x1234,
        qpn: 0xabcdef,
        ds: 3,
        signature: 0,
        stream_channel_id: 0,
        fm_ce_se: MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_SOLICITED,
        imm: 0x1122_3344,
    };
    let mut seg = [0xeeu8; 16];
    ctrl.write(&mut seg);
    // opmod_idx_opcode = be32(opmod<<24 | idx<<8 | opcode), qpn_ds = be32(qpn<<8 | ds),
    // signature, 2 bytes stream id, fm_ce_se, imm.
    assert_eq!(
        seg,
        [
            0x00, 0x12, 0x34, 0x0a, 0xab, 0xcd, 0xef, 0x03, 0x00, 0x00, 0x00, 0x0a, 0x11, 0x22,
            0x33, 0x44
        ]
    );
    let back = CtrlSeg::read(&seg);
    assert_eq!(back, ctrl);
    assert!(back.cq_update());
    assert!(back.solicited());
    assert_eq!(back.fence_mode(), MLX5_FENCE_MODE_NONE);
    assert_eq!(back.wqebbs(), 1);
    let fenced = CtrlSeg {
        fm_ce_se: MLX5_FENCE_MODE_SMALL_AND_FENCE,
        ds: 5,
        ..ctrl
    };
    assert_eq!(fenced.fence_mode(), 0x80);
    assert!(!fenced.cq_update());
    assert_eq!(fenced.wqebbs(), 2);
}

#[test]
fn raddr_data_inline_atomic_byte_images() {
    let mut seg = [0xffu8; 16];
    RaddrSeg {
        raddr: 0x0102_0304_0506_0708,
        rkey: 0xdead_beef,
    }
    .write(&mut seg);
    assert_eq!(
        seg,
        [1, 2, 3, 4, 5, 6, 7, 8, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0]
    );
    assert_eq!(RaddrSeg::read(&seg).rkey, 0xdead_beef);

    DataSeg {
        byte_count: 0x40,
        lkey: 0x1234,
        addr: 0x7f00_0000_1000,
    }
    .write(&mut seg);
    assert_eq!(
        seg,
        [0, 0, 0, 0x40, 0, 0, 0x12, 0x34, 0, 0, 0x7f, 0, 0, 0, 0x10, 0]
    );

    InlineSeg::write_header(&mut seg, 5);
    assert_eq!(&seg[..4], &[0x80, 0, 0, 5]);
    assert!(InlineSeg::is_inline(&seg));
    assert_eq!(InlineSeg::len(&seg), 5);
    assert_eq!(InlineSeg::units(0), 1);
    assert_eq!(InlineSeg::units(12), 1);
    assert_eq!(InlineSeg::units(13), 2);
    assert_eq!(InlineSeg::units(28), 2);
    assert_eq!(InlineSeg::units(29), 3);

    AtomicSeg {
        swap_add: 0x0000_0000_0000_0005,
        compare: 0x1000_0000_0000_0001,
    }
    .write(&mut seg);
    assert_eq!(seg, [0, 0, 0, 0, 0, 0, 0, 5, 0x10, 0, 0, 0, 0, 0, 0, 1]);

    MaskedCsSeg {
        swap: 0xaabb_ccdd,
        compare: 0x1,
        swap_mask: 0xffff_0000,
        compare_mask: 0x0000_ffff,
    }
    .write32(&mut seg);
    assert_eq!(
        seg,
        [0xaa, 0xbb, 0xcc, 0xdd, 0, 0, 0, 1, 0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff]
    );
    assert_eq!(MaskedCsSeg::read32(&seg).swap_mask, 0xffff_0000);

    seg = [0xffu8; 16];
    MaskedFaSeg {
        add: 0x0102_0304,
        field_boundary: 0x8000_8000,
    }
    .write(&mut seg, AtomicSize::Bits32);
    // add | boundary | 8 reserved zero bytes
    assert_eq!(seg, [1, 2, 3, 4, 0x80, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        MaskedFaSeg::read(&seg, AtomicSize::Bits32),
        MaskedFaSeg {
            add: 0x0102_0304,
            field_boundary: 0x8000_8000
        }
    );
    assert_eq!(AtomicSize::Bits32.opmod(), 0x08);
    assert_eq!(AtomicSize::Bits64.opmod(), 0x09);
}

/// Writes ctrl + fixed segments + data entries for one WQE the way the
/// datapath would, returning its DS count.
fn post(ring: &mut [u8], idx: u16, opcode: u8, opmod: u8, fixed: &[Seg], data: &[Entry]) -> u8 {
    let mut unit = 1;
    for s in fixed {
        *seg_at(ring, idx, unit) = *s;
        unit += 1;
    }
    for e in data {
        match e {
            Entry::Ptr(d) => {
                d.write(seg_at(ring, idx, unit));
                unit += 1;
            }
            Entry::Inline(bytes) => {
                unit += write_inline(ring, idx, unit, bytes).expect("inline fits");
            }
        }
    }
    let ctrl = CtrlSeg {
        opcode,
        opmod,
        wqe_index: idx,
        qpn: 0x42,
        ds: unit as u8,
        fm_ce_se: MLX5_WQE_CTRL_CQ_UPDATE,
        imm: 0xcafe_f00d,
        ..CtrlSeg::default()
    };
    ctrl.write(seg_at(ring, idx, 0));
    unit as u8
}

enum Entry {
    Ptr(DataSeg),
    Inline(Vec<u8>),
}

fn collect(wqe: &SendWqe<'_>) -> Vec<Result<DataSeg, Vec<u8>>> {
    wqe.data()
        .map(|e| match e {
            DataEntry::Pointer(d) => Ok(d),
            DataEntry::Inline(i) => {
                let mut v = vec![0; i.len()];
                assert_eq!(i.copy_to(&mut v), i.len());
                Err(v)
            }
        })
        .collect()
}

fn raddr(raddr: u64, rkey: u32) -> Seg {
    let mut s = [0; 16];
    RaddrSeg { raddr, rkey }.write(&mut s);
    s
}

#[test]
fn every_opcode_decodes_back() {
    let d1 = DataSeg {
        byte_count: 100,
        lkey: 7,
        addr: 0x1000,
    };
    let d8 = DataSeg {
        byte_count: 8,
        lkey: 9,
        addr: 0x2000,
    };
    let d4 = DataSeg {
        byte_count: 4,
        lkey: 9,
        addr: 0x2008,
    };
    let r = raddr(0xffff_0000_1234_5678, 0x55);
    let remote = RaddrSeg {
        raddr: 0xffff_0000_1234_5678,
        rkey: 0x55,
    };
    let mut atomic = [0; 16];
    AtomicSeg {
        swap_add: 11,
        compare: 22,
    }
    .write(&mut atomic);
    let mcs = MaskedCsSeg {
        swap: 1,
        compare: 2,
        swap_mask: 3,
        compare_mask: 4,
    };
    let (mut mcs32, mut mcs64a, mut mcs64b) = ([0; 16], [0; 16], [0; 16]);
    mcs.write32(&mut mcs32);
    mcs.write64(&mut mcs64a, &mut mcs64b);
    let mfa = MaskedFaSeg {
        add: 5,
        field_boundary: 0x8000_0000,
    };
    let (mut mfa32, mut mfa64) = ([0; 16], [0; 16]);
    mfa.write(&mut mfa32, AtomicSize::Bits32);
    mfa.write(&mut mfa64, AtomicSize::Bits64);

    type Case = (u8, u8, Vec<Seg>, Vec<Entry>, SendOp, u64);
    let cases: Vec<Case> = vec![
        (MLX5_OPCODE_NOP, 0, vec![], vec![], SendOp::Nop, 0),
        (
            MLX5_OPCODE_SEND,
            0,
            vec![],
            vec![Entry::Ptr(d1)],
            SendOp::Send { imm: None },
            100,
        ),
        (
            MLX5_OPCODE_SEND_IMM,
            0,
            vec![],
            vec![
                Entry::Inline(b"hello, inline world!".to_vec()),
                Entry::Ptr(d1),
            ],
            SendOp::Send {
                imm: Some(0xcafe_f00d),
            },
            120,
        ),
        (
            MLX5_OPCODE_RDMA_WRITE,
            0,
            vec![r],
            vec![Entry::Ptr(d1), Entry::Ptr(d8)],
            SendOp::RdmaWrite { remote, imm: None },
            108,
        ),
        (
            MLX5_OPCODE_RDMA_WRITE_IMM,
            0,
            vec![r],
            vec![Entry::Inline(vec![9; 3])],
            SendOp::RdmaWrite {
                remote,
                imm: Some(0xcafe_f00d),
            },
            3,
        ),
        (
            MLX5_OPCODE_RDMA_READ,
            0,
            vec![r],
            vec![Entry::Ptr(d1)],
            SendOp::RdmaRead { remote },
            100,
        ),
        (
            MLX5_OPCODE_ATOMIC_CS,
            0,
            vec![r, atomic],
            vec![Entry::Ptr(d8)],
            SendOp::AtomicCs {
                remote,
                swap: 11,
                compare: 22,
            },
            8,
        ),
        (
            MLX5_OPCODE_ATOMIC_FA,
            0,
            vec![r, atomic],
            vec![Entry::Ptr(d8)],
            SendOp::AtomicFa { remote, add: 11 },
            8,
        ),
        (
            MLX5_OPCODE_ATOMIC_MASKED_CS,
            OPMOD_EXT_ATOMIC_32,
            vec![r, mcs32],
            vec![Entry::Ptr(d4)],
            SendOp::MaskedCs {
                remote,
                size: AtomicSize::Bits32,
                ops: mcs,
            },
            4,
        ),
        (
            MLX5_OPCODE_ATOMIC_MASKED_CS,
            OPMOD_EXT_ATOMIC_64,
            vec![r, mcs64a, mcs64b],
            vec![Entry::Ptr(d8)],
            SendOp::MaskedCs {
                remote,
                size: AtomicSize::Bits64,
                ops: mcs,
            },
            8,
        ),
        (
            MLX5_OPCODE_ATOMIC_MASKED_FA,
            OPMOD_EXT_ATOMIC_32,
            vec![r, mfa32],
            vec![Entry::Ptr(d4)],
            SendOp::MaskedFa {
                remote,
                size: AtomicSize::Bits32,
                ops: mfa,
            },
            4,
        ),
        (
            MLX5_OPCODE_ATOMIC_MASKED_FA,
            OPMOD_EXT_ATOMIC_64,
            vec![r, mfa64],
            vec![Entry::Ptr(d8)],
            SendOp::MaskedFa {
                remote,
                size: AtomicSize::Bits64,
                ops: mfa,
            },
            8,
        ),
    ];

    // Place each WQE at every index of a 4-block ring, so that the ones that
    // need more than one block also cross the end of the ring.
    for (opcode, opmod, fixed, data, op, len) in &cases {
        for idx in [0u16, 1, 2, 3, 7, 0xffff] {
            let mut ring = vec![0u8; 4 * SEND_WQE_BB];
            let ds = post(&mut ring, idx, *opcode, *opmod, fixed, data);
            let wqe = decode_send_wqe(&ring, idx).expect("decodes");
            assert_eq!(wqe.op, *op, "opcode {opcode:#x} at {idx}");
            assert_eq!(wqe.ctrl.ds, ds);
            assert_eq!(wqe.ctrl.qpn, 0x42);
            assert_eq!(wqe.data_len, *len);
            assert_eq!(wqe.data_count, data.len());
            let got = collect(&wqe);
            for (g, want) in got.iter().zip(data) {
                match (g, want) {
                    (Ok(d), Entry::Ptr(w)) => assert_eq!(d, w),
                    (Err(bytes), Entry::Inline(w)) => assert_eq!(bytes, w),
                    _ => panic!("entry kind differs for opcode {opcode:#x}"),
                }
            }
        }
    }
}

#[test]
fn inline_data_wraps_at_the_ring_end() {
    let mut ring = vec![0u8; 2 * SEND_WQE_BB];
    let payload: Vec<u8> = (0..100u8).collect();
    // WQE at the last block: ctrl in units 4..; inline starts at unit 1 of
    // block 1 (byte 80) and runs past byte 128 into the start of the ring.
    let idx = 1;
    let ds = post(
        &mut ring,
        idx,
        MLX5_OPCODE_SEND,
        0,
        &[],
        &[Entry::Inline(payload.clone())],
    );
    assert_eq!(usize::from(ds), 1 + InlineSeg::units(100));
    let wqe = decode_send_wqe(&ring, idx).unwrap();
    assert_eq!(wqe.wqebbs(), 2);
    let entries: Vec<_> = wqe.data().collect();
    assert_eq!(entries.len(), 1);
    match entries[0] {
        DataEntry::Inline(i) => {
            assert_eq!(i.head.len(), 128 - 84);
            assert_eq!(i.tail.len(), 100 - 44);
            let mut out = vec![0; 100];
            i.copy_to(&mut out);
            assert_eq!(out, payload);
        }
        DataEntry::Pointer(_) => panic!("expected inline"),
    }
    // The data really sits at the start of the ring.
    assert_eq!(&ring[..56], &payload[44..]);
}

#[test]
fn decoder_rejects_bad_wqes() {
    let mut ring = vec![0u8; 4 * SEND_WQE_BB];
    post(
        &mut ring,
        0,
        MLX5_OPCODE_SEND,
        0,
        &[],
        &[Entry::Ptr(DataSeg::default())],
    );
    assert_eq!(
        decode_send_wqe(&ring, 4),
        Err(WqeError::IndexMismatch {
            expected: 4,
            found: 0
        })
    );
    assert_eq!(decode_send_wqe(&ring[..100], 0), Err(WqeError::BadRing));
    assert_eq!(decode_send_wqe(&[], 0), Err(WqeError::BadRing));

    let mut bad = ring.clone();
    bad[7] = 0; // DS 0
    assert_eq!(decode_send_wqe(&bad, 0), Err(WqeError::BadDsCount(0)));
    bad[7] = 0x40; // over the 6-bit field
    assert_eq!(decode_send_wqe(&bad, 0), Err(WqeError::BadDsCount(0x40)));
    bad[7] = 17; // more units than the 256-byte ring holds
    assert_eq!(decode_send_wqe(&bad, 0), Err(WqeError::BadDsCount(17)));

    let mut bad = ring.clone();
    bad[3] = 0x33;
    assert_eq!(decode_send_wqe(&bad, 0), Err(WqeError::UnknownOpcode(0x33)));

    // Masked atomic with an opmod naming no width.
    let mut bad = vec![0u8; 4 * SEND_WQE_BB];
    post(
        &mut bad,
        0,
        MLX5_OPCODE_ATOMIC_MASKED_FA,
        0x0b,
        &[raddr(0, 0), [0; 16]],
        &[Entry::Ptr(DataSeg::default())],
    );
    assert_eq!(decode_send_wqe(&bad, 0), Err(WqeError::BadOpmod(0x0b)));

    // RDMA WRITE whose DS count leaves no room for the raddr segment.
    let mut bad = ring.clone();
    bad[3] = MLX5_OPCODE_RDMA_WRITE;
    bad[7] = 1;
    assert_eq!(decode_send_wqe(&bad, 0), Err(WqeError::BadDsCount(1)));

    // Inline segment claiming more bytes than the DS count covers.
    let mut bad = vec![0u8; 4 * SEND_WQE_BB];
    post(
        &mut bad,
        0,
        MLX5_OPCODE_SEND,
        0,
        &[],
        &[Entry::Inline(vec![1; 20])],
    );
    InlineSeg::write_header(seg_at(&mut bad, 0, 1), 200);
    assert_eq!(decode_send_wqe(&bad, 0), Err(WqeError::Truncated));
    InlineSeg::write_header(seg_at(&mut bad, 0, 1), 0x7fff_ffff);
    assert_eq!(decode_send_wqe(&bad, 0), Err(WqeError::Truncated));
}

#[test]
fn decoder_survives_random_rings() {
    let mut rng = Rng::new(0x5eed_0001);
    let mut ok = 0;
    for round in 0..20_000 {
        let blocks = 1usize << rng.below(4);
        let mut ring: Vec<u8> = (0..blocks * SEND_WQE_BB)
            .map(|_| rng.next() as u8)
            .collect();
        let idx = rng.next() as u16;
        // Make the header plausible half of the time so deeper paths run.
        if round % 2 == 0 {
            let seg = seg_at(&mut ring, idx, 0);
            seg[1..3].copy_from_slice(&idx.to_be_bytes());
            seg[7] &= 0x0f;
            let ops = [
                MLX5_OPCODE_NOP,
                MLX5_OPCODE_SEND,
                MLX5_OPCODE_SEND_IMM,
                MLX5_OPCODE_RDMA_WRITE,
                MLX5_OPCODE_RDMA_READ,
                MLX5_OPCODE_ATOMIC_CS,
                MLX5_OPCODE_ATOMIC_MASKED_CS,
                MLX5_OPCODE_ATOMIC_MASKED_FA,
            ];
            seg[3] = ops[rng.below(ops.len())];
            seg[0] = 8 + (rng.below(2) as u8);
        }
        if let Ok(wqe) = decode_ud_send_wqe(&ring, idx) {
            assert!(matches!(wqe.op, SendOp::Send { .. } | SendOp::Nop));
            assert_eq!(wqe.datagram.is_some(), wqe.op != SendOp::Nop);
            assert_eq!(wqe.data().count(), wqe.data_count);
        }
        if let Ok(wqe) = decode_send_wqe(&ring, idx) {
            ok += 1;
            // The validated data list is exactly what iteration yields.
            let entries: Vec<_> = wqe.data().collect();
            assert_eq!(entries.len(), wqe.data_count);
            assert_eq!(entries.iter().map(|e| e.len()).sum::<u64>(), wqe.data_len);
            assert!(usize::from(wqe.ctrl.ds) * SEG_LEN <= ring.len());
            assert!(wqe.ctrl.ds >= 1 && wqe.ctrl.ds <= MAX_DS);
        }
    }
    assert!(
        ok > 100,
        "too few random WQEs decoded ({ok}) to exercise the data path"
    );
}

#[test]
fn srq_recv_wqe_decodes_until_the_terminator() {
    let stride = 64;
    let mut ring = vec![0u8; 4 * stride];
    let idx = 6u16; // wraps to slot 2
    let base = 2 * stride;
    let mut s = [0u8; 16];
    SrqNextSeg {
        next_wqe_index: 0x0307,
        signature: 0,
    }
    .write(&mut s);
    assert_eq!(&s[..4], &[0, 0, 3, 7]);
    ring[base..base + 16].copy_from_slice(&s);
    let a = DataSeg {
        byte_count: 4096,
        lkey: 1,
        addr: 0x10000,
    };
    a.write(&mut ring[base + 16..base + 32]);
    DataSeg {
        byte_count: 0,
        lkey: MLX5_INVALID_LKEY,
        addr: 0,
    }
    .write(&mut ring[base + 32..base + 48]);
    // Garbage after the terminator must be ignored.
    ring[base + 48..base + 64].fill(0xab);

    let wqe = decode_recv_wqe(&ring, idx, stride, true).unwrap();
    assert_eq!(wqe.next.unwrap().next_wqe_index, 0x0307);
    assert_eq!(wqe.data_count, 1);
    assert_eq!(wqe.data_len, 4096);
    assert_eq!(wqe.data().collect::<Vec<_>>(), vec![a]);

    // Without SRQ header, the same slot reads the next-seg as a data entry.
    let plain = decode_recv_wqe(&ring, idx, stride, false).unwrap();
    assert!(plain.next.is_none());
    assert_eq!(plain.data_count, 2);

    assert_eq!(decode_recv_wqe(&ring, 0, 48, false), Err(WqeError::BadRing));
    assert_eq!(decode_recv_wqe(&ring, 0, 16, true), Err(WqeError::BadRing));
    assert_eq!(
        decode_recv_wqe(&ring[..8], 0, 16, false),
        Err(WqeError::BadRing)
    );
}

#[test]
fn cqe_byte_images_and_round_trips() {
    let req = Cqe64 {
        opcode: MLX5_CQE_REQ,
        owner: true,
        wqe_counter: 0x0102,
        qpn: 0x000abc,
        wqe_opcode: MLX5_OPCODE_RDMA_READ,
        byte_cnt: 0x200,
        ..Cqe64::default()
    };
    let b = req.encode();
    assert_eq!(&b[44..48], &[0, 0, 2, 0]);
    assert_eq!(
        &b[56..64],
        &[0x10, 0x00, 0x0a, 0xbc, 0x01, 0x02, 0x00, 0x01]
    );
    assert_eq!(Cqe64::decode(&b), req);

    let recv = Cqe64 {
        opcode: MLX5_CQE_RESP_SEND_IMM,
        owner: false,
        solicited: true,
        wqe_counter: 9,
        qpn: 0x77,
        byte_cnt: 33,
        imm_inval_pkey: 0xdead_beef,
        remote_qpn: 0x123456,
        srqn: 5,
        ..Cqe64::default()
    };
    let b = recv.encode();
    assert_eq!(b[63], 0x32); // opcode 3 << 4 | SE
    assert_eq!(&b[36..40], &[0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(&b[24..28], &[0, 0x12, 0x34, 0x56]);
    assert_eq!(&b[32..36], &[0, 0, 0, 5]);
    assert_eq!(Cqe64::decode(&b), recv);

    // A UD receive: the GRH is in the buffer (bit 28 of flags_rqpn), the
    // RoCE packet type in bits 27..24 (IPv6 L3 header, UDP: 0x9), the
    // remote QPN is the datagram's source.
    let ud = Cqe64 {
        grh_in_data: true,
        roce_packet_type: MLX5_CQE_ROCE_L3_IPV6 | MLX5_CQE_ROCE_UDP,
        ..recv
    };
    let b = ud.encode();
    assert_eq!(&b[24..28], &[0x19, 0x12, 0x34, 0x56]);
    assert_eq!(Cqe64::decode(&b), ud);

    let err = Cqe64 {
        opcode: MLX5_CQE_REQ_ERR,
        owner: true,
        wqe_counter: 0xfffe,
        qpn: 0x42,
        wqe_opcode: MLX5_OPCODE_SEND,
        syndrome: MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
        vendor_syndrome: 0x81,
        ..Cqe64::default()
    };
    let b = err.encode();
    assert_eq!(b[54], 0x81);
    assert_eq!(b[55], 0x15);
    assert_eq!(b[63], 0xd1);
    assert_eq!(&b[60..62], &[0xff, 0xfe]);
    assert_eq!(Cqe64::decode(&b), err);
}

#[test]
fn syndrome_values() {
    let table = [
        (MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, 0x01),
        (MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, 0x02),
        (MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, 0x04),
        (MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 0x05),
        (MLX5_CQE_SYNDROME_MW_BIND_ERR, 0x06),
        (MLX5_CQE_SYNDROME_BAD_RESP_ERR, 0x10),
        (MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR, 0x11),
        (MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, 0x12),
        (MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, 0x13),
        (MLX5_CQE_SYNDROME_REMOTE_OP_ERR, 0x14),
        (MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, 0x15),
        (MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR, 0x16),
        (MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR, 0x22),
    ];
    for (got, want) in table {
        assert_eq!(got, want);
    }
}

#[test]
fn cq_ownership_flips_each_pass() {
    let cq_len = 4u32;
    let mut cq = vec![[0u8; CQE_LEN]; cq_len as usize];
    for e in &mut cq {
        e[CQE_OP_OWN_OFFSET] = CQE_INIT_OP_OWN;
    }
    let mut produced = 0u32;
    let mut consumed = 0u32;
    let mut seen = Vec::new();
    for round in 0..5 {
        // Nothing new before the producer writes.
        let slot = (consumed % cq_len) as usize;
        assert!(
            !cqe_is_sw_owned(cq[slot][CQE_OP_OWN_OFFSET], consumed, cq_len),
            "round {round}: stale entry looked new"
        );
        for _ in 0..3 {
            let cqe = Cqe64 {
                opcode: MLX5_CQE_REQ,
                owner: cqe_owner_for(produced, cq_len),
                wqe_counter: produced as u16,
                ..Cqe64::default()
            };
            cq[(produced % cq_len) as usize] = cqe.encode();
            produced += 1;
        }
        while cqe_is_sw_owned(
            cq[(consumed % cq_len) as usize][CQE_OP_OWN_OFFSET],
            consumed,
            cq_len,
        ) {
            seen.push(Cqe64::decode(&cq[(consumed % cq_len) as usize]).wqe_counter);
            consumed += 1;
        }
        assert_eq!(consumed, produced);
    }
    assert_eq!(seen, (0..15).collect::<Vec<u16>>());
    assert!(!cqe_owner_for(3, 4));
    assert!(cqe_owner_for(4, 4));
    assert!(!cqe_owner_for(8, 4));
}

#[test]
fn doorbell_records_and_writes() {
    let rec = QpDoorbellRecord {
        recv_counter: 0x0102,
        send_counter: 0xfffe,
    };
    let b = rec.encode();
    assert_eq!(b, [0, 0, 1, 2, 0, 0, 0xff, 0xfe]);
    assert_eq!(QpDoorbellRecord::decode(&b), rec);
    assert_eq!(dbrec_word(0x0102).to_ne_bytes(), [0, 0, 1, 2]);

    let mut seg = [0u8; 16];
    CtrlSeg {
        opcode: MLX5_OPCODE_RDMA_WRITE,
        wqe_index: 0x0a0b,
        qpn: 0x123456,
        ds: 3,
        ..CtrlSeg::default()
    }
    .write(&mut seg);
    let db = send_doorbell(&seg);
    assert_eq!(db, [0x00, 0x0a, 0x0b, 0x08, 0x12, 0x34, 0x56, 0x03]);
    assert_eq!(
        SendDoorbell::decode(&db),
        SendDoorbell {
            opmod: 0,
            wqe_index: 0x0a0b,
            opcode: MLX5_OPCODE_RDMA_WRITE,
            qpn: 0x123456,
            ds: 3
        }
    );

    let cq = CqDoorbellRecord {
        ci: 0x12_3456,
        arm_sn: 2,
        arm_cmd: MLX5_CQ_DB_REQ_NOT_SOL,
        arm_ci: 0x12_3456,
    };
    assert_eq!(cq.arm_word(), 0x2112_3456);
    assert_eq!(cq.encode(), [0, 0x12, 0x34, 0x56, 0x21, 0x12, 0x34, 0x56]);
    assert_eq!(CqDoorbellRecord::decode(&cq.encode()), cq);
    assert_eq!(
        cq.arm_doorbell(0x77),
        [0x21, 0x12, 0x34, 0x56, 0, 0, 0, 0x77]
    );
}

#[test]
fn psn_wraps_at_2_pow_24() {
    let mut psn = PSN_MASK - 2;
    let mut order = Vec::new();
    for _ in 0..6 {
        order.push(psn);
        psn = psn_add(psn, 1);
    }
    assert_eq!(order, vec![0xff_fffd, 0xff_fffe, 0xff_ffff, 0, 1, 2]);
    for w in order.windows(2) {
        assert!(psn_lt(w[0], w[1]));
        assert_eq!(psn_distance(w[0], w[1]), 1);
    }
    assert!(psn_lt(0xff_fffd, 2));
    assert_eq!(psn_distance(2, 0xff_fffd), -5);
}

#[test]
fn builder_writes_what_the_layout_says() {
    let remote = RaddrSeg {
        raddr: 0x1122_3344_5566_7788,
        rkey: 0x99,
    };
    let d = DataSeg {
        byte_count: 8,
        lkey: 3,
        addr: 0x4000,
    };
    let mcs = MaskedCsSeg {
        swap: 1,
        compare: 2,
        swap_mask: 3,
        compare_mask: 4,
    };
    let mfa = MaskedFaSeg {
        add: 5,
        field_boundary: 6,
    };
    let seg = |f: &dyn Fn(&mut Seg)| {
        let mut s = [0u8; 16];
        f(&mut s);
        s
    };
    let r = seg(&|s| remote.write(s));
    let at = AtomicSeg {
        swap_add: 7,
        compare: 8,
    };
    let (mut cs64a, mut cs64b) = ([0u8; 16], [0u8; 16]);
    mcs.write64(&mut cs64a, &mut cs64b);
    let header = [0xa5u8; 8];
    let body: Vec<u8> = (0..50u8).collect();
    let mut joined = header.to_vec();
    joined.extend_from_slice(&body);

    type Build = Box<dyn Fn(&mut WqeBuilder<'_>)>;
    type Case = (u8, u8, Build, Vec<Seg>, Vec<Entry>);
    let cases: Vec<Case> = vec![
        (
            MLX5_OPCODE_RDMA_WRITE,
            0,
            Box::new(move |b| {
                b.raddr(remote).data(d);
            }),
            vec![r],
            vec![Entry::Ptr(d)],
        ),
        (
            MLX5_OPCODE_SEND,
            0,
            Box::new(move |b| {
                b.inline(&[&header, &body]);
            }),
            vec![],
            vec![Entry::Inline(joined.clone())],
        ),
        (
            MLX5_OPCODE_ATOMIC_CS,
            0,
            Box::new(move |b| {
                b.raddr(remote).atomic(at).data(d);
            }),
            vec![r, seg(&|s| at.write(s))],
            vec![Entry::Ptr(d)],
        ),
        (
            MLX5_OPCODE_ATOMIC_MASKED_CS,
            OPMOD_EXT_ATOMIC_64,
            Box::new(move |b| {
                b.raddr(remote).masked_cs(AtomicSize::Bits64, mcs).data(d);
            }),
            vec![r, cs64a, cs64b],
            vec![Entry::Ptr(d)],
        ),
        (
            MLX5_OPCODE_ATOMIC_MASKED_CS,
            OPMOD_EXT_ATOMIC_32,
            Box::new(move |b| {
                b.raddr(remote).masked_cs(AtomicSize::Bits32, mcs).data(d);
            }),
            vec![r, seg(&|s| mcs.write32(s))],
            vec![Entry::Ptr(d)],
        ),
        (
            MLX5_OPCODE_ATOMIC_MASKED_FA,
            OPMOD_EXT_ATOMIC_32,
            Box::new(move |b| {
                b.raddr(remote).masked_fa(AtomicSize::Bits32, mfa).data(d);
            }),
            vec![r, seg(&|s| mfa.write(s, AtomicSize::Bits32))],
            vec![Entry::Ptr(d)],
        ),
    ];
    for (opcode, opmod, build, fixed, data) in &cases {
        for idx in [0u16, 3, 0xffff] {
            let mut by_hand = vec![0u8; 4 * SEND_WQE_BB];
            let ds = post(&mut by_hand, idx, *opcode, *opmod, fixed, data);
            let mut built = vec![0u8; 4 * SEND_WQE_BB];
            let mut b = WqeBuilder::new(&mut built, idx).unwrap();
            build(&mut b);
            let ctrl = b
                .finish(CtrlSeg {
                    opcode: *opcode,
                    opmod: *opmod,
                    qpn: 0x42,
                    fm_ce_se: MLX5_WQE_CTRL_CQ_UPDATE,
                    imm: 0xcafe_f00d,
                    ..CtrlSeg::default()
                })
                .unwrap();
            assert_eq!(ctrl.ds, ds);
            assert_eq!(ctrl.wqe_index, idx);
            assert_eq!(built, by_hand, "opcode {opcode:#x} at {idx}");
        }
    }
}

#[test]
fn builder_refuses_oversized_wqes() {
    // 63 units is the most the DS field holds.
    let mut ring = vec![0u8; 64 * SEND_WQE_BB];
    let mut b = WqeBuilder::new(&mut ring, 0).unwrap();
    for _ in 0..62 {
        b.data(DataSeg::default());
    }
    assert_eq!(b.ds(), 63);
    assert_eq!(b.finish(CtrlSeg::default()).map(|c| c.ds), Ok(63));

    let mut b = WqeBuilder::new(&mut ring, 0).unwrap();
    for _ in 0..63 {
        b.data(DataSeg::default());
    }
    assert_eq!(b.finish(CtrlSeg::default()), Err(WqeError::TooLarge));

    // A WQE may not be longer than its ring.
    let mut small = vec![0u8; SEND_WQE_BB];
    let mut b = WqeBuilder::new(&mut small, 0).unwrap();
    b.inline(&[&[0u8; 60]]);
    assert_eq!(b.finish(CtrlSeg::default()), Err(WqeError::TooLarge));
    assert_eq!(small, vec![0u8; SEND_WQE_BB], "nothing written");

    assert!(WqeBuilder::new(&mut [0u8; 96], 0).is_none());
}

/// The posting fast path (`write_inline_wqe`) writes exactly the bytes of the
/// general builder for every ring position, with and without a remote
/// address, with an empty and a 9-byte head, for every data length up to the
/// DS limit; where it declines (the WQE wraps the ring or exceeds the DS
/// field) it leaves the ring untouched.
#[test]
fn inline_wqe_fast_path_matches_builder() {
    fn check<const H: usize>(
        rng: &mut Rng,
        head: &[u8; H],
        taken: &mut usize,
        declined: &mut usize,
    ) {
        for bbs in [4usize, 8] {
            let ring_len = bbs * SEND_WQE_BB;
            for index in 0..(2 * bbs as u16) {
                for with_raddr in [false, true] {
                    for len in 0..=(usize::from(MAX_DS) * SEG_LEN) {
                        let garbage: Vec<u8> = (0..ring_len).map(|_| rng.next() as u8).collect();
                        let data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                        let raddr = with_raddr.then(|| RaddrSeg {
                            raddr: rng.next(),
                            rkey: rng.next() as u32,
                        });
                        let ctrl = CtrlSeg {
                            opcode: MLX5_OPCODE_RDMA_WRITE,
                            opmod: 0,
                            qpn: rng.next() as u32 & 0x00ff_ffff,
                            fm_ce_se: MLX5_WQE_CTRL_CQ_UPDATE,
                            imm: rng.next() as u32,
                            ..CtrlSeg::default()
                        };
                        let mut fast = garbage.clone();
                        let fast_ctrl = write_inline_wqe(
                            &mut fast,
                            index,
                            ctrl,
                            InlineSegs {
                                raddr,
                                head,
                                data: &data,
                            },
                        );
                        let ds = inline_wqe_ds(with_raddr, H + len);
                        let start = usize::from(index) * SEND_WQE_BB % ring_len;
                        let fits = ds <= usize::from(MAX_DS) && start + ds * SEG_LEN <= ring_len;
                        let Some(fast_ctrl) = fast_ctrl else {
                            assert!(!fits, "declined a WQE that fits: index {index} len {len}");
                            assert_eq!(fast, garbage, "a declined WQE changed the ring");
                            *declined += 1;
                            continue;
                        };
                        assert!(
                            fits,
                            "wrote a WQE that does not fit: index {index} len {len}"
                        );
                        let mut general = garbage.clone();
                        let mut builder = WqeBuilder::new(&mut general, index).unwrap();
                        if let Some(raddr) = raddr {
                            builder.raddr(raddr);
                        }
                        builder.inline(&[head, &data]);
                        let general_ctrl = builder.finish(ctrl).unwrap();
                        assert_eq!(fast_ctrl, general_ctrl);
                        assert_eq!(usize::from(fast_ctrl.ds), ds);
                        assert_eq!(
                            fast, general,
                            "bytes differ: index {index} len {len} raddr {with_raddr} head {H}"
                        );
                        *taken += 1;
                    }
                }
            }
        }
    }
    let mut rng = Rng::new(0x5eed_f00d);
    let (mut taken, mut declined) = (0, 0);
    check(&mut rng, &[], &mut taken, &mut declined);
    check(
        &mut rng,
        &[7, 1, 2, 3, 4, 5, 6, 7, 8],
        &mut taken,
        &mut declined,
    );
    // Both outcomes were exercised.
    assert!(taken > 1000, "fast path taken {taken} times");
    assert!(declined > 1000, "fast path declined {declined} times");
}

/// `write_inline_parts` (contiguous fast path when the segment does not
/// cross the ring's end) writes the same bytes as its general, wrapping form
/// for random pieces at every unit of a small ring.
#[test]
fn write_inline_parts_fast_path_matches_wrapping_form() {
    let mut rng = Rng::new(0x1a2b_3c4d);
    let ring_len = 4 * SEND_WQE_BB;
    for _ in 0..3000 {
        let garbage: Vec<u8> = (0..ring_len).map(|_| rng.next() as u8).collect();
        let pieces: Vec<Vec<u8>> = (0..rng.below(4))
            .map(|_| (0..rng.below(70)).map(|_| rng.next() as u8).collect())
            .collect();
        let parts: Vec<&[u8]> = pieces.iter().map(|p| p.as_slice()).collect();
        let index = rng.below(8) as u16;
        let unit = rng.below(4);
        let (mut fast, mut general) = (garbage.clone(), garbage);
        let fast_units = write_inline_parts(&mut fast, index, unit, &parts);
        let general_units =
            write_inline_parts_wrapping(&mut general, seg_offset(ring_len, index, unit), &parts);
        assert_eq!(fast_units, general_units);
        assert!(fast_units.is_some());
        assert_eq!(
            fast,
            general,
            "index {index} unit {unit} parts {:?}",
            parts.iter().map(|p| p.len()).collect::<Vec<_>>()
        );
    }
}

/// `mlx5_wqe_datagram_seg` (rdma-core `mlx5dv.h`): offsets of every field
/// of its address vector, written by hand.
#[test]
fn datagram_seg_layout_and_byte_image() {
    assert_eq!(DatagramSeg::LEN, 48);
    assert_eq!(DatagramSeg::UNITS, 3);
    let mut rgid = [0u8; 16];
    for (i, b) in rgid.iter_mut().enumerate() {
        *b = 0xc0 + i as u8;
    }
    let seg = DatagramSeg {
        qkey: 0x1ee7_a330,
        dqp_dct: MLX5_EXTENDED_UD_AV | 0x00ab_cdef,
        stat_rate_sl: 0x35,
        fl_mlid: 0x80,
        rlid: 0xc001,
        rmac: [1, 2, 3, 4, 5, 6],
        tclass: 0x28,
        hop_limit: 64,
        grh_gid_fl: MLX5_AV_GRH | (3 << 20) | 0x0_1234,
        rgid,
    };
    let mut b = [0xeeu8; 48];
    seg.write(&mut b);
    let mut want = [0u8; 48];
    want[0..4].copy_from_slice(&[0x1e, 0xe7, 0xa3, 0x30]); // key.qkey.qkey
                                                           // 4..8: key.qkey.reserved
    want[8..12].copy_from_slice(&[0x80, 0xab, 0xcd, 0xef]); // dqp_dct
    want[12] = 0x35; // stat_rate_sl
    want[13] = 0x80; // fl_mlid
    want[14..16].copy_from_slice(&[0xc0, 0x01]); // rlid
                                                 // 16..20: reserved0
    want[20..26].copy_from_slice(&[1, 2, 3, 4, 5, 6]); // rmac
    want[26] = 0x28; // tclass
    want[27] = 64; // hop_limit
    want[28..32].copy_from_slice(&[0x40, 0x30, 0x12, 0x34]); // grh_gid_fl
    want[32..48].copy_from_slice(&rgid); // rgid
    assert_eq!(b, want);
    assert_eq!(DatagramSeg::read(&b), seg);
    assert_eq!(seg.dest_qpn(), 0x00ab_cdef);
    assert!(seg.has_grh());
    assert_eq!(seg.flow_label(), 0x0_1234);
}

#[test]
fn ud_send_wqes_decode_back() {
    let av = DatagramSeg {
        qkey: 7,
        dqp_dct: MLX5_EXTENDED_UD_AV | 0x42,
        hop_limit: 64,
        grh_gid_fl: MLX5_AV_GRH,
        rgid: [9; 16],
        ..DatagramSeg::default()
    };
    // At the last block of a two-block ring, so the data wraps.
    let mut ring = vec![0u8; 2 * SEND_WQE_BB];
    for (idx, opcode, imm) in [
        (1u16, MLX5_OPCODE_SEND, None),
        (3u16, MLX5_OPCODE_SEND_IMM, Some(0xabcd_0123)),
    ] {
        ring.fill(0);
        let mut b = WqeBuilder::new(&mut ring, idx).unwrap();
        b.datagram(av)
            .inline(&[b"hello ", b"datagram"])
            .data(DataSeg {
                byte_count: 100,
                lkey: 5,
                addr: 0x1000,
            });
        let ds = b.ds() as u8;
        b.finish(CtrlSeg {
            opcode,
            wqe_index: idx,
            qpn: 0x99,
            fm_ce_se: MLX5_WQE_CTRL_CQ_UPDATE,
            imm: imm.unwrap_or(0),
            ..CtrlSeg::default()
        })
        .unwrap();
        let wqe = decode_ud_send_wqe(&ring, idx).unwrap();
        assert_eq!(wqe.ctrl.ds, ds);
        assert_eq!(wqe.op, SendOp::Send { imm });
        assert_eq!(wqe.datagram, Some(av));
        assert_eq!(wqe.data_count, 2);
        assert_eq!(wqe.data_len, 14 + 100);
        // The same bytes read as an RC WQE take the address for data.
        let rc = decode_send_wqe(&ring, idx);
        assert!(rc.map_or(true, |w| w.datagram.is_none()));
    }

    // Only SEND and NOP run on a UD QP; a SEND needs room for the address.
    for opcode in [
        MLX5_OPCODE_RDMA_WRITE,
        MLX5_OPCODE_RDMA_READ,
        MLX5_OPCODE_ATOMIC_FA,
    ] {
        ring.fill(0);
        CtrlSeg {
            opcode,
            wqe_index: 0,
            ds: 5,
            ..CtrlSeg::default()
        }
        .write(seg_at(&mut ring, 0, 0));
        assert_eq!(
            decode_ud_send_wqe(&ring, 0).map(|w| w.op),
            Err(WqeError::NotForUd(opcode))
        );
    }
    ring.fill(0);
    CtrlSeg {
        opcode: MLX5_OPCODE_SEND,
        wqe_index: 0,
        ds: 3,
        ..CtrlSeg::default()
    }
    .write(seg_at(&mut ring, 0, 0));
    assert_eq!(
        decode_ud_send_wqe(&ring, 0).map(|w| w.op),
        Err(WqeError::BadDsCount(3))
    );
}
