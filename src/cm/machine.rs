//! The state of one connection-manager connection, without I/O: it takes
//! what happened (the TCP connect finished, bytes arrived, the peer closed,
//! the user called an API function) and says which callback to deliver and
//! what to send. `cm::conn` does the socket work and calls the user.
//!
//! The order of a connection, as UCX's connection managers deliver it:
//! client `resolve` → client sends the request (`uct_ep_connect`) → server
//! `conn_request` → server ep created, sends the accept → client `connect`
//! (with the server's data) → client notify (`uct_cm_client_ep_conn_notify`)
//! → server `notify`. After that, the first side's `uct_ep_disconnect`
//! half-closes the stream; each side's `disconnect` callback runs when the
//! peer's half-close (or the end of the peer) arrives.
//!
//! Failures before the connection is up end the callback the user is waiting
//! for with UCX's statuses: no listener (`NOT_CONNECTED`), no route
//! (`UNREACHABLE`), a reject (`REJECTED`), a peer gone after answering
//! (`CONNECTION_RESET`), a peer silent past the handshake deadline
//! (`UNREACHABLE`, as UCX's RDMA connection manager reports its timeouts).
//! Each callback is delivered at most once. A request the listener's user
//! neither accepts nor rejects within the same deadline is released (the
//! client, whose wait for the answer started earlier, has failed by then).

use super::wire::{FrameReader, Kind, Message};
use crate::abi::ucs_status::Status;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Client,
    Server,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Client: the TCP connect is under way.
    Connecting,
    /// Client: resolved; waiting for `uct_ep_connect`.
    Resolved,
    /// Client: request sent; waiting for the server's answer.
    RequestSent,
    /// Server: accepted socket; waiting for the client's request.
    AwaitRequest,
    /// Server: the request went to the listener's callback; waiting for an
    /// ep or a reject.
    RequestDelivered,
    /// Server: ep created and accept sent; waiting for the client's notify.
    Accepted,
    /// Server: the request was rejected.
    Rejected,
    /// Both: connected (client: `connect` callback delivered with success;
    /// server: `notify` delivered with success).
    Connected,
    /// The connection failed before it was up; its callback was delivered.
    Failed(Status),
}

/// A callback to deliver (or, for `Drop`, a connection to close quietly).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Client: `cm_resolve_cb` with this status.
    Resolve(Result<(), Status>),
    /// Server: the listener's `conn_request_cb`.
    Request {
        device_address: Vec<u8>,
        private_data: Vec<u8>,
    },
    /// Client: `sockaddr_cb_client`.
    ClientConnect(Result<Message, Status>),
    /// Server: `sockaddr_cb_server` with this status.
    ServerNotify(Result<(), Status>),
    /// Either: `disconnect_cb`.
    Disconnect,
    /// Server: a connection that never became a request; close it.
    Drop,
    /// Server: the listener's user held the request past the deadline;
    /// release it.
    RequestExpired,
}

/// What the caller must do after feeding the machine.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub events: Vec<Event>,
    /// The socket is of no further use: stop watching it.
    pub finished: bool,
}

#[derive(Debug)]
pub struct Machine {
    role: Role,
    phase: Phase,
    reader: FrameReader,
    received_any: bool,
    notified: bool,
    local_disconnect: bool,
    remote_disconnect: bool,
    /// Server: the request is with the listener's user (delivered, neither
    /// accepted nor rejected), whether or not the client is still there.
    request_held: bool,
}

impl Machine {
    pub fn new(role: Role, max_payload: usize) -> Machine {
        Machine {
            role,
            phase: match role {
                Role::Client => Phase::Connecting,
                Role::Server => Phase::AwaitRequest,
            },
            reader: FrameReader::new(max_payload),
            received_any: false,
            notified: false,
            local_disconnect: false,
            remote_disconnect: false,
            request_held: false,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn role(&self) -> Role {
        self.role
    }

    /// Whether the connection waits for the peer (not for the local user,
    /// and not established or ended): the phases a handshake deadline bounds.
    pub fn awaits_peer(&self) -> bool {
        matches!(
            self.phase,
            Phase::Connecting | Phase::RequestSent | Phase::AwaitRequest | Phase::Accepted
        )
    }

    /// Server: the listener's user holds the request.
    pub fn request_held(&self) -> bool {
        self.request_held
    }

    /// What the handshake deadline is armed for: the phase waiting for the
    /// peer, or a held request (`RequestDelivered`, also once the client
    /// is gone); `None` when nothing is bounded.
    pub fn deadline_phase(&self) -> Option<Phase> {
        if self.request_held {
            return Some(Phase::RequestDelivered);
        }
        self.awaits_peer().then_some(self.phase)
    }

    /// The handshake deadline armed on entering the current phase passed.
    /// A phase that no longer waits for the peer ignores it (a late timer).
    pub fn deadline_passed(&mut self) -> Outcome {
        if self.request_held {
            tracing::debug!("cm: the listener's user held a request past the deadline");
            self.request_held = false;
            if self.phase == Phase::RequestDelivered {
                self.phase = Phase::Failed(Status::Unreachable);
            }
            return Outcome {
                events: vec![Event::RequestExpired],
                finished: true,
            };
        }
        if !self.awaits_peer() {
            return Outcome::default();
        }
        tracing::debug!(
            "cm: {:?} side: the peer stayed silent past the deadline in phase {:?}",
            self.role,
            self.phase
        );
        self.fail(Status::Unreachable)
    }

    /// Client: the TCP connect finished with `result`.
    pub fn tcp_connected(&mut self, result: Result<(), Status>) -> Outcome {
        if self.phase != Phase::Connecting {
            return Outcome::default();
        }
        match result {
            Ok(()) => {
                self.phase = Phase::Resolved;
                Outcome {
                    events: vec![Event::Resolve(Ok(()))],
                    finished: false,
                }
            }
            Err(status) => self.fail(status),
        }
    }

    /// Bytes from the peer.
    pub fn received(&mut self, bytes: &[u8]) -> Outcome {
        if !bytes.is_empty() {
            self.received_any = true;
        }
        self.reader.push(bytes);
        let mut outcome = Outcome::default();
        loop {
            match self.reader.next_message() {
                Ok(Some(message)) => {
                    let step = self.message(message);
                    outcome.events.extend(step.events);
                    if step.finished {
                        outcome.finished = true;
                        return outcome;
                    }
                }
                Ok(None) => return outcome,
                Err(status) => {
                    let step = self.peer_lost(status);
                    outcome.events.extend(step.events);
                    outcome.finished = true;
                    return outcome;
                }
            }
        }
    }

    fn message(&mut self, message: Message) -> Outcome {
        let emit = |events| Outcome {
            events,
            finished: false,
        };
        match (self.phase, message.kind) {
            (Phase::AwaitRequest, Kind::Request) => {
                self.phase = Phase::RequestDelivered;
                self.request_held = true;
                emit(vec![Event::Request {
                    device_address: message.device_address,
                    private_data: message.private_data,
                }])
            }
            (Phase::RequestSent, Kind::Accept) => {
                self.phase = Phase::Connected;
                emit(vec![Event::ClientConnect(Ok(message))])
            }
            (Phase::RequestSent, Kind::Reject) => {
                self.phase = Phase::Failed(Status::Rejected);
                Outcome {
                    events: vec![Event::ClientConnect(Err(Status::Rejected))],
                    finished: true,
                }
            }
            (Phase::Accepted, Kind::Notify) => {
                self.phase = Phase::Connected;
                emit(vec![Event::ServerNotify(Ok(()))])
            }
            (phase, kind) => {
                tracing::warn!("cm: unexpected {kind:?} message in phase {phase:?}");
                self.peer_lost(Status::ConnectionReset)
            }
        }
    }

    /// The peer closed its side (`Ok`) or the socket failed (`Err`).
    pub fn peer_closed(&mut self, error: Option<Status>) -> Outcome {
        if self.reader.pending() != 0 {
            tracing::debug!("cm: the peer closed in the middle of a message");
        }
        self.peer_lost(error.unwrap_or(Status::ConnectionReset))
    }

    fn peer_lost(&mut self, status: Status) -> Outcome {
        match self.phase {
            Phase::Connected => {
                let first = !self.remote_disconnect;
                self.remote_disconnect = true;
                Outcome {
                    events: if first {
                        vec![Event::Disconnect]
                    } else {
                        vec![]
                    },
                    // The stream stays until this side disconnects too.
                    finished: self.local_disconnect,
                }
            }
            Phase::RequestSent if !self.received_any && status == Status::ConnectionReset => {
                // Closed before a word of answer: no server took the request.
                self.fail(Status::NotConnected)
            }
            _ => self.fail(status),
        }
    }

    /// The connection failed before it was up: the callback the user waits
    /// for gets `status`.
    fn fail(&mut self, status: Status) -> Outcome {
        let event = match self.phase {
            Phase::Connecting => Some(Event::Resolve(Err(status))),
            Phase::Resolved | Phase::RequestSent => Some(Event::ClientConnect(Err(status))),
            Phase::AwaitRequest => Some(Event::Drop),
            // The user holds the request: ep creation or reject tells it.
            Phase::RequestDelivered => None,
            Phase::Accepted => Some(Event::ServerNotify(Err(status))),
            Phase::Rejected | Phase::Failed(_) => None,
            Phase::Connected => return self.peer_lost(status),
        };
        if !matches!(self.phase, Phase::Failed(_) | Phase::Rejected) {
            self.phase = Phase::Failed(status);
        }
        Outcome {
            events: event.into_iter().collect(),
            finished: true,
        }
    }

    /// Client, `uct_ep_connect`: the request may go out.
    pub fn send_request(&mut self) -> Result<(), Status> {
        match self.phase {
            Phase::Resolved => {
                self.phase = Phase::RequestSent;
                Ok(())
            }
            Phase::Failed(status) => Err(status),
            phase => Err(wrong_phase("uct_ep_connect", phase)),
        }
    }

    /// Server, `uct_ep_create` on a request: the accept may go out.
    pub fn accept(&mut self) -> Result<(), Status> {
        self.request_held = false;
        match self.phase {
            Phase::RequestDelivered => {
                self.phase = Phase::Accepted;
                Ok(())
            }
            Phase::Failed(_) => Err(Status::ConnectionReset),
            phase => Err(wrong_phase("uct_ep_create", phase)),
        }
    }

    /// Server, `uct_listener_reject`: whether a reject message should go out
    /// (not when the client is already gone).
    pub fn reject(&mut self) -> Result<bool, Status> {
        self.request_held = false;
        match self.phase {
            Phase::RequestDelivered => {
                self.phase = Phase::Rejected;
                Ok(true)
            }
            Phase::Failed(_) => Ok(false),
            phase => Err(wrong_phase("uct_listener_reject", phase)),
        }
    }

    /// Client, `uct_cm_client_ep_conn_notify`: the notify may go out.
    pub fn notify(&mut self) -> Result<(), Status> {
        match self.phase {
            Phase::Connected if self.role == Role::Client && !self.notified => {
                if self.remote_disconnect {
                    return Err(Status::NotConnected);
                }
                self.notified = true;
                Ok(())
            }
            Phase::Failed(_) => Err(Status::NotConnected),
            phase => Err(wrong_phase("uct_cm_client_ep_conn_notify", phase)),
        }
    }

    /// `uct_ep_disconnect`: the stream is to be half-closed now.
    pub fn disconnect(&mut self) -> Result<(), Status> {
        match self.phase {
            Phase::Connected if self.local_disconnect => Err(if self.remote_disconnect {
                Status::NotConnected
            } else {
                Status::InProgress
            }),
            Phase::Connected => {
                self.local_disconnect = true;
                Ok(())
            }
            Phase::Failed(_) | Phase::Rejected => Err(Status::NotConnected),
            _ => Err(Status::Busy),
        }
    }

    /// The peer has closed its side (nothing more to read).
    pub fn peer_done(&self) -> bool {
        self.remote_disconnect
    }

    /// Both sides have closed: the stream is of no further use.
    pub fn both_done(&self) -> bool {
        self.local_disconnect && self.remote_disconnect
    }
}

#[cold]
fn wrong_phase(function: &str, phase: Phase) -> Status {
    tracing::warn!("{function}: not allowed on a connection in phase {phase:?}");
    Status::InvalidParam
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 4096;

    fn bytes(kind: Kind, address: &[u8], data: &[u8]) -> Vec<u8> {
        Message {
            kind,
            device_address: address.to_vec(),
            private_data: data.to_vec(),
        }
        .encode()
        .unwrap()
    }

    fn client_request_sent() -> Machine {
        let mut client = Machine::new(Role::Client, MAX);
        client.tcp_connected(Ok(()));
        client.send_request().unwrap();
        client
    }

    #[test]
    fn a_full_connection_delivers_each_callback_once_in_order() {
        let mut client = Machine::new(Role::Client, MAX);
        let mut server = Machine::new(Role::Server, MAX);
        assert_eq!(
            client.tcp_connected(Ok(())).events,
            [Event::Resolve(Ok(()))]
        );
        client.send_request().unwrap();
        let request = server.received(&bytes(Kind::Request, b"dev-c", b"client"));
        assert_eq!(
            request.events,
            [Event::Request {
                device_address: b"dev-c".to_vec(),
                private_data: b"client".to_vec()
            }]
        );
        server.accept().unwrap();
        let connect = client.received(&bytes(Kind::Accept, b"dev-s", b"server"));
        let Event::ClientConnect(Ok(accept)) = &connect.events[0] else {
            panic!("{connect:?}");
        };
        assert_eq!(
            (&accept.device_address[..], &accept.private_data[..]),
            (&b"dev-s"[..], &b"server"[..])
        );
        client.notify().unwrap();
        assert_eq!(client.notify(), Err(Status::InvalidParam), "notify twice");
        let notify = server.received(&bytes(Kind::Notify, b"", b""));
        assert_eq!(notify.events, [Event::ServerNotify(Ok(()))]);

        assert_eq!(client.disconnect(), Ok(()));
        assert_eq!(client.disconnect(), Err(Status::InProgress));
        // The server keeps its stream until it disconnects too.
        let remote = server.peer_closed(None);
        assert_eq!(remote.events, [Event::Disconnect]);
        assert!(!remote.finished);
        assert!(server.peer_done() && !server.both_done());
        assert_eq!(server.disconnect(), Ok(()));
        assert!(server.both_done());
        let local = client.peer_closed(None);
        assert_eq!(local.events, [Event::Disconnect]);
        assert!(local.finished);
        assert_eq!(
            client.peer_closed(None).events,
            [],
            "disconnect is delivered once"
        );
        assert_eq!(client.disconnect(), Err(Status::NotConnected));
    }

    #[test]
    fn no_listener_is_not_connected_and_no_route_is_unreachable() {
        let mut client = Machine::new(Role::Client, MAX);
        let refused = client.tcp_connected(Err(Status::NotConnected));
        assert_eq!(refused.events, [Event::Resolve(Err(Status::NotConnected))]);
        assert!(refused.finished);
        assert_eq!(client.send_request(), Err(Status::NotConnected));
        assert_eq!(client.disconnect(), Err(Status::NotConnected));

        let mut client = Machine::new(Role::Client, MAX);
        let unreachable = client.tcp_connected(Err(Status::Unreachable));
        assert_eq!(
            unreachable.events,
            [Event::Resolve(Err(Status::Unreachable))]
        );
    }

    #[test]
    fn a_reject_reaches_the_client_as_rejected() {
        let mut server = Machine::new(Role::Server, MAX);
        server.received(&bytes(Kind::Request, b"a", b""));
        assert_eq!(server.reject(), Ok(true));
        assert_eq!(server.accept(), Err(Status::InvalidParam));
        let mut client = client_request_sent();
        let rejected = client.received(&bytes(Kind::Reject, b"", b""));
        assert_eq!(
            rejected.events,
            [Event::ClientConnect(Err(Status::Rejected))]
        );
        assert!(rejected.finished);
        assert_eq!(client.notify(), Err(Status::NotConnected));
    }

    #[test]
    fn a_server_that_vanishes_mid_handshake_ends_the_connect_callback() {
        // Gone before answering: nobody took the request.
        let mut client = client_request_sent();
        let gone = client.peer_closed(None);
        assert_eq!(
            gone.events,
            [Event::ClientConnect(Err(Status::NotConnected))]
        );
        // Gone halfway through its answer: reset.
        let mut client = client_request_sent();
        let accept = bytes(Kind::Accept, b"dev", b"data");
        client.received(&accept[..5]);
        assert_eq!(
            client.peer_closed(None).events,
            [Event::ClientConnect(Err(Status::ConnectionReset))]
        );
        // Gone after resolve, before the request went out.
        let mut client = Machine::new(Role::Client, MAX);
        client.tcp_connected(Ok(()));
        assert_eq!(
            client.peer_closed(Some(Status::ConnectionReset)).events,
            [Event::ClientConnect(Err(Status::ConnectionReset))]
        );
    }

    #[test]
    fn a_client_that_vanishes_mid_handshake_ends_the_server_side() {
        // Before its request: closed quietly, no callback.
        let mut server = Machine::new(Role::Server, MAX);
        server.received(&bytes(Kind::Request, b"dev", b"data")[..3]);
        assert_eq!(server.peer_closed(None).events, [Event::Drop]);
        // After the request was delivered: the user learns it from accept.
        let mut server = Machine::new(Role::Server, MAX);
        server.received(&bytes(Kind::Request, b"dev", b""));
        assert_eq!(server.peer_closed(None).events, []);
        assert_eq!(server.accept(), Err(Status::ConnectionReset));
        assert_eq!(server.reject(), Ok(false));
        // After the accept, before the notify: the notify callback fails.
        let mut server = Machine::new(Role::Server, MAX);
        server.received(&bytes(Kind::Request, b"dev", b""));
        server.accept().unwrap();
        assert_eq!(server.disconnect(), Err(Status::Busy));
        assert_eq!(
            server.peer_closed(None).events,
            [Event::ServerNotify(Err(Status::ConnectionReset))]
        );
    }

    #[test]
    fn a_silent_peer_fails_each_waiting_phase_at_its_deadline() {
        // A connect that never completes: the resolve callback fails.
        let mut client = Machine::new(Role::Client, MAX);
        assert!(client.awaits_peer());
        let expired = client.deadline_passed();
        assert_eq!(expired.events, [Event::Resolve(Err(Status::Unreachable))]);
        assert!(expired.finished);
        assert_eq!(client.phase(), Phase::Failed(Status::Unreachable));
        assert_eq!(client.deadline_passed(), Outcome::default(), "once");
        assert_eq!(client.send_request(), Err(Status::Unreachable));

        // A server that accepted the TCP connection and never answers.
        let mut client = client_request_sent();
        assert!(client.awaits_peer());
        let expired = client.deadline_passed();
        assert_eq!(
            expired.events,
            [Event::ClientConnect(Err(Status::Unreachable))]
        );
        assert!(expired.finished);
        assert_eq!(client.peer_closed(None).events, [], "no second callback");

        // A client that connects and never sends its request.
        let mut server = Machine::new(Role::Server, MAX);
        assert!(server.awaits_peer());
        let expired = server.deadline_passed();
        assert_eq!(expired.events, [Event::Drop]);
        assert!(expired.finished);

        // A client that never sends its notify after the accept.
        let mut server = Machine::new(Role::Server, MAX);
        server.received(&bytes(Kind::Request, b"dev", b""));
        server.accept().unwrap();
        assert!(server.awaits_peer());
        let expired = server.deadline_passed();
        assert_eq!(
            expired.events,
            [Event::ServerNotify(Err(Status::Unreachable))]
        );
        assert!(expired.finished);
        assert_eq!(server.received(&bytes(Kind::Notify, b"", b"")).events, []);
        assert_eq!(server.disconnect(), Err(Status::NotConnected));
    }

    #[test]
    fn a_deadline_is_ignored_where_nobody_waits_for_the_peer() {
        // Resolved: the local user is to call uct_ep_connect.
        let mut client = Machine::new(Role::Client, MAX);
        client.tcp_connected(Ok(()));
        assert!(!client.awaits_peer());
        assert_eq!(client.deadline_passed(), Outcome::default());
        client.send_request().unwrap();
        // Connected: a timer armed earlier fires late.
        client.received(&bytes(Kind::Accept, b"dev", b""));
        assert!(!client.awaits_peer());
        assert_eq!(client.deadline_passed(), Outcome::default());
        assert_eq!(client.phase(), Phase::Connected);
        // Rejected.
        let mut server = Machine::new(Role::Server, MAX);
        server.received(&bytes(Kind::Request, b"dev", b""));
        server.reject().unwrap();
        assert_eq!(server.deadline_passed(), Outcome::default());
    }

    #[test]
    fn a_request_the_user_holds_past_the_deadline_is_released() {
        // The client still waits: the connection fails, the request goes.
        let mut server = Machine::new(Role::Server, MAX);
        assert_eq!(server.deadline_phase(), Some(Phase::AwaitRequest));
        server.received(&bytes(Kind::Request, b"dev", b""));
        assert!(server.request_held() && !server.awaits_peer());
        assert_eq!(server.deadline_phase(), Some(Phase::RequestDelivered));
        let expired = server.deadline_passed();
        assert_eq!(expired.events, [Event::RequestExpired]);
        assert!(expired.finished);
        assert_eq!(server.phase(), Phase::Failed(Status::Unreachable));
        assert!(!server.request_held());
        assert_eq!(server.deadline_passed(), Outcome::default(), "once");

        // The client gave up first: the request stays bounded.
        let mut server = Machine::new(Role::Server, MAX);
        server.received(&bytes(Kind::Request, b"dev", b""));
        assert_eq!(server.peer_closed(None).events, []);
        assert_eq!(server.deadline_phase(), Some(Phase::RequestDelivered));
        assert_eq!(server.deadline_passed().events, [Event::RequestExpired]);

        // Accepted or rejected in time: nothing more is bounded by it.
        let mut server = Machine::new(Role::Server, MAX);
        server.received(&bytes(Kind::Request, b"dev", b""));
        server.reject().unwrap();
        assert_eq!(server.deadline_phase(), None);
        assert_eq!(server.deadline_passed(), Outcome::default());
        let mut server = Machine::new(Role::Server, MAX);
        server.received(&bytes(Kind::Request, b"dev", b""));
        server.peer_closed(None);
        assert_eq!(server.accept(), Err(Status::ConnectionReset));
        assert_eq!(server.deadline_phase(), None);
    }

    #[test]
    fn forged_or_misplaced_messages_fail_the_connection() {
        let mut server = Machine::new(Role::Server, MAX);
        let forged = server.received(b"CM\x01\x09\0\0\0\0");
        assert_eq!(forged.events, [Event::Drop]);
        assert!(forged.finished);
        // A notify before any accept.
        let mut client = client_request_sent();
        let misplaced = client.received(&bytes(Kind::Notify, b"", b""));
        assert_eq!(
            misplaced.events,
            [Event::ClientConnect(Err(Status::ConnectionReset))]
        );
        // An over-long payload.
        let mut server = Machine::new(Role::Server, 16);
        let long = server.received(&bytes(Kind::Request, b"dev", &[7u8; 64]));
        assert_eq!(long.events, [Event::Drop]);
    }
}
