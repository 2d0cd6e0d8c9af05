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

use super::link::{Link, MAX_DATAGRAM};
use super::shm::PeerRing;

/// Datagrams one `sendmmsg` carries at most.
pub(crate) const TX_BATCH: usize = 64;
/// Datagrams one `recvmmsg` reads at most.
pub(crate) const RX_BATCH: usize = 32;

/// Where a QP's packets go: the device's port and the batch being built
/// (flushed by whoever drives the device, at the end of its pass).
pub(crate) struct Tx<'a> {
    pub link: &'a Link,
    pub batch: &'a mut TxBatch,
}

impl Tx<'_> {
    pub fn transmit(&mut self, to: SocketAddrV4, build: impl FnOnce(&mut [u8]) -> Option<usize>) {
        self.link.transmit(self.batch, to, build);
    }
}

/// The shared-memory rings of peers on this host, by UDP address (`None`:
/// the address has none, it is reached over UDP).
#[derive(Default)]
pub(crate) struct ShmPeers {
    known: Vec<(SocketAddrV4, Option<Arc<PeerRing>>)>,
}

impl ShmPeers {
    /// The ring of the device at `to`, looked up (and remembered) the first
    /// time.
    pub fn ring_for(&mut self, to: SocketAddrV4) -> Option<&PeerRing> {
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
    pub fn forget(&mut self, to: SocketAddrV4) {
        self.known.retain(|(addr, _)| *addr != to);
    }
}

/// Datagrams built and waiting for the next flush.
pub(crate) struct TxBatch {
    buf: Box<[u8]>,
    /// Length and destination of each built datagram, in slot order.
    queued: Vec<(usize, SocketAddrV4)>,
    /// Same-host peers' rings, when the shared-memory wire is on.
    pub shm: Option<ShmPeers>,
}

impl TxBatch {
    pub fn new(shm: bool) -> TxBatch {
        TxBatch {
            buf: vec![0u8; TX_BATCH * MAX_DATAGRAM].into_boxed_slice(),
            queued: Vec::with_capacity(TX_BATCH),
            shm: shm.then(ShmPeers::default),
        }
    }

    pub fn is_full(&self) -> bool {
        self.queued.len() == TX_BATCH
    }

    pub fn is_empty(&self) -> bool {
        self.queued.is_empty()
    }

    /// The free slot the next datagram is built in (the batch is not full).
    pub fn slot(&mut self) -> &mut [u8] {
        let start = self.queued.len() * MAX_DATAGRAM;
        &mut self.buf[start..start + MAX_DATAGRAM]
    }

    /// Keeps the first `len` bytes of the free slot as a datagram to `to`.
    pub fn commit(&mut self, len: usize, to: SocketAddrV4) {
        debug_assert!(!self.is_full() && len <= MAX_DATAGRAM);
        self.queued.push((len.min(MAX_DATAGRAM), to));
    }

    /// Every datagram (by index) and the peer rings, borrowed together.
    pub fn parts(&mut self) -> (TxView<'_>, Option<&mut ShmPeers>) {
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
pub(crate) struct RxBatch {
    buf: Box<[u8]>,
    /// Length and source of each datagram read, in slot order.
    got: Vec<(usize, SocketAddrV4)>,
}

impl RxBatch {
    pub fn new() -> RxBatch {
        RxBatch {
            buf: vec![0u8; RX_BATCH * MAX_DATAGRAM].into_boxed_slice(),
            got: Vec::with_capacity(RX_BATCH),
        }
    }

    /// Datagram `index` and its source.
    pub fn get(&self, index: usize) -> (&[u8], SocketAddrV4) {
        let (len, from) = self.got[index];
        let start = index * MAX_DATAGRAM;
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

/// Sends the datagrams of `batch` named by `indexes` with `sendmmsg`.
/// Returns how many the kernel took (from the first on) or the error of the
/// first one it refused; the caller decides about that one and calls again
/// for the rest.
pub(crate) fn send_batch(fd: RawFd, batch: TxView<'_>, indexes: &[u8]) -> io::Result<usize> {
    let count = indexes.len().min(TX_BATCH);
    if count == 0 {
        return Ok(0);
    }
    let mut addrs = [sockaddr_of(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)); TX_BATCH];
    let mut iovs = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; TX_BATCH];
    // SAFETY: mmsghdr is plain old data; all-zero is a valid (empty) value.
    let mut msgs: [libc::mmsghdr; TX_BATCH] = unsafe { MaybeUninit::zeroed().assume_init() };
    for i in 0..count {
        let (datagram, to) = batch.get(usize::from(indexes[i]));
        addrs[i] = sockaddr_of(to);
        iovs[i] = libc::iovec {
            // The kernel only reads through it (sendmmsg).
            iov_base: datagram.as_ptr() as *mut libc::c_void,
            iov_len: datagram.len(),
        };
    }
    for i in 0..count {
        let hdr = &mut msgs[i].msg_hdr;
        hdr.msg_name = (&mut addrs[i] as *mut libc::sockaddr_in).cast();
        hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        hdr.msg_iov = &mut iovs[i];
        hdr.msg_iovlen = 1;
    }
    loop {
        // SAFETY: `msgs[..count]` are initialised headers whose names and
        // iovecs point at live locals and at `batch`'s buffer, all alive
        // for the duration of the call; the kernel writes only `msg_len`.
        let rc = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), count as libc::c_uint, 0) };
        if rc >= 0 {
            return Ok(rc as usize);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Reads up to [`RX_BATCH`] datagrams with `recvmmsg` into `batch`
/// (replacing what it held). Returns how many it read; `WouldBlock` when
/// none is waiting.
pub(crate) fn recv_batch(fd: RawFd, batch: &mut RxBatch) -> io::Result<usize> {
    batch.got.clear();
    // SAFETY: sockaddr_in is plain old data; all-zero is a valid value.
    let mut addrs: [libc::sockaddr_in; RX_BATCH] = unsafe { MaybeUninit::zeroed().assume_init() };
    let base = batch.buf.as_mut_ptr();
    let mut iovs = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; RX_BATCH];
    for (i, iov) in iovs.iter_mut().enumerate() {
        // SAFETY: slot `i` lies inside `batch.buf` (RX_BATCH slots).
        iov.iov_base = unsafe { base.add(i * MAX_DATAGRAM) }.cast();
        iov.iov_len = MAX_DATAGRAM;
    }
    // SAFETY: mmsghdr is plain old data; all-zero is a valid (empty) value.
    let mut msgs: [libc::mmsghdr; RX_BATCH] = unsafe { MaybeUninit::zeroed().assume_init() };
    for (i, msg) in msgs.iter_mut().enumerate() {
        msg.msg_hdr.msg_name = (&mut addrs[i] as *mut libc::sockaddr_in).cast();
        msg.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        msg.msg_hdr.msg_iov = &mut iovs[i];
        msg.msg_hdr.msg_iovlen = 1;
    }
    let received = loop {
        // SAFETY: every header points at a live local address buffer and at
        // its own MAX_DATAGRAM-byte slot of `batch.buf`; the kernel writes
        // at most that much into each and fills `msg_len`/`msg_namelen`.
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
        let len = (msgs[i].msg_len as usize).min(MAX_DATAGRAM);
        // A datagram without an IPv4 source cannot be ours; keep its slot
        // with an unspecified source so that indexes stay aligned, the
        // device drops it as forged.
        let from = addr_of(&addrs[i]).unwrap_or(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));
        // Truncated datagrams (longer than a slot) are cut to MAX_DATAGRAM;
        // their ICRC then fails and they count as malformed.
        batch.got.push((len, from));
    }
    Ok(received)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_batch_goes_out_and_comes_back_in_order() {
        let a = UdpSocket::bind("127.0.0.1:0").expect("bind a");
        let b = UdpSocket::bind("127.0.0.1:0").expect("bind b");
        b.set_nonblocking(true).expect("nonblocking");
        let std::net::SocketAddr::V4(to) = b.local_addr().expect("addr") else {
            panic!("v4")
        };
        let std::net::SocketAddr::V4(from) = a.local_addr().expect("addr") else {
            panic!("v4")
        };
        let mut tx = TxBatch::new(false);
        for i in 0..10u8 {
            let slot = tx.slot();
            slot[..3].copy_from_slice(&[i, i, i]);
            tx.commit(1 + usize::from(i % 3), to);
        }
        let all: Vec<u8> = (0..10).collect();
        assert_eq!(
            send_batch(a.as_raw_fd(), tx.parts().0, &all).expect("send"),
            10
        );
        let mut rx = RxBatch::new();
        let mut seen = Vec::new();
        for _ in 0..200 {
            match recv_batch(b.as_raw_fd(), &mut rx) {
                Ok(n) => {
                    for i in 0..n {
                        let (bytes, src) = rx.get(i);
                        assert_eq!(src, from);
                        seen.push(bytes.to_vec());
                    }
                }
                Err(err) => assert_eq!(err.kind(), io::ErrorKind::WouldBlock),
            }
            if seen.len() == 10 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let want: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 1 + usize::from(i % 3)]).collect();
        assert_eq!(seen, want);
    }
}
