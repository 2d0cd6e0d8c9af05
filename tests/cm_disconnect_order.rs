//! A peer's disconnect reaches the connection manager's user only after the
//! transport has taken what the peer sent before it, even while the
//! worker's progress blocks the worker's async context, as UCP's does (its
//! progress callbacks take the async lock). The disconnect arrives on the
//! async context's thread, which runs its handlers with the context
//! blocked: a handler that waited there for the receives would hold up the
//! very progress that takes them, then give up and hand the disconnect up
//! with the data still in the receive CQ (UCP then fails the ep and drops
//! it: `ucp_<mode>_1m_two_devices` lost the end of a 1 MiB message).
//!
//! One process: an rc_mlx5 ep pair on two soft devices (rc_common) and a
//! connection manager on its own worker with a thread-mode async context.

mod rc_common;

use std::ffi::{c_uint, c_void};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::ptr::null_mut;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use rc_common::uct_safe::ep_flush;
use rc_common::*;
use uct::abi::*;
use uct::api::async_context::ucs_async_context_create;
use uct::api::cm::*;
use uct::api::component::{uct_query_components, uct_release_component_list};
use uct::api::ep::{
    uct_cm_client_ep_conn_notify, uct_ep_am_short, uct_ep_connect, uct_ep_create, uct_ep_destroy,
    uct_ep_disconnect,
};
use uct::api::worker::uct_worker_create;
use uct::cm::socket::{ipv4_of, storage_of, SOCKADDR_IN_LEN};
use uct::core::async_context::AsyncContext;

/// Active messages sent before the disconnect (more than one progress
/// call takes: `RX_MAX_POLL` is 16).
const MESSAGES: usize = 64;
const AM_ID: u8 = 5;

/// What the connection manager's callbacks saw.
#[derive(Default)]
struct Events {
    state: Mutex<EventState>,
    changed: Condvar,
}

#[derive(Default)]
struct EventState {
    resolved: bool,
    request: Option<usize>,
    connected: Option<ucs_status_t>,
    notified: Option<ucs_status_t>,
    /// How many messages the receiver had when the disconnect came.
    disconnected_with: Option<usize>,
    /// The receiver's inbox, read at the disconnect.
    inbox: Option<&'static Inbox>,
}

impl Events {
    fn update(&self, change: impl FnOnce(&mut EventState)) {
        change(&mut self.state.lock().unwrap());
        self.changed.notify_all();
    }

    /// Waits (at most 10 s) until `pick` returns something.
    fn wait<T>(&self, what: &str, pick: impl Fn(&EventState) -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut state = self.state.lock().unwrap();
        loop {
            if let Some(found) = pick(&state) {
                return found;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no {what} within 10 s");
            state = self.changed.wait_timeout(state, left).unwrap().0;
        }
    }

    fn arg(&self) -> *mut c_void {
        self as *const Events as *mut c_void
    }
}

fn events<'a>(arg: *mut c_void) -> &'a Events {
    // SAFETY: every callback's argument is an Events that outlives its eps.
    unsafe { &*(arg as *const Events) }
}

unsafe extern "C" fn on_resolve(
    arg: *mut c_void,
    args: *const uct_cm_ep_resolve_args_t,
) -> ucs_status_t {
    // SAFETY: valid during the call.
    assert_eq!(unsafe { (*args).status }, UCS_OK);
    events(arg).update(|state| state.resolved = true);
    UCS_OK
}

unsafe extern "C" fn on_request(
    _: uct_listener_h,
    arg: *mut c_void,
    args: *const uct_cm_listener_conn_request_args_t,
) {
    // SAFETY: valid during the call.
    let request = unsafe { (*args).conn_request } as usize;
    events(arg).update(|state| state.request = Some(request));
}

unsafe extern "C" fn on_connect(
    _: uct_ep_h,
    arg: *mut c_void,
    args: *const uct_cm_ep_client_connect_args_t,
) {
    // SAFETY: valid during the call.
    let status = unsafe { (*args).status };
    events(arg).update(|state| state.connected = Some(status));
}

unsafe extern "C" fn on_notify(
    _: uct_ep_h,
    arg: *mut c_void,
    args: *const uct_cm_ep_server_conn_notify_args_t,
) {
    // SAFETY: valid during the call.
    let status = unsafe { (*args).status };
    events(arg).update(|state| state.notified = Some(status));
}

unsafe extern "C" fn on_disconnect(_: uct_ep_h, arg: *mut c_void) {
    events(arg).update(|state| {
        let received = state.inbox.map_or(0, |inbox| inbox.lock().unwrap().len());
        state.disconnected_with.get_or_insert(received);
    });
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

fn zeroed_ep_params() -> uct_ep_params_t {
    // SAFETY: a C parameter struct: pointers NULL, callbacks None, zeros.
    unsafe { std::mem::zeroed() }
}

/// A connected client-server pair of connection-manager eps on 127.0.0.1
/// (mlx5_0), on a worker whose async context runs in its own thread.
struct CmPair {
    async_context: *mut ucs_async_context_t,
    listener: uct_listener_h,
    client: uct_ep_h,
    server: uct_ep_h,
}

impl CmPair {
    fn connect(client_events: &Events, server_events: &Events) -> CmPair {
        let mut async_context = null_mut();
        let mut worker = null_mut();
        let mut cm = null_mut();
        // SAFETY: valid out-pointers; the handles live for the test.
        unsafe {
            assert_eq!(
                ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &mut async_context),
                UCS_OK
            );
            assert_eq!(
                uct_worker_create(async_context, UCS_THREAD_MODE_SINGLE, &mut worker),
                UCS_OK
            );
            assert_eq!(
                uct_cm_open(cm_component(), worker, std::ptr::null(), &mut cm),
                UCS_OK
            );
        }
        let address = storage_of(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0));
        let listener_params = uct_listener_params_t {
            field_mask: UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB
                | UCT_LISTENER_PARAM_FIELD_USER_DATA,
            backlog: 0,
            conn_request_cb: Some(on_request),
            user_data: server_events.arg(),
        };
        let mut listener = null_mut();
        // SAFETY: valid address, params and out-pointer.
        let status = unsafe {
            uct_listener_create(
                cm,
                (&address as *const libc::sockaddr_storage).cast(),
                SOCKADDR_IN_LEN,
                &listener_params,
                &mut listener,
            )
        };
        assert_eq!(status, UCS_OK);
        let mut attr = uct_listener_attr_t {
            field_mask: UCT_LISTENER_ATTR_FIELD_SOCKADDR,
            // SAFETY: sockaddr_storage is plain data.
            sockaddr: unsafe { std::mem::zeroed() },
        };
        // SAFETY: live listener; it reports an AF_INET address.
        let port = unsafe {
            assert_eq!(uct_listener_query(listener, &mut attr), UCS_OK);
            ipv4_of(
                (&attr.sockaddr as *const libc::sockaddr_storage).cast(),
                SOCKADDR_IN_LEN,
                "test",
            )
        }
        .unwrap()
        .port();

        let server_address = storage_of(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
        let sockaddr = ucs_sock_addr_t {
            addr: (&server_address as *const libc::sockaddr_storage).cast(),
            addrlen: SOCKADDR_IN_LEN,
        };
        let client_params = uct_ep_params_t {
            field_mask: UCT_EP_PARAM_FIELD_CM
                | UCT_EP_PARAM_FIELD_USER_DATA
                | UCT_EP_PARAM_FIELD_SOCKADDR
                | UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS
                | UCT_EP_PARAM_FIELD_CM_RESOLVE_CB
                | UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT
                | UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB,
            cm,
            user_data: client_events.arg(),
            sockaddr: &sockaddr,
            sockaddr_cb_flags: UCT_CB_FLAG_ASYNC,
            cm_resolve_cb: Some(on_resolve),
            sockaddr_cb_client: Some(on_connect),
            disconnect_cb: Some(on_disconnect),
            ..zeroed_ep_params()
        };
        let mut client = null_mut();
        // SAFETY: valid params and out-pointer.
        assert_eq!(
            unsafe { uct_ep_create(&client_params, &mut client) },
            UCS_OK
        );
        client_events.wait("resolve", |state| state.resolved.then_some(()));
        let connect_params = uct_ep_connect_params_t {
            field_mask: 0,
            private_data: std::ptr::null(),
            private_data_length: 0,
        };
        // SAFETY: live ep, valid params.
        assert_eq!(unsafe { uct_ep_connect(client, &connect_params) }, UCS_OK);
        let request = server_events.wait("request", |state| state.request);
        let server_params = uct_ep_params_t {
            field_mask: UCT_EP_PARAM_FIELD_CM
                | UCT_EP_PARAM_FIELD_CONN_REQUEST
                | UCT_EP_PARAM_FIELD_USER_DATA
                | UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS
                | UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER
                | UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB,
            cm,
            conn_request: request as uct_conn_request_h,
            user_data: server_events.arg(),
            sockaddr_cb_flags: UCT_CB_FLAG_ASYNC,
            sockaddr_cb_server: Some(on_notify),
            disconnect_cb: Some(on_disconnect),
            ..zeroed_ep_params()
        };
        let mut server = null_mut();
        // SAFETY: valid params and out-pointer.
        assert_eq!(
            unsafe { uct_ep_create(&server_params, &mut server) },
            UCS_OK
        );
        assert_eq!(
            client_events.wait("connect", |state| state.connected),
            UCS_OK
        );
        // SAFETY: live client ep.
        assert_eq!(unsafe { uct_cm_client_ep_conn_notify(client) }, UCS_OK);
        assert_eq!(server_events.wait("notify", |state| state.notified), UCS_OK);
        CmPair {
            async_context,
            listener,
            client,
            server,
        }
    }

    /// The worker's async context (ours: `ucs_async_context_create` of
    /// this library).
    fn async_context(&self) -> &AsyncContext {
        // SAFETY: made by our ucs_async_context_create, alive for the test.
        unsafe { &*(self.async_context as *const AsyncContext) }
    }
}

#[test]
fn a_disconnect_goes_up_after_the_receives_while_progress_blocks_the_async_context() {
    let pair = Pair::new();
    let inbox = pair.b.collect_am(AM_ID);
    let client_events = Events::default();
    let server_events = Events::default();
    server_events.update(|state| state.inbox = Some(inbox));
    let cm = CmPair::connect(&client_events, &server_events);

    // The sender's messages complete (the receiving device acknowledged
    // them) while the receiver does not progress: their completions wait
    // in its receive CQ.
    for sequence in 0..MESSAGES as u64 {
        let status = pair.post_retrying(|| {
            // SAFETY: live ep; 8 bytes of payload.
            let status = unsafe { uct_ep_am_short(pair.ep_a, AM_ID, sequence, null_mut(), 0) };
            if status == UCS_ERR_NO_RESOURCE {
                pair.a.progress();
            }
            status
        });
        assert_eq!(status, UCS_OK);
    }
    let start = Instant::now();
    loop {
        let status = ep_flush(pair.ep_a, 0, null_mut());
        if status == UCS_OK {
            break;
        }
        assert_eq!(status, UCS_INPROGRESS);
        assert!(start.elapsed() < Duration::from_secs(20), "flush");
        pair.a.progress();
    }
    assert!(
        inbox.lock().unwrap().is_empty(),
        "the receiver did not progress"
    );

    // The client disconnects; the server's connection manager sees it
    // first, then the receiver progresses as UCP does, with the async
    // context blocked around each progress call.
    // SAFETY: live client ep.
    assert_eq!(unsafe { uct_ep_disconnect(cm.client, 0) }, UCS_OK);
    std::thread::sleep(Duration::from_millis(50));
    let start = Instant::now();
    while server_events
        .state
        .lock()
        .unwrap()
        .disconnected_with
        .is_none()
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no disconnect within 10 s"
        );
        let _blocked = cm.async_context().block();
        pair.b.progress();
    }
    let received_then = server_events.state.lock().unwrap().disconnected_with;
    assert_eq!(
        received_then,
        Some(MESSAGES),
        "messages the receiver had taken when the disconnect went up"
    );
    assert_eq!(
        sequence(inbox),
        (0..MESSAGES as u64).collect::<Vec<_>>(),
        "each message once, in order"
    );

    // SAFETY: live handles, each destroyed once.
    unsafe {
        assert_eq!(uct_ep_disconnect(cm.server, 0), UCS_OK);
        client_events.wait("client disconnect", |state| state.disconnected_with);
        uct_ep_destroy(cm.client);
        uct_ep_destroy(cm.server);
        uct_listener_destroy(cm.listener);
    }
    pair.close();
}
