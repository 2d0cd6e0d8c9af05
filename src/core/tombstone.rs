//! Destroyed endpoints stay behind as tombstones until their iface closes.
//!
//! A binary built against UCX's headers calls `ep->iface->ops.<slot>(ep, …)`
//! inline: it reads the first word of the ep before any of our code runs.
//! If `uct_ep_destroy` freed the ep, a later call on the stale handle would
//! read freed memory and jump through whatever is there. Instead, destroy
//! drops everything the ep owns (QP, rings, tables) and leaves its memory
//! as a tombstone whose first word points at the [dead iface](dead_iface):
//! a static iface whose every ops slot logs one line (rate-limited) and
//! returns the destroyed-ep status ([`crate::core::destroyed_ep`]) without
//! touching anything. Our exported entry points go through the same table,
//! so they land there too, and transports need no liveness check on the
//! post path.
//!
//! The memory is reclaimed by a [`TombstoneYard`] per iface:
//! - all of it at iface close (using an ep after its iface closed is
//!   invalid in UCX too);
//! - before that, a tombstone's memory is reused for a new ep of the same
//!   iface only once [`EP_QUARANTINE`] newer tombstones exist. So memory
//!   stays bounded (at most the peak number of live eps plus
//!   `EP_QUARANTINE` ep structs per iface, whatever the create/destroy
//!   churn), and a handle reliably reports "destroyed" until at least
//!   `EP_QUARANTINE` more eps of its iface were destroyed.
//!
//! The aliasing limit: once its memory is reused, a stale handle *is* the
//! new ep, and ops on it go to the new ep's connection. Nothing can tell
//! the two apart at that point (the caller holds the same pointer), which
//! is why reuse waits for the quarantine and never crosses ifaces.

use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::OnceLock;

use crate::abi::*;
use crate::core::iface::{BaseIface, UNSUPPORTED_INTERNAL_OPS};
use crate::core::ops::dead_iface_ops;

/// How many tombstones of an iface stay dead before their memory may be
/// reused for a new ep of that iface (oldest first).
pub const EP_QUARANTINE: usize = 1024;

/// The static iface of tombstones: a [`BaseIface`] so that anything reading
/// an iface of ours through the handle reads inside it, with every public
/// slot from [`dead_iface_ops`] and its tag cleared, so no entry point that
/// checks the tag (AM handlers, v2 queries, transport casts) accepts it as
/// an open iface or writes to it.
struct DeadIface(BaseIface);

// SAFETY: built once, never written afterwards (no entry point accepts it
// as an open iface: its tag is cleared); its md and worker pointers are
// NULL and its AM table empty, so sharing it between threads shares no
// mutable state.
unsafe impl Sync for DeadIface {}
// SAFETY: as for Sync; nothing in it belongs to a thread.
unsafe impl Send for DeadIface {}

static DEAD_IFACE: OnceLock<DeadIface> = OnceLock::new();

/// The iface pointer every tombstone starts with.
pub fn dead_iface() -> uct_iface_h {
    let dead = DEAD_IFACE.get_or_init(|| {
        let mut base = BaseIface::with_ops(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            dead_iface_ops(),
            &UNSUPPORTED_INTERNAL_OPS,
        );
        base.invalidate();
        DeadIface(base)
    });
    // Handed to C as `*mut`; nothing ever writes through it (see DeadIface).
    &dead.0.iface as *const uct_iface as uct_iface_h
}

/// Whether `iface` is the dead iface (an ep handle whose `iface` is this
/// is a tombstone).
pub fn is_dead_iface(iface: uct_iface_h) -> bool {
    DEAD_IFACE
        .get()
        .is_some_and(|dead| std::ptr::eq(&dead.0.iface, iface.cast::<uct_iface>()))
}

/// The tombstones of one iface's eps of type `T`, oldest first, and the
/// allocator of new eps' memory (see the module docs). Dropping the yard
/// frees every tombstone.
///
/// `T` must start with a `uct_ep` (`#[repr(C)]`, `uct_ep` first): a
/// tombstone is a `T`'s memory holding only that first field.
pub struct TombstoneYard<T> {
    graves: VecDeque<NonNull<T>>,
    quarantine: usize,
}

impl<T> TombstoneYard<T> {
    /// A yard that keeps the newest `quarantine` tombstones dead.
    pub fn new(quarantine: usize) -> Self {
        TombstoneYard {
            graves: VecDeque::new(),
            quarantine,
        }
    }

    /// Tombstones held (their memory stays allocated).
    pub fn len(&self) -> usize {
        self.graves.len()
    }

    pub fn is_empty(&self) -> bool {
        self.graves.is_empty()
    }

    /// Moves `value` to the heap for a new ep: into the oldest tombstone's
    /// memory when more than `quarantine` tombstones exist, else into new
    /// memory. The address is stable until the ep is buried.
    pub fn house(&mut self, value: T) -> NonNull<T> {
        if self.graves.len() > self.quarantine {
            if let Some(grave) = self.graves.pop_front() {
                // SAFETY: a grave is memory for one T (allocated as
                // Box<T> here or earlier) whose previous value was dropped
                // before it was buried; writing does not drop the tombstone
                // left in it, which owns nothing.
                unsafe { grave.as_ptr().write(value) };
                return grave;
            }
        }
        NonNull::from(Box::leak(Box::new(value)))
    }

    /// Makes `ep` a tombstone in place: drops the value (everything it owns
    /// is released), then writes the dead iface into its first word, and
    /// keeps the memory.
    ///
    /// # Safety
    /// `ep` came from [`TombstoneYard::house`] of this yard, holds a live
    /// `T` that starts with a `uct_ep`, and nothing uses it as a `T` after
    /// this call.
    pub unsafe fn bury(&mut self, ep: NonNull<T>) {
        // SAFETY: a live T by the contract; dropped once, here.
        unsafe { std::ptr::drop_in_place(ep.as_ptr()) };
        let tombstone = ep.as_ptr() as *mut uct_ep;
        // SAFETY: T starts with a uct_ep (contract), so its first word is
        // inside the allocation and aligned for a uct_ep.
        unsafe {
            tombstone.write(uct_ep {
                iface: dead_iface(),
            })
        };
        self.graves.push_back(ep);
    }
}

impl<T> Drop for TombstoneYard<T> {
    fn drop(&mut self) {
        for grave in self.graves.drain(..) {
            // SAFETY: allocated as a Box<T> by `house`; its value was
            // dropped when it was buried, so it is freed as uninitialised
            // memory of the same layout without dropping anything.
            drop(unsafe { Box::from_raw(grave.as_ptr() as *mut MaybeUninit<T>) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    /// A stand-in ep that counts its drops.
    #[repr(C)]
    struct FakeEp {
        uct: uct_ep,
        drops: Rc<()>,
    }

    /// Buries each of `eps`, housed in `yard`, live, and not used as a
    /// `FakeEp` afterwards.
    fn bury_all(yard: &mut TombstoneYard<FakeEp>, eps: &[NonNull<FakeEp>]) {
        for &ep in eps {
            // SAFETY: as the callers promise; each buried once.
            unsafe { yard.bury(ep) };
        }
    }

    fn fake(drops: &Rc<()>) -> FakeEp {
        FakeEp {
            uct: uct_ep {
                iface: std::ptr::null_mut(),
            },
            drops: Rc::clone(drops),
        }
    }

    #[test]
    fn buried_ep_points_at_the_dead_iface_and_is_dropped() {
        let drops = Rc::new(());
        let mut yard = TombstoneYard::new(4);
        let ep = yard.house(fake(&drops));
        assert_eq!(Rc::strong_count(&drops), 2);
        bury_all(&mut yard, &[ep]);
        assert_eq!(Rc::strong_count(&drops), 1, "the value was dropped");
        // SAFETY: the tombstone's first word, written by bury.
        let iface = unsafe { (*(ep.as_ptr() as *const uct_ep)).iface };
        assert!(is_dead_iface(iface));
        assert!(!is_dead_iface(std::ptr::null_mut()));
        assert_eq!(yard.len(), 1);
    }

    #[test]
    fn memory_is_reused_only_after_the_quarantine() {
        let drops = Rc::new(());
        let mut yard = TombstoneYard::new(3);
        let first: Vec<_> = (0..4).map(|_| yard.house(fake(&drops))).collect();
        bury_all(&mut yard, &first);
        // Four graves, quarantine three: the oldest is reused, once.
        let reused = yard.house(fake(&drops));
        assert_eq!(reused, first[0]);
        assert_eq!(yard.len(), 3);
        let fresh = yard.house(fake(&drops));
        assert!(!first.contains(&fresh), "the newest three stay dead");
        bury_all(&mut yard, &[reused, fresh]);
        drop(yard);
        assert_eq!(
            Rc::strong_count(&drops),
            1,
            "no value dropped twice or kept"
        );
    }

    #[test]
    fn churn_keeps_the_yard_bounded() {
        let drops = Rc::new(());
        let mut yard = TombstoneYard::new(16);
        let mut addresses = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let ep = yard.house(fake(&drops));
            addresses.insert(ep.as_ptr() as usize);
            bury_all(&mut yard, &[ep]);
        }
        // After a destroy: the quarantine plus the one the next create takes.
        assert_eq!(yard.len(), 17);
        assert_eq!(addresses.len(), 17, "no memory beyond the yard's");
    }

    #[test]
    fn dead_iface_is_not_an_open_iface() {
        let iface = dead_iface();
        assert_eq!(iface, dead_iface(), "one static iface");
        // SAFETY: the dead iface is a BaseIface.
        let base = unsafe { &*(iface as *const BaseIface) };
        assert!(!base.is_valid());
        let words = crate::core::ops::slot_words(&base.iface.ops);
        assert!(words.iter().all(|&word| word != 0));
    }
}
