//! One connection of the connection manager: its TCP stream, its
//! [`Machine`], and the user's callbacks. Socket events arrive through the
//! worker's async context ([`super::async_io`]); callbacks are delivered
//! from there, after this connection's lock is released (a callback may
//! call back into the connection manager).
//!
//! While the machine waits for the peer, a one-shot timer (the handshake
//! deadline, `UCX_RDMA_CM_TIMEOUT`) is armed for each waiting phase; it is
//! watched through the same async context, and its expiry is one more input
//! to the machine.
//!
//! Ownership: each async registration (the socket's, the timer's) holds one
//! reference (taken when watched, dropped once the handler is removed), the ep handle
//! or the pending connection request another; the memory lives until the
//! last one goes.

use std::ffi::{c_int, c_void};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::async_io::{Timer, Watch};
use super::device::LocalDevice;
use super::machine::{Event, Machine, Outcome, Phase, Role};
use super::socket::{status_of_error, storage_of, SOCKADDR_IN_LEN};
use super::wire::{Kind, Message};
use super::{lock, CmCore};
use crate::abi::ucs_status::status_of;
use crate::abi::*;

/// The user's side of a connection: its ep handle and callbacks (all zero
/// until the ep exists, and again after it is destroyed).
#[derive(Clone, Copy, Default)]
pub struct UserSide {
    pub ep: usize,
    pub user_data: usize,
    pub resolve: uct_cm_ep_resolve_callback_t,
    pub client_connect: uct_cm_ep_client_connect_callback_t,
    pub server_notify: uct_cm_ep_server_conn_notify_callback_t,
    pub disconnect: uct_ep_disconnect_cb_t,
}

struct State {
    machine: Machine,
    stream: Option<TcpStream>,
    /// The socket's registration with the async context and the events it
    /// watches, `None` when not registered.
    watched: Option<(ucs_event_set_types_t, Watch<Conn>)>,
    outbox: Vec<u8>,
    half_close_pending: bool,
    user: UserSide,
    /// Server, until its request is delivered: where it arrived.
    listener: Option<Arc<dyn RequestSink>>,
    /// The handshake deadline, once watched.
    deadline: Option<Deadline>,
}

/// A connection's handshake deadline: its timer, registered with the async
/// context, and the waiting phase it is armed for.
struct Deadline {
    timer: Timer,
    watch: Watch<Conn>,
    timeout: Duration,
    armed_for: Option<Phase>,
}

/// What a server connection needs of the listener it arrived on, until its
/// request is delivered (the listener implements it: the connection names no
/// listener type, so the listener module alone knows both).
pub trait RequestSink: Send + Sync {
    /// `conn` no longer awaits its request.
    fn forget(&self, conn: &Arc<Conn>);
    /// The listener's callback, C handle and argument, while it lives.
    fn request_callback(&self) -> Option<(RequestCallback, usize, usize)>;
}

/// A listener's connection-request callback.
pub type RequestCallback =
    unsafe extern "C" fn(uct_listener_h, *mut c_void, *const uct_cm_listener_conn_request_args_t);

pub struct Conn {
    /// The connection manager whose async context watches the socket: the
    /// listener's until a server ep is made, then the ep's (another worker's
    /// perhaps).
    cm: Mutex<Arc<CmCore>>,
    pub device: LocalDevice,
    pub peer: SocketAddrV4,
    fd: c_int,
    state: Mutex<State>,
}

/// A stream taken out of its connection, to be unwatched and closed once
/// the connection's lock is released.
struct Closing {
    stream: TcpStream,
    watched: Option<Watch<Conn>>,
    deadline: Option<Deadline>,
}

impl Conn {
    pub fn new(
        cm: Arc<CmCore>,
        role: Role,
        stream: TcpStream,
        device: LocalDevice,
        peer: SocketAddrV4,
        listener: Option<Arc<dyn RequestSink>>,
    ) -> Arc<Conn> {
        let max_payload = 1 + usize::from(u8::MAX) + cm.max_conn_priv;
        Arc::new(Conn {
            cm: Mutex::new(cm),
            device,
            peer,
            fd: stream.as_raw_fd(),
            state: Mutex::new(State {
                machine: Machine::new(role, max_payload),
                stream: Some(stream),
                watched: None,
                outbox: Vec::new(),
                half_close_pending: false,
                user: UserSide::default(),
                listener,
                deadline: None,
            }),
        })
    }

    pub fn cm(&self) -> Arc<CmCore> {
        lock(&self.cm).clone()
    }

    /// Moves the socket to `cm`'s async context (a request accepted on
    /// another worker than its listener's).
    pub fn move_to(self: &Arc<Self>, cm: &Arc<CmCore>) -> Result<(), Status> {
        let old = self.cm();
        if Arc::ptr_eq(&old, cm) {
            return Ok(());
        }
        let (watched, deadline) = {
            let mut state = lock(&self.state);
            (state.watched.take(), state.deadline.take())
        };
        let was_watched = watched.is_some();
        if let Some((_, watch)) = watched {
            watch.end();
        }
        if let Some(deadline) = deadline {
            deadline.watch.end();
        }
        *lock(&self.cm) = cm.clone();
        if was_watched && lock(&self.state).stream.is_some() {
            self.watch()?;
        }
        Ok(())
    }

    pub fn phase(&self) -> Phase {
        lock(&self.state).machine.phase()
    }

    /// Starts watching the socket (a connecting client for writability, a
    /// server connection for requests) and the deadline's timer.
    pub fn watch(self: &Arc<Self>) -> Result<(), Status> {
        let cm = self.cm();
        let timer = Timer::new()?;
        let mut state = lock(&self.state);
        let events = wanted_events(&state);
        let socket = cm
            .async_target
            .watch(self.fd, events, self, Conn::on_event)?;
        state.watched = Some((events, socket));
        let deadline =
            match cm
                .async_target
                .watch(timer.fd(), UCS_EVENT_SET_EVREAD, self, Conn::on_deadline)
            {
                Ok(deadline) => deadline,
                Err(status) => {
                    let closing = self.take_stream(&mut state);
                    drop(state);
                    self.finish_close(closing);
                    return Err(status);
                }
            };
        state.deadline = Some(Deadline {
            timer,
            watch: deadline,
            timeout: cm.handshake_timeout,
            armed_for: None,
        });
        arm_deadline(&mut state);
        Ok(())
    }

    /// Sets the user's side (the ep was created).
    pub fn set_user(&self, user: UserSide) {
        lock(&self.state).user = user;
    }

    /// The ep is destroyed: no more callbacks; the stream closes.
    pub fn detach(self: &Arc<Self>) {
        let closing = {
            let mut state = lock(&self.state);
            state.user = UserSide::default();
            self.take_stream(&mut state)
        };
        self.finish_close(closing);
    }

    /// The listener is gone before this connection's request arrived.
    pub fn abandon(self: &Arc<Self>) {
        let closing = {
            let mut state = lock(&self.state);
            state.listener = None;
            self.take_stream(&mut state)
        };
        self.finish_close(closing);
    }

    /// Client, `uct_ep_connect`: sends the request with `private_data`.
    pub fn send_request(self: &Arc<Self>, private_data: &[u8]) -> Result<(), Status> {
        self.send(private_data, Machine::send_request, Kind::Request)
    }

    /// Server, `uct_ep_create` on this request: sends the accept.
    pub fn accept(self: &Arc<Self>, private_data: &[u8]) -> Result<(), Status> {
        self.send(private_data, Machine::accept, Kind::Accept)
    }

    /// Client, `uct_cm_client_ep_conn_notify`.
    pub fn notify(self: &Arc<Self>) -> Result<(), Status> {
        self.send(&[], Machine::notify, Kind::Notify)
    }

    fn send(
        self: &Arc<Self>,
        private_data: &[u8],
        step: fn(&mut Machine) -> Result<(), Status>,
        kind: Kind,
    ) -> Result<(), Status> {
        let message = Message {
            kind,
            device_address: self.device.address.clone(),
            private_data: private_data.to_vec(),
        };
        let bytes = message.encode()?;
        let (result, closing) = {
            let mut state = lock(&self.state);
            step(&mut state.machine)?;
            state.outbox.extend_from_slice(&bytes);
            match self.flush(&mut state) {
                Ok(()) => {
                    self.rewatch(&mut state);
                    (Ok(()), None)
                }
                // The failure reaches the user through the callback the
                // machine picks when the socket reports it; the stream
                // stays watched until then.
                Err(status) => {
                    tracing::debug!("cm: sending {kind:?} to {}: {status}", self.peer);
                    (Ok(()), None::<Closing>)
                }
            }
        };
        self.finish_close(closing);
        result
    }

    /// Server, `uct_listener_reject`.
    pub fn reject(self: &Arc<Self>) -> Result<(), Status> {
        let closing = {
            let mut state = lock(&self.state);
            if state.machine.reject()? {
                if let Ok(bytes) = Message::signal(Kind::Reject).encode() {
                    state.outbox.extend_from_slice(&bytes);
                    let _ = self.flush(&mut state);
                }
            }
            self.take_stream(&mut state)
        };
        self.finish_close(closing);
        Ok(())
    }

    /// `uct_ep_disconnect`: half-closes the stream; once the peer has
    /// closed its side too, the stream goes.
    pub fn disconnect(self: &Arc<Self>) -> Result<(), Status> {
        let closing = {
            let mut state = lock(&self.state);
            state.machine.disconnect()?;
            state.half_close_pending = true;
            if let Err(status) = self.flush(&mut state) {
                tracing::debug!("cm: disconnecting from {}: {status}", self.peer);
            }
            if state.machine.both_done() && !state.half_close_pending {
                self.take_stream(&mut state)
            } else {
                self.rewatch(&mut state);
                None
            }
        };
        self.finish_close(closing);
        Ok(())
    }

    /// Writes what the outbox holds, then the pending half-close.
    fn flush(&self, state: &mut State) -> Result<(), Status> {
        let Some(stream) = state.stream.as_mut() else {
            state.outbox.clear();
            return Err(Status::NotConnected);
        };
        while !state.outbox.is_empty() {
            match stream.write(&state.outbox) {
                Ok(0) => return Err(Status::ConnectionReset),
                Ok(written) => {
                    state.outbox.drain(..written);
                }
                Err(error) if error.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(error) if error.kind() == ErrorKind::Interrupted => {}
                Err(error) => return Err(status_of_error(&error)),
            }
        }
        if state.half_close_pending {
            state.half_close_pending = false;
            if let Err(error) = stream.shutdown(Shutdown::Write) {
                if error.raw_os_error() != Some(libc::ENOTCONN) {
                    return Err(status_of_error(&error));
                }
            }
        }
        Ok(())
    }

    /// Watches what the state needs now, and arms the deadline for it.
    fn rewatch(&self, state: &mut State) {
        arm_deadline(state);
        let wanted = wanted_events(state);
        let Some((current, watch)) = state.watched.as_mut() else {
            return;
        };
        if wanted != *current {
            match watch.modify(wanted) {
                Ok(()) => *current = wanted,
                Err(status) => tracing::warn!("cm: fd {}: cannot change events: {status}", self.fd),
            }
        }
    }

    fn take_stream(&self, state: &mut State) -> Option<Closing> {
        let stream = state.stream.take()?;
        Some(Closing {
            stream,
            watched: state.watched.take().map(|(_, watch)| watch),
            deadline: state.deadline.take(),
        })
    }

    /// Unwatches (waiting for a handler call on another thread) and closes,
    /// outside the lock: the handler takes the lock too.
    fn finish_close(self: &Arc<Self>, closing: Option<Closing>) {
        let Some(closing) = closing else {
            return;
        };
        if let Some(watch) = closing.watched {
            watch.end();
        }
        if let Some(deadline) = closing.deadline {
            // The timer closes after its handler is removed.
            deadline.watch.end();
        }
        drop(closing.stream);
    }

    /// A socket event: advance the machine, then deliver its callbacks.
    fn on_event(self: &Arc<Self>) {
        let (outcome, closing) = {
            let mut state = lock(&self.state);
            if state.stream.is_none() {
                return;
            }
            let mut outcome = Outcome::default();
            if state.machine.phase() == Phase::Connecting {
                // None: a wake-up before the connect finished.
                if let Some(result) = connect_result(state.stream.as_ref()) {
                    merge(&mut outcome, state.machine.tcp_connected(result));
                }
            } else if !state.machine.peer_done() {
                self.read_all(&mut state, &mut outcome);
            }
            if !outcome.finished {
                if let Err(status) = self.flush(&mut state) {
                    merge(&mut outcome, state.machine.peer_closed(Some(status)));
                }
            }
            let closing =
                if outcome.finished || (state.machine.both_done() && !state.half_close_pending) {
                    self.take_stream(&mut state)
                } else {
                    self.rewatch(&mut state);
                    None
                };
            (outcome, closing)
        };
        self.finish_close(closing);
        for event in outcome.events {
            self.deliver(event);
        }
    }

    /// The deadline's timer fired: the machine fails a phase still waiting
    /// for the peer, then its callbacks are delivered.
    fn on_deadline(self: &Arc<Self>) {
        let (outcome, closing) = {
            let mut state = lock(&self.state);
            let open = state.stream.is_some();
            let Some(deadline) = state.deadline.as_mut() else {
                return;
            };
            // Not expired: re-armed for another phase while this call waited
            // for the lock.
            if !deadline.timer.take_expiry() || !open {
                return;
            }
            deadline.armed_for = None;
            let timeout = deadline.timeout;
            let phase = state.machine.phase();
            let outcome = state.machine.deadline_passed();
            if outcome.finished {
                tracing::debug!(
                    "cm: {} gave no answer within {timeout:?} (phase {phase:?}): the connection fails",
                    self.peer
                );
            }
            let closing = if outcome.finished {
                self.take_stream(&mut state)
            } else {
                self.rewatch(&mut state);
                None
            };
            (outcome, closing)
        };
        self.finish_close(closing);
        for event in outcome.events {
            self.deliver(event);
        }
    }

    fn read_all(&self, state: &mut State, outcome: &mut Outcome) {
        let mut buffer = [0u8; 4096];
        loop {
            let Some(stream) = state.stream.as_mut() else {
                return;
            };
            let step = match stream.read(&mut buffer) {
                Ok(0) => state.machine.peer_closed(None),
                Ok(read) => state.machine.received(&buffer[..read]),
                Err(error) if error.kind() == ErrorKind::WouldBlock => return,
                Err(error) if error.kind() == ErrorKind::Interrupted => continue,
                Err(error) => state.machine.peer_closed(Some(status_of_error(&error))),
            };
            let finished = step.finished;
            merge(outcome, step);
            // After the peer's end of stream there is nothing more to read.
            if finished || state.machine.peer_done() {
                return;
            }
        }
    }

    /// The user's side as it is now (an ep destroyed from an earlier
    /// callback gets nothing more).
    fn user(&self) -> UserSide {
        lock(&self.state).user
    }

    fn deliver(self: &Arc<Self>, event: Event) {
        match event {
            Event::Resolve(result) => self.deliver_resolve(result),
            Event::Request {
                device_address,
                private_data,
            } => self.deliver_request(&device_address, &private_data),
            Event::ClientConnect(result) => self.deliver_connect(result),
            Event::ServerNotify(result) => {
                let user = self.user();
                if let (Some(cb), true) = (user.server_notify, user.ep != 0) {
                    let args = uct_cm_ep_server_conn_notify_args_t {
                        field_mask: UCT_CM_EP_SERVER_CONN_NOTIFY_ARGS_FIELD_STATUS,
                        status: status_of(result),
                    };
                    tracing::debug!("cm: server ep {:#x}: notify {result:?}", user.ep);
                    // SAFETY: the user's callback for its live ep.
                    unsafe { cb(user.ep as uct_ep_h, user.user_data as *mut c_void, &args) };
                }
            }
            Event::Disconnect => {
                let user = self.user();
                if let (Some(cb), true) = (user.disconnect, user.ep != 0) {
                    tracing::debug!("cm: ep {:#x}: the peer {} disconnected", user.ep, self.peer);
                    // What the peer sent before it disconnected is taken
                    // from the receive CQs first, unless this handler runs
                    // inside the worker's own progress (poll mode), which
                    // is then what would take them.
                    if lock(&self.cm).async_target.handlers_run_apart() {
                        self.device.wait_receives_taken(*self.peer.ip());
                    }
                    // SAFETY: the user's callback for its live ep.
                    unsafe { cb(user.ep as uct_ep_h, user.user_data as *mut c_void) };
                }
            }
            Event::Drop => {
                tracing::debug!(
                    "cm: connection from {} dropped: it sent no request",
                    self.peer
                );
                self.leave_listener();
            }
        }
    }

    fn deliver_resolve(&self, result: Result<(), Status>) {
        let user = self.user();
        let (Some(cb), true) = (user.resolve, user.ep != 0) else {
            return;
        };
        let args = uct_cm_ep_resolve_args_t {
            field_mask: UCT_CM_EP_RESOLVE_ARGS_FIELD_DEV_NAME | UCT_CM_EP_RESOLVE_ARGS_FIELD_STATUS,
            dev_name: self.device.c_name(),
            status: status_of(result),
        };
        tracing::debug!(
            "cm: client ep {:#x} to {}: resolved on {} ({result:?})",
            user.ep,
            self.peer,
            self.device.name
        );
        // SAFETY: the user's callback with its argument.
        let status = unsafe { cb(user.user_data as *mut c_void, &args) };
        if status != UCS_OK && result.is_ok() {
            tracing::debug!("cm: the resolve callback answered {status}");
        }
    }

    fn deliver_connect(&self, result: Result<Message, Status>) {
        let user = self.user();
        let (Some(cb), true) = (user.client_connect, user.ep != 0) else {
            return;
        };
        let (remote, status) = match &result {
            Ok(accept) => (remote_data(accept), UCS_OK),
            Err(status) => (
                uct_cm_remote_data_t {
                    field_mask: 0,
                    dev_addr: std::ptr::null(),
                    dev_addr_length: 0,
                    conn_priv_data: std::ptr::null(),
                    conn_priv_data_length: 0,
                },
                status.raw(),
            ),
        };
        let args = uct_cm_ep_client_connect_args_t {
            field_mask: UCT_CM_EP_CLIENT_CONNECT_ARGS_FIELD_REMOTE_DATA
                | UCT_CM_EP_CLIENT_CONNECT_ARGS_FIELD_STATUS,
            remote_data: &remote,
            status,
        };
        tracing::debug!(
            "cm: client ep {:#x} to {}: connect status {status}",
            user.ep,
            self.peer
        );
        // SAFETY: the user's callback for its live ep; `remote` points into
        // `result`, alive for the call.
        unsafe { cb(user.ep as uct_ep_h, user.user_data as *mut c_void, &args) };
    }

    fn deliver_request(self: &Arc<Self>, device_address: &[u8], private_data: &[u8]) {
        let Some(listener) = self.leave_listener() else {
            tracing::debug!("cm: request from {} after its listener closed", self.peer);
            let _ = self.reject();
            return;
        };
        let Some((cb, handle, user_data)) = listener.request_callback() else {
            let _ = self.reject();
            return;
        };
        let request = super::REQUESTS.hand_out(self);
        let remote = uct_cm_remote_data_t {
            field_mask: UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR
                | UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR_LENGTH
                | UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA
                | UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA_LENGTH,
            dev_addr: device_address.as_ptr().cast(),
            dev_addr_length: device_address.len(),
            conn_priv_data: private_data.as_ptr().cast(),
            conn_priv_data_length: private_data.len(),
        };
        let client = storage_of(self.peer);
        let args = uct_cm_listener_conn_request_args_t {
            field_mask: UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_DEV_NAME
                | UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CONN_REQUEST
                | UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_REMOTE_DATA
                | UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CLIENT_ADDR,
            dev_name: self.device.c_name(),
            conn_request: request,
            remote_data: &remote,
            client_address: ucs_sock_addr_t {
                addr: &client as *const libc::sockaddr_storage as *const libc::sockaddr,
                addrlen: SOCKADDR_IN_LEN,
            },
        };
        tracing::debug!(
            "cm: listener {handle:#x}: request {request:p} from {} on {}",
            self.peer,
            self.device.name
        );
        // SAFETY: the listener's callback with its argument; every pointer
        // in `args` lives for the call.
        unsafe { cb(handle as uct_listener_h, user_data as *mut c_void, &args) };
    }

    /// Leaves the listener's list of connections awaiting a request.
    fn leave_listener(self: &Arc<Self>) -> Option<Arc<dyn RequestSink>> {
        let listener = lock(&self.state).listener.take()?;
        listener.forget(self);
        Some(listener)
    }
}

fn merge(outcome: &mut Outcome, step: Outcome) {
    outcome.events.extend(step.events);
    outcome.finished |= step.finished;
}

fn remote_data(message: &Message) -> uct_cm_remote_data_t {
    uct_cm_remote_data_t {
        field_mask: UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR
            | UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR_LENGTH
            | UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA
            | UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA_LENGTH,
        dev_addr: message.device_address.as_ptr().cast(),
        dev_addr_length: message.device_address.len(),
        conn_priv_data: message.private_data.as_ptr().cast(),
        conn_priv_data_length: message.private_data.len(),
    }
}

/// How a non-blocking connect ended, `None` while it is still under way.
fn connect_result(stream: Option<&TcpStream>) -> Option<Result<(), Status>> {
    let Some(stream) = stream else {
        return Some(Err(Status::NotConnected));
    };
    match stream.take_error() {
        Ok(None) => match stream.peer_addr() {
            Ok(_) => Some(Ok(())),
            Err(error) if error.raw_os_error() == Some(libc::ENOTCONN) => None,
            Err(error) => Some(Err(status_of_error(&error))),
        },
        Ok(Some(error)) | Err(error) => Some(Err(status_of_error(&error))),
    }
}

/// Arms the deadline for the phase the machine is in when that phase waits
/// for the peer (once per phase), disarms it otherwise.
fn arm_deadline(state: &mut State) {
    let Some(deadline) = state.deadline.as_mut() else {
        return;
    };
    let waiting = state.machine.awaits_peer().then(|| state.machine.phase());
    if waiting == deadline.armed_for {
        return;
    }
    deadline.armed_for = waiting;
    // A timer that cannot be armed is logged; the connection then waits for
    // the peer as long as the socket stays open.
    let _ = deadline.timer.arm(waiting.map(|_| deadline.timeout));
}

fn wanted_events(state: &State) -> ucs_event_set_types_t {
    if state.machine.phase() == Phase::Connecting {
        return UCS_EVENT_SET_EVWRITE;
    }
    // Nothing more to read once the peer closed its side (its end of
    // stream would wake the handler again and again).
    let mut events = if state.machine.peer_done() {
        0
    } else {
        UCS_EVENT_SET_EVREAD
    };
    if !state.outbox.is_empty() || state.half_close_pending {
        events |= UCS_EVENT_SET_EVWRITE;
    }
    events
}
