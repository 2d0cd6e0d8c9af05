//! The libmlx5 (direct verbs) entry points the backend resolves: the rings
//! `mlx5dv_init_obj` returns are the soft device's own (contract point 6),
//! so the datapath writes and reads exactly what the soft HCA consumes and
//! produces.

use std::ffi::c_int;

use uct::hca::verbs::ffi::*;

use crate::devices;
use crate::ibv::set_errno;
use crate::objects::{get, Context, Cq, Qp, Srq, BF_SIZE};

/// What a 64-byte send WQE basic block and a CQE64 measure.
const SEND_WQE_STRIDE: u32 = 64;
const CQE_SIZE: u32 = 64;

macro_rules! refuse {
    ($function:literal, $($why:tt)+) => {
        tracing::warn!("verbs stand-in: {}: {}", $function, format_args!($($why)+))
    };
}

fn fail(errno: c_int) -> c_int {
    set_errno(errno);
    errno
}

/// rdma-core's `mlx5dv_is_supported`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn mlx5dv_is_supported(device: *mut ibv_device) -> bool {
    devices::find(device).is_some_and(|d| !crate::simulate::not_mlx5(&d.name))
}

/// rdma-core's `mlx5dv_query_device`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn mlx5dv_query_device(
    context: *mut ibv_context,
    attr: *mut mlx5dv_context,
) -> c_int {
    // SAFETY: live-handle lookup.
    if unsafe { get::<Context, _>(context) }.is_none() || attr.is_null() {
        refuse!(
            "mlx5dv_query_device",
            "unknown context {context:p} or NULL attr"
        );
        return fail(libc::EINVAL);
    }
    // Only the head is written; no optional part (comp_mask) is provided,
    // so the caller's comp_mask comes back empty, as from a provider that
    // supports none of what was asked.
    // SAFETY: the caller passes a writable mlx5dv_context.
    unsafe {
        (*attr).version = 0;
        (*attr).flags = MLX5DV_CONTEXT_FLAGS_CQE_V1;
        (*attr).comp_mask = 0;
    }
    0
}

const SUPPORTED_OBJECTS: u64 = MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ;

/// rdma-core's `mlx5dv_init_obj`, on the soft HCA.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn mlx5dv_init_obj(obj: *mut mlx5dv_obj, obj_type: u64) -> c_int {
    if obj.is_null() {
        refuse!("mlx5dv_init_obj", "NULL obj");
        return fail(libc::EINVAL);
    }
    if obj_type & !SUPPORTED_OBJECTS != 0 {
        refuse!(
            "mlx5dv_init_obj",
            "object types {obj_type:#x} (QP, CQ, SRQ only)"
        );
        return fail(libc::EOPNOTSUPP);
    }
    // SAFETY: the caller passes a valid mlx5dv_obj (non-NULL checked).
    let obj = unsafe { &mut *obj };
    // Check every requested pair before writing any output.
    // SAFETY: live-handle lookups.
    let qp = unsafe { get::<Qp, _>(obj.qp.r#in) };
    // SAFETY: as above.
    let cq = unsafe { get::<Cq, _>(obj.cq.r#in) };
    // SAFETY: as above.
    let srq = unsafe { get::<Srq, _>(obj.srq.r#in) };
    let wants = |bit: u64| obj_type & bit != 0;
    if (wants(MLX5DV_OBJ_QP) && (qp.is_none() || obj.qp.out.is_null()))
        || (wants(MLX5DV_OBJ_CQ) && (cq.is_none() || obj.cq.out.is_null()))
        || (wants(MLX5DV_OBJ_SRQ) && (srq.is_none() || obj.srq.out.is_null()))
    {
        refuse!(
            "mlx5dv_init_obj",
            "unknown object or NULL output for types {obj_type:#x}"
        );
        return fail(libc::EINVAL);
    }
    if let (true, Some(qp)) = (wants(MLX5DV_OBJ_QP), qp) {
        let ring = qp.soft.send_ring();
        // SAFETY: writable output (checked non-NULL).
        unsafe {
            obj.qp.out.write(mlx5dv_qp {
                dbrec: ring.dbrec,
                sq: mlx5dv_qp_ring {
                    buf: ring.buf.cast(),
                    wqe_cnt: ring.wqebb_count,
                    stride: SEND_WQE_STRIDE,
                },
                rq: mlx5dv_qp_ring {
                    buf: std::ptr::null_mut(),
                    wqe_cnt: 0,
                    stride: 0,
                },
                bf: mlx5dv_qp_bf {
                    reg: qp.blueflame.ptr(),
                    size: BF_SIZE,
                },
                comp_mask: 0,
                uar_mmap_offset: 0,
                tirn: 0,
                tisn: 0,
                rqn: 0,
                sqn: 0,
                tir_icm_addr: 0,
            })
        };
    }
    if let (true, Some(cq)) = (wants(MLX5DV_OBJ_CQ), cq) {
        let ring = cq.soft.ring();
        // SAFETY: writable output (checked non-NULL).
        unsafe {
            obj.cq.out.write(mlx5dv_cq {
                buf: ring.buf.cast(),
                dbrec: ring.dbrec,
                cqe_cnt: ring.cqe_count,
                cqe_size: CQE_SIZE,
                cq_uar: cq.uar.ptr(),
                cqn: ring.cqn,
                comp_mask: 0,
            })
        };
    }
    if let (true, Some(srq)) = (wants(MLX5DV_OBJ_SRQ), srq) {
        let ring = srq.soft.ring();
        // SAFETY: readable and writable output (checked non-NULL): the
        // caller's comp_mask asks for the SRQ number.
        unsafe {
            let out = &mut *obj.srq.out;
            let want_srqn = out.comp_mask & MLX5DV_SRQ_MASK_SRQN != 0;
            out.buf = ring.buf.cast();
            out.dbrec = ring.dbrec;
            out.stride = ring.stride;
            out.head = 0;
            out.tail = ring.wqe_count - 1;
            out.comp_mask = if want_srqn { MLX5DV_SRQ_MASK_SRQN } else { 0 };
            if want_srqn {
                out.srqn = ring.srqn;
            }
        }
    }
    0
}
