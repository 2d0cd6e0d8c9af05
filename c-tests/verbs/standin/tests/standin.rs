//! The stand-in libibverbs/libmlx5, loaded the way the verbs backend loads
//! rdma-core (`Verbs::load_from` / `UCT_VERBS_LIB*`), driven through
//! `uct::hca::verbs` (discovery and objects): two devices on two loopback
//! addresses, RC QPs connected INIT/RTR/RTS over RoCE GIDs, WRITE, SEND and
//! fetch-add WQEs through the mlx5 rings and the BlueFlame doorbell, CQEs,
//! CQ events, query_qp, the fault API, the trace file, and bad calls.
//!
//! Cargo builds this crate's cdylib before its integration tests, so the
//! library is `target/<profile>/libuct_verbs_standin.so` next to `deps/`.

use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use uct::hca::verbs::cq_arm::{CqArm, MLX5_CQ_ARM_DB};
use uct::hca::verbs::discovery::{self, GidType};
use uct::hca::verbs::ffi::{self, Verbs};
use uct::hca::verbs::objects::{VerbsDevice, VerbsDoorbell, VerbsMr, VerbsPd, VerbsQp, VerbsSrq};
use uct::hca::{
    Access, Cq, CqRing, DeviceAddress, EventChannel, LinkLayer, Mtu, PathAttr, QpState,
    QpTransition, RecvRing, RtrAttr, RtsAttr, SendRing, SrqInitAttr,
};
use uct::mlx5::{self, Cqe64, CtrlSeg, DataSeg, RaddrSeg, Seg};

/// mlx5_2 is only for the fault test (its link goes down meanwhile).
const DEVICES: &str = "mlx5_0@127.0.0.1,mlx5_1@127.0.0.2,mlx5_2@127.0.0.3";

struct Setup {
    library: PathBuf,
    sysfs_root: PathBuf,
    trace: PathBuf,
}

/// The stand-in next to this test's `deps/` directory.
fn standin_library() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>");
    let library = profile_dir.join("libuct_verbs_standin.so");
    assert!(
        library.exists(),
        "{} missing: cargo builds it before this test (cargo test -p uct-verbs-standin)",
        library.display()
    );
    library
}

/// Points the backend and the stand-in at their inputs, once per process,
/// before anything loads the library.
fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let library = standin_library();
        let scratch = std::env::temp_dir().join(format!("uct-standin-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&scratch);
        std::fs::create_dir_all(&scratch).expect("scratch dir");
        let sysfs_root = scratch.join("sysfs");
        let trace = scratch.join("trace");
        std::env::set_var(ffi::LIBIBVERBS_OVERRIDE_ENV, &library);
        std::env::set_var(ffi::LIBMLX5_OVERRIDE_ENV, &library);
        std::env::set_var("UCX_SOFT_HCA_DEVICES", DEVICES);
        std::env::set_var("UCT_VERBS_SYSFS_ROOT", &sysfs_root);
        std::env::set_var("UCT_STANDIN_TRACE", &trace);
        Setup {
            library,
            sysfs_root,
            trace,
        }
    })
}

fn verbs() -> &'static Verbs {
    setup();
    Verbs::get().expect("the stand-in loads through the backend's dlopen path")
}

/// The backend's entry points that its table types (live objects as
/// references, created ones as `Option`s) with their C prototypes: these
/// tests call the stand-in with raw pointers, NULL and junk included.
struct RawVerbs {
    get_device_name: unsafe extern "C" fn(*mut ffi::ibv_device) -> *const c_char,
    open_device: unsafe extern "C" fn(*mut ffi::ibv_device) -> *mut ffi::ibv_context,
    query_port: unsafe extern "C" fn(*mut ffi::ibv_context, u8, *mut ffi::ibv_port_attr) -> c_int,
    query_gid: unsafe extern "C" fn(*mut ffi::ibv_context, u8, c_int, *mut ffi::ibv_gid) -> c_int,
    alloc_pd: unsafe extern "C" fn(*mut ffi::ibv_context) -> *mut ffi::ibv_pd,
    reg_mr: unsafe extern "C" fn(*mut ffi::ibv_pd, *mut c_void, usize, c_int) -> *mut ffi::ibv_mr,
    create_comp_channel: unsafe extern "C" fn(*mut ffi::ibv_context) -> *mut ffi::ibv_comp_channel,
    create_cq: unsafe extern "C" fn(
        *mut ffi::ibv_context,
        c_int,
        *mut c_void,
        *mut ffi::ibv_comp_channel,
        c_int,
    ) -> *mut ffi::ibv_cq,
    get_cq_event: unsafe extern "C" fn(
        *mut ffi::ibv_comp_channel,
        *mut *mut ffi::ibv_cq,
        *mut *mut c_void,
    ) -> c_int,
    ack_cq_events: unsafe extern "C" fn(*mut ffi::ibv_cq, c_uint),
    create_srq:
        unsafe extern "C" fn(*mut ffi::ibv_pd, *mut ffi::ibv_srq_init_attr) -> *mut ffi::ibv_srq,
    create_qp:
        unsafe extern "C" fn(*mut ffi::ibv_pd, *mut ffi::ibv_qp_init_attr) -> *mut ffi::ibv_qp,
    modify_qp: unsafe extern "C" fn(*mut ffi::ibv_qp, *mut ffi::ibv_qp_attr, c_int) -> c_int,
    query_qp: unsafe extern "C" fn(
        *mut ffi::ibv_qp,
        *mut ffi::ibv_qp_attr,
        c_int,
        *mut ffi::ibv_qp_init_attr,
    ) -> c_int,
    is_supported: unsafe extern "C" fn(*mut ffi::ibv_device) -> bool,
}

#[allow(
    clippy::missing_transmute_annotations,
    reason = "each target type is the type of the field it fills, declared above"
)]
fn raw() -> RawVerbs {
    let v = verbs();
    // SAFETY: the same functions with the C prototypes the typed fields
    // stand for (references and `Option`s of them are pointers, a
    // nullable pointer, in the C ABI).
    unsafe {
        RawVerbs {
            get_device_name: std::mem::transmute(v.ibv.get_device_name),
            open_device: std::mem::transmute(v.ibv.open_device),
            query_port: std::mem::transmute(v.ibv.query_port),
            query_gid: std::mem::transmute(v.ibv.query_gid),
            alloc_pd: std::mem::transmute(v.ibv.alloc_pd),
            reg_mr: std::mem::transmute(v.ibv.reg_mr),
            create_comp_channel: std::mem::transmute(v.ibv.create_comp_channel),
            create_cq: std::mem::transmute(v.ibv.create_cq),
            get_cq_event: std::mem::transmute(v.ibv.get_cq_event),
            ack_cq_events: std::mem::transmute(v.ibv.ack_cq_events),
            create_srq: std::mem::transmute(v.ibv.create_srq),
            create_qp: std::mem::transmute(v.ibv.create_qp),
            modify_qp: std::mem::transmute(v.ibv.modify_qp),
            query_qp: std::mem::transmute(v.ibv.query_qp),
            is_supported: std::mem::transmute(v.mlx5.is_supported),
        }
    }
}

fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

#[test]
fn discovery_lists_both_devices_with_roce_v2_gids_encoding_their_endpoints() {
    let setup = setup();
    let found = discovery::discover_with(verbs(), &setup.sysfs_root, None);
    let names: Vec<&str> = found.iter().map(|d| d.name.as_str()).collect();
    // mlx5_2 may be missing meanwhile: the fault test takes its link down.
    assert!(names.starts_with(&["mlx5_0", "mlx5_1"]), "{names:?}");
    assert!(names.len() <= 3);
    for (device, ip) in found.iter().zip([[127, 0, 0, 1], [127, 0, 0, 2]]) {
        assert_eq!(device.ports.len(), 1);
        let port = &device.ports[0];
        assert_eq!(port.number, 1);
        assert_eq!(port.link_layer, LinkLayer::Ethernet);
        assert_eq!(port.active_mtu, Mtu::Mtu4096);
        let gid = port.gid.expect("a RoCE GID");
        assert_eq!((gid.index, gid.kind), (0, GidType::RoceV2));
        assert_eq!(&gid.gid[..10], &[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&gid.gid[10..14], &ip);
        assert_ne!(u16::from_be_bytes([gid.gid[14], gid.gid[15]]), 0);
        let types = setup
            .sysfs_root
            .join(&device.name)
            .join("ports/1/gid_attrs/types/0");
        assert_eq!(
            std::fs::read_to_string(types).expect("gid type"),
            "RoCE v2\n"
        );
    }
    // The stand-in puts device N on PCI function 0000:(N+3):00.0.
    for (index, device) in found.iter().enumerate() {
        let expected = uct::abi::ucs_sys_bus_id_t {
            domain: 0,
            bus: 3 + index as u8,
            slot: 0,
            function: 0,
        };
        assert_eq!(device.pci_bus_id, Some(expected), "{}", device.name);
    }
    let device = VerbsDevice::open("mlx5_0").expect("open");
    let attr = device.attr();
    assert_eq!(attr.port_count, 1);
    // ibv_query_device says IBV_ATOMIC_HCA: mlx5 in host-endian 8-byte mode.
    assert!(attr.atomics);
    assert!(attr.atomic_result_order.big_endian(4));
    assert!(!attr.atomic_result_order.big_endian(8));
    assert!(attr.max_qp_wqebb >= 1024 && attr.max_cqe >= 1024);
}

/// One end of a connection: the backend's objects plus the ring cursors a
/// transport keeps.
/// Fields drop in order: QP before what it uses, device last.
struct Side {
    doorbell: VerbsDoorbell,
    qp: VerbsQp,
    mr: VerbsMr,
    _recv_mr: VerbsMr,
    _srq: VerbsSrq,
    send_cq: Cq,
    _recv_cq: Cq,
    /// The send CQ's completion channel, if asked for.
    channel: Option<EventChannel>,
    _pd: VerbsPd,
    device: VerbsDevice,
    buf: Box<[u64]>,
    recv_buf: Box<[u64]>,
    sq: SendRing,
    sq_pi: u16,
    srq_ring: RecvRing,
    srq_pi: u16,
    send_ring: CqRing,
    send_ci: u32,
    recv_ring: CqRing,
    recv_ci: u32,
}

const BUF_LEN: usize = 64 * 1024;
const RECV_SLOT: usize = 4096;
const SRQ_WQES: u32 = 16;

impl Side {
    fn new(name: &str) -> Side {
        Side::build(name, false)
    }

    /// With `events`, the send CQ reports to a completion channel.
    fn build(name: &str, events: bool) -> Side {
        verbs();
        let device = VerbsDevice::open(name).expect("open");
        let pd = device.alloc_pd().expect("pd");
        let channel = events.then(|| device.create_event_channel().expect("channel"));
        let send_cq = device.create_cq(256, channel.as_ref()).expect("send cq");
        let recv_cq = device.create_cq(256, None).expect("recv cq");
        let srq = pd
            .create_srq(SrqInitAttr {
                wqe_count: SRQ_WQES,
                max_sge: 1,
            })
            .expect("srq");
        let qp = pd.create_qp(&send_cq, &recv_cq, &srq, 64).expect("qp");
        let mut buf = vec![0u64; BUF_LEN / 8].into_boxed_slice();
        let mut recv_buf = vec![0u64; RECV_SLOT * SRQ_WQES as usize / 8].into_boxed_slice();
        let mr = pd
            .reg_mr(buf.as_mut_ptr().cast(), BUF_LEN, Access::ALL)
            .expect("mr");
        let recv_mr = pd
            .reg_mr(
                recv_buf.as_mut_ptr().cast(),
                recv_buf.len() * 8,
                Access::LOCAL_WRITE,
            )
            .expect("recv mr");
        let doorbell = qp.doorbell();
        let sq = qp.send_ring();
        let srq_ring = srq.ring();
        let send_ring = send_cq.ring();
        let recv_ring = recv_cq.ring();
        Side {
            doorbell,
            qp,
            mr,
            _recv_mr: recv_mr,
            _srq: srq,
            send_cq: Cq::Verbs(send_cq),
            _recv_cq: Cq::Verbs(recv_cq),
            channel: channel.map(EventChannel::Verbs),
            _pd: pd,
            device,
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

    fn address(&self) -> DeviceAddress {
        let address = self.device.port_attr(1).expect("port").address;
        assert!(matches!(address, DeviceAddress::Roce { .. }), "{address:?}");
        address
    }

    fn buf_addr(&self, offset: usize) -> u64 {
        self.buf.as_ptr() as u64 + offset as u64
    }

    fn connect(&self, peer: &Side) {
        connect_qp(&self.qp, peer.qp.qpn(), peer.address());
    }

    fn post_recvs(&mut self, count: u16) {
        let ring = self.srq_ring;
        let lkey = self._recv_mr.keys().lkey;
        for _ in 0..count {
            let index = self.srq_pi & (ring.wqe_count as u16 - 1);
            let mut wqe = vec![0u8; ring.stride as usize];
            let head: &mut Seg = (&mut wqe[..16]).try_into().expect("seg");
            mlx5::SrqNextSeg {
                next_wqe_index: index.wrapping_add(1) & (ring.wqe_count as u16 - 1),
                signature: 0,
            }
            .write(head);
            let data: &mut Seg = (&mut wqe[16..32]).try_into().expect("seg");
            DataSeg {
                byte_count: RECV_SLOT as u32,
                lkey,
                addr: self.recv_buf.as_ptr() as u64 + (index as usize * RECV_SLOT) as u64,
            }
            .write(data);
            // SAFETY: WQE `index` lies inside the SRQ ring; the device reads
            // it only after the counter below says so.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    wqe.as_ptr(),
                    ring.buf.add(index as usize * ring.stride as usize),
                    wqe.len(),
                )
            };
            self.srq_pi = self.srq_pi.wrapping_add(1);
        }
        // SAFETY: the SRQ's doorbell record, word 0, 4-aligned.
        let counter = unsafe { &*(ring.dbrec as *const AtomicU32) };
        counter.store(mlx5::dbrec_word(self.srq_pi), Ordering::Release);
    }

    /// Writes one signalled WQE (the units after the control segment are
    /// given) and rings the doorbell the way the backend does: counter in
    /// dbrec[1], then the control segment to the BlueFlame register.
    fn post(&mut self, opcode: u8, units: &[Seg]) -> u16 {
        self.post_with_opmod(opcode, 0, units)
    }

    fn post_with_opmod(&mut self, opcode: u8, opmod: u8, units: &[Seg]) -> u16 {
        let index = self.sq_pi;
        let ring_len = self.sq.wqebb_count as usize * mlx5::SEND_WQE_BB;
        // SAFETY: the send ring is `ring_len` bytes only this thread writes.
        let ring = unsafe { std::slice::from_raw_parts_mut(self.sq.buf, ring_len) };
        for (unit, seg) in units.iter().enumerate() {
            *mlx5::ring_seg_mut(ring, index, unit + 1).expect("seg") = *seg;
        }
        let ctrl = CtrlSeg {
            opcode,
            opmod,
            wqe_index: index,
            qpn: self.sq.qpn,
            ds: (units.len() + 1) as u8,
            fm_ce_se: mlx5::MLX5_WQE_CTRL_CQ_UPDATE,
            ..CtrlSeg::default()
        };
        ctrl.write(mlx5::ring_seg_mut(ring, index, 0).expect("ctrl"));
        self.sq_pi = self.sq_pi.wrapping_add(ctrl.wqebbs() as u16);
        // SAFETY: the QP's doorbell record, word 1 = send counter.
        let counter = unsafe { &*((self.sq.dbrec as *const AtomicU32).add(1)) };
        counter.store(mlx5::dbrec_word(self.sq_pi), Ordering::Release);
        self.doorbell
            .ring(mlx5::ring_seg(ring, index, 0).expect("ctrl").as_ptr());
        index
    }

    fn data_seg(&self, offset: usize, len: usize) -> Seg {
        let mut seg = [0u8; 16];
        DataSeg {
            byte_count: len as u32,
            lkey: self.mr.keys().lkey,
            addr: self.buf_addr(offset),
        }
        .write(&mut seg);
        seg
    }

    fn write_buf(&mut self, offset: usize, data: &[u8]) {
        // SAFETY: inside the buffer (tests use small offsets); raw copy, as
        // the device may access the buffer concurrently.
        unsafe {
            std::ptr::copy(
                data.as_ptr(),
                self.buf.as_mut_ptr().cast::<u8>().add(offset),
                data.len(),
            )
        };
    }

    fn read(base: *const u64, offset: usize, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        // SAFETY: inside the buffer; raw copy (see write_buf).
        unsafe { std::ptr::copy(base.cast::<u8>().add(offset), out.as_mut_ptr(), len) };
        out
    }

    fn poll(ring: &CqRing, ci: &mut u32) -> Option<Cqe64> {
        let slot = (*ci & (ring.cqe_count - 1)) as usize * mlx5::CQE_LEN;
        // SAFETY: the owner byte of a CQE inside the ring.
        let op_own = unsafe { &*(ring.buf.add(slot + mlx5::CQE_OP_OWN_OFFSET) as *const AtomicU8) }
            .load(Ordering::Acquire);
        if !mlx5::cqe_is_sw_owned(op_own, *ci, ring.cqe_count) {
            return None;
        }
        let mut bytes = [0u8; mlx5::CQE_LEN];
        // SAFETY: a whole CQE inside the ring, published before its owner byte.
        unsafe { std::ptr::copy(ring.buf.add(slot), bytes.as_mut_ptr(), mlx5::CQE_LEN) };
        *ci = ci.wrapping_add(1);
        Some(Cqe64::decode(&bytes))
    }

    /// No progress call: on "hardware" the device works by itself.
    fn wait_send(&mut self) -> Cqe64 {
        let ring = self.send_ring;
        wait(|| Self::poll(&ring, &mut self.send_ci)).expect("send completion")
    }

    fn wait_recv(&mut self) -> Cqe64 {
        let ring = self.recv_ring;
        wait(|| Self::poll(&ring, &mut self.recv_ci)).expect("receive completion")
    }
}

fn wait<T>(mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    None
}

/// RESET→INIT→RTR→RTS towards `peer_qpn` at `peer` (PSNs 0x200).
fn connect_qp(qp: &VerbsQp, peer_qpn: u32, peer: DeviceAddress) {
    qp.modify(QpTransition::Init {
        access: Access::ALL,
    })
    .expect("init");
    qp.modify(QpTransition::Rtr(RtrAttr {
        dest_qpn: peer_qpn,
        peer,
        rq_psn: 0x200,
        path_mtu: Mtu::Mtu1024,
        min_rnr_timer: 1,
        max_dest_rd_atomic: 4,
        path: PathAttr::default(),
    }))
    .expect("rtr");
    qp.modify(QpTransition::Rts(RtsAttr {
        sq_psn: 0x200,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 4,
    }))
    .expect("rts");
}

fn connected_pair() -> (Side, Side) {
    let a = Side::new("mlx5_0");
    let b = Side::new("mlx5_1");
    a.connect(&b);
    b.connect(&a);
    (a, b)
}

#[test]
fn write_send_and_fetch_add_through_the_rings_between_two_devices() {
    let (mut a, mut b) = connected_pair();
    for side in [&a, &b] {
        let info = side.qp.query().expect("query");
        assert_eq!(info.state, QpState::Rts);
        assert_eq!((info.sq_psn, info.next_rcv_psn), (0x200, 0x200));
    }
    assert_eq!(a.qp.query().expect("query").dest_qpn, b.qp.qpn());
    assert_eq!(b.qp.query().expect("query").dest_qpn, a.qp.qpn());

    // RDMA WRITE of 3000 bytes (three 1024-byte packets) into b's buffer.
    let payload: Vec<u8> = (0..3000u32).map(|i| (i * 7 + 1) as u8).collect();
    a.write_buf(0, &payload);
    let mut raddr = [0u8; 16];
    RaddrSeg {
        raddr: b.buf_addr(1024),
        rkey: b.mr.keys().rkey,
    }
    .write(&mut raddr);
    let data = a.data_seg(0, payload.len());
    let index = a.post(mlx5::MLX5_OPCODE_RDMA_WRITE, &[raddr, data]);
    let cqe = a.wait_send();
    assert_eq!((cqe.opcode, cqe.wqe_counter), (mlx5::MLX5_CQE_REQ, index));
    assert_eq!(Side::read(b.buf.as_ptr(), 1024, payload.len()), payload);

    // SEND of 100 bytes into b's first posted receive.
    b.post_recvs(4);
    a.write_buf(8192, &[0x5a; 100]);
    let data = a.data_seg(8192, 100);
    let index = a.post(mlx5::MLX5_OPCODE_SEND, &[data]);
    let cqe = a.wait_send();
    assert_eq!((cqe.opcode, cqe.wqe_counter), (mlx5::MLX5_CQE_REQ, index));
    let cqe = b.wait_recv();
    assert_eq!(cqe.opcode, mlx5::MLX5_CQE_RESP_SEND);
    assert_eq!((cqe.byte_cnt, cqe.wqe_counter), (100, 0));
    assert_eq!(cqe.remote_qpn, a.qp.qpn());
    assert_eq!(Side::read(b.recv_buf.as_ptr(), 0, 100), vec![0x5a; 100]);

    // Fetch-and-add: the old 64-bit value lands in host order, as on mlx5
    // hardware in host-endian 8-byte atomic mode.
    b.write_buf(16384, &0x1122_3344_5566_7788u64.to_ne_bytes());
    let mut raddr = [0u8; 16];
    RaddrSeg {
        raddr: b.buf_addr(16384),
        rkey: b.mr.keys().rkey,
    }
    .write(&mut raddr);
    let mut atomic = [0u8; 16];
    mlx5::AtomicSeg {
        swap_add: 5,
        compare: 0,
    }
    .write(&mut atomic);
    let result = a.data_seg(24576, 8);
    let index = a.post(mlx5::MLX5_OPCODE_ATOMIC_FA, &[raddr, atomic, result]);
    let cqe = a.wait_send();
    assert_eq!((cqe.opcode, cqe.wqe_counter), (mlx5::MLX5_CQE_REQ, index));
    assert_eq!(
        Side::read(a.buf.as_ptr(), 24576, 8),
        0x1122_3344_5566_7788u64.to_ne_bytes()
    );
    assert_eq!(
        Side::read(b.buf.as_ptr(), 16384, 8),
        0x1122_3344_5566_778du64.to_ne_bytes()
    );

    // 32-bit masked fetch-and-add: the old value lands big-endian.
    b.write_buf(16392, &0x0a0b_0c0du32.to_ne_bytes());
    let mut raddr = [0u8; 16];
    RaddrSeg {
        raddr: b.buf_addr(16392),
        rkey: b.mr.keys().rkey,
    }
    .write(&mut raddr);
    let mut masked = [0u8; 16];
    let size = mlx5::AtomicSize::Bits32;
    mlx5::MaskedFaSeg {
        add: 3,
        field_boundary: 0,
    }
    .write(&mut masked, size);
    let result = a.data_seg(24584, 4);
    let index = a.post_with_opmod(
        mlx5::MLX5_OPCODE_ATOMIC_MASKED_FA,
        size.opmod(),
        &[raddr, masked, result],
    );
    let cqe = a.wait_send();
    assert_eq!((cqe.opcode, cqe.wqe_counter), (mlx5::MLX5_CQE_REQ, index));
    assert_eq!(
        Side::read(a.buf.as_ptr(), 24584, 4),
        0x0a0b_0c0du32.to_be_bytes()
    );
    assert_eq!(
        Side::read(b.buf.as_ptr(), 16392, 4),
        0x0a0b_0c10u32.to_ne_bytes()
    );

    // query_qp follows the PSNs: 3 WRITE packets + 1 SEND + 2 atomics.
    let sent = a.qp.query().expect("query");
    assert_eq!(sent.sq_psn, 0x200 + 6);
    let received = b.qp.query().expect("query");
    assert_eq!(received.next_rcv_psn, 0x200 + 6);

    // To error: later WQEs flush with an error CQE.
    a.qp.modify(QpTransition::Error).expect("to error");
    assert_eq!(a.qp.query().expect("query").state, QpState::Error);
    let data = a.data_seg(0, 8);
    a.post(mlx5::MLX5_OPCODE_SEND, &[data]);
    let cqe = a.wait_send();
    assert_eq!(cqe.opcode, mlx5::MLX5_CQE_REQ_ERR);
}

/// `ibv_req_notify_cq` is an inline function of verbs.h: it calls
/// `cq->context->ops.req_notify_cq`, at byte 104 of `struct ibv_context`.
///
/// # Safety
/// `cq` must be a live CQ of the stand-in.
unsafe fn req_notify_cq(cq: *mut ffi::ibv_cq) -> c_int {
    type ReqNotify = unsafe extern "C" fn(*mut ffi::ibv_cq, c_int) -> c_int;
    // SAFETY: `cq` is a live CQ; its context starts with the rdma-core
    // layout, whose ops slot at byte 104 is req_notify_cq.
    unsafe {
        let context = (*cq).context.cast::<u8>();
        let slot = context.add(104).cast::<Option<ReqNotify>>().read();
        (slot.expect("req_notify_cq provided"))(cq, 0)
    }
}

fn readable(fd: c_int, timeout_ms: c_int) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd.
    unsafe { libc::poll(&mut pfd, 1, timeout_ms) == 1 }
}

#[test]
fn armed_cq_makes_the_channel_readable_and_get_cq_event_names_it() {
    // A's QP (backend objects) sends to a raw QP on mlx5_1 whose CQ is on
    // a completion channel, armed with ibv_req_notify_cq as other rdma-core
    // callers do (the backend arms with the doorbell: see the test above).
    let mut a = Side::new("mlx5_0");
    let DeviceAddress::Roce { gid: a_gid } = a.address() else {
        unreachable!("checked by address()")
    };
    let b_address = VerbsDevice::open("mlx5_1")
        .expect("open")
        .port_attr(1)
        .expect("port")
        .address;
    let v = verbs();
    let mut count = 0;
    // SAFETY: raw calls into the stand-in with valid arguments; every
    // object is destroyed before the test ends.
    unsafe {
        let list = (v.ibv.get_device_list)(&mut count);
        assert_eq!(count, 3);
        let context = (raw().open_device)(*list.add(1));
        (v.ibv.free_device_list)(list);
        assert!(!context.is_null());
        let channel = (raw().create_comp_channel)(context);
        assert!(!channel.is_null());
        let fd = (*channel).fd;
        let flags = libc::fcntl(fd, libc::F_GETFL);
        assert_eq!(libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK), 0);
        let marker = 0x1234usize as *mut c_void;
        let cq = (raw().create_cq)(context, 64, marker, channel, 0);
        assert!(!cq.is_null());
        assert_eq!((*cq).channel, channel);
        assert_eq!((*channel).refcnt, 1);
        let mut out_cq = std::ptr::null_mut();
        let mut out_context = std::ptr::null_mut();
        assert_eq!(
            (raw().get_cq_event)(channel, &mut out_cq, &mut out_context),
            -1
        );
        assert_eq!(errno(), libc::EAGAIN);

        // Arm, then complete something on it: a SEND from a to a QP of b
        // whose receive CQ is this one.
        let pd = (raw().alloc_pd)(context);
        let mut srq_attr = ffi::ibv_srq_init_attr {
            srq_context: std::ptr::null_mut(),
            attr: ffi::ibv_srq_attr {
                max_wr: 4,
                max_sge: 1,
                srq_limit: 0,
            },
        };
        let srq = (raw().create_srq)(pd, &mut srq_attr);
        assert!(!srq.is_null());
        let mut init = ffi::ibv_qp_init_attr {
            qp_context: std::ptr::null_mut(),
            send_cq: cq,
            recv_cq: cq,
            srq,
            cap: ffi::ibv_qp_cap {
                max_send_wr: 8,
                ..Default::default()
            },
            qp_type: ffi::IBV_QPT_RC,
            sq_sig_all: 0,
        };
        let qp = (raw().create_qp)(pd, &mut init);
        assert!(!qp.is_null());
        let recv_buf = vec![0u8; 256];
        let mr = (raw().reg_mr)(pd, recv_buf.as_ptr() as *mut c_void, 256, 1);
        assert!(!mr.is_null());
        // Post one receive into the raw SRQ.
        let mut dv_srq: ffi::mlx5dv_srq = std::mem::zeroed();
        let mut obj = ffi::mlx5dv_obj::default();
        obj.srq.r#in = srq;
        obj.srq.out = &mut dv_srq;
        assert_eq!((v.mlx5.init_obj)(&mut obj, ffi::MLX5DV_OBJ_SRQ), 0);
        let mut seg = [0u8; 16];
        DataSeg {
            byte_count: 256,
            lkey: (*mr).lkey,
            addr: recv_buf.as_ptr() as u64,
        }
        .write(&mut seg);
        std::ptr::copy_nonoverlapping(seg.as_ptr(), dv_srq.buf.cast::<u8>().add(16), 16);
        (*dv_srq.dbrec.cast::<AtomicU32>()).store(mlx5::dbrec_word(1), Ordering::Release);

        let mut attr = ffi::ibv_qp_attr {
            qp_state: ffi::IBV_QPS_INIT,
            port_num: 1,
            qp_access_flags: 1,
            ..Default::default()
        };
        let init_mask = ffi::IBV_QP_STATE
            | ffi::IBV_QP_PKEY_INDEX
            | ffi::IBV_QP_PORT
            | ffi::IBV_QP_ACCESS_FLAGS;
        assert_eq!((raw().modify_qp)(qp, &mut attr, init_mask as c_int), 0);
        let mut attr = ffi::ibv_qp_attr {
            qp_state: ffi::IBV_QPS_RTR,
            dest_qp_num: a.qp.qpn(),
            rq_psn: 0x200,
            path_mtu: ffi::IBV_MTU_1024,
            min_rnr_timer: 1,
            max_dest_rd_atomic: 1,
            ..Default::default()
        };
        attr.ah_attr.is_global = 1;
        attr.ah_attr.port_num = 1;
        attr.ah_attr.grh.dgid = ffi::ibv_gid { raw: a_gid };
        let rtr_mask = ffi::IBV_QP_STATE
            | ffi::IBV_QP_AV
            | ffi::IBV_QP_PATH_MTU
            | ffi::IBV_QP_DEST_QPN
            | ffi::IBV_QP_RQ_PSN
            | ffi::IBV_QP_MAX_DEST_RD_ATOMIC
            | ffi::IBV_QP_MIN_RNR_TIMER;
        assert_eq!((raw().modify_qp)(qp, &mut attr, rtr_mask as c_int), 0);
        assert_eq!((*qp).state, ffi::IBV_QPS_RTR);
        connect_qp(&a.qp, (*qp).qp_num, b_address);

        assert_eq!(req_notify_cq(cq), 0);
        assert!(!readable(fd, 0), "no event before a completion");
        // Longer than the 32 bytes mlx5 would put in the CQE instead of the
        // buffer (the stand-in scatters to CQE, as libmlx5 does by default).
        const MESSAGE: &[u8] = b"event! (longer than a CQE carries inline)";
        a.write_buf(0, MESSAGE);
        let data = a.data_seg(0, MESSAGE.len());
        a.post(mlx5::MLX5_OPCODE_SEND, &[data]);
        a.wait_send();
        assert!(
            readable(fd, 5000),
            "the armed CQ's completion makes the fd readable"
        );
        assert_eq!(
            (raw().get_cq_event)(channel, &mut out_cq, &mut out_context),
            0
        );
        assert_eq!((out_cq, out_context), (cq, marker));
        assert_eq!(&recv_buf[..MESSAGE.len()], MESSAGE);
        assert_eq!(
            (raw().get_cq_event)(channel, &mut out_cq, &mut out_context),
            -1
        );
        assert_eq!(errno(), libc::EAGAIN);
        assert!(!readable(fd, 0), "one event per arm");
        (raw().ack_cq_events)(cq, 1);

        // The destroy order is checked like the kernel does.
        assert_eq!((v.ibv.destroy_cq)(cq), libc::EBUSY);
        assert_eq!((v.ibv.destroy_comp_channel)(channel), libc::EBUSY);
        assert_eq!((v.ibv.close_device)(context), libc::EBUSY);
        assert_eq!((v.ibv.destroy_qp)(qp), 0);
        assert_eq!((v.ibv.dereg_mr)(mr), 0);
        assert_eq!((v.ibv.destroy_srq)(srq), 0);
        assert_eq!((v.ibv.dealloc_pd)(pd), 0);
        assert_eq!((v.ibv.destroy_cq)(cq), 0);
        assert_eq!((v.ibv.destroy_comp_channel)(channel), 0);
        assert_eq!((v.ibv.close_device)(context), 0);
        drop(recv_buf);
    }
}

/// The arm request the backend last wrote into the CQ's `dbrec[1]`.
fn last_arm(ring: &CqRing) -> CqArm {
    // SAFETY: word 1 of the CQ's doorbell record, alive with the CQ.
    let word = unsafe { &*ring.dbrec.add(MLX5_CQ_ARM_DB).cast::<AtomicU32>() };
    CqArm::from_word(u32::from_be(word.load(Ordering::Acquire))).expect("a valid arm word")
}

#[test]
fn backend_arm_fires_at_once_for_a_stale_consumer_index_and_counts_events() {
    let mut a = Side::build("mlx5_0", true);
    let b = Side::new("mlx5_1");
    a.connect(&b);
    b.connect(&a);
    let channel = a.channel.take().expect("channel");
    let fd = channel.fd();
    let mut raddr = [0u8; 16];
    RaddrSeg {
        raddr: b.buf_addr(0),
        rkey: b.mr.keys().rkey,
    }
    .write(&mut raddr);
    let data = a.data_seg(0, 8);

    // One completion, consumed: the transport's consumer index is 1.
    a.post(mlx5::MLX5_OPCODE_RDMA_WRITE, &[raddr, data]);
    a.wait_send();
    assert_eq!(a.send_ci, 1);
    assert!(!readable(fd, 0), "nothing armed yet");

    // Arming with the index before it: the device has written past it, so
    // the event comes at once, without a new completion.
    a.send_cq.arm(a.send_ci - 1, false);
    let arm = last_arm(&a.send_ring);
    assert_eq!(
        arm,
        CqArm {
            sn: 0,
            solicited_only: false,
            ci: 0
        }
    );
    assert!(readable(fd, 5000), "a stale consumer index fires at once");
    channel.clear();
    assert!(!readable(fd, 0), "clear consumed the event");

    // Arming with the current index: nothing until the next CQE; the
    // consumed event advanced the sequence number.
    a.send_cq.arm(a.send_ci, true);
    assert_eq!(
        last_arm(&a.send_ring),
        CqArm {
            sn: 1,
            solicited_only: true,
            ci: 1
        }
    );
    assert!(
        !readable(fd, 200),
        "no event while the CQ holds nothing past the consumer index"
    );
    a.post(mlx5::MLX5_OPCODE_RDMA_WRITE, &[raddr, data]);
    a.wait_send();
    assert!(readable(fd, 5000), "the next CQE fires the armed CQ");
    channel.clear();
    a.send_cq.arm(a.send_ci, false);
    assert_eq!(
        last_arm(&a.send_ring),
        CqArm {
            sn: 2,
            solicited_only: false,
            ci: 2
        }
    );
    assert!(!readable(fd, 200), "one event per arm");
    drop(b);
    drop(a);
    drop(channel);
}

#[test]
fn bad_calls_fail_with_errno_and_do_not_crash() {
    let v = verbs();
    let mut bogus = [0u64; 64];
    let junk = bogus.as_mut_ptr().cast::<c_void>();
    // SAFETY: the stand-in validates every handle against its table, so
    // NULL and pointers it did not make are refused without dereference.
    unsafe {
        assert!((raw().alloc_pd)(std::ptr::null_mut()).is_null());
        assert_eq!(errno(), libc::EINVAL);
        assert!((raw().alloc_pd)(junk.cast()).is_null());
        assert_eq!(errno(), libc::EINVAL);
        assert!((raw().open_device)(junk.cast()).is_null());
        assert_eq!(errno(), libc::ENODEV);
        assert!((raw().get_device_name)(std::ptr::null_mut()).is_null());
        assert_eq!((v.ibv.close_device)(junk.cast()), libc::EINVAL);
        assert_eq!((v.ibv.dealloc_pd)(junk.cast()), libc::EINVAL);
        assert_eq!((v.ibv.dereg_mr)(std::ptr::null_mut()), libc::EINVAL);
        assert_eq!((v.ibv.destroy_cq)(junk.cast()), libc::EINVAL);
        assert_eq!((v.ibv.destroy_srq)(junk.cast()), libc::EINVAL);
        assert_eq!((v.ibv.destroy_qp)(junk.cast()), libc::EINVAL);
        assert_eq!((v.ibv.destroy_comp_channel)(junk.cast()), libc::EINVAL);
        let mut attr = ffi::ibv_qp_attr::default();
        assert_eq!((raw().modify_qp)(junk.cast(), &mut attr, 1), libc::EINVAL);
        assert_eq!(
            (raw().query_qp)(junk.cast(), &mut attr, 1, std::ptr::null_mut()),
            libc::EINVAL
        );
        let mut out_cq = std::ptr::null_mut();
        let mut out_ctx = std::ptr::null_mut();
        assert_eq!(
            (raw().get_cq_event)(junk.cast(), &mut out_cq, &mut out_ctx),
            -1
        );
        (raw().ack_cq_events)(junk.cast(), 1);
        (v.ibv.free_device_list)(junk.cast());
        let mut obj = ffi::mlx5dv_obj::default();
        assert_eq!(
            (v.mlx5.init_obj)(std::ptr::null_mut(), ffi::MLX5DV_OBJ_QP),
            libc::EINVAL
        );
        assert_eq!(
            (v.mlx5.init_obj)(&mut obj, ffi::MLX5DV_OBJ_QP),
            libc::EINVAL
        );
        assert_eq!((v.mlx5.init_obj)(&mut obj, 1 << 4), libc::EOPNOTSUPP);
        assert!(!(raw().is_supported)(junk.cast()));

        // Real objects, bad arguments.
        let mut count = 0;
        let list = (v.ibv.get_device_list)(&mut count);
        let context = (raw().open_device)(*list);
        (v.ibv.free_device_list)(list);
        let mut port = ffi::ibv_port_attr::default();
        assert_eq!((raw().query_port)(context, 2, &mut port), libc::EINVAL);
        let mut gid = ffi::ibv_gid::default();
        assert_eq!((raw().query_gid)(context, 1, 1, &mut gid), -1);
        assert!(
            (raw().create_cq)(context, 0, std::ptr::null_mut(), std::ptr::null_mut(), 0).is_null()
        );
        assert_eq!(errno(), libc::EINVAL);
        let pd = (raw().alloc_pd)(context);
        assert!(!pd.is_null());
        let mut buf = [0u8; 64];
        // Remote write without local write, and an unknown access bit
        // outside the optional range (IBV_ACCESS_MW_BIND).
        assert!((raw().reg_mr)(pd, buf.as_mut_ptr().cast(), 64, 2).is_null());
        assert_eq!(errno(), libc::EINVAL);
        assert!((raw().reg_mr)(pd, buf.as_mut_ptr().cast(), 64, 1 | (1 << 4)).is_null());
        assert_eq!(errno(), libc::EINVAL);
        // Optional bits (IBV_ACCESS_RELAXED_ORDERING, which UCX adds on some
        // hosts) are accepted and ignored, as rdma-core does.
        let relaxed = (raw().reg_mr)(pd, buf.as_mut_ptr().cast(), 64, 1 | (1 << 20));
        assert!(!relaxed.is_null(), "optional access bits refused");
        assert_eq!((v.ibv.dereg_mr)(relaxed), 0);
        let cq = (raw().create_cq)(context, 16, std::ptr::null_mut(), std::ptr::null_mut(), 0);
        let mut init = ffi::ibv_qp_init_attr {
            qp_context: std::ptr::null_mut(),
            send_cq: cq,
            recv_cq: cq,
            srq: std::ptr::null_mut(),
            cap: ffi::ibv_qp_cap {
                max_send_wr: 8,
                ..Default::default()
            },
            qp_type: ffi::IBV_QPT_RC,
            sq_sig_all: 0,
        };
        assert!((raw().create_qp)(pd, &mut init).is_null(), "no SRQ");
        let mut srq_attr = ffi::ibv_srq_init_attr {
            srq_context: std::ptr::null_mut(),
            attr: ffi::ibv_srq_attr {
                max_wr: 4,
                max_sge: 1,
                srq_limit: 0,
            },
        };
        init.srq = (raw().create_srq)(pd, &mut srq_attr);
        init.qp_type = 3; // UC
        assert!((raw().create_qp)(pd, &mut init).is_null());
        assert_eq!(errno(), libc::EOPNOTSUPP);
        init.qp_type = ffi::IBV_QPT_RC;
        let qp = (raw().create_qp)(pd, &mut init);
        assert!(!qp.is_null());
        // Unsupported mask bit (IBV_QP_QKEY), missing required bits, RTR
        // without a GRH, a GID that is not one of ours.
        let mut attr = ffi::ibv_qp_attr {
            qp_state: ffi::IBV_QPS_INIT,
            port_num: 1,
            ..Default::default()
        };
        let init_mask = ffi::IBV_QP_STATE
            | ffi::IBV_QP_PKEY_INDEX
            | ffi::IBV_QP_PORT
            | ffi::IBV_QP_ACCESS_FLAGS;
        assert_eq!(
            (raw().modify_qp)(qp, &mut attr, (init_mask | 1 << 6) as c_int),
            libc::EINVAL
        );
        assert_eq!(
            (raw().modify_qp)(qp, &mut attr, ffi::IBV_QP_STATE as c_int),
            libc::EINVAL
        );
        assert_eq!((raw().modify_qp)(qp, &mut attr, init_mask as c_int), 0);
        let rtr_mask = ffi::IBV_QP_STATE
            | ffi::IBV_QP_AV
            | ffi::IBV_QP_PATH_MTU
            | ffi::IBV_QP_DEST_QPN
            | ffi::IBV_QP_RQ_PSN
            | ffi::IBV_QP_MAX_DEST_RD_ATOMIC
            | ffi::IBV_QP_MIN_RNR_TIMER;
        let mut attr = ffi::ibv_qp_attr {
            qp_state: ffi::IBV_QPS_RTR,
            dest_qp_num: 0x100,
            path_mtu: ffi::IBV_MTU_1024,
            ..Default::default()
        };
        assert_eq!(
            (raw().modify_qp)(qp, &mut attr, rtr_mask as c_int),
            libc::EINVAL
        );
        attr.ah_attr.is_global = 1;
        let mut mapped = [0u8; 16];
        mapped[10] = 0xff;
        mapped[11] = 0xff;
        mapped[12..].copy_from_slice(&[127, 0, 0, 1]);
        attr.ah_attr.grh.dgid = ffi::ibv_gid { raw: mapped };
        assert_eq!(
            (raw().modify_qp)(qp, &mut attr, rtr_mask as c_int),
            libc::EINVAL
        );
        let mut queried = ffi::ibv_qp_attr::default();
        assert_eq!(
            (raw().query_qp)(qp, &mut queried, -1, std::ptr::null_mut()),
            libc::EINVAL
        );
        assert_eq!(
            (raw().query_qp)(
                qp,
                &mut queried,
                ffi::IBV_QP_STATE as c_int,
                std::ptr::null_mut()
            ),
            0
        );
        assert_eq!(
            queried.qp_state,
            ffi::IBV_QPS_INIT,
            "the failed RTRs left it in INIT"
        );

        assert_eq!((v.ibv.destroy_qp)(qp), 0);
        assert_eq!((v.ibv.destroy_qp)(qp), libc::EINVAL, "twice");
        assert_eq!((v.ibv.destroy_srq)(init.srq), 0);
        assert_eq!((v.ibv.destroy_cq)(cq), 0);
        assert_eq!((v.ibv.dealloc_pd)(pd), 0);
        assert_eq!((v.ibv.close_device)(context), 0);
    }
}

#[test]
fn fault_api_is_exported_and_acts_on_the_standin_devices() {
    let setup = setup();
    let device = VerbsDevice::open("mlx5_2").expect("open");
    let path = CString::new(setup.library.as_os_str().to_str().expect("utf-8 path")).expect("path");
    // SAFETY: dlopen/dlsym of the library already loaded by the backend;
    // the symbol has the C signature of include/uct/soft/soft_hca.h.
    unsafe {
        let handle = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        assert!(!handle.is_null());
        let link_set = libc::dlsym(handle, c"uct_soft_hca_link_set".as_ptr());
        assert!(!link_set.is_null(), "uct_soft_hca_link_set exported");
        for name in [c"uct_soft_hca_loss_set", c"uct_soft_hca_drop_next"] {
            assert!(!libc::dlsym(handle, name.as_ptr()).is_null());
        }
        type LinkSet = unsafe extern "C" fn(*const std::ffi::c_char, c_int) -> i8;
        let link_set: LinkSet = std::mem::transmute::<*mut c_void, LinkSet>(link_set);
        let port_state = || {
            let found = discovery::discover_with(verbs(), &setup.sysfs_root, None);
            found.iter().any(|d| d.name == "mlx5_2")
        };
        assert_eq!(link_set(c"mlx5_2".as_ptr(), 0), 0);
        assert!(
            !port_state(),
            "a device whose link is down has no active port"
        );
        assert_eq!(link_set(c"mlx5_2".as_ptr(), 1), 0);
        assert!(port_state());
        assert_ne!(link_set(c"no_such_device".as_ptr(), 1), 0);
    }
    drop(device);
}

#[test]
fn trace_file_records_opens_and_qps_of_this_process() {
    let setup = setup();
    let side = Side::new("mlx5_1");
    let text = std::fs::read_to_string(&setup.trace).expect("trace file");
    let pid = std::process::id();
    assert!(
        text.lines().any(|l| l == format!("open mlx5_1 pid {pid}")),
        "{text}"
    );
    let qp_line = format!("qp {:#x} pid {pid}", side.qp.qpn());
    assert!(
        text.lines().any(|l| l == qp_line),
        "{qp_line} not in {text}"
    );
}

#[test]
fn gid_decodes_to_the_soft_device_endpoint() {
    let setup = setup();
    let found = discovery::discover_with(verbs(), &setup.sysfs_root, None);
    let gid = found[1].ports[0].gid.expect("gid").gid;
    let port = u16::from_be_bytes([gid[14], gid[15]]);
    let endpoint = SocketAddrV4::new(Ipv4Addr::new(gid[10], gid[11], gid[12], gid[13]), port);
    // Something listens there: a UDP socket bound to the same endpoint
    // fails with "address in use".
    let taken = std::net::UdpSocket::bind(endpoint);
    assert!(taken.is_err(), "the soft device owns {endpoint}");
}

/// CPU time of each live thread of this process, by thread id, from the
/// scheduler's own nanosecond counters (`/proc/self/task/*/schedstat`):
/// `getrusage` on a VM charges whole ticks to whichever thread a tick lands
/// on, which inflates a thread that wakes often but briefly.
fn thread_cpu_nanos() -> std::collections::HashMap<String, u64> {
    let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task");
    tasks
        .filter_map(|task| {
            let task = task.ok()?;
            let line = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            let nanos = line.split_whitespace().next()?.parse().ok()?;
            Some((task.file_name().to_string_lossy().into_owned(), nanos))
        })
        .collect()
}

/// CPU seconds spent since `before` by the threads alive now (threads of
/// other tests that ended meanwhile are not counted; new ones count whole).
fn cpu_seconds_since(before: &std::collections::HashMap<String, u64>) -> f64 {
    let spent: u64 = thread_cpu_nanos()
        .iter()
        .map(|(tid, now)| now.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .sum();
    spent as f64 / 1e9
}

/// The doorbell watcher backs off to 10 ms naps after a quiet spell when
/// doorbells are trapped: an idle process with connected QPs costs well
/// under 1 % of a core (the other tests of this binary may run meanwhile,
/// so the bound is loose).
#[test]
fn idle_process_with_qps_costs_little_cpu() {
    let (mut a, b) = connected_pair();
    let mut raddr = [0u8; 16];
    RaddrSeg {
        raddr: b.buf_addr(0),
        rkey: b.mr.keys().rkey,
    }
    .write(&mut raddr);
    let data = a.data_seg(0, 8);
    a.post(mlx5::MLX5_OPCODE_RDMA_WRITE, &[raddr, data]);
    a.wait_send();
    std::thread::sleep(Duration::from_millis(200));
    let start = thread_cpu_nanos();
    let wall = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let share = cpu_seconds_since(&start) / wall.elapsed().as_secs_f64();
    eprintln!(
        "idle CPU with two connected QPs: {:.2} % of one core",
        share * 100.0
    );
    // Without trapped doorbells the watcher alone notices them and naps at
    // most 1 ms (~1000 wake-ups a second).
    let watch_only = std::env::var("UCT_STANDIN_DOORBELL").as_deref() == Ok("watch")
        || !cfg!(target_arch = "x86_64");
    let bound = if watch_only { 0.05 } else { 0.02 };
    assert!(share < bound, "idle CPU {:.1} %", share * 100.0);
}

/// What a UCX program sees: the md of a verbs device reports its tl
/// resource on a system device registered by the device's PCI function and
/// named after the device (as UCX's ib md names it), the same one at every
/// query.
#[test]
fn md_tl_resource_sits_on_the_system_device_of_its_pci_function() {
    use std::ffi::{c_uint, CStr};
    use std::ptr::{null, null_mut};
    use uct::abi::*;
    use uct::api::component::*;
    use uct::api::md::*;
    use uct::api::topo::*;
    setup();
    let sys_device_of = |md_name: &CStr| -> ucs_sys_device_t {
        let mut components: *mut uct_component_h = null_mut();
        let mut count: c_uint = 0;
        let mut md = null_mut();
        let mut resources: *mut uct_tl_resource_desc_t = null_mut();
        let mut num_resources: c_uint = 0;
        // SAFETY: valid out-pointers; arrays released after reading.
        unsafe {
            assert_eq!(uct_query_components(&mut components, &mut count), UCS_OK);
            assert_eq!(
                uct_md_open(*components, md_name.as_ptr(), null(), &mut md),
                UCS_OK
            );
            uct_release_component_list(components);
            assert_eq!(
                uct_md_query_tl_resources(md, &mut resources, &mut num_resources),
                UCS_OK
            );
            assert_eq!(num_resources, 1);
            let sys_device = (*resources).sys_device;
            uct_release_tl_resource_list(resources);
            uct_md_close(md);
            sys_device
        }
    };
    let first = sys_device_of(c"mlx5_0");
    assert_ne!(first, UCS_SYS_DEVICE_ID_UNKNOWN);
    assert_eq!(
        sys_device_of(c"mlx5_0"),
        first,
        "a second query, the same device"
    );
    let second = sys_device_of(c"mlx5_1");
    assert_ne!(second, UCS_SYS_DEVICE_ID_UNKNOWN);
    assert_ne!(second, first);
    for (sys_device, name, bus) in [(first, c"mlx5_0", 3), (second, c"mlx5_1", 4)] {
        // SAFETY: get_name answers a string that lives as long as the process.
        let got = unsafe { CStr::from_ptr(ucs_topo_sys_device_get_name(sys_device)) };
        assert_eq!(got, name);
        let mut bus_id = ucs_sys_bus_id_t {
            domain: 9,
            bus: 9,
            slot: 9,
            function: 9,
        };
        // SAFETY: a live out-pointer.
        assert_eq!(
            unsafe { ucs_topo_get_device_bus_id(sys_device, &mut bus_id) },
            UCS_OK
        );
        assert_eq!(
            (bus_id.domain, bus_id.bus, bus_id.slot, bus_id.function),
            (0, bus, 0, 0)
        );
    }
}

/// `struct mlx5dv_ah`.
#[repr(C)]
struct DvAh {
    av: *mut u8,
    comp_mask: u64,
}

/// `mlx5dv_init_obj`'s bit for address handles.
const MLX5DV_OBJ_AH: u64 = 1 << 5;
/// `IBV_QPT_UD`, `IBV_QP_QKEY` (verbs.h).
const QPT_UD: u32 = 4;
const QP_QKEY: c_int = 1 << 6;
/// The Q_Key of the UD test (UCX's, as it happens).
const UD_QKEY: u32 = 0x1ee7_a330;

/// One side of the UD test: raw handles, as UCX's ud_mlx5 holds them.
struct UdSide {
    context: *mut ffi::ibv_context,
    pd: *mut ffi::ibv_pd,
    qp: *mut ffi::ibv_qp,
    dv: ffi::mlx5dv_qp,
    recv_cq: CqRing,
    send_cq: CqRing,
    gid: [u8; 16],
}

type CreateAh = unsafe extern "C" fn(*mut ffi::ibv_pd, *mut ffi::ibv_ah_attr) -> *mut c_void;

fn create_ah_fn() -> CreateAh {
    let path = CString::new(setup().library.to_str().expect("utf-8 path")).expect("path");
    // SAFETY: dlopen/dlsym of the library the backend already loaded;
    // `ibv_create_ah` has the prototype of `CreateAh`.
    unsafe {
        let handle = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        assert!(!handle.is_null());
        let symbol = libc::dlsym(handle, c"ibv_create_ah".as_ptr());
        assert!(!symbol.is_null());
        std::mem::transmute::<*mut c_void, CreateAh>(symbol)
    }
}

/// A CQ's ring, from `mlx5dv_init_obj`.
///
/// # Safety
/// `cq` must be a live CQ of the stand-in.
unsafe fn dv_cq_ring(cq: *mut ffi::ibv_cq) -> CqRing {
    let v = verbs();
    let mut out = std::mem::MaybeUninit::<ffi::mlx5dv_cq>::zeroed();
    let mut obj = ffi::mlx5dv_obj::default();
    obj.cq.r#in = cq;
    obj.cq.out = out.as_mut_ptr();
    // SAFETY: a live CQ and a writable output (the caller's contract).
    let out = unsafe {
        assert_eq!((v.mlx5.init_obj)(&mut obj, ffi::MLX5DV_OBJ_CQ), 0);
        out.assume_init()
    };
    assert_eq!(out.cqe_size as usize, mlx5::CQE_LEN);
    CqRing {
        buf: out.buf.cast(),
        cqe_count: out.cqe_cnt,
        dbrec: out.dbrec,
        cqn: out.cqn,
    }
}

impl UdSide {
    /// A UD QP with its own receive queue on device `index`, taken to RTS
    /// as UCX's ud_mlx5 does (INIT with P_Key index, port and Q_Key; RTR;
    /// RTS with the send PSN).
    fn new(index: usize) -> UdSide {
        let v = verbs();
        // SAFETY: the stand-in's own objects, made and used as rdma-core
        // documents; every output is checked.
        unsafe {
            let mut count = 0;
            let list = (v.ibv.get_device_list)(&mut count);
            assert!(count as usize > index);
            let context = (raw().open_device)(*list.add(index));
            (v.ibv.free_device_list)(list);
            assert!(!context.is_null());
            let pd = (raw().alloc_pd)(context);
            let null = std::ptr::null_mut();
            let send_cq = (raw().create_cq)(context, 64, null, null.cast(), 0);
            let recv_cq = (raw().create_cq)(context, 64, null, null.cast(), 0);
            assert!(!pd.is_null() && !send_cq.is_null() && !recv_cq.is_null());
            let mut init = ffi::ibv_qp_init_attr {
                qp_context: null,
                send_cq,
                recv_cq,
                srq: null.cast(),
                cap: ffi::ibv_qp_cap {
                    max_send_wr: 16,
                    max_recv_wr: 16,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                qp_type: QPT_UD,
                sq_sig_all: 0,
            };
            let qp = (raw().create_qp)(pd, &mut init);
            assert!(!qp.is_null(), "UD QP refused (errno {})", errno());
            assert_eq!((*qp).qp_type, QPT_UD);
            assert!(init.cap.max_recv_wr >= 16);

            let mut attr = ffi::ibv_qp_attr {
                qp_state: ffi::IBV_QPS_INIT,
                pkey_index: 0,
                port_num: 1,
                qkey: UD_QKEY,
                ..Default::default()
            };
            let init_mask =
                (ffi::IBV_QP_STATE | ffi::IBV_QP_PKEY_INDEX | ffi::IBV_QP_PORT) as c_int;
            // Without the Q_Key the kernel refuses RESET→INIT of a UD QP.
            assert_eq!((raw().modify_qp)(qp, &mut attr, init_mask), libc::EINVAL);
            assert_eq!((raw().modify_qp)(qp, &mut attr, init_mask | QP_QKEY), 0);
            attr.qp_state = ffi::IBV_QPS_RTR;
            assert_eq!(
                (raw().modify_qp)(qp, &mut attr, ffi::IBV_QP_STATE as c_int),
                0
            );
            attr.qp_state = ffi::IBV_QPS_RTS;
            attr.sq_psn = 0;
            let rts_mask = (ffi::IBV_QP_STATE | ffi::IBV_QP_SQ_PSN) as c_int;
            assert_eq!((raw().modify_qp)(qp, &mut attr, rts_mask), 0);
            let mut queried = ffi::ibv_qp_attr::default();
            assert_eq!((raw().query_qp)(qp, &mut queried, QP_QKEY, null.cast()), 0);
            assert_eq!(queried.qkey, UD_QKEY);
            assert_eq!(queried.qp_state, ffi::IBV_QPS_RTS);

            let mut dv = std::mem::MaybeUninit::<ffi::mlx5dv_qp>::zeroed();
            let mut obj = ffi::mlx5dv_obj::default();
            obj.qp.r#in = qp;
            obj.qp.out = dv.as_mut_ptr();
            assert_eq!((v.mlx5.init_obj)(&mut obj, ffi::MLX5DV_OBJ_QP), 0);
            let dv = dv.assume_init();
            // What UCX's receive queue setup insists on: a power-of-two
            // count of 16-byte WQEs (one data segment each).
            assert!(!dv.rq.buf.is_null());
            assert!(dv.rq.wqe_cnt.is_power_of_two() && dv.rq.wqe_cnt >= 16);
            assert_eq!(dv.rq.stride, 16);

            let mut gid = ffi::ibv_gid::default();
            assert_eq!((raw().query_gid)(context, 1, 0, &mut gid), 0);
            UdSide {
                context,
                pd,
                qp,
                dv,
                recv_cq: dv_cq_ring(recv_cq),
                send_cq: dv_cq_ring(send_cq),
                gid: gid.raw,
            }
        }
    }

    fn qpn(&self) -> u32 {
        // SAFETY: a live QP of the stand-in.
        unsafe { (*self.qp).qp_num }
    }

    fn reg(&self, buf: &mut [u8]) -> u32 {
        // SAFETY: the buffer outlives the test's use of the registration.
        let mr = unsafe { (raw().reg_mr)(self.pd, buf.as_mut_ptr().cast(), buf.len(), 1) };
        assert!(!mr.is_null());
        // SAFETY: a live MR of the stand-in.
        unsafe { (*mr).lkey }
    }
}

#[test]
fn ud_qps_exchange_datagrams_with_the_grh_through_the_mlx5_rings() {
    let v = verbs();
    let a = UdSide::new(0);
    let b = UdSide::new(1);
    let create_ah = create_ah_fn();

    // An address handle of b's port, and its mlx5 address vector.
    let mut ah_attr = ffi::ibv_ah_attr {
        grh: ffi::ibv_global_route {
            dgid: ffi::ibv_gid { raw: b.gid },
            flow_label: 0,
            sgid_index: 0,
            hop_limit: 64,
            traffic_class: 0,
        },
        is_global: 1,
        port_num: 1,
        ..Default::default()
    };
    // SAFETY: the stand-in's PD and a valid attribute.
    let ah = unsafe { create_ah(a.pd, &mut ah_attr) };
    assert!(!ah.is_null());
    let mut dv_ah = DvAh {
        av: std::ptr::null_mut(),
        comp_mask: 0,
    };
    let mut obj = ffi::mlx5dv_obj::default();
    obj.ah.r#in = ah.cast();
    obj.ah.out = (&mut dv_ah as *mut DvAh).cast();
    // SAFETY: a live AH and a writable output.
    assert_eq!(unsafe { (v.mlx5.init_obj)(&mut obj, MLX5DV_OBJ_AH) }, 0);
    assert!(!dv_ah.av.is_null());
    // SAFETY: the 48-byte address vector, alive with the AH.
    let av = unsafe { std::slice::from_raw_parts(dv_ah.av, mlx5::DatagramSeg::LEN) };
    let mut datagram = mlx5::DatagramSeg::read(av);
    assert!(datagram.has_grh());
    assert_eq!(datagram.rgid, b.gid);
    assert_eq!(datagram.hop_limit, 64);

    // A GID no soft port has: refused, as an unresolvable destination.
    let mut nowhere = ah_attr;
    nowhere.grh.dgid = ffi::ibv_gid { raw: [0x20; 16] };
    // SAFETY: as above.
    assert!(unsafe { create_ah(a.pd, &mut nowhere) }.is_null());
    assert_eq!(errno(), libc::EINVAL);

    // b: two receives, one written into its receive queue ring as UCX's
    // ud_mlx5 does, one through verbs' post_recv (ops slot at byte 216 of
    // the context: 8 + 26 pointers), each 4096 bytes.
    let mut recv_buf = vec![0u8; 2 * 4096];
    let recv_lkey = b.reg(&mut recv_buf);
    let mut seg = [0u8; 16];
    DataSeg {
        byte_count: 4096,
        lkey: recv_lkey,
        addr: recv_buf.as_ptr() as u64,
    }
    .write(&mut seg);
    // SAFETY: WQE 0 of b's receive queue (16 bytes); the counter below
    // hands it to the device.
    unsafe {
        std::ptr::copy_nonoverlapping(seg.as_ptr(), b.dv.rq.buf.cast::<u8>(), 16);
        AtomicU32::from_ptr(b.dv.dbrec).store(mlx5::dbrec_word(1), Ordering::Release);
    }
    #[repr(C)]
    struct Sge {
        addr: u64,
        length: u32,
        lkey: u32,
    }
    #[repr(C)]
    struct RecvWr {
        wr_id: u64,
        next: *mut RecvWr,
        sg_list: *mut Sge,
        num_sge: c_int,
    }
    type PostRecv = unsafe extern "C" fn(*mut ffi::ibv_qp, *mut RecvWr, *mut *mut RecvWr) -> c_int;
    let mut sge = Sge {
        addr: recv_buf.as_ptr() as u64 + 4096,
        length: 4096,
        lkey: recv_lkey,
    };
    let mut wr = RecvWr {
        wr_id: 7,
        next: std::ptr::null_mut(),
        sg_list: &mut sge,
        num_sge: 1,
    };
    let mut bad = std::ptr::null_mut();
    // SAFETY: b's live context, whose ops slot 26 is post_recv (rdma-core
    // layout); a valid request list.
    unsafe {
        let slot = b
            .context
            .cast::<u8>()
            .add(216)
            .cast::<Option<PostRecv>>()
            .read();
        // Past the QP's own receive queue (at most max_sge 1 per WQE):
        // refused, bad_wr names the request.
        wr.num_sge = 2;
        assert_eq!(
            (slot.expect("post_recv"))(b.qp, &mut wr, &mut bad),
            libc::EINVAL
        );
        assert_eq!(bad, &mut wr as *mut RecvWr);
        wr.num_sge = 1;
        assert_eq!((slot.expect("post_recv"))(b.qp, &mut wr, &mut bad), 0);
    }

    // a: two UD SENDs to b (control, datagram, data segments: 5 units, two
    // basic blocks each), published by the send counter in dbrec[1].
    let mut send_buf = vec![0u8; 4096];
    let send_lkey = a.reg(&mut send_buf);
    let ring_len = a.dv.sq.wqe_cnt as usize * mlx5::SEND_WQE_BB;
    // SAFETY: a's send ring, written only here.
    let ring = unsafe { std::slice::from_raw_parts_mut(a.dv.sq.buf.cast::<u8>(), ring_len) };
    let mut pi: u16 = 0;
    let mut recv_ci = 0u32;
    let mut send_ci = 0u32;
    for (n, len) in [(0u8, 300usize), (1, 1000)] {
        let payload: Vec<u8> = (0..len).map(|i| (i as u8) ^ (0x40 + n)).collect();
        send_buf[..len].copy_from_slice(&payload);
        datagram.qkey = UD_QKEY;
        datagram.dqp_dct = mlx5::MLX5_EXTENDED_UD_AV | b.qpn();
        let mut dgram = [0u8; mlx5::DatagramSeg::LEN];
        datagram.write(&mut dgram);
        for unit in 0..3 {
            mlx5::ring_seg_mut(ring, pi, 1 + unit)
                .expect("seg")
                .copy_from_slice(&dgram[unit * 16..unit * 16 + 16]);
        }
        DataSeg {
            byte_count: len as u32,
            lkey: send_lkey,
            addr: send_buf.as_ptr() as u64,
        }
        .write(mlx5::ring_seg_mut(ring, pi, 4).expect("seg"));
        let ctrl = CtrlSeg {
            opcode: mlx5::MLX5_OPCODE_SEND,
            wqe_index: pi,
            qpn: a.qpn(),
            ds: 5,
            fm_ce_se: mlx5::MLX5_WQE_CTRL_CQ_UPDATE,
            ..CtrlSeg::default()
        };
        ctrl.write(mlx5::ring_seg_mut(ring, pi, 0).expect("ctrl"));
        pi = pi.wrapping_add(ctrl.wqebbs() as u16);
        // SAFETY: word 1 of a's doorbell record; the stand-in's watcher
        // rings the device when it moves.
        unsafe { AtomicU32::from_ptr(a.dv.dbrec.add(1)) }
            .store(mlx5::dbrec_word(pi), Ordering::Release);

        let sent = wait(|| Side::poll(&a.send_cq, &mut send_ci)).expect("send CQE");
        assert_eq!(sent.opcode, mlx5::MLX5_CQE_REQ, "{sent:?}");
        let cqe = wait(|| Side::poll(&b.recv_cq, &mut recv_ci)).expect("receive CQE");
        assert_eq!(cqe.opcode, mlx5::MLX5_CQE_RESP_SEND, "{cqe:?}");
        assert_eq!(cqe.wqe_counter, u16::from(n));
        assert_eq!(cqe.byte_cnt as usize, 40 + len);
        assert_eq!(cqe.remote_qpn, a.qpn());
        assert!(cqe.grh_in_data);
        // What UCX's ud_mlx5 reads to find the destination GID in the GRH:
        // an IPv6 L3 header of a RoCE v2 (UDP) packet.
        assert_eq!(
            cqe.roce_packet_type,
            mlx5::MLX5_CQE_ROCE_L3_IPV6 | mlx5::MLX5_CQE_ROCE_UDP
        );
        let at = usize::from(n) * 4096;
        let got = Side::read(recv_buf.as_ptr().cast(), at, 40 + len);
        assert_eq!(got[24..40], b.gid, "destination GID in the GRH");
        assert_eq!(got[8..24], a.gid, "source GID in the GRH");
        assert_eq!(got[40..], payload[..]);
    }
}
