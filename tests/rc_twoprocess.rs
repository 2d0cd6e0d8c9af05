//! rc_mlx5 between two processes: this test binary starts itself again as
//! the peer (`child_side`, selected by an environment variable), and the two
//! exchange addresses over the child's stdin/stdout. The parent sends AMs
//! (short, bcopy), puts into the child's memory and reads it back; the child
//! reports what it received, and both sides check the data.

mod rc_common;

use std::ffi::c_void;
use std::io::Write;
use std::ptr::null_mut;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;

const ROLE_ENV: &str = "RC_TWOPROCESS_CHILD";
const PREFIX: &str = "RCTEST";
const BUF_LEN: usize = 64 * 1024;
const AM_DATA: u8 = 1;
const AM_DONE: u8 = 2;
const AM_REPORT: u8 = 3;
const SHORT_COUNT: u64 = 100;

/// `RCTEST <dev> <ep> <rkey> <buffer address>`.
fn address_line(side: &Side, ep: uct_ep_h, rkey: uct_rkey_t, buffer: u64) -> String {
    format!(
        "{PREFIX} {} {} {rkey} {buffer}",
        hex(&side.device_address()),
        hex(&side.ep_address(ep))
    )
}

struct Peer {
    device: Vec<u8>,
    ep: Vec<u8>,
    rkey: uct_rkey_t,
    buffer: u64,
}

fn parse_peer(line: &str) -> Peer {
    let mut parts = line.split_whitespace();
    assert_eq!(parts.next(), Some(PREFIX));
    let device = unhex(parts.next().expect("device address"));
    let ep = unhex(parts.next().expect("ep address"));
    let rkey = parts.next().expect("rkey").parse().expect("rkey number");
    let buffer = parts
        .next()
        .expect("buffer")
        .parse()
        .expect("buffer number");
    Peer {
        device,
        ep,
        rkey,
        buffer,
    }
}

fn connect(ep: uct_ep_h, peer: &Peer) {
    // The peer's addresses, of the lengths its iface reported.
    let status = connect_to_ep(ep, &peer.device, &peer.ep);
    assert_eq!(status, UCS_OK);
}

fn progress_until(side: &Side, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(30), "timed out");
        side.progress();
        std::thread::yield_now();
    }
}

fn send_am_short(side: &Side, ep: uct_ep_h, id: u8, header: u64, payload: &[u8]) {
    loop {
        let status = am_short(ep, id, header, payload);
        if status == UCS_OK {
            return;
        }
        assert_eq!(status, UCS_ERR_NO_RESOURCE);
        side.progress();
    }
}

fn flush(side: &Side, ep: uct_ep_h) {
    let start = Instant::now();
    loop {
        match ep_flush(ep, 0, null_mut()) {
            UCS_OK => return,
            UCS_INPROGRESS | UCS_ERR_NO_RESOURCE => side.progress(),
            status => panic!("flush failed: {status}"),
        };
        assert!(start.elapsed() < Duration::from_secs(30), "flush timed out");
    }
}

/// The child: receives AMs until AM_DONE, then reports the count and a
/// checksum of them and of its buffer (which the parent wrote into).
#[test]
fn child_side() {
    if std::env::var_os(ROLE_ENV).is_none() {
        return; // only meaningful when started by `two_processes`
    }
    let side = Side::open(c"mlx5_1", c"mlx5_1:1", None);
    let ep = side.create_ep();
    let mut buffer = vec![0u8; BUF_LEN];
    let (memh, rkey) = side.register(buffer.as_mut_ptr(), BUF_LEN);
    println!("{}", address_line(&side, ep, rkey, buffer.as_ptr() as u64));
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .expect("parent's address");
    connect(ep, &parse_peer(&line));

    let received = inbox();
    let done = inbox();
    side.collect_am_into(AM_DATA, received);
    side.collect_am_into(AM_DONE, done);
    progress_until(&side, || !done.lock().unwrap().is_empty());
    let messages = received.lock().unwrap();
    let checksum = messages.iter().flatten().fold(0u64, |acc, &b| {
        acc.wrapping_mul(31).wrapping_add(u64::from(b))
    });
    let buffer_sum = buffer.iter().fold(0u64, |acc, &b| {
        acc.wrapping_mul(31).wrapping_add(u64::from(b))
    });
    let report = [
        (messages.len() as u64).to_ne_bytes(),
        checksum.to_ne_bytes(),
        buffer_sum.to_ne_bytes(),
    ]
    .concat();
    send_am_short(&side, ep, AM_REPORT, 0, &report);
    flush(&side, ep);
    assert_eq!(mem_dereg(side.md, memh), UCS_OK);
    ep_destroy(ep);
    side.close();
}

#[test]
fn two_processes() {
    setup();
    let (mut child, line) = spawn_child(ROLE_ENV, &[], PREFIX);
    let peer = parse_peer(&line);

    let side = Side::open(c"mlx5_0", c"mlx5_0:1", None);
    let ep = side.create_ep();
    let mut local = vec![0u8; BUF_LEN];
    let (local_memh, local_rkey) = side.register(local.as_mut_ptr(), BUF_LEN);
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(
        stdin,
        "{}",
        address_line(&side, ep, local_rkey, local.as_ptr() as u64)
    )
    .expect("send address");
    connect(ep, &peer);
    let reports = inbox();
    side.collect_am_into(AM_REPORT, reports);

    // AMs: short ones with a sequence number and a payload, then bcopy.
    let mut sent: Vec<Vec<u8>> = Vec::new();
    for seq in 0..SHORT_COUNT {
        let payload = vec![seq as u8; (seq % 40) as usize];
        send_am_short(&side, ep, AM_DATA, seq, &payload);
        sent.push([seq.to_ne_bytes().to_vec(), payload].concat());
    }
    let big: Vec<u8> = (0..7000u32).map(|i| (i % 251) as u8).collect();
    loop {
        let n = am_bcopy(ep, AM_DATA, &big, 0);
        if n == 7000 {
            break;
        }
        assert_eq!(n, isize::from(UCS_ERR_NO_RESOURCE));
        side.progress();
    }
    sent.push(big.clone());

    // put_zcopy into the child's buffer, then get_bcopy it back.
    for (i, b) in local.iter_mut().enumerate() {
        *b = (i * 7 % 256) as u8;
    }
    let iov = [iov_entry(local.as_mut_ptr(), BUF_LEN, local_memh)];
    let mut put_done = CountingCompletion::new(1);
    let status = put_zcopy(ep, &iov[..1], peer.buffer, peer.rkey, put_done.as_ptr());
    assert_eq!(status, UCS_INPROGRESS);
    progress_until(&side, || put_done.calls() == 1);
    assert_eq!(put_done.status(), UCS_OK);
    let got: Mutex<Vec<u8>> = Mutex::new(Vec::new());
    unsafe extern "C" fn unpack(arg: *mut c_void, data: *const c_void, length: usize) {
        // SAFETY: arg is the Mutex; data holds length bytes.
        unsafe {
            (*(arg as *const Mutex<Vec<u8>>))
                .lock()
                .unwrap()
                .extend_from_slice(std::slice::from_raw_parts(data as *const u8, length));
        }
    }
    let mut get_done = CountingCompletion::new(1);
    // SAFETY: valid callback, argument and completion.
    let status = unsafe {
        uct_ep_get_bcopy(
            ep,
            Some(unpack),
            &got as *const _ as *mut c_void,
            4096,
            peer.buffer + 8192,
            peer.rkey,
            get_done.as_ptr(),
        )
    };
    assert_eq!(status, UCS_INPROGRESS);
    progress_until(&side, || get_done.calls() == 1);
    assert_eq!(*got.lock().unwrap(), local[8192..8192 + 4096]);

    // Done: the child reports what it saw.
    send_am_short(&side, ep, AM_DONE, 0, &[]);
    progress_until(&side, || !reports.lock().unwrap().is_empty());
    let report = reports.lock().unwrap()[0].clone();
    let word = |i: usize| u64::from_ne_bytes(report[8 + 8 * i..16 + 8 * i].try_into().unwrap());
    let checksum = sent.iter().flatten().fold(0u64, |acc, &b| {
        acc.wrapping_mul(31).wrapping_add(u64::from(b))
    });
    let buffer_sum = local.iter().fold(0u64, |acc, &b| {
        acc.wrapping_mul(31).wrapping_add(u64::from(b))
    });
    assert_eq!(word(0), sent.len() as u64, "AMs received by the child");
    assert_eq!(word(1), checksum, "AM contents, in order");
    assert_eq!(word(2), buffer_sum, "the child's buffer holds what was put");

    let status = child.wait().expect("child exit");
    assert!(status.success(), "child failed: {status}");
    flush(&side, ep);
    assert_eq!(mem_dereg(side.md, local_memh), UCS_OK);
    ep_destroy(ep);
    side.close();
}
