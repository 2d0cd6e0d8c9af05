//! Failover purge, transport-neutral part: the `uct_ep_op_info_t` each op
//! kind is reported with (every field-mask bit set exactly when its field
//! holds a value), the C callback invocation, and what each verdict asks
//! the transport to do, in posting order.

mod failover_rc_common;
#[path = "uct_safe/mod.rs"]
mod uct_safe;

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use failover_rc_common::{data_bytes, OpDetail};
use uct::abi::*;
use uct::failover::{
    classify, report_op, Action, InternalOp, OpPsns, PostedOp, PurgeCallback, PurgeSummary,
    RemoteTarget, Verdict, FETCH_LOST_STATUS,
};
use uct::mlx5::AtomicSize;

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
    let header = 0x0102_0304_0506_0708u64;
    let bytes = [&header.to_ne_bytes()[..], &[1u8, 2, 3, 4, 5]].concat();
    let payload = &bytes[8..];
    let op = PostedOp::AmShort { am_id: 17 };
    let info = op.op_info(&bytes).unwrap();
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
    let info = PostedOp::AmShort { am_id: 3 }.op_info(&data).unwrap();
    expect_top(&info, UCT_EP_OP_AM_SHORT, UCT_EP_OP_INFO_FIELD_AM, false);
    let (am, header, payload) = am_short_of(&info);
    assert_eq!(am.field_mask, AM_SHORT_FIELDS);
    // Replaying with am_short writes the header in host order: the same 8
    // bytes as the original IOV's first 8.
    assert_eq!(header.to_ne_bytes(), data[..8]);
    assert_eq!(payload.buffer.cast_const(), data[8..].as_ptr().cast());
    assert_eq!(payload.length, 12);
    let short = [9u8, 8, 7];
    let info = PostedOp::AmShort { am_id: 4 }.op_info(&short).unwrap();
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
    let info = PostedOp::AmBcopy {
        am_id: 31,
        flags: UCT_SEND_FLAG_PEER_CHECK,
    }
    .op_info(&packed)
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
    let iovs: Box<[uct_iov_t]> = Box::new([iov(&mut a), iov(&mut b)]);
    let iovs_ptr = iovs.as_ptr();
    let mut comp = completion();
    let comp = comp_ptr(&mut comp);
    let info = PostedOp::AmZcopy {
        am_id: 2,
        flags: UCT_SEND_FLAG_SIGNALED,
        iov: iovs,
        comp,
    }
    .op_info(&header)
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
    assert_eq!(reported_iov.iov, iovs_ptr);
    assert_eq!(reported_iov.iovcnt, 2);
}

#[test]
fn zcopy_with_null_comp_still_reports_the_comp_field() {
    let info = PostedOp::PutZcopy {
        remote: REMOTE,
        iov: Box::new([]),
        comp: null_mut(),
    }
    .op_info(&[])
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
        (PostedOp::PutShort { remote: REMOTE }, UCT_EP_OP_PUT_SHORT),
        (PostedOp::PutBcopy { remote: REMOTE }, UCT_EP_OP_PUT_BCOPY),
    ] {
        let info = op.op_info(&bytes).unwrap();
        expect_top(&info, operation, UCT_EP_OP_INFO_FIELD_RMA, false);
        let data = rma_data_of(expect_rma(&info, UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_DATA));
        assert_eq!(data.buffer.cast_const(), bytes.as_ptr().cast());
        assert_eq!(data.length, 40);
    }
}

#[test]
fn put_and_get_zcopy_report_iov_and_comp() {
    let mut buffer = [0u8; 128];
    let iovs: Box<[uct_iov_t]> = Box::new([iov(&mut buffer)]);
    let mut comp = completion();
    let comp = comp_ptr(&mut comp);
    for (op, operation) in [
        (
            PostedOp::PutZcopy {
                remote: REMOTE,
                iov: iovs.clone(),
                comp,
            },
            UCT_EP_OP_PUT_ZCOPY,
        ),
        (
            PostedOp::GetZcopy {
                remote: REMOTE,
                iov: iovs.clone(),
                comp,
            },
            UCT_EP_OP_GET_ZCOPY,
        ),
    ] {
        let info = op.op_info(&[]).unwrap();
        expect_top(&info, operation, UCT_EP_OP_INFO_FIELD_RMA, true);
        assert_eq!(info.comp, comp);
        let OpDetail::RmaZcopy { iov: zcopy, .. } =
            expect_rma(&info, UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_ZCOPY)
        else {
            panic!("no RMA iov")
        };
        let (PostedOp::PutZcopy { iov, .. } | PostedOp::GetZcopy { iov, .. }) = &op else {
            unreachable!()
        };
        assert_eq!(zcopy.iov, iov.as_ptr());
        assert_eq!(zcopy.iovcnt, 1);
    }
}

#[test]
fn get_short_reports_the_destination_buffer() {
    let mut destination = [0u8; 16];
    let info = PostedOp::GetShort {
        remote: REMOTE,
        buffer: destination.as_mut_ptr().cast(),
        length: 16,
    }
    .op_info(&[])
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
    let info = PostedOp::GetBcopy {
        remote: REMOTE,
        unpack_cb: Some(unpack),
        arg,
        length: 999,
        comp,
    }
    .op_info(&[])
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
    let info = PostedOp::AtomicPost {
        remote: REMOTE,
        op: UCT_ATOMIC_OP_XOR,
        size: AtomicSize::Bits32,
        value: 0xf0f0,
    }
    .op_info(&[])
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
    let info = PostedOp::AtomicFetch {
        remote: REMOTE,
        op: UCT_ATOMIC_OP_ADD,
        size: AtomicSize::Bits64,
        value: 5,
        result: result_ptr,
        comp,
    }
    .op_info(&[])
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

    let info = PostedOp::AtomicCswap {
        remote: REMOTE,
        size: AtomicSize::Bits32,
        compare: 11,
        swap: 22,
        result: result_ptr,
        comp,
    }
    .op_info(&[])
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
    let info = PostedOp::Flush {
        flags: UCT_FLUSH_FLAG_REMOTE,
        comp,
    }
    .op_info(&[])
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
    for internal in [InternalOp::FcGrant, InternalOp::Probe] {
        assert!(PostedOp::Internal(internal).op_info(&[]).is_none());
    }
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
            &PostedOp::AmBcopy { am_id: 9, flags: 0 },
            &payload,
            &callback
        ));
        let grant = PostedOp::Internal(InternalOp::FcGrant);
        assert!(!report_op(&grant, &[], &callback));
    }
    assert_eq!(seen.operations, vec![UCT_EP_OP_AM_BCOPY]);
    assert_eq!(seen.am_ids, vec![9]);
    assert_eq!(seen.payloads, vec![b"hello".to_vec()]);
    assert!(PurgeCallback::new(None, null_mut()).is_none());
}

#[test]
fn verdicts_say_what_to_do_in_posting_order() {
    let verdicts = [
        Verdict::Delivered,
        Verdict::InternalConsumed,
        Verdict::FetchLost,
        Verdict::Replay,
        Verdict::GetReplay,
        Verdict::FlushAfterLoss,
        Verdict::Delivered,
    ];
    let actions: Vec<(usize, Action)> = verdicts
        .iter()
        .map(|verdict| verdict.action())
        .enumerate()
        .collect();
    assert_eq!(
        actions,
        vec![
            (0, Action::Complete(Ok(()))),
            (1, Action::Drop),
            (2, Action::Complete(Err(FETCH_LOST_STATUS))),
            (3, Action::Report),
            (4, Action::Report),
            (5, Action::Complete(Err(FETCH_LOST_STATUS))),
            (6, Action::Complete(Ok(()))),
        ]
    );
    assert_eq!(
        PurgeSummary::of(verdicts),
        PurgeSummary {
            delivered: 2,
            reported: 2,
            failed: 2,
            dropped: 1,
        }
    );
    assert_ne!(FETCH_LOST_STATUS.raw(), UCS_OK);
}

/// From op records to the C callback: classify a small ep table, apply
/// the verdicts as a transport does, and see exactly the undelivered ops
/// reach the callback in posting order with their payloads.
#[test]
fn end_to_end_without_a_transport() {
    let payloads: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i; 8 + i as usize]).collect();
    let mut result = 0u64;
    let mut comp = completion();
    let comp = comp_ptr(&mut comp);
    let bcopy = |am_id| PostedOp::AmBcopy { am_id, flags: 0 };
    // Each op, the bytes the transport holds for it, its packets.
    let table: Vec<(PostedOp, &[u8], u32)> = vec![
        (bcopy(0), &payloads[0], 1),
        // A flow-control grant (a SEND).
        (PostedOp::Internal(InternalOp::FcGrant), &[], 1),
        (
            PostedOp::AtomicFetch {
                remote: REMOTE,
                op: UCT_ATOMIC_OP_ADD,
                size: AtomicSize::Bits64,
                value: 1,
                result: (&mut result as *mut u64).cast(),
                comp,
            },
            &[],
            1,
        ),
        (bcopy(3), &payloads[3], 2),
        (PostedOp::Flush { flags: 0, comp }, &[], 0),
        (bcopy(5), &payloads[5], 1),
    ];
    let start = 0xff_fffd;
    let mut psn = start;
    let mut ops = Vec::new();
    for (op, _, count) in &table {
        ops.push(OpPsns {
            class: op.class(),
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

    let mut seen = Seen::default();
    let callback = PurgeCallback {
        cb: record,
        arg: (&mut seen as *mut Seen).cast(),
    };
    let mut completed = Vec::new();
    for (index, ((op, bytes, _), verdict)) in table.iter().zip(&verdicts).enumerate() {
        match verdict.action() {
            Action::Complete(status) => completed.push((index, status.err())),
            // SAFETY: `record` and its `Seen` outlive the purge.
            Action::Report => unsafe {
                report_op(op, bytes, &callback);
            },
            Action::Drop => {}
        }
    }
    assert_eq!(completed, vec![(0, None), (2, Some(FETCH_LOST_STATUS))]);
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
        PurgeSummary::of(verdicts),
        PurgeSummary {
            delivered: 1,
            reported: 3,
            failed: 1,
            dropped: 1,
        }
    );
}
