//! The backend handles ([`Device`], [`Pd`], [`Mr`], [`EventChannel`],
//! [`Cq`], [`Srq`], [`Qp`], [`Doorbell`]): each wraps the soft HCA's object
//! or rdma-core's, and forwards to it.

use std::os::fd::RawFd;

use super::attrs::{DeviceAttr, MrKeys, PortAttr, QpInfo, QpTransition, SrqInitAttr};
use super::{devices, soft, verbs};
use crate::abi::ucs_status::Status;
use crate::mlx5::{CqRing, RecvRing, SendRing};
use softhca::engine::Access;

/// Runs `$call` on the backend object inside `$handle` (bound to `$inner`)
/// and wraps its `Result` into the same backend's variant of `$out`: the
/// constructors whose two arms are the same code.
macro_rules! on_either_backend {
    ($handle:expr, $enum:ident, $inner:ident => $call:expr, into $out:ident) => {
        match $handle {
            $enum::Soft($inner) => $call.map($out::Soft),
            $enum::Verbs($inner) => $call.map($out::Verbs),
        }
    };
}

/// Declares a handle over the two backends (`Soft` wraps the soft HCA's
/// object, `Verbs` rdma-core's) and the methods that only forward to the
/// backend's method of the same name and arguments.
macro_rules! backend_handle {
    (
        $(#[$meta:meta])*
        pub enum $name:ident($soft:ty, $verbs:ty);
        $(
            $(#[$fn_meta:meta])*
            pub fn $method:ident(&self $(, $arg:ident: $arg_ty:ty)*) $(-> $ret:ty)?;
        )*
    ) => {
        $(#[$meta])*
        pub enum $name {
            Soft($soft),
            Verbs($verbs),
        }

        impl $name {
            $(
                $(#[$fn_meta])*
                pub fn $method(&self $(, $arg: $arg_ty)*) $(-> $ret)? {
                    match self {
                        $name::Soft(inner) => inner.$method($($arg),*),
                        $name::Verbs(inner) => inner.$method($($arg),*),
                    }
                }
            )*
        }
    };
}

pub struct QpInitAttr<'a> {
    pub send_cq: &'a Cq,
    pub recv_cq: &'a Cq,
    /// RC QPs here always receive through an SRQ.
    pub srq: &'a Srq,
    /// Send ring size in 64-byte basic blocks (rounded up to a power of two).
    pub sq_wqebb_count: u32,
}

backend_handle! {
    /// An open device. Cloning shares it.
    #[derive(Clone)]
    pub enum Device(soft::SoftDevice, verbs::VerbsDevice);
    pub fn name(&self) -> &str;
    pub fn attr(&self) -> DeviceAttr;
    pub fn port_attr(&self, port: u8) -> Result<PortAttr, Status>;
}

/// A handle of one backend was combined with one of the other (e.g. a
/// soft CQ given to a verbs QP): a caller bug, refused with a log line.
#[cold]
fn mixed_backends(what: &str) -> Status {
    tracing::error!("hca: {what}: objects of the soft HCA and of rdma-core mixed");
    Status::InvalidParam
}

impl Device {
    /// The receive completions the soft devices of this process have
    /// written by now (all of them: a peer's lanes may run on any device
    /// of the process, not only on this one), with those of everything that
    /// has reached them (a NIC writes them as packets arrive; the soft device
    /// when a thread next drives it, so this drives it once). `None`: the
    /// device has nothing to wait for (a real NIC's are in the CQ already
    /// and not tracked here).
    pub fn receive_mark(&self) -> Option<soft::ReceiveMark> {
        match self {
            Device::Soft(_) => Some(soft::SoftDevice::receive_mark_all()),
            Device::Verbs(_) => None,
        }
    }

    /// Names of the devices this process can open (see
    /// [`devices`]: real mlx5 devices and/or soft ones, per
    /// `UCX_SOFT_HCA`).
    pub fn list() -> Vec<String> {
        devices::hca_devices()
            .iter()
            .map(|d| d.name.clone())
            .collect()
    }

    /// Opens a device by its listed name (e.g. `mlx5_0`, or `soft_mlx5_0`
    /// for a soft device renamed next to a real one) with the backend that
    /// listed it; a device already open in this process is shared. A name
    /// that is not listed is `NoDevice`.
    pub fn open(name: &str) -> Result<Device, Status> {
        use devices::{find_device, Backend};
        match find_device(name).map(|d| &d.backend) {
            Some(Backend::Verbs { .. }) => verbs::VerbsDevice::open(name).map(Device::Verbs),
            Some(Backend::Soft { soft_name, .. }) => {
                devices::open_soft(soft_name).map(Device::Soft)
            }
            None => {
                tracing::warn!("hca: no device named '{name}' (see UCX_SOFT_HCA)");
                Err(Status::NoDevice)
            }
        }
    }

    pub fn alloc_pd(&self) -> Result<Pd, Status> {
        match self {
            Device::Soft(dev) => Ok(Pd::Soft(dev.alloc_pd())),
            Device::Verbs(dev) => dev.alloc_pd().map(Pd::Verbs),
        }
    }

    /// An event channel: one file descriptor that becomes readable when an
    /// armed CQ attached to it gets a completion.
    pub fn create_event_channel(&self) -> Result<EventChannel, Status> {
        on_either_backend!(self, Device, dev => dev.create_event_channel(), into EventChannel)
    }

    pub fn create_cq(&self, cqe_count: u32, channel: Option<&EventChannel>) -> Result<Cq, Status> {
        match (self, channel) {
            (Device::Soft(dev), None) => dev.create_cq(cqe_count, None).map(Cq::Soft),
            (Device::Soft(dev), Some(EventChannel::Soft(ch))) => {
                dev.create_cq(cqe_count, Some(ch)).map(Cq::Soft)
            }
            (Device::Verbs(dev), None) => dev.create_cq(cqe_count, None).map(Cq::Verbs),
            (Device::Verbs(dev), Some(EventChannel::Verbs(ch))) => {
                dev.create_cq(cqe_count, Some(ch)).map(Cq::Verbs)
            }
            (Device::Soft(_), Some(EventChannel::Verbs(_)))
            | (Device::Verbs(_), Some(EventChannel::Soft(_))) => Err(mixed_backends("create_cq")),
        }
    }

    /// Lets the device do pending work in the caller's thread (the soft HCA
    /// reads its socket and runs its timers); a no-op on real hardware. Call
    /// it from the iface's progress, before polling the CQs.
    #[inline]
    pub fn progress(&self) {
        match self {
            Device::Soft(dev) => dev.progress(),
            Device::Verbs(_) => {}
        }
    }
}

backend_handle! {
    /// A protection domain.
    pub enum Pd(soft::SoftPd, verbs::VerbsPd);
}

impl Pd {
    /// Registers `len` bytes at `addr` (both non-zero). The memory must stay
    /// valid until the returned [`Mr`] is dropped.
    pub fn reg_mr(&self, addr: *mut u8, len: usize, access: Access) -> Result<Mr, Status> {
        on_either_backend!(self, Pd, pd => pd.reg_mr(addr, len, access), into Mr)
    }

    pub fn create_srq(&self, attr: SrqInitAttr) -> Result<Srq, Status> {
        on_either_backend!(self, Pd, pd => pd.create_srq(attr), into Srq)
    }

    pub fn create_qp(&self, attr: &QpInitAttr<'_>) -> Result<Qp, Status> {
        match (self, attr.send_cq, attr.recv_cq, attr.srq) {
            (Pd::Soft(pd), Cq::Soft(send_cq), Cq::Soft(recv_cq), Srq::Soft(srq)) => pd
                .create_qp(send_cq, recv_cq, srq, attr.sq_wqebb_count)
                .map(Qp::Soft),
            (Pd::Verbs(pd), Cq::Verbs(send_cq), Cq::Verbs(recv_cq), Srq::Verbs(srq)) => pd
                .create_qp(send_cq, recv_cq, srq, attr.sq_wqebb_count)
                .map(|qp| Qp::Verbs(Box::new(qp))),
            _ => Err(mixed_backends("create_qp")),
        }
    }
}

backend_handle! {
    /// A memory registration; dropping it deregisters.
    pub enum Mr(soft::SoftMr, verbs::VerbsMr);
    pub fn keys(&self) -> MrKeys;
}

backend_handle! {
    pub enum EventChannel(soft::SoftEventChannel, verbs::VerbsChannel);
    /// The descriptor to poll for readability.
    pub fn fd(&self) -> RawFd;
    /// Consumes pending events so the descriptor stops being readable;
    /// on rdma-core each consumed event advances its CQ's arm sequence
    /// number, so call this before [`Cq::arm`].
    pub fn clear(&self);
}

backend_handle! {
    pub enum Cq(soft::SoftCq, verbs::VerbsCq);
    pub fn ring(&self) -> CqRing;
}

impl Cq {
    /// Requests one event on the CQ's channel for the next CQE.
    /// `consumer_index` is the transport's own (free-running) consumer
    /// index of this ring: on rdma-core the device fires at once if it has
    /// already written a CQE at or past it; `solicited_only` asks for an
    /// event only on a solicited completion (or an error). The soft HCA
    /// ignores both: it fires for the next CQE written after this call, of
    /// any kind (a superset: at worst a spurious wake-up). Either way the
    /// caller checks the ring after arming, so a CQE that raced with the
    /// arm is not missed.
    pub fn arm(&self, consumer_index: u32, solicited_only: bool) {
        match self {
            Cq::Soft(cq) => cq.arm(),
            Cq::Verbs(cq) => cq.arm(consumer_index, solicited_only),
        }
    }
}

backend_handle! {
    pub enum Srq(soft::SoftSrq, verbs::VerbsSrq);
    pub fn ring(&self) -> RecvRing;
}

backend_handle! {
    /// A queue pair. The verbs QP is boxed: it carries its rings and path,
    /// the soft one is a pointer; `Qp` stays small in the endpoint.
    pub enum Qp(soft::SoftQp, Box<verbs::VerbsQp>);
    pub fn send_ring(&self) -> SendRing;
    pub fn modify(&self, transition: QpTransition) -> Result<(), Status>;
    pub fn query(&self) -> Result<QpInfo, Status>;
}

impl Qp {
    pub fn qpn(&self) -> u32 {
        self.send_ring().qpn
    }

    /// The doorbell of this QP's send ring; clone it into the endpoint.
    pub fn doorbell(&self) -> Doorbell {
        match self {
            Qp::Soft(qp) => Doorbell::Soft(qp.doorbell()),
            Qp::Verbs(qp) => Doorbell::Verbs(qp.doorbell()),
        }
    }
}

backend_handle! {
    /// Tells the device new WQEs are in a send ring.
    #[derive(Clone)]
    pub enum Doorbell(soft::SoftDoorbell, verbs::VerbsDoorbell);
    /// Call after writing WQEs and storing the new producer index in
    /// `dbrec[1]` (an atomic store with release ordering). `last_wqe`
    /// points at the control segment of the last WQE written: hardware
    /// takes its first 8 bytes through the doorbell (BlueFlame) register.
    #[inline]
    pub fn ring(&self, last_wqe: *const u8);
}
