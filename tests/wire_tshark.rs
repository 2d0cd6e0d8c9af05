//! Does Wireshark read our packets as RoCEv2? Writes a pcap (raw IPv4 link
//! type, through `wire::pcap`) with one UDP datagram per opcode, then runs
//! `tshark -d udp.port==N,infiniband -V` on it and checks that every packet
//! is decoded as InfiniBand with the right opcode, nothing is malformed, and
//! the ICRC Wireshark reports matches ours. Skipped, with a message, where
//! tshark is not installed.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::Command;

use std::time::Duration;

use uct::hca::soft::wire::pcap::PcapWriter;
use uct::hca::soft::wire::*;

/// A UDP port Wireshark does not associate with RoCEv2 by itself, so the
/// decode-as option is what makes it work.
const PORT: u16 = 18515;
const SRC: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 40000);
const DST: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), PORT);
fn sample(opcode: Opcode, payload: &[u8]) -> PacketRepr<'_> {
    let layout = opcode.layout();
    let mut p = PacketRepr::new(
        Bth::new(opcode, 0x11, 0x100),
        if layout.payload { payload } else { &[] },
    );
    p.deth = layout.deth.then_some(Deth {
        qkey: 0x1ee7_a330,
        src_qp: 0x000123,
    });
    p.reth = layout.reth.then_some(Reth {
        va: 0x1000,
        rkey: 0x22,
        dma_len: 5,
    });
    p.atomic = layout.atomic.then_some(AtomicEth {
        va: 0x2000,
        rkey: 0x33,
        swap_add: 1,
        compare: 2,
    });
    p.ext_atomic = layout.ext_atomic.then_some(ExtAtomicEth {
        va: 0x3000,
        rkey: 0x44,
        size: AtomicSize::Bits64,
        swap_add: 1,
        compare: 2,
        swap_add_mask: 3,
        compare_mask: 4,
    });
    p.aeth = layout.aeth.then_some(Aeth {
        syndrome: AethSyndrome::Ack { credits: 0x1f },
        msn: 1,
    });
    p.atomic_ack = layout.atomic_ack.then_some(AtomicAckEth { orig: 3 });
    p.imm = layout.imm.then_some(0x0102_0304);
    p
}

/// Wireshark's name for each opcode (its InfiniBand dissector's strings).
fn wireshark_opcode_line(op: Opcode) -> String {
    let name = match op {
        Opcode::SendFirst => "SEND First",
        Opcode::SendMiddle => "SEND Middle",
        Opcode::SendLast => "SEND Last",
        Opcode::SendLastImm => "SEND Last with Immediate",
        Opcode::SendOnly => "SEND Only",
        Opcode::SendOnlyImm => "SEND Only with Immediate",
        Opcode::WriteFirst => "RDMA WRITE First",
        Opcode::WriteMiddle => "RDMA WRITE Middle",
        Opcode::WriteLast => "RDMA WRITE Last",
        Opcode::WriteLastImm => "RDMA WRITE Last with Immediate",
        Opcode::WriteOnly => "RDMA WRITE Only",
        Opcode::WriteOnlyImm => "RDMA WRITE Only with Immediate",
        Opcode::ReadRequest => "RDMA READ Request",
        Opcode::ReadResponseFirst => "RDMA READ response First",
        Opcode::ReadResponseMiddle => "RDMA READ response Middle",
        Opcode::ReadResponseLast => "RDMA READ response Last",
        Opcode::ReadResponseOnly => "RDMA READ response Only",
        Opcode::Acknowledge => "Acknowledge",
        Opcode::AtomicAcknowledge => "ATOMIC Acknowledge",
        Opcode::CompareSwap => "CmpSwap",
        Opcode::FetchAdd => "FetchAdd",
        Opcode::UdSendOnly => {
            return format!(
                "Opcode: Unreliable Datagram (UD) - SEND only ({})",
                op.as_u8()
            );
        }
        Opcode::UdSendOnlyImm => {
            return format!(
                "Opcode: Unreliable Datagram (UD) - SEND only with Immediate ({})",
                op.as_u8()
            );
        }
        // Our masked-atomic extension lives in the vendor-specific range,
        // which Wireshark shows as an unknown opcode with raw header bytes.
        Opcode::MaskedCompareSwap | Opcode::MaskedFetchAdd => {
            return format!("Opcode: Unknown ({})", op.as_u8());
        }
    };
    format!("Opcode: Reliable Connection (RC) - {name} ({})", op.as_u8())
}

/// Heuristic dissectors that Wireshark tries on InfiniBand payloads. Our
/// payloads are UCX messages, not these protocols, and a heuristic that
/// misfires reports *its* protocol as malformed; so those protocols are
/// disabled.
const PAYLOAD_HEURISTICS: [&str; 10] = [
    "smc",
    "smb_direct",
    "rpcordma",
    "nvme-rdma",
    "lnet",
    "iser",
    "ethertype",
    "infiniband.eoib",
    "infiniband_sdp",
    "fcoib",
];

#[test]
fn tshark_decodes_every_opcode() {
    let Ok(version) = Command::new("tshark").arg("--version").output() else {
        eprintln!("SKIPPED: tshark not installed (apt-get install tshark)");
        return;
    };
    assert!(version.status.success());

    let ctx = IcrcContext::new(SRC, DST);
    let payload = *b"hello";
    let mut frames = Vec::new();
    let mut reprs = Vec::new();
    let mut icrc_bytes = Vec::new();
    for (i, op) in Opcode::ALL.into_iter().enumerate() {
        let mut repr = sample(op, &payload);
        repr.bth.psn = 0x100 + i as u32;
        let mut roce = vec![0u8; repr.buffer_len()];
        let n = repr.emit(&mut roce, &ctx).unwrap();
        let mut trailer = [0u8; 4];
        trailer.copy_from_slice(&roce[n - 4..]);
        icrc_bytes.push(trailer);
        reprs.push(repr);
        frames.push(roce);
    }
    let path = std::env::temp_dir().join(format!("uct-wire-{}.pcap", std::process::id()));
    let mut pcap = PcapWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    for (i, roce) in frames.iter().enumerate() {
        let time = Duration::from_millis(1_700_000_000_000 + i as u64);
        pcap.write_datagram(time, SRC, DST, roce).unwrap();
    }
    pcap.flush().unwrap();
    drop(pcap);
    let mut cmd = Command::new("tshark");
    cmd.arg("-r")
        .arg(&path)
        .args(["-d", &format!("udp.port=={PORT},infiniband"), "-V"]);
    for h in PAYLOAD_HEURISTICS {
        cmd.args(["--disable-protocol", h]);
    }
    let out = cmd.output().unwrap();
    let _ = std::fs::remove_file(&path);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("Malformed"), "malformed packets:\n{text}");

    let decoded: Vec<&str> = text
        .split("\nFrame ")
        .filter(|f| f.contains("bytes on wire"))
        .collect();
    assert_eq!(decoded.len(), reprs.len(), "one frame per opcode:\n{text}");
    for ((frame, repr), icrc) in decoded.iter().zip(&reprs).zip(&icrc_bytes) {
        let op = repr.bth.opcode;
        let expect = |needle: String| {
            assert!(
                frame.contains(&needle),
                "{op:?}: `{needle}` missing in\n{frame}"
            );
        };
        expect("InfiniBand".into());
        expect(wireshark_opcode_line(op));
        if op.as_u8() >= 0xc0 {
            continue;
        }
        expect(format!("Packet Sequence Number: {}", repr.bth.psn));
        expect("Destination Queue Pair: 0x000011".into());
        // Wireshark shows the trailer's bytes as a big-endian number.
        expect(format!(
            "Invariant CRC: 0x{:08x}",
            u32::from_be_bytes(*icrc)
        ));
        if repr.deth.is_some() {
            expect("Queue Key: 0x000000001ee7a330".into());
            expect("Source Queue Pair: 0x00000123".into());
        }
        if repr.reth.is_some() {
            expect("Virtual Address: 0x0000000000001000".into());
            expect("Remote Key: 0x00000022".into());
            expect("DMA Length: 5".into());
        }
        if repr.imm.is_some() {
            expect("Immediate Data: 01020304".into());
        }
        if repr.aeth.is_some() {
            expect("Credit Count: 31".into());
            expect("Message Sequence Number: 1".into());
        }
        if repr.atomic.is_some() {
            expect("Swap (Or Add) Data: 1".into());
            expect("Compare Data: 2".into());
        }
        if repr.atomic_ack.is_some() {
            expect("Original Remote Data: 3".into());
        }
        if !repr.payload.is_empty() {
            expect("Pad Count: 3".into());
            expect("Data: 68656c6c6f000000".into());
        }
    }
}
