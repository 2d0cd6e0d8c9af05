//! The handles the backend interface hands out for the soft device. Each
//! holds the device open; dropping one destroys its object.

use std::net::Ipv4Addr;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::device::{Core, Opened};
use super::limits::{MAX_CQE, MAX_QP_WQEBB, MAX_RD_ATOMIC, MAX_SRQ_SGE, MAX_SRQ_WQE, PORT};
use super::link::LinkStats;
use super::link::Tx;
use super::memory::Region;
use super::os::{DmaBuffer, EventFd};
use super::qp::{QpBell, QpContext};
use super::queues::{ring_entries, CqShared, SrqShared};
use super::registry;
use super::settings::Settings;
use crate::abi::ucs_status::Status;
use crate::hca::{
    AtomicResultOrder, CqRing, DeviceAddress, DeviceAttr, LinkLayer, MrKeys, Mtu, PortAttr,
    PortState, QpInfo, QpTransition, RecvRing, SendRing, SrqInitAttr,
};
use crate::mlx5;

/// An open soft device (shared: clones and other opens of the same name are
/// the same device).
#[derive(Clone, Debug)]
pub struct SoftDevice(pub(crate) Arc<Opened>);

impl SoftDevice {
    pub fn names(settings: &Settings) -> Vec<String> {
        registry::names(settings)
    }

    /// Opens a configured device (one of `settings.devices`).
    pub fn open(name: &str, settings: &Settings) -> Result<SoftDevice, Status> {
        registry::open(name, None, settings).map(SoftDevice)
    }

    /// Opens `name` on `ipv4`, adding it to this process's devices if it is
    /// not configured (tests: two devices on two loopback addresses).
    pub fn open_at(name: &str, ipv4: Ipv4Addr, settings: &Settings) -> Result<SoftDevice, Status> {
        registry::open(name, Some(ipv4), settings).map(SoftDevice)
    }

    fn core(&self) -> &Arc<Core> {
        &self.0.core
    }

    /// [`Core::receive_mark`](super::device::Core::receive_mark) of this
    /// device.
    pub fn receive_mark(&self) -> super::device::ReceiveMark {
        self.core().receive_mark()
    }

    /// The same of every soft device open in this process.
    pub fn receive_mark_all() -> super::device::ReceiveMark {
        registry::receive_mark_all()
    }

    pub fn name(&self) -> &str {
        &self.0.core.name
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
            atomic_result_order: self.core().lock().mrs.atomic_result_order,
        }
    }

    /// Sets, per width, whether fetching atomics store their results
    /// big-endian (default: host order for both). Only the test stand-in for
    /// libibverbs/libmlx5 (`c-tests/verbs/standin`) sets this, so that the
    /// verbs backend sees the hardware's byte order.
    pub fn set_atomic_result_order(&self, order: AtomicResultOrder) {
        self.core().lock().mrs.atomic_result_order = order;
    }

    pub fn port_attr(&self, port: u8) -> Result<PortAttr, Status> {
        if port != PORT {
            tracing::warn!("soft hca {}: no port {port}", self.name());
            return Err(Status::NoDevice);
        }
        let state = if self.core().link.is_up() {
            PortState::Active
        } else {
            PortState::Down
        };
        Ok(PortAttr {
            state,
            max_mtu: Mtu::Mtu4096,
            active_mtu: Mtu::Mtu4096,
            link_layer: LinkLayer::Ethernet,
            address: DeviceAddress::Udp(self.0.local_addr()),
        })
    }

    pub fn address(&self) -> DeviceAddress {
        DeviceAddress::Udp(self.0.local_addr())
    }

    /// Makes this device's QPs (existing and future) deliver SEND receives
    /// of at most 32 bytes inside the receive CQE, flagged
    /// `MLX5_INLINE_SCATTER_32`, leaving the receive buffer stale, as mlx5
    /// does under libmlx5's default scatter-to-CQE (default: off). Only the
    /// test stand-in for libibverbs/libmlx5 (`c-tests/verbs/standin`) and
    /// tests of that path set this.
    pub fn set_scatter_to_cqe(&self, on: bool) {
        let core = self.core();
        let mut state = core.lock();
        state.scatter_to_cqe = on;
        for qp in state.qps.values_mut() {
            qp.set_scatter_to_cqe(on);
        }
    }

    pub fn alloc_pd(&self) -> SoftPd {
        SoftPd {
            device: self.clone(),
            pdn: self.core().alloc_pd(),
        }
    }

    pub fn create_event_channel(&self) -> Result<SoftEventChannel, Status> {
        let fd = EventFd::new().map_err(|err| {
            tracing::warn!("soft hca {}: eventfd: {err}", self.name());
            Status::IoError
        })?;
        Ok(SoftEventChannel(Arc::new(fd)))
    }

    pub fn create_cq(
        &self,
        cqe_count: u32,
        channel: Option<&SoftEventChannel>,
    ) -> Result<SoftCq, Status> {
        self.create_cq_sized(cqe_count, mlx5::CQE_LEN, channel)
    }

    /// A CQ of `cqe_size`-byte entries: 64, or 128 as mlx5 makes on
    /// request (each CQE64 in the last 64 bytes of its entry; receives of
    /// 33..=64 bytes scattered into the first 64 under scatter-to-CQE).
    pub fn create_cq_sized(
        &self,
        cqe_count: u32,
        cqe_size: usize,
        channel: Option<&SoftEventChannel>,
    ) -> Result<SoftCq, Status> {
        let cqe_count = ring_entries(cqe_count, MAX_CQE)?;
        let cqn = self.core().alloc_cqn();
        let shared = CqShared::new(
            cqn,
            cqe_count,
            cqe_size,
            channel.map(|ch| Arc::clone(&ch.0)),
        )?;
        Ok(SoftCq {
            device: self.clone(),
            shared: Arc::new(shared),
        })
    }

    /// Drives the device from the caller's thread.
    #[inline]
    pub fn progress(&self) {
        self.core().progress();
    }

    /// The drop ratio currently applied to the port.
    pub fn loss(&self) -> f64 {
        self.core().link.loss()
    }

    /// What the port did with datagrams so far.
    pub fn link_stats(&self) -> LinkStats {
        self.core().link.counters.snapshot()
    }
}

/// A protection domain.
#[derive(Debug)]
pub struct SoftPd {
    device: SoftDevice,
    pdn: u32,
}

impl SoftPd {
    pub fn reg_mr(
        &self,
        addr: *mut u8,
        len: usize,
        access: crate::hca::Access,
    ) -> Result<SoftMr, Status> {
        if addr.is_null() || len == 0 || (addr as usize).checked_add(len).is_none() {
            tracing::warn!("soft hca {}: bad region {addr:p}+{len}", self.device.name());
            return Err(Status::InvalidParam);
        }
        if let Err(err) = super::os::populate(addr as usize, len, access.lets_device_write()) {
            tracing::debug!(
                "soft hca {}: pages of {addr:p}+{len} not populated: {err}",
                self.device.name()
            );
        }
        let region = Region {
            addr: addr as usize,
            len,
            access,
            pd: self.pdn,
        };
        let key = self.device.core().lock().mrs.insert(region);
        Ok(SoftMr {
            device: self.device.clone(),
            key,
        })
    }

    pub fn create_srq(&self, attr: SrqInitAttr) -> Result<SoftSrq, Status> {
        let wqe_count = ring_entries(attr.wqe_count, MAX_SRQ_WQE)?;
        if attr.max_sge == 0 || attr.max_sge > MAX_SRQ_SGE {
            tracing::warn!(
                "soft hca {}: SRQ with {} data segments",
                self.device.name(),
                attr.max_sge
            );
            return Err(Status::InvalidParam);
        }
        let srqn = self.device.core().alloc_srqn();
        let shared = SrqShared::new(srqn, self.pdn, wqe_count, attr.max_sge)?;
        Ok(SoftSrq {
            device: self.device.clone(),
            shared: Arc::new(shared),
        })
    }

    pub fn create_qp(
        &self,
        send_cq: &SoftCq,
        recv_cq: &SoftCq,
        srq: &SoftSrq,
        sq_wqebb_count: u32,
    ) -> Result<SoftQp, Status> {
        let wqebb_count = ring_entries(sq_wqebb_count, MAX_QP_WQEBB)?;
        let same_device = |other: &SoftDevice| Arc::ptr_eq(&other.0, &self.device.0);
        if !same_device(&send_cq.device)
            || !same_device(&recv_cq.device)
            || !same_device(&srq.device)
        {
            tracing::warn!(
                "soft hca {}: CQ or SRQ of another device",
                self.device.name()
            );
            return Err(Status::InvalidParam);
        }
        if srq.shared.pd != self.pdn {
            tracing::warn!(
                "soft hca {}: SRQ of another protection domain",
                self.device.name()
            );
            return Err(Status::InvalidParam);
        }
        let ring = Arc::new(DmaBuffer::new(wqebb_count as usize * mlx5::SEND_WQE_BB)?);
        let dbrec = Arc::new(DmaBuffer::new(64)?);
        let core = self.device.core();
        let mut state = core.lock();
        let qpn = Core::alloc_qpn(&mut state);
        let bell = Arc::new(QpBell::default());
        let mut context = QpContext::new(
            qpn,
            Arc::clone(&bell),
            self.pdn,
            Arc::clone(&ring),
            Arc::clone(&dbrec),
            wqebb_count,
            Arc::clone(&send_cq.shared),
            Arc::clone(&recv_cq.shared),
            Arc::clone(&srq.shared),
        );
        context.set_scatter_to_cqe(state.scatter_to_cqe);
        state.qps.insert(qpn, context);
        drop(state);
        Ok(SoftQp {
            device: self.device.clone(),
            qpn,
            bell,
            ring,
            dbrec,
            wqebb_count,
        })
    }
}

/// A memory registration.
#[derive(Debug)]
pub struct SoftMr {
    device: SoftDevice,
    key: u32,
}

impl SoftMr {
    pub fn keys(&self) -> MrKeys {
        MrKeys {
            lkey: self.key,
            rkey: self.key,
        }
    }
}

impl Drop for SoftMr {
    fn drop(&mut self) {
        self.device.core().lock().mrs.remove(self.key);
    }
}

/// A file descriptor that becomes readable when an armed CQ completes.
#[derive(Clone, Debug)]
pub struct SoftEventChannel(Arc<EventFd>);

impl SoftEventChannel {
    pub fn fd(&self) -> RawFd {
        self.0.fd()
    }

    pub fn clear(&self) {
        self.0.drain();
    }
}

/// A completion queue.
pub struct SoftCq {
    device: SoftDevice,
    shared: Arc<CqShared>,
}

impl SoftCq {
    pub fn ring(&self) -> CqRing {
        self.shared.ring()
    }

    /// Bytes per entry (64 or 128); [`CqRing::buf`] is the first entry.
    pub fn cqe_size(&self) -> usize {
        self.shared.cqe_size()
    }

    pub fn arm(&self) {
        self.shared.arm();
        self.device.core().caller_sleeps();
    }
}

/// A shared receive queue.
pub struct SoftSrq {
    device: SoftDevice,
    shared: Arc<SrqShared>,
}

impl SoftSrq {
    pub fn ring(&self) -> RecvRing {
        self.shared.ring()
    }
}

/// A queue pair.
pub struct SoftQp {
    device: SoftDevice,
    qpn: u32,
    bell: Arc<QpBell>,
    ring: Arc<DmaBuffer>,
    dbrec: Arc<DmaBuffer>,
    wqebb_count: u32,
}

impl SoftQp {
    pub fn send_ring(&self) -> SendRing {
        SendRing {
            buf: self.ring.ptr(),
            wqebb_count: self.wqebb_count,
            dbrec: self.dbrec.ptr().cast(),
            qpn: self.qpn,
        }
    }

    pub fn doorbell(&self) -> SoftDoorbell {
        SoftDoorbell {
            device: self.device.clone(),
            qpn: self.qpn,
            bell: Arc::clone(&self.bell),
        }
    }

    pub fn modify(&self, transition: QpTransition) -> Result<(), Status> {
        let core = self.device.core();
        let mut state = core.lock();
        let super::device::State { qps, mrs, tx, .. } = &mut *state;
        let qp = qps.get_mut(&self.qpn).ok_or(Status::NoElem)?;
        let mut out = Tx {
            link: &core.link,
            batch: tx,
        };
        let result = qp.modify(transition, core.now(), &mut out, mrs);
        let deadline = qp.next_timeout();
        if !tx.is_empty() {
            core.link.flush(tx);
        }
        drop(state);
        core.timer_changed(deadline);
        result
    }

    /// Turns scatter-to-CQE on or off for this QP alone (what libmlx5's
    /// `MLX5DV_QP_CREATE_ALLOW_/DISABLE_SCATTER_TO_CQE` ask for); see
    /// [`SoftDevice::set_scatter_to_cqe`].
    pub fn set_scatter_to_cqe(&self, on: bool) {
        if let Some(qp) = self.device.core().lock().qps.get_mut(&self.qpn) {
            qp.set_scatter_to_cqe(on);
        }
    }

    pub fn query(&self) -> Result<QpInfo, Status> {
        let core = self.device.core();
        let state = core.lock();
        state
            .qps
            .get(&self.qpn)
            .map(QpContext::query)
            .ok_or(Status::NoElem)
    }
}

impl Drop for SoftQp {
    fn drop(&mut self) {
        self.device.core().lock().qps.remove(&self.qpn);
    }
}

/// The doorbell of one QP's send ring.
#[derive(Clone)]
pub struct SoftDoorbell {
    device: SoftDevice,
    qpn: u32,
    bell: Arc<QpBell>,
}

impl SoftDoorbell {
    /// Tells the device that WQEs up to the producer index in the doorbell
    /// record are ready, as the doorbell register of a NIC does: the device
    /// takes them beside the caller (at its next progress call, or in the
    /// service thread), so a post costs what the transport's WQE costs.
    /// Posts between two device passes cost one atomic swap each and are
    /// taken as one batch.
    #[inline]
    pub fn ring(&self, _last_wqe: *const u8) {
        // Already rung and not yet taken: the device has not read the
        // doorbell record since, so it will see this producer index too
        // (it clears the flag before reading the record).
        if self.bell.rung.swap(true, Ordering::AcqRel) {
            return;
        }
        self.device.core().doorbell_rung(self.qpn);
    }
}
