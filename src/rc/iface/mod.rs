//! The rc_mlx5 iface: send and receive CQs on one event channel, an SRQ of
//! registered bounce buffers, a pool of send bounce buffers, the table of
//! eps by QP number, and progress. The iface is the only place that calls
//! back into the user (completions, AM handlers, the error handler, pending
//! requests), always with no borrow of itself or an ep held.
//!
//! - this file: open and close, the ep table (create, connect, destroy);
//! - `tx`: the send CQ: completing and failing ops;
//! - `rx`: the receive CQ, the SRQ, AM dispatch and flow-control headers;
//! - `progress`: progress, pending dispatch, event arming.

use crate::core::id_map::IdMap;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::abi::*;
use crate::core::iface::IfaceInternalOps;
use crate::core::tombstone::{TombstoneYard, EP_QUARANTINE};
use crate::failover::PostedOp;
use crate::hca::{DeviceAddress, EventChannel, Mtu, PolledCq, Qp, QpInitAttr, SrqInitAttr};
use crate::ib::domain::Domain;
use crate::ib::md::Md;
use crate::rc::config::RcMlx5IfaceConfig;
use crate::rc::ep::{RcEp, RemoteEp, TxParams};
use crate::rc::fc::FcConfig;
pub use crate::rc::limits::{
    am_header, Limits, AM_HDR_LEN, AM_ID_OFFSET, AM_ZCOPY_MAX_HDR, TMH_NO_TAG,
};
use crate::rc::txwq::{OutstandingOp, TxResources};
use crate::uct::iface::IfaceBase;
use crate::uct::pool::{Alignment, BufferPool, LKEY_BYTES};

mod progress;
mod rx;
mod tx;
pub use tx::failure_log_level;

pub use rx::ReleaseDesc;
use rx::RxState;
pub use tx::invoke_completion;

/// How AM handlers may be called: from the progress of the thread that
/// calls it (`UCT_IFACE_FLAG_CB_SYNC`), never from another thread.
pub const CALLBACK_CAPS: u64 = UCT_IFACE_FLAG_CB_SYNC;

/// Everything of the iface beyond the base.
pub struct IfaceState {
    domain: Arc<Domain>,
    limits: Limits,
    path_mtu: Mtu,
    address: DeviceAddress,
    atomic_result_order: crate::hca::AtomicResultOrder,
    channel: EventChannel,
    tx_cq: PolledCq,
    rx_cq: PolledCq,
    rx: RxState,
    /// The send pool and CQ credits posted ops hold.
    tx: TxResources,
    /// Live eps by QP number.
    eps: IdMap<*mut RcEp>,
    /// Where eps live: new ones are housed here, destroyed ones stay as
    /// tombstones until close ([`crate::core::tombstone`]).
    ep_yard: TombstoneYard<RcEp>,
    err_handler: uct_error_handler_t,
    err_handler_arg: *mut c_void,
    /// The level a failed ep is logged at when its peer is gone
    /// (`UCX_RC_MLX5_FAILURE`).
    failure_log_level: ucs_log_level_t,
    /// AM flow control settings.
    fc: FcConfig,
    /// The next progress dispatches pending work even with no send
    /// completion: a grant reopened an exhausted window, a grant message
    /// waits to be posted, or the last dispatch left work it could do.
    dispatch_due: bool,
}

/// What the rest of rc reads of the iface state (fixed at open, but for
/// the send resources).
impl IfaceState {
    #[inline(always)]
    pub fn domain(&self) -> &Arc<Domain> {
        &self.domain
    }

    #[inline(always)]
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    #[inline(always)]
    pub fn path_mtu(&self) -> Mtu {
        self.path_mtu
    }

    #[inline(always)]
    pub fn address(&self) -> DeviceAddress {
        self.address
    }

    #[inline(always)]
    pub fn atomic_result_order(&self) -> crate::hca::AtomicResultOrder {
        self.atomic_result_order
    }

    #[inline(always)]
    pub fn tx(&self) -> &TxResources {
        &self.tx
    }

    #[inline(always)]
    pub fn fc(&self) -> &FcConfig {
        &self.fc
    }

    /// Overrides how the device writes atomic results (taken from the
    /// device at open): for tests that pretend another device.
    pub fn set_atomic_result_order(&mut self, order: crate::hca::AtomicResultOrder) {
        self.atomic_result_order = order;
    }

    /// The send pool and CQ credits, for posting and completing.
    #[inline(always)]
    pub fn tx_mut(&mut self) -> &mut TxResources {
        &mut self.tx
    }
}

/// Largest `am_alignment` accepted: every receive buffer is at least this
/// far from the next, so a larger one would cost memory out of proportion.
const MAX_AM_ALIGNMENT: usize = 64 * 1024;

/// The `am_alignment` / `am_align_offset` iface parameters: the data
/// pointer an AM handler gets, plus `offset`, is a multiple of `align`
/// (`None`: not asked for).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct AmAlignment(Option<Alignment>);

impl AmAlignment {
    /// The parameters of `params`, checked as UCX checks them: an offset
    /// without an alignment, and an alignment that is 0 or not a power of
    /// two, are refused (logged, `InvalidParam`).
    fn of(params: &uct_iface_params_t) -> Result<AmAlignment, Status> {
        const F: &str = "uct_iface_open";
        let has = |bit: u64| params.field_mask & bit != 0;
        if !has(UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT) {
            if has(UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET) {
                tracing::error!("{F}: am_align_offset has no effect without am_alignment");
                return Err(Status::InvalidParam);
            }
            return Ok(AmAlignment(None));
        }
        let align = params.am_alignment;
        if !align.is_power_of_two() {
            tracing::error!("{F}: am_alignment {align} is not a power of two");
            return Err(Status::InvalidParam);
        }
        if align > MAX_AM_ALIGNMENT {
            tracing::error!("{F}: am_alignment {align} is above {MAX_AM_ALIGNMENT}");
            return Err(Status::InvalidParam);
        }
        let offset = if has(UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET) {
            params.am_align_offset
        } else {
            0
        };
        Ok(AmAlignment(Some(Alignment { align, offset })))
    }

    /// The alignment of receive buffers whose payload starts `payload_at`
    /// bytes in and holds `seg_size` bytes. An offset not inside the
    /// payload means nothing: ignored with a log line, as UCX does.
    fn of_buffers(self, payload_at: usize, seg_size: usize) -> Alignment {
        let Some(Alignment { align, mut offset }) = self.0 else {
            return Alignment::NONE;
        };
        if offset >= seg_size {
            tracing::info!(
                "uct_iface_open: am_align_offset {offset} ignored: not below the segment size {seg_size}"
            );
            offset = 0;
        }
        Alignment {
            align,
            offset: payload_at + offset,
        }
    }
}

/// The iface (what a `uct_iface_h` points at).
#[repr(C)]
pub struct RcIface {
    pub base: IfaceBase,
    pub state: IfaceState,
}

/// What tests and diagnostics read of an iface's resources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IfaceStats {
    /// Send-CQ credits left, and their number when nothing is outstanding.
    pub tx_credits: u32,
    pub tx_credits_max: u32,
    /// Send-pool buffers handed out and not returned.
    pub tx_buffers_in_use: usize,
    /// Live eps, and eps housed (live and tombstones).
    pub eps: usize,
    pub eps_housed: usize,
}

impl RcIface {
    /// `uct_ep_destroy`: the ep goes ([`IfaceState::destroy_ep`]), then
    /// the ops it had outstanding complete with `UCS_ERR_CANCELED`, inside
    /// this call, as in UCX.
    ///
    /// # Safety
    /// `iface` live and `ep` one of its eps; no borrow of either held (the
    /// completions are user callbacks).
    pub unsafe fn destroy_ep(iface: *mut RcIface, ep: *mut RcEp) {
        // SAFETY: live by the contract; the borrows end before the first
        // callback.
        unsafe {
            let canceled = (*iface).state.destroy_ep(&mut *ep);
            for op in canceled {
                Self::finish_op(iface, op, Status::Canceled.raw());
            }
        }
    }

    /// Opens an iface on the md's device, with the slot tables `ops`.
    ///
    /// # Safety
    /// `params` valid per its field mask (checked by `uct_iface_open`).
    pub unsafe fn open(
        md: &Md,
        md_handle: uct_md_h,
        worker: uct_worker_h,
        params: *const uct_iface_params_t,
        config: &RcMlx5IfaceConfig,
        ops: (uct_iface_ops_t, &'static IfaceInternalOps),
    ) -> Result<uct_iface_h, Status> {
        crate::core::data_trace::refresh();
        // SAFETY: valid per the contract; only fields whose bits are set.
        let (rx_headroom, err_handler, err_handler_arg, am_alignment) = unsafe {
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
                AmAlignment::of(p)?,
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
        let tx_cq_len = crate::rc::limits::tx_cq_len(config);
        let tx_cq = device.create_cq(tx_cq_len, Some(&channel))?;
        let rx_queue_len = config.rx_queue_len.clamp(16, device_attr.max_srq_wqe);
        let srq = domain.pd.create_srq(SrqInitAttr {
            wqe_count: rx_queue_len,
            max_sge: 1,
        })?;
        let rx_cq = PolledCq::new(device.create_cq(srq.ring().wqe_count * 2, Some(&channel))?);
        let rx_offset = (LKEY_BYTES + 8 + rx_headroom).next_multiple_of(8);
        let rx_pool = BufferPool::aligned(
            Arc::clone(&domain),
            rx_offset - AM_HDR_LEN + limits.seg_size(),
            256,
            usize::MAX,
            am_alignment.of_buffers(rx_offset, limits.seg_size()),
        );
        let tx_pool = BufferPool::new(
            Arc::clone(&domain),
            LKEY_BYTES + limits.seg_size(),
            64,
            usize::MAX,
        );
        let tx_cq = PolledCq::new(tx_cq);
        let tx_cqe_count = tx_cq.cqe_count();
        let rx = RxState::new(srq, rx_pool, rx_offset, &limits);
        let srq_len = rx.len();
        let mut iface = Box::new(RcIface {
            base: IfaceBase::new(md_handle, worker, ops.0, ops.1, CALLBACK_CAPS),
            state: IfaceState {
                address: port.address,
                atomic_result_order: device_attr.atomic_result_order,
                limits,
                path_mtu,
                channel,
                tx: TxResources {
                    pool: tx_pool,
                    credits: tx_cqe_count / 2,
                    credits_max: tx_cqe_count / 2,
                },
                tx_cq,
                rx_cq,
                rx,
                eps: IdMap::default(),
                ep_yard: TombstoneYard::new(EP_QUARANTINE),
                err_handler,
                err_handler_arg,
                failure_log_level: config.failure_log_level,
                domain,
                fc: FcConfig::new(config, srq_len),
                dispatch_due: false,
            },
        });
        let iface_ptr: *mut RcIface = &mut *iface;
        iface.state.rx.fill()?;
        tracing::debug!(
            "rc_mlx5 iface {iface_ptr:p} on {}: mtu {}, seg {}, srq {}, tx cq {}",
            md.device().name,
            path_mtu.bytes(),
            iface.state.limits.seg_size(),
            srq_len,
            tx_cqe_count
        );
        Ok(Box::into_raw(iface) as uct_iface_h)
    }

    /// Closes the iface: unregisters progress, destroys remaining eps, and
    /// frees every ep's memory with the iface (the tombstones of destroyed
    /// ones too: a handle used after its iface closed is invalid, as in UCX).
    ///
    /// # Safety
    /// A live iface from `open`, closed once.
    pub unsafe fn close(iface: *mut RcIface) {
        // SAFETY: live by the contract; from Box::into_raw in open.
        let mut this = unsafe { Box::from_raw(iface) };
        this.base.progress_remove();
        this.state.destroy_all_eps();
        this.base.head.invalidate();
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
        for ep in self.state.ep_handles() {
            // SAFETY: eps in the table are live, each in its own allocation
            // apart from the iface state; `f` runs no callback.
            f(unsafe { &mut *ep }, &mut self.state)?;
        }
        Ok(())
    }

    /// The send pool (tests count its buffers by class).
    pub fn tx_pool(&self) -> &BufferPool {
        &self.state.tx.pool
    }

    /// The iface's resource counts.
    pub fn stats(&self) -> IfaceStats {
        let state = &self.state;
        IfaceStats {
            tx_credits: state.tx.credits,
            tx_credits_max: state.tx.credits_max,
            tx_buffers_in_use: state.tx.pool.in_use(),
            eps: state.eps.len(),
            eps_housed: state.ep_yard.len(),
        }
    }
}

impl IfaceState {
    /// A QP on this iface's CQs and SRQ.
    fn create_qp(&self) -> Result<Qp, Status> {
        self.domain.pd.create_qp(&QpInitAttr {
            send_cq: self.tx_cq.cq(),
            recv_cq: self.rx_cq.cq(),
            srq: self.rx.srq(),
            sq_wqebb_count: self.limits.tx_ring_bbs(),
        })
    }

    fn tx_params(&self) -> TxParams {
        TxParams {
            moderation: self.limits.tx_moderation(),
            max_outstanding_bbs: self.limits.tx_max_outstanding_bbs(),
            credits_max: self.tx.credits_max,
            path_mtu: self.path_mtu,
        }
    }

    /// A new ep of the iface `handle` (not connected), housed in the yard
    /// and entered in the table.
    pub fn create_ep(&mut self, handle: uct_iface_h) -> Result<*mut RcEp, Status> {
        let qp = self.create_qp()?;
        let ep = RcEp::new(handle, self.address, qp, self.tx_params(), &self.fc);
        let qpn = ep.qpn();
        let ep = self.ep_yard.house(ep).as_ptr();
        self.eps.insert(qpn, ep);
        Ok(ep)
    }

    /// Connects `ep` to the peer `remote`.
    pub fn connect_ep(&self, ep: &mut RcEp, remote: RemoteEp) -> Result<(), Status> {
        ep.connect(&self.limits, &self.fc, remote)
    }

    /// Gives `ep` a new QP if a purge left it due ([`RcEp::renew_qp`]).
    pub fn renew_qp_if_due(&mut self, ep: &mut RcEp) -> Result<(), Status> {
        if !ep.qp_renewal_due() {
            return Ok(());
        }
        let qp = self.create_qp()?;
        let old_qpn = ep.renew_qp(qp, self.tx_params(), &self.fc);
        let this: *mut RcEp = ep;
        self.eps.remove(&old_qpn);
        self.eps.insert(ep.qpn(), this);
        Ok(())
    }

    /// The live ep of QP `qpn`.
    #[inline]
    pub fn ep(&mut self, qpn: u32) -> Option<&mut RcEp> {
        let ep = *self.eps.get(&qpn)?;
        // SAFETY: eps in the table are live (housed in the yard, removed
        // from the table before they are buried); the borrow is tied to
        // `self`, and no other reference to the ep is used meanwhile (slots
        // and progress take short borrows, none across user callbacks).
        Some(unsafe { &mut *ep })
    }

    /// Whether `ep` is still the live ep of QP `qpn` (a user callback may
    /// have destroyed it).
    #[inline]
    pub fn is_live(&self, ep: *mut RcEp, qpn: u32) -> bool {
        self.eps.get(&qpn) == Some(&ep)
    }

    /// `ep` if it is still the live ep of QP `qpn`.
    #[inline]
    pub(crate) fn live_ep(&mut self, ep: *mut RcEp, qpn: u32) -> Option<&mut RcEp> {
        if !self.is_live(ep, qpn) {
            return None;
        }
        self.ep(qpn)
    }

    /// Every live ep, for a walk that runs no user callback.
    pub fn for_each_ep(&mut self, mut f: impl FnMut(&mut RcEp)) {
        for &ep in self.eps.values() {
            // SAFETY: as in `ep`: live, and borrowed only for the call.
            f(unsafe { &mut *ep });
        }
    }

    /// The live eps (pointers: callbacks run between uses).
    pub fn ep_handles(&self) -> Vec<*mut RcEp> {
        self.eps.values().copied().collect()
    }

    /// Destroys an ep: removed from the table, QP destroyed. Its memory
    /// stays behind as a tombstone: every later op on the handle returns
    /// [`crate::core::destroyed_ep::DESTROYED_EP_STATUS`] and posts nothing.
    /// Returns the ops it still had outstanding, for the caller to complete
    /// with `UCS_ERR_CANCELED` as UCX's rc_mlx5 does
    /// ([`RcIface::destroy_ep`]), once the QP can no longer touch their
    /// memory; ops held for a purge (§5 of the design) are released here
    /// and none is returned: destroying then fires nothing.
    #[must_use = "the ops returned still hold their resources"]
    pub fn destroy_ep(&mut self, ep: &mut RcEp) -> Vec<OutstandingOp> {
        let qpn = ep.qpn();
        let ptr: *mut RcEp = ep;
        if !self.is_live(ptr, qpn) {
            return Vec::new();
        }
        self.eps.remove(&qpn);
        let ops: Vec<OutstandingOp> = ep.txwq_mut().take_all().collect();
        let cancel = if ep.failover.is_holding() {
            for op in &ops {
                self.tx.release(op);
            }
            Vec::new()
        } else {
            ops
        };
        // As UCX: a warning names the ops whose caller waits for them
        // (a completion other than a flush's); the rest are only traced.
        let awaited = cancel
            .iter()
            .filter(|op| !op.op().comp().is_null() && !matches!(op.op(), PostedOp::Flush { .. }))
            .count();
        if awaited > 0 {
            tracing::warn!(
                "rc_mlx5 ep {ptr:p}: destroyed with uncompleted operations ({awaited} awaited): they complete with {}",
                Status::Canceled
            );
        } else if !cancel.is_empty() {
            tracing::debug!(
                "rc_mlx5 ep {ptr:p}: destroyed with {} operations outstanding",
                cancel.len()
            );
        }
        ep.invalidate();
        // SAFETY: housed by this yard in create_ep (in the table until just
        // now, so live); the caller's reference is not used after this call.
        unsafe { self.ep_yard.bury(NonNull::from(ep)) };
        cancel
    }

    /// Destroys every ep left (iface close): their outstanding ops are
    /// released without completions (the iface is going away).
    fn destroy_all_eps(&mut self) {
        for ep in self.ep_handles() {
            tracing::debug!("rc_mlx5: destroying ep {ep:p} left open");
            // SAFETY: in the table, so live; nothing else borrows it while
            // the iface closes.
            for op in self.destroy_ep(unsafe { &mut *ep }) {
                self.tx.release(&op);
            }
        }
    }

    /// Calls the user's error handler for `ep` and returns its answer
    /// (`status` itself when no handler is set: nothing holds the ops).
    ///
    /// # Safety
    /// No borrow of the iface or the ep is held: the handler may do anything
    /// UCT allows (destroy the ep, post).
    unsafe fn report_error(
        handler: uct_error_handler_t,
        arg: *mut c_void,
        ep: uct_ep_h,
        status: Status,
    ) -> ucs_status_t {
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
                // The failure is logged at fatal level next: nobody took it.
                tracing::debug!("rc_mlx5 ep {ep:p}: error {status} and no error handler is set");
                status.raw()
            }
        }
    }
}
