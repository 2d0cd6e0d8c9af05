//! What every input of the API-sequence fuzzing shares, opened once per
//! process: two rc_mlx5 ifaces on the soft devices mlx5_0 and mlx5_1 of
//! this process (short timeouts, a short send queue), their registered
//! memory, the iface callbacks (AM handler, error handler) and what those
//! record, and a watchdog that turns a hang into a failure with a message.
#![allow(dead_code)]

use std::ffi::{c_uint, c_void, CStr};
use std::sync::{Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use uct::abi::*;

use super::calls::Answer;
use crate::rc_common::{iface_params, Side};
use crate::uct_safe::set_am_handler;

/// Bytes of memory per op id, in each region.
pub const SLOT: usize = 4096;
/// Op ids per input (each with a slot in every region).
pub const MAX_OPS: usize = 512;
/// The AM id every AM of the fuzzing uses.
pub const AM_ID: u8 = 5;
/// The soft devices, by side.
pub const DEVICES: [&CStr; 2] = [c"mlx5_0", c"mlx5_1"];
const PORTS: [&CStr; 2] = [c"mlx5_0:1", c"mlx5_1:1"];
/// Iface settings: failures are detected within a few ms (a link cut must
/// not stall an input), a short send queue makes `NO_RESOURCE` and pending
/// requests common, and a 1 KiB path MTU makes the larger ops multi-packet.
const SETTINGS: [(&CStr, &CStr); 4] = [
    (c"RC_TIMEOUT", c"2ms"),
    (c"RC_RETRY_COUNT", c"3"),
    (c"IB_TX_QUEUE_LEN", c"32"),
    (c"IB_PATH_MTU", c"1024"),
];
/// Longest a single input may run before the watchdog calls it a hang.
const HANG_LIMIT: Duration = Duration::from_secs(60);

/// Registered memory written by the device behind Rust's back: only
/// accessed through raw pointers, volatile, when no op uses the bytes.
pub struct Region {
    base: *mut u8,
    pub memh: uct_mem_h,
}

impl Region {
    /// A region registered on `side`'s md, and the rkey a peer uses.
    fn new(side: &Side) -> (Region, uct_rkey_t) {
        let words: &'static mut [u64] =
            Box::leak(vec![0u64; SLOT * MAX_OPS / 8].into_boxed_slice());
        let base: *mut u8 = words.as_mut_ptr().cast();
        let (memh, rkey) = side.register(base, SLOT * MAX_OPS);
        (Region { base, memh }, rkey)
    }

    /// The address of byte `offset` of slot `op`.
    pub fn addr(&self, op: usize, offset: usize) -> *mut u8 {
        assert!(op < MAX_OPS && offset <= SLOT);
        self.base.wrapping_add(op * SLOT + offset)
    }

    /// The op whose slot holds `address`, and the offset in it.
    pub fn slot_of(&self, address: u64) -> Option<(usize, usize)> {
        let offset = (address as usize).checked_sub(self.base as usize)?;
        (offset < SLOT * MAX_OPS).then_some((offset / SLOT, offset % SLOT))
    }

    pub fn read(&self, op: usize, offset: usize, len: usize) -> Vec<u8> {
        let at = self.addr(op, offset);
        assert!(offset + len <= SLOT);
        // SAFETY: inside the leaked region (checked above); bytes no op
        // uses any more (the caller's contract), read volatile since the
        // device wrote them.
        (0..len)
            .map(|i| unsafe { at.add(i).read_volatile() })
            .collect()
    }

    pub fn write(&self, op: usize, offset: usize, bytes: &[u8]) {
        let at = self.addr(op, offset);
        assert!(offset + bytes.len() <= SLOT);
        for (i, byte) in bytes.iter().enumerate() {
            // SAFETY: as in read; no op uses these bytes yet.
            unsafe { at.add(i).write_volatile(*byte) };
        }
    }

    pub fn zero(&self, op: usize) {
        self.write(op, 0, &[0; SLOT]);
    }
}

/// The two ifaces and their memory.
pub struct Rig {
    pub sides: [Side; 2],
    /// Memory on each side that the peer's ops target (puts land here,
    /// gets read here, atomics change it), with the rkey the peer uses.
    pub target: [Region; 2],
    pub rkey: [uct_rkey_t; 2],
    /// Memory on each side for its own ops: zcopy sources, get
    /// destinations.
    pub local: [Region; 2],
}

/// What the iface callbacks saw, taken by the driver between its calls
/// (the callbacks lock it only for a moment; the driver never holds it
/// across a UCT call).
pub struct Events {
    /// AMs received: (receiving side, the message bytes).
    pub arrivals: Vec<(usize, Vec<u8>)>,
    /// Error handler calls: (side, ep, status).
    pub errors: Vec<(usize, uct_ep_h, ucs_status_t)>,
    /// What the error handler answers for an ep (default `UCS_OK`).
    pub answers: Vec<(uct_ep_h, Answer)>,
}

// SAFETY: the ep handles are only compared and handed back to the thread
// that runs the input; nothing is dereferenced from another thread.
unsafe impl Send for Events {}

static EVENTS: Mutex<Events> = Mutex::new(Events {
    arrivals: Vec::new(),
    errors: Vec::new(),
    answers: Vec::new(),
});

pub fn events() -> MutexGuard<'static, Events> {
    EVENTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The side number behind a callback argument.
fn side_of(arg: *mut c_void) -> usize {
    arg as usize
}

unsafe extern "C" fn on_am(
    arg: *mut c_void,
    data: *mut c_void,
    length: usize,
    _flags: c_uint,
) -> ucs_status_t {
    // SAFETY: the iface hands `length` readable bytes for this call.
    let bytes = unsafe { std::slice::from_raw_parts(data as *const u8, length) }.to_vec();
    events().arrivals.push((side_of(arg), bytes));
    UCS_OK
}

unsafe extern "C" fn on_error(
    arg: *mut c_void,
    ep: uct_ep_h,
    status: ucs_status_t,
) -> ucs_status_t {
    let mut events = events();
    events.errors.push((side_of(arg), ep, status));
    let answer = events
        .answers
        .iter()
        .rev()
        .find(|(handle, _)| *handle == ep)
        .map_or(Answer::Ok, |(_, answer)| *answer);
    match answer {
        Answer::Ok => UCS_OK,
        Answer::InProgress => UCS_INPROGRESS,
        Answer::Status => status,
    }
}

/// The rig, opened on first use; the guard serialises inputs (tests of one
/// binary run on several threads).
pub fn rig() -> MutexGuard<'static, Option<Rig>> {
    static RIG: Mutex<Option<Rig>> = Mutex::new(None);
    let mut guard = RIG.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if guard.is_none() {
        *guard = Some(Rig::open());
        start_watchdog();
    }
    guard
}

// SAFETY: the rig's handles and memory are used by one thread at a time
// (the mutex of `rig()`); the devices' own threads never touch the Rust
// values, only the registered memory, through raw pointers.
unsafe impl Send for Rig {}

impl Rig {
    fn open() -> Rig {
        // The library logs every destroyed-with-ops and purge warning the
        // fuzzing provokes on purpose; errors still show.
        if std::env::var_os("UCX_LOG_LEVEL").is_none() {
            std::env::set_var("UCX_LOG_LEVEL", "error");
        }
        let sides = [0, 1].map(|side| {
            let mut params = iface_params();
            params.field_mask |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER
                | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG
                | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
            params.err_handler = Some(on_error);
            params.err_handler_arg = side as *mut c_void;
            params.err_handler_flags = 0;
            Side::open_with(DEVICES[side], PORTS[side], Some(params), &SETTINGS)
        });
        for (side, iface) in sides.iter().enumerate() {
            // The handler takes the side number as its argument.
            let status = set_am_handler(iface.iface, AM_ID, Some(on_am), side as *mut c_void, 0);
            assert_eq!(status, UCS_OK);
        }
        let [(target0, rkey0), (target1, rkey1)] = [0, 1].map(|side| Region::new(&sides[side]));
        let local = [0, 1].map(|side| Region::new(&sides[side]).0);
        let (target, rkey) = ([target0, target1], [rkey0, rkey1]);
        Rig {
            sides,
            target,
            rkey,
            local,
        }
    }

    pub fn limits(&self, side: usize) -> &uct_iface_attr_t {
        &self.sides[side].attr
    }

    pub fn progress(&self) -> u32 {
        self.sides[0].progress() + self.sides[1].progress()
    }
}

/// What the input is doing now, and until when it may.
struct Watch {
    deadline: Option<Instant>,
    doing: String,
}

static WATCH: Mutex<Watch> = Mutex::new(Watch {
    deadline: None,
    doing: String::new(),
});

fn watch() -> MutexGuard<'static, Watch> {
    WATCH
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The input starts: it must end within [`HANG_LIMIT`].
pub fn watch_start() {
    watch().deadline = Some(Instant::now() + HANG_LIMIT);
}

/// The input ended.
pub fn watch_stop() {
    watch().deadline = None;
}

/// What the input does now (named if it hangs).
pub fn watch_doing(doing: String) {
    watch().doing = doing;
}

/// A thread that aborts the process, naming the call, when an input runs
/// past its deadline: a hang inside a library call (a synchronous get, a
/// flush) is a failure with a message, not a stuck fuzzer.
fn start_watchdog() {
    static START: Once = Once::new();
    START.call_once(|| {
        std::thread::spawn(|| loop {
            std::thread::sleep(Duration::from_millis(200));
            let watch = watch();
            if watch
                .deadline
                .is_some_and(|deadline| Instant::now() > deadline)
            {
                eprintln!(
                    "api_seq: HANG: the input ran over {HANG_LIMIT:?}, in: {}",
                    watch.doing
                );
                std::process::abort();
            }
        });
    });
}
