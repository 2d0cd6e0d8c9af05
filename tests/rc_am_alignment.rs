//! The `am_alignment` and `am_align_offset` iface parameters on rc_mlx5,
//! as UCX's `uct_p2p_am_alignment` tests them: the data pointer an AM
//! handler gets (with `UCT_CB_PARAM_FLAG_DESC`), plus the offset, is a
//! multiple of the alignment for short, bcopy and zcopy AMs; an offset
//! without an alignment, and an alignment that is 0 or not a power of two,
//! are refused with `UCS_ERR_INVALID_PARAM`.

mod rc_common;

use std::ffi::{c_uint, c_void, CStr};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::iface::*;

const AM_ID: u8 = 5;

/// The data pointers handlers saw, with their flags.
static SEEN: Mutex<Vec<(usize, c_uint)>> = Mutex::new(Vec::new());
static RECEIVED: AtomicUsize = AtomicUsize::new(0);

fn seen() -> std::sync::MutexGuard<'static, Vec<(usize, c_uint)>> {
    SEEN.lock().unwrap_or_else(|p| p.into_inner())
}

unsafe extern "C" fn note_pointer(
    _arg: *mut c_void,
    data: *mut c_void,
    _length: usize,
    flags: c_uint,
) -> ucs_status_t {
    seen().push((data as usize, flags));
    RECEIVED.fetch_add(1, Ordering::SeqCst);
    UCS_OK
}

fn aligned_params(align: usize, offset: Option<usize>) -> uct_iface_params_t {
    let mut params = iface_params();
    params.field_mask |= UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT;
    params.am_alignment = align;
    if let Some(offset) = offset {
        params.field_mask |= UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET;
        params.am_align_offset = offset;
    }
    params
}

/// Sends a short, a bcopy and a zcopy AM from a to b (opened with `align`
/// and `offset`) and checks every data pointer b's handler got.
fn check_alignment(align: usize, offset: Option<usize>) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    seen().clear();
    RECEIVED.store(0, Ordering::SeqCst);
    let pair = Pair::with_params(None, Some(aligned_params(align, offset)));
    assert_eq!(
        set_am_handler(pair.b.iface, AM_ID, Some(note_pointer), null_mut(), 0),
        UCS_OK
    );
    let mut data = vec![0x33u8; 200];
    let (memh, _) = pair.a.register(data.as_mut_ptr(), data.len());
    assert_eq!(am_short(pair.ep_a, AM_ID, 1, &data[..100]), UCS_OK);
    assert_eq!(am_bcopy(pair.ep_a, AM_ID, &data, 0), 200);
    let iov = [iov_entry(data.as_mut_ptr(), data.len(), memh)];
    let status = am_zcopy(pair.ep_a, AM_ID, b"head", &iov, 0, null_mut());
    assert!(status == UCS_OK || status == UCS_INPROGRESS, "{status}");
    assert!(pair.wait(|| RECEIVED.load(Ordering::SeqCst) == 3));
    let offset = offset.unwrap_or(0);
    let seen = seen().clone();
    for (index, &(pointer, flags)) in seen.iter().enumerate() {
        assert_ne!(flags & UCT_CB_PARAM_FLAG_DESC, 0, "AM {index}");
        assert_eq!(
            (pointer + offset) % align,
            0,
            "AM {index}: {pointer:#x} + {offset} not aligned to {align}"
        );
    }
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(mem_dereg(pair.a.md, memh), UCS_OK);
    pair.close();
}

/// The tests share the handler's record.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn payloads_are_aligned_as_asked() {
    for align in [1, 2, 8, 64, 256, 4096] {
        check_alignment(align, None);
    }
}

#[test]
fn payloads_are_aligned_at_the_offset_asked() {
    for (align, offset) in [(2, 1), (16, 5), (128, 100), (1024, 127), (4096, 0)] {
        check_alignment(align, Some(offset));
    }
}

/// `uct_iface_open` on `md`/`worker` with `params`.
fn open_status(side: &Side, params: &uct_iface_params_t) -> ucs_status_t {
    let mut params = *params;
    params.mode.device = uct_iface_params_mode_device {
        tl_name: c"rc_mlx5".as_ptr(),
        dev_name: c"mlx5_0:1".as_ptr(),
    };
    let mut config: *mut uct_iface_config_t = null_mut();
    let mut iface = null_mut();
    // SAFETY: live md and worker, valid params and out-pointers; the
    // config is released and an iface opened by mistake is closed.
    unsafe {
        assert_eq!(
            uct::api::config::uct_md_iface_config_read(
                side.md,
                c"rc_mlx5".as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                &mut config
            ),
            UCS_OK
        );
        let status = uct_iface_open(side.md, side.worker, &params, config, &mut iface);
        uct::api::config::uct_config_release(config.cast());
        if status == UCS_OK {
            uct_iface_close(iface);
        }
        status
    }
}

#[test]
fn bad_alignment_parameters_are_refused() {
    let side = Side::open(c"mlx5_0", c"mlx5_0:1", None);
    let cases: [(&CStr, usize, Option<usize>, u64); 5] = [
        (c"alignment 0", 0, None, UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT),
        (
            c"alignment 3",
            3,
            Some(1),
            UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT,
        ),
        (
            c"offset without alignment",
            0,
            Some(11),
            UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET,
        ),
        (
            c"offset 8 without alignment 8",
            8,
            Some(8),
            UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET,
        ),
        (
            c"alignment above the bound",
            1 << 20,
            None,
            UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT,
        ),
    ];
    for (name, align, offset, bits) in cases {
        let mut params = iface_params();
        params.field_mask |= bits;
        params.am_alignment = align;
        params.am_align_offset = offset.unwrap_or(0);
        assert_eq!(
            open_status(&side, &params),
            UCS_ERR_INVALID_PARAM,
            "{name:?}"
        );
    }
    // Sound ones open; an offset past the segment is ignored, not refused.
    for (align, offset) in [(1, None), (4096, Some(4095)), (8, Some(1 << 20))] {
        let params = aligned_params(align, offset);
        assert_eq!(open_status(&side, &params), UCS_OK, "{align}/{offset:?}");
    }
    side.close();
}
