//! rc_mlx5 receives under scatter-to-CQE, which libmlx5 enables by default:
//! for an RC QP with 64-byte CQEs, mlx5 writes a received message of at
//! most 32 bytes into the CQE (flagged `MLX5_INLINE_SCATTER_32`) and leaves
//! the receive buffer as it was. Both soft devices here do the same (the
//! buffer is left holding a marker), so every short AM, every flow-control
//! grant and every kept descriptor below is read correctly only if the
//! transport takes the message from the CQE.

mod rc_common;

use std::ffi::{c_uint, c_void, CStr};
use std::ptr::null_mut;
use std::sync::Mutex;

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::iface::*;
use uct::hca::soft::SoftDevice;

const AM_ID: u8 = 6;

/// The soft devices' option acts on the whole device: tests take turns.
static DEVICES: Mutex<()> = Mutex::new(());

/// Both soft devices with scatter-to-CQE on, held open (a device closes,
/// forgetting the option, when its last user goes), and the turn.
struct ScatterOn {
    _devices: Vec<SoftDevice>,
    _turn: std::sync::MutexGuard<'static, ()>,
}

fn scatter_on() -> ScatterOn {
    let turn = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
    setup();
    let devices = ["mlx5_0", "mlx5_1"]
        .into_iter()
        .map(|name| {
            let device = uct::hca::devices::open_soft(name).expect("open soft device");
            device.set_scatter_to_cqe(true);
            device
        })
        .collect();
    ScatterOn {
        _devices: devices,
        _turn: turn,
    }
}

fn window(size: &'static CStr) -> [(&'static CStr, &'static CStr); 1] {
    [(c"RC_FC_WND_SIZE", size)]
}

fn set_handler(
    side: &Side,
    handler: unsafe extern "C" fn(*mut c_void, *mut c_void, usize, c_uint) -> ucs_status_t,
    arg: *mut c_void,
) {
    let status = set_am_handler(side.iface, AM_ID, Some(handler), arg, 0);
    assert_eq!(status, UCS_OK);
}

/// A recognisable payload of `len` bytes, different for each `seed`.
fn payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed) | 1)
        .collect()
}

/// The message an am_short of `header` and `data` delivers.
fn am_short_message(header: u64, data: &[u8]) -> Vec<u8> {
    let mut message = header.to_ne_bytes().to_vec();
    message.extend_from_slice(data);
    message
}

fn am_short(pair: &Pair, ep: uct_ep_h, header: u64, data: &[u8]) {
    let status = pair.post_retrying(|| rc_common::uct_safe::am_short(ep, AM_ID, header, data));
    assert_eq!(status, UCS_OK);
}

fn am_bcopy(pair: &Pair, ep: uct_ep_h, data: &[u8]) {
    let data = data.to_vec();
    let status = pair.post_retrying(|| {
        let sent = rc_common::uct_safe::am_bcopy(ep, AM_ID, &data, 0);
        if sent >= 0 {
            assert_eq!(sent as usize, data.len());
            UCS_OK
        } else {
            sent as ucs_status_t
        }
    });
    assert_eq!(status, UCS_OK);
}

#[test]
fn short_ams_around_the_32_byte_limit_arrive_intact() {
    let _devices = scatter_on();
    let pair = Pair::new();
    let at_b = inbox();
    set_handler(&pair.b, collect_am, at_b as *const Inbox as *mut c_void);
    // The 2-byte AM header goes before each AM: payloads of up to 22 bytes
    // after the 8-byte header fit the CQE, 23 and more do not.
    let lengths = [0usize, 1, 7, 22, 23, 24, 31, 100];
    let mut expected = Vec::new();
    for (round, &len) in lengths.iter().enumerate() {
        let data = payload(len, round as u8);
        let header = 0x1111_0000_0000_0000 | round as u64;
        am_short(&pair, pair.ep_a, header, &data);
        expected.push(am_short_message(header, &data));
    }
    // bcopy AMs of 0 to 30 bytes fit the CQE, 31 and 32 do not.
    for len in [0usize, 1, 5, 31, 32] {
        let data = payload(len, 0x40 + len as u8);
        am_bcopy(&pair, pair.ep_a, &data);
        expected.push(data);
    }
    assert!(pair.wait(|| at_b.lock().unwrap().len() >= expected.len()));
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    let got = at_b.lock().unwrap().clone();
    assert_eq!(got.len(), expected.len());
    for (index, (got, want)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "message {index}");
    }
    pair.close();
}

#[test]
fn grants_of_a_small_window_arrive_and_many_short_ams_stay_in_order() {
    // Each side's grants (2-byte messages) come back inside CQEs; read from
    // the stale buffer they would never reopen the window.
    const COUNT: u64 = 2000;
    let _devices = scatter_on();
    let pair = Pair::with_config(None, None, &window(c"4"));
    let (at_a, at_b) = (inbox(), inbox());
    set_handler(&pair.a, collect_am, at_a as *const Inbox as *mut c_void);
    set_handler(&pair.b, collect_am, at_b as *const Inbox as *mut c_void);
    for seq in 0..COUNT {
        let data = payload((seq % 24) as usize, seq as u8);
        am_short(&pair, pair.ep_a, seq, &data);
        if seq % 3 == 0 {
            am_short(&pair, pair.ep_b, seq, &data);
        }
    }
    let back = COUNT.div_ceil(3) as usize;
    assert!(pair.wait(|| {
        at_b.lock().unwrap().len() as u64 >= COUNT && at_a.lock().unwrap().len() >= back
    }));
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(pair.flush(pair.ep_b), UCS_OK);
    let got = at_b.lock().unwrap().clone();
    assert_eq!(got.len() as u64, COUNT);
    for (seq, message) in got.iter().enumerate() {
        let seq = seq as u64;
        let want = am_short_message(seq, &payload((seq % 24) as usize, seq as u8));
        assert_eq!(message, &want, "message {seq}");
    }
    let got = at_a.lock().unwrap().clone();
    assert_eq!(got.len(), back);
    for (index, message) in got.iter().enumerate() {
        let seq = index as u64 * 3;
        let want = am_short_message(seq, &payload((seq % 24) as usize, seq as u8));
        assert_eq!(message, &want, "message {seq} back");
    }
    pair.close();
}

/// Descriptors a handler kept: (data address, length).
static KEPT: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// Keeps every message with `UCT_CB_PARAM_FLAG_DESC`.
unsafe extern "C" fn keep_am(
    _arg: *mut c_void,
    data: *mut c_void,
    length: usize,
    flags: c_uint,
) -> ucs_status_t {
    if flags & UCT_CB_PARAM_FLAG_DESC == 0 {
        return UCS_OK;
    }
    KEPT.lock().unwrap().push((data as usize, length));
    UCS_INPROGRESS
}

#[test]
fn a_kept_descriptor_of_a_short_am_holds_its_message() {
    let _devices = scatter_on();
    let pair = Pair::new();
    KEPT.lock().unwrap().clear();
    set_handler(&pair.b, keep_am, null_mut());
    let small = payload(5, 0x33);
    am_short(&pair, pair.ep_a, 0xfeed, &small);
    assert!(pair.wait(|| KEPT.lock().unwrap().len() == 1));
    // More short traffic through the receive queue while it is kept.
    let at_b = inbox();
    set_handler(&pair.b, collect_am, at_b as *const Inbox as *mut c_void);
    for seq in 0..200u64 {
        am_short(&pair, pair.ep_a, seq, &payload(3, seq as u8));
    }
    assert!(pair.wait(|| at_b.lock().unwrap().len() == 200));
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    let (data, length) = KEPT.lock().unwrap()[0];
    // SAFETY: the kept descriptor stays valid until released below.
    let kept = unsafe { std::slice::from_raw_parts(data as *const u8, length) }.to_vec();
    assert_eq!(kept, am_short_message(0xfeed, &small));
    // SAFETY: a descriptor this iface handed out (no user headroom), once.
    unsafe { uct_iface_release_desc(data as *mut c_void) };
    pair.close();
}
