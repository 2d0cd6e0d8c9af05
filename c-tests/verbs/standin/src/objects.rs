//! The objects the stand-in hands out, each a `repr(C)` struct whose first
//! member is the public rdma-core head the caller reads (so the pointer the
//! caller holds is also ours), and the table of live handles that lets
//! every entry point refuse a pointer it did not make (rdma-core would
//! crash; we return EINVAL).

use std::collections::HashMap;
use std::ffi::c_void;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use uct::hca::soft::{
    SoftAh, SoftCq, SoftDevice, SoftEventChannel, SoftMr, SoftPd, SoftQp, SoftSrq,
};
use uct::hca::verbs::ffi;
use uct::mlx5;

use crate::devices::Device;
use crate::layout::{ContextHead, CqTail};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Context,
    Pd,
    Mr,
    Channel,
    Cq,
    Srq,
    Qp,
    Ah,
    DeviceList,
}

/// A type of object in the live table.
pub trait Object {
    const KIND: Kind;
}

fn live() -> MutexGuard<'static, HashMap<usize, Kind>> {
    static LIVE: OnceLock<Mutex<HashMap<usize, Kind>>> = OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Records a raw allocation as a live handle of `kind`.
pub fn register(ptr: *const c_void, kind: Kind) {
    live().insert(ptr as usize, kind);
}

/// Forgets a live handle; false if `ptr` was not one of `kind`.
pub fn unregister(ptr: *const c_void, kind: Kind) -> bool {
    let mut table = live();
    if table.get(&(ptr as usize)) != Some(&kind) {
        return false;
    }
    table.remove(&(ptr as usize));
    true
}

/// How many handles are live (all kinds, device lists included).
pub fn live_count() -> usize {
    live().len()
}

/// Moves `object` to the heap and records it; the returned pointer is the
/// handle (it points at the object's head).
pub fn adopt<T: Object>(object: T) -> *mut T {
    let ptr = Box::into_raw(Box::new(object));
    register(ptr.cast_const().cast(), T::KIND);
    ptr
}

/// The object behind a handle, if `ptr` is a live handle of type `T`.
///
/// # Safety
/// The reference must not outlive the handle: as with rdma-core, using an
/// object while another thread destroys it is the caller's bug.
pub unsafe fn get<'a, T: Object, H>(ptr: *const H) -> Option<&'a T> {
    if ptr.is_null() || live().get(&(ptr as usize)) != Some(&T::KIND) {
        return None;
    }
    // SAFETY: live handles of kind T::KIND are exactly the pointers made by
    // `adopt::<T>` and not yet released, so `ptr` is a valid T.
    Some(unsafe { &*ptr.cast::<T>() })
}

/// Takes a handle out of the table and back into a `Box` (to drop it).
///
/// # Safety
/// No reference obtained from [`get`] may be used afterwards.
pub unsafe fn release<T: Object, H>(ptr: *const H) -> Option<Box<T>> {
    if !unregister(ptr.cast(), T::KIND) {
        return None;
    }
    // SAFETY: it was a live handle of T (checked and removed above), made by
    // `Box::into_raw` in `adopt`, released exactly once.
    Some(unsafe { Box::from_raw(ptr.cast::<T>().cast_mut()) })
}

/// A zeroed, page-aligned page: the UAR page of a CQ (the watcher takes
/// its arm doorbell).
pub struct Page(*mut u8);

const PAGE: usize = 4096;

impl Page {
    pub fn new() -> Option<Page> {
        let layout = std::alloc::Layout::from_size_align(PAGE, PAGE).ok()?;
        // SAFETY: non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        (!ptr.is_null()).then_some(Page(ptr))
    }

    pub fn ptr(&self) -> *mut c_void {
        self.0.cast()
    }

    /// The 8 bytes at `offset` (a multiple of 8 below the page size).
    pub fn word_at(&self, offset: usize) -> *mut u64 {
        debug_assert!(offset % 8 == 0 && offset + 8 <= PAGE);
        self.0.wrapping_add(offset).cast()
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        if let Ok(layout) = std::alloc::Layout::from_size_align(PAGE, PAGE) {
            // SAFETY: allocated with this layout in `new`, freed once.
            unsafe { std::alloc::dealloc(self.0, layout) };
        }
    }
}

/// Bytes of each of the two BlueFlame halves (`mlx5dv_qp.bf.size`).
pub const BF_SIZE: u32 = 256;

#[repr(C)]
pub struct Context {
    pub head: ContextHead,
    pub device: &'static Device,
    pub soft: SoftDevice,
    /// The descriptor behind `ibv_context.async_fd`.
    pub async_events: OwnedFd,
    /// PDs, channels and CQs made from it.
    pub children: AtomicU32,
}

#[repr(C)]
pub struct Pd {
    pub head: ffi::ibv_pd,
    pub context: *const Context,
    pub soft: SoftPd,
    /// MRs, SRQs and QPs made from it.
    pub children: AtomicU32,
}

#[repr(C)]
pub struct Mr {
    pub head: ffi::ibv_mr,
    pub pd: *const Pd,
    pub soft: SoftMr,
}

/// A completion channel: its fd is an epoll set of the eventfds of its
/// CQs (one soft event channel per CQ, so that an event names its CQ).
#[repr(C)]
pub struct Channel {
    pub head: ffi::ibv_comp_channel,
    pub context: *const Context,
    pub epoll: OwnedFd,
    pub cqs: AtomicU32,
}

#[repr(C)]
pub struct Cq {
    pub head: ffi::ibv_cq,
    pub tail: CqTail,
    pub context: *const Context,
    pub channel: *const Channel,
    pub soft: SoftCq,
    /// The CQ's own event descriptor, in `channel`'s epoll set.
    pub events: Option<SoftEventChannel>,
    pub uar: Page,
    /// QPs using it.
    pub users: AtomicU32,
    pub events_delivered: AtomicU32,
    pub events_acked: AtomicU32,
}

impl Cq {
    /// What mlx5 does with an arm doorbell naming consumer index `ci`: if
    /// the CQ already holds a CQE at `ci` (the caller is behind), signal the
    /// channel now; else arm the soft CQ for its next CQE. Solicited-only
    /// arms come here too: an event for any completion is a superset (at
    /// worst a spurious wake-up). The arm sequence number is not checked.
    ///
    /// Only the CQE at `ci` itself is looked at: a `ci` a whole ring behind
    /// (which a transport sized against overrun never sends) reads as
    /// "nothing yet".
    pub fn arm_from(&self, ci: u32) {
        if self.holds_cqe_at(ci) {
            self.signal();
            return;
        }
        // Arm, then look again: a CQE written in between either sees the
        // arm (and signals) or is seen here (then the soft CQ stays armed
        // too, and its next CQE makes one spurious event).
        self.soft.arm();
        if self.holds_cqe_at(ci) {
            self.signal();
        }
    }

    fn holds_cqe_at(&self, ci: u32) -> bool {
        let ring = self.soft.ring();
        let entry = self.soft.cqe_size();
        let slot = (ci & (ring.cqe_count - 1)) as usize * entry + entry - mlx5::CQE_LEN;
        // SAFETY: the owner byte of an entry inside the soft CQ's ring,
        // alive with `self`; the device stores it last, with release order.
        let op_own = unsafe {
            (*ring
                .buf
                .add(slot + mlx5::CQE_OP_OWN_OFFSET)
                .cast::<AtomicU8>())
            .load(Ordering::Acquire)
        };
        mlx5::cqe_is_sw_owned(op_own, ci, ring.cqe_count)
    }

    fn signal(&self) {
        if let Some(events) = &self.events {
            let one: u64 = 1;
            // SAFETY: 8 bytes from a live u64 to the CQ's own eventfd; a
            // failure (EAGAIN at the counter's limit) means it is already
            // readable.
            unsafe { libc::write(events.fd(), std::ptr::from_ref(&one).cast(), 8) };
        }
    }
}

#[repr(C)]
pub struct Srq {
    pub head: ffi::ibv_srq,
    pub pd: *const Pd,
    pub soft: SoftSrq,
    pub users: AtomicU32,
}

#[repr(C)]
pub struct Qp {
    pub head: ffi::ibv_qp,
    pub pd: *const Pd,
    pub send_cq: *const Cq,
    pub recv_cq: *const Cq,
    /// The SRQ an RC QP receives from; NULL for a UD QP, which has a
    /// receive queue of its own.
    pub srq: *const Srq,
    pub soft: SoftQp,
    pub blueflame: crate::trapped_doorbell::RegisterPage,
    /// The creation attributes (what `ibv_query_qp` reports as init_attr).
    pub init: ffi::ibv_qp_init_attr,
    /// Attributes set by `ibv_modify_qp` so far (reported by query, with
    /// the live state and PSNs from the soft QP).
    pub attrs: Mutex<ffi::ibv_qp_attr>,
    /// Receives posted through `ibv_post_recv` (`verbs_post`).
    pub verbs_receives: Mutex<u32>,
}

/// An address handle: what `ibv_create_ah` was given, the soft device's
/// handle for that port, and the mlx5 address vector (the 48-byte datagram
/// segment without the destination QPN and Q_Key) that
/// `mlx5dv_init_obj(MLX5DV_OBJ_AH)` points at and UD send WQEs copy.
#[repr(C)]
pub struct Ah {
    pub head: crate::layout::AhHead,
    pub pd: *const Pd,
    pub attr: ffi::ibv_ah_attr,
    pub soft: SoftAh,
    pub av: [u8; mlx5::DatagramSeg::LEN],
}

macro_rules! object {
    ($($ty:ident => $kind:ident),* $(,)?) => {$(
        impl Object for $ty {
            const KIND: Kind = Kind::$kind;
        }
        // SAFETY: the raw pointers inside point at other live stand-in
        // objects (kept alive by their use counts) or at the caller's own
        // memory, only passed along; the soft handles are thread-safe.
        unsafe impl Send for $ty {}
        // SAFETY: as above; shared state is atomic or behind a mutex.
        unsafe impl Sync for $ty {}
    )*};
}
object!(Context => Context, Pd => Pd, Mr => Mr, Channel => Channel, Cq => Cq, Srq => Srq, Qp => Qp, Ah => Ah);
