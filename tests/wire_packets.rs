//! RoCEv2 wire format: every opcode round-trips, byte images derived by
//! hand from IBTA vol. 1 ch. 9, the ICRC against an independent bitwise
//! CRC-32 over a hand-built pseudo header, and rejection of bad input.

use std::net::{Ipv4Addr, SocketAddrV4};

use uct::hca::soft::wire::*;

fn ctx() -> IcrcContext {
    IcrcContext::new(
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 40000),
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 4791),
    )
}

/// A packet of `opcode` with plausible values in every header it carries.
fn sample(opcode: Opcode, payload: &[u8]) -> PacketRepr<'_> {
    let layout = opcode.layout();
    let mut bth = Bth::new(opcode, 0x00ab_cdef, 0x00ff_fffe);
    bth.solicited = opcode.is_last() && opcode.is_request();
    bth.ack_req = opcode.is_last();
    let mut p = PacketRepr::new(bth, if layout.payload { payload } else { &[] });
    if layout.deth {
        p.deth = Some(Deth {
            qkey: 0x1ee7_a330,
            src_qp: 0x00fe_dcba,
        });
    }
    if layout.reth {
        p.reth = Some(Reth {
            va: 0x7fff_0000_1000,
            rkey: 0x1234_5678,
            dma_len: 8192,
        });
    }
    if layout.atomic {
        p.atomic = Some(AtomicEth {
            va: 0x7fff_0000_2000,
            rkey: 0x0bad_cafe,
            swap_add: 0x0102_0304_0506_0708,
            compare: 0x1112_1314_1516_1718,
        });
    }
    if layout.ext_atomic {
        p.ext_atomic = Some(ExtAtomicEth {
            va: 0x7fff_0000_3000,
            rkey: 7,
            size: AtomicSize::Bits32,
            swap_add: 0xdead_beef,
            compare: 1,
            swap_add_mask: 0xffff_0000,
            compare_mask: 0x0000_ffff,
        });
    }
    if layout.aeth {
        p.aeth = Some(Aeth {
            syndrome: AethSyndrome::Ack { credits: 3 },
            msn: 0x0012_3456,
        });
    }
    if layout.atomic_ack {
        p.atomic_ack = Some(AtomicAckEth {
            orig: 0xfeed_face_0000_0001,
        });
    }
    if layout.imm {
        p.imm = Some(0xa1b2_c3d4);
    }
    p
}

#[test]
fn every_opcode_round_trips_with_every_pad() {
    let data: Vec<u8> = (0..64u8).collect();
    for opcode in Opcode::ALL {
        for len in 0..=9 {
            let repr = sample(opcode, &data[..len]);
            let mut buf = vec![0u8; repr.buffer_len()];
            let n = repr.emit(&mut buf, &ctx()).expect("emit");
            assert_eq!(n, buf.len());
            assert_eq!(n % 4, 0, "RoCE packets are whole words");
            let parsed = PacketRepr::parse(&buf, &ctx()).expect("parse");
            assert_eq!(parsed, repr, "{opcode:?} len {len}");

            let view = Packet::new_checked(&buf[..]).unwrap();
            assert_eq!(view.opcode(), opcode);
            assert_eq!(view.psn(), 0x00ff_fffe);
            assert_eq!(view.dest_qp(), 0x00ab_cdef);
            assert_eq!(view.tver(), 0);
            assert_eq!(view.pkey(), DEFAULT_PKEY);
            let carried = if opcode.layout().payload { len } else { 0 };
            assert_eq!(usize::from(view.pad_count()), (4 - carried % 4) % 4);
            assert_eq!(view.payload(), &data[..carried]);
            assert_eq!(view.header_len(), BTH_LEN + opcode.layout().ext_len());
            assert_eq!(view.ext_headers().len(), opcode.layout().ext_len());
        }
    }
}

#[test]
fn header_lengths_are_the_ibta_ones() {
    assert_eq!(BTH_LEN, 12);
    assert_eq!(Reth::LEN, 16);
    assert_eq!(Aeth::LEN, 4);
    assert_eq!(AtomicEth::LEN, 28);
    assert_eq!(AtomicAckEth::LEN, 8);
    assert_eq!(IMM_LEN, 4);
    assert_eq!(ICRC_LEN, 4);
    // Spot checks of the opcode table against IBTA's header lists.
    assert_eq!(Opcode::WriteOnlyImm.layout().ext_len(), 16 + 4);
    assert_eq!(Opcode::AtomicAcknowledge.layout().ext_len(), 4 + 8);
    assert_eq!(Opcode::ReadResponseMiddle.layout().ext_len(), 0);
    assert_eq!(Opcode::ReadResponseLast.layout().ext_len(), 4);
    assert_eq!(Opcode::FetchAdd.layout().ext_len(), 28);
    assert_eq!(Opcode::SendLastImm.layout().ext_len(), 4);
    assert_eq!(Opcode::from_u8(0x15), Err(WireError::UnknownOpcode(0x15)));
    assert_eq!(Opcode::from_u8(0x24), Err(WireError::UnknownOpcode(0x24)));
    assert_eq!(Deth::LEN, 8);
    assert_eq!(Opcode::UdSendOnly.layout().ext_len(), 8);
    assert_eq!(Opcode::UdSendOnlyImm.layout().ext_len(), 8 + 4);
    // UD has no SEND First/Middle/Last, no RDMA and no atomics.
    for code in [0x60, 0x61, 0x62, 0x63, 0x66, 0x6a, 0x74] {
        assert_eq!(Opcode::from_u8(code), Err(WireError::UnknownOpcode(code)));
    }
    for op in Opcode::ALL {
        assert_eq!(Opcode::from_u8(op.as_u8()), Ok(op));
        let rc = op.as_u8() <= 0x14;
        // IBTA's transport prefix 011 is UD.
        let ud = op.as_u8() >> 5 == 0b011;
        let vendor = op.as_u8() >> 5 == 0b110;
        assert_eq!(
            u8::from(rc) + u8::from(ud) + u8::from(vendor),
            1,
            "{op:?} must be RC, UD or vendor-specific"
        );
        assert_eq!(ud, op.is_ud(), "{op:?}");
        if ud {
            assert!(op.is_first() && op.is_last() && op.is_request() && !op.is_send());
        }
    }
}

#[test]
fn bth_and_reth_byte_image() {
    let payload = [0xaa, 0xbb, 0xcc];
    let mut bth = Bth::new(Opcode::WriteOnlyImm, 0x12_3456, 0xab_cdef);
    bth.solicited = true;
    bth.ack_req = true;
    bth.becn = true;
    let mut repr = PacketRepr::new(bth, &payload);
    repr.reth = Some(Reth {
        va: 0x0102_0304_0506_0708,
        rkey: 0x1122_3344,
        dma_len: 3,
    });
    repr.imm = Some(0xdead_beef);
    let mut buf = [0u8; 64];
    let n = repr.emit(&mut buf, &ctx()).unwrap();
    assert_eq!(n, 12 + 16 + 4 + 3 + 1 + 4);
    #[rustfmt::skip]
    let expected_headers = [
        0x0b,             // opcode RDMA WRITE Only with Immediate
        0x90,             // SE=1, M=0, PadCnt=1, TVer=0
        0xff, 0xff,       // P_Key
        0x40,             // FECN=0, BECN=1, reserved
        0x12, 0x34, 0x56, // DestQP
        0x80,             // AckReq, reserved
        0xab, 0xcd, 0xef, // PSN
        1, 2, 3, 4, 5, 6, 7, 8, // RETH VA
        0x11, 0x22, 0x33, 0x44, // R_Key
        0, 0, 0, 3,             // DMA length
        0xde, 0xad, 0xbe, 0xef, // ImmDt
        0xaa, 0xbb, 0xcc, 0x00, // payload + 1 pad byte
    ];
    assert_eq!(&buf[..n - 4], &expected_headers[..]);
}

#[test]
fn aeth_syndrome_bytes() {
    let cases = [
        (AethSyndrome::Ack { credits: 0 }, 0x00),
        (
            AethSyndrome::Ack {
                credits: Aeth::CREDITS_INVALID,
            },
            0x1f,
        ),
        (AethSyndrome::RnrNak { timer: 14 }, 0x2e),
        (AethSyndrome::Nak(NakCode::PsnSequenceError), 0x60),
        (AethSyndrome::Nak(NakCode::InvalidRequest), 0x61),
        (AethSyndrome::Nak(NakCode::RemoteAccessError), 0x62),
        (AethSyndrome::Nak(NakCode::RemoteOperationalError), 0x63),
        (AethSyndrome::Nak(NakCode::InvalidRdRequest), 0x64),
    ];
    for (syndrome, byte) in cases {
        assert_eq!(syndrome.to_u8(), Ok(byte));
        assert_eq!(AethSyndrome::from_u8(byte), Ok(syndrome));
        let mut b = [0u8; 4];
        Aeth {
            syndrome,
            msn: 0x0a_0b0c,
        }
        .emit(&mut b)
        .unwrap();
        assert_eq!(b, [byte, 0x0a, 0x0b, 0x0c]);
    }
    // Reserved: bit 7, kind 0b10, NAK codes above 4.
    for byte in [0x40u8, 0x5f, 0x65, 0x7f, 0x80, 0xff] {
        assert_eq!(AethSyndrome::from_u8(byte), Err(WireError::BadAeth(byte)));
    }
    assert_eq!(
        AethSyndrome::Ack { credits: 32 }.to_u8(),
        Err(WireError::FieldOutOfRange)
    );
}

/// CRC-32 (reflected 0xEDB88320, init and final xor all ones), one bit at a
/// time: independent of the table/SIMD implementation the library uses.
fn bitwise_crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn bitwise_crc_matches_the_standard_check_value() {
    // The CRC-32 check value of "123456789".
    assert_eq!(bitwise_crc32(b"123456789"), 0xcbf4_3926);
}

#[test]
fn icrc_matches_an_independent_computation() {
    let payload = b"RoCEv2!";
    let mut repr = sample(Opcode::SendOnlyImm, payload);
    repr.bth.fecn = true;
    let mut buf = vec![0u8; repr.buffer_len()];
    let n = repr.emit(&mut buf, &ctx()).unwrap();
    let roce_len = n as u16;

    // Masked LRH, IPv4 header (TOS/TTL/checksum all ones, id 0, DF), UDP
    // header (checksum all ones), then the packet with BTH byte 4 all ones.
    let mut input = vec![0xffu8; 8];
    input.extend_from_slice(&[0x45, 0xff]);
    input.extend_from_slice(&(20 + 8 + roce_len).to_be_bytes());
    input.extend_from_slice(&[0, 0, 0x40, 0x00, 0xff, 17, 0xff, 0xff]);
    input.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    input.extend_from_slice(&40000u16.to_be_bytes());
    input.extend_from_slice(&4791u16.to_be_bytes());
    input.extend_from_slice(&(8 + roce_len).to_be_bytes());
    input.extend_from_slice(&[0xff, 0xff]);
    let mut body = buf[..n - 4].to_vec();
    assert_eq!(body[4], 0x80, "FECN is set in the real packet");
    body[4] = 0xff;
    input.extend_from_slice(&body);

    let expected = bitwise_crc32(&input);
    assert_eq!(&buf[n - 4..], &expected.to_le_bytes());
    assert_eq!(Packet::new_checked(&buf[..]).unwrap().icrc(), expected);
}

#[test]
fn icrc_ignores_ecn_bits_and_catches_everything_else() {
    let payload = [1u8, 2, 3, 4, 5];
    let repr = sample(Opcode::WriteOnly, &payload);
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf, &ctx()).unwrap();
    for byte in 0..buf.len() {
        for bit in 0..8 {
            let mut m = buf.clone();
            m[byte] ^= 1 << bit;
            let r = PacketRepr::parse(&m, &ctx());
            if byte == 4 {
                // FECN/BECN/reserved are masked out of the ICRC (switches
                // may set ECN bits in flight).
                let p = r.expect("ECN byte is not covered by the ICRC");
                assert_eq!(p.payload, &payload);
            } else {
                assert!(r.is_err(), "flip of byte {byte} bit {bit} went unnoticed");
            }
        }
    }
    // Another address or port pair is another ICRC.
    let other = IcrcContext::new(
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 40001),
        ctx().dst,
    );
    assert!(matches!(
        PacketRepr::parse(&buf, &other),
        Err(WireError::BadIcrc { .. })
    ));
    assert!(PacketRepr::parse(&buf, &ctx().reversed()).is_err());
}

#[test]
fn truncations_are_errors() {
    let data = [7u8; 13];
    for opcode in Opcode::ALL {
        let repr = sample(opcode, &data);
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf, &ctx()).unwrap();
        for cut in 0..buf.len() {
            assert!(
                PacketRepr::parse(&buf[..cut], &ctx()).is_err(),
                "{opcode:?} cut at {cut} parsed"
            );
        }
    }
}

#[test]
fn structural_errors() {
    let c = ctx();
    let fix = |b: &mut Vec<u8>| {
        let n = b.len();
        let icrc = c.compute(&b[..n - 4]);
        b[n - 4..].copy_from_slice(&icrc.to_le_bytes());
    };
    let repr = sample(Opcode::SendOnly, &[1, 2, 3, 4]);
    let mut good = vec![0u8; repr.buffer_len()];
    repr.emit(&mut good, &c).unwrap();

    let mut b = good.clone();
    b[0] = 0x44; // UC SEND Only
    fix(&mut b);
    assert_eq!(
        PacketRepr::parse(&b, &c),
        Err(WireError::UnknownOpcode(0x44))
    );

    // An RC SEND relabelled UD SEND Only: its four payload bytes are too
    // short for the DETH it must carry.
    let mut b = good.clone();
    b[0] = 0x64;
    fix(&mut b);
    assert_eq!(PacketRepr::parse(&b, &c), Err(WireError::Truncated));

    let mut b = good.clone();
    b[1] |= 0x01; // TVer 1
    fix(&mut b);
    assert_eq!(
        PacketRepr::parse(&b, &c),
        Err(WireError::BadTransportVersion(1))
    );

    // Acknowledge carrying a payload.
    let ack = sample(Opcode::Acknowledge, &[]);
    let mut b = vec![0u8; ack.buffer_len()];
    ack.emit(&mut b, &c).unwrap();
    let n = b.len();
    b.splice(n - 4..n - 4, [9u8, 9, 9, 9]);
    fix(&mut b);
    assert_eq!(PacketRepr::parse(&b, &c), Err(WireError::PayloadNotAllowed));

    // Pad count larger than the payload area.
    let bare = Bth::new(Opcode::SendOnly, 1, 1);
    let empty = PacketRepr::new(bare, &[]);
    let mut b = vec![0u8; empty.buffer_len()];
    empty.emit(&mut b, &c).unwrap();
    b[1] |= 0x30;
    fix(&mut b);
    assert_eq!(PacketRepr::parse(&b, &c), Err(WireError::BadPad));

    // Payload plus pad not a whole number of words (one byte missing).
    let mut b = good.clone();
    b.remove(BTH_LEN);
    fix(&mut b);
    assert_eq!(PacketRepr::parse(&b, &c), Err(WireError::BadPad));

    // Masked-atomic header with a bad size byte or oversized 32-bit operand.
    let ext = sample(Opcode::MaskedFetchAdd, &[]);
    let mut b = vec![0u8; ext.buffer_len()];
    ext.emit(&mut b, &c).unwrap();
    let mut bad = b.clone();
    bad[BTH_LEN + 12] = 2;
    fix(&mut bad);
    assert_eq!(PacketRepr::parse(&bad, &c), Err(WireError::BadExtAtomic));
    let mut bad = b.clone();
    bad[BTH_LEN + 16] = 1; // high half of a 32-bit operand
    fix(&mut bad);
    assert_eq!(PacketRepr::parse(&bad, &c), Err(WireError::BadExtAtomic));
}

#[test]
fn emit_rejects_inconsistent_reprs() {
    let c = ctx();
    let mut buf = vec![0u8; 70_000];

    let mut r = sample(Opcode::WriteFirst, &[1]);
    r.reth = None;
    assert_eq!(r.emit(&mut buf, &c), Err(WireError::HeaderMismatch));
    let mut r = sample(Opcode::SendOnly, &[1]);
    r.imm = Some(1);
    assert_eq!(r.emit(&mut buf, &c), Err(WireError::HeaderMismatch));
    let mut r = sample(Opcode::Acknowledge, &[]);
    r.payload = &[1, 2];
    assert_eq!(r.emit(&mut buf, &c), Err(WireError::PayloadNotAllowed));
    let mut r = sample(Opcode::SendOnly, &[]);
    r.bth.psn = 1 << 24;
    assert_eq!(r.emit(&mut buf, &c), Err(WireError::FieldOutOfRange));
    let mut r = sample(Opcode::SendOnly, &[]);
    r.bth.dest_qp = 1 << 24;
    assert_eq!(r.emit(&mut buf, &c), Err(WireError::FieldOutOfRange));
    let mut r = sample(Opcode::Acknowledge, &[]);
    r.aeth = Some(Aeth {
        syndrome: AethSyndrome::RnrNak { timer: 40 },
        msn: 0,
    });
    assert_eq!(r.emit(&mut buf, &c), Err(WireError::FieldOutOfRange));
    let mut r = sample(Opcode::MaskedCompareSwap, &[]);
    if let Some(e) = r.ext_atomic.as_mut() {
        e.swap_add = 1 << 32;
    }
    assert_eq!(r.emit(&mut buf, &c), Err(WireError::FieldOutOfRange));

    let mut r = sample(Opcode::UdSendOnly, &[1]);
    r.deth = None;
    assert_eq!(r.emit(&mut buf, &c), Err(WireError::HeaderMismatch));
    let mut r = sample(Opcode::SendOnly, &[1]);
    r.deth = Some(Deth::default());
    assert_eq!(r.emit(&mut buf, &c), Err(WireError::HeaderMismatch));
    let mut r = sample(Opcode::UdSendOnly, &[1]);
    r.deth = Some(Deth {
        qkey: 1,
        src_qp: 1 << 24,
    });
    assert_eq!(r.emit(&mut buf, &c), Err(WireError::FieldOutOfRange));

    let r = sample(Opcode::SendOnly, &[0; 100]);
    let need = r.buffer_len();
    assert_eq!(
        r.emit(&mut buf[..need - 1], &c),
        Err(WireError::BufferTooSmall)
    );
    let big = vec![0u8; MAX_DATAGRAM_LEN];
    let r = sample(Opcode::SendOnly, &big);
    assert_eq!(r.emit(&mut buf, &c), Err(WireError::TooLong));
}

#[test]
fn masked_atomic_64_round_trips() {
    let mut r = sample(Opcode::MaskedCompareSwap, &[]);
    r.ext_atomic = Some(ExtAtomicEth {
        va: 8,
        rkey: 9,
        size: AtomicSize::Bits64,
        swap_add: u64::MAX,
        compare: 0x8000_0000_0000_0000,
        swap_add_mask: 0x0f0f_0f0f_0f0f_0f0f,
        compare_mask: 1,
    });
    let mut buf = vec![0u8; r.buffer_len()];
    r.emit(&mut buf, &ctx()).unwrap();
    assert_eq!(buf[0], 0xc0);
    assert_eq!(buf[BTH_LEN + 12], 8);
    assert_eq!(PacketRepr::parse(&buf, &ctx()).unwrap(), r);
}

#[test]
fn ud_send_byte_image() {
    // BTH, DETH, ImmDt, payload and pad as IBTA vol. 1 9.2, 9.3.3 lay them
    // out; the reserved byte of the DETH is zero.
    let payload = [0xaa, 0xbb, 0xcc, 0xdd, 0xee];
    let mut bth = Bth::new(Opcode::UdSendOnlyImm, 0x12_3456, 0x00_0007);
    bth.solicited = true;
    let mut repr = PacketRepr::new(bth, &payload);
    repr.deth = Some(Deth {
        qkey: 0x8001_0203,
        src_qp: 0xab_cdef,
    });
    repr.imm = Some(0x0908_0706);
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf, &ctx()).unwrap();
    let expected_headers = [
        0x65, 0xb0, 0xff, 0xff, 0x00, 0x12, 0x34, 0x56, 0x00, 0x00, 0x00, 0x07, // BTH
        0x80, 0x01, 0x02, 0x03, 0x00, 0xab, 0xcd, 0xef, // DETH
        0x09, 0x08, 0x07, 0x06, // ImmDt
        0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0x00, 0x00, 0x00, // payload, pad 3
    ];
    assert_eq!(&buf[..buf.len() - ICRC_LEN], &expected_headers);
    assert_eq!(buf.len(), expected_headers.len() + ICRC_LEN);
    let parsed = PacketRepr::parse(&buf, &ctx()).unwrap();
    assert_eq!(parsed, repr);

    // A reserved DETH byte set by some other sender is ignored, not an error.
    let mut odd = buf.clone();
    odd[BTH_LEN + 4] = 0x5a;
    let n = odd.len();
    let icrc = ctx().compute(&odd[..n - ICRC_LEN]);
    odd[n - ICRC_LEN..].copy_from_slice(&icrc.to_le_bytes());
    assert_eq!(PacketRepr::parse(&odd, &ctx()).unwrap().deth, repr.deth);
}
