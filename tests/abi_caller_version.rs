//! Entry points whose arguments changed between UCX versions, called as
//! UCX 1.13's `libucp` calls them: this process loads Debian's UCX 1.13
//! `libucp.so.0` first, so the caller's version is 1.13 (the default, with
//! no UCX loaded, is our headers' API: `rc_estimate_perf.rs`, `rc_md_v2.rs`).

mod rc_common;

use std::ffi::c_void;
use std::sync::Once;

use rc_common::*;
use uct::abi::*;
use uct::api::caller_version::{caller_version, UcxVersion};
use uct::api::md::{uct_md_mkey_pack, uct_md_mkey_pack_v2};
use uct::api::v2::uct_iface_estimate_perf;

/// Loads UCX 1.13's libucp (Debian's libucx0, which CI installs).
fn load_ucx_113() {
    static LOAD: Once = Once::new();
    LOAD.call_once(|| {
        // SAFETY: loading a system library; it stays loaded.
        let handle = unsafe { libc::dlopen(c"libucp.so.0".as_ptr(), libc::RTLD_NOW) };
        assert!(!handle.is_null(), "UCX 1.13's libucp.so.0 is not installed");
    });
}

#[test]
fn the_caller_is_ucx_1_13() {
    load_ucx_113();
    assert_eq!(caller_version(), UcxVersion::new(1, 13));
}

/// UCX 1.13's prototype: `(md, memh, params, rkey_buffer)`.
type MkeyPackV113 = unsafe extern "C" fn(
    uct_md_h,
    uct_mem_h,
    *const uct_md_mkey_pack_params_t,
    *mut c_void,
) -> ucs_status_t;

#[test]
fn mkey_pack_v2_takes_1_13_s_four_arguments() {
    load_ucx_113();
    let side = Side::open(c"mlx5_0", c"mlx5_0:1", None);
    let mut buffer = vec![0u8; 4096];
    let (memh, _) = side.register(buffer.as_mut_ptr(), buffer.len());
    let params = uct_md_mkey_pack_params_t {
        field_mask: UCT_MD_MKEY_PACK_FIELD_FLAGS as u64,
        flags: 0,
    };
    let (mut packed_v2, mut packed_v1) = ([0u8; 8], [0xaau8; 8]);
    // SAFETY: called with exactly the arguments UCX 1.13's callers pass (the
    // same registers the six-argument definition reads first).
    let status = unsafe {
        let pack = std::mem::transmute::<*const c_void, MkeyPackV113>(
            uct_md_mkey_pack_v2 as *const c_void,
        );
        pack(side.md, memh, &params, packed_v2.as_mut_ptr().cast())
    };
    assert_eq!(status, UCS_OK);
    // SAFETY: a live md and memh, an 8-byte buffer.
    assert_eq!(
        unsafe { uct_md_mkey_pack(side.md, memh, packed_v1.as_mut_ptr().cast()) },
        UCS_OK
    );
    assert_eq!(packed_v2, packed_v1);
    side.close();
}

/// UCX 1.13's `uct_perf_attr_t` is 88 bytes: latency at 64 (bit 9), max
/// inflight eps at 80 (bit 10); nothing past its end is written.
#[test]
fn estimate_perf_fills_1_13_s_struct() {
    load_ucx_113();
    let side = Side::open(c"mlx5_0", c"mlx5_0:1", None);
    const SIZE: usize = 88;
    let mut raw = [0xa5u8; SIZE + 32];
    let field_mask: u64 = (1 << 9) | (1 << 10) | UCT_PERF_ATTR_FIELD_BANDWIDTH;
    raw[..8].copy_from_slice(&field_mask.to_ne_bytes());
    // SAFETY: the buffer holds a 1.13 struct (and more), as 1.13's caller
    // passes it.
    let status =
        unsafe { uct_iface_estimate_perf(side.iface, raw.as_mut_ptr().cast::<uct_perf_attr_t>()) };
    assert_eq!(status, UCS_OK);
    let f64_at = |offset: usize| f64::from_ne_bytes(raw[offset..offset + 8].try_into().unwrap());
    assert_eq!(f64_at(48), side.attr.bandwidth.dedicated);
    assert_eq!(f64_at(56), side.attr.bandwidth.shared);
    assert_eq!(f64_at(64), side.attr.latency.c);
    assert_eq!(f64_at(72), side.attr.latency.m);
    assert_eq!(
        usize::from_ne_bytes(raw[80..88].try_into().unwrap()),
        16,
        "RC_TX_CQ_LEN / TX_QUEUE_LEN"
    );
    assert!(
        raw[SIZE..].iter().all(|&b| b == 0xa5),
        "written past 88 bytes"
    );
    side.close();
}
