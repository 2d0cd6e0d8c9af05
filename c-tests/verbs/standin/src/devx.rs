//! libmlx5's DEVX entry points (`mlx5dv_devx_*`), answering as libmlx5
//! does on a kernel without DEVX: every call fails with EOPNOTSUPP and
//! touches none of its arguments. UCX probes DEVX first
//! (`mlx5dv_open_device` with `MLX5DV_CONTEXT_FLAGS_DEVX`, refused in
//! `mlx5dv`) and, told it is missing, takes its verbs + mlx5dv path; these
//! are here so that its module links at all, and so that a caller that
//! tries them anyway gets a clean error.

use std::ffi::{c_int, c_void};

use crate::ibv::set_errno;

/// A pointer argument the calls never read.
type Opaque = *mut c_void;

fn no_devx(function: &str) {
    tracing::debug!("verbs stand-in: {function}: no DEVX (EOPNOTSUPP)");
    set_errno(libc::EOPNOTSUPP);
}

/// Defines DEVX functions returning `c_int` (EOPNOTSUPP, errno set).
macro_rules! devx_int {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[doc = concat!("libmlx5's `", stringify!($name), "` without DEVX: EOPNOTSUPP.")]
        #[no_mangle]
        pub extern "C" fn $name($(_: $ty),*) -> c_int {
            no_devx(stringify!($name));
            libc::EOPNOTSUPP
        }
    )*};
}

/// Defines DEVX functions returning a pointer (NULL, errno EOPNOTSUPP).
macro_rules! devx_null {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[doc = concat!("libmlx5's `", stringify!($name), "` without DEVX: NULL, errno EOPNOTSUPP.")]
        #[no_mangle]
        pub extern "C" fn $name($(_: $ty),*) -> Opaque {
            no_devx(stringify!($name));
            std::ptr::null_mut()
        }
    )*};
}

/// Defines DEVX functions returning nothing (they have nothing to free).
macro_rules! devx_void {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[doc = concat!("libmlx5's `", stringify!($name), "` without DEVX: nothing to release.")]
        #[no_mangle]
        pub extern "C" fn $name($(_: $ty),*) {
            no_devx(stringify!($name));
        }
    )*};
}

devx_int! {
    mlx5dv_devx_general_cmd(context: Opaque, cmd_in: Opaque, inlen: usize, out: Opaque, outlen: usize);
    mlx5dv_devx_obj_query(obj: Opaque, cmd_in: Opaque, inlen: usize, out: Opaque, outlen: usize);
    mlx5dv_devx_obj_modify(obj: Opaque, cmd_in: Opaque, inlen: usize, out: Opaque, outlen: usize);
    mlx5dv_devx_obj_destroy(obj: Opaque);
    mlx5dv_devx_qp_query(qp: Opaque, cmd_in: Opaque, inlen: usize, out: Opaque, outlen: usize);
    mlx5dv_devx_qp_modify(qp: Opaque, cmd_in: Opaque, inlen: usize, out: Opaque, outlen: usize);
    mlx5dv_devx_umem_dereg(umem: Opaque);
    mlx5dv_devx_subscribe_devx_event(channel: Opaque, obj: Opaque, events_sz: u16, events: Opaque, cookie: u64);
}

devx_null! {
    mlx5dv_devx_obj_create(context: Opaque, cmd_in: Opaque, inlen: usize, out: Opaque, outlen: usize);
    mlx5dv_devx_umem_reg(context: Opaque, addr: Opaque, size: usize, access: u32);
    mlx5dv_devx_alloc_uar(context: Opaque, flags: u32);
    mlx5dv_devx_create_event_channel(context: Opaque, flags: c_int);
}

devx_void! {
    mlx5dv_devx_free_uar(uar: Opaque);
    mlx5dv_devx_destroy_event_channel(channel: Opaque);
}

/// libmlx5's `mlx5dv_devx_get_event` without DEVX: -1, errno EOPNOTSUPP.
#[no_mangle]
pub extern "C" fn mlx5dv_devx_get_event(_: Opaque, _: Opaque, _: usize) -> isize {
    no_devx("mlx5dv_devx_get_event");
    -1
}
