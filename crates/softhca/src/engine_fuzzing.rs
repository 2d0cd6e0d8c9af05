//! The checks the cargo-fuzz target `engine_packets` and the seeded test
//! `tests/softhca_engine_fuzz.rs` run: one RC QP in RTS, with registered
//! memory, posted receives and outstanding requests of its own, and beside
//! it one UD QP in RTS with its own copy of that memory, its receives and a
//! datagram of its own to send, both fed a sequence of packets built from
//! arbitrary bytes. Not for production use: it
//! panics when an invariant breaks, which is what a fuzzer looks for.
//!
//! Invariants checked after every packet:
//! - nothing panics (the engine's own code included);
//! - regions no packet may modify keep their bytes: one granting only
//!   remote read, one granting no remote right, one with local write only
//!   that no work request names;
//! - every packet the QP sends emits and parses back (ICRC included) to the
//!   same meaning;
//! - the QP never queues more completions than work requests were posted;
//! - the UD QP writes only its receive buffers, and only datagrams with
//!   its Q_Key, for its QPN and P_Key, reach them.
//!
//! Input format, repeated until the input ends: a control byte, a signed PSN
//! offset byte, a region/offset byte, a two-byte length, then that many bytes
//! (or what is left) taken as a datagram. The control byte chooses which
//! header fields are overwritten so that random input reaches past the QPN,
//! P_Key, PSN and rkey checks instead of being dropped at the door (for the
//! UD QP: its QPN and P_Key, and its Q_Key with `FIX_REMOTE`).

use super::engine::{
    Access, AtomicOp, Instant, LocalData, PathMtu, Qp, QpConfig, QpState, RecvWr, RemoteBuf,
    RtrAttrs, RtsAttrs, SendOp, SendWr, Sge, SimMemory, UdConfig, UdDest, UdQp, UdSendWr,
};
use super::wire::fuzzing::context;
use super::wire::{Gid, Packet, PacketRepr, DEFAULT_PKEY};

const QPN: u32 = 0x12;
const UD_QPN: u32 = 0x13;
const UD_QKEY: u32 = 0x1ee7_a330;
const PEER_QPN: u32 = 0x34;
/// Near the 24-bit wrap, so PSN arithmetic wraps during a run.
const RQ_PSN: u32 = 0xff_ff00;
const SQ_PSN: u32 = 0xff_ffe0;

/// Remote read, write and atomics: where remote writes may land.
const KEY_OPEN: u32 = 0x100;
/// Remote read only.
const KEY_READ_ONLY: u32 = 0x200;
/// No remote right at all.
const KEY_LOCAL: u32 = 0x300;
/// Local write, named by no work request: nothing may change it.
const KEY_UNUSED: u32 = 0x400;
/// Local write: receive buffers and the targets of this QP's READs/atomics.
const KEY_SINK: u32 = 0x500;

const REGION_LEN: usize = 2048;
const REGIONS: [(u32, u64, Access); 5] = [
    (KEY_OPEN, 0x1_0000, Access::ALL),
    (KEY_READ_ONLY, 0x2_0000, Access::REMOTE_READ),
    (KEY_LOCAL, 0x3_0000, Access::LOCAL_READ),
    (KEY_UNUSED, 0x4_0000, Access::LOCAL_WRITE),
    (
        KEY_SINK,
        0x5_0000,
        Access(Access::LOCAL_WRITE.0 | Access::REMOTE_READ.0),
    ),
];
const PROTECTED: [u32; 3] = [KEY_READ_ONLY, KEY_LOCAL, KEY_UNUSED];

/// Overwrite the BTH's destination QP and P_Key with this QP's.
pub const FIX_QP: u8 = 1 << 0;
/// Overwrite the PSN with the expected one plus the offset byte.
pub const FIX_PSN_REQUEST: u8 = 1 << 1;
/// Overwrite the PSN with the requester's oldest unacknowledged plus offset.
pub const FIX_PSN_RESPONSE: u8 = 1 << 2;
/// Point the RETH / atomic header at a registered region.
pub const FIX_REMOTE: u8 = 1 << 3;
/// Let virtual time jump past the retransmission and RNR timers.
pub const ADVANCE_TIME: u8 = 1 << 4;
/// Post one more receive before this packet.
pub const POST_RECV: u8 = 1 << 5;

const MAX_PACKETS: usize = 256;
const MAX_DATAGRAM: usize = 1200;

/// What one run did, so a seeded test can check that inputs reach deep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Packets that parsed and were handed to the QP.
    pub packets: u64,
    /// Memory writes the engine made (all inside allowed regions).
    pub writes: u64,
    /// Packets the QP sent (responses, requests, retransmissions).
    pub sent: u64,
    /// Completions it reported.
    pub completions: u64,
    /// The QP ended in the error state.
    pub qp_error: bool,
    /// Datagrams the UD QP delivered into a receive.
    pub ud_delivered: u64,
}

fn region_base(key: u32) -> u64 {
    REGIONS
        .iter()
        .find(|(k, _, _)| *k == key)
        .map_or(0, |(_, base, _)| *base)
}

fn sink(offset: u64, len: u32) -> Sge {
    Sge {
        addr: region_base(KEY_SINK) + offset,
        len,
        lkey: KEY_SINK,
    }
}

/// A QP in RTS with a few requests of its own outstanding (so that ACKs,
/// NAKs, READ and atomic responses have something to match).
fn setup(fatal_errors: bool) -> (Qp, SimMemory, u64) {
    let mut cfg = QpConfig::new(QPN);
    cfg.responder_errors_fatal = fatal_errors;
    let mut qp = Qp::new(cfg);
    let mut mem = SimMemory::new();
    for (i, (key, base, access)) in REGIONS.iter().enumerate() {
        mem.register(*key, *base, REGION_LEN, *access);
        if let Some(bytes) = mem.region_mut(*key) {
            for (j, b) in bytes.iter_mut().enumerate() {
                *b = (i * 31 + j) as u8;
            }
        }
    }
    let ready = qp.modify_to_init().is_ok()
        && qp
            .modify_to_rtr(RtrAttrs {
                dest_qpn: PEER_QPN,
                rq_psn: RQ_PSN,
                path_mtu: PathMtu::Mtu256,
                min_rnr_timer: 1,
                max_dest_rd_atomic: 4,
            })
            .is_ok()
        && qp
            .modify_to_rts(RtsAttrs {
                sq_psn: SQ_PSN,
                retry_cnt: 3,
                rnr_retry: 3,
                max_rd_atomic: 4,
                ..RtsAttrs::default()
            })
            .is_ok();
    assert!(ready, "QP setup failed");
    let remote = |offset: u64| RemoteBuf {
        va: 0x9_0000 + offset,
        rkey: 0x77,
    };
    let requests = [
        SendWr::new(
            1,
            SendOp::Send { imm: None },
            LocalData::Sgl(vec![Sge {
                addr: region_base(KEY_OPEN),
                len: 600,
                lkey: KEY_OPEN,
            }]),
        ),
        SendWr::new(
            2,
            SendOp::Read { remote: remote(0) },
            LocalData::Sgl(vec![sink(1024, 700)]),
        ),
        SendWr::new(
            3,
            SendOp::Atomic {
                remote: remote(64),
                op: AtomicOp::FetchAdd { add: 1 },
            },
            LocalData::Sgl(vec![sink(1800, 8)]),
        ),
        SendWr::new(
            4,
            SendOp::Write {
                remote: remote(128),
                imm: Some(7),
            },
            LocalData::Inline(vec![0xab; 40]),
        ),
    ];
    let mut posted = 0;
    for wr in requests {
        if qp.post_send(wr).is_ok() {
            posted += 1;
        }
    }
    (qp, mem, posted)
}

/// A UD QP in RTS with one datagram of its own to send.
fn setup_ud(mem: &SimMemory) -> (UdQp, SimMemory, u64) {
    let ctx = context();
    let mut qp = UdQp::new(UdConfig::new(UD_QPN, Gid::from_endpoint(ctx.dst)));
    let ready = qp.modify_to_init(UD_QKEY).is_ok()
        && qp.modify_to_rtr().is_ok()
        && qp.modify_to_rts(7).is_ok();
    assert!(ready, "UD QP setup failed");
    let send = UdSendWr {
        wr_id: 1,
        dest: UdDest {
            gid: Gid::from_endpoint(ctx.src),
            qpn: PEER_QPN,
            qkey: UD_QKEY,
        },
        imm: Some(3),
        local: LocalData::Sgl(vec![Sge {
            addr: region_base(KEY_OPEN),
            len: 200,
            lkey: KEY_OPEN,
        }]),
        signaled: true,
        solicited: false,
    };
    let posted = u64::from(qp.post_send(send).is_ok());
    (qp, mem.clone(), posted)
}

/// Drains the UD QP and checks every datagram it sends.
fn drain_ud(qp: &mut UdQp, mem: &mut SimMemory) -> u64 {
    let ctx = context();
    let mut buf = vec![0u8; 8192];
    while let Some(transmit) = qp.poll_transmit(mem) {
        let repr = transmit.repr();
        let len = repr.buffer_len();
        assert!(len <= buf.len(), "UD QP sent a {len}-byte packet");
        assert_eq!(repr.emit(&mut buf[..len], &ctx), Ok(len));
        assert_eq!(PacketRepr::parse(&buf[..len], &ctx), Ok(repr));
    }
    std::iter::from_fn(|| qp.poll_completion()).count() as u64
}

fn snapshot(mem: &SimMemory) -> Vec<Vec<u8>> {
    PROTECTED
        .iter()
        .map(|key| mem.region(*key).map(<[u8]>::to_vec).unwrap_or_default())
        .collect()
}

/// Drains what the QP has to say and checks every packet it sends.
fn drain(qp: &mut Qp, mem: &mut SimMemory, now: Instant, outcome: &mut Outcome) {
    let ctx = context();
    let mut buf = vec![0u8; 8192];
    // A responder may queue many responses; each call yields one packet.
    for _ in 0..4096 {
        let Some(transmit) = qp.poll_transmit(now, mem) else {
            break;
        };
        outcome.sent += 1;
        let repr = transmit.repr();
        let len = repr.buffer_len();
        assert!(len <= buf.len(), "engine sent a {len}-byte packet");
        let written = repr.emit(&mut buf[..len], &ctx);
        assert_eq!(written, Ok(len), "engine packet does not emit: {repr:?}");
        let back = PacketRepr::parse(&buf[..len], &ctx);
        assert_eq!(back, Ok(repr), "engine packet does not parse back");
    }
    while qp.poll_completion().is_some() {
        outcome.completions += 1;
    }
}

/// Runs one input; panics if an invariant breaks.
pub fn exercise(input: &[u8]) -> Outcome {
    let mut outcome = Outcome::default();
    let fatal_errors = input.first().is_some_and(|b| b & 1 == 1);
    let (mut qp, mut mem, mut posted) = setup(fatal_errors);
    let (mut ud, mut ud_mem, mut ud_posted) = setup_ud(&mem);
    let mut ud_completions = drain_ud(&mut ud, &mut ud_mem);
    let protected = snapshot(&mem);
    let mut now = Instant::from_micros(1);
    drain(&mut qp, &mut mem, now, &mut outcome);

    let mut rest = input.get(1..).unwrap_or_default();
    let mut recv_offset = 0u64;
    for _ in 0..MAX_PACKETS {
        let [control, psn_offset, target, len_hi, len_lo, tail @ ..] = rest else {
            break;
        };
        let len = usize::from(u16::from_be_bytes([*len_hi, *len_lo])) % MAX_DATAGRAM;
        let (bytes, next) = tail.split_at(len.min(tail.len()));
        rest = next;

        if control & POST_RECV != 0 {
            let wr = RecvWr {
                wr_id: 100 + posted,
                sgl: vec![sink(recv_offset % 1024, 300)],
            };
            recv_offset += 300;
            if ud.post_recv(wr.clone()).is_ok() {
                ud_posted += 1;
            }
            if qp.post_recv(wr).is_ok() {
                posted += 1;
            }
        }
        if control & ADVANCE_TIME != 0 {
            now = Instant::from_nanos(now.as_nanos().saturating_add(1 << 33));
            qp.handle_timeout(now);
        }

        let Ok(view) = Packet::new_checked(bytes) else {
            continue;
        };
        let Ok(mut packet) = PacketRepr::parse_unverified(&view) else {
            continue;
        };
        fix_up(&mut packet, &qp, *control, *psn_offset as i8, *target);
        let mut datagram = packet;
        if control & FIX_QP != 0 {
            datagram.bth.dest_qp = UD_QPN;
        }
        if let Some(deth) = datagram.deth.as_mut().filter(|_| control & FIX_REMOTE != 0) {
            deth.qkey = UD_QKEY;
        }
        let before = ud.stats().delivered;
        ud.handle_packet(&datagram, Gid::from_endpoint(context().src), &mut ud_mem);
        if ud.stats().delivered > before {
            let deth = datagram.deth.unwrap_or_default();
            assert!(datagram.bth.opcode.is_ud() && deth.qkey == UD_QKEY);
            assert_eq!(
                (datagram.bth.dest_qp, datagram.bth.pkey),
                (UD_QPN, DEFAULT_PKEY)
            );
        }
        ud_completions += drain_ud(&mut ud, &mut ud_mem);
        assert_eq!(
            snapshot(&ud_mem),
            protected,
            "the UD QP changed a protected region"
        );
        assert!(ud_completions <= ud_posted, "UD QP invented completions");
        qp.handle_packet(now, &packet, &mut mem);
        outcome.packets += 1;
        drain(&mut qp, &mut mem, now, &mut outcome);

        assert_eq!(snapshot(&mem), protected, "a protected region changed");
        // Each posted request completes at most once (unsignalled ones may
        // not at all); the QP must never invent completions.
        assert!(
            outcome.completions <= posted,
            "{} completions for {posted} work requests",
            outcome.completions
        );
    }
    outcome.writes = mem.writes_accepted();
    outcome.qp_error = qp.state() == QpState::Error;
    outcome.ud_delivered = ud.stats().delivered;
    outcome
}

fn fix_up(packet: &mut PacketRepr<'_>, qp: &Qp, control: u8, psn_offset: i8, target: u8) {
    if control & FIX_QP != 0 {
        packet.bth.dest_qp = QPN;
        packet.bth.pkey = DEFAULT_PKEY;
    }
    let base_psn = if control & FIX_PSN_REQUEST != 0 {
        Some(qp.next_rcv_psn())
    } else if control & FIX_PSN_RESPONSE != 0 {
        Some(qp.unacked_psn())
    } else {
        None
    };
    if let Some(base) = base_psn {
        packet.bth.psn = base.wrapping_add_signed(i32::from(psn_offset)) & 0xff_ffff;
    }
    if control & FIX_REMOTE != 0 {
        let (key, base, _) = REGIONS[usize::from(target) % REGIONS.len()];
        // Offsets up to a little past the end, to probe the bounds check.
        let va = base + u64::from(target) * 9;
        if let Some(reth) = packet.reth.as_mut() {
            reth.rkey = key;
            reth.va = va;
        }
        if let Some(atomic) = packet.atomic.as_mut() {
            atomic.rkey = key;
            atomic.va = va & !7;
        }
        if let Some(atomic) = packet.ext_atomic.as_mut() {
            atomic.rkey = key;
            atomic.va = va & !7;
        }
    }
}
