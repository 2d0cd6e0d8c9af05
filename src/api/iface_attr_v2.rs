//! `uct_iface_attr_v2_t` as UCX 1.22 lays it out, for `uct_iface_query_v2`.
//! 1.22 has no `max_get_sgl_zcopy_count`, so every later field sits 8 bytes
//! earlier and every field bit from `CAP_FLAGS` on is one lower; in its
//! capability flags `QUERY_TOKEN` is bit 1 (master: 2, after `GET_SGL_ZCOPY`).
//! A 1.22 caller's request is answered through our layout and copied back.

use std::ffi::c_void;

use crate::abi::*;
use crate::core::c_boundary::{masked_member, masked_write, FieldMasked, MaskedOut};

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
    (
        MAX_PUT_SGL_ZCOPY_COUNT,
        UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT,
    ),
    (CAP_FLAGS, UCT_IFACE_ATTR_FIELD_CAP_FLAGS),
    (TX_TOKEN_LENGTH, UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH),
    (RX_TOKEN_LENGTH, UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH),
    (TX_TOKEN, UCT_IFACE_ATTR_FIELD_TX_TOKEN),
    (RX_TOKEN, UCT_IFACE_ATTR_FIELD_RX_TOKEN),
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

impl FieldMasked for IfaceAttrV2V122 {
    const NAME: &'static str = "uct_iface_attr_v2_t";
    const FIELD_MASK_OFFSET: usize = {
        // The member is a u64.
        let _: fn(&Self) -> &u64 = |this| &this.field_mask;
        std::mem::offset_of!(IfaceAttrV2V122, field_mask)
    };
}

/// Our attribute struct for a 1.22 caller's request (`theirs` non-NULL):
/// its fields in our bits, its token pointers (inputs) where it set them.
pub(crate) fn request(
    theirs: &MaskedOut<IfaceAttrV2V122>,
    function: &str,
) -> Result<uct_iface_attr_v2_t, Status> {
    let their_mask = theirs.tolerant_mask(u64::MAX, function, "iface_attr")?;
    let field_mask = translate(their_mask, &FIELD_BITS, true);
    let mut ours = uct_iface_attr_v2_t {
        field_mask,
        max_put_sgl_zcopy_count: 0,
        max_get_sgl_zcopy_count: 0,
        cap: Default::default(),
        tx_token_length: 0,
        rx_token_length: 0,
        tx_token: std::ptr::null(),
        rx_token: std::ptr::null_mut(),
    };
    if let Some(tx_token) = masked_member!(theirs, their_mask, TX_TOKEN => tx_token) {
        ours.tx_token = tx_token;
    }
    if let Some(rx_token) = masked_member!(theirs, their_mask, RX_TOKEN => rx_token) {
        ours.rx_token = rx_token;
    }
    Ok(ours)
}

/// 1.22's bits of the fields this module reads or writes.
const MAX_PUT_SGL_ZCOPY_COUNT: u64 = 1 << 0;
const CAP_FLAGS: u64 = 1 << 1;
const TX_TOKEN_LENGTH: u64 = 1 << 2;
const RX_TOKEN_LENGTH: u64 = 1 << 3;
const TX_TOKEN: u64 = 1 << 4;
const RX_TOKEN: u64 = 1 << 5;

/// Copies the answer to the 1.22 caller's struct: only the fields it asked
/// for (the RX token was written into its buffer already).
pub(crate) fn answer(ours: &uct_iface_attr_v2_t, theirs: &MaskedOut<IfaceAttrV2V122>) {
    let asked = translate(ours.field_mask, &FIELD_BITS, false);
    masked_write!(theirs, asked, MAX_PUT_SGL_ZCOPY_COUNT
        => max_put_sgl_zcopy_count = ours.max_put_sgl_zcopy_count);
    masked_write!(theirs, asked, CAP_FLAGS
        => cap_flags = translate(ours.cap.flags, &CAP_BITS, false));
    masked_write!(theirs, asked, TX_TOKEN_LENGTH => tx_token_length = ours.tx_token_length);
    masked_write!(theirs, asked, RX_TOKEN_LENGTH => rx_token_length = ours.rx_token_length);
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
            let theirs_arg = MaskedOut::of(&mut theirs);
            let mut ours = request(&theirs_arg, "test").unwrap();
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
            answer(&ours, &theirs_arg);
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
