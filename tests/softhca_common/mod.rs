//! Test harness for the soft HCA: one QP with its CQs, SRQ and a registered
//! buffer, driven the way the rc_mlx5 transport drives a device: mlx5 WQEs
//! written into the send ring with the `uct::mlx5` segment writers, the
//! doorbell record updated, the doorbell rung, CQE64s polled from the ring.
#![allow(dead_code)]

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use uct::hca::{
    Access, Cq, CqRing, Device, DeviceAddress, Doorbell, EventChannel, Mr, Mtu, Pd, Qp, QpInitAttr,
    QpTransition, RecvRing, RtrAttr, RtsAttr, SendRing, Srq, SrqInitAttr,
};
use uct::mlx5::{self, AtomicSize, Cqe64, CtrlSeg, DataSeg, RaddrSeg, Seg};

pub const BUF_LEN: usize = 1 << 20;
pub const SQ_WQEBBS: u32 = 256;
pub const SRQ_WQES: u32 = 256;
pub const CQES: u32 = 1024;
pub const RECV_SLOT: usize = 16 * 1024;

/// What a test posts.
#[derive(Clone, Debug)]
pub enum Op<'a> {
    SendInline(&'a [u8]),
    /// SEND from `len` bytes at `offset` of the local buffer.
    Send {
        offset: usize,
        len: usize,
        imm: Option<u32>,
    },
    /// An inline header followed by local-buffer data (as am_zcopy does).
    SendMixed {
        header: &'a [u8],
        offset: usize,
        len: usize,
    },
    Write {
        offset: usize,
        len: usize,
        remote: u64,
        rkey: u32,
        imm: Option<u32>,
    },
    WriteInline {
        data: &'a [u8],
        remote: u64,
        rkey: u32,
    },
    Read {
        offset: usize,
        len: usize,
        remote: u64,
        rkey: u32,
    },
    CompareSwap {
        result_offset: usize,
        remote: u64,
        rkey: u32,
        compare: u64,
        swap: u64,
    },
    FetchAdd {
        result_offset: usize,
        remote: u64,
        rkey: u32,
        add: u64,
    },
    MaskedCompareSwap {
        size: AtomicSize,
        result_offset: usize,
        remote: u64,
        rkey: u32,
        compare: u64,
        compare_mask: u64,
        swap: u64,
        swap_mask: u64,
    },
    MaskedFetchAdd {
        size: AtomicSize,
        result_offset: usize,
        remote: u64,
        rkey: u32,
        add: u64,
        boundary: u64,
    },
    Nop,
}

/// Soft devices `{tag}_a` on 127.0.0.1 and `{tag}_b` on 127.0.0.2, one
/// Side each, connected to each other with `timeout` and `retry_cnt`.
pub fn pair(tag: &str, timeout: u8, retry_cnt: u8) -> (Side, Side) {
    let a = Side::new(open_soft(&format!("{tag}_a"), Ipv4Addr::new(127, 0, 0, 1)));
    let b = Side::new(open_soft(&format!("{tag}_b"), Ipv4Addr::new(127, 0, 0, 2)));
    a.connect(&b.endpoint(), timeout, retry_cnt);
    b.connect(&a.endpoint(), timeout, retry_cnt);
    (a, b)
}

/// A copy of `len` bytes at byte `offset` of `region`, made with a raw
/// copy: the device may write the region concurrently, as RDMA does.
fn copy_out(region: &[u64], offset: usize, len: usize) -> Vec<u8> {
    assert!(offset + len <= region.len() * 8, "outside the region");
    let mut out = vec![0u8; len];
    // SAFETY: inside the region (checked); a raw copy does not assert
    // exclusive access to bytes the device writes.
    unsafe {
        std::ptr::copy(
            (region.as_ptr() as *const u8).add(offset),
            out.as_mut_ptr(),
            len,
        )
    };
    out
}

/// One end: device, QP, queues and a registered 1 MiB buffer.
pub struct Side {
    pub device: Device,
    pub pd: Pd,
    pub send_cq: Cq,
    pub recv_cq: Cq,
    pub srq: Srq,
    pub qp: Qp,
    pub doorbell: Doorbell,
    pub mr: Mr,
    /// Receive buffers (separate registration, SRQ slots).
    pub recv_mr: Mr,
    pub buf: Box<[u64]>,
    pub recv_buf: Box<[u64]>,
    sq: SendRing,
    sq_pi: u16,
    srq_ring: RecvRing,
    srq_pi: u16,
    send_ring: CqRing,
    send_ci: u32,
    recv_ring: CqRing,
    recv_ci: u32,
}

/// The connection attributes a peer needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub address: DeviceAddress,
    pub qpn: u32,
    pub rkey: u32,
    pub buf_addr: u64,
}

impl Endpoint {
    pub fn to_line(self) -> String {
        let mut packed = [0u8; DeviceAddress::MAX_PACKED_LEN];
        let len = self.address.pack(&mut packed).expect("pack");
        let hex: String = packed[..len].iter().map(|b| format!("{b:02x}")).collect();
        format!("{hex} {} {} {}", self.qpn, self.rkey, self.buf_addr)
    }

    pub fn from_line(line: &str) -> Endpoint {
        let mut parts = line.split_whitespace();
        let hex = parts.next().expect("address");
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
        let address = DeviceAddress::unpack(&bytes).expect("unpack");
        let mut next = || parts.next().expect("field").parse::<u64>().expect("number");
        Endpoint {
            address,
            qpn: next() as u32,
            rkey: next() as u32,
            buf_addr: next(),
        }
    }
}

pub fn open_soft(name: &str, ip: Ipv4Addr) -> Device {
    Device::Soft(uct::hca::devices::open_soft_at(name, ip).expect("open soft device"))
}

impl Side {
    pub fn new(device: Device) -> Side {
        Side::with_channel(device, None)
    }

    /// Both CQs attached to `channel` (for blocking waits).
    pub fn with_channel(device: Device, channel: Option<&EventChannel>) -> Side {
        let pd = device.alloc_pd().expect("pd");
        let send_cq = device.create_cq(CQES, channel).expect("send cq");
        let recv_cq = device.create_cq(CQES, channel).expect("recv cq");
        let srq = pd
            .create_srq(SrqInitAttr {
                wqe_count: SRQ_WQES,
                max_sge: 1,
            })
            .expect("srq");
        let qp = pd
            .create_qp(&QpInitAttr {
                send_cq: &send_cq,
                recv_cq: &recv_cq,
                srq: &srq,
                sq_wqebb_count: SQ_WQEBBS,
            })
            .expect("qp");
        let mut buf = vec![0u64; BUF_LEN / 8].into_boxed_slice();
        let mut recv_buf = vec![0u64; RECV_SLOT * SRQ_WQES as usize / 8].into_boxed_slice();
        let access = Access::ALL;
        let mr = pd
            .reg_mr(buf.as_mut_ptr().cast(), BUF_LEN, access)
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
        let send_ring = send_cq.ring();
        let recv_ring = recv_cq.ring();
        Side {
            device,
            pd,
            send_cq,
            recv_cq,
            srq,
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
            send_ring,
            send_ci: 0,
            recv_ring,
            recv_ci: 0,
        }
    }

    pub fn endpoint(&self) -> Endpoint {
        Endpoint {
            address: self.device.port_attr(1).expect("port").address,
            qpn: self.qp.qpn(),
            rkey: self.mr.keys().rkey,
            buf_addr: self.buf_addr(0),
        }
    }

    pub fn buf_addr(&self, offset: usize) -> u64 {
        self.buf.as_ptr() as u64 + offset as u64
    }

    /// Reads `len` bytes of the local buffer (a copy: the device may write
    /// the buffer concurrently, as RDMA does).
    pub fn read_buf(&self, offset: usize, len: usize) -> Vec<u8> {
        copy_out(&self.buf, offset, len)
    }

    pub fn write_buf(&mut self, offset: usize, data: &[u8]) {
        assert!(offset + data.len() <= BUF_LEN);
        // SAFETY: inside the buffer (checked); raw copy.
        unsafe {
            std::ptr::copy(
                data.as_ptr(),
                (self.buf.as_mut_ptr() as *mut u8).add(offset),
                data.len(),
            )
        };
    }

    pub fn read_u64(&self, offset: usize) -> u64 {
        u64::from_ne_bytes(self.read_buf(offset, 8).try_into().expect("8 bytes"))
    }

    pub fn read_recv(&self, slot: u16, len: usize) -> Vec<u8> {
        let offset = (slot as usize % SRQ_WQES as usize) * RECV_SLOT;
        copy_out(&self.recv_buf, offset, len)
    }

    fn rtr_attr(&self, peer: &Endpoint) -> RtrAttr {
        RtrAttr {
            dest_qpn: peer.qpn,
            peer: peer.address,
            rq_psn: 0x100,
            path_mtu: Mtu::Mtu1024,
            min_rnr_timer: 1,
            max_dest_rd_atomic: 16,
            path: Default::default(),
        }
    }

    fn rts_attr(&self, timeout: u8, retry_cnt: u8) -> RtsAttr {
        RtsAttr {
            sq_psn: 0x100,
            timeout,
            retry_cnt,
            rnr_retry: 7,
            max_rd_atomic: 16,
        }
    }

    /// RESET→INIT→RTR→RTS towards `peer`.
    pub fn connect(&self, peer: &Endpoint, timeout: u8, retry_cnt: u8) {
        self.qp
            .modify(QpTransition::Init {
                access: Access::ALL,
            })
            .expect("init");
        self.qp
            .modify(QpTransition::Rtr(self.rtr_attr(peer)))
            .expect("rtr");
        self.qp
            .modify(QpTransition::Rts(self.rts_attr(timeout, retry_cnt)))
            .expect("rts");
    }

    /// Back to RESET (the send ring restarts at index 0), then connected
    /// again: how a test recovers a QP that went to error.
    pub fn reset_and_connect(&mut self, peer: &Endpoint, timeout: u8, retry_cnt: u8) {
        self.qp.modify(QpTransition::Reset).expect("reset");
        self.sq_pi = 0;
        self.connect(peer, timeout, retry_cnt);
    }

    /// `reset_and_connect` for a QP that packets may push back to error
    /// between two transitions (a hostile peer): retried until it holds.
    pub fn reset_and_connect_retrying(&mut self, peer: &Endpoint, timeout: u8, retry_cnt: u8) {
        for _ in 0..100 {
            self.qp.modify(QpTransition::Reset).expect("reset");
            self.sq_pi = 0;
            let connected = self
                .qp
                .modify(QpTransition::Init {
                    access: Access::ALL,
                })
                .and_then(|()| self.qp.modify(QpTransition::Rtr(self.rtr_attr(peer))))
                .and_then(|()| {
                    self.qp
                        .modify(QpTransition::Rts(self.rts_attr(timeout, retry_cnt)))
                });
            if connected.is_ok() {
                return;
            }
        }
        panic!("could not reconnect the QP");
    }

    /// Posts `count` receive WQEs of `RECV_SLOT` bytes each (slot = index).
    pub fn post_recvs(&mut self, count: u16) {
        let ring = self.srq_ring;
        for _ in 0..count {
            let index = self.srq_pi & (ring.wqe_count as u16 - 1);
            let wqe_at = index as usize * ring.stride as usize;
            let mut wqe = vec![0u8; ring.stride as usize];
            let next = index.wrapping_add(1) & (ring.wqe_count as u16 - 1);
            let head: &mut Seg = (&mut wqe[..16]).try_into().expect("seg");
            mlx5::SrqNextSeg {
                next_wqe_index: next,
                signature: 0,
            }
            .write(head);
            let data: &mut Seg = (&mut wqe[16..32]).try_into().expect("seg");
            let addr = self.recv_buf.as_ptr() as u64 + (index as usize * RECV_SLOT) as u64;
            DataSeg {
                byte_count: RECV_SLOT as u32,
                lkey: self.recv_mr.keys().lkey,
                addr,
            }
            .write(data);
            // SAFETY: the WQE lies inside the SRQ ring (index < wqe_count);
            // the device reads a WQE only after the counter below says so.
            unsafe { std::ptr::copy_nonoverlapping(wqe.as_ptr(), ring.buf.add(wqe_at), wqe.len()) };
            self.srq_pi = self.srq_pi.wrapping_add(1);
        }
        // SAFETY: the doorbell record is 4-aligned device memory valid while
        // the SRQ lives; word 0 is the receive counter.
        let counter = unsafe { &*(ring.dbrec as *const AtomicU32) };
        counter.store(mlx5::dbrec_word(self.srq_pi), Ordering::Release);
    }

    /// Writes `pattern(len, seed)` at the start of this side's buffer and
    /// posts (signalled) a WRITE of it to the start of `peer`'s buffer.
    /// Returns its WQE index.
    pub fn post_pattern_write(&mut self, peer: &Side, len: usize, seed: u8) -> u16 {
        self.write_buf(0, &pattern(len, seed));
        self.post(&Op::Write {
            offset: 0,
            len,
            remote: peer.buf_addr(0),
            rkey: peer.endpoint().rkey,
            imm: None,
        })
    }

    /// Writes one WQE for `op` (signalled) into the send ring and rings the
    /// doorbell. Returns its WQE index.
    pub fn post(&mut self, op: &Op<'_>) -> u16 {
        self.post_flags(op, true, false)
    }

    pub fn post_flags(&mut self, op: &Op<'_>, signaled: bool, fence: bool) -> u16 {
        let index = self.sq_pi;
        let lkey = self.mr.keys().lkey;
        let ring_len = self.sq.wqebb_count as usize * mlx5::SEND_WQE_BB;
        // SAFETY: the ring is `ring_len` bytes of device memory that only
        // this thread writes; the device reads WQEs only after the doorbell.
        let ring = unsafe { std::slice::from_raw_parts_mut(self.sq.buf, ring_len) };
        let mut units = 1usize;
        let (opcode, opmod, imm) = {
            let local = |ring: &mut [u8], unit: usize, offset: usize, len: usize| {
                DataSeg {
                    byte_count: len as u32,
                    lkey,
                    addr: self.buf.as_ptr() as u64 + offset as u64,
                }
                .write(ring_unit(ring, index, unit));
            };
            // The remote address segment, always unit 1.
            let raddr = |ring: &mut [u8], raddr: u64, rkey: u32| {
                RaddrSeg { raddr, rkey }.write(ring_unit(ring, index, 1));
            };
            // An 8-byte atomic: remote address, operands, result segment.
            let atomic = |ring: &mut [u8],
                          remote: u64,
                          rkey: u32,
                          swap_add: u64,
                          compare: u64,
                          result: usize| {
                raddr(ring, remote, rkey);
                mlx5::AtomicSeg { swap_add, compare }.write(ring_unit(ring, index, 2));
                local(ring, 3, result, 8);
            };
            match *op {
                Op::SendInline(data) => {
                    units += mlx5::write_inline(ring, index, units, data).expect("inline");
                    (mlx5::MLX5_OPCODE_SEND, 0, 0)
                }
                Op::Send { offset, len, imm } => {
                    local(ring, units, offset, len);
                    units += 1;
                    match imm {
                        Some(v) => (mlx5::MLX5_OPCODE_SEND_IMM, 0, v),
                        None => (mlx5::MLX5_OPCODE_SEND, 0, 0),
                    }
                }
                Op::SendMixed {
                    header,
                    offset,
                    len,
                } => {
                    units += mlx5::write_inline(ring, index, units, header).expect("inline");
                    local(ring, units, offset, len);
                    units += 1;
                    (mlx5::MLX5_OPCODE_SEND, 0, 0)
                }
                Op::Write {
                    offset,
                    len,
                    remote,
                    rkey,
                    imm,
                } => {
                    raddr(ring, remote, rkey);
                    local(ring, 2, offset, len);
                    units = 3;
                    match imm {
                        Some(v) => (mlx5::MLX5_OPCODE_RDMA_WRITE_IMM, 0, v),
                        None => (mlx5::MLX5_OPCODE_RDMA_WRITE, 0, 0),
                    }
                }
                Op::WriteInline { data, remote, rkey } => {
                    raddr(ring, remote, rkey);
                    units = 2 + mlx5::write_inline(ring, index, 2, data).expect("inline");
                    (mlx5::MLX5_OPCODE_RDMA_WRITE, 0, 0)
                }
                Op::Read {
                    offset,
                    len,
                    remote,
                    rkey,
                } => {
                    raddr(ring, remote, rkey);
                    local(ring, 2, offset, len);
                    units = 3;
                    (mlx5::MLX5_OPCODE_RDMA_READ, 0, 0)
                }
                Op::CompareSwap {
                    result_offset,
                    remote,
                    rkey,
                    compare,
                    swap,
                } => {
                    atomic(ring, remote, rkey, swap, compare, result_offset);
                    units = 4;
                    (mlx5::MLX5_OPCODE_ATOMIC_CS, 0, 0)
                }
                Op::FetchAdd {
                    result_offset,
                    remote,
                    rkey,
                    add,
                } => {
                    atomic(ring, remote, rkey, add, 0, result_offset);
                    units = 4;
                    (mlx5::MLX5_OPCODE_ATOMIC_FA, 0, 0)
                }
                Op::MaskedCompareSwap {
                    size,
                    result_offset,
                    remote,
                    rkey,
                    compare,
                    compare_mask,
                    swap,
                    swap_mask,
                } => {
                    raddr(ring, remote, rkey);
                    let ops = mlx5::MaskedCsSeg {
                        swap,
                        compare,
                        swap_mask,
                        compare_mask,
                    };
                    match size {
                        AtomicSize::Bits32 => {
                            ops.write32(ring_unit(ring, index, 2));
                            units = 3;
                        }
                        AtomicSize::Bits64 => {
                            let mut first = [0u8; 16];
                            let mut second = [0u8; 16];
                            ops.write64(&mut first, &mut second);
                            *ring_unit(ring, index, 2) = first;
                            *ring_unit(ring, index, 3) = second;
                            units = 4;
                        }
                    }
                    local(ring, units, result_offset, size.bytes() as usize);
                    units += 1;
                    (mlx5::MLX5_OPCODE_ATOMIC_MASKED_CS, size.opmod(), 0)
                }
                Op::MaskedFetchAdd {
                    size,
                    result_offset,
                    remote,
                    rkey,
                    add,
                    boundary,
                } => {
                    raddr(ring, remote, rkey);
                    mlx5::MaskedFaSeg {
                        add,
                        field_boundary: boundary,
                    }
                    .write(ring_unit(ring, index, 2), size);
                    local(ring, 3, result_offset, size.bytes() as usize);
                    units = 4;
                    (mlx5::MLX5_OPCODE_ATOMIC_MASKED_FA, size.opmod(), 0)
                }
                Op::Nop => (mlx5::MLX5_OPCODE_NOP, 0, 0),
            }
        };
        let mut fm_ce_se = if signaled {
            mlx5::MLX5_WQE_CTRL_CQ_UPDATE
        } else {
            0
        };
        if fence {
            fm_ce_se |= mlx5::MLX5_FENCE_MODE_INITIATOR_SMALL;
        }
        let ctrl = CtrlSeg {
            opcode,
            opmod,
            wqe_index: index,
            qpn: self.sq.qpn,
            ds: units as u8,
            fm_ce_se,
            imm,
            ..CtrlSeg::default()
        };
        ctrl.write(mlx5::ring_seg_mut(ring, index, 0).expect("ctrl"));
        let bbs = ctrl.wqebbs() as u16;
        self.advance_send_counter(bbs);
        let ctrl_ptr = mlx5::ring_seg(ring, index, 0).expect("ctrl").as_ptr();
        self.doorbell.ring(ctrl_ptr);
        index
    }

    /// Moves the send producer index on by `bbs` basic blocks and publishes
    /// it in the send counter (before the doorbell).
    fn advance_send_counter(&mut self, bbs: u16) {
        self.sq_pi = self.sq_pi.wrapping_add(bbs);
        // SAFETY: the doorbell record is 4-aligned device memory valid while
        // the QP lives; word 1 is the send counter.
        let counter = unsafe { &*((self.sq.dbrec as *const AtomicU32).add(1)) };
        counter.store(mlx5::dbrec_word(self.sq_pi), Ordering::Release);
    }

    /// Index of the next WQE to be posted.
    pub fn next_index(&self) -> u16 {
        self.sq_pi
    }

    /// Writes `bytes` as the WQE at the next index (the caller chooses every
    /// byte, control segment included), advances by `bbs` basic blocks and
    /// rings the doorbell: for feeding the device malformed WQEs.
    pub fn post_raw(&mut self, bytes: &[u8], bbs: u16) -> u16 {
        let index = self.sq_pi;
        let ring_len = self.sq.wqebb_count as usize * mlx5::SEND_WQE_BB;
        for (k, chunk) in bytes.chunks(mlx5::SEND_WQE_BB).enumerate() {
            let at = ((index as usize + k) % self.sq.wqebb_count as usize) * mlx5::SEND_WQE_BB;
            assert!(at + chunk.len() <= ring_len);
            // SAFETY: inside the ring (checked); only this thread writes it.
            unsafe {
                std::ptr::copy_nonoverlapping(chunk.as_ptr(), self.sq.buf.add(at), chunk.len())
            };
        }
        self.advance_send_counter(bbs);
        self.doorbell.ring(self.sq.buf);
        index
    }

    /// The next CQE of a ring, if the device wrote one.
    fn poll_ring(ring: &CqRing, ci: &mut u32) -> Option<Cqe64> {
        let slot = (*ci & (ring.cqe_count - 1)) as usize * mlx5::CQE_LEN;
        // SAFETY: the slot is inside the CQ ring; the op_own byte is read
        // with acquire ordering before the rest, which the device wrote
        // before releasing that byte.
        let op_own = unsafe { &*(ring.buf.add(slot + mlx5::CQE_OP_OWN_OFFSET) as *const AtomicU8) }
            .load(Ordering::Acquire);
        if !mlx5::cqe_is_sw_owned(op_own, *ci, ring.cqe_count) {
            return None;
        }
        let mut bytes = [0u8; mlx5::CQE_LEN];
        // SAFETY: as above; a raw copy of the 64-byte slot.
        unsafe { std::ptr::copy(ring.buf.add(slot), bytes.as_mut_ptr(), mlx5::CQE_LEN) };
        *ci = ci.wrapping_add(1);
        // SAFETY: word 0 of the CQ doorbell record is the consumer index.
        let dbrec = unsafe { &*(ring.dbrec as *const AtomicU32) };
        dbrec.store((*ci & 0x00ff_ffff).to_be(), Ordering::Release);
        Some(Cqe64::decode(&bytes))
    }

    pub fn poll_send(&mut self) -> Option<Cqe64> {
        let ring = self.send_ring;
        Self::poll_ring(&ring, &mut self.send_ci)
    }

    pub fn poll_recv(&mut self) -> Option<Cqe64> {
        let ring = self.recv_ring;
        Self::poll_ring(&ring, &mut self.recv_ci)
    }

    /// Waits up to `limit` for a send CQE, driving the device meanwhile.
    pub fn wait_send(&mut self, limit: Duration) -> Option<Cqe64> {
        wait(limit, || {
            self.device.progress();
            self.poll_send()
        })
    }

    pub fn wait_recv(&mut self, limit: Duration) -> Option<Cqe64> {
        wait(limit, || {
            self.device.progress();
            self.poll_recv()
        })
    }

    /// Waits for a receive CQE without ever calling progress: only the
    /// device's service thread can deliver it.
    pub fn wait_recv_passive(&mut self, limit: Duration) -> Option<Cqe64> {
        wait(limit, || self.poll_recv())
    }
}

fn ring_unit(ring: &mut [u8], index: u16, unit: usize) -> &mut Seg {
    mlx5::ring_seg_mut(ring, index, unit).expect("ring seg")
}

/// Polls `f` until it yields or `limit` passes, yielding the CPU between
/// tries (2-core machines).
pub fn wait<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() > limit {
            return None;
        }
        spins += 1;
        if spins < 100 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// The protocol lines a peer process (this test binary again) prints on
/// `stdout`: what follows `PEER ` on each line (the test harness prints its
/// own text, possibly on the same line before ours), read by a thread.
pub fn peer_lines(stdout: std::process::ChildStdout) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(at) = line.find("PEER ") {
                if tx.send(line[at + 5..].to_string()).is_err() {
                    break;
                }
            }
        }
    });
    lines
}

/// A deterministic byte pattern.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

pub const LONG: Duration = Duration::from_secs(10);
