//! How rc_mlx5 reports a bad zcopy buffer and a remote access error, which
//! it advertises with `UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF` and
//! `UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM` (as UCX's rc_mlx5): the failed ep is
//! logged once, at the level UCX chooses (`UCX_RC_MLX5_FAILURE` for a peer
//! that refused or is gone, error for a local fault, fatal when the error
//! handler did not take the error), and a zcopy buffer outside its
//! registration is refused with an error line, as UCX's parameter checks.

mod log_capture;
mod rc_common;

use std::ffi::{c_void, CStr};
use std::ptr::null_mut;

use log_capture::capture_logs;
use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::rc::iface::failure_log_level;

unsafe extern "C" fn take_error(
    _arg: *mut c_void,
    _ep: uct_ep_h,
    _status: ucs_status_t,
) -> ucs_status_t {
    UCS_OK
}

fn pair_with_handler(settings: &[(&CStr, &CStr)]) -> Pair {
    let mut params = iface_params();
    params.field_mask |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG;
    params.err_handler = Some(take_error);
    Pair::with_config(Some(params), None, settings)
}

/// Lines of `logs` that mention `needle`.
fn lines_with<'a>(logs: &'a str, needle: &str) -> Vec<&'a str> {
    logs.lines().filter(|l| l.contains(needle)).collect()
}

/// A put_zcopy to an address the peer never registered; returns the log
/// lines of the time it took to fail (the send CQ is polled on this thread).
fn remote_access_error_logs(settings: &[(&CStr, &CStr)]) -> String {
    setup();
    let pair = pair_with_handler(settings);
    let mut target = vec![0u8; 4096];
    let (target_memh, rkey) = pair.b.register(target.as_mut_ptr(), target.len());
    let mut source = vec![1u8; 64];
    let (source_memh, _) = pair.a.register(source.as_mut_ptr(), source.len());
    let iov = [iov_entry(source.as_mut_ptr(), 64, source_memh)];
    let mut comp = CountingCompletion::new(1);
    let beyond = target.as_ptr() as u64 + 65536;
    let (_, logs) = capture_logs(|| {
        assert_eq!(
            put_zcopy(pair.ep_a, &iov, beyond, rkey, comp.as_ptr()),
            UCS_INPROGRESS
        );
        assert!(pair.wait(|| comp.calls() == 1), "the put never completed");
    });
    assert_eq!(comp.status(), UCS_ERR_CONNECTION_RESET);
    assert!(target.iter().all(|&b| b == 0), "the refused put wrote");
    assert_eq!(mem_dereg(pair.a.md, source_memh), UCS_OK);
    assert_eq!(mem_dereg(pair.b.md, target_memh), UCS_OK);
    pair.close();
    logs
}

#[test]
fn both_error_handling_capabilities_are_advertised() {
    setup();
    let pair = Pair::new();
    let flags = pair.a.attr.cap.flags;
    assert_ne!(
        flags & UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF,
        0,
        "flags 0x{flags:x}"
    );
    assert_ne!(
        flags & UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM,
        0,
        "flags 0x{flags:x}"
    );
    pair.close();
}

#[test]
fn remote_access_error_is_logged_once_at_the_failure_level() {
    let logs = remote_access_error_logs(&[(c"FAILURE", c"error")]);
    let lines = lines_with(&logs, "remote access error");
    assert_eq!(lines.len(), 1, "one line for the failed ep: {logs}");
    assert!(lines[0].contains("ERROR"), "FAILURE=error: {}", lines[0]);
    assert!(lines[0].contains("syndrome 0x13"), "{}", lines[0]);
    assert!(
        lines[0].contains("handled by the error handler"),
        "{}",
        lines[0]
    );
}

#[test]
fn remote_access_error_is_logged_at_diag_by_default() {
    let logs = remote_access_error_logs(&[]);
    let lines = lines_with(&logs, "remote access error");
    assert_eq!(lines.len(), 1, "one line for the failed ep: {logs}");
    // UCX's diag level shows as INFO (tracing has no diag).
    assert!(
        lines[0].contains("INFO"),
        "default FAILURE=diag: {}",
        lines[0]
    );
}

#[test]
fn zcopy_buffer_outside_its_registration_is_refused_with_an_error_line() {
    setup();
    let pair = Pair::new();
    let mut target = vec![0u8; 4096];
    let (target_memh, rkey) = pair.b.register(target.as_mut_ptr(), target.len());
    let mut source = vec![1u8; 4096];
    let (source_memh, _) = pair.a.register(source.as_mut_ptr(), 64);
    // Inside the allocation, past the 64 registered bytes.
    let iov = [iov_entry(source[128..].as_mut_ptr(), 16, source_memh)];
    let (status, logs) =
        capture_logs(|| put_zcopy(pair.ep_a, &iov, target.as_ptr() as u64, rkey, null_mut()));
    assert_eq!(status, UCS_ERR_INVALID_PARAM);
    let lines = lines_with(&logs, "outside its registration");
    assert_eq!(lines.len(), 1, "{logs}");
    assert!(lines[0].contains("ERROR"), "{}", lines[0]);
    // Nothing was posted and the ep still works.
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert!(target.iter().all(|&b| b == 0));
    assert_eq!(mem_dereg(pair.a.md, source_memh), UCS_OK);
    assert_eq!(mem_dereg(pair.b.md, target_memh), UCS_OK);
    pair.close();
}

#[test]
fn failure_levels_are_chosen_as_ucx_chooses_them() {
    let diag = UCS_LOG_LEVEL_DIAG;
    // The handler took it: a peer that refused or is gone at FAILURE's level.
    assert_eq!(
        failure_log_level(diag, Status::ConnectionReset, UCS_OK),
        diag
    );
    assert_eq!(
        failure_log_level(diag, Status::EndpointTimeout, UCS_OK),
        diag
    );
    // A local fault is the caller's bug: an error whatever FAILURE says.
    assert_eq!(
        failure_log_level(diag, Status::IoError, UCS_OK),
        UCS_LOG_LEVEL_ERROR
    );
    // A flushed WQE says nothing new.
    assert_eq!(
        failure_log_level(diag, Status::Canceled, UCS_OK),
        UCS_LOG_LEVEL_TRACE
    );
    // Nobody took the error (no handler, or it refused).
    assert_eq!(
        failure_log_level(diag, Status::ConnectionReset, UCS_ERR_CONNECTION_RESET),
        UCS_LOG_LEVEL_FATAL
    );
}
