//! The few socket operations the connection manager needs beyond
//! `std::net`: a non-blocking connect from a chosen source address, and
//! C socket addresses in and out.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::os::fd::{FromRawFd, OwnedFd};

use std::marker::PhantomData;

use crate::abi::ucs_sock_addr_t;
use crate::abi::ucs_status::Status;
use crate::core::c_boundary::FromC;

/// UCX's status for a socket error, as its TCP connection manager reports
/// them: nobody listening is `NOT_CONNECTED` (UCP then tries its next
/// connection manager), a reset `CONNECTION_RESET`, no route `UNREACHABLE`.
pub fn status_of_error(error: &io::Error) -> Status {
    match error.raw_os_error() {
        Some(libc::ECONNREFUSED) => Status::NotConnected,
        Some(libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED) => Status::ConnectionReset,
        Some(libc::ENETUNREACH | libc::EHOSTUNREACH | libc::ETIMEDOUT | libc::EADDRNOTAVAIL) => {
            Status::Unreachable
        }
        _ => Status::IoError,
    }
}

fn sockaddr_in(address: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: address.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(address.ip().octets()),
        },
        sin_zero: [0; 8],
    }
}

/// A C socket address argument: a pointer and its length.
#[derive(Clone, Copy)]
pub struct SockAddrArg<'a> {
    address: *const libc::sockaddr,
    length: libc::socklen_t,
    _life: PhantomData<&'a libc::sockaddr>,
}

impl FromC<(*const libc::sockaddr, libc::socklen_t)> for SockAddrArg<'_> {
    /// Relies on: `address` NULL or valid for `length` bytes.
    unsafe fn from_c((address, length): (*const libc::sockaddr, libc::socklen_t)) -> Self {
        SockAddrArg {
            address,
            length,
            _life: PhantomData,
        }
    }
}

impl FromC<*const ucs_sock_addr_t> for Option<SockAddrArg<'_>> {
    /// Relies on: NULL, or a `ucs_sock_addr_t` whose `addr` is NULL or
    /// valid for `addrlen` bytes.
    unsafe fn from_c(sock_addr: *const ucs_sock_addr_t) -> Self {
        // SAFETY: non-NULL and readable by the contract.
        let sock_addr = (!sock_addr.is_null()).then(|| unsafe { sock_addr.read() })?;
        // SAFETY: forwarded contract.
        Some(unsafe { SockAddrArg::from_c((sock_addr.addr, sock_addr.addrlen)) })
    }
}

impl SockAddrArg<'_> {
    /// The address as IPv4: `Unsupported` for other families (no device of
    /// ours has another), `InvalidParam` for a NULL or short one.
    pub fn ipv4(&self, function: &str) -> Result<SocketAddrV4, Status> {
        let SockAddrArg {
            address, length, ..
        } = *self;
        if address.is_null() {
            tracing::warn!("{function}: socket address is NULL");
            return Err(Status::InvalidParam);
        }
        // SAFETY: at least the family is readable in any socket address
        // (FromC).
        let family = unsafe { std::ptr::addr_of!((*address).sa_family).read_unaligned() };
        if i32::from(family) != libc::AF_INET {
            tracing::warn!("{function}: address family {family} is not supported (IPv4 only)");
            return Err(Status::Unsupported);
        }
        if (length as usize) < std::mem::size_of::<libc::sockaddr_in>() {
            tracing::warn!("{function}: socket address length {length} is too short");
            return Err(Status::InvalidParam);
        }
        // SAFETY: an AF_INET address of sockaddr_in's length (FromC).
        let inet = unsafe { (address as *const libc::sockaddr_in).read_unaligned() };
        Ok(SocketAddrV4::new(
            Ipv4Addr::from(inet.sin_addr.s_addr.to_ne_bytes()),
            u16::from_be(inet.sin_port),
        ))
    }
}

/// A C socket address as IPv4 (see [`SockAddrArg::ipv4`]).
///
/// # Safety
/// `address` must be NULL or valid for `length` bytes.
pub unsafe fn ipv4_of(
    address: *const libc::sockaddr,
    length: libc::socklen_t,
    function: &str,
) -> Result<SocketAddrV4, Status> {
    // SAFETY: forwarded contract.
    unsafe { SockAddrArg::from_c((address, length)) }.ipv4(function)
}

/// `address` as a C socket address (in a `sockaddr_storage`).
pub fn storage_of(address: SocketAddrV4) -> libc::sockaddr_storage {
    // SAFETY: sockaddr_storage is plain data; all-zero is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let inet = sockaddr_in(address);
    // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
    unsafe { (&mut storage as *mut libc::sockaddr_storage as *mut libc::sockaddr_in).write(inet) };
    storage
}

/// The length of the C address [`storage_of`] makes.
pub const SOCKADDR_IN_LEN: libc::socklen_t =
    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;

/// A non-blocking TCP socket bound to `source`, connecting to `target`; the
/// connect finishes later (the socket turns writable; `take_error` says how).
pub fn connect_from(source: Ipv4Addr, target: SocketAddrV4) -> Result<TcpStream, Status> {
    // SAFETY: plain socket creation; the result is checked.
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        let error = io::Error::last_os_error();
        tracing::error!("cm: cannot create a TCP socket: {error}");
        return Err(Status::IoError);
    }
    // SAFETY: a fresh descriptor we own from here on.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let local = sockaddr_in(SocketAddrV4::new(source, 0));
    // SAFETY: `local` is a valid sockaddr_in of the given length.
    let bound = unsafe {
        libc::bind(
            fd,
            &local as *const libc::sockaddr_in as *const libc::sockaddr,
            SOCKADDR_IN_LEN,
        )
    };
    if bound != 0 {
        let error = io::Error::last_os_error();
        tracing::warn!("cm: cannot bind a TCP socket to {source}: {error}");
        return Err(Status::Unreachable);
    }
    let remote = sockaddr_in(target);
    // SAFETY: as above.
    let connected = unsafe {
        libc::connect(
            fd,
            &remote as *const libc::sockaddr_in as *const libc::sockaddr,
            SOCKADDR_IN_LEN,
        )
    };
    if connected != 0 {
        let error = io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EINPROGRESS) {
            tracing::debug!("cm: connect to {target} failed at once: {error}");
            return Err(status_of_error(&error));
        }
    }
    let stream = TcpStream::from(owned);
    // Handshake messages are small and each waits for an answer.
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// The local IPv4 address the kernel would send from to reach `target`.
pub fn route_source(target: Ipv4Addr) -> Option<Ipv4Addr> {
    let probe = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
    probe.connect((target, 9)).ok()?;
    match probe.local_addr().ok()? {
        std::net::SocketAddr::V4(local) => Some(*local.ip()),
        std::net::SocketAddr::V6(_) => None,
    }
}

/// Sets the listen backlog of a listening socket (listen again: Linux
/// applies the new backlog).
pub fn set_backlog(fd: std::os::fd::RawFd, backlog: i32) -> Result<(), Status> {
    // SAFETY: plain call on a descriptor we own.
    if unsafe { libc::listen(fd, backlog) } != 0 {
        let error = io::Error::last_os_error();
        tracing::error!("cm: listen(backlog {backlog}) failed: {error}");
        return Err(Status::IoError);
    }
    Ok(())
}
