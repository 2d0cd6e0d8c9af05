//! rdma-core objects behind the `Verbs` variants of the `hca` handles: an
//! open device, PD, MR, completion channel, CQ, SRQ, RC QP and doorbell,
//! each owning its verbs object ([`Owned`]) and exposing the mlx5 rings
//! (`mlx5dv_init_obj`) in the `hca` ring types.
//!
//! Ownership follows verbs' rules: a QP keeps its CQs and SRQ alive, a CQ
//! its channel, everything its PD and device context (`Arc`s), so no drop
//! order makes rdma-core refuse a destroy (EBUSY) or the device write into
//! freed memory.
//!
//! Never run on a ConnectX NIC: the success paths run only against the
//! test stand-in library (issue 6).

use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use super::cq_arm;
use super::discovery::{self, VerbsPort};
use super::ffi::{self, Live, Verbs};
use super::owned::{Destroy, DeviceList, Owned};
use crate::abi::ucs_status::Status;
use crate::hca::attrs::{
    DeviceAddress, DeviceAttr, LinkLayer, MrKeys, Mtu, PortAttr, PortState, QpInfo, QpState,
    QpTransition, RtrAttr, RtsAttr, SrqInitAttr,
};
use crate::mlx5::{AtomicResultOrder, CqRing, RecvRing, SendRing};
use softhca::engine::Access;

/// An open device context, shared by everything made from it; closed when
/// the last of them is dropped.
struct Context {
    raw: Owned<ffi::ibv_context>,
    verbs: &'static Verbs,
    name: String,
}

impl Context {
    fn live(&self) -> &Live<ffi::ibv_context> {
        self.raw.live()
    }
}

/// `Ok` when a libibverbs call that returns an error number (and may not
/// set errno: `ibv_modify_qp`, `ibv_query_qp`) returned 0; otherwise logs
/// `call` with that error and gives `IoError`.
fn returned_ok(rc: std::ffi::c_int, call: std::fmt::Arguments<'_>) -> Result<(), Status> {
    if rc == 0 {
        return Ok(());
    }
    let error = std::io::Error::from_raw_os_error(rc.abs());
    tracing::error!("verbs: {call} failed: {error}");
    Err(Status::IoError)
}

fn os_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// A real mlx5 device, open.
#[derive(Clone)]
pub struct VerbsDevice {
    context: Arc<Context>,
    /// Shared (it is large) so that `hca::Device` stays small.
    attr: Arc<ffi::ibv_device_attr>,
    /// The usable ports and their addresses, probed at open (the GID choice
    /// must stay what peers were told).
    ports: Arc<Vec<VerbsPort>>,
}

impl VerbsDevice {
    /// Opens the mlx5 device `name`: `NoDevice` when rdma-core is missing or
    /// has no such mlx5 device with a usable port (one log line says which).
    pub fn open(name: &str) -> Result<VerbsDevice, Status> {
        let verbs = Verbs::get().map_err(|e| {
            tracing::warn!("verbs: cannot open {name}: {e}");
            e.status()
        })?;
        let context = Arc::new(Context {
            raw: open_context(verbs, name)?,
            verbs,
            name: name.to_string(),
        });
        let (attr, ports) = discovery::probe_ports(
            verbs,
            context.live(),
            name,
            &discovery::sysfs_root(),
            discovery::configured_gid_index(),
        )
        .ok_or_else(|| {
            tracing::warn!("verbs: cannot query device {name}");
            Status::IoError
        })?;
        if ports.is_empty() {
            tracing::warn!("verbs: {name} has no usable port (down, or no GID/LID)");
            return Err(Status::NoDevice);
        }
        let mut dv = ffi::mlx5dv_context::default();
        if (verbs.mlx5.query_device)(context.live(), &mut dv) != 0 {
            tracing::warn!("verbs: mlx5dv_query_device({name}) failed: {}", os_error());
            return Err(Status::Unsupported);
        }
        tracing::debug!(
            "verbs: opened {name} (mlx5dv version {}, flags {:#x}, {} usable port(s))",
            dv.version,
            dv.flags,
            ports.len()
        );
        if !atomics_usable(attr.atomic_cap) {
            tracing::debug!(
                "verbs: {name}: no atomics: atomic_cap {} is not IBV_ATOMIC_HCA \
                 (8-byte atomics not in host-endian mode, result byte order unknown)",
                attr.atomic_cap
            );
        }
        Ok(VerbsDevice {
            context,
            attr: Arc::new(attr),
            ports: Arc::new(ports),
        })
    }

    pub fn name(&self) -> &str {
        &self.context.name
    }

    /// The device limits in the backend-neutral form.
    pub fn attr(&self) -> DeviceAttr {
        device_attr(&self.context.name, &self.attr)
    }

    fn port(&self, number: u8) -> Result<&VerbsPort, Status> {
        self.ports
            .iter()
            .find(|p| p.number == number)
            .ok_or_else(|| {
                tracing::warn!("verbs: {} has no usable port {number}", self.name());
                Status::NoDevice
            })
    }

    /// The port as discovered, with its current state.
    pub fn port_attr(&self, number: u8) -> Result<PortAttr, Status> {
        let port = self.port(number)?;
        let mut live = ffi::ibv_port_attr::default();
        // A zeroed full-size struct: see ffi's doc.
        let state =
            if (self.context.verbs.ibv.query_port)(self.context.live(), number, &mut live) != 0 {
                tracing::warn!(
                    "verbs: ibv_query_port({}:{number}) failed: {}",
                    self.name(),
                    os_error()
                );
                PortState::Down
            } else if live.state == ffi::IBV_PORT_ACTIVE {
                PortState::Active
            } else {
                PortState::Down
            };
        let active_mtu = u8::try_from(live.active_mtu)
            .ok()
            .and_then(discovery::mtu_from_ibv)
            .unwrap_or(port.active_mtu);
        Ok(PortAttr {
            state,
            max_mtu: port.max_mtu,
            active_mtu,
            link_layer: port.link_layer,
            address: port.address,
        })
    }

    pub fn alloc_pd(&self) -> Result<VerbsPd, Status> {
        let verbs = self.context.verbs;
        let Some(created) = (verbs.ibv.alloc_pd)(self.context.live()) else {
            tracing::error!(
                "verbs: ibv_alloc_pd({}) failed: {}",
                self.name(),
                os_error()
            );
            return Err(Status::NoMemory);
        };
        let raw = Owned::new(verbs, created, self.name());
        let port = self.ports.first().cloned().ok_or(Status::NoDevice)?;
        Ok(VerbsPd {
            inner: Arc::new(PdInner {
                raw,
                context: self.context.clone(),
                port,
            }),
        })
    }

    /// A completion channel whose fd is non-blocking (so that `clear` can
    /// drain it), exposed by the transport for blocking waits.
    pub fn create_event_channel(&self) -> Result<VerbsChannel, Status> {
        let verbs = self.context.verbs;
        let Some(created) = (verbs.ibv.create_comp_channel)(self.context.live()) else {
            tracing::error!("verbs: ibv_create_comp_channel failed: {}", os_error());
            return Err(Status::IoError);
        };
        let fd = created.head().fd;
        let channel = VerbsChannel(Arc::new(ChannelInner {
            raw: Owned::new(verbs, created, format!("fd {fd}")),
            fd,
            context: self.context.clone(),
        }));
        // SAFETY: fcntl on the channel's own descriptor (open while the
        // channel lives), reading and setting its status flags only.
        let nonblocking = unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) >= 0
        };
        if !nonblocking {
            tracing::error!(
                "verbs: cannot make completion channel fd {fd} non-blocking: {}",
                os_error()
            );
            return Err(Status::IoError);
        }
        Ok(channel)
    }

    /// A CQ of at least `cqe_count` entries, reporting to `channel` if
    /// given, with its mlx5 ring.
    pub fn create_cq(
        &self,
        cqe_count: u32,
        channel: Option<&VerbsChannel>,
    ) -> Result<VerbsCq, Status> {
        let verbs = self.context.verbs;
        let cqe = c_int::try_from(cqe_count).map_err(|_| Status::InvalidParam)?;
        // The CQ's context is its event counter: `VerbsChannel::clear` gets
        // it back with each event.
        let events_seen = Box::new(AtomicU32::new(0));
        let cq_context = std::ptr::from_ref::<AtomicU32>(&events_seen).cast_mut();
        // SAFETY: live context and channel (if any) of this context, which
        // the CQ holds; `cq_context` is the CQ's event counter, alive until
        // after the CQ is destroyed (CqInner owns both), which is what
        // `VerbsChannel::clear` relies on for every CQ of a channel.
        let created = unsafe {
            (verbs.ibv.create_cq)(
                self.context.live(),
                cqe,
                cq_context.cast(),
                channel.map(|c| c.0.raw.live()),
                0,
            )
        };
        let Some(created) = created else {
            tracing::error!("verbs: ibv_create_cq({cqe}) failed: {}", os_error());
            return Err(Status::NoMemory);
        };
        // Owned from here: an error below destroys it.
        let inner = CqInner {
            raw: Owned::new(verbs, created, format!("{} entries", cqe_count)),
            _context: self.context.clone(),
            _channel: channel.map(|c| c.0.clone()),
            events_seen,
        };
        let dv = mlx5_view(verbs, &inner.raw, &"CQ")?;
        if dv.cqe_size != 64 || !dv.cqe_cnt.is_power_of_two() || dv.buf.is_null() {
            tracing::error!(
                "verbs: CQ has {} entries of {} bytes; the transport needs 64-byte CQEs \
                 (unset MLX5_CQE_SIZE)",
                dv.cqe_cnt,
                dv.cqe_size
            );
            return Err(Status::Unsupported);
        }
        if dv.cq_uar.is_null() || dv.dbrec.is_null() {
            tracing::error!("verbs: mlx5dv_init_obj(CQ) gave no UAR page or doorbell record");
            return Err(Status::IoError);
        }
        Ok(VerbsCq {
            inner: Arc::new(inner),
            // `cq_uar` is the UAR page itself with init_obj@MLX5_1.2 (the
            // version ffi resolves; 1.0 gave a pointer to it); the arm
            // doorbell lies inside it.
            arm_doorbell: dv
                .cq_uar
                .cast::<u8>()
                .wrapping_add(cq_arm::MLX5_CQ_DOORBELL)
                .cast::<u64>(),
            ring: CqRing {
                buf: dv.buf.cast(),
                cqe_count: dv.cqe_cnt,
                dbrec: dv.dbrec,
                cqn: dv.cqn,
            },
        })
    }
}

/// A verbs object with an mlx5 view (`mlx5dv_init_obj`).
///
/// # Safety
/// `request` puts `object` and `view` into the request member of
/// `mlx5dv_obj` for `OBJ_TYPE`, and `View` is that member's out struct.
unsafe trait Mlx5Object: Destroy {
    type View: Default;
    const OBJ_TYPE: ffi::mlx5dv_obj_type;
    fn request(obj: &mut ffi::mlx5dv_obj, object: *mut Self, view: &mut Self::View);
}

// SAFETY: the QP member, with its out struct.
unsafe impl Mlx5Object for ffi::ibv_qp {
    type View = ffi::mlx5dv_qp;
    const OBJ_TYPE: ffi::mlx5dv_obj_type = ffi::MLX5DV_OBJ_QP;
    fn request(obj: &mut ffi::mlx5dv_obj, object: *mut Self, view: &mut Self::View) {
        obj.qp.r#in = object;
        obj.qp.out = view;
    }
}

// SAFETY: the CQ member, with its out struct.
unsafe impl Mlx5Object for ffi::ibv_cq {
    type View = ffi::mlx5dv_cq;
    const OBJ_TYPE: ffi::mlx5dv_obj_type = ffi::MLX5DV_OBJ_CQ;
    fn request(obj: &mut ffi::mlx5dv_obj, object: *mut Self, view: &mut Self::View) {
        obj.cq.r#in = object;
        obj.cq.out = view;
    }
}

// SAFETY: the SRQ member, with its out struct (asking for the SRQ number).
unsafe impl Mlx5Object for ffi::ibv_srq {
    type View = ffi::mlx5dv_srq;
    const OBJ_TYPE: ffi::mlx5dv_obj_type = ffi::MLX5DV_OBJ_SRQ;
    fn request(obj: &mut ffi::mlx5dv_obj, object: *mut Self, view: &mut Self::View) {
        view.comp_mask = ffi::MLX5DV_SRQ_MASK_SRQN;
        obj.srq.r#in = object;
        obj.srq.out = view;
    }
}

/// The mlx5 view of `object` (`mlx5dv_init_obj`); `what` names it in the
/// log line.
fn mlx5_view<T: Mlx5Object>(
    verbs: &Verbs,
    object: &Owned<T>,
    what: &dyn std::fmt::Display,
) -> Result<T::View, Status> {
    let mut view = T::View::default();
    let mut obj = ffi::mlx5dv_obj::default();
    T::request(&mut obj, object.live().as_ptr(), &mut view);
    // SAFETY: `obj` names one live object (owned, borrowed for the call) of
    // an mlx5 device (only those are opened: `open_context`) and its
    // writable out struct of the right type (`Mlx5Object`); every other
    // member is NULL.
    if unsafe { (verbs.mlx5.init_obj)(&mut obj, T::OBJ_TYPE) } != 0 {
        tracing::error!("verbs: mlx5dv_init_obj({what}) failed: {}", os_error());
        return Err(Status::IoError);
    }
    Ok(view)
}

/// Opens the mlx5 device `name` from rdma-core's list.
fn open_context(verbs: &'static Verbs, name: &str) -> Result<Owned<ffi::ibv_context>, Status> {
    let list = DeviceList::get(verbs).map_err(|error| {
        tracing::warn!("verbs: cannot open {name}: no RDMA devices ({error})");
        Status::NoDevice
    })?;
    let Some(device) = list
        .devices()
        .find(|device| list.name(device).as_deref() == Some(name))
    else {
        tracing::warn!("verbs: rdma-core has no device {name}");
        return Err(Status::NoDevice);
    };
    if !(verbs.mlx5.is_supported)(device) {
        tracing::warn!("verbs: {name} is not an mlx5 device");
        return Err(Status::NoDevice);
    }
    // The context outlives the list (rdma-core keeps opened devices
    // referenced).
    let Some(created) = (verbs.ibv.open_device)(device) else {
        tracing::warn!("verbs: ibv_open_device({name}) failed: {}", os_error());
        return Err(Status::NoDevice);
    };
    Ok(Owned::new(verbs, created, name))
}

pub fn device_attr(name: &str, attr: &ffi::ibv_device_attr) -> DeviceAttr {
    let positive = |v: c_int| u32::try_from(v).unwrap_or(0);
    DeviceAttr {
        name: name.to_string(),
        port_count: attr.phys_port_cnt,
        // The transport counts 64-byte basic blocks; a work request of
        // max_qp_wr is at least one.
        max_qp_wqebb: positive(attr.max_qp_wr),
        max_cqe: positive(attr.max_cqe),
        max_srq_wqe: positive(attr.max_srq_wr),
        max_srq_sge: positive(attr.max_srq_sge),
        max_rd_atomic: u8::try_from(attr.max_qp_rd_atom.clamp(0, 255)).unwrap_or(u8::MAX),
        atomics: atomics_usable(attr.atomic_cap),
        atomic_result_order: AtomicResultOrder::MLX5_HOST_ENDIAN_8B,
    }
}

/// mlx5's kernel driver reports `IBV_ATOMIC_HCA` only when the firmware runs
/// 8-byte atomics in host-endian mode; in the other (big-endian) mode it
/// reports no atomics, and without DEVX we cannot tell the two apart, so
/// atomics are offered only when the result byte order is known.
fn atomics_usable(atomic_cap: ffi::ibv_atomic_cap) -> bool {
    atomic_cap == ffi::IBV_ATOMIC_HCA
}

struct ChannelInner {
    raw: Owned<ffi::ibv_comp_channel>,
    /// The channel's descriptor, set at creation.
    fd: std::os::fd::RawFd,
    context: Arc<Context>,
}

/// A completion channel.
pub struct VerbsChannel(Arc<ChannelInner>);

impl VerbsChannel {
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.0.fd
    }

    /// Takes every pending event (the fd is non-blocking: the read fails
    /// with EAGAIN when none is left), counts it for its CQ's arm sequence
    /// number and acknowledges it, so that the fd stops being readable and
    /// the CQs can be destroyed later.
    pub fn clear(&self) {
        let verbs = self.0.context.verbs;
        loop {
            let mut cq = std::ptr::null_mut();
            let mut cq_context = std::ptr::null_mut();
            if (verbs.ibv.get_cq_event)(self.0.raw.live(), &mut cq, &mut cq_context) != 0 {
                let err = os_error();
                if err.kind() != std::io::ErrorKind::WouldBlock {
                    tracing::warn!("verbs: ibv_get_cq_event failed: {err}");
                }
                break;
            }
            if cq.is_null() {
                break;
            }
            // SAFETY: `cq` (non-NULL) is the CQ the event came from, alive
            // while the event is unacknowledged (rdma-core's destroy waits
            // for it); every CQ of our channels carries its CqInner's event
            // counter as context (`create_cq`), alive while the CQ is.
            let (cq, events_seen) = unsafe {
                (
                    &*cq.cast::<Live<ffi::ibv_cq>>(),
                    cq_context.cast::<AtomicU32>().as_ref(),
                )
            };
            // The arm sequence number advances with every event consumed.
            if let Some(events_seen) = events_seen {
                events_seen.fetch_add(1, Ordering::Relaxed);
            }
            (verbs.ibv.ack_cq_events)(cq, 1);
        }
    }
}

struct PdInner {
    raw: Owned<ffi::ibv_pd>,
    context: Arc<Context>,
    /// The port QPs of this PD use (`hca::devices` lists port 1 of each
    /// device; the first usable port is that one when it is usable).
    port: VerbsPort,
}

/// A protection domain.
#[derive(Clone)]
pub struct VerbsPd {
    inner: Arc<PdInner>,
}

/// The verbs access bits of `access` (the same bit values).
fn ibv_access(access: Access) -> c_int {
    let bits = access.0
        & (ffi::IBV_ACCESS_LOCAL_WRITE
            | ffi::IBV_ACCESS_REMOTE_WRITE
            | ffi::IBV_ACCESS_REMOTE_READ
            | ffi::IBV_ACCESS_REMOTE_ATOMIC);
    // Remote write and atomics require local write in verbs.
    let bits = if bits & (ffi::IBV_ACCESS_REMOTE_WRITE | ffi::IBV_ACCESS_REMOTE_ATOMIC) != 0 {
        bits | ffi::IBV_ACCESS_LOCAL_WRITE
    } else {
        bits
    };
    c_int::try_from(bits).unwrap_or(0)
}

impl VerbsPd {
    pub fn reg_mr(&self, addr: *mut u8, len: usize, access: Access) -> Result<VerbsMr, Status> {
        let verbs = self.inner.context.verbs;
        // SAFETY: the PD is live; the caller keeps [addr, addr+len) mapped
        // while the registration exists (the hca contract).
        let created = unsafe {
            (verbs.ibv.reg_mr)(self.inner.raw.live(), addr.cast(), len, ibv_access(access))
        };
        let Some(created) = created else {
            tracing::error!("verbs: ibv_reg_mr({addr:p}, {len}) failed: {}", os_error());
            return Err(Status::IoError);
        };
        let head = created.head();
        Ok(VerbsMr {
            _mr: Owned::new(verbs, created, format!("{addr:p}, {len}")),
            _pd: self.inner.clone(),
            keys: MrKeys {
                lkey: head.lkey,
                rkey: head.rkey,
            },
        })
    }

    /// An SRQ of at least `attr.wqe_count` receive WQEs and its mlx5 ring.
    pub fn create_srq(&self, attr: SrqInitAttr) -> Result<VerbsSrq, Status> {
        let verbs = self.inner.context.verbs;
        let mut init = ffi::ibv_srq_init_attr {
            srq_context: std::ptr::null_mut(),
            attr: ffi::ibv_srq_attr {
                max_wr: attr.wqe_count,
                max_sge: attr.max_sge,
                srq_limit: 0,
            },
        };
        let Some(created) = (verbs.ibv.create_srq)(self.inner.raw.live(), &mut init) else {
            tracing::error!(
                "verbs: ibv_create_srq({}) failed: {}",
                attr.wqe_count,
                os_error()
            );
            return Err(Status::NoMemory);
        };
        let inner = SrqInner {
            raw: Owned::new(verbs, created, format!("{} WQEs", attr.wqe_count)),
            _pd: self.inner.clone(),
        };
        let dv = mlx5_view(verbs, &inner.raw, &"SRQ")?;
        let ring = recv_ring_from_dv(&dv)?;
        Ok(VerbsSrq {
            inner: Arc::new(inner),
            ring,
        })
    }

    /// An RC QP on `send_cq`/`recv_cq`, receiving through `srq`, with a
    /// send ring of at least `sq_wqebb_count` basic blocks.
    pub fn create_qp(
        &self,
        send_cq: &VerbsCq,
        recv_cq: &VerbsCq,
        srq: &VerbsSrq,
        sq_wqebb_count: u32,
    ) -> Result<VerbsQp, Status> {
        let verbs = self.inner.context.verbs;
        let mut init = ffi::ibv_qp_init_attr {
            qp_context: std::ptr::null_mut(),
            send_cq: send_cq.inner.raw.live().as_ptr(),
            recv_cq: recv_cq.inner.raw.live().as_ptr(),
            srq: srq.inner.raw.live().as_ptr(),
            cap: ffi::ibv_qp_cap {
                max_send_wr: sq_wqebb_count,
                max_recv_wr: 0,
                max_send_sge: 1,
                max_recv_sge: 0,
                max_inline_data: 0,
            },
            qp_type: ffi::IBV_QPT_RC,
            sq_sig_all: 0,
        };
        // SAFETY: live PD, and CQs and SRQ of the same context, borrowed
        // for the call (the QP holds them afterwards); no other pointer in
        // `init` (`qp_context` NULL).
        let created = unsafe { (verbs.ibv.create_qp)(self.inner.raw.live(), &mut init) };
        let Some(created) = created else {
            tracing::error!(
                "verbs: ibv_create_qp(RC, {sq_wqebb_count}) failed: {}",
                os_error()
            );
            return Err(Status::NoMemory);
        };
        let qpn = created.head().qp_num;
        let owned = QpInner {
            raw: Owned::new(verbs, created, format!("{qpn:#x}")),
            pd: self.inner.clone(),
            qpn,
        };
        let dv = mlx5_view(verbs, &owned.raw, &format_args!("QP {qpn:#x}"))?;
        if dv.sq.stride != 64
            || !dv.sq.wqe_cnt.is_power_of_two()
            || dv.sq.buf.is_null()
            || dv.dbrec.is_null()
            || dv.bf.reg.is_null()
        {
            tracing::error!(
                "verbs: QP {qpn:#x} send ring has {} entries of {} bytes (buf {:p}, \
                 dbrec {:p}, BlueFlame {:p})",
                dv.sq.wqe_cnt,
                dv.sq.stride,
                dv.sq.buf,
                dv.dbrec,
                dv.bf.reg
            );
            return Err(Status::Unsupported);
        }
        let port = &self.inner.port;
        Ok(VerbsQp {
            ring: SendRing {
                buf: dv.sq.buf.cast(),
                wqebb_count: dv.sq.wqe_cnt,
                dbrec: dv.dbrec,
                qpn,
            },
            doorbell: VerbsDoorbell {
                reg: dv.bf.reg.cast(),
                half_size: dv.bf.size,
                next_half: Arc::new(AtomicU32::new(0)),
                _context: self.inner.context.clone(),
            },
            port: port.number,
            link_layer: port.link_layer,
            sgid_index: port.sgid_index,
            inner: owned,
            _send_cq: send_cq.inner.clone(),
            _recv_cq: recv_cq.inner.clone(),
            _srq: srq.inner.clone(),
        })
    }
}

/// The receive ring an mlx5 SRQ exposes: the provider links its WQEs
/// 0 → 1 → ... → tail, so the ring holds tail + 1 WQEs, each a 16-byte
/// next segment and 16-byte data segments.
pub fn recv_ring_from_dv(dv: &ffi::mlx5dv_srq) -> Result<RecvRing, Status> {
    let wqe_count = dv.tail.wrapping_add(1);
    if dv.head != 0
        || !wqe_count.is_power_of_two()
        || dv.stride < 32
        || !dv.stride.is_power_of_two()
        || dv.buf.is_null()
        || dv.dbrec.is_null()
    {
        tracing::error!(
            "verbs: unexpected SRQ ring (head {}, tail {}, stride {})",
            dv.head,
            dv.tail,
            dv.stride
        );
        return Err(Status::Unsupported);
    }
    Ok(RecvRing {
        buf: dv.buf.cast(),
        wqe_count,
        stride: dv.stride,
        max_sge: dv.stride / 16 - 1,
        dbrec: dv.dbrec,
        srqn: dv.srqn,
    })
}

/// A memory registration.
pub struct VerbsMr {
    _mr: Owned<ffi::ibv_mr>,
    _pd: Arc<PdInner>,
    keys: MrKeys,
}

impl VerbsMr {
    pub fn keys(&self) -> MrKeys {
        self.keys
    }
}

struct CqInner {
    raw: Owned<ffi::ibv_cq>,
    _context: Arc<Context>,
    _channel: Option<Arc<ChannelInner>>,
    /// CQ events consumed (`ibv_get_cq_event`); its low two bits are the
    /// arm sequence number. Boxed: its address is the CQ's `cq_context`;
    /// freed only after `drop` has destroyed the CQ (fields drop last).
    events_seen: Box<AtomicU32>,
}

/// A completion queue and its CQE64 ring.
pub struct VerbsCq {
    inner: Arc<CqInner>,
    /// The 8-byte arm doorbell in the CQ's UAR page.
    arm_doorbell: *mut u64,
    ring: CqRing,
}

// SAFETY: the arm doorbell pointer is the address of a register the verbs
// object (held) maps; the handle writes only the arm word and the arm
// doorbell, and the rest is the ring description and Arcs of Send + Sync
// objects.
unsafe impl Send for VerbsCq {}
// SAFETY: as above; `&self` methods copy the ring description out or arm,
// which the transport does from the thread that polls the CQ.
unsafe impl Sync for VerbsCq {}

impl VerbsCq {
    pub fn ring(&self) -> CqRing {
        self.ring
    }

    /// Asks the device for one event on the channel once a CQE at or past
    /// `consumer_index` exists (at once if one does already), for any
    /// completion or only solicited ones (and errors). mlx5's own arm: the
    /// arm word into `dbrec[1]`, then the doorbell (see [`cq_arm`]).
    pub fn arm(&self, consumer_index: u32, solicited_only: bool) {
        let request = cq_arm::CqArm {
            sn: self.inner.events_seen.load(Ordering::Relaxed),
            solicited_only,
            ci: consumer_index,
        };
        // SAFETY: the arm word of the CQ's doorbell record (4-aligned, alive
        // with the CQ, which `self` holds; the device reads it, the
        // transport never touches this word), then the 8-aligned arm
        // doorbell of the CQ's UAR page, mapped while the context lives (the
        // CQ holds it): a volatile 8-byte store is one MMIO write.
        unsafe {
            let arm_word = &*self
                .ring
                .dbrec
                .add(cq_arm::MLX5_CQ_ARM_DB)
                .cast::<AtomicU32>();
            arm_word.store(request.word().to_be(), Ordering::Relaxed);
            // The device must see the record before the doorbell.
            device_store_fence();
            std::ptr::write_volatile(self.arm_doorbell, request.doorbell(self.ring.cqn).to_be());
        }
        device_store_fence();
    }
}

struct SrqInner {
    raw: Owned<ffi::ibv_srq>,
    _pd: Arc<PdInner>,
}

/// A shared receive queue and its ring.
pub struct VerbsSrq {
    inner: Arc<SrqInner>,
    ring: RecvRing,
}

impl VerbsSrq {
    pub fn ring(&self) -> RecvRing {
        self.ring
    }
}

/// The global route header fields of an address vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grh {
    pub dgid: [u8; 16],
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
}

/// How to reach the peer port (the address vector of RTR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressVector {
    /// Destination LID (InfiniBand; 0 on RoCE).
    pub dlid: u16,
    /// Service level / Ethernet priority.
    pub sl: u8,
    /// Always on RoCE; on InfiniBand when the peer is in another subnet.
    pub grh: Option<Grh>,
}

/// INIT→RTR attributes for a real device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerbsRtr {
    pub dest_qpn: u32,
    pub av: AddressVector,
    pub port: u8,
    pub rq_psn: u32,
    pub path_mtu: Mtu,
    pub min_rnr_timer: u8,
    pub max_dest_rd_atomic: u8,
}

impl VerbsRtr {
    /// The RTR attributes of `rtr` on a port with `link_layer` that sends
    /// from GID index `sgid_index`. A peer address this port cannot reach
    /// (the soft HCA's UDP, InfiniBand from RoCE or back) is `InvalidAddr`.
    pub fn new(
        rtr: &RtrAttr,
        port: u8,
        link_layer: LinkLayer,
        sgid_index: u8,
    ) -> Result<VerbsRtr, Status> {
        let grh = |dgid: [u8; 16]| Grh {
            dgid,
            sgid_index,
            hop_limit: rtr.path.hop_limit,
            traffic_class: rtr.path.traffic_class,
        };
        let av = match (link_layer, rtr.peer) {
            (LinkLayer::Ethernet, DeviceAddress::Roce { gid }) => AddressVector {
                dlid: 0,
                sl: rtr.path.sl,
                grh: Some(grh(gid)),
            },
            (LinkLayer::InfiniBand, DeviceAddress::Ib { lid, gid }) => AddressVector {
                dlid: lid,
                sl: rtr.path.sl,
                grh: gid.map(grh),
            },
            (_, peer) => {
                tracing::error!("verbs: a {link_layer:?} port cannot reach peer address {peer:?}");
                return Err(Status::InvalidAddr);
            }
        };
        Ok(VerbsRtr {
            dest_qpn: rtr.dest_qpn,
            av,
            port,
            rq_psn: rtr.rq_psn,
            path_mtu: rtr.path_mtu,
            min_rnr_timer: rtr.min_rnr_timer,
            max_dest_rd_atomic: rtr.max_dest_rd_atomic,
        })
    }
}

/// `QpTransition` for a real device (port and address vector explicit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerbsTransition {
    Init { port: u8, access: Access },
    Rtr(VerbsRtr),
    Rts(RtsAttr),
    Error,
    Reset,
}

/// The verbs attribute mask and attributes of one RC transition.
pub fn transition_attrs(transition: &VerbsTransition) -> (ffi::ibv_qp_attr, ffi::ibv_qp_attr_mask) {
    let mut attr = ffi::ibv_qp_attr::default();
    let mask = match *transition {
        VerbsTransition::Init { port, access } => {
            attr.qp_state = ffi::IBV_QPS_INIT;
            attr.pkey_index = 0;
            attr.port_num = port;
            attr.qp_access_flags = u32::try_from(ibv_access(access)).unwrap_or(0);
            ffi::IBV_QP_STATE | ffi::IBV_QP_PKEY_INDEX | ffi::IBV_QP_PORT | ffi::IBV_QP_ACCESS_FLAGS
        }
        VerbsTransition::Rtr(rtr) => {
            attr.qp_state = ffi::IBV_QPS_RTR;
            attr.dest_qp_num = rtr.dest_qpn & 0x00ff_ffff;
            attr.rq_psn = rtr.rq_psn & 0x00ff_ffff;
            attr.path_mtu = rtr.path_mtu as u32;
            attr.min_rnr_timer = rtr.min_rnr_timer;
            attr.max_dest_rd_atomic = rtr.max_dest_rd_atomic;
            attr.ah_attr.port_num = rtr.port;
            attr.ah_attr.dlid = rtr.av.dlid;
            attr.ah_attr.sl = rtr.av.sl;
            if let Some(grh) = rtr.av.grh {
                attr.ah_attr.is_global = 1;
                attr.ah_attr.grh.dgid = ffi::ibv_gid { raw: grh.dgid };
                attr.ah_attr.grh.sgid_index = grh.sgid_index;
                attr.ah_attr.grh.hop_limit = grh.hop_limit;
                attr.ah_attr.grh.traffic_class = grh.traffic_class;
            }
            ffi::IBV_QP_STATE
                | ffi::IBV_QP_AV
                | ffi::IBV_QP_PATH_MTU
                | ffi::IBV_QP_DEST_QPN
                | ffi::IBV_QP_RQ_PSN
                | ffi::IBV_QP_MAX_DEST_RD_ATOMIC
                | ffi::IBV_QP_MIN_RNR_TIMER
        }
        VerbsTransition::Rts(rts) => {
            attr.qp_state = ffi::IBV_QPS_RTS;
            attr.sq_psn = rts.sq_psn & 0x00ff_ffff;
            attr.timeout = rts.timeout;
            attr.retry_cnt = rts.retry_cnt;
            attr.rnr_retry = rts.rnr_retry;
            attr.max_rd_atomic = rts.max_rd_atomic;
            ffi::IBV_QP_STATE
                | ffi::IBV_QP_SQ_PSN
                | ffi::IBV_QP_TIMEOUT
                | ffi::IBV_QP_RETRY_CNT
                | ffi::IBV_QP_RNR_RETRY
                | ffi::IBV_QP_MAX_QP_RD_ATOMIC
        }
        VerbsTransition::Error => {
            attr.qp_state = ffi::IBV_QPS_ERR;
            ffi::IBV_QP_STATE
        }
        VerbsTransition::Reset => {
            attr.qp_state = ffi::IBV_QPS_RESET;
            ffi::IBV_QP_STATE
        }
    };
    (attr, mask)
}

fn qp_state_from_ibv(state: ffi::ibv_qp_state) -> Option<QpState> {
    Some(match state {
        ffi::IBV_QPS_RESET => QpState::Reset,
        ffi::IBV_QPS_INIT => QpState::Init,
        ffi::IBV_QPS_RTR => QpState::Rtr,
        ffi::IBV_QPS_RTS => QpState::Rts,
        ffi::IBV_QPS_ERR | ffi::IBV_QPS_SQE => QpState::Error,
        _ => return None,
    })
}

/// The verbs QP object; destroyed before the CQs and SRQ it uses (the
/// [`VerbsQp`] fields that hold those are declared after it) and its PD.
struct QpInner {
    raw: Owned<ffi::ibv_qp>,
    pd: Arc<PdInner>,
    qpn: u32,
}

/// An RC QP, its send ring and doorbell.
pub struct VerbsQp {
    ring: SendRing,
    doorbell: VerbsDoorbell,
    port: u8,
    link_layer: LinkLayer,
    sgid_index: u8,
    // Field order is drop order: the QP goes before its CQs and SRQ.
    inner: QpInner,
    _send_cq: Arc<CqInner>,
    _recv_cq: Arc<CqInner>,
    _srq: Arc<SrqInner>,
}

impl VerbsQp {
    pub fn qpn(&self) -> u32 {
        self.inner.qpn
    }

    pub fn send_ring(&self) -> SendRing {
        self.ring
    }

    /// The doorbell of this QP (clones share the BlueFlame alternation).
    pub fn doorbell(&self) -> VerbsDoorbell {
        self.doorbell.clone()
    }

    /// The `hca` transition on this QP's port.
    pub fn modify(&self, transition: QpTransition) -> Result<(), Status> {
        let transition = match transition {
            QpTransition::Init { access } => VerbsTransition::Init {
                port: self.port,
                access,
            },
            QpTransition::Rtr(rtr) => VerbsTransition::Rtr(VerbsRtr::new(
                &rtr,
                self.port,
                self.link_layer,
                self.sgid_index,
            )?),
            QpTransition::Rts(rts) => VerbsTransition::Rts(rts),
            QpTransition::Error => VerbsTransition::Error,
            QpTransition::Reset => VerbsTransition::Reset,
        };
        self.modify_verbs(transition)
    }

    pub fn modify_verbs(&self, transition: VerbsTransition) -> Result<(), Status> {
        let (mut attr, mask) = transition_attrs(&transition);
        let verbs = self.inner.pd.context.verbs;
        let mask = c_int::try_from(mask).map_err(|_| Status::InvalidParam)?;
        let rc = (verbs.ibv.modify_qp)(self.inner.raw.live(), &mut attr, mask);
        returned_ok(
            rc,
            format_args!("ibv_modify_qp({:#x}, {transition:?})", self.inner.qpn),
        )
    }

    /// State, PSNs and peer QPN (the failover token fields).
    pub fn query(&self) -> Result<QpInfo, Status> {
        let verbs = self.inner.pd.context.verbs;
        let mut attr = ffi::ibv_qp_attr::default();
        let mut init = ffi::ibv_qp_init_attr::default();
        let mask =
            ffi::IBV_QP_STATE | ffi::IBV_QP_RQ_PSN | ffi::IBV_QP_SQ_PSN | ffi::IBV_QP_DEST_QPN;
        let mask = c_int::try_from(mask).map_err(|_| Status::InvalidParam)?;
        let rc = (verbs.ibv.query_qp)(self.inner.raw.live(), &mut attr, mask, &mut init);
        returned_ok(rc, format_args!("ibv_query_qp({:#x})", self.inner.qpn))?;
        let state = qp_state_from_ibv(attr.qp_state).ok_or_else(|| {
            tracing::error!(
                "verbs: QP {:#x} in unexpected state {}",
                self.inner.qpn,
                attr.qp_state
            );
            Status::IoError
        })?;
        Ok(QpInfo {
            state,
            next_rcv_psn: attr.rq_psn & 0x00ff_ffff,
            sq_psn: attr.sq_psn & 0x00ff_ffff,
            dest_qpn: attr.dest_qp_num & 0x00ff_ffff,
        })
    }
}

/// Rings a real QP's doorbell: the first 8 bytes of the last WQE's control
/// segment go to the QP's BlueFlame register, alternating between its two
/// halves of `bf.size` bytes as mlx5 expects. Clones share the alternation.
#[derive(Clone)]
pub struct VerbsDoorbell {
    reg: *mut u8,
    half_size: u32,
    /// Offset of the half the next ring uses (0 or `half_size`).
    next_half: Arc<AtomicU32>,
    /// The UAR page holding `reg` is mapped as long as the context lives.
    _context: Arc<Context>,
}

// SAFETY: `reg` is a device register mapped for the life of the context
// (held); writes to it from any thread are what the device expects, and
// the alternating offset is atomic.
unsafe impl Send for VerbsDoorbell {}
// SAFETY: as above.
unsafe impl Sync for VerbsDoorbell {}

/// Orders all earlier stores (WQE, doorbell record) before later stores,
/// including to device memory (BlueFlame, CQ arm doorbell), and drains
/// write-combining buffers: on
/// x86-64 `sfence`; on aarch64 `dsb st` (a `dmb` does not order against
/// the write-combined BlueFlame mapping).
#[inline(always)]
fn device_store_fence() {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    // SAFETY: a store barrier instruction: no memory access, no register
    // change (x86-64: `sfence`, SSE is baseline there).
    unsafe {
        #[cfg(target_arch = "x86_64")]
        std::arch::x86_64::_mm_sfence();
        #[cfg(target_arch = "aarch64")]
        std::arch::asm!("dsb st", options(nostack, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    std::sync::atomic::fence(Ordering::SeqCst);
}

impl VerbsDoorbell {
    /// Call after the WQEs are written and the new counter is stored in
    /// `dbrec[1]` (see `hca::Doorbell::ring`). `last_wqe` must point at a
    /// control segment (at least 8 readable bytes).
    #[inline]
    pub fn ring(&self, last_wqe: *const u8) {
        // The device must see the doorbell record (and the WQEs) before the
        // register write makes it look.
        device_store_fence();
        // Load + store rather than an atomic read-modify-write: two threads
        // ringing at once may both use one half, which is harmless for an
        // 8-byte doorbell (mlx5 alternates for whole-WQE BlueFlame copies).
        let offset = self.next_half.load(Ordering::Relaxed);
        self.next_half
            .store(offset ^ self.half_size, Ordering::Relaxed);
        // SAFETY: `last_wqe` points at a control segment in the send ring;
        // `reg + offset` is inside the QP's BlueFlame register (offset is 0
        // or bf.size, the register spans two halves of bf.size bytes, and
        // is 8-byte aligned); a volatile 8-byte store is one MMIO write.
        unsafe {
            let ctrl = std::ptr::read_unaligned(last_wqe.cast::<u64>());
            std::ptr::write_volatile(self.reg.add(offset as usize).cast::<u64>(), ctrl);
        }
        // Push the write-combined store out now rather than whenever the
        // buffer fills.
        device_store_fence();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr_with_atomic_cap(atomic_cap: ffi::ibv_atomic_cap) -> DeviceAttr {
        let raw = ffi::ibv_device_attr {
            atomic_cap,
            max_qp_rd_atom: 16,
            ..Default::default()
        };
        device_attr("mlx5_0", &raw)
    }

    #[test]
    fn atomics_follow_atomic_cap_with_mlx5_result_order() {
        let hca = attr_with_atomic_cap(ffi::IBV_ATOMIC_HCA);
        assert!(
            hca.atomics,
            "IBV_ATOMIC_HCA: 8-byte atomics in host-endian mode"
        );
        assert!(
            !hca.atomic_result_order.big_endian(8),
            "64-bit results in host order"
        );
        assert!(
            hca.atomic_result_order.big_endian(4),
            "32-bit results big-endian"
        );
        assert_eq!(hca.max_rd_atomic, 16);
        for other in [ffi::IBV_ATOMIC_NONE, ffi::IBV_ATOMIC_GLOB, 7] {
            let attr = attr_with_atomic_cap(other);
            assert!(!attr.atomics, "atomic_cap {other}: atomics not offered");
        }
    }
}
