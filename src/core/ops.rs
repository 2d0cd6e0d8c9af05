//! The operations table behind every iface, the "not supported" entry for
//! each slot, and the "destroyed endpoint" entry for each slot.
//!
//! Binaries built against UCX's headers jump straight through
//! `ep->iface->ops.<slot>`, so no slot may be NULL. A transport starts from
//! [`unsupported_iface_ops`] and overwrites the slots it implements. The
//! dead iface of endpoint tombstones ([`crate::core::tombstone`]) uses
//! [`dead_iface_ops`]. Each stub has exactly the slot's C signature (the
//! compiler checks this when the stub is stored in the typed slot), because
//! calling a function through a pointer of a different type is undefined
//! behaviour.

use std::ffi::{c_int, c_uint, c_void};

use crate::abi::*;

/// `UCS_ERR_UNSUPPORTED` as the `ssize_t` the bcopy operations return.
const UNSUPPORTED_LEN: isize = UCS_ERR_UNSUPPORTED as isize;

/// `UCS_STATUS_PTR(UCS_ERR_UNSUPPORTED)`: the error encoded as a pointer.
fn unsupported_status_ptr() -> ucs_status_ptr_t {
    UNSUPPORTED_LEN as ucs_status_ptr_t
}

fn log_unsupported(slot: &str) {
    tracing::debug!("{slot}: not supported by this transport");
}

/// How a failure is returned through each C return type of the ops slots.
pub(crate) trait FromStatus {
    fn from_status(status: Status) -> Self;
}

impl FromStatus for ucs_status_t {
    fn from_status(status: Status) -> Self {
        status.raw()
    }
}

/// `ssize_t` results (bcopy lengths) carry errors as negative statuses.
impl FromStatus for isize {
    fn from_status(status: Status) -> Self {
        isize::from(status.raw())
    }
}

/// `ucs_status_ptr_t` carries errors as `UCS_STATUS_PTR(status)`.
impl FromStatus for ucs_status_ptr_t {
    fn from_status(status: Status) -> Self {
        isize::from(status.raw()) as ucs_status_ptr_t
    }
}

/// Progress counts: nothing was done.
impl FromStatus for c_uint {
    fn from_status(_: Status) -> Self {
        0
    }
}

/// `void` slots: nothing to return (the failure was logged).
impl FromStatus for () {
    fn from_status(_: Status) -> Self {}
}

/// `int` answers (reachability): "no".
impl FromStatus for c_int {
    fn from_status(_: Status) -> Self {
        0
    }
}

/// Every slot's first argument is a pointer (the ep, the iface, or the ep
/// parameters); the stubs take it under this name to report it.
macro_rules! unsupported_ops {
    ($( $slot:ident ( $first:ty $(, $arg:ty)* ) -> $ret:ty = $value:expr; )*) => {
        /// One stub per slot, named after the slot.
        pub mod stubs {
            use super::*;
            $(
                /// Returns the "not supported" result of this slot.
                ///
                /// # Safety
                /// None needed: every argument is ignored; `unsafe` only
                /// because the slot type is an `unsafe extern "C" fn`.
                pub unsafe extern "C" fn $slot(_: $first $(, _: $arg)*) -> $ret {
                    log_unsupported(stringify!($slot));
                    $value
                }
            )*
        }

        /// One stub per slot for the dead iface of endpoint tombstones.
        pub mod dead_stubs {
            use super::*;
            $(
                /// Reports the call on a destroyed endpoint (rate-limited log
                /// line) and returns [`crate::core::destroyed_ep::DESTROYED_EP_STATUS`]
                /// in this slot's return type. Does nothing else.
                ///
                /// # Safety
                /// None needed: the handle is only printed, never read, and
                /// every other argument is ignored.
                pub unsafe extern "C" fn $slot(handle: $first $(, _: $arg)*) -> $ret {
                    let status = crate::core::destroyed_ep::destroyed_ep_call(
                        stringify!($slot),
                        handle as *const c_void,
                    );
                    <$ret as FromStatus>::from_status(status)
                }
            )*
        }

        /// An operations table whose every slot reports "not supported".
        pub fn unsupported_iface_ops() -> uct_iface_ops_t {
            uct_iface_ops_t {
                $( $slot: Some(stubs::$slot), )*
            }
        }

        /// An operations table whose every slot reports a destroyed endpoint.
        pub fn dead_iface_ops() -> uct_iface_ops_t {
            uct_iface_ops_t {
                $( $slot: Some(dead_stubs::$slot), )*
            }
        }
    };
}

unsupported_ops! {
    ep_put_short(uct_ep_h, *const c_void, c_uint, u64, uct_rkey_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_put_bcopy(uct_ep_h, uct_pack_callback_t, *mut c_void, u64, uct_rkey_t) -> isize = UNSUPPORTED_LEN;
    ep_put_zcopy(uct_ep_h, *const uct_iov_t, usize, u64, uct_rkey_t, *mut uct_completion_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_get_short(uct_ep_h, *mut c_void, c_uint, u64, uct_rkey_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_get_bcopy(uct_ep_h, uct_unpack_callback_t, *mut c_void, usize, u64, uct_rkey_t, *mut uct_completion_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_get_zcopy(uct_ep_h, *const uct_iov_t, usize, u64, uct_rkey_t, *mut uct_completion_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_am_short(uct_ep_h, u8, u64, *const c_void, c_uint) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_am_short_iov(uct_ep_h, u8, *const uct_iov_t, usize) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_am_bcopy(uct_ep_h, u8, uct_pack_callback_t, *mut c_void, c_uint) -> isize = UNSUPPORTED_LEN;
    ep_am_zcopy(uct_ep_h, u8, *const c_void, c_uint, *const uct_iov_t, usize, c_uint, *mut uct_completion_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_atomic_cswap64(uct_ep_h, u64, u64, u64, uct_rkey_t, *mut u64, *mut uct_completion_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_atomic_cswap32(uct_ep_h, u32, u32, u64, uct_rkey_t, *mut u32, *mut uct_completion_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_atomic32_post(uct_ep_h, uct_atomic_op_t, u32, u64, uct_rkey_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_atomic64_post(uct_ep_h, uct_atomic_op_t, u64, u64, uct_rkey_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_atomic32_fetch(uct_ep_h, uct_atomic_op_t, u32, *mut u32, u64, uct_rkey_t, *mut uct_completion_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_atomic64_fetch(uct_ep_h, uct_atomic_op_t, u64, *mut u64, u64, uct_rkey_t, *mut uct_completion_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_tag_eager_short(uct_ep_h, uct_tag_t, *const c_void, usize) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_tag_eager_bcopy(uct_ep_h, uct_tag_t, u64, uct_pack_callback_t, *mut c_void, c_uint) -> isize = UNSUPPORTED_LEN;
    ep_tag_eager_zcopy(uct_ep_h, uct_tag_t, u64, *const uct_iov_t, usize, c_uint, *mut uct_completion_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_tag_rndv_zcopy(uct_ep_h, uct_tag_t, *const c_void, c_uint, *const uct_iov_t, usize, c_uint, *mut uct_completion_t) -> ucs_status_ptr_t = unsupported_status_ptr();
    ep_tag_rndv_cancel(uct_ep_h, *mut c_void) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_tag_rndv_request(uct_ep_h, uct_tag_t, *const c_void, c_uint, c_uint) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    iface_tag_recv_zcopy(uct_iface_h, uct_tag_t, uct_tag_t, *const uct_iov_t, usize, *mut uct_tag_context_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    iface_tag_recv_cancel(uct_iface_h, *mut uct_tag_context_t, c_int) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_pending_add(uct_ep_h, *mut uct_pending_req_t, c_uint) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_pending_purge(uct_ep_h, uct_pending_purge_callback_t, *mut c_void) -> () = ();
    ep_flush(uct_ep_h, c_uint, *mut uct_completion_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_fence(uct_ep_h, c_uint) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_check(uct_ep_h, c_uint, *mut uct_completion_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_create(*const uct_ep_params_t, *mut uct_ep_h) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_connect(uct_ep_h, *const uct_ep_connect_params_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_disconnect(uct_ep_h, c_uint) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    cm_ep_conn_notify(uct_ep_h) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_destroy(uct_ep_h) -> () = ();
    ep_get_address(uct_ep_h, *mut uct_ep_addr_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    ep_connect_to_ep(uct_ep_h, *const uct_device_addr_t, *const uct_ep_addr_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    iface_accept(uct_iface_h, uct_conn_request_h) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    iface_reject(uct_iface_h, uct_conn_request_h) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    iface_flush(uct_iface_h, c_uint, *mut uct_completion_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    iface_fence(uct_iface_h, c_uint) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    iface_progress_enable(uct_iface_h, c_uint) -> () = ();
    iface_progress_disable(uct_iface_h, c_uint) -> () = ();
    iface_progress(uct_iface_h) -> c_uint = 0;
    iface_event_fd_get(uct_iface_h, *mut c_int) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    iface_event_arm(uct_iface_h, c_uint) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    iface_close(uct_iface_h) -> () = ();
    iface_query(uct_iface_h, *mut uct_iface_attr_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    iface_get_device_address(uct_iface_h, *mut uct_device_addr_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    iface_get_address(uct_iface_h, *mut uct_iface_addr_t) -> ucs_status_t = UCS_ERR_UNSUPPORTED;
    iface_is_reachable(uct_iface_h, *const uct_device_addr_t, *const uct_iface_addr_t) -> c_int = 0;
}

/// The slots of `ops` as words (0 for an empty slot), for tests.
#[cfg(test)]
pub(crate) fn slot_words(ops: &uct_iface_ops_t) -> &[usize] {
    let slots = std::mem::size_of::<uct_iface_ops_t>() / std::mem::size_of::<usize>();
    // SAFETY: uct_iface_ops_t is a repr(C) struct of `slots` pointer-sized
    // Option<fn> fields; reading it as words only inspects their bits.
    unsafe { std::slice::from_raw_parts(ops as *const _ as *const usize, slots) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_is_filled() {
        let ops = unsupported_iface_ops();
        let words = slot_words(&ops);
        assert_eq!(words.len(), 50);
        assert!(words.iter().all(|&word| word != 0));
    }

    #[test]
    fn dead_stubs_report_a_destroyed_ep_in_each_return_type() {
        let ops = dead_iface_ops();
        let words = slot_words(&ops);
        let unsupported = unsupported_iface_ops();
        let others = slot_words(&unsupported);
        assert!(words
            .iter()
            .zip(others)
            .all(|(dead, other)| *dead != 0 && dead != other));
        let invalid = UCS_ERR_INVALID_PARAM;
        let fake_ep = 0x1000 as uct_ep_h;
        // SAFETY: the dead stubs only print their first argument.
        unsafe {
            let put_short = ops.ep_put_short.expect("slot filled");
            assert_eq!(put_short(fake_ep, std::ptr::null(), 8, 0, 0), invalid);
            let am_bcopy = ops.ep_am_bcopy.expect("slot filled");
            assert_eq!(
                am_bcopy(fake_ep, 0, None, std::ptr::null_mut(), 0),
                isize::from(invalid)
            );
            let rndv = ops.ep_tag_rndv_zcopy.expect("slot filled");
            let ptr = rndv(
                fake_ep,
                0,
                std::ptr::null(),
                0,
                std::ptr::null(),
                0,
                0,
                std::ptr::null_mut(),
            );
            assert_eq!(ptr as isize, isize::from(invalid));
            let progress = ops.iface_progress.expect("slot filled");
            assert_eq!(progress(std::ptr::null_mut()), 0);
            let reachable = ops.iface_is_reachable.expect("slot filled");
            assert_eq!(
                reachable(std::ptr::null_mut(), std::ptr::null(), std::ptr::null()),
                0
            );
        }
    }

    #[test]
    fn stubs_report_unsupported() {
        let ops = unsupported_iface_ops();
        let put_short = ops.ep_put_short.expect("slot filled");
        let put_bcopy = ops.ep_put_bcopy.expect("slot filled");
        let rndv = ops.ep_tag_rndv_zcopy.expect("slot filled");
        let progress = ops.iface_progress.expect("slot filled");
        let null_ep = std::ptr::null_mut();
        // SAFETY: the stubs ignore every argument.
        unsafe {
            assert_eq!(
                put_short(null_ep, std::ptr::null(), 0, 0, 0),
                UCS_ERR_UNSUPPORTED
            );
            assert_eq!(put_bcopy(null_ep, None, std::ptr::null_mut(), 0, 0), -22);
            let ptr = rndv(
                null_ep,
                0,
                std::ptr::null(),
                0,
                std::ptr::null(),
                0,
                0,
                std::ptr::null_mut(),
            );
            assert_eq!(ptr as isize, -22);
            assert_eq!(progress(std::ptr::null_mut()), 0);
        }
    }
}
