//! The `uct_v2.h` entry points for ifaces and endpoints: v2 queries,
//! reachability, connect with lengths, and failover (`uct_ep_query` tokens,
//! `uct_ep_invalidate`, `uct_ep_failover_enable`, `uct_ep_outstanding_purge`).
//! Each validates its parameters, then dispatches through the iface's internal
//! operations (`core::iface::IfaceInternalOps`); transports that do not
//! implement one report `UCS_ERR_UNSUPPORTED`. (`uct_md_query_v2` lives with
//! the other md functions in `md.rs`.)

use std::ffi::{c_int, c_uint};
use std::ptr::addr_of;

use crate::abi::*;
use crate::api::caller_version::{caller_version, UcxVersion};
use crate::api::checks::{known_fields, non_null, required_fields, status_entry_point};
use crate::api::dispatch::{base_iface, ep_base_iface};
use crate::api::iface_attr_v2::{self, IfaceAttrV2V122};
use crate::api::perf::PerfAttrLayout;
use crate::core::iface::{PurgeCallback, PurgeRequest};
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

/// A v2 parameter or attribute struct: its C name and how to read its
/// `field_mask` (the one member a caller always initialises).
pub(crate) trait FieldMasked {
    const NAME: &'static str;
    /// # Safety
    /// `this` non-NULL and valid for reads of its `field_mask`.
    unsafe fn field_mask(this: *const Self) -> u64;
}

macro_rules! field_masked {
    ($($ty:ident),* $(,)?) => {$(
        impl FieldMasked for $ty {
            const NAME: &'static str = stringify!($ty);
            unsafe fn field_mask(this: *const Self) -> u64 {
                // SAFETY: by the contract; a raw read forms no reference to
                // the members the caller may have left uninitialised.
                unsafe { addr_of!((*this).field_mask).read() }
            }
        }
    )*};
}

field_masked!(
    uct_iface_attr_v2_t,
    uct_md_attr_v2_t,
    uct_ep_attr_t,
    uct_ep_invalidate_params_t,
    uct_ep_outstanding_purge_params_t,
    uct_iface_is_reachable_params_t,
    uct_ep_connect_to_ep_params_t,
    uct_ep_is_connected_params_t,
    uct_md_mem_reg_params_t,
    uct_md_mem_dereg_params_t,
    uct_md_mkey_pack_params_t,
    uct_rkey_unpack_params_t,
    uct_rkey_compare_params_t,
);

/// The `field_mask` of `*params` (argument `argument`), which must be
/// non-NULL and ask only for fields in `known`; else `InvalidParam` with a
/// log line.
///
/// # Safety
/// `params` NULL or valid for reads of its `field_mask`.
pub(crate) unsafe fn checked_field_mask<T: FieldMasked>(
    params: *const T,
    known: u64,
    function: &str,
    argument: &str,
) -> Result<u64, Status> {
    // SAFETY: by the contract.
    let field_mask = unsafe { tolerant_field_mask(params, u64::MAX, function, argument) }?;
    known_fields(field_mask, known, function, T::NAME)?;
    Ok(field_mask)
}

/// The `field_mask` of `*params` (argument `argument`, non-NULL). Bits
/// outside `known` are ignored with a debug line, as UCX's v2 entry points
/// ignore fields they do not know (a newer caller's struct is longer, and
/// its extra fields are simply not read).
///
/// # Safety
/// `params` NULL or valid for reads of its `field_mask`.
pub(crate) unsafe fn tolerant_field_mask<T: FieldMasked>(
    params: *const T,
    known: u64,
    function: &str,
    argument: &str,
) -> Result<u64, Status> {
    non_null(params, function, argument)?;
    // SAFETY: non-NULL; valid by the contract.
    let field_mask = unsafe { T::field_mask(params) };
    let unknown = field_mask & !known;
    if unknown != 0 {
        tracing::debug!(
            "{function}: {}.field_mask bits 0x{unknown:x} are unknown, ignored",
            T::NAME
        );
    }
    Ok(field_mask)
}

/// `*params` itself, for the v2 calls that read the whole struct, after the
/// checks of [`tolerant_field_mask`].
///
/// # Safety
/// `params` NULL or valid for reads of the whole struct.
unsafe fn tolerant_params<'a, T: FieldMasked>(
    params: *const T,
    known: u64,
    function: &str,
    argument: &str,
) -> Result<&'a T, Status> {
    // SAFETY: by the contract.
    unsafe { tolerant_field_mask(params, known, function, argument) }?;
    // SAFETY: non-NULL (checked above) and valid by the contract.
    Ok(unsafe { &*params })
}

/// A yes/no answer for C: 1 or 0, and 0 for refused arguments (already
/// logged).
fn c_bool(answer: Result<bool, Status>) -> c_int {
    c_int::from(answer.unwrap_or(false))
}

/// Fills the v2 attributes selected by `iface_attr->field_mask`. Token
/// queries need `tx_token` (the peer's token, input) for `RX_TOKEN`, and the
/// output buffers for the tokens asked for. A caller of UCX 1.22 passes its
/// own layout of the struct (see `api/iface_attr_v2.rs`).
///
/// # Safety
/// `iface` NULL or a live iface of this library; `iface_attr` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn uct_iface_query_v2(
    iface: uct_iface_h,
    iface_attr: *mut uct_iface_attr_v2_t,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_iface_query_v2", {
        let version = caller_version();
        if (UcxVersion::IFACE_ATTR_V2_TOKENS..UcxVersion::IFACE_ATTR_V2_GET_SGL).contains(&version)
        {
            non_null(iface_attr, FUNCTION, "iface_attr")?;
            let theirs = iface_attr.cast::<IfaceAttrV2V122>();
            // SAFETY: non-NULL; a 1.22 struct by the caller's contract.
            let mut ours = unsafe { iface_attr_v2::request(theirs) };
            // SAFETY: `ours` is a complete local struct.
            unsafe { iface_query_v2_ours(iface, &mut ours) }?;
            // SAFETY: as for the request.
            unsafe { iface_attr_v2::answer(&ours, theirs) };
            return Ok(());
        }
        // SAFETY: by the caller's contract.
        unsafe { iface_query_v2_ours(iface, iface_attr) }
    })
}

/// `uct_iface_query_v2` on our layout of the struct.
///
/// # Safety
/// As `uct_iface_query_v2`.
pub(crate) unsafe fn iface_query_v2_ours(
    iface: uct_iface_h,
    iface_attr: *mut uct_iface_attr_v2_t,
) -> Result<(), Status> {
    const FUNCTION: &str = "uct_iface_query_v2";
    // SAFETY: NULL or live by the caller's contract.
    let base = unsafe { base_iface(iface, FUNCTION) }?;
    // SAFETY: NULL or valid by the caller's contract.
    let field_mask =
        unsafe { tolerant_field_mask(iface_attr, IFACE_ATTR_V2_FIELDS, FUNCTION, "iface_attr") }?;
    if field_mask & UCT_IFACE_ATTR_FIELD_RX_TOKEN != 0 {
        // An RX token is derived from the peer's TX token.
        required_fields(
            field_mask,
            UCT_IFACE_ATTR_FIELD_TX_TOKEN,
            FUNCTION,
            "uct_iface_attr_v2_t",
        )?;
        // SAFETY: set by the caller together with the RX_TOKEN bit.
        let rx_token = unsafe { addr_of!((*iface_attr).rx_token).read() };
        non_null(rx_token, FUNCTION, "iface_attr->rx_token")?;
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
        // SAFETY: set by the caller together with the TX_TOKEN bit.
        let tx_token = unsafe { addr_of!((*iface_attr).tx_token).read() };
        non_null(tx_token, FUNCTION, "iface_attr->tx_token")?;
    }
    // SAFETY: arguments validated above; iface is one of ours.
    unsafe { (base.internal_ops.iface_query_v2)(iface, iface_attr) }
}

/// Queries endpoint attributes; `TX_TOKEN` writes the endpoint's TX token
/// into the caller's `tx_token` buffer.
///
/// # Safety
/// `ep` NULL or a live endpoint of this library; `ep_attr` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn uct_ep_query(ep: uct_ep_h, ep_attr: *mut uct_ep_attr_t) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_ep_query", {
        // SAFETY: NULL or live by the caller's contract.
        let base = unsafe { ep_base_iface(ep, FUNCTION) }?;
        // SAFETY: NULL or valid by the caller's contract.
        let field_mask =
            unsafe { tolerant_field_mask(ep_attr, EP_ATTR_FIELDS, FUNCTION, "ep_attr") }?;
        if field_mask & UCT_EP_ATTR_FIELD_TX_TOKEN != 0 {
            // SAFETY: set by the caller together with the TX_TOKEN bit.
            let tx_token = unsafe { addr_of!((*ep_attr).tx_token).read() };
            non_null(tx_token, FUNCTION, "ep_attr->tx_token")?;
        }
        // SAFETY: arguments validated above.
        unsafe { (base.internal_ops.ep_query)(ep, ep_attr) }
    })
}

/// Moves the endpoint to an error state. `params` may be NULL (no flags);
/// with `UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS` its outstanding operations
/// are kept for `uct_ep_outstanding_purge`, without it the endpoint fails as
/// on a transport error (operations complete with `UCS_ERR_CANCELED`, the
/// error handler is called once). Unknown flags and field-mask bits are
/// ignored, as in UCX.
///
/// # Safety
/// `ep` NULL or a live endpoint of this library; `params` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn uct_ep_invalidate(
    ep: uct_ep_h,
    params: *const uct_ep_invalidate_params_t,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_ep_invalidate", {
        // SAFETY: NULL or live by the caller's contract.
        let base = unsafe { ep_base_iface(ep, FUNCTION) }?;
        let mut flags: c_uint = 0;
        if !params.is_null() {
            // SAFETY: non-NULL, valid by the caller's contract.
            let field_mask = unsafe {
                tolerant_field_mask(
                    params,
                    UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS,
                    FUNCTION,
                    "params",
                )
            }?;
            if field_mask & UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS != 0 {
                // SAFETY: valid because its field bit is set.
                flags = unsafe { addr_of!((*params).flags).read() };
            }
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

/// From now on a transport error on `ep` keeps its outstanding operations
/// instead of completing them with errors.
///
/// # Safety
/// `ep` NULL or a live endpoint of this library.
#[no_mangle]
pub unsafe extern "C" fn uct_ep_failover_enable(ep: uct_ep_h) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_ep_failover_enable", {
        // SAFETY: NULL or live by the caller's contract.
        let base = unsafe { ep_base_iface(ep, FUNCTION) }?;
        // SAFETY: ep validated above.
        unsafe { (base.internal_ops.ep_failover_enable)(ep) }
    })
}

/// Completes what the peer received (per `rx_token`) and calls `cb` once per
/// undelivered operation, in posting order. `RX_TOKEN` and `CB` are required
/// (NULL `params` refused, as UCX); unknown field-mask bits are ignored. A
/// second purge, with nothing held since, returns `UCS_OK` and calls nothing.
///
/// # Safety
/// `ep` NULL or a live endpoint of this library; `params` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn uct_ep_outstanding_purge(
    ep: uct_ep_h,
    params: *const uct_ep_outstanding_purge_params_t,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_ep_outstanding_purge", {
        // SAFETY: NULL or live by the caller's contract.
        let base = unsafe { ep_base_iface(ep, FUNCTION) }?;
        // SAFETY: NULL or valid by the caller's contract.
        let field_mask = unsafe { tolerant_field_mask(params, PURGE_FIELDS, FUNCTION, "params") }?;
        required_fields(
            field_mask,
            UCT_EP_OUTSTANDING_FIELD_RX_TOKEN | UCT_EP_OUTSTANDING_FIELD_CB,
            FUNCTION,
            "uct_ep_outstanding_purge_params_t",
        )?;
        // Read only the fields the mask says are set; ARG defaults to NULL.
        // SAFETY: each field is read only when its bit says it is set.
        let (rx_token, cb, arg) = unsafe {
            (
                addr_of!((*params).rx_token).read(),
                addr_of!((*params).cb).read(),
                if field_mask & UCT_EP_OUTSTANDING_FIELD_ARG != 0 {
                    addr_of!((*params).arg).read()
                } else {
                    std::ptr::null_mut()
                },
            )
        };
        non_null(rx_token, FUNCTION, "params->rx_token")?;
        let Some(callback) = PurgeCallback::new(cb, arg) else {
            tracing::warn!("{FUNCTION}: params->cb is NULL");
            return Err(Status::InvalidParam);
        };
        // SAFETY: non-NULL; the caller's RX token is RX_TOKEN_LENGTH bytes
        // (the length the iface reports for it).
        let rx_token =
            unsafe { std::slice::from_raw_parts(rx_token.cast::<u8>(), RX_TOKEN_LENGTH) };
        let request = PurgeRequest { rx_token, callback };
        // SAFETY: ep validated above.
        unsafe { (base.internal_ops.ep_outstanding_purge)(ep, request) }
    })
}

/// Non-zero if the remote interface described by `params` is reachable.
/// Without `DEVICE_ADDR` there is nothing to check: 0 with a log line.
///
/// # Safety
/// `iface` NULL or a live iface of this library; `params` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn uct_iface_is_reachable_v2(
    iface: uct_iface_h,
    params: *const uct_iface_is_reachable_params_t,
) -> c_int {
    const FUNCTION: &str = "uct_iface_is_reachable_v2";
    c_bool((|| {
        // SAFETY: NULL or live by the caller's contract.
        let base = unsafe { base_iface(iface, FUNCTION) }?;
        // SAFETY: NULL or valid by the caller's contract.
        let params = unsafe { tolerant_params(params, IS_REACHABLE_FIELDS, FUNCTION, "params") }?;
        required_fields(
            params.field_mask,
            u64::from(UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR),
            FUNCTION,
            "uct_iface_is_reachable_params_t",
        )?;
        non_null(params.device_addr, FUNCTION, "params->device_addr")?;
        if params.field_mask & u64::from(UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING) != 0 {
            non_null(params.info_string, FUNCTION, "params->info_string")?;
        }
        // SAFETY: arguments validated above.
        Ok(unsafe { (base.internal_ops.iface_is_reachable_v2)(iface, params) })
    })())
}

/// Connects `ep` to a remote endpoint, with the address lengths in `params`.
///
/// # Safety
/// `ep` NULL or a live endpoint of this library; pointers NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn uct_ep_connect_to_ep_v2(
    ep: uct_ep_h,
    device_addr: *const uct_device_addr_t,
    ep_addr: *const uct_ep_addr_t,
    params: *const uct_ep_connect_to_ep_params_t,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_ep_connect_to_ep_v2", {
        // SAFETY: NULL or live by the caller's contract.
        let base = unsafe { ep_base_iface(ep, FUNCTION) }?;
        non_null(device_addr, FUNCTION, "device_addr")?;
        non_null(ep_addr, FUNCTION, "ep_addr")?;
        // SAFETY: NULL or valid by the caller's contract.
        let params = unsafe { tolerant_params(params, CONNECT_TO_EP_FIELDS, FUNCTION, "params") }?;
        // SAFETY: arguments validated above.
        unsafe { (base.internal_ops.ep_connect_to_ep_v2)(ep, device_addr, ep_addr, params) }
    })
}

/// Non-zero if `ep` is connected to the remote endpoint described by `params`.
///
/// # Safety
/// `ep` NULL or a live endpoint of this library; `params` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn uct_ep_is_connected(
    ep: uct_ep_h,
    params: *const uct_ep_is_connected_params_t,
) -> c_int {
    const FUNCTION: &str = "uct_ep_is_connected";
    c_bool((|| {
        // SAFETY: NULL or live by the caller's contract.
        let base = unsafe { ep_base_iface(ep, FUNCTION) }?;
        // SAFETY: NULL or valid by the caller's contract.
        let params = unsafe { tolerant_params(params, IS_CONNECTED_FIELDS, FUNCTION, "params") }?;
        // SAFETY: arguments validated above.
        Ok(unsafe { (base.internal_ops.ep_is_connected)(ep, params) })
    })())
}

/// Performance estimates of `perf_attr->operation` on `iface`, written into
/// the caller's version of `uct_perf_attr_t` (see `api/perf.rs`): only
/// the output fields its `field_mask` asks for, never past the struct's end
/// in that version.
///
/// # Safety
/// `iface` NULL or live; `perf_attr` NULL or valid for the caller's version
/// of the struct.
#[no_mangle]
pub unsafe extern "C" fn uct_iface_estimate_perf(
    iface: uct_iface_h,
    perf_attr: *mut uct_perf_attr_t,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_iface_estimate_perf", {
        // SAFETY: NULL or live by the caller's contract.
        let base = unsafe { base_iface(iface, FUNCTION) }?;
        non_null(perf_attr, FUNCTION, "perf_attr")?;
        let layout = PerfAttrLayout::of(caller_version());
        // SAFETY: non-NULL; valid for this layout by the caller's contract.
        let operation = unsafe { layout.operation(perf_attr.cast(), FUNCTION) }?;
        // SAFETY: iface validated above.
        let estimate = unsafe { (base.internal_ops.iface_estimate_perf)(iface, operation) }?;
        // SAFETY: as for reading the operation.
        unsafe { layout.write(perf_attr.cast(), &estimate) };
        Ok(())
    })
}

/// The device-side (GPU-initiated) endpoint of `ep`. No transport of ours
/// has one (none advertises `UCT_IFACE_FLAG_DEVICE_EP`): `UCS_ERR_UNSUPPORTED`,
/// as UCX's transports without device endpoints answer. UCX's `libucp`
/// asks only for lanes of such transports, when a program builds a device
/// memory list (`ucp_device_mem_list_create`), and passes the status on.
///
/// # Safety
/// `ep` NULL or a live endpoint of this library; `device_ep_p` NULL or
/// writable (never written).
#[no_mangle]
pub unsafe extern "C" fn uct_ep_get_device_ep(
    ep: uct_ep_h,
    device_ep_p: *mut uct_device_ep_h,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_ep_get_device_ep", {
        // SAFETY: NULL or live by the caller's contract.
        unsafe { ep_base_iface(ep, FUNCTION) }?;
        non_null(device_ep_p, FUNCTION, "device_ep_p")?;
        tracing::debug!("{FUNCTION}: no device endpoints on this transport");
        Err(Status::Unsupported)
    })
}
