//! The work-request functions of `ibv_context.ops` (`ibv_post_recv`,
//! `ibv_post_send`, `ibv_post_srq_recv` and `ibv_poll_cq` are inline in
//! rdma-core's verbs.h and call through these slots). The stand-in serves
//! the mlx5 rings that direct-verbs users write; through verbs it takes
//! only receives into a UD QP's own receive queue, up to one ring's worth
//! (with no verbs `poll_cq` it never learns that one completed). That lets
//! a verbs-only transport (UCX's ud_verbs) open its interface, as
//! `ucx_info -d` does; sending and polling through verbs fail with a log
//! line and an error, never through a NULL slot.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU32, Ordering};

use uct::hca::verbs::ffi::{ibv_cq, ibv_qp};
use uct::mlx5::{self, DataSeg, MLX5_INVALID_LKEY, SEG_LEN};

use crate::layout::{IbvRecvWr, IbvSge};
use crate::objects::{get, Qp};

macro_rules! refuse {
    ($function:literal, $($why:tt)+) => {
        tracing::warn!("verbs stand-in: {}: {}", $function, format_args!($($why)+))
    };
}

/// `ops.post_recv`: writes each request's scatter list into the next WQE
/// of the QP's own receive queue (unused entries: the invalid lkey) and
/// publishes the receive counter in word 0 of the doorbell record.
///
/// # Safety
/// `qp` is checked; `wr` must be a valid request list and `bad_wr` NULL or
/// writable, as rdma-core requires.
pub unsafe extern "C" fn post_recv(
    qp: *mut ibv_qp,
    wr: *mut IbvRecvWr,
    bad_wr: *mut *mut IbvRecvWr,
) -> c_int {
    let fail = |at: *mut IbvRecvWr, errno: c_int| {
        if !bad_wr.is_null() {
            // SAFETY: writable (checked non-NULL; the caller's contract).
            unsafe { bad_wr.write(at) };
        }
        errno
    };
    // SAFETY: live-handle lookup.
    let Some(object) = (unsafe { get::<Qp, _>(qp) }) else {
        refuse!("ibv_post_recv", "unknown QP {qp:p}");
        return fail(wr, libc::EINVAL);
    };
    let Some(ring) = object.soft.recv_ring() else {
        refuse!(
            "ibv_post_recv",
            "QP {:#x} receives from its SRQ",
            object.head.qp_num
        );
        return fail(wr, libc::EINVAL);
    };
    let mut posted = object
        .verbs_receives
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    // SAFETY: word 0 of the QP's doorbell record: 4-aligned memory of the
    // soft QP, valid while the QP lives (it does: we hold its handle).
    let counter = unsafe { AtomicU32::from_ptr(ring.dbrec) };
    // The next WQE follows what was published so far, by whoever wrote
    // the ring.
    let mut producer = u32::from_be(counter.load(Ordering::Acquire)) as u16;
    let mut request = wr;
    while !request.is_null() {
        // SAFETY: a node of the caller's valid list.
        let current = unsafe { &*request };
        let sge_count = usize::try_from(current.num_sge).unwrap_or(usize::MAX);
        if sge_count > ring.max_sge as usize || (sge_count > 0 && current.sg_list.is_null()) {
            refuse!(
                "ibv_post_recv",
                "QP {:#x}: {} SGEs (at most {})",
                object.head.qp_num,
                current.num_sge,
                ring.max_sge
            );
            return fail(request, libc::EINVAL);
        }
        if *posted >= ring.wqe_count {
            refuse!(
                "ibv_post_recv",
                "QP {:#x}: more than {} receives through verbs (the stand-in polls no CQ through verbs)",
                object.head.qp_num,
                ring.wqe_count
            );
            return fail(request, libc::ENOMEM);
        }
        let index = u32::from(producer) & (ring.wqe_count - 1);
        for slot in 0..ring.max_sge as usize {
            let seg = if slot < sge_count {
                // SAFETY: `slot < num_sge` entries of the caller's list.
                let sge: IbvSge = unsafe { current.sg_list.add(slot).read() };
                DataSeg {
                    byte_count: sge.length,
                    lkey: sge.lkey,
                    addr: sge.addr,
                }
            } else {
                DataSeg {
                    byte_count: 0,
                    lkey: MLX5_INVALID_LKEY,
                    addr: 0,
                }
            };
            let mut bytes = [0u8; SEG_LEN];
            seg.write(&mut bytes);
            let at = index as usize * ring.stride as usize + slot * SEG_LEN;
            // SAFETY: WQE `index` (< wqe_count) of `stride` bytes holds
            // `max_sge` segments; the device reads it only after the
            // counter below names it.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ring.buf.add(at), SEG_LEN) };
        }
        *posted += 1;
        producer = producer.wrapping_add(1);
        request = current.next;
    }
    counter.store(mlx5::dbrec_word(producer), Ordering::Release);
    0
}

/// `ops.post_send` and `ops.post_srq_recv`: not served through verbs.
///
/// # Safety
/// `bad_wr` must be NULL or writable, as rdma-core requires.
pub unsafe extern "C" fn post_not_served(
    queue: *mut c_void,
    wr: *mut c_void,
    bad_wr: *mut *mut c_void,
) -> c_int {
    refuse!(
        "ibv_post_send/ibv_post_srq_recv",
        "on {queue:p}: not served through verbs (the mlx5 rings are)"
    );
    if !bad_wr.is_null() {
        // SAFETY: writable (checked non-NULL; the caller's contract).
        unsafe { bad_wr.write(wr) };
    }
    libc::EOPNOTSUPP
}

/// `ops.poll_cq`: not served through verbs (the mlx5 CQ ring is); a
/// negative count is rdma-core's error.
pub extern "C" fn poll_not_served(cq: *mut ibv_cq, _entries: c_int, _wc: *mut c_void) -> c_int {
    refuse!(
        "ibv_poll_cq",
        "CQ {cq:p}: not served through verbs (the mlx5 CQ ring is)"
    );
    -1
}
