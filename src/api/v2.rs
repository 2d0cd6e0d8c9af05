//! The `uct_v2.h` entry points for ifaces and endpoints: v2 queries,
//! reachability, connect with lengths, and failover (`uct_ep_query` tokens,
//! `uct_ep_invalidate`, `uct_ep_failover_enable`, `uct_ep_outstanding_purge`).
//! Each validates its parameters, then dispatches through the iface's internal
//! operations (`core::iface::IfaceInternalOps`); transports that do not
//! implement one report `UCS_ERR_UNSUPPORTED`. (`uct_md_query_v2` lives with
//! the other md functions in `md.rs`.)

use std::ffi::{c_int, c_uint};

use crate::abi::*;
use crate::api::caller_version::{caller_version, UcxVersion};
use crate::api::checks::{non_null, required_fields, status_entry_point};
use crate::api::iface_attr_v2::{self, IfaceAttrV2V122};
use crate::api::perf::{PerfAttrArg, PerfAttrLayout};
use crate::core::c_boundary::{
    c_entry, masked_member, CBytes, EpHandle, FromC, IfaceHandle, Masked, MaskedOut,
};
use crate::core::iface::{PurgeCallback, PurgeRequest};
use crate::core::open_iface::BaseOfHandle;
use crate::failover::RX_TOKEN_LENGTH;

const IFACE_ATTR_V2_FIELDS: u64 = UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT
    | UCT_IFACE_ATTR_FIELD_MAX_GET_SGL_ZCOPY_COUNT
    | UCT_IFACE_ATTR_FIELD_CAP_FLAGS
    | UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH
    | UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH
    | UCT_IFACE_ATTR_FIELD_TX_TOKEN
    | UCT_IFACE_ATTR_FIELD_RX_TOKEN;

const EP_ATTR_FIELDS: u64 = UCT_EP_ATTR_FIELD_LOCAL_SOCKADDR
    | UCT_EP_ATTR_FIELD_REMOTE_SOCKADDR
    | UCT_EP_ATTR_FIELD_TX_TOKEN;

const IS_REACHABLE_FIELDS: u64 = (UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR
    | UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR
    | UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING
    | UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH
    | UCT_IFACE_IS_REACHABLE_FIELD_SCOPE
    | UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH
    | UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR_LENGTH) as u64;

const CONNECT_TO_EP_FIELDS: u64 = (UCT_EP_CONNECT_TO_EP_PARAM_FIELD_DEVICE_ADDR_LENGTH
    | UCT_EP_CONNECT_TO_EP_PARAM_FIELD_EP_ADDR_LENGTH) as u64;

const IS_CONNECTED_FIELDS: u64 = (UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR
    | UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR
    | UCT_EP_IS_CONNECTED_FIELD_EP_ADDR) as u64;

const PURGE_FIELDS: u64 =
    UCT_EP_OUTSTANDING_FIELD_RX_TOKEN | UCT_EP_OUTSTANDING_FIELD_CB | UCT_EP_OUTSTANDING_FIELD_ARG;

/// A yes/no answer for C: 1 or 0, and 0 for refused arguments (already
/// logged).
fn c_bool(answer: Result<bool, Status>) -> c_int {
    c_int::from(answer.unwrap_or(false))
}

c_entry! {
    /// Fills the v2 attributes selected by `iface_attr->field_mask`. Token
    /// queries need `tx_token` (the peer's token, input) for `RX_TOKEN`, and
    /// the output buffers for the tokens asked for. A caller of UCX 1.22
    /// passes its own layout of the struct (see `api/iface_attr_v2.rs`).
    fn uct_iface_query_v2(
        iface: uct_iface_h,
        iface_attr: *mut uct_iface_attr_v2_t,
    ) -> ucs_status_t;
    take iface_handle: IfaceHandle = (iface), attr: IfaceAttrArg = (iface_attr);
    {
        status_entry_point!(FUNCTION = "uct_iface_query_v2", {
            let version = caller_version();
            if (UcxVersion::IFACE_ATTR_V2_TOKENS..UcxVersion::IFACE_ATTR_V2_GET_SGL)
                .contains(&version)
            {
                non_null(iface_attr, FUNCTION, "iface_attr")?;
                let mut ours = iface_attr_v2::request(&attr.v122, FUNCTION)?;
                query_v2_checked(iface_handle, &MaskedOut::of(&mut ours))?;
                iface_attr_v2::answer(&ours, &attr.v122);
                return Ok(());
            }
            query_v2_checked(iface_handle, &attr.ours)
        })
    }
}

/// The `iface_attr` argument of `uct_iface_query_v2`, in our layout and in
/// UCX 1.22's (the caller's version says which it is).
///
/// cbindgen:ignore
struct IfaceAttrArg<'a> {
    ours: MaskedOut<'a, uct_iface_attr_v2_t>,
    v122: MaskedOut<'a, IfaceAttrV2V122>,
}

impl FromC<*mut uct_iface_attr_v2_t> for IfaceAttrArg<'_> {
    /// Relies on: NULL or valid, as far as its mask names, for the layout
    /// of the caller's version.
    unsafe fn from_c(iface_attr: *mut uct_iface_attr_v2_t) -> Self {
        // SAFETY: forwarded contract; only the caller's layout is used.
        unsafe {
            IfaceAttrArg {
                ours: MaskedOut::from_c(iface_attr),
                v122: MaskedOut::from_c(iface_attr.cast()),
            }
        }
    }
}

/// `uct_iface_query_v2` on our layout of the struct.
///
/// # Safety
/// As `uct_iface_query_v2`.
#[cfg(test)]
pub(crate) unsafe fn iface_query_v2_ours(
    iface: uct_iface_h,
    iface_attr: *mut uct_iface_attr_v2_t,
) -> Result<(), Status> {
    // SAFETY: forwarded contract.
    let (iface, attr) = unsafe { (IfaceHandle::from_c(iface), MaskedOut::from_c(iface_attr)) };
    query_v2_checked(iface, &attr)
}

/// The checks of `uct_iface_query_v2` on our layout, then the iface's query.
fn query_v2_checked(
    iface: IfaceHandle,
    attr: &MaskedOut<uct_iface_attr_v2_t>,
) -> Result<(), Status> {
    const FUNCTION: &str = "uct_iface_query_v2";
    let base = iface.base(FUNCTION)?;
    let field_mask = attr.tolerant_mask(IFACE_ATTR_V2_FIELDS, FUNCTION, "iface_attr")?;
    if field_mask & UCT_IFACE_ATTR_FIELD_RX_TOKEN != 0 {
        // An RX token is derived from the peer's TX token.
        required_fields(
            field_mask,
            UCT_IFACE_ATTR_FIELD_TX_TOKEN,
            FUNCTION,
            "uct_iface_attr_v2_t",
        )?;
        let rx_token = masked_member!(attr, field_mask, UCT_IFACE_ATTR_FIELD_RX_TOKEN => rx_token);
        non_null(
            rx_token.unwrap_or_default(),
            FUNCTION,
            "iface_attr->rx_token",
        )?;
    }
    if field_mask & UCT_IFACE_ATTR_FIELD_TX_TOKEN != 0 {
        // The peer's TX token is only an input for deriving an RX token;
        // refused alike by every transport, with or without tokens.
        required_fields(
            field_mask,
            UCT_IFACE_ATTR_FIELD_RX_TOKEN,
            FUNCTION,
            "uct_iface_attr_v2_t",
        )?;
        let tx_token = masked_member!(attr, field_mask, UCT_IFACE_ATTR_FIELD_TX_TOKEN => tx_token);
        non_null(
            tx_token.unwrap_or_default(),
            FUNCTION,
            "iface_attr->tx_token",
        )?;
    }
    // SAFETY: arguments validated above; iface is one of ours.
    unsafe { (base.internal_ops.iface_query_v2)(iface.raw(), attr.as_ptr()) }
}

c_entry! {
    /// Queries endpoint attributes; `TX_TOKEN` writes the endpoint's TX
    /// token into the caller's `tx_token` buffer.
    fn uct_ep_query(ep: uct_ep_h, ep_attr: *mut uct_ep_attr_t) -> ucs_status_t;
    take ep_handle: EpHandle = (ep), attr: Masked<uct_ep_attr_t> = (ep_attr);
    {
        status_entry_point!(FUNCTION = "uct_ep_query", {
            let base = ep_handle.base(FUNCTION)?;
            let field_mask = attr.tolerant_mask(EP_ATTR_FIELDS, FUNCTION, "ep_attr")?;
            if field_mask & UCT_EP_ATTR_FIELD_TX_TOKEN != 0 {
                let tx_token =
                    masked_member!(attr, field_mask, UCT_EP_ATTR_FIELD_TX_TOKEN => tx_token);
                non_null(tx_token.unwrap_or_default(), FUNCTION, "ep_attr->tx_token")?;
            }
            // SAFETY: arguments validated above.
            unsafe { (base.internal_ops.ep_query)(ep, ep_attr) }
        })
    }
}

c_entry! {
    /// Moves the endpoint to an error state. `params` may be NULL (no
    /// flags); with `UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS` its outstanding
    /// operations are kept for `uct_ep_outstanding_purge`, without it the
    /// endpoint fails as on a transport error (operations complete with
    /// `UCS_ERR_CANCELED`, the error handler is called once). Unknown flags
    /// and field-mask bits are ignored, as in UCX.
    fn uct_ep_invalidate(
        ep: uct_ep_h,
        params: *const uct_ep_invalidate_params_t,
    ) -> ucs_status_t;
    take ep_handle: EpHandle = (ep), params: Masked<uct_ep_invalidate_params_t> = (params);
    {
        status_entry_point!(FUNCTION = "uct_ep_invalidate", {
            let base = ep_handle.base(FUNCTION)?;
            let mut flags: c_uint = 0;
            if !params.as_ptr().is_null() {
                let field_mask = params.tolerant_mask(
                    UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS,
                    FUNCTION,
                    "params",
                )?;
                flags = masked_member!(params, field_mask, UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS => flags)
                    .unwrap_or(0);
            }
            let unknown = flags & !UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS;
            if unknown != 0 {
                tracing::debug!("{FUNCTION}: unknown flags 0x{unknown:x} ignored");
            }
            let flags = flags & UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS;
            // SAFETY: arguments validated above.
            unsafe { (base.internal_ops.ep_invalidate)(ep, flags) }
        })
    }
}

c_entry! {
    /// From now on a transport error on `ep` keeps its outstanding
    /// operations instead of completing them with errors.
    fn uct_ep_failover_enable(ep: uct_ep_h) -> ucs_status_t;
    take ep_handle: EpHandle = (ep);
    {
        status_entry_point!(FUNCTION = "uct_ep_failover_enable", {
            let base = ep_handle.base(FUNCTION)?;
            // SAFETY: ep validated above.
            unsafe { (base.internal_ops.ep_failover_enable)(ep) }
        })
    }
}

c_entry! {
    /// Completes what the peer received (per `rx_token`) and calls `cb` once
    /// per undelivered operation, in posting order. `RX_TOKEN` and `CB` are
    /// required (NULL `params` refused, as UCX); unknown field-mask bits are
    /// ignored. A second purge, with nothing held since, returns `UCS_OK`
    /// and calls nothing.
    fn uct_ep_outstanding_purge(
        ep: uct_ep_h,
        params: *const uct_ep_outstanding_purge_params_t,
    ) -> ucs_status_t;
    take ep_handle: EpHandle = (ep), params: Masked<uct_ep_outstanding_purge_params_t> = (params);
    {
        status_entry_point!(FUNCTION = "uct_ep_outstanding_purge", {
            let base = ep_handle.base(FUNCTION)?;
            let field_mask = params.tolerant_mask(PURGE_FIELDS, FUNCTION, "params")?;
            required_fields(
                field_mask,
                UCT_EP_OUTSTANDING_FIELD_RX_TOKEN | UCT_EP_OUTSTANDING_FIELD_CB,
                FUNCTION,
                "uct_ep_outstanding_purge_params_t",
            )?;
            // Only the fields the mask says are set; ARG defaults to NULL.
            let rx_token =
                masked_member!(params, field_mask, UCT_EP_OUTSTANDING_FIELD_RX_TOKEN => rx_token)
                    .unwrap_or_default();
            let cb = masked_member!(params, field_mask, UCT_EP_OUTSTANDING_FIELD_CB => cb)
                .flatten();
            let arg = masked_member!(params, field_mask, UCT_EP_OUTSTANDING_FIELD_ARG => arg)
                .unwrap_or_default();
            non_null(rx_token, FUNCTION, "params->rx_token")?;
            let Some(callback) = PurgeCallback::new(cb, arg) else {
                tracing::warn!("{FUNCTION}: params->cb is NULL");
                return Err(Status::InvalidParam);
            };
            // SAFETY: non-NULL; the caller's RX token is RX_TOKEN_LENGTH
            // bytes (the length the iface reports for it).
            let rx_token = unsafe { CBytes::from_c((rx_token, RX_TOKEN_LENGTH)) }
                .get(FUNCTION)?;
            let request = PurgeRequest { rx_token, callback };
            // SAFETY: ep validated above.
            unsafe { (base.internal_ops.ep_outstanding_purge)(ep, request) }
        })
    }
}

/// Our copy of a caller's reachability parameters: each member read only
/// when its bit is set (zero otherwise), so a UCX 1.13 caller's shorter
/// struct (it ends before `scope`) is never read past its end.
fn reachable_params_copy(
    params: Masked<uct_iface_is_reachable_params_t>,
    field_mask: u64,
) -> uct_iface_is_reachable_params_t {
    uct_iface_is_reachable_params_t {
        field_mask,
        device_addr: masked_member!(params, field_mask, UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR => device_addr)
            .unwrap_or_default(),
        iface_addr: masked_member!(params, field_mask, UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR => iface_addr)
            .unwrap_or_default(),
        info_string: masked_member!(params, field_mask, UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING => info_string)
            .unwrap_or_default(),
        info_string_length: masked_member!(params, field_mask, UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH => info_string_length)
            .unwrap_or_default(),
        scope: masked_member!(params, field_mask, UCT_IFACE_IS_REACHABLE_FIELD_SCOPE => scope)
            .unwrap_or_default(),
        device_addr_length: masked_member!(params, field_mask, UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH => device_addr_length)
            .unwrap_or_default(),
        iface_addr_length: masked_member!(params, field_mask, UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR_LENGTH => iface_addr_length)
            .unwrap_or_default(),
    }
}

c_entry! {
    /// Non-zero if the remote interface described by `params` is reachable.
    /// Without `DEVICE_ADDR` there is nothing to check: 0 with a log line.
    fn uct_iface_is_reachable_v2(
        iface: uct_iface_h,
        params: *const uct_iface_is_reachable_params_t,
    ) -> c_int;
    take iface_handle: IfaceHandle = (iface),
        params: Masked<uct_iface_is_reachable_params_t> = (params);
    {
        const FUNCTION: &str = "uct_iface_is_reachable_v2";
        c_bool((|| {
            let base = iface_handle.base(FUNCTION)?;
            let field_mask = params.tolerant_mask(IS_REACHABLE_FIELDS, FUNCTION, "params")?;
            required_fields(
                field_mask,
                u64::from(UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR),
                FUNCTION,
                "uct_iface_is_reachable_params_t",
            )?;
            let params = reachable_params_copy(params, field_mask);
            non_null(params.device_addr, FUNCTION, "params->device_addr")?;
            if field_mask & u64::from(UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING) != 0 {
                non_null(params.info_string, FUNCTION, "params->info_string")?;
            }
            // SAFETY: arguments validated above.
            Ok(unsafe { (base.internal_ops.iface_is_reachable_v2)(iface, &params) })
        })())
    }
}

c_entry! {
    /// Connects `ep` to a remote endpoint, with the address lengths in
    /// `params`.
    fn uct_ep_connect_to_ep_v2(
        ep: uct_ep_h,
        device_addr: *const uct_device_addr_t,
        ep_addr: *const uct_ep_addr_t,
        params: *const uct_ep_connect_to_ep_params_t,
    ) -> ucs_status_t;
    take ep_handle: EpHandle = (ep), masked: Masked<uct_ep_connect_to_ep_params_t> = (params);
    {
        status_entry_point!(FUNCTION = "uct_ep_connect_to_ep_v2", {
            let base = ep_handle.base(FUNCTION)?;
            non_null(device_addr, FUNCTION, "device_addr")?;
            non_null(ep_addr, FUNCTION, "ep_addr")?;
            let field_mask = masked.tolerant_mask(CONNECT_TO_EP_FIELDS, FUNCTION, "params")?;
            let params = uct_ep_connect_to_ep_params_t {
                field_mask,
                device_addr_length: masked_member!(masked, field_mask, UCT_EP_CONNECT_TO_EP_PARAM_FIELD_DEVICE_ADDR_LENGTH => device_addr_length)
                    .unwrap_or_default(),
                ep_addr_length: masked_member!(masked, field_mask, UCT_EP_CONNECT_TO_EP_PARAM_FIELD_EP_ADDR_LENGTH => ep_addr_length)
                    .unwrap_or_default(),
            };
            // SAFETY: arguments validated above.
            unsafe { (base.internal_ops.ep_connect_to_ep_v2)(ep, device_addr, ep_addr, &params) }
        })
    }
}

c_entry! {
    /// Non-zero if `ep` is connected to the remote endpoint described by
    /// `params`.
    fn uct_ep_is_connected(
        ep: uct_ep_h,
        params: *const uct_ep_is_connected_params_t,
    ) -> c_int;
    take ep_handle: EpHandle = (ep), masked: Masked<uct_ep_is_connected_params_t> = (params);
    {
        const FUNCTION: &str = "uct_ep_is_connected";
        c_bool((|| {
            let base = ep_handle.base(FUNCTION)?;
            let field_mask = masked.tolerant_mask(IS_CONNECTED_FIELDS, FUNCTION, "params")?;
            let params = uct_ep_is_connected_params_t {
                field_mask,
                device_addr: masked_member!(masked, field_mask, UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR => device_addr)
                    .unwrap_or_default(),
                iface_addr: masked_member!(masked, field_mask, UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR => iface_addr)
                    .unwrap_or_default(),
                ep_addr: masked_member!(masked, field_mask, UCT_EP_IS_CONNECTED_FIELD_EP_ADDR => ep_addr)
                    .unwrap_or_default(),
            };
            // SAFETY: arguments validated above.
            Ok(unsafe { (base.internal_ops.ep_is_connected)(ep, &params) })
        })())
    }
}

c_entry! {
    /// Performance estimates of `perf_attr->operation` on `iface`, written
    /// into the caller's version of `uct_perf_attr_t` (see `api/perf.rs`):
    /// only the output fields its `field_mask` asks for, never past the
    /// struct's end in that version.
    fn uct_iface_estimate_perf(
        iface: uct_iface_h,
        perf_attr: *mut uct_perf_attr_t,
    ) -> ucs_status_t;
    take iface_handle: IfaceHandle = (iface), perf: PerfAttrArg = (perf_attr);
    {
        status_entry_point!(FUNCTION = "uct_iface_estimate_perf", {
            let base = iface_handle.base(FUNCTION)?;
            perf.check(FUNCTION)?;
            let layout = PerfAttrLayout::of(caller_version());
            let operation = layout.operation(&perf, FUNCTION)?;
            // SAFETY: iface validated above.
            let estimate = unsafe { (base.internal_ops.iface_estimate_perf)(iface, operation) }?;
            layout.write(&perf, &estimate);
            Ok(())
        })
    }
}

c_entry! {
    /// The device-side (GPU-initiated) endpoint of `ep`. No transport of
    /// ours has one (none advertises `UCT_IFACE_FLAG_DEVICE_EP`):
    /// `UCS_ERR_UNSUPPORTED`, as UCX's transports without device endpoints
    /// answer. UCX's `libucp` asks only for lanes of such transports, when a
    /// program builds a device memory list (`ucp_device_mem_list_create`),
    /// and passes the status on. `device_ep_p` is never written.
    fn uct_ep_get_device_ep(
        ep: uct_ep_h,
        device_ep_p: *mut uct_device_ep_h,
    ) -> ucs_status_t;
    take ep_handle: EpHandle = (ep);
    {
        status_entry_point!(FUNCTION = "uct_ep_get_device_ep", {
            ep_handle.base(FUNCTION)?;
            non_null(device_ep_p, FUNCTION, "device_ep_p")?;
            tracing::debug!("{FUNCTION}: no device endpoints on this transport");
            Err(Status::Unsupported)
        })
    }
}
