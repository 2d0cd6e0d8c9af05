//! The "NIC doorbells" of the stand-in. Send (contract point 4): the
//! backend publishes its send counter in each QP's `dbrec[1]` and writes the
//! BlueFlame page; a NIC would then fetch the WQEs. CQ arm: the backend
//! writes the arm word into the CQ's `dbrec[1]` and the 64-bit arm doorbell
//! into the CQ's UAR page (`uct::hca::verbs::cq_arm`). Here one thread per
//! process watches every QP's `dbrec[1]` and, when it moves, rings the soft
//! device's doorbell for that QP (which consumes WQEs up to the counter);
//! and takes every CQ's arm doorbell slot (swapping in 0: a real doorbell
//! is never 0, its CQ number is not) and arms that CQ (`Cq::arm_from`).
//!
//! CPU cost: after any activity the thread keeps looking (yielding) for
//! `SPIN`; then it sleeps, doubling the nap from `FIRST_NAP` up to
//! `LONGEST_NAP` (~1000 short wake-ups a second). Once nothing has moved
//! for `QUIET` and every watched send doorbell is also trapped (noticed at
//! the store, `trapped_doorbell`), the naps grow to `QUIET_NAP`: the
//! watcher is then only the net for a store that slipped through and for
//! CQ arms, so an idle process costs ~100 wake-ups a second, and an arm
//! written after a quiet spell is noticed within `QUIET_NAP`. With no QP
//! at all it blocks on a condition variable.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use uct::hca::soft::SoftDoorbell;
use uct::hca::verbs::cq_arm::CqArm;

use crate::objects::Cq;

const SPIN: Duration = Duration::from_micros(50);
const FIRST_NAP: Duration = Duration::from_micros(10);
const LONGEST_NAP: Duration = Duration::from_millis(1);
const QUIET: Duration = Duration::from_millis(100);
const QUIET_NAP: Duration = Duration::from_millis(10);

/// One watched QP or CQ.
struct Watched {
    /// Identifies the entry (the stand-in QP's or CQ's address).
    key: usize,
    what: Doorbell,
}

enum Doorbell {
    Send {
        /// The QP's send doorbell record word (`dbrec[1]`).
        send_counter: *const AtomicU32,
        last_seen: u32,
        doorbell: SoftDoorbell,
        /// The QP's register page traps the driver's doorbell store.
        trapped: bool,
    },
    CqArm {
        /// The 8-byte arm doorbell in the CQ's UAR page.
        slot: *const AtomicU64,
        cq: *const Cq,
    },
}

// SAFETY: `send_counter` points into the soft QP's doorbell record, which
// lives until the QP is destroyed; `slot` and `cq` into a CQ alive until
// it is destroyed; `unwatch` removes the entry (under the list lock)
// before either, and the pointers are only used under that lock.
unsafe impl Send for Watched {}

struct Watcher {
    list: Mutex<Vec<Watched>>,
    changed: Condvar,
}

fn watcher() -> &'static Watcher {
    static WATCHER: OnceLock<Watcher> = OnceLock::new();
    static THREAD: OnceLock<bool> = OnceLock::new();
    let watcher = WATCHER.get_or_init(|| Watcher {
        list: Mutex::new(Vec::new()),
        changed: Condvar::new(),
    });
    THREAD.get_or_init(|| {
        let started = std::thread::Builder::new()
            .name("standin-doorbell".to_string())
            .spawn(watch_loop);
        if let Err(err) = &started {
            tracing::error!("verbs stand-in: cannot start the doorbell thread: {err}");
        }
        started.is_ok()
    });
    watcher
}

fn lock(watcher: &Watcher) -> MutexGuard<'_, Vec<Watched>> {
    watcher.list.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts watching a QP's `dbrec[1]` (`send_counter`); `trapped`: its
/// doorbell stores are noticed by `trapped_doorbell` too.
///
/// # Safety
/// `send_counter` must stay valid until `unwatch(key)` returns.
pub unsafe fn watch(key: usize, send_counter: *mut u32, doorbell: SoftDoorbell, trapped: bool) {
    let send_counter = send_counter.cast_const().cast::<AtomicU32>();
    // SAFETY: valid per the caller; an aligned u32 in shared memory read as
    // an AtomicU32 (same layout).
    let last_seen = unsafe { (*send_counter).load(Ordering::Acquire) };
    let watcher = watcher();
    lock(watcher).push(Watched {
        key,
        what: Doorbell::Send {
            send_counter,
            last_seen,
            doorbell,
            trapped,
        },
    });
    watcher.changed.notify_all();
}

/// Starts watching the arm doorbell `slot` of `cq` (key: the CQ's
/// address).
///
/// # Safety
/// `slot` (8-aligned) and `cq` must stay valid until `unwatch(cq)` returns.
pub unsafe fn watch_cq(cq: *const Cq, slot: *mut u64) {
    let watcher = watcher();
    lock(watcher).push(Watched {
        key: cq as usize,
        what: Doorbell::CqArm {
            slot: slot.cast_const().cast::<AtomicU64>(),
            cq,
        },
    });
    watcher.changed.notify_all();
}

/// Stops watching; after this returns the record is never read again.
pub fn unwatch(key: usize) {
    lock(watcher()).retain(|w| w.key != key);
}

/// Rings every QP whose counter moved and arms every CQ whose arm doorbell
/// was written; true if anything happened.
fn scan(list: &mut [Watched]) -> bool {
    let mut moved = false;
    for watched in list {
        match &mut watched.what {
            Doorbell::Send {
                send_counter,
                last_seen,
                doorbell,
                ..
            } => {
                // SAFETY: see `Watched`: valid while the entry is in the
                // list, and we hold the list lock.
                let now = unsafe { (**send_counter).load(Ordering::Acquire) };
                if now != *last_seen {
                    *last_seen = now;
                    doorbell.ring(std::ptr::null());
                    moved = true;
                }
            }
            Doorbell::CqArm { slot, cq } => {
                // SAFETY: as above. The backend writes the slot with one
                // aligned 8-byte store (an MMIO write on hardware); taking
                // it with a swap never loses a later arm.
                let written = unsafe { (**slot).swap(0, Ordering::Acquire) };
                if written == 0 {
                    continue;
                }
                moved = true;
                // SAFETY: as above.
                let cq = unsafe { &**cq };
                match CqArm::from_doorbell(u64::from_be(written)) {
                    Some((arm, cqn)) if cqn == cq.soft.ring().cqn => cq.arm_from(arm.ci),
                    _ => tracing::warn!(
                        "verbs stand-in: CQ {:#x}: bad arm doorbell {:#018x} ignored",
                        cq.soft.ring().cqn,
                        u64::from_be(written)
                    ),
                }
            }
        }
    }
    moved
}

fn watch_loop() {
    let watcher = watcher();
    let mut last_activity = Instant::now();
    let mut nap = FIRST_NAP;
    loop {
        let mut list = lock(watcher);
        while list.is_empty() {
            list = watcher
                .changed
                .wait(list)
                .unwrap_or_else(|p| p.into_inner());
        }
        let moved = scan(&mut list);
        let all_trapped = list.iter().all(|w| match w.what {
            Doorbell::Send { trapped, .. } => trapped,
            Doorbell::CqArm { .. } => true,
        });
        drop(list);
        let idle = last_activity.elapsed();
        if moved {
            last_activity = Instant::now();
            nap = FIRST_NAP;
        } else if idle < SPIN {
            std::thread::yield_now();
        } else {
            std::thread::sleep(nap);
            let longest = if all_trapped && idle >= QUIET {
                QUIET_NAP
            } else {
                LONGEST_NAP
            };
            nap = (nap * 2).min(longest);
        }
    }
}
