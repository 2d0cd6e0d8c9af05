//! Interface entry points: `uct_iface_open`, the functions that dispatch
//! through `iface->ops` (exported real versions of UCX's inline ones among
//! them), descriptor release, and the active-message handler table.

use std::ffi::{c_int, c_uint, c_void};

use crate::abi::*;
use crate::api::checks::{non_null, status_entry_point};
use crate::api::config::read_iface_config;
use crate::api::dispatch::export_dispatch;
use crate::api::md::MdArg;
use crate::core::c_boundary::{c_entry, null_argument, CStrArg, FromC, IfaceHandle, Live, Out};
use crate::core::open_iface::BaseOfHandle;
use crate::core::worker::Worker;
use crate::ib::md::{Md, TlResource};
use crate::rc::config::{iface_config_from_handle, RcMlx5IfaceConfig};

/// The parameters of `uct_iface_open`, read once: the open mode, the
/// stub status or the device names it selects, and the pointer for the
/// transport (which reads the fields whose bits are set).
///
/// cbindgen:ignore
struct IfaceParams<'a> {
    params: *const uct_iface_params_t,
    field_mask: u64,
    open_mode: u64,
    /// `mode.stub.status` in stub mode.
    stub_status: Option<ucs_status_t>,
    /// `mode.device`'s names in device mode.
    device: Option<(CStrArg<'a>, CStrArg<'a>)>,
}

impl FromC<*const uct_iface_params_t> for Option<IfaceParams<'_>> {
    /// Relies on: NULL or valid per its field mask; the member of `mode`
    /// that `open_mode` selects valid (UCX reads `mode.device` whenever the
    /// open mode is DEVICE, whatever the field mask), its names NULL or
    /// NUL-terminated.
    unsafe fn from_c(params: *const uct_iface_params_t) -> Self {
        // SAFETY: by the contract: the struct, and the mode member read
        // only in its open mode.
        unsafe {
            let p = params.as_ref()?;
            let has_mode = p.field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE != 0;
            let stub = has_mode && p.open_mode & UCT_IFACE_OPEN_MODE_STUB != 0;
            let device = has_mode && !stub && p.open_mode & UCT_IFACE_OPEN_MODE_DEVICE != 0;
            Some(IfaceParams {
                params,
                field_mask: p.field_mask,
                open_mode: p.open_mode,
                stub_status: if stub { Some(p.mode.stub.status) } else { None },
                device: device.then(|| {
                    (
                        CStrArg::from_c(p.mode.device.tl_name),
                        CStrArg::from_c(p.mode.device.dev_name),
                    )
                }),
            })
        }
    }
}

/// Opens the iface of transport `tl` (`rc_mlx5`, the only one) on `md`.
fn open_transport_iface(
    md: &Md,
    worker: uct_worker_h,
    params: &IfaceParams,
    config: &RcMlx5IfaceConfig,
    tl: &TlResource,
) -> Result<uct_iface_h, Status> {
    let md_handle = md as *const Md as uct_md_h;
    // SAFETY: `params` is valid per its field mask (IfaceParams) and in
    // device mode (checked by `device_resource`); the transport reads only
    // fields whose bits are set.
    unsafe {
        crate::rc::iface::RcIface::open(
            md,
            md_handle,
            worker,
            params.params,
            config,
            (
                crate::rc::slots::iface_ops(),
                &crate::rc::slots::INTERNAL_OPS,
            ),
        )
    }
    // The transport logged the cause where it found it (UCX's callers,
    // its gtest among them, count warnings: one line per failure).
    .inspect_err(|status| {
        tracing::debug!(
            "uct_iface_open: {} on {}: {status}",
            tl.tl_name,
            tl.dev_name
        )
    })
}

/// Checks `params` for device mode and finds the transport resource it names.
fn device_resource(md: &Md, params: &IfaceParams, function: &str) -> Result<TlResource, Status> {
    let (field_mask, open_mode) = (params.field_mask, params.open_mode);
    if field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE == 0 {
        tracing::warn!(
            "{function}: UCT_IFACE_PARAM_FIELD_OPEN_MODE is not set in params->field_mask"
        );
        return Err(Status::InvalidParam);
    }
    let Some((tl_name, dev_name)) = params.device else {
        tracing::warn!(
            "{function}: open_mode 0x{open_mode:x} is not supported (only UCT_IFACE_OPEN_MODE_DEVICE)"
        );
        return Err(Status::Unsupported);
    };
    if field_mask & UCT_IFACE_PARAM_FIELD_DEVICE == 0 {
        // UCX reads `mode.device` whenever the open mode is DEVICE, and
        // 1.13's own programs (ucx_perftest) leave the bit out; the names are
        // still checked below.
        tracing::debug!(
            "{function}: UCT_IFACE_PARAM_FIELD_DEVICE not set, reading mode.device as UCX does"
        );
    }
    let tl_name = tl_name.get(function, "params->mode.device.tl_name")?;
    let dev_name = dev_name.get(function, "params->mode.device.dev_name")?;
    md.tl_resources()
        .into_iter()
        .find(|resource| resource.tl_name == tl_name && resource.dev_name == dev_name)
        .ok_or_else(|| {
            tracing::warn!(
                "{function}: md '{}' has no transport '{tl_name}' on device '{dev_name}'",
                md.device().name
            );
            Status::NoDevice
        })
}

c_entry! {
    /// Opens an interface on `md` for the transport and device in `params`
    /// (`UCT_IFACE_OPEN_MODE_DEVICE`), or a stub iface that answers
    /// `params->mode.stub.status` (`UCT_IFACE_OPEN_MODE_STUB`; `md` and `worker`
    /// may then be NULL).
    ///
    /// Handles live, `params` valid per its field mask, `iface_p` writable.
    fn uct_iface_open(
        md: uct_md_h,
        worker: uct_worker_h,
        params: *const uct_iface_params_t,
        config: *const uct_iface_config_t,
        iface_p: *mut uct_iface_h,
    ) -> ucs_status_t;
    take md_arg: MdArg = (md),
        worker_arg: Live<Worker> = (worker),
        params_arg: Option<IfaceParams> = (params),
        out: Out<uct_iface_h> = (iface_p);
    {
        status_entry_point!(FUNCTION = "uct_iface_open", {
            let Some(params) = params_arg else {
                return Err(null_argument(FUNCTION, "params"));
            };
            out.check(FUNCTION, "iface_p")?;
            if let Some(status) = params.stub_status {
                return out.write(FUNCTION, "iface_p", crate::api::stub_iface::open(status));
            }
            let md = md_arg.get(FUNCTION)?;
            worker_arg.get(FUNCTION)?;
            let resource = device_resource(md, &params, FUNCTION)?;
            let iface_config = if config.is_null() {
                read_iface_config(resource.tl_name, None)
                    .and_then(|config| RcMlx5IfaceConfig::from_config(&config))
            } else {
                iface_config_from_handle(config)
            }
            .inspect_err(|status| {
                tracing::warn!("{FUNCTION}: unusable iface configuration: {status}")
            })?;
            let iface = open_transport_iface(md, worker, &params, &iface_config, &resource)?;
            out.write(FUNCTION, "iface_p", iface)
        })
    }
}

export_dispatch! {
    /// Closes the interface (`iface->ops.iface_close`).
    fn uct_iface_close(IfaceHandle iface: uct_iface_h) -> () => iface_close;
    /// Fills `iface_attr` (536 bytes in UCX 1.13 and master alike).
    fn uct_iface_query(IfaceHandle iface: uct_iface_h, iface_attr: *mut uct_iface_attr_t) -> ucs_status_t => iface_query;
    /// Writes the device address.
    fn uct_iface_get_device_address(IfaceHandle iface: uct_iface_h, addr: *mut uct_device_addr_t) -> ucs_status_t => iface_get_device_address;
    /// Writes the interface address.
    fn uct_iface_get_address(IfaceHandle iface: uct_iface_h, addr: *mut uct_iface_addr_t) -> ucs_status_t => iface_get_address;
    /// Non-zero if the remote interface can be reached from this one.
    fn uct_iface_is_reachable(IfaceHandle iface: uct_iface_h, dev_addr: *const uct_device_addr_t, iface_addr: *const uct_iface_addr_t) -> c_int => iface_is_reachable;
    /// The file descriptor that signals events.
    fn uct_iface_event_fd_get(IfaceHandle iface: uct_iface_h, fd_p: *mut c_int) -> ucs_status_t => iface_event_fd_get;
    /// Arms event notification.
    fn uct_iface_event_arm(IfaceHandle iface: uct_iface_h, events: c_uint) -> ucs_status_t => iface_event_arm;
    /// Accepts a connection request.
    fn uct_iface_accept(IfaceHandle iface: uct_iface_h, conn_request: uct_conn_request_h) -> ucs_status_t => iface_accept;
    /// Rejects a connection request.
    fn uct_iface_reject(IfaceHandle iface: uct_iface_h, conn_request: uct_conn_request_h) -> ucs_status_t => iface_reject;
    /// Flushes every endpoint of the interface.
    fn uct_iface_flush(IfaceHandle iface: uct_iface_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t => iface_flush;
    /// Orders later operations after earlier ones on every endpoint.
    fn uct_iface_fence(IfaceHandle iface: uct_iface_h, flags: c_uint) -> ucs_status_t => iface_fence;
    /// Lets worker progress drive this interface.
    fn uct_iface_progress_enable(IfaceHandle iface: uct_iface_h, flags: c_uint) -> () => iface_progress_enable;
    /// Stops worker progress from driving this interface.
    fn uct_iface_progress_disable(IfaceHandle iface: uct_iface_h, flags: c_uint) -> () => iface_progress_disable;
    /// Progresses this interface only; returns the work done.
    fn uct_iface_progress(IfaceHandle iface: uct_iface_h) -> c_uint => iface_progress;
    /// Posts a tagged receive buffer.
    fn uct_iface_tag_recv_zcopy(IfaceHandle iface: uct_iface_h, tag: uct_tag_t, tag_mask: uct_tag_t, iov: *const uct_iov_t, iovcnt: usize, ctx: *mut uct_tag_context_t) -> ucs_status_t => iface_tag_recv_zcopy;
    /// Cancels a tagged receive.
    fn uct_iface_tag_recv_cancel(IfaceHandle iface: uct_iface_h, ctx: *mut uct_tag_context_t, force: c_int) -> ucs_status_t => iface_tag_recv_cancel;
}

/// A descriptor an AM handler kept: NULL, or handed to an AM callback with
/// `UCT_CB_PARAM_FLAG_DESC` and not released yet.
///
/// cbindgen:ignore
struct KeptDesc(*mut c_void);

impl FromC<*mut c_void> for KeptDesc {
    /// Relies on: as the type says.
    unsafe fn from_c(desc: *mut c_void) -> Self {
        KeptDesc(desc)
    }
}

impl KeptDesc {
    /// Calls the release callback named by the `uct_recv_desc_t *` stored in
    /// the word before the descriptor (UCX's inline version does the same).
    fn release(self, function: &str) {
        let desc = self.0;
        if non_null(desc, function, "desc").is_err() {
            return;
        }
        // SAFETY: a kept descriptor has a pointer to its release descriptor
        // in the word just before it (FromC), a live uct_recv_desc_t the
        // transport stored there, whose callback takes exactly these
        // arguments.
        unsafe {
            let release = (desc as *mut *mut uct_recv_desc_t).sub(1).read();
            if non_null(release, function, "descriptor's release hook").is_err() {
                return;
            }
            match (*release).cb {
                Some(callback) => callback(release, desc),
                None => tracing::warn!("{function}: descriptor {desc:p} has no release callback"),
            }
        }
    }
}

c_entry! {
    no_log_setup
    /// Returns a descriptor kept by an AM handler.
    fn uct_iface_release_desc(desc: *mut c_void);
    take desc: KeptDesc = (desc);
    {
        desc.release("uct_iface_release_desc");
    }
}

c_entry! {
    /// Sets the handler of active message `id` (`cb` NULL removes it). Handlers
    /// run from `uct_worker_progress` (synchronous callbacks).
    ///
    fn uct_iface_set_am_handler(
        iface: uct_iface_h,
        id: u8,
        cb: uct_am_callback_t,
        arg: *mut c_void,
        flags: u32,
    ) -> ucs_status_t;
    take iface_arg: IfaceHandle = (iface);
    {
        status_entry_point!(FUNCTION = "uct_iface_set_am_handler", {
            let base = iface_arg.base(FUNCTION)?;
            // SAFETY: an open iface of ours (checked); its transport's table
            // (crate::uct::am) checks the id and flags.
            unsafe { (base.internal_ops.iface_set_am_handler)(iface_arg.raw(), id, cb, arg, flags) }
        })
    }
}

c_entry! {
    /// Sets the active-message tracer (`tracer` NULL removes it).
    ///
    fn uct_iface_set_am_tracer(
        iface: uct_iface_h,
        tracer: uct_am_tracer_t,
        arg: *mut c_void,
    ) -> ucs_status_t;
    take iface_arg: IfaceHandle = (iface);
    {
        status_entry_point!(FUNCTION = "uct_iface_set_am_tracer", {
            let base = iface_arg.base(FUNCTION)?;
            // SAFETY: an open iface of ours (checked).
            unsafe { (base.internal_ops.iface_set_am_tracer)(iface_arg.raw(), tracer, arg) }
        })
    }
}
