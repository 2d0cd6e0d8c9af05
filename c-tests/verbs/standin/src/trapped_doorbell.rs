//! Doorbells noticed at the moment they are written, without a watching
//! thread: each QP's BlueFlame register is a page of its own, kept
//! read-only. The driver's doorbell store (after it has written the WQEs
//! and the doorbell record) faults; the SIGSEGV handler, in the posting
//! thread, rings the soft device's doorbell for that QP, makes the page
//! writable and sets the x86 trap flag, so the store is retried and then a
//! SIGTRAP follows, whose handler makes the page read-only again. A NIC
//! likewise starts on the register write itself, and an idle process costs
//! nothing. Faults and traps that are not ours go to the handlers that were
//! installed before (UCX installs its own for SIGSEGV).
//!
//! The QPs report a BlueFlame size of 0 (as libmlx5 does with BlueFlame
//! turned off, `MLX5_SHUT_UP_BF=1`), so drivers ring with one 8-byte store
//! (UCX's `MMIO_MODE_DB`, our backend's doorbell) rather than copying the
//! WQE into the register with many stores, each of which would fault.
//!
//! Only on x86-64; `UCT_STANDIN_DOORBELL=watch` turns it off (then the
//! watcher thread alone notices doorbells, as it does anyway for a store
//! that slips through while another thread has the page writable).

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::OnceLock;

use uct::hca::soft::SoftDoorbell;

/// The variable that picks how doorbells are noticed: `trap` (default on
/// x86-64) or `watch`.
pub const DOORBELL_ENV: &str = "UCT_STANDIN_DOORBELL";

const PAGE: usize = 4096;
/// Most QPs with a trapped register at once; more get a plain page (the
/// watcher notices their doorbells).
const SLOTS: usize = 4096;

/// The registered pages and their doorbells (a page address of 0 is a
/// free slot); read by the signal handler without locks.
struct Table {
    pages: [AtomicUsize; SLOTS],
    doorbells: [AtomicPtr<SoftDoorbell>; SLOTS],
}

static TABLE: Table = Table {
    pages: [const { AtomicUsize::new(0) }; SLOTS],
    doorbells: [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS],
};

thread_local! {
    /// The page this thread made writable in its SIGSEGV handler, to be
    /// protected again by the SIGTRAP after the retried store.
    static UNPROTECTED: Cell<usize> = const { Cell::new(0) };
}

/// Whether doorbells are trapped in this process (decided once).
pub fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| {
        let wanted = !matches!(std::env::var(DOORBELL_ENV).as_deref(), Ok("watch"));
        cfg!(target_arch = "x86_64") && wanted && install_handlers()
    })
}

/// A QP's BlueFlame register: a page of its own, read-only while trapped.
pub struct RegisterPage {
    ptr: *mut u8,
    slot: Option<usize>,
}

// SAFETY: the page is plain memory owned by this value; the table entry is
// atomic.
unsafe impl Send for RegisterPage {}
// SAFETY: as above.
unsafe impl Sync for RegisterPage {}

impl RegisterPage {
    /// A zeroed page; when trapping is on, registered with `doorbell` and
    /// protected.
    pub fn new(doorbell: SoftDoorbell) -> Option<RegisterPage> {
        // SAFETY: an anonymous private mapping, result checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        let mut page = RegisterPage {
            ptr: ptr.cast(),
            slot: None,
        };
        if enabled() {
            page.slot = register(page.ptr as usize, doorbell);
        }
        Some(page)
    }

    pub fn ptr(&self) -> *mut c_void {
        self.ptr.cast()
    }

    /// Whether the driver's stores to this page are trapped.
    pub fn trapped(&self) -> bool {
        self.slot.is_some()
    }

    /// The BlueFlame size to report: 0 when trapped (one store per ring).
    pub fn bf_size(&self, untrapped: u32) -> u32 {
        if self.trapped() {
            0
        } else {
            untrapped
        }
    }
}

impl Drop for RegisterPage {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            TABLE.pages[slot].store(0, Ordering::SeqCst);
            let doorbell = TABLE.doorbells[slot].swap(std::ptr::null_mut(), Ordering::SeqCst);
            if !doorbell.is_null() {
                // SAFETY: made by Box::into_raw in `register`, taken out of
                // the table once (the swap).
                drop(unsafe { Box::from_raw(doorbell) });
            }
        }
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), PAGE) };
    }
}

fn register(page: usize, doorbell: SoftDoorbell) -> Option<usize> {
    let doorbell = Box::into_raw(Box::new(doorbell));
    for slot in 0..SLOTS {
        if TABLE.doorbells[slot]
            .compare_exchange(
                std::ptr::null_mut(),
                doorbell,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
        {
            TABLE.pages[slot].store(page, Ordering::SeqCst);
            // SAFETY: our own mapping, one page.
            if unsafe { libc::mprotect(page as *mut c_void, PAGE, libc::PROT_READ) } != 0 {
                TABLE.pages[slot].store(0, Ordering::SeqCst);
                TABLE.doorbells[slot].store(std::ptr::null_mut(), Ordering::SeqCst);
                // SAFETY: made above, never published.
                drop(unsafe { Box::from_raw(doorbell) });
                return None;
            }
            return Some(slot);
        }
    }
    tracing::debug!("verbs stand-in: {SLOTS} trapped doorbells in use: the watcher takes the next");
    // SAFETY: made above, never published.
    drop(unsafe { Box::from_raw(doorbell) });
    None
}

fn find(page: usize) -> Option<usize> {
    (0..SLOTS).find(|&slot| TABLE.pages[slot].load(Ordering::Acquire) == page)
}

/// The handlers that were installed before ours.
struct Previous {
    segv: libc::sigaction,
    trap: libc::sigaction,
}

static PREVIOUS: OnceLock<Previous> = OnceLock::new();

fn install_handlers() -> bool {
    // SAFETY: sigaction structs are plain data; zeroed is a valid start.
    let mut previous: Previous = unsafe { std::mem::zeroed() };
    let install = |signal: c_int, handler: usize, old: &mut libc::sigaction| {
        // SAFETY: as above.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = handler;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER;
        // SAFETY: a valid action with a handler of the SA_SIGINFO type.
        unsafe { libc::sigaction(signal, &action, old) == 0 }
    };
    // Record the previous handlers before ours can run.
    // SAFETY: querying only.
    unsafe {
        libc::sigaction(libc::SIGSEGV, std::ptr::null(), &mut previous.segv);
        libc::sigaction(libc::SIGTRAP, std::ptr::null(), &mut previous.trap);
    }
    if PREVIOUS.set(previous).is_err() {
        return false;
    }
    // SAFETY: plain data; zeroed is a valid value.
    let mut ignored: libc::sigaction = unsafe { std::mem::zeroed() };
    let ok = install(libc::SIGSEGV, on_segv as *const () as usize, &mut ignored)
        && install(libc::SIGTRAP, on_trap as *const () as usize, &mut ignored);
    if !ok {
        tracing::warn!("verbs stand-in: cannot install the doorbell signal handlers: the watcher notices doorbells");
    }
    ok
}

/// Passes a signal that is not ours to the handler installed before.
///
/// # Safety
/// Called from a signal handler with the kernel's arguments.
unsafe fn chain(
    signal: c_int,
    info: *mut libc::siginfo_t,
    context: *mut c_void,
    old: &libc::sigaction,
) {
    if old.sa_sigaction == libc::SIG_IGN {
        return;
    }
    if old.sa_sigaction == libc::SIG_DFL {
        // Default action: restore it and return, so the instruction runs
        // again and faults (or traps) into the default disposition.
        // SAFETY: restoring a saved action.
        unsafe { libc::sigaction(signal, old, std::ptr::null_mut()) };
        if signal == libc::SIGTRAP {
            // SAFETY: re-raise: a trap does not repeat by itself.
            unsafe { libc::raise(signal) };
        }
        return;
    }
    if old.sa_flags & libc::SA_SIGINFO != 0 {
        let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
            // SAFETY: an SA_SIGINFO handler has this type.
            unsafe { std::mem::transmute(old.sa_sigaction) };
        handler(signal, info, context);
    } else {
        // SAFETY: a plain handler has this type.
        let handler: extern "C" fn(c_int) = unsafe { std::mem::transmute(old.sa_sigaction) };
        handler(signal);
    }
}

/// The x86 trap flag in RFLAGS.
const TRAP_FLAG: i64 = 0x100;

extern "C" fn on_segv(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo for SIGSEGV.
    let address = unsafe { (*info).si_addr() } as usize;
    let page = address & !(PAGE - 1);
    let slot = if page == 0 { None } else { find(page) };
    let Some(slot) = slot else {
        if let Some(previous) = PREVIOUS.get() {
            // SAFETY: the kernel's arguments, passed on.
            unsafe { chain(signal, info, context, &previous.segv) };
        }
        return;
    };
    // The driver wrote the WQEs and the doorbell record before this store:
    // the device may look now.
    let doorbell = TABLE.doorbells[slot].load(Ordering::Acquire);
    if !doorbell.is_null() {
        // SAFETY: live while its page is registered (the QP outlives the
        // driver's posts to it).
        unsafe { (*doorbell).ring(std::ptr::null()) };
    }
    // SAFETY: our own page; the store is retried once it is writable.
    unsafe {
        libc::mprotect(
            page as *mut c_void,
            PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
        )
    };
    UNPROTECTED.with(|cell| cell.set(page));
    set_trap_flag(context, true);
}

extern "C" fn on_trap(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let page = UNPROTECTED.with(|cell| cell.replace(0));
    if page == 0 {
        if let Some(previous) = PREVIOUS.get() {
            // SAFETY: the kernel's arguments, passed on.
            unsafe { chain(signal, info, context, &previous.trap) };
        }
        return;
    }
    set_trap_flag(context, false);
    if find(page).is_some() {
        // SAFETY: our own page, still registered.
        unsafe { libc::mprotect(page as *mut c_void, PAGE, libc::PROT_READ) };
    }
}

#[cfg(target_arch = "x86_64")]
fn set_trap_flag(context: *mut c_void, on: bool) {
    let context = context.cast::<libc::ucontext_t>();
    // SAFETY: the kernel's ucontext of the interrupted thread; RFLAGS is
    // restored from it when the handler returns.
    unsafe {
        let flags = &mut (*context).uc_mcontext.gregs[libc::REG_EFL as usize];
        if on {
            *flags |= TRAP_FLAG;
        } else {
            *flags &= !TRAP_FLAG;
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn set_trap_flag(_context: *mut c_void, _on: bool) {}
