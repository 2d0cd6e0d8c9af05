//! Soft HCA against UCX 1.13's own `tcp` transport on `lo`, on this machine:
//! one-way latency (median, p99; half the ping-pong round trip) and message
//! rate of 8-byte SEND and RDMA WRITE between two processes, and the CPU an
//! idle device burns. Run: `cargo bench --bench softhca_latency`.
//!
//! The soft-HCA side drives mlx5 WQEs and CQEs directly through the test
//! harness in `tests/softhca_common` (the same path the rc_mlx5 transport
//! takes), busy-polling with progress as UCX does. The second process is
//! this binary again, started with `SOFTHCA_BENCH_PEER=1`, talking lines
//! over its stdin/stdout. The tcp column comes from `ucx_perftest -t am_lat`
//! / `-t am_bw -x tcp -d lo` (Debian's `ucx-utils`), skipped if absent.
//!
//! Environment: `SOFTHCA_BENCH_ITERS` (latency round trips, default 20000),
//! `SOFTHCA_BENCH_MSGS` (messages per rate run, default 200000).

#[path = "../tests/softhca_common/mod.rs"]
mod softhca_common;

use std::io::{BufRead, BufReader, Write};
use std::net::Ipv4Addr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use softhca_common::*;

const PEER_ENV: &str = "SOFTHCA_BENCH_PEER";
/// Offsets in each side's registered buffer for the WRITE ping-pong.
const PING_AT: usize = 0;
const PONG_AT: usize = 64;
/// Most sends in flight in the rate runs (below the SRQ depth, so the
/// receiver is never short of receives for long).
const WINDOW: usize = 64;
const WARMUP: usize = 1000;
const GIVE_UP: Duration = Duration::from_secs(30);

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Spins on `f` with progress until it yields; exits the process if the
/// peer is gone for good (a benchmark has nobody to report an error to).
fn spin<T>(side: &mut Side, mut f: impl FnMut(&mut Side) -> Option<T>) -> T {
    let start = Instant::now();
    let mut n = 0u32;
    loop {
        side.device.progress();
        if let Some(v) = f(side) {
            return v;
        }
        n = n.wrapping_add(1);
        if n % 4096 == 0 && start.elapsed() > GIVE_UP {
            let link = match &side.device {
                uct::hca::Device::Soft(dev) => format!("{:?}", dev.link_stats()),
                _ => "not a soft device".to_string(),
            };
            eprintln!(
                "softhca bench: no progress for {GIVE_UP:?}, giving up; link {link}, QP {:?}",
                side.qp.query()
            );
            std::process::exit(2);
        }
    }
}

/// Drains send completions; returns how many there were.
fn reap_sends(side: &mut Side) -> usize {
    let mut n = 0;
    while let Some(cqe) = side.poll_send() {
        assert_eq!(cqe.opcode, uct::mlx5::MLX5_CQE_REQ, "send failed: {cqe:?}");
        n += 1;
    }
    n
}

fn recv_one(side: &mut Side) {
    let cqe = spin(side, Side::poll_recv);
    assert!(
        cqe.opcode == uct::mlx5::MLX5_CQE_RESP_SEND,
        "receive failed: {cqe:?}"
    );
    side.post_recvs(1);
}

// ---- the peer process ----

fn peer_main() {
    let say = |line: String| {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}").expect("stdout");
        out.flush().expect("flush");
    };
    let mut stdin = std::io::stdin().lock();
    let mut read_line = || {
        let mut line = String::new();
        match stdin.read_line(&mut line) {
            Ok(0) | Err(_) => std::process::exit(0),
            Ok(_) => line.trim().to_string(),
        }
    };
    let mut me = Side::new(open_soft("bench_peer", Ipv4Addr::LOCALHOST));
    say(format!("EP {}", me.endpoint().to_line()));
    let line = read_line();
    let remote = Endpoint::from_line(line.strip_prefix("EP ").expect("EP line"));
    me.connect(&remote, 14, 7);
    me.post_recvs(SRQ_WQES as u16 - 1);
    say("READY".into());
    loop {
        let line = read_line();
        let mut words = line.split_whitespace();
        let (Some(what), Some(count)) = (words.next(), words.next()) else {
            return;
        };
        let count: u64 = count.parse().expect("count");
        match what {
            "send_pingpong" => {
                for _ in 0..count {
                    recv_one(&mut me);
                    me.post(&Op::SendInline(&[7u8; 8]));
                    reap_sends(&mut me);
                }
            }
            "write_pingpong" => {
                for i in 1..=count {
                    spin(&mut me, |s| (s.read_u64(PING_AT) == i).then_some(()));
                    me.post(&Op::WriteInline {
                        data: &i.to_ne_bytes(),
                        remote: remote.buf_addr + PONG_AT as u64,
                        rkey: remote.rkey,
                    });
                    reap_sends(&mut me);
                }
            }
            "send_flood" => {
                for _ in 0..count {
                    recv_one(&mut me);
                }
            }
            "write_flood" => {
                // The last WRITE carries the count; RC delivers in order.
                spin(&mut me, |s| (s.read_u64(PING_AT) == count).then_some(()));
            }
            "idle" => {}
            _ => return,
        }
        reap_sends(&mut me);
        say(format!("DONE {what}"));
    }
}

// ---- the measuring process ----

struct Peer {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Peer {
    fn spawn() -> Peer {
        let exe = std::env::current_exe().expect("own binary");
        let mut child = Command::new(exe)
            .env(PEER_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn peer");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Peer {
            child,
            stdin,
            lines,
        }
    }

    fn expect(&self, prefix: &str) -> String {
        let line = self
            .lines
            .recv_timeout(GIVE_UP)
            .unwrap_or_else(|_| panic!("peer did not say {prefix}"));
        line.strip_prefix(prefix)
            .unwrap_or_else(|| panic!("peer said '{line}', expected {prefix}"))
            .trim()
            .to_string()
    }

    fn say(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("write to peer");
        self.stdin.flush().expect("flush");
    }

    /// Tells the peer what comes next, without waiting for it.
    fn start(&mut self, what: &str, count: usize) {
        self.say(&format!("{what} {count}"));
    }

    fn finish(&self, what: &str) {
        let done = self.expect("DONE");
        assert_eq!(done, what);
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Latency {
    median_us: f64,
    p99_us: f64,
}

/// One-way latencies (half of each round trip), in microseconds.
fn latency_of(mut one_way_ns: Vec<u64>) -> Latency {
    one_way_ns.sort_unstable();
    let at = |q: f64| {
        let i = ((one_way_ns.len() as f64 - 1.0) * q).round() as usize;
        one_way_ns.get(i).copied().unwrap_or(0) as f64 / 1000.0
    };
    Latency {
        median_us: at(0.5),
        p99_us: at(0.99),
    }
}

fn send_pingpong(me: &mut Side, peer: &mut Peer, iters: usize) -> Latency {
    peer.start("send_pingpong", WARMUP + iters);
    let mut samples = Vec::with_capacity(iters);
    for i in 0..WARMUP + iters {
        let start = Instant::now();
        me.post(&Op::SendInline(&[5u8; 8]));
        recv_one(me);
        let rtt = start.elapsed().as_nanos() as u64;
        reap_sends(me);
        if i >= WARMUP {
            samples.push(rtt / 2);
        }
    }
    peer.finish("send_pingpong");
    latency_of(samples)
}

fn write_pingpong(me: &mut Side, peer: &mut Peer, remote: &Endpoint, iters: usize) -> Latency {
    // Both ping and pong cells start from zero: sequence numbers from 1.
    me.write_buf(PONG_AT, &0u64.to_ne_bytes());
    peer.start("write_pingpong", WARMUP + iters);
    let mut samples = Vec::with_capacity(iters);
    for i in 1..=(WARMUP + iters) as u64 {
        let start = Instant::now();
        me.post(&Op::WriteInline {
            data: &i.to_ne_bytes(),
            remote: remote.buf_addr + PING_AT as u64,
            rkey: remote.rkey,
        });
        spin(me, |s| (s.read_u64(PONG_AT) == i).then_some(()));
        let rtt = start.elapsed().as_nanos() as u64;
        reap_sends(me);
        if i > WARMUP as u64 {
            samples.push(rtt / 2);
        }
    }
    peer.finish("write_pingpong");
    latency_of(samples)
}

/// Messages per second: `count` operations posted with at most `WINDOW` in
/// flight, timed until the last one completed at the sender.
fn rate(me: &mut Side, count: usize, mut post: impl FnMut(&mut Side, u64)) -> f64 {
    let start = Instant::now();
    let (mut posted, mut completed) = (0usize, 0usize);
    while completed < count {
        while posted < count && posted - completed < WINDOW {
            posted += 1;
            post(me, posted as u64);
        }
        let got = spin(me, |s| match reap_sends(s) {
            0 => None,
            n => Some(n),
        });
        completed += got;
    }
    count as f64 / start.elapsed().as_secs_f64()
}

fn send_rate(me: &mut Side, peer: &mut Peer, count: usize) -> f64 {
    peer.start("send_flood", count);
    let r = rate(me, count, |s, _| {
        s.post(&Op::SendInline(&[9u8; 8]));
    });
    peer.finish("send_flood");
    r
}

fn write_rate(me: &mut Side, peer: &mut Peer, remote: &Endpoint, count: usize) -> f64 {
    me.post(&Op::WriteInline {
        data: &0u64.to_ne_bytes(),
        remote: remote.buf_addr + PING_AT as u64,
        rkey: remote.rkey,
    });
    spin(me, |s| (reap_sends(s) > 0).then_some(()));
    peer.start("write_flood", count);
    let (addr, rkey) = (remote.buf_addr + PING_AT as u64, remote.rkey);
    let r = rate(me, count, |s, seq| {
        s.post(&Op::WriteInline {
            data: &seq.to_ne_bytes(),
            remote: addr,
            rkey,
        });
    });
    peer.finish("write_flood");
    r
}

/// CPU time (user + system, all threads) this process used per second of
/// wall time while its device sat idle with a connected QP.
fn idle_cpu_percent(seconds: u64) -> f64 {
    let cpu = || {
        // SAFETY: getrusage fills the zeroed struct we own.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointer to a live rusage.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
        assert_eq!(rc, 0, "getrusage");
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(usage.ru_utime) + tv(usage.ru_stime)
    };
    // Let the caller-progress window close and the service thread settle.
    std::thread::sleep(Duration::from_millis(200));
    let (cpu0, wall0) = (cpu(), Instant::now());
    std::thread::sleep(Duration::from_secs(seconds));
    100.0 * (cpu() - cpu0) / wall0.elapsed().as_secs_f64()
}

// ---- UCX's tcp transport through ucx_perftest ----

#[derive(Clone, Copy, Debug, Default)]
struct TcpNumbers {
    lat: Latency,
    msg_rate: f64,
}

/// Runs one ucx_perftest client against a fresh server; returns the last
/// CSV line's fields (iterations, typical latency at the `-R` percentile,
/// average latencies, bandwidths, message rates).
fn perftest(args: &[&str], port: u16) -> Option<Vec<f64>> {
    let port_s = port.to_string();
    let mut server = Command::new("ucx_perftest")
        .args(["-p", &port_s])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut result = None;
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(100));
        let out = Command::new("ucx_perftest")
            .args(["127.0.0.1", "-p", &port_s, "-x", "tcp", "-d", "lo", "-v"])
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            continue; // server not listening yet
        }
        let text = String::from_utf8_lossy(&out.stdout);
        result = text
            .lines()
            .rfind(|l| !l.starts_with('[') && l.contains(','))
            .map(|l| l.split(',').filter_map(|f| f.trim().parse().ok()).collect());
        break;
    }
    let _ = server.kill();
    let _ = server.wait();
    result
}

fn tcp_numbers(iters: usize, msgs: usize) -> Option<TcpNumbers> {
    let base = 14_000 + (std::process::id() % 1000) as u16 * 3;
    let n = iters.to_string();
    let m = msgs.to_string();
    let common = ["-s", "8", "-w", "1000"];
    let lat_at = |rank: &str, port: u16| {
        let mut args = vec!["-t", "am_lat", "-n", &n, "-R", rank];
        args.extend_from_slice(&common);
        perftest(&args, port).and_then(|f| f.get(1).copied())
    };
    let median_us = lat_at("50", base)?;
    let p99_us = lat_at("99", base + 1)?;
    let mut args = vec!["-t", "am_bw", "-n", &m];
    args.extend_from_slice(&common);
    let msg_rate = perftest(&args, base + 2).and_then(|f| f.last().copied())?;
    Some(TcpNumbers {
        lat: Latency { median_us, p99_us },
        msg_rate,
    })
}

fn main() {
    if std::env::var_os(PEER_ENV).is_some() {
        peer_main();
        return;
    }
    // `cargo bench` passes `--bench`; nothing else to parse.
    let iters = env_usize("SOFTHCA_BENCH_ITERS", 20_000);
    let msgs = env_usize("SOFTHCA_BENCH_MSGS", 200_000);

    let mut peer = Peer::spawn();
    let mut me = Side::new(open_soft("bench_main", Ipv4Addr::LOCALHOST));
    let remote = Endpoint::from_line(&peer.expect("EP"));
    peer.say(&format!("EP {}", me.endpoint().to_line()));
    me.connect(&remote, 14, 7);
    me.post_recvs(SRQ_WQES as u16 - 1);
    peer.expect("READY");

    eprintln!("softhca bench: SEND ping-pong, {iters} round trips");
    let send_lat = send_pingpong(&mut me, &mut peer, iters);
    eprintln!("softhca bench: WRITE ping-pong, {iters} round trips");
    let write_lat = write_pingpong(&mut me, &mut peer, &remote, iters);
    eprintln!("softhca bench: SEND rate, {msgs} messages");
    let send_mr = send_rate(&mut me, &mut peer, msgs);
    eprintln!("softhca bench: WRITE rate, {msgs} messages");
    let write_mr = write_rate(&mut me, &mut peer, &remote, msgs);
    eprintln!("softhca bench: idle CPU, then ucx_perftest");
    let idle = idle_cpu_percent(3);
    drop(peer);

    let tcp = if Command::new("ucx_perftest")
        .arg("-h")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
    {
        let t = tcp_numbers(iters, msgs);
        if t.is_none() {
            println!("(ucx_perftest ran but gave no numbers: tcp column empty)");
        }
        t
    } else {
        println!("(ucx_perftest not installed: apt-get install ucx-utils; tcp column skipped)");
        None
    };

    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!();
    println!("soft HCA vs UCX 1.13 tcp on lo: 8-byte messages, two processes, {cpus} CPUs");
    println!(
        "latency = one way (half the ping-pong round trip); tcp = ucx_perftest am_lat / am_bw"
    );
    // Both columns share the machine with whatever else runs: say how busy.
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    println!("load average at the end: {}", load.join(" "));
    println!(
        "{:<26} {:>12} {:>12} {:>12}",
        "", "soft HCA", "tcp (lo)", "soft/tcp"
    );
    let row = |name: &str, soft: f64, tcp: Option<f64>, unit: &str| {
        let (t, r) = match tcp {
            Some(t) if t > 0.0 => (format!("{t:.2}"), format!("{:.2}", soft / t)),
            _ => ("-".to_string(), "-".to_string()),
        };
        println!(
            "{name:<26} {:>12} {t:>12} {r:>12}  {unit}",
            format!("{soft:.2}")
        );
    };
    let tl = tcp.map(|t| t.lat);
    row(
        "SEND latency median",
        send_lat.median_us,
        tl.map(|l| l.median_us),
        "us",
    );
    row(
        "SEND latency p99",
        send_lat.p99_us,
        tl.map(|l| l.p99_us),
        "us",
    );
    row(
        "WRITE latency median",
        write_lat.median_us,
        tl.map(|l| l.median_us),
        "us",
    );
    row(
        "WRITE latency p99",
        write_lat.p99_us,
        tl.map(|l| l.p99_us),
        "us",
    );
    let tr = tcp.map(|t| t.msg_rate / 1e3);
    row("SEND message rate", send_mr / 1e3, tr, "kmsg/s");
    row("WRITE message rate", write_mr / 1e3, tr, "kmsg/s");
    println!(
        "{:<26} {:>12}  % of one CPU (3 s, device with a connected QP)",
        "idle device CPU",
        format!("{idle:.2}")
    );
    println!("(ratio: latency < 1 and message rate > 1 mean the soft HCA is better)");
}
