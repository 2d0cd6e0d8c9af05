//! Two rc_mlx5 ifaces on two soft devices in this process (mlx5_0 on
//! 127.0.0.1, mlx5_1 on 127.0.0.2), each with its own worker, and a
//! connected ep pair, driven through the C entry points.
#![allow(dead_code)]

// The safe layer over the C API, for the helpers below and for the tests
// that use this module (`use rc_common::uct_safe::*`).
#[path = "../uct_safe/mod.rs"]
pub mod uct_safe;

use std::ffi::{c_uint, c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use uct::abi::*;
use uct::api::async_context::*;
use uct::api::component::*;
use uct::api::ep::*;
use uct::api::iface::*;
use uct::api::md::*;
use uct::api::worker::*;
pub use uct::uct::pool::BufferClass;
use uct_safe::*;

pub fn setup() {
    static SETUP: Once = Once::new();
    SETUP.call_once(|| {
        std::env::set_var("UCX_SOFT_HCA_DEVICES", "mlx5_0@127.0.0.1,mlx5_1@127.0.0.2")
    });
}

pub fn component() -> uct_component_h {
    setup();
    let mut components: *mut uct_component_h = null_mut();
    let mut count: c_uint = 0;
    // SAFETY: valid out-pointers; the array is released after reading.
    unsafe {
        assert_eq!(uct_query_components(&mut components, &mut count), UCS_OK);
        let component = *components;
        uct_release_component_list(components);
        component
    }
}

/// Messages an AM handler received: (id from the handler arg, bytes).
pub type Inbox = Mutex<Vec<Vec<u8>>>;

/// Copies the message into the inbox given as `arg`.
pub unsafe extern "C" fn collect_am(
    arg: *mut c_void,
    data: *mut c_void,
    length: usize,
    _flags: c_uint,
) -> ucs_status_t {
    // SAFETY: arg is a leaked Inbox; data holds length bytes.
    unsafe {
        let inbox = &*(arg as *const Inbox);
        let bytes = std::slice::from_raw_parts(data as *const u8, length).to_vec();
        inbox.lock().unwrap().push(bytes);
    }
    UCS_OK
}

pub struct Side {
    pub md: uct_md_h,
    pub async_context: *mut ucs_async_context_t,
    pub worker: uct_worker_h,
    pub iface: uct_iface_h,
    pub attr: uct_iface_attr_t,
}

pub fn iface_params() -> uct_iface_params_t {
    let mut params: uct_iface_params_t = zeroed();
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
    params
}

impl Side {
    pub fn open(md_name: &CStr, port: &CStr, params: Option<uct_iface_params_t>) -> Side {
        Side::open_with(md_name, port, params, &[])
    }

    /// Opens with iface configuration `settings` (`uct_config_modify` names,
    /// e.g. `("RC_TIMEOUT", "1ms")`).
    pub fn open_with(
        md_name: &CStr,
        port: &CStr,
        params: Option<uct_iface_params_t>,
        settings: &[(&CStr, &CStr)],
    ) -> Side {
        let mut params = params.unwrap_or_else(iface_params);
        params.mode.device = uct_iface_params_mode_device {
            tl_name: c"rc_mlx5".as_ptr(),
            dev_name: port.as_ptr(),
        };
        let mut md = null_mut();
        let mut async_context = null_mut();
        let mut worker = null_mut();
        let mut iface = null_mut();
        // SAFETY: valid arguments and out-pointers throughout.
        unsafe {
            assert_eq!(
                uct_md_open(component(), md_name.as_ptr(), null(), &mut md),
                UCS_OK
            );
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
            for (name, value) in settings {
                let status = uct::api::config::uct_config_modify(
                    config.cast(),
                    name.as_ptr(),
                    value.as_ptr(),
                );
                assert_eq!(status, UCS_OK);
            }
            assert_eq!(
                uct_iface_open(md, worker, &params, config, &mut iface),
                UCS_OK
            );
            uct::api::config::uct_config_release(config.cast());
            uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
            let mut attr: uct_iface_attr_t = std::mem::zeroed();
            assert_eq!(uct_iface_query(iface, &mut attr), UCS_OK);
            Side {
                md,
                async_context,
                worker,
                iface,
                attr,
            }
        }
    }

    pub fn device_address(&self) -> Vec<u8> {
        let mut addr = vec![0u8; self.attr.device_addr_len];
        // SAFETY: room for device_addr_len bytes.
        let status = unsafe { uct_iface_get_device_address(self.iface, addr.as_mut_ptr().cast()) };
        assert_eq!(status, UCS_OK);
        addr
    }

    pub fn create_ep(&self) -> uct_ep_h {
        let mut params: uct_ep_params_t = zeroed();
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE;
        params.iface = self.iface;
        let mut ep = null_mut();
        // SAFETY: valid params and out-pointer.
        assert_eq!(unsafe { uct_ep_create(&params, &mut ep) }, UCS_OK);
        ep
    }

    pub fn ep_address(&self, ep: uct_ep_h) -> Vec<u8> {
        let mut addr = vec![0u8; self.attr.ep_addr_len];
        // SAFETY: room for ep_addr_len bytes.
        assert_eq!(
            unsafe { uct_ep_get_address(ep, addr.as_mut_ptr().cast()) },
            UCS_OK
        );
        addr
    }

    /// Sets AM handler `id` to [`collect_am`] into a new leaked inbox.
    pub fn collect_am(&self, id: u8) -> &'static Inbox {
        let at = inbox();
        self.collect_am_into(id, at);
        at
    }

    /// Sets AM handler `id` to [`collect_am`] into `inbox`.
    pub fn collect_am_into(&self, id: u8, inbox: &'static Inbox) {
        // SAFETY: live iface; the inbox is leaked (lives forever).
        let status = unsafe {
            uct_iface_set_am_handler(
                self.iface,
                id,
                Some(collect_am),
                inbox as *const Inbox as *mut c_void,
                0,
            )
        };
        assert_eq!(status, UCS_OK);
    }

    pub fn progress(&self) -> c_uint {
        // SAFETY: live worker.
        unsafe { uct_worker_progress(self.worker) }
    }

    /// Registers `len` bytes at `buffer`; returns the memh and the unpacked rkey.
    pub fn register(&self, buffer: *mut u8, len: usize) -> (uct_mem_h, uct_rkey_t) {
        self.register_with_flags(buffer, len, 0)
    }

    /// [`Side::register`] with `uct_md_mem_reg` flags.
    pub fn register_with_flags(
        &self,
        buffer: *mut u8,
        len: usize,
        flags: c_uint,
    ) -> (uct_mem_h, uct_rkey_t) {
        let memh = mem_reg(self.md, buffer, len, flags).expect("uct_md_mem_reg");
        (memh, unpacked_rkey(self.md, memh).rkey)
    }

    pub fn close(self) {
        // SAFETY: live handles, closed once, in dependency order.
        unsafe {
            uct_iface_close(self.iface);
            uct_worker_destroy(self.worker);
            ucs_async_context_destroy(self.async_context);
            uct_md_close(self.md);
        }
    }
}

/// A bundle for `uct_rkey_unpack` to fill.
pub fn empty_rkey_bundle() -> uct_rkey_bundle_t {
    uct_rkey_bundle_t {
        rkey: 0,
        handle: null_mut(),
        r#type: null_mut(),
    }
}

/// `memh`'s key packed by `md` and unpacked again (as the peer would).
pub fn unpacked_rkey(md: uct_md_h, memh: uct_mem_h) -> uct_rkey_bundle_t {
    let mut packed = [0u8; 8];
    let mut bundle = empty_rkey_bundle();
    // SAFETY: a live md and one of its memhs; room for the 8-byte key.
    unsafe {
        assert_eq!(
            uct_md_mkey_pack(md, memh, packed.as_mut_ptr().cast()),
            UCS_OK
        );
        assert_eq!(
            uct_rkey_unpack(component(), packed.as_ptr().cast(), &mut bundle),
            UCS_OK
        );
    }
    bundle
}

/// A new ep on each side, connected to each other: `(a -> b, b -> a)`.
pub fn connect_eps(a: &Side, b: &Side) -> (uct_ep_h, uct_ep_h) {
    let (ep_a, ep_b) = (a.create_ep(), b.create_ep());
    connect_existing(a, ep_a, b, ep_b);
    (ep_a, ep_b)
}

/// Connects `ep_a` (an ep of `a`) and `ep_b` (of `b`) to each other.
pub fn connect_existing(a: &Side, ep_a: uct_ep_h, b: &Side, ep_b: uct_ep_h) {
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
}

/// Send bounce buffers of `class` an rc_mlx5 iface has handed out and not
/// got back.
pub fn send_buffers_in_use(iface: uct_iface_h, class: BufferClass) -> usize {
    // SAFETY: an open rc_mlx5 iface of this library is an RcIface; the
    // test thread is the only one using it while it reads.
    let rc = unsafe { &*(iface as *const uct::rc::iface::RcIface) };
    rc.tx_pool().in_use_of(class)
}

/// Send bounce buffers of `class` an rc_mlx5 iface has made so far.
pub fn send_buffers_made(iface: uct_iface_h, class: BufferClass) -> usize {
    // SAFETY: as in send_buffers_in_use.
    let rc = unsafe { &*(iface as *const uct::rc::iface::RcIface) };
    rc.tx_pool().allocated_of(class)
}

/// Free send-CQ credits of an rc_mlx5 iface, and the most it has.
pub fn send_credits(iface: uct_iface_h) -> (u32, u32) {
    // SAFETY: as in send_buffers_in_use.
    let rc = unsafe { &*(iface as *const uct::rc::iface::RcIface) };
    let stats = rc.stats();
    (stats.tx_credits, stats.tx_credits_max)
}

/// Target memory the devices write behind Rust's back: accessed only
/// through volatile reads and writes of raw pointers.
pub struct Target {
    words: Box<[u64]>,
}

impl Target {
    pub fn new(words: usize) -> Target {
        Target {
            words: vec![0u64; words].into_boxed_slice(),
        }
    }

    pub fn base(&mut self) -> *mut u8 {
        self.words.as_mut_ptr().cast()
    }

    pub fn len(&self) -> usize {
        self.words.len() * 8
    }

    /// The address of a target word (`&self`, so closures can hold it).
    pub fn addr(&self, byte_offset: usize) -> u64 {
        self.words.as_ptr() as u64 + byte_offset as u64
    }

    /// The aligned `T` at `byte_offset`, checked to be inside the target.
    fn word<T>(&mut self, byte_offset: usize) -> *mut T {
        let size = std::mem::size_of::<T>();
        assert!(byte_offset % size == 0 && byte_offset + size <= self.len());
        self.base().wrapping_add(byte_offset).cast()
    }

    pub fn read64(&mut self, byte_offset: usize) -> u64 {
        // SAFETY: in bounds and aligned (word checks it); no op is in
        // flight when tests read.
        unsafe { self.word::<u64>(byte_offset).read_volatile() }
    }

    pub fn write64(&mut self, byte_offset: usize, value: u64) {
        // SAFETY: as in read64.
        unsafe { self.word::<u64>(byte_offset).write_volatile(value) }
    }

    pub fn read32(&mut self, byte_offset: usize) -> u32 {
        // SAFETY: as in read64.
        unsafe { self.word::<u32>(byte_offset).read_volatile() }
    }

    pub fn write32(&mut self, byte_offset: usize, value: u32) {
        // SAFETY: as in read64.
        unsafe { self.word::<u32>(byte_offset).write_volatile(value) }
    }
}

/// Two sides with a connected ep pair (`ep_a` on a towards b, `ep_b` back).
pub struct Pair {
    pub a: Side,
    pub b: Side,
    pub ep_a: uct_ep_h,
    pub ep_b: uct_ep_h,
}

impl Pair {
    pub fn new() -> Pair {
        Pair::with_params(None, None)
    }

    pub fn with_params(a: Option<uct_iface_params_t>, b: Option<uct_iface_params_t>) -> Pair {
        Pair::with_config(a, b, &[])
    }

    /// Both ifaces opened with `settings`.
    pub fn with_config(
        a: Option<uct_iface_params_t>,
        b: Option<uct_iface_params_t>,
        settings: &[(&CStr, &CStr)],
    ) -> Pair {
        let a = Side::open_with(c"mlx5_0", c"mlx5_0:1", a, settings);
        let b = Side::open_with(c"mlx5_1", c"mlx5_1:1", b, settings);
        let (ep_a, ep_b) = connect_eps(&a, &b);
        Pair { a, b, ep_a, ep_b }
    }

    /// Posts `attempt` until it is not `UCS_ERR_NO_RESOURCE`, progressing
    /// both sides in between; gives up (returning the last status) after 20 s.
    pub fn post_retrying(&self, mut attempt: impl FnMut() -> ucs_status_t) -> ucs_status_t {
        let mut status = UCS_ERR_NO_RESOURCE;
        self.wait(|| {
            status = attempt();
            status != UCS_ERR_NO_RESOURCE
        });
        status
    }

    pub fn progress(&self) {
        self.a.progress();
        self.b.progress();
    }

    /// Progresses both sides until `done` holds; false after 20 s.
    pub fn wait(&self, mut done: impl FnMut() -> bool) -> bool {
        let start = Instant::now();
        while !done() {
            if start.elapsed() > Duration::from_secs(20) {
                return false;
            }
            self.progress();
            std::thread::yield_now();
        }
        true
    }

    /// Checks that an op posted with `comp` is in progress (`status`), then
    /// waits for `comp`'s one call and checks it reported `UCS_OK`.
    #[track_caller]
    pub fn expect_completion(&self, status: ucs_status_t, comp: &CountingCompletion) {
        assert_eq!(status, UCS_INPROGRESS);
        assert!(self.wait(|| comp.calls() == 1));
        assert_eq!(comp.status(), UCS_OK);
    }

    /// Flushes `ep` to completion.
    pub fn flush(&self, ep: uct_ep_h) -> ucs_status_t {
        let start = Instant::now();
        loop {
            let status = ep_flush(ep, 0, null_mut());
            if status != UCS_INPROGRESS && status != UCS_ERR_NO_RESOURCE {
                return status;
            }
            if start.elapsed() > Duration::from_secs(20) {
                return UCS_ERR_TIMED_OUT;
            }
            self.progress();
            std::thread::yield_now();
        }
    }

    pub fn close(self) {
        ep_destroy(self.ep_a);
        ep_destroy(self.ep_b);
        self.a.close();
        self.b.close();
    }
}

/// The first 8 bytes of each message in `inbox`, as the u64 the sender
/// put there (a sequence number), in arrival order.
pub fn sequence(inbox: &Inbox) -> Vec<u64> {
    inbox
        .lock()
        .unwrap()
        .iter()
        .map(|m| u64::from_ne_bytes(m[..8].try_into().unwrap()))
        .collect()
}

/// Lower-case hex of `bytes` (addresses on a two-process test's pipe).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of a [`hex`] string.
pub fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// Starts this test binary again as the other process of a two-process
/// test: only its test `child_side`, with `role_env=1`, the two soft
/// devices and `env`. Returns the child and the first line it prints that
/// contains `prefix` (from `prefix` on: libtest may print "test child_side
/// ... " in front of it), read by a thread so that a child that never
/// answers fails the test after 30 s instead of hanging it.
pub fn spawn_child(
    role_env: &str,
    env: &[(&str, String)],
    prefix: &'static str,
) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut command = Command::new(std::env::current_exe().expect("test binary"));
    command
        .args(["--exact", "child_side", "--nocapture", "--test-threads=1"])
        .env(role_env, "1")
        .env("UCX_SOFT_HCA_DEVICES", "mlx5_0@127.0.0.1,mlx5_1@127.0.0.2")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("start the child");
    let child_out = BufReader::new(child.stdout.take().expect("stdout"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in child_out.lines().map_while(Result::ok) {
            if let Some(at) = line.find(prefix) {
                let _ = tx.send(line[at..].to_string());
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(line) => (child, line),
        Err(_) => {
            let _ = child.kill();
            panic!("the child sent no address");
        }
    }
}

/// A leaked inbox for a handler argument.
pub fn inbox() -> &'static Inbox {
    Box::leak(Box::new(Mutex::new(Vec::new())))
}

/// Counts completions: a uct_completion_t with a counter of calls.
#[repr(C)]
pub struct CountingCompletion {
    pub comp: uct_completion_t,
    pub calls: u32,
    pub last_status: ucs_status_t,
}

unsafe extern "C" fn count_completion(comp: *mut uct_completion_t) {
    // SAFETY: comp is the first field of a CountingCompletion.
    let counting = unsafe { &mut *(comp as *mut CountingCompletion) };
    counting.calls += 1;
    counting.last_status = counting.comp.status;
}

impl CountingCompletion {
    pub fn new(count: i32) -> Box<CountingCompletion> {
        Box::new(CountingCompletion {
            comp: uct_completion_t {
                func: Some(count_completion),
                count,
                status: UCS_OK,
            },
            calls: 0,
            last_status: UCS_OK,
        })
    }

    pub fn as_ptr(&mut self) -> *mut uct_completion_t {
        &mut self.comp
    }

    /// Calls so far. Read volatile: the library writes through the pointer
    /// handed out by `as_ptr`, behind the compiler's back.
    pub fn calls(&self) -> u32 {
        read_volatile(&self.calls)
    }

    /// Status at the last call.
    pub fn status(&self) -> ucs_status_t {
        read_volatile(&self.last_status)
    }

    /// The remaining count.
    pub fn count(&self) -> i32 {
        read_volatile(&self.comp.count)
    }
}
