//! The rc_mlx5 iface: send and receive CQs on one event channel, an SRQ of
//! registered bounce buffers, a pool of send bounce buffers, the table of
//! eps by QP number, and progress (send completions, receives, pending).
//!
//! Receive buffer layout (one pool buffer, `rx_offset` = payload offset):
//! `lkey (4) | pad (4) | … | release-desc pointer (8) | user headroom
//! (rx_headroom) | payload`, where the SRQ entry points one byte before the
//! payload so the 1-byte AM header lands there. A descriptor kept by an AM
//! handler (`UCS_INPROGRESS`) has the pointer to the iface's
//! `uct_recv_desc_t` right before the user headroom, as UCX's
//! `uct_iface_release_desc` expects.

use std::collections::HashMap;
use std::ffi::{c_int, c_uint, c_void};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::abi::*;
use crate::core::callbackq::CallbackId;
use crate::core::config::{RcMlx5IfaceConfig, Ulunits};
use crate::core::iface::BaseIface;
use crate::core::tombstone::{TombstoneYard, EP_QUARANTINE};
use crate::core::worker::Worker;
use crate::hca::{
    Cq, CqRing, DeviceAddress, EventChannel, Mtu, Qp, QpInitAttr, RecvRing, Srq, SrqInitAttr,
};
use crate::ib::domain::Domain;
use crate::ib::md::Md;
use crate::mlx5::{self, Cqe64, DataSeg, SrqNextSeg};
use crate::rc::ep::{EpState, RcEp, MAX_WQE_BBS};
use crate::rc::fc::{FcConfig, Request, RxHeader, FC_MASK};
use crate::rc::pool::{BufferPool, LKEY_BYTES};

/// Bytes of the AM header in every AM SEND, as UCX 1.13's rc_mlx5 lays it
/// out (`uct_rc_mlx5_hdr_t`), so that its AMs and ours read the same: a
/// tag-matching opcode byte ([`TMH_NO_TAG`]: no hardware tag matching),
/// then the AM id with the flow-control bits ([`crate::rc::fc`]).
pub const AM_HDR_LEN: usize = 2;
/// Offset of the AM id byte in the AM header.
pub const AM_ID_OFFSET: usize = 1;
/// `IBV_TMH_NO_TAG`: the first AM header byte of a message that is not a
/// hardware tag-matching one.
pub const TMH_NO_TAG: u8 = 0;

/// The AM header carrying `id_byte` (AM id and flow-control bits).
#[inline(always)]
pub fn am_header(id_byte: u8) -> [u8; AM_HDR_LEN] {
    [TMH_NO_TAG, id_byte]
}

/// Largest am_zcopy header: with the AM id it fills four inline units,
/// which leaves room for the iov's data segments in the largest WQE.
pub const AM_ZCOPY_MAX_HDR: usize = 4 * mlx5::SEG_LEN - 4 - AM_HDR_LEN;

/// Data bytes that fit inline in the largest WQE after the control segment
/// and `extra_units` 16-byte segments.
const fn inline_room(extra_units: usize) -> usize {
    (MAX_WQE_BBS as usize * 4 - 1 - extra_units) * mlx5::SEG_LEN - 4
}

/// Limits and settings derived from the configuration once at open.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Bounce buffer size (`UCX_RC_MLX5_SEG_SIZE`): the largest SEND.
    pub seg_size: usize,
    pub rx_headroom: usize,
    /// AM header + payload of `am_short` (the 8-byte header included).
    pub am_max_short: usize,
    pub am_max_bcopy: usize,
    /// AM zcopy: header bytes sent inline, and header + payload in total.
    pub am_max_hdr: usize,
    pub am_max_zcopy: usize,
    pub put_max_short: usize,
    pub put_max_bcopy: usize,
    /// get_short: a READ into a bounce buffer copied out on completion.
    /// As large as put_short, so the short protocols of both directions
    /// switch to bcopy at the same size and the copy stays small.
    pub get_max_short: usize,
    pub get_max_bcopy: usize,
    pub max_zcopy: usize,
    /// Data segments of a zcopy RMA WQE.
    pub max_iov: usize,
    /// Signal at least every this many send blocks.
    pub tx_moderation: u32,
    pub tx_ring_bbs: u32,
    pub ack_timeout: Duration,
    pub retry_count: u8,
    pub rnr_timeout: Duration,
    pub rnr_retry_count: u8,
    pub max_rd_atomic: u8,
    pub tx_max_poll: u32,
    pub rx_max_poll: u32,
    /// SL, traffic class, hop limit of the QPs' address vectors.
    pub path: crate::hca::PathAttr,
}

/// The `uct_recv_desc_t` of an iface's receive descriptors, with the way
/// back to the iface (the release callback gets a pointer to this).
#[repr(C)]
pub struct ReleaseDesc {
    pub desc: uct_recv_desc_t,
    pub iface: *mut RcIface,
}

/// Everything of the iface beyond the base.
pub struct IfaceState {
    pub domain: Arc<Domain>,
    pub limits: Limits,
    pub path_mtu: Mtu,
    pub address: DeviceAddress,
    pub atomic_result_order: crate::hca::AtomicResultOrder,
    pub channel: EventChannel,
    pub tx_cq: Cq,
    tx_cq_ring: CqRing,
    tx_ci: u32,
    pub rx_cq: Cq,
    rx_cq_ring: CqRing,
    rx_ci: u32,
    pub srq: Srq,
    srq_ring: RecvRing,
    /// Receive WQEs published so far (the SRQ counter). The device takes
    /// entries in ring order (0, 1, …, wrapping), so the counter may only
    /// move over entries in that order: an entry given a buffer while an
    /// earlier one is still in the device's hands waits in `srq_ready`,
    /// otherwise the device would take the busy one again.
    srq_posted: u16,
    /// Entries holding a fresh buffer that the counter has not reached.
    srq_ready: Vec<bool>,
    /// Entries left without a buffer (the receive pool was empty); refilled
    /// by the next publish.
    srq_starved: Vec<u16>,
    /// The buffer each SRQ entry points at.
    srq_buffers: Vec<*mut u8>,
    pub rx_pool: BufferPool,
    /// Offset of the payload in a receive buffer.
    rx_offset: usize,
    pub tx_pool: BufferPool,
    /// Send CQEs that may still arrive without overflowing the send CQ: one
    /// per outstanding WQE (after an error every WQE gets a CQE).
    pub tx_credits: u32,
    /// `tx_credits` when nothing is outstanding.
    pub tx_credits_max: u32,
    /// Live eps by QP number.
    pub eps: HashMap<u32, *mut RcEp>,
    /// Where eps live: new ones are housed here, destroyed ones stay as
    /// tombstones until close ([`crate::core::tombstone`]).
    pub ep_yard: TombstoneYard<RcEp>,
    err_handler: uct_error_handler_t,
    err_handler_arg: *mut c_void,
    progress_id: Option<CallbackId>,
    /// Boxed so its address is stable for descriptors handed out.
    pub release_desc: Box<ReleaseDesc>,
    /// AM flow control settings.
    pub fc: FcConfig,
    /// A grant reopened an exhausted window, or a grant message waits to
    /// be posted: the next progress dispatches pending work.
    fc_dispatch: bool,
}

/// The iface (what a `uct_iface_h` points at).
#[repr(C)]
pub struct RcIface {
    pub base: BaseIface,
    pub state: IfaceState,
}

fn ulunits_or(value: Ulunits, auto: u64) -> u64 {
    match value {
        Ulunits::Value(v) => v,
        Ulunits::Inf => u64::MAX,
        Ulunits::Auto => auto,
    }
}

impl Limits {
    fn new(config: &RcMlx5IfaceConfig, rx_headroom: usize, max_rd_atomic_dev: u8) -> Limits {
        let seg_size = (config.seg_size.bytes_or(8192) as usize).clamp(256, 1 << 20);
        let tx_ring_bbs = (config.tx_queue_len.max(16) * u32::from(MAX_WQE_BBS))
            .next_power_of_two()
            .min(crate::hca::soft::MAX_QP_WQEBB);
        Limits {
            seg_size,
            rx_headroom,
            am_max_short: inline_room(0) - AM_HDR_LEN,
            am_max_bcopy: seg_size - AM_HDR_LEN,
            am_max_hdr: AM_ZCOPY_MAX_HDR,
            am_max_zcopy: seg_size - AM_HDR_LEN,
            put_max_short: inline_room(1),
            put_max_bcopy: seg_size,
            get_max_short: inline_room(1).min(seg_size),
            get_max_bcopy: seg_size,
            max_zcopy: 1 << 30,
            max_iov: MAX_WQE_BBS as usize * 4 - 2,
            tx_moderation: config.tx_cq_moderation.max(1),
            tx_ring_bbs,
            ack_timeout: config.timeout,
            retry_count: config.retry_count.min(7) as u8,
            rnr_timeout: config.rnr_timeout,
            rnr_retry_count: config.rnr_retry_count.min(7) as u8,
            max_rd_atomic: ulunits_or(config.max_rd_atomic, u64::from(max_rd_atomic_dev))
                .clamp(1, u64::from(max_rd_atomic_dev.max(1))) as u8,
            tx_max_poll: config.tx_max_poll.max(1),
            rx_max_poll: config.rx_max_poll.max(1),
            path: crate::hca::PathAttr::from_config(config),
        }
    }
}

/// Tracks whether the worker progresses this iface.
unsafe extern "C" fn worker_progress(arg: *mut c_void) -> c_uint {
    // SAFETY: registered with the live iface as argument; unregistered in
    // close before the iface is freed.
    unsafe { RcIface::progress(arg as *mut RcIface) }
}

/// Releases a receive descriptor kept by an AM handler.
unsafe extern "C" fn release_rx_desc(self_: *mut uct_recv_desc_t, desc: *mut c_void) {
    // SAFETY: self_ is the iface's ReleaseDesc (repr(C), desc first), which
    // lives as long as the iface; the user releases before closing it.
    let iface = unsafe { (*(self_ as *mut ReleaseDesc)).iface };
    // SAFETY: as above.
    let state = unsafe { &mut (*iface).state };
    // `desc` is the payload minus the user headroom.
    let payload = desc as usize + state.limits.rx_headroom;
    state.rx_pool.put((payload - state.rx_offset) as *mut u8);
    // Receive entries left without a buffer get this one.
    if !state.srq_starved.is_empty() {
        state.publish_srq();
    }
}

/// Moves an SRQ counter at `posted` over the ready entries of `ready` (a
/// power-of-two ring) in ring order, clearing them; stops at the first
/// entry that is not ready. Returns the new counter.
fn advance_over_ready(ready: &mut [bool], mut posted: u16) -> u16 {
    let mask = (ready.len() - 1) as u16;
    while let Some(entry) = ready.get_mut(usize::from(posted & mask)) {
        if !std::mem::take(entry) {
            break;
        }
        posted = posted.wrapping_add(1);
    }
    posted
}

impl RcIface {
    /// Opens an iface on the md's device.
    ///
    /// # Safety
    /// `params` valid per its field mask (checked by `uct_iface_open`).
    pub unsafe fn open(
        md: &Md,
        md_handle: uct_md_h,
        worker: uct_worker_h,
        params: *const uct_iface_params_t,
        config: &RcMlx5IfaceConfig,
    ) -> Result<uct_iface_h, Status> {
        // SAFETY: valid per the contract; only fields whose bits are set.
        let (rx_headroom, err_handler, err_handler_arg) = unsafe {
            let p = &*params;
            (
                if p.field_mask & UCT_IFACE_PARAM_FIELD_RX_HEADROOM != 0 {
                    p.rx_headroom
                } else {
                    0
                },
                if p.field_mask & UCT_IFACE_PARAM_FIELD_ERR_HANDLER != 0 {
                    p.err_handler
                } else {
                    None
                },
                if p.field_mask & UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG != 0 {
                    p.err_handler_arg
                } else {
                    std::ptr::null_mut()
                },
            )
        };
        if rx_headroom > 4096 {
            tracing::warn!("uct_iface_open: rx_headroom {rx_headroom} is too large");
            return Err(Status::InvalidParam);
        }
        let domain = Domain::get(&md.device().name)?;
        let device = &domain.device;
        let device_attr = device.attr();
        let port = device.port_attr(crate::hca::devices::DEVICE_PORT)?;
        let limits = Limits::new(config, rx_headroom, device_attr.max_rd_atomic);
        let path_mtu = config
            .path_mtu
            .and_then(Mtu::from_bytes)
            .map_or(port.active_mtu, |mtu| mtu.min(port.active_mtu));
        let channel = device.create_event_channel()?;
        let tx_cq_len = config.tx_cq_len.max(64).next_power_of_two();
        let tx_cq = device.create_cq(tx_cq_len, Some(&channel))?;
        let rx_queue_len = config.rx_queue_len.clamp(16, device_attr.max_srq_wqe);
        let srq = domain.pd.create_srq(SrqInitAttr {
            wqe_count: rx_queue_len,
            max_sge: 1,
        })?;
        let srq_ring = srq.ring();
        let rx_cq = device.create_cq(srq_ring.wqe_count * 2, Some(&channel))?;
        let rx_offset = (LKEY_BYTES + 8 + rx_headroom).next_multiple_of(8);
        let rx_pool = BufferPool::new(
            Arc::clone(&domain),
            rx_offset - AM_HDR_LEN + limits.seg_size,
            256,
            usize::MAX,
        );
        let tx_pool = BufferPool::new(
            Arc::clone(&domain),
            LKEY_BYTES + limits.seg_size,
            64,
            usize::MAX,
        );
        let tx_cq_ring = tx_cq.ring();
        let rx_cq_ring = rx_cq.ring();
        let mut iface = Box::new(RcIface {
            base: BaseIface::with_ops(
                md_handle,
                worker,
                crate::rc::slots::iface_ops(),
                &crate::rc::slots::INTERNAL_OPS,
            ),
            state: IfaceState {
                address: port.address,
                atomic_result_order: device_attr.atomic_result_order,
                limits,
                path_mtu,
                channel,
                tx_credits: tx_cq_ring.cqe_count / 2,
                tx_credits_max: tx_cq_ring.cqe_count / 2,
                tx_cq,
                tx_cq_ring,
                tx_ci: 0,
                rx_cq,
                rx_cq_ring,
                rx_ci: 0,
                srq,
                srq_ring,
                srq_posted: 0,
                srq_ready: vec![false; srq_ring.wqe_count as usize],
                srq_starved: Vec::new(),
                srq_buffers: vec![std::ptr::null_mut(); srq_ring.wqe_count as usize],
                rx_pool,
                rx_offset,
                tx_pool,
                eps: HashMap::new(),
                ep_yard: TombstoneYard::new(EP_QUARANTINE),
                err_handler,
                err_handler_arg,
                progress_id: None,
                release_desc: Box::new(ReleaseDesc {
                    desc: uct_recv_desc_t {
                        cb: Some(release_rx_desc),
                    },
                    iface: std::ptr::null_mut(),
                }),
                domain,
                fc: FcConfig::new(config, srq_ring.wqe_count),
                fc_dispatch: false,
            },
        });
        let iface_ptr: *mut RcIface = &mut *iface;
        iface.state.release_desc.iface = iface_ptr;
        for index in 0..srq_ring.wqe_count as u16 {
            let buffer = iface.state.rx_pool.get()?;
            iface.state.post_recv(index, buffer);
        }
        iface.state.publish_srq();
        tracing::debug!(
            "rc_mlx5 iface {iface_ptr:p} on {}: mtu {}, seg {}, srq {}, tx cq {}",
            md.device().name,
            path_mtu.bytes(),
            iface.state.limits.seg_size,
            srq_ring.wqe_count,
            tx_cq_ring.cqe_count
        );
        Ok(Box::into_raw(iface) as uct_iface_h)
    }

    /// Our iface behind `iface`, or `InvalidParam`.
    ///
    /// # Safety
    /// `iface` NULL or an iface of this library.
    pub unsafe fn from_handle<'a>(
        iface: uct_iface_h,
        function: &str,
    ) -> Result<&'a mut RcIface, Status> {
        if iface.is_null() {
            tracing::warn!("{function}: iface is NULL");
            return Err(Status::InvalidParam);
        }
        // SAFETY: non-NULL; every iface of this library starts with a
        // BaseIface (its magic and internal-ops table tell an open rc iface).
        let base = unsafe { &*(iface as *const BaseIface) };
        if !base.is_valid() || !std::ptr::eq(base.internal_ops, &crate::rc::slots::INTERNAL_OPS) {
            tracing::warn!("{function}: {iface:p} is not an open rc_mlx5 iface");
            return Err(Status::InvalidParam);
        }
        // SAFETY: an rc iface (checked above) is an RcIface.
        Ok(unsafe { &mut *(iface as *mut RcIface) })
    }

    /// Closes the iface: unregisters progress, destroys remaining eps, and
    /// frees every ep's memory with the iface (the tombstones of destroyed
    /// ones too: a handle used after its iface closed is invalid, as in UCX).
    ///
    /// # Safety
    /// A live iface from `open`, closed once.
    pub unsafe fn close(iface: *mut RcIface) {
        // SAFETY: live by the contract.
        let this = unsafe { &mut *iface };
        this.progress_disable_all();
        let eps: Vec<*mut RcEp> = this.state.eps.values().copied().collect();
        for ep in eps {
            tracing::debug!("rc_mlx5 iface {iface:p}: destroying ep {ep:p} left open");
            // SAFETY: eps in the table are live.
            unsafe { Self::destroy_ep(ep) };
        }
        this.base.invalidate();
        // SAFETY: from Box::into_raw in open.
        drop(unsafe { Box::from_raw(iface) });
    }

    /// Destroys an ep: removed from the table, QP destroyed, bounce buffers
    /// of its outstanding ops returned (their completions are not called,
    /// as in UCX: flush before destroying). Its memory stays behind as a
    /// tombstone: every later op on the handle returns
    /// [`crate::core::tombstone::DESTROYED_EP_STATUS`] and posts nothing.
    ///
    /// # Safety
    /// A live ep of a live iface.
    pub unsafe fn destroy_ep(ep: *mut RcEp) {
        // SAFETY: live by the contract.
        let this = unsafe { &mut *ep };
        let iface = this.iface;
        // SAFETY: the ep's iface outlives it.
        let state = unsafe { &mut (*iface).state };
        state.eps.remove(&this.qpn());
        for op in this.ops.ops.drain(..) {
            if let Some(bounce) = op.bounce {
                state.tx_pool.put(bounce.buffer);
            }
            state.tx_credits += 1;
        }
        this.invalidate();
        // SAFETY: housed by the iface's yard in ep_create (non-NULL), live
        // until here; no reference to it is used after this call.
        unsafe { state.ep_yard.bury(NonNull::new_unchecked(ep)) };
    }

    /// Calls the user's error handler for `ep` and returns its answer
    /// (`status` itself when no handler is set: nothing holds the ops).
    ///
    /// # Safety
    /// Live iface and ep.
    pub unsafe fn report_error(iface: *mut RcIface, ep: uct_ep_h, status: Status) -> ucs_status_t {
        // SAFETY: live by the contract.
        let (handler, arg) =
            unsafe { ((*iface).state.err_handler, (*iface).state.err_handler_arg) };
        match handler {
            Some(handler) => {
                // SAFETY: the user's handler with its argument.
                let answer = unsafe { handler(arg, ep, status.raw()) };
                if answer != UCS_OK {
                    tracing::debug!("rc_mlx5: error handler answered {answer} for ep {ep:p}");
                }
                answer
            }
            None => {
                tracing::error!(
                    "rc_mlx5 ep {ep:p}: transport error {status} and no error handler is set"
                );
                status.raw()
            }
        }
    }

    /// Whether `uct_iface_query_v2` advertises `UCT_IFACE_FLAG_V2_QUERY_TOKEN`
    /// on this iface: rc_mlx5 always derives tokens (`crate::rc::failover`),
    /// so an error handler answering `UCS_INPROGRESS` holds the ops.
    pub fn advertises_query_token(&self) -> bool {
        true
    }

    /// Calls `f` with each live ep of this iface and the iface's state, in
    /// table order, until `f` fails. `f` must not run user callbacks (so no
    /// ep is destroyed meanwhile).
    pub fn try_for_each_ep(
        &mut self,
        mut f: impl FnMut(&mut RcEp, &mut IfaceState) -> Result<(), Status>,
    ) -> Result<(), Status> {
        let eps: Vec<*mut RcEp> = self.state.eps.values().copied().collect();
        for ep in eps {
            // SAFETY: eps in the table are live, each in its own allocation
            // apart from the iface state; `f` runs no callback.
            f(unsafe { &mut *ep }, &mut self.state)?;
        }
        Ok(())
    }

    pub fn progress_enable(&mut self, flags: c_uint) {
        if flags & (UCT_PROGRESS_SEND | UCT_PROGRESS_RECV) == 0 || self.state.progress_id.is_some()
        {
            return;
        }
        // SAFETY: the worker handle was validated at open and outlives ifaces.
        let Ok(worker) = (unsafe { crate::core::worker::worker_ref(self.base.worker, "rc") })
        else {
            return;
        };
        let arg = self as *mut RcIface as *mut c_void;
        self.state.progress_id = Some(worker.register(worker_progress, arg, 0));
    }

    fn progress_disable_all(&mut self) {
        if let Some(id) = self.state.progress_id.take() {
            // SAFETY: as in progress_enable.
            if let Ok(worker) = unsafe { crate::core::worker::worker_ref(self.base.worker, "rc") } {
                let worker: &Worker = worker;
                worker.unregister(id);
            }
        }
    }

    pub fn progress_disable(&mut self, flags: c_uint) {
        if flags & (UCT_PROGRESS_SEND | UCT_PROGRESS_RECV) != 0 {
            self.progress_disable_all();
        }
    }

    /// One progress pass: the device, send completions, receives, then
    /// pending requests of eps with room. Returns the events handled.
    ///
    /// # Safety
    /// A live iface. User callbacks run from here.
    pub unsafe fn progress(iface: *mut RcIface) -> c_uint {
        // SAFETY: live by the contract; short borrows around callbacks.
        unsafe {
            let domain: &Arc<Domain> = &(*iface).state.domain;
            domain.device.progress();
            let tx = Self::poll_tx(iface);
            let rx = Self::poll_rx(iface);
            if tx > 0 || std::mem::take(&mut (*iface).state.fc_dispatch) {
                Self::dispatch_pending(iface);
            }
            tx + rx
        }
    }

    /// Polls the send CQ.
    ///
    /// # Safety
    /// A live iface.
    unsafe fn poll_tx(iface: *mut RcIface) -> c_uint {
        let mut count = 0;
        // SAFETY: live by the contract.
        let max = unsafe { (*iface).state.limits.tx_max_poll };
        while count < max {
            // SAFETY: as above; the borrow ends here.
            let Some(cqe) = (unsafe { (*iface).state.poll_cq(false) }) else {
                break;
            };
            count += 1;
            // SAFETY: as above.
            let ep = unsafe { (*iface).state.eps.get(&cqe.qpn).copied() };
            let Some(ep) = ep else {
                tracing::debug!("rc_mlx5: send CQE for unknown QP 0x{:x}", cqe.qpn);
                continue;
            };
            if cqe.is_error() {
                let status = crate::rc::ep::syndrome_status(cqe.syndrome);
                if cqe.syndrome != mlx5::MLX5_CQE_SYNDROME_WR_FLUSH_ERR {
                    tracing::debug!(
                        "rc_mlx5 ep {ep:p}: error CQE syndrome 0x{:x} (vendor 0x{:x}) at WQE {}",
                        cqe.syndrome,
                        cqe.vendor_syndrome,
                        cqe.wqe_counter
                    );
                }
                // SAFETY: eps in the table are live.
                unsafe { RcEp::fail(ep, cqe.wqe_counter, status) };
            } else {
                // SAFETY: as above.
                unsafe { RcEp::complete_through(ep, cqe.wqe_counter) };
            }
        }
        count
    }

    /// Polls the receive CQ and delivers AMs.
    ///
    /// # Safety
    /// A live iface.
    unsafe fn poll_rx(iface: *mut RcIface) -> c_uint {
        let mut count = 0;
        // SAFETY: live by the contract.
        let max = unsafe { (*iface).state.limits.rx_max_poll };
        while count < max {
            // SAFETY: as above; the borrow ends here.
            let Some(cqe_bytes) = (unsafe { (*iface).state.poll_cq_bytes(true) }) else {
                break;
            };
            let cqe = Cqe64::decode(&cqe_bytes);
            count += 1;
            // SAFETY: as above; the borrow ends before the handler runs.
            let (index, buffer, payload, len, am_id) = unsafe {
                let state = &mut (*iface).state;
                let index = cqe.wqe_counter & (state.srq_ring.wqe_count as u16 - 1);
                let buffer = state.srq_buffers[usize::from(index)];
                let payload = buffer.add(state.rx_offset);
                let len = cqe.byte_cnt as usize;
                let mut valid = !cqe.is_error()
                    && cqe.opcode == mlx5::MLX5_CQE_RESP_SEND
                    && (AM_HDR_LEN..=state.limits.seg_size).contains(&len);
                // Scatter-to-CQE (libmlx5's default): a short message is in
                // the CQE, not the buffer. Moving it into the buffer keeps
                // one dispatch path and lets a handler keep the descriptor.
                if valid && mlx5::cqe_format_is_special(cqe_bytes[mlx5::CQE_OP_OWN_OFFSET]) {
                    valid = Self::take_inline_rx(&cqe_bytes, payload.sub(AM_HDR_LEN));
                }
                // A hardware tag-matching message (a peer with TM on) is
                // not an AM: dropped below, with the line saying so.
                valid = valid && payload.sub(AM_HDR_LEN).read() == TMH_NO_TAG;
                if !valid {
                    if cqe.is_error() {
                        tracing::warn!("rc_mlx5: receive error CQE syndrome 0x{:x}", cqe.syndrome);
                    } else {
                        tracing::warn!(
                            "rc_mlx5: dropped receive of {len} bytes (opcode {})",
                            cqe.opcode
                        );
                    }
                    state.post_recv(index, buffer);
                    state.publish_srq();
                    continue;
                }
                let header = payload.sub(AM_HDR_LEN - AM_ID_OFFSET).read();
                let len = len - AM_HDR_LEN;
                let am_id = if header & FC_MASK == 0 {
                    header
                } else {
                    match Self::handle_fc(iface, cqe.qpn, header, len) {
                        Some(am_id) => am_id,
                        // The grant message or a malformed header: nothing
                        // for the user; the buffer goes back at once.
                        None => {
                            let state = &mut (*iface).state;
                            state.post_recv(index, buffer);
                            state.publish_srq();
                            continue;
                        }
                    }
                };
                (index, buffer, payload, len, am_id)
            };
            // SAFETY: the payload is `len` bytes of the receive buffer, which
            // stays ours (or the handler's, with FLAG_DESC) during the call.
            let status = unsafe {
                (*iface)
                    .base
                    .invoke_am(am_id, payload as *mut c_void, len, UCT_CB_PARAM_FLAG_DESC)
            };
            // SAFETY: as above.
            unsafe {
                let state = &mut (*iface).state;
                let next = if status == UCS_INPROGRESS {
                    // The handler keeps the buffer: put the release hook in
                    // front of its headroom and give the SRQ a fresh buffer.
                    let desc_ptr = payload.sub(state.limits.rx_headroom + 8);
                    let hook: *mut uct_recv_desc_t = &mut state.release_desc.desc;
                    (desc_ptr as *mut *mut uct_recv_desc_t).write_unaligned(hook);
                    match state.rx_pool.get() {
                        Ok(fresh) => fresh,
                        Err(status) => {
                            tracing::error!("rc_mlx5: no receive buffer: {status}");
                            state.srq_starved.push(index);
                            continue;
                        }
                    }
                } else {
                    buffer
                };
                state.post_recv(index, next);
                state.publish_srq();
            }
        }
        count
    }

    /// Copies the message a receive CQE carries inline (at most 32 bytes,
    /// flagged in its format bits) to `dst`, where the receive buffer's data
    /// segment starts. False for a format we never enable (128-byte or
    /// compressed CQEs) or a byte count too long for a CQE.
    ///
    /// # Safety
    /// `dst` is the start of a receive data segment of at least
    /// `byte_cnt` bytes (the caller checked `byte_cnt <= seg_size`).
    #[cold]
    #[inline(never)]
    unsafe fn take_inline_rx(cqe: &mlx5::CqeBytes, dst: *mut u8) -> bool {
        let Some(data) = mlx5::cqe_inline_data(cqe) else {
            tracing::warn!(
                "rc_mlx5: dropped receive CQE with format bits 0x{:x}",
                cqe[mlx5::CQE_OP_OWN_OFFSET] & mlx5::MLX5_CQE_FORMAT_MASK
            );
            return false;
        };
        // SAFETY: `dst` has room for `data.len()` bytes by the contract; the
        // CQE copy is a local array, so the two cannot overlap.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        true
    }

    /// Acts on the flow-control bits of a received header (see
    /// [`crate::rc::fc`]) for the ep of QP `qpn`. Returns the AM id to
    /// deliver, or `None` when nothing is delivered (the grant message, a
    /// malformed header). Runs no user callback.
    ///
    /// # Safety
    /// A live iface.
    #[cold]
    #[inline(never)]
    unsafe fn handle_fc(iface: *mut RcIface, qpn: u32, header: u8, len: usize) -> Option<u8> {
        let parsed = RxHeader::parse(header, len);
        // SAFETY: live by the contract; no callback runs below.
        let state = unsafe { &mut (*iface).state };
        let (deliver, grant, request) = match parsed {
            RxHeader::Malformed => return None,
            RxHeader::PureGrant => (None, true, None),
            RxHeader::Am { id, grant, request } => (Some(id), grant, request),
        };
        if !grant && request.is_none() {
            return deliver;
        }
        let ep = match state.eps.get(&qpn) {
            // SAFETY: eps in the table are live.
            Some(&ep) => unsafe { &mut *ep },
            None => {
                tracing::debug!("rc_mlx5: flow-control bits for unknown QP 0x{qpn:x} ignored");
                return deliver;
            }
        };
        if ep.state != EpState::Connected {
            // Failed, canceled or being torn down: its window is moot.
            tracing::debug!(
                "rc_mlx5 ep {:p}: flow-control bits on a dead ep ignored",
                ep
            );
            return deliver;
        }
        if grant && ep.fc.granted(&state.fc) {
            // The window was exhausted: pending requests may go now.
            state.fc_dispatch = true;
        }
        match request {
            None => {}
            Some(Request::Soft) => ep.fc.owe_grant(),
            Some(Request::Hard) => match ep.post_fc_grant(&mut state.tx_credits) {
                Ok(()) => {}
                Err(Status::NoResource) => {
                    // Sent by progress before any pending request.
                    ep.fc.pure_grant_pending = true;
                    state.fc_dispatch = true;
                }
                Err(status) => {
                    tracing::debug!("rc_mlx5 ep {:p}: grant not sent: {status}", ep);
                }
            },
        }
        deliver
    }

    /// Runs pending requests of every ep that can post again.
    ///
    /// # Safety
    /// A live iface.
    unsafe fn dispatch_pending(iface: *mut RcIface) {
        // SAFETY: live by the contract.
        let eps: Vec<*mut RcEp> = unsafe {
            (*iface)
                .state
                .eps
                .values()
                .copied()
                .filter(|&ep| !(*ep).pending.is_empty() || (*ep).fc.pure_grant_pending)
                .collect()
        };
        for ep in eps {
            loop {
                // SAFETY: the ep is live unless a callback destroyed it; a
                // destroyed ep is no longer in the table.
                let req = unsafe {
                    if !(*iface).state.eps.values().any(|&e| e == ep) {
                        break;
                    }
                    let this = &mut *ep;
                    let state = &mut (*iface).state;
                    if this.fc.pure_grant_pending {
                        // The peer's window waits for it: before anything
                        // of ours.
                        match this.post_fc_grant(&mut state.tx_credits) {
                            Ok(()) => this.fc.pure_grant_pending = false,
                            Err(Status::NoResource) => break,
                            Err(status) => {
                                tracing::debug!("rc_mlx5 ep {ep:p}: grant not sent: {status}");
                                this.fc.pure_grant_pending = false;
                            }
                        }
                    }
                    // As in UCX, an exhausted window holds every pending
                    // request of the ep (not only AMs): order is kept.
                    if this.check_post(state.tx_credits).is_err() || !this.fc.has_window(&state.fc)
                    {
                        break;
                    }
                    match this.pending.pop_front() {
                        Some(req) => req,
                        None => break,
                    }
                };
                // SAFETY: the user's request, live until dispatched/purged.
                let status = unsafe {
                    match (*req).func {
                        Some(func) => func(req),
                        None => UCS_OK,
                    }
                };
                if status == UCS_OK {
                    continue;
                }
                // Not done: keep it at the head and try again later.
                // SAFETY: as above.
                unsafe {
                    if (*iface).state.eps.values().any(|&e| e == ep) {
                        (*ep).pending.push_front(req);
                    }
                }
                break;
            }
        }
    }

    /// Arms the CQs for `events`; `Busy` if completions are already waiting.
    ///
    /// As UCX's rc: `UCT_EVENT_SEND_COMP` arms the send CQ and, with flow
    /// control, the receive CQ for every completion (a grant a blocked
    /// sender waits for is a receive); `UCT_EVENT_RECV` arms the receive CQ
    /// for solicited completions, which AMs are (`MLX5_WQE_CTRL_SOLICITED`)
    /// and grants are not. `UCT_EVENT_RECV_SIG` is not a capability of
    /// rc_mlx5, so it means `UCT_EVENT_RECV` (uct.h's rule for ifaces without
    /// signaled receives). The soft HCA arms for any completion, so there a
    /// `UCT_EVENT_RECV` waiter may also wake for a grant and find no AM (a
    /// spurious wake-up; it re-arms).
    pub fn event_arm(&mut self, events: c_uint) -> Result<(), Status> {
        let state = &mut self.state;
        state.channel.clear();
        let send = events & UCT_EVENT_SEND_COMP != 0;
        let recv_solicited = events & (UCT_EVENT_RECV | UCT_EVENT_RECV_SIG) != 0;
        let recv_all = send && state.fc.enabled;
        let recv = recv_solicited || recv_all;
        if send {
            state.tx_cq.arm(state.tx_ci, false);
        }
        if recv {
            state.rx_cq.arm(state.rx_ci, recv_solicited && !recv_all);
        }
        if (send && state.peek_cq(false)) || (recv && state.peek_cq(true)) {
            return Err(Status::Busy);
        }
        Ok(())
    }

    pub fn event_fd(&self) -> c_int {
        self.state.channel.fd()
    }
}

impl IfaceState {
    /// A QP on this iface's CQs and SRQ.
    pub fn create_qp(&self) -> Result<Qp, Status> {
        self.domain.pd.create_qp(&QpInitAttr {
            send_cq: &self.tx_cq,
            recv_cq: &self.rx_cq,
            srq: &self.srq,
            sq_wqebb_count: self.limits.tx_ring_bbs,
        })
    }

    /// Writes SRQ entry `index` to receive into `buffer`; the next
    /// [`IfaceState::publish_srq`] hands it to the device.
    fn post_recv(&mut self, index: u16, buffer: *mut u8) {
        let ring = self.srq_ring;
        self.srq_buffers[usize::from(index)] = buffer;
        let mut wqe = [0u8; 2 * mlx5::SEG_LEN];
        let next = index.wrapping_add(1) & (ring.wqe_count as u16 - 1);
        let (head, data) = wqe.split_at_mut(mlx5::SEG_LEN);
        if let (Ok(head), Ok(data)) = (head.try_into(), data.try_into()) {
            SrqNextSeg {
                next_wqe_index: next,
                signature: 0,
            }
            .write(head);
            DataSeg {
                byte_count: self.limits.seg_size as u32,
                // SAFETY: rx buffers come from rx_pool.
                lkey: unsafe { BufferPool::lkey(buffer) },
                addr: buffer as u64 + (self.rx_offset - AM_HDR_LEN) as u64,
            }
            .write(data);
        }
        let at = usize::from(index) * ring.stride as usize;
        // SAFETY: the entry lies inside the SRQ ring (index < wqe_count,
        // stride >= 32 bytes for one data segment); the device reads it only
        // after the counter published below covers it.
        unsafe { std::ptr::copy_nonoverlapping(wqe.as_ptr(), ring.buf.add(at), wqe.len()) };
        self.srq_ready[usize::from(index)] = true;
    }

    /// Refills starved entries if the pool has buffers again, moves the
    /// counter over every ready entry in ring order and publishes it.
    fn publish_srq(&mut self) {
        while let Some(&index) = self.srq_starved.last() {
            let Ok(buffer) = self.rx_pool.get() else {
                break;
            };
            self.srq_starved.pop();
            self.post_recv(index, buffer);
        }
        let before = self.srq_posted;
        self.srq_posted = advance_over_ready(&mut self.srq_ready, before);
        if self.srq_posted == before {
            return;
        }
        // SAFETY: word 0 of the SRQ doorbell record, 4-aligned, valid while
        // the SRQ lives.
        let counter = unsafe { &*(self.srq_ring.dbrec as *const AtomicU32) };
        counter.store(mlx5::dbrec_word(self.srq_posted), Ordering::Release);
    }

    fn cq_slot(ring: &CqRing, ci: u32) -> (*mut u8, bool) {
        let slot = (ci & (ring.cqe_count - 1)) as usize * mlx5::CQE_LEN;
        // SAFETY: slot is inside the CQ ring of cqe_count entries.
        let entry = unsafe { ring.buf.add(slot) };
        // SAFETY: the op_own byte of that entry; read with acquire so the
        // rest of the entry, written before it, is visible.
        let op_own = unsafe { &*(entry.add(mlx5::CQE_OP_OWN_OFFSET) as *const AtomicU8) }
            .load(Ordering::Acquire);
        (entry, mlx5::cqe_is_sw_owned(op_own, ci, ring.cqe_count))
    }

    /// Whether a CQE is waiting (without consuming it).
    fn peek_cq(&self, rx: bool) -> bool {
        let (ring, ci) = if rx {
            (&self.rx_cq_ring, self.rx_ci)
        } else {
            (&self.tx_cq_ring, self.tx_ci)
        };
        Self::cq_slot(ring, ci).1
    }

    /// Takes the next CQE of the send or receive CQ.
    fn poll_cq(&mut self, rx: bool) -> Option<Cqe64> {
        self.poll_cq_bytes(rx).map(|bytes| Cqe64::decode(&bytes))
    }

    /// Takes the next CQE of the send or receive CQ, as its bytes (a
    /// receive CQE may carry the message itself).
    fn poll_cq_bytes(&mut self, rx: bool) -> Option<mlx5::CqeBytes> {
        let (ring, ci) = if rx {
            (self.rx_cq_ring, &mut self.rx_ci)
        } else {
            (self.tx_cq_ring, &mut self.tx_ci)
        };
        let (entry, ready) = Self::cq_slot(&ring, *ci);
        if !ready {
            return None;
        }
        let mut bytes = [0u8; mlx5::CQE_LEN];
        // SAFETY: a 64-byte entry inside the ring, handed over by op_own.
        unsafe { std::ptr::copy_nonoverlapping(entry, bytes.as_mut_ptr(), mlx5::CQE_LEN) };
        *ci = ci.wrapping_add(1);
        // SAFETY: word 0 of the CQ doorbell record: the consumer index.
        let dbrec = unsafe { &*(ring.dbrec as *const AtomicU32) };
        dbrec.store((*ci & 0x00ff_ffff).to_be(), Ordering::Release);
        Some(bytes)
    }
}

#[cfg(test)]
mod srq_order_tests {
    use super::advance_over_ready;

    #[test]
    fn the_counter_moves_only_over_entries_in_ring_order() {
        let mut ready = [true; 4];
        // Initial fill: all four published.
        assert_eq!(advance_over_ready(&mut ready, 0), 4);
        assert_eq!(ready, [false; 4]);
        // Entry 1 comes back before entry 0 (another QP's receive finished
        // first): the device must not be told, or it would take the busy
        // entry 0 again after entry 3.
        ready[1] = true;
        assert_eq!(advance_over_ready(&mut ready, 4), 4);
        assert_eq!(ready, [false, true, false, false]);
        // Entry 0 returns: both are published, in order.
        ready[0] = true;
        assert_eq!(advance_over_ready(&mut ready, 4), 6);
        assert_eq!(ready, [false; 4]);
        // The 16-bit counter wraps with the ring.
        ready[2] = true;
        assert_eq!(advance_over_ready(&mut ready, u16::MAX - 1), u16::MAX);
        ready[3] = true;
        assert_eq!(advance_over_ready(&mut ready, u16::MAX), 0);
    }
}
