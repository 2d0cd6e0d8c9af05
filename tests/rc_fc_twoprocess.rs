//! rc_mlx5 AM flow control between two processes: this binary starts itself
//! again as the peer (`child_side`, selected by an environment variable).
//! Both ifaces use a window of 8. The parent streams thousands of AMs, the
//! child sends some back (so grants ride both as grant messages and on
//! AMs); each side checks that every AM arrived once and in order. Run
//! without loss, then with 3 % of packets dropped by both devices.

mod rc_common;

use std::ffi::CStr;
use std::io::Write;
use std::time::{Duration, Instant};

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;

const ROLE_ENV: &str = "RC_FC_TWOPROCESS_CHILD";
const LOSS_ENV: &str = "RC_FC_TWOPROCESS_LOSS";
const PREFIX: &str = "RCFCTEST";
const AM_DATA: u8 = 1;
const AM_DONE: u8 = 2;
const AM_ECHO: u8 = 3;
const AM_REPORT: u8 = 4;
const COUNT: u64 = 3000;
/// The child echoes every this many AMs.
const ECHO_EVERY: u64 = 7;

const SETTINGS: [(&CStr, &CStr); 3] = [
    (c"RC_FC_WND_SIZE", c"8"),
    (c"RC_TIMEOUT", c"10ms"),
    (c"RC_RETRY_COUNT", c"7"),
];

fn address_line(side: &Side, ep: uct_ep_h) -> String {
    format!(
        "{PREFIX} {} {}",
        hex(&side.device_address()),
        hex(&side.ep_address(ep))
    )
}

fn connect(ep: uct_ep_h, line: &str) {
    let mut parts = line.split_whitespace();
    assert_eq!(parts.next(), Some(PREFIX));
    let device = unhex(parts.next().expect("device address"));
    let ep_addr = unhex(parts.next().expect("ep address"));
    // The peer's addresses, of the lengths its iface reported.
    let status = connect_to_ep(ep, &device, &ep_addr);
    assert_eq!(status, UCS_OK);
}

/// Sends an AM, progressing while refused (the grant of an exhausted
/// window arrives as a receive).
fn send(side: &Side, ep: uct_ep_h, id: u8, header: u64, payload: &[u8]) {
    let start = Instant::now();
    loop {
        let status = am_short(ep, id, header, payload);
        if status == UCS_OK {
            return;
        }
        assert_eq!(status, UCS_ERR_NO_RESOURCE);
        assert!(start.elapsed() < Duration::from_secs(60), "never accepted");
        side.progress();
    }
}

fn progress_until(side: &Side, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(60), "timed out");
        side.progress();
    }
}

fn flush(side: &Side, ep: uct_ep_h) {
    progress_until(side, || ep_flush(ep, 0, std::ptr::null_mut()) == UCS_OK);
}

fn set_loss(device: &CStr, ratio: f64) {
    assert_eq!(loss_set(device, ratio), UCS_OK);
}

/// The child: takes AMs until AM_DONE, echoing every ECHO_EVERY-th, then
/// reports (count received, in order, echoes sent).
#[test]
fn child_side() {
    if std::env::var_os(ROLE_ENV).is_none() {
        return; // only meaningful when started by the parent test
    }
    let side = Side::open_with(c"mlx5_1", c"mlx5_1:1", None, &SETTINGS);
    if let Some(loss) = std::env::var(LOSS_ENV).ok().and_then(|v| v.parse().ok()) {
        set_loss(c"mlx5_1", loss);
    }
    let ep = side.create_ep();
    println!("{}", address_line(&side, ep));
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .expect("parent's address");
    connect(ep, &line);
    let (data, done) = (inbox(), inbox());
    side.collect_am_into(AM_DATA, data);
    side.collect_am_into(AM_DONE, done);
    let mut echoed = 0u64;
    let start = Instant::now();
    while done.lock().unwrap().is_empty() {
        assert!(start.elapsed() < Duration::from_secs(120), "no AM_DONE");
        side.progress();
        let received = data.lock().unwrap().len() as u64;
        while (echoed + 1) * ECHO_EVERY <= received {
            send(&side, ep, AM_ECHO, echoed, &[]);
            echoed += 1;
        }
    }
    let seqs = sequence(data);
    let in_order = seqs == (0..seqs.len() as u64).collect::<Vec<u64>>();
    let report = [
        (seqs.len() as u64).to_ne_bytes(),
        u64::from(in_order).to_ne_bytes(),
        echoed.to_ne_bytes(),
    ]
    .concat();
    send(&side, ep, AM_REPORT, 0, &report);
    flush(&side, ep);
    ep_destroy(ep);
    side.close();
}

/// One parent run against a fresh child; `loss` on both devices.
fn run(loss: f64) {
    let (mut child, peer) = spawn_child(ROLE_ENV, &[(LOSS_ENV, loss.to_string())], PREFIX);
    let side = Side::open_with(c"mlx5_0", c"mlx5_0:1", None, &SETTINGS);
    set_loss(c"mlx5_0", loss);
    let ep = side.create_ep();
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{}", address_line(&side, ep)).expect("send address");
    connect(ep, &peer);
    let (echoes, reports) = (inbox(), inbox());
    side.collect_am_into(AM_ECHO, echoes);
    side.collect_am_into(AM_REPORT, reports);
    for seq in 0..COUNT {
        send(
            &side,
            ep,
            AM_DATA,
            seq,
            &seq.to_ne_bytes()[..(seq % 9) as usize],
        );
    }
    // The window of 8 was in force (3000 AMs went through it).
    // SAFETY: a live ep of this transport.
    let fc = unsafe { uct::rc::ep::RcEp::from_handle(ep, "test") }
        .expect("rc ep")
        .fc;
    assert!((0..=8).contains(&fc.window()), "window {}", fc.window());
    // Everything acknowledged while the child still answers.
    flush(&side, ep);
    send(&side, ep, AM_DONE, 0, &[]);
    progress_until(&side, || !reports.lock().unwrap().is_empty());
    let report = reports.lock().unwrap()[0].clone();
    let word = |i: usize| u64::from_ne_bytes(report[8 + 8 * i..16 + 8 * i].try_into().unwrap());
    assert_eq!(word(0), COUNT, "AMs the child received (loss {loss})");
    assert_eq!(word(1), 1, "in order at the child (loss {loss})");
    let echoed = word(2);
    assert_eq!(echoed, COUNT / ECHO_EVERY);
    progress_until(&side, || echoes.lock().unwrap().len() as u64 >= echoed);
    assert_eq!(sequence(echoes), (0..echoed).collect::<Vec<u64>>());
    let status = child.wait().expect("child exit");
    assert!(status.success(), "child failed: {status}");
    set_loss(c"mlx5_0", 0.0);
    ep_destroy(ep);
    side.close();
}

#[test]
fn two_processes_small_window_without_and_with_loss() {
    setup();
    run(0.0);
    run(0.03);
}
