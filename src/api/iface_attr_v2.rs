//! `uct_iface_attr_v2_t` as UCX 1.22 lays it out, for `uct_iface_query_v2`.
//! 1.22 has no `max_get_sgl_zcopy_count`, so every later field sits 8 bytes
//! earlier and every field bit from `CAP_FLAGS` on is one lower; in its
//! capability flags `QUERY_TOKEN` is bit 1 (master: 2, after `GET_SGL_ZCOPY`).
//! A 1.22 caller's request is answered through our layout and copied back.

use std::ffi::c_void;
use std::ptr::addr_of;

use crate::abi::*;

/// UCX 1.22's `uct_iface_attr_v2_t`.
#[repr(C)]
pub(crate) struct IfaceAttrV2V122 {
    field_mask: u64,
    max_put_sgl_zcopy_count: usize,
    cap_flags: u64,
    tx_token_length: usize,
    rx_token_length: usize,
    tx_token: *const c_void,
    rx_token: *mut c_void,
}

/// (1.22's bit, ours) of each field.
const FIELD_BITS: [(u64, u64); 6] = [
    (1 << 0, UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT),
    (1 << 1, UCT_IFACE_ATTR_FIELD_CAP_FLAGS),
    (1 << 2, UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH),
    (1 << 3, UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH),
    (1 << 4, UCT_IFACE_ATTR_FIELD_TX_TOKEN),
    (1 << 5, UCT_IFACE_ATTR_FIELD_RX_TOKEN),
];

/// (1.22's bit, ours) of each capability flag 1.22 knows.
const CAP_BITS: [(u64, u64); 2] = [
    (1 << 0, UCT_IFACE_FLAG_V2_PUT_SGL_ZCOPY),
    (1 << 1, UCT_IFACE_FLAG_V2_QUERY_TOKEN),
];

fn translate(bits: u64, table: &[(u64, u64)], to_ours: bool) -> u64 {
    table
        .iter()
        .filter(|(theirs, ours)| bits & if to_ours { *theirs } else { *ours } != 0)
        .fold(0, |mask, (theirs, ours)| {
            mask | if to_ours { *ours } else { *theirs }
        })
}

/// Our attribute struct for a 1.22 caller's request: its fields in our bits,
/// its token pointers (inputs) where it set them.
///
/// # Safety
/// `theirs` non-NULL, valid for reads of the fields its mask names.
pub(crate) unsafe fn request(theirs: *const IfaceAttrV2V122) -> uct_iface_attr_v2_t {
    // SAFETY: by the contract; raw reads of the members the mask names.
    unsafe {
        let their_mask = addr_of!((*theirs).field_mask).read();
        let field_mask = translate(their_mask, &FIELD_BITS, true);
        // SAFETY: plain data; all-zero is valid.
        let mut ours: uct_iface_attr_v2_t = std::mem::zeroed();
        ours.field_mask = field_mask;
        if field_mask & UCT_IFACE_ATTR_FIELD_TX_TOKEN != 0 {
            ours.tx_token = addr_of!((*theirs).tx_token).read();
        }
        if field_mask & UCT_IFACE_ATTR_FIELD_RX_TOKEN != 0 {
            ours.rx_token = addr_of!((*theirs).rx_token).read();
        }
        ours
    }
}

/// Copies the answer to the 1.22 caller's struct: only the fields it asked
/// for (the RX token was written into its buffer already).
///
/// # Safety
/// `theirs` non-NULL, valid for writes of the fields its mask names.
pub(crate) unsafe fn answer(ours: &uct_iface_attr_v2_t, theirs: *mut IfaceAttrV2V122) {
    let asked = ours.field_mask;
    // SAFETY: by the contract; each member written only when asked for.
    unsafe {
        if asked & UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT != 0 {
            (*theirs).max_put_sgl_zcopy_count = ours.max_put_sgl_zcopy_count;
        }
        if asked & UCT_IFACE_ATTR_FIELD_CAP_FLAGS != 0 {
            (*theirs).cap_flags = translate(ours.cap.flags, &CAP_BITS, false);
        }
        if asked & UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH != 0 {
            (*theirs).tx_token_length = ours.tx_token_length;
        }
        if asked & UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH != 0 {
            (*theirs).rx_token_length = ours.rx_token_length;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr::{null, null_mut};

    use crate::api::async_context::{ucs_async_context_create, ucs_async_context_destroy};
    use crate::api::component::{uct_query_components, uct_release_component_list};
    use crate::api::iface::{uct_iface_close, uct_iface_open};
    use crate::api::md::{uct_md_close, uct_md_open};
    use crate::api::worker::{uct_worker_create, uct_worker_destroy};

    /// A 1.22 caller's CAP_FLAGS and token-length request on an rc_mlx5
    /// iface, answered in 1.22's layout and bits.
    #[test]
    fn a_1_22_request_is_answered_in_1_22_s_layout() {
        // SAFETY: valid arguments and out-pointers throughout; every handle
        // is closed once, in order.
        unsafe {
            let (mut components, mut count) = (null_mut(), 0);
            assert_eq!(uct_query_components(&mut components, &mut count), UCS_OK);
            let component = *components;
            uct_release_component_list(components);
            let mut md = null_mut();
            assert_eq!(
                uct_md_open(component, c"mlx5_0".as_ptr(), null(), &mut md),
                UCS_OK
            );
            let mut async_context = null_mut();
            assert_eq!(
                ucs_async_context_create(UCS_ASYNC_MODE_POLL, &mut async_context),
                UCS_OK
            );
            let mut worker = null_mut();
            assert_eq!(
                uct_worker_create(async_context, UCS_THREAD_MODE_SINGLE, &mut worker),
                UCS_OK
            );
            let mut params: uct_iface_params_t = std::mem::zeroed();
            params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
            params.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
            params.mode.device = uct_iface_params_mode_device {
                tl_name: c"rc_mlx5".as_ptr(),
                dev_name: c"mlx5_0:1".as_ptr(),
            };
            let mut iface = null_mut();
            assert_eq!(
                uct_iface_open(md, worker, &params, null(), &mut iface),
                UCS_OK
            );

            let mut theirs: IfaceAttrV2V122 = std::mem::zeroed();
            theirs.field_mask = (1 << 1) | (1 << 2) | (1 << 3);
            theirs.max_put_sgl_zcopy_count = 77;
            let mut ours = request(&theirs);
            assert_eq!(
                ours.field_mask,
                UCT_IFACE_ATTR_FIELD_CAP_FLAGS
                    | UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH
                    | UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH
            );
            assert_eq!(
                crate::api::v2::iface_query_v2_ours(iface, &mut ours),
                Ok(())
            );
            answer(&ours, &mut theirs);
            // rc_mlx5 has tokens: 1.22's QUERY_TOKEN bit, and the lengths.
            assert_eq!(theirs.cap_flags, 1 << 1);
            assert_eq!(theirs.tx_token_length, ours.tx_token_length);
            assert_eq!(theirs.rx_token_length, ours.rx_token_length);
            assert!(theirs.tx_token_length > 0 && theirs.rx_token_length > 0);
            // Not asked for: untouched.
            assert_eq!(theirs.max_put_sgl_zcopy_count, 77);

            uct_iface_close(iface);
            uct_worker_destroy(worker);
            ucs_async_context_destroy(async_context);
            uct_md_close(md);
        }
    }

    #[test]
    fn bits_map_both_ways() {
        assert_eq!(
            translate(0b10, &FIELD_BITS, true),
            UCT_IFACE_ATTR_FIELD_CAP_FLAGS
        );
        assert_eq!(
            translate(
                UCT_IFACE_FLAG_V2_QUERY_TOKEN | UCT_IFACE_FLAG_V2_GET_SGL_ZCOPY,
                &CAP_BITS,
                false
            ),
            1 << 1
        );
        assert_eq!(size_of::<IfaceAttrV2V122>(), 56);
    }
}
