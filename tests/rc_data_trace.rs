//! AM tracers (`uct_iface_set_am_tracer`) on rc_mlx5: while UCX's
//! TRACE_DATA log level is on (here `UCX_LOG_LEVEL=data`, the level the
//! library reads when UCX's libucs is not loaded), every active message is
//! handed to the sender's tracer once as `UCT_AM_TRACE_TYPE_SEND` when it
//! is posted and to the receiver's once as `UCT_AM_TRACE_TYPE_RECV` before
//! its handler runs, with its id and its bytes after the transport's header
//! (am_short: the 8-byte header then the payload). Below that level no
//! tracer is called.
//!
//! One test function: the log level is process-wide and read when an iface
//! opens.

mod rc_common;

use std::ffi::{c_char, c_void};
use std::ptr::null_mut;
use std::sync::Mutex;

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::iface::uct_iface_set_am_tracer;

/// One tracer call: (trace type, id, bytes).
type TracerCall = (uct_am_trace_type_t, u8, Vec<u8>);

/// What one tracer saw.
type Seen = Mutex<Vec<TracerCall>>;

unsafe extern "C" fn record_am(
    arg: *mut c_void,
    kind: uct_am_trace_type_t,
    id: u8,
    data: *const c_void,
    length: usize,
    buffer: *mut c_char,
    max: usize,
) {
    // SAFETY: `arg` is a leaked `Seen`; `data` holds `length` bytes;
    // `buffer` has room for `max` bytes.
    unsafe {
        let seen = &*(arg as *const Seen);
        let bytes = std::slice::from_raw_parts(data as *const u8, length).to_vec();
        seen.lock().unwrap().push((kind, id, bytes));
        let text = b"traced";
        if max > text.len() {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buffer.cast(), text.len());
            *buffer.add(text.len()) = 0;
        }
    }
}

fn set_tracer(iface: uct_iface_h, seen: &'static Seen) {
    // SAFETY: a live iface; the argument is leaked (lives forever).
    let status = unsafe {
        uct_iface_set_am_tracer(iface, Some(record_am), seen as *const Seen as *mut c_void)
    };
    assert_eq!(status, UCS_OK);
}

fn leaked_seen() -> &'static Seen {
    Box::leak(Box::new(Mutex::new(Vec::new())))
}

/// Sends one am_short, one am_bcopy and one am_zcopy from a to b, waits
/// for all three, and returns what a's and b's tracers saw.
fn send_three_ams() -> (Vec<TracerCall>, Vec<TracerCall>, Vec<Vec<u8>>) {
    let pair = Pair::new();
    let sent_seen = leaked_seen();
    let received_seen = leaked_seen();
    set_tracer(pair.a.iface, sent_seen);
    set_tracer(pair.b.iface, received_seen);
    let inbox = pair.b.collect_am(5);

    let short_payload = [1u8, 2, 3, 4, 5];
    let header = u64::from_ne_bytes([9, 8, 7, 6, 5, 4, 3, 2]);
    assert_eq!(
        pair.post_retrying(|| am_short(pair.ep_a, 5, header, &short_payload)),
        UCS_OK
    );
    let bcopy_bytes = vec![0x5au8; 300];
    assert_eq!(am_bcopy(pair.ep_a, 5, &bcopy_bytes, 0), 300);
    let mut source = vec![0xc3u8; 1000];
    let (memh, _) = pair.a.register(source.as_mut_ptr(), source.len());
    let iov = [uct_iov_t {
        buffer: source.as_mut_ptr().cast(),
        length: source.len(),
        memh,
        stride: 0,
        count: 1,
    }];
    let mut comp = CountingCompletion::new(1);
    let status = am_zcopy(pair.ep_a, 5, &[0xee; 4], &iov, 0, comp.as_ptr());
    pair.expect_completion(status, &comp);
    assert!(pair.wait(|| inbox.lock().unwrap().len() == 3));
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);

    // SAFETY: a live iface; clearing the tracer stops further calls.
    unsafe {
        assert_eq!(
            uct_iface_set_am_tracer(pair.a.iface, None, null_mut()),
            UCS_OK
        );
        assert_eq!(
            uct_iface_set_am_tracer(pair.b.iface, None, null_mut()),
            UCS_OK
        );
    }
    let delivered = inbox.lock().unwrap().clone();
    let sent = sent_seen.lock().unwrap().clone();
    let received = received_seen.lock().unwrap().clone();
    pair.close();
    (sent, received, delivered)
}

#[test]
fn am_tracers_see_each_message_once_per_side_at_trace_data_only() {
    std::env::set_var("UCX_LOG_LEVEL", "data");
    let (sent, received, delivered) = send_three_ams();
    let mut short_bytes = vec![9u8, 8, 7, 6, 5, 4, 3, 2];
    short_bytes.extend_from_slice(&[1, 2, 3, 4, 5]);
    let mut zcopy_bytes = vec![0xeeu8; 4];
    zcopy_bytes.extend_from_slice(&[0xc3; 1000]);
    let expected = [short_bytes, vec![0x5a; 300], zcopy_bytes];
    assert_eq!(delivered, expected);
    let with_kind = |kind| -> Vec<TracerCall> {
        expected
            .iter()
            .map(|bytes| (kind, 5, bytes.clone()))
            .collect()
    };
    assert_eq!(sent, with_kind(UCT_AM_TRACE_TYPE_SEND));
    assert_eq!(received, with_kind(UCT_AM_TRACE_TYPE_RECV));

    std::env::set_var("UCX_LOG_LEVEL", "trace");
    let (sent, received, delivered) = send_three_ams();
    assert_eq!(delivered.len(), 3);
    assert_eq!(sent, []);
    assert_eq!(received, []);
}
