//! UCT functions this library exports but does not implement yet: memory
//! allocation and the memory-key functions beyond registration, scatter-gather
//! operations.
//!
//! They exist so that a binary linked against UCX's libraries finds every
//! symbol it references (also with `-z now`), and gets a clear
//! `UCS_ERR_UNSUPPORTED` plus one log line instead of a crash if it calls one.
//! None of them reads its arguments. When one gets implemented it moves to
//! its API group's file.

use std::ffi::c_void;

use crate::abi::*;

macro_rules! not_implemented {
    ($( $name:ident ( $($arg:ty),* ) -> $ret:ty = $value:expr; )*) => {
        $(
            /// Not implemented yet: logs one line and reports failure.
            ///
            /// # Safety
            /// None needed: no argument is read.
            #[no_mangle]
            pub unsafe extern "C" fn $name($(_: $arg),*) -> $ret {
                crate::api::enter();
                tracing::warn!("{}: not implemented yet", stringify!($name));
                $value
            }
        )*
    };
}

not_implemented! {
    uct_md_detect_memory_type(uct_md_h, *const c_void, usize, *mut ucs_memory_type_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    uct_md_mem_query(uct_md_h, *const c_void, usize, *mut uct_md_mem_attr_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    uct_rkey_ptr(uct_component_h, *mut uct_rkey_bundle_t, u64, *mut *mut c_void) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    uct_md_mem_query_v2(uct_md_h, *const c_void, usize, *mut uct_md_mem_attr_v2_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    uct_md_mem_attach(uct_md_h, *const c_void, *mut uct_md_mem_attach_params_t, *mut uct_mem_h) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    uct_ep_put_sgl_zcopy(uct_ep_h, *const *mut c_void, *const usize, *const uct_mem_h, *const u64, *const uct_rkey_t, *const usize, *const usize, usize, *mut uct_completion_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    uct_ep_get_sgl_zcopy(uct_ep_h, *const *mut c_void, *const usize, *const uct_mem_h, *const u64, *const uct_rkey_t, *const usize, *const usize, usize, *mut uct_completion_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
}
