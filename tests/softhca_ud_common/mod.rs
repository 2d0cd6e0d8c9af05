//! Test harness for UD QPs on the soft HCA: one UD QP in RTS with its CQs,
//! SRQ and registered buffers, driven as a transport drives a device (mlx5
//! send WQEs with a datagram segment from an address handle, SRQ receive
//! WQEs, CQE64s polled from the rings), and the check of one received
//! datagram.
#![allow(dead_code)]

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use uct::hca::soft::{
    wire::{Grh, GRH_LEN},
    SoftAh, SoftCq, SoftDevice, SoftDoorbell, SoftMr, SoftPd, SoftQp, SoftSrq, UdTransition,
};
use uct::hca::{Access, CqRing, RecvRing, SendRing, SrqInitAttr};
use uct::mlx5::{self, Cqe64, CtrlSeg, DataSeg, WqeBuilder};

pub const LONG: Duration = Duration::from_secs(10);

pub const QKEY: u32 = 0x1ee7_a330;
pub const SQ_WQEBBS: u32 = 64;
pub const SRQ_WQES: u32 = 64;
pub const CQES: u32 = 256;
pub const RECV_SLOT: usize = 8192;
pub const BUF_LEN: usize = 64 * 1024;

/// The datagrams the initiator sends: (length, immediate, inline).
pub const DATAGRAMS: [(usize, Option<u32>, bool); 6] = [
    (1, None, true),
    (60, Some(0x0102_0304), true),
    (100, None, false),
    (1000, Some(0xa0b0_c0d0), false),
    (4000, None, false),
    (4096, None, false),
];

pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// A GID and QP number as one line.
pub fn parse_endpoint(line: &str) -> ([u8; 16], u32) {
    let mut parts = line.split_whitespace();
    let gid: [u8; 16] = unhex(parts.next().expect("gid"))
        .try_into()
        .expect("16 bytes");
    let qpn = parts.next().expect("qpn").parse().expect("number");
    (gid, qpn)
}

/// Polls `f` until it yields or `limit` passes.
pub fn wait<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
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
pub struct UdSide {
    pub device: SoftDevice,
    pub pd: SoftPd,
    pub send_cq: SoftCq,
    pub recv_cq: SoftCq,
    /// Held so that the device keeps the SRQ (`None`: the QP has its own
    /// receive queue).
    pub _srq: Option<SoftSrq>,
    pub qp: SoftQp,
    pub doorbell: SoftDoorbell,
    pub mr: SoftMr,
    pub recv_mr: SoftMr,
    pub buf: Box<[u64]>,
    pub recv_buf: Box<[u64]>,
    pub sq: SendRing,
    pub sq_pi: u16,
    pub srq_ring: RecvRing,
    pub srq_pi: u16,
    pub send_ci: u32,
    pub recv_ci: u32,
}

impl UdSide {
    /// A UD QP on an SRQ.
    pub fn new(name: &str, ip: Ipv4Addr) -> UdSide {
        UdSide::build(name, ip, false)
    }

    /// A UD QP with its own receive queue.
    pub fn with_rq(name: &str, ip: Ipv4Addr) -> UdSide {
        UdSide::build(name, ip, true)
    }

    fn build(name: &str, ip: Ipv4Addr, own_rq: bool) -> UdSide {
        let device = uct::hca::devices::open_soft_at(name, ip).expect("soft device");
        let pd = device.alloc_pd();
        let send_cq = device.create_cq(CQES, None).expect("send cq");
        let recv_cq = device.create_cq(CQES, None).expect("recv cq");
        let (srq, qp) = if own_rq {
            let qp = pd
                .create_ud_qp_with_rq(&send_cq, &recv_cq, SRQ_WQES, 1, SQ_WQEBBS)
                .expect("UD qp");
            (None, qp)
        } else {
            let srq = pd
                .create_srq(SrqInitAttr {
                    wqe_count: SRQ_WQES,
                    max_sge: 1,
                })
                .expect("srq");
            let qp = pd
                .create_ud_qp(&send_cq, &recv_cq, &srq, SQ_WQEBBS)
                .expect("UD qp");
            assert!(qp.recv_ring().is_none());
            (Some(srq), qp)
        };
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
        let srq_ring = match &srq {
            Some(srq) => srq.ring(),
            None => qp.recv_ring().expect("own receive queue"),
        };
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

    pub fn endpoint_line(&self) -> String {
        let qpn = self.qp.send_ring().qpn;
        format!("{} {qpn}", hex(&self.device.gid()))
    }

    pub fn write_buf(&mut self, offset: usize, data: &[u8]) {
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
    pub fn read_recv(&self, slot: u16, len: usize) -> Vec<u8> {
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

    /// Posts `count` receives of `RECV_SLOT` bytes to the SRQ (WQEs with
    /// a next segment) or to the QP's own receive queue (data segments
    /// only).
    pub fn post_recvs(&mut self, count: u16) {
        let ring = self.srq_ring;
        let linked = self._srq.is_some();
        for _ in 0..count {
            let index = self.srq_pi & (ring.wqe_count as u16 - 1);
            let mut wqe = vec![0u8; ring.stride as usize];
            let next = index.wrapping_add(1) & (ring.wqe_count as u16 - 1);
            let data_at = if linked {
                mlx5::SrqNextSeg {
                    next_wqe_index: next,
                    signature: 0,
                }
                .write((&mut wqe[..16]).try_into().expect("seg"));
                16
            } else {
                0
            };
            DataSeg {
                byte_count: RECV_SLOT as u32,
                lkey: self.recv_mr.keys().lkey,
                addr: self.recv_buf.as_ptr() as u64 + (index as usize * RECV_SLOT) as u64,
            }
            .write(&mut wqe[data_at..data_at + 16]);
            let at = index as usize * ring.stride as usize;
            // SAFETY: the WQE lies inside the SRQ ring (index < wqe_count);
            // the device reads it only after the counter below says so.
            unsafe { std::ptr::copy_nonoverlapping(wqe.as_ptr(), ring.buf.add(at), wqe.len()) };
            self.srq_pi = self.srq_pi.wrapping_add(1);
        }
        // SAFETY: word 0 of the SRQ's (or, for a QP's own receive queue,
        // the QP's) doorbell record, 4-aligned device memory valid while
        // the queue lives, is the receive counter.
        let counter = unsafe { &*(ring.dbrec as *const AtomicU32) };
        counter.store(mlx5::dbrec_word(self.srq_pi), Ordering::Release);
    }

    /// Posts a UD SEND to `qpn` at `ah` with `qkey`: `data` inline, or
    /// gathered from the buffer's start; returns its WQE index.
    pub fn post_send(
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
        self.publish(&scratch, index, ctrl.wqebbs());
        index
    }

    /// Posts a WQE of only a control segment with `opcode` and DS count
    /// `ds` (at most 4: one basic block), whatever a UD QP makes of it.
    pub fn post_raw(&mut self, opcode: u8, ds: u8) -> u16 {
        let index = self.sq_pi;
        let mut scratch = vec![0u8; self.sq.wqebb_count as usize * mlx5::SEND_WQE_BB];
        CtrlSeg {
            opcode,
            wqe_index: index,
            qpn: self.sq.qpn,
            ds,
            fm_ce_se: mlx5::MLX5_WQE_CTRL_CQ_UPDATE,
            ..CtrlSeg::default()
        }
        .write(mlx5::ring_seg_mut(&mut scratch, index, 0).expect("ring"));
        self.publish(&scratch, index, 1);
        index
    }

    /// Copies `bbs` basic blocks of the WQE at `index` from `scratch` (a
    /// copy of the ring's shape) into the send ring, publishes the new
    /// producer index and rings the doorbell.
    fn publish(&mut self, scratch: &[u8], index: u16, bbs: usize) {
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

    pub fn wait_send(&mut self) -> Option<Cqe64> {
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
    pub fn wait_recv(&mut self, progress: bool, limit: Duration) -> Option<Cqe64> {
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
pub fn check_datagram(
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
