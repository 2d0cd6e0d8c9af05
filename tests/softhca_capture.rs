//! Capture check: the datagrams the soft HCA puts on the wire decode as
//! InfiniBand (RoCEv2) in Wireshark's `tshark`, with no malformed packet and
//! no error-level expert finding. Captures on `lo` with `dumpcap` (needs
//! root or capture rights); skipped with a message when the tools are
//! missing.

mod softhca_common;

use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use softhca_common::*;
use uct::hca::DeviceAddress;
use uct::mlx5::{self, AtomicSize};

fn tool_available(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn port_of(side: &Side) -> u16 {
    let DeviceAddress::Udp(addr) = side.endpoint().address;
    addr.port()
}

/// Every opcode once, plus an RNR NAK and a remote access NAK.
fn traffic(a: &mut Side, b: &mut Side) {
    let rkey = b.endpoint().rkey;
    let ok = |side: &mut Side, index: u16| {
        let cqe = side.wait_send(LONG).expect("CQE");
        assert_eq!(cqe.wqe_counter, index);
        cqe
    };
    // RNR first: no receive posted yet.
    let i = a.post(&Op::SendInline(&pattern(64, 1)));
    assert!(a.wait_send(Duration::from_millis(30)).is_none());
    b.post_recvs(16);
    assert_eq!(ok(a, i).opcode, mlx5::MLX5_CQE_REQ);
    a.write_buf(0, &pattern(5000, 2));
    let i = a.post(&Op::Send {
        offset: 0,
        len: 5000,
        imm: Some(9),
    });
    ok(a, i);
    let i = a.post(&Op::Write {
        offset: 0,
        len: 5000,
        remote: b.buf_addr(0),
        rkey,
        imm: None,
    });
    ok(a, i);
    let i = a.post(&Op::Write {
        offset: 0,
        len: 100,
        remote: b.buf_addr(8192),
        rkey,
        imm: Some(3),
    });
    ok(a, i);
    let i = a.post(&Op::Read {
        offset: 10_000,
        len: 3000,
        remote: b.buf_addr(0),
        rkey,
    });
    ok(a, i);
    let i = a.post(&Op::Read {
        offset: 14_000,
        len: 100,
        remote: b.buf_addr(0),
        rkey,
    });
    ok(a, i);
    let i = a.post(&Op::CompareSwap {
        result_offset: 20_000,
        remote: b.buf_addr(16_384),
        rkey,
        compare: 0,
        swap: 1,
    });
    ok(a, i);
    let i = a.post(&Op::FetchAdd {
        result_offset: 20_008,
        remote: b.buf_addr(16_384),
        rkey,
        add: 1,
    });
    ok(a, i);
    let i = a.post(&Op::MaskedFetchAdd {
        size: AtomicSize::Bits32,
        result_offset: 20_016,
        remote: b.buf_addr(16_392),
        rkey,
        add: 1,
        boundary: 0,
    });
    ok(a, i);
    let i = a.post(&Op::MaskedCompareSwap {
        size: AtomicSize::Bits64,
        result_offset: 20_024,
        remote: b.buf_addr(16_400),
        rkey,
        compare: 0,
        compare_mask: u64::MAX,
        swap: 5,
        swap_mask: u64::MAX,
    });
    ok(a, i);
    // Remote access error: NAK, then the QP is in error.
    let i = a.post(&Op::Write {
        offset: 0,
        len: 64,
        remote: 16,
        rkey,
        imm: None,
    });
    assert_eq!(ok(a, i).syndrome, mlx5::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
}

#[test]
fn capture_decodes_as_infiniband() {
    if !tool_available("dumpcap") || !tool_available("tshark") {
        eprintln!("SKIPPED: dumpcap/tshark not installed");
        return;
    }
    let mut a = Side::new(open_soft("capture_a", Ipv4Addr::new(127, 0, 0, 1)));
    let mut b = Side::new(open_soft("capture_b", Ipv4Addr::new(127, 0, 0, 2)));
    a.connect(&b.endpoint(), 12, 7);
    b.connect(&a.endpoint(), 12, 7);
    let (port_a, port_b) = (port_of(&a), port_of(&b));

    let dir = std::env::temp_dir().join(format!("softhca-capture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let pcap = dir.join("softhca.pcapng");
    let filter = format!("udp port {port_a} or udp port {port_b}");
    let mut dumpcap = Command::new("dumpcap")
        .args(["-i", "lo", "-f", &filter, "-w"])
        .arg(&pcap)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dumpcap");
    // dumpcap says "Capturing on ..." once the filter is installed.
    let stderr = dumpcap.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("Capturing on") {
                let _ = tx.send(());
            }
        }
    });
    if rx.recv_timeout(Duration::from_secs(20)).is_err() {
        let _ = dumpcap.kill();
        let _ = dumpcap.wait();
        eprintln!("SKIPPED: dumpcap could not capture on lo (no capture rights?)");
        return;
    }

    traffic(&mut a, &mut b);

    // Let the last datagrams reach the capture, then stop dumpcap cleanly.
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signals our own child process.
    unsafe { libc::kill(dumpcap.id() as libc::pid_t, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while dumpcap.try_wait().ok().flatten().is_none() {
        if Instant::now() > deadline {
            let _ = dumpcap.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = dumpcap.wait();

    let decode = [
        format!("udp.port=={port_a},infiniband"),
        format!("udp.port=={port_b},infiniband"),
    ];
    let tshark = |extra: &[&str]| {
        let out = Command::new("tshark")
            .arg("-r")
            .arg(&pcap)
            .args(["-d", &decode[0], "-d", &decode[1]])
            .args(extra)
            .stderr(Stdio::null())
            .output()
            .expect("tshark");
        // A bad filter would print nothing: never let that pass as "clean".
        assert!(out.status.success(), "tshark {extra:?} failed");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let protocols = tshark(&[
        "-T",
        "fields",
        "-e",
        "frame.protocols",
        "-e",
        "infiniband.bth.opcode",
    ]);
    let lines: Vec<&str> = protocols.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() >= 20, "captured only {} frames", lines.len());
    for line in &lines {
        assert!(
            line.contains("udp:infiniband"),
            "not decoded as InfiniBand: {line}"
        );
    }
    let opcodes: std::collections::BTreeSet<u32> = lines
        .iter()
        .filter_map(|l| l.split('\t').nth(1))
        .filter_map(|o| o.trim().parse().ok())
        .collect();
    // SEND only/first/middle/last-imm, WRITE first/middle/last/only/only-imm,
    // READ request and response first/middle/last/only, ACK, atomic ACK,
    // CS, FA, masked CS, masked FA (BTH opcode values, IBTA vol. 1 9.2).
    for expected in [
        4u32, 0, 1, 3, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 0xc0, 0xc1,
    ] {
        assert!(
            opcodes.contains(&expected),
            "opcode {expected} missing from capture: {opcodes:?}"
        );
    }
    let bad = tshark(&[
        "-Y",
        "_ws.malformed || _ws.expert.severity >= \"error\"",
        "-T",
        "fields",
        "-e",
        "frame.number",
    ]);
    assert!(
        bad.trim().is_empty(),
        "malformed or erroneous frames: {bad}"
    );
    if std::env::var_os("SOFTHCA_KEEP_CAPTURE").is_some() {
        eprintln!(
            "capture kept: {} (ports {port_a}, {port_b})",
            pcap.display()
        );
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
