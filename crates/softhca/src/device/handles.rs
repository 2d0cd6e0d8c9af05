//! The soft device's objects as its users hold them: the device, protection
//! domains, memory registrations, event channels, CQs, SRQs, QPs and their
//! doorbells. Each holds the device open; dropping one destroys its object.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::limits::{MAX_CQE, MAX_QP_WQEBB, MAX_SRQ_SGE, MAX_SRQ_WQE, PORT};
use super::memory::Region;
use super::opened::{Core, Opened};
use super::os::{DmaBuffer, EventFd};
use super::qp::{QpBell, QpContext, QpEngine};
use super::qp::{QpStatus, Transition};
use super::queues::{ring_entries, CqShared, SrqShared};
use super::registry;
use super::settings::Settings;
use super::Error;
use crate::engine::Access;
use crate::link::LinkStats;
use crate::link::Tx;
use crate::wire::{Gid, DEFAULT_HOP_LIMIT};
use mlx5::{AtomicResultOrder, CqRing, DatagramSeg, RecvRing, SendRing};

/// An open soft device (shared: clones and other opens of the same name are
/// the same device).
#[derive(Clone, Debug)]
pub struct Device(pub(crate) Arc<Opened>);

impl Device {
    pub fn names(settings: &Settings) -> Vec<String> {
        registry::names(settings)
    }

    /// Opens a configured device (one of `settings.devices`).
    pub fn open(name: &str, settings: &Settings) -> Result<Device, Error> {
        registry::open(name, None, settings).map(Device)
    }

    /// Opens `name` on `ipv4`, adding it to this process's devices if it is
    /// not configured (tests: two devices on two loopback addresses).
    pub fn open_at(name: &str, ipv4: Ipv4Addr, settings: &Settings) -> Result<Device, Error> {
        registry::open(name, Some(ipv4), settings).map(Device)
    }

    fn core(&self) -> &Arc<Core> {
        &self.0.core
    }

    /// [`Core::receive_mark`](super::opened::Core::receive_mark) of this
    /// device.
    pub fn receive_mark(&self) -> super::opened::ReceiveMark {
        self.core().receive_mark()
    }

    /// The same of every soft device open in this process.
    pub fn receive_mark_all() -> super::opened::ReceiveMark {
        registry::receive_mark_all()
    }

    pub fn name(&self) -> &str {
        &self.0.core.name
    }

    /// The byte order of fetched atomic results (see
    /// [`Device::set_atomic_result_order`]).
    pub fn atomic_result_order(&self) -> AtomicResultOrder {
        self.core().lock().mrs.atomic_result_order
    }

    /// Sets, per width, whether fetching atomics store their results
    /// big-endian (default: host order for both). Only the test stand-in for
    /// libibverbs/libmlx5 (`c-tests/verbs/standin`) sets this, so that the
    /// verbs backend sees the hardware's byte order.
    pub fn set_atomic_result_order(&self, order: AtomicResultOrder) {
        self.core().lock().mrs.atomic_result_order = order;
    }

    /// Port `port` (the only one is [`PORT`]): whether its link is up.
    pub fn port_up(&self, port: u8) -> Result<bool, Error> {
        if port != PORT {
            tracing::warn!("soft hca {}: no port {port}", self.name());
            return Err(Error::NoDevice);
        }
        Ok(self.core().link.is_up())
    }

    /// The UDP endpoint of the port: what a peer needs to reach it.
    pub fn address(&self) -> SocketAddrV4 {
        self.0.local_addr()
    }

    /// The port's one GID: its UDP endpoint ([`Gid::from_endpoint`]).
    pub fn gid(&self) -> Gid {
        Gid::from_endpoint(self.address())
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

    pub fn alloc_pd(&self) -> Pd {
        Pd {
            device: self.clone(),
            pdn: self.core().alloc_pd(),
        }
    }

    pub fn create_event_channel(&self) -> Result<EventChannel, Error> {
        let fd = EventFd::new().map_err(|err| {
            tracing::warn!("soft hca {}: eventfd: {err}", self.name());
            Error::IoError
        })?;
        Ok(EventChannel(Arc::new(fd)))
    }

    pub fn create_cq(&self, cqe_count: u32, channel: Option<&EventChannel>) -> Result<Cq, Error> {
        self.create_cq_sized(cqe_count, mlx5::CQE_LEN, channel)
    }

    /// A CQ of `cqe_size`-byte entries: 64, or 128 as mlx5 makes on
    /// request (each CQE64 in the last 64 bytes of its entry; receives of
    /// 33..=64 bytes scattered into the first 64 under scatter-to-CQE).
    pub fn create_cq_sized(
        &self,
        cqe_count: u32,
        cqe_size: usize,
        channel: Option<&EventChannel>,
    ) -> Result<Cq, Error> {
        let cqe_count = ring_entries(cqe_count, MAX_CQE)?;
        let cqn = self.core().alloc_cqn();
        let shared = CqShared::new(
            cqn,
            cqe_count,
            cqe_size,
            channel.map(|ch| Arc::clone(&ch.0)),
        )?;
        Ok(Cq {
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

    /// A fault for tests: the device's next push into a same-host peer's
    /// ring stops in the middle of its copy, the pushing thread never to
    /// run again (see `Link::freeze_next_ring_push`); for a test that then
    /// kills this process.
    pub fn freeze_next_ring_push(&self) {
        self.core().link.freeze_next_ring_push();
    }

    /// Whether a push froze ([`Device::freeze_next_ring_push`]).
    pub fn ring_push_frozen(&self) -> bool {
        self.core().link.ring_push_frozen()
    }
}

/// A protection domain.
#[derive(Debug)]
pub struct Pd {
    device: Device,
    pdn: u32,
}

impl Pd {
    pub fn reg_mr(&self, addr: *mut u8, len: usize, access: Access) -> Result<Mr, Error> {
        if addr.is_null() || len == 0 || (addr as usize).checked_add(len).is_none() {
            tracing::warn!("soft hca {}: bad region {addr:p}+{len}", self.device.name());
            return Err(Error::InvalidParam);
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
        Ok(Mr {
            device: self.device.clone(),
            key,
        })
    }

    /// A shared receive queue of `wqe_count` WQEs (rounded up to a power
    /// of two) with `max_sge` data segments each.
    pub fn create_srq(&self, wqe_count: u32, max_sge: u32) -> Result<Srq, Error> {
        let wqe_count = ring_entries(wqe_count, MAX_SRQ_WQE)?;
        if max_sge == 0 || max_sge > MAX_SRQ_SGE {
            tracing::warn!(
                "soft hca {}: SRQ with {max_sge} data segments",
                self.device.name(),
            );
            return Err(Error::InvalidParam);
        }
        let srqn = self.device.core().alloc_srqn();
        let shared = SrqShared::new(srqn, self.pdn, wqe_count, max_sge)?;
        Ok(Srq {
            device: self.device.clone(),
            shared: Arc::new(shared),
        })
    }

    /// A reliable-connected QP whose receives come from `srq`.
    pub fn create_qp(
        &self,
        send_cq: &Cq,
        recv_cq: &Cq,
        srq: &Srq,
        sq_wqebb_count: u32,
    ) -> Result<Qp, Error> {
        self.create_qp_of(
            QpEngine::rc,
            send_cq,
            recv_cq,
            Receives::Shared(srq),
            sq_wqebb_count,
        )
    }

    /// An unreliable-datagram QP whose receives come from `srq`: its send
    /// WQEs carry a datagram segment (from an [`Ah`]), its receives get
    /// the GRH ahead of the data.
    pub fn create_ud_qp(
        &self,
        send_cq: &Cq,
        recv_cq: &Cq,
        srq: &Srq,
        sq_wqebb_count: u32,
    ) -> Result<Qp, Error> {
        let gid = self.device.gid();
        let engine = move |qpn| QpEngine::ud(qpn, gid);
        let receives = Receives::Shared(srq);
        self.create_qp_of(engine, send_cq, recv_cq, receives, sq_wqebb_count)
    }

    /// An unreliable-datagram QP with a receive queue of its own:
    /// `rq_wqe_count` WQEs (rounded up to a power of two) of `rq_max_sge`
    /// data segments, no next segment, used in ring order; the transport
    /// publishes its receive counter in word 0 of the QP's doorbell record
    /// ([`Qp::recv_ring`]), as mlx5 QPs without an SRQ have it.
    pub fn create_ud_qp_with_rq(
        &self,
        send_cq: &Cq,
        recv_cq: &Cq,
        rq_wqe_count: u32,
        rq_max_sge: u32,
        sq_wqebb_count: u32,
    ) -> Result<Qp, Error> {
        let wqe_count = ring_entries(rq_wqe_count, MAX_SRQ_WQE)?;
        if rq_max_sge == 0 || rq_max_sge > MAX_SRQ_SGE {
            tracing::warn!(
                "soft hca {}: receive queue with {rq_max_sge} data segments",
                self.device.name(),
            );
            return Err(Error::InvalidParam);
        }
        let gid = self.device.gid();
        let engine = move |qpn| QpEngine::ud(qpn, gid);
        let receives = Receives::Own {
            wqe_count,
            max_sge: rq_max_sge,
        };
        self.create_qp_of(engine, send_cq, recv_cq, receives, sq_wqebb_count)
    }

    /// An address handle for the port whose GID is `gid`, which must name
    /// a soft HCA port.
    pub fn create_ah(&self, gid: Gid) -> Result<Ah, Error> {
        if gid.endpoint().is_none() {
            tracing::warn!(
                "soft hca {}: address handle for GID {:02x?}, not a soft HCA port",
                self.device.name(),
                gid.0
            );
            return Err(Error::InvalidParam);
        }
        Ok(Ah { gid })
    }

    fn create_qp_of(
        &self,
        engine: impl FnOnce(u32) -> QpEngine,
        send_cq: &Cq,
        recv_cq: &Cq,
        receives: Receives<'_>,
        sq_wqebb_count: u32,
    ) -> Result<Qp, Error> {
        let wqebb_count = ring_entries(sq_wqebb_count, MAX_QP_WQEBB)?;
        let same_device = |other: &Device| Arc::ptr_eq(&other.0, &self.device.0);
        let srq_device_ok = match receives {
            Receives::Shared(srq) => same_device(&srq.device),
            Receives::Own { .. } => true,
        };
        if !same_device(&send_cq.device) || !same_device(&recv_cq.device) || !srq_device_ok {
            tracing::warn!(
                "soft hca {}: CQ or SRQ of another device",
                self.device.name()
            );
            return Err(Error::InvalidParam);
        }
        let ring = Arc::new(DmaBuffer::new(wqebb_count as usize * mlx5::SEND_WQE_BB)?);
        let dbrec = Arc::new(DmaBuffer::new(64)?);
        let (recv_queue, own_rq) = match receives {
            Receives::Shared(srq) => {
                if srq.shared.pd != self.pdn {
                    tracing::warn!(
                        "soft hca {}: SRQ of another protection domain",
                        self.device.name()
                    );
                    return Err(Error::InvalidParam);
                }
                (Arc::clone(&srq.shared), None)
            }
            Receives::Own { wqe_count, max_sge } => {
                let rq = Arc::new(SrqShared::new_rq(
                    self.pdn,
                    wqe_count,
                    max_sge,
                    Arc::clone(&dbrec),
                )?);
                (Arc::clone(&rq), Some(rq))
            }
        };
        let core = self.device.core();
        let mut state = core.lock();
        let qpn = Core::alloc_qpn(&mut state);
        let bell = Arc::new(QpBell::default());
        let mut context = QpContext::new(
            engine(qpn),
            Arc::clone(&bell),
            self.pdn,
            Arc::clone(&ring),
            Arc::clone(&dbrec),
            wqebb_count,
            Arc::clone(&send_cq.shared),
            Arc::clone(&recv_cq.shared),
            recv_queue,
        );
        context.set_scatter_to_cqe(state.scatter_to_cqe);
        state.qps.insert(qpn, context);
        drop(state);
        Ok(Qp {
            device: self.device.clone(),
            qpn,
            bell,
            ring,
            dbrec,
            wqebb_count,
            own_rq,
        })
    }
}

/// Where a QP's receives come from.
#[derive(Clone, Copy)]
enum Receives<'a> {
    Shared(&'a Srq),
    /// A receive queue of its own.
    Own {
        wqe_count: u32,
        max_sge: u32,
    },
}

/// An address handle: where UD sends go, as the datagram segment of a
/// send WQE says it (`ibv_create_ah` and the AV libmlx5 gives for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ah {
    gid: Gid,
}

impl Ah {
    pub fn gid(&self) -> Gid {
        self.gid
    }

    /// The datagram segment of a send to QP `qpn` holding `qkey` at this
    /// address: the full address vector with a GRH (RoCE always has one).
    pub fn datagram(&self, qpn: u32, qkey: u32) -> DatagramSeg {
        DatagramSeg {
            qkey,
            dqp_dct: mlx5::MLX5_EXTENDED_UD_AV | (qpn & 0x00ff_ffff),
            hop_limit: DEFAULT_HOP_LIMIT,
            grh_gid_fl: mlx5::MLX5_AV_GRH,
            rgid: self.gid.0,
            ..DatagramSeg::default()
        }
    }
}

/// A memory registration.
#[derive(Debug)]
pub struct Mr {
    device: Device,
    key: u32,
}

impl Mr {
    /// The registration's key, both its lkey and its rkey.
    pub fn key(&self) -> u32 {
        self.key
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        self.device.core().deregister(self.key);
    }
}

/// A file descriptor that becomes readable when an armed CQ completes.
#[derive(Clone, Debug)]
pub struct EventChannel(Arc<EventFd>);

impl EventChannel {
    pub fn fd(&self) -> RawFd {
        self.0.fd()
    }

    pub fn clear(&self) {
        self.0.drain();
    }
}

/// A completion queue.
pub struct Cq {
    device: Device,
    shared: Arc<CqShared>,
}

impl Cq {
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
pub struct Srq {
    device: Device,
    shared: Arc<SrqShared>,
}

impl Srq {
    pub fn ring(&self) -> RecvRing {
        self.shared.ring()
    }
}

/// A queue pair.
pub struct Qp {
    device: Device,
    qpn: u32,
    bell: Arc<QpBell>,
    ring: Arc<DmaBuffer>,
    dbrec: Arc<DmaBuffer>,
    wqebb_count: u32,
    /// Its own receive queue, if it has one.
    own_rq: Option<Arc<SrqShared>>,
}

impl Qp {
    /// The QP's own receive queue (`None` for a QP on an SRQ): its WQEs
    /// hold only data segments; its `dbrec` is the QP's doorbell record,
    /// whose word 0 is the receive counter.
    pub fn recv_ring(&self) -> Option<RecvRing> {
        self.own_rq.as_ref().map(|rq| rq.ring())
    }

    pub fn send_ring(&self) -> SendRing {
        SendRing {
            buf: self.ring.ptr(),
            wqebb_count: self.wqebb_count,
            dbrec: self.dbrec.ptr().cast(),
            qpn: self.qpn,
        }
    }

    pub fn doorbell(&self) -> Doorbell {
        Doorbell {
            device: self.device.clone(),
            qpn: self.qpn,
            bell: Arc::clone(&self.bell),
        }
    }

    pub fn modify(&self, transition: Transition) -> Result<(), Error> {
        let core = self.device.core();
        let mut state = core.lock();
        let super::opened::State { qps, mrs, tx, .. } = &mut *state;
        let qp = qps.get_mut(&self.qpn).ok_or(Error::NoElem)?;
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
    /// [`Device::set_scatter_to_cqe`].
    pub fn set_scatter_to_cqe(&self, on: bool) {
        if let Some(qp) = self.device.core().lock().qps.get_mut(&self.qpn) {
            qp.set_scatter_to_cqe(on);
        }
    }

    pub fn query(&self) -> Result<QpStatus, Error> {
        let core = self.device.core();
        let state = core.lock();
        state
            .qps
            .get(&self.qpn)
            .map(QpContext::query)
            .ok_or(Error::NoElem)
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        self.device.core().lock().qps.remove(&self.qpn);
    }
}

/// The doorbell of one QP's send ring.
#[derive(Clone)]
pub struct Doorbell {
    device: Device,
    qpn: u32,
    bell: Arc<QpBell>,
}

impl Doorbell {
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
