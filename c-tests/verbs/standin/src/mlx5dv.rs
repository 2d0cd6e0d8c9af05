//! The libmlx5 (direct verbs) entry points the backend resolves: the rings
//! `mlx5dv_init_obj` returns are the soft device's own (contract point 6),
//! so the datapath writes and reads exactly what the soft HCA consumes and
//! produces.

use std::ffi::c_int;

use uct::hca::verbs::ffi::*;

use crate::devices;
use crate::ibv::{create_cq, create_qp, open_context, set_errno};
use crate::layout::*;
use crate::objects::{get, Ah, Context, Cq, Qp, Srq, BF_SIZE};

/// What a 64-byte send WQE basic block measures.
const SEND_WQE_STRIDE: u32 = 64;

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

const SUPPORTED_OBJECTS: u64 = MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ | MLX5DV_OBJ_AH;

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
            "object types {obj_type:#x} (QP, CQ, SRQ, AH only)"
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
    // SAFETY: as above.
    let ah = unsafe { get::<Ah, _>(obj.ah.r#in) };
    let ah_out = obj.ah.out.cast::<Mlx5dvAh>();
    let wants = |bit: u64| obj_type & bit != 0;
    if (wants(MLX5DV_OBJ_QP) && (qp.is_none() || obj.qp.out.is_null()))
        || (wants(MLX5DV_OBJ_CQ) && (cq.is_none() || obj.cq.out.is_null()))
        || (wants(MLX5DV_OBJ_SRQ) && (srq.is_none() || obj.srq.out.is_null()))
        || (wants(MLX5DV_OBJ_AH) && (ah.is_none() || ah_out.is_null()))
    {
        refuse!(
            "mlx5dv_init_obj",
            "unknown object or NULL output for types {obj_type:#x}"
        );
        return fail(libc::EINVAL);
    }
    if let (true, Some(qp)) = (wants(MLX5DV_OBJ_QP), qp) {
        let ring = qp.soft.send_ring();
        // A QP with a receive queue of its own (UD) shows it; one on an
        // SRQ has none. Its receive counter is word 0 of the same
        // doorbell record.
        let rq = match qp.soft.recv_ring() {
            Some(rq) => mlx5dv_qp_ring {
                buf: rq.buf.cast(),
                wqe_cnt: rq.wqe_count,
                stride: rq.stride,
            },
            None => mlx5dv_qp_ring {
                buf: std::ptr::null_mut(),
                wqe_cnt: 0,
                stride: 0,
            },
        };
        // SAFETY: writable output (checked non-NULL).
        unsafe {
            obj.qp.out.write(mlx5dv_qp {
                dbrec: ring.dbrec,
                sq: mlx5dv_qp_ring {
                    buf: ring.buf.cast(),
                    wqe_cnt: ring.wqebb_count,
                    stride: SEND_WQE_STRIDE,
                },
                rq,
                bf: mlx5dv_qp_bf {
                    reg: qp.blueflame.ptr(),
                    size: qp.blueflame.bf_size(BF_SIZE),
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
                cqe_size: cq.soft.cqe_size() as u32,
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
    if let (true, Some(ah)) = (wants(MLX5DV_OBJ_AH), ah) {
        // SAFETY: writable output (checked non-NULL); the address vector
        // lives as long as the AH (the caller's contract for `av`).
        unsafe {
            ah_out.write(Mlx5dvAh {
                av: ah.av.as_ptr().cast_mut(),
                comp_mask: 0,
            })
        };
    }
    0
}

/// rdma-core's `mlx5dv_open_device`, on the soft HCA: as on a kernel
/// without DEVX, asking for DEVX fails with EOPNOTSUPP (UCX then opens the
/// device with `ibv_open_device` and takes its verbs + mlx5dv path); without
/// it, an ordinary context. Unknown flags or comp_mask bits: EOPNOTSUPP.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn mlx5dv_open_device(
    device: *mut ibv_device,
    attr: *mut Mlx5ContextAttr,
) -> *mut ibv_context {
    if !attr.is_null() {
        // SAFETY: non-NULL, the caller's struct.
        let (flags, comp_mask) = unsafe { ((*attr).flags, (*attr).comp_mask) };
        if flags != 0 || comp_mask != 0 {
            let devx = if flags & MLX5_CONTEXT_FLAGS_DEVX != 0 {
                "DEVX asked for, the stand-in has none"
            } else {
                "unknown options"
            };
            tracing::debug!(
                "verbs stand-in: mlx5dv_open_device: flags {flags:#x} comp_mask {comp_mask:#x}: {devx}"
            );
            set_errno(libc::EOPNOTSUPP);
            return std::ptr::null_mut();
        }
    }
    open_context("mlx5dv_open_device", device)
}

/// rdma-core's `mlx5dv_create_cq`, on the soft HCA: a CQ of 64- or
/// 128-byte entries (`MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE`; default 64). On a
/// 128-byte CQ each CQE64 is the second half of its entry, and receives of
/// up to 64 bytes are scattered into the first half, as mlx5 does. CQE
/// compression, a parent domain and work-completion flags of the extended
/// poll API are refused with EOPNOTSUPP (the stand-in has no `ibv_cq_ex`
/// poll functions); CQE padding and single-threaded/ignore-overrun flags
/// need nothing of it and are accepted.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn mlx5dv_create_cq(
    context: *mut ibv_context,
    cq_attr: *mut CqInitAttrEx,
    mlx5_attr: *mut Mlx5CqInitAttr,
) -> *mut ibv_cq {
    if cq_attr.is_null() {
        refuse!("mlx5dv_create_cq", "NULL attr");
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    // SAFETY: readable (checked non-NULL).
    let attr = unsafe { *cq_attr };
    let known_flags = CREATE_CQ_ATTR_SINGLE_THREADED | CREATE_CQ_ATTR_IGNORE_OVERRUN;
    if attr.comp_mask & !CQ_INIT_ATTR_MASK_FLAGS != 0
        || (attr.comp_mask & CQ_INIT_ATTR_MASK_FLAGS != 0 && attr.flags & !known_flags != 0)
        || attr.wc_flags != 0
    {
        refuse!(
            "mlx5dv_create_cq",
            "comp_mask {:#x} flags {:#x} wc_flags {:#x} (only flags single-threaded/ignore-overrun)",
            attr.comp_mask,
            attr.flags,
            attr.wc_flags
        );
        set_errno(libc::EOPNOTSUPP);
        return std::ptr::null_mut();
    }
    let mut cqe_size = uct::mlx5::CQE_LEN;
    if !mlx5_attr.is_null() {
        // SAFETY: readable (checked non-NULL).
        let dv = unsafe { *mlx5_attr };
        let known = MLX5_CQ_INIT_ATTR_MASK_CQE_SIZE | MLX5_CQ_INIT_ATTR_MASK_FLAGS;
        if dv.comp_mask & !known != 0
            || (dv.comp_mask & MLX5_CQ_INIT_ATTR_MASK_FLAGS != 0
                && dv.flags & !MLX5_CQ_INIT_ATTR_FLAGS_CQE_PAD != 0)
        {
            refuse!(
                "mlx5dv_create_cq",
                "mlx5 comp_mask {:#x} flags {:#x} (no CQE compression)",
                dv.comp_mask,
                dv.flags
            );
            set_errno(libc::EOPNOTSUPP);
            return std::ptr::null_mut();
        }
        if dv.comp_mask & MLX5_CQ_INIT_ATTR_MASK_CQE_SIZE != 0 {
            cqe_size = usize::from(dv.cqe_size);
            if cqe_size != 64 && cqe_size != 128 {
                refuse!("mlx5dv_create_cq", "CQE size {cqe_size} (64 or 128)");
                set_errno(libc::EINVAL);
                return std::ptr::null_mut();
            }
        }
    }
    let Ok(cqe) = c_int::try_from(attr.cqe) else {
        refuse!("mlx5dv_create_cq", "{} entries", attr.cqe);
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    };
    let Ok(vector) = c_int::try_from(attr.comp_vector) else {
        refuse!("mlx5dv_create_cq", "vector {}", attr.comp_vector);
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    };
    // SAFETY: the caller's contract, passed on.
    unsafe {
        create_cq(
            context,
            cqe,
            attr.cq_context,
            attr.channel,
            vector,
            cqe_size,
        )
    }
}

/// rdma-core's `mlx5dv_create_qp`, on the soft HCA: an RC QP on an SRQ
/// or a UD QP (as `ibv_create_qp`; the PD in `comp_mask`), with the scatter-to-CQE choice of
/// `MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE` / `_DISABLE_SCATTER_TO_CQE`
/// (both at once: EINVAL, as libmlx5). DC QPs (`IBV_QPT_DRIVER`), other
/// QP types, verbs create flags and other mlx5 options: EOPNOTSUPP.
///
/// # Safety
/// Handles must be NULL or made by this library (checked: others are
/// refused); other pointers must be valid as rdma-core requires.
#[no_mangle]
pub unsafe extern "C" fn mlx5dv_create_qp(
    context: *mut ibv_context,
    qp_attr: *mut QpInitAttrEx,
    mlx5_attr: *mut Mlx5QpInitAttr,
) -> *mut ibv_qp {
    if qp_attr.is_null() {
        refuse!("mlx5dv_create_qp", "NULL attr");
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    // SAFETY: readable (checked non-NULL).
    let attr = unsafe { *qp_attr };
    if attr.qp_type == QPT_DRIVER || (attr.qp_type != IBV_QPT_RC && attr.qp_type != IBV_QPT_UD) {
        tracing::debug!(
            "verbs stand-in: mlx5dv_create_qp: QP type {} (RC and UD only)",
            attr.qp_type
        );
        set_errno(libc::EOPNOTSUPP);
        return std::ptr::null_mut();
    }
    if attr.comp_mask & QP_INIT_ATTR_PD == 0
        || attr.comp_mask & !(QP_INIT_ATTR_PD | QP_INIT_ATTR_CREATE_FLAGS) != 0
        || (attr.comp_mask & QP_INIT_ATTR_CREATE_FLAGS != 0 && attr.create_flags != 0)
    {
        refuse!(
            "mlx5dv_create_qp",
            "comp_mask {:#x} create_flags {:#x} (a PD, no create flags)",
            attr.comp_mask,
            attr.create_flags
        );
        set_errno(libc::EOPNOTSUPP);
        return std::ptr::null_mut();
    }
    let mut scatter_to_cqe = None;
    if !mlx5_attr.is_null() {
        // SAFETY: readable (checked non-NULL).
        let dv = unsafe { *mlx5_attr };
        let scatter_flags =
            MLX5_QP_CREATE_ALLOW_SCATTER_TO_CQE | MLX5_QP_CREATE_DISABLE_SCATTER_TO_CQE;
        if dv.comp_mask & !MLX5_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS != 0
            || dv.create_flags & !scatter_flags != 0
        {
            refuse!(
                "mlx5dv_create_qp",
                "mlx5 comp_mask {:#x} create_flags {:#x} (scatter-to-CQE flags only)",
                dv.comp_mask,
                dv.create_flags
            );
            set_errno(libc::EOPNOTSUPP);
            return std::ptr::null_mut();
        }
        let flags = if dv.comp_mask & MLX5_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS != 0 {
            dv.create_flags
        } else {
            0
        };
        if flags == scatter_flags {
            refuse!(
                "mlx5dv_create_qp",
                "scatter-to-CQE both allowed and disabled"
            );
            set_errno(libc::EINVAL);
            return std::ptr::null_mut();
        }
        if flags & MLX5_QP_CREATE_DISABLE_SCATTER_TO_CQE != 0 {
            scatter_to_cqe = Some(false);
        } else if flags & MLX5_QP_CREATE_ALLOW_SCATTER_TO_CQE != 0 {
            scatter_to_cqe = Some(true);
        }
    }
    // SAFETY: live-handle lookup: the PD must be of this context.
    let pd_ok = unsafe { get::<crate::objects::Pd, _>(attr.pd) }
        .is_some_and(|pd| std::ptr::eq(pd.head.context, context));
    if !pd_ok {
        refuse!(
            "mlx5dv_create_qp",
            "unknown PD {:p} or of another context",
            attr.pd
        );
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    let mut init = ibv_qp_init_attr {
        qp_context: attr.qp_context,
        send_cq: attr.send_cq,
        recv_cq: attr.recv_cq,
        srq: attr.srq,
        cap: attr.cap,
        qp_type: attr.qp_type,
        sq_sig_all: attr.sq_sig_all,
    };
    // SAFETY: the caller's contract, passed on.
    let qp = unsafe { create_qp(attr.pd, &mut init, scatter_to_cqe) };
    if !qp.is_null() {
        // SAFETY: writable (checked non-NULL): the capabilities made.
        unsafe { (*qp_attr).cap = init.cap };
    }
    qp
}
