//! Error paths of the RC engine over the simulated link: RNR, retry
//! exhaustion after a cut, flushes, remote access errors that leave memory
//! untouched, local errors, and the QP state rules for posting.

mod engine_common;

use std::time::Duration;

use engine_common::poll_all;

use uct::hca::soft::engine::sim::{connected_pair, LinkConfig, PairSetup, SimPair};
use uct::hca::soft::engine::{
    Access, AtomicOp, Completion, CompletionOpcode, CompletionStatus, Instant, LocalData, Qp,
    QpConfig, QpError, QpState, RecvWr, RemoteBuf, SendOp, SendWr, Sge, SimMemory, WorkQueue,
};

const KEY_LOCAL: u32 = 1;
const KEY_REMOTE: u32 = 2;
const KEY_READ_ONLY: u32 = 3;
const KEY_NO_ATOMIC: u32 = 4;
const BASE_LOCAL: u64 = 0x10_0000;
const BASE_REMOTE: u64 = 0x20_0000;
const BASE_READ_ONLY: u64 = 0x30_0000;
const BASE_NO_ATOMIC: u64 = 0x40_0000;
const REGION: usize = 64 * 1024;

fn memory(fill: u8) -> SimMemory {
    let mut mem = SimMemory::new();
    mem.register(KEY_LOCAL, BASE_LOCAL, REGION, Access::LOCAL_WRITE);
    mem.register(KEY_REMOTE, BASE_REMOTE, REGION, Access::ALL);
    mem.register(KEY_READ_ONLY, BASE_READ_ONLY, REGION, Access::REMOTE_READ);
    mem.register(
        KEY_NO_ATOMIC,
        BASE_NO_ATOMIC,
        REGION,
        Access::REMOTE_READ.union(Access::REMOTE_WRITE),
    );
    for key in [KEY_LOCAL, KEY_REMOTE, KEY_READ_ONLY, KEY_NO_ATOMIC] {
        for (i, b) in mem.region_mut(key).unwrap().iter_mut().enumerate() {
            *b = fill ^ (i as u8) ^ (key as u8);
        }
    }
    mem
}

fn pair(setup: PairSetup, link: LinkConfig) -> SimPair {
    connected_pair(setup, memory(0x10), memory(0x20), link, 7)
}

fn local(len: u32) -> LocalData {
    LocalData::Sgl(vec![Sge {
        addr: BASE_LOCAL,
        len,
        lkey: KEY_LOCAL,
    }])
}

fn send(id: u64, len: u32) -> SendWr {
    SendWr::new(id, SendOp::Send { imm: None }, local(len))
}

fn recv(id: u64, len: u32) -> RecvWr {
    RecvWr {
        wr_id: id,
        sgl: vec![Sge {
            addr: BASE_LOCAL + 0x8000,
            len,
            lkey: KEY_LOCAL,
        }],
    }
}

/// Posts `wr` at B (which RNR-NAKed A's send 1 so far), runs until A
/// completes, checks that send 1 succeeded, and returns B's receive
/// completion.
fn receive_after_rnr(p: &mut SimPair, wr: RecvWr) -> Completion {
    p.b.qp.post_recv(wr).unwrap();
    assert!(p.run_until(Duration::from_millis(10), |p| !p.a.completions.is_empty()));
    assert_eq!(
        send_completions(&p.a.completions),
        vec![(1, CompletionStatus::Success)]
    );
    *first_recv(&p.b.completions)
}

/// The first receive completion among `c`.
fn first_recv(c: &[Completion]) -> &Completion {
    c.iter()
        .find(|c| c.queue == WorkQueue::Recv)
        .expect("a receive completion")
}

fn send_completions(c: &[Completion]) -> Vec<(u64, CompletionStatus)> {
    c.iter()
        .filter(|c| c.queue == WorkQueue::Send)
        .map(|c| (c.wr_id, c.status))
        .collect()
}

fn recv_completions(c: &[Completion]) -> Vec<(u64, CompletionStatus)> {
    c.iter()
        .filter(|c| c.queue == WorkQueue::Recv)
        .map(|c| (c.wr_id, c.status))
        .collect()
}

fn snapshot(mem: &SimMemory) -> Vec<Vec<u8>> {
    [KEY_LOCAL, KEY_REMOTE, KEY_READ_ONLY, KEY_NO_ATOMIC]
        .iter()
        .map(|&k| mem.region(k).unwrap().to_vec())
        .collect()
}

#[test]
fn rnr_then_receive_posted_succeeds() {
    let mut p = pair(PairSetup::default(), LinkConfig::default());
    p.a.qp.post_send(send(1, 3000)).unwrap();
    // No receive at B: RNR NAKs, no completion, for a while.
    p.run_until(Duration::from_millis(1), |_| false);
    assert!(p.b.qp.stats().rnr_naks_sent >= 2, "{:?}", p.b.qp.stats());
    assert!(p.a.qp.stats().rnr_naks_received >= 2);
    assert!(p.a.completions.is_empty());
    assert_eq!(p.a.qp.state(), QpState::Rts);
    let r = receive_after_rnr(&mut p, recv(9, 4096));
    assert_eq!(
        (r.wr_id, r.status, r.byte_len),
        (9, CompletionStatus::Success, 3000)
    );
    let sent = &p.a.mem.region(KEY_LOCAL).unwrap()[..3000];
    assert_eq!(
        &p.b.mem.region(KEY_LOCAL).unwrap()[0x8000..0x8000 + 3000],
        sent
    );
}

#[test]
fn write_with_immediate_waits_for_a_receive_and_writes_once() {
    let mut p = pair(PairSetup::default(), LinkConfig::default());
    let before = p.b.mem.region(KEY_REMOTE).unwrap().to_vec();
    let wr = SendWr::new(
        1,
        SendOp::Write {
            remote: RemoteBuf {
                va: BASE_REMOTE + 10,
                rkey: KEY_REMOTE,
            },
            imm: Some(0xfeed),
        },
        local(500),
    );
    p.a.qp.post_send(wr).unwrap();
    p.run_until(Duration::from_micros(300), |_| false);
    assert!(p.b.qp.stats().rnr_naks_sent >= 1);
    // An RNR-NAKed WRITE-only-with-immediate has written nothing yet.
    assert_eq!(p.b.mem.region(KEY_REMOTE).unwrap(), &before[..]);
    let r = receive_after_rnr(&mut p, recv(5, 0));
    assert_eq!(
        (r.wr_id, r.opcode, r.byte_len, r.imm),
        (5, CompletionOpcode::RecvRdmaWithImm, 500, Some(0xfeed))
    );
    let src = p.a.mem.region(KEY_LOCAL).unwrap()[..500].to_vec();
    assert_eq!(&p.b.mem.region(KEY_REMOTE).unwrap()[10..510], &src[..]);
}

#[test]
fn rnr_retry_exceeded_then_flush() {
    let mut setup = PairSetup::default();
    setup.rts.rnr_retry = 2;
    let mut p = pair(setup, LinkConfig::default());
    p.a.qp.post_send(send(1, 100)).unwrap();
    p.a.qp.post_send(send(2, 100)).unwrap();
    p.a.qp
        .post_send(SendWr::new(3, SendOp::Nop, LocalData::EMPTY))
        .unwrap();
    assert!(p.run_until(Duration::from_secs(1), |p| p.a.completions.len() == 3));
    assert_eq!(
        send_completions(&p.a.completions),
        vec![
            (1, CompletionStatus::RnrRetryExceeded),
            (2, CompletionStatus::WrFlushError),
            (3, CompletionStatus::WrFlushError)
        ]
    );
    // The first NAK and two retries, each NAKed again.
    assert_eq!(p.a.qp.stats().rnr_naks_received, 3);
    assert_eq!(p.a.qp.state(), QpState::Error);
    // The responder is fine and still has no receive consumed.
    assert_eq!(p.b.qp.state(), QpState::Rts);
    assert!(recv_completions(&p.b.completions).is_empty());
}

#[test]
fn retry_exceeded_after_cut_then_flush() {
    let mut setup = PairSetup::default();
    setup.rts.retry_cnt = 3;
    let timeout = setup.rts.ack_timeout.unwrap();
    let mut p = pair(
        setup,
        LinkConfig {
            cut_at: Some(Instant::from_micros(30)),
            ..LinkConfig::default()
        },
    );
    for i in 0..8 {
        p.b.qp.post_recv(recv(100 + i, 4096)).unwrap();
    }
    // Three go through before the cut; later ones cannot.
    for i in 0..3 {
        p.a.qp.post_send(send(i, 64)).unwrap();
    }
    p.run_until(Duration::from_micros(40), |_| false);
    for i in 3..8 {
        p.a.qp.post_send(send(i, 2000)).unwrap();
    }
    let start = p.now;
    assert!(p.run_until(Duration::from_secs(1), |p| p.a.qp.state() == QpState::Error));
    let got = send_completions(&p.a.completions);
    let mut want: Vec<_> = (0..3).map(|i| (i, CompletionStatus::Success)).collect();
    want.push((3, CompletionStatus::RetryExceeded));
    want.extend((4..8).map(|i| (i, CompletionStatus::WrFlushError)));
    assert_eq!(got, want);
    // The first transmission plus retry_cnt retransmissions, each timing out.
    assert_eq!(p.a.qp.stats().timeouts, 4);
    let elapsed = p.now.saturating_duration_since(start);
    assert!(
        elapsed >= timeout * 4 && elapsed < timeout * 5,
        "{elapsed:?}"
    );
    // Posting after the error completes at once with a flush.
    p.a.qp.post_send(send(9, 1)).unwrap();
    p.flush();
    assert_eq!(
        send_completions(&p.a.completions).last(),
        Some(&(9, CompletionStatus::WrFlushError))
    );
}

#[test]
fn cut_during_read_and_atomic_reports_retry_exceeded() {
    let mut setup = PairSetup::default();
    setup.rts.retry_cnt = 1;
    let mut p = pair(
        setup,
        LinkConfig {
            cut_at: Some(Instant::ZERO),
            ..LinkConfig::default()
        },
    );
    let read = SendWr::new(
        1,
        SendOp::Read {
            remote: RemoteBuf {
                va: BASE_REMOTE,
                rkey: KEY_REMOTE,
            },
        },
        local(5000),
    );
    let fa = SendWr::new(
        2,
        SendOp::Atomic {
            remote: RemoteBuf {
                va: BASE_REMOTE + 64,
                rkey: KEY_REMOTE,
            },
            op: AtomicOp::FetchAdd { add: 1 },
        },
        LocalData::Sgl(vec![Sge {
            addr: BASE_LOCAL + 0x9000,
            len: 8,
            lkey: KEY_LOCAL,
        }]),
    );
    let before = snapshot(&p.a.mem);
    p.a.qp.post_send(read).unwrap();
    p.a.qp.post_send(fa).unwrap();
    assert!(p.run_until(Duration::from_secs(1), |p| p.a.completions.len() == 2));
    assert_eq!(
        send_completions(&p.a.completions),
        vec![
            (1, CompletionStatus::RetryExceeded),
            (2, CompletionStatus::WrFlushError)
        ]
    );
    // Nothing arrived, so nothing was written locally either.
    assert_eq!(snapshot(&p.a.mem), before);
}

/// Runs one request against B and checks it fails with `status` and that
/// B's memory is exactly as before; a following request is flushed.
fn remote_error_case(op: SendOp, local: LocalData, status: CompletionStatus) {
    for fatal in [true, false] {
        remote_error_case_with(op, local.clone(), status, fatal);
    }
}

fn remote_error_case_with(op: SendOp, local: LocalData, status: CompletionStatus, fatal: bool) {
    let setup = PairSetup {
        responder_errors_fatal: fatal,
        ..PairSetup::default()
    };
    let mut p = pair(setup, LinkConfig::default());
    p.b.qp.post_recv(recv(50, 64)).unwrap();
    let before_b = snapshot(&p.b.mem);
    p.a.qp.post_send(SendWr::new(1, op, local)).unwrap();
    p.a.qp.post_send(send(2, 10)).unwrap();
    assert!(
        p.run_until(Duration::from_secs(1), |p| p.a.completions.len() == 2),
        "{op:?}"
    );
    assert_eq!(
        send_completions(&p.a.completions),
        vec![(1, status), (2, CompletionStatus::WrFlushError)],
        "{op:?}"
    );
    assert_eq!(p.a.qp.state(), QpState::Error);
    assert_eq!(
        snapshot(&p.b.mem),
        before_b,
        "{op:?} changed the responder's memory"
    );
    assert_eq!(p.b.mem.atomics_executed(), 0);
    if fatal {
        // As on hardware, the responder's QP is in error too, its receive
        // flushed.
        assert_eq!(p.b.qp.state(), QpState::Error);
        assert_eq!(
            recv_completions(&p.b.completions),
            vec![(50, CompletionStatus::WrFlushError)]
        );
    } else {
        assert_eq!(p.b.qp.state(), QpState::Rts);
        assert!(p.b.completions.is_empty());
    }
}

#[test]
fn remote_access_errors_leave_memory_untouched() {
    let remote = |va, rkey| RemoteBuf { va, rkey };
    let result = LocalData::Sgl(vec![Sge {
        addr: BASE_LOCAL,
        len: 8,
        lkey: KEY_LOCAL,
    }]);
    let access = CompletionStatus::RemoteAccessError;
    // Unknown rkey.
    remote_error_case(
        SendOp::Write {
            remote: remote(BASE_REMOTE, 77),
            imm: None,
        },
        local(100),
        access,
    );
    // Multi-packet WRITE whose last byte is outside the region: not one
    // packet of it may land.
    let end = BASE_REMOTE + REGION as u64;
    remote_error_case(
        SendOp::Write {
            remote: remote(end - 4000, KEY_REMOTE),
            imm: None,
        },
        local(4001),
        access,
    );
    // WRITE into a region without remote write.
    remote_error_case(
        SendOp::Write {
            remote: remote(BASE_READ_ONLY, KEY_READ_ONLY),
            imm: Some(1),
        },
        local(10),
        access,
    );
    // READ past the end.
    remote_error_case(
        SendOp::Read {
            remote: remote(end - 10, KEY_REMOTE),
        },
        local(11),
        access,
    );
    // Atomic without remote atomic right.
    remote_error_case(
        SendOp::Atomic {
            remote: remote(BASE_NO_ATOMIC, KEY_NO_ATOMIC),
            op: AtomicOp::FetchAdd { add: 1 },
        },
        result.clone(),
        access,
    );
    // Address arithmetic that wraps.
    remote_error_case(
        SendOp::Read {
            remote: remote(u64::MAX - 3, KEY_REMOTE),
        },
        local(100),
        access,
    );
    // Misaligned atomic: invalid request.
    remote_error_case(
        SendOp::Atomic {
            remote: remote(BASE_REMOTE + 4, KEY_REMOTE),
            op: AtomicOp::CompareSwap {
                compare: 0,
                swap: 1,
            },
        },
        result,
        CompletionStatus::RemoteInvalidRequest,
    );
}

#[test]
fn send_larger_than_receive_fails_both_sides() {
    let mut p = pair(PairSetup::default(), LinkConfig::default());
    p.b.qp.post_recv(recv(7, 1000)).unwrap();
    p.b.qp.post_recv(recv(8, 1000)).unwrap();
    p.a.qp.post_send(send(1, 1500)).unwrap();
    assert!(p.run_until(Duration::from_secs(1), |p| !p.a.completions.is_empty()));
    assert_eq!(
        send_completions(&p.a.completions),
        vec![(1, CompletionStatus::RemoteInvalidRequest)]
    );
    assert_eq!(
        recv_completions(&p.b.completions),
        vec![
            (7, CompletionStatus::LocalLengthError),
            (8, CompletionStatus::WrFlushError)
        ]
    );
    assert_eq!(p.b.qp.state(), QpState::Error);
}

#[test]
fn local_protection_error_on_bad_lkey() {
    let mut p = pair(PairSetup::default(), LinkConfig::default());
    p.b.qp.post_recv(recv(7, 1000)).unwrap();
    let bad = SendWr::new(
        1,
        SendOp::Send { imm: None },
        LocalData::Sgl(vec![Sge {
            addr: BASE_LOCAL,
            len: 10,
            lkey: 99,
        }]),
    );
    p.a.qp.post_send(send(0, 10)).unwrap();
    p.a.qp.post_send(bad).unwrap();
    p.a.qp.post_send(send(2, 10)).unwrap();
    p.run_until(Duration::from_secs(1), |p| p.a.completions.len() == 3);
    let got = send_completions(&p.a.completions);
    // The first one may or may not have been acknowledged before the error.
    assert!(
        got == vec![
            (0, CompletionStatus::Success),
            (1, CompletionStatus::LocalProtectionError),
            (2, CompletionStatus::WrFlushError)
        ] || got
            == vec![
                (0, CompletionStatus::WrFlushError),
                (1, CompletionStatus::LocalProtectionError),
                (2, CompletionStatus::WrFlushError)
            ],
        "{got:?}"
    );
    // A READ into a region without local write is refused before it is sent.
    let mut p = pair(PairSetup::default(), LinkConfig::default());
    let read = SendWr::new(
        1,
        SendOp::Read {
            remote: RemoteBuf {
                va: BASE_REMOTE,
                rkey: KEY_REMOTE,
            },
        },
        LocalData::Sgl(vec![Sge {
            addr: BASE_READ_ONLY,
            len: 10,
            lkey: KEY_READ_ONLY,
        }]),
    );
    p.a.qp.post_send(read).unwrap();
    p.run_until(Duration::from_secs(1), |p| !p.a.completions.is_empty());
    assert_eq!(
        send_completions(&p.a.completions),
        vec![(1, CompletionStatus::LocalProtectionError)]
    );
    assert_eq!(p.b.qp.stats().packets_received, 0);
}

#[test]
fn posting_rules_by_state() {
    let mut qp = Qp::new(QpConfig::new(5));
    assert_eq!(qp.state(), QpState::Reset);
    assert_eq!(
        qp.post_send(send(1, 1)),
        Err(QpError::InvalidState(QpState::Reset))
    );
    assert_eq!(
        qp.post_recv(recv(1, 1)),
        Err(QpError::InvalidState(QpState::Reset))
    );
    assert!(qp.modify_to_rts(Default::default()).is_err());
    qp.modify_to_init().unwrap();
    qp.post_recv(recv(1, 10)).unwrap();
    assert_eq!(
        qp.post_send(send(1, 1)),
        Err(QpError::InvalidState(QpState::Init))
    );
    assert!(qp
        .modify_to_rtr(uct::hca::soft::engine::RtrAttrs {
            dest_qpn: 1 << 24,
            ..Default::default()
        })
        .is_err());
    qp.modify_to_rtr(uct::hca::soft::engine::RtrAttrs {
        dest_qpn: 9,
        rq_psn: 1234,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(qp.next_rcv_psn(), 1234);
    assert_eq!(qp.dest_qpn(), 9);
    assert_eq!(
        qp.post_send(send(1, 1)),
        Err(QpError::InvalidState(QpState::Rtr))
    );
    qp.modify_to_rts(uct::hca::soft::engine::RtsAttrs {
        sq_psn: 0xff_fffe,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(qp.send_psn(), 0xff_fffe);
    qp.post_send(send(2, 3000)).unwrap();
    // 3000 bytes at MTU 1024: three PSNs, wrapping.
    assert_eq!(qp.send_psn(), 1);
    qp.post_recv(recv(3, 10)).unwrap();
    qp.modify_to_error();
    let mut got = Vec::new();
    while let Some(c) = qp.poll_completion() {
        got.push((c.queue, c.wr_id, c.status));
    }
    assert_eq!(
        got,
        vec![
            (WorkQueue::Send, 2, CompletionStatus::WrFlushError),
            (WorkQueue::Recv, 1, CompletionStatus::WrFlushError),
            (WorkQueue::Recv, 3, CompletionStatus::WrFlushError),
        ]
    );
    // In ERROR, posts complete with flush at once.
    qp.post_recv(recv(4, 1)).unwrap();
    qp.post_send(send(5, 1)).unwrap();
    let got = poll_all(&mut qp);
    assert_eq!(
        got,
        vec![
            (4, CompletionStatus::WrFlushError),
            (5, CompletionStatus::WrFlushError)
        ]
    );
    let mut mem = SimMemory::new();
    assert!(qp.poll_transmit(Instant::ZERO, &mut mem).is_none());
    qp.reset();
    assert_eq!(qp.state(), QpState::Reset);
    assert_eq!(qp.send_queue_len() + qp.recv_queue_len(), 0);
    qp.modify_to_init().unwrap();
}

#[test]
fn send_queue_drain_state() {
    let mut p = pair(PairSetup::default(), LinkConfig::default());
    p.b.qp.post_recv(recv(1, 4096)).unwrap();
    p.b.qp.post_recv(recv(2, 4096)).unwrap();
    p.a.qp.post_send(send(1, 3000)).unwrap();
    p.flush(); // the first packet is out
    p.a.qp.modify_to_sqd().unwrap();
    p.a.qp.post_send(send(2, 10)).unwrap();
    p.run_until(Duration::from_millis(1), |p| p.a.qp.is_drained());
    assert!(p.a.qp.is_drained());
    assert_eq!(
        send_completions(&p.a.completions),
        vec![(1, CompletionStatus::Success)]
    );
    p.run_until(Duration::from_millis(1), |_| false);
    assert_eq!(p.a.completions.len(), 1, "SQD must not start new requests");
    let rts = *p.a.qp.rts_attrs();
    p.a.qp.modify_to_rts(rts).unwrap();
    assert!(p.run_until(Duration::from_millis(1), |p| p.a.completions.len() == 2));
    assert_eq!(
        send_completions(&p.a.completions)[1],
        (2, CompletionStatus::Success)
    );
}

#[test]
fn modify_to_error_mid_transfer_flushes_the_rest_in_order() {
    for stop_after_us in [1, 5, 20, 60] {
        let mut p = pair(PairSetup::default(), LinkConfig::default());
        for i in 0..20 {
            p.b.qp.post_recv(recv(100 + i, 4096)).unwrap();
            p.a.qp.post_send(send(i, 3000)).unwrap();
        }
        p.run_until(Duration::from_micros(stop_after_us), |_| false);
        p.a.qp.modify_to_error();
        p.run_until(Duration::from_millis(5), |_| false);
        let got = send_completions(&p.a.completions);
        assert_eq!(got.len(), 20);
        let ok = got
            .iter()
            .take_while(|c| c.1 == CompletionStatus::Success)
            .count();
        assert!(
            got[ok..]
                .iter()
                .all(|c| c.1 == CompletionStatus::WrFlushError),
            "{got:?}"
        );
        assert!(
            got.iter().enumerate().all(|(i, c)| c.0 == i as u64),
            "in posting order"
        );
        // The peer received at least what A saw acknowledged, and its QP is
        // unharmed.
        assert!(recv_completions(&p.b.completions).len() >= ok);
        assert_eq!(p.b.qp.state(), QpState::Rts);
        assert!(p.a.qp.next_timeout().is_none(), "no timers in ERROR");
    }
}
