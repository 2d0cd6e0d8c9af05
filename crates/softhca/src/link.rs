//! The soft device's port: one UDP socket bound to the device's IPv4 address,
//! the fault switches a test can flip (link down, drop ratio), and the
//! counters that show what the port did with each datagram.
//!
//! Faults act on both directions, as a bad cable would: with the link down
//! nothing leaves and everything that arrives is discarded; with a drop ratio
//! `r` each datagram sent or received is lost with probability `r`.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::batch::{recv_batch, send_batch, RxBatch, TxBatch, TxView, TX_BATCH};
use crate::shm::{PeerRing, Pushed};
use crate::wire::{seal, IcrcContext};

/// Socket buffer size asked for in each direction.
const SOCKET_BUFFER_BYTES: libc::c_int = 4 << 20;

/// Where a QP's packets go: the device's port and the batch being built
/// (flushed by whoever drives the device, at the end of its pass).
pub struct Tx<'a> {
    pub link: &'a Link,
    pub batch: &'a mut TxBatch,
}

impl Tx<'_> {
    /// Builds one datagram to `to` (see [`Link::transmit`]); ask
    /// [`Tx::has_room`] first.
    pub fn transmit(&mut self, to: SocketAddrV4, build: impl FnOnce(&mut [u8]) -> Option<usize>) {
        self.link.transmit(self.batch, to, build);
    }

    /// Whether a datagram to `to` can be built now: the batch has a free
    /// slot and `to`'s shared-memory ring was not full at the last flush
    /// (flushing again first, in case either has changed). A QP stops
    /// taking packets from its engine when this says no, so the same-host
    /// wire holds them back instead of losing them (see [`Link::flush`]).
    pub fn has_room(&mut self, to: SocketAddrV4) -> bool {
        if self.batch.is_full() || self.batch.waits_for(to) {
            self.link.flush(self.batch);
        }
        !self.batch.is_full() && !self.batch.waits_for(to)
    }
}

/// Sets an integer socket option; returns the OS error if the kernel refuses.
fn set_int_option(
    socket: &UdpSocket,
    level: libc::c_int,
    option: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: setsockopt on our own open socket with a pointer to a live
    // c_int and its exact size; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn set_buffer_size(socket: &UdpSocket, option: libc::c_int, bytes: libc::c_int) {
    if let Err(err) = set_int_option(socket, libc::SOL_SOCKET, option, bytes) {
        tracing::debug!("soft hca: socket buffer option {option}: {err}");
    }
}

/// Sends with Don't-Fragment and without fragmenting, as a RoCE NIC does.
/// Besides matching hardware this makes Linux put identification 0 in the
/// IPv4 header of an unconnected socket (with the default "want" mode it
/// sets DF but picks a varying id), which is what the ICRC pseudo header in
/// `wire::icrc` assumes, so analysers verify our ICRCs.
fn set_dont_fragment(socket: &UdpSocket) {
    if let Err(err) = set_int_option(
        socket,
        libc::IPPROTO_IP,
        libc::IP_MTU_DISCOVER,
        libc::IP_PMTUDISC_DO,
    ) {
        tracing::debug!("soft hca: cannot set Don't-Fragment: {err}");
    }
}

/// Declares [`LinkCounters`] (the live atomic counters) and [`LinkStats`]
/// (a plain snapshot of them) from one list of counter names.
macro_rules! link_counters {
    ($($(#[$doc:meta])* $name:ident,)+) => {
        /// What happened to datagrams at this port, for tests and debugging.
        #[derive(Debug, Default)]
        pub struct LinkCounters {
            $($(#[$doc])* pub $name: AtomicU64,)+
        }

        /// A plain snapshot of [`LinkCounters`].
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
        pub struct LinkStats {
            $($(#[$doc])* pub $name: u64,)+
        }

        impl LinkCounters {
            pub fn snapshot(&self) -> LinkStats {
                LinkStats {
                    $($name: self.$name.load(Ordering::Relaxed),)+
                }
            }
        }
    };
}

link_counters! {
    tx_packets,
    tx_dropped_link_down,
    tx_dropped_loss,
    tx_errors,
    rx_packets,
    rx_dropped_link_down,
    rx_dropped_loss,
    /// Datagrams that did not parse as RoCEv2.
    rx_malformed,
    /// Datagrams for a QP number that does not exist on this device.
    rx_unknown_qp,
    /// Datagrams whose source address is not the destination QP's peer.
    rx_forged_source,
    /// Of `tx_packets`: datagrams carried by a same-host peer's
    /// shared-memory ring instead of UDP.
    tx_shm,
    /// Times a flush found a same-host peer's ring full and kept the
    /// datagrams to it for a later flush (nothing is lost).
    tx_ring_full,
    /// Datagrams read from this device's shared-memory ring (before the
    /// faults; those that survive count in `rx_packets` too).
    rx_shm,
    /// Wake-ups sent to sleeping same-host peers (on their ring's socket).
    tx_wake_ups,
    /// Slots of this device's ring skipped because the process that
    /// reserved them died before publishing them.
    rx_shm_dead_skipped,
}

pub fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Drop decisions: a SplitMix64 sequence held in one atomic, so that a fixed
/// seed gives the same sequence of decisions for the same traffic.
#[derive(Debug)]
struct LossDice {
    state: AtomicU64,
    /// A datagram is dropped when the next random number is below this;
    /// `u64::MAX` means "drop everything".
    threshold: AtomicU64,
}

const SPLITMIX_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

impl LossDice {
    fn new(seed: u64) -> Self {
        LossDice {
            state: AtomicU64::new(seed),
            threshold: AtomicU64::new(0),
        }
    }

    fn set_ratio(&self, ratio: f64) {
        let threshold = if ratio >= 1.0 {
            u64::MAX
        } else if ratio <= 0.0 {
            0
        } else {
            // Exact enough: f64 has 53 bits of precision; the cast saturates.
            (ratio * (u64::MAX as f64)) as u64
        };
        self.threshold.store(threshold, Ordering::Relaxed);
    }

    fn ratio(&self) -> f64 {
        self.threshold.load(Ordering::Relaxed) as f64 / u64::MAX as f64
    }

    fn roll_drop(&self) -> bool {
        let threshold = self.threshold.load(Ordering::Relaxed);
        if threshold == 0 {
            return false;
        }
        if threshold == u64::MAX {
            return true;
        }
        let mut z = self
            .state
            .fetch_add(SPLITMIX_GAMMA, Ordering::Relaxed)
            .wrapping_add(SPLITMIX_GAMMA);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        z < threshold
    }
}

/// The fault switches of one device's port, as set by name (kept while the
/// device is closed and applied when it opens).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Faults {
    pub link_up: bool,
    pub loss: f64,
}

/// One device's UDP port.
#[derive(Debug)]
pub struct Link {
    socket: UdpSocket,
    local: SocketAddrV4,
    up: AtomicBool,
    dice: LossDice,
    /// Datagrams still to drop on send, whatever the drop ratio.
    drop_next: AtomicU64,
    /// Runs of equal-sized datagrams to one peer go as one UDP GSO message
    /// (cleared for good if the kernel refuses one).
    gso: AtomicBool,
    /// The socket delivers coalesced (GRO) messages.
    gro: bool,
    /// Test fault: the next push into a peer's ring stops its thread for
    /// good in the middle of its copy ([`Link::freeze_next_ring_push`]);
    /// `push_frozen` says it happened.
    freeze_next_push: AtomicBool,
    push_frozen: AtomicBool,
    pub counters: LinkCounters,
}

impl Link {
    /// Binds a non-blocking UDP socket to `ip` on an ephemeral port. With
    /// `offload`, sends use UDP GSO and receives GRO where the kernel has
    /// them (else one datagram per message, as without).
    pub fn bind(ip: Ipv4Addr, loss_seed: u64, offload: bool) -> io::Result<Link> {
        let socket = UdpSocket::bind(SocketAddrV4::new(ip, 0))?;
        socket.set_nonblocking(true)?;
        // A QP keeps up to a few hundred MTU-sized packets in flight; the
        // default socket buffers (~200 KiB) would drop bursts and turn them
        // into retransmission timeouts. The kernel caps this at rmem_max /
        // wmem_max; a smaller buffer only costs speed, so errors are ignored.
        for option in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
            set_buffer_size(&socket, option, SOCKET_BUFFER_BYTES);
        }
        set_dont_fragment(&socket);
        // Setting the default segment size to 0 (none) tells whether the
        // kernel knows UDP_SEGMENT at all.
        let gso = offload && set_int_option(&socket, libc::SOL_UDP, libc::UDP_SEGMENT, 0).is_ok();
        let gro = offload && set_int_option(&socket, libc::SOL_UDP, libc::UDP_GRO, 1).is_ok();
        let local = match socket.local_addr()? {
            SocketAddr::V4(addr) => addr,
            SocketAddr::V6(_) => {
                return Err(io::Error::other("bound an IPv6 address"));
            }
        };
        Ok(Link {
            socket,
            local,
            up: AtomicBool::new(true),
            dice: LossDice::new(loss_seed),
            drop_next: AtomicU64::new(0),
            gso: AtomicBool::new(gso),
            gro,
            freeze_next_push: AtomicBool::new(false),
            push_frozen: AtomicBool::new(false),
            counters: LinkCounters::default(),
        })
    }

    pub fn local_addr(&self) -> SocketAddrV4 {
        self.local
    }

    /// Whether receives may carry coalesced (GRO) messages.
    pub fn gro(&self) -> bool {
        self.gro
    }

    pub fn raw_fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }

    pub fn set_up(&self, up: bool) {
        self.up.store(up, Ordering::Relaxed);
    }

    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// `ratio` must already be validated to lie in [0, 1].
    pub fn set_loss(&self, ratio: f64) {
        self.dice.set_ratio(ratio);
    }

    pub fn loss(&self) -> f64 {
        self.dice.ratio()
    }

    /// Drops the next `count` datagrams this port sends (on top of the
    /// drop ratio), replacing any count still pending.
    pub fn drop_next(&self, count: u64) {
        self.drop_next.store(count, Ordering::Relaxed);
    }

    /// A fault for tests of a producer that dies in the middle of a copy
    /// into a same-host peer's ring: the next such push reserves its slot,
    /// copies half the datagram and stops the pushing thread for good
    /// (whoever drives the device then: the caller's thread or the service
    /// thread), with the device's lock held. Only killing the process ends
    /// it.
    pub fn freeze_next_ring_push(&self) {
        self.freeze_next_push.store(true, Ordering::Relaxed);
    }

    /// Whether a push froze ([`Link::freeze_next_ring_push`]).
    pub fn ring_push_frozen(&self) -> bool {
        self.push_frozen.load(Ordering::Acquire)
    }

    /// Pushes `datagram` into `ring`, or freezes in the middle (the fault).
    #[inline]
    fn push_into(&self, ring: &PeerRing, datagram: &[u8]) -> Pushed {
        if self.freeze_next_push.load(Ordering::Relaxed)
            && self.freeze_next_push.swap(false, Ordering::Relaxed)
        {
            return ring.push_and_freeze(datagram, self.local, &self.push_frozen);
        }
        ring.push(datagram, self.local)
    }

    /// Takes one from the pending drop count, if any is left.
    fn take_forced_drop(&self) -> bool {
        self.drop_next
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Whether the next datagram may leave: `false`, and counted as dropped,
    /// if the link is down or the loss settings drop it.
    #[inline]
    fn admits_datagram(&self) -> bool {
        if !self.is_up() {
            bump(&self.counters.tx_dropped_link_down);
            return false;
        }
        if self.take_forced_drop() || self.dice.roll_drop() {
            bump(&self.counters.tx_dropped_loss);
            return false;
        }
        true
    }

    #[cold]
    fn count_send_error(&self, to: SocketAddrV4, err: &io::Error) {
        bump(&self.counters.tx_errors);
        tracing::debug!("soft hca {}: send to {to} failed: {err}", self.local);
    }

    /// Sends one datagram, unless the link is down or the dice drop it.
    /// A send error is a lost packet like any other: RC retransmits it.
    /// (The device sends in batches, [`Link::flush`]; this one-datagram
    /// path is for the port's own tests.)
    #[cfg(test)]
    pub fn send(&self, datagram: &[u8], to: SocketAddrV4) {
        if !self.admits_datagram() {
            return;
        }
        match self.socket.send_to(datagram, to) {
            Ok(_) => bump(&self.counters.tx_packets),
            Err(err) if err.raw_os_error() == Some(libc::EMSGSIZE) => {
                self.fall_back_to_fragmenting(datagram, to);
            }
            Err(err) => self.count_send_error(to, &err),
        }
    }

    /// The route's MTU is smaller than the QP's path MTU (e.g. a 1500-byte
    /// Ethernet under the default 4096-byte path MTU): let the kernel
    /// fragment from now on rather than lose every large packet. Both our
    /// ends still agree on the ICRC; only an analyser may flag it, since
    /// fragments carry a non-zero IP id.
    #[cold]
    fn fall_back_to_fragmenting(&self, datagram: &[u8], to: SocketAddrV4) {
        tracing::warn!(
            "soft hca {}: a {}-byte datagram exceeds the MTU towards {to}; \
             sending fragmented IPv4 from now on (use a smaller path MTU to avoid it)",
            self.local,
            datagram.len()
        );
        if let Err(err) = set_int_option(
            &self.socket,
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_DONT,
        ) {
            tracing::debug!(
                "soft hca {}: cannot clear Don't-Fragment: {err}",
                self.local
            );
        }
        match self.socket.send_to(datagram, to) {
            Ok(_) => bump(&self.counters.tx_packets),
            Err(err) => self.count_send_error(to, &err),
        }
    }

    /// Builds one datagram to `to` in the free slot of `batch` (flushing
    /// the batch first if it is full) and keeps it for the next flush,
    /// unless the link is down or the dice drop it: the same faults, decided
    /// per datagram, as [`Link::send`]. `build` returns the datagram's
    /// length, or `None` if there is nothing to send after all.
    pub fn transmit(
        &self,
        batch: &mut TxBatch,
        to: SocketAddrV4,
        build: impl FnOnce(&mut [u8]) -> Option<usize>,
    ) {
        if batch.is_full() {
            self.flush(batch);
        }
        let Some(len) = build(batch.slot()) else {
            return;
        };
        if !self.admits_datagram() {
            return;
        }
        batch.commit(len, to);
    }

    /// Sends the datagrams of `batch`: into the ring of each same-host peer
    /// that has one, the rest with one `sendmmsg` (when the kernel takes
    /// them all). The same-host wire is lossless, as a fabric with
    /// link-level flow control is: datagrams to a peer whose ring is full
    /// stay in the batch, in order, for the next flush, and the QPs sending
    /// to it wait ([`Tx::has_room`]). A datagram the socket
    /// buffer does not take is lost like any other: RC retransmits it.
    pub fn flush(&self, batch: &mut TxBatch) {
        if !self.is_up() {
            // Built before the link went down (a pass held them, or the
            // batch was filling): lost with it, as a NIC's queue would be.
            let lost = batch.len() as u64;
            self.counters
                .tx_dropped_link_down
                .fetch_add(lost, Ordering::Relaxed);
            batch.clear();
            return;
        }
        let (view, mut shm) = batch.parts();
        let mut udp = [0u8; TX_BATCH];
        let mut udp_count = 0;
        let mut kept = [0u8; TX_BATCH];
        let mut kept_count = 0;
        let mut full_rings: Vec<SocketAddrV4> = Vec::new();
        let mut woken: Vec<SocketAddrV4> = Vec::new();
        for index in 0..view.len() {
            let (datagram, to) = view.get(index);
            if full_rings.contains(&to) {
                // Behind one that waits: stays behind it.
                kept[kept_count] = index as u8;
                kept_count += 1;
                continue;
            }
            let pushed = shm
                .as_deref_mut()
                .and_then(|peers| peers.ring_for(to))
                .map(|ring| {
                    let pushed = self.push_into(ring, datagram);
                    // Its service thread sleeps: wake it, once per flush.
                    if pushed == (Pushed::Queued { wake: true }) && !woken.contains(&to) {
                        ring.wake();
                        bump(&self.counters.tx_wake_ups);
                        woken.push(to);
                    }
                    pushed
                });
            match pushed {
                Some(Pushed::Queued { .. }) => {
                    bump(&self.counters.tx_packets);
                    bump(&self.counters.tx_shm);
                    continue;
                }
                Some(Pushed::Full) => {
                    bump(&self.counters.tx_ring_full);
                    full_rings.push(to);
                    kept[kept_count] = index as u8;
                    kept_count += 1;
                    continue;
                }
                Some(Pushed::Gone) => {
                    if let Some(peers) = shm.as_deref_mut() {
                        peers.forget(to);
                    }
                }
                None => {}
            }
            udp[udp_count] = index as u8;
            udp_count += 1;
        }
        // Datagrams are built unsealed: only those that leave by UDP get
        // their ICRC (one CRC pass over each byte the ring carries less).
        for &index in &udp[..udp_count] {
            let (datagram, to) = batch.datagram_mut(usize::from(index));
            seal(datagram, &IcrcContext::new(self.local, to));
        }
        let (view, _) = batch.parts();
        self.send_udp(view, &udp[..udp_count]);
        batch.keep_only(&kept[..kept_count], &full_rings);
    }

    /// Sends the datagrams of `view` named by `indexes` over UDP.
    fn send_udp(&self, view: TxView<'_>, mut indexes: &[u8]) {
        while let Some(&first) = indexes.first() {
            let gso = self.gso.load(Ordering::Relaxed);
            match send_batch(self.raw_fd(), view, indexes, gso) {
                Ok(sent) if sent > 0 => {
                    self.counters
                        .tx_packets
                        .fetch_add(sent as u64, Ordering::Relaxed);
                    indexes = &indexes[sent.min(indexes.len())..];
                }
                Ok(_) => break,
                Err((err, group))
                    if group > 1 && !matches!(err.kind(), io::ErrorKind::WouldBlock) =>
                {
                    // E.g. EMSGSIZE (a route MTU below the path MTU: the
                    // segments would need fragmenting) or EIO (no checksum
                    // offload on the route): send one datagram per message
                    // from now on, starting with this run.
                    tracing::debug!(
                        "soft hca {}: UDP GSO refused ({err}); sending datagrams one by one",
                        self.local
                    );
                    self.gso.store(false, Ordering::Relaxed);
                }
                Err((err, _)) if err.raw_os_error() == Some(libc::EMSGSIZE) => {
                    let (datagram, to) = view.get(usize::from(first));
                    self.fall_back_to_fragmenting(datagram, to);
                    indexes = &indexes[1..];
                }
                Err((err, _)) if err.kind() == io::ErrorKind::WouldBlock => {
                    // The socket buffer is full: the rest is lost, as a
                    // NIC's full queue would lose it.
                    let lost = indexes.len() as u64;
                    self.counters.tx_errors.fetch_add(lost, Ordering::Relaxed);
                    tracing::debug!("soft hca {}: send buffer full, {lost} lost", self.local);
                    break;
                }
                Err((err, _)) => {
                    let (_, to) = view.get(usize::from(first));
                    self.count_send_error(to, &err);
                    indexes = &indexes[1..];
                }
            }
        }
    }

    /// Reads the next batch of messages into `batch` with one `recvmmsg`;
    /// returns how many messages it read (0: none waiting; a coalesced one
    /// holds several datagrams, see `RxBatch::len`). Pass each datagram to
    /// [`Link::accept`] before using it.
    pub fn recv_batch(&self, batch: &mut RxBatch) -> usize {
        // An error (e.g. ECONNREFUSED reported from an earlier send to a
        // closed port) is consumed by the call that returns it: try again,
        // a bounded number of times.
        for _ in 0..4 {
            match recv_batch(self.raw_fd(), batch) {
                Ok(count) => return count,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return 0,
                Err(err) => {
                    tracing::debug!("soft hca {}: receive error: {err}", self.local);
                }
            }
        }
        0
    }

    /// Whether a datagram read by [`Link::recv_batch`] survives the faults
    /// (counted either way).
    pub fn accept(&self, from: SocketAddrV4) -> bool {
        if !self.is_up() {
            bump(&self.counters.rx_dropped_link_down);
            return false;
        }
        if self.dice.roll_drop() {
            bump(&self.counters.rx_dropped_loss);
            return false;
        }
        if from.ip().is_unspecified() {
            bump(&self.counters.rx_forged_source);
            return false;
        }
        bump(&self.counters.rx_packets);
        true
    }

    /// Receives the next datagram that survives the faults, or `None` when
    /// the socket has nothing more right now (the device reads in batches,
    /// [`Link::recv_batch`]; this is for the port's own tests).
    #[cfg(test)]
    pub fn recv(&self, buf: &mut [u8]) -> Option<(usize, SocketAddrV4)> {
        loop {
            let (len, from) = match self.socket.recv_from(buf) {
                Ok(got) => got,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return None,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => {
                    // E.g. ECONNREFUSED reported from an earlier send to a
                    // closed port: nothing to do with this datagram.
                    tracing::debug!("soft hca {}: receive error: {err}", self.local);
                    continue;
                }
            };
            if !self.is_up() {
                bump(&self.counters.rx_dropped_link_down);
                continue;
            }
            if self.dice.roll_drop() {
                bump(&self.counters.rx_dropped_loss);
                continue;
            }
            let SocketAddr::V4(from) = from else {
                bump(&self.counters.rx_forged_source);
                continue;
            };
            bump(&self.counters.rx_packets);
            return Some((len, from));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_dice_repeat_and_match_the_ratio() {
        let a = LossDice::new(42);
        let b = LossDice::new(42);
        a.set_ratio(0.25);
        b.set_ratio(0.25);
        let rolls_a: Vec<bool> = (0..10_000).map(|_| a.roll_drop()).collect();
        let rolls_b: Vec<bool> = (0..10_000).map(|_| b.roll_drop()).collect();
        assert_eq!(rolls_a, rolls_b);
        let dropped = rolls_a.iter().filter(|d| **d).count();
        assert!(
            (2_200..2_800).contains(&dropped),
            "dropped {dropped} of 10000 at 25 %"
        );
    }

    #[test]
    fn ratio_zero_and_one_are_exact() {
        let dice = LossDice::new(1);
        dice.set_ratio(0.0);
        assert!((0..1000).all(|_| !dice.roll_drop()));
        dice.set_ratio(1.0);
        assert!((0..1000).all(|_| dice.roll_drop()));
    }

    #[test]
    fn link_down_drops_both_directions() {
        let a = Link::bind(Ipv4Addr::LOCALHOST, 1, true).expect("bind a");
        let b = Link::bind(Ipv4Addr::LOCALHOST, 2, true).expect("bind b");
        let mut buf = [0u8; 64];
        a.send(b"one", b.local_addr());
        let got = wait_recv(&b, &mut buf);
        assert_eq!(got, Some((3, a.local_addr())));

        a.set_up(false);
        a.send(b"two", b.local_addr());
        assert_eq!(a.counters.snapshot().tx_dropped_link_down, 1);
        b.send(b"three", a.local_addr());
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(a.recv(&mut buf), None);
        assert_eq!(a.counters.snapshot().rx_dropped_link_down, 1);
        assert_eq!(b.recv(&mut buf), None, "nothing left a's port while down");

        a.set_up(true);
        b.send(b"four", a.local_addr());
        assert_eq!(wait_recv(&a, &mut buf), Some((4, b.local_addr())));
        assert_eq!(&buf[..4], b"four");
    }

    #[test]
    fn drop_next_drops_exactly_that_many_sends() {
        let a = Link::bind(Ipv4Addr::LOCALHOST, 1, true).expect("bind a");
        let b = Link::bind(Ipv4Addr::LOCALHOST, 2, true).expect("bind b");
        a.drop_next(2);
        for payload in [b"1", b"2", b"3"] {
            a.send(payload, b.local_addr());
        }
        let mut buf = [0u8; 8];
        assert_eq!(wait_recv(&b, &mut buf), Some((1, a.local_addr())));
        assert_eq!(&buf[..1], b"3", "the first two were dropped");
        assert_eq!(a.counters.snapshot().tx_dropped_loss, 2);
    }

    fn wait_recv(link: &Link, buf: &mut [u8]) -> Option<(usize, SocketAddrV4)> {
        for _ in 0..200 {
            if let Some(got) = link.recv(buf) {
                return Some(got);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        None
    }
}
