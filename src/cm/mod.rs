//! The connection manager component (UCX's `uct_cm_*`, `uct_listener_*`
//! and the connection-manager endpoints): client–server wire-up for the
//! layer above (UCP's sockaddr connections), over TCP on the devices' IP
//! addresses.
//!
//! It is listed (`crate::ib::component::CM_COMPONENT`) as a component named
//! `rdmacm` with `UCT_COMPONENT_FLAG_CM`
//! and no memory domain, so that UCP, which tries the components named in
//! `UCX_SOCKADDR_TLS_PRIORITY` (`rdmacm,tcp,sockcm` by default), uses it
//! without configuration. Like UCX's RDMA connection manager it names the
//! device a connection runs on (`mlx5_0:1`) and hands each side the other's
//! device address, so the transport lanes are rc_mlx5 on that device.
//!
//! - [`wire`]: the messages; [`machine`]: a connection's states and which
//!   callback each event ends in (no I/O);
//! - [`conn`], [`listener`]: sockets and callbacks; [`async_io`]: the
//!   worker's async context; [`device`]: devices and their addresses.

pub mod async_io;
pub mod config;
pub mod conn;
pub mod device;
pub mod listener;
pub mod machine;
pub mod socket;
pub mod wire;

use std::collections::HashMap;
use std::ffi::c_void;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::abi::*;
use crate::core::c_boundary::{BoxedHandle, ByHandle, CBytes, Live, ReleasedByHandle};
use crate::core::iface::{BaseIface, UNSUPPORTED_INTERNAL_OPS};
use crate::core::worker::Worker;
use async_io::AsyncTarget;
use config::CmSettings;
use conn::{Conn, UserSide};
use device::{device_at, first_device, LocalDevice};
use listener::ListenerCore;
use machine::Role;

/// Most private data a connection carries each way (UCX's TCP connection
/// manager's default; UCP's address of rc_mlx5 lanes needs a few hundred).
pub const MAX_CONN_PRIV: usize = 2048;

/// Tags after the C-visible headers, to recognise our handles.
const CM_MAGIC: u64 = 0x7563_745f_636d_5f5f; // "uct_cm__"
const CM_EP_MAGIC: u64 = 0x7563_745f_636d_6570; // "uct_cmep"
const LISTENER_MAGIC: u64 = 0x7563_745f_6c69_7374; // "uct_list"

/// Connection requests handed to a listener's callback and not yet taken
/// by `uct_ep_create` or `uct_listener_reject`. The handle C gets is a key
/// here, so a stale or forged one is refused, never dereferenced. One table
/// for the process: a request may become an ep of another worker's
/// connection manager (UCP accepts on a worker of its choice).
pub static REQUESTS: RequestTable = RequestTable {
    live: Mutex::new(None),
};

pub struct RequestTable {
    live: Mutex<Option<HashMap<usize, Arc<Conn>>>>,
}

impl RequestTable {
    pub fn hand_out(&self, conn: &Arc<Conn>) -> uct_conn_request_h {
        let key = Arc::as_ptr(conn) as usize;
        self.lock()
            .get_or_insert_with(HashMap::new)
            .insert(key, conn.clone());
        key as uct_conn_request_h
    }

    pub fn take(&self, request: uct_conn_request_h, function: &str) -> Result<Arc<Conn>, Status> {
        let found = self
            .lock()
            .as_mut()
            .and_then(|live| live.remove(&(request as usize)));
        found.ok_or_else(|| {
            tracing::warn!("{function}: {request:p} is not a pending connection request");
            Status::InvalidParam
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<HashMap<usize, Arc<Conn>>>> {
        // A panic aborts the process, so a poisoned lock guards consistent data.
        self.live
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What connections and listeners of one connection manager share.
pub struct CmCore {
    pub async_target: AsyncTarget,
    pub max_conn_priv: usize,
    /// `UCX_RDMA_CM_TIMEOUT`: how long a handshake step waits for the peer.
    pub handshake_timeout: Duration,
}

/// A connection manager (`uct_cm_h`). Its base iface carries the ops table
/// its endpoints dispatch through.
#[repr(C)]
pub struct Cm {
    base: BaseIface,
    magic: u64,
    core: Arc<CmCore>,
}

/// A connection-manager endpoint (`uct_ep_h`).
#[repr(C)]
pub struct CmEp {
    ep: uct_ep,
    magic: u64,
    conn: Arc<Conn>,
}

/// A listener (`uct_listener_h`): UCX's public head (`cm`) first.
#[repr(C)]
pub struct Listener {
    public: uct_listener,
    magic: u64,
    core: Arc<ListenerCore>,
}

impl Cm {
    /// Opens a connection manager on `worker`, whose async context runs its
    /// callbacks; its endpoints dispatch through `ops`.
    pub(crate) fn open(
        worker: Live<Worker>,
        ops: uct_iface_ops_t,
        settings: CmSettings,
        function: &str,
    ) -> Result<uct_cm_h, Status> {
        let worker_ref = worker.get(function)?;
        // SAFETY: the worker's context is live while the worker is.
        let async_target = unsafe { AsyncTarget::new(worker_ref.async_context()) }?;
        let worker = worker.raw();
        let cm = Box::new(Cm {
            base: BaseIface::with_ops(std::ptr::null_mut(), worker, ops, &UNSUPPORTED_INTERNAL_OPS),
            magic: CM_MAGIC,
            core: Arc::new(CmCore {
                async_target,
                max_conn_priv: MAX_CONN_PRIV,
                handshake_timeout: settings.handshake_timeout,
            }),
        });
        Ok(Box::into_raw(cm) as uct_cm_h)
    }

    pub fn max_conn_priv(&self) -> usize {
        self.core.max_conn_priv
    }

    fn iface_handle(&self) -> uct_iface_h {
        &self.base as *const BaseIface as uct_iface_h
    }

    /// `uct_listener_create`.
    pub fn listen(
        &self,
        address: SocketAddrV4,
        backlog: Option<i32>,
        conn_request_cb: uct_cm_listener_conn_request_callback_t,
        user_data: *mut c_void,
    ) -> Result<uct_listener_h, Status> {
        let ip = *address.ip();
        if !ip.is_unspecified() && device_at(ip).is_none() {
            tracing::error!("cm: cannot listen on {address}: no device has address {ip}");
            return Err(Status::Unreachable);
        }
        let core = ListenerCore::bind(
            self.core.clone(),
            address,
            backlog,
            conn_request_cb,
            user_data,
        )?;
        let listener = Box::into_raw(Box::new(Listener {
            public: uct_listener {
                cm: self as *const Cm as uct_cm_h,
            },
            magic: LISTENER_MAGIC,
            core: core.clone(),
        }));
        core.set_handle(listener as uct_listener_h);
        Ok(listener as uct_listener_h)
    }

    /// `uct_ep_create` for a client: connects to `server` from the device
    /// owning `local` (or the route's source, or the first device).
    pub fn connect(
        &self,
        server: SocketAddrV4,
        local: Option<Ipv4Addr>,
        user: UserSide,
    ) -> Result<uct_ep_h, Status> {
        if user.resolve.is_none() {
            tracing::error!("uct_ep_create: a client ep needs cm_resolve_cb (sockaddr_pack_cb is not supported)");
            return Err(Status::Unsupported);
        }
        let device = match local {
            Some(ip) => device_at(ip).ok_or_else(|| {
                tracing::error!("uct_ep_create: no device has the local address {ip}");
                Status::Unreachable
            })?,
            None => socket::route_source(*server.ip())
                .and_then(device_at)
                .or_else(first_device)
                .ok_or_else(|| {
                    tracing::error!("uct_ep_create: no device for the connection manager");
                    Status::NoDevice
                })?,
        };
        let device = LocalDevice::open(device)?;
        let stream = socket::connect_from(device.ipv4, server)?;
        let conn = Conn::new(
            self.core.clone(),
            Role::Client,
            stream,
            device,
            server,
            None,
        );
        let ep = self.new_ep(conn.clone());
        conn.set_user(UserSide {
            ep: ep.0 as usize,
            ..user
        });
        if let Err(status) = conn.watch() {
            ep.discard();
            return Err(status);
        }
        Ok(ep.0)
    }

    /// `uct_ep_create` for a server, on a connection request.
    pub fn accept(
        &self,
        request: uct_conn_request_h,
        private_data: &[u8],
        user: UserSide,
    ) -> Result<uct_ep_h, Status> {
        let conn = REQUESTS.take(request, "uct_ep_create")?;
        conn.move_to(&self.core)?;
        let ep = self.new_ep(conn.clone());
        conn.set_user(UserSide {
            ep: ep.0 as usize,
            ..user
        });
        if let Err(status) = conn.accept(private_data) {
            ep.discard();
            return Err(status);
        }
        Ok(ep.0)
    }

    /// `uct_listener_reject`.
    pub fn reject(&self, request: uct_conn_request_h) -> Result<(), Status> {
        let conn = REQUESTS.take(request, "uct_listener_reject")?;
        conn.reject()
    }

    fn new_ep(&self, conn: Arc<Conn>) -> NewEp {
        NewEp(Box::into_raw(Box::new(CmEp {
            ep: uct_ep {
                iface: self.iface_handle(),
            },
            magic: CM_EP_MAGIC,
            conn,
        })) as uct_ep_h)
    }
}

/// An ep [`Cm::new_ep`] just made, not handed out yet: its handle is
/// returned to the caller, or, when the creation fails, freed.
struct NewEp(uct_ep_h);

impl NewEp {
    fn discard(self) {
        // SAFETY: a live CmEp from `new_ep` that nobody else was given.
        unsafe { CmEp::release(self.0) };
    }
}

impl Listener {
    pub fn local_address(&self) -> SocketAddrV4 {
        self.core.local
    }

    /// The listener's cm.
    ///
    /// # Safety
    /// The cm must still be open (UCX requires listeners to go first).
    pub unsafe fn cm<'a>(&self, function: &str) -> Result<&'a Cm, Status> {
        // SAFETY: by the contract.
        unsafe { Cm::lookup(self.public.cm, function) }
    }
}

impl CmEp {
    pub fn conn(&self) -> &Arc<Conn> {
        &self.conn
    }
}

impl BoxedHandle for Cm {
    type Raw = uct_cm_h;
    const ARGUMENT: &'static str = "cm";
    const LIVE: &'static str = "an open connection manager";

    fn is_live(&self) -> bool {
        self.base.is_valid() && self.magic == CM_MAGIC
    }

    /// Closes a cm. Its endpoints and listeners must be gone (as in UCX).
    fn retire(&mut self) {
        self.magic = 0;
        self.base.invalidate();
    }
}

impl BoxedHandle for Listener {
    type Raw = uct_listener_h;
    const ARGUMENT: &'static str = "listener";
    const LIVE: &'static str = "a live listener";

    fn is_live(&self) -> bool {
        self.magic == LISTENER_MAGIC
    }

    /// `uct_listener_destroy`.
    fn retire(&mut self) {
        self.magic = 0;
        self.core.close();
    }
}

impl BoxedHandle for CmEp {
    type Raw = uct_ep_h;
    const ARGUMENT: &'static str = "ep";
    const LIVE: &'static str = "a live connection-manager ep";

    fn is_live(&self) -> bool {
        self.magic == CM_EP_MAGIC
    }

    /// `uct_ep_destroy`: no callback of the ep runs after this.
    fn retire(&mut self) {
        self.magic = 0;
        self.conn.detach();
    }
}

/// Takes `mutex`: a panic aborts the process, so a poisoned lock still
/// guards consistent data.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `Err(InvalidParam)` with a log line when a handle is NULL.
fn non_null<T>(handle: *const T, function: &str, what: &str) -> Result<(), Status> {
    if handle.is_null() {
        tracing::warn!("{function}: {what} is NULL");
        return Err(Status::InvalidParam);
    }
    Ok(())
}

/// The private data a parameter struct names, checked against the limit.
pub(crate) fn private_data<'a>(
    field_mask: u64,
    data_bit: u64,
    length_bit: u64,
    data: CBytes<'a>,
    limit: usize,
    function: &str,
) -> Result<&'a [u8], Status> {
    let has_data = field_mask & data_bit != 0;
    let has_length = field_mask & length_bit != 0;
    if !has_data && !has_length {
        return Ok(&[]);
    }
    if has_data != has_length {
        tracing::warn!("{function}: private data and its length must be given together");
        return Err(Status::InvalidParam);
    }
    let length = data.len();
    if length > limit {
        tracing::error!("{function}: private data of {length} bytes is over the limit of {limit}");
        return Err(Status::ExceedsLimit);
    }
    if length == 0 {
        return Ok(&[]);
    }
    non_null(data.as_ptr(), function, "private_data")?;
    data.get(function)
}
