//! rc_mlx5 atomics between two ifaces on two soft devices in one process,
//! through the C entry points: every op and width with the value at the
//! target and the fetched value checked, compare-and-swap hit and miss, a
//! counter bumped concurrently from both sides, ordering after a put, and
//! refused input that posts nothing.

mod rc_common;

use std::ptr::null_mut;

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;

/// Waits for `comp` to have been called once.
fn wait_done(pair: &Pair, comp: &CountingCompletion) {
    assert!(pair.wait(|| comp.calls() >= 1), "completion not called");
}

const OPS_POST: [uct_atomic_op_t; 4] = [
    UCT_ATOMIC_OP_ADD,
    UCT_ATOMIC_OP_AND,
    UCT_ATOMIC_OP_OR,
    UCT_ATOMIC_OP_XOR,
];

const OPS_FETCH: [uct_atomic_op_t; 5] = [
    UCT_ATOMIC_OP_ADD,
    UCT_ATOMIC_OP_AND,
    UCT_ATOMIC_OP_OR,
    UCT_ATOMIC_OP_XOR,
    UCT_ATOMIC_OP_SWAP,
];

fn expected64(op: uct_atomic_op_t, old: u64, value: u64) -> u64 {
    match op {
        UCT_ATOMIC_OP_ADD => old.wrapping_add(value),
        UCT_ATOMIC_OP_AND => old & value,
        UCT_ATOMIC_OP_OR => old | value,
        UCT_ATOMIC_OP_XOR => old ^ value,
        UCT_ATOMIC_OP_SWAP => value,
        _ => unreachable!("op {op}"),
    }
}

fn expected32(op: uct_atomic_op_t, old: u32, value: u32) -> u32 {
    expected64(op, u64::from(old), u64::from(value)) as u32
}

#[test]
fn atomic_capabilities_are_advertised() {
    let side = Side::open(c"mlx5_0", c"mlx5_0:1", None);
    let bit = |op: uct_atomic_op_t| 1u64 << op;
    let post = bit(UCT_ATOMIC_OP_ADD)
        | bit(UCT_ATOMIC_OP_AND)
        | bit(UCT_ATOMIC_OP_OR)
        | bit(UCT_ATOMIC_OP_XOR);
    let fetch = post | bit(UCT_ATOMIC_OP_SWAP) | bit(UCT_ATOMIC_OP_CSWAP);
    for cap in [side.attr.cap.atomic32, side.attr.cap.atomic64] {
        assert_eq!(cap.op_flags, post);
        assert_eq!(cap.fop_flags, fetch);
    }
    assert_ne!(side.attr.cap.flags & UCT_IFACE_FLAG_ATOMIC_DEVICE, 0);
    assert_eq!(side.attr.cap.flags & UCT_IFACE_FLAG_ATOMIC_CPU, 0);
    side.close();
}

#[test]
fn every_post_op_and_width_changes_the_target() {
    let pair = Pair::new();
    let mut target = Target::new(4);
    let (memh, rkey) = pair.b.register(target.base(), target.len());
    let old64 = 0xf0f0_1234_8000_0001u64;
    let value64 = 0x0ff0_ffff_8000_0003u64;
    let (old32, value32) = (0x8001_f0f1u32, 0x8000_ff13u32);
    for op in OPS_POST {
        target.write64(8, old64);
        let status = atomic64_post(pair.ep_a, op, value64, target.addr(8), rkey);
        assert_eq!(status, UCS_OK, "op {op}");
        assert_eq!(pair.flush(pair.ep_a), UCS_OK);
        assert_eq!(target.read64(8), expected64(op, old64, value64), "op {op}");

        // The 32-bit op on the upper half of a word leaves the lower half.
        target.write32(16, 0x5a5a_5a5a);
        target.write32(20, old32);
        let status = atomic32_post(pair.ep_a, op, value32, target.addr(20), rkey);
        assert_eq!(status, UCS_OK, "op {op}");
        assert_eq!(pair.flush(pair.ep_a), UCS_OK);
        assert_eq!(target.read32(20), expected32(op, old32, value32), "op {op}");
        assert_eq!(
            target.read32(16),
            0x5a5a_5a5a,
            "op {op}: neighbour untouched"
        );
    }
    mem_dereg(pair.b.md, memh);
    pair.close();
}

#[test]
fn every_fetch_op_and_width_returns_the_old_value() {
    let pair = Pair::new();
    let mut target = Target::new(4);
    let (memh, rkey) = pair.b.register(target.base(), target.len());
    let old64 = 0x8765_4321_ffff_0000u64;
    let value64 = 0x0000_ffff_0001_ffffu64;
    let (old32, value32) = (0xffff_0000u32, 0x0001_ffffu32);
    for op in OPS_FETCH {
        target.write64(0, old64);
        let mut result64 = 0u64;
        let mut comp = CountingCompletion::new(1);
        let status = atomic64_fetch(
            pair.ep_a,
            op,
            value64,
            &mut result64,
            target.addr(0),
            rkey,
            comp.as_ptr(),
        );
        assert_eq!(status, UCS_INPROGRESS, "op {op}");
        wait_done(&pair, &comp);
        assert_eq!(comp.status(), UCS_OK);
        assert_eq!(comp.calls(), 1);
        assert_eq!(read_volatile(&result64), old64, "op {op}");
        assert_eq!(target.read64(0), expected64(op, old64, value64), "op {op}");

        target.write32(8, 0x1111_1111);
        target.write32(12, old32);
        let mut result32 = 0u32;
        let mut comp = CountingCompletion::new(1);
        let status = atomic32_fetch(
            pair.ep_a,
            op,
            value32,
            &mut result32,
            target.addr(12),
            rkey,
            comp.as_ptr(),
        );
        assert_eq!(status, UCS_INPROGRESS, "op {op}");
        wait_done(&pair, &comp);
        assert_eq!(comp.status(), UCS_OK);
        assert_eq!(read_volatile(&result32), old32, "op {op}");
        assert_eq!(target.read32(12), expected32(op, old32, value32), "op {op}");
        assert_eq!(
            target.read32(8),
            0x1111_1111,
            "op {op}: neighbour untouched"
        );
    }
    mem_dereg(pair.b.md, memh);
    pair.close();
}

#[test]
fn compare_and_swap_hits_and_misses() {
    let pair = Pair::new();
    let mut target = Target::new(2);
    let (memh, rkey) = pair.b.register(target.base(), target.len());
    // (compare matches?, width)
    for hit in [true, false] {
        let old64 = 0x0123_4567_89ab_cdefu64;
        target.write64(0, old64);
        let compare = if hit { old64 } else { old64 ^ (1 << 63) };
        let mut result64 = 0u64;
        let mut comp = CountingCompletion::new(1);
        let status = cswap64(
            pair.ep_a,
            compare,
            42,
            target.addr(0),
            rkey,
            &mut result64,
            comp.as_ptr(),
        );
        assert_eq!(status, UCS_INPROGRESS);
        wait_done(&pair, &comp);
        assert_eq!(read_volatile(&result64), old64);
        assert_eq!(target.read64(0), if hit { 42 } else { old64 }, "hit {hit}");

        let old32 = 0xdead_beefu32;
        target.write32(8, 0x7777_7777);
        target.write32(12, old32);
        let compare = if hit { old32 } else { old32 ^ 1 };
        let mut result32 = 0u32;
        let mut comp = CountingCompletion::new(1);
        let status = cswap32(
            pair.ep_a,
            compare,
            0x0bad_cafe,
            target.addr(12),
            rkey,
            &mut result32,
            comp.as_ptr(),
        );
        assert_eq!(status, UCS_INPROGRESS);
        wait_done(&pair, &comp);
        assert_eq!(read_volatile(&result32), old32);
        assert_eq!(
            target.read32(12),
            if hit { 0x0bad_cafe } else { old32 },
            "hit {hit}"
        );
        assert_eq!(target.read32(8), 0x7777_7777);
    }
    mem_dereg(pair.b.md, memh);
    pair.close();
}

#[test]
fn counter_bumped_from_both_sides_counts_every_add() {
    const PER_SIDE: usize = 300;
    let pair = Pair::new();
    // One counter (64-bit at 0, 32-bit at 8), registered with both devices:
    // a's ep reaches it through b's registration and b's ep through a's.
    let mut target = Target::new(2);
    let (memh_b, rkey_via_b) = pair.b.register(target.base(), target.len());
    let (memh_a, rkey_via_a) = pair.a.register(target.base(), target.len());
    let counter64 = target.addr(0);
    let counter32 = target.addr(8);
    let mut fetched64 = vec![u64::MAX; 2 * PER_SIDE];
    let mut fetched32 = vec![u32::MAX; 2 * PER_SIDE];
    let mut comps = [
        CountingCompletion::new((2 * PER_SIDE) as i32),
        CountingCompletion::new((2 * PER_SIDE) as i32),
    ];
    let (results64, results32) = (fetched64.as_mut_ptr(), fetched32.as_mut_ptr());
    for i in 0..PER_SIDE {
        for (side, (ep, rkey)) in [(pair.ep_a, rkey_via_b), (pair.ep_b, rkey_via_a)]
            .into_iter()
            .enumerate()
        {
            let slot = 2 * i + side;
            let comp = comps[side].as_ptr();
            // SAFETY: live eps; the result slots and completions outlive the
            // ops (waited for below).
            let status = pair.post_retrying(|| unsafe {
                uct_ep_atomic64_fetch(
                    ep,
                    UCT_ATOMIC_OP_ADD,
                    1,
                    results64.add(slot),
                    counter64,
                    rkey,
                    comp,
                )
            });
            assert_eq!(status, UCS_INPROGRESS);
            // SAFETY: as above.
            let status = pair.post_retrying(|| unsafe {
                uct_ep_atomic32_fetch(
                    ep,
                    UCT_ATOMIC_OP_ADD,
                    1,
                    results32.add(slot),
                    counter32,
                    rkey,
                    comp,
                )
            });
            assert_eq!(status, UCS_INPROGRESS);
        }
    }
    for comp in &comps {
        wait_done(&pair, comp);
        assert_eq!(comp.status(), UCS_OK);
        assert_eq!(comp.calls(), 1);
    }
    assert_eq!(target.read64(0), (2 * PER_SIDE) as u64);
    assert_eq!(target.read64(8) as u32, (2 * PER_SIDE) as u32);
    // Every add saw a different old value: exactly 0 .. 2N-1 once each.
    // SAFETY: completed; read through the raw pointers the device wrote.
    let mut seen64: Vec<u64> = (0..2 * PER_SIDE)
        .map(|i| unsafe { results64.add(i).read_volatile() })
        .collect();
    // SAFETY: as above.
    let mut seen32: Vec<u32> = (0..2 * PER_SIDE)
        .map(|i| unsafe { results32.add(i).read_volatile() })
        .collect();
    seen64.sort_unstable();
    seen32.sort_unstable();
    assert!(seen64.iter().enumerate().all(|(i, &v)| v == i as u64));
    assert!(seen32.iter().enumerate().all(|(i, &v)| v == i as u32));
    mem_dereg(pair.b.md, memh_b);
    mem_dereg(pair.a.md, memh_a);
    pair.close();
}

#[test]
fn posted_atomics_then_flush_and_an_atomic_sees_an_earlier_put() {
    const N: u64 = 100;
    let pair = Pair::new();
    let mut target = Target::new(2);
    let (memh, rkey) = pair.b.register(target.base(), target.len());
    for _ in 0..N {
        let status = pair
            .post_retrying(|| atomic64_post(pair.ep_a, UCT_ATOMIC_OP_ADD, 3, target.addr(0), rkey));
        assert_eq!(status, UCS_OK);
    }
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(target.read64(0), 3 * N);

    // RC executes in order at the responder: a fetch after a put reads it.
    let stamp = 0x5151_5151_0000_0007u64;
    let bytes = stamp.to_ne_bytes();
    let status = put_short(pair.ep_a, &bytes, target.addr(8), rkey);
    assert_eq!(status, UCS_OK);
    let mut result = 0u64;
    let mut comp = CountingCompletion::new(1);
    let status = atomic64_fetch(
        pair.ep_a,
        UCT_ATOMIC_OP_XOR,
        0xff,
        &mut result,
        target.addr(8),
        rkey,
        comp.as_ptr(),
    );
    assert_eq!(status, UCS_INPROGRESS);
    wait_done(&pair, &comp);
    assert_eq!(read_volatile(&result), stamp);
    assert_eq!(target.read64(8), stamp ^ 0xff);
    mem_dereg(pair.b.md, memh);
    pair.close();
}

#[test]
fn refused_atomics_post_nothing() {
    let pair = Pair::new();
    let mut target = Target::new(2);
    let (memh, rkey) = pair.b.register(target.base(), target.len());
    target.write64(0, 1000);
    target.write64(8, 2000);
    let mut result64 = 0u64;
    let mut result32 = 0u32;
    let ep = pair.ep_a;
    let (at0, at8) = (target.addr(0), target.addr(8));
    // SAFETY: live ep; every call is refused before anything is posted.
    unsafe {
        // Misaligned remote addresses.
        assert_eq!(
            uct_ep_atomic64_post(ep, UCT_ATOMIC_OP_ADD, 1, at0 + 4, rkey),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_atomic32_post(ep, UCT_ATOMIC_OP_ADD, 1, at0 + 2, rkey),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_atomic64_fetch(
                ep,
                UCT_ATOMIC_OP_ADD,
                1,
                &mut result64,
                at0 + 1,
                rkey,
                null_mut()
            ),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_atomic_cswap64(ep, 1000, 5, at8 + 4, rkey, &mut result64, null_mut()),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_atomic_cswap32(ep, 1000, 5, at8 + 1, rkey, &mut result32, null_mut()),
            UCS_ERR_INVALID_PARAM
        );
        // Ops not offered in that form.
        for op in [
            UCT_ATOMIC_OP_SWAP,
            UCT_ATOMIC_OP_CSWAP,
            UCT_ATOMIC_OP_LAST,
            77,
        ] {
            assert_eq!(
                uct_ep_atomic64_post(ep, op, 1, at0, rkey),
                UCS_ERR_UNSUPPORTED,
                "op {op}"
            );
            assert_eq!(
                uct_ep_atomic32_post(ep, op, 1, at0, rkey),
                UCS_ERR_UNSUPPORTED,
                "op {op}"
            );
        }
        for op in [UCT_ATOMIC_OP_CSWAP, UCT_ATOMIC_OP_LAST, 1000] {
            assert_eq!(
                uct_ep_atomic64_fetch(ep, op, 1, &mut result64, at0, rkey, null_mut()),
                UCS_ERR_UNSUPPORTED,
                "op {op}"
            );
            assert_eq!(
                uct_ep_atomic32_fetch(ep, op, 1, &mut result32, at0, rkey, null_mut()),
                UCS_ERR_UNSUPPORTED,
                "op {op}"
            );
        }
        // No result buffer for a fetch.
        assert_eq!(
            uct_ep_atomic64_fetch(ep, UCT_ATOMIC_OP_ADD, 1, null_mut(), at0, rkey, null_mut()),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_atomic_cswap32(ep, 1, 2, at0, rkey, null_mut(), null_mut()),
            UCS_ERR_INVALID_PARAM
        );
        // No ep.
        assert_eq!(
            uct_ep_atomic64_post(null_mut(), UCT_ATOMIC_OP_ADD, 1, at0, rkey),
            UCS_ERR_INVALID_PARAM
        );
        // Nothing outstanding: flush completes at once.
        assert_eq!(uct_ep_flush(ep, 0, null_mut()), UCS_OK);
    }
    assert_eq!(target.read64(0), 1000);
    assert_eq!(target.read64(8), 2000);

    // The ep still works afterwards.
    let status = atomic64_post(ep, UCT_ATOMIC_OP_ADD, 1, at0, rkey);
    assert_eq!(status, UCS_OK);
    assert_eq!(pair.flush(ep), UCS_OK);
    assert_eq!(target.read64(0), 1001);
    mem_dereg(pair.b.md, memh);
    pair.close();
}

#[test]
fn a_fetch_without_completion_is_known_done_after_flush() {
    let pair = Pair::new();
    let mut target = Target::new(1);
    let (memh, rkey) = pair.b.register(target.base(), target.len());
    target.write64(0, 9);
    let mut result = 0u64;
    let status = atomic64_fetch(
        pair.ep_a,
        UCT_ATOMIC_OP_SWAP,
        10,
        &mut result,
        target.addr(0),
        rkey,
        null_mut(),
    );
    assert_eq!(status, UCS_INPROGRESS);
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(read_volatile(&result), 9);
    assert_eq!(target.read64(0), 10);
    mem_dereg(pair.b.md, memh);
    pair.close();
}

#[test]
fn outstanding_atomics_name_their_uct_calls() {
    use uct::failover::{PostedOp, RemoteTarget};
    use uct::mlx5::AtomicSize::{Bits32, Bits64};
    use uct::rc::ep::RcEp;

    let pair = Pair::new();
    let mut target = Target::new(4);
    let (memh, rkey) = pair.b.register(target.base(), target.len());
    let (at0, at8, at16, at24) = (
        target.addr(0),
        target.addr(8),
        target.addr(16),
        target.addr(24),
    );
    let mut result64 = 0u64;
    let mut result32 = 0u32;
    let mut result_cs = 0u32;
    let ep = pair.ep_a;
    // SAFETY: live ep; results outlive the ops (flushed below). No progress
    // is made between the posts and the table walk, so nothing completes.
    unsafe {
        assert_eq!(
            uct_ep_atomic64_post(ep, UCT_ATOMIC_OP_ADD, 5, at0, rkey),
            UCS_OK
        );
        assert_eq!(
            uct_ep_atomic32_fetch(
                ep,
                UCT_ATOMIC_OP_AND,
                0xff00,
                &mut result32,
                at8,
                rkey,
                null_mut()
            ),
            UCS_INPROGRESS
        );
        assert_eq!(
            uct_ep_atomic64_fetch(
                ep,
                UCT_ATOMIC_OP_SWAP,
                77,
                &mut result64,
                at16,
                rkey,
                null_mut()
            ),
            UCS_INPROGRESS
        );
        assert_eq!(
            uct_ep_atomic_cswap32(ep, 0, 9, at24, rkey, &mut result_cs, null_mut()),
            UCS_INPROGRESS
        );
        let rc_ep = RcEp::from_handle(ep, "test").expect("live ep");
        let table: Vec<_> = rc_ep.txwq().ops().cloned().collect();
        assert_eq!(table.len(), 4);
        let kinds: Vec<&str> = table.iter().map(|op| op.op().name()).collect();
        assert_eq!(
            kinds,
            [
                "atomic_post",
                "atomic_fetch",
                "atomic_fetch",
                "atomic_cswap"
            ]
        );
        let remote = |address| RemoteTarget { address, rkey };
        // The calls as made, with their remote address and result pointer.
        assert!(
            matches!(
            *table[0].op(),
            PostedOp::AtomicPost { remote: r, op: UCT_ATOMIC_OP_ADD, size: Bits64, value: 5 }
                if r == remote(at0)
            ),
            "{:?}",
            table[0].op()
        );
        assert!(
            matches!(
            *table[1].op(),
            PostedOp::AtomicFetch { remote: r, op: UCT_ATOMIC_OP_AND, size: Bits32, value: 0xff00, result, .. }
                if r == remote(at8) && result == (&mut result32 as *mut u32).cast()
            ),
            "{:?}",
            table[1].op()
        );
        assert!(
            matches!(
            *table[2].op(),
            PostedOp::AtomicFetch { remote: r, op: UCT_ATOMIC_OP_SWAP, size: Bits64, value: 77, result, .. }
                if r == remote(at16) && result == (&mut result64 as *mut u64).cast()
            ),
            "{:?}",
            table[2].op()
        );
        assert!(
            matches!(
            *table[3].op(),
            PostedOp::AtomicCswap { remote: r, size: Bits32, compare: 0, swap: 9, result, .. }
                if r == remote(at24) && result == (&mut result_cs as *mut u32).cast()
            ),
            "{:?}",
            table[3].op()
        );
    }
    assert_eq!(pair.flush(ep), UCS_OK);
    assert_eq!(target.read64(0), 5);
    assert_eq!(target.read64(16), 77);
    assert_eq!(target.read32(24), 9);
    mem_dereg(pair.b.md, memh);
    pair.close();
}

#[test]
fn results_are_byte_swapped_only_for_widths_the_device_returns_big_endian() {
    use uct::hca::AtomicResultOrder;
    use uct::rc::iface::RcIface;

    let pair = Pair::new();
    let mut target = Target::new(2);
    let (memh, rkey) = pair.b.register(target.base(), target.len());
    let old64 = 0x0102_0304_0506_0708u64;
    let old32 = 0x1122_3344u32;
    for (width32_big_endian, width64_big_endian) in
        [(false, false), (true, false), (false, true), (true, true)]
    {
        // Pretend the device writes results of some widths big-endian (mlx5
        // does for 32-bit ones; the soft HCA writes host order): the
        // transport must swap exactly those, so the caller sees their
        // host-order values swapped and the others unchanged.
        // SAFETY: a live iface of this library; no op is in flight.
        unsafe {
            RcIface::from_handle(pair.a.iface, "test")
                .expect("live iface")
                .state
                .set_atomic_result_order(AtomicResultOrder {
                    width32_big_endian,
                    width64_big_endian,
                });
        }
        target.write64(0, old64);
        target.write32(8, old32);
        let mut result64 = 0u64;
        let mut result32 = 0u32;
        let mut comp = CountingCompletion::new(2);
        assert_eq!(
            atomic64_fetch(
                pair.ep_a,
                UCT_ATOMIC_OP_ADD,
                1,
                &mut result64,
                target.addr(0),
                rkey,
                comp.as_ptr()
            ),
            UCS_INPROGRESS
        );
        assert_eq!(
            cswap32(
                pair.ep_a,
                old32,
                5,
                target.addr(8),
                rkey,
                &mut result32,
                comp.as_ptr()
            ),
            UCS_INPROGRESS
        );
        wait_done(&pair, &comp);
        let (got64, got32) = (read_volatile(&result64), read_volatile(&result32));
        let want64 = if width64_big_endian {
            old64.swap_bytes()
        } else {
            old64
        };
        let want32 = if width32_big_endian {
            old32.swap_bytes()
        } else {
            old32
        };
        assert_eq!(got64, want64, "64-bit big-endian: {width64_big_endian}");
        assert_eq!(got32, want32, "32-bit big-endian: {width32_big_endian}");
        // The target itself is always in host order.
        assert_eq!(target.read64(0), old64 + 1);
        assert_eq!(target.read32(8), 5);
    }
    mem_dereg(pair.b.md, memh);
    pair.close();
}

#[test]
fn a_refused_atomic_fails_the_ep_and_completes_fetches_with_the_error() {
    let pair = Pair::new();
    let mut target = Target::new(2);
    let (memh, rkey) = pair.b.register(target.base(), target.len());
    target.write64(0, 50);
    target.write64(8, 60);
    let mut results = [u64::MAX; 3];
    let mut comps: Vec<Box<CountingCompletion>> =
        (0..3).map(|_| CountingCompletion::new(1)).collect();
    // The second fetch targets memory outside the registration: the
    // responder refuses it, the ep fails, the third op is flushed.
    let outside = target.addr(0) + 4096;
    let addresses = [target.addr(0), outside, target.addr(8)];
    for i in 0..3 {
        let status = atomic64_fetch(
            pair.ep_a,
            UCT_ATOMIC_OP_ADD,
            1,
            &mut results[i],
            addresses[i],
            rkey,
            comps[i].as_ptr(),
        );
        assert_eq!(status, UCS_INPROGRESS);
    }
    assert!(pair.wait(|| comps.iter().all(|c| c.calls() == 1)));
    assert_eq!(comps[0].status(), UCS_OK);
    assert_ne!(comps[1].status(), UCS_OK);
    assert_ne!(comps[2].status(), UCS_OK);
    let got = read_volatile(&results);
    assert_eq!(got[0], 50);
    assert_eq!(
        got[1..],
        [u64::MAX; 2],
        "failed fetches leave the result alone"
    );
    assert_eq!(target.read64(0), 51);
    assert_eq!(target.read64(8), 60, "the flushed op did not execute");
    // Posts on the failed ep report the error.
    let status = atomic64_post(pair.ep_a, UCT_ATOMIC_OP_ADD, 1, target.addr(0), rkey);
    assert!(
        status < 0 && status != UCS_ERR_NO_RESOURCE,
        "status {status}"
    );
    assert_eq!(target.read64(0), 51);
    mem_dereg(pair.b.md, memh);
    pair.close();
}

/// What the pending callback of the next test posts: ep, remote address,
/// rkey, and how often it ran.
static PENDING_TARGET: std::sync::Mutex<(usize, u64, uct_rkey_t)> =
    std::sync::Mutex::new((0, 0, 0));
static PENDING_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

unsafe extern "C" fn pending_atomic(_req: *mut uct_pending_req_t) -> ucs_status_t {
    PENDING_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let (ep, addr, rkey) = *PENDING_TARGET.lock().unwrap();
    atomic64_post(ep as uct_ep_h, UCT_ATOMIC_OP_XOR, 1 << 40, addr, rkey)
}

#[test]
fn a_full_ring_refuses_atomics_until_the_pending_one_runs() {
    use std::sync::atomic::Ordering;

    let pair = Pair::new();
    let mut target = Target::new(1);
    let (memh, rkey) = pair.b.register(target.base(), target.len());
    let at0 = target.addr(0);
    // Without progress on a, completions are never polled: the ring fills.
    let mut posted = 0u64;
    let status = loop {
        let status = atomic64_post(pair.ep_a, UCT_ATOMIC_OP_ADD, 1, at0, rkey);
        if status != UCS_OK {
            break status;
        }
        posted += 1;
        assert!(posted < 100_000, "the ring never filled");
    };
    assert_eq!(status, UCS_ERR_NO_RESOURCE);
    assert!(posted >= 16, "posted {posted}");
    // A fetch is refused the same way, and leaves its result alone.
    let mut result = 7u64;
    let status = atomic64_fetch(
        pair.ep_a,
        UCT_ATOMIC_OP_ADD,
        1,
        &mut result,
        at0,
        rkey,
        null_mut(),
    );
    assert_eq!(status, UCS_ERR_NO_RESOURCE);
    *PENDING_TARGET.lock().unwrap() = (pair.ep_a as usize, at0, rkey);
    let mut req = uct_pending_req_t {
        func: Some(pending_atomic),
        r#priv: [0; UCT_PENDING_REQ_PRIV_LEN],
    };
    assert_eq!(pending_add(pair.ep_a, &mut req, 0), UCS_OK);
    assert!(pair.wait(|| PENDING_CALLS.load(Ordering::SeqCst) == 1));
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(target.read64(0), posted | (1 << 40));
    assert_eq!(result, 7);
    mem_dereg(pair.b.md, memh);
    pair.close();
}
