//! UD queue pairs of the soft HCA between two processes, on both wires:
//! the same-host shared-memory rings (`UCX_SOFT_HCA_WIRE=auto`) and UDP
//! (`UCX_SOFT_HCA_WIRE=udp`).
//!
//! The test re-executes its own binary as the peer (the ignored test
//! `softhca_ud_peer_process`); the two exchange GIDs and QP numbers as
//! lines over the peer's stdin/stdout. Each side drives its UD QP as a
//! transport would: mlx5 send WQEs with a datagram segment from an address
//! handle, SRQ receive WQEs, CQE64s polled from the rings. The initiator
//! sends datagrams of several sizes (inline and gathered, with and without
//! immediate) and one with a wrong Q_Key; the peer, without calling
//! progress (its device's service thread delivers), checks each receive:
//! the GRH with both GIDs, the payload, the CQE's length (payload + GRH),
//! source QP and flags, and that the wrong-key datagram never arrived; then
//! it answers with a datagram of its own.

use std::io::{BufRead, BufReader, Write};
use std::net::Ipv4Addr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use uct::hca::soft::{
    wire::{Grh, GRH_LEN},
    SoftAh, SoftCq, SoftDevice, SoftDoorbell, SoftMr, SoftPd, SoftQp, SoftSrq, UdTransition,
};
use uct::hca::{Access, CqRing, RecvRing, SendRing, SrqInitAttr};
use uct::mlx5::{self, Cqe64, CtrlSeg, DataSeg, WqeBuilder};

const PEER_ENV: &str = "SOFTHCA_UD_TEST_PEER";
const LINE_WAIT: Duration = Duration::from_secs(20);
const LONG: Duration = Duration::from_secs(10);
const QKEY: u32 = 0x1ee7_a330;
const SQ_WQEBBS: u32 = 64;
const SRQ_WQES: u32 = 64;
const CQES: u32 = 256;
const RECV_SLOT: usize = 8192;
const BUF_LEN: usize = 64 * 1024;

/// The datagrams the initiator sends: (length, immediate, inline).
const DATAGRAMS: [(usize, Option<u32>, bool); 6] = [
    (1, None, true),
    (60, Some(0x0102_0304), true),
    (100, None, false),
    (1000, Some(0xa0b0_c0d0), false),
    (4000, None, false),
    (4096, None, false),
];

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// A GID and QP number as one line.
fn parse_endpoint(line: &str) -> ([u8; 16], u32) {
    let mut parts = line.split_whitespace();
    let gid: [u8; 16] = unhex(parts.next().expect("gid"))
        .try_into()
        .expect("16 bytes");
    let qpn = parts.next().expect("qpn").parse().expect("number");
    (gid, qpn)
}

/// Polls `f` until it yields or `limit` passes.
fn wait<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// One end: a soft device with a UD QP in RTS, its queues and buffers.
struct UdSide {
    device: SoftDevice,
    pd: SoftPd,
    send_cq: SoftCq,
    recv_cq: SoftCq,
    /// Held so that the device keeps the SRQ and the QP.
    _srq: SoftSrq,
    qp: SoftQp,
    doorbell: SoftDoorbell,
    mr: SoftMr,
    recv_mr: SoftMr,
    buf: Box<[u64]>,
    recv_buf: Box<[u64]>,
    sq: SendRing,
    sq_pi: u16,
    srq_ring: RecvRing,
    srq_pi: u16,
    send_ci: u32,
    recv_ci: u32,
}

impl UdSide {
    fn new(name: &str) -> UdSide {
        let device =
            uct::hca::devices::open_soft_at(name, Ipv4Addr::LOCALHOST).expect("soft device");
        let pd = device.alloc_pd();
        let send_cq = device.create_cq(CQES, None).expect("send cq");
        let recv_cq = device.create_cq(CQES, None).expect("recv cq");
        let srq = pd
            .create_srq(SrqInitAttr {
                wqe_count: SRQ_WQES,
                max_sge: 1,
            })
            .expect("srq");
        let qp = pd
            .create_ud_qp(&send_cq, &recv_cq, &srq, SQ_WQEBBS)
            .expect("UD qp");
        // An RC transition on a UD QP is refused, the QP stays in RESET.
        assert!(qp
            .modify(uct::hca::QpTransition::Init {
                access: Access::ALL
            })
            .is_err());
        assert!(qp.modify_ud(UdTransition::Rtr).is_err(), "RESET→RTR");
        qp.modify_ud(UdTransition::Init { qkey: QKEY })
            .expect("init");
        qp.modify_ud(UdTransition::Rtr).expect("rtr");
        qp.modify_ud(UdTransition::Rts { sq_psn: 0x123 })
            .expect("rts");
        assert_eq!(qp.qkey(), Ok(QKEY));
        let mut buf = vec![0u64; BUF_LEN / 8].into_boxed_slice();
        let mut recv_buf = vec![0u64; RECV_SLOT * SRQ_WQES as usize / 8].into_boxed_slice();
        let mr = pd
            .reg_mr(buf.as_mut_ptr().cast(), BUF_LEN, Access::LOCAL_WRITE)
            .expect("reg buf");
        let recv_mr = pd
            .reg_mr(
                recv_buf.as_mut_ptr().cast(),
                recv_buf.len() * 8,
                Access::LOCAL_WRITE,
            )
            .expect("reg recv");
        let doorbell = qp.doorbell();
        let sq = qp.send_ring();
        let srq_ring = srq.ring();
        UdSide {
            device,
            pd,
            send_cq,
            recv_cq,
            _srq: srq,
            qp,
            doorbell,
            mr,
            recv_mr,
            buf,
            recv_buf,
            sq,
            sq_pi: 0,
            srq_ring,
            srq_pi: 0,
            send_ci: 0,
            recv_ci: 0,
        }
    }

    fn endpoint_line(&self) -> String {
        let qpn = self.qp.send_ring().qpn;
        format!("{} {qpn}", hex(&self.device.gid()))
    }

    fn write_buf(&mut self, offset: usize, data: &[u8]) {
        assert!(offset + data.len() <= BUF_LEN);
        // SAFETY: inside the buffer (checked); the device only reads it.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                (self.buf.as_mut_ptr() as *mut u8).add(offset),
                data.len(),
            )
        };
    }

    /// `len` bytes of receive slot `slot` (a raw copy: the device writes
    /// receive buffers while we read).
    fn read_recv(&self, slot: u16, len: usize) -> Vec<u8> {
        assert!(len <= RECV_SLOT);
        let mut out = vec![0u8; len];
        // SAFETY: inside the receive buffer (slot < SRQ_WQES, len checked).
        unsafe {
            std::ptr::copy(
                (self.recv_buf.as_ptr() as *const u8).add(slot as usize * RECV_SLOT),
                out.as_mut_ptr(),
                len,
            )
        };
        out
    }

    /// Posts `count` receives of `RECV_SLOT` bytes to the SRQ.
    fn post_recvs(&mut self, count: u16) {
        let ring = self.srq_ring;
        for _ in 0..count {
            let index = self.srq_pi & (ring.wqe_count as u16 - 1);
            let mut wqe = vec![0u8; ring.stride as usize];
            let next = index.wrapping_add(1) & (ring.wqe_count as u16 - 1);
            mlx5::SrqNextSeg {
                next_wqe_index: next,
                signature: 0,
            }
            .write((&mut wqe[..16]).try_into().expect("seg"));
            DataSeg {
                byte_count: RECV_SLOT as u32,
                lkey: self.recv_mr.keys().lkey,
                addr: self.recv_buf.as_ptr() as u64 + (index as usize * RECV_SLOT) as u64,
            }
            .write(&mut wqe[16..32]);
            let at = index as usize * ring.stride as usize;
            // SAFETY: the WQE lies inside the SRQ ring (index < wqe_count);
            // the device reads it only after the counter below says so.
            unsafe { std::ptr::copy_nonoverlapping(wqe.as_ptr(), ring.buf.add(at), wqe.len()) };
            self.srq_pi = self.srq_pi.wrapping_add(1);
        }
        // SAFETY: word 0 of the SRQ's doorbell record (4-aligned device
        // memory, valid while the SRQ lives) is the receive counter.
        let counter = unsafe { &*(ring.dbrec as *const AtomicU32) };
        counter.store(mlx5::dbrec_word(self.srq_pi), Ordering::Release);
    }

    /// Posts a UD SEND to `qpn` at `ah` with `qkey`: `data` inline, or
    /// gathered from the buffer's start; returns its WQE index.
    fn post_send(
        &mut self,
        ah: &SoftAh,
        qpn: u32,
        qkey: u32,
        data: &[u8],
        inline: bool,
        imm: Option<u32>,
    ) -> u16 {
        let index = self.sq_pi;
        let ring_len = self.sq.wqebb_count as usize * mlx5::SEND_WQE_BB;
        let mut scratch = vec![0u8; ring_len];
        let mut builder = WqeBuilder::new(&mut scratch, index).expect("ring");
        builder.datagram(ah.datagram(qpn, qkey));
        if inline {
            builder.inline(&[data]);
        } else {
            self.write_buf(0, data);
            builder.data(DataSeg {
                byte_count: data.len() as u32,
                lkey: self.mr.keys().lkey,
                addr: self.buf.as_ptr() as u64,
            });
        }
        let ctrl = builder
            .finish(CtrlSeg {
                opcode: if imm.is_some() {
                    mlx5::MLX5_OPCODE_SEND_IMM
                } else {
                    mlx5::MLX5_OPCODE_SEND
                },
                qpn: self.sq.qpn,
                fm_ce_se: mlx5::MLX5_WQE_CTRL_CQ_UPDATE,
                imm: imm.unwrap_or(0),
                ..CtrlSeg::default()
            })
            .expect("WQE fits");
        let bbs = ctrl.wqebbs();
        for k in 0..bbs {
            let at = ((index as usize + k) % self.sq.wqebb_count as usize) * mlx5::SEND_WQE_BB;
            // SAFETY: one basic block inside the send ring, beyond the
            // producer index the device reads up to; only this thread
            // writes the ring.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    scratch[at..].as_ptr(),
                    self.sq.buf.add(at),
                    mlx5::SEND_WQE_BB,
                )
            };
        }
        self.sq_pi = self.sq_pi.wrapping_add(bbs as u16);
        // SAFETY: word 1 of the QP's doorbell record (4-aligned device
        // memory, valid while the QP lives) is the send counter.
        let counter = unsafe { &*((self.sq.dbrec as *const AtomicU32).add(1)) };
        counter.store(mlx5::dbrec_word(self.sq_pi), Ordering::Release);
        self.doorbell.ring(self.sq.buf);
        index
    }

    fn poll(ring: &CqRing, ci: &mut u32) -> Option<Cqe64> {
        let slot = (*ci & (ring.cqe_count - 1)) as usize * mlx5::CQE_LEN;
        // SAFETY: the op_own byte of a slot inside the CQ ring, read with
        // acquire ordering before the rest of the entry.
        let op_own = unsafe { &*(ring.buf.add(slot + mlx5::CQE_OP_OWN_OFFSET) as *const AtomicU8) }
            .load(Ordering::Acquire);
        if !mlx5::cqe_is_sw_owned(op_own, *ci, ring.cqe_count) {
            return None;
        }
        let mut bytes = [0u8; mlx5::CQE_LEN];
        // SAFETY: as above; a raw copy of the 64-byte slot.
        unsafe { std::ptr::copy(ring.buf.add(slot), bytes.as_mut_ptr(), mlx5::CQE_LEN) };
        *ci = ci.wrapping_add(1);
        // SAFETY: word 0 of the CQ's doorbell record is the consumer index.
        let dbrec = unsafe { &*(ring.dbrec as *const AtomicU32) };
        dbrec.store((*ci & 0x00ff_ffff).to_be(), Ordering::Release);
        Some(Cqe64::decode(&bytes))
    }

    fn wait_send(&mut self) -> Option<Cqe64> {
        let ring = self.send_cq.ring();
        let device = self.device.clone();
        let ci = &mut self.send_ci;
        wait(LONG, || {
            device.progress();
            Self::poll(&ring, ci)
        })
    }

    /// A receive CQE; `progress`: also drive the device from this thread
    /// (else only its service thread can deliver).
    fn wait_recv(&mut self, progress: bool, limit: Duration) -> Option<Cqe64> {
        let ring = self.recv_cq.ring();
        let device = self.device.clone();
        let ci = &mut self.recv_ci;
        wait(limit, || {
            if progress {
                device.progress();
            }
            Self::poll(&ring, ci)
        })
    }
}

/// What is wrong with receive `cqe` of a datagram of `payload` with `imm`
/// from QP `src_qpn` at `sgid` to `dgid`, if anything.
fn check_datagram(
    side: &UdSide,
    cqe: &Cqe64,
    payload: &[u8],
    imm: Option<u32>,
    src_qpn: u32,
    sgid: [u8; 16],
    dgid: [u8; 16],
) -> Option<String> {
    let opcode = if imm.is_some() {
        mlx5::MLX5_CQE_RESP_SEND_IMM
    } else {
        mlx5::MLX5_CQE_RESP_SEND
    };
    let len = GRH_LEN + payload.len();
    let bytes = side.read_recv(cqe.wqe_counter, len);
    let grh = Grh::parse(&bytes).ok()?;
    let problems = [
        (cqe.opcode != opcode, "opcode"),
        (cqe.byte_cnt as usize != len, "byte count"),
        (!cqe.grh_in_data, "GRH flag"),
        (cqe.remote_qpn != src_qpn, "source QP"),
        (cqe.qpn != side.sq.qpn, "local QP"),
        (
            imm.is_some_and(|imm| cqe.imm_inval_pkey != imm),
            "immediate",
        ),
        (grh.sgid.0 != sgid, "GRH source GID"),
        (grh.dgid.0 != dgid, "GRH destination GID"),
        (grh.next_header != 17, "GRH next header"),
        (bytes[GRH_LEN..] != *payload, "payload"),
    ];
    let wrong: Vec<&str> = problems
        .iter()
        .filter(|(bad, _)| *bad)
        .map(|(_, what)| *what)
        .collect();
    (!wrong.is_empty()).then(|| format!("{len}-byte datagram: {}", wrong.join("/")))
}

struct Peer {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Peer {
    fn spawn() -> Peer {
        let exe = std::env::current_exe().expect("own test binary");
        let mut child = Command::new(exe)
            .args([
                "--ignored",
                "--exact",
                "softhca_ud_peer_process",
                "--nocapture",
                "--test-threads=1",
            ])
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
                if let Some(at) = line.find("PEER ") {
                    if tx.send(line[at + 5..].to_string()).is_err() {
                        break;
                    }
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
            .recv_timeout(LINE_WAIT)
            .unwrap_or_else(|_| panic!("peer did not say {prefix}"));
        match line.strip_prefix(prefix) {
            Some(rest) => rest.trim().to_string(),
            None => panic!("peer said '{line}', expected {prefix}"),
        }
    }

    fn say(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("write to peer");
        self.stdin.flush().expect("flush");
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Both wires, one after the other in this one test (the wire is read
/// from the environment at each open, which the peer inherits).
#[test]
fn datagrams_between_two_processes_on_both_wires() {
    for wire in ["auto", "udp"] {
        std::env::set_var("UCX_SOFT_HCA_WIRE", wire);
        exchange(wire);
    }
    std::env::remove_var("UCX_SOFT_HCA_WIRE");
}

fn exchange(wire: &str) {
    let mut peer = Peer::spawn();
    let mut me = UdSide::new(&format!("udproc_{wire}"));
    let (peer_gid, peer_qpn) = parse_endpoint(&peer.expect("EP"));
    peer.say(&format!("EP {}", me.endpoint_line()));
    me.post_recvs(4);
    peer.expect("READY");

    let ah = me.pd.create_ah(peer_gid).expect("address handle");
    // Not a soft HCA port's GID: refused with a status, not a crash.
    assert!(me.pd.create_ah([0xfe; 16]).is_err());
    // Wrong Q_Key first: the peer must never see it.
    let i = me.post_send(&ah, peer_qpn, QKEY ^ 0x100, b"wrong key", true, None);
    let cqe = me.wait_send().expect("send CQE");
    assert_eq!((cqe.opcode, cqe.wqe_counter), (mlx5::MLX5_CQE_REQ, i));
    for (k, (len, imm, inline)) in DATAGRAMS.into_iter().enumerate() {
        let data = pattern(len, k as u8);
        let i = me.post_send(&ah, peer_qpn, QKEY, &data, inline, imm);
        let cqe = me.wait_send().expect("send CQE");
        assert_eq!(cqe.opcode, mlx5::MLX5_CQE_REQ, "{cqe:?}");
        assert_eq!(cqe.wqe_counter, i);
        assert_eq!(cqe.byte_cnt as usize, len);
    }
    peer.say("CHECK");
    let verdict = peer.expect("RESULT");
    assert_eq!(verdict, "ok", "{wire} wire: peer found: {verdict}");

    let cqe = me.wait_recv(true, LONG).expect("the peer's datagram");
    let answer = pattern(3000, 99);
    let problem = check_datagram(
        &me,
        &cqe,
        &answer,
        Some(0x5eed),
        peer_qpn,
        peer_gid,
        me.device.gid(),
    );
    assert_eq!(problem, None, "{wire} wire");
    peer.say("BYE");
    let peer_shm: u64 = peer.expect("DONE").parse().expect("peer's count");
    let my_shm = me.device.link_stats().tx_shm;
    if wire == "udp" {
        assert_eq!(my_shm + peer_shm, 0, "UDP only");
    } else {
        assert!(my_shm > 0 && peer_shm > 0, "both sent through the rings");
    }
}

/// The peer process: run by `datagrams_between_two_processes_on_both_wires`.
#[test]
#[ignore = "peer half of datagrams_between_two_processes_on_both_wires; runs in the child process only"]
fn softhca_ud_peer_process() {
    if std::env::var(PEER_ENV).is_err() {
        return;
    }
    let say = |line: String| {
        let mut out = std::io::stdout().lock();
        writeln!(out, "PEER {line}").expect("stdout");
        out.flush().expect("flush");
    };
    let mut stdin = std::io::stdin().lock();
    let mut read_line = || {
        let mut line = String::new();
        stdin.read_line(&mut line).expect("stdin");
        line.trim().to_string()
    };

    let wire = std::env::var("UCX_SOFT_HCA_WIRE").unwrap_or_default();
    let mut me = UdSide::new(&format!("udpeer_{wire}"));
    say(format!("EP {}", me.endpoint_line()));
    let line = read_line();
    let (gid, qpn) = parse_endpoint(line.strip_prefix("EP ").expect("EP line"));
    me.post_recvs(DATAGRAMS.len() as u16 + 2);
    say("READY".to_string());

    // Blocked here (no progress) while the initiator sends.
    assert_eq!(read_line(), "CHECK");
    let mut problems = Vec::new();
    for (k, (len, imm, _)) in DATAGRAMS.into_iter().enumerate() {
        match me.wait_recv(false, LONG) {
            Some(cqe) => {
                let payload = pattern(len, k as u8);
                if let Some(problem) =
                    check_datagram(&me, &cqe, &payload, imm, qpn, gid, me.device.gid())
                {
                    problems.push(problem);
                }
            }
            None => problems.push(format!("{len}-byte datagram did not arrive")),
        }
    }
    if me.wait_recv(true, Duration::from_millis(200)).is_some() {
        problems.push("a datagram with the wrong Q_Key arrived".to_string());
    }
    let ah = me.pd.create_ah(gid).expect("address handle");
    let answer = pattern(3000, 99);
    let i = me.post_send(&ah, qpn, QKEY, &answer, false, Some(0x5eed));
    match me.wait_send() {
        Some(cqe) if cqe.opcode == mlx5::MLX5_CQE_REQ && cqe.wqe_counter == i => {}
        other => problems.push(format!("answer's send completion: {other:?}")),
    }
    let verdict = if problems.is_empty() {
        "ok".to_string()
    } else {
        problems.join(", ")
    };
    say(format!("RESULT {verdict}"));
    assert_eq!(read_line(), "BYE");
    say(format!("DONE {}", me.device.link_stats().tx_shm));
}
