//! `uct_iface_mem_alloc` / `uct_iface_mem_free` on rc_mlx5 (what UCX's
//! ucx_perftest allocates every buffer with): the memory comes registered
//! with the iface's md, its memh serves put_zcopy and its packed key lets
//! the peer write into it; bad arguments are refused.

mod rc_common;

use std::ptr::{null, null_mut};

use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;
use uct::api::md::*;
use uct::api::mem_alloc::*;

fn alloc(iface: uct_iface_h, length: usize) -> uct_allocated_memory_t {
    let mut mem: uct_allocated_memory_t = rc_common::uct_safe::zeroed();
    // SAFETY: live iface, NUL-terminated name, writable mem.
    let status = unsafe {
        uct_iface_mem_alloc(
            iface,
            length,
            UCT_MD_MEM_ACCESS_ALL,
            c"test buffer".as_ptr(),
            &mut mem,
        )
    };
    assert_eq!(status, UCS_OK);
    assert!(!mem.address.is_null() && mem.length >= length);
    assert!(!mem.memh.is_null(), "registered");
    assert_eq!(mem.mem_type, UCS_MEMORY_TYPE_HOST);
    mem
}

#[test]
fn allocated_memory_serves_zcopy_both_ways() {
    let pair = Pair::new();
    let source = alloc(pair.a.iface, 10_000);
    let target = alloc(pair.b.iface, 10_000);
    assert_eq!(target.md, pair.b.md, "registered with the iface's md");
    // SAFETY: both buffers hold at least 10000 bytes.
    let (source_bytes, target_bytes) = unsafe {
        (
            std::slice::from_raw_parts_mut(source.address as *mut u8, 10_000),
            std::slice::from_raw_parts_mut(target.address as *mut u8, 10_000),
        )
    };
    for (index, byte) in source_bytes.iter_mut().enumerate() {
        *byte = (index * 7 % 251) as u8;
    }
    let bundle = unpacked_rkey(target.md, target.memh);
    let iov = uct_iov_t {
        buffer: source.address,
        length: 10_000,
        memh: source.memh,
        stride: 0,
        count: 1,
    };
    let status = pair.post_retrying(|| {
        // SAFETY: registered iov; no completion (flushed below).
        unsafe {
            uct_ep_put_zcopy(
                pair.ep_a,
                &iov,
                1,
                target.address as u64,
                bundle.rkey,
                null_mut(),
            )
        }
    });
    assert!(
        status == UCS_OK || status == UCS_INPROGRESS,
        "put_zcopy: {status}"
    );
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(source_bytes, target_bytes);
    // SAFETY: from uct_iface_mem_alloc, freed once, after the last use.
    unsafe {
        uct_rkey_release(component(), &bundle);
        uct_iface_mem_free(&source);
        uct_iface_mem_free(&target);
    }
    pair.close();
}

#[test]
fn bad_arguments_are_refused() {
    let side = Side::open(c"mlx5_0", c"mlx5_0:1", None);
    let mut mem: uct_allocated_memory_t = rc_common::uct_safe::zeroed();
    // SAFETY: each call has one bad argument and otherwise valid ones.
    unsafe {
        assert_eq!(
            uct_iface_mem_alloc(null_mut(), 64, 0, null(), &mut mem),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_iface_mem_alloc(side.iface, 0, 0, null(), &mut mem),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_iface_mem_alloc(side.iface, 64, 0, null(), null_mut()),
            UCS_ERR_INVALID_PARAM
        );
        let mut garbage = [0u64; 64];
        assert_eq!(
            uct_iface_mem_alloc(garbage.as_mut_ptr().cast(), 64, 0, null(), &mut mem),
            UCS_ERR_INVALID_PARAM
        );
        uct_iface_mem_free(null());
    }
    assert!(mem.address.is_null(), "nothing written on failure");
    side.close();
}
