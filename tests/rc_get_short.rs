//! rc_mlx5 `uct_ep_get_short` between two soft devices in one process: an
//! RDMA READ into a bounce buffer, copied into the caller's buffer when
//! its completion is processed, so the data is there once a flush
//! completes. Checked: the capability and limit, data at many lengths and
//! offsets, READ after WRITE on the same ep, a full send ring
//! (`UCS_ERR_NO_RESOURCE`, nothing lost), refused input that posts nothing,
//! and purge reporting an undelivered get_short with the caller's buffer.

mod failover_rc_common;
mod rc_common;

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::Mutex;

use failover_rc_common::*;
use rc_common::uct_safe;
use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;

/// `uct_soft_hca_drop_next` acts on the whole device: tests that send
/// traffic take this lock so the purge test's drops hit only its own ops.
static TRAFFIC: Mutex<()> = Mutex::new(());

fn traffic() -> std::sync::MutexGuard<'static, ()> {
    TRAFFIC.lock().unwrap_or_else(|p| p.into_inner())
}

fn source_byte(offset: usize) -> u8 {
    (offset * 31 % 251) as u8 ^ 0x5a
}

/// Posts `get_short` with progress until the ring has room.
fn get_short_retrying(pair: &Pair, buffer: &mut [u8], raddr: u64, rkey: uct_rkey_t) {
    loop {
        let status = get_short(pair.ep_a, buffer, raddr, rkey);
        if status != UCS_ERR_NO_RESOURCE {
            assert_eq!(status, UCS_INPROGRESS, "get_short completes by a flush");
            return;
        }
        pair.progress();
    }
}

#[test]
fn get_short_is_advertised_with_its_limit() {
    let pair = Pair::new();
    let attr = pair.a.attr;
    assert_ne!(attr.cap.flags & UCT_IFACE_FLAG_GET_SHORT, 0);
    assert!(attr.cap.get.max_short >= 64, "{}", attr.cap.get.max_short);
    assert!(attr.cap.get.max_short <= attr.cap.get.max_bcopy);
    pair.close();
}

#[test]
fn data_is_in_place_when_the_flush_completes() {
    let _traffic = traffic();
    let pair = Pair::new();
    let max = pair.a.attr.cap.get.max_short;
    let mut source: Vec<u8> = (0..4096).map(source_byte).collect();
    let (memh, rkey) = pair.b.register(source.as_mut_ptr(), source.len());
    let base = source.as_ptr() as u64;
    // Lengths 0 and 1 to the limit at odd offsets, all outstanding at once.
    let mut cases: Vec<(usize, usize)> = vec![(0, 0), (3, 1), (7, 8), (100, 63), (333, max)];
    cases.extend((0..40).map(|i| (i * 97 % 3000, 1 + i * 13 % max)));
    let mut buffers: Vec<Vec<u8>> = cases.iter().map(|&(_, len)| vec![0xeeu8; len]).collect();
    for (buffer, &(offset, _)) in buffers.iter_mut().zip(&cases) {
        get_short_retrying(&pair, buffer, base + offset as u64, rkey);
    }
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    for (buffer, &(offset, len)) in buffers.iter().zip(&cases) {
        let expected: Vec<u8> = (offset..offset + len).map(source_byte).collect();
        assert_eq!(buffer, &expected, "get_short of {len} bytes at {offset}");
    }
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}

#[test]
fn reads_see_earlier_writes_of_the_same_ep() {
    let _traffic = traffic();
    let pair = Pair::new();
    let mut target = vec![0u8; 256];
    let (memh, rkey) = pair.b.register(target.as_mut_ptr(), target.len());
    let raddr = target.as_ptr() as u64;
    let mut seen = Vec::new();
    for round in 0..20u8 {
        let data = [round; 32];
        let mut back = [0u8; 32];
        assert_eq!(put_short(pair.ep_a, &data[..32], raddr, rkey), UCS_OK);
        get_short_retrying(&pair, &mut back, raddr, rkey);
        assert_eq!(pair.flush(pair.ep_a), UCS_OK);
        seen.push(back);
    }
    for (round, back) in seen.iter().enumerate() {
        assert_eq!(back, &[round as u8; 32]);
    }
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}

#[test]
fn a_full_ring_says_no_resource_and_loses_nothing() {
    let _traffic = traffic();
    let pair = Pair::new();
    let mut source: Vec<u8> = (0..1024).map(source_byte).collect();
    let (memh, rkey) = pair.b.register(source.as_mut_ptr(), source.len());
    let base = source.as_ptr() as u64;
    // Post without progress until the ring (or CQ credits) run out.
    let mut buffers: Vec<[u8; 16]> = vec![[0u8; 16]; 100_000];
    let mut posted = 0;
    let status = loop {
        let offset = (posted * 7) % 1000;
        // SAFETY: live ep; the buffers outlive the flush below and are
        // not moved (the Vec is never grown).
        let status = unsafe {
            uct_ep_get_short(
                pair.ep_a,
                buffers[posted].as_mut_ptr().cast(),
                16,
                base + offset as u64,
                rkey,
            )
        };
        if status != UCS_INPROGRESS || posted + 1 == buffers.len() {
            break status;
        }
        posted += 1;
    };
    assert_eq!(status, UCS_ERR_NO_RESOURCE, "after {posted} posts");
    assert!(posted >= 16, "{posted}");
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    for (index, buffer) in buffers[..posted].iter().enumerate() {
        let offset = (index * 7) % 1000;
        let expected: Vec<u8> = (offset..offset + 16).map(source_byte).collect();
        assert_eq!(&buffer[..], &expected[..], "get {index}");
    }
    // The refused post wrote nothing.
    assert_eq!(buffers[posted], [0u8; 16]);
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}

#[test]
fn bad_input_is_refused_and_posts_nothing() {
    let pair = Pair::new();
    let max = pair.a.attr.cap.get.max_short;
    let mut source = vec![1u8; 4096];
    let (memh, rkey) = pair.b.register(source.as_mut_ptr(), source.len());
    let raddr = source.as_ptr() as u64;
    let mut buffer = vec![0u8; max + 1];
    // SAFETY: live ep; bad arguments are refused before anything is read.
    unsafe {
        assert_eq!(
            uct_ep_get_short(
                pair.ep_a,
                buffer.as_mut_ptr().cast(),
                (max + 1) as u32,
                raddr,
                rkey
            ),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_get_short(pair.ep_a, null_mut(), 8, raddr, rkey),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_get_short(null_mut(), buffer.as_mut_ptr().cast(), 8, raddr, rkey),
            UCS_ERR_INVALID_PARAM
        );
    }
    // Nothing was posted: the ep is idle, a flush finishes at once.
    assert_eq!(ep_flush(pair.ep_a, 0, null_mut()), UCS_OK);
    assert!(buffer.iter().all(|&b| b == 0));
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}

/// What purge reported: (operation, remote address, rkey, buffer, length).
type Reported = Vec<(uct_ep_operation_t, u64, uct_rkey_t, *mut c_void, usize)>;

#[test]
fn purge_reports_an_undelivered_get_short_with_the_callers_buffer() {
    let _traffic = traffic();
    let pair = Pair::new();
    let mut source: Vec<u8> = (0..512).map(source_byte).collect();
    let (memh, rkey) = pair.b.register(source.as_mut_ptr(), source.len());
    let raddr = source.as_ptr() as u64;
    // Nothing leaves a: the gets stay outstanding until invalidated.
    assert_eq!(drop_next(c"mlx5_0", 1000), UCS_OK);
    let mut first = [0u8; 24];
    let mut second = [0u8; 40];
    assert_eq!(
        get_short(pair.ep_a, &mut first[..24], raddr + 8, rkey),
        UCS_INPROGRESS
    );
    assert_eq!(
        get_short(pair.ep_a, &mut second[..40], raddr + 64, rkey),
        UCS_INPROGRESS
    );
    let reported: Reported = fail_over_purge(pair.ep_a, pair.b.iface, |info| match op_rma(info) {
        Some(rma) => {
            let data = rma_payload_data(&rma).expect("an RMA's payload data");
            (
                info.operation,
                rma.remote_addr,
                rma.rkey,
                data.buffer,
                data.length,
            )
        }
        None => (info.operation, 0, 0, null_mut(), 0),
    });
    assert_eq!(drop_next(c"mlx5_0", 0), UCS_OK);
    assert_eq!(
        reported,
        vec![
            (
                UCT_EP_OP_GET_SHORT,
                raddr + 8,
                rkey,
                first.as_mut_ptr().cast(),
                24
            ),
            (
                UCT_EP_OP_GET_SHORT,
                raddr + 64,
                rkey,
                second.as_mut_ptr().cast(),
                40
            ),
        ]
    );
    // The data never arrived and nothing was copied.
    assert_eq!(first, [0u8; 24]);
    assert_eq!(second, [0u8; 40]);
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}
