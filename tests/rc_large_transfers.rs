//! rc_mlx5 get_zcopy and put_zcopy of 64 MiB in one op between two soft
//! devices of one process (the same-host, shared-memory wire): every byte
//! lands, and the wire loses nothing on the way. A READ's responses come
//! from the responder as fast as it can build them; a peer ring that is
//! full holds them back (as link-level flow control would) rather than
//! dropping them into go-back-N and retransmission timeouts. Speed is
//! measured by `benches/large_transfer.rs`, not here.

mod rc_common;

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::hca::Device;

const LEN: usize = 64 << 20;

fn pattern(seed: u8) -> Vec<u8> {
    (0..LEN)
        .map(|i| (i as u8).wrapping_mul(31) ^ (i >> 12) as u8 ^ seed)
        .collect()
}

/// What a device's port counts as lost on send: full rings and refused
/// sends (there are no faults set in this process).
fn tx_errors(name: &str) -> u64 {
    let Ok(Device::Soft(device)) = Device::open(name) else {
        panic!("{name} is not a soft device")
    };
    device.link_stats().tx_errors
}

#[test]
fn a_64_mib_get_and_put_move_every_byte_and_lose_no_packet() {
    let pair = Pair::new();
    assert!(pair.a.attr.cap.get.max_zcopy >= LEN);
    assert!(pair.a.attr.cap.put.max_zcopy >= LEN);
    let mut remote = pattern(1);
    let mut local = vec![0u8; LEN];
    let (remote_memh, rkey) = pair.b.register(remote.as_mut_ptr(), LEN);
    let (local_memh, _) = pair.a.register(local.as_mut_ptr(), LEN);
    let iov = [iov_entry(local.as_mut_ptr(), LEN, local_memh)];

    let mut comp = CountingCompletion::new(1);
    let status = get_zcopy(pair.ep_a, &iov, remote.as_ptr() as u64, rkey, comp.as_ptr());
    pair.expect_completion(status, &comp);
    assert!(local == remote, "get_zcopy: the data differs");

    let sent = pattern(2);
    local.copy_from_slice(&sent);
    let mut comp = CountingCompletion::new(1);
    let status = put_zcopy(pair.ep_a, &iov, remote.as_ptr() as u64, rkey, comp.as_ptr());
    pair.expect_completion(status, &comp);
    assert!(remote == sent, "put_zcopy: the data differs");

    assert_eq!(tx_errors("mlx5_0"), 0, "requester's port lost datagrams");
    assert_eq!(tx_errors("mlx5_1"), 0, "responder's port lost datagrams");
    assert_eq!(mem_dereg(pair.a.md, local_memh), UCS_OK);
    assert_eq!(mem_dereg(pair.b.md, remote_memh), UCS_OK);
    pair.close();
}
