//! Datagrams in batches: the device collects what one pass produces (the
//! WQEs of every doorbell rung since the last pass, the answers to every
//! datagram read) and hands it to the kernel with one `sendmmsg`; it reads
//! with `recvmmsg`, a batch per system call. On loopback a system call
//! costs more than building a packet, so this is where the device's time
//! per packet goes down.

use std::io;
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::RawFd;

use std::sync::Arc;

use crate::shm::PeerRing;
use crate::wire::{Opcode, MAX_DATAGRAM};

/// Datagrams one `sendmmsg` carries at most.
pub const TX_BATCH: usize = 64;
/// Datagrams one `recvmmsg` reads at most.
pub const RX_BATCH: usize = 32;

/// The shared-memory rings of peers on this host, by UDP address (`None`:
/// the address has none, it is reached over UDP).
#[derive(Default)]
pub(crate) struct ShmPeers {
    known: Vec<(SocketAddrV4, Option<Arc<PeerRing>>)>,
}

impl ShmPeers {
    /// The ring of the device at `to`, looked up (and remembered) the first
    /// time.
    pub(crate) fn ring_for(&mut self, to: SocketAddrV4) -> Option<&PeerRing> {
        let index = match self.known.iter().position(|(addr, _)| *addr == to) {
            Some(index) => index,
            None => {
                self.known.push((to, PeerRing::open(to)));
                self.known.len() - 1
            }
        };
        self.known[index].1.as_deref()
    }

    /// The device at `to` closed its ring: look again next time (another
    /// device may get its address).
    pub(crate) fn forget(&mut self, to: SocketAddrV4) {
        self.known.retain(|(addr, _)| *addr != to);
    }
}

/// Datagrams built and waiting for the next flush.
pub struct TxBatch {
    buf: Box<[u8]>,
    /// Length and destination of each built datagram, in slot order.
    queued: Vec<(usize, SocketAddrV4)>,
    /// Same-host peers' rings, when the shared-memory wire is on.
    pub(crate) shm: Option<ShmPeers>,
    /// Peers whose ring was full at the last flush: their datagrams stay
    /// queued, in order, until a flush finds room.
    full_rings: Vec<SocketAddrV4>,
}

impl TxBatch {
    pub fn new(shm: bool) -> TxBatch {
        TxBatch {
            buf: vec![0u8; TX_BATCH * MAX_DATAGRAM].into_boxed_slice(),
            queued: Vec::with_capacity(TX_BATCH),
            shm: shm.then(ShmPeers::default),
            full_rings: Vec::new(),
        }
    }

    /// Whether datagrams to `to` wait for room in its ring.
    pub fn waits_for(&self, to: SocketAddrV4) -> bool {
        self.full_rings.contains(&to)
    }

    pub fn is_full(&self) -> bool {
        self.queued.len() == TX_BATCH
    }

    pub fn is_empty(&self) -> bool {
        self.queued.is_empty()
    }

    /// Datagrams waiting.
    pub fn len(&self) -> usize {
        self.queued.len()
    }

    /// The free slot the next datagram is built in (the batch is not full).
    pub(crate) fn slot(&mut self) -> &mut [u8] {
        let start = self.queued.len() * MAX_DATAGRAM;
        &mut self.buf[start..start + MAX_DATAGRAM]
    }

    /// Keeps the first `len` bytes of the free slot as a datagram to `to`.
    pub(crate) fn commit(&mut self, len: usize, to: SocketAddrV4) {
        debug_assert!(!self.is_full() && len <= MAX_DATAGRAM);
        self.queued.push((len.min(MAX_DATAGRAM), to));
    }

    /// Every datagram (by index) and the peer rings, borrowed together.
    pub(crate) fn parts(&mut self) -> (TxView<'_>, Option<&mut ShmPeers>) {
        (
            TxView {
                buf: &self.buf,
                queued: &self.queued,
            },
            self.shm.as_mut(),
        )
    }

    pub fn clear(&mut self) {
        self.queued.clear();
        self.full_rings.clear();
    }

    /// Keeps only the datagrams at `indexes` (ascending), moved to the
    /// front in the same order, as waiting for the rings of `full_rings`.
    pub(crate) fn keep_only(&mut self, indexes: &[u8], full_rings: &[SocketAddrV4]) {
        for (slot, &index) in indexes.iter().enumerate() {
            let index = usize::from(index);
            if slot != index {
                let (len, to) = self.queued[index];
                let from = index * MAX_DATAGRAM;
                self.buf.copy_within(from..from + len, slot * MAX_DATAGRAM);
                self.queued[slot] = (len, to);
            }
        }
        self.queued.truncate(indexes.len());
        self.full_rings.clear();
        self.full_rings.extend_from_slice(full_rings);
    }

    /// Whether every datagram waiting is a responder's answer (the first
    /// byte of a RoCEv2 datagram is its BTH opcode).
    pub fn only_responses(&self) -> bool {
        (0..self.queued.len()).all(|index| {
            let (datagram, _) = datagram_at(&self.buf, &self.queued, index);
            datagram
                .first()
                .and_then(|&byte| Opcode::try_from(byte).ok())
                .is_some_and(Opcode::is_response)
        })
    }

    /// Datagram `index`, writable (to seal it), and its destination.
    pub(crate) fn datagram_mut(&mut self, index: usize) -> (&mut [u8], SocketAddrV4) {
        let (len, to) = self.queued[index];
        let start = index * MAX_DATAGRAM;
        (&mut self.buf[start..start + len], to)
    }
}

fn datagram_at<'a>(
    buf: &'a [u8],
    queued: &[(usize, SocketAddrV4)],
    index: usize,
) -> (&'a [u8], SocketAddrV4) {
    let (len, to) = queued[index];
    let start = index * MAX_DATAGRAM;
    (&buf[start..start + len], to)
}

/// The datagrams of a [`TxBatch`], read-only.
#[derive(Clone, Copy)]
pub(crate) struct TxView<'a> {
    buf: &'a [u8],
    queued: &'a [(usize, SocketAddrV4)],
}

impl<'a> TxView<'a> {
    pub fn len(&self) -> usize {
        self.queued.len()
    }

    pub fn get(&self, index: usize) -> (&'a [u8], SocketAddrV4) {
        datagram_at(self.buf, self.queued, index)
    }
}

/// Datagrams read by one `recvmmsg`.
pub struct RxBatch {
    buf: Box<[u8]>,
    /// Offset, length and source of each datagram read, in order.
    got: Vec<(usize, usize, SocketAddrV4)>,
}

impl RxBatch {
    /// With `gro`, each slot holds a coalesced message of up to 64 KiB.
    pub fn new(gro: bool) -> RxBatch {
        let slot = if gro { GRO_SLOT } else { MAX_DATAGRAM };
        RxBatch {
            buf: vec![0u8; RX_BATCH * slot].into_boxed_slice(),
            got: Vec::with_capacity(RX_BATCH),
        }
    }

    /// Datagrams read by the last `recv_batch`.
    pub fn len(&self) -> usize {
        self.got.len()
    }

    /// Datagram `index` and its source.
    pub fn get(&self, index: usize) -> (&[u8], SocketAddrV4) {
        let (start, len, from) = self.got[index];
        (&self.buf[start..start + len], from)
    }
}

fn sockaddr_of(addr: SocketAddrV4) -> libc::sockaddr_in {
    // SAFETY: sockaddr_in is plain old data; all-zero is a valid value.
    let mut raw: libc::sockaddr_in = unsafe { MaybeUninit::zeroed().assume_init() };
    raw.sin_family = libc::AF_INET as libc::sa_family_t;
    raw.sin_port = addr.port().to_be();
    raw.sin_addr.s_addr = u32::from_ne_bytes(addr.ip().octets());
    raw
}

fn addr_of(raw: &libc::sockaddr_in) -> Option<SocketAddrV4> {
    (raw.sin_family == libc::AF_INET as libc::sa_family_t).then(|| {
        SocketAddrV4::new(
            Ipv4Addr::from(raw.sin_addr.s_addr.to_ne_bytes()),
            u16::from_be(raw.sin_port),
        )
    })
}

/// Most datagrams one GSO send carries (the kernel's limit on older
/// kernels) and most bytes (an IPv4 packet's payload).
const GSO_MAX_SEGMENTS: usize = 64;
const GSO_MAX_BYTES: usize = 65_507;

/// A receive slot with GRO on: one coalesced message of up to 64 KiB.
const GRO_SLOT: usize = 65_536;

/// Room for one control message with an int (`UDP_SEGMENT` takes a u16,
/// `UDP_GRO` gives an int), 8-byte aligned.
type CmsgSpace = [u64; 4];

/// How many of `indexes` (from the first) can go as one GSO message: the
/// same destination, every datagram but the last of the first one's length,
/// the last no longer.
fn gso_run(batch: TxView<'_>, indexes: &[u8]) -> usize {
    let Some(&first) = indexes.first() else {
        return 0;
    };
    let (head, to) = batch.get(usize::from(first));
    let segment = head.len();
    let mut count = 1;
    let mut bytes = segment;
    while count < indexes.len() && count < GSO_MAX_SEGMENTS {
        let (datagram, dest) = batch.get(usize::from(indexes[count]));
        if dest != to || datagram.len() > segment || bytes + datagram.len() > GSO_MAX_BYTES {
            break;
        }
        bytes += datagram.len();
        count += 1;
        if datagram.len() < segment {
            break;
        }
    }
    count
}

/// Sends the datagrams of `batch` named by `indexes` with `sendmmsg`; with
/// `gso`, runs of equal-sized datagrams to one destination go as one
/// message the kernel segments (UDP GSO). Returns how many datagrams the
/// kernel took (from the first on), or the error of the first message it
/// refused with the number of datagrams in that message; the caller
/// decides about those and calls again for the rest.
pub(crate) fn send_batch(
    fd: RawFd,
    batch: TxView<'_>,
    indexes: &[u8],
    gso: bool,
) -> Result<usize, (io::Error, usize)> {
    let indexes = &indexes[..indexes.len().min(TX_BATCH)];
    if indexes.is_empty() {
        return Ok(0);
    }
    // Only the entries used are written (a flush usually sends a few
    // datagrams; zeroing all TX_BATCH headers, names, iovecs and control
    // buffers was ~8 KiB of stores per call on the latency path).
    let mut addrs = [MaybeUninit::<libc::sockaddr_in>::uninit(); TX_BATCH];
    let mut iovs = [MaybeUninit::<libc::iovec>::uninit(); TX_BATCH];
    let mut cmsgs = [MaybeUninit::<CmsgSpace>::uninit(); TX_BATCH];
    let mut msgs = [MaybeUninit::<libc::mmsghdr>::uninit(); TX_BATCH];
    // Datagrams in each message.
    let mut sizes = [0usize; TX_BATCH];
    for (i, &index) in indexes.iter().enumerate() {
        let (datagram, _) = batch.get(usize::from(index));
        iovs[i].write(libc::iovec {
            // The kernel only reads through it (sendmmsg).
            iov_base: datagram.as_ptr() as *mut libc::c_void,
            iov_len: datagram.len(),
        });
    }
    let mut count = 0;
    let mut next = 0;
    while next < indexes.len() {
        let run = if gso {
            gso_run(batch, &indexes[next..])
        } else {
            1
        };
        let (head, to) = batch.get(usize::from(indexes[next]));
        let name = addrs[count].write(sockaddr_of(to));
        // SAFETY: mmsghdr is plain old data; all-zero is a valid (empty) value.
        let mut msg: libc::mmsghdr = unsafe { MaybeUninit::zeroed().assume_init() };
        let hdr = &mut msg.msg_hdr;
        hdr.msg_name = (name as *mut libc::sockaddr_in).cast();
        hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // Entries next..next + run of `iovs` were written above; the
        // pointer is taken from the whole array, which it reads `run` of.
        hdr.msg_iov = iovs[next..].as_mut_ptr().cast();
        hdr.msg_iovlen = run;
        if run > 1 {
            let control = cmsgs[count].write([0; 4]);
            hdr.msg_control = control.as_mut_ptr().cast();
            // SAFETY: CMSG_SPACE only computes a size.
            hdr.msg_controllen = unsafe { libc::CMSG_SPACE(2) } as usize;
            // SAFETY: msg_control points at 32 zeroed, aligned bytes, more
            // than CMSG_SPACE(2), so the first header and its 2-byte payload
            // lie inside it.
            unsafe {
                let cmsg = libc::CMSG_FIRSTHDR(hdr);
                (*cmsg).cmsg_level = libc::SOL_UDP;
                (*cmsg).cmsg_type = libc::UDP_SEGMENT;
                (*cmsg).cmsg_len = libc::CMSG_LEN(2) as usize;
                std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), head.len() as u16);
            }
        }
        msgs[count].write(msg);
        sizes[count] = run;
        count += 1;
        next += run;
    }
    loop {
        // SAFETY: `msgs[..count]` are written headers whose names, iovecs
        // (written for every datagram) and control buffers point at live
        // locals and at `batch`'s buffer, all alive for the duration of the
        // call; the kernel reads only `count` headers and writes only
        // their `msg_len`.
        let rc = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr().cast(), count as libc::c_uint, 0) };
        if rc >= 0 {
            return Ok(sizes[..rc as usize].iter().sum());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err((err, sizes[0]));
        }
    }
}

impl RxBatch {
    /// Bytes of one receive slot: one datagram, or with GRO one coalesced
    /// message.
    fn slot_len(&self) -> usize {
        self.buf.len() / RX_BATCH
    }
}

/// The segment size the kernel reports for a coalesced (GRO) message.
fn gro_segment(hdr: &libc::msghdr) -> Option<usize> {
    // SAFETY: the kernel filled `msg_control` (our buffer) with
    // `msg_controllen` bytes of well-formed control messages; the CMSG
    // macros walk inside that length.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(hdr);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_UDP && (*cmsg).cmsg_type == libc::UDP_GRO {
                let size = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
                return usize::try_from(size).ok().filter(|s| *s > 0);
            }
            cmsg = libc::CMSG_NXTHDR(hdr, cmsg);
        }
    }
    None
}

/// Reads up to [`RX_BATCH`] messages with `recvmmsg` into `batch`
/// (replacing what it held), splitting coalesced (GRO) messages into their
/// datagrams. Returns how many messages it read; `WouldBlock` when none is
/// waiting.
pub(crate) fn recv_batch(fd: RawFd, batch: &mut RxBatch) -> io::Result<usize> {
    batch.got.clear();
    let slot_len = batch.slot_len();
    // SAFETY: sockaddr_in is plain old data; all-zero is a valid value.
    let mut addrs: [libc::sockaddr_in; RX_BATCH] = unsafe { MaybeUninit::zeroed().assume_init() };
    let mut cmsgs: [CmsgSpace; RX_BATCH] = [[0; 4]; RX_BATCH];
    let base = batch.buf.as_mut_ptr();
    let mut iovs = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; RX_BATCH];
    for (i, iov) in iovs.iter_mut().enumerate() {
        // SAFETY: slot `i` lies inside `batch.buf` (RX_BATCH slots).
        iov.iov_base = unsafe { base.add(i * slot_len) }.cast();
        iov.iov_len = slot_len;
    }
    // SAFETY: mmsghdr is plain old data; all-zero is a valid (empty) value.
    let mut msgs: [libc::mmsghdr; RX_BATCH] = unsafe { MaybeUninit::zeroed().assume_init() };
    for (i, msg) in msgs.iter_mut().enumerate() {
        msg.msg_hdr.msg_name = (&mut addrs[i] as *mut libc::sockaddr_in).cast();
        msg.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        msg.msg_hdr.msg_iov = &mut iovs[i];
        msg.msg_hdr.msg_iovlen = 1;
        msg.msg_hdr.msg_control = cmsgs[i].as_mut_ptr().cast();
        msg.msg_hdr.msg_controllen = std::mem::size_of::<CmsgSpace>();
    }
    let received = loop {
        // SAFETY: every header points at a live local address buffer, a
        // live control buffer and its own slot of `batch.buf`; the kernel
        // writes at most their lengths and fills the length fields.
        let rc = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                RX_BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if rc >= 0 {
            break rc as usize;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    };
    for i in 0..received {
        let len = (msgs[i].msg_len as usize).min(slot_len);
        // A datagram without an IPv4 source cannot be ours; it keeps an
        // unspecified source, which the device drops as forged.
        let from = addr_of(&addrs[i]).unwrap_or(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));
        // Truncated datagrams (longer than a slot) are cut; their ICRC then
        // fails and they count as malformed.
        let segment = gro_segment(&msgs[i].msg_hdr).unwrap_or(len).max(1);
        let start = i * slot_len;
        let mut offset = 0;
        while offset < len {
            let piece = segment.min(len - offset);
            batch.got.push((start + offset, piece, from));
            offset += piece;
        }
        if len == 0 {
            batch.got.push((start, 0, from));
        }
    }
    Ok(received)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    /// Sends `lens.len()` datagrams (datagram `i`: `lens[i]` bytes of
    /// value `i`) from one socket to another in one batch and returns what
    /// arrived, in order, and how many messages carried it.
    fn round_trip(lens: &[usize], offload: bool) -> (Vec<Vec<u8>>, usize) {
        let a = UdpSocket::bind("127.0.0.1:0").expect("bind a");
        let b = UdpSocket::bind("127.0.0.1:0").expect("bind b");
        b.set_nonblocking(true).expect("nonblocking");
        let gro_value: libc::c_int = 1;
        // SAFETY: setsockopt on our own socket with a live c_int.
        let gro = offload
            && unsafe {
                libc::setsockopt(
                    b.as_raw_fd(),
                    libc::SOL_UDP,
                    libc::UDP_GRO,
                    (&gro_value as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            } == 0;
        let std::net::SocketAddr::V4(to) = b.local_addr().expect("addr") else {
            panic!("v4")
        };
        let std::net::SocketAddr::V4(from) = a.local_addr().expect("addr") else {
            panic!("v4")
        };
        let mut tx = TxBatch::new(false);
        for (i, &len) in lens.iter().enumerate() {
            tx.slot()[..len].fill(i as u8);
            tx.commit(len, to);
        }
        let all: Vec<u8> = (0..lens.len() as u8).collect();
        assert_eq!(
            send_batch(a.as_raw_fd(), tx.parts().0, &all, offload).expect("send"),
            lens.len()
        );
        let mut rx = RxBatch::new(gro);
        let (mut seen, mut messages) = (Vec::new(), 0);
        for _ in 0..200 {
            match recv_batch(b.as_raw_fd(), &mut rx) {
                Ok(read) => {
                    messages += read;
                    for i in 0..rx.len() {
                        let (bytes, src) = rx.get(i);
                        assert_eq!(src, from);
                        seen.push(bytes.to_vec());
                    }
                }
                Err(err) => assert_eq!(err.kind(), io::ErrorKind::WouldBlock),
            }
            if seen.len() >= lens.len() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        (seen, messages)
    }

    fn expected(lens: &[usize]) -> Vec<Vec<u8>> {
        lens.iter()
            .enumerate()
            .map(|(i, &len)| vec![i as u8; len])
            .collect()
    }

    #[test]
    fn a_batch_goes_out_and_comes_back_in_order() {
        let lens: Vec<usize> = (0..10).map(|i| 1 + i % 3).collect();
        assert_eq!(round_trip(&lens, false).0, expected(&lens));
    }

    #[test]
    fn equal_sized_runs_go_as_gso_and_come_back_as_the_same_datagrams() {
        // Three runs: 20 of 1000 bytes, 5 of 4000 ending in a shorter one,
        // then 3 single sizes.
        let mut lens = vec![1000; 20];
        lens.extend([4000, 4000, 4000, 4000, 1234]);
        lens.extend([17, 300, 16]);
        let (seen, messages) = round_trip(&lens, true);
        assert_eq!(seen, expected(&lens), "the same datagrams, in order");
        // With GRO (loopback keeps the GSO message whole) fewer messages
        // than datagrams; without kernel support one each, still correct.
        assert!(messages <= lens.len());
    }
}
