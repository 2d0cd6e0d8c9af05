//! The base a transport's iface embeds first ([`IfaceBase`]): the handle
//! head every iface of ours starts with ([`BaseIface`]: the public ops table,
//! the md, the worker, the internal ops), the AM handler table
//! ([`AmTable`]) and the progress registration ([`ProgressRegistration`]).
//!
//! A transport's iface is `#[repr(C)] struct XIface { base: IfaceBase, … }`
//! and its internal-ops table starts from [`TRANSPORT_INTERNAL_OPS`], whose
//! AM entries find the table through that layout.

use std::ffi::{c_uint, c_void};

use crate::abi::*;
use crate::core::callbackq::ProgressFn;
use crate::core::iface::{BaseIface, IfaceInternalOps, UNSUPPORTED_INTERNAL_OPS};
use crate::core::worker::Worker;
use crate::uct::am::AmTable;
use crate::uct::progress::ProgressRegistration;

/// What every transport's iface starts with.
#[repr(C)]
pub struct IfaceBase {
    /// The handle head (what `uct_iface_h` points at); must stay first.
    pub head: BaseIface,
    am: AmTable,
    progress: ProgressRegistration,
}

impl IfaceBase {
    /// A base with the transport's public and internal operations (the
    /// latter from [`TRANSPORT_INTERNAL_OPS`]), for an iface that
    /// advertises the `UCT_IFACE_FLAG_CB_*` bits in `callback_caps`.
    pub fn new(
        md: uct_md_h,
        worker: uct_worker_h,
        ops: uct_iface_ops_t,
        internal_ops: &'static IfaceInternalOps,
        callback_caps: u64,
    ) -> IfaceBase {
        IfaceBase {
            head: BaseIface::with_ops(md, worker, ops, internal_ops),
            am: AmTable::new(callback_caps),
            progress: ProgressRegistration::new(),
        }
    }

    /// The AM handlers and tracer.
    pub fn am(&self) -> &AmTable {
        &self.am
    }

    pub fn am_mut(&mut self) -> &mut AmTable {
        &mut self.am
    }

    /// The worker the iface was opened on (`None` if it had none).
    fn worker<'a>(&self) -> Option<&'a Worker> {
        if self.head.worker.is_null() {
            return None;
        }
        // SAFETY: a worker handle given at open is validated there and
        // outlives its ifaces.
        unsafe { crate::core::worker::worker_ref(self.head.worker, "uct_iface") }.ok()
    }

    /// `uct_iface_progress_enable`: `callback(arg)` progresses the iface
    /// (see [`ProgressRegistration`]).
    pub fn progress_enable(&mut self, flags: c_uint, callback: ProgressFn, arg: *mut c_void) {
        if let Some(worker) = self.worker() {
            self.progress.enable(worker, flags, callback, arg);
        }
    }

    /// `uct_iface_progress_disable`.
    pub fn progress_disable(&mut self, flags: c_uint) {
        if let Some(worker) = self.worker() {
            self.progress.disable(worker, flags);
        }
    }

    /// Takes the iface off its worker's progress queue (at close).
    pub fn progress_remove(&mut self) {
        if let Some(worker) = self.worker() {
            self.progress.remove(worker);
        }
    }

    /// Whether the worker progresses the iface.
    pub fn is_progressed(&self) -> bool {
        self.progress.is_registered()
    }
}

/// `uct_iface_set_am_handler` on an iface that starts with an
/// [`IfaceBase`].
unsafe fn set_am_handler(
    iface: uct_iface_h,
    id: u8,
    cb: uct_am_callback_t,
    arg: *mut c_void,
    flags: u32,
) -> Result<(), Status> {
    // SAFETY: only ifaces that start with an IfaceBase carry these ops
    // (TRANSPORT_INTERNAL_OPS); the entry point holds no borrow of it.
    let base = unsafe { &mut *(iface as *mut IfaceBase) };
    base.am_mut().set_handler(id, cb, arg, flags)
}

/// `uct_iface_set_am_tracer` on an iface that starts with an
/// [`IfaceBase`].
unsafe fn set_am_tracer(
    iface: uct_iface_h,
    tracer: uct_am_tracer_t,
    arg: *mut c_void,
) -> Result<(), Status> {
    // SAFETY: as in set_am_handler.
    let base = unsafe { &mut *(iface as *mut IfaceBase) };
    base.am_mut().set_tracer(tracer, arg);
    Ok(())
}

/// The internal operations every transport iface has (its AM table); the
/// others report "not supported": the starting point of a transport's
/// table, for ifaces that start with an [`IfaceBase`] only.
pub const TRANSPORT_INTERNAL_OPS: IfaceInternalOps = IfaceInternalOps {
    iface_set_am_handler: set_am_handler,
    iface_set_am_tracer: set_am_tracer,
    ..UNSUPPORTED_INTERNAL_OPS
};
