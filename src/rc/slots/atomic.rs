//! The atomic slots: post, fetch and compare-and-swap, 32 and 64 bits,
//! over [`crate::rc::atomic::post`].

use std::ffi::c_uint;

use super::args::{in_progress, slot, status_of, EpArg};
use crate::abi::*;
use crate::failover::{PostedOp, RemoteTarget};
use crate::mlx5::AtomicSize;
use crate::rc::atomic::{post, Atomic};

/// `uct_ep_atomic{32,64}_post` and `_fetch`: the op's WQE first (an op not
/// offered is refused before the handle is looked at), then the post.
macro_rules! atomic_op_slots {
    ($($post:ident, $fetch:ident: $value:ty, $size:ident;)+) => {$(
        slot! {
            fn $post(ep: uct_ep_h, opcode: c_uint, value: $value, remote_addr: u64,
                     rkey: uct_rkey_t) -> ucs_status_t;
            take ep: EpArg = (ep);
            {
                const F: &str = concat!("uct_", stringify!($post));
                let op = PostedOp::AtomicPost {
                    remote: RemoteTarget { address: remote_addr, rkey },
                    op: opcode,
                    size: AtomicSize::$size,
                    value: value.into(),
                };
                status_of(Atomic::new(F, op).and_then(|atomic| post(F, ep.ep_and_iface(F)?, atomic)))
            }
        }

        slot! {
            fn $fetch(ep: uct_ep_h, opcode: c_uint, value: $value, result: *mut $value,
                      remote_addr: u64, rkey: uct_rkey_t, comp: *mut uct_completion_t)
                -> ucs_status_t;
            take ep: EpArg = (ep);
            {
                const F: &str = concat!("uct_", stringify!($fetch));
                let op = PostedOp::AtomicFetch {
                    remote: RemoteTarget { address: remote_addr, rkey },
                    op: opcode,
                    size: AtomicSize::$size,
                    value: value.into(),
                    result: result.cast(),
                    comp,
                };
                in_progress(Atomic::new(F, op).and_then(|atomic| post(F, ep.ep_and_iface(F)?, atomic)))
            }
        }
    )+};
}

atomic_op_slots! {
    ep_atomic32_post, ep_atomic32_fetch: u32, Bits32;
    ep_atomic64_post, ep_atomic64_fetch: u64, Bits64;
}

/// `uct_ep_atomic_cswap{32,64}`.
macro_rules! cswap_slots {
    ($($name:ident: $value:ty, $size:ident;)+) => {$(
        slot! {
            fn $name(ep: uct_ep_h, compare: $value, swap: $value, remote_addr: u64,
                     rkey: uct_rkey_t, result: *mut $value, comp: *mut uct_completion_t)
                -> ucs_status_t;
            take ep: EpArg = (ep);
            {
                const F: &str = concat!("uct_", stringify!($name));
                let op = PostedOp::AtomicCswap {
                    remote: RemoteTarget { address: remote_addr, rkey },
                    size: AtomicSize::$size,
                    compare: compare.into(),
                    swap: swap.into(),
                    result: result.cast(),
                    comp,
                };
                in_progress(Atomic::new(F, op).and_then(|atomic| post(F, ep.ep_and_iface(F)?, atomic)))
            }
        }
    )+};
}

cswap_slots! {
    ep_atomic_cswap32: u32, Bits32;
    ep_atomic_cswap64: u64, Bits64;
}
