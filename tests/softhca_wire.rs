//! The two wires of the soft HCA: devices of one host talk through shared
//! memory under `UCX_SOFT_HCA_WIRE=auto` (the default) and over UDP under
//! `udp`; a receiver that never calls progress still gets its messages on
//! the shared-memory wire (the producer wakes its service thread), and the
//! fault calls act on that wire as on UDP. One test function: it changes
//! the environment between device opens.

mod softhca_common;
#[path = "uct_safe/mod.rs"]
mod uct_safe;

use std::time::Duration;

use softhca_common::*;
use uct::hca::Device;
use uct::mlx5;

const LONG: Duration = Duration::from_secs(20);

fn soft(device: &Device) -> &uct::hca::soft::SoftDevice {
    let Device::Soft(dev) = device else {
        panic!("not a soft HCA device")
    };
    dev
}

/// A connected pair with 32 receives posted at b.
fn pair_receiving(prefix: &str, timeout: u8) -> (Side, Side) {
    let (a, mut b) = pair(prefix, timeout, 7);
    b.post_recvs(32);
    (a, b)
}

/// A WRITE and a SEND from a to b, b never calling progress: the WRITE's
/// completion needs b's ACK, the SEND's receive CQE b's service thread.
fn write_and_send_to_passive(a: &mut Side, b: &mut Side, seed: u8) {
    let i = a.post_pattern_write(b, 10_000, seed);
    let cqe = a.wait_send(LONG).expect("WRITE completes");
    assert_eq!(
        (cqe.opcode, cqe.wqe_counter),
        (mlx5::MLX5_CQE_REQ, i),
        "{cqe:?} {:?} {:?}",
        soft(&a.device).link_stats(),
        soft(&b.device).link_stats()
    );
    assert_eq!(b.read_buf(0, 10_000), pattern(10_000, seed));
    a.post(&Op::SendInline(&[seed; 24]));
    a.wait_send(LONG).expect("SEND completes");
    let cqe = b.wait_recv_passive(LONG).expect("receive without progress");
    assert_eq!(cqe.byte_cnt, 24);
}

#[test]
fn same_host_devices_use_shared_memory_unless_told_udp_and_faults_act_on_both() {
    std::env::remove_var("UCX_SOFT_HCA_WIRE");
    // Seeded drop decisions: the lossy part repeats exactly.
    std::env::set_var("UCX_SOFT_HCA_SEED", "20261202");
    let (mut a, mut b) = pair_receiving("wire_shm", 8);
    write_and_send_to_passive(&mut a, &mut b, 3);
    let stats = soft(&a.device).link_stats();
    assert!(stats.tx_packets > 0);
    assert_eq!(
        stats.tx_shm, stats.tx_packets,
        "all through shared memory: {stats:?}"
    );
    assert_eq!(
        soft(&b.device).link_stats().tx_shm,
        soft(&b.device).link_stats().tx_packets
    );

    // Link down on a: nothing leaves, the WRITE waits; back up, the
    // retransmission completes it (timeout 8: ~1 ms per try).
    assert_eq!(uct_safe::link_set(c"wire_shm_a", false), 0);
    let i = a.post_pattern_write(&b, 64, 9);
    assert!(
        a.wait_send(Duration::from_millis(3)).is_none(),
        "no completion while down"
    );
    assert!(soft(&a.device).link_stats().tx_dropped_link_down > 0);
    assert_eq!(uct_safe::link_set(c"wire_shm_a", true), 0);
    let cqe = a.wait_send(LONG).expect("completes once the link is up");
    assert_eq!((cqe.opcode, cqe.wqe_counter), (mlx5::MLX5_CQE_REQ, i));
    assert_eq!(b.read_buf(0, 64), pattern(64, 9));

    // drop_next and a drop ratio on the receiving side count there.
    let before = soft(&b.device).link_stats();
    assert_eq!(uct_safe::drop_next(c"wire_shm_b", 1), 0);
    assert_eq!(uct_safe::loss_set(c"wire_shm_b", 0.1), 0);
    for round in 0..5u8 {
        write_and_send_to_passive(&mut a, &mut b, 20 + round);
    }
    assert_eq!(uct_safe::loss_set(c"wire_shm_b", 0.0), 0);
    let after = soft(&b.device).link_stats();
    assert!(
        after.tx_dropped_loss > before.tx_dropped_loss
            && after.rx_dropped_loss > before.rx_dropped_loss,
        "losses on the shared-memory wire, both directions: {before:?} -> {after:?}"
    );
    assert!(after.rx_shm > before.rx_shm);

    std::env::set_var("UCX_SOFT_HCA_WIRE", "udp");
    let (mut c, mut d) = pair_receiving("wire_udp", 8);
    write_and_send_to_passive(&mut c, &mut d, 5);
    let stats = soft(&c.device).link_stats();
    assert!(stats.tx_packets > 0);
    assert_eq!(
        (stats.tx_shm, soft(&d.device).link_stats().rx_shm),
        (0, 0),
        "UDP only"
    );

    // On UDP a receiver's pass holds its ACK for its next pass. A receiver
    // that stops progressing right after its receive CQE must still let the
    // ACK go (its service thread, once the caller's window is over), long
    // before the sender's ACK timeout (exponent 18: ~1.07 s) would have it
    // retransmit.
    let (mut e, mut f) = pair_receiving("wire_udp_held", 18);
    for round in 0..20u8 {
        e.post(&Op::SendInline(&[round; 24]));
        let cqe = f.wait_recv(LONG).expect("receive with progress");
        assert_eq!(cqe.byte_cnt, 24);
        // f calls progress no more this round.
        let start = std::time::Instant::now();
        e.wait_send(LONG).expect("SEND completes");
        let waited = start.elapsed();
        assert!(
            waited < Duration::from_millis(500),
            "round {round}: the ACK came after {waited:?}, a retransmission's wait: held and \
             not sent; {:?}",
            soft(&f.device).link_stats()
        );
    }
    assert_eq!(
        soft(&e.device).link_stats().tx_packets,
        20,
        "one datagram per SEND: none retransmitted"
    );
    std::env::remove_var("UCX_SOFT_HCA_WIRE");
}
