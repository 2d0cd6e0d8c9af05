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
//! single-consumer queue of fixed slots, each with a sequence word that says
//! whose turn it is (the producer that claimed the slot publishes it, the
//! consumer hands it back). The owner reads it at every progress pass, with
//! no system call. While the owner's service thread sleeps watching its
//! socket (nobody progresses it), it says so in the ring's header, and a
//! producer wakes it with a one-byte UDP datagram ([`WAKE_BYTE`]).
//!
//! A ring whose owner is gone (its `alive` word cleared, the file unlinked)
//! is dropped by producers, who fall back to UDP for that address (where
//! the datagram meets a closed port, as it would without shared memory).

use std::ffi::CString;
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use crate::wire::MAX_DATAGRAM;

/// The payload of the datagram that wakes a ring's sleeping owner.
pub const WAKE_BYTE: u8 = 0x5a;

const MAGIC: u64 = 0x5543_5853_4648_5257; // "UCXSFHRW"
const VERSION: u32 = 2;
/// Slots of a ring: at 4 KiB per datagram, 1024 hold four 1 MiB messages
/// of 4096-byte packets in flight.
const SLOT_COUNT: u64 = 1024;
/// Slot header: sequence (8), length (4), source IPv4 (4), source port (2),
/// padding to 24.
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

/// The network namespace of this process (inode of `/proc/self/ns/net`;
/// 0 if it cannot be read, which then only matches another 0).
fn netns_id() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/net").map_or(0, |m| m.ino())
}

const RING_DIR: &str = "/dev/shm";
const RING_PREFIX: &str = "ucx-softhca-";

fn ring_path(addr: SocketAddrV4) -> CString {
    let name = format!("{RING_DIR}/{RING_PREFIX}{}-{}", addr.ip(), addr.port());
    // No interior NUL: built from digits, dots and dashes.
    CString::new(name).unwrap_or_default()
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

/// The ring this device reads (it created the file and removes it).
pub struct InboundRing {
    map: Mapping,
    path: CString,
    /// Next position to read (only this device reads, under its lock).
    head: AtomicU64,
}

impl InboundRing {
    /// Creates the ring of the device at `addr`, replacing a stale file of
    /// a device that had this address before and did not clean up.
    pub fn create(addr: SocketAddrV4) -> io::Result<InboundRing> {
        sweep_dead_rings();
        let path = ring_path(addr);
        // SAFETY: `path` is NUL-terminated; a missing file is fine.
        unsafe { libc::unlink(path.as_ptr()) };
        let fd = Fd::open(&path, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL)?;
        // SAFETY: our descriptor; sets the file's size (sparse).
        if unsafe { libc::ftruncate(fd.0, REGION_SIZE as libc::off_t) } != 0 {
            let err = io::Error::last_os_error();
            // SAFETY: as above.
            unsafe { libc::unlink(path.as_ptr()) };
            return Err(err);
        }
        let map = match Mapping::map(fd.0) {
            Ok(map) => map,
            Err(err) => {
                // SAFETY: as above.
                unsafe { libc::unlink(path.as_ptr()) };
                return Err(err);
            }
        };
        for position in 0..SLOT_COUNT {
            map.u64_at(map.slot(position))
                .store(position, Ordering::Relaxed);
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
            head: AtomicU64::new(0),
        })
    }

    /// Copies the next datagram into `out`; returns its length and source,
    /// or `None` if the ring is empty.
    /// Only one thread at a time may pop (the device's lock holder).
    pub fn pop(&self, out: &mut [u8]) -> Option<(usize, SocketAddrV4)> {
        let head = self.head.load(Ordering::Relaxed);
        let slot = self.map.slot(head);
        let seq = self.map.u64_at(slot).load(Ordering::Acquire);
        if seq != head.wrapping_add(1) {
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
        // store of `seq`, which our acquire load saw, and will not write it
        // again before we hand the slot back below.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.map.base.add(slot + SLOT_HEADER),
                out.as_mut_ptr(),
                len,
            );
        }
        self.map
            .u64_at(slot)
            .store(head.wrapping_add(SLOT_COUNT), Ordering::Release);
        self.head.store(head.wrapping_add(1), Ordering::Relaxed);
        let from = SocketAddrV4::new(Ipv4Addr::from(ip.to_be_bytes()), port);
        Some((len, from))
    }

    /// Whether a datagram is waiting.
    pub fn has_data(&self) -> bool {
        let head = self.head.load(Ordering::Relaxed);
        let slot = self.map.slot(head);
        self.map.u64_at(slot).load(Ordering::SeqCst) == head.wrapping_add(1)
    }

    /// Tells producers whether the owner sleeps and needs a wake-up
    /// datagram. SeqCst pairs with the producers' fence after a push.
    pub fn set_sleeping(&self, sleeping: bool) {
        self.map
            .u32_at(OFF_SLEEPING)
            .store(u32::from(sleeping), Ordering::SeqCst);
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
    /// Queued; `wake`: the owner sleeps, send it a wake-up datagram.
    Queued { wake: bool },
    /// The ring is full: the sender keeps the datagram for a later try.
    Full,
    /// The owner is gone: forget this ring.
    Gone,
}

/// Another device's ring, as a producer sees it.
pub(crate) struct PeerRing {
    map: Mapping,
}

impl PeerRing {
    /// Maps the ring of the device at `addr`, if one of this host and
    /// network namespace is alive there.
    pub fn open(addr: SocketAddrV4) -> Option<Arc<PeerRing>> {
        let path = ring_path(addr);
        let fd = Fd::open(&path, libc::O_RDWR).ok()?;
        // SAFETY: stat is plain old data; all-zero is a valid value.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: our descriptor and a live stat buffer.
        if unsafe { libc::fstat(fd.0, &mut stat) } != 0 || stat.st_size < REGION_SIZE as i64 {
            return None;
        }
        let map = Mapping::map(fd.0).ok()?;
        let matches = map.u64_at(OFF_MAGIC).load(Ordering::Acquire) == MAGIC
            && map.u32_at(OFF_VERSION).load(Ordering::Relaxed) == VERSION
            && u64::from(map.u32_at(OFF_SLOT_COUNT).load(Ordering::Relaxed)) == SLOT_COUNT
            && map.u32_at(OFF_SLOT_SIZE).load(Ordering::Relaxed) as usize == SLOT_SIZE
            && map.u64_at(OFF_NETNS).load(Ordering::Relaxed) == netns_id()
            && map.u32_at(OFF_ALIVE).load(Ordering::Acquire) == 1
            // A file left by a killed process still says alive; a device
            // at its address now may be on the UDP wire only.
            && process_exists(map.u32_at(OFF_PID).load(Ordering::Relaxed) as libc::pid_t);
        matches.then(|| Arc::new(PeerRing { map }))
    }

    /// Copies `datagram` from `from` into the next free slot.
    pub fn push(&self, datagram: &[u8], from: SocketAddrV4) -> Pushed {
        if self.map.u32_at(OFF_ALIVE).load(Ordering::Acquire) != 1 {
            return Pushed::Gone;
        }
        let len = datagram.len().min(MAX_DATAGRAM);
        let tail = self.map.u64_at(OFF_TAIL);
        let mut position = tail.load(Ordering::Relaxed);
        let slot = loop {
            let slot = self.map.slot(position);
            let seq = self.map.u64_at(slot).load(Ordering::Acquire);
            let lag = seq.wrapping_sub(position) as i64;
            if lag == 0 {
                match tail.compare_exchange_weak(
                    position,
                    position.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break slot,
                    Err(now) => position = now,
                }
            } else if lag < 0 {
                return Pushed::Full;
            } else {
                position = tail.load(Ordering::Relaxed);
            }
        };
        // SAFETY: we own the slot (claimed by the CAS above, not published
        // yet); its data area of MAX_DATAGRAM bytes is inside the mapping
        // and `len` is clamped to it.
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
        self.map
            .u64_at(slot)
            .store(position.wrapping_add(1), Ordering::Release);
        // Pairs with `InboundRing::set_sleeping`: either the owner sees
        // this datagram before it sleeps, or we see it asleep.
        fence(Ordering::SeqCst);
        Pushed::Queued {
            wake: self.map.u32_at(OFF_SLEEPING).load(Ordering::SeqCst) != 0,
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
