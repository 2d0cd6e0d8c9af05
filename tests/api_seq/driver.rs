//! Runs a decoded call sequence ([`super::calls`]) through the C API on two
//! connected rc_mlx5 eps of the [`super::rig`], keeping a model of what
//! each call promised, and checks what UCT promises its callers:
//!
//! - every completion is called at most once; an op that returned `UCS_OK`
//!   or was refused never calls it, and nothing is called after its ep was
//!   destroyed;
//! - every posted op with a completion is completed or reported by
//!   `uct_ep_outstanding_purge`, exactly once, never both, never lost (an op
//!   held for purge whose ep is destroyed unpurged is released without a
//!   call, as specified);
//! - what arrived is what was posted: AM bytes, put bytes, atomics applied
//!   once, gets with the source's bytes; a refused post has no effect, and
//!   nothing else in the registered memory changes;
//! - reported ⇒ not delivered; completed `UCS_OK` or covered by a
//!   successful flush ⇒ delivered; on an ep whose ops were held from the
//!   failure on and then purged, every op delivered XOR reported;
//! - a bad token, stale token or bad parameters never report an op; the
//!   error handler runs at most once per failure, never for an ep taken
//!   over by `uct_ep_invalidate(NO_COMPLETIONS)`, never for a destroyed ep;
//!   pending requests run or are purged, once; the send resources all come
//!   back once the eps are gone;
//! - nothing hangs: every loop is bounded, and the rig's watchdog aborts
//!   with the current call named when a library call does not return.
#![allow(dead_code)]

use std::collections::HashMap;
use std::ffi::{c_uint, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use uct::abi::*;

use super::calls::*;
use super::rig::*;
use crate::failover_rc_common::{
    data_bytes, header_bytes, rx_token, token_caps, tx_token, zcopy_iov, OpDetail,
};
use crate::rc_common::CountingCompletion;
use crate::uct_safe::*;

/// How long draining a pair may take before it counts as a hang.
const DRAIN_LIMIT: Duration = Duration::from_secs(20);

/// What one input did, for the seeded test's totals.
#[derive(Clone, Copy, Debug, Default)]
pub struct Summary {
    pub calls: usize,
    pub ops: usize,
    pub posted: usize,
    pub completed_ok: usize,
    pub completed_err: usize,
    pub reported: usize,
    pub delivered: usize,
    pub purges_ok: usize,
    pub handler_calls: usize,
    pub failed_epochs: usize,
    pub abandoned: usize,
}

/// Runs `calls` on a fresh pair of eps and checks everything; `Err` names
/// the first broken promise and the calls that led to it.
pub fn run(calls: &[Call]) -> Result<Summary, String> {
    let guard = rig();
    let rig = guard.as_ref().expect("rig opened");
    watch_start();
    let mut input = Input::new(rig);
    let result = input.run(calls);
    watch_stop();
    result.map_err(|message| {
        format!(
            "{message}\n  calls so far:\n    {}",
            input.trace.join("\n    ")
        )
    })
}

// ------------------------------------------------------------- patterns --

/// Byte `i` of the data of the op tagged `tag` (never 0, so that a byte
/// the device did not write tells).
fn pattern_byte(tag: u64, i: usize) -> u8 {
    let seed = (tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize;
    ((seed + i * 7) % 255 + 1) as u8
}

fn pattern(tag: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| pattern_byte(tag, i)).collect()
}

/// An AM's bytes as the receiver sees them: the tag, then the pattern.
fn am_message(tag: u64, payload: usize) -> Vec<u8> {
    let mut message = tag.to_ne_bytes().to_vec();
    message.extend(pattern(tag, payload));
    message
}

/// Inputs run in this process so far (the high half of every tag, so that
/// an AM of an earlier input is recognised).
static GENERATION: AtomicU32 = AtomicU32::new(0);

// ------------------------------------------------------------ the model --

/// What an op is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Data(Op),
    Flush { cancel: bool },
}

/// An atomic's operands and the word before and after it applies.
#[derive(Clone, Copy, Debug)]
struct AtomicPlan {
    bits64: bool,
    op: uct_atomic_op_t,
    value: u64,
    compare: u64,
    initial: u64,
    after: u64,
}

impl AtomicPlan {
    fn new(op: Op, tag: u64) -> AtomicPlan {
        let (bits64, kind) = match op {
            Op::AtomicPost { bits64, op } | Op::AtomicFetch { bits64, op } => (bits64, Some(op)),
            Op::Cswap { bits64, .. } => (bits64, None),
            _ => unreachable!("not an atomic"),
        };
        let mask = if bits64 { u64::MAX } else { u32::MAX as u64 };
        let mix = tag.wrapping_mul(0x2545_f491_4f6c_dd1d);
        // Both with set and clear bits, so AND and OR change something.
        let initial = (mix & mask & !1) | 2;
        let flip = 1u64 << (mix % if bits64 { 64 } else { 32 });
        let (op, value, compare, after) = match kind {
            Some(AtomicOp::Add) => {
                let value = (mix >> 7 | 1) & mask;
                (
                    UCT_ATOMIC_OP_ADD,
                    value,
                    0,
                    initial.wrapping_add(value) & mask,
                )
            }
            // Clears bit 1 (set in initial).
            Some(AtomicOp::And) => (UCT_ATOMIC_OP_AND, mask & !2, 0, initial & !2),
            // Sets bit 0 (clear in initial).
            Some(AtomicOp::Or) => (UCT_ATOMIC_OP_OR, 1, 0, initial | 1),
            Some(AtomicOp::Xor) => (UCT_ATOMIC_OP_XOR, flip, 0, initial ^ flip),
            Some(AtomicOp::Swap) => (UCT_ATOMIC_OP_SWAP, !initial & mask, 0, !initial & mask),
            None => {
                let matches = matches!(
                    op,
                    Op::Cswap {
                        compare_matches: true,
                        ..
                    }
                );
                let swap = !initial & mask;
                let compare = if matches { initial } else { initial ^ flip };
                let after = if matches { swap } else { initial };
                (UCT_ATOMIC_OP_CSWAP, swap, compare, after)
            }
        };
        AtomicPlan {
            bits64,
            op,
            value,
            compare,
            initial,
            after,
        }
    }

    /// Whether applying it is visible (a cswap that does not match is not).
    fn observable(&self) -> bool {
        self.after != self.initial
    }
}

/// Data a get bcopy's unpack callback received.
struct Unpacked {
    calls: u32,
    data: Vec<u8>,
}

unsafe extern "C" fn unpack_into(arg: *mut c_void, data: *const c_void, length: usize) {
    // SAFETY: `arg` is the op's leaked Unpacked, alive for the input; the
    // device hands `length` readable bytes for this call.
    unsafe {
        let unpacked = &mut *(arg as *mut Unpacked);
        unpacked.calls += 1;
        unpacked.data = std::slice::from_raw_parts(data as *const u8, length).to_vec();
    }
}

/// Copies the `&[u8]` behind `arg` (pack callback of the bcopy posts).
unsafe extern "C" fn pack_bytes(dest: *mut c_void, arg: *mut c_void) -> usize {
    // SAFETY: `arg` is a live `&[u8]` during the post; `dest` has room for
    // the iface's bcopy limit, which the driver keeps to.
    unsafe {
        let bytes = &*(arg as *const &[u8]);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), dest.cast(), bytes.len());
        bytes.len()
    }
}

/// One op id of the input: a data op or a flush.
struct OpRec {
    id: usize,
    side: usize,
    epoch: usize,
    kind: Kind,
    tag: u64,
    len: usize,
    /// The post returned `UCS_OK` or `UCS_INPROGRESS` (or, for a bcopy, a
    /// length).
    posted: bool,
    status: ucs_status_t,
    comp: Option<Box<CountingCompletion>>,
    reported: u32,
    atomic: Option<AtomicPlan>,
    /// A fetch's result word (a sentinel until written).
    result: Box<u64>,
    unpacked: *mut Unpacked,
    /// A zcopy's iov, alive until the input ends.
    iov: Vec<uct_iov_t>,
    /// Completion calls when its ep was destroyed (none may follow).
    calls_at_destroy: Option<u32>,
    /// Posted by a pending request's callback.
    from_pending: bool,
}

const RESULT_SENTINEL: u64 = 0x5eed_5eed_5eed_5eed;

impl OpRec {
    fn calls(&self) -> u32 {
        self.comp.as_ref().map_or(0, |c| c.calls())
    }

    fn comp_status(&self) -> Option<ucs_status_t> {
        self.comp
            .as_ref()
            .filter(|c| c.calls() > 0)
            .map(|c| c.status())
    }

    fn comp_ptr(&mut self) -> *mut uct_completion_t {
        self.comp.as_mut().map_or(null_mut(), |c| c.as_ptr())
    }

    /// Whether its completion is what tells the caller it ended.
    fn awaits_completion(&self) -> bool {
        self.posted && self.status == UCS_INPROGRESS && self.comp.is_some()
    }
}

/// A connection of one ep: from `uct_ep_connect_to_ep` to the next one
/// or the ep's destruction.
#[derive(Default)]
struct Epoch {
    ep: usize,
    /// The connection failed (error handler, invalidate, flush cancel).
    failed: bool,
    /// A plain invalidate started the failure; the error handler decides.
    deciding: bool,
    /// Its ops were held from the failure on (none completed with an error):
    /// after a purge every op is delivered XOR reported.
    exact: bool,
    /// Something may have held (some of) its ops for purge.
    may_hold: bool,
    /// `uct_ep_invalidate` took the ops over: no handler call may follow.
    taken_over: bool,
    /// A purge returned `UCS_OK` after the failure.
    purged: bool,
    handler_calls: u32,
    /// Ops with a smaller id were covered by a successful flush.
    flushed_before: usize,
}

impl Epoch {
    /// Ops of it may be held, and no purge has taken them yet (destroying
    /// the ep then releases them without a call).
    fn may_still_hold(&self) -> bool {
        self.may_hold && !self.purged
    }
}

/// An ep made in this input.
struct EpRec {
    handle: uct_ep_h,
    side: usize,
    destroyed: bool,
    /// `uct_ep_connect_to_ep` succeeded (once: a purge or failure does not
    /// undo it for the model).
    connected: bool,
    failover_enabled: bool,
    answer: Answer,
    epoch: usize,
}

/// An RX token derived in this input, and the connection it names.
struct SavedToken {
    bytes: Vec<u8>,
    ep: usize,
    epoch: usize,
}

/// A pending request: the caller's struct around `uct_pending_req_t`.
#[repr(C)]
struct PendingReq {
    req: uct_pending_req_t,
    ep: uct_ep_h,
    op: usize,
    tag: u64,
    payload: Vec<u8>,
    calls: u32,
    /// Calls after it had finished (posted, gave up, or was purged).
    late_calls: u32,
    /// The status of its post, once it has posted or given up.
    outcome: Option<ucs_status_t>,
    purged: u32,
    /// `uct_ep_pending_add` took it.
    queued: bool,
    /// Calls when its ep was destroyed without purging it.
    calls_at_destroy: Option<u32>,
}

unsafe extern "C" fn pending_run(req: *mut uct_pending_req_t) -> ucs_status_t {
    // SAFETY: `req` is the first field of a leaked PendingReq, alive for
    // the input.
    let pending = unsafe { &mut *(req as *mut PendingReq) };
    pending.calls += 1;
    if pending.outcome.is_some() || pending.purged > 0 {
        pending.late_calls += 1;
        return UCS_OK;
    }
    let status = am_short(pending.ep, AM_ID, pending.tag, &pending.payload);
    if status == UCS_ERR_NO_RESOURCE {
        return status;
    }
    // Posted, or refused for good (the ep failed): done either way.
    pending.outcome = Some(status);
    UCS_OK
}

unsafe extern "C" fn pending_collect(req: *mut uct_pending_req_t, arg: *mut c_void) {
    // SAFETY: `arg` is the driver's Vec for this purge call.
    unsafe { (*(arg as *mut Vec<usize>)).push(req as usize) };
}

/// What purge reported of one op, copied during its callback.
#[derive(Debug)]
struct Reported {
    operation: uct_ep_operation_t,
    comp: usize,
    /// AM: the id and the message as it would go out again.
    am: Option<(u8, Vec<u8>)>,
    /// RMA and atomics: the remote address and key.
    remote: Option<(u64, uct_rkey_t)>,
    /// Put short/bcopy: the data.
    data: Option<Vec<u8>>,
    atomic: Option<uct_ep_op_info_atomic>,
}

impl Reported {
    fn of(info: &uct_ep_op_info_t) -> Reported {
        let mut reported = Reported {
            operation: info.operation,
            comp: info.comp as usize,
            am: None,
            remote: None,
            data: None,
            atomic: None,
        };
        match OpDetail::of(info) {
            OpDetail::AmShort { am, header, data } => {
                let mut message = header.to_ne_bytes().to_vec();
                message.extend_from_slice(data_bytes(&data));
                reported.am = Some((am.am_id, message));
            }
            OpDetail::AmBcopy { am, data } => {
                reported.am = Some((am.am_id, data_bytes(&data).to_vec()));
            }
            OpDetail::AmZcopy { am, header, iov } => {
                let mut message = header_bytes(&header).to_vec();
                for entry in zcopy_iov(&iov) {
                    // SAFETY: the op's iov, valid during the callback, naming
                    // the driver's registered memory.
                    let bytes = unsafe {
                        std::slice::from_raw_parts(entry.buffer as *const u8, entry.length)
                    };
                    message.extend_from_slice(bytes);
                }
                reported.am = Some((am.am_id, message));
            }
            OpDetail::RmaData { rma, data } => {
                reported.remote = Some((rma.remote_addr, rma.rkey));
                reported.data = Some(data_bytes(&data).to_vec());
            }
            OpDetail::RmaZcopy { rma, .. } | OpDetail::GetBcopy { rma, .. } => {
                reported.remote = Some((rma.remote_addr, rma.rkey));
            }
            OpDetail::Atomic(atomic) => {
                reported.remote = Some((atomic.remote_addr, atomic.rkey));
                reported.atomic = Some(atomic);
            }
            OpDetail::Flush(_) | OpDetail::Other => {}
        }
        reported
    }
}

unsafe extern "C" fn purge_collect(info: *const uct_ep_op_info_t, arg: *mut c_void) {
    // SAFETY: `arg` is the driver's Vec for this purge call; `info` is
    // valid during the call.
    unsafe { (*(arg as *mut Vec<Reported>)).push(Reported::of(&*info)) };
}

/// Whether a bcopy post's answer (a length or a status) took the op.
fn bcopy_status(answer: isize) -> ucs_status_t {
    if answer >= 0 {
        UCS_OK
    } else {
        answer as ucs_status_t
    }
}

/// `lo..=hi` picked by `size` (`lo` when the range is empty).
fn scale(size: u16, lo: usize, hi: usize) -> usize {
    if hi <= lo {
        lo
    } else {
        lo + size as usize % (hi - lo + 1)
    }
}

/// One input's run.
struct Input<'r> {
    rig: &'r Rig,
    generation: u32,
    ops: Vec<OpRec>,
    eps: Vec<EpRec>,
    epochs: Vec<Epoch>,
    /// The ep each side's calls go to (possibly destroyed).
    current: [Option<usize>; 2],
    pending: Vec<*mut PendingReq>,
    tokens: Vec<SavedToken>,
    comp_index: HashMap<usize, usize>,
    trace: Vec<String>,
    summary: Summary,
    /// New pairs made so far (bounded: each costs a drain).
    pairs: usize,
}

/// `Err` with a formatted message.
macro_rules! fail {
    ($($arg:tt)*) => { return Err(format!($($arg)*)) };
}

impl<'r> Input<'r> {
    fn new(rig: &'r Rig) -> Input<'r> {
        Input {
            rig,
            generation: GENERATION.fetch_add(1, Ordering::Relaxed) + 1,
            ops: Vec::new(),
            eps: Vec::new(),
            epochs: Vec::new(),
            current: [None, None],
            pending: Vec::new(),
            tokens: Vec::new(),
            comp_index: HashMap::new(),
            trace: Vec::new(),
            summary: Summary::default(),
            pairs: 0,
        }
    }

    fn run(&mut self, calls: &[Call]) -> Result<Summary, String> {
        {
            let mut events = events();
            if !events.arrivals.is_empty() || !events.errors.is_empty() {
                fail!(
                    "events of an earlier input arrived after it ended: {} AMs, error \
                     handler calls {:?}",
                    events.arrivals.len(),
                    events.errors
                );
            }
            events.answers.clear();
        }
        self.new_pair()?;
        for call in calls {
            self.trace.push(format!("{call:?}"));
            watch_doing(format!("{call:?}"));
            self.summary.calls += 1;
            self.exec(call)?;
            self.absorb()?;
        }
        self.trace.push("(end: drain, purge, destroy)".into());
        watch_doing("the final drain".into());
        self.finish_pair()?;
        self.check_ops()?;
        self.check_resources()?;
        self.cleanup();
        Ok(self.summary)
    }

    // -------------------------------------------------------- bookkeeping --

    /// Adds what happened to the trace line of the current call.
    fn note(&mut self, what: String) {
        match self.trace.last_mut() {
            Some(line) => {
                line.push_str(" → ");
                line.push_str(&what);
            }
            None => self.trace.push(what),
        }
    }

    fn epoch_of(&self, ep: usize) -> &Epoch {
        &self.epochs[self.eps[ep].epoch]
    }

    fn epoch_mut(&mut self, ep: usize) -> &mut Epoch {
        let epoch = self.eps[ep].epoch;
        &mut self.epochs[epoch]
    }

    fn new_epoch(&mut self, ep: usize) {
        self.epochs.push(Epoch {
            ep,
            ..Epoch::default()
        });
        self.eps[ep].epoch = self.epochs.len() - 1;
    }

    /// A new op id on `side`'s current ep, or `None` when the input used
    /// them all.
    fn new_op(&mut self, side: usize, kind: Kind, with_comp: bool) -> Option<usize> {
        let id = self.ops.len();
        if id >= MAX_OPS {
            return None;
        }
        let ep = self.current[side]?;
        let mut comp = with_comp.then(|| CountingCompletion::new(1));
        if let Some(comp) = comp.as_mut() {
            self.comp_index.insert(comp.as_ptr() as usize, id);
        }
        self.ops.push(OpRec {
            id,
            side,
            epoch: self.eps[ep].epoch,
            kind,
            tag: (self.generation as u64) << 32 | id as u64,
            len: 0,
            posted: false,
            status: UCS_ERR_NO_RESOURCE,
            comp,
            reported: 0,
            atomic: None,
            result: Box::new(RESULT_SENTINEL),
            unpacked: null_mut(),
            iov: Vec::new(),
            calls_at_destroy: None,
            from_pending: false,
        });
        self.summary.ops += 1;
        Some(id)
    }

    fn ep_by_handle(&self, handle: uct_ep_h) -> Option<usize> {
        self.eps
            .iter()
            .position(|ep| ep.handle == handle && !ep.destroyed)
    }

    /// Takes what the callbacks recorded since the last call.
    fn absorb(&mut self) -> Result<(), String> {
        let errors = std::mem::take(&mut events().errors);
        for (side, handle, status) in errors {
            self.summary.handler_calls += 1;
            let named = self.ep_by_handle(handle);
            self.note(format!("error handler(ep {named:?}, {status})"));
            let Some(ep) = named else {
                fail!(
                    "the error handler was called ({status}) for ep {handle:p}, which is not live"
                );
            };
            if self.eps[ep].side != side {
                fail!("the error handler of side {side} was called for an ep of the other side");
            }
            let (enabled, answer) = (self.eps[ep].failover_enabled, self.eps[ep].answer);
            let epoch = self.epoch_mut(ep);
            epoch.handler_calls += 1;
            if epoch.handler_calls > 1 {
                fail!("the error handler was called twice for one failure of ep {ep}");
            }
            if epoch.taken_over {
                fail!(
                    "the error handler was called ({status}) for ep {ep} after \
                     uct_ep_invalidate took its ops over"
                );
            }
            let holds = enabled || answer == Answer::InProgress;
            if !epoch.failed || epoch.deciding {
                epoch.exact = holds;
            }
            epoch.may_hold |= holds;
            epoch.failed = true;
            epoch.deciding = false;
        }
        for at in 0..self.pending.len() {
            // SAFETY: a leaked PendingReq of this input; no UCT call runs.
            let pending = unsafe { &*self.pending[at] };
            let op = &mut self.ops[pending.op];
            if let Some(status) = pending.outcome {
                if !op.from_pending {
                    op.from_pending = true;
                    op.status = status;
                    op.posted = status == UCS_OK;
                    self.summary.posted += op.posted as usize;
                }
            }
        }
        Ok(())
    }

    // -------------------------------------------------------------- calls --

    fn exec(&mut self, call: &Call) -> Result<(), String> {
        match *call {
            Call::Post(post) => self.post(post).map(|_| ()),
            Call::Burst { side, count } => {
                for _ in 0..count {
                    let post = Post {
                        side,
                        op: Op::AmShort,
                        size: 0,
                        with_comp: false,
                        iov_parts: 1,
                    };
                    if self.post(post)? != UCS_OK {
                        break;
                    }
                }
                Ok(())
            }
            Call::Flush {
                side,
                cancel,
                with_comp,
            } => self.flush(side, cancel, with_comp),
            Call::IfaceFlush { side } => {
                let status = iface_flush(self.rig.sides[side].iface, 0, null_mut());
                self.expect_one_of("uct_iface_flush", status, &[UCS_OK, UCS_INPROGRESS])
            }
            Call::Fence { side } => self.simple_ep_call(side, "uct_ep_fence", ep_fence),
            Call::EpCheck { side } => {
                self.simple_ep_call(side, "uct_ep_check", |ep| ep_check(ep, 0, null_mut()))
            }
            Call::PendingAdd { side } => self.pending_add(side),
            Call::PendingPurge { side } => self.pending_purge(side),
            Call::Invalidate { side, how } => self.invalidate(side, how),
            Call::FailoverEnable { side } => {
                let Some(ep) = self.current[side] else {
                    return Ok(());
                };
                let status = failover_enable(self.eps[ep].handle);
                if self.eps[ep].destroyed {
                    return self.expect_invalid("uct_ep_failover_enable", status);
                }
                if status != UCS_OK {
                    fail!("uct_ep_failover_enable on a live ep: {status}");
                }
                self.eps[ep].failover_enabled = true;
                let epoch = self.epoch_mut(ep);
                if epoch.failed {
                    // Errors still to come for it hold what is left.
                    epoch.may_hold = true;
                }
                Ok(())
            }
            Call::Answer { side, answer } => {
                if let Some(ep) = self.current[side] {
                    self.eps[ep].answer = answer;
                    events().answers.push((self.eps[ep].handle, answer));
                }
                Ok(())
            }
            Call::Purge { side, token } => self.purge(side, token, false).map(|_| ()),
            Call::Link { device, up } => {
                let status = link_set(DEVICES[device], up);
                self.expect_one_of("uct_soft_hca_link_set", status, &[UCS_OK])
            }
            Call::DropNext { device, count } => {
                let status = drop_next(DEVICES[device], count as c_uint);
                self.expect_one_of("uct_soft_hca_drop_next", status, &[UCS_OK])
            }
            Call::Loss { device, percent } => {
                let status = loss_set(DEVICES[device], percent as f64 / 100.0);
                self.expect_one_of("uct_soft_hca_loss_set", status, &[UCS_OK])
            }
            Call::Progress { rounds } => {
                for _ in 0..rounds {
                    self.rig.progress();
                }
                Ok(())
            }
            Call::Wait { millis } => {
                let until = Instant::now() + Duration::from_millis(millis as u64);
                while Instant::now() < until {
                    self.rig.progress();
                    std::thread::yield_now();
                }
                Ok(())
            }
            Call::Destroy {
                side,
                purge_pending,
            } => match self.current[side] {
                Some(ep) => self.destroy(ep, purge_pending),
                None => Ok(()),
            },
            Call::Reconnect { side } => self.reconnect(side),
            Call::NewPair => {
                if self.pairs >= 3 {
                    return Ok(());
                }
                self.finish_pair()?;
                self.new_pair()
            }
        }
    }

    fn expect_one_of(
        &self,
        what: &str,
        status: ucs_status_t,
        allowed: &[ucs_status_t],
    ) -> Result<(), String> {
        // Errors of a failed ep are the caller's news, not a broken promise.
        let failure = [
            UCS_ERR_CANCELED,
            UCS_ERR_ENDPOINT_TIMEOUT,
            UCS_ERR_CONNECTION_RESET,
            UCS_ERR_IO_ERROR,
            UCS_ERR_NOT_CONNECTED,
            UCS_ERR_NO_RESOURCE,
        ];
        if allowed.contains(&status) || failure.contains(&status) {
            Ok(())
        } else {
            Err(format!("{what} answered {status}"))
        }
    }

    fn expect_invalid(&self, what: &str, status: ucs_status_t) -> Result<(), String> {
        if status != UCS_ERR_INVALID_PARAM {
            fail!("{what} on a destroyed ep answered {status}, not UCS_ERR_INVALID_PARAM");
        }
        Ok(())
    }

    /// A call that takes only the ep: `UCS_ERR_INVALID_PARAM` once it is
    /// destroyed, otherwise success or a failed ep's error.
    fn simple_ep_call(
        &mut self,
        side: usize,
        what: &str,
        call: impl FnOnce(uct_ep_h) -> ucs_status_t,
    ) -> Result<(), String> {
        let Some(ep) = self.current[side] else {
            return Ok(());
        };
        let status = call(self.eps[ep].handle);
        if self.eps[ep].destroyed {
            return self.expect_invalid(what, status);
        }
        self.expect_one_of(what, status, &[UCS_OK, UCS_INPROGRESS])
    }

    fn post(&mut self, post: Post) -> Result<ucs_status_t, String> {
        let Some(ep) = self.current[post.side] else {
            return Ok(UCS_ERR_NO_RESOURCE);
        };
        let with_comp = post.with_comp
            && matches!(
                post.op,
                Op::AmZcopy
                    | Op::PutZcopy
                    | Op::GetBcopy
                    | Op::GetZcopy
                    | Op::AtomicFetch { .. }
                    | Op::Cswap { .. }
            );
        let side = post.side;
        let peer = 1 - side;
        let attr = self.rig.limits(side).cap;
        // Only what the iface offers (the sizes within its limits).
        let (lo, hi) = match post.op {
            Op::AmShort => (0, attr.am.max_short.saturating_sub(8)),
            Op::AmShortIov => (0, attr.am.max_short.saturating_sub(8)),
            Op::AmBcopy => (0, attr.am.max_bcopy.min(SLOT).saturating_sub(8)),
            Op::AmZcopy => (0, attr.am.max_zcopy.min(SLOT)),
            Op::PutShort => (1, attr.put.max_short),
            Op::PutBcopy => (1, attr.put.max_bcopy.min(SLOT)),
            Op::PutZcopy => (attr.put.min_zcopy.max(1), attr.put.max_zcopy.min(SLOT)),
            Op::GetShort => (1, attr.get.max_short.min(SLOT)),
            Op::GetBcopy => (1, attr.get.max_bcopy.min(SLOT)),
            Op::GetZcopy => (attr.get.min_zcopy.max(1), attr.get.max_zcopy.min(SLOT)),
            Op::AtomicPost { .. } | Op::AtomicFetch { .. } | Op::Cswap { .. } => (8, 8),
        };
        let supported = match post.op {
            Op::AmShort | Op::AmShortIov => attr.am.max_short >= 8,
            Op::AmBcopy => attr.am.max_bcopy >= 8,
            Op::AmZcopy => attr.am.max_hdr >= 8 && attr.am.max_zcopy > 0,
            Op::PutShort => attr.put.max_short > 0,
            Op::PutBcopy => attr.put.max_bcopy > 0,
            Op::PutZcopy => attr.put.max_zcopy > 0,
            Op::GetShort => attr.get.max_short > 0,
            Op::GetBcopy => attr.get.max_bcopy > 0,
            Op::GetZcopy => attr.get.max_zcopy > 0,
            Op::AtomicPost { bits64, .. }
            | Op::AtomicFetch { bits64, .. }
            | Op::Cswap { bits64, .. } => {
                let caps = if bits64 { attr.atomic64 } else { attr.atomic32 };
                let plan = AtomicPlan::new(post.op, 0);
                let flags = if matches!(post.op, Op::AtomicPost { .. }) {
                    caps.op_flags
                } else {
                    caps.fop_flags
                };
                flags & (1 << plan.op) != 0
            }
        };
        if !supported || hi < lo {
            return Ok(UCS_ERR_UNSUPPORTED);
        }
        let Some(id) = self.new_op(side, Kind::Data(post.op), with_comp) else {
            return Ok(UCS_ERR_NO_RESOURCE);
        };
        let len = scale(post.size, lo, hi);
        let handle = self.eps[ep].handle;
        let tag = self.ops[id].tag;
        let remote_addr = self.rig.target[peer].addr(id, 0) as u64;
        let rkey = self.rig.rkey[peer];
        let local = &self.rig.local[side];
        let target = &self.rig.target[peer];
        let max_iov = match post.op {
            Op::AmZcopy => attr.am.max_iov,
            Op::PutZcopy => attr.put.max_iov,
            _ => attr.get.max_iov,
        };
        let parts = (post.iov_parts as usize).clamp(1, max_iov.max(1));
        // A zcopy's buffer in the side's local slot, split into `parts`.
        let make_iov = |len: usize| -> Vec<uct_iov_t> {
            let mut iov = Vec::new();
            let mut at = 0;
            for part in 0..parts {
                let piece = if part + 1 == parts {
                    len - at
                } else {
                    len / parts
                };
                if piece > 0 || (len == 0 && part == 0) {
                    iov.push(iov_entry(local.addr(id, at), piece, local.memh));
                }
                at += piece;
            }
            iov
        };
        self.ops[id].len = len;
        let comp = self.ops[id].comp_ptr();
        let status = match post.op {
            Op::AmShort => am_short(handle, AM_ID, tag, &pattern(tag, len)),
            Op::AmShortIov => {
                let header = tag.to_ne_bytes();
                let payload = pattern(tag, len);
                let mut iov = vec![iov_entry(header.as_ptr() as *mut u8, 8, null_mut())];
                if len > 0 {
                    iov.push(iov_entry(payload.as_ptr() as *mut u8, len, null_mut()));
                }
                am_short_iov(handle, AM_ID, &iov)
            }
            Op::AmBcopy => {
                let message = am_message(tag, len);
                let mut slice: &[u8] = &message;
                // SAFETY: a live or destroyed (tombstone) ep of this input;
                // the pack callback reads `slice` during the call, within
                // the bcopy limit.
                bcopy_status(unsafe {
                    uct::api::ep::uct_ep_am_bcopy(
                        handle,
                        AM_ID,
                        Some(pack_bytes),
                        &mut slice as *mut &[u8] as *mut c_void,
                        0,
                    )
                })
            }
            Op::AmZcopy => {
                local.write(id, 0, &pattern(tag, len));
                let iov = make_iov(len);
                let header = tag.to_ne_bytes();
                let status = am_zcopy(handle, AM_ID, &header, &iov, 0, comp);
                self.ops[id].iov = iov;
                status
            }
            Op::PutShort => put_short(handle, &pattern(tag, len), remote_addr, rkey),
            Op::PutBcopy => {
                let data = pattern(tag, len);
                let mut slice: &[u8] = &data;
                // SAFETY: as for am_bcopy.
                bcopy_status(unsafe {
                    uct::api::ep::uct_ep_put_bcopy(
                        handle,
                        Some(pack_bytes),
                        &mut slice as *mut &[u8] as *mut c_void,
                        remote_addr,
                        rkey,
                    )
                })
            }
            Op::PutZcopy => {
                local.write(id, 0, &pattern(tag, len));
                let iov = make_iov(len);
                let status = put_zcopy(handle, &iov, remote_addr, rkey, comp);
                self.ops[id].iov = iov;
                status
            }
            Op::GetShort => {
                target.write(id, 0, &pattern(tag, len));
                let mut dest = vec![0u8; len];
                let status = get_short(handle, &mut dest, remote_addr, rkey);
                if status == UCS_OK && dest != pattern(tag, len) {
                    fail!(
                        "get_short of op {id} answered UCS_OK with other bytes than the source's"
                    );
                }
                status
            }
            Op::GetBcopy => {
                target.write(id, 0, &pattern(tag, len));
                let unpacked = Box::into_raw(Box::new(Unpacked {
                    calls: 0,
                    data: Vec::new(),
                }));
                self.ops[id].unpacked = unpacked;
                get_bcopy(
                    handle,
                    Some(unpack_into),
                    unpacked.cast(),
                    len,
                    remote_addr,
                    rkey,
                    comp,
                )
            }
            Op::GetZcopy => {
                target.write(id, 0, &pattern(tag, len));
                let iov = make_iov(len);
                let status = get_zcopy(handle, &iov, remote_addr, rkey, comp);
                self.ops[id].iov = iov;
                status
            }
            Op::AtomicPost { .. } | Op::AtomicFetch { .. } | Op::Cswap { .. } => {
                let plan = AtomicPlan::new(post.op, tag);
                self.ops[id].atomic = Some(plan);
                if plan.bits64 {
                    target.write(id, 0, &plan.initial.to_ne_bytes());
                } else {
                    target.write(id, 0, &(plan.initial as u32).to_ne_bytes());
                }
                let result: *mut u64 = &mut *self.ops[id].result;
                // SAFETY: the result word lives in the op record's box
                // until the input ends; the device writes it at completion.
                unsafe {
                    match (post.op, plan.bits64) {
                        (Op::AtomicPost { .. }, true) => {
                            atomic64_post(handle, plan.op, plan.value, remote_addr, rkey)
                        }
                        (Op::AtomicPost { .. }, false) => {
                            atomic32_post(handle, plan.op, plan.value as u32, remote_addr, rkey)
                        }
                        (Op::AtomicFetch { .. }, true) => uct::api::ep::uct_ep_atomic64_fetch(
                            handle,
                            plan.op,
                            plan.value,
                            result,
                            remote_addr,
                            rkey,
                            comp,
                        ),
                        (Op::AtomicFetch { .. }, false) => uct::api::ep::uct_ep_atomic32_fetch(
                            handle,
                            plan.op,
                            plan.value as u32,
                            result.cast(),
                            remote_addr,
                            rkey,
                            comp,
                        ),
                        (_, true) => uct::api::ep::uct_ep_atomic_cswap64(
                            handle,
                            plan.compare,
                            plan.value,
                            remote_addr,
                            rkey,
                            result,
                            comp,
                        ),
                        (_, false) => uct::api::ep::uct_ep_atomic_cswap32(
                            handle,
                            plan.compare as u32,
                            plan.value as u32,
                            remote_addr,
                            rkey,
                            result.cast(),
                            comp,
                        ),
                    }
                }
            }
        };
        self.record_post(ep, id, status)?;
        Ok(status)
    }

    /// What a post's answer means for op `id` on `ep`.
    fn record_post(&mut self, ep: usize, id: usize, status: ucs_status_t) -> Result<(), String> {
        self.note(format!("op {id} on ep {ep}: {status}"));
        let op = &mut self.ops[id];
        op.status = status;
        op.posted = status == UCS_OK || status == UCS_INPROGRESS;
        self.summary.posted += op.posted as usize;
        let kind = op.kind;
        if self.eps[ep].destroyed {
            return self.expect_invalid(&format!("op {id} ({kind:?})"), status);
        }
        if status == UCS_ERR_INVALID_PARAM {
            fail!(
                "op {id} ({:?}, {} bytes) refused with UCS_ERR_INVALID_PARAM on a live ep",
                op.kind,
                op.len
            );
        }
        Ok(())
    }

    fn flush(&mut self, side: usize, cancel: bool, with_comp: bool) -> Result<(), String> {
        let Some(ep) = self.current[side] else {
            return Ok(());
        };
        let Some(id) = self.new_op(side, Kind::Flush { cancel }, with_comp) else {
            return Ok(());
        };
        let flags = if cancel { UCT_FLUSH_FLAG_CANCEL } else { 0 };
        let comp = self.ops[id].comp_ptr();
        let status = ep_flush(self.eps[ep].handle, flags, comp);
        self.note(format!("op {id} on ep {ep}: {status}"));
        let op = &mut self.ops[id];
        op.status = status;
        op.posted = status == UCS_INPROGRESS;
        if self.eps[ep].destroyed {
            return self.expect_invalid("uct_ep_flush", status);
        }
        // A CANCEL flush of an ep that has failed answers its failure at
        // once (the ops are being flushed, or held for purge): `comp` is
        // not kept.
        let failure_answer = cancel && status < 0 && status != UCS_ERR_INVALID_PARAM;
        if !failure_answer {
            self.expect_one_of("uct_ep_flush", status, &[UCS_OK, UCS_INPROGRESS])?;
        }
        if status == UCS_OK && !cancel {
            let epoch = self.epoch_mut(ep);
            epoch.flushed_before = epoch.flushed_before.max(id);
        }
        if cancel && (status == UCS_OK || status == UCS_INPROGRESS) {
            let epoch = self.epoch_mut(ep);
            if !epoch.failed || epoch.deciding {
                // The ops end canceled, no handler is called.
                epoch.failed = true;
                epoch.deciding = false;
                epoch.exact = false;
            }
        }
        Ok(())
    }

    fn pending_add(&mut self, side: usize) -> Result<(), String> {
        let Some(ep) = self.current[side] else {
            return Ok(());
        };
        let Some(id) = self.new_op(side, Kind::Data(Op::AmShort), false) else {
            return Ok(());
        };
        let tag = self.ops[id].tag;
        let payload_len = (tag as usize * 7) % 16;
        self.ops[id].len = payload_len;
        let handle = self.eps[ep].handle;
        let req = Box::into_raw(Box::new(PendingReq {
            req: uct_pending_req_t {
                func: Some(pending_run),
                r#priv: [0; UCT_PENDING_REQ_PRIV_LEN],
            },
            ep: handle,
            op: id,
            tag,
            payload: pattern(tag, payload_len),
            calls: 0,
            late_calls: 0,
            outcome: None,
            purged: 0,
            queued: false,
            calls_at_destroy: None,
        }));
        self.pending.push(req);
        // SAFETY: the request lives until the input ends.
        let status = pending_add(handle, unsafe { &mut (*req).req }, 0);
        self.note(format!("op {id} on ep {ep}: {status}"));
        if self.eps[ep].destroyed {
            return self.expect_invalid("uct_ep_pending_add", status);
        }
        if !self.eps[ep].connected {
            // Nothing could ever run it: refused.
            return self.expect_one_of("uct_ep_pending_add", status, &[UCS_ERR_NOT_CONNECTED]);
        }
        self.expect_one_of("uct_ep_pending_add", status, &[UCS_OK, UCS_ERR_BUSY])?;
        // SAFETY: as above; no UCT call runs.
        unsafe { (*req).queued = status == UCS_OK };
        Ok(())
    }

    /// `uct_ep_pending_purge` of `ep`, checking each request it hands back.
    fn purge_pending_of(&mut self, ep: usize) -> Result<(), String> {
        let mut purged: Vec<usize> = Vec::new();
        pending_purge(
            self.eps[ep].handle,
            Some(pending_collect),
            &mut purged as *mut Vec<usize> as *mut c_void,
        );
        if self.eps[ep].destroyed && !purged.is_empty() {
            fail!(
                "uct_ep_pending_purge on a destroyed ep handed back {} requests",
                purged.len()
            );
        }
        for req in purged {
            let Some(&ours) = self.pending.iter().find(|&&p| p as usize == req) else {
                fail!("uct_ep_pending_purge handed back {req:#x}, never added");
            };
            // SAFETY: a leaked PendingReq of this input; no UCT call runs.
            let pending = unsafe { &mut *ours };
            if !pending.queued {
                fail!(
                    "uct_ep_pending_purge handed back op {}'s request, which was refused",
                    pending.op
                );
            }
            if pending.ep != self.eps[ep].handle {
                fail!("uct_ep_pending_purge of ep {ep} handed back a request of another ep");
            }
            if pending.outcome.is_some() || pending.purged > 0 {
                fail!(
                    "uct_ep_pending_purge handed back op {}'s request, which had already \
                     finished (outcome {:?}, purged {})",
                    pending.op,
                    pending.outcome,
                    pending.purged
                );
            }
            pending.purged += 1;
        }
        Ok(())
    }

    fn pending_purge(&mut self, side: usize) -> Result<(), String> {
        match self.current[side] {
            Some(ep) => self.purge_pending_of(ep),
            None => Ok(()),
        }
    }

    fn invalidate(&mut self, side: usize, how: Invalidate) -> Result<(), String> {
        let Some(ep) = self.current[side] else {
            return Ok(());
        };
        let (params, no_completions) = match how {
            Invalidate::NullParams => (None, false),
            Invalidate::NoFlags => (
                Some(uct_ep_invalidate_params_t {
                    field_mask: UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS,
                    flags: 0,
                }),
                false,
            ),
            Invalidate::NoCompletions => (
                Some(uct_ep_invalidate_params_t {
                    field_mask: UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS,
                    flags: UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS,
                }),
                true,
            ),
            Invalidate::UnknownBits { no_completions } => (
                Some(uct_ep_invalidate_params_t {
                    field_mask: UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS | 0x100,
                    flags: 0x80
                        | if no_completions {
                            UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS
                        } else {
                            0
                        },
                }),
                no_completions,
            ),
        };
        let status = ep_invalidate(self.eps[ep].handle, params.as_ref());
        self.note(format!("ep {ep}: {status}"));
        if self.eps[ep].destroyed {
            return self.expect_invalid("uct_ep_invalidate", status);
        }
        if status != UCS_OK {
            return self.expect_one_of("uct_ep_invalidate", status, &[]);
        }
        let holds = no_completions || self.eps[ep].failover_enabled;
        let epoch = self.epoch_mut(ep);
        if holds {
            if !epoch.failed || epoch.deciding {
                epoch.exact = true;
            }
            epoch.may_hold = true;
            epoch.taken_over = true;
        } else if !epoch.failed {
            epoch.deciding = true;
        }
        epoch.failed = true;
        Ok(())
    }

    // -------------------------------------------------------------- purge --

    /// A fresh RX token for `ep`'s connection (its TX token, derived by
    /// the peer's iface), saved for later `Saved` tokens.
    fn fresh_token(&mut self, ep: usize) -> Option<Vec<u8>> {
        let side = self.eps[ep].side;
        let peer_iface = self.rig.sides[1 - side].iface;
        let (_, tx_len, rx_len) = token_caps(peer_iface);
        let tx = tx_token(self.eps[ep].handle, tx_len).ok()?;
        let rx = rx_token(peer_iface, &tx, rx_len).ok()?;
        self.tokens.push(SavedToken {
            bytes: rx.clone(),
            ep,
            epoch: self.eps[ep].epoch,
        });
        Some(rx)
    }

    /// `uct_ep_outstanding_purge` on `side`'s ep with `token`; returns its
    /// status (`None` when no such call could be made).
    fn purge(
        &mut self,
        side: usize,
        token: Token,
        final_drain: bool,
    ) -> Result<Option<ucs_status_t>, String> {
        let Some(ep) = self.current[side] else {
            return Ok(None);
        };
        let handle = self.eps[ep].handle;
        let Some((bytes, valid, field_mask, null_params)) = self.purge_arguments(ep, token) else {
            return Ok(None);
        };
        let mut reports: Vec<Reported> = Vec::new();
        let params = uct_ep_outstanding_purge_params_t {
            field_mask,
            rx_token: bytes.as_ptr().cast(),
            cb: Some(purge_collect),
            arg: &mut reports as *mut Vec<Reported> as *mut c_void,
        };
        let status = outstanding_purge(handle, (!null_params).then_some(&params));
        self.note(format!(
            "purge of ep {ep} ({token:?}): {status}, {} reported",
            reports.len()
        ));
        self.absorb()?;
        if self.eps[ep].destroyed {
            if !reports.is_empty() {
                fail!("purge on a destroyed ep reported {} ops", reports.len());
            }
            self.expect_invalid("uct_ep_outstanding_purge", status)?;
            return Ok(Some(status));
        }
        if status != UCS_OK && !reports.is_empty() {
            fail!("purge answered {status} but reported {} ops", reports.len());
        }
        if !valid && !reports.is_empty() {
            fail!(
                "purge with a bad token or bad parameters ({token:?}) reported {} ops",
                reports.len()
            );
        }
        if !valid && status != UCS_OK && status != UCS_ERR_INVALID_PARAM {
            fail!("purge with a bad token or bad parameters ({token:?}) answered {status}");
        }
        let epoch_index = self.eps[ep].epoch;
        let epoch = &self.epochs[epoch_index];
        if valid && status != UCS_OK && epoch.exact && !epoch.purged {
            fail!("purge of ep {ep}, whose ops are held, with a valid token answered {status}");
        }
        if status != UCS_OK {
            return Ok(Some(status));
        }
        self.summary.purges_ok += 1;
        let mut last_id = None;
        for report in &reports {
            let Some(id) = self.match_report(ep, report)? else {
                continue;
            };
            if last_id.is_some_and(|last| last >= id) {
                fail!("purge reported op {id} after op {last_id:?}: not in posting order");
            }
            last_id = Some(id);
            let op = &mut self.ops[id];
            op.reported += 1;
            self.summary.reported += 1;
            if op.reported > 1 {
                fail!("op {id} reported twice by purge");
            }
            if op.calls() > 0 {
                fail!("op {id} reported by purge after its completion was called");
            }
            if op.epoch != epoch_index {
                fail!("purge of ep {ep} reported op {id} of an earlier connection");
            }
            if !op.posted {
                fail!(
                    "purge reported op {id}, whose post was refused ({})",
                    op.status
                );
            }
        }
        // Whatever purge did, nothing of this connection may be left
        // waiting: it completed what was delivered and reported the rest
        // (or there was nothing left to purge).
        for op in &self.ops {
            if op.epoch == epoch_index && op.awaits_completion() && op.calls() + op.reported == 0 {
                fail!(
                    "after a successful purge of ep {ep} ({} reported{}), op {} ({:?}) is \
                     neither completed nor reported",
                    reports.len(),
                    if final_drain { ", final drain" } else { "" },
                    op.id,
                    op.kind
                );
            }
        }
        let epoch = &mut self.epochs[epoch_index];
        if epoch.failed {
            epoch.purged = true;
        }
        Ok(Some(status))
    }

    /// The token bytes for a purge of `ep` with `token`, whether they name
    /// its current connection, the parameters' field mask, and whether the
    /// parameters are NULL; `None` when no fresh token can be derived (the
    /// peer's ep is gone).
    fn purge_arguments(&mut self, ep: usize, token: Token) -> Option<(Vec<u8>, bool, u64, bool)> {
        let side = self.eps[ep].side;
        let (_, _, rx_len) = token_caps(self.rig.sides[side].iface);
        let epoch = self.eps[ep].epoch;
        let saved = |tokens: &[SavedToken], index: u8| -> Option<(Vec<u8>, bool)> {
            let token = tokens.get(index as usize % tokens.len().max(1))?;
            Some((token.bytes.clone(), token.ep == ep && token.epoch == epoch))
        };
        let garbage = |seed: u8| -> Vec<u8> {
            (0..rx_len)
                .map(|i| (seed as usize * 131 + i * 17) as u8)
                .collect()
        };
        let all = UCT_EP_OUTSTANDING_FIELD_RX_TOKEN
            | UCT_EP_OUTSTANDING_FIELD_CB
            | UCT_EP_OUTSTANDING_FIELD_ARG;
        Some(match token {
            Token::Fresh => match self.fresh_token(ep) {
                Some(bytes) => (bytes, true, all, false),
                None if self.eps[ep].destroyed => (garbage(0), false, all, false),
                None => return None,
            },
            Token::Saved(index) => match saved(&self.tokens, index) {
                Some((bytes, valid)) => (bytes, valid, all, false),
                None => (garbage(index), false, all, false),
            },
            Token::Garbage(seed) => (garbage(seed), false, all, false),
            Token::Corrupted { byte, xor } => {
                let last = self.tokens.len().wrapping_sub(1) as u8;
                let mut bytes = saved(&self.tokens, last).map_or_else(|| garbage(byte), |(b, _)| b);
                let at = byte as usize % bytes.len();
                bytes[at] ^= xor;
                (bytes, false, all, false)
            }
            Token::NullParams => (garbage(1), false, all, true),
            Token::RxFieldUnset => (
                garbage(2),
                false,
                all & !UCT_EP_OUTSTANDING_FIELD_RX_TOKEN,
                false,
            ),
            Token::CallbackFieldUnset => {
                let bytes = saved(&self.tokens, 0).map_or_else(|| garbage(3), |(b, _)| b);
                (bytes, false, all & !UCT_EP_OUTSTANDING_FIELD_CB, false)
            }
        })
    }

    /// The op a purge report names, checked against what was posted
    /// (`None`: a flush without a completion).
    fn match_report(&self, ep: usize, report: &Reported) -> Result<Option<usize>, String> {
        let side = self.eps[ep].side;
        let id = if let Some(&id) = self.comp_index.get(&report.comp) {
            id
        } else if let Some((am_id, message)) = &report.am {
            if *am_id != AM_ID {
                fail!("purge reported an AM with id {am_id}");
            }
            let Some(tag) = message
                .get(..8)
                .map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
            else {
                fail!("purge reported an AM of {} bytes", message.len());
            };
            let id = (tag & 0xffff_ffff) as usize;
            if tag >> 32 != self.generation as u64 || id >= self.ops.len() {
                fail!("purge reported an AM with tag {tag:#x}, never posted in this input");
            }
            let op = &self.ops[id];
            if *message != am_message(op.tag, op.len) {
                fail!("purge reported op {id} (AM) with other bytes than were posted");
            }
            id
        } else if let Some((address, rkey)) = report.remote {
            let Some((id, offset)) = self.rig.target[1 - side].slot_of(address) else {
                fail!("purge reported an op on address {address:#x}, outside the target");
            };
            if offset != 0 || id >= self.ops.len() || rkey != self.rig.rkey[1 - side] {
                fail!("purge reported an op on {address:#x} / rkey {rkey:#x}, never posted");
            }
            let op = &self.ops[id];
            if let Some(data) = &report.data {
                if op.kind != Kind::Data(Op::GetShort) && *data != pattern(op.tag, op.len) {
                    fail!("purge reported op {id} with other data than was posted");
                }
            }
            if let (Some(atomic), Some(plan)) = (report.atomic, op.atomic) {
                if atomic.op != plan.op || atomic.value != plan.value {
                    fail!("purge reported atomic op {id} with other operands than were posted");
                }
            }
            id
        } else if report.operation == UCT_EP_OP_FLUSH && report.comp == 0 {
            // A flush the caller polls without a completion (a NOP the
            // library posted for it): nothing of the caller's to match.
            return Ok(None);
        } else {
            fail!("purge reported an op it does not describe: {report:?}");
        };
        let op = &self.ops[id];
        if op.side != side {
            fail!("purge of side {side}'s ep reported op {id} of the other side");
        }
        if op.kind == Kind::Data(Op::GetShort) {
            fail!("purge reported get_short op {id} (it answered its caller already)");
        }
        Ok(Some(id))
    }

    // ------------------------------------------------------- ep lifecycle --

    fn create_ep(&mut self, side: usize) -> usize {
        let handle = self.rig.sides[side].create_ep();
        self.eps.push(EpRec {
            handle,
            side,
            destroyed: false,
            connected: false,
            failover_enabled: false,
            answer: Answer::Ok,
            epoch: 0,
        });
        let ep = self.eps.len() - 1;
        self.new_epoch(ep);
        self.note(format!("ep {ep} created on side {side}"));
        ep
    }

    /// Connects `a` to `b` and `b` to `a`: `Ok(false)` when `a` refuses.
    fn connect(&mut self, a: usize, b: usize) -> Result<bool, String> {
        let (sa, sb) = (self.eps[a].side, self.eps[b].side);
        let (dev_a, dev_b) = (
            self.rig.sides[sa].device_address(),
            self.rig.sides[sb].device_address(),
        );
        let (addr_a, addr_b) = (
            self.rig.sides[sa].ep_address(self.eps[a].handle),
            self.rig.sides[sb].ep_address(self.eps[b].handle),
        );
        let status = connect_to_ep(self.eps[a].handle, &dev_b, &addr_b);
        self.note(format!("connect ep {a} to ep {b}: {status}"));
        if status != UCS_OK {
            return Ok(false);
        }
        let status = connect_to_ep(self.eps[b].handle, &dev_a, &addr_a);
        if status != UCS_OK {
            fail!("uct_ep_connect_to_ep of a new ep answered {status}");
        }
        self.eps[a].connected = true;
        self.eps[b].connected = true;
        Ok(true)
    }

    fn new_pair(&mut self) -> Result<(), String> {
        self.pairs += 1;
        let (a, b) = (self.create_ep(0), self.create_ep(1));
        if !self.connect(a, b)? {
            fail!("uct_ep_connect_to_ep of a new ep refused");
        }
        self.current = [Some(a), Some(b)];
        Ok(())
    }

    fn destroy(&mut self, ep: usize, purge_pending: bool) -> Result<(), String> {
        if self.eps[ep].destroyed {
            // A second destroy of the handle: safe, and nothing happens.
            let before: Vec<u32> = self.ops.iter().map(|op| op.calls()).collect();
            ep_destroy(self.eps[ep].handle);
            if self
                .ops
                .iter()
                .zip(before)
                .any(|(op, calls)| op.calls() != calls)
            {
                fail!("a second uct_ep_destroy of ep {ep} called completions");
            }
            return Ok(());
        }
        if purge_pending {
            self.purge_pending_of(ep)?;
        }
        self.absorb()?;
        let epoch_index = self.eps[ep].epoch;
        let held = {
            let epoch = &self.epochs[epoch_index];
            epoch.exact && epoch.failed && !epoch.purged
        };
        let before: Vec<u32> = self.ops.iter().map(|op| op.calls()).collect();
        ep_destroy(self.eps[ep].handle);
        self.eps[ep].destroyed = true;
        self.note(format!("ep {ep} destroyed"));
        let epoch = &self.epochs[epoch_index];
        let may_be_held = epoch.may_still_hold();
        for (op, calls_before) in self.ops.iter_mut().zip(before) {
            if op.epoch != epoch_index || op.side != self.eps[ep].side {
                continue;
            }
            let calls = op.calls();
            op.calls_at_destroy = Some(calls);
            if held && calls != calls_before {
                fail!(
                    "destroying ep {ep}, whose ops are held, completed op {}",
                    op.id
                );
            }
            if op.awaits_completion() && calls + op.reported == 0 {
                if may_be_held {
                    self.summary.abandoned += 1;
                } else {
                    fail!(
                        "ep {ep} destroyed with op {} ({:?}) neither completed nor reported \
                         (its ops were not held)",
                        op.id,
                        op.kind
                    );
                }
            }
        }
        for &req in &self.pending {
            // SAFETY: a leaked PendingReq of this input; no UCT call runs.
            let pending = unsafe { &mut *req };
            if pending.ep == self.eps[ep].handle {
                pending.calls_at_destroy = Some(pending.calls);
            }
        }
        Ok(())
    }

    fn reconnect(&mut self, side: usize) -> Result<(), String> {
        let Some(ep) = self.current[side] else {
            return Ok(());
        };
        if self.eps[ep].destroyed || self.pairs >= 3 {
            return Ok(());
        }
        self.pairs += 1;
        let peer_side = 1 - side;
        if let Some(old_peer) = self.current[peer_side] {
            self.destroy(old_peer, true)?;
        }
        let peer = self.create_ep(peer_side);
        self.current[peer_side] = Some(peer);
        if self.connect(ep, peer)? {
            self.new_epoch(ep);
        }
        Ok(())
    }

    // -------------------------------------------------------------- drain --

    /// Ends the current pair: faults off, every live ep flushed (or found
    /// failed), failed ones purged with a fresh token, pending requests
    /// purged, both destroyed, their receive queues drained.
    fn finish_pair(&mut self) -> Result<(), String> {
        for device in DEVICES {
            for status in [
                link_set(device, true),
                loss_set(device, 0.0),
                drop_next(device, 0),
            ] {
                if status != UCS_OK {
                    fail!("restoring the soft device failed: {status}");
                }
            }
        }
        let live: Vec<usize> = self
            .current
            .iter()
            .flatten()
            .copied()
            .filter(|&ep| !self.eps[ep].destroyed)
            .collect();
        let deadline = Instant::now() + DRAIN_LIMIT;
        let mut unflushed = live.clone();
        let mut last_status = UCS_OK;
        while !unflushed.is_empty() {
            if Instant::now() > deadline {
                let ep = unflushed[0];
                fail!(
                    "HANG: eps {unflushed:?} neither flushed nor failed within {DRAIN_LIMIT:?}: \
                     ep {ep}'s flush answers {last_status}; {}",
                    self.describe_ep(ep)
                );
            }
            self.rig.progress();
            let mut still = Vec::new();
            for &ep in &unflushed {
                let status = ep_flush(self.eps[ep].handle, 0, null_mut());
                last_status = status;
                match status {
                    UCS_OK => {
                        let ops = self.ops.len();
                        let epoch = self.epoch_mut(ep);
                        epoch.flushed_before = epoch.flushed_before.max(ops);
                    }
                    UCS_INPROGRESS | UCS_ERR_NO_RESOURCE => still.push(ep),
                    _ => {}
                }
            }
            self.absorb()?;
            unflushed = still;
            std::thread::yield_now();
        }
        // Failed eps: a purge with a fresh token takes what is held.
        for &ep in &live {
            if self.epoch_of(ep).failed && !self.epoch_of(ep).purged {
                let side = self.eps[ep].side;
                self.purge(side, Token::Fresh, true)?;
            }
        }
        self.settle()?;
        for &ep in &live {
            self.destroy(ep, true)?;
        }
        self.settle()?;
        Ok(())
    }

    /// An ep's state as the model sees it, for a failure message.
    fn describe_ep(&self, ep: usize) -> String {
        let rec = &self.eps[ep];
        let epoch = self.epoch_of(ep);
        let unresolved: Vec<String> = self
            .ops
            .iter()
            .filter(|op| op.epoch == rec.epoch && op.posted && op.calls() + op.reported == 0)
            .map(|op| format!("{}:{:?}", op.id, op.kind))
            .collect();
        let queued = self
            .pending
            .iter()
            // SAFETY: leaked PendingReqs of this input; no UCT call runs.
            .map(|&req| unsafe { &*req })
            .filter(|req| {
                req.ep == rec.handle && req.queued && req.outcome.is_none() && req.purged == 0
            })
            .count();
        // SAFETY: an open rc_mlx5 iface of this library is an RcIface.
        let stats =
            unsafe { &*(self.rig.sides[rec.side].iface as *const uct::rc::iface::RcIface) }.stats();
        format!(
            "ep {ep} (side {}, enabled {}, answer {:?}): failed {}, deciding {}, exact {}, \
             may_hold {}, taken_over {}, purged {}, handler calls {}; posted ops not \
             completed nor reported: {unresolved:?}; pending requests queued: {queued}; \
             iface: {} of {} send credits free, {} buffers out",
            rec.side,
            rec.failover_enabled,
            rec.answer,
            epoch.failed,
            epoch.deciding,
            epoch.exact,
            epoch.may_hold,
            epoch.taken_over,
            epoch.purged,
            epoch.handler_calls,
            stats.tx_credits,
            stats.tx_credits_max,
            stats.tx_buffers_in_use
        )
    }

    /// Progresses both sides until nothing happens for a while (receive
    /// completions polled, error handlers called).
    fn settle(&mut self) -> Result<(), String> {
        let start = Instant::now();
        let mut quiet = 0;
        while quiet < 20 || start.elapsed() < Duration::from_millis(2) {
            if start.elapsed() > DRAIN_LIMIT {
                fail!("HANG: progress kept finding work for {DRAIN_LIMIT:?}");
            }
            if self.rig.progress() == 0 {
                quiet += 1;
            } else {
                quiet = 0;
            }
            std::thread::yield_now();
        }
        self.absorb()
    }

    // ------------------------------------------------------------- checks --

    /// Every op's fate against what arrived, after every ep is gone.
    fn check_ops(&mut self) -> Result<(), String> {
        let arrivals = std::mem::take(&mut events().arrivals);
        // A flush completed OK vouches for every op posted before it on its
        // connection.
        for at in 0..self.ops.len() {
            let op = &self.ops[at];
            if op.kind == (Kind::Flush { cancel: false }) && op.comp_status() == Some(UCS_OK) {
                let (epoch, id) = (op.epoch, op.id);
                let epoch = &mut self.epochs[epoch];
                epoch.flushed_before = epoch.flushed_before.max(id);
            }
        }
        let mut arrived = vec![0u32; self.ops.len()];
        for (side, message) in &arrivals {
            let Some(tag) = message
                .get(..8)
                .map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
            else {
                fail!(
                    "an AM of {} bytes arrived (shorter than its tag)",
                    message.len()
                );
            };
            let id = (tag & 0xffff_ffff) as usize;
            if tag >> 32 != self.generation as u64 || id >= self.ops.len() {
                fail!("an AM with tag {tag:#x} arrived, never posted in this input");
            }
            let op = &self.ops[id];
            if op.side == *side {
                fail!("op {id}'s AM arrived at its own side");
            }
            if *message != am_message(op.tag, op.len) {
                fail!(
                    "op {id}'s AM arrived with other bytes than were posted ({} bytes, {} posted)",
                    message.len(),
                    op.len + 8
                );
            }
            arrived[id] += 1;
        }
        for (id, arrivals) in arrived.into_iter().enumerate() {
            self.check_op(id, arrivals)?;
        }
        self.check_pending()
    }

    fn check_op(&mut self, id: usize, am_arrivals: u32) -> Result<(), String> {
        let op = &self.ops[id];
        let epoch = &self.epochs[op.epoch];
        let calls = op.calls();
        let comp_status = op.comp_status();
        if calls > 1 {
            fail!("op {id}'s completion was called {calls} times");
        }
        if let Some(at_destroy) = op.calls_at_destroy {
            if calls != at_destroy {
                fail!("op {id}'s completion was called after its ep was destroyed");
            }
        }
        if calls > 0 && op.status != UCS_INPROGRESS {
            fail!(
                "op {id}'s completion was called, but its post answered {}",
                op.status
            );
        }
        if op.reported > 0 && calls > 0 {
            fail!("op {id} was both completed and reported");
        }
        match comp_status {
            Some(UCS_OK) => self.summary.completed_ok += 1,
            Some(_) => self.summary.completed_err += 1,
            None => {}
        }
        if op.awaits_completion() && calls + op.reported == 0 && !epoch.may_still_hold() {
            fail!(
                "op {id} ({:?}) was lost: never completed nor reported",
                op.kind
            );
        }
        let Kind::Data(kind) = op.kind else {
            return Ok(());
        };
        let peer = 1 - op.side;
        let target = &self.rig.target[peer];
        // Whether it took effect at the target, where that is observable.
        let delivered: Option<bool> = match kind {
            Op::AmShort | Op::AmShortIov | Op::AmBcopy | Op::AmZcopy => {
                if am_arrivals > 1 {
                    fail!("op {id}'s AM arrived {am_arrivals} times");
                }
                Some(am_arrivals == 1)
            }
            Op::PutShort | Op::PutBcopy | Op::PutZcopy => {
                let bytes = target.read(id, 0, SLOT);
                let expected = pattern(op.tag, op.len);
                let mut written = 0;
                for (i, byte) in bytes.iter().enumerate() {
                    if *byte == 0 {
                        continue;
                    }
                    if i >= op.len || *byte != expected[i] {
                        fail!("op {id} (put of {} bytes): byte {i} of its slot is {byte:#x}, never written", op.len);
                    }
                    written += 1;
                }
                if written > 0 && !op.posted {
                    fail!(
                        "op {id} (put) was refused ({}) but wrote {written} bytes",
                        op.status
                    );
                }
                Some(written == op.len)
            }
            Op::AtomicPost { .. } | Op::AtomicFetch { .. } | Op::Cswap { .. } => {
                let plan = op.atomic.expect("atomic plan");
                let word = if plan.bits64 {
                    u64::from_ne_bytes(target.read(id, 0, 8).try_into().unwrap())
                } else {
                    u32::from_ne_bytes(target.read(id, 0, 4).try_into().unwrap()) as u64
                };
                let rest = target.read(id, 8, SLOT - 8);
                if rest.iter().any(|b| *b != 0) {
                    fail!("op {id} (atomic): bytes after its word changed");
                }
                if word != plan.initial && word != plan.after {
                    fail!(
                        "op {id} (atomic {:?}): the word is {word:#x}, neither before \
                         ({:#x}) nor after ({:#x}) it: applied twice?",
                        kind,
                        plan.initial,
                        plan.after
                    );
                }
                if word != plan.initial && !op.posted {
                    fail!("op {id} (atomic) was refused ({}) but applied", op.status);
                }
                if comp_status == Some(UCS_OK)
                    && matches!(kind, Op::AtomicFetch { .. } | Op::Cswap { .. })
                {
                    let result = read_volatile(&*op.result).to_ne_bytes();
                    let fetched = if plan.bits64 {
                        u64::from_ne_bytes(result)
                    } else {
                        u32::from_ne_bytes(result[..4].try_into().unwrap()) as u64
                    };
                    if fetched != plan.initial {
                        fail!(
                            "op {id} (fetching atomic) completed OK with result {fetched:#x}, \
                             the word was {:#x}",
                            plan.initial
                        );
                    }
                }
                plan.observable().then_some(word == plan.after)
            }
            Op::GetShort | Op::GetBcopy | Op::GetZcopy => {
                let source = target.read(id, 0, SLOT);
                let expected = pattern(op.tag, op.len);
                if op.posted
                    && (source[..op.len] != expected[..]
                        || source[op.len..].iter().any(|b| *b != 0))
                {
                    fail!("op {id} (get): the source memory changed");
                }
                let unpack_calls = if op.unpacked.is_null() {
                    0
                } else {
                    // SAFETY: the op's leaked Unpacked; no UCT call runs.
                    let unpacked = unsafe { &*op.unpacked };
                    if unpacked.calls > 0 && unpacked.data != expected {
                        fail!("op {id} (get_bcopy): unpack got other bytes than the source's");
                    }
                    unpacked.calls
                };
                if unpack_calls > 1 {
                    fail!("op {id} (get_bcopy): unpack called {unpack_calls} times");
                }
                if unpack_calls > 0 && op.reported > 0 {
                    fail!("op {id} (get_bcopy) reported by purge after its data was unpacked");
                }
                if kind == Op::GetBcopy && comp_status == Some(UCS_OK) && unpack_calls != 1 {
                    fail!("op {id} (get_bcopy) completed OK without unpacking");
                }
                if kind == Op::GetZcopy
                    && comp_status == Some(UCS_OK)
                    && self.rig.local[op.side].read(id, 0, op.len) != expected
                {
                    fail!("op {id} (get_zcopy) completed OK without the source's bytes");
                }
                if !op.posted && unpack_calls > 0 {
                    fail!("op {id} (get) was refused but unpacked");
                }
                let done =
                    comp_status == Some(UCS_OK) || (kind == Op::GetShort && op.status == UCS_OK);
                if epoch.exact
                    && epoch.purged
                    && op.posted
                    && op.comp.is_some()
                    && (op.reported == 1) == done
                {
                    fail!(
                        "op {id} (get) on an ep purged after holding its ops: reported {} \
                         times, completed OK: {done}",
                        op.reported
                    );
                }
                None
            }
        };
        let Some(delivered) = delivered else {
            return Ok(());
        };
        self.summary.delivered += delivered as usize;
        if delivered && !op.posted {
            fail!(
                "op {id} ({kind:?}) was refused ({}) but delivered",
                op.status
            );
        }
        if op.reported > 0 && delivered {
            fail!("op {id} ({kind:?}) was reported by purge for replay, yet delivered");
        }
        if comp_status == Some(UCS_OK) && !delivered {
            fail!("op {id} ({kind:?}) completed OK but was never delivered");
        }
        if op.posted && epoch.flushed_before > id && !delivered {
            fail!("op {id} ({kind:?}) posted before a successful flush, never delivered");
        }
        let fetch_failed_late = matches!(kind, Op::AtomicFetch { .. } | Op::Cswap { .. })
            && comp_status.is_some_and(|s| s != UCS_OK);
        if op.posted
            && epoch.exact
            && epoch.purged
            && !fetch_failed_late
            && delivered == (op.reported == 1)
        {
            fail!(
                "op {id} ({kind:?}) on an ep purged after holding its ops: delivered \
                 {delivered}, reported {} times (exactly one of them must hold)",
                op.reported
            );
        }
        Ok(())
    }

    fn check_pending(&self) -> Result<(), String> {
        for &req in &self.pending {
            // SAFETY: a leaked PendingReq of this input; no UCT call runs.
            let pending = unsafe { &*req };
            if pending.late_calls > 0 {
                fail!(
                    "op {}'s pending request ran {} times after it had finished",
                    pending.op,
                    pending.late_calls
                );
            }
            if pending
                .calls_at_destroy
                .is_some_and(|calls| calls != pending.calls)
            {
                fail!(
                    "op {}'s pending request ran after its ep was destroyed",
                    pending.op
                );
            }
            if !pending.queued && pending.calls > 0 {
                fail!(
                    "op {}'s pending request was refused, yet it ran",
                    pending.op
                );
            }
        }
        Ok(())
    }

    /// Every send credit and buffer came back once the eps are gone.
    fn check_resources(&self) -> Result<(), String> {
        for (side, rig_side) in self.rig.sides.iter().enumerate() {
            // SAFETY: an open rc_mlx5 iface of this library is an RcIface;
            // nothing else uses it while the driver reads.
            let stats = unsafe { &*(rig_side.iface as *const uct::rc::iface::RcIface) }.stats();
            if stats.tx_credits != stats.tx_credits_max || stats.tx_buffers_in_use != 0 {
                fail!(
                    "side {side}: with every ep destroyed, {} of {} send credits and {} send \
                     buffers are still out",
                    stats.tx_credits_max - stats.tx_credits,
                    stats.tx_credits_max,
                    stats.tx_buffers_in_use
                );
            }
            if stats.eps != 0 {
                fail!(
                    "side {side}: {} eps live after every ep was destroyed",
                    stats.eps
                );
            }
        }
        Ok(())
    }

    /// Clears the slots this input used and frees its callback memory.
    fn cleanup(&mut self) {
        for op in &self.ops {
            for side in 0..2 {
                self.rig.target[side].zero(op.id);
                self.rig.local[side].zero(op.id);
            }
            if !op.unpacked.is_null() {
                // SAFETY: leaked by post, no longer referenced by any op.
                drop(unsafe { Box::from_raw(op.unpacked) });
            }
        }
        for &req in &self.pending {
            // SAFETY: leaked by pending_add; every ep is destroyed.
            drop(unsafe { Box::from_raw(req) });
        }
        self.pending.clear();
        for ep in &self.eps {
            if !ep.destroyed {
                ep_destroy(ep.handle);
            }
        }
        self.summary.failed_epochs = self.epochs.iter().filter(|e| e.failed).count();
    }
}
