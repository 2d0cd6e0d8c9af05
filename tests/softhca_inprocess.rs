//! The soft HCA in one process: two devices on 127.0.0.1 and 127.0.0.2,
//! one QP each, every opcode through real mlx5 WQEs and CQE64s, data
//! verified at the target; link down → retry exceeded → error and flush
//! CQEs; 5 % loss still completes everything exactly once.

mod softhca_common;
#[path = "uct_safe/mod.rs"]
mod uct_safe;

use std::time::Duration;

use softhca_common::*;
use uct::hca::QpState;
use uct::mlx5::{self, AtomicSize};

fn expect_ok(side: &mut Side, index: u16, wqe_opcode: u8) -> mlx5::Cqe64 {
    let cqe = side.wait_send(LONG).expect("send CQE");
    assert_eq!(cqe.opcode, mlx5::MLX5_CQE_REQ, "success CQE, got {cqe:?}");
    assert_eq!(cqe.wqe_counter, index);
    assert_eq!(cqe.wqe_opcode, wqe_opcode);
    assert_eq!(cqe.qpn, side.qp.qpn());
    cqe
}

#[test]
fn every_opcode_between_two_devices() {
    let (mut a, mut b) = pair("ops", 14, 7);
    b.post_recvs(64);
    let rkey = b.endpoint().rkey;

    // SEND inline.
    let msg = pattern(40, 1);
    let i = a.post(&Op::SendInline(&msg));
    expect_ok(&mut a, i, mlx5::MLX5_OPCODE_SEND);
    let rc = b.wait_recv(LONG).expect("recv CQE");
    assert_eq!(rc.opcode, mlx5::MLX5_CQE_RESP_SEND);
    assert_eq!(rc.byte_cnt, 40);
    assert_eq!(rc.qpn, b.qp.qpn());
    assert_eq!(b.read_recv(rc.wqe_counter, 40), msg);

    // SEND from registered memory, multi-packet (MTU 1024), with immediate.
    let big = pattern(10_000, 2);
    a.write_buf(0, &big);
    let i = a.post(&Op::Send {
        offset: 0,
        len: big.len(),
        imm: Some(0xdead_beef),
    });
    expect_ok(&mut a, i, mlx5::MLX5_OPCODE_SEND_IMM);
    let rc = b.wait_recv(LONG).expect("recv CQE");
    assert_eq!(rc.opcode, mlx5::MLX5_CQE_RESP_SEND_IMM);
    assert_eq!(rc.imm_inval_pkey, 0xdead_beef);
    assert_eq!(rc.byte_cnt, 10_000);
    assert_eq!(b.read_recv(rc.wqe_counter, 10_000), big);

    // SEND with an inline header and pointed-to data (am_zcopy's shape).
    let header = pattern(12, 3);
    let body = pattern(3000, 4);
    a.write_buf(20_000, &body);
    let i = a.post(&Op::SendMixed {
        header: &header,
        offset: 20_000,
        len: body.len(),
    });
    expect_ok(&mut a, i, mlx5::MLX5_OPCODE_SEND);
    let rc = b.wait_recv(LONG).expect("recv CQE");
    let mut expected = header.clone();
    expected.extend_from_slice(&body);
    assert_eq!(rc.byte_cnt as usize, expected.len());
    assert_eq!(b.read_recv(rc.wqe_counter, expected.len()), expected);

    // RDMA WRITE, multi-packet, then WRITE inline, then WRITE with immediate.
    let data = pattern(5000, 5);
    a.write_buf(40_000, &data);
    let i = a.post(&Op::Write {
        offset: 40_000,
        len: data.len(),
        remote: b.buf_addr(100_000),
        rkey,
        imm: None,
    });
    expect_ok(&mut a, i, mlx5::MLX5_OPCODE_RDMA_WRITE);
    assert_eq!(b.read_buf(100_000, data.len()), data);
    let small = pattern(50, 6);
    let i = a.post(&Op::WriteInline {
        data: &small,
        remote: b.buf_addr(200_000),
        rkey,
    });
    expect_ok(&mut a, i, mlx5::MLX5_OPCODE_RDMA_WRITE);
    assert_eq!(b.read_buf(200_000, 50), small);
    let i = a.post(&Op::Write {
        offset: 40_000,
        len: 64,
        remote: b.buf_addr(210_000),
        rkey,
        imm: Some(7),
    });
    expect_ok(&mut a, i, mlx5::MLX5_OPCODE_RDMA_WRITE_IMM);
    let rc = b.wait_recv(LONG).expect("write-imm CQE");
    assert_eq!(rc.opcode, mlx5::MLX5_CQE_RESP_WR_IMM);
    assert_eq!(rc.imm_inval_pkey, 7);
    assert_eq!(b.read_buf(210_000, 64), data[..64]);

    // RDMA READ, multi-packet.
    let remote_data = pattern(7000, 7);
    b.write_buf(300_000, &remote_data);
    let i = a.post(&Op::Read {
        offset: 60_000,
        len: remote_data.len(),
        remote: b.buf_addr(300_000),
        rkey,
    });
    let cqe = expect_ok(&mut a, i, mlx5::MLX5_OPCODE_RDMA_READ);
    assert_eq!(cqe.byte_cnt, 7000);
    assert_eq!(a.read_buf(60_000, 7000), remote_data);

    // 64-bit compare-swap (hit, then miss) and fetch-add.
    b.write_buf(400_000, &41u64.to_ne_bytes());
    let target = b.buf_addr(400_000);
    let i = a.post(&Op::CompareSwap {
        result_offset: 70_000,
        remote: target,
        rkey,
        compare: 41,
        swap: 99,
    });
    expect_ok(&mut a, i, mlx5::MLX5_OPCODE_ATOMIC_CS);
    assert_eq!(a.read_u64(70_000), 41);
    assert_eq!(b.read_u64(400_000), 99);
    let i = a.post(&Op::CompareSwap {
        result_offset: 70_008,
        remote: target,
        rkey,
        compare: 41,
        swap: 5,
    });
    expect_ok(&mut a, i, mlx5::MLX5_OPCODE_ATOMIC_CS);
    assert_eq!(a.read_u64(70_008), 99);
    assert_eq!(b.read_u64(400_000), 99, "a failed compare leaves the value");
    let i = a.post(&Op::FetchAdd {
        result_offset: 70_016,
        remote: target,
        rkey,
        add: 1,
    });
    expect_ok(&mut a, i, mlx5::MLX5_OPCODE_ATOMIC_FA);
    assert_eq!(a.read_u64(70_016), 99);
    assert_eq!(b.read_u64(400_000), 100);

    // Masked atomics, 32 and 64 bits.
    b.write_buf(400_064, &0x0005_ffffu32.to_ne_bytes());
    let i = a.post(&Op::MaskedFetchAdd {
        size: AtomicSize::Bits32,
        result_offset: 70_032,
        remote: b.buf_addr(400_064),
        rkey,
        add: 0x0001_0001,
        boundary: 0x8000_8000,
    });
    expect_ok(&mut a, i, mlx5::MLX5_OPCODE_ATOMIC_MASKED_FA);
    assert_eq!(
        u32::from_ne_bytes(a.read_buf(70_032, 4).try_into().unwrap()),
        0x0005_ffff
    );
    assert_eq!(
        u32::from_ne_bytes(b.read_buf(400_064, 4).try_into().unwrap()),
        0x0006_0000
    );

    b.write_buf(400_128, &0x1111_2222_3333_4444u64.to_ne_bytes());
    let i = a.post(&Op::MaskedCompareSwap {
        size: AtomicSize::Bits64,
        result_offset: 70_040,
        remote: b.buf_addr(400_128),
        rkey,
        compare: 0x4444,
        compare_mask: 0xffff,
        swap: 0xaaaa_0000_0000_0000,
        swap_mask: 0xffff_0000_0000_0000,
    });
    expect_ok(&mut a, i, mlx5::MLX5_OPCODE_ATOMIC_MASKED_CS);
    assert_eq!(a.read_u64(70_040), 0x1111_2222_3333_4444);
    assert_eq!(b.read_u64(400_128), 0xaaaa_2222_3333_4444);

    b.write_buf(400_192, &0x00ff_00ffu32.to_ne_bytes());
    let i = a.post(&Op::MaskedCompareSwap {
        size: AtomicSize::Bits32,
        result_offset: 70_048,
        remote: b.buf_addr(400_192),
        rkey,
        compare: 0xff,
        compare_mask: 0xff,
        swap: 0x1200_0000,
        swap_mask: 0xff00_0000,
    });
    expect_ok(&mut a, i, mlx5::MLX5_OPCODE_ATOMIC_MASKED_CS);
    assert_eq!(
        u32::from_ne_bytes(b.read_buf(400_192, 4).try_into().unwrap()),
        0x12ff_00ff
    );

    let i = a.post(&Op::MaskedFetchAdd {
        size: AtomicSize::Bits64,
        result_offset: 70_056,
        remote: target,
        rkey,
        add: 5,
        boundary: 0,
    });
    expect_ok(&mut a, i, mlx5::MLX5_OPCODE_ATOMIC_MASKED_FA);
    assert_eq!(b.read_u64(400_000), 105);

    // NOP, fenced after a READ.
    let r = a.post_flags(
        &Op::Read {
            offset: 80_000,
            len: 16,
            remote: b.buf_addr(300_000),
            rkey,
        },
        false,
        false,
    );
    let n = a.post_flags(&Op::Nop, true, true);
    let cqe = expect_ok(&mut a, n, mlx5::MLX5_OPCODE_NOP);
    assert_ne!(cqe.wqe_counter, r, "the unsignalled READ has no CQE");
    assert_eq!(a.read_buf(80_000, 16), remote_data[..16]);

    // B → A direction works on the same connection.
    a.post_recvs(4);
    let back = pattern(300, 9);
    let i = b.post(&Op::SendInline(&back[..200]));
    expect_ok(&mut b, i, mlx5::MLX5_OPCODE_SEND);
    let rc = a.wait_recv(LONG).expect("recv at a");
    assert_eq!(a.read_recv(rc.wqe_counter, 200), back[..200]);

    assert!(a.poll_send().is_none(), "no stray CQEs");
    let info = a.qp.query().expect("query");
    assert_eq!(info.state, QpState::Rts);
    assert_eq!(info.dest_qpn, b.qp.qpn());
    let peer = b.qp.query().expect("query b");
    assert_eq!(
        peer.next_rcv_psn, info.sq_psn,
        "b expects exactly the PSN a sends next"
    );
}

#[test]
fn bad_rkey_and_bounds_leave_memory_untouched() {
    let (mut a, b) = pair("prot", 14, 7);
    let rkey = b.endpoint().rkey;
    a.write_buf(0, &pattern(64, 1));
    // Past the end of the region.
    let i = a.post(&Op::Write {
        offset: 0,
        len: 64,
        remote: b.buf_addr(BUF_LEN - 32),
        rkey,
        imm: None,
    });
    let cqe = a.wait_send(LONG).expect("error CQE");
    assert_eq!(cqe.opcode, mlx5::MLX5_CQE_REQ_ERR);
    assert_eq!(cqe.syndrome, mlx5::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
    assert_eq!(cqe.wqe_counter, i);
    assert_eq!(b.read_buf(BUF_LEN - 32, 32), vec![0u8; 32]);
    assert_eq!(a.qp.query().unwrap().state, QpState::Error);
}

#[test]
fn link_down_retry_exceeded_then_flush() {
    // timeout 8: 4.096 µs × 2^8 ≈ 1 ms per try; 2 retries.
    let (mut a, b) = pair("down", 8, 2);
    let rkey = b.endpoint().rkey;
    a.write_buf(0, &pattern(128, 3));
    let status = uct_safe::link_set(c"down_a", false);
    assert_eq!(status, 0);
    let first = a.post(&Op::Write {
        offset: 0,
        len: 128,
        remote: b.buf_addr(0),
        rkey,
        imm: None,
    });
    let second = a.post(&Op::Write {
        offset: 0,
        len: 128,
        remote: b.buf_addr(512),
        rkey,
        imm: None,
    });
    let third = a.post_flags(&Op::SendInline(b"late"), false, false);

    let cqe = a.wait_send(LONG).expect("retry-exceeded CQE");
    assert_eq!(cqe.opcode, mlx5::MLX5_CQE_REQ_ERR);
    assert_eq!(
        cqe.syndrome,
        mlx5::MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR
    );
    assert_eq!(cqe.wqe_counter, first);
    for index in [second, third] {
        let cqe = a.wait_send(LONG).expect("flush CQE");
        assert_eq!(cqe.opcode, mlx5::MLX5_CQE_REQ_ERR);
        assert_eq!(cqe.syndrome, mlx5::MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
        assert_eq!(
            cqe.wqe_counter, index,
            "flushes in posting order, unsignalled ones included"
        );
    }
    assert_eq!(a.qp.query().unwrap().state, QpState::Error);
    assert_eq!(
        b.read_buf(0, 128),
        vec![0u8; 128],
        "nothing crossed a pulled cable"
    );
    let uct::hca::Device::Soft(dev) = &a.device else {
        panic!("not a soft HCA")
    };
    assert!(dev.link_stats().tx_dropped_link_down >= 3);
    // Posting on an errored QP flushes at once.
    let late = a.post(&Op::Nop);
    let cqe = a.wait_send(LONG).expect("flush");
    assert_eq!(
        (cqe.wqe_counter, cqe.syndrome),
        (late, mlx5::MLX5_CQE_SYNDROME_WR_FLUSH_ERR)
    );
}

#[test]
fn five_percent_loss_completes_everything_exactly_once() {
    lossy_exchange("lossy", 0.05, 150);
}

#[test]
fn twelve_percent_loss_completes_everything_exactly_once() {
    // Bounded by retry_cnt = 7: a request/ACK round trip fails with
    // p = 1 - 0.88² ≈ 0.23, eight failures in a row with p ≈ 7e-6, so the
    // run does not hit "retry exceeded" by chance.
    lossy_exchange("verylossy", 0.12, 90);
}

/// `rounds` operations (WRITE, SEND with immediate, fetch-add in turn) with
/// `ratio` of the packets lost at each device, in and out.
fn lossy_exchange(tag: &str, ratio: f64, rounds: usize) {
    // Timeout exponent 12 (about 17 ms, 8 tries ≈ 134 ms): a shorter one
    // turns a few milliseconds without a CPU on a loaded 2-core CI machine
    // into "retry exceeded", which is scheduling, not the protocol.
    let (mut a, mut b) = pair(tag, 12, 7);
    for side in ["a", "b"] {
        let name = std::ffi::CString::new(format!("{tag}_{side}")).expect("name");
        assert_eq!(uct_safe::loss_set(&name, ratio), 0);
    }
    let rkey = b.endpoint().rkey;
    b.post_recvs(200);
    let counter = b.buf_addr(500_000);
    let mut expected = Vec::new();
    for round in 0..rounds {
        let data = pattern(1500 + round, round as u8);
        let offset = round * 4096;
        a.write_buf(offset, &data);
        let op = match round % 3 {
            0 => Op::Write {
                offset,
                len: data.len(),
                remote: b.buf_addr(offset),
                rkey,
                imm: None,
            },
            1 => Op::Send {
                offset,
                len: data.len(),
                imm: Some(round as u32),
            },
            _ => Op::FetchAdd {
                result_offset: 900_000 + round * 8,
                remote: counter,
                rkey,
                add: 1,
            },
        };
        let index = a.post(&op);
        expected.push((index, round, data));
        // Keep a bounded number in flight so the CQ and send ring never fill.
        if expected.len() >= 32 {
            check_completion(&mut a, &mut expected);
        }
    }
    while !expected.is_empty() {
        check_completion(&mut a, &mut expected);
    }
    let mut sends = Vec::new();
    while let Some(rc) = b.wait_recv(Duration::from_millis(200)) {
        assert_eq!(rc.opcode, mlx5::MLX5_CQE_RESP_SEND_IMM);
        sends.push(rc);
    }
    assert_eq!(sends.len(), rounds / 3, "every SEND received exactly once");
    for (k, rc) in sends.iter().enumerate() {
        let round = 1 + 3 * k;
        assert_eq!(rc.imm_inval_pkey, round as u32, "in order");
        assert_eq!(
            b.read_recv(rc.wqe_counter, rc.byte_cnt as usize),
            pattern(1500 + round, round as u8)
        );
    }
    for round in (0..rounds).step_by(3) {
        assert_eq!(
            b.read_buf(round * 4096, 1500 + round),
            pattern(1500 + round, round as u8)
        );
    }
    assert_eq!(
        b.read_u64(500_000),
        (rounds / 3) as u64,
        "each fetch-add executed exactly once"
    );
    let mut olds: Vec<u64> = (0..rounds)
        .filter(|r| r % 3 == 2)
        .map(|r| a.read_u64(900_000 + r * 8))
        .collect();
    olds.sort_unstable();
    assert_eq!(olds, (0..(rounds / 3) as u64).collect::<Vec<_>>());
    let uct::hca::Device::Soft(dev) = &a.device else {
        panic!("not a soft HCA")
    };
    let stats = dev.link_stats();
    assert!(
        stats.tx_dropped_loss + stats.rx_dropped_loss > 0,
        "the loss really happened: {stats:?}"
    );
}

fn check_completion(a: &mut Side, expected: &mut Vec<(u16, usize, Vec<u8>)>) {
    let cqe = a.wait_send(LONG).expect("completion under loss");
    assert_eq!(cqe.opcode, mlx5::MLX5_CQE_REQ, "{cqe:?}");
    let (index, _, _) = expected.remove(0);
    assert_eq!(cqe.wqe_counter, index, "in order, exactly once");
}
