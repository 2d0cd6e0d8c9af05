//! Capture check: the datagrams the soft HCA puts on the wire decode as
//! InfiniBand (RoCEv2) in Wireshark's `tshark`, with no malformed packet and
//! no error-level expert finding, and every frame's ICRC verifies against
//! its real, captured IPv4 and UDP headers (Wireshark 4.0 does not check
//! RoCEv2 ICRCs, so this test does, with its own reader and CRC code rather
//! than the device's emit path). The ports of a pair on the shared-memory
//! wire are captured too: what wakes a sleeping receiver there never
//! reaches its RoCE port. Captures on `lo` with `dumpcap` (needs root
//! or capture rights); skipped with a message when the tools are missing.

mod softhca_common;
mod softhca_ud_common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use softhca_common::*;
use uct::hca::{Device, DeviceAddress};
use uct::mlx5::{self, AtomicSize};

fn tool_available(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn soft(device: &Device) -> &uct::hca::soft::SoftDevice {
    let Device::Soft(dev) = device else {
        panic!("not a soft HCA device")
    };
    dev
}

/// WRITEs and SENDs from `a` to `b` on the shared-memory wire, `b` never
/// calling progress: each reaches `b` through its sleeping service thread,
/// which `a` wakes.
fn passive_traffic(a: &mut Side, b: &mut Side) {
    b.post_recvs(16);
    for round in 0..5u8 {
        let i = a.post_pattern_write(b, 3000, round);
        assert_eq!(a.wait_send(LONG).expect("WRITE completes").wqe_counter, i);
        assert_eq!(b.read_buf(0, 3000), pattern(3000, round));
        a.post(&Op::SendInline(&[round; 24]));
        a.wait_send(LONG).expect("SEND completes");
        let cqe = b.wait_recv_passive(LONG).expect("receive without progress");
        assert_eq!(cqe.byte_cnt, 24);
        // Let b's service thread go back to sleep.
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn port_of(side: &Side) -> u16 {
    let DeviceAddress::Udp(addr) = side.endpoint().address else {
        panic!("not a soft HCA")
    };
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
    // A pair on the shared-memory wire (the default): nothing of theirs
    // should cross `lo`.
    std::env::remove_var("UCX_SOFT_HCA_WIRE");
    let (mut shm_a, mut shm_b) = pair("capture_shm", 12, 7);
    // dumpcap sees what crosses `lo`: the UDP wire (two devices of one
    // process would otherwise talk through shared memory), one datagram per
    // frame (with GSO it sees the unsegmented messages).
    std::env::set_var("UCX_SOFT_HCA_WIRE", "udp");
    std::env::set_var("UCX_SOFT_HCA_GSO", "n");
    let (mut a, mut b) = pair("capture", 12, 7);
    let (port_a, port_b) = (port_of(&a), port_of(&b));
    let (port_shm_a, port_shm_b) = (port_of(&shm_a), port_of(&shm_b));

    let dir = std::env::temp_dir().join(format!("softhca-capture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // Classic pcap (-P) rather than pcapng: trivial to read back below.
    let pcap = dir.join("softhca.pcap");
    let filter = format!(
        "udp port {port_a} or udp port {port_b} or udp port {port_shm_a} or udp port {port_shm_b}"
    );
    let mut dumpcap = Command::new("dumpcap")
        .args(["-i", "lo", "-P", "-f", &filter, "-w"])
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
    ud_traffic();
    passive_traffic(&mut shm_a, &mut shm_b);
    let shm_stats = soft(&shm_a.device).link_stats();
    assert!(
        shm_stats.tx_wake_ups > 0 && shm_stats.tx_shm == shm_stats.tx_packets,
        "the shared-memory pair woke its receiver, all through the ring: {shm_stats:?}"
    );

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

    let decode: Vec<String> = [port_a, port_b, port_shm_a, port_shm_b]
        .iter()
        .flat_map(|port| ["-d".to_string(), format!("udp.port=={port},infiniband")])
        .collect();
    let tshark = |extra: &[&str]| {
        let out = Command::new("tshark")
            .arg("-r")
            .arg(&pcap)
            .args(&decode)
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
    let shm_frames = tshark(&[
        "-Y",
        &format!("udp.port=={port_shm_a} || udp.port=={port_shm_b}"),
        "-T",
        "fields",
        "-e",
        "frame.number",
    ]);
    assert!(
        shm_frames.trim().is_empty(),
        "frames on the RoCE ports of the shared-memory pair: {shm_frames}"
    );
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
    // CS, FA, masked CS, masked FA, UD SEND only with and without
    // immediate (BTH opcode values, IBTA vol. 1 9.2).
    for expected in [
        4u32, 0, 1, 3, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 0xc0, 0xc1, 0x64, 0x65,
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

    let frames = read_pcap_ipv4(&std::fs::read(&pcap).expect("read capture"));
    assert_eq!(
        frames.len(),
        lines.len(),
        "frames read vs decoded by tshark"
    );
    for (number, frame) in frames.iter().enumerate() {
        let number = number + 1;
        let (ip, udp_and_payload) = frame.split_at(ipv4_header_len(frame));
        assert_eq!(ip[9], 17, "frame {number}: not UDP");
        assert_eq!(
            &ip[4..8],
            &[0, 0, 0x40, 0],
            "frame {number}: expected IP id 0 and only Don't-Fragment set"
        );
        let received = u32::from_le_bytes(
            udp_and_payload[udp_and_payload.len() - 4..]
                .try_into()
                .expect("4 bytes"),
        );
        assert_eq!(
            roce_icrc(ip, udp_and_payload),
            received,
            "frame {number}: ICRC does not verify"
        );
    }

    if std::env::var_os("SOFTHCA_KEEP_CAPTURE").is_some() {
        eprintln!(
            "capture kept: {} (ports {port_a}, {port_b})",
            pcap.display()
        );
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Two datagrams between UD QPs on the captured devices (the same
/// `capture_a` and `capture_b`, so the same ports).
fn ud_traffic() {
    use softhca_ud_common::{UdSide, QKEY};
    let mut a = UdSide::new("capture_a", std::net::Ipv4Addr::new(127, 0, 0, 1));
    let mut b = UdSide::new("capture_b", std::net::Ipv4Addr::new(127, 0, 0, 2));
    b.post_recvs(2);
    let ah = a.pd.create_ah(b.device.gid()).expect("address handle");
    a.post_send(&ah, b.sq.qpn, QKEY, b"datagram", true, None);
    a.post_send(&ah, b.sq.qpn, QKEY, &[7; 300], false, Some(9));
    for _ in 0..2 {
        a.wait_send().expect("UD send CQE");
        b.wait_recv(true, LONG).expect("UD receive CQE");
    }
}

/// The IPv4 packets (header, UDP header, payload) of a classic pcap file
/// captured on `lo` (Ethernet or Linux "cooked" framing).
fn read_pcap_ipv4(file: &[u8]) -> Vec<Vec<u8>> {
    assert!(file.len() >= 24, "capture shorter than a pcap header");
    let magic = u32::from_le_bytes(file[0..4].try_into().expect("4 bytes"));
    let little = match magic {
        0xa1b2_c3d4 | 0xa1b2_3c4d => true,
        0xd4c3_b2a1 | 0x4d3c_b2a1 => false,
        other => panic!("not a pcap file (magic {other:#x})"),
    };
    let word = |at: usize| {
        let bytes: [u8; 4] = file[at..at + 4].try_into().expect("4 bytes");
        if little {
            u32::from_le_bytes(bytes)
        } else {
            u32::from_be_bytes(bytes)
        }
    };
    // Link-layer header length and the offset of its EtherType field.
    let (link_len, ethertype_at) = match word(20) {
        1 => (14, 12),   // Ethernet
        113 => (16, 14), // Linux cooked v1
        276 => (20, 0),  // Linux cooked v2
        other => panic!("unexpected pcap link type {other}"),
    };
    let mut frames = Vec::new();
    let mut at = 24;
    while at + 16 <= file.len() {
        let captured = word(at + 8) as usize;
        let original = word(at + 12) as usize;
        let data = &file[at + 16..at + 16 + captured];
        assert_eq!(captured, original, "frame truncated by the capture");
        assert_eq!(
            &data[ethertype_at..ethertype_at + 2],
            &[0x08, 0x00],
            "not IPv4"
        );
        let ip = &data[link_len..];
        let total_len = u16::from_be_bytes([ip[2], ip[3]]) as usize;
        frames.push(ip[..total_len].to_vec());
        at += 16 + captured;
    }
    assert_eq!(at, file.len(), "trailing bytes in the capture");
    frames
}

fn ipv4_header_len(ip: &[u8]) -> usize {
    assert_eq!(ip[0] >> 4, 4, "not IPv4");
    usize::from(ip[0] & 0x0f) * 4
}

/// The RoCEv2 ICRC of one packet, from its real headers: CRC-32 (IEEE,
/// reflected) over 8 bytes of ones for the absent LRH, the IPv4 header with
/// TOS, TTL and checksum set to ones, the UDP header with its checksum set
/// to ones, the BTH with its FECN/BECN/reserved byte set to ones, and the
/// rest of the packet up to the ICRC.
fn roce_icrc(ip: &[u8], udp_and_payload: &[u8]) -> u32 {
    const UDP_HEADER: usize = 8;
    const BTH: usize = 12;
    let mut ip = ip.to_vec();
    ip[1] = 0xff;
    ip[8] = 0xff;
    ip[10] = 0xff;
    ip[11] = 0xff;
    let mut covered = udp_and_payload[..udp_and_payload.len() - 4].to_vec();
    assert!(covered.len() >= UDP_HEADER + BTH, "shorter than UDP + BTH");
    covered[6] = 0xff;
    covered[7] = 0xff;
    covered[UDP_HEADER + 4] = 0xff;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&[0xff; 8]);
    crc.update(&ip);
    crc.update(&covered);
    crc.finalize()
}
