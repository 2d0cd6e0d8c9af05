//! The epoll calls of this library (async contexts, event sets) as safe
//! functions: the epoll instance is an fd the caller owns or borrows, the
//! watched fds are only numbers to the kernel, which checks them.

use std::ffi::c_int;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

/// A new epoll instance (close-on-exec).
pub(crate) fn create() -> io::Result<OwnedFd> {
    Ok(rustix::event::epoll::create(
        rustix::event::epoll::CreateFlags::CLOEXEC,
    )?)
}

/// `epoll_ctl(op)` of `fd` with `events` (`EPOLL*` flags) and `token`
/// (handed back by [`wait`]).
pub(crate) fn control(
    epoll: BorrowedFd<'_>,
    op: c_int,
    fd: c_int,
    events: u32,
    token: u64,
) -> io::Result<()> {
    let mut event = libc::epoll_event { events, u64: token };
    // SAFETY: a live epoll fd (borrowed) and a valid event struct.
    if unsafe { libc::epoll_ctl(epoll.as_raw_fd(), op, fd, &mut event) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Waits up to `timeout_ms` (-1: forever) for at most `events.len()` events;
/// how many were stored at the start of `events`.
pub(crate) fn wait(
    epoll: BorrowedFd<'_>,
    events: &mut [libc::epoll_event],
    timeout_ms: c_int,
) -> io::Result<usize> {
    let capacity = c_int::try_from(events.len()).unwrap_or(c_int::MAX);
    // SAFETY: a live epoll fd; the buffer holds `capacity` events.
    let ready =
        unsafe { libc::epoll_wait(epoll.as_raw_fd(), events.as_mut_ptr(), capacity, timeout_ms) };
    usize::try_from(ready).map_err(|_| io::Error::last_os_error())
}
