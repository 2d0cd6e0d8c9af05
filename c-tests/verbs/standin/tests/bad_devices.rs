//! Bad RDMA devices and failing verbs (issue 6), simulated by the
//! stand-in's test switches (`UCT_STANDIN_NOT_MLX5`, `UCT_STANDIN_PORT_DOWN`,
//! `UCT_STANDIN_FAIL`) and driven through our public UCT API with
//! `UCX_SOFT_HCA=auto`: a device that is not mlx5 and a port that is down
//! are skipped with a log line naming them, the soft HCA takes over when no
//! verbs device is left, and a verbs call that fails while an md, iface or
//! ep is being made gives an error status, a log line naming the verb, and
//! no leaked stand-in objects.
//!
//! The device list is made once per process, so each test re-runs this
//! test binary for itself alone (`--exact <test>`) with its environment set
//! and `BAD_DEVICES_CHILD=1`; the child does the API calls and asserts, the
//! parent checks the child's exit and its log (stderr, `UCX_LOG_LEVEL=debug`).

use std::ffi::{c_uint, c_void, CStr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::ptr::{null, null_mut};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use uct::abi::*;
use uct::api::async_context::*;
use uct::api::component::*;
use uct::api::ep::*;
use uct::api::iface::*;
use uct::api::md::*;
use uct::api::worker::*;
use uct::hca::verbs::ffi::{LIBIBVERBS_OVERRIDE_ENV, LIBMLX5_OVERRIDE_ENV};

const CHILD_ENV: &str = "BAD_DEVICES_CHILD";
const DEVICES: &str = "mlx5_0@127.0.0.1,mlx5_1@127.0.0.2";
const AM_ID: u8 = 3;

// ------------------------------------------------------------- parent --

/// The stand-in next to this test's `deps/` directory (cargo builds the
/// crate's cdylib before its integration tests).
fn standin_library() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let library = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .join("libuct_verbs_standin.so");
    assert!(library.exists(), "{} missing", library.display());
    library
}

fn in_child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// What a child run left behind.
struct ChildRun {
    log: String,
    trace: String,
}

/// Runs test `name` alone in a new process of this binary, with the
/// stand-in as rdma-core, two devices, `UCX_SOFT_HCA=auto`, debug logging
/// and `switches` set; panics (showing the log) unless it passes.
fn run_child(name: &str, switches: &[(&str, &str)]) -> ChildRun {
    let library = standin_library();
    let scratch =
        std::env::temp_dir().join(format!("uct-bad-devices-{}-{}", std::process::id(), name));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let trace_file = scratch.join("trace");
    let mut command = Command::new(std::env::current_exe().expect("test executable"));
    command
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .env(LIBIBVERBS_OVERRIDE_ENV, &library)
        .env(LIBMLX5_OVERRIDE_ENV, &library)
        .env("UCX_SOFT_HCA_DEVICES", DEVICES)
        .env("UCX_SOFT_HCA", "auto")
        .env("UCX_LOG_LEVEL", "debug")
        .env("UCT_VERBS_SYSFS_ROOT", scratch.join("sysfs"))
        .env("UCT_STANDIN_TRACE", &trace_file);
    for inherited in [
        "UCT_STANDIN_NOT_MLX5",
        "UCT_STANDIN_PORT_DOWN",
        "UCT_STANDIN_FAIL",
        "UCX_LOG_FILE",
        "UCX_IB_GID_INDEX",
    ] {
        command.env_remove(inherited);
    }
    command.envs(switches.iter().copied());
    let output = command.output().expect("run the child test");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "child {name} failed:\n{log}");
    let trace = std::fs::read_to_string(&trace_file).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&scratch);
    ChildRun { log, trace }
}

/// The first log line holding all of `words`; panics with the log if none.
fn line_with<'a>(log: &'a str, words: &[&str]) -> &'a str {
    log.lines()
        .find(|line| words.iter().all(|w| line.contains(w)))
        .unwrap_or_else(|| panic!("no log line with {words:?} in:\n{log}"))
}

// -------------------------------------------------------------- child --

fn component() -> uct_component_h {
    let mut components: *mut uct_component_h = null_mut();
    let mut count: c_uint = 0;
    // SAFETY: valid out-pointers; the array is released after reading.
    unsafe {
        assert_eq!(uct_query_components(&mut components, &mut count), UCS_OK);
        assert!(count >= 1);
        let component = *components;
        uct_release_component_list(components);
        component
    }
}

/// A C caller's first call (`uct_query_components`, which installs our
/// log subscriber), then the device list that md calls make on first use
/// (loading rdma-core, here the stand-in). Child bodies start here so the
/// discovery log lines reach stderr.
fn enter_through_the_api() {
    component();
    let _ = uct::hca::devices::hca_devices();
}

fn open_md(name: &CStr) -> Result<uct_md_h, ucs_status_t> {
    let mut md = null_mut();
    // SAFETY: valid name and out-pointer.
    let status = unsafe { uct_md_open(component(), name.as_ptr(), null(), &mut md) };
    if status == UCS_OK {
        Ok(md)
    } else {
        Err(status)
    }
}

/// The `(tl, device)` resources of `md`.
fn tl_resources(md: uct_md_h) -> Vec<(String, String)> {
    let mut list: *mut uct_tl_resource_desc_t = null_mut();
    let mut count: c_uint = 0;
    // SAFETY: live md, valid out-pointers; the list is released below.
    unsafe {
        assert_eq!(uct_md_query_tl_resources(md, &mut list, &mut count), UCS_OK);
        let found = (0..count as usize)
            .map(|i| {
                let entry = &*list.add(i);
                (
                    CStr::from_ptr(entry.tl_name.as_ptr())
                        .to_string_lossy()
                        .into_owned(),
                    CStr::from_ptr(entry.dev_name.as_ptr())
                        .to_string_lossy()
                        .into_owned(),
                )
            })
            .collect();
        uct_release_tl_resource_list(list);
        found
    }
}

/// An rc_mlx5 iface with its md, worker and async context.
struct Side {
    md: uct_md_h,
    async_context: *mut ucs_async_context_t,
    worker: uct_worker_h,
    iface: uct_iface_h,
    attr: uct_iface_attr_t,
}

impl Side {
    /// Opens md `md_name` and an rc_mlx5 iface on `port`; the first
    /// failing status if either fails (what was made is closed again).
    fn open(md_name: &CStr, port: &CStr) -> Result<Side, ucs_status_t> {
        let md = open_md(md_name)?;
        let mut async_context = null_mut();
        let mut worker = null_mut();
        let mut iface = null_mut();
        // SAFETY: all-zero is a valid uct_iface_params_t.
        let mut params: uct_iface_params_t = unsafe { std::mem::zeroed() };
        params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
        params.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
        params.mode.device = uct_iface_params_mode_device {
            tl_name: c"rc_mlx5".as_ptr(),
            dev_name: port.as_ptr(),
        };
        // SAFETY: valid arguments and out-pointers; on failure everything
        // made so far is released once, in reverse order.
        unsafe {
            assert_eq!(
                ucs_async_context_create(UCS_ASYNC_MODE_POLL, &mut async_context),
                UCS_OK
            );
            assert_eq!(
                uct_worker_create(async_context, UCS_THREAD_MODE_SINGLE, &mut worker),
                UCS_OK
            );
            let mut config: *mut uct_iface_config_t = null_mut();
            assert_eq!(
                uct::api::config::uct_md_iface_config_read(
                    md,
                    c"rc_mlx5".as_ptr(),
                    null(),
                    null(),
                    &mut config
                ),
                UCS_OK
            );
            let status = uct_iface_open(md, worker, &params, config, &mut iface);
            uct::api::config::uct_config_release(config.cast());
            if status != UCS_OK {
                uct_worker_destroy(worker);
                ucs_async_context_destroy(async_context);
                uct_md_close(md);
                return Err(status);
            }
            uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
            let mut attr: uct_iface_attr_t = std::mem::zeroed();
            assert_eq!(uct_iface_query(iface, &mut attr), UCS_OK);
            Ok(Side {
                md,
                async_context,
                worker,
                iface,
                attr,
            })
        }
    }

    fn create_ep(&self) -> Result<uct_ep_h, ucs_status_t> {
        // SAFETY: all-zero params plus the iface.
        let mut params: uct_ep_params_t = unsafe { std::mem::zeroed() };
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
        params.iface = self.iface;
        let mut ep = null_mut();
        // SAFETY: valid params and out-pointer.
        let status = unsafe { uct_ep_create(&params, &mut ep) };
        if status == UCS_OK {
            Ok(ep)
        } else {
            Err(status)
        }
    }

    fn device_address(&self) -> Vec<u8> {
        let mut addr = vec![0u8; self.attr.device_addr_len];
        // SAFETY: room for device_addr_len bytes.
        let status = unsafe { uct_iface_get_device_address(self.iface, addr.as_mut_ptr().cast()) };
        assert_eq!(status, UCS_OK);
        addr
    }

    fn ep_address(&self, ep: uct_ep_h) -> Vec<u8> {
        let mut addr = vec![0u8; self.attr.ep_addr_len];
        // SAFETY: room for ep_addr_len bytes.
        let status = unsafe { uct_ep_get_address(ep, addr.as_mut_ptr().cast()) };
        assert_eq!(status, UCS_OK);
        addr
    }

    fn progress(&self) {
        // SAFETY: live worker.
        unsafe { uct_worker_progress(self.worker) };
    }

    fn close(self) {
        // SAFETY: live handles, closed once, in dependency order.
        unsafe {
            uct_iface_close(self.iface);
            uct_worker_destroy(self.worker);
            ucs_async_context_destroy(self.async_context);
            uct_md_close(self.md);
        }
    }
}

/// Messages the AM handler received.
static INBOX: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

unsafe extern "C" fn collect_am(
    _arg: *mut c_void,
    data: *mut c_void,
    length: usize,
    _flags: c_uint,
) -> ucs_status_t {
    // SAFETY: the iface hands us `length` readable bytes at `data`.
    let bytes = unsafe { std::slice::from_raw_parts(data as *const u8, length) };
    INBOX
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(bytes.to_vec());
    UCS_OK
}

/// Connects an ep pair between `a` and `b`, sends one AM short from `a`,
/// waits for `b` to receive it, and destroys the eps.
fn am_passes(a: &Side, b: &Side) {
    // SAFETY: live iface; the handler is a plain function.
    let status =
        unsafe { uct_iface_set_am_handler(b.iface, AM_ID, Some(collect_am), null_mut(), 0) };
    assert_eq!(status, UCS_OK);
    let ep_a = a.create_ep().expect("ep on a");
    let ep_b = b.create_ep().expect("ep on b");
    let (dev_a, dev_b) = (a.device_address(), b.device_address());
    let (addr_a, addr_b) = (a.ep_address(ep_a), b.ep_address(ep_b));
    // SAFETY: addresses from the peer's iface and ep.
    unsafe {
        assert_eq!(
            uct_ep_connect_to_ep(ep_a, dev_b.as_ptr().cast(), addr_b.as_ptr().cast()),
            UCS_OK
        );
        assert_eq!(
            uct_ep_connect_to_ep(ep_b, dev_a.as_ptr().cast(), addr_a.as_ptr().cast()),
            UCS_OK
        );
    }
    let payload = *b"bad input survived";
    let header: u64 = 0x0123_4567_89ab_cdef;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        // SAFETY: live ep; payload valid for its length.
        let status = unsafe {
            uct_ep_am_short(
                ep_a,
                AM_ID,
                header,
                payload.as_ptr().cast(),
                payload.len() as c_uint,
            )
        };
        if status == UCS_OK {
            break;
        }
        assert_eq!(status, UCS_ERR_NO_RESOURCE, "am_short");
        assert!(Instant::now() < deadline, "am_short stays busy");
        a.progress();
        b.progress();
    }
    let mut expected = header.to_ne_bytes().to_vec();
    expected.extend_from_slice(&payload);
    while INBOX.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
        assert!(Instant::now() < deadline, "the AM never arrived");
        a.progress();
        b.progress();
        std::thread::yield_now();
    }
    assert_eq!(
        INBOX.lock().unwrap_or_else(|p| p.into_inner()).as_slice(),
        [expected]
    );
    // SAFETY: live eps, destroyed once before their ifaces.
    unsafe {
        uct_ep_destroy(ep_a);
        uct_ep_destroy(ep_b);
    }
}

/// The stand-in's count of live verbs objects (its test-only export), read
/// from the copy our library loaded.
fn standin_live_objects() -> usize {
    let library = std::ffi::CString::new(
        std::env::var(LIBIBVERBS_OVERRIDE_ENV).expect("the stand-in's path is set"),
    )
    .expect("path without NUL");
    // SAFETY: RTLD_NOLOAD only returns a handle to the already loaded
    // stand-in (or NULL); the symbol is the stand-in's
    // `extern "C" fn() -> usize`, which takes no arguments.
    unsafe {
        let handle = libc::dlopen(library.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        assert!(!handle.is_null(), "the stand-in is not loaded");
        let symbol = libc::dlsym(handle, c"uct_standin_live_objects".as_ptr());
        assert!(!symbol.is_null(), "uct_standin_live_objects missing");
        let count: extern "C" fn() -> usize = std::mem::transmute(symbol);
        let live = count();
        libc::dlclose(handle);
        live
    }
}

// -------------------------------------------------------------- tests --

#[test]
fn not_mlx5_device_and_down_port_are_skipped_and_auto_falls_back_to_soft() {
    if in_child() {
        enter_through_the_api();
        let listed: Vec<(String, bool)> = uct::hca::devices::hca_devices()
            .iter()
            .map(|d| (d.name.clone(), d.is_soft()))
            .collect();
        assert_eq!(
            listed,
            [("mlx5_0".to_string(), true), ("mlx5_1".to_string(), true)]
        );
        let a = Side::open(c"mlx5_0", c"mlx5_0:1").expect("soft mlx5_0 opens");
        let b = Side::open(c"mlx5_1", c"mlx5_1:1").expect("soft mlx5_1 opens");
        assert!(tl_resources(a.md).contains(&("rc_mlx5".into(), "mlx5_0:1".into())));
        assert!(tl_resources(b.md).contains(&("rc_mlx5".into(), "mlx5_1:1".into())));
        am_passes(&a, &b);
        a.close();
        b.close();
        return;
    }
    let run = run_child(
        "not_mlx5_device_and_down_port_are_skipped_and_auto_falls_back_to_soft",
        &[
            ("UCT_STANDIN_NOT_MLX5", "mlx5_0"),
            ("UCT_STANDIN_PORT_DOWN", "mlx5_1"),
        ],
    );
    line_with(&run.log, &["mlx5_0", "not an mlx5 device"]);
    line_with(&run.log, &["mlx5_1:1", "not active"]);
    // The verbs path made no QP: the AM went through the soft HCA. The
    // non-mlx5 device was never even opened.
    assert!(!run.trace.contains("qp "), "{}", run.trace);
    assert!(!run.trace.contains("open mlx5_0 "), "{}", run.trace);
}

#[test]
fn a_bad_device_is_skipped_alone_when_a_good_one_remains() {
    if in_child() {
        enter_through_the_api();
        let listed: Vec<(String, bool)> = uct::hca::devices::hca_devices()
            .iter()
            .map(|d| (d.name.clone(), d.is_soft()))
            .collect();
        // auto with a usable verbs device: only that one, no soft device.
        assert_eq!(listed, [("mlx5_1".to_string(), false)]);
        assert!(open_md(c"mlx5_0").is_err());
        let md = open_md(c"mlx5_1").expect("verbs mlx5_1 opens");
        assert!(tl_resources(md).contains(&("rc_mlx5".into(), "mlx5_1:1".into())));
        // SAFETY: live md, closed once.
        unsafe { uct_md_close(md) };
        return;
    }
    let run = run_child(
        "a_bad_device_is_skipped_alone_when_a_good_one_remains",
        &[("UCT_STANDIN_NOT_MLX5", "mlx5_0")],
    );
    line_with(&run.log, &["mlx5_0", "not an mlx5 device"]);
    assert!(run.trace.contains("open mlx5_1 "), "{}", run.trace);
}

#[test]
fn device_that_cannot_be_opened_is_skipped_and_auto_falls_back_to_soft() {
    if in_child() {
        enter_through_the_api();
        assert!(uct::hca::devices::hca_devices().iter().all(|d| d.is_soft()));
        let a = Side::open(c"mlx5_0", c"mlx5_0:1").expect("soft mlx5_0 opens");
        let b = Side::open(c"mlx5_1", c"mlx5_1:1").expect("soft mlx5_1 opens");
        am_passes(&a, &b);
        a.close();
        b.close();
        return;
    }
    let run = run_child(
        "device_that_cannot_be_opened_is_skipped_and_auto_falls_back_to_soft",
        &[("UCT_STANDIN_FAIL", "open_device")],
    );
    line_with(&run.log, &["mlx5_0", "Cannot allocate memory"]);
    line_with(&run.log, &["mlx5_1", "Cannot allocate memory"]);
}

#[test]
fn failing_create_qp_fails_ep_create_with_a_log_line_and_leaks_nothing() {
    if in_child() {
        let a = Side::open(c"mlx5_0", c"mlx5_0:1").expect("verbs mlx5_0 opens");
        let b = Side::open(c"mlx5_1", c"mlx5_1:1").expect("verbs mlx5_1 opens");
        let before = standin_live_objects();
        let status = a.create_ep().expect_err("create_qp fails");
        assert_ne!(status, UCS_OK);
        assert_eq!(standin_live_objects(), before, "the failed ep leaked");
        // The iface stays usable once the verb works again.
        std::env::remove_var("UCT_STANDIN_FAIL");
        am_passes(&a, &b);
        a.close();
        b.close();
        return;
    }
    let run = run_child(
        "failing_create_qp_fails_ep_create_with_a_log_line_and_leaks_nothing",
        &[("UCT_STANDIN_FAIL", "create_qp")],
    );
    line_with(&run.log, &["ibv_create_qp", "Cannot allocate memory"]);
    // The retry after the switch was lifted went through the verbs path.
    assert!(run.trace.contains("qp "), "{}", run.trace);
}

/// Child body: with `UCT_STANDIN_FAIL=<verb>`, opening the iface (or its
/// md) fails with an error status and nothing stays allocated; then it
/// works once the verb does.
fn setup_verb_fails_cleanly() {
    let before = live_objects_after_listing();
    let status = Side::open(c"mlx5_0", c"mlx5_0:1")
        .err()
        .expect("the iface does not open");
    assert_ne!(status, UCS_OK);
    assert_eq!(standin_live_objects(), before, "the failed open leaked");
    std::env::remove_var("UCT_STANDIN_FAIL");
    let a = Side::open(c"mlx5_0", c"mlx5_0:1").expect("mlx5_0 opens");
    let b = Side::open(c"mlx5_1", c"mlx5_1:1").expect("mlx5_1 opens");
    am_passes(&a, &b);
    a.close();
    b.close();
}

/// [`standin_live_objects`] once our library has loaded the stand-in.
fn live_objects_after_listing() -> usize {
    enter_through_the_api();
    standin_live_objects()
}

macro_rules! setup_verb_test {
    ($name:ident, $verb:literal) => {
        #[test]
        fn $name() {
            if in_child() {
                setup_verb_fails_cleanly();
                return;
            }
            let run = run_child(stringify!($name), &[("UCT_STANDIN_FAIL", $verb)]);
            line_with(
                &run.log,
                &[concat!("ibv_", $verb), "Cannot allocate memory"],
            );
        }
    };
}

setup_verb_test!(failing_alloc_pd_fails_iface_open_cleanly, "alloc_pd");
setup_verb_test!(failing_create_cq_fails_iface_open_cleanly, "create_cq");
setup_verb_test!(failing_create_srq_fails_iface_open_cleanly, "create_srq");
setup_verb_test!(failing_reg_mr_fails_iface_open_cleanly, "reg_mr");
