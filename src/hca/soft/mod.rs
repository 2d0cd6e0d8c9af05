//! The software HCA behind the backend interface: the device is a crate of
//! its own (`crates/softhca`: engine, wire, link, device); this module
//! adapts its objects to what [`crate::hca`]'s handles expect of a backend
//! (the interface's attribute types, [`Status`] for a refusal), as
//! `hca::verbs` adapts rdma-core. Nothing here does the device's work.
//!
//! `engine`, `wire` and `engine_fuzzing` are re-exported under the names
//! the tests use; [`Settings`] is what [`crate::hca::devices`] reads once
//! from `UCX_SOFT_HCA_*` and hands in.

use std::net::Ipv4Addr;
use std::os::fd::RawFd;

pub use softhca::device::limits::{
    MAX_CQE, MAX_QP_WQEBB, MAX_RD_ATOMIC, MAX_SRQ_SGE, MAX_SRQ_WQE, PORT,
};
use softhca::device::{self as soft, Transition};
pub use softhca::device::{DeviceSpec, Settings, Wire};
pub use softhca::device::{Faults, LinkStats, ReceiveMark};
/// The sans-IO part, under the names the tests use.
pub use softhca::{engine, engine_fuzzing, wire};

use crate::abi::ucs_status::Status;
use crate::hca::attrs::{
    DeviceAddress, DeviceAttr, LinkLayer, MrKeys, Mtu, PortAttr, PortState, QpInfo, QpState,
    QpTransition, SrqInitAttr,
};
use crate::mlx5::{AtomicResultOrder, CqRing, RecvRing, SendRing};
use softhca::engine::Access;

impl From<soft::Error> for Status {
    fn from(error: soft::Error) -> Status {
        match error {
            soft::Error::InvalidParam => Status::InvalidParam,
            soft::Error::NoDevice => Status::NoDevice,
            soft::Error::Busy => Status::Busy,
            soft::Error::NoElem => Status::NoElem,
            soft::Error::NoMemory => Status::NoMemory,
            soft::Error::NoResource => Status::NoResource,
            soft::Error::IoError => Status::IoError,
        }
    }
}

/// Drops the next `count` datagrams device `name` sends: now if it is
/// open, else from when it opens.
pub fn drop_next(name: &str, count: u64, settings: &Settings) -> Result<(), Status> {
    Ok(soft::drop_next(name, count, settings)?)
}

/// Changes the faults of `name`: applied now if it is open, and kept for
/// later opens.
pub fn set_faults(
    name: &str,
    settings: &Settings,
    change: impl FnOnce(&mut Faults),
) -> Result<(), Status> {
    Ok(soft::set_faults(name, settings, change)?)
}

/// An open soft device (shared: clones and other opens of the same name are
/// the same device).
#[derive(Clone, Debug)]
pub struct SoftDevice(soft::Device);

impl SoftDevice {
    pub fn names(settings: &Settings) -> Vec<String> {
        soft::Device::names(settings)
    }

    /// [`soft::Device::receive_mark_all`]: the receive completions of every
    /// soft device of this process, for the connection manager.
    pub fn receive_mark_all() -> ReceiveMark {
        soft::Device::receive_mark_all()
    }

    /// Opens a configured device (one of `settings.devices`).
    pub fn open(name: &str, settings: &Settings) -> Result<SoftDevice, Status> {
        Ok(SoftDevice(soft::Device::open(name, settings)?))
    }

    /// Opens `name` on `ipv4`, adding it to this process's devices if it is
    /// not configured (tests: two devices on two loopback addresses).
    pub fn open_at(name: &str, ipv4: Ipv4Addr, settings: &Settings) -> Result<SoftDevice, Status> {
        Ok(SoftDevice(soft::Device::open_at(name, ipv4, settings)?))
    }

    pub fn name(&self) -> &str {
        self.0.name()
    }

    pub fn attr(&self) -> DeviceAttr {
        DeviceAttr {
            name: self.name().to_string(),
            port_count: 1,
            max_qp_wqebb: MAX_QP_WQEBB,
            max_cqe: MAX_CQE,
            max_srq_wqe: MAX_SRQ_WQE,
            max_srq_sge: MAX_SRQ_SGE,
            max_rd_atomic: MAX_RD_ATOMIC,
            atomics: true,
            atomic_result_order: self.0.atomic_result_order(),
        }
    }

    /// Sets, per width, whether fetching atomics store their results
    /// big-endian (default: host order for both). Only the test stand-in for
    /// libibverbs/libmlx5 (`c-tests/verbs/standin`) sets this, so that the
    /// verbs backend sees the hardware's byte order.
    pub fn set_atomic_result_order(&self, order: AtomicResultOrder) {
        self.0.set_atomic_result_order(order);
    }

    /// The port: RoCEv2 over UDP, always at the largest path MTU.
    pub fn port_attr(&self, port: u8) -> Result<PortAttr, Status> {
        let state = if self.0.port_up(port)? {
            PortState::Active
        } else {
            PortState::Down
        };
        Ok(PortAttr {
            state,
            max_mtu: Mtu::Mtu4096,
            active_mtu: Mtu::Mtu4096,
            link_layer: LinkLayer::Ethernet,
            address: self.address(),
        })
    }

    pub fn address(&self) -> DeviceAddress {
        DeviceAddress::Udp(self.0.address())
    }

    /// The port's one GID (its UDP endpoint as a link-local address, see
    /// `softhca::wire::Gid`): what a UD peer's address handle names.
    pub fn gid(&self) -> [u8; 16] {
        self.0.gid().0
    }

    /// Makes this device's QPs (existing and future) deliver SEND receives
    /// of at most 32 bytes inside the receive CQE (see
    /// `softhca::device::Device::set_scatter_to_cqe`). Only the test
    /// stand-in for libibverbs/libmlx5 and tests of that path set this.
    pub fn set_scatter_to_cqe(&self, on: bool) {
        self.0.set_scatter_to_cqe(on);
    }

    pub fn alloc_pd(&self) -> SoftPd {
        SoftPd(self.0.alloc_pd())
    }

    pub fn create_event_channel(&self) -> Result<SoftEventChannel, Status> {
        Ok(SoftEventChannel(self.0.create_event_channel()?))
    }

    pub fn create_cq(
        &self,
        cqe_count: u32,
        channel: Option<&SoftEventChannel>,
    ) -> Result<SoftCq, Status> {
        Ok(SoftCq(self.0.create_cq(cqe_count, channel.map(|c| &c.0))?))
    }

    /// A CQ of `cqe_size`-byte entries: 64, or 128 as mlx5 makes on
    /// request.
    pub fn create_cq_sized(
        &self,
        cqe_count: u32,
        cqe_size: usize,
        channel: Option<&SoftEventChannel>,
    ) -> Result<SoftCq, Status> {
        let cq = self
            .0
            .create_cq_sized(cqe_count, cqe_size, channel.map(|c| &c.0))?;
        Ok(SoftCq(cq))
    }

    /// Drives the device from the caller's thread.
    #[inline]
    pub fn progress(&self) {
        self.0.progress();
    }

    /// The drop ratio currently applied to the port.
    pub fn loss(&self) -> f64 {
        self.0.loss()
    }

    /// What the port did with datagrams so far.
    pub fn link_stats(&self) -> LinkStats {
        self.0.link_stats()
    }

    /// Test fault: the next push into a same-host peer's ring stops in the
    /// middle of its copy for good (a producer to kill mid-copy).
    pub fn freeze_next_ring_push(&self) {
        self.0.freeze_next_ring_push();
    }

    /// Whether a push froze ([`SoftDevice::freeze_next_ring_push`]).
    pub fn ring_push_frozen(&self) -> bool {
        self.0.ring_push_frozen()
    }
}

/// A protection domain.
#[derive(Debug)]
pub struct SoftPd(soft::Pd);

impl SoftPd {
    pub fn reg_mr(&self, addr: *mut u8, len: usize, access: Access) -> Result<SoftMr, Status> {
        Ok(SoftMr(self.0.reg_mr(addr, len, access)?))
    }

    pub fn create_srq(&self, attr: SrqInitAttr) -> Result<SoftSrq, Status> {
        Ok(SoftSrq(self.0.create_srq(attr.wqe_count, attr.max_sge)?))
    }

    pub fn create_qp(
        &self,
        send_cq: &SoftCq,
        recv_cq: &SoftCq,
        srq: &SoftSrq,
        sq_wqebb_count: u32,
    ) -> Result<SoftQp, Status> {
        let qp = self
            .0
            .create_qp(&send_cq.0, &recv_cq.0, &srq.0, sq_wqebb_count)?;
        Ok(SoftQp(qp))
    }

    /// An unreliable-datagram QP: [`SoftQp::modify_ud`] takes it to RTS;
    /// its send WQEs carry a datagram segment ([`SoftAh::datagram`]), its
    /// receives (from `srq`) get the 40-byte GRH ahead of the data.
    pub fn create_ud_qp(
        &self,
        send_cq: &SoftCq,
        recv_cq: &SoftCq,
        srq: &SoftSrq,
        sq_wqebb_count: u32,
    ) -> Result<SoftQp, Status> {
        let qp = self
            .0
            .create_ud_qp(&send_cq.0, &recv_cq.0, &srq.0, sq_wqebb_count)?;
        Ok(SoftQp(qp))
    }

    /// A UD QP with a receive queue of its own (`rq_wqe_count` WQEs of
    /// `rq_max_sge` data segments; [`SoftQp::recv_ring`]), as mlx5 QPs
    /// without an SRQ have.
    pub fn create_ud_qp_with_rq(
        &self,
        send_cq: &SoftCq,
        recv_cq: &SoftCq,
        rq_wqe_count: u32,
        rq_max_sge: u32,
        sq_wqebb_count: u32,
    ) -> Result<SoftQp, Status> {
        let qp = self.0.create_ud_qp_with_rq(
            &send_cq.0,
            &recv_cq.0,
            rq_wqe_count,
            rq_max_sge,
            sq_wqebb_count,
        )?;
        Ok(SoftQp(qp))
    }

    /// An address handle for the soft HCA port whose GID is `gid`
    /// (`ibv_create_ah`); any other GID is `UCS_ERR_INVALID_PARAM`.
    pub fn create_ah(&self, gid: [u8; 16]) -> Result<SoftAh, Status> {
        Ok(SoftAh(self.0.create_ah(wire::Gid(gid))?))
    }
}

/// An address handle: where UD sends go.
#[derive(Clone, Copy, Debug)]
pub struct SoftAh(soft::Ah);

impl SoftAh {
    /// The datagram segment of a UD send WQE to QP `qpn` holding `qkey` at
    /// this address.
    pub fn datagram(&self, qpn: u32, qkey: u32) -> crate::mlx5::DatagramSeg {
        self.0.datagram(qpn, qkey)
    }
}

/// The transitions of a UD QP (`ibv_modify_qp` on an `IBV_QPT_UD` QP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdTransition {
    /// RESET→INIT with the Q_Key datagrams to this QP must carry.
    Init {
        qkey: u32,
    },
    /// INIT→RTR.
    Rtr,
    /// RTR→RTS, the first datagram's PSN.
    Rts {
        sq_psn: u32,
    },
    Error,
    Reset,
}

/// A memory registration; its one key is both lkey and rkey.
#[derive(Debug)]
pub struct SoftMr(soft::Mr);

impl SoftMr {
    pub fn keys(&self) -> MrKeys {
        MrKeys {
            lkey: self.0.key(),
            rkey: self.0.key(),
        }
    }
}

/// A file descriptor that becomes readable when an armed CQ completes.
#[derive(Clone, Debug)]
pub struct SoftEventChannel(soft::EventChannel);

impl SoftEventChannel {
    pub fn fd(&self) -> RawFd {
        self.0.fd()
    }

    pub fn clear(&self) {
        self.0.clear();
    }
}

/// A completion queue.
pub struct SoftCq(soft::Cq);

impl SoftCq {
    pub fn ring(&self) -> CqRing {
        self.0.ring()
    }

    /// Bytes per entry (64 or 128); [`CqRing::buf`] is the first entry.
    pub fn cqe_size(&self) -> usize {
        self.0.cqe_size()
    }

    pub fn arm(&self) {
        self.0.arm();
    }
}

/// A shared receive queue.
pub struct SoftSrq(soft::Srq);

impl SoftSrq {
    pub fn ring(&self) -> RecvRing {
        self.0.ring()
    }
}

/// A queue pair.
pub struct SoftQp(soft::Qp);

impl SoftQp {
    pub fn send_ring(&self) -> SendRing {
        self.0.send_ring()
    }

    pub fn doorbell(&self) -> SoftDoorbell {
        SoftDoorbell(self.0.doorbell())
    }

    /// Passes `transition` to the device in its terms: the peer must be a
    /// soft HCA's UDP port.
    pub fn modify(&self, transition: QpTransition) -> Result<(), Status> {
        let transition = match transition {
            QpTransition::Init { .. } => Transition::Init,
            QpTransition::Rtr(attr) => {
                let DeviceAddress::Udp(peer) = attr.peer else {
                    tracing::warn!(
                        "soft hca: QP {:#x}: peer {:?} is not a soft HCA",
                        self.0.send_ring().qpn,
                        attr.peer
                    );
                    return Err(Status::InvalidAddr);
                };
                let Some(path_mtu) = engine::PathMtu::from_bytes(attr.path_mtu.bytes()) else {
                    return Err(Status::InvalidParam);
                };
                Transition::Rtr {
                    peer,
                    attrs: engine::RtrAttrs {
                        dest_qpn: attr.dest_qpn,
                        rq_psn: attr.rq_psn,
                        path_mtu,
                        min_rnr_timer: attr.min_rnr_timer,
                        max_dest_rd_atomic: attr.max_dest_rd_atomic,
                    },
                }
            }
            QpTransition::Rts(attr) => Transition::Rts {
                sq_psn: attr.sq_psn,
                timeout: attr.timeout,
                retry_cnt: attr.retry_cnt,
                rnr_retry: attr.rnr_retry,
                max_rd_atomic: attr.max_rd_atomic,
            },
            QpTransition::Error => Transition::Error,
            QpTransition::Reset => Transition::Reset,
        };
        Ok(self.0.modify(transition)?)
    }

    /// Passes a UD QP's `transition` to the device; an RC QP refuses it.
    pub fn modify_ud(&self, transition: UdTransition) -> Result<(), Status> {
        let transition = match transition {
            UdTransition::Init { qkey } => Transition::UdInit { qkey },
            UdTransition::Rtr => Transition::UdRtr,
            UdTransition::Rts { sq_psn } => Transition::UdRts { sq_psn },
            UdTransition::Error => Transition::Error,
            UdTransition::Reset => Transition::Reset,
        };
        Ok(self.0.modify(transition)?)
    }

    /// The QP's own receive queue, if it has one (else it receives from
    /// its SRQ).
    pub fn recv_ring(&self) -> Option<RecvRing> {
        self.0.recv_ring()
    }

    /// The Q_Key of a UD QP (0 for RC).
    pub fn qkey(&self) -> Result<u32, Status> {
        Ok(self.0.query()?.qkey)
    }

    /// Turns scatter-to-CQE on or off for this QP alone (what libmlx5's
    /// `MLX5DV_QP_CREATE_ALLOW_/DISABLE_SCATTER_TO_CQE` ask for); see
    /// [`SoftDevice::set_scatter_to_cqe`].
    pub fn set_scatter_to_cqe(&self, on: bool) {
        self.0.set_scatter_to_cqe(on);
    }

    pub fn query(&self) -> Result<QpInfo, Status> {
        let status = self.0.query()?;
        let state = match status.state {
            engine::QpState::Reset => QpState::Reset,
            engine::QpState::Init => QpState::Init,
            engine::QpState::Rtr => QpState::Rtr,
            // SQD is never entered through this interface; report it as the
            // sending state it drains from.
            engine::QpState::Rts | engine::QpState::Sqd => QpState::Rts,
            engine::QpState::Error => QpState::Error,
        };
        Ok(QpInfo {
            state,
            next_rcv_psn: status.next_rcv_psn,
            sq_psn: status.sq_psn,
            dest_qpn: status.dest_qpn,
        })
    }
}

/// The doorbell of one QP's send ring.
#[derive(Clone)]
pub struct SoftDoorbell(soft::Doorbell);

impl SoftDoorbell {
    /// Tells the device that WQEs up to the producer index in the doorbell
    /// record are ready (see `softhca::device::Doorbell::ring`).
    #[inline]
    pub fn ring(&self, last_wqe: *const u8) {
        self.0.ring(last_wqe);
    }
}
