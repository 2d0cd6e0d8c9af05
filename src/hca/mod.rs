//! The device behind the rings: the backend interface the rc_mlx5 transport
//! drives, the software HCA, and (later) rdma-core.
//!
//! The transport talks to a device only on the control path (open, register
//! memory, create and modify queues). On the data path it writes mlx5 WQEs
//! into [`SendRing`], updates the doorbell record, calls [`Doorbell::ring`],
//! and polls CQE64 entries from [`CqRing`]: the formats live in
//! `crate::mlx5`, so nothing is translated. Each handle is an enum over the
//! backends, resolved once when the transport opens its iface: a post costs
//! one `match` on a variant that never changes, no lock and no allocation in
//! the transport (what the soft device does behind the doorbell is its own
//! business, as a NIC's firmware is).
//!
//! Lifetimes: ring pointers handed out by a handle stay valid until that
//! handle is dropped. Dropping a handle destroys the object (deregisters the
//! memory, destroys the QP, ...). A CQ or SRQ still used by a QP stays alive
//! inside the device until the QP goes, so destroy order cannot make the
//! device write into freed memory.
//!
//! How a transport drives a device:
//! 1. `Device::open("mlx5_0")`, `port_attr(1)` (MTU, state, the
//!    [`DeviceAddress`] to pack into the UCT device address), `alloc_pd()`,
//!    `pd.reg_mr(addr, len, access)` (keys for zcopy and rkeys).
//! 2. `create_event_channel()` once, `create_cq(n, Some(&channel))` for send
//!    and receive, `pd.create_srq(..)`; fill the SRQ ring with receive WQEs
//!    (`mlx5::SrqNextSeg` + `mlx5::DataSeg`s, `mlx5::decode_recv_wqe` is the
//!    reader) and publish the count posted in its `dbrec[0]`.
//! 3. Per endpoint `pd.create_qp(..)`, keep `qp.send_ring()` and a clone of
//!    `qp.doorbell()`; connect with `modify(Init)`, `modify(Rtr(..))` (peer's
//!    QPN and address), `modify(Rts(..))`.
//! 4. Post: write the WQE at `index & (wqebb_count - 1)`, store
//!    `mlx5::dbrec_word(new_pi)` into `dbrec[1]` with release ordering, call
//!    `doorbell.ring(ctrl)`. Signalled WQEs (`MLX5_WQE_CTRL_CQ_UPDATE`) get a
//!    CQE whose `wqe_counter` is the WQE's index; errors always get one, and
//!    after an error every later WQE completes with a flush error in order.
//! 5. Progress: `device.progress()` then poll the CQ rings with
//!    `mlx5::cqe_is_sw_owned`. Receive CQEs name the SRQ WQE index.
//! 6. Blocking wait: expose `channel.fd()`; to arm, `channel.clear()`, `arm()`
//!    each CQ, then poll the rings once more (anything found: `UCS_ERR_BUSY`).
//! 7. Failover: `qp.query()` gives `dest_qpn`, `next_rcv_psn`, `sq_psn`;
//!    `modify(QpTransition::Error)` flushes.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::RawFd;

use crate::abi::ucs_status::Status;

pub mod soft;
pub mod verbs;

/// Memory access rights of a registration (the verbs `IBV_ACCESS_*` bits);
/// one type shared with the soft HCA's engine.
pub use self::soft::engine::Access;

/// IB path MTU, with the verbs encoding as discriminant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Mtu {
    Mtu256 = 1,
    Mtu512 = 2,
    Mtu1024 = 3,
    Mtu2048 = 4,
    Mtu4096 = 5,
}

impl Mtu {
    pub const fn bytes(self) -> u32 {
        128 << (self as u32)
    }
    pub const fn from_bytes(bytes: u32) -> Option<Mtu> {
        Some(match bytes {
            256 => Mtu::Mtu256,
            512 => Mtu::Mtu512,
            1024 => Mtu::Mtu1024,
            2048 => Mtu::Mtu2048,
            4096 => Mtu::Mtu4096,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkLayer {
    InfiniBand,
    /// RoCE; the soft HCA is RoCEv2 over UDP.
    Ethernet,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortState {
    Down,
    Active,
}

/// What a peer needs to send to this device's port. Packed into the UCT
/// device address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceAddress {
    /// The soft HCA: the port's UDP socket.
    Udp(SocketAddrV4),
}

impl DeviceAddress {
    /// Bytes [`DeviceAddress::pack`] writes at most.
    pub const MAX_PACKED_LEN: usize = 7;
    const KIND_UDP: u8 = 1;

    /// Writes the address into `out` (kind byte, IPv4, port, big-endian) and
    /// returns the length written; `out` must hold `MAX_PACKED_LEN` bytes.
    pub fn pack(&self, out: &mut [u8]) -> Result<usize, Status> {
        match self {
            DeviceAddress::Udp(addr) => {
                let out = out.get_mut(..7).ok_or(Status::BufferTooSmall)?;
                out[0] = Self::KIND_UDP;
                out[1..5].copy_from_slice(&addr.ip().octets());
                out[5..7].copy_from_slice(&addr.port().to_be_bytes());
                Ok(7)
            }
        }
    }

    /// Reads an address written by [`DeviceAddress::pack`]; anything else
    /// (short, unknown kind, port 0) is `InvalidAddr`.
    pub fn unpack(bytes: &[u8]) -> Result<DeviceAddress, Status> {
        match bytes.first() {
            Some(&Self::KIND_UDP) if bytes.len() >= 7 => {
                let ip = Ipv4Addr::new(bytes[1], bytes[2], bytes[3], bytes[4]);
                let port = u16::from_be_bytes([bytes[5], bytes[6]]);
                if port == 0 {
                    return Err(Status::InvalidAddr);
                }
                Ok(DeviceAddress::Udp(SocketAddrV4::new(ip, port)))
            }
            _ => Err(Status::InvalidAddr),
        }
    }
}

/// Device-wide limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceAttr {
    pub name: String,
    pub port_count: u8,
    /// Largest send ring, in 64-byte WQE basic blocks.
    pub max_qp_wqebb: u32,
    pub max_cqe: u32,
    pub max_srq_wqe: u32,
    /// Data segments per receive WQE.
    pub max_srq_sge: u32,
    /// Outstanding READ/atomic requests per QP, either direction.
    pub max_rd_atomic: u8,
    /// 64-bit and masked atomics are supported.
    pub atomics: bool,
    /// Fetching atomics land in the local buffer big-endian (mlx5 hardware)
    /// rather than in host order (the soft HCA): the transport byte-swaps
    /// results only when this is set. The value at the responder is always
    /// in the responder's host order.
    pub atomic_results_big_endian: bool,
}

/// One port (ports are numbered from 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortAttr {
    pub state: PortState,
    pub max_mtu: Mtu,
    pub active_mtu: Mtu,
    pub link_layer: LinkLayer,
    pub address: DeviceAddress,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpState {
    Reset,
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    Error,
}

/// Attributes of the INIT→RTR transition: who the peer is and what the
/// responder expects first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtrAttr {
    pub dest_qpn: u32,
    pub peer: DeviceAddress,
    /// First PSN the responder expects (24 bits).
    pub rq_psn: u32,
    pub path_mtu: Mtu,
    /// RNR NAK timer code (IB encoding, 0..=31) this responder sends.
    pub min_rnr_timer: u8,
    /// READ/atomic requests this responder accepts in flight.
    pub max_dest_rd_atomic: u8,
}

/// Attributes of the RTR→RTS transition: the requester's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtsAttr {
    /// First PSN the requester sends (24 bits).
    pub sq_psn: u32,
    /// Local ACK timeout, IB encoding: 4.096 µs × 2^timeout (0 = infinite).
    pub timeout: u8,
    /// Retransmissions after a timeout or a sequence NAK (0..=7).
    pub retry_cnt: u8,
    /// Retries after an RNR NAK (0..=7, 7 = infinite).
    pub rnr_retry: u8,
    /// READ/atomic requests this requester keeps in flight.
    pub max_rd_atomic: u8,
}

/// The IB `timeout` exponent whose local ACK timeout (4.096 µs × 2^t) is
/// the shortest one not below `wait` (from `UCX_RC_TIMEOUT`); at least 1,
/// at most 31 (0 would mean "forever").
pub fn ack_timeout_exponent(wait: std::time::Duration) -> u8 {
    (1..=31u8)
        .find(|&t| soft::engine::ack_timeout_from_ib(t).is_some_and(|d| d >= wait))
        .unwrap_or(31)
}

/// The RNR timer code (IBTA table 45) of the shortest wait not below `wait`
/// (from `UCX_RC_RNR_TIMEOUT`); the longest, code 0 (655.36 ms), if none is.
pub fn rnr_timer_code(wait: std::time::Duration) -> u8 {
    (1..=31u8)
        .filter(|&code| soft::engine::rnr_timer_duration(code) >= wait)
        .min_by_key(|&code| soft::engine::rnr_timer_duration(code))
        .unwrap_or(0)
}

/// One `modify QP` call; only the transitions RC uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpTransition {
    /// RESET→INIT, with the remote access rights the QP grants.
    Init {
        access: Access,
    },
    Rtr(RtrAttr),
    Rts(RtsAttr),
    /// Any state → ERR: outstanding and later WQEs complete with flush errors.
    Error,
    /// Any state → RESET: forget everything (rings are reused from index 0).
    Reset,
}

/// What `query QP` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpInfo {
    pub state: QpState,
    /// Next PSN the responder expects (what failover's RX token carries).
    pub next_rcv_psn: u32,
    /// Next PSN the requester will send.
    pub sq_psn: u32,
    pub dest_qpn: u32,
}

/// A completion queue ring: `cqe_count` CQE64 entries (a power of two) at
/// `buf`, written by the device with the owner bit of the pass
/// (`(index / cqe_count) & 1`); every entry starts with the INVALID opcode,
/// so `crate::mlx5::cqe_is_sw_owned` tells new entries from old ones. The CQ
/// does not stop at unread entries (UCX's "overrun ignore"): the transport
/// sizes it so that it cannot overflow. `dbrec[0]` (consumer index) and
/// `dbrec[1]` (arm word) are where hardware expects them; the soft device
/// reads neither: arming is [`Cq::arm`].
#[derive(Clone, Copy, Debug)]
pub struct CqRing {
    pub buf: *mut u8,
    pub cqe_count: u32,
    pub dbrec: *mut u32,
    pub cqn: u32,
}

/// A shared receive queue ring: `wqe_count` WQEs (a power of two) of
/// `stride` bytes at `buf`, each a 16-byte SRQ next-segment followed by
/// `max_sge` data segments (a shorter list ends with lkey
/// `mlx5::MLX5_INVALID_LKEY`). The device takes WQEs as an mlx5 linked-list
/// SRQ does: starting at index 0, then following each taken WQE's
/// `next_wqe_index` (write `index + 1` to use the ring cyclically).
/// `dbrec[0]` is the receive counter the transport publishes
/// (`mlx5::dbrec_word(count of WQEs posted so far)`); a receive CQE's
/// `wqe_counter` is the index of the WQE it consumed.
#[derive(Clone, Copy, Debug)]
pub struct RecvRing {
    pub buf: *mut u8,
    pub wqe_count: u32,
    pub stride: u32,
    pub max_sge: u32,
    pub dbrec: *mut u32,
    pub srqn: u32,
}

/// A send queue ring: `wqebb_count` 64-byte basic blocks (a power of two) at
/// `buf`. `dbrec[1]` is the send counter the transport publishes
/// (`mlx5::dbrec_word(next_index)`, one atomic 32-bit store with release
/// ordering) before it rings the [`Doorbell`]; the device consumes every WQE
/// up to that counter.
#[derive(Clone, Copy, Debug)]
pub struct SendRing {
    pub buf: *mut u8,
    pub wqebb_count: u32,
    pub dbrec: *mut u32,
    pub qpn: u32,
}

/// Keys of a memory registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MrKeys {
    pub lkey: u32,
    pub rkey: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqInitAttr {
    /// Receive WQEs (rounded up to a power of two).
    pub wqe_count: u32,
    /// Data segments per receive WQE.
    pub max_sge: u32,
}

pub struct QpInitAttr<'a> {
    pub send_cq: &'a Cq,
    pub recv_cq: &'a Cq,
    /// RC QPs here always receive through an SRQ.
    pub srq: &'a Srq,
    /// Send ring size in 64-byte basic blocks (rounded up to a power of two).
    pub sq_wqebb_count: u32,
}

/// An open device. Cloning shares it.
#[derive(Clone)]
pub enum Device {
    Soft(soft::SoftDevice),
}

impl Device {
    /// Names of the devices this process can open.
    pub fn list() -> Vec<String> {
        soft::SoftDevice::names()
    }

    /// Opens a device by name (e.g. `mlx5_0`); a device already open in this
    /// process is shared.
    pub fn open(name: &str) -> Result<Device, Status> {
        soft::SoftDevice::open(name).map(Device::Soft)
    }

    pub fn name(&self) -> &str {
        match self {
            Device::Soft(dev) => dev.name(),
        }
    }

    pub fn attr(&self) -> DeviceAttr {
        match self {
            Device::Soft(dev) => dev.attr(),
        }
    }

    pub fn port_attr(&self, port: u8) -> Result<PortAttr, Status> {
        match self {
            Device::Soft(dev) => dev.port_attr(port),
        }
    }

    pub fn alloc_pd(&self) -> Result<Pd, Status> {
        match self {
            Device::Soft(dev) => Ok(Pd::Soft(dev.alloc_pd())),
        }
    }

    /// An event channel: one file descriptor that becomes readable when an
    /// armed CQ attached to it gets a completion.
    pub fn create_event_channel(&self) -> Result<EventChannel, Status> {
        match self {
            Device::Soft(dev) => dev.create_event_channel().map(EventChannel::Soft),
        }
    }

    pub fn create_cq(&self, cqe_count: u32, channel: Option<&EventChannel>) -> Result<Cq, Status> {
        match (self, channel) {
            (Device::Soft(dev), None) => dev.create_cq(cqe_count, None).map(Cq::Soft),
            (Device::Soft(dev), Some(EventChannel::Soft(ch))) => {
                dev.create_cq(cqe_count, Some(ch)).map(Cq::Soft)
            }
        }
    }

    /// Lets the device do pending work in the caller's thread (the soft HCA
    /// reads its socket and runs its timers); a no-op on real hardware. Call
    /// it from the iface's progress, before polling the CQs.
    #[inline]
    pub fn progress(&self) {
        match self {
            Device::Soft(dev) => dev.progress(),
        }
    }
}

/// A protection domain.
pub enum Pd {
    Soft(soft::SoftPd),
}

impl Pd {
    /// Registers `len` bytes at `addr` (both non-zero). The memory must stay
    /// valid until the returned [`Mr`] is dropped.
    pub fn reg_mr(&self, addr: *mut u8, len: usize, access: Access) -> Result<Mr, Status> {
        match self {
            Pd::Soft(pd) => pd.reg_mr(addr, len, access).map(Mr::Soft),
        }
    }

    pub fn create_srq(&self, attr: SrqInitAttr) -> Result<Srq, Status> {
        match self {
            Pd::Soft(pd) => pd.create_srq(attr).map(Srq::Soft),
        }
    }

    pub fn create_qp(&self, attr: &QpInitAttr<'_>) -> Result<Qp, Status> {
        match (self, attr.send_cq, attr.recv_cq, attr.srq) {
            (Pd::Soft(pd), Cq::Soft(send_cq), Cq::Soft(recv_cq), Srq::Soft(srq)) => pd
                .create_qp(send_cq, recv_cq, srq, attr.sq_wqebb_count)
                .map(Qp::Soft),
        }
    }
}

/// A memory registration; dropping it deregisters.
pub enum Mr {
    Soft(soft::SoftMr),
}

impl Mr {
    pub fn keys(&self) -> MrKeys {
        match self {
            Mr::Soft(mr) => mr.keys(),
        }
    }
}

pub enum EventChannel {
    Soft(soft::SoftEventChannel),
}

impl EventChannel {
    /// The descriptor to poll for readability.
    pub fn fd(&self) -> RawFd {
        match self {
            EventChannel::Soft(ch) => ch.fd(),
        }
    }

    /// Consumes pending events so the descriptor stops being readable.
    pub fn clear(&self) {
        match self {
            EventChannel::Soft(ch) => ch.clear(),
        }
    }
}

pub enum Cq {
    Soft(soft::SoftCq),
}

impl Cq {
    pub fn ring(&self) -> CqRing {
        match self {
            Cq::Soft(cq) => cq.ring(),
        }
    }

    /// Requests one event on the CQ's channel for the next CQE written after
    /// this call. The caller checks the ring after arming, so a CQE that
    /// raced with the arm is not missed.
    pub fn arm(&self) {
        match self {
            Cq::Soft(cq) => cq.arm(),
        }
    }
}

pub enum Srq {
    Soft(soft::SoftSrq),
}

impl Srq {
    pub fn ring(&self) -> RecvRing {
        match self {
            Srq::Soft(srq) => srq.ring(),
        }
    }
}

pub enum Qp {
    Soft(soft::SoftQp),
}

impl Qp {
    pub fn qpn(&self) -> u32 {
        self.send_ring().qpn
    }

    pub fn send_ring(&self) -> SendRing {
        match self {
            Qp::Soft(qp) => qp.send_ring(),
        }
    }

    /// The doorbell of this QP's send ring; clone it into the endpoint.
    pub fn doorbell(&self) -> Doorbell {
        match self {
            Qp::Soft(qp) => Doorbell::Soft(qp.doorbell()),
        }
    }

    pub fn modify(&self, transition: QpTransition) -> Result<(), Status> {
        match self {
            Qp::Soft(qp) => qp.modify(transition),
        }
    }

    pub fn query(&self) -> Result<QpInfo, Status> {
        match self {
            Qp::Soft(qp) => qp.query(),
        }
    }
}

/// Tells the device new WQEs are in a send ring.
#[derive(Clone)]
pub enum Doorbell {
    Soft(soft::SoftDoorbell),
}

impl Doorbell {
    /// Call after writing WQEs and storing the new producer index in
    /// `dbrec[1]` (with a release fence). `last_wqe` points at the control
    /// segment of the last WQE written: hardware takes its first 8 bytes (or
    /// the whole WQE, BlueFlame) through the doorbell register.
    #[inline]
    pub fn ring(&self, last_wqe: *const u8) {
        match self {
            Doorbell::Soft(db) => db.ring(last_wqe),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_can_move_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Device>();
        send_sync::<Pd>();
        send_sync::<Mr>();
        send_sync::<Cq>();
        send_sync::<Srq>();
        send_sync::<Qp>();
        send_sync::<Doorbell>();
        send_sync::<EventChannel>();
    }

    #[test]
    fn device_address_round_trips_and_rejects_garbage() {
        let addr = DeviceAddress::Udp(SocketAddrV4::new(Ipv4Addr::new(10, 1, 2, 3), 0xbeef));
        let mut packed = [0u8; DeviceAddress::MAX_PACKED_LEN];
        assert_eq!(addr.pack(&mut packed), Ok(7));
        assert_eq!(packed, [1, 10, 1, 2, 3, 0xbe, 0xef]);
        assert_eq!(DeviceAddress::unpack(&packed), Ok(addr));
        assert_eq!(addr.pack(&mut [0u8; 6]), Err(Status::BufferTooSmall));
        assert_eq!(
            DeviceAddress::unpack(&packed[..6]),
            Err(Status::InvalidAddr)
        );
        assert_eq!(
            DeviceAddress::unpack(&[2, 10, 1, 2, 3, 0xbe, 0xef]),
            Err(Status::InvalidAddr)
        );
        assert_eq!(
            DeviceAddress::unpack(&[1, 10, 1, 2, 3, 0, 0]),
            Err(Status::InvalidAddr)
        );
        assert_eq!(DeviceAddress::unpack(&[]), Err(Status::InvalidAddr));
    }

    #[test]
    fn timeouts_from_durations() {
        use std::time::Duration;
        // UCX's default UCX_RC_TIMEOUT is 1 s: 4.096 µs × 2^18 ≈ 1.07 s.
        assert_eq!(ack_timeout_exponent(Duration::from_secs(1)), 18);
        assert_eq!(ack_timeout_exponent(Duration::from_nanos(1)), 1);
        assert_eq!(ack_timeout_exponent(Duration::from_secs(100_000)), 31);
        // 10 µs is code 1; for 1 ms code 13 (0.96 ms) is short, 14 is 1.28 ms.
        assert_eq!(rnr_timer_code(Duration::from_micros(10)), 1);
        assert_eq!(rnr_timer_code(Duration::from_millis(1)), 14);
        assert_eq!(rnr_timer_code(Duration::from_secs(1)), 0);
    }

    #[test]
    fn mtu_encoding() {
        assert_eq!(Mtu::Mtu1024.bytes(), 1024);
        assert_eq!(Mtu::from_bytes(4096), Some(Mtu::Mtu4096));
        assert_eq!(Mtu::from_bytes(1000), None);
        assert_eq!(Mtu::Mtu256 as u8, 1);
    }
}
