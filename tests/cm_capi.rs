//! The connection manager through its C API in one process, on our own
//! async context: a whole connection (resolve, request with private data,
//! accept, connect, notify, disconnect both ways) and what goes wrong: no
//! listener, a reject, peers that vanish or talk nonsense mid-handshake,
//! and bad arguments. Callbacks arrive on the async context's thread; each
//! wait is bounded.

use std::ffi::{c_uint, c_void, CStr};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::ptr::null_mut;
use std::sync::{Condvar, Mutex, Once};
use std::time::{Duration, Instant};

use uct::abi::*;
use uct::api::async_context::ucs_async_context_create;
use uct::api::cm::*;
use uct::api::component::{uct_query_components, uct_release_component_list};
use uct::api::config::{uct_config_modify, uct_config_release};
use uct::api::ep::{
    uct_cm_client_ep_conn_notify, uct_ep_connect, uct_ep_create, uct_ep_destroy, uct_ep_disconnect,
};
use uct::api::worker::uct_worker_create;
use uct::cm::socket::{ipv4_of, storage_of, SOCKADDR_IN_LEN};
use uct::cm::REQUESTS;

fn setup() {
    static SETUP: Once = Once::new();
    SETUP.call_once(|| std::env::set_var("UCX_SOFT_HCA_DEVICES", "mlx5_0@127.0.0.1"));
}

/// What the callbacks saw, in order.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Resolve {
        dev_name: String,
        status: ucs_status_t,
    },
    Request {
        request: usize,
        dev_name: String,
        dev_addr: Vec<u8>,
        data: Vec<u8>,
    },
    Connect {
        status: ucs_status_t,
        dev_addr: Vec<u8>,
        data: Vec<u8>,
    },
    Notify(ucs_status_t),
    Disconnect(usize),
}

#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<Seen>>,
    changed: Condvar,
}

impl Recorder {
    fn push(&self, seen: Seen) {
        self.seen.lock().unwrap().push(seen);
        self.changed.notify_all();
    }

    /// Waits (at most 10 s) for an event `pick` accepts and removes it.
    fn wait<T>(&self, what: &str, pick: impl Fn(&Seen) -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = self.seen.lock().unwrap();
        loop {
            if let Some(index) = seen.iter().position(|s| pick(s).is_some()) {
                return pick(&seen.remove(index)).unwrap();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no {what} within 10 s; saw {seen:?}");
            seen = self.changed.wait_timeout(seen, left).unwrap().0;
        }
    }

    fn nothing_for(&self, time: Duration) -> Vec<Seen> {
        std::thread::sleep(time);
        self.seen.lock().unwrap().clone()
    }

    fn arg(&self) -> *mut c_void {
        self as *const Recorder as *mut c_void
    }
}

fn recorder<'a>(arg: *mut c_void) -> &'a Recorder {
    // SAFETY: every callback's argument is a Recorder that outlives its eps.
    unsafe { &*(arg as *const Recorder) }
}

fn bytes(ptr: *const c_void, len: usize) -> Vec<u8> {
    if len == 0 {
        return Vec::new();
    }
    // SAFETY: the callback's contract: valid for `len` bytes during the call.
    unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }.to_vec()
}

fn name(raw: &[std::ffi::c_char]) -> String {
    // SAFETY: NUL-terminated within the array (the cm writes a NUL).
    unsafe { CStr::from_ptr(raw.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

unsafe extern "C" fn on_resolve(
    arg: *mut c_void,
    args: *const uct_cm_ep_resolve_args_t,
) -> ucs_status_t {
    // SAFETY: valid during the call.
    let args = unsafe { &*args };
    assert_eq!(
        args.field_mask,
        UCT_CM_EP_RESOLVE_ARGS_FIELD_DEV_NAME | UCT_CM_EP_RESOLVE_ARGS_FIELD_STATUS
    );
    recorder(arg).push(Seen::Resolve {
        dev_name: name(&args.dev_name),
        status: args.status,
    });
    UCS_OK
}

unsafe extern "C" fn on_request(
    _: uct_listener_h,
    arg: *mut c_void,
    args: *const uct_cm_listener_conn_request_args_t,
) {
    // SAFETY: valid during the call, with every field its mask names.
    let args = unsafe { &*args };
    assert_eq!(
        args.field_mask, 0xf,
        "dev name, request, remote data, client address"
    );
    // SAFETY: as above.
    let remote = unsafe { &*args.remote_data };
    assert_eq!(remote.field_mask, 0xf);
    // SAFETY: as above.
    let client = unsafe {
        ipv4_of(
            args.client_address.addr,
            args.client_address.addrlen,
            "test",
        )
    }
    .unwrap();
    assert_eq!(*client.ip(), Ipv4Addr::LOCALHOST);
    recorder(arg).push(Seen::Request {
        request: args.conn_request as usize,
        dev_name: name(&args.dev_name),
        dev_addr: bytes(remote.dev_addr.cast(), remote.dev_addr_length),
        data: bytes(remote.conn_priv_data, remote.conn_priv_data_length),
    });
}

unsafe extern "C" fn on_connect(
    _: uct_ep_h,
    arg: *mut c_void,
    args: *const uct_cm_ep_client_connect_args_t,
) {
    // SAFETY: valid during the call.
    let args = unsafe { &*args };
    // SAFETY: as above.
    let remote = unsafe { &*args.remote_data };
    let (dev_addr, data) = if remote.field_mask == 0 {
        (Vec::new(), Vec::new())
    } else {
        (
            bytes(remote.dev_addr.cast(), remote.dev_addr_length),
            bytes(remote.conn_priv_data, remote.conn_priv_data_length),
        )
    };
    recorder(arg).push(Seen::Connect {
        status: args.status,
        dev_addr,
        data,
    });
}

unsafe extern "C" fn on_notify(
    _: uct_ep_h,
    arg: *mut c_void,
    args: *const uct_cm_ep_server_conn_notify_args_t,
) {
    // SAFETY: valid during the call.
    recorder(arg).push(Seen::Notify(unsafe { (*args).status }));
}

unsafe extern "C" fn on_disconnect(ep: uct_ep_h, arg: *mut c_void) {
    recorder(arg).push(Seen::Disconnect(ep as usize));
}

struct Fixture {
    cm: uct_cm_h,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::open(std::ptr::null())
    }

    /// A connection manager whose handshake steps wait `timeout` (text as
    /// in `UCX_RDMA_CM_TIMEOUT`) for the peer.
    fn with_timeout(timeout: &CStr) -> Fixture {
        setup();
        let mut config = null_mut();
        // SAFETY: valid out-pointer, NUL-terminated strings; the handle is
        // released once the cm is open.
        unsafe {
            assert_eq!(
                uct_cm_config_read(
                    cm_component(),
                    std::ptr::null(),
                    std::ptr::null(),
                    &mut config
                ),
                UCS_OK
            );
            assert_eq!(
                uct_config_modify(config.cast(), c"RDMA_CM_TIMEOUT".as_ptr(), timeout.as_ptr()),
                UCS_OK
            );
            let fixture = Fixture::open(config);
            uct_config_release(config.cast());
            fixture
        }
    }

    fn open(config: *const uct_cm_config_t) -> Fixture {
        setup();
        let mut async_context = null_mut();
        let mut worker = null_mut();
        let mut cm = null_mut();
        // SAFETY: out-pointers are valid; the handles live for the test
        // (the process ends with it).
        unsafe {
            assert_eq!(
                ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &mut async_context),
                UCS_OK
            );
            assert_eq!(
                uct_worker_create(async_context, UCS_THREAD_MODE_SINGLE, &mut worker),
                UCS_OK
            );
            assert_eq!(uct_cm_open(cm_component(), worker, config, &mut cm), UCS_OK);
        }
        let mut attr = uct_cm_attr_t {
            field_mask: UCT_CM_ATTR_FIELD_MAX_CONN_PRIV,
            max_conn_priv: 0,
        };
        // SAFETY: live cm, valid attr.
        assert_eq!(unsafe { uct_cm_query(cm, &mut attr) }, UCS_OK);
        assert!(attr.max_conn_priv >= 1024, "room for a UCP address");
        Fixture { cm }
    }

    fn listen(
        &self,
        recorder: &Recorder,
        ip: Ipv4Addr,
    ) -> Result<(uct_listener_h, u16), ucs_status_t> {
        let address = storage_of(SocketAddrV4::new(ip, 0));
        let params = uct_listener_params_t {
            field_mask: UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB
                | UCT_LISTENER_PARAM_FIELD_USER_DATA,
            backlog: 0,
            conn_request_cb: Some(on_request),
            user_data: recorder.arg(),
        };
        let mut listener = null_mut();
        // SAFETY: valid address and params.
        let status = unsafe {
            uct_listener_create(
                self.cm,
                (&address as *const libc::sockaddr_storage).cast(),
                SOCKADDR_IN_LEN,
                &params,
                &mut listener,
            )
        };
        if status != UCS_OK {
            return Err(status);
        }
        // SAFETY: sockaddr_storage is plain data.
        let mut attr = uct_listener_attr_t {
            field_mask: UCT_LISTENER_ATTR_FIELD_SOCKADDR,
            sockaddr: unsafe { std::mem::zeroed() },
        };
        // SAFETY: live listener.
        assert_eq!(unsafe { uct_listener_query(listener, &mut attr) }, UCS_OK);
        // SAFETY: the listener reports an AF_INET address.
        let local = unsafe {
            ipv4_of(
                (&attr.sockaddr as *const libc::sockaddr_storage).cast(),
                SOCKADDR_IN_LEN,
                "test",
            )
        }
        .unwrap();
        assert_eq!(*local.ip(), ip);
        assert_ne!(local.port(), 0);
        Ok((listener, local.port()))
    }

    fn client(&self, recorder: &Recorder, port: u16) -> Result<uct_ep_h, ucs_status_t> {
        let server = storage_of(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
        let sockaddr = ucs_sock_addr_t {
            addr: (&server as *const libc::sockaddr_storage).cast(),
            addrlen: SOCKADDR_IN_LEN,
        };
        let params = uct_ep_params_t {
            field_mask: UCT_EP_PARAM_FIELD_CM
                | UCT_EP_PARAM_FIELD_USER_DATA
                | UCT_EP_PARAM_FIELD_SOCKADDR
                | UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS
                | UCT_EP_PARAM_FIELD_CM_RESOLVE_CB
                | UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT
                | UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB,
            cm: self.cm,
            user_data: recorder.arg(),
            sockaddr: &sockaddr,
            sockaddr_cb_flags: UCT_CB_FLAG_ASYNC,
            cm_resolve_cb: Some(on_resolve),
            sockaddr_cb_client: Some(on_connect),
            disconnect_cb: Some(on_disconnect),
            ..zeroed_ep_params()
        };
        let mut ep = null_mut();
        // SAFETY: valid params.
        let status = unsafe { uct_ep_create(&params, &mut ep) };
        if status == UCS_OK {
            Ok(ep)
        } else {
            Err(status)
        }
    }

    fn server(
        &self,
        recorder: &Recorder,
        request: uct_conn_request_h,
        data: &[u8],
    ) -> Result<uct_ep_h, ucs_status_t> {
        let params = uct_ep_params_t {
            field_mask: UCT_EP_PARAM_FIELD_CM
                | UCT_EP_PARAM_FIELD_CONN_REQUEST
                | UCT_EP_PARAM_FIELD_USER_DATA
                | UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS
                | UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER
                | UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB
                | UCT_EP_PARAM_FIELD_PRIV_DATA
                | UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH,
            cm: self.cm,
            conn_request: request,
            user_data: recorder.arg(),
            sockaddr_cb_flags: UCT_CB_FLAG_ASYNC,
            sockaddr_cb_server: Some(on_notify),
            disconnect_cb: Some(on_disconnect),
            private_data: data.as_ptr().cast(),
            private_data_length: data.len(),
            ..zeroed_ep_params()
        };
        let mut ep = null_mut();
        // SAFETY: valid params.
        let status = unsafe { uct_ep_create(&params, &mut ep) };
        if status == UCS_OK {
            Ok(ep)
        } else {
            Err(status)
        }
    }
}

fn zeroed_ep_params() -> uct_ep_params_t {
    // SAFETY: a C parameter struct: pointers NULL, callbacks None, zeros.
    unsafe { std::mem::zeroed() }
}

fn cm_component() -> uct_component_h {
    let mut components = null_mut();
    let mut count: c_uint = 0;
    // SAFETY: valid out-pointers; the list is released below.
    unsafe {
        assert_eq!(uct_query_components(&mut components, &mut count), UCS_OK);
        assert_eq!(count, 2);
        let cm = *components.add(1);
        uct_release_component_list(components);
        cm
    }
}

fn connect(ep: uct_ep_h, data: &[u8]) -> ucs_status_t {
    let params = uct_ep_connect_params_t {
        field_mask: UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA
            | UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA_LENGTH,
        private_data: data.as_ptr().cast(),
        private_data_length: data.len(),
    };
    // SAFETY: live ep, valid params.
    unsafe { uct_ep_connect(ep, &params) }
}

fn resolved(recorder: &Recorder) -> (String, ucs_status_t) {
    recorder.wait("resolve", |s| match s {
        Seen::Resolve { dev_name, status } => Some((dev_name.clone(), *status)),
        _ => None,
    })
}

fn connected(recorder: &Recorder) -> (ucs_status_t, Vec<u8>, Vec<u8>) {
    recorder.wait("connect callback", |s| match s {
        Seen::Connect {
            status,
            dev_addr,
            data,
        } => Some((*status, dev_addr.clone(), data.clone())),
        _ => None,
    })
}

fn request(recorder: &Recorder) -> (uct_conn_request_h, String, Vec<u8>, Vec<u8>) {
    recorder.wait("connection request", |s| match s {
        Seen::Request {
            request,
            dev_name,
            dev_addr,
            data,
        } => Some((
            *request as uct_conn_request_h,
            dev_name.clone(),
            dev_addr.clone(),
            data.clone(),
        )),
        _ => None,
    })
}

#[test]
fn a_connection_delivers_every_callback_in_order_with_the_private_data() {
    let fixture = Fixture::new();
    let server_side = Recorder::default();
    let client_side = Recorder::default();
    let (listener, port) = fixture.listen(&server_side, Ipv4Addr::LOCALHOST).unwrap();
    let client = fixture.client(&client_side, port).unwrap();
    assert_eq!(resolved(&client_side), ("mlx5_0:1".to_string(), UCS_OK));
    assert_eq!(connect(client, b"from the client"), UCS_OK);
    let (request, dev_name, client_addr, data) = request(&server_side);
    assert_eq!(dev_name, "mlx5_0:1");
    assert_eq!(data, b"from the client");
    assert_eq!(
        client_addr.first(),
        Some(&1),
        "the soft HCA's UDP device address"
    );
    assert_eq!(&client_addr[1..5], &[127, 0, 0, 1]);
    let server = fixture
        .server(&server_side, request, b"from the server")
        .unwrap();
    let (status, server_addr, data) = connected(&client_side);
    assert_eq!((status, &data[..]), (UCS_OK, &b"from the server"[..]));
    assert_eq!(server_addr, client_addr, "one device in this process");
    // SAFETY: live client ep.
    assert_eq!(unsafe { uct_cm_client_ep_conn_notify(client) }, UCS_OK);
    server_side.wait("notify", |s| (*s == Seen::Notify(UCS_OK)).then_some(()));

    // SAFETY: live eps.
    unsafe {
        assert_eq!(uct_ep_disconnect(client, 0), UCS_OK);
        assert_eq!(uct_ep_disconnect(client, 0), UCS_INPROGRESS);
    }
    server_side.wait("server disconnect", |s| {
        (*s == Seen::Disconnect(server as usize)).then_some(())
    });
    // SAFETY: live eps.
    assert_eq!(unsafe { uct_ep_disconnect(server, 0) }, UCS_OK);
    client_side.wait("client disconnect", |s| {
        (*s == Seen::Disconnect(client as usize)).then_some(())
    });
    // SAFETY: live handles, destroyed once.
    unsafe {
        assert_eq!(uct_ep_disconnect(client, 0), UCS_ERR_NOT_CONNECTED);
        uct_ep_destroy(client);
        uct_ep_destroy(server);
        uct_listener_destroy(listener);
    }
    assert!(client_side
        .nothing_for(Duration::from_millis(100))
        .is_empty());
    assert!(server_side.nothing_for(Duration::ZERO).is_empty());
}

#[test]
fn no_listener_is_not_connected_and_a_reject_is_rejected() {
    let fixture = Fixture::new();
    // A port nobody listens on (bound, then closed).
    let closed = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client_side = Recorder::default();
    let client = fixture.client(&client_side, closed).unwrap();
    assert_eq!(resolved(&client_side).1, UCS_ERR_NOT_CONNECTED);
    // SAFETY: live ep.
    unsafe {
        assert_eq!(uct_ep_disconnect(client, 0), UCS_ERR_NOT_CONNECTED);
        uct_ep_destroy(client);
    }

    let server_side = Recorder::default();
    let (listener, port) = fixture.listen(&server_side, Ipv4Addr::UNSPECIFIED).unwrap();
    let client = fixture.client(&client_side, port).unwrap();
    assert_eq!(resolved(&client_side).1, UCS_OK);
    assert_eq!(connect(client, b"x"), UCS_OK);
    let (request, ..) = request(&server_side);
    // SAFETY: live listener; the request is pending.
    unsafe {
        assert_eq!(uct_listener_reject(listener, request), UCS_OK);
        assert_eq!(
            uct_listener_reject(listener, request),
            UCS_ERR_INVALID_PARAM,
            "taken already"
        );
    }
    assert_eq!(connected(&client_side).0, UCS_ERR_REJECTED);
    // SAFETY: live ep.
    assert_eq!(
        unsafe { uct_cm_client_ep_conn_notify(client) },
        UCS_ERR_NOT_CONNECTED
    );
    // SAFETY: live handles, destroyed once.
    unsafe {
        uct_ep_destroy(client);
        uct_listener_destroy(listener);
    }
}

/// A fake server: accepts one connection, reads the request, then does
/// `answer` with the stream.
fn fake_server(answer: fn(&mut TcpStream)) -> u16 {
    let socket = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = socket.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (mut stream, _) = socket.accept().unwrap();
        let mut header = [0u8; 8];
        stream.read_exact(&mut header).unwrap();
        let length = u32::from_be_bytes([header[4], header[5], header[6], header[7]]) as usize;
        let mut payload = vec![0u8; length];
        stream.read_exact(&mut payload).unwrap();
        answer(&mut stream);
    });
    port
}

#[test]
fn a_server_that_vanishes_or_talks_nonsense_ends_the_connect_callback() {
    let fixture = Fixture::new();
    type Answer = fn(&mut TcpStream);
    let cases: [(Answer, ucs_status_t); 3] = [
        // Gone without a word: nobody took the request.
        (|_| {}, UCS_ERR_NOT_CONNECTED),
        // Half an answer, then gone.
        (
            |s| s.write_all(b"CM\x01\x02\0\0").unwrap(),
            UCS_ERR_CONNECTION_RESET,
        ),
        // Not our protocol.
        (
            |s| s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").unwrap(),
            UCS_ERR_CONNECTION_RESET,
        ),
    ];
    for (answer, expected) in cases {
        let port = fake_server(answer);
        let client_side = Recorder::default();
        let client = fixture.client(&client_side, port).unwrap();
        assert_eq!(resolved(&client_side).1, UCS_OK);
        assert_eq!(connect(client, b"request"), UCS_OK);
        assert_eq!(connected(&client_side).0, expected);
        // SAFETY: live ep, destroyed once.
        unsafe { uct_ep_destroy(client) };
        assert!(client_side
            .nothing_for(Duration::from_millis(50))
            .is_empty());
    }
}

#[test]
fn a_client_that_vanishes_mid_handshake_reaches_no_callback_or_fails_the_accept() {
    let fixture = Fixture::new();
    let server_side = Recorder::default();
    let (listener, port) = fixture.listen(&server_side, Ipv4Addr::LOCALHOST).unwrap();
    // Half a request, then gone: no request reaches the listener.
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
    stream.write_all(b"CM\x01\x01\0\0\0\x20\x07abc").unwrap();
    drop(stream);
    // A whole request (empty address, no data), then gone before the accept.
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
    stream.write_all(b"CM\x01\x01\0\0\0\x01\x00").unwrap();
    let (request, ..) = request(&server_side);
    drop(stream);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        fixture.server(&server_side, request, b"late"),
        Err(UCS_ERR_CONNECTION_RESET)
    );
    assert!(server_side
        .nothing_for(Duration::from_millis(50))
        .is_empty());
    // SAFETY: live listener, destroyed once.
    unsafe { uct_listener_destroy(listener) };
}

/// The handshake deadline the silent-peer test configures.
const SHORT_TIMEOUT: Duration = Duration::from_millis(300);

/// Waits for what `wait` returns, and checks it came after the deadline
/// (never early) and well before the default 10 s one.
fn after_the_deadline<T>(started: Instant, wait: impl FnOnce() -> T) -> T {
    let seen = wait();
    let elapsed = started.elapsed();
    assert!(
        (SHORT_TIMEOUT..Duration::from_secs(5)).contains(&elapsed),
        "after {elapsed:?}"
    );
    seen
}

/// A listening socket whose accept queue is full, so that the kernel drops
/// further connection attempts (their SYNs) without an answer.
fn full_listener() -> (std::os::fd::OwnedFd, u16, Vec<TcpStream>) {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket calls on a socket this function owns.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0);
        let owned = std::os::fd::OwnedFd::from_raw_fd(fd);
        let address = storage_of(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0));
        let address_ptr = (&address as *const libc::sockaddr_storage).cast();
        assert_eq!(libc::bind(fd, address_ptr, SOCKADDR_IN_LEN), 0);
        assert_eq!(libc::listen(fd, 0), 0);
        let mut bound = address;
        let mut length = SOCKADDR_IN_LEN;
        let bound_ptr = (&mut bound as *mut libc::sockaddr_storage).cast();
        assert_eq!(libc::getsockname(fd, bound_ptr, &mut length), 0);
        let port = ipv4_of(bound_ptr, length, "test").unwrap().port();
        // Fill the queue (one entry for a backlog of 0; the second attempt
        // makes sure), never accepting.
        let address = (Ipv4Addr::LOCALHOST, port).into();
        let fillers = (0..2)
            .filter_map(|_| TcpStream::connect_timeout(&address, Duration::from_millis(300)).ok())
            .collect();
        (owned, port, fillers)
    }
}

#[test]
fn a_silent_peer_fails_the_handshake_at_the_configured_deadline() {
    let fixture = Fixture::with_timeout(c"300ms");

    // A server host that drops the client's SYN: the resolve callback fails.
    let (_full, port, _fillers) = full_listener();
    let client_side = Recorder::default();
    let started = Instant::now();
    let client = fixture.client(&client_side, port).unwrap();
    assert_eq!(
        after_the_deadline(started, || resolved(&client_side)).1,
        UCS_ERR_UNREACHABLE
    );
    // SAFETY: live ep, destroyed once.
    unsafe { uct_ep_destroy(client) };
    assert!(client_side
        .nothing_for(Duration::from_millis(400))
        .is_empty());

    // A server that takes the request and never answers: the connect
    // callback fails, once.
    let silent = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = silent.local_addr().unwrap().port();
    let client_side = Recorder::default();
    let client = fixture.client(&client_side, port).unwrap();
    assert_eq!(resolved(&client_side).1, UCS_OK);
    let (mut server_stream, _) = silent.accept().unwrap();
    let started = Instant::now();
    assert_eq!(connect(client, b"request"), UCS_OK);
    assert_eq!(
        after_the_deadline(started, || connected(&client_side)).0,
        UCS_ERR_UNREACHABLE
    );
    // The client closed its end.
    server_stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut received = Vec::new();
    server_stream.read_to_end(&mut received).unwrap();
    assert!(!received.is_empty(), "the request came before the close");
    assert!(client_side
        .nothing_for(Duration::from_millis(400))
        .is_empty());
    // SAFETY: live ep, destroyed once.
    unsafe { uct_ep_destroy(client) };

    let server_side = Recorder::default();
    let (listener, port) = fixture.listen(&server_side, Ipv4Addr::LOCALHOST).unwrap();
    // A client that connects and never sends its request: closed, no callback.
    let mut silent_client = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
    silent_client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let read = after_the_deadline(started, || silent_client.read_to_end(&mut rest));
    assert_eq!(read.unwrap(), 0, "closed without a word");
    assert!(server_side
        .nothing_for(Duration::from_millis(50))
        .is_empty());

    // A client whose request is accepted and which never sends its notify:
    // the server ep's notify callback fails, once.
    let mut silent_client = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
    silent_client
        .write_all(b"CM\x01\x01\0\0\0\x01\x00")
        .unwrap();
    let (request, ..) = request(&server_side);
    let started = Instant::now();
    let server = fixture.server(&server_side, request, b"accept").unwrap();
    let status = after_the_deadline(started, || {
        server_side.wait("notify", |s| match s {
            Seen::Notify(status) => Some(*status),
            _ => None,
        })
    });
    assert_eq!(status, UCS_ERR_UNREACHABLE);
    assert!(server_side
        .nothing_for(Duration::from_millis(400))
        .is_empty());
    // SAFETY: live ep and listener, each destroyed once.
    unsafe {
        uct_ep_destroy(server);
        uct_listener_destroy(listener);
    }
}

#[test]
fn a_request_nobody_answers_fails_the_client_and_is_released_at_the_deadline() {
    let fixture = Fixture::with_timeout(c"300ms");
    let server_side = Recorder::default();
    let client_side = Recorder::default();
    let (listener, port) = fixture.listen(&server_side, Ipv4Addr::LOCALHOST).unwrap();
    let client = fixture.client(&client_side, port).unwrap();
    assert_eq!(resolved(&client_side).1, UCS_OK);
    let started = Instant::now();
    assert_eq!(connect(client, b"nobody answers"), UCS_OK);
    // The listener's user holds the request and never answers it.
    let (request, ..) = request(&server_side);
    assert!(REQUESTS.holds(request));
    assert_eq!(
        after_the_deadline(started, || connected(&client_side)).0,
        UCS_ERR_UNREACHABLE
    );
    // The server's own deadline, armed when the request arrived, releases it.
    let released = after_the_deadline(started, || {
        let waiting = Instant::now();
        while REQUESTS.holds(request) && waiting.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        !REQUESTS.holds(request)
    });
    assert!(released, "the request is still held");
    assert_eq!(
        fixture.server(&server_side, request, b"too late"),
        Err(UCS_ERR_INVALID_PARAM)
    );
    // SAFETY: a live listener; the request handle is stale.
    assert_eq!(
        unsafe { uct_listener_reject(listener, request) },
        UCS_ERR_INVALID_PARAM
    );
    assert!(client_side
        .nothing_for(Duration::from_millis(100))
        .is_empty());
    assert!(server_side.nothing_for(Duration::ZERO).is_empty());
    // SAFETY: live handles, each destroyed once.
    unsafe {
        uct_ep_destroy(client);
        uct_listener_destroy(listener);
    }
}

#[test]
fn bad_arguments_get_statuses() {
    let fixture = Fixture::new();
    let recorder = Recorder::default();
    // An address no device has.
    assert_eq!(
        fixture
            .listen(&recorder, Ipv4Addr::new(127, 0, 0, 99))
            .err(),
        Some(UCS_ERR_UNREACHABLE)
    );
    // A forged connection request.
    let forged = 0x1000 as uct_conn_request_h;
    assert_eq!(
        fixture.server(&recorder, forged, b"").err(),
        Some(UCS_ERR_INVALID_PARAM)
    );
    // Private data over the limit.
    let (listener, port) = fixture.listen(&recorder, Ipv4Addr::LOCALHOST).unwrap();
    // SAFETY: live listener; the request is not one.
    assert_eq!(
        unsafe { uct_listener_reject(listener, forged) },
        UCS_ERR_INVALID_PARAM
    );
    let client = fixture.client(&recorder, port).unwrap();
    assert_eq!(resolved(&recorder).1, UCS_OK);
    assert_eq!(connect(client, &vec![0u8; 1 << 20]), UCS_ERR_EXCEEDS_LIMIT);
    // A client ep without the callbacks it needs.
    let mut ep = null_mut();
    let params = uct_ep_params_t {
        field_mask: UCT_EP_PARAM_FIELD_CM | UCT_EP_PARAM_FIELD_SOCKADDR,
        cm: fixture.cm,
        ..zeroed_ep_params()
    };
    // SAFETY: valid params (the sockaddr is not read: the callbacks are checked first).
    assert_eq!(
        unsafe { uct_ep_create(&params, &mut ep) },
        UCS_ERR_INVALID_PARAM
    );
    assert!(ep.is_null());
    // SAFETY: NULL arguments are refused.
    unsafe {
        assert_eq!(uct_cm_query(fixture.cm, null_mut()), UCS_ERR_INVALID_PARAM);
        assert_eq!(uct_cm_query(null_mut(), null_mut()), UCS_ERR_INVALID_PARAM);
        uct_ep_destroy(client);
        uct_listener_destroy(listener);
    }
}

#[test]
fn a_request_becomes_an_ep_of_another_workers_connection_manager() {
    // UCP's servers listen on one worker and accept on another.
    let listening = Fixture::new();
    let serving = Fixture::new();
    let server_side = Recorder::default();
    let client_side = Recorder::default();
    let (listener, port) = listening.listen(&server_side, Ipv4Addr::LOCALHOST).unwrap();
    let client = listening.client(&client_side, port).unwrap();
    assert_eq!(resolved(&client_side).1, UCS_OK);
    assert_eq!(connect(client, b"hello"), UCS_OK);
    let (request, ..) = request(&server_side);
    let server = serving.server(&server_side, request, b"moved").unwrap();
    let (status, _, data) = connected(&client_side);
    assert_eq!((status, &data[..]), (UCS_OK, &b"moved"[..]));
    // SAFETY: live client ep.
    assert_eq!(unsafe { uct_cm_client_ep_conn_notify(client) }, UCS_OK);
    server_side.wait("notify on the other worker", |s| {
        (*s == Seen::Notify(UCS_OK)).then_some(())
    });
    // SAFETY: live eps.
    assert_eq!(unsafe { uct_ep_disconnect(server, 0) }, UCS_OK);
    client_side.wait("client disconnect", |s| {
        (*s == Seen::Disconnect(client as usize)).then_some(())
    });
    // SAFETY: live handles, destroyed once.
    unsafe {
        uct_ep_destroy(server);
        uct_ep_destroy(client);
        uct_listener_destroy(listener);
    }
}

/// UCX's callers (its gtest, `ucx_info`) size `md_resources` from the count
/// and pass NULL for a component with no memory domain: the connection
/// manager must answer that query, not refuse it.
#[test]
fn the_connection_manager_is_queried_with_room_for_no_memory_domain() {
    setup();
    // SAFETY: uct_component_attr_t is plain C data; all-zero is valid.
    let mut attr: uct_component_attr_t = unsafe { std::mem::zeroed() };
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME
        | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT
        | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES
        | UCT_COMPONENT_ATTR_FIELD_FLAGS;
    attr.md_resources = null_mut();
    // SAFETY: a live component handle and a writable attribute struct.
    let status = unsafe { uct::api::component::uct_component_query(cm_component(), &mut attr) };
    assert_eq!(status, UCS_OK);
    assert_eq!(attr.md_resource_count, 0);
    assert_ne!(attr.flags & UCT_COMPONENT_FLAG_CM, 0);
}
