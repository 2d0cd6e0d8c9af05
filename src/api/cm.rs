//! Connection managers and listeners: `uct_cm_open`, `uct_cm_close`,
//! `uct_cm_query`, `uct_cm_config_read`, `uct_listener_create`,
//! `uct_listener_destroy`, `uct_listener_query`, `uct_listener_reject`, and
//! the connection-manager half of `uct_ep_create`. The work is in
//! [`crate::cm`]; the endpoint calls (`uct_ep_connect`, `uct_ep_disconnect`,
//! `uct_cm_client_ep_conn_notify`, `uct_ep_destroy`) reach it through the
//! ep's ops table.

use std::ffi::{c_char, c_uint, c_void};

use crate::abi::*;
use crate::api::checks::status_entry_point;
use crate::api::component::component_arg;
use crate::cm::conn::UserSide;
use crate::cm::socket::{storage_of, SockAddrArg};
use crate::cm::{private_data, Cm, CmEp, Listener};
use crate::core::c_boundary::{
    c_entry, masked_write, null_argument, CBytes, CRef, CStrArg, Closing, FromC, Live, MaskedOut,
    Out,
};
use crate::core::config::handle;
use crate::core::ops::unsupported_iface_ops;
use crate::core::worker::Worker;
use crate::ib::component::Component;

const CM_ATTR_FIELDS: u64 = UCT_CM_ATTR_FIELD_MAX_CONN_PRIV;
const LISTENER_ATTR_FIELDS: u64 = UCT_LISTENER_ATTR_FIELD_SOCKADDR;
const LISTENER_PARAM_FIELDS: u64 = UCT_LISTENER_PARAM_FIELD_BACKLOG
    | UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB
    | UCT_LISTENER_PARAM_FIELD_USER_DATA;

/// `Unsupported` with a log line unless `component` has a connection
/// manager.
fn require_cm(component: &Component, function: &str) -> Result<(), Status> {
    if !component.is_cm() {
        tracing::error!(
            "{function}: component {} has no connection manager",
            component.name()
        );
        return Err(Status::Unsupported);
    }
    Ok(())
}

c_entry! {
    no_log_setup
    /// Reads the connection manager's configuration (`UCX_RDMA_CM_*`; the
    /// handle is released with `uct_config_release`).
    fn uct_cm_config_read(
        component: uct_component_h,
        env_prefix: *const c_char,
        _filename: *const c_char,
        config_p: *mut *mut uct_cm_config_t,
    ) -> ucs_status_t;
    take env_prefix: CStrArg = (env_prefix),
        config_p: Out<*mut uct_cm_config_t> = (config_p);
    {
        status_entry_point!(FUNCTION = "uct_cm_config_read", {
            let component = component_arg(component, FUNCTION)?;
            config_p.check(FUNCTION, "config_p")?;
            require_cm(component, FUNCTION)?;
            let env_prefix = if env_prefix.c_str().is_none() {
                None
            } else {
                Some(env_prefix.get(FUNCTION, "env_prefix")?)
            };
            let config = crate::cm::config::read_cm_config(env_prefix)?;
            config_p.write(FUNCTION, "config_p", handle::into_handle(config).cast())
        })
    }
}

c_entry! {
    no_log_setup
    /// Opens the connection manager of `component` on `worker` with the
    /// settings of `config` (the defaults and the environment when NULL).
    fn uct_cm_open(
        component: uct_component_h,
        worker: uct_worker_h,
        config: *const uct_cm_config_t,
        cm_p: *mut uct_cm_h,
    ) -> ucs_status_t;
    take worker: Live<Worker> = (worker),
        cm_p: Out<uct_cm_h> = (cm_p);
    {
        status_entry_point!(FUNCTION = "uct_cm_open", {
            let component = component_arg(component, FUNCTION)?;
            cm_p.check(FUNCTION, "cm_p")?;
            require_cm(component, FUNCTION)?;
            let settings = crate::cm::config::CmSettings::from_handle(config.cast())?;
            let cm = Cm::open(worker, cm_ep_ops(), settings, FUNCTION)?;
            cm_p.write(FUNCTION, "cm_p", cm)
        })
    }
}

c_entry! {
    /// Closes a connection manager; its listeners and endpoints must be gone.
    fn uct_cm_close(cm: uct_cm_h);
    take cm: Closing<Cm> = (cm);
    {
        cm.release("uct_cm_close");
    }
}

c_entry! {
    no_log_setup
    /// Reports `max_conn_priv`.
    fn uct_cm_query(cm: uct_cm_h, cm_attr: *mut uct_cm_attr_t) -> ucs_status_t;
    take cm: Live<Cm> = (cm), cm_attr: MaskedOut<uct_cm_attr_t> = (cm_attr);
    {
        status_entry_point!(FUNCTION = "uct_cm_query", {
            let cm = cm.get(FUNCTION)?;
            let field_mask = cm_attr.checked_mask(CM_ATTR_FIELDS, FUNCTION, "cm_attr")?;
            masked_write!(cm_attr, field_mask, UCT_CM_ATTR_FIELD_MAX_CONN_PRIV
                => max_conn_priv = cm.max_conn_priv());
            Ok(())
        })
    }
}

c_entry! {
    no_log_setup
    /// Listens on `saddr` (a device's IPv4 address, or `INADDR_ANY`; port 0
    /// picks a free one, `uct_listener_query` tells which).
    fn uct_listener_create(
        cm: uct_cm_h,
        saddr: *const libc::sockaddr,
        socklen: libc::socklen_t,
        params: *const uct_listener_params_t,
        listener_p: *mut uct_listener_h,
    ) -> ucs_status_t;
    take cm: Live<Cm> = (cm),
        address: SockAddrArg = (saddr, socklen),
        params: CRef<uct_listener_params_t> = (params),
        listener_p: Out<uct_listener_h> = (listener_p);
    {
        status_entry_point!(FUNCTION = "uct_listener_create", {
            let cm = cm.get(FUNCTION)?;
            let params = params.get(FUNCTION, "params")?;
            listener_p.check(FUNCTION, "listener_p")?;
            let address = address.ipv4(FUNCTION)?;
            crate::api::checks::known_fields(
                params.field_mask,
                LISTENER_PARAM_FIELDS,
                FUNCTION,
                "uct_listener_params_t",
            )?;
            let wants = |bit: u64| params.field_mask & bit != 0;
            if !wants(UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB) || params.conn_request_cb.is_none()
            {
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
            listener_p.write(FUNCTION, "listener_p", listener)
        })
    }
}

c_entry! {
    /// Stops listening. Requests already handed to the callback stay valid
    /// until they are rejected or turned into endpoints.
    fn uct_listener_destroy(listener: uct_listener_h);
    take listener: Closing<Listener> = (listener);
    {
        listener.release("uct_listener_destroy");
    }
}

c_entry! {
    no_log_setup
    /// Reports the address the listener listens on (with the chosen port).
    fn uct_listener_query(
        listener: uct_listener_h,
        listener_attr: *mut uct_listener_attr_t,
    ) -> ucs_status_t;
    take listener: Live<Listener> = (listener),
        listener_attr: MaskedOut<uct_listener_attr_t> = (listener_attr);
    {
        status_entry_point!(FUNCTION = "uct_listener_query", {
            let listener = listener.get(FUNCTION)?;
            let field_mask =
                listener_attr.checked_mask(LISTENER_ATTR_FIELDS, FUNCTION, "listener_attr")?;
            masked_write!(listener_attr, field_mask, UCT_LISTENER_ATTR_FIELD_SOCKADDR
                => sockaddr = storage_of(listener.local_address()));
            Ok(())
        })
    }
}

c_entry! {
    no_log_setup
    /// Rejects a connection request: the client's connect callback gets
    /// `UCS_ERR_REJECTED`. `conn_request` may be any value (checked against
    /// the pending requests, never dereferenced).
    fn uct_listener_reject(
        listener: uct_listener_h,
        conn_request: uct_conn_request_h,
    ) -> ucs_status_t;
    take listener: Live<Listener> = (listener);
    {
        status_entry_point!(FUNCTION = "uct_listener_reject", {
            let listener = listener.get(FUNCTION)?;
            // SAFETY: the cm outlives its listeners (UCX's rule).
            let cm = unsafe { listener.cm(FUNCTION) }?;
            cm.reject(conn_request)
        })
    }
}

/// The parameters of `uct_ep_create` for a connection-manager ep, with the
/// pointers in them taken over once.
///
/// cbindgen:ignore
pub(crate) struct CmEpParams<'a> {
    params: &'a uct_ep_params_t,
    cm: Live<'a, Cm>,
    sockaddr: Option<SockAddrArg<'a>>,
    local_sockaddr: Option<SockAddrArg<'a>>,
    private_data: CBytes<'a>,
}

impl<'a> FromC<&'a uct_ep_params_t> for CmEpParams<'a> {
    /// Relies on: `params` as `uct_ep_create`'s contract promises it: the
    /// cm NULL or open, each socket address its mask names NULL or valid,
    /// the private data valid for its length.
    unsafe fn from_c(params: &'a uct_ep_params_t) -> Self {
        let wants = |bit: u64| params.field_mask & bit != 0;
        // SAFETY: each pointer as the contract promises it (read only when
        // its bit is set, as the caller's struct may end before it).
        unsafe {
            CmEpParams {
                params,
                cm: Live::from_c(params.cm),
                sockaddr: wants(UCT_EP_PARAM_FIELD_SOCKADDR)
                    .then(|| FromC::from_c(params.sockaddr))
                    .flatten(),
                local_sockaddr: wants(UCT_EP_PARAM_FIELD_LOCAL_SOCKADDR)
                    .then(|| FromC::from_c(params.local_sockaddr))
                    .flatten(),
                private_data: CBytes::from_c((params.private_data, params.private_data_length)),
            }
        }
    }
}

/// The `uct_ep_create` of a connection manager (`UCT_EP_PARAM_FIELD_CM`):
/// a server ep on `conn_request`, or a client ep to `sockaddr`.
pub(crate) fn cm_ep_create(cm_params: CmEpParams, ep_p: Out<uct_ep_h>) -> Result<(), Status> {
    const FUNCTION: &str = "uct_ep_create";
    let params = cm_params.params;
    let wants = |bit: u64| params.field_mask & bit != 0;
    let cm = cm_params.cm.get(FUNCTION)?;
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
    let ep = if wants(UCT_EP_PARAM_FIELD_CONN_REQUEST) {
        if user.server_notify.is_none() {
            tracing::error!("{FUNCTION}: a server ep needs sockaddr_cb_server");
            return Err(Status::InvalidParam);
        }
        let data = private_data(
            params.field_mask,
            UCT_EP_PARAM_FIELD_PRIV_DATA,
            UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH,
            cm_params.private_data,
            cm.max_conn_priv(),
            FUNCTION,
        )?;
        cm.accept(params.conn_request, data, user)?
    } else {
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
        let Some(remote) = cm_params.sockaddr else {
            return Err(null_argument(FUNCTION, "sockaddr"));
        };
        let server = remote.ipv4(FUNCTION)?;
        let local = if wants(UCT_EP_PARAM_FIELD_LOCAL_SOCKADDR) {
            let Some(local) = cm_params.local_sockaddr else {
                return Err(null_argument(FUNCTION, "local_sockaddr"));
            };
            Some(*local.ipv4(FUNCTION)?.ip())
        } else {
            None
        };
        cm.connect(server, local, user)?
    };
    ep_p.write(FUNCTION, "ep_p", ep)
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

/// The parameters of `uct_ep_connect`, with the private data taken over.
///
/// cbindgen:ignore
struct ConnectParams<'a> {
    field_mask: u64,
    private_data: CBytes<'a>,
}

impl FromC<*const uct_ep_connect_params_t> for Option<ConnectParams<'_>> {
    /// Relies on: NULL or valid, with the private data valid for its length.
    unsafe fn from_c(params: *const uct_ep_connect_params_t) -> Self {
        // SAFETY: by the contract: the struct, and the data for its length.
        unsafe {
            let params = params.as_ref()?;
            Some(ConnectParams {
                field_mask: params.field_mask,
                private_data: CBytes::from_c((params.private_data, params.private_data_length)),
            })
        }
    }
}

c_entry! {
    ops_slot
    /// `uct_ep_connect` on a client ep: sends the request with the private data.
    fn cm_ep_connect(ep: uct_ep_h, params: *const uct_ep_connect_params_t) -> ucs_status_t;
    take ep: Live<CmEp> = (ep), params: Option<ConnectParams> = (params);
    {
        status_entry_point!(FUNCTION = "uct_ep_connect", {
            let ep = ep.get(FUNCTION)?;
            let Some(params) = params else {
                return Err(null_argument(FUNCTION, "params"));
            };
            let data = private_data(
                params.field_mask,
                UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA,
                UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA_LENGTH,
                params.private_data,
                ep.conn().cm().max_conn_priv,
                FUNCTION,
            )?;
            ep.conn().send_request(data)
        })
    }
}

c_entry! {
    ops_slot
    /// `uct_ep_disconnect`: half-closes; the peer's `disconnect_cb` runs, and
    /// this side's when the peer disconnects too.
    fn cm_ep_disconnect(ep: uct_ep_h, _flags: c_uint) -> ucs_status_t;
    take ep: Live<CmEp> = (ep);
    {
        status_entry_point!(FUNCTION = "uct_ep_disconnect", {
            ep.get(FUNCTION)?.conn().disconnect()
        })
    }
}

c_entry! {
    ops_slot
    /// `uct_cm_client_ep_conn_notify`: the server's notify callback runs.
    fn cm_ep_conn_notify(ep: uct_ep_h) -> ucs_status_t;
    take ep: Live<CmEp> = (ep);
    {
        status_entry_point!(FUNCTION = "uct_cm_client_ep_conn_notify", {
            ep.get(FUNCTION)?.conn().notify()
        })
    }
}

c_entry! {
    ops_slot
    /// `uct_ep_destroy`: no callback of the ep runs after it returns.
    fn cm_ep_destroy(ep: uct_ep_h);
    take ep: Closing<CmEp> = (ep);
    {
        ep.release("uct_ep_destroy");
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
