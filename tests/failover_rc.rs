//! rc_mlx5 failover end to end, in one process over four soft devices: a
//! sender with two rails (mlx5_0 → mlx5_1, mlx5_2 → mlx5_3), a stream of
//! mixed operations on rail 0 with failover enabled, rail 0's cable pulled
//! (`uct_soft_hca_link_set`) mid-stream, the TX token of the sender's ep
//! turned into an RX token by the receiving iface, purge with every
//! undelivered op replayed on rail 1 from inside the callback, and the rest
//! of the stream posted on rail 1. The target then checks every AM sequence
//! number exactly once, every put's bytes, the atomic counter exact, every
//! get's data, and the completions: each called once, no error before the
//! purge, the iface error handler called once.

mod failover_rc_common;
mod rc_common;

use std::collections::HashMap;
use std::ffi::{c_uint, c_void, CStr};
use std::ptr::null_mut;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use failover_rc_common::*;
use rc_common::uct_safe;
use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;

const AM_ID: u8 = 1;
const SLOT: usize = 64;
const GET_LEN: usize = 32;
const OPS: usize = 320;
/// Op kinds in the stream: AM short/bcopy/zcopy, put short/bcopy/zcopy,
/// get bcopy, atomic post, atomic fetch, flush.
const KINDS: usize = 10;

/// AM sequence numbers received on either rail, with their counts.
static RECEIVED: Mutex<Option<HashMap<u64, u32>>> = Mutex::new(None);
/// Error handler calls: (ep, status).
static ERRORS: Mutex<Vec<(usize, ucs_status_t)>> = Mutex::new(Vec::new());

unsafe extern "C" fn on_am(
    _: *mut c_void,
    data: *mut c_void,
    length: usize,
    _: c_uint,
) -> ucs_status_t {
    assert!(length >= 8, "AM of {length} bytes");
    // SAFETY: data holds length >= 8 bytes.
    let seq = unsafe { (data as *const u64).read_unaligned() };
    *RECEIVED
        .lock()
        .unwrap()
        .get_or_insert_with(HashMap::new)
        .entry(seq)
        .or_default() += 1;
    UCS_OK
}

unsafe extern "C" fn on_error(_: *mut c_void, ep: uct_ep_h, status: ucs_status_t) -> ucs_status_t {
    ERRORS.lock().unwrap().push((ep as usize, status));
    UCS_OK
}

/// Copies a READ's data into the `[u8; GET_LEN]` `arg` points at.
unsafe extern "C" fn unpack_get(arg: *mut c_void, data: *const c_void, length: usize) {
    // SAFETY: arg is a live [u8; GET_LEN]; data holds length bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(data.cast::<u8>(), arg.cast::<u8>(), length.min(GET_LEN))
    };
}

fn put_pattern(op: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (op * 7 + i * 13 + 1) as u8).collect()
}

fn get_source_byte(offset: usize) -> u8 {
    (offset * 31 + 5) as u8
}

fn progress(sides: &[&Side]) {
    for side in sides {
        side.progress();
    }
}

/// A bcopy's packed length as the status of the post.
fn bcopy_status(packed: isize) -> ucs_status_t {
    if packed >= 0 {
        UCS_OK
    } else {
        packed as ucs_status_t
    }
}

/// Send bounce buffers in use and free send-CQ credits of an rc iface.
fn send_resources(iface: uct_iface_h) -> (usize, u32) {
    // SAFETY: an open rc_mlx5 iface of this library is an RcIface; nothing
    // else runs on it while the test reads.
    let rc = unsafe { &*(iface as *const uct::rc::iface::RcIface) };
    let stats = rc.stats();
    (stats.tx_buffers_in_use, stats.tx_credits)
}

/// Everything the stream and the replay need.
struct Rig {
    s0: Side,
    s1: Side,
    r0: Side,
    r1: Side,
    ep_s0: uct_ep_h,
    ep_s1: uct_ep_h,
    ep_r0: uct_ep_h,
    ep_r1: uct_ep_h,
    /// Target memory: put slots, the GET source, the atomic counter.
    target: Vec<u8>,
    rkey0: uct_rkey_t,
    rkey1: uct_rkey_t,
    /// Sender memory for zcopy sources, registered on both sender mds.
    source: Vec<u8>,
    memh_s0: uct_mem_h,
    memh_s1: uct_mem_h,
    target_memh: [uct_mem_h; 2],
    /// GET destinations, one per op.
    gets: Vec<[u8; GET_LEN]>,
    /// bcopy payloads.
    bcopy: Vec<Vec<u8>>,
    /// zcopy iovs and AM zcopy headers, kept until completion.
    iovs: Vec<[uct_iov_t; 1]>,
    headers: Vec<[u8; 8]>,
    /// One completion per op that takes one (by op index).
    comps: Vec<Option<Box<CountingCompletion>>>,
    /// Fetch results.
    results: Vec<u64>,
}

fn target_len() -> usize {
    OPS * SLOT + OPS * GET_LEN + 8
}

fn counter_offset() -> usize {
    OPS * SLOT + OPS * GET_LEN
}

fn get_offset(op: usize) -> usize {
    OPS * SLOT + op * GET_LEN
}

impl Rig {
    fn open() -> Rig {
        rc_common::setup();
        std::env::set_var(
            "UCX_SOFT_HCA_DEVICES",
            "mlx5_0@127.0.0.1,mlx5_1@127.0.0.2,mlx5_2@127.0.0.3,mlx5_3@127.0.0.4",
        );
        let mut params = iface_params();
        params.field_mask |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER;
        params.err_handler = Some(on_error);
        let settings: [(&CStr, &CStr); 2] = [(c"RC_TIMEOUT", c"1ms"), (c"RC_RETRY_COUNT", c"2")];
        let s0 = Side::open_with(c"mlx5_0", c"mlx5_0:1", Some(params), &settings);
        // Rail 1 keeps the default timeout: the test progresses it only
        // now and then while the purge replays.
        let s1 = Side::open_with(c"mlx5_2", c"mlx5_2:1", Some(params), &[]);
        let r0 = Side::open_with(c"mlx5_1", c"mlx5_1:1", Some(params), &settings);
        let r1 = Side::open_with(c"mlx5_3", c"mlx5_3:1", Some(params), &[]);
        for side in [&r0, &r1] {
            // The handler needs no argument.
            let status = set_am_handler(side.iface, AM_ID, Some(on_am), null_mut(), 0);
            assert_eq!(status, UCS_OK);
        }
        let (ep_s0, ep_r0) = connect_eps(&s0, &r0);
        let (ep_s1, ep_r1) = connect_eps(&s1, &r1);
        let mut target = vec![0u8; target_len()];
        for op in 0..OPS {
            for i in 0..GET_LEN {
                target[get_offset(op) + i] = get_source_byte(get_offset(op) + i);
            }
        }
        let (target_memh0, rkey0) = r0.register(target.as_mut_ptr(), target.len());
        let (target_memh1, rkey1) = r1.register(target.as_mut_ptr(), target.len());
        let mut source = vec![0u8; OPS * SLOT];
        for op in 0..OPS {
            source[op * SLOT..(op + 1) * SLOT].copy_from_slice(&put_pattern(op, SLOT));
        }
        let (memh_s0, _) = s0.register(source.as_mut_ptr(), source.len());
        let (memh_s1, _) = s1.register(source.as_mut_ptr(), source.len());
        Rig {
            s0,
            s1,
            r0,
            r1,
            ep_s0,
            ep_s1,
            ep_r0,
            ep_r1,
            target,
            rkey0,
            rkey1,
            source,
            memh_s0,
            memh_s1,
            target_memh: [target_memh0, target_memh1],
            gets: vec![[0u8; GET_LEN]; OPS],
            bcopy: (0..OPS).map(|_| Vec::new()).collect(),
            iovs: vec![[iov_entry(null_mut::<u8>(), 0, null_mut())]; OPS],
            headers: vec![[0; 8]; OPS],
            comps: (0..OPS).map(|_| None).collect(),
            results: vec![u64::MAX; OPS],
        }
    }

    fn progress_all(&self) {
        progress(&[&self.s0, &self.s1, &self.r0, &self.r1]);
    }

    /// Progresses every side until `done`; fails with `what` after 30 s.
    fn progress_until(&self, what: &str, mut done: impl FnMut() -> bool) {
        let waited = Instant::now();
        while !done() {
            self.progress_all();
            assert!(waited.elapsed() < Duration::from_secs(30), "{what}");
        }
    }

    fn target_addr(&self, offset: usize) -> u64 {
        self.target.as_ptr() as u64 + offset as u64
    }

    /// Posts op `op` on `ep` (rail 0 or 1); returns the status of the post.
    fn post(&mut self, op: usize, rail: usize) -> ucs_status_t {
        let (ep, rkey, memh) = if rail == 0 {
            (self.ep_s0, self.rkey0, self.memh_s0)
        } else {
            (self.ep_s1, self.rkey1, self.memh_s1)
        };
        let seq = op as u64;
        let slot_addr = self.target_addr(op * SLOT);
        let counter = self.target_addr(counter_offset());
        if self.comps[op].is_none() {
            self.comps[op] = Some(CountingCompletion::new(1));
        }
        let comp = self.comps[op].as_mut().map_or(null_mut(), |c| c.as_ptr());
        // Every buffer named lives in the rig until the op completes (the
        // rig outlives the stream).
        let status = match op % KINDS {
            0 => am_short(ep, AM_ID, seq, &[op as u8; 4]),
            1 => {
                let mut data = seq.to_ne_bytes().to_vec();
                data.extend_from_slice(&[0xab; 24]);
                self.bcopy[op] = data;
                bcopy_status(am_bcopy(ep, AM_ID, &self.bcopy[op], 0))
            }
            2 => {
                self.headers[op] = seq.to_ne_bytes();
                let source = self.source[op * SLOT..].as_mut_ptr();
                self.iovs[op][0] = iov_entry(source, 16, memh);
                am_zcopy(ep, AM_ID, &self.headers[op], &self.iovs[op], 0, comp)
            }
            3 => put_short(ep, &put_pattern(op, 16), slot_addr, rkey),
            4 => {
                self.bcopy[op] = put_pattern(op, SLOT);
                bcopy_status(put_bcopy(ep, &self.bcopy[op], slot_addr, rkey))
            }
            5 => {
                let source = self.source[op * SLOT..].as_mut_ptr();
                self.iovs[op][0] = iov_entry(source, SLOT, memh);
                put_zcopy(ep, &self.iovs[op], slot_addr, rkey, comp)
            }
            6 => get_bcopy(
                ep,
                Some(unpack_get),
                self.gets[op].as_mut_ptr().cast(),
                GET_LEN,
                self.target_addr(get_offset(op)),
                rkey,
                comp,
            ),
            7 => atomic64_post(ep, UCT_ATOMIC_OP_ADD, 1, counter, rkey),
            8 => atomic64_fetch(
                ep,
                UCT_ATOMIC_OP_ADD,
                1,
                &mut self.results[op],
                counter,
                rkey,
                comp,
            ),
            _ => ep_flush(ep, 0, comp),
        };
        if status == UCS_OK {
            // Ops that took no completion (or finished at once) count as
            // completed: drop their counter so the checks skip them.
            if !matches!(op % KINDS, 2 | 5 | 6 | 8 | 9) {
                self.comps[op] = None;
            } else if let Some(c) = self.comps[op].as_mut() {
                // Completed at once: mark as one call with OK.
                c.calls = 1;
            }
        }
        status
    }

    /// Posts op `op` on rail 1, progressing rail 1 while it has no room.
    fn post_rail1(&mut self, op: usize) {
        let start = Instant::now();
        loop {
            let status = self.post(op, 1);
            if status == UCS_OK || status == UCS_INPROGRESS {
                return;
            }
            assert_eq!(status, UCS_ERR_NO_RESOURCE, "rail 1 post of op {op}");
            assert!(start.elapsed() < Duration::from_secs(20));
            progress(&[&self.s1, &self.r1]);
        }
    }
}

/// The purge callback's state.
struct Replay {
    ep: uct_ep_h,
    rkeys: HashMap<uct_rkey_t, uct_rkey_t>,
    memhs: HashMap<usize, uct_mem_h>,
    s1: *const Side,
    r1: *const Side,
    reported: Vec<uct_ep_operation_t>,
    problems: Vec<String>,
}

impl Replay {
    fn rkey(&mut self, rkey: uct_rkey_t) -> uct_rkey_t {
        match self.rkeys.get(&rkey) {
            Some(&mapped) => mapped,
            None => {
                self.problems
                    .push(format!("unknown rkey 0x{rkey:x} in op_info"));
                rkey
            }
        }
    }

    fn iov(&mut self, zcopy: uct_ep_op_info_zcopy) -> Vec<uct_iov_t> {
        zcopy_iov(&zcopy)
            .iter()
            .map(|entry| {
                let memh = match self.memhs.get(&(entry.memh as usize)) {
                    Some(&memh) => memh,
                    None => {
                        self.problems.push("unknown memh in op_info".to_string());
                        entry.memh
                    }
                };
                uct_iov_t { memh, ..*entry }
            })
            .collect()
    }

    /// Retries `post` while rail 1 has no room.
    fn retry(&mut self, what: &str, mut post: impl FnMut() -> ucs_status_t) {
        let start = Instant::now();
        loop {
            let status = post();
            if status >= 0 || status == UCS_INPROGRESS {
                return;
            }
            if status != UCS_ERR_NO_RESOURCE || start.elapsed() > Duration::from_secs(20) {
                self.problems
                    .push(format!("replay of {what}: status {status}"));
                return;
            }
            // SAFETY: the sides outlive the purge.
            unsafe { progress(&[&*self.s1, &*self.r1]) };
        }
    }
}

unsafe extern "C" fn replay_op(info: *const uct_ep_op_info_t, arg: *mut c_void) {
    // SAFETY: a valid op_info during the call; arg is the test's Replay.
    let (info, replay) = unsafe { (&*info, &mut *(arg as *mut Replay)) };
    replay.reported.push(info.operation);
    let ep = replay.ep;
    let comp = info.comp;
    // Pointers in the details are valid during the callback.
    match (info.operation, OpDetail::of(info)) {
        (UCT_EP_OP_AM_SHORT, OpDetail::AmShort { am, header, data }) => {
            replay.retry("am_short", || {
                am_short(ep, am.am_id, header, data_bytes(&data))
            });
        }
        (UCT_EP_OP_AM_BCOPY, OpDetail::AmBcopy { am, data }) => {
            replay.retry("am_bcopy", || {
                bcopy_status(am_bcopy(ep, am.am_id, data_bytes(&data), am.flags))
            });
        }
        (UCT_EP_OP_AM_ZCOPY, OpDetail::AmZcopy { am, header, iov }) => {
            let iov = replay.iov(iov);
            replay.retry("am_zcopy", || {
                am_zcopy(ep, am.am_id, header_bytes(&header), &iov, am.flags, comp)
            });
        }
        (UCT_EP_OP_PUT_SHORT, OpDetail::RmaData { rma, data }) => {
            let rkey = replay.rkey(rma.rkey);
            replay.retry("put_short", || {
                put_short(ep, data_bytes(&data), rma.remote_addr, rkey)
            });
        }
        (UCT_EP_OP_PUT_BCOPY, OpDetail::RmaData { rma, data }) => {
            let rkey = replay.rkey(rma.rkey);
            replay.retry("put_bcopy", || {
                bcopy_status(put_bcopy(ep, data_bytes(&data), rma.remote_addr, rkey))
            });
        }
        (UCT_EP_OP_PUT_ZCOPY, OpDetail::RmaZcopy { rma, iov }) => {
            let rkey = replay.rkey(rma.rkey);
            let iov = replay.iov(iov);
            replay.retry("put_zcopy", || {
                put_zcopy(ep, &iov, rma.remote_addr, rkey, comp)
            });
        }
        (UCT_EP_OP_GET_BCOPY, OpDetail::GetBcopy { rma, unpack }) => {
            let rkey = replay.rkey(rma.rkey);
            replay.retry("get_bcopy", || {
                get_bcopy(
                    ep,
                    unpack.unpack_cb,
                    unpack.arg,
                    unpack.length,
                    rma.remote_addr,
                    rkey,
                    comp,
                )
            });
        }
        (UCT_EP_OP_ATOMIC_POST, OpDetail::Atomic(atomic)) => {
            let rkey = replay.rkey(atomic.rkey);
            if atomic.size != 8 {
                replay.problems.push(format!("atomic size {}", atomic.size));
            }
            replay.retry("atomic_post", || {
                atomic64_post(ep, atomic.op, atomic.value, atomic.remote_addr, rkey)
            });
        }
        (UCT_EP_OP_ATOMIC_FETCH, OpDetail::Atomic(atomic)) => {
            let rkey = replay.rkey(atomic.rkey);
            if atomic.op == UCT_ATOMIC_OP_CSWAP {
                replay
                    .problems
                    .push("cswap reported, none posted".to_string());
            }
            // SAFETY: the result is the op's 8-byte slot in the rig, alive
            // and not otherwise borrowed until the fetch completes.
            let result = unsafe { &mut *atomic.result.cast::<u64>() };
            replay.retry("atomic_fetch", || {
                atomic64_fetch(
                    ep,
                    atomic.op,
                    atomic.value,
                    result,
                    atomic.remote_addr,
                    rkey,
                    comp,
                )
            });
        }
        (UCT_EP_OP_FLUSH, OpDetail::Flush(flush)) => {
            replay.retry("flush", || ep_flush(ep, flush.flags, comp));
        }
        (other, _) => replay
            .problems
            .push(format!("unexpected operation {other}")),
    }
}

/// One trial: posts `OPS` ops with `loss` on rail 0's receiving device,
/// pulls `cut_device`'s cable (a rail-0 device) after `cut_after` of them,
/// fails over to rail 1, and checks the target.
fn trial(cut_after: usize, cut_device: &CStr, loss: f64) {
    // Trials share the devices' fault settings and the statics: one at a
    // time.
    static SERIAL: Mutex<()> = Mutex::new(());
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    *RECEIVED.lock().unwrap() = Some(HashMap::new());
    ERRORS.lock().unwrap().clear();
    let mut rig = Rig::open();
    let (_, tx_len, rx_len) = token_caps(rig.s0.iface);
    let idle = send_resources(rig.s0.iface);
    assert_eq!(idle.0, 0);
    assert_eq!(failover_enable(rig.ep_s0), UCS_OK);
    assert_eq!(loss_set(c"mlx5_1", loss), UCS_OK);

    // The stream on rail 0 until the ep fails.
    let mut posted_on_rail0 = 0;
    let start = Instant::now();
    'stream: while posted_on_rail0 < OPS {
        if posted_on_rail0 == cut_after {
            assert_eq!(link_set(cut_device, false), UCS_OK);
            assert_eq!(loss_set(c"mlx5_1", 0.0), UCS_OK);
        }
        loop {
            let status = rig.post(posted_on_rail0, 0);
            if status == UCS_OK || status == UCS_INPROGRESS {
                posted_on_rail0 += 1;
                break;
            }
            if status != UCS_ERR_NO_RESOURCE {
                // The ep failed: the rest goes to rail 1. Under loss with
                // a 1 ms timeout and 2 retries it may fail before the cut:
                // an equally valid failover.
                if posted_on_rail0 < cut_after {
                    println!("rail 0 failed before the cut ({status}) after {posted_on_rail0} ops");
                }
                break 'stream;
            }
            rig.progress_all();
            assert!(start.elapsed() < Duration::from_secs(30), "stream stuck");
        }
        if posted_on_rail0 % 16 == 0 {
            rig.progress_all();
        }
    }
    // Wait for the failure (the cable is out; retries run out).
    if cut_after >= posted_on_rail0 {
        assert_eq!(link_set(cut_device, false), UCS_OK);
    }
    let ep_s0 = rig.ep_s0 as usize;
    rig.progress_until("no error reported", || {
        ERRORS.lock().unwrap().iter().any(|&(ep, _)| ep == ep_s0)
    });
    // Let in-flight packets settle at the receiver.
    for _ in 0..200 {
        rig.progress_all();
    }
    let errors = ERRORS.lock().unwrap().clone();
    assert_eq!(errors.len(), 1, "error handler calls: {errors:?}");
    // No completion with an error before the purge.
    for (op, comp) in rig.comps.iter().enumerate() {
        if let Some(comp) = comp {
            if comp.calls() > 0 {
                assert_eq!(
                    comp.status(),
                    UCS_OK,
                    "op {op} completed with an error before purge"
                );
            }
        }
    }

    // Token exchange: TX token from the sender's ep, RX token from the
    // receiving iface.
    let held = send_resources(rig.s0.iface);
    assert!(
        held.1 < idle.1,
        "the failed ep holds its ops (and their credits)"
    );
    let tx = tx_token(rig.ep_s0, tx_len).expect("TX token");
    let rx = rx_token(rig.r0.iface, &tx, rx_len).expect("RX token");

    let mut replay = Box::new(Replay {
        ep: rig.ep_s1,
        rkeys: HashMap::from([(rig.rkey0, rig.rkey1)]),
        memhs: HashMap::from([(rig.memh_s0 as usize, rig.memh_s1)]),
        s1: &rig.s1,
        r1: &rig.r1,
        reported: Vec::new(),
        problems: Vec::new(),
    });
    let status = purge(
        rig.ep_s0,
        &rx,
        replay_op,
        &mut *replay as *mut Replay as *mut c_void,
    );
    assert_eq!(status, UCS_OK);
    assert!(replay.problems.is_empty(), "{:?}", replay.problems);
    let after_purge = send_resources(rig.s0.iface);
    // The purged ep can go at once.
    ep_destroy(rig.ep_s0);
    assert_eq!(
        after_purge, idle,
        "bounce buffers in use and CQ credits after purge"
    );

    // The rest of the stream on rail 1.
    for op in posted_on_rail0..OPS {
        rig.post_rail1(op);
    }
    // Everything completes.
    rig.progress_until("rail 1 never drained", || {
        let status = ep_flush(rig.ep_s1, 0, null_mut());
        assert!(
            status == UCS_OK || status == UCS_INPROGRESS || status == UCS_ERR_NO_RESOURCE,
            "flush of rail 1: {status}"
        );
        status == UCS_OK && rig.comps.iter().flatten().all(|c| c.calls() >= 1)
    });
    for _ in 0..100 {
        rig.progress_all();
    }

    // The target's view.
    let received = RECEIVED.lock().unwrap().clone().unwrap_or_default();
    let mut lost_fetches = 0;
    let mut atomics = 0u64;
    let mut fetched = Vec::new();
    for op in 0..OPS {
        let slot = &rig.target[op * SLOT..(op + 1) * SLOT];
        match op % KINDS {
            0..=2 => assert_eq!(received.get(&(op as u64)), Some(&1), "AM {op}"),
            3 => assert_eq!(slot[..16], put_pattern(op, 16)[..], "put_short {op}"),
            4 | 5 => assert_eq!(slot, &put_pattern(op, SLOT)[..], "put {op}"),
            6 => {
                let expected: Vec<u8> = (0..GET_LEN)
                    .map(|i| get_source_byte(get_offset(op) + i))
                    .collect();
                assert_eq!(rig.gets[op][..], expected[..], "get {op}");
            }
            7 | 8 => atomics += 1,
            _ => {}
        }
        if let Some(comp) = &rig.comps[op] {
            assert_eq!(comp.calls(), 1, "op {op} completions");
            if op % KINDS == 8 || op % KINDS == 9 {
                match comp.status() {
                    UCS_OK if op % KINDS == 8 => fetched.push(rig.results[op]),
                    UCS_OK => {}
                    UCS_ERR_IO_ERROR if op % KINDS == 8 => lost_fetches += 1,
                    UCS_ERR_IO_ERROR if op % KINDS == 9 => {}
                    other => panic!("fetch/flush {op} completed with {other}"),
                }
            } else {
                assert_eq!(comp.status(), UCS_OK, "op {op} status");
            }
        }
    }
    let am_ops = (0..OPS).filter(|op| op % KINDS <= 2).count();
    assert_eq!(received.len(), am_ops, "no stray AMs");
    let counter_bytes = &rig.target[counter_offset()..counter_offset() + 8];
    let counter = u64::from_ne_bytes(counter_bytes.try_into().unwrap());
    assert_eq!(counter, atomics, "atomic counter");
    // Every fetch that returned saw a different old value.
    fetched.sort_unstable();
    let before = fetched.len();
    fetched.dedup();
    assert_eq!(fetched.len(), before, "a fetch-add applied twice");
    assert!(fetched.iter().all(|&v| v < atomics));
    println!(
        "cut {cut_device:?} after {cut_after}, loss {loss}: rail 0 posted {posted_on_rail0}, reported {}, lost fetches {lost_fetches}, \
         AMs {}, counter {counter}",
        replay.reported.len(),
        received.len()
    );

    assert_eq!(link_set(cut_device, true), UCS_OK);
    // The eps, then the registrations, then the ifaces.
    for ep in [rig.ep_s1, rig.ep_r0, rig.ep_r1] {
        ep_destroy(ep);
    }
    mem_dereg(rig.s0.md, rig.memh_s0);
    mem_dereg(rig.s1.md, rig.memh_s1);
    mem_dereg(rig.r0.md, rig.target_memh[0]);
    mem_dereg(rig.r1.md, rig.target_memh[1]);
    let Rig { s0, s1, r0, r1, .. } = rig;
    for side in [s0, s1, r0, r1] {
        side.close();
    }
}

#[test]
fn link_cut_mid_stream_purge_and_replay_on_the_other_rail_is_exactly_once() {
    for cut_after in [OPS / 3, 17, OPS - 5] {
        trial(cut_after, c"mlx5_0", 0.0);
    }
}

#[test]
fn cut_on_the_receiver_side_or_after_loss_is_exactly_once() {
    for (cut_after, device, loss) in [
        (OPS / 2, c"mlx5_1", 0.0),
        (OPS / 4, c"mlx5_0", 0.03),
        (OPS / 2, c"mlx5_1", 0.05),
    ] {
        trial(cut_after, device, loss);
    }
}
