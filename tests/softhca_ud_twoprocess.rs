//! UD queue pairs of the soft HCA between two processes, on both wires:
//! the same-host shared-memory rings (`UCX_SOFT_HCA_WIRE=auto`) and UDP
//! (`UCX_SOFT_HCA_WIRE=udp`).
//!
//! The test re-executes its own binary as the peer (the ignored test
//! `softhca_ud_peer_process`); the two exchange GIDs and QP numbers as
//! lines over the peer's stdin/stdout. Each side drives its UD QP as a
//! transport would: mlx5 send WQEs with a datagram segment from an address
//! handle, SRQ receive WQEs, CQE64s polled from the rings. The initiator
//! sends datagrams of several sizes (inline and gathered, with and without
//! immediate) and one with a wrong Q_Key; the peer, without calling
//! progress (its device's service thread delivers), checks each receive:
//! the GRH with both GIDs, the payload, the CQE's length (payload + GRH),
//! source QP and flags, and that the wrong-key datagram never arrived; then
//! it answers with a datagram of its own.

mod softhca_ud_common;

use std::io::{BufRead, BufReader, Write};
use std::net::Ipv4Addr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use softhca_ud_common::*;
use uct::mlx5;

const PEER_ENV: &str = "SOFTHCA_UD_TEST_PEER";
const LINE_WAIT: Duration = Duration::from_secs(20);
struct Peer {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Peer {
    fn spawn() -> Peer {
        let exe = std::env::current_exe().expect("own test binary");
        let mut child = Command::new(exe)
            .args([
                "--ignored",
                "--exact",
                "softhca_ud_peer_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(PEER_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn peer");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(at) = line.find("PEER ") {
                    if tx.send(line[at + 5..].to_string()).is_err() {
                        break;
                    }
                }
            }
        });
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

/// Both wires, one after the other in this one test (the wire is read
/// from the environment at each open, which the peer inherits).
#[test]
fn datagrams_between_two_processes_on_both_wires() {
    for wire in ["auto", "udp"] {
        std::env::set_var("UCX_SOFT_HCA_WIRE", wire);
        exchange(wire);
    }
    std::env::remove_var("UCX_SOFT_HCA_WIRE");
}

fn exchange(wire: &str) {
    let mut peer = Peer::spawn();
    let mut me = UdSide::new(&format!("udproc_{wire}"), Ipv4Addr::LOCALHOST);
    let (peer_gid, peer_qpn) = parse_endpoint(&peer.expect("EP"));
    peer.say(&format!("EP {}", me.endpoint_line()));
    me.post_recvs(4);
    peer.expect("READY");

    let ah = me.pd.create_ah(peer_gid).expect("address handle");
    // Not a soft HCA port's GID: refused with a status, not a crash.
    assert!(me.pd.create_ah([0xfe; 16]).is_err());
    // Wrong Q_Key first: the peer must never see it.
    let i = me.post_send(&ah, peer_qpn, QKEY ^ 0x100, b"wrong key", true, None);
    let cqe = me.wait_send().expect("send CQE");
    assert_eq!((cqe.opcode, cqe.wqe_counter), (mlx5::MLX5_CQE_REQ, i));
    for (k, (len, imm, inline)) in DATAGRAMS.into_iter().enumerate() {
        let data = pattern(len, k as u8);
        let i = me.post_send(&ah, peer_qpn, QKEY, &data, inline, imm);
        let cqe = me.wait_send().expect("send CQE");
        assert_eq!(cqe.opcode, mlx5::MLX5_CQE_REQ, "{cqe:?}");
        assert_eq!(cqe.wqe_counter, i);
        assert_eq!(cqe.byte_cnt as usize, len);
    }
    peer.say("CHECK");
    let verdict = peer.expect("RESULT");
    assert_eq!(verdict, "ok", "{wire} wire: peer found: {verdict}");

    let cqe = me.wait_recv(true, LONG).expect("the peer's datagram");
    let answer = pattern(3000, 99);
    let problem = check_datagram(
        &me,
        &cqe,
        &answer,
        Some(0x5eed),
        peer_qpn,
        peer_gid,
        me.device.gid(),
    );
    assert_eq!(problem, None, "{wire} wire");
    peer.say("BYE");
    let peer_shm: u64 = peer.expect("DONE").parse().expect("peer's count");
    let my_shm = me.device.link_stats().tx_shm;
    if wire == "udp" {
        assert_eq!(my_shm + peer_shm, 0, "UDP only");
    } else {
        assert!(my_shm > 0 && peer_shm > 0, "both sent through the rings");
    }
}

/// The peer process: run by `datagrams_between_two_processes_on_both_wires`.
#[test]
#[ignore = "peer half of datagrams_between_two_processes_on_both_wires; runs in the child process only"]
fn softhca_ud_peer_process() {
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

    let wire = std::env::var("UCX_SOFT_HCA_WIRE").unwrap_or_default();
    let mut me = UdSide::new(&format!("udpeer_{wire}"), Ipv4Addr::LOCALHOST);
    say(format!("EP {}", me.endpoint_line()));
    let line = read_line();
    let (gid, qpn) = parse_endpoint(line.strip_prefix("EP ").expect("EP line"));
    me.post_recvs(DATAGRAMS.len() as u16 + 2);
    say("READY".to_string());

    // Blocked here (no progress) while the initiator sends.
    assert_eq!(read_line(), "CHECK");
    let mut problems = Vec::new();
    for (k, (len, imm, _)) in DATAGRAMS.into_iter().enumerate() {
        match me.wait_recv(false, LONG) {
            Some(cqe) => {
                let payload = pattern(len, k as u8);
                if let Some(problem) =
                    check_datagram(&me, &cqe, &payload, imm, qpn, gid, me.device.gid())
                {
                    problems.push(problem);
                }
            }
            None => problems.push(format!("{len}-byte datagram did not arrive")),
        }
    }
    if me.wait_recv(true, Duration::from_millis(200)).is_some() {
        problems.push("a datagram with the wrong Q_Key arrived".to_string());
    }
    let ah = me.pd.create_ah(gid).expect("address handle");
    let answer = pattern(3000, 99);
    let i = me.post_send(&ah, qpn, QKEY, &answer, false, Some(0x5eed));
    match me.wait_send() {
        Some(cqe) if cqe.opcode == mlx5::MLX5_CQE_REQ && cqe.wqe_counter == i => {}
        other => problems.push(format!("answer's send completion: {other:?}")),
    }
    let verdict = if problems.is_empty() {
        "ok".to_string()
    } else {
        problems.join(", ")
    };
    say(format!("RESULT {verdict}"));
    assert_eq!(read_line(), "BYE");
    say(format!("DONE {}", me.device.link_stats().tx_shm));
}
