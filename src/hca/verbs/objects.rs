//! rdma-core objects for the `hca` handles: an open device, PD, MR, CQ,
//! SRQ and RC QP, each owning its verbs object and destroying it on drop,
//! and exposing the mlx5 rings (`mlx5dv_init_obj`) in the `hca` ring types.
//!
//! NOT YET CHECKED AGAINST ANY DEVICE OR STAND-IN: this compiles and its
//! error paths are tested on a machine without a NIC; the success paths
//! wait for the stand-in library (issue 6, item 4). The `Verbs` variants of
//! the `hca` handle enums are the next step; they need a `DeviceAddress`
//! variant for InfiniBand/RoCE peers (see [`AddressVector`]).

use std::ffi::{c_int, CStr};
use std::sync::Arc;

use super::ffi::{self, Verbs};
use crate::abi::ucs_status::Status;
use crate::hca::{
    Access, CqRing, DeviceAttr, MrKeys, Mtu, QpInfo, QpState, RecvRing, RtsAttr, SendRing,
    SrqInitAttr,
};

/// An open device context, shared by everything made from it; closed when
/// the last of them is dropped.
struct Context {
    verbs: &'static Verbs,
    raw: *mut ffi::ibv_context,
    name: String,
}

// SAFETY: verbs contexts and the objects made from them may be used from
// any thread (libibverbs locks internally on the control path); the raw
// pointer is only handed to libibverbs.
unsafe impl Send for Context {}
// SAFETY: as above; no Rust-side state is mutated through &Context.
unsafe impl Sync for Context {}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: `raw` came from ibv_open_device; every object made from it
        // holds an Arc<Context>, so none is alive any more.
        if unsafe { (self.verbs.ibv.close_device)(self.raw) } != 0 {
            tracing::warn!("verbs: ibv_close_device({}) failed", self.name);
        }
    }
}

fn os_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// A real mlx5 device, open.
#[derive(Clone)]
pub struct VerbsDevice {
    context: Arc<Context>,
    attr: ffi::ibv_device_attr,
}

impl VerbsDevice {
    /// Opens the mlx5 device `name`: `NoDevice` when rdma-core is missing or
    /// has no such mlx5 device (one log line says which).
    pub fn open(name: &str) -> Result<VerbsDevice, Status> {
        let verbs = Verbs::get().map_err(|e| {
            tracing::debug!("verbs: cannot open {name}: {e}");
            e.status()
        })?;
        let mut count: c_int = 0;
        // SAFETY: see discovery: a NULL or NULL-terminated list, freed below.
        let list = unsafe { (verbs.ibv.get_device_list)(&mut count) };
        if list.is_null() {
            tracing::debug!(
                "verbs: cannot open {name}: no RDMA devices ({})",
                os_error()
            );
            return Err(Status::NoDevice);
        }
        let mut context = std::ptr::null_mut();
        for slot in 0..usize::try_from(count).unwrap_or(0) {
            // SAFETY: the list holds `count` entries.
            let device = unsafe { *list.add(slot) };
            if device.is_null() {
                break;
            }
            // SAFETY: a live device of the list; its name is NUL-terminated.
            let device_name = unsafe { CStr::from_ptr((verbs.ibv.get_device_name)(device)) };
            if device_name.to_bytes() != name.as_bytes() {
                continue;
            }
            // SAFETY: as above.
            if !unsafe { (verbs.mlx5.is_supported)(device) } {
                tracing::warn!("verbs: {name} is not an mlx5 device");
                break;
            }
            // SAFETY: as above; the context outlives the list (rdma-core
            // keeps opened devices referenced).
            context = unsafe { (verbs.ibv.open_device)(device) };
            if context.is_null() {
                tracing::warn!("verbs: ibv_open_device({name}) failed: {}", os_error());
            }
            break;
        }
        // SAFETY: `list` came from get_device_list; freed once.
        unsafe { (verbs.ibv.free_device_list)(list) };
        if context.is_null() {
            tracing::debug!("verbs: no usable mlx5 device {name}");
            return Err(Status::NoDevice);
        }
        let context = Arc::new(Context {
            verbs,
            raw: context,
            name: name.to_string(),
        });
        // SAFETY: all-zero is a valid ibv_device_attr (plain data).
        let mut attr: ffi::ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: open context, writable attr.
        if unsafe { (verbs.ibv.query_device)(context.raw, &mut attr) } != 0 {
            tracing::warn!("verbs: ibv_query_device({name}) failed: {}", os_error());
            return Err(Status::IoError);
        }
        Ok(VerbsDevice { context, attr })
    }

    pub fn name(&self) -> &str {
        &self.context.name
    }

    /// The device limits in the backend-neutral form.
    pub fn attr(&self) -> DeviceAttr {
        let a = &self.attr;
        let positive = |v: c_int| u32::try_from(v).unwrap_or(0);
        DeviceAttr {
            name: self.context.name.clone(),
            port_count: a.phys_port_cnt,
            // One WR of an RC send ring is at most one basic block here.
            max_qp_wqebb: positive(a.max_qp_wr),
            max_cqe: positive(a.max_cqe),
            max_srq_wqe: positive(a.max_srq_wr),
            max_srq_sge: positive(a.max_srq_sge),
            max_rd_atomic: u8::try_from(a.max_qp_rd_atom.clamp(0, 255)).unwrap_or(u8::MAX),
            atomics: a.atomic_cap != ffi::IBV_ATOMIC_NONE,
            atomic_results_big_endian: true,
        }
    }

    pub fn alloc_pd(&self) -> Result<VerbsPd, Status> {
        let verbs = self.context.verbs;
        // SAFETY: open context.
        let raw = unsafe { (verbs.ibv.alloc_pd)(self.context.raw) };
        if raw.is_null() {
            tracing::error!(
                "verbs: ibv_alloc_pd({}) failed: {}",
                self.name(),
                os_error()
            );
            return Err(Status::NoMemory);
        }
        Ok(VerbsPd {
            inner: Arc::new(PdInner {
                context: self.context.clone(),
                raw,
            }),
        })
    }

    /// A completion channel (its fd is what the transport exposes for
    /// blocking waits).
    pub fn create_event_channel(&self) -> Result<VerbsChannel, Status> {
        let verbs = self.context.verbs;
        // SAFETY: open context.
        let raw = unsafe { (verbs.ibv.create_comp_channel)(self.context.raw) };
        if raw.is_null() {
            tracing::error!("verbs: ibv_create_comp_channel failed: {}", os_error());
            return Err(Status::IoError);
        }
        Ok(VerbsChannel {
            context: self.context.clone(),
            raw,
        })
    }

    /// A CQ of at least `cqe_count` entries, reporting to `channel` if
    /// given, with its mlx5 ring. (Arming it is the transport's write of the
    /// mlx5 arm doorbell; not done yet.)
    pub fn create_cq(
        &self,
        cqe_count: u32,
        channel: Option<&VerbsChannel>,
    ) -> Result<VerbsCq, Status> {
        let verbs = self.context.verbs;
        let cqe = c_int::try_from(cqe_count).map_err(|_| Status::InvalidParam)?;
        let channel_raw = channel.map_or(std::ptr::null_mut(), |c| c.raw);
        // SAFETY: open context; the channel (if any) is of this context and
        // outlives the CQ (the hca layer keeps it alive); NULL is allowed.
        let raw = unsafe {
            (verbs.ibv.create_cq)(self.context.raw, cqe, std::ptr::null_mut(), channel_raw, 0)
        };
        if raw.is_null() {
            tracing::error!("verbs: ibv_create_cq({cqe}) failed: {}", os_error());
            return Err(Status::NoMemory);
        }
        let mut cq = VerbsCq {
            context: self.context.clone(),
            raw,
            ring: None,
        };
        // SAFETY: all-zero is a valid mlx5dv_cq (pointers NULL).
        let mut dv: ffi::mlx5dv_cq = unsafe { std::mem::zeroed() };
        let mut obj = ffi::mlx5dv_obj::default();
        obj.cq.r#in = raw;
        obj.cq.out = &mut dv;
        // SAFETY: `obj` names a live CQ of an mlx5 device and a writable out.
        if unsafe { (verbs.mlx5.init_obj)(&mut obj, ffi::MLX5DV_OBJ_CQ) } != 0 {
            tracing::error!("verbs: mlx5dv_init_obj(CQ) failed: {}", os_error());
            return Err(Status::IoError);
        }
        if dv.cqe_size != 64 || !dv.cqe_cnt.is_power_of_two() {
            tracing::error!(
                "verbs: CQ has {} entries of {} bytes; the transport needs 64-byte CQEs \
                 (unset MLX5_CQE_SIZE)",
                dv.cqe_cnt,
                dv.cqe_size
            );
            return Err(Status::Unsupported);
        }
        cq.ring = Some(CqRing {
            buf: dv.buf.cast(),
            cqe_count: dv.cqe_cnt,
            dbrec: dv.dbrec,
            cqn: dv.cqn,
        });
        Ok(cq)
    }
}

/// A completion channel.
pub struct VerbsChannel {
    context: Arc<Context>,
    raw: *mut ffi::ibv_comp_channel,
}

// SAFETY: see Context.
unsafe impl Send for VerbsChannel {}
// SAFETY: see Context.
unsafe impl Sync for VerbsChannel {}

impl VerbsChannel {
    pub fn fd(&self) -> std::os::fd::RawFd {
        // SAFETY: `raw` is a live channel; `fd` is set at creation.
        unsafe { (*self.raw).fd }
    }
}

impl Drop for VerbsChannel {
    fn drop(&mut self) {
        // SAFETY: `raw` came from create_comp_channel; destroyed once, after
        // its CQs (they hold it through the hca layer).
        if unsafe { (self.context.verbs.ibv.destroy_comp_channel)(self.raw) } != 0 {
            tracing::warn!("verbs: ibv_destroy_comp_channel failed: {}", os_error());
        }
    }
}

struct PdInner {
    context: Arc<Context>,
    raw: *mut ffi::ibv_pd,
}

// SAFETY: see Context: the pointer is only passed to libibverbs.
unsafe impl Send for PdInner {}
// SAFETY: as above.
unsafe impl Sync for PdInner {}

impl Drop for PdInner {
    fn drop(&mut self) {
        // SAFETY: every object made from this PD holds an Arc<PdInner>.
        if unsafe { (self.context.verbs.ibv.dealloc_pd)(self.raw) } != 0 {
            tracing::warn!("verbs: ibv_dealloc_pd failed: {}", os_error());
        }
    }
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
        let raw =
            unsafe { (verbs.ibv.reg_mr)(self.inner.raw, addr.cast(), len, ibv_access(access)) };
        if raw.is_null() {
            tracing::error!("verbs: ibv_reg_mr({addr:p}, {len}) failed: {}", os_error());
            return Err(Status::IoError);
        }
        // SAFETY: a successful reg_mr returns a valid ibv_mr.
        let keys = unsafe {
            MrKeys {
                lkey: (*raw).lkey,
                rkey: (*raw).rkey,
            }
        };
        Ok(VerbsMr {
            pd: self.inner.clone(),
            raw,
            keys,
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
        // SAFETY: live PD, valid init attributes.
        let raw = unsafe { (verbs.ibv.create_srq)(self.inner.raw, &mut init) };
        if raw.is_null() {
            tracing::error!(
                "verbs: ibv_create_srq({}) failed: {}",
                attr.wqe_count,
                os_error()
            );
            return Err(Status::NoMemory);
        }
        let mut srq = VerbsSrq {
            pd: self.inner.clone(),
            raw,
            ring: None,
        };
        // SAFETY: all-zero is a valid mlx5dv_srq.
        let mut dv: ffi::mlx5dv_srq = unsafe { std::mem::zeroed() };
        let mut obj = ffi::mlx5dv_obj::default();
        obj.srq.r#in = raw;
        obj.srq.out = &mut dv;
        dv.comp_mask = ffi::MLX5DV_SRQ_MASK_SRQN;
        // SAFETY: `obj` names a live SRQ and a writable out.
        if unsafe { (verbs.mlx5.init_obj)(&mut obj, ffi::MLX5DV_OBJ_SRQ) } != 0 {
            tracing::error!("verbs: mlx5dv_init_obj(SRQ) failed: {}", os_error());
            return Err(Status::IoError);
        }
        // The provider builds the free list 0 → 1 → ... → tail: the ring
        // holds tail + 1 WQEs; a WQE is a 16-byte next segment and 16-byte
        // data segments.
        let wqe_count = dv.tail.wrapping_add(1);
        if dv.head != 0 || !wqe_count.is_power_of_two() || dv.stride < 32 {
            tracing::error!(
                "verbs: unexpected SRQ ring (head {}, tail {}, stride {})",
                dv.head,
                dv.tail,
                dv.stride
            );
            return Err(Status::Unsupported);
        }
        srq.ring = Some(RecvRing {
            buf: dv.buf.cast(),
            wqe_count,
            stride: dv.stride,
            max_sge: dv.stride / 16 - 1,
            dbrec: dv.dbrec,
            srqn: dv.srqn,
        });
        Ok(srq)
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
            send_cq: send_cq.raw,
            recv_cq: recv_cq.raw,
            srq: srq.raw,
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
        // SAFETY: live PD, CQs and SRQ of the same context; valid attributes.
        let raw = unsafe { (verbs.ibv.create_qp)(self.inner.raw, &mut init) };
        if raw.is_null() {
            tracing::error!(
                "verbs: ibv_create_qp(RC, {sq_wqebb_count}) failed: {}",
                os_error()
            );
            return Err(Status::NoMemory);
        }
        // SAFETY: a successful create_qp returns a valid ibv_qp.
        let qpn = unsafe { (*raw).qp_num };
        let mut qp = VerbsQp {
            pd: self.inner.clone(),
            raw,
            qpn,
            ring: None,
            bf_reg: std::ptr::null_mut(),
            bf_size: 0,
        };
        // SAFETY: all-zero is a valid mlx5dv_qp.
        let mut dv: ffi::mlx5dv_qp = unsafe { std::mem::zeroed() };
        let mut obj = ffi::mlx5dv_obj::default();
        obj.qp.r#in = raw;
        obj.qp.out = &mut dv;
        // SAFETY: `obj` names a live QP and a writable out.
        if unsafe { (verbs.mlx5.init_obj)(&mut obj, ffi::MLX5DV_OBJ_QP) } != 0 {
            tracing::error!("verbs: mlx5dv_init_obj(QP {qpn:#x}) failed: {}", os_error());
            return Err(Status::IoError);
        }
        if dv.sq.stride != 64 || !dv.sq.wqe_cnt.is_power_of_two() {
            tracing::error!(
                "verbs: QP {qpn:#x} send ring has {} entries of {} bytes",
                dv.sq.wqe_cnt,
                dv.sq.stride
            );
            return Err(Status::Unsupported);
        }
        qp.ring = Some(SendRing {
            buf: dv.sq.buf.cast(),
            wqebb_count: dv.sq.wqe_cnt,
            dbrec: dv.dbrec,
            qpn,
        });
        qp.bf_reg = dv.bf.reg.cast();
        qp.bf_size = dv.bf.size;
        Ok(qp)
    }
}

/// A memory registration.
pub struct VerbsMr {
    pd: Arc<PdInner>,
    raw: *mut ffi::ibv_mr,
    keys: MrKeys,
}

// SAFETY: see Context.
unsafe impl Send for VerbsMr {}
// SAFETY: see Context.
unsafe impl Sync for VerbsMr {}

impl VerbsMr {
    pub fn keys(&self) -> MrKeys {
        self.keys
    }
}

impl Drop for VerbsMr {
    fn drop(&mut self) {
        // SAFETY: `raw` came from reg_mr and is deregistered once.
        if unsafe { (self.pd.context.verbs.ibv.dereg_mr)(self.raw) } != 0 {
            tracing::warn!("verbs: ibv_dereg_mr failed: {}", os_error());
        }
    }
}

/// A completion queue and its CQE64 ring.
pub struct VerbsCq {
    context: Arc<Context>,
    raw: *mut ffi::ibv_cq,
    ring: Option<CqRing>,
}

// SAFETY: see Context.
unsafe impl Send for VerbsCq {}
// SAFETY: see Context.
unsafe impl Sync for VerbsCq {}

impl VerbsCq {
    /// The ring (always present on a CQ returned by `create_cq`).
    pub fn ring(&self) -> Option<CqRing> {
        self.ring
    }
}

impl Drop for VerbsCq {
    fn drop(&mut self) {
        // SAFETY: `raw` came from create_cq and is destroyed once. QPs using
        // it must be gone first: the hca layer keeps CQs alive for them.
        if unsafe { (self.context.verbs.ibv.destroy_cq)(self.raw) } != 0 {
            tracing::warn!("verbs: ibv_destroy_cq failed: {}", os_error());
        }
    }
}

/// A shared receive queue and its ring.
pub struct VerbsSrq {
    pd: Arc<PdInner>,
    raw: *mut ffi::ibv_srq,
    ring: Option<RecvRing>,
}

// SAFETY: see Context.
unsafe impl Send for VerbsSrq {}
// SAFETY: see Context.
unsafe impl Sync for VerbsSrq {}

impl VerbsSrq {
    pub fn ring(&self) -> Option<RecvRing> {
        self.ring
    }
}

impl Drop for VerbsSrq {
    fn drop(&mut self) {
        // SAFETY: `raw` came from create_srq and is destroyed once.
        if unsafe { (self.pd.context.verbs.ibv.destroy_srq)(self.raw) } != 0 {
            tracing::warn!("verbs: ibv_destroy_srq failed: {}", os_error());
        }
    }
}

/// How to reach the peer port (the address vector of RTR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressVector {
    /// InfiniBand, same subnet: the peer's LID.
    Ib { lid: u16 },
    /// RoCE: the peer's GID, and the index of our GID to send from.
    Roce { gid: [u8; 16], sgid_index: u8 },
}

/// INIT→RTR attributes for a real device (`RtrAttr` with an address vector
/// in place of the soft HCA's socket address).
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

/// An RC QP, its send ring and BlueFlame register.
pub struct VerbsQp {
    pd: Arc<PdInner>,
    raw: *mut ffi::ibv_qp,
    qpn: u32,
    ring: Option<SendRing>,
    bf_reg: *mut u8,
    bf_size: u32,
}

// SAFETY: see Context.
unsafe impl Send for VerbsQp {}
// SAFETY: see Context.
unsafe impl Sync for VerbsQp {}

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
            attr.dest_qp_num = rtr.dest_qpn;
            attr.rq_psn = rtr.rq_psn & 0x00ff_ffff;
            attr.path_mtu = rtr.path_mtu as u32;
            attr.min_rnr_timer = rtr.min_rnr_timer;
            attr.max_dest_rd_atomic = rtr.max_dest_rd_atomic;
            attr.ah_attr.port_num = rtr.port;
            match rtr.av {
                AddressVector::Ib { lid } => attr.ah_attr.dlid = lid,
                AddressVector::Roce { gid, sgid_index } => {
                    attr.ah_attr.is_global = 1;
                    attr.ah_attr.grh.dgid = ffi::ibv_gid { raw: gid };
                    attr.ah_attr.grh.sgid_index = sgid_index;
                    attr.ah_attr.grh.hop_limit = 64;
                }
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

/// `QpTransition` for a real device (port and address vector explicit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerbsTransition {
    Init { port: u8, access: Access },
    Rtr(VerbsRtr),
    Rts(RtsAttr),
    Error,
    Reset,
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

impl VerbsQp {
    pub fn qpn(&self) -> u32 {
        self.qpn
    }

    pub fn send_ring(&self) -> Option<SendRing> {
        self.ring
    }

    /// The BlueFlame register and its size (the doorbell target).
    pub fn blueflame(&self) -> (*mut u8, u32) {
        (self.bf_reg, self.bf_size)
    }

    pub fn modify(&self, transition: VerbsTransition) -> Result<(), Status> {
        let (mut attr, mask) = transition_attrs(&transition);
        let verbs = self.pd.context.verbs;
        let mask = c_int::try_from(mask).map_err(|_| Status::InvalidParam)?;
        // SAFETY: live QP; `attr` is valid for the bits in `mask`.
        if unsafe { (verbs.ibv.modify_qp)(self.raw, &mut attr, mask) } != 0 {
            tracing::error!(
                "verbs: ibv_modify_qp({:#x}, {transition:?}) failed: {}",
                self.qpn,
                os_error()
            );
            return Err(Status::IoError);
        }
        Ok(())
    }

    /// State, PSNs and peer QPN (the failover token fields).
    pub fn query(&self) -> Result<QpInfo, Status> {
        let verbs = self.pd.context.verbs;
        let mut attr = ffi::ibv_qp_attr::default();
        // SAFETY: all-zero is a valid ibv_qp_init_attr (NULL pointers).
        let mut init: ffi::ibv_qp_init_attr = unsafe { std::mem::zeroed() };
        let mask =
            ffi::IBV_QP_STATE | ffi::IBV_QP_RQ_PSN | ffi::IBV_QP_SQ_PSN | ffi::IBV_QP_DEST_QPN;
        let mask = c_int::try_from(mask).map_err(|_| Status::InvalidParam)?;
        // SAFETY: live QP; writable outputs.
        if unsafe { (verbs.ibv.query_qp)(self.raw, &mut attr, mask, &mut init) } != 0 {
            tracing::error!(
                "verbs: ibv_query_qp({:#x}) failed: {}",
                self.qpn,
                os_error()
            );
            return Err(Status::IoError);
        }
        let state = qp_state_from_ibv(attr.qp_state).ok_or_else(|| {
            tracing::error!(
                "verbs: QP {:#x} in unexpected state {}",
                self.qpn,
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

impl Drop for VerbsQp {
    fn drop(&mut self) {
        // SAFETY: `raw` came from create_qp and is destroyed once.
        if unsafe { (self.pd.context.verbs.ibv.destroy_qp)(self.raw) } != 0 {
            tracing::warn!(
                "verbs: ibv_destroy_qp({:#x}) failed: {}",
                self.qpn,
                os_error()
            );
        }
    }
}

/// Rings a real QP's doorbell: the first 8 bytes of the last WQE's control
/// segment go to the QP's BlueFlame register, alternating between its two
/// halves as mlx5 expects (each ring uses the other buffer). Clones share
/// the alternation.
#[derive(Clone)]
pub struct VerbsDoorbell {
    reg: *mut u8,
    size: u32,
    next_offset: Arc<std::sync::atomic::AtomicU32>,
}

// SAFETY: `reg` is a device register mapped for the life of the QP; writes
// to it from any thread are what the device expects, and the alternating
// offset is atomic.
unsafe impl Send for VerbsDoorbell {}
// SAFETY: as above.
unsafe impl Sync for VerbsDoorbell {}

impl VerbsQp {
    /// The doorbell of this QP; it must not outlive the QP.
    pub fn doorbell(&self) -> VerbsDoorbell {
        VerbsDoorbell {
            reg: self.bf_reg,
            size: self.bf_size,
            next_offset: Arc::new(std::sync::atomic::AtomicU32::new(0)),
        }
    }
}

/// Orders earlier stores (the WQE, the doorbell record) before a
/// following store to device memory, and pushes write-combined stores out.
#[inline]
fn device_store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no preconditions (SSE is baseline on x86_64).
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

impl VerbsDoorbell {
    /// Call after the WQEs and the doorbell record are written (see
    /// `hca::Doorbell::ring`). `last_wqe` must point at a control segment.
    #[inline]
    pub fn ring(&self, last_wqe: *const u8) {
        if self.reg.is_null() {
            return;
        }
        // The doorbell record must be visible to the device before the
        // register write makes it look.
        device_store_fence();
        let offset = if self.size > 0 {
            self.next_offset
                .fetch_xor(self.size, std::sync::atomic::Ordering::Relaxed)
        } else {
            0
        };
        // SAFETY: `last_wqe` points at a control segment in the send ring
        // (at least 16 readable bytes); `reg + offset` is inside the QP's
        // mapped BlueFlame register (offset is 0 or bf.size, and the
        // register spans two halves of bf.size bytes). An 8-byte aligned
        // volatile store is one MMIO write.
        unsafe {
            let ctrl = std::ptr::read_unaligned(last_wqe.cast::<u64>());
            std::ptr::write_volatile(self.reg.add(offset as usize).cast::<u64>(), ctrl);
        }
        // Flush the write-combining buffer so the doorbell leaves now.
        device_store_fence();
    }
}
