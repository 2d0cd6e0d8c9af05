//! The UD queue pair of the soft HCA's engine, on a simulated network in
//! virtual time (`engine::sim::UdNet`): datagrams land GRH first with the
//! sender's GID, completions carry the source QP and the length verbs
//! reports (payload plus GRH), a wrong Q_Key or a missing receive drops
//! the datagram silently, nothing is ever retransmitted or acknowledged,
//! and local errors end the QP as on hardware.

use std::net::{Ipv4Addr, SocketAddrV4};

use uct::hca::soft::engine::sim::UdNet;
use uct::hca::soft::engine::*;
use uct::hca::soft::wire::{Bth, Deth, Gid, Grh, Opcode, PacketRepr, GRH_LEN};

const QKEY: u32 = 0x1ee7_a330;
const BUF: u32 = 1;
const BUF_VA: u64 = 0x10_0000;
const BUF_LEN: usize = 64 * 1024;

fn endpoint(last: u8, port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, last), port)
}

fn memory() -> SimMemory {
    let mut mem = SimMemory::new();
    mem.register(BUF, BUF_VA, BUF_LEN, Access::LOCAL_WRITE);
    mem
}

/// Three hosts (QPNs 0x101, 0x202, 0x303) holding the same Q_Key.
fn net() -> UdNet {
    let mut net = UdNet::new(7);
    net.add_host(endpoint(1, 5000), 0x101, QKEY, memory());
    net.add_host(endpoint(2, 5000), 0x202, QKEY, memory());
    net.add_host(endpoint(1, 5001), 0x303, QKEY, memory());
    net
}

/// Receive `index` of a host: `len` bytes at `index * 4096`.
fn recv(index: u64, len: u32) -> RecvWr {
    RecvWr {
        wr_id: 100 + index,
        sgl: vec![Sge {
            addr: BUF_VA + index * 4096,
            len,
            lkey: BUF,
        }],
    }
}

fn send_to(net: &UdNet, to: usize, wr_id: u64, data: &[u8]) -> UdSendWr {
    UdSendWr {
        wr_id,
        dest: UdDest {
            gid: net.gid(to),
            qpn: net.hosts[to].qp.qpn(),
            qkey: QKEY,
        },
        imm: None,
        local: LocalData::Inline(data.to_vec()),
        signaled: true,
        solicited: false,
    }
}

fn received(net: &UdNet, host: usize, index: u64, len: usize) -> Vec<u8> {
    let at = index as usize * 4096;
    net.hosts[host].mem.region(BUF).unwrap()[at..at + len].to_vec()
}

fn recv_completions(net: &UdNet, host: usize) -> Vec<Completion> {
    net.hosts[host]
        .completions
        .iter()
        .filter(|c| c.queue == WorkQueue::Recv)
        .copied()
        .collect()
}

#[test]
fn datagrams_arrive_behind_the_grh_with_their_source() {
    let mut net = net();
    for i in 0..2 {
        net.hosts[1].qp.post_recv(recv(i, 4096)).unwrap();
    }
    let first: Vec<u8> = (0..200u32).map(|i| i as u8).collect();
    let second = b"from the third host".to_vec();
    let wr = send_to(&net, 1, 7, &first);
    net.hosts[0].qp.post_send(wr).unwrap();
    let mut wr = send_to(&net, 1, 8, &second);
    wr.imm = Some(0xfeed_f00d);
    wr.solicited = true;
    net.hosts[2].qp.post_send(wr).unwrap();
    net.run();

    let got = recv_completions(&net, 1);
    assert_eq!(got.len(), 2, "{got:?}");
    for (c, (sender, payload, imm)) in got
        .iter()
        .zip([(0usize, &first, None), (2usize, &second, Some(0xfeed_f00d))])
    {
        assert_eq!(c.status, CompletionStatus::Success);
        assert_eq!(c.opcode, CompletionOpcode::Recv);
        assert_eq!(c.byte_len as usize, GRH_LEN + payload.len());
        assert_eq!(c.src_qp, Some(net.hosts[sender].qp.qpn()));
        assert_eq!(c.imm, imm);
        assert_eq!(c.solicited, imm.is_some());
        let index = c.wr_id - 100;
        let bytes = received(&net, 1, index, c.byte_len as usize);
        let grh = Grh::parse(&bytes).unwrap();
        assert_eq!(grh.sgid, net.gid(sender));
        assert_eq!(grh.dgid, net.gid(1));
        assert_eq!(grh.next_header, 17);
        // UDP header, BTH, DETH, ImmDt?, payload, pad, ICRC.
        let imm_len = if imm.is_some() { 4 } else { 0 };
        let padded = payload.len().div_ceil(4) * 4;
        assert_eq!(
            usize::from(grh.payload_len),
            8 + 12 + 8 + imm_len + padded + 4
        );
        assert_eq!(&bytes[GRH_LEN..], &payload[..]);
    }
    // Each sender's send completed, with the message length.
    for (sender, wr_id, len) in [(0, 7, first.len()), (2, 8, second.len())] {
        let c = &net.hosts[sender].completions;
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].queue, WorkQueue::Send);
        assert_eq!(c[0].wr_id, wr_id);
        assert_eq!(c[0].status, CompletionStatus::Success);
        assert_eq!(c[0].byte_len as usize, len);
    }
    assert_eq!(net.parse_errors + net.emit_errors + net.unroutable, 0);
}

#[test]
fn a_gathered_send_reads_registered_memory() {
    let mut net = net();
    net.hosts[1].qp.post_recv(recv(0, 4096)).unwrap();
    let data: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
    net.hosts[0].mem.region_mut(BUF).unwrap()[..3000].copy_from_slice(&data);
    let mut wr = send_to(&net, 1, 1, &[]);
    wr.local = LocalData::Sgl(vec![
        Sge {
            addr: BUF_VA,
            len: 1000,
            lkey: BUF,
        },
        Sge {
            addr: BUF_VA + 1000,
            len: 2000,
            lkey: BUF,
        },
    ]);
    net.hosts[0].qp.post_send(wr).unwrap();
    net.run();
    assert_eq!(recv_completions(&net, 1)[0].byte_len, 3040);
    assert_eq!(received(&net, 1, 0, 3040)[GRH_LEN..], data[..]);
}

#[test]
fn another_qkey_is_dropped_and_the_qps_own_is_used_on_request() {
    let mut net = net();
    net.hosts[1].qp.post_recv(recv(0, 4096)).unwrap();
    let mut wrong = send_to(&net, 1, 1, b"wrong key");
    wrong.dest.qkey = QKEY ^ 1;
    net.hosts[0].qp.post_send(wrong).unwrap();
    net.run();
    assert!(recv_completions(&net, 1).is_empty());
    assert_eq!(net.hosts[1].qp.stats().qkey_mismatches, 1);
    assert_eq!(net.hosts[1].qp.recv_queue_len(), 1, "the receive stays");
    // The sender cannot tell: its send completed.
    assert_eq!(
        net.hosts[0].completions[0].status,
        CompletionStatus::Success
    );

    // The high bit asks for the sending QP's own Q_Key, which matches.
    let mut own = send_to(&net, 1, 2, b"own key");
    own.dest.qkey = QKEY_USE_QP;
    net.hosts[0].qp.post_send(own).unwrap();
    net.run();
    let got = recv_completions(&net, 1);
    assert_eq!(got.len(), 1);
    assert_eq!(received(&net, 1, 0, GRH_LEN + 7)[GRH_LEN..], *b"own key");
}

#[test]
fn without_a_receive_the_datagram_is_lost_not_retried() {
    let mut net = net();
    let wr = send_to(&net, 1, 1, b"nobody listens");
    net.hosts[0].qp.post_send(wr).unwrap();
    net.run();
    assert_eq!(net.hosts[1].qp.stats().no_receive, 1);
    net.hosts[1].qp.post_recv(recv(0, 4096)).unwrap();
    net.run();
    // Nothing came again: UD never retransmits.
    assert!(recv_completions(&net, 1).is_empty());
    assert_eq!(net.delivered, 1);
    let wr = send_to(&net, 1, 2, b"now");
    net.hosts[0].qp.post_send(wr).unwrap();
    net.run();
    assert_eq!(recv_completions(&net, 1).len(), 1);
    assert_eq!(received(&net, 1, 0, GRH_LEN + 3)[GRH_LEN..], *b"now");
}

#[test]
fn a_lossy_network_loses_datagrams_and_nothing_else_happens() {
    let mut net = net();
    net.loss = 0.3;
    const N: u64 = 200;
    for i in 0..N {
        net.hosts[1].qp.post_recv(recv(i % 16, 64)).unwrap();
    }
    for i in 0..N {
        let wr = send_to(&net, 1, i, &i.to_be_bytes());
        net.hosts[0].qp.post_send(wr).unwrap();
    }
    net.run();
    let got = recv_completions(&net, 1);
    assert_eq!(got.len() as u64, net.delivered);
    assert_eq!(net.delivered + net.dropped, N);
    assert!(net.dropped > 20 && net.delivered > 100, "{net:?}");
    // Every send completed successfully whether or not it arrived, and
    // every datagram took the next PSN.
    assert_eq!(net.hosts[0].completions.len() as u64, N);
    assert!(net.hosts[0]
        .completions
        .iter()
        .all(|c| c.status == CompletionStatus::Success));
    assert_eq!(net.hosts[0].qp.send_psn(), N as u32);
    assert_eq!(net.hosts[0].qp.stats().packets_received, 0, "no ACKs");
}

#[test]
fn a_receive_too_small_for_grh_and_payload_ends_the_qp() {
    let mut net = net();
    // 40 + 10 bytes needed, 49 given.
    net.hosts[1].qp.post_recv(recv(0, 49)).unwrap();
    net.hosts[1].qp.post_recv(recv(1, 4096)).unwrap();
    let wr = send_to(&net, 1, 1, &[9; 10]);
    net.hosts[0].qp.post_send(wr).unwrap();
    net.run();
    let got = recv_completions(&net, 1);
    assert_eq!(got.len(), 2);
    assert_eq!(
        (got[0].wr_id, got[0].status),
        (100, CompletionStatus::LocalLengthError)
    );
    assert_eq!(
        (got[1].wr_id, got[1].status),
        (101, CompletionStatus::WrFlushError)
    );
    assert_eq!(net.hosts[1].qp.state(), QpState::Error);
    assert!(received(&net, 1, 0, 49).iter().all(|&b| b == 0));
}

#[test]
fn a_send_beyond_the_mtu_fails_and_flushes_what_follows() {
    let mut net = net();
    net.hosts[1].qp.post_recv(recv(0, 8192)).unwrap();
    let big = vec![1u8; 4097];
    let wr = send_to(&net, 1, 1, &big);
    net.hosts[0].qp.post_send(wr).unwrap();
    let wr = send_to(&net, 1, 2, b"x");
    net.hosts[0].qp.post_send(wr).unwrap();
    net.run();
    let c = &net.hosts[0].completions;
    assert_eq!(
        c.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
        [
            (1, CompletionStatus::LocalLengthError),
            (2, CompletionStatus::WrFlushError)
        ]
    );
    assert_eq!(net.hosts[0].qp.state(), QpState::Error);
    assert_eq!(net.delivered, 0);
    // In ERROR a new send completes flushed at once.
    let wr = send_to(&net, 1, 3, b"y");
    net.hosts[0].qp.post_send(wr).unwrap();
    assert_eq!(
        net.hosts[0].qp.poll_completion().map(|c| c.status),
        Some(CompletionStatus::WrFlushError)
    );
}

#[test]
fn an_unregistered_gather_list_fails_the_send() {
    let mut net = net();
    let mut wr = send_to(&net, 1, 1, &[]);
    wr.local = LocalData::Sgl(vec![Sge {
        addr: BUF_VA,
        len: 16,
        lkey: 99,
    }]);
    net.hosts[0].qp.post_send(wr).unwrap();
    net.run();
    assert_eq!(
        net.hosts[0].completions[0].status,
        CompletionStatus::LocalProtectionError
    );
    assert_eq!(net.delivered, 0);
}

#[test]
fn unsignalled_sends_complete_silently() {
    let mut net = net();
    net.hosts[1].qp.post_recv(recv(0, 4096)).unwrap();
    let mut wr = send_to(&net, 1, 1, b"quiet");
    wr.signaled = false;
    net.hosts[0].qp.post_send(wr).unwrap();
    net.run();
    assert!(net.hosts[0].completions.is_empty());
    assert_eq!(recv_completions(&net, 1).len(), 1);
}

#[test]
fn state_machine_and_what_each_state_takes() {
    let gid = Gid::from_endpoint(endpoint(1, 9));
    let mut qp = UdQp::new(UdConfig::new(0x77, gid));
    let dest = UdDest {
        gid,
        qpn: 0x77,
        qkey: QKEY,
    };
    let wr = UdSendWr {
        wr_id: 1,
        dest,
        imm: None,
        local: LocalData::Inline(vec![1]),
        signaled: true,
        solicited: false,
    };
    assert!(qp.post_recv(recv(0, 64)).is_err(), "RESET takes no receive");
    assert!(qp.modify_to_rtr().is_err());
    qp.modify_to_init(QKEY).unwrap();
    assert_eq!(qp.qkey(), QKEY);
    qp.post_recv(recv(0, 64)).unwrap();
    assert!(qp.post_send(wr.clone()).is_err(), "INIT sends nothing");
    assert!(qp.modify_to_rts(0).is_err());
    qp.modify_to_rtr().unwrap();
    assert!(qp.post_send(wr.clone()).is_err(), "RTR sends nothing");
    assert_eq!(
        qp.modify_to_rts(1 << 24),
        Err(QpError::InvalidAttr("sq_psn"))
    );
    qp.modify_to_rts(0x00ff_ffff).unwrap();
    qp.post_send(wr.clone()).unwrap();
    qp.post_send(wr).unwrap();
    let mut mem = memory();
    let a = qp.poll_transmit(&mut mem).unwrap();
    let b = qp.poll_transmit(&mut mem).unwrap();
    assert_eq!(a.header.bth.psn, 0x00ff_ffff);
    assert_eq!(b.header.bth.psn, 0, "the PSN wraps at 24 bits");
    assert_eq!(a.header.bth.opcode, Opcode::UdSendOnly);
    assert_eq!(
        a.header.deth,
        Some(Deth {
            qkey: QKEY,
            src_qp: 0x77
        })
    );
    assert_eq!(a.dest, gid);
    assert!(!a.header.bth.ack_req, "UD asks for no acknowledgement");
    let sent: Vec<_> = std::iter::from_fn(|| qp.poll_completion()).collect();
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().all(|c| c.queue == WorkQueue::Send));
    qp.post_send(UdSendWr {
        wr_id: 3,
        dest,
        imm: None,
        local: LocalData::Inline(vec![1]),
        signaled: true,
        solicited: false,
    })
    .unwrap();
    qp.reset();
    assert_eq!(qp.state(), QpState::Reset);
    assert_eq!(qp.recv_queue_len(), 0);
    assert_eq!(qp.send_queue_len(), 0);
    assert!(qp.poll_completion().is_none(), "RESET completes nothing");
}

/// What a UD QP makes of packets that are not datagrams for it, and what an
/// RC QP makes of a datagram: nothing but a counter.
#[test]
fn foreign_packets_are_dropped_on_both_kinds_of_qp() {
    let gid = Gid::from_endpoint(endpoint(1, 9));
    let mut ud = UdQp::new(UdConfig::new(0x77, gid));
    ud.modify_to_init(QKEY).unwrap();
    ud.modify_to_rtr().unwrap();
    ud.post_recv(recv(0, 4096)).unwrap();
    let mut mem = memory();
    let deth = Some(Deth {
        qkey: QKEY,
        src_qp: 5,
    });

    let mut other_qp = PacketRepr::new(Bth::new(Opcode::UdSendOnly, 0x78, 0), b"x");
    other_qp.deth = deth;
    let mut other_pkey = PacketRepr::new(Bth::new(Opcode::UdSendOnly, 0x77, 0), b"x");
    other_pkey.deth = deth;
    other_pkey.bth.pkey = 0x7fff;
    let rc_send = PacketRepr::new(Bth::new(Opcode::SendOnly, 0x77, 0), b"x");
    let mut no_deth = PacketRepr::new(Bth::new(Opcode::UdSendOnly, 0x77, 0), b"x");
    no_deth.deth = None;
    for p in [&other_qp, &other_pkey, &rc_send, &no_deth] {
        ud.handle_packet(p, gid, &mut mem);
    }
    assert_eq!(ud.stats().dropped, 4);
    assert_eq!(ud.recv_queue_len(), 1);
    assert!(ud.poll_completion().is_none());

    // A UD QP in INIT receives nothing yet.
    let mut init = UdQp::new(UdConfig::new(0x77, gid));
    init.modify_to_init(QKEY).unwrap();
    init.post_recv(recv(0, 4096)).unwrap();
    let mut good = PacketRepr::new(Bth::new(Opcode::UdSendOnly, 0x77, 0), b"x");
    good.deth = deth;
    init.handle_packet(&good, gid, &mut mem);
    assert_eq!(init.stats().dropped, 1);
    assert_eq!(init.recv_queue_len(), 1);

    // An RC QP in RTS drops the datagram.
    let mut rc = Qp::new(QpConfig::new(0x77));
    rc.modify_to_init().unwrap();
    rc.modify_to_rtr(RtrAttrs::default()).unwrap();
    rc.modify_to_rts(RtsAttrs::default()).unwrap();
    rc.post_recv(recv(0, 4096)).unwrap();
    rc.handle_packet(Instant::ZERO, &good, &mut mem);
    assert_eq!(rc.stats().packets_dropped, 1);
    assert_eq!(rc.recv_queue_len(), 1);
    assert!(rc.poll_transmit(Instant::ZERO, &mut mem).is_none());
}
