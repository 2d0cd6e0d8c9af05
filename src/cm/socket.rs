//! The few socket operations the connection manager needs beyond
//! `std::net`: a non-blocking connect from a chosen source address, and
//! C socket addresses in and out.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::os::fd::AsFd;

use rustix::net;

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
        // SAFETY: NULL or readable by the contract.
        let sock_addr = unsafe { sock_addr.as_ref() }?;
        Some(SockAddrArg {
            address: sock_addr.addr,
            length: sock_addr.addrlen,
            _life: PhantomData,
        })
    }
}

impl SockAddrArg<'_> {
    /// The address as IPv4: `Unsupported` for other families (no device of
    /// ours has another), `InvalidParam` for a NULL or short one.
    pub fn ipv4(&self, function: &str) -> Result<SocketAddrV4, Status> {
        if self.address.is_null() {
            tracing::warn!("{function}: socket address is NULL");
            return Err(Status::InvalidParam);
        }
        // SAFETY: non-NULL, readable for `length` bytes (FromC).
        let bytes =
            unsafe { std::slice::from_raw_parts(self.address.cast::<u8>(), self.length as usize) };
        let too_short = || {
            tracing::warn!(
                "{function}: socket address length {} is too short",
                self.length
            );
            Status::InvalidParam
        };
        // A sockaddr_in in its C layout: family (host order), port and
        // address (network order).
        let family = bytes
            .first_chunk::<2>()
            .map(|family| libc::sa_family_t::from_ne_bytes(*family))
            .ok_or_else(too_short)?;
        if i32::from(family) != libc::AF_INET {
            tracing::warn!("{function}: address family {family} is not supported (IPv4 only)");
            return Err(Status::Unsupported);
        }
        let Some(inet) = bytes.first_chunk::<{ std::mem::size_of::<libc::sockaddr_in>() }>() else {
            return Err(too_short());
        };
        let port = u16::from_be_bytes([inet[2], inet[3]]);
        let ip = Ipv4Addr::new(inet[4], inet[5], inet[6], inet[7]);
        Ok(SocketAddrV4::new(ip, port))
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
    // The contract is the one `SockAddrArg::ipv4` relies on.
    SockAddrArg {
        address,
        length,
        _life: PhantomData,
    }
    .ipv4(function)
}

/// `address` as a C socket address (in a `sockaddr_storage`).
pub fn storage_of(address: SocketAddrV4) -> libc::sockaddr_storage {
    let mut storage = std::mem::MaybeUninit::<libc::sockaddr_storage>::zeroed();
    // SAFETY: sockaddr_storage is plain data (all-zero is valid), larger
    // than and aligned for the sockaddr_in written at its start.
    unsafe {
        storage
            .as_mut_ptr()
            .cast::<libc::sockaddr_in>()
            .write(sockaddr_in(address));
        storage.assume_init()
    }
}

/// The length of the C address [`storage_of`] makes.
pub const SOCKADDR_IN_LEN: libc::socklen_t =
    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;

/// A non-blocking TCP socket bound to `source`, connecting to `target`; the
/// connect finishes later (the socket turns writable; `take_error` says how).
pub fn connect_from(source: Ipv4Addr, target: SocketAddrV4) -> Result<TcpStream, Status> {
    let socket = net::socket_with(
        net::AddressFamily::INET,
        net::SocketType::STREAM,
        net::SocketFlags::NONBLOCK | net::SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|error| {
        tracing::error!("cm: cannot create a TCP socket: {error}");
        Status::IoError
    })?;
    if let Err(error) = net::bind(&socket, &SocketAddrV4::new(source, 0)) {
        tracing::warn!("cm: cannot bind a TCP socket to {source}: {error}");
        return Err(Status::Unreachable);
    }
    match net::connect(&socket, &target) {
        Ok(()) | Err(rustix::io::Errno::INPROGRESS) => {}
        Err(error) => {
            let error = io::Error::from(error);
            tracing::debug!("cm: connect to {target} failed at once: {error}");
            return Err(status_of_error(&error));
        }
    }
    let stream = TcpStream::from(socket);
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
pub fn set_backlog(socket: impl AsFd, backlog: i32) -> Result<(), Status> {
    if let Err(error) = net::listen(socket, backlog) {
        tracing::error!("cm: listen(backlog {backlog}) failed: {error}");
        return Err(Status::IoError);
    }
    Ok(())
}
