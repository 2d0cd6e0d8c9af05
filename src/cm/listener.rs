//! A listener: a TCP socket on a device's address (or on every address)
//! whose incoming connections become [`Conn`]s awaiting their request. The
//! device of a connection is the one owning the local address it arrived
//! on; a connection on an address no device has is closed with a log line.

use std::ffi::{c_int, c_void};
use std::net::{SocketAddr, SocketAddrV4, TcpListener};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};

use super::async_io::Watch;
use super::conn::{Conn, RequestCallback, RequestSink};
use super::device::{device_at, LocalDevice};
use super::machine::Role;
use super::socket::set_backlog;
use super::{lock, CmCore};
use crate::abi::*;

struct State {
    socket: Option<TcpListener>,
    /// The socket's registration with the async context.
    watched: Option<Watch<ListenerCore>>,
    /// Connections whose request has not arrived yet.
    awaiting: Vec<Arc<Conn>>,
    /// The C handle and callback; cleared when the listener is destroyed.
    handle: usize,
    conn_request_cb: uct_cm_listener_conn_request_callback_t,
    user_data: usize,
}

pub struct ListenerCore {
    cm: Arc<CmCore>,
    pub local: SocketAddrV4,
    state: Mutex<State>,
}

impl ListenerCore {
    /// Listens on `address` (port 0: any free port).
    pub fn bind(
        cm: Arc<CmCore>,
        address: SocketAddrV4,
        backlog: Option<c_int>,
        conn_request_cb: uct_cm_listener_conn_request_callback_t,
        user_data: *mut c_void,
    ) -> Result<Arc<ListenerCore>, Status> {
        let socket = TcpListener::bind(address).map_err(|error| {
            tracing::error!("cm: cannot listen on {address}: {error}");
            match error.kind() {
                std::io::ErrorKind::AddrInUse => Status::Busy,
                _ => super::socket::status_of_error(&error),
            }
        })?;
        socket.set_nonblocking(true).map_err(|_| Status::IoError)?;
        if let Some(backlog) = backlog {
            set_backlog(&socket, backlog)?;
        }
        let local = match socket.local_addr() {
            Ok(SocketAddr::V4(local)) => local,
            _ => return Err(Status::IoError),
        };
        let fd = socket.as_raw_fd();
        let listener = Arc::new(ListenerCore {
            cm,
            local,
            state: Mutex::new(State {
                socket: Some(socket),
                watched: None,
                awaiting: Vec::new(),
                handle: 0,
                conn_request_cb,
                user_data: user_data as usize,
            }),
        });
        let watch = listener.cm.async_target.watch(
            fd,
            UCS_EVENT_SET_EVREAD,
            &listener,
            ListenerCore::on_readable,
        )?;
        lock(&listener.state).watched = Some(watch);
        tracing::debug!("cm: listening on {local}");
        Ok(listener)
    }

    pub fn set_handle(&self, handle: uct_listener_h) {
        lock(&self.state).handle = handle as usize;
    }

    /// Stops listening; connections still awaiting their request close.
    pub fn close(self: &Arc<Self>) {
        let (socket, watched, awaiting) = {
            let mut state = lock(&self.state);
            state.handle = 0;
            state.conn_request_cb = None;
            let watched = state.watched.take();
            (
                state.socket.take(),
                watched,
                std::mem::take(&mut state.awaiting),
            )
        };
        if let Some(watch) = watched {
            watch.end();
        }
        drop(socket);
        for conn in awaiting {
            conn.abandon();
        }
    }

    fn on_readable(self: &Arc<Self>) {
        loop {
            let accepted = {
                let state = lock(&self.state);
                let Some(socket) = state.socket.as_ref() else {
                    return;
                };
                socket.accept()
            };
            match accepted {
                Ok((stream, SocketAddr::V4(peer))) => self.take_connection(stream, peer),
                Ok((_, peer)) => tracing::warn!("cm: connection from {peer} dropped (not IPv4)"),
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => {
                    tracing::warn!("cm: accept on {}: {error}", self.local);
                    return;
                }
            }
        }
    }

    fn take_connection(self: &Arc<Self>, stream: std::net::TcpStream, peer: SocketAddrV4) {
        let local = match stream.local_addr() {
            Ok(SocketAddr::V4(local)) => local,
            _ => return,
        };
        let Some(device) = device_at(*local.ip()) else {
            tracing::warn!(
                "cm: connection from {peer} to {local} closed: no device has address {}",
                local.ip()
            );
            return;
        };
        let device = match LocalDevice::open(device) {
            Ok(device) => device,
            Err(status) => {
                tracing::warn!(
                    "cm: connection from {peer} closed: {}: {status}",
                    device.name
                );
                return;
            }
        };
        if stream.set_nonblocking(true).is_err() {
            return;
        }
        let _ = stream.set_nodelay(true);
        let conn = Conn::new(
            self.cm.clone(),
            Role::Server,
            stream,
            device,
            peer,
            Some(self.clone()),
        );
        lock(&self.state).awaiting.push(conn.clone());
        if conn.watch().is_err() {
            self.forget(&conn);
        }
    }
}

impl RequestSink for ListenerCore {
    fn forget(&self, conn: &Arc<Conn>) {
        lock(&self.state).awaiting.retain(|c| !Arc::ptr_eq(c, conn));
    }

    fn request_callback(&self) -> Option<(RequestCallback, usize, usize)> {
        let state = lock(&self.state);
        let cb = state.conn_request_cb?;
        (state.handle != 0).then_some((cb, state.handle, state.user_data))
    }
}
