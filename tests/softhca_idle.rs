//! An idle soft device burns no CPU: its service thread sleeps in the
//! kernel. (Its own test binary, so no other test's work is measured.)

mod softhca_common;

use std::time::Duration;

use softhca_common::*;
use uct::mlx5;

fn process_cpu() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct we pass.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv =
        |t: libc::timeval| Duration::from_micros(t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

#[test]
fn idle_devices_sleep() {
    let (mut a, mut b) = pair("idle", 14, 7);
    b.post_recvs(2);
    let i = a.post(&Op::SendInline(b"before idling"));
    assert_eq!(
        a.wait_send(LONG).map(|c| (c.opcode, c.wqe_counter)),
        Some((mlx5::MLX5_CQE_REQ, i))
    );
    assert!(b.wait_recv(LONG).is_some());

    let before = process_cpu();
    std::thread::sleep(Duration::from_secs(1));
    let burnt = process_cpu() - before;
    assert!(
        burnt < Duration::from_millis(30),
        "two idle devices used {burnt:?} of CPU in 1 s"
    );

    // Still alive after the nap.
    let i = a.post(&Op::SendInline(b"after"));
    assert_eq!(a.wait_send(LONG).map(|c| c.wqe_counter), Some(i));
}
