//! Two rc_mlx5 ifaces with different `UCX_IB_PATH_MTU` connect at the
//! smaller of the two: each iface's device address carries its path MTU
//! (left out at 4096, as UCX's ib ifaces do), and AM, put and get messages
//! larger than both MTUs arrive whole in both directions (the soft HCA
//! segments at the connected MTU on both ends; a responder refuses packets
//! longer than its QP's MTU).

mod rc_common;

use std::ffi::CStr;

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::hca::{DeviceAddress, Mtu};

/// Larger than any path MTU, several packets at each.
const LEN: usize = 5 * 4096 + 123;

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(29) ^ (i >> 9) as u8 ^ seed)
        .collect()
}

/// A pair whose side a has path MTU `mtu_a`, side b `mtu_b`.
fn pair_with_mtus(mtu_a: &CStr, mtu_b: &CStr) -> Pair {
    let a = Side::open_with(c"mlx5_0", c"mlx5_0:1", None, &[(c"IB_PATH_MTU", mtu_a)]);
    let b = Side::open_with(c"mlx5_1", c"mlx5_1:1", None, &[(c"IB_PATH_MTU", mtu_b)]);
    let (ep_a, ep_b) = connect_eps(&a, &b);
    Pair { a, b, ep_a, ep_b }
}

/// The path MTU a side's device address carries.
fn advertised_mtu(side: &Side) -> Mtu {
    DeviceAddress::unpack_with_mtu(&side.device_address())
        .expect("a valid device address")
        .1
}

/// Sends, from `from` over `ep` to `to`: an AM bcopy and an AM zcopy of
/// the iface's largest, a put and a get zcopy of `LEN`; checks every byte
/// at the other end.
fn exchange(pair: &Pair, from: &Side, ep: uct_ep_h, to: &Side, seed: u8) {
    let inbox = to.collect_am(7);
    let bcopy = pattern(seed, from.attr.cap.am.max_bcopy);
    assert!(
        bcopy.len() > 4096,
        "max_bcopy {} is within one packet",
        bcopy.len()
    );
    let sent = pair.post_retrying(|| {
        let length = am_bcopy(ep, 7, &bcopy, 0);
        if length < 0 {
            length as ucs_status_t
        } else {
            assert_eq!(length as usize, bcopy.len());
            UCS_OK
        }
    });
    assert_eq!(sent, UCS_OK, "am_bcopy");

    let mut local = pattern(seed ^ 0x55, LEN);
    let (local_memh, _) = from.register(local.as_mut_ptr(), LEN);
    let iov = [iov_entry(local.as_mut_ptr(), LEN, local_memh)];
    let header = [0xa5; 8];
    let am_len = from.attr.cap.am.max_zcopy - header.len();
    assert!(am_len > 4096, "am max_zcopy {am_len} is within one packet");
    let am_iov = [iov_entry(local.as_mut_ptr(), am_len, local_memh)];
    let mut comp = CountingCompletion::new(1);
    let status = am_zcopy(ep, 7, &header, &am_iov, 0, comp.as_ptr());
    pair.expect_completion(status, &comp);
    assert!(
        pair.wait(|| inbox.lock().unwrap().len() == 2),
        "the AMs did not arrive"
    );
    {
        let messages = inbox.lock().unwrap();
        assert!(messages[0] == bcopy, "am_bcopy: the data differs");
        let mut zcopy = header.to_vec();
        zcopy.extend_from_slice(&local[..am_len]);
        assert!(messages[1] == zcopy, "am_zcopy: the data differs");
    }

    let mut remote = pattern(seed ^ 0x0f, LEN);
    let (remote_memh, rkey) = to.register(remote.as_mut_ptr(), LEN);
    let mut comp = CountingCompletion::new(1);
    let status = put_zcopy(ep, &iov, remote.as_ptr() as u64, rkey, comp.as_ptr());
    pair.expect_completion(status, &comp);
    assert!(remote == local, "put_zcopy: the data differs");

    let expected = pattern(seed ^ 0xf0, LEN);
    remote.copy_from_slice(&expected);
    let mut comp = CountingCompletion::new(1);
    let status = get_zcopy(ep, &iov, remote.as_ptr() as u64, rkey, comp.as_ptr());
    pair.expect_completion(status, &comp);
    assert!(local == expected, "get_zcopy: the data differs");

    assert_eq!(mem_dereg(from.md, local_memh), UCS_OK);
    assert_eq!(mem_dereg(to.md, remote_memh), UCS_OK);
}

fn check_pair(mtu_a: &CStr, mtu_b: &CStr, advertised: (Mtu, Mtu)) {
    let pair = pair_with_mtus(mtu_a, mtu_b);
    assert_eq!(
        (advertised_mtu(&pair.a), advertised_mtu(&pair.b)),
        advertised
    );
    exchange(&pair, &pair.a, pair.ep_a, &pair.b, 1);
    exchange(&pair, &pair.b, pair.ep_b, &pair.a, 2);
    // Both directions again after each other's traffic: nothing failed.
    exchange(&pair, &pair.a, pair.ep_a, &pair.b, 3);
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(pair.flush(pair.ep_b), UCS_OK);
    pair.close();
}

#[test]
fn ifaces_with_4096_and_2048_exchange_messages_larger_than_both() {
    // UCX's gtest test_uct_ib_mtu.non_equal_mtu: 4096 is left out of the
    // address, 2048 is in it.
    check_pair(c"4096", c"2048", (Mtu::Mtu4096, Mtu::Mtu2048));
}

#[test]
fn ifaces_with_1024_and_2048_connect_at_1024_both_ways() {
    // Both MTUs in the addresses: each end takes the smaller, not the
    // peer's (which would leave the ends disagreeing).
    check_pair(c"2048", c"1024", (Mtu::Mtu2048, Mtu::Mtu1024));
}
