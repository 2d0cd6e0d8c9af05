//! Failover purge, transport-neutral part: the `uct_ep_op_info_t` each op
//! kind is reported with (every field-mask bit set exactly when its field
//! holds a value), the C callback invocation, and the driver applying
//! verdicts in posting order.

mod failover_rc_common;
#[path = "uct_safe/mod.rs"]
mod uct_safe;

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use failover_rc_common::{data_bytes, OpDetail};
use uct::abi::*;
use uct::failover::{
    classify, report_op, run_purge, AtomicWidth, OpDescriptor, OpPsns, PurgeCallback, PurgeSink,
    PurgeSummary, RemoteTarget, Verdict, FETCH_LOST_STATUS,
};

const REMOTE: RemoteTarget = RemoteTarget {
    address: 0x7f00_dead_0000,
    rkey: 0x1234_5678_9abc,
};

fn comp_ptr(comp: &mut uct_completion_t) -> *mut uct_completion_t {
    comp
}

fn completion() -> uct_completion_t {
    uct_completion_t {
        func: None,
        count: 1,
        status: UCS_OK,
    }
}

fn iov(buffer: &mut [u8]) -> uct_iov_t {
    uct_iov_t {
        buffer: buffer.as_mut_ptr().cast(),
        length: buffer.len(),
        memh: null_mut(),
        stride: 0,
        count: 1,
    }
}

/// Stores `length` into the `u64` at `arg`, so a test can tell it ran.
unsafe extern "C" fn unpack(arg: *mut c_void, _data: *const c_void, length: usize) {
    // SAFETY: the tests pass a `*mut u64` as `arg`.
    unsafe { *arg.cast::<u64>() = length as u64 };
}

/// The field mask of the op's group, and the group itself, checked for no
/// stray bits.
fn expect_top(info: &uct_ep_op_info_t, operation: uct_ep_operation_t, group: u64, comp: bool) {
    assert_eq!(info.operation, operation);
    let mut expected = UCT_EP_OP_INFO_FIELD_OPERATION | group;
    if comp {
        expected |= UCT_EP_OP_INFO_FIELD_COMP;
    }
    assert_eq!(
        info.field_mask, expected,
        "operation {operation}: field mask"
    );
    if !comp {
        assert!(info.comp.is_null(), "comp without COMP bit");
    }
}

const AM_SHORT_FIELDS: u16 = UCT_EP_OP_INFO_AM_FIELD_AM_ID
    | UCT_EP_OP_INFO_AM_FIELD_HEADER_VALUE
    | UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_DATA;
const AM_BCOPY_FIELDS: u16 = UCT_EP_OP_INFO_AM_FIELD_AM_ID
    | UCT_EP_OP_INFO_AM_FIELD_FLAGS
    | UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_DATA;

/// The AM, header value and payload of a short AM's op info.
fn am_short_of(info: &uct_ep_op_info_t) -> (uct_ep_op_info_am, u64, uct_ep_op_info_data) {
    match OpDetail::of(info) {
        OpDetail::AmShort { am, header, data } => (am, header, data),
        _ => panic!("not an AM_SHORT"),
    }
}

/// The AM and payload of a bcopy AM's op info.
fn am_bcopy_of(info: &uct_ep_op_info_t) -> (uct_ep_op_info_am, uct_ep_op_info_data) {
    match OpDetail::of(info) {
        OpDetail::AmBcopy { am, data } => (am, data),
        _ => panic!("not an AM_BCOPY"),
    }
}

#[test]
fn am_short_reports_id_header_and_payload() {
    let payload = [1u8, 2, 3, 4, 5];
    let op = OpDescriptor::AmShort {
        am_id: 17,
        header: 0x0102_0304_0506_0708,
        payload: &payload,
    };
    let info = op.op_info().unwrap();
    expect_top(&info, UCT_EP_OP_AM_SHORT, UCT_EP_OP_INFO_FIELD_AM, false);
    let (am, header, data) = am_short_of(&info);
    assert_eq!(am.field_mask, AM_SHORT_FIELDS);
    assert_eq!(am.am_id, 17);
    assert_eq!(header, 0x0102_0304_0506_0708);
    assert_eq!(data.buffer.cast_const(), payload.as_ptr().cast());
    assert_eq!(data.length, 5);
}

#[test]
fn am_short_iov_is_split_into_header_and_payload_or_sent_as_bcopy() {
    let data: Vec<u8> = (0..20).collect();
    let info = OpDescriptor::AmShortIov {
        am_id: 3,
        data: &data,
    }
    .op_info()
    .unwrap();
    expect_top(&info, UCT_EP_OP_AM_SHORT, UCT_EP_OP_INFO_FIELD_AM, false);
    let (am, header, payload) = am_short_of(&info);
    assert_eq!(am.field_mask, AM_SHORT_FIELDS);
    // Replaying with am_short writes the header in host order: the same 8
    // bytes as the original IOV's first 8.
    assert_eq!(header.to_ne_bytes(), data[..8]);
    assert_eq!(payload.buffer.cast_const(), data[8..].as_ptr().cast());
    assert_eq!(payload.length, 12);
    let short = [9u8, 8, 7];
    let info = OpDescriptor::AmShortIov {
        am_id: 4,
        data: &short,
    }
    .op_info()
    .unwrap();
    expect_top(&info, UCT_EP_OP_AM_BCOPY, UCT_EP_OP_INFO_FIELD_AM, false);
    let (am, payload) = am_bcopy_of(&info);
    assert_eq!(am.field_mask, AM_BCOPY_FIELDS);
    assert_eq!(am.am_id, 4);
    assert_eq!(am.flags, 0);
    assert_eq!(payload.buffer.cast_const(), short.as_ptr().cast());
    assert_eq!(payload.length, 3);
}

#[test]
fn am_bcopy_reports_flags_and_packed_payload() {
    let packed = [0xabu8; 100];
    let info = OpDescriptor::AmBcopy {
        am_id: 31,
        flags: UCT_SEND_FLAG_PEER_CHECK,
        payload: &packed,
    }
    .op_info()
    .unwrap();
    expect_top(&info, UCT_EP_OP_AM_BCOPY, UCT_EP_OP_INFO_FIELD_AM, false);
    let (am, payload) = am_bcopy_of(&info);
    assert_eq!(am.field_mask, AM_BCOPY_FIELDS);
    assert_eq!(am.am_id, 31);
    assert_eq!(am.flags, UCT_SEND_FLAG_PEER_CHECK);
    assert_eq!(payload.buffer.cast_const(), packed.as_ptr().cast());
    assert_eq!(payload.length, 100);
}

#[test]
fn am_zcopy_reports_header_iov_flags_and_comp() {
    let header = [5u8; 12];
    let mut a = [0u8; 64];
    let mut b = [0u8; 32];
    let iovs = [iov(&mut a), iov(&mut b)];
    let mut comp = completion();
    let comp = comp_ptr(&mut comp);
    let info = OpDescriptor::AmZcopy {
        am_id: 2,
        flags: UCT_SEND_FLAG_SIGNALED,
        header: &header,
        iov: &iovs,
        comp,
    }
    .op_info()
    .unwrap();
    expect_top(&info, UCT_EP_OP_AM_ZCOPY, UCT_EP_OP_INFO_FIELD_AM, true);
    assert_eq!(info.comp, comp);
    let OpDetail::AmZcopy {
        am,
        header: reported_header,
        iov: reported_iov,
    } = OpDetail::of(&info)
    else {
        panic!("not the AM_ZCOPY detail")
    };
    assert_eq!(
        am.field_mask,
        UCT_EP_OP_INFO_AM_FIELD_AM_ID
            | UCT_EP_OP_INFO_AM_FIELD_FLAGS
            | UCT_EP_OP_INFO_AM_FIELD_HEADER_ZCOPY
            | UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_ZCOPY
    );
    assert_eq!(am.am_id, 2);
    assert_eq!(am.flags, UCT_SEND_FLAG_SIGNALED);
    assert_eq!(reported_header.buffer, header.as_ptr().cast());
    assert_eq!(reported_header.length, 12);
    assert_eq!(reported_iov.iov, iovs.as_ptr());
    assert_eq!(reported_iov.iovcnt, 2);
}

#[test]
fn zcopy_with_null_comp_still_reports_the_comp_field() {
    let info = OpDescriptor::PutZcopy {
        remote: REMOTE,
        iov: &[],
        comp: null_mut(),
    }
    .op_info()
    .unwrap();
    assert_ne!(info.field_mask & UCT_EP_OP_INFO_FIELD_COMP, 0);
    assert!(info.comp.is_null());
}

/// The RMA detail of `info`, its fields checked.
fn expect_rma(info: &uct_ep_op_info_t, payload_bit: u16) -> OpDetail {
    let detail = OpDetail::of(info);
    let rma = match detail {
        OpDetail::RmaData { rma, .. }
        | OpDetail::RmaZcopy { rma, .. }
        | OpDetail::GetBcopy { rma, .. } => rma,
        _ => panic!("not an RMA detail"),
    };
    assert_eq!(
        rma.field_mask,
        UCT_EP_OP_INFO_RMA_FIELD_REMOTE_ADDR | UCT_EP_OP_INFO_RMA_FIELD_RKEY | payload_bit
    );
    assert_eq!(rma.remote_addr, REMOTE.address);
    assert_eq!(rma.rkey, REMOTE.rkey);
    detail
}

/// The data an RMA's detail reports.
fn rma_data_of(detail: OpDetail) -> uct_ep_op_info_data {
    match detail {
        OpDetail::RmaData { data, .. } => data,
        _ => panic!("no RMA data"),
    }
}

#[test]
fn put_short_and_bcopy_report_target_and_data() {
    let bytes = [7u8; 40];
    for (op, operation) in [
        (
            OpDescriptor::PutShort {
                remote: REMOTE,
                payload: &bytes,
            },
            UCT_EP_OP_PUT_SHORT,
        ),
        (
            OpDescriptor::PutBcopy {
                remote: REMOTE,
                payload: &bytes,
            },
            UCT_EP_OP_PUT_BCOPY,
        ),
    ] {
        let info = op.op_info().unwrap();
        expect_top(&info, operation, UCT_EP_OP_INFO_FIELD_RMA, false);
        let data = rma_data_of(expect_rma(&info, UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_DATA));
        assert_eq!(data.buffer.cast_const(), bytes.as_ptr().cast());
        assert_eq!(data.length, 40);
    }
}

#[test]
fn put_and_get_zcopy_report_iov_and_comp() {
    let mut buffer = [0u8; 128];
    let iovs = [iov(&mut buffer)];
    let mut comp = completion();
    let comp = comp_ptr(&mut comp);
    for (op, operation) in [
        (
            OpDescriptor::PutZcopy {
                remote: REMOTE,
                iov: &iovs,
                comp,
            },
            UCT_EP_OP_PUT_ZCOPY,
        ),
        (
            OpDescriptor::GetZcopy {
                remote: REMOTE,
                iov: &iovs,
                comp,
            },
            UCT_EP_OP_GET_ZCOPY,
        ),
    ] {
        let info = op.op_info().unwrap();
        expect_top(&info, operation, UCT_EP_OP_INFO_FIELD_RMA, true);
        assert_eq!(info.comp, comp);
        let OpDetail::RmaZcopy { iov: zcopy, .. } =
            expect_rma(&info, UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_ZCOPY)
        else {
            panic!("no RMA iov")
        };
        assert_eq!(zcopy.iov, iovs.as_ptr());
        assert_eq!(zcopy.iovcnt, 1);
    }
}

#[test]
fn get_short_reports_the_destination_buffer() {
    let mut destination = [0u8; 16];
    let info = OpDescriptor::GetShort {
        remote: REMOTE,
        buffer: destination.as_mut_ptr().cast(),
        length: 16,
    }
    .op_info()
    .unwrap();
    expect_top(&info, UCT_EP_OP_GET_SHORT, UCT_EP_OP_INFO_FIELD_RMA, false);
    let data = rma_data_of(expect_rma(&info, UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_DATA));
    assert_eq!(data.buffer, destination.as_mut_ptr().cast());
    assert_eq!(data.length, 16);
}

#[test]
fn get_bcopy_reports_the_unpack_callback() {
    let mut comp = completion();
    let comp = comp_ptr(&mut comp);
    let mut state = 0u64;
    let arg: *mut c_void = (&mut state as *mut u64).cast();
    let info = OpDescriptor::GetBcopy {
        remote: REMOTE,
        unpack_cb: Some(unpack),
        arg,
        length: 999,
        comp,
    }
    .op_info()
    .unwrap();
    expect_top(&info, UCT_EP_OP_GET_BCOPY, UCT_EP_OP_INFO_FIELD_RMA, true);
    assert_eq!(info.comp, comp);
    let OpDetail::GetBcopy {
        unpack: reported, ..
    } = expect_rma(&info, UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_UNPACK)
    else {
        panic!("no unpack callback")
    };
    assert_eq!(reported.arg, arg);
    assert_eq!(reported.length, 999);
    // The reported callback is the caller's: calling it reaches `unpack`.
    let unpack_cb = reported.unpack_cb.expect("unpack_cb reported");
    // SAFETY: the test's `unpack` with its `*mut u64` argument.
    unsafe { unpack_cb(reported.arg, null(), 41) };
    assert_eq!(state, 41);
}

fn atomic_of(info: &uct_ep_op_info_t) -> uct_ep_op_info_atomic {
    match OpDetail::of(info) {
        OpDetail::Atomic(atomic) => atomic,
        _ => panic!("not an atomic operation"),
    }
}

/// The atomic detail of a fetching atomic's op info, its top level checked.
fn fetch_atomic_of(info: &uct_ep_op_info_t) -> uct_ep_op_info_atomic {
    expect_top(
        info,
        UCT_EP_OP_ATOMIC_FETCH,
        UCT_EP_OP_INFO_FIELD_ATOMIC,
        true,
    );
    atomic_of(info)
}

const ATOMIC_COMMON: u16 = UCT_EP_OP_INFO_ATOMIC_FIELD_OP
    | UCT_EP_OP_INFO_ATOMIC_FIELD_REMOTE_ADDR
    | UCT_EP_OP_INFO_ATOMIC_FIELD_RKEY
    | UCT_EP_OP_INFO_ATOMIC_FIELD_VALUE
    | UCT_EP_OP_INFO_ATOMIC_FIELD_SIZE;

#[test]
fn atomic_post_reports_op_value_and_size() {
    let info = OpDescriptor::AtomicPost {
        op: UCT_ATOMIC_OP_XOR,
        width: AtomicWidth::Bits32,
        value: 0xf0f0,
        remote: REMOTE,
    }
    .op_info()
    .unwrap();
    expect_top(
        &info,
        UCT_EP_OP_ATOMIC_POST,
        UCT_EP_OP_INFO_FIELD_ATOMIC,
        false,
    );
    let atomic = atomic_of(&info);
    assert_eq!(atomic.field_mask, ATOMIC_COMMON);
    assert_eq!(atomic.op, UCT_ATOMIC_OP_XOR);
    assert_eq!(atomic.value, 0xf0f0);
    assert_eq!(atomic.size, 4);
    assert_eq!(atomic.remote_addr, REMOTE.address);
    assert_eq!(atomic.rkey, REMOTE.rkey);
    assert!(atomic.result.is_null());
}

#[test]
fn atomic_fetch_and_cswap_report_result_and_compare() {
    let mut result = 0u64;
    let result_ptr: *mut c_void = (&mut result as *mut u64).cast();
    let mut comp = completion();
    let comp = comp_ptr(&mut comp);
    let info = OpDescriptor::AtomicFetch {
        op: UCT_ATOMIC_OP_ADD,
        width: AtomicWidth::Bits64,
        value: 5,
        result: result_ptr,
        remote: REMOTE,
        comp,
    }
    .op_info()
    .unwrap();
    assert_eq!(info.comp, comp);
    let atomic = fetch_atomic_of(&info);
    assert_eq!(
        atomic.field_mask,
        ATOMIC_COMMON | UCT_EP_OP_INFO_ATOMIC_FIELD_RESULT
    );
    assert_eq!(atomic.op, UCT_ATOMIC_OP_ADD);
    assert_eq!(atomic.value, 5);
    assert_eq!(atomic.result, result_ptr);
    assert_eq!(atomic.size, 8);

    let info = OpDescriptor::AtomicCswap {
        width: AtomicWidth::Bits32,
        compare: 11,
        swap: 22,
        result: result_ptr,
        remote: REMOTE,
        comp,
    }
    .op_info()
    .unwrap();
    let atomic = fetch_atomic_of(&info);
    assert_eq!(
        atomic.field_mask,
        ATOMIC_COMMON | UCT_EP_OP_INFO_ATOMIC_FIELD_RESULT | UCT_EP_OP_INFO_ATOMIC_FIELD_COMPARE
    );
    assert_eq!(atomic.op, UCT_ATOMIC_OP_CSWAP);
    assert_eq!(atomic.compare, 11);
    assert_eq!(atomic.value, 22);
    assert_eq!(atomic.size, 4);
    assert_eq!(atomic.result, result_ptr);
}

#[test]
fn flush_reports_flags_and_comp() {
    let mut comp = completion();
    let comp = comp_ptr(&mut comp);
    let info = OpDescriptor::Flush {
        flags: UCT_FLUSH_FLAG_REMOTE,
        comp,
    }
    .op_info()
    .unwrap();
    expect_top(&info, UCT_EP_OP_FLUSH, UCT_EP_OP_INFO_FIELD_FLUSH, true);
    assert_eq!(info.comp, comp);
    let OpDetail::Flush(flush) = OpDetail::of(&info) else {
        panic!("not a flush")
    };
    assert_eq!(flush.field_mask, UCT_EP_OP_INFO_FLUSH_FIELD_FLAGS);
    assert_eq!(flush.flags, UCT_FLUSH_FLAG_REMOTE);
}

#[test]
fn internal_ops_have_no_op_info() {
    assert!(OpDescriptor::Internal.op_info().is_none());
}

/// What the C callback saw, copied out while the op info was valid.
#[derive(Default)]
struct Seen {
    operations: Vec<uct_ep_operation_t>,
    am_ids: Vec<u8>,
    payloads: Vec<Vec<u8>>,
}

unsafe extern "C" fn record(op_info: *const uct_ep_op_info_t, arg: *mut c_void) {
    // SAFETY: `arg` is the test's `Seen`; `op_info` is valid during the call.
    let (seen, info) = unsafe { (&mut *arg.cast::<Seen>(), &*op_info) };
    seen.operations.push(info.operation);
    if info.field_mask & UCT_EP_OP_INFO_FIELD_AM != 0 {
        // PAYLOAD_DATA is set for the ops this test reports (AM bcopy).
        if let OpDetail::AmBcopy { am, data } = OpDetail::of(info) {
            seen.am_ids.push(am.am_id);
            seen.payloads.push(data_bytes(&data).to_vec());
        }
    }
}

#[test]
fn report_op_calls_the_c_callback_with_arg_and_skips_internal() {
    let mut seen = Seen::default();
    let callback = PurgeCallback::new(Some(record), (&mut seen as *mut Seen).cast()).unwrap();
    let payload = *b"hello";
    // SAFETY: `record` matches the contract; `seen` outlives the calls.
    unsafe {
        assert!(report_op(
            &OpDescriptor::AmBcopy {
                am_id: 9,
                flags: 0,
                payload: &payload,
            },
            &callback
        ));
        assert!(!report_op(&OpDescriptor::Internal, &callback));
    }
    assert_eq!(seen.operations, vec![UCT_EP_OP_AM_BCOPY]);
    assert_eq!(seen.am_ids, vec![9]);
    assert_eq!(seen.payloads, vec![b"hello".to_vec()]);
    assert!(PurgeCallback::new(None, null_mut()).is_none());
}

/// Records what the driver asked for, in order.
#[derive(Default)]
struct Recorder {
    events: Vec<(usize, &'static str, Option<Status>)>,
}

impl PurgeSink<usize> for Recorder {
    fn complete(&mut self, op: usize, status: Result<(), Status>) {
        self.events.push((op, "complete", status.err()));
    }
    fn report(&mut self, op: usize) {
        self.events.push((op, "report", None));
    }
    fn drop_internal(&mut self, op: usize) {
        self.events.push((op, "drop", None));
    }
}

#[test]
fn driver_applies_verdicts_in_posting_order() {
    let verdicts = [
        Verdict::Delivered,
        Verdict::InternalConsumed,
        Verdict::FetchLost,
        Verdict::Replay,
        Verdict::GetReplay,
        Verdict::FlushAfterLoss,
        Verdict::Delivered,
    ];
    let mut recorder = Recorder::default();
    let summary = run_purge(verdicts.iter().copied().enumerate(), &mut recorder);
    assert_eq!(
        recorder.events,
        vec![
            (0, "complete", None),
            (1, "drop", None),
            (2, "complete", Some(FETCH_LOST_STATUS)),
            (3, "report", None),
            (4, "report", None),
            (5, "complete", Some(FETCH_LOST_STATUS)),
            (6, "complete", None),
        ]
    );
    assert_eq!(
        summary,
        PurgeSummary {
            delivered: 2,
            reported: 2,
            failed: 2,
            dropped: 1,
        }
    );
    assert_ne!(FETCH_LOST_STATUS.raw(), UCS_OK);
}

/// From op descriptors to the C callback: classify a small ep table, run
/// the driver, and see exactly the undelivered ops reach the callback in
/// posting order with their payloads.
#[test]
fn end_to_end_without_a_transport() {
    let payloads: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i; 8 + i as usize]).collect();
    let mut result = 0u64;
    let mut comp = completion();
    let comp = comp_ptr(&mut comp);
    let table: Vec<(OpDescriptor<'_>, u32)> = vec![
        (
            OpDescriptor::AmBcopy {
                am_id: 0,
                flags: 0,
                payload: &payloads[0],
            },
            1,
        ),
        (OpDescriptor::Internal, 1), // a flow-control grant (a SEND)
        (
            OpDescriptor::AtomicFetch {
                op: UCT_ATOMIC_OP_ADD,
                width: AtomicWidth::Bits64,
                value: 1,
                result: (&mut result as *mut u64).cast(),
                remote: REMOTE,
                comp,
            },
            1,
        ),
        (
            OpDescriptor::AmBcopy {
                am_id: 3,
                flags: 0,
                payload: &payloads[3],
            },
            2,
        ),
        (OpDescriptor::Flush { flags: 0, comp }, 0),
        (
            OpDescriptor::AmBcopy {
                am_id: 5,
                flags: 0,
                payload: &payloads[5],
            },
            1,
        ),
    ];
    let start = 0xff_fffd;
    let mut psn = start;
    let mut ops = Vec::new();
    for (descriptor, count) in &table {
        ops.push(OpPsns {
            class: descriptor.class(),
            first_psn: psn,
            psn_count: *count,
            cqe_seen: false,
        });
        psn = uct::mlx5::psn_add(psn, *count);
    }
    // The responder took the AM, the grant, the atomic and the first packet
    // of the two-packet AM.
    let rx = uct::mlx5::psn_add(start, 4);
    let verdicts = classify(&ops, psn, rx).unwrap();

    struct Sink<'s> {
        callback: PurgeCallback,
        completed: Vec<(usize, Option<Status>)>,
        ops: &'s [(OpDescriptor<'s>, u32)],
    }
    impl PurgeSink<usize> for Sink<'_> {
        fn complete(&mut self, op: usize, status: Result<(), Status>) {
            self.completed.push((op, status.err()));
        }
        fn report(&mut self, op: usize) {
            // SAFETY: `record` and its `Seen` outlive the purge.
            unsafe { report_op(&self.ops[op].0, &self.callback) };
        }
        fn drop_internal(&mut self, _op: usize) {}
    }
    let mut seen = Seen::default();
    let mut sink = Sink {
        callback: PurgeCallback {
            cb: record,
            arg: (&mut seen as *mut Seen).cast(),
        },
        completed: Vec::new(),
        ops: &table,
    };
    let summary = run_purge(verdicts.into_iter().enumerate(), &mut sink);
    assert_eq!(
        sink.completed,
        vec![(0, None), (2, Some(FETCH_LOST_STATUS))]
    );
    assert_eq!(
        seen.operations,
        vec![UCT_EP_OP_AM_BCOPY, UCT_EP_OP_FLUSH, UCT_EP_OP_AM_BCOPY]
    );
    assert_eq!(seen.am_ids, vec![3, 5]);
    assert_eq!(
        seen.payloads,
        vec![payloads[3].clone(), payloads[5].clone()]
    );
    assert_eq!(
        summary,
        PurgeSummary {
            delivered: 1,
            reported: 3,
            failed: 1,
            dropped: 1,
        }
    );
}
