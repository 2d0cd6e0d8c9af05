//! Device behaviour around the engine: receiver-not-ready until receives
//! are posted, blocking waits through the event channel, forged datagrams,
//! devices shared across opens.

mod softhca_common;
#[path = "uct_safe/mod.rs"]
mod uct_safe;

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use softhca_common::*;
use uct::hca::soft::wire::{Bth, IcrcContext, Opcode, PacketRepr, Reth};
use uct::hca::{Device, DeviceAddress};
use uct::mlx5;

fn soft(device: &Device) -> &uct::hca::soft::SoftDevice {
    let Device::Soft(dev) = device else {
        panic!("not a soft HCA device")
    };
    dev
}

#[test]
fn send_waits_for_a_receive_then_completes() {
    let (mut a, mut b) = pair("rnr", 14, 7);
    let msg = pattern(700, 21);
    let i = a.post(&Op::SendInline(&msg[..200]));
    // No receive posted: the responder answers RNR, nothing completes.
    assert!(a.wait_send(Duration::from_millis(100)).is_none());
    assert!(b.poll_recv().is_none());
    b.post_recvs(1);
    let cqe = a
        .wait_send(LONG)
        .expect("send completes once a receive exists");
    assert_eq!((cqe.opcode, cqe.wqe_counter), (mlx5::MLX5_CQE_REQ, i));
    let rc = b.wait_recv(LONG).expect("recv CQE");
    assert_eq!(b.read_recv(rc.wqe_counter, 200), msg[..200]);
    assert_eq!(rc.byte_cnt, 200);
}

#[test]
fn event_channel_wakes_a_blocked_waiter() {
    let device = open_soft("event_b", Ipv4Addr::new(127, 0, 0, 2));
    let channel = device.create_event_channel().expect("channel");
    let mut a = Side::new(open_soft("event_a", Ipv4Addr::new(127, 0, 0, 1)));
    let mut b = Side::with_channel(device, Some(&channel));
    a.connect(&b.endpoint(), 14, 7);
    b.connect(&a.endpoint(), 14, 7);
    b.post_recvs(4);

    let readable =
        |timeout_ms: u64| uct_safe::fd_readable(channel.fd(), Duration::from_millis(timeout_ms));
    assert!(!readable(0), "nothing pending yet");
    b.recv_cq.arm(0, false); // the soft HCA ignores the consumer index
    let i = a.post(&Op::SendInline(b"wake up"));
    assert!(
        readable(5000),
        "the armed CQ's completion made the fd readable"
    );
    let rc = b.poll_recv().expect("the CQE is there once the fd fired");
    assert_eq!(b.read_recv(rc.wqe_counter, 7), b"wake up");
    assert_eq!(a.wait_send(LONG).map(|c| c.wqe_counter), Some(i));

    // Disarmed after one event: the next completion does not signal until
    // re-armed.
    channel.clear();
    let _ = a.post(&Op::SendInline(b"quiet"));
    let _ = b.wait_recv_passive(LONG).expect("second recv");
    assert!(!readable(50), "not armed, no event");
    b.recv_cq.arm(0, false); // the soft HCA ignores the consumer index
    let _ = a.post(&Op::SendInline(b"again"));
    assert!(readable(5000));
}

#[test]
fn forged_source_is_dropped_and_counted() {
    let (_a, b) = pair("forge", 14, 7);
    let DeviceAddress::Udp(b_addr) = b.endpoint().address else {
        panic!("not a soft HCA address")
    };
    let forger =
        UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 3), 0)).expect("bind forger");
    let std::net::SocketAddr::V4(forger_addr) = forger.local_addr().expect("addr") else {
        panic!("v4")
    };

    // A well-formed WRITE at the PSN b expects, with b's real rkey: only
    // the source address gives it away.
    let payload = [0xeeu8; 32];
    let mut packet = PacketRepr::new(Bth::new(Opcode::WriteOnly, b.qp.qpn(), 0x100), &payload);
    packet.reth = Some(Reth {
        va: b.buf_addr(0),
        rkey: b.endpoint().rkey,
        dma_len: 32,
    });
    let mut datagram = vec![0u8; packet.buffer_len()];
    let len = packet
        .emit(&mut datagram, &IcrcContext::new(forger_addr, b_addr))
        .expect("emit");
    forger.send_to(&datagram[..len], b_addr).expect("send");
    // And garbage.
    forger.send_to(&[1, 2, 3], b_addr).expect("send");

    let counted = wait(LONG, || {
        let stats = soft(&b.device).link_stats();
        (stats.rx_forged_source >= 1 && stats.rx_malformed >= 1).then_some(stats)
    });
    assert!(
        counted.is_some(),
        "forged and malformed datagrams counted: {:?}",
        soft(&b.device).link_stats()
    );
    assert_eq!(b.read_buf(0, 32), vec![0u8; 32], "memory untouched");
    assert_eq!(
        b.qp.query().unwrap().next_rcv_psn,
        0x100,
        "the forged packet did not advance the PSN"
    );
}

#[test]
fn opens_of_one_name_share_the_device() {
    let first = uct::hca::devices::open_soft_at("shared0", Ipv4Addr::LOCALHOST).expect("open");
    let second =
        uct::hca::devices::open_soft_at("shared0", Ipv4Addr::LOCALHOST).expect("open again");
    assert_eq!(
        first.address(),
        second.address(),
        "one socket per device per process"
    );
    assert_eq!(
        uct::hca::devices::open_soft_at("shared0", Ipv4Addr::new(127, 0, 0, 9)).err(),
        Some(uct::abi::ucs_status::Status::Busy),
        "an open device cannot move"
    );
    assert_eq!(
        Device::open("no_such_device").err(),
        Some(uct::abi::ucs_status::Status::NoDevice)
    );
}

#[test]
fn a_lost_request_or_response_is_recovered_exactly_once() {
    // timeout 8: about 1 ms before a retransmission.
    let (mut a, mut b) = pair("dropone", 8, 7);
    let rkey = b.endpoint().rkey;

    // The WRITE request itself is lost once.
    assert_eq!(uct_safe::drop_next(c"dropone_a", 1), 0);
    let i = a.post_pattern_write(&b, 256, 31);
    let cqe = a.wait_send(LONG).expect("completes after retransmission");
    assert_eq!((cqe.opcode, cqe.wqe_counter), (mlx5::MLX5_CQE_REQ, i));
    assert_eq!(b.read_buf(0, 256), pattern(256, 31));
    assert_eq!(soft(&a.device).link_stats().tx_dropped_loss, 1);

    // The atomic's response is lost once: the retried request is a
    // duplicate the responder answers from its saved result, without
    // adding twice.
    b.write_buf(4096, &10u64.to_ne_bytes());
    assert_eq!(uct_safe::drop_next(c"dropone_b", 1), 0);
    let i = a.post(&Op::FetchAdd {
        result_offset: 8192,
        remote: b.buf_addr(4096),
        rkey,
        add: 5,
    });
    let cqe = a.wait_send(LONG).expect("atomic completes");
    assert_eq!((cqe.opcode, cqe.wqe_counter), (mlx5::MLX5_CQE_REQ, i));
    assert_eq!(a.read_u64(8192), 10, "the value before the one execution");
    assert_eq!(b.read_u64(4096), 15, "executed exactly once");
    assert_eq!(soft(&b.device).link_stats().tx_dropped_loss, 1);
}

/// A small deterministic generator for test inputs.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn malformed_wqes_fail_cleanly() {
    let (mut a, mut b) = pair("garbage", 10, 1);
    // Receives for any SEND that happens to be valid, so none waits forever.
    b.post_recvs(255);
    let qpn = a.qp.qpn();
    let mut rng = XorShift(0x5eed_0001);
    let opcodes = [
        0x00u8, 0x01, 0x08, 0x09, 0x0a, 0x0b, 0x10, 0x11, 0x12, 0x14, 0x15, 0x3f,
    ];
    for round in 0..300 {
        if round % 10 == 0 {
            // Pure noise, control segment included: the device must refuse
            // it and keep going; how many CQEs it yields is up to the noise.
            let mut noise = vec![0u8; mlx5::SEND_WQE_BB];
            noise.iter_mut().for_each(|b| *b = rng.next() as u8);
            a.post_raw(&noise, 1);
            assert!(
                a.wait_send(LONG).is_some(),
                "round {round}: noise gets an error CQE"
            );
            while a.wait_send(Duration::from_millis(20)).is_some() {}
            continue;
        }
        // A control segment with the right index and a size that matches
        // the blocks posted, random opcode, flags and segments.
        let ds = (rng.next() % 17) as u8;
        let bbs = (usize::from(ds) * 16).div_ceil(mlx5::SEND_WQE_BB).max(1) as u16;
        let mut wqe = vec![0u8; bbs as usize * mlx5::SEND_WQE_BB];
        wqe.iter_mut().for_each(|b| *b = rng.next() as u8);
        let ctrl = mlx5::CtrlSeg {
            opcode: opcodes[(rng.next() % opcodes.len() as u64) as usize],
            opmod: (rng.next() % 12) as u8,
            wqe_index: a.next_index(),
            qpn,
            ds,
            fm_ce_se: mlx5::MLX5_WQE_CTRL_CQ_UPDATE,
            imm: rng.next() as u32,
            ..mlx5::CtrlSeg::default()
        };
        let seg: &mut mlx5::Seg = (&mut wqe[..16]).try_into().expect("seg");
        ctrl.write(seg);
        let index = a.post_raw(&wqe, bbs);
        // Exactly one CQE for it: an error, a flush, or (a random NOP or
        // inline SEND can be valid) a success.
        let cqe = a
            .wait_send(LONG)
            .unwrap_or_else(|| panic!("round {round}: no CQE for {ctrl:?}"));
        assert_eq!(cqe.wqe_counter, index, "round {round}: {cqe:?}");
    }
    // Not one byte reached the peer's registered buffer.
    assert_eq!(b.read_buf(0, 4096), vec![0u8; 4096]);
}

#[test]
fn hostile_peer_never_writes_outside_registered_memory() {
    use uct::hca::soft::wire::{
        Aeth, AethSyndrome, AtomicAckEth, AtomicEth, AtomicSize as WireSize, ExtAtomicEth,
    };

    let mut a = Side::new(open_soft("hostile_a", Ipv4Addr::new(127, 0, 0, 1)));
    let DeviceAddress::Udp(a_addr) = a.endpoint().address else {
        panic!("not a soft HCA address")
    };
    // The "peer" is a plain socket this test controls: every datagram it
    // sends comes from the address the QP was connected to, so it reaches
    // the engine, with a valid ICRC.
    let fake = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 3), 0)).expect("bind");
    fake.set_nonblocking(true).expect("nonblocking");
    let std::net::SocketAddr::V4(fake_addr) = fake.local_addr().expect("addr") else {
        panic!("v4")
    };
    let fake_ep = Endpoint {
        address: DeviceAddress::Udp(fake_addr),
        qpn: 0x777,
        rkey: 0,
        buf_addr: 0,
    };
    a.connect(&fake_ep, 10, 1);
    a.post_recvs(255);

    // 16 KiB registered in the middle of 48 KiB of guard bytes.
    const GUARD: u8 = 0xa5;
    let mut arena = vec![GUARD; 48 * 1024].into_boxed_slice();
    let base = arena.as_mut_ptr() as u64;
    let region = base + 16 * 1024;
    // `arena` outlives the registration (dropped at the end).
    let mr =
        a.pd.reg_mr(region as *mut u8, 16 * 1024, uct::hca::Access::ALL)
            .expect("reg");
    let rkey = mr.keys().rkey;

    let requests = [
        Opcode::SendFirst,
        Opcode::SendMiddle,
        Opcode::SendLast,
        Opcode::SendLastImm,
        Opcode::SendOnly,
        Opcode::SendOnlyImm,
        Opcode::WriteFirst,
        Opcode::WriteMiddle,
        Opcode::WriteLast,
        Opcode::WriteLastImm,
        Opcode::WriteOnly,
        Opcode::WriteOnlyImm,
        Opcode::ReadRequest,
        Opcode::CompareSwap,
        Opcode::FetchAdd,
        Opcode::MaskedCompareSwap,
        Opcode::MaskedFetchAdd,
        Opcode::ReadResponseOnly,
        Opcode::Acknowledge,
        Opcode::AtomicAcknowledge,
    ];
    let mut rng = XorShift(0x0bad_cafe);
    let mut payload_store = vec![0u8; 1100];
    let mut datagram = vec![0u8; 2048];
    let mut responses = 0usize;
    let mut inbox = [0u8; 4096];
    for round in 0..3000u32 {
        let info = a.qp.query().expect("query");
        if info.state == uct::hca::QpState::Error {
            a.reset_and_connect_retrying(&fake_ep, 10, 1);
        }
        let opcode = requests[(rng.next() % requests.len() as u64) as usize];
        let psn = if rng.next() % 8 == 0 {
            rng.next() as u32 & 0x00ff_ffff
        } else {
            a.qp.query().unwrap().next_rcv_psn
        };
        // Addresses around (and mostly inside) the registered region.
        let va = region
            .wrapping_add(rng.next() % (40 * 1024))
            .wrapping_sub(12 * 1024);
        let key = if rng.next() % 6 == 0 {
            rng.next() as u32
        } else {
            rkey
        };
        let layout = opcode.layout();
        let len = if layout.payload {
            (rng.next() % 1100) as usize
        } else {
            0
        };
        payload_store[..len]
            .iter_mut()
            .for_each(|b| *b = rng.next() as u8);
        let mut packet = PacketRepr::new(Bth::new(opcode, a.qp.qpn(), psn), &payload_store[..len]);
        if layout.reth {
            // Mostly the length the packet carries (a valid single-packet
            // WRITE), sometimes anything.
            let dma_len = if rng.next() % 4 == 0 {
                (rng.next() % 3000) as u32
            } else {
                len as u32
            };
            packet.reth = Some(Reth {
                va,
                rkey: key,
                dma_len,
            });
        }
        if layout.atomic {
            let va = if rng.next() % 4 == 0 { va } else { va & !7 };
            packet.atomic = Some(AtomicEth {
                va,
                rkey: key,
                swap_add: rng.next(),
                compare: rng.next(),
            });
        }
        if layout.ext_atomic {
            let size = if rng.next() % 2 == 0 {
                WireSize::Bits32
            } else {
                WireSize::Bits64
            };
            let mask = if size == WireSize::Bits32 {
                0xffff_ffff
            } else {
                u64::MAX
            };
            packet.ext_atomic = Some(ExtAtomicEth {
                va: va & !3,
                rkey: key,
                size,
                swap_add: rng.next() & mask,
                compare: rng.next() & mask,
                swap_add_mask: rng.next() & mask,
                compare_mask: rng.next() & mask,
            });
        }
        if layout.aeth {
            packet.aeth = Some(Aeth {
                syndrome: AethSyndrome::Ack {
                    credits: Aeth::CREDITS_INVALID,
                },
                msn: round & 0xff_ffff,
            });
        }
        if layout.atomic_ack {
            packet.atomic_ack = Some(AtomicAckEth { orig: rng.next() });
        }
        if layout.imm {
            packet.imm = Some(rng.next() as u32);
        }
        let Ok(n) = packet.emit(&mut datagram, &IcrcContext::new(fake_addr, a_addr)) else {
            continue;
        };
        fake.send_to(&datagram[..n], a_addr).expect("send");
        // Whatever the QP answers must itself be a well-formed packet.
        while let Ok((got, from)) = fake.recv_from(&mut inbox) {
            assert_eq!(from, std::net::SocketAddr::V4(a_addr));
            PacketRepr::parse(&inbox[..got], &IcrcContext::new(a_addr, fake_addr))
                .unwrap_or_else(|err| panic!("the device answered with a bad packet: {err}"));
            responses += 1;
        }
        // Loopback delivers at once: let the device take it now, so that
        // the next packet is built against the PSN it expects next.
        a.device.progress();
    }
    std::thread::sleep(Duration::from_millis(200));
    a.device.progress();
    assert!(
        responses > 100,
        "the device answered the peer ({responses} packets)"
    );
    let outside = arena[..16 * 1024]
        .iter()
        .chain(&arena[32 * 1024..])
        .filter(|b| **b != GUARD)
        .count();
    assert_eq!(outside, 0, "bytes changed outside the registered region");
    let inside_changed = arena[16 * 1024..32 * 1024]
        .iter()
        .filter(|b| **b != GUARD)
        .count();
    eprintln!(
        "hostile peer: {responses} answers, {inside_changed} bytes changed inside the region"
    );
    assert!(
        inside_changed > 0,
        "some WRITEs/atomics did land inside the region"
    );
    drop(mr);
}

#[test]
fn queues_of_another_device_or_pd_are_refused() {
    use uct::hca::{QpInitAttr, SrqInitAttr};
    let one = open_soft("mix_a", Ipv4Addr::new(127, 0, 0, 1));
    let other = open_soft("mix_b", Ipv4Addr::new(127, 0, 0, 2));
    let pd = one.alloc_pd().expect("pd");
    let cq = one.create_cq(64, None).expect("cq");
    let foreign_cq = other.create_cq(64, None).expect("foreign cq");
    let srq = pd
        .create_srq(SrqInitAttr {
            wqe_count: 16,
            max_sge: 1,
        })
        .expect("srq");
    let foreign_srq = one
        .alloc_pd()
        .and_then(|pd2| {
            pd2.create_srq(SrqInitAttr {
                wqe_count: 16,
                max_sge: 1,
            })
        })
        .expect("srq of another pd");
    let attr = |send_cq, srq| QpInitAttr {
        send_cq,
        recv_cq: &cq,
        srq,
        sq_wqebb_count: 64,
    };
    let invalid = Some(uct::abi::ucs_status::Status::InvalidParam);
    assert_eq!(pd.create_qp(&attr(&foreign_cq, &srq)).err(), invalid);
    assert_eq!(pd.create_qp(&attr(&cq, &foreign_srq)).err(), invalid);
    assert_eq!(one.create_cq(0, None).err(), invalid);
    assert_eq!(
        pd.create_srq(SrqInitAttr {
            wqe_count: 16,
            max_sge: 0
        })
        .err(),
        invalid
    );
    assert_eq!(
        pd.reg_mr(std::ptr::null_mut(), 8, uct::hca::Access::ALL)
            .err(),
        invalid
    );
    let qp = pd.create_qp(&attr(&cq, &srq)).expect("a consistent QP");
    assert_eq!(qp.send_ring().wqebb_count, 64);
    assert_eq!(qp.query().map(|q| q.state), Ok(uct::hca::QpState::Reset));
    // Transitions out of order are refused.
    let rts = uct::hca::RtsAttr {
        sq_psn: 0,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 1,
    };
    assert_eq!(qp.modify(uct::hca::QpTransition::Rts(rts)).err(), invalid);
}

#[test]
fn initiator_blocking_on_its_channel_gets_the_completion() {
    // The initiator progressed a moment ago (so its service thread had left
    // the socket to it), then sleeps in poll() on its channel: the service
    // thread must take over and deliver the ACK's completion.
    let device = open_soft("block_a", Ipv4Addr::new(127, 0, 0, 1));
    let channel = device.create_event_channel().expect("channel");
    let mut a = Side::with_channel(device, Some(&channel));
    let b = Side::new(open_soft("block_b", Ipv4Addr::new(127, 0, 0, 2)));
    a.connect(&b.endpoint(), 14, 7);
    b.connect(&a.endpoint(), 14, 7);
    let rkey = b.endpoint().rkey;
    for round in 0..20u8 {
        a.device.progress();
        channel.clear();
        a.send_cq.arm(0, false); // the soft HCA ignores the consumer index
        a.write_buf(0, &[round; 32]);
        let i = a.post(&Op::Write {
            offset: 0,
            len: 32,
            remote: b.buf_addr(64),
            rkey,
            imm: None,
        });
        let ready = uct_safe::fd_readable(channel.fd(), Duration::from_secs(5));
        assert!(ready, "round {round}: woken by the completion");
        let cqe = a.poll_send().expect("CQE present when the fd fired");
        assert_eq!((cqe.opcode, cqe.wqe_counter), (mlx5::MLX5_CQE_REQ, i));
        assert_eq!(b.read_buf(64, 32), vec![round; 32]);
    }
}

#[test]
fn destroyed_qp_and_closed_device() {
    let (mut a, b) = pair("close", 8, 1);
    let b_endpoint = b.endpoint();
    let DeviceAddress::Udp(b_addr) = b_endpoint.address else {
        panic!("not a soft HCA address")
    };
    let b_device = b.device.clone();
    // Destroy b's QP (and everything else of that side but the device).
    drop(b);
    let i = a.post(&Op::SendInline(b"anyone there?"));
    let cqe = a.wait_send(LONG).expect("the requester gives up");
    assert_eq!(
        (cqe.wqe_counter, cqe.syndrome),
        (i, mlx5::MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR)
    );
    // b's device counts them when it takes them off its wire, in its own
    // thread (on the shared-memory wire, after a wake-up), which may be a
    // moment after a's requester gave up: wait for it, boundedly.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while soft(&b_device).link_stats().rx_unknown_qp == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        soft(&b_device).link_stats().rx_unknown_qp >= 1,
        "datagrams for a destroyed QP are counted"
    );

    // The last handle gone, the device closes its socket (its port can be
    // bound again) and opening the name again starts a fresh device.
    drop(b_device);
    drop(UdpSocket::bind(b_addr).expect("the closed device released its port"));
    let again =
        uct::hca::devices::open_soft_at("close_b", Ipv4Addr::new(127, 0, 0, 2)).expect("reopen");
    assert_eq!(
        again.link_stats().rx_unknown_qp,
        0,
        "a new device, new counters"
    );
}

/// A caller that never stops calling progress (as a busy-polling UCX
/// worker does) keeps the service thread away from the device, so its own
/// progress must run the retransmission timer: a lost request and a lost
/// ACK are both recovered without it ever pausing.
#[test]
fn a_spinning_caller_runs_its_own_retransmissions() {
    // Timeout exponent 12 (about 17 ms): long enough that a loaded CI
    // machine does not turn scheduling delays into "retry exceeded".
    let (mut a, b) = pair("spin", 12, 7);
    let rkey = b.endpoint().rkey;
    for (round, device) in [c"spin_a", c"spin_b"].into_iter().enumerate() {
        assert_eq!(uct_safe::drop_next(device, 1), 0);
        let i = a.post(&Op::WriteInline {
            data: &[round as u8 + 1; 8],
            remote: b.buf_addr(64 * round),
            rkey,
        });
        let start = std::time::Instant::now();
        let cqe = loop {
            a.device.progress();
            if let Some(cqe) = a.poll_send() {
                break cqe;
            }
            assert!(start.elapsed() < LONG, "no retransmission in round {round}");
        };
        assert_eq!((cqe.opcode, cqe.wqe_counter), (mlx5::MLX5_CQE_REQ, i));
        assert_eq!(b.read_buf(64 * round, 8), vec![round as u8 + 1; 8]);
    }
    assert_eq!(soft(&a.device).link_stats().tx_dropped_loss, 1);
    assert_eq!(soft(&b.device).link_stats().tx_dropped_loss, 1);
}

/// A WRITE between two QPs of one device, its target region deregistered
/// right after the doorbell with no progress in between (UCX's gtest
/// `uct_p2p_rma_test_xfer.fence` does so: its buffers go away when the test
/// body ends, the flush comes after), lands before the region goes, as on a
/// NIC that started on the WQE at its doorbell: no remote access error.
/// Each round's progress call opens the caller's window (1 ms), which keeps
/// the service thread off the device; so without the pass a deregistration
/// runs first, every round would deregister before any thread took the
/// WQE.
#[test]
fn a_write_posted_before_its_target_is_deregistered_lands_first() {
    const ROUNDS: usize = 20;
    const LEN: usize = 64;
    let mut a = Side::new(open_soft("dereg", Ipv4Addr::LOCALHOST));
    let b = Side::new(open_soft("dereg", Ipv4Addr::LOCALHOST));
    a.connect(&b.endpoint(), 12, 7);
    b.connect(&a.endpoint(), 12, 7);
    let target_offset = |round: usize| 4096 + round * LEN;
    for round in 0..ROUNDS {
        let data = pattern(LEN, round as u8 + 1);
        a.write_buf(0, &data);
        let target = b.buf_addr(target_offset(round));
        let mr =
            b.pd.reg_mr(target as *mut u8, LEN, uct::hca::Access::ALL)
                .expect("register the target");
        a.device.progress();
        let i = a.post(&Op::Write {
            offset: 0,
            len: LEN,
            remote: target,
            rkey: mr.keys().rkey,
            imm: None,
        });
        drop(mr);
        let cqe = a.wait_send(LONG).expect("the WRITE completes");
        assert_eq!(
            (cqe.opcode, cqe.wqe_counter),
            (mlx5::MLX5_CQE_REQ, i),
            "round {round}: the WRITE must succeed (got opcode {:#x}, syndrome {:#x})",
            cqe.opcode,
            cqe.syndrome
        );
        assert_eq!(b.read_buf(target_offset(round), LEN), data, "round {round}");
    }
}

/// `Device::receive_mark` (what the connection manager waits on before it
/// hands a peer's disconnect up): it covers the receive completions the
/// device has written, and is taken only once the transport has polled
/// every one of them, not before.
#[test]
fn receive_mark_waits_for_the_transport_to_take_what_arrived() {
    let (mut a, mut b) = pair("mark", 14, 7);
    b.post_recvs(8);
    let mark_now = |b: &Side| b.device.receive_mark().expect("a soft device marks");
    assert!(mark_now(&b).taken(), "nothing received yet");

    const SENT: u8 = 5;
    for i in 0..SENT {
        let _ = a.post(&Op::SendInline(&[i; 16]));
    }
    for _ in 0..SENT {
        // Acknowledged: b's device has written the receive completion.
        a.wait_send(LONG).expect("send acknowledged");
    }
    let mark = mark_now(&b);
    for taken in 1..=SENT {
        assert!(!mark.taken(), "{} of {SENT} receives taken", taken - 1);
        b.poll_recv().expect("the receive completion is in the CQ");
    }
    assert!(mark.taken(), "every marked receive taken");

    // A receive arriving after the mark is not part of it.
    let _ = a.post(&Op::SendInline(b"later"));
    a.wait_send(LONG).expect("send acknowledged");
    assert!(mark.taken());
    assert!(!mark_now(&b).taken());
}
