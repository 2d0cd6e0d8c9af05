//! `ucs_status_string`, `ucs_memory_type_names`, `ucs_async_mode_names`: the
//! texts C callers print, checked word for word against UCX's.

use std::ffi::{c_char, CStr};

use uct::abi::*;
use uct::api::async_context::ucs_async_mode_names;
use uct::api::memory_type::{ucs_memory_type_descs, ucs_memory_type_names};
use uct::api::status::ucs_status_string;

fn text(status: ucs_status_t) -> String {
    let ptr = ucs_status_string(status);
    assert!(!ptr.is_null(), "status {status} gave NULL");
    // SAFETY: ucs_status_string returns a NUL-terminated static string.
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn named_statuses_have_ucx_texts() {
    // UCX 1.13 / master `ucs_status_string` texts.
    let expected: &[(ucs_status_t, &str)] = &[
        (UCS_OK, "Success"),
        (UCS_INPROGRESS, "Operation in progress"),
        (UCS_ERR_NO_MESSAGE, "No pending message"),
        (
            UCS_ERR_NO_RESOURCE,
            "No resources are available to initiate the operation",
        ),
        (UCS_ERR_IO_ERROR, "Input/output error"),
        (UCS_ERR_NO_MEMORY, "Out of memory"),
        (UCS_ERR_INVALID_PARAM, "Invalid parameter"),
        (UCS_ERR_UNREACHABLE, "Destination is unreachable"),
        (UCS_ERR_INVALID_ADDR, "Address not valid"),
        (UCS_ERR_NOT_IMPLEMENTED, "Function not implemented"),
        (UCS_ERR_MESSAGE_TRUNCATED, "Message truncated"),
        (UCS_ERR_NO_PROGRESS, "No progress"),
        (UCS_ERR_BUFFER_TOO_SMALL, "Provided buffer is too small"),
        (UCS_ERR_NO_ELEM, "No such element"),
        (
            UCS_ERR_SOME_CONNECTS_FAILED,
            "Failed to connect some of the requested endpoints",
        ),
        (UCS_ERR_NO_DEVICE, "No such device"),
        (UCS_ERR_BUSY, "Device is busy"),
        (UCS_ERR_CANCELED, "Request canceled"),
        (UCS_ERR_SHMEM_SEGMENT, "Shared memory error"),
        (UCS_ERR_ALREADY_EXISTS, "Element already exists"),
        (UCS_ERR_OUT_OF_RANGE, "Index out of range"),
        (UCS_ERR_TIMED_OUT, "Operation timed out"),
        (UCS_ERR_EXCEEDS_LIMIT, "User-defined limit was reached"),
        (UCS_ERR_UNSUPPORTED, "Unsupported operation"),
        (UCS_ERR_REJECTED, "Operation rejected by remote peer"),
        (UCS_ERR_NOT_CONNECTED, "Endpoint is not connected"),
        (UCS_ERR_CONNECTION_RESET, "Connection reset by remote peer"),
        (UCS_ERR_ENDPOINT_TIMEOUT, "Endpoint timeout"),
    ];
    for &(status, message) in expected {
        assert_eq!(text(status), message, "status {status}");
    }
    // Every variant of the Rust enum is covered by the table above.
    for status in Status::ALL {
        assert!(
            expected.iter().any(|&(code, _)| code == status.raw()),
            "{status}"
        );
    }
}

#[test]
fn unknown_statuses_are_stable_and_never_null() {
    for code in [-26, -40, -59, -60, -81, -100, -128, 2, 127] {
        let first = ucs_status_string(code);
        let second = ucs_status_string(code);
        // The same code always yields the same pointer: callers may keep it.
        assert_eq!(first, second);
        assert_eq!(text(code), format!("Unknown error {code}"));
    }
    // Two different unknown codes never share a buffer (UCX's static buffer
    // would be overwritten by the second call).
    let a = ucs_status_string(-30);
    let b = ucs_status_string(-31);
    assert_ne!(a, b);
    // SAFETY: static NUL-terminated strings.
    assert_eq!(
        unsafe { CStr::from_ptr(a) }.to_str(),
        Ok("Unknown error -30")
    );
}

#[test]
fn status_strings_are_thread_safe() {
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for code in i8::MIN..=i8::MAX {
                    let expected = match code {
                        0 => "Success".to_string(),
                        -22 => "Unsupported operation".to_string(),
                        c if !(-25..=1).contains(&c) && c != -80 => format!("Unknown error {c}"),
                        _ => continue,
                    };
                    assert_eq!(text(code), expected, "thread {t}");
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("thread panicked");
    }
}

fn table_entry(table: &[*const c_char], index: usize) -> Option<String> {
    let ptr = table[index];
    // SAFETY: non-NULL entries of the exported tables are static C strings.
    (!ptr.is_null()).then(|| {
        unsafe { CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned()
    })
}

#[test]
fn memory_type_names_follow_ucx_1_13() {
    // UCX 1.13's tables (what 1.13-built binaries copy at load time): its
    // five memory types, "unknown" at its UCS_MEMORY_TYPE_LAST (5), NULL.
    let names = &ucs_memory_type_names.0;
    let expected = ["host", "cuda", "cuda-managed", "rocm", "rocm-managed"];
    for (index, name) in expected.iter().enumerate() {
        assert_eq!(table_entry(names, index).as_deref(), Some(*name));
    }
    let last = expected.len();
    assert_eq!(table_entry(names, last).as_deref(), Some("unknown"));
    assert_eq!(table_entry(names, last + 1), None, "NULL terminator");
    assert_eq!(names.len(), last + 2);

    let descs = &ucs_memory_type_descs.0;
    assert_eq!(table_entry(descs, 0).as_deref(), Some("System memory"));
    assert_eq!(table_entry(descs, last).as_deref(), Some("unknown"));
    assert_eq!(descs.len(), last + 1);
}

#[test]
fn async_mode_names_follow_ucx() {
    let names = &ucs_async_mode_names.0;
    for (mode, name) in [
        (UCS_ASYNC_MODE_SIGNAL, "signal"),
        (UCS_ASYNC_MODE_THREAD_SPINLOCK, "thread_spinlock"),
        (UCS_ASYNC_MODE_THREAD_MUTEX, "thread_mutex"),
        (UCS_ASYNC_MODE_POLL, "poll"),
    ] {
        assert_eq!(
            table_entry(names, mode as usize).as_deref(),
            Some(name),
            "mode {mode}"
        );
    }
    assert_eq!(table_entry(names, UCS_ASYNC_MODE_LAST as usize), None);
}
