//! Connection managers and listeners: `uct_cm_open`, `uct_cm_close`,
//! `uct_cm_query`, `uct_cm_config_read`, `uct_listener_create`,
//! `uct_listener_destroy`, `uct_listener_query`, `uct_listener_reject`, and
//! the connection-manager half of `uct_ep_create`. The work is in
//! [`crate::cm`]; the endpoint calls (`uct_ep_connect`, `uct_ep_disconnect`,
//! `uct_cm_client_ep_conn_notify`, `uct_ep_destroy`) reach it through the
//! ep's ops table.

use std::ffi::{c_char, c_uint, c_void};
use std::ptr::{addr_of, addr_of_mut};

use crate::abi::*;
use crate::api::checks::{finish, known_fields, non_null, status_entry_point};
use crate::api::component::component_arg;
use crate::api::cstr::c_str_arg;
use crate::cm::conn::UserSide;
use crate::cm::socket::{ipv4_of, storage_of};
use crate::cm::{private_data, Cm, CmEp, Listener};
use crate::core::config::handle;
use crate::core::ops::unsupported_iface_ops;

const CM_ATTR_FIELDS: u64 = UCT_CM_ATTR_FIELD_MAX_CONN_PRIV;
const LISTENER_ATTR_FIELDS: u64 = UCT_LISTENER_ATTR_FIELD_SOCKADDR;
const LISTENER_PARAM_FIELDS: u64 = UCT_LISTENER_PARAM_FIELD_BACKLOG
    | UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB
    | UCT_LISTENER_PARAM_FIELD_USER_DATA;

/// Reads the connection manager's configuration (it has no settings; the
/// handle is released with `uct_config_release`).
///
/// # Safety
/// Pointer arguments are NULL or valid; strings are NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn uct_cm_config_read(
    component: uct_component_h,
    env_prefix: *const c_char,
    _filename: *const c_char,
    config_p: *mut *mut uct_cm_config_t,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_cm_config_read", {
        let component = component_arg(component, FUNCTION)?;
        non_null(config_p, FUNCTION, "config_p")?;
        if !component.is_cm() {
            tracing::error!(
                "{FUNCTION}: component {} has no connection manager",
                component.name()
            );
            return Err(Status::Unsupported);
        }
        let env_prefix = if env_prefix.is_null() {
            None
        } else {
            // SAFETY: non-NULL and NUL-terminated by the caller's contract.
            Some(unsafe { c_str_arg(env_prefix, FUNCTION, "env_prefix") }?)
        };
        let config = crate::cm::config::read_cm_config(env_prefix)?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { config_p.write(handle::into_handle(config).cast()) };
        Ok(())
    })
}

/// Opens the connection manager of `component` on `worker`.
///
/// # Safety
/// Handles are NULL or live; `cm_p` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn uct_cm_open(
    component: uct_component_h,
    worker: uct_worker_h,
    _config: *const uct_cm_config_t,
    cm_p: *mut uct_cm_h,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_cm_open", {
        let component = component_arg(component, FUNCTION)?;
        non_null(cm_p, FUNCTION, "cm_p")?;
        if !component.is_cm() {
            tracing::error!(
                "{FUNCTION}: component {} has no connection manager",
                component.name()
            );
            return Err(Status::Unsupported);
        }
        // SAFETY: worker NULL or live by the caller's contract.
        let cm = unsafe { Cm::open(worker, cm_ep_ops(), FUNCTION) }?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { cm_p.write(cm) };
        Ok(())
    })
}

/// Closes a connection manager; its listeners and endpoints must be gone.
///
/// # Safety
/// `cm` NULL or an open connection manager, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn uct_cm_close(cm: uct_cm_h) {
    crate::api::enter();
    // SAFETY: NULL or open by the caller's contract.
    if unsafe { Cm::from_handle(cm, "uct_cm_close") }.is_ok() {
        // SAFETY: open, and not used afterwards.
        unsafe { Cm::close(cm) };
    }
}

/// Reports `max_conn_priv`.
///
/// # Safety
/// `cm` NULL or open; `cm_attr` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn uct_cm_query(cm: uct_cm_h, cm_attr: *mut uct_cm_attr_t) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_cm_query", {
        // SAFETY: NULL or open by the caller's contract.
        let cm = unsafe { Cm::from_handle(cm, FUNCTION) }?;
        non_null(cm_attr, FUNCTION, "cm_attr")?;
        // SAFETY: valid by the caller's contract; only the mask is set.
        let field_mask = unsafe { addr_of!((*cm_attr).field_mask).read() };
        known_fields(field_mask, CM_ATTR_FIELDS, FUNCTION, "uct_cm_attr_t")?;
        if field_mask & UCT_CM_ATTR_FIELD_MAX_CONN_PRIV != 0 {
            // SAFETY: as above.
            unsafe { addr_of_mut!((*cm_attr).max_conn_priv).write(cm.max_conn_priv()) };
        }
        Ok(())
    })
}

/// Listens on `saddr` (a device's IPv4 address, or `INADDR_ANY`; port 0
/// picks a free one, `uct_listener_query` tells which).
///
/// # Safety
/// Handles NULL or live; `saddr` NULL or valid for `socklen` bytes; `params`
/// NULL or valid per its mask; `listener_p` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn uct_listener_create(
    cm: uct_cm_h,
    saddr: *const libc::sockaddr,
    socklen: libc::socklen_t,
    params: *const uct_listener_params_t,
    listener_p: *mut uct_listener_h,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_listener_create", {
        // SAFETY: NULL or open by the caller's contract.
        let cm = unsafe { Cm::from_handle(cm, FUNCTION) }?;
        non_null(params, FUNCTION, "params")?;
        non_null(listener_p, FUNCTION, "listener_p")?;
        // SAFETY: valid for socklen bytes by the caller's contract.
        let address = unsafe { ipv4_of(saddr, socklen, FUNCTION) }?;
        // SAFETY: valid per its mask by the caller's contract.
        let params = unsafe { &*params };
        known_fields(
            params.field_mask,
            LISTENER_PARAM_FIELDS,
            FUNCTION,
            "uct_listener_params_t",
        )?;
        let wants = |bit: u64| params.field_mask & bit != 0;
        if !wants(UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB) || params.conn_request_cb.is_none() {
            tracing::error!("{FUNCTION}: conn_request_cb is required");
            return Err(Status::InvalidParam);
        }
        let backlog = wants(UCT_LISTENER_PARAM_FIELD_BACKLOG).then_some(params.backlog);
        let user_data = if wants(UCT_LISTENER_PARAM_FIELD_USER_DATA) {
            params.user_data
        } else {
            std::ptr::null_mut()
        };
        let listener = cm.listen(address, backlog, params.conn_request_cb, user_data)?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { listener_p.write(listener) };
        Ok(())
    })
}

/// Stops listening. Requests already handed to the callback stay valid
/// until they are rejected or turned into endpoints.
///
/// # Safety
/// `listener` NULL or live, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn uct_listener_destroy(listener: uct_listener_h) {
    crate::api::enter();
    // SAFETY: NULL or live by the caller's contract.
    if unsafe { Listener::from_handle(listener, "uct_listener_destroy") }.is_ok() {
        // SAFETY: live, and not used afterwards.
        unsafe { Listener::destroy(listener) };
    }
}

/// Reports the address the listener listens on (with the chosen port).
///
/// # Safety
/// `listener` NULL or live; `listener_attr` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn uct_listener_query(
    listener: uct_listener_h,
    listener_attr: *mut uct_listener_attr_t,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_listener_query", {
        // SAFETY: NULL or live by the caller's contract.
        let listener = unsafe { Listener::from_handle(listener, FUNCTION) }?;
        non_null(listener_attr, FUNCTION, "listener_attr")?;
        // SAFETY: valid by the caller's contract; only the mask is set.
        let field_mask = unsafe { addr_of!((*listener_attr).field_mask).read() };
        known_fields(
            field_mask,
            LISTENER_ATTR_FIELDS,
            FUNCTION,
            "uct_listener_attr_t",
        )?;
        if field_mask & UCT_LISTENER_ATTR_FIELD_SOCKADDR != 0 {
            let storage = storage_of(listener.local_address());
            // SAFETY: as above.
            unsafe { addr_of_mut!((*listener_attr).sockaddr).write(storage) };
        }
        Ok(())
    })
}

/// Rejects a connection request: the client's connect callback gets
/// `UCS_ERR_REJECTED`.
///
/// # Safety
/// `listener` NULL or live; `conn_request` any value (checked against the
/// pending requests, never dereferenced).
#[no_mangle]
pub unsafe extern "C" fn uct_listener_reject(
    listener: uct_listener_h,
    conn_request: uct_conn_request_h,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_listener_reject", {
        // SAFETY: NULL or live by the caller's contract.
        let listener = unsafe { Listener::from_handle(listener, FUNCTION) }?;
        // SAFETY: the cm outlives its listeners (UCX's rule).
        let cm = unsafe { listener.cm(FUNCTION) }?;
        cm.reject(conn_request)
    })
}

/// The `uct_ep_create` of a connection manager (`UCT_EP_PARAM_FIELD_CM`):
/// a server ep on `conn_request`, or a client ep to `sockaddr`.
///
/// # Safety
/// `params` non-NULL and valid per its mask; `ep_p` non-NULL and writable.
pub(crate) unsafe fn cm_ep_create(
    params: *const uct_ep_params_t,
    ep_p: *mut uct_ep_h,
) -> ucs_status_t {
    const FUNCTION: &str = "uct_ep_create";
    // SAFETY: valid per its mask by the caller's contract.
    let params = unsafe { &*params };
    let create = || -> Result<uct_ep_h, Status> {
        let wants = |bit: u64| params.field_mask & bit != 0;
        // SAFETY: NULL or open by the caller's contract.
        let cm = unsafe { Cm::from_handle(params.cm, FUNCTION) }?;
        let user = UserSide {
            ep: 0,
            user_data: if wants(UCT_EP_PARAM_FIELD_USER_DATA) {
                params.user_data as usize
            } else {
                0
            },
            resolve: params
                .cm_resolve_cb
                .filter(|_| wants(UCT_EP_PARAM_FIELD_CM_RESOLVE_CB)),
            client_connect: params
                .sockaddr_cb_client
                .filter(|_| wants(UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT)),
            server_notify: params
                .sockaddr_cb_server
                .filter(|_| wants(UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER)),
            disconnect: params
                .disconnect_cb
                .filter(|_| wants(UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB)),
        };
        if user.disconnect.is_none() {
            tracing::error!("{FUNCTION}: a connection-manager ep needs disconnect_cb");
            return Err(Status::InvalidParam);
        }
        if wants(UCT_EP_PARAM_FIELD_CONN_REQUEST) {
            if user.server_notify.is_none() {
                tracing::error!("{FUNCTION}: a server ep needs sockaddr_cb_server");
                return Err(Status::InvalidParam);
            }
            // SAFETY: valid for its length per the caller's contract.
            let data = unsafe {
                private_data(
                    params.field_mask,
                    UCT_EP_PARAM_FIELD_PRIV_DATA,
                    UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH,
                    params.private_data,
                    params.private_data_length,
                    cm.max_conn_priv(),
                    FUNCTION,
                )
            }?;
            return cm.accept(params.conn_request, data, user);
        }
        if !wants(UCT_EP_PARAM_FIELD_SOCKADDR) {
            tracing::error!(
                "{FUNCTION}: a connection-manager ep needs a sockaddr or a conn_request"
            );
            return Err(Status::InvalidParam);
        }
        if user.client_connect.is_none() {
            tracing::error!("{FUNCTION}: a client ep needs sockaddr_cb_client");
            return Err(Status::InvalidParam);
        }
        non_null(params.sockaddr, FUNCTION, "sockaddr")?;
        // SAFETY: non-NULL and valid by the caller's contract.
        let remote = unsafe { *params.sockaddr };
        // SAFETY: valid for addrlen bytes by the caller's contract.
        let server = unsafe { ipv4_of(remote.addr, remote.addrlen, FUNCTION) }?;
        let local = if wants(UCT_EP_PARAM_FIELD_LOCAL_SOCKADDR) {
            non_null(params.local_sockaddr, FUNCTION, "local_sockaddr")?;
            // SAFETY: as above.
            let local = unsafe { *params.local_sockaddr };
            // SAFETY: as above.
            Some(*unsafe { ipv4_of(local.addr, local.addrlen, FUNCTION) }?.ip())
        } else {
            None
        };
        cm.connect(server, local, user)
    };
    match create() {
        Ok(ep) => {
            // SAFETY: writable by the caller's contract.
            unsafe { ep_p.write(ep) };
            UCS_OK
        }
        Err(status) => finish(FUNCTION, Err(status)),
    }
}

/// The ops table of a cm's endpoints: what `uct_ep_*` on them reach.
fn cm_ep_ops() -> uct_iface_ops_t {
    let mut ops = unsupported_iface_ops();
    ops.ep_connect = Some(cm_ep_connect);
    ops.ep_disconnect = Some(cm_ep_disconnect);
    ops.cm_ep_conn_notify = Some(cm_ep_conn_notify);
    ops.ep_destroy = Some(cm_ep_destroy);
    ops.ep_pending_purge = Some(cm_ep_pending_purge);
    ops.ep_flush = Some(cm_ep_flush);
    ops.iface_progress = Some(cm_iface_progress);
    ops.iface_progress_enable = Some(cm_iface_progress_switch);
    ops.iface_progress_disable = Some(cm_iface_progress_switch);
    ops
}

/// `uct_ep_connect` on a client ep: sends the request with the private data.
unsafe extern "C" fn cm_ep_connect(
    ep: uct_ep_h,
    params: *const uct_ep_connect_params_t,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_ep_connect", {
        // SAFETY: a live ep of a cm (its ops table led here).
        let ep = unsafe { CmEp::from_handle(ep, FUNCTION) }?;
        non_null(params, FUNCTION, "params")?;
        // SAFETY: non-NULL, valid per its mask by the caller's contract.
        let params = unsafe { &*params };
        // SAFETY: as above.
        let data = unsafe {
            private_data(
                params.field_mask,
                UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA,
                UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA_LENGTH,
                params.private_data,
                params.private_data_length,
                ep.conn().cm().max_conn_priv,
                FUNCTION,
            )
        }?;
        ep.conn().send_request(data)
    })
}

/// `uct_ep_disconnect`: half-closes; the peer's `disconnect_cb` runs, and
/// this side's when the peer disconnects too.
unsafe extern "C" fn cm_ep_disconnect(ep: uct_ep_h, _flags: c_uint) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_ep_disconnect", {
        // SAFETY: a live ep of a cm (its ops table led here).
        unsafe { CmEp::from_handle(ep, FUNCTION) }?
            .conn()
            .disconnect()
    })
}

/// `uct_cm_client_ep_conn_notify`: the server's notify callback runs.
unsafe extern "C" fn cm_ep_conn_notify(ep: uct_ep_h) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_cm_client_ep_conn_notify", {
        // SAFETY: a live ep of a cm (its ops table led here).
        unsafe { CmEp::from_handle(ep, FUNCTION) }?.conn().notify()
    })
}

/// `uct_ep_destroy`: no callback of the ep runs after it returns.
unsafe extern "C" fn cm_ep_destroy(ep: uct_ep_h) {
    crate::api::enter();
    // SAFETY: a live ep of a cm (its ops table led here), not used later.
    if unsafe { CmEp::from_handle(ep, "uct_ep_destroy") }.is_ok() {
        // SAFETY: as above.
        unsafe { CmEp::destroy(ep) };
    }
}

/// A cm ep never queues pending requests: nothing to purge.
unsafe extern "C" fn cm_ep_pending_purge(
    _ep: uct_ep_h,
    _cb: uct_pending_purge_callback_t,
    _arg: *mut c_void,
) {
}

/// Nothing is ever outstanding on a cm ep.
unsafe extern "C" fn cm_ep_flush(
    _ep: uct_ep_h,
    _flags: c_uint,
    _comp: *mut uct_completion_t,
) -> ucs_status_t {
    UCS_OK
}

/// Everything of a cm happens in the async context.
unsafe extern "C" fn cm_iface_progress(_iface: uct_iface_h) -> c_uint {
    0
}

unsafe extern "C" fn cm_iface_progress_switch(_iface: uct_iface_h, _flags: c_uint) {}
