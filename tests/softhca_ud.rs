//! UD QPs of the soft HCA within one process: two devices on two loopback
//! addresses; what the device does with WQEs a UD QP cannot run, sends
//! longer than the MTU, datagrams to a port or QP that does not exist, and
//! QP state through the adapter.

mod softhca_ud_common;

use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

use softhca_ud_common::*;
use uct::hca::soft::wire::{Gid, GRH_LEN};
use uct::hca::QpState;
use uct::mlx5;

fn pair(tag: &str) -> (UdSide, UdSide) {
    let a = UdSide::new(&format!("{tag}_a"), Ipv4Addr::new(127, 0, 0, 1));
    let mut b = UdSide::new(&format!("{tag}_b"), Ipv4Addr::new(127, 0, 0, 2));
    b.post_recvs(8);
    (a, b)
}

fn b_ah(a: &UdSide, b: &UdSide) -> uct::hca::soft::SoftAh {
    a.pd.create_ah(b.device.gid()).expect("address handle")
}

#[test]
fn a_wqe_a_ud_qp_cannot_run_fails_it_and_flushes_what_follows() {
    let (mut a, b) = pair("udbadwqe");
    let ah = b_ah(&a, &b);
    let bad = a.post_raw(mlx5::MLX5_OPCODE_RDMA_WRITE, 3);
    let cqe = a.wait_send().expect("error CQE");
    assert_eq!(cqe.opcode, mlx5::MLX5_CQE_REQ_ERR, "{cqe:?}");
    assert_eq!(cqe.wqe_counter, bad);
    assert_eq!(cqe.syndrome, mlx5::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
    assert_eq!(a.qp.query().expect("query").state, QpState::Error);
    let next = a.post_send(&ah, b.sq.qpn, QKEY, b"after", true, None);
    let cqe = a.wait_send().expect("flush CQE");
    assert_eq!(
        (cqe.opcode, cqe.wqe_counter, cqe.syndrome),
        (
            mlx5::MLX5_CQE_REQ_ERR,
            next,
            mlx5::MLX5_CQE_SYNDROME_WR_FLUSH_ERR
        )
    );
}

#[test]
fn a_send_without_room_for_its_address_is_refused() {
    let (mut a, _b) = pair("udshortwqe");
    // SEND with DS 2: the 48-byte datagram segment does not fit.
    let bad = a.post_raw(mlx5::MLX5_OPCODE_SEND, 2);
    let cqe = a.wait_send().expect("error CQE");
    assert_eq!((cqe.opcode, cqe.wqe_counter), (mlx5::MLX5_CQE_REQ_ERR, bad));
}

#[test]
fn a_send_longer_than_the_mtu_is_a_local_length_error() {
    let (mut a, b) = pair("udmtu");
    let ah = b_ah(&a, &b);
    let big = pattern(4097, 1);
    let i = a.post_send(&ah, b.sq.qpn, QKEY, &big, false, None);
    let cqe = a.wait_send().expect("error CQE");
    assert_eq!(
        (cqe.opcode, cqe.wqe_counter, cqe.syndrome),
        (
            mlx5::MLX5_CQE_REQ_ERR,
            i,
            mlx5::MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR
        )
    );
}

#[test]
fn datagrams_to_nowhere_are_lost_and_the_rest_arrive() {
    let (mut a, mut b) = pair("udnowhere");
    let ah = b_ah(&a, &b);
    // A soft HCA port nobody opened, and a QP number b does not have.
    let gone = Gid::from_endpoint(SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 3), 9));
    let nowhere = a.pd.create_ah(gone.0).expect("well-formed GID");
    let i = a.post_send(&nowhere, b.sq.qpn, QKEY, b"lost", true, None);
    let cqe = a.wait_send().expect("sent");
    assert_eq!((cqe.opcode, cqe.wqe_counter), (mlx5::MLX5_CQE_REQ, i));
    let unknown_before = b.device.link_stats().rx_unknown_qp;
    a.post_send(&ah, b.sq.qpn + 1, QKEY, b"no such QP", true, None);
    a.wait_send().expect("sent");
    let data = pattern(500, 3);
    a.post_send(&ah, b.sq.qpn, QKEY, &data, false, Some(42));
    a.wait_send().expect("sent");

    let cqe = b.wait_recv(true, LONG).expect("the good datagram");
    assert_eq!(cqe.byte_cnt as usize, GRH_LEN + data.len());
    assert_eq!(cqe.remote_qpn, a.sq.qpn);
    assert_eq!(cqe.imm_inval_pkey, 42);
    assert_eq!(b.read_recv(cqe.wqe_counter, GRH_LEN + 500)[GRH_LEN..], data);
    assert!(
        b.wait_recv(true, Duration::from_millis(100)).is_none(),
        "nothing else arrived"
    );
    assert_eq!(b.device.link_stats().rx_unknown_qp, unknown_before + 1);
}

/// A UD QP with a receive queue of its own (no SRQ): WQEs of data
/// segments only, taken in ring order across wrap-around, the counter in
/// the QP's doorbell record, CQEs without an SRQ number.
#[test]
fn a_qp_with_its_own_receive_queue_takes_datagrams_in_ring_order() {
    let mut a = UdSide::new("udownrq_a", Ipv4Addr::new(127, 0, 0, 1));
    let mut b = UdSide::with_rq("udownrq_b", Ipv4Addr::new(127, 0, 0, 2));
    let ah = b_ah(&a, &b);
    // Twice around the 64-entry ring, a few receives ahead at a time.
    for round in 0..16u16 {
        b.post_recvs(8);
        for k in 0..8u16 {
            let n = round * 8 + k;
            let data = pattern(100 + usize::from(n), n as u8);
            a.post_send(&ah, b.sq.qpn, QKEY, &data, false, None);
            a.wait_send().expect("sent");
            let cqe = b.wait_recv(true, LONG).expect("datagram");
            assert_eq!(cqe.opcode, mlx5::MLX5_CQE_RESP_SEND, "{cqe:?}");
            assert_eq!(cqe.wqe_counter, n % 64, "ring order");
            assert_eq!(cqe.srqn, 0);
            assert!(cqe.grh_in_data);
            // RoCE v2 over IPv6 (the GRH format of link-local GIDs).
            assert_eq!(
                cqe.roce_packet_type,
                mlx5::MLX5_CQE_ROCE_L3_IPV6 | mlx5::MLX5_CQE_ROCE_UDP
            );
            let got = b.read_recv(cqe.wqe_counter, GRH_LEN + data.len());
            assert_eq!(got[GRH_LEN..], data);
        }
    }
}
