//! Answers the ib md gives without a warning, as UCX's ib md gives them:
//! callers probe these (UCX's gtest fails a test on any unexpected warning),
//! so the status is the whole answer and the line is a debug one.

mod log_capture;
mod rc_common;

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use log_capture::capture_logs;
use rc_common::*;
use uct::abi::*;
use uct::api::md::*;

fn open_md() -> uct_md_h {
    let mut md = null_mut();
    // SAFETY: valid arguments and out-pointer; NULL config = defaults.
    assert_eq!(
        unsafe { uct_md_open(component(), c"mlx5_0".as_ptr(), null(), &mut md) },
        UCS_OK
    );
    md
}

fn warnings(logs: &str) -> Vec<&str> {
    logs.lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .collect()
}

#[test]
fn invalidating_deregistration_is_unsupported_without_a_warning() {
    let md = open_md();
    let mut buffer = vec![0u8; 4096];
    let mut memh = null_mut();
    // SAFETY: a live buffer and out-pointer.
    let status = unsafe {
        uct_md_mem_reg(
            md,
            buffer.as_mut_ptr().cast::<c_void>(),
            buffer.len(),
            UCT_MD_MEM_ACCESS_ALL,
            &mut memh,
        )
    };
    assert_eq!(status, UCS_OK);
    let mut params = uct_md_mem_dereg_params_t {
        field_mask: (UCT_MD_MEM_DEREG_FIELD_MEMH
            | UCT_MD_MEM_DEREG_FIELD_FLAGS
            | UCT_MD_MEM_DEREG_FIELD_COMPLETION) as u64,
        memh,
        flags: UCT_MD_MEM_DEREG_FLAG_INVALIDATE,
        comp: null_mut(),
    };
    // SAFETY: params is complete for its field mask.
    let (status, logs) = capture_logs(|| unsafe { uct_md_mem_dereg_v2(md, &params) });
    assert_eq!(status, UCS_ERR_UNSUPPORTED);
    assert!(warnings(&logs).is_empty(), "{logs}");
    params.field_mask = UCT_MD_MEM_DEREG_FIELD_MEMH as u64;
    // SAFETY: as above.
    assert_eq!(unsafe { uct_md_mem_dereg_v2(md, &params) }, UCS_OK);
    // SAFETY: opened above.
    unsafe { uct_md_close(md) };
}

#[test]
fn no_sockaddr_is_accessible_and_asking_is_no_warning() {
    let md = open_md();
    let address = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
        },
        sin_zero: [0; 8],
    };
    let sock_addr = ucs_sock_addr_t {
        addr: (&address as *const libc::sockaddr_in).cast(),
        addrlen: std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
    };
    let (answers, logs) = capture_logs(|| {
        [UCT_SOCKADDR_ACC_LOCAL, UCT_SOCKADDR_ACC_REMOTE].map(|mode| {
            // SAFETY: a live md and address.
            unsafe { uct_md_is_sockaddr_accessible(md, &sock_addr, mode) }
        })
    });
    assert_eq!(answers, [0, 0]);
    assert!(warnings(&logs).is_empty(), "{logs}");
    // SAFETY: opened above.
    unsafe { uct_md_close(md) };
}
