//! The iface plumbing: exported functions dispatch through `ep->iface->ops` /
//! `iface->ops` exactly like UCX's inline ones, empty slots report
//! UNSUPPORTED with the slot's return type, the AM table and descriptor
//! release, `uct_iface_open` / `uct_ep_create` validation, and the v2 entry
//! points' parameter checks and dispatch through the internal ops.

use std::ffi::{c_char, c_uint, c_void};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

use uct::abi::*;
use uct::api::ep::*;
use uct::api::iface::*;
use uct::api::v2::*;
use uct::core::iface::IfaceInternalOps;
use uct::core::ops::unsupported_iface_ops;
use uct::uct::iface::{IfaceBase, TRANSPORT_INTERNAL_OPS};

#[path = "uct_safe/mod.rs"]
mod uct_safe;

/// What the test transport's put_short saw last: (ep, length, remote_addr, rkey).
static LAST_PUT: Mutex<Option<(usize, c_uint, u64, uct_rkey_t)>> = Mutex::new(None);

unsafe extern "C" fn test_put_short(
    ep: uct_ep_h,
    _buffer: *const c_void,
    length: c_uint,
    remote_addr: u64,
    rkey: uct_rkey_t,
) -> ucs_status_t {
    *LAST_PUT.lock().unwrap() = Some((ep as usize, length, remote_addr, rkey));
    UCS_ERR_NO_RESOURCE
}

unsafe extern "C" fn test_progress(_iface: uct_iface_h) -> c_uint {
    5
}

unsafe extern "C" fn test_am_bcopy(
    _ep: uct_ep_h,
    _id: u8,
    pack_cb: uct_pack_callback_t,
    arg: *mut c_void,
    _flags: c_uint,
) -> isize {
    let mut scratch = [0u8; 64];
    // SAFETY: the test passes a pack callback that writes at most 64 bytes.
    pack_cb.map_or(-1, |pack| unsafe { pack(scratch.as_mut_ptr().cast(), arg) }
        as isize)
}

unsafe fn always_reachable(_: uct_iface_h, _: &uct_iface_is_reachable_params_t) -> bool {
    true
}

unsafe fn failover_ok(_: uct_ep_h) -> Result<(), Status> {
    Ok(())
}

/// Internal ops of the test transport: two entries implemented, the AM
/// table's of every transport, the rest from the "unsupported" table.
static TEST_INTERNAL_OPS: IfaceInternalOps = IfaceInternalOps {
    iface_is_reachable_v2: always_reachable,
    ep_failover_enable: failover_ok,
    ..TRANSPORT_INTERNAL_OPS
};

/// A minimal transport: a base iface with three slots implemented.
struct TestTransport {
    iface: Box<IfaceBase>,
    ep: Box<uct_ep>,
}

impl TestTransport {
    fn new() -> Self {
        let ops = uct_iface_ops_t {
            ep_put_short: Some(test_put_short),
            iface_progress: Some(test_progress),
            ep_am_bcopy: Some(test_am_bcopy),
            ..unsupported_iface_ops()
        };
        let mut iface = Box::new(IfaceBase::new(
            null_mut(),
            null_mut(),
            ops,
            &TEST_INTERNAL_OPS,
            UCT_IFACE_FLAG_CB_SYNC,
        ));
        let handle = iface.head.as_handle();
        TestTransport {
            iface,
            ep: Box::new(uct_ep { iface: handle }),
        }
    }

    fn iface(&mut self) -> uct_iface_h {
        self.iface.head.as_handle()
    }

    fn ep(&mut self) -> uct_ep_h {
        (&mut *self.ep as *mut uct_ep).cast()
    }
}

#[test]
fn exported_and_inline_calls_reach_the_same_slot() {
    let mut transport = TestTransport::new();
    let ep = transport.ep();

    let exported = uct_safe::put_short(ep, &[0; 16], 0x1000, 7);
    let exported_saw = LAST_PUT.lock().unwrap().take();
    // What a binary compiled against UCX's uct.h does inline.
    // SAFETY: ep->iface->ops.ep_put_short is filled.
    let inline = unsafe {
        ((*(*ep.cast::<uct_ep>()).iface.cast::<uct_iface>())
            .ops
            .ep_put_short
            .unwrap())(ep, null(), 16, 0x1000, 7)
    };
    let inline_saw = LAST_PUT.lock().unwrap().take();
    assert_eq!(exported, UCS_ERR_NO_RESOURCE);
    assert_eq!(inline, exported);
    assert_eq!(exported_saw, Some((ep as usize, 16, 0x1000, 7)));
    assert_eq!(inline_saw, exported_saw);

    let iface = transport.iface();
    assert_eq!(uct_safe::iface_progress(iface), 5);
    assert_eq!(uct_safe::am_bcopy(ep, 1, &[7; 7], 0), 7);
}

unsafe extern "C" fn unpack_nothing(_arg: *mut c_void, _data: *const c_void, _length: usize) {}

#[test]
fn empty_slots_report_unsupported_in_their_return_type() {
    let mut transport = TestTransport::new();
    let ep = transport.ep();
    let iface = transport.iface();
    let mut result64 = 0u64;
    // The stubs ignore their arguments.
    let mut get_to = [0u8; 8];
    assert_eq!(
        uct_safe::get_short(ep, &mut get_to, 0, 0),
        UCS_ERR_UNSUPPORTED
    );
    assert_eq!(
        uct_safe::get_bcopy(ep, Some(unpack_nothing), null_mut(), 8, 0, 0, null_mut()),
        UCS_ERR_UNSUPPORTED
    );
    assert_eq!(uct_safe::put_bcopy(ep, &[7; 7], 0, 0), -22);
    assert_eq!(
        uct_safe::atomic64_fetch(ep, UCT_ATOMIC_OP_ADD, 1, &mut result64, 0, 0, null_mut()),
        UCS_ERR_UNSUPPORTED
    );
    assert_eq!(uct_safe::ep_flush(ep, 0, null_mut()), UCS_ERR_UNSUPPORTED);
    assert_eq!(uct_safe::ep_fence(ep), UCS_ERR_UNSUPPORTED);
    uct_safe::pending_purge(ep, None, null_mut());
    assert_eq!(
        uct_safe::iface_flush(iface, 0, null_mut()),
        UCS_ERR_UNSUPPORTED
    );
    // SAFETY: live test ep/iface; NULL buffers, request, attr and addresses
    // the stubs do not read.
    unsafe {
        let op = uct_ep_tag_rndv_zcopy(ep, 0, null(), 0, null(), 0, 0, null_mut());
        assert_eq!(op as isize, -22, "UCS_STATUS_PTR(UCS_ERR_UNSUPPORTED)");
        assert_eq!(uct_ep_pending_add(ep, null_mut(), 0), UCS_ERR_UNSUPPORTED);
        assert_eq!(uct_iface_query(iface, null_mut()), UCS_ERR_UNSUPPORTED);
        assert_eq!(uct_iface_is_reachable(iface, null(), null()), 0);
        uct_iface_progress_enable(iface, 0);
        uct_iface_progress_disable(iface, 0);
    }
    uct_safe::ep_destroy(ep);
    uct_safe::iface_close(iface);
}

#[test]
fn null_handles_are_refused() {
    let orphan = Box::into_raw(Box::new(uct_ep { iface: null_mut() }));
    // SAFETY: NULL and an ep without iface are the bad inputs under test.
    unsafe {
        assert_eq!(
            uct_ep_put_short(null_mut(), null(), 0, 0, 0),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_put_short(orphan.cast(), null(), 0, 0, 0),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(uct_ep_am_bcopy(null_mut(), 0, None, null_mut(), 0), -5);
        assert_eq!(
            uct_ep_tag_rndv_zcopy(null_mut(), 0, null(), 0, null(), 0, 0, null_mut()) as isize,
            -5
        );
        assert_eq!(uct_iface_progress(null_mut()), 0);
        assert_eq!(
            uct_iface_query(null_mut(), null_mut()),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(uct_iface_is_reachable(null_mut(), null(), null()), 0);
        uct_ep_destroy(null_mut());
        uct_iface_close(null_mut());
        uct_iface_release_desc(null_mut());
        drop(Box::from_raw(orphan));
    }
}

static RELEASED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn record_release(_self: *mut uct_recv_desc_t, desc: *mut c_void) {
    RELEASED.store(desc as usize, Ordering::SeqCst);
}

#[test]
fn release_desc_uses_the_hook_before_the_data() {
    let mut hook = uct_recv_desc_t {
        cb: Some(record_release),
    };
    // [pointer to hook][payload...]: the layout DESIGN §2 promises.
    let mut buffer = [0usize; 4];
    buffer[0] = &mut hook as *mut uct_recv_desc_t as usize;
    let desc = buffer[1..].as_mut_ptr() as *mut c_void;
    // SAFETY: desc is preceded by a pointer to a live uct_recv_desc_t.
    unsafe { uct_iface_release_desc(desc) };
    assert_eq!(RELEASED.load(Ordering::SeqCst), desc as usize);
}

static AM_CALLS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn am_handler(
    arg: *mut c_void,
    _data: *mut c_void,
    length: usize,
    _flags: c_uint,
) -> ucs_status_t {
    AM_CALLS.fetch_add(arg as usize + length, Ordering::SeqCst);
    UCS_OK
}

#[test]
fn am_handlers_are_stored_per_id() {
    let mut transport = TestTransport::new();
    let iface = transport.iface();
    let set = uct_safe::set_am_handler;
    assert_eq!(
        set(iface, 3, Some(am_handler), 100 as *mut c_void, 0),
        UCS_OK
    );
    assert_eq!(
        set(iface, UCT_AM_ID_MAX as u8, Some(am_handler), null_mut(), 0),
        UCS_ERR_INVALID_PARAM
    );
    assert_eq!(
        set(null_mut(), 3, Some(am_handler), null_mut(), 0),
        UCS_ERR_INVALID_PARAM
    );
    // SAFETY: live test iface; no tracer.
    assert_eq!(
        unsafe { uct_iface_set_am_tracer(iface, None, null_mut()) },
        UCS_OK
    );
    let mut payload = [0u8; 10];
    let data = payload.as_mut_ptr().cast();
    // SAFETY: `data` holds the 10 bytes the handler is told of.
    let invoke = |id| unsafe { transport.iface.am().handler(id).call(data, 10, 0) };
    assert_eq!(invoke(3), UCS_OK);
    assert_eq!(AM_CALLS.load(Ordering::SeqCst), 110);
    // No handler for id 4: dropped, UCS_OK so the transport frees it.
    assert_eq!(invoke(4), UCS_OK);
    assert_eq!(AM_CALLS.load(Ordering::SeqCst), 110);
    // Removing the handler.
    assert_eq!(set(iface, 3, None, null_mut(), 0), UCS_OK);
    assert_eq!(invoke(3), UCS_OK);
    assert_eq!(AM_CALLS.load(Ordering::SeqCst), 110);
    // An iface that is not ours (a bare ops table) is refused.
    let mut foreign = [0u64; 64];
    let foreign_iface = foreign.as_mut_ptr() as uct_iface_h;
    // SAFETY: readable memory that is not a BaseIface.
    let status =
        unsafe { uct_iface_set_am_handler(foreign_iface, 1, Some(am_handler), null_mut(), 0) };
    assert_eq!(status, UCS_ERR_INVALID_PARAM);
}

fn md_and_worker() -> (uct_md_h, uct_worker_h, *mut ucs_async_context_t) {
    static SETUP: Once = Once::new();
    SETUP.call_once(|| std::env::set_var("UCX_SOFT_HCA_DEVICES", "mlx5_0@127.0.0.1"));
    let mut components = null_mut();
    let mut count = 0;
    let mut md = null_mut();
    let mut async_context = null_mut();
    let mut worker = null_mut();
    assert_eq!(
        uct_safe::query_components(&mut components, &mut count),
        UCS_OK
    );
    // SAFETY: the list has `count` (at least one) entries.
    let component = unsafe { *components };
    let status = uct_safe::md_open(component, c"mlx5_0", null(), &mut md);
    assert_eq!(status, UCS_OK);
    uct_safe::release_component_list(components);
    let status = uct_safe::async_context_create(UCS_ASYNC_MODE_POLL, &mut async_context);
    assert_eq!(status, UCS_OK);
    let status = uct_safe::worker_create(async_context, UCS_THREAD_MODE_SINGLE, &mut worker);
    assert_eq!(status, UCS_OK);
    (md, worker, async_context)
}

fn device_params(tl_name: *const c_char, dev_name: *const c_char) -> uct_iface_params_t {
    let mut params: uct_iface_params_t = uct_safe::zeroed();
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device = uct_iface_params_mode_device { tl_name, dev_name };
    params
}

#[test]
fn iface_open_validates_params() {
    let (md, worker, async_context) = md_and_worker();
    let rc = c"rc_mlx5".as_ptr();
    let port = c"mlx5_0:1".as_ptr();
    let good = device_params(rc, port);
    let mut iface = null_mut();
    // Each call passes one bad argument; md/worker are live.
    let open = |params: &uct_iface_params_t, iface: &mut uct_iface_h| {
        uct_safe::iface_open(md, worker, params, null(), iface)
    };
    assert_eq!(
        uct_safe::iface_open(null_mut(), worker, &good, null(), &mut iface),
        UCS_ERR_INVALID_PARAM
    );
    assert_eq!(
        uct_safe::iface_open(md, null_mut(), &good, null(), &mut iface),
        UCS_ERR_INVALID_PARAM
    );
    // SAFETY: the NULL params and the NULL out-pointer are the bad inputs.
    unsafe {
        assert_eq!(
            uct_iface_open(md, worker, null(), null(), &mut iface),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_iface_open(md, worker, &good, null(), null_mut()),
            UCS_ERR_INVALID_PARAM
        );
    }

    let mut no_mode = good;
    no_mode.field_mask = UCT_IFACE_PARAM_FIELD_DEVICE;
    assert_eq!(open(&no_mode, &mut iface), UCS_ERR_INVALID_PARAM);
    // As UCX (and 1.13's ucx_perftest, which relies on it): the DEVICE
    // open mode alone selects `mode.device`, whose names are still checked.
    let mut no_device = good;
    no_device.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE;
    assert_eq!(open(&no_device, &mut iface), UCS_OK);
    uct_safe::iface_close(iface);
    iface = null_mut();
    no_device.mode.device.dev_name = null();
    assert_eq!(open(&no_device, &mut iface), UCS_ERR_INVALID_PARAM);
    let mut sockaddr = good;
    sockaddr.open_mode = UCT_IFACE_OPEN_MODE_SOCKADDR_SERVER;
    assert_eq!(open(&sockaddr, &mut iface), UCS_ERR_UNSUPPORTED);

    let null_tl = device_params(null(), port);
    assert_eq!(open(&null_tl, &mut iface), UCS_ERR_INVALID_PARAM);
    let other_tl = device_params(c"ud_mlx5".as_ptr(), port);
    assert_eq!(open(&other_tl, &mut iface), UCS_ERR_NO_DEVICE);
    let other_port = device_params(rc, c"mlx5_0:2".as_ptr());
    assert_eq!(open(&other_port, &mut iface), UCS_ERR_NO_DEVICE);
    assert!(iface.is_null(), "nothing written on failure");

    // Valid parameters: UNSUPPORTED until the rc_mlx5 transport exists,
    // then an open iface.
    match open(&good, &mut iface) {
        UCS_OK => uct_safe::iface_close(iface),
        status => assert_eq!(status, UCS_ERR_UNSUPPORTED),
    }

    uct_safe::worker_destroy(worker);
    uct_safe::async_context_destroy(async_context);
    uct_safe::md_close(md);
}

#[test]
fn ep_create_needs_an_iface() {
    let mut transport = TestTransport::new();
    let mut params: uct_ep_params_t = uct_safe::zeroed();
    let mut ep = null_mut();
    // SAFETY: bad inputs, then the test iface (whose ep_create is a stub).
    unsafe {
        assert_eq!(uct_ep_create(null(), &mut ep), UCS_ERR_INVALID_PARAM);
        params.iface = transport.iface();
        assert_eq!(
            uct_ep_create(&params, &mut ep),
            UCS_ERR_INVALID_PARAM,
            "FIELD_IFACE missing"
        );
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
        assert_eq!(uct_ep_create(&params, null_mut()), UCS_ERR_INVALID_PARAM);
        assert_eq!(uct_ep_create(&params, &mut ep), UCS_ERR_UNSUPPORTED);
    }
    assert!(ep.is_null());
}

fn iface_attr_v2(field_mask: u64) -> uct_iface_attr_v2_t {
    uct_iface_attr_v2_t {
        field_mask,
        ..uct_safe::zeroed()
    }
}

#[test]
fn iface_query_v2_checks_and_defaults() {
    let mut transport = TestTransport::new();
    let iface = transport.iface();
    let mut token = [0u8; 32];
    let mut attr = iface_attr_v2(
        UCT_IFACE_ATTR_FIELD_CAP_FLAGS | UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT,
    );
    attr.cap.flags = u64::MAX;
    attr.max_put_sgl_zcopy_count = 9;
    assert_eq!(uct_safe::iface_query_v2(iface, &mut attr), UCS_OK);
    assert_eq!(attr.cap.flags & UCT_IFACE_FLAG_V2_QUERY_TOKEN, 0);
    assert_eq!(attr.cap.flags, 0);
    assert_eq!(attr.max_put_sgl_zcopy_count, 0);

    let mut tokens = iface_attr_v2(UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH);
    assert_eq!(
        uct_safe::iface_query_v2(iface, &mut tokens),
        UCS_ERR_UNSUPPORTED
    );

    let mut rx_only = iface_attr_v2(UCT_IFACE_ATTR_FIELD_RX_TOKEN);
    rx_only.rx_token = token.as_mut_ptr().cast();
    assert_eq!(
        uct_safe::iface_query_v2(iface, &mut rx_only),
        UCS_ERR_INVALID_PARAM,
        "needs TX_TOKEN"
    );
    let mut no_buffer =
        iface_attr_v2(UCT_IFACE_ATTR_FIELD_RX_TOKEN | UCT_IFACE_ATTR_FIELD_TX_TOKEN);
    no_buffer.tx_token = token.as_ptr().cast();
    assert_eq!(
        uct_safe::iface_query_v2(iface, &mut no_buffer),
        UCS_ERR_INVALID_PARAM
    );
    // Unknown field-mask bits are ignored, as UCX's query does: the
    // known ones are answered.
    let mut unknown = iface_attr_v2(
        (UCT_IFACE_ATTR_FIELD_RX_TOKEN << 1) | UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT,
    );
    unknown.max_put_sgl_zcopy_count = 9;
    assert_eq!(uct_safe::iface_query_v2(iface, &mut unknown), UCS_OK);
    assert_eq!(unknown.max_put_sgl_zcopy_count, 0);
    // SAFETY: the NULL attr is the bad input.
    assert_eq!(
        unsafe { uct_iface_query_v2(iface, null_mut()) },
        UCS_ERR_INVALID_PARAM
    );
    assert_eq!(
        uct_safe::iface_query_v2(null_mut(), &mut attr),
        UCS_ERR_INVALID_PARAM
    );
}

unsafe extern "C" fn purge_cb(_op: *const uct_ep_op_info_t, _arg: *mut c_void) {}

#[test]
fn ep_v2_functions_check_params_then_dispatch() {
    let mut transport = TestTransport::new();
    let ep = transport.ep();
    let iface = transport.iface();
    let mut token = [0u8; 32];
    // The test ep/iface are live; params structs valid.
    // uct_ep_query
    let mut attr: uct_ep_attr_t = uct_safe::zeroed();
    attr.field_mask = UCT_EP_ATTR_FIELD_TX_TOKEN;
    assert_eq!(
        uct_safe::ep_query(ep, &mut attr),
        UCS_ERR_INVALID_PARAM,
        "no token buffer"
    );
    attr.tx_token = token.as_mut_ptr().cast();
    assert_eq!(uct_safe::ep_query(ep, &mut attr), UCS_ERR_UNSUPPORTED);
    // Unknown bits are ignored (UCX): the call reaches the transport.
    attr.field_mask = UCT_EP_ATTR_FIELD_TX_TOKEN << 1;
    assert_eq!(uct_safe::ep_query(ep, &mut attr), UCS_ERR_UNSUPPORTED);
    assert_eq!(
        uct_safe::ep_query(null_mut(), &mut attr),
        UCS_ERR_INVALID_PARAM
    );

    // uct_ep_invalidate: params are optional, unknown flags and
    // field-mask bits are ignored (UCX); every form reaches the
    // transport, which does not implement it.
    let mut invalidate = uct_ep_invalidate_params_t {
        field_mask: UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS,
        flags: 2,
    };
    assert_eq!(
        uct_safe::ep_invalidate(ep, Some(&invalidate)),
        UCS_ERR_UNSUPPORTED,
        "unknown flag ignored"
    );
    invalidate.flags = UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS;
    assert_eq!(
        uct_safe::ep_invalidate(ep, Some(&invalidate)),
        UCS_ERR_UNSUPPORTED
    );
    invalidate.field_mask = 0x8000 | UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS;
    assert_eq!(
        uct_safe::ep_invalidate(ep, Some(&invalidate)),
        UCS_ERR_UNSUPPORTED
    );
    assert_eq!(uct_safe::ep_invalidate(ep, None), UCS_ERR_UNSUPPORTED);
    assert_eq!(
        uct_safe::ep_invalidate(null_mut(), None),
        UCS_ERR_INVALID_PARAM,
        "no ep"
    );

    // uct_ep_failover_enable: implemented by the test transport.
    assert_eq!(uct_safe::failover_enable(ep), UCS_OK);
    assert_eq!(uct_safe::failover_enable(null_mut()), UCS_ERR_INVALID_PARAM);

    // uct_ep_outstanding_purge
    let mut purge = uct_ep_outstanding_purge_params_t {
        field_mask: UCT_EP_OUTSTANDING_FIELD_RX_TOKEN,
        rx_token: token.as_ptr().cast(),
        cb: Some(purge_cb),
        arg: null_mut(),
    };
    assert_eq!(
        uct_safe::outstanding_purge(ep, Some(&purge)),
        UCS_ERR_INVALID_PARAM,
        "CB missing"
    );
    purge.field_mask |= UCT_EP_OUTSTANDING_FIELD_CB;
    purge.rx_token = null();
    assert_eq!(
        uct_safe::outstanding_purge(ep, Some(&purge)),
        UCS_ERR_INVALID_PARAM,
        "NULL token"
    );
    purge.rx_token = token.as_ptr().cast();
    purge.cb = None;
    assert_eq!(
        uct_safe::outstanding_purge(ep, Some(&purge)),
        UCS_ERR_INVALID_PARAM,
        "NULL cb"
    );
    purge.cb = Some(purge_cb);
    assert_eq!(
        uct_safe::outstanding_purge(ep, Some(&purge)),
        UCS_ERR_UNSUPPORTED
    );
    purge.field_mask |= 0x100;
    assert_eq!(
        uct_safe::outstanding_purge(ep, Some(&purge)),
        UCS_ERR_UNSUPPORTED,
        "unknown bit ignored"
    );
    assert_eq!(uct_safe::outstanding_purge(ep, None), UCS_ERR_INVALID_PARAM);

    // uct_iface_is_reachable_v2: the test transport says yes once the
    // params pass the checks.
    let device_addr = token.as_ptr() as *const uct_device_addr_t;
    let mut reach: uct_iface_is_reachable_params_t = uct_safe::zeroed();
    reach.field_mask = u64::from(UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR);
    assert_eq!(
        uct_safe::is_reachable_v2(iface, &reach),
        0,
        "DEVICE_ADDR missing"
    );
    reach.field_mask = u64::from(UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR);
    assert_eq!(
        uct_safe::is_reachable_v2(iface, &reach),
        0,
        "NULL device address"
    );
    reach.device_addr = device_addr;
    assert_eq!(uct_safe::is_reachable_v2(iface, &reach), 1);
    // SAFETY: live test iface; NULL params are the bad input.
    assert_eq!(unsafe { uct_iface_is_reachable_v2(iface, null()) }, 0);

    // uct_ep_connect_to_ep_v2
    let connect = uct_ep_connect_to_ep_params_t {
        field_mask: 0,
        device_addr_length: 0,
        ep_addr_length: 0,
    };
    let ep_addr = token.as_ptr() as *const uct_ep_addr_t;
    // SAFETY: live test ep; the addresses point into `token`; NULL ones
    // and NULL params are the bad inputs.
    unsafe {
        assert_eq!(
            uct_ep_connect_to_ep_v2(ep, null(), ep_addr, &connect),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_connect_to_ep_v2(ep, device_addr, ep_addr, null()),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_ep_connect_to_ep_v2(ep, device_addr, ep_addr, &connect),
            UCS_ERR_UNSUPPORTED
        );
    }
}
