//! The soft HCA between two processes over real UDP on loopback.
//!
//! The test re-executes its own binary as the peer (the ignored test
//! `softhca_peer_process`, selected with `--ignored --exact`); the two
//! exchange connection data as lines over the peer's stdin/stdout. While
//! the initiator runs WRITE, READ and the atomics, the peer is blocked
//! reading its stdin: it never calls progress, so only its device's service
//! thread can serve those operations.

mod softhca_common;
#[path = "uct_safe/mod.rs"]
mod uct_safe;

use std::io::{BufRead, Write};
use std::net::Ipv4Addr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use softhca_common::*;
use uct::mlx5::{self, AtomicSize};

const PEER_ENV: &str = "SOFTHCA_TEST_PEER";
const LINE_WAIT: Duration = Duration::from_secs(20);

/// Offsets in the peer's buffer.
const READ_SRC: usize = 300_000;
const READ_LEN: usize = 9000;
const WRITE_DST: usize = 100_000;
const WRITE_LEN: usize = 6000;
const INLINE_DST: usize = 200_000;
const COUNTER: usize = 400_000;
const SWAP_CELL: usize = 400_064;
const MASKED_CELL: usize = 400_128;

struct Peer {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Peer {
    /// `loss` reaches the peer as `UCX_SOFT_HCA_LOSS`.
    fn spawn(loss: f64) -> Peer {
        let exe = std::env::current_exe().expect("own test binary");
        let mut child = Command::new(exe)
            .args([
                "--ignored",
                "--exact",
                "softhca_peer_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(PEER_ENV, "1")
            .env("UCX_SOFT_HCA_SEED", "7")
            .env("UCX_SOFT_HCA_LOSS", loss.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn peer");
        let stdin = child.stdin.take().expect("stdin");
        let lines = peer_lines(child.stdout.take().expect("stdout"));
        Peer {
            child,
            stdin,
            lines,
        }
    }

    fn expect(&self, prefix: &str) -> String {
        let line = self
            .lines
            .recv_timeout(LINE_WAIT)
            .unwrap_or_else(|_| panic!("peer did not say {prefix}"));
        match line.strip_prefix(prefix) {
            Some(rest) => rest.trim().to_string(),
            None => panic!("peer said '{line}', expected {prefix}"),
        }
    }

    fn say(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("write to peer");
        self.stdin.flush().expect("flush");
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // Bounded: the peer exits on its own after BYE; otherwise kill it.
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ok(side: &mut Side, index: u16, opcode: u8) -> mlx5::Cqe64 {
    let cqe = side.wait_send(LONG).expect("send CQE");
    assert_eq!(cqe.opcode, mlx5::MLX5_CQE_REQ, "{cqe:?}");
    assert_eq!((cqe.wqe_counter, cqe.wqe_opcode), (index, opcode));
    cqe
}

#[test]
fn two_processes_every_opcode() {
    every_opcode_with_peer("twoproc_init", 0.0);
}

/// The same with 5 % of the packets lost in each direction at each end.
#[test]
fn two_processes_every_opcode_under_loss() {
    every_opcode_with_peer("twoproc_lossy", 0.05);
}

fn every_opcode_with_peer(device: &str, loss: f64) {
    let mut peer = Peer::spawn(loss);
    let mut me = Side::new(open_soft(device, Ipv4Addr::LOCALHOST));
    let name = std::ffi::CString::new(device).expect("name");
    assert_eq!(uct_safe::loss_set(&name, loss), 0);
    let remote = Endpoint::from_line(&peer.expect("EP"));
    peer.say(&format!("EP {}", me.endpoint().to_line()));
    me.connect(&remote, 12, 7);
    me.post_recvs(8);
    peer.expect("READY");
    let rkey = remote.rkey;
    let at = |offset: usize| remote.buf_addr + offset as u64;

    // One-sided operations while the peer sits in a blocking read.
    let data = pattern(WRITE_LEN, 11);
    me.write_buf(0, &data);
    let i = me.post(&Op::Write {
        offset: 0,
        len: WRITE_LEN,
        remote: at(WRITE_DST),
        rkey,
        imm: None,
    });
    ok(&mut me, i, mlx5::MLX5_OPCODE_RDMA_WRITE);
    let small = pattern(100, 12);
    let i = me.post(&Op::WriteInline {
        data: &small,
        remote: at(INLINE_DST),
        rkey,
    });
    ok(&mut me, i, mlx5::MLX5_OPCODE_RDMA_WRITE);

    // READs `len` bytes at the peer's `remote` into `offset`; their bytes.
    let read = |me: &mut Side, offset: usize, len: usize, remote: u64| {
        let i = me.post(&Op::Read {
            offset,
            len,
            remote,
            rkey,
        });
        ok(me, i, mlx5::MLX5_OPCODE_RDMA_READ);
        me.read_buf(offset, len)
    };
    assert_eq!(
        read(&mut me, 50_000, READ_LEN, at(READ_SRC)),
        pattern(READ_LEN, 13),
        "READ brought the peer's bytes"
    );
    // Read back what we wrote: it landed.
    assert_eq!(read(&mut me, 70_000, WRITE_LEN, at(WRITE_DST)), data);

    for k in 0..10u64 {
        let i = me.post(&Op::FetchAdd {
            result_offset: 80_000 + 8 * k as usize,
            remote: at(COUNTER),
            rkey,
            add: 3,
        });
        ok(&mut me, i, mlx5::MLX5_OPCODE_ATOMIC_FA);
        assert_eq!(me.read_u64(80_000 + 8 * k as usize), 1000 + 3 * k);
    }
    let i = me.post(&Op::CompareSwap {
        result_offset: 81_000,
        remote: at(SWAP_CELL),
        rkey,
        compare: 77,
        swap: 88,
    });
    ok(&mut me, i, mlx5::MLX5_OPCODE_ATOMIC_CS);
    assert_eq!(me.read_u64(81_000), 77);
    let i = me.post(&Op::MaskedCompareSwap {
        size: AtomicSize::Bits32,
        result_offset: 81_008,
        remote: at(MASKED_CELL),
        rkey,
        compare: 0x34,
        compare_mask: 0xff,
        swap: 0xab00,
        swap_mask: 0xff00,
    });
    ok(&mut me, i, mlx5::MLX5_OPCODE_ATOMIC_MASKED_CS);
    let i = me.post(&Op::MaskedFetchAdd {
        size: AtomicSize::Bits64,
        result_offset: 81_016,
        remote: at(MASKED_CELL + 8),
        rkey,
        add: 0x0000_0001_0000_0001,
        boundary: 0x8000_0000_8000_0000,
    });
    ok(&mut me, i, mlx5::MLX5_OPCODE_ATOMIC_MASKED_FA);

    // Two-sided: the peer's receives were posted before READY.
    let i = me.post(&Op::SendInline(&pattern(60, 14)));
    ok(&mut me, i, mlx5::MLX5_OPCODE_SEND);
    let big = pattern(12_000, 15);
    me.write_buf(100_000, &big);
    let i = me.post(&Op::Send {
        offset: 100_000,
        len: big.len(),
        imm: Some(0x1234_5678),
    });
    ok(&mut me, i, mlx5::MLX5_OPCODE_SEND_IMM);

    // The peer now checks its memory and receives, and sends one back.
    peer.say("CHECK");
    let verdict = peer.expect("RESULT");
    assert_eq!(verdict, "ok", "peer found: {verdict}");
    let rc = me.wait_recv(LONG).expect("SEND from the peer");
    assert_eq!(rc.byte_cnt, 3000);
    assert_eq!(me.read_recv(rc.wqe_counter, 3000), pattern(3000, 16));
    peer.say("BYE");
    let peer_dropped: u64 = peer.expect("DONE").parse().expect("peer's drop count");
    let uct::hca::Device::Soft(dev) = &me.device else {
        panic!("not a soft HCA")
    };
    let stats = dev.link_stats();
    let dropped = peer_dropped + stats.tx_dropped_loss + stats.rx_dropped_loss;
    if loss > 0.0 {
        assert!(dropped > 0, "packets were really lost");
    } else {
        assert_eq!(dropped, 0);
    }
}

/// The peer process: not a test on its own (ignored), run by
/// `two_processes_every_opcode`.
#[test]
#[ignore = "peer half of two_processes_every_opcode; runs in the child process only"]
fn softhca_peer_process() {
    if std::env::var(PEER_ENV).is_err() {
        return;
    }
    let say = |line: String| {
        let mut out = std::io::stdout().lock();
        writeln!(out, "PEER {line}").expect("stdout");
        out.flush().expect("flush");
    };
    let mut stdin = std::io::stdin().lock();
    let mut read_line = || {
        let mut line = String::new();
        stdin.read_line(&mut line).expect("stdin");
        line.trim().to_string()
    };

    let mut me = Side::new(open_soft("twoproc_peer", Ipv4Addr::LOCALHOST));
    me.write_buf(READ_SRC, &pattern(READ_LEN, 13));
    me.write_buf(COUNTER, &1000u64.to_ne_bytes());
    me.write_buf(SWAP_CELL, &77u64.to_ne_bytes());
    me.write_buf(MASKED_CELL, &0x1234u32.to_ne_bytes());
    me.write_buf(MASKED_CELL + 8, &0x0000_0005_ffff_ffffu64.to_ne_bytes());
    say(format!("EP {}", me.endpoint().to_line()));
    let line = read_line();
    let remote = Endpoint::from_line(line.strip_prefix("EP ").expect("EP line"));
    me.connect(&remote, 12, 7);
    me.post_recvs(8);
    say("READY".to_string());

    // Blocked here (no progress) while the initiator does its one-sided ops.
    let line = read_line();
    assert_eq!(line, "CHECK");
    let mut problems = Vec::new();
    let mut check = |what: &str, good: bool| {
        if !good {
            problems.push(what.to_string());
        }
    };
    check(
        "WRITE data",
        me.read_buf(WRITE_DST, WRITE_LEN) == pattern(WRITE_LEN, 11),
    );
    check(
        "inline WRITE data",
        me.read_buf(INLINE_DST, 100) == pattern(100, 12),
    );
    check("fetch-add counter", me.read_u64(COUNTER) == 1030);
    check("compare-swap cell", me.read_u64(SWAP_CELL) == 88);
    check(
        "masked compare-swap",
        me.read_buf(MASKED_CELL, 4) == 0xab34u32.to_ne_bytes(),
    );
    check(
        "masked fetch-add",
        me.read_u64(MASKED_CELL + 8) == 0x0000_0006_0000_0000,
    );
    // The SENDs were delivered by the service thread: poll the CQ only.
    match me.wait_recv_passive(LONG) {
        Some(rc) => check(
            "inline SEND",
            rc.opcode == mlx5::MLX5_CQE_RESP_SEND
                && me.read_recv(rc.wqe_counter, 60) == pattern(60, 14),
        ),
        None => check("inline SEND arrived", false),
    }
    match me.wait_recv_passive(LONG) {
        Some(rc) => check(
            "SEND with immediate",
            rc.opcode == mlx5::MLX5_CQE_RESP_SEND_IMM
                && rc.imm_inval_pkey == 0x1234_5678
                && me.read_recv(rc.wqe_counter, 12_000) == pattern(12_000, 15),
        ),
        None => check("SEND with immediate arrived", false),
    }
    me.write_buf(0, &pattern(3000, 16));
    let i = me.post(&Op::Send {
        offset: 0,
        len: 3000,
        imm: None,
    });
    match me.wait_send(LONG) {
        Some(cqe) => check(
            "SEND back",
            cqe.opcode == mlx5::MLX5_CQE_REQ && cqe.wqe_counter == i,
        ),
        None => check("SEND back completed", false),
    }
    let verdict = if problems.is_empty() {
        "ok".to_string()
    } else {
        problems.join(", ")
    };
    say(format!("RESULT {verdict}"));
    let line = read_line();
    assert_eq!(line, "BYE");
    let uct::hca::Device::Soft(dev) = &me.device else {
        panic!("not a soft HCA")
    };
    let stats = dev.link_stats();
    say(format!(
        "DONE {}",
        stats.tx_dropped_loss + stats.rx_dropped_loss
    ));
}
