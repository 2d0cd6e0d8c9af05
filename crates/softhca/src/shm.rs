//! The same-host wire: when two soft devices run on this host (same network
//! namespace), their datagrams travel through shared memory instead of the
//! kernel's UDP path. The bytes are the same RoCEv2 datagrams (BTH … ICRC),
//! except that their ICRC is left zero and not checked (the sending link
//! computes it only for UDP: nothing between two devices of one host can
//! corrupt a datagram in memory), and the faults of the
//! port (link down, drop ratio, drop next) decide per datagram exactly as
//! on UDP, before a datagram is queued and when it is read; only the
//! carrier differs.
//!
//! Each device owns one inbound ring in a file under `/dev/shm` named after
//! its UDP address (`ucx-softhca-<ip>-<port>`; the port is the device's own
//! while it lives, so the name is unique). Any device of any process on the
//! host maps it and pushes datagrams into it: a bounded multi-producer,
//! single-consumer queue of fixed slots. Each slot has one word saying whose
//! it is: free for a position, reserved for a position by a producer (its
//! process id), or published at a position. A producer claims a slot with
//! one compare-and-swap of that word (so a reservation always names its
//! producer), moves the shared tail on (any producer that finds the tail
//! behind a claimed slot moves it on too), copies the datagram in and
//! publishes; the owner reads published slots in order and hands each back
//! free for its next round. The owner reads at every progress pass, with no
//! system call.
//!
//! A producer that dies between its reservation and its publication (killed
//! mid-copy) would leave the owner waiting at that slot forever. Every
//! producer holds, from mapping a ring to unmapping it, a shared lock on the
//! byte of the ring file named by its process id (an open-file-description
//! lock, past the mapped region: the kernel drops it when the process dies,
//! even before its parent reaps it). When the owner finds the slot at its
//! head reserved for [`RESERVATION_PATIENCE_NANOS`] it asks the kernel
//! whether anyone still holds that byte; if nobody does, the producer is
//! gone and will never write the slot again: the owner skips the slot and
//! hands it back, and the datagrams behind it from live producers flow on.
//! The dead producer's datagram is lost with its process. A live producer's
//! reservation is never skipped (however long it takes, e.g. a stopped
//! process), so a slot is never written by two producers at once.
//!
//! While the owner's service thread sleeps (nobody progresses it), it says
//! so in the ring's header, and a producer wakes it with a one-byte datagram
//! on a Unix datagram socket of the ring's own (abstract name
//! `ucx-softhca-<ip>-<port>`, scoped to the network namespace as the ring
//! is): the device's UDP port carries RoCEv2 only.
//!
//! A ring whose owner is gone (its `alive` word cleared, the file unlinked)
//! is dropped by producers, who fall back to UDP for that address (where
//! the datagram meets a closed port, as it would without shared memory).

use std::ffi::CString;
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixDatagram};
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use crate::wire::MAX_DATAGRAM;

const MAGIC: u64 = 0x5543_5853_4648_5257; // "UCXSFHRW"
const VERSION: u32 = 3;
/// Slots of a ring: at 4 KiB per datagram, 1024 hold four 1 MiB messages
/// of 4096-byte packets in flight.
const SLOT_COUNT: u64 = 1024;
/// Slot header: state word (8), length (4), source IPv4 (4), source port
/// (2), padding to 24.
const SLOT_HEADER: usize = 24;
const SLOT_SIZE: usize = (SLOT_HEADER + MAX_DATAGRAM).div_ceil(64) * 64;
/// The ring header takes the first page.
const HEADER_SIZE: usize = 4096;
const REGION_SIZE: usize = HEADER_SIZE + SLOT_COUNT as usize * SLOT_SIZE;

// Header offsets (each hot word on its own cache line).
const OFF_MAGIC: usize = 0;
const OFF_VERSION: usize = 8;
const OFF_SLOT_COUNT: usize = 12;
const OFF_SLOT_SIZE: usize = 16;
const OFF_NETNS: usize = 24;
const OFF_ALIVE: usize = 32;
const OFF_PID: usize = 36;
const OFF_SLEEPING: usize = 64;
const OFF_TAIL: usize = 128;

/// A slot's state word: the position it is for (its low 40 bits) above a
/// 24-bit state: [`SLOT_FREE`], [`SLOT_PUBLISHED`], or the process id of the
/// producer that reserved it (Linux process ids stay below 2^22).
const STATE_BITS: u32 = 24;
const STATE_MASK: u64 = (1 << STATE_BITS) - 1;
const POSITION_MASK: u64 = (1 << 40) - 1;
const SLOT_FREE: u64 = 0;
const SLOT_PUBLISHED: u64 = STATE_MASK;

fn slot_word(position: u64, state: u64) -> u64 {
    ((position & POSITION_MASK) << STATE_BITS) | state
}

/// Whether `word` is for `position` (any state).
fn word_is_for(word: u64, position: u64) -> bool {
    word >> STATE_BITS == position & POSITION_MASK
}

/// How long the slot at the owner's head may stay reserved before the owner
/// asks whether its producer still lives (and again after each such
/// interval while it does). A producer copies a datagram in about a
/// microsecond; the wait keeps the liveness check, a system call, off the
/// path of a reservation that is merely in progress.
pub const RESERVATION_PATIENCE_NANOS: u64 = 1_000_000;

/// The first byte of the ring file's liveness locks: a producer with
/// process id `pid` holds a shared lock on byte `LIVENESS_LOCKS + pid`
/// (past the mapped region, which locks do not touch).
const LIVENESS_LOCKS: libc::off_t = REGION_SIZE as libc::off_t;

/// Sets (`F_OFD_SETLK`) or tests (`F_OFD_GETLK`) a lock of `kind` on the
/// liveness byte of `producer` through descriptor `fd`; returns the lock
/// type the kernel reports (for a test: `F_UNLCK` when nothing conflicts).
fn liveness_lock(
    fd: RawFd,
    command: libc::c_int,
    kind: libc::c_int,
    producer: u64,
) -> io::Result<libc::c_int> {
    // SAFETY: flock is plain old data; all-zero is a valid value (and
    // open-file-description locks require l_pid 0).
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = LIVENESS_LOCKS + producer as libc::off_t;
    lock.l_len = 1;
    // SAFETY: fcntl on a descriptor we hold, with a pointer to a live flock
    // that the kernel reads and, for a test, writes.
    let rc = unsafe { libc::fcntl(fd, command, &mut lock) };
    if rc == 0 {
        Ok(libc::c_int::from(lock.l_type))
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The network namespace of this process (inode of `/proc/self/ns/net`;
/// 0 if it cannot be read, which then only matches another 0).
fn netns_id() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/net").map_or(0, |m| m.ino())
}

const RING_DIR: &str = "/dev/shm";
const RING_PREFIX: &str = "ucx-softhca-";

/// The ring's name: its file's under [`RING_DIR`], and its wake-up
/// socket's (abstract).
fn ring_name(addr: SocketAddrV4) -> String {
    format!("{RING_PREFIX}{}-{}", addr.ip(), addr.port())
}

fn ring_path(addr: SocketAddrV4) -> CString {
    // No interior NUL: built from digits, dots and dashes.
    CString::new(format!("{RING_DIR}/{}", ring_name(addr))).unwrap_or_default()
}

fn wake_address(addr: SocketAddrV4) -> io::Result<UnixAddr> {
    UnixAddr::from_abstract_name(ring_name(addr))
}

/// Ring files this process created and has not removed yet: removed at
/// exit too (a process that ends without closing its devices), see
/// [`remove_rings_at_exit`].
fn own_rings() -> std::sync::MutexGuard<'static, Vec<CString>> {
    static OWN: std::sync::Mutex<Vec<CString>> = std::sync::Mutex::new(Vec::new());
    OWN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

extern "C" fn remove_rings_at_exit() {
    for path in own_rings().drain(..) {
        // SAFETY: `path` is NUL-terminated; removes our own file.
        unsafe { libc::unlink(path.as_ptr()) };
    }
}

fn register_own_ring(path: &CString) {
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: registers a plain extern "C" function with no arguments;
        // a failure only means files of a process that exits without
        // closing its devices stay until the next sweep.
        unsafe { libc::atexit(remove_rings_at_exit) };
    });
    own_rings().push(path.clone());
}

/// Whether process `pid` exists (signal 0 only checks; EPERM means it
/// exists under another user).
fn process_exists(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 delivers nothing.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Removes ring files whose owner process is gone (killed before it could
/// remove them), so that they do not pile up in `/dev/shm`.
fn sweep_dead_rings() {
    let Ok(entries) = std::fs::read_dir(RING_DIR) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(RING_PREFIX) {
            continue;
        }
        let path = entry.path();
        let mut header = [0u8; 64];
        let read = std::fs::File::open(&path).and_then(|mut file| {
            use std::io::Read;
            file.read_exact(&mut header)
        });
        if read.is_err() {
            continue;
        }
        let mut pid_bytes = [0u8; 4];
        pid_bytes.copy_from_slice(&header[OFF_PID..OFF_PID + 4]);
        let pid = u32::from_ne_bytes(pid_bytes) as libc::pid_t;
        if pid > 0 && !process_exists(pid) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// One mapping of a ring file.
struct Mapping {
    base: *mut u8,
}

// SAFETY: the mapping is plain shared memory; every access goes through
// atomics or through copies bracketed by the slot protocol's
// acquire/release, so sharing the pointer between threads is sound.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn map(fd: libc::c_int) -> io::Result<Mapping> {
        // SAFETY: maps REGION_SIZE bytes of our open file, shared, at an
        // address the kernel picks; the result is checked.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                REGION_SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { base: base.cast() })
    }

    fn u32_at(&self, offset: usize) -> &AtomicU32 {
        debug_assert!(offset % 4 == 0 && offset + 4 <= REGION_SIZE);
        // SAFETY: `offset` is 4-aligned inside the page-aligned mapping,
        // which lives as long as `self`; AtomicU32 has u32's layout.
        unsafe { &*(self.base.add(offset) as *const AtomicU32) }
    }

    fn u64_at(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset % 8 == 0 && offset + 8 <= REGION_SIZE);
        // SAFETY: as `u32_at`, 8-aligned.
        unsafe { &*(self.base.add(offset) as *const AtomicU64) }
    }

    fn slot(&self, position: u64) -> usize {
        HEADER_SIZE + (position % SLOT_COUNT) as usize * SLOT_SIZE
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `map`, once.
        unsafe { libc::munmap(self.base.cast(), REGION_SIZE) };
    }
}

/// Opens `path` with `flags`, closing the descriptor again on drop.
struct Fd(libc::c_int);

impl Fd {
    fn open(path: &CString, flags: libc::c_int) -> io::Result<Fd> {
        // SAFETY: `path` is a NUL-terminated string; the result is checked.
        let fd = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC, 0o600) };
        if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(Fd(fd))
        }
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: our own descriptor, closed once (a mapping stays valid).
        unsafe { libc::close(self.0) };
    }
}

/// What the slot at the owner's head holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// Nothing: the ring is empty.
    Empty,
    /// A published datagram.
    Published,
    /// A reservation whose producer has not published yet (copying, or
    /// dead: see [`InboundRing::skip_dead_reservation`]).
    Reserved,
}

/// The ring this device reads (it created the file and removes it).
pub struct InboundRing {
    map: Mapping,
    path: CString,
    /// The file, kept open to ask the kernel about producers' liveness locks.
    file: Fd,
    /// Where producers send wake-ups (see [`InboundRing::set_sleeping`]).
    wake: UnixDatagram,
    /// Next position to read (only this device reads, under its lock).
    head: AtomicU64,
    /// The head position found reserved, and since when (nanoseconds on the
    /// caller's clock); `u64::MAX` for none. Only the reader touches them.
    reserved_at: AtomicU64,
    reserved_since: AtomicU64,
}

impl InboundRing {
    /// Creates the ring of the device at `addr`, replacing a stale file of
    /// a device that had this address before and did not clean up.
    pub fn create(addr: SocketAddrV4) -> io::Result<InboundRing> {
        sweep_dead_rings();
        // The socket first: an address in use means a live device of this
        // network namespace has this name, whose file must stay.
        let wake = UnixDatagram::bind_addr(&wake_address(addr)?)?;
        wake.set_nonblocking(true)?;
        let path = ring_path(addr);
        // SAFETY: `path` is NUL-terminated; a missing file is fine.
        unsafe { libc::unlink(path.as_ptr()) };
        let file = Fd::open(&path, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL)?;
        // SAFETY: our descriptor; sets the file's size (sparse).
        if unsafe { libc::ftruncate(file.0, REGION_SIZE as libc::off_t) } != 0 {
            let err = io::Error::last_os_error();
            // SAFETY: as above.
            unsafe { libc::unlink(path.as_ptr()) };
            return Err(err);
        }
        let map = match Mapping::map(file.0) {
            Ok(map) => map,
            Err(err) => {
                // SAFETY: as above.
                unsafe { libc::unlink(path.as_ptr()) };
                return Err(err);
            }
        };
        for position in 0..SLOT_COUNT {
            map.u64_at(map.slot(position))
                .store(slot_word(position, SLOT_FREE), Ordering::Relaxed);
        }
        map.u32_at(OFF_VERSION).store(VERSION, Ordering::Relaxed);
        map.u32_at(OFF_SLOT_COUNT)
            .store(SLOT_COUNT as u32, Ordering::Relaxed);
        map.u32_at(OFF_SLOT_SIZE)
            .store(SLOT_SIZE as u32, Ordering::Relaxed);
        map.u64_at(OFF_NETNS).store(netns_id(), Ordering::Relaxed);
        map.u32_at(OFF_ALIVE).store(1, Ordering::Relaxed);
        map.u32_at(OFF_PID)
            .store(std::process::id(), Ordering::Relaxed);
        register_own_ring(&path);
        // Last, with release: a producer that sees the magic sees the rest.
        map.u64_at(OFF_MAGIC).store(MAGIC, Ordering::Release);
        Ok(InboundRing {
            map,
            path,
            file,
            wake,
            head: AtomicU64::new(0),
            reserved_at: AtomicU64::new(u64::MAX),
            reserved_since: AtomicU64::new(0),
        })
    }

    /// Copies the next datagram into `out`; returns its length and source,
    /// or `None` if the slot at the head holds none (yet).
    /// Only one thread at a time may pop (the device's lock holder).
    pub fn pop(&self, out: &mut [u8]) -> Option<(usize, SocketAddrV4)> {
        let head = self.head.load(Ordering::Relaxed);
        let slot = self.map.slot(head);
        let word = self.map.u64_at(slot).load(Ordering::Acquire);
        if word != slot_word(head, SLOT_PUBLISHED) {
            return None;
        }
        let len = (self.map.u32_at(slot + 8).load(Ordering::Relaxed) as usize)
            .min(MAX_DATAGRAM)
            .min(out.len());
        let ip = self.map.u32_at(slot + 12).load(Ordering::Relaxed);
        let port = self.map.u32_at(slot + 16).load(Ordering::Relaxed) as u16;
        // SAFETY: the slot's data area (MAX_DATAGRAM bytes from
        // SLOT_HEADER) is inside the mapping and `len` is clamped to it and
        // to `out`; the producer finished writing it before its release
        // store of the state word, which our acquire load saw, and nobody
        // writes it again before we hand the slot back below.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.map.base.add(slot + SLOT_HEADER),
                out.as_mut_ptr(),
                len,
            );
        }
        self.map.u64_at(slot).store(
            slot_word(head.wrapping_add(SLOT_COUNT), SLOT_FREE),
            Ordering::Release,
        );
        self.head.store(head.wrapping_add(1), Ordering::Relaxed);
        let from = SocketAddrV4::new(Ipv4Addr::from(ip.to_be_bytes()), port);
        Some((len, from))
    }

    /// What the slot at the head holds (one load).
    pub fn head(&self) -> Head {
        let head = self.head.load(Ordering::Relaxed);
        let word = self.map.u64_at(self.map.slot(head)).load(Ordering::SeqCst);
        if !word_is_for(word, head) {
            Head::Empty
        } else {
            match word & STATE_MASK {
                SLOT_FREE => Head::Empty,
                SLOT_PUBLISHED => Head::Published,
                _ => Head::Reserved,
            }
        }
    }

    /// Whether the head holds anything: a datagram, or a reservation that
    /// [`InboundRing::skip_dead_reservation`] watches.
    pub fn has_data(&self) -> bool {
        self.head() != Head::Empty
    }

    /// When the slot at the head has been reserved for
    /// [`RESERVATION_PATIENCE_NANOS`] (by `now`, in nanoseconds of the
    /// caller's clock) and no process holds its producer's liveness lock any
    /// more, skips it: the producer died before publishing, and nobody will
    /// write the slot again. Returns whether it skipped one (then datagrams
    /// behind it may be ready). Only the thread that pops may call this.
    pub fn skip_dead_reservation(&self, now: u64) -> bool {
        let head = self.head.load(Ordering::Relaxed);
        let slot = self.map.slot(head);
        let word = self.map.u64_at(slot).load(Ordering::Acquire);
        let producer = word & STATE_MASK;
        if !word_is_for(word, head) || producer == SLOT_FREE || producer == SLOT_PUBLISHED {
            return false;
        }
        if self.reserved_at.load(Ordering::Relaxed) != head {
            self.reserved_at.store(head, Ordering::Relaxed);
            self.reserved_since.store(now, Ordering::Relaxed);
            return false;
        }
        let waited = now.saturating_sub(self.reserved_since.load(Ordering::Relaxed));
        if waited < RESERVATION_PATIENCE_NANOS {
            return false;
        }
        if self.producer_lives(producer) {
            // Slow, stopped, or preempted: ask again after another interval.
            self.reserved_since.store(now, Ordering::Relaxed);
            return false;
        }
        // The producer may not have moved the tail past its slot: do it for
        // it, before the slot is free again, or producers would wait at a
        // tail that names a slot of the next round.
        let _ = self.map.u64_at(OFF_TAIL).compare_exchange(
            head,
            head.wrapping_add(1),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        if self
            .map
            .u64_at(slot)
            .compare_exchange(
                word,
                slot_word(head.wrapping_add(SLOT_COUNT), SLOT_FREE),
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return false;
        }
        self.head.store(head.wrapping_add(1), Ordering::Relaxed);
        self.reserved_at.store(u64::MAX, Ordering::Relaxed);
        tracing::warn!(
            "soft hca ring {}: process {producer} died holding slot {head} unpublished; \
             skipped (its datagram is lost with it)",
            self.path.to_string_lossy()
        );
        true
    }

    /// Whether any process holds the liveness lock of `producer` (an error
    /// asking counts as alive: never skip a slot that may still be written).
    fn producer_lives(&self, producer: u64) -> bool {
        match liveness_lock(self.file.0, libc::F_OFD_GETLK, libc::F_WRLCK, producer) {
            Ok(kind) => kind != libc::F_UNLCK,
            Err(err) => {
                tracing::debug!("soft hca: liveness of process {producer} unknown: {err}");
                true
            }
        }
    }

    /// Tells producers whether the owner sleeps and needs a wake-up.
    /// SeqCst pairs with the producers' fence after a push.
    pub fn set_sleeping(&self, sleeping: bool) {
        self.map
            .u32_at(OFF_SLEEPING)
            .store(u32::from(sleeping), Ordering::SeqCst);
    }

    /// The descriptor that becomes readable when a producer wakes the owner.
    pub fn wake_fd(&self) -> RawFd {
        self.wake.as_raw_fd()
    }

    /// Reads every wake-up waiting (their content says nothing).
    pub fn drain_wake_ups(&self) {
        let mut byte = [0u8; 8];
        while self.wake.recv(&mut byte).is_ok() {}
    }
}

impl Drop for InboundRing {
    fn drop(&mut self) {
        self.map.u32_at(OFF_ALIVE).store(0, Ordering::Release);
        own_rings().retain(|path| *path != self.path);
        // SAFETY: `path` is NUL-terminated; removes our own file.
        unsafe { libc::unlink(self.path.as_ptr()) };
    }
}

/// Outcome of a push into a peer's ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Queued; `wake`: the owner sleeps, wake it ([`PeerRing::wake`]).
    Queued { wake: bool },
    /// The ring is full: the sender keeps the datagram for a later try.
    Full,
    /// The owner is gone: forget this ring.
    Gone,
}

/// Another device's ring, as a producer sees it.
pub(crate) struct PeerRing {
    map: Mapping,
    /// The ring file, holding this process's liveness lock while it lives.
    _file: Fd,
    /// What this producer's reservations say: the id whose liveness lock
    /// `_file` holds (the process id when the ring was mapped, also in a
    /// child forked later, whose lock it shares).
    producer: u64,
    /// The owner's wake-up socket, and an unbound socket to send from.
    wake_to: UnixAddr,
    wake_from: UnixDatagram,
}

impl PeerRing {
    /// Maps the ring of the device at `addr`, if one of this host and
    /// network namespace is alive there.
    pub fn open(addr: SocketAddrV4) -> Option<Arc<PeerRing>> {
        let producer = u64::from(std::process::id());
        let ring = PeerRing::map(addr, producer)?;
        // Held until `_file` closes, by the kernel past our death: what the
        // owner asks before it skips a reservation of ours.
        if let Err(err) = liveness_lock(ring._file.0, libc::F_OFD_SETLK, libc::F_RDLCK, producer) {
            tracing::debug!("soft hca: no liveness lock on the ring of {addr} ({err}); UDP to it");
            return None;
        }
        Some(Arc::new(ring))
    }

    /// Maps the ring (no liveness lock taken) for producer id `producer`.
    fn map(addr: SocketAddrV4, producer: u64) -> Option<PeerRing> {
        if producer == SLOT_FREE || producer >= SLOT_PUBLISHED {
            return None;
        }
        let path = ring_path(addr);
        let file = Fd::open(&path, libc::O_RDWR).ok()?;
        // SAFETY: stat is plain old data; all-zero is a valid value.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: our descriptor and a live stat buffer.
        if unsafe { libc::fstat(file.0, &mut stat) } != 0 || stat.st_size < REGION_SIZE as i64 {
            return None;
        }
        let map = Mapping::map(file.0).ok()?;
        let matches = map.u64_at(OFF_MAGIC).load(Ordering::Acquire) == MAGIC
            && map.u32_at(OFF_VERSION).load(Ordering::Relaxed) == VERSION
            && u64::from(map.u32_at(OFF_SLOT_COUNT).load(Ordering::Relaxed)) == SLOT_COUNT
            && map.u32_at(OFF_SLOT_SIZE).load(Ordering::Relaxed) as usize == SLOT_SIZE
            && map.u64_at(OFF_NETNS).load(Ordering::Relaxed) == netns_id()
            && map.u32_at(OFF_ALIVE).load(Ordering::Acquire) == 1
            // A file left by a killed process still says alive; a device
            // at its address now may be on the UDP wire only.
            && process_exists(map.u32_at(OFF_PID).load(Ordering::Relaxed) as libc::pid_t);
        if !matches {
            return None;
        }
        let wake_to = wake_address(addr).ok()?;
        let wake_from = UnixDatagram::unbound().ok()?;
        wake_from.set_nonblocking(true).ok()?;
        Some(PeerRing {
            map,
            _file: file,
            producer,
            wake_to,
            wake_from,
        })
    }

    /// Copies `datagram` from `from` into the next free slot.
    #[inline]
    pub fn push(&self, datagram: &[u8], from: SocketAddrV4) -> Pushed {
        let (position, slot) = match self.reserve() {
            Ok(reserved) => reserved,
            Err(refused) => return refused,
        };
        self.fill(slot, datagram, from, datagram.len());
        self.map
            .u64_at(slot)
            .store(slot_word(position, SLOT_PUBLISHED), Ordering::Release);
        // Pairs with `InboundRing::set_sleeping`: either the owner sees
        // this datagram before it sleeps, or we see it asleep.
        fence(Ordering::SeqCst);
        Pushed::Queued {
            wake: self.map.u32_at(OFF_SLEEPING).load(Ordering::SeqCst) != 0,
        }
    }

    /// Claims the slot at the tail for this producer and moves the tail on;
    /// returns its position and offset.
    fn reserve(&self) -> Result<(u64, usize), Pushed> {
        if self.map.u32_at(OFF_ALIVE).load(Ordering::Acquire) != 1 {
            return Err(Pushed::Gone);
        }
        let tail = self.map.u64_at(OFF_TAIL);
        loop {
            let position = tail.load(Ordering::Relaxed);
            let slot = self.map.slot(position);
            let state = self.map.u64_at(slot);
            let word = state.load(Ordering::Acquire);
            let free = slot_word(position, SLOT_FREE);
            if word == free {
                // Acquire: the owner's copy out of this slot (its release
                // when it handed the slot back) is over before we write.
                if state
                    .compare_exchange(
                        free,
                        slot_word(position, self.producer),
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    let _ = tail.compare_exchange(
                        position,
                        position.wrapping_add(1),
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    );
                    return Ok((position, slot));
                }
            } else if word_is_for(word, position) {
                // Claimed by a producer that has not moved the tail yet.
                let _ = tail.compare_exchange(
                    position,
                    position.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            } else if word_is_for(word, position.wrapping_sub(SLOT_COUNT)) {
                // Still holds the datagram of the previous round.
                return Err(Pushed::Full);
            }
            // Otherwise the tail moved meanwhile: read it again.
        }
    }

    /// Writes the first `len` bytes of `datagram` and its source into the
    /// slot at `slot`, which this producer reserved.
    fn fill(&self, slot: usize, datagram: &[u8], from: SocketAddrV4, len: usize) {
        let len = len.min(datagram.len()).min(MAX_DATAGRAM);
        // SAFETY: we own the slot (reserved above, not published yet);
        // its data area of MAX_DATAGRAM bytes is inside the mapping and
        // `len` is clamped to it and to `datagram`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                datagram.as_ptr(),
                self.map.base.add(slot + SLOT_HEADER),
                len,
            );
        }
        self.map
            .u32_at(slot + 8)
            .store(len as u32, Ordering::Relaxed);
        self.map
            .u32_at(slot + 12)
            .store(u32::from_be_bytes(from.ip().octets()), Ordering::Relaxed);
        self.map
            .u32_at(slot + 16)
            .store(u32::from(from.port()), Ordering::Relaxed);
    }

    /// Wakes the owner (its service thread sleeps: `Pushed::Queued { wake:
    /// true }`). A full socket queue already holds a wake-up.
    pub fn wake(&self) {
        if let Err(err) = self.wake_from.send_to_addr(&[1], &self.wake_to) {
            if err.kind() != io::ErrorKind::WouldBlock {
                tracing::debug!("soft hca: wake-up of a ring's owner failed: {err}");
            }
        }
    }

    /// A fault for tests: reserves a slot, copies half of `datagram` into
    /// it, sets `frozen` and stops this thread for good, as a producer
    /// whose process is stopped or killed in the middle of a copy. If no
    /// slot can be reserved (full, gone), says so instead.
    pub fn push_and_freeze(
        &self,
        datagram: &[u8],
        from: SocketAddrV4,
        frozen: &AtomicBool,
    ) -> Pushed {
        let slot = match self.reserve() {
            Ok((_, slot)) => slot,
            Err(refused) => return refused,
        };
        self.fill(slot, datagram, from, datagram.len() / 2);
        frozen.store(true, Ordering::Release);
        tracing::warn!("soft hca: a ring push frozen mid-copy (fault injected)");
        loop {
            std::thread::park();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses no device of a parallel test run uses: ports below the
    /// ephemeral range, on a loopback address named after this process.
    fn addr(port: u16) -> SocketAddrV4 {
        let pid = std::process::id();
        SocketAddrV4::new(Ipv4Addr::new(127, 254, (pid >> 8) as u8, pid as u8), port)
    }

    #[test]
    fn datagrams_come_out_in_order_with_their_source() {
        // A port no socket holds in this test: only the file name matters.
        let inbound = InboundRing::create(addr(1)).expect("create");
        let peer = PeerRing::open(addr(1)).expect("open");
        assert!(!inbound.has_data());
        for i in 0..10u8 {
            assert_eq!(
                peer.push(&[i; 7], addr(100 + u16::from(i))),
                Pushed::Queued { wake: false }
            );
        }
        let mut buf = [0u8; MAX_DATAGRAM];
        for i in 0..10u8 {
            let (len, from) = inbound.pop(&mut buf).expect("datagram");
            assert_eq!((&buf[..len], from), (&[i; 7][..], addr(100 + u16::from(i))));
        }
        assert_eq!(inbound.pop(&mut buf), None);
        inbound.set_sleeping(true);
        assert_eq!(peer.push(b"x", addr(2)), Pushed::Queued { wake: true });
    }

    /// A producer id no process has (Linux process ids stay below 2^22),
    /// so nobody holds its liveness lock: a producer that died.
    const DEAD: u64 = 0x00ff_fff0;

    /// Claims the slot at the tail for `producer` without moving the tail,
    /// as a producer killed right after its claim.
    fn claim_only(inbound: &InboundRing, producer: u64) {
        let position = inbound.map.u64_at(OFF_TAIL).load(Ordering::Relaxed);
        let word = inbound.map.u64_at(inbound.map.slot(position));
        assert_eq!(
            word.swap(slot_word(position, producer), Ordering::AcqRel),
            slot_word(position, SLOT_FREE)
        );
    }

    /// Pops everything waiting; each datagram's first byte.
    fn pop_all(inbound: &InboundRing) -> Vec<u8> {
        let mut buf = [0u8; MAX_DATAGRAM];
        std::iter::from_fn(|| inbound.pop(&mut buf).map(|_| buf[0])).collect()
    }

    #[test]
    fn a_dead_producers_slot_is_skipped_after_the_patience_and_live_ones_flow() {
        let inbound = InboundRing::create(addr(3)).expect("create");
        let live = PeerRing::open(addr(3)).expect("open");
        let dead = PeerRing::map(addr(3), DEAD).expect("map");
        // Killed in the middle of its copy.
        let (_, slot) = dead.reserve().expect("reserve");
        dead.fill(slot, &[0xdd; 1000], addr(8), 500);
        for i in 1..=3u8 {
            assert!(matches!(live.push(&[i; 9], addr(9)), Pushed::Queued { .. }));
        }
        assert_eq!(
            (inbound.head(), pop_all(&inbound)),
            (Head::Reserved, vec![])
        );
        let t0 = 5_000;
        assert!(!inbound.skip_dead_reservation(t0), "first seen");
        assert!(
            !inbound.skip_dead_reservation(t0 + RESERVATION_PATIENCE_NANOS - 1),
            "within the patience"
        );
        assert!(inbound.skip_dead_reservation(t0 + RESERVATION_PATIENCE_NANOS));
        assert_eq!(
            pop_all(&inbound),
            vec![1, 2, 3],
            "the live producer's, in order"
        );
        assert_eq!(inbound.head(), Head::Empty);
        // The ring has its whole capacity again, round after round.
        for _ in 0..2 {
            let mut queued = 0;
            while matches!(live.push(&[7], addr(9)), Pushed::Queued { .. }) {
                queued += 1;
            }
            assert_eq!(queued, SLOT_COUNT);
            assert_eq!(pop_all(&inbound).len() as u64, SLOT_COUNT);
        }
    }

    #[test]
    fn a_claim_that_did_not_move_the_tail_is_passed_by_producers_and_the_owner() {
        let inbound = InboundRing::create(addr(4)).expect("create");
        let live = PeerRing::open(addr(4)).expect("open");
        // Killed between its claim and moving the tail; a live producer
        // moves the tail for it and takes the next slot.
        claim_only(&inbound, DEAD);
        assert!(matches!(live.push(&[1], addr(9)), Pushed::Queued { .. }));
        assert!(!inbound.skip_dead_reservation(0));
        assert!(inbound.skip_dead_reservation(RESERVATION_PATIENCE_NANOS));
        assert_eq!(pop_all(&inbound), vec![1]);
        // The same with nobody pushing behind it: the owner moves the tail.
        claim_only(&inbound, DEAD);
        assert!(!inbound.skip_dead_reservation(0));
        assert!(inbound.skip_dead_reservation(RESERVATION_PATIENCE_NANOS));
        assert!(matches!(live.push(&[2], addr(9)), Pushed::Queued { .. }));
        assert_eq!(pop_all(&inbound), vec![2]);
    }

    #[test]
    fn a_live_producers_slot_is_never_skipped() {
        let inbound = InboundRing::create(addr(5)).expect("create");
        let live = PeerRing::open(addr(5)).expect("open");
        let other = PeerRing::open(addr(5)).expect("open");
        live.reserve().expect("reserve");
        assert!(matches!(other.push(&[1], addr(9)), Pushed::Queued { .. }));
        let mut now = 0;
        for _ in 0..5 {
            assert!(!inbound.skip_dead_reservation(now), "its lock is held");
            now += 10 * RESERVATION_PATIENCE_NANOS;
        }
        assert_eq!(inbound.head(), Head::Reserved);
        // Its process gone (here: its ring unmapped, the lock released
        // with the file, as at a death) while another ring of the same
        // process id still holds the lock: still alive.
        drop(live);
        now += 10 * RESERVATION_PATIENCE_NANOS;
        assert!(!inbound.skip_dead_reservation(now), "the lock of `other`");
        drop(other);
        assert!(inbound.skip_dead_reservation(now + RESERVATION_PATIENCE_NANOS));
        assert_eq!(pop_all(&inbound), vec![1]);
    }

    #[test]
    fn a_sleeping_owner_is_woken_on_its_own_socket() {
        let inbound = InboundRing::create(addr(6)).expect("create");
        let peer = PeerRing::open(addr(6)).expect("open");
        let mut byte = [0u8; 8];
        assert!(inbound.wake.recv(&mut byte).is_err(), "nothing yet");
        inbound.set_sleeping(true);
        assert_eq!(peer.push(b"z", addr(2)), Pushed::Queued { wake: true });
        peer.wake();
        peer.wake();
        assert_eq!(inbound.wake.recv(&mut byte).expect("a wake-up"), 1);
        inbound.drain_wake_ups();
        assert!(inbound.wake.recv(&mut byte).is_err(), "drained");
        assert!(
            InboundRing::create(addr(6)).is_err(),
            "a live ring's name is taken"
        );
    }

    #[test]
    fn a_full_ring_refuses_and_a_gone_owner_is_noticed() {
        let inbound = InboundRing::create(addr(2)).expect("create");
        let peer = PeerRing::open(addr(2)).expect("open");
        for _ in 0..SLOT_COUNT {
            assert!(matches!(peer.push(b"y", addr(3)), Pushed::Queued { .. }));
        }
        assert_eq!(peer.push(b"y", addr(3)), Pushed::Full);
        drop(inbound);
        assert_eq!(peer.push(b"y", addr(3)), Pushed::Gone);
        assert!(PeerRing::open(addr(2)).is_none(), "file removed");
    }
}
