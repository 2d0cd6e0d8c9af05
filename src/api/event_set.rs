//! `ucs_event_set_*` (`ucs/sys/event_set.h`): a set of file descriptors to
//! wait on, over epoll.
//!
//! With UCX's libucs loaded, new sets are UCX's and calls on a set go to
//! whoever made it (ours start with a magic word; UCX's with two 4-byte
//! fields, so the first 8 bytes are always readable): see
//! `crate::core::ucx_libucs`.

use std::ffi::{c_int, c_uint, c_void};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use crate::abi::*;
use crate::api::checks::{finish, non_null, status_entry_point};
use crate::core::async_context::{epoll_flags, ucs_events};
use crate::core::c_boundary::{c_entry, null_argument, CMut, FromC, Out};
use crate::core::epoll;
use crate::core::ucx_libucs::return_ucx_call;

/// The most events one `ucs_event_set_wait` call reports (UCX 1.13's value).
#[no_mangle]
pub static ucs_sys_event_set_max_wait_events: c_uint = 100;

const EVENT_SET_MAGIC: u64 = 0x7563_735f_6576_7365; // "ucs_evse"

/// Our event set behind a `ucs_sys_event_set_t *`.
#[repr(C)]
struct EventSet {
    magic: u64,
    epoll: EpollFd,
}

/// The epoll fd of a set: its own (closed with the set), or the caller's
/// (`ucs_event_set_create_from_fd`: the caller keeps it).
enum EpollFd {
    Owned(OwnedFd),
    Callers(BorrowedFd<'static>),
}

impl EpollFd {
    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            EpollFd::Owned(fd) => fd.as_fd(),
            EpollFd::Callers(fd) => *fd,
        }
    }
}

/// The fd argument of `ucs_event_set_create_from_fd`: an epoll fd the
/// caller keeps open while the set lives.
///
/// cbindgen:ignore
struct CallersEpollFd(c_int);

impl FromC<c_int> for CallersEpollFd {
    /// Relies on: as the type says (UCX's contract for the call).
    unsafe fn from_c(fd: c_int) -> Self {
        CallersEpollFd(fd)
    }
}

impl CallersEpollFd {
    /// The fd, `InvalidParam` with a log line for a negative one.
    fn get(self, function: &str) -> Result<BorrowedFd<'static>, Status> {
        if self.0 < 0 {
            crate::api::enter();
            tracing::warn!("{function}: invalid fd {}", self.0);
            return Err(Status::InvalidParam);
        }
        // SAFETY: not -1, and open while the set lives (FromC).
        Ok(unsafe { BorrowedFd::borrow_raw(self.0) })
    }
}

/// An event set argument: NULL, ours or UCX's (8 readable bytes).
///
/// cbindgen:ignore
#[derive(Clone, Copy)]
struct SetArg(*mut ucs_sys_event_set_t);

impl FromC<*mut ucs_sys_event_set_t> for SetArg {
    /// Relies on: NULL, a live set of ours or one of UCX's.
    unsafe fn from_c(set: *mut ucs_sys_event_set_t) -> Self {
        SetArg(set)
    }
}

impl SetArg {
    /// True when the set is a live set of ours.
    fn is_ours(self) -> bool {
        // SAFETY: NULL is checked first; ours or UCX's, 8 readable bytes
        // either way (FromC).
        !self.0.is_null() && unsafe { (*(self.0 as *const EventSet)).magic } == EVENT_SET_MAGIC
    }

    /// Ours and live, else a log line and `InvalidParam`.
    fn get<'a>(self, function: &str) -> Result<&'a EventSet, Status> {
        non_null(self.0, function, "event set")?;
        if !self.is_ours() {
            crate::api::enter();
            tracing::warn!("{function}: {:p} is not a live event set", self.0);
            return Err(Status::InvalidParam);
        }
        // SAFETY: ours, so a live boxed set.
        Ok(unsafe { &*(self.0 as *const EventSet) })
    }
}

fn os_error(function: &str, what: &str) -> Status {
    let error = std::io::Error::last_os_error();
    crate::api::enter();
    tracing::warn!("{function}: {what} failed: {error}");
    Status::IoError
}

fn create(
    event_set_p: Out<*mut ucs_sys_event_set_t>,
    epoll_fd: Option<CallersEpollFd>,
    function: &str,
) -> ucs_status_t {
    let result = (|| {
        if event_set_p.is_null() {
            return Err(null_argument(function, "event_set_p"));
        }
        let epoll = match epoll_fd {
            Some(fd) => EpollFd::Callers(fd.get(function)?),
            None => {
                EpollFd::Owned(epoll::create().map_err(|_| os_error(function, "epoll_create1"))?)
            }
        };
        let set = Box::new(EventSet {
            magic: EVENT_SET_MAGIC,
            epoll,
        });
        event_set_p.write(function, "event_set_p", Box::into_raw(set).cast())
    })();
    finish(function, result)
}

c_entry! {
    no_log_setup
    /// Creates an empty set.
    fn ucs_event_set_create(event_set_p: *mut *mut ucs_sys_event_set_t) -> ucs_status_t;
    take out: Out<*mut ucs_sys_event_set_t> = (event_set_p);
    {
        return_ucx_call!(ucs_event_set_create: fn(*mut *mut ucs_sys_event_set_t) -> ucs_status_t; event_set_p);
        create(out, None, "ucs_event_set_create")
    }
}

c_entry! {
    no_log_setup
    /// Wraps an existing epoll fd, which stays the caller's (cleanup keeps
    /// it open).
    fn ucs_event_set_create_from_fd(
        event_set_p: *mut *mut ucs_sys_event_set_t,
        event_fd: c_int,
    ) -> ucs_status_t;
    take out: Out<*mut ucs_sys_event_set_t> = (event_set_p), fd: CallersEpollFd = (event_fd);
    {
        return_ucx_call!(ucs_event_set_create_from_fd: fn(*mut *mut ucs_sys_event_set_t, c_int) -> ucs_status_t; event_set_p, event_fd);
        create(out, Some(fd), "ucs_event_set_create_from_fd")
    }
}

/// `epoll_ctl(op)` on a set of ours (the entry points hand UCX's sets to
/// UCX first).
fn control(
    set: SetArg,
    op: c_int,
    fd: c_int,
    events: ucs_event_set_types_t,
    data: *mut c_void,
    function: &str,
) -> ucs_status_t {
    let result = (|| {
        let set = set.get(function)?;
        let known = UCS_EVENT_SET_EVREAD
            | UCS_EVENT_SET_EVWRITE
            | UCS_EVENT_SET_EVERR
            | UCS_EVENT_SET_EDGE_TRIGGERED;
        if events & !known != 0 {
            crate::api::enter();
            tracing::warn!("{function}: unknown event bits {:#x}", events & !known);
            return Err(Status::InvalidParam);
        }
        epoll::control(set.epoll.fd(), op, fd, epoll_flags(events), data as u64)
            .map_err(|_| os_error(function, &format!("epoll_ctl on fd {fd}")))
    })();
    finish(function, result)
}

c_entry! {
    no_log_setup
    /// Watches `fd` for `events`; `callback_data` is handed to the wait
    /// handler.
    fn ucs_event_set_add(
        event_set: *mut ucs_sys_event_set_t,
        fd: c_int,
        events: ucs_event_set_types_t,
        callback_data: *mut c_void,
    ) -> ucs_status_t;
    take set: SetArg = (event_set);
    {
        if !set.is_ours() {
            // A set of UCX's, handed back to UCX.
            return_ucx_call!(ucs_event_set_add: fn(*mut ucs_sys_event_set_t, c_int, ucs_event_set_types_t, *mut c_void) -> ucs_status_t; event_set, fd, events, callback_data);
        }
        control(set, libc::EPOLL_CTL_ADD, fd, events, callback_data, "ucs_event_set_add")
    }
}

c_entry! {
    no_log_setup
    /// Changes the events and callback data of a watched `fd`.
    fn ucs_event_set_mod(
        event_set: *mut ucs_sys_event_set_t,
        fd: c_int,
        events: ucs_event_set_types_t,
        callback_data: *mut c_void,
    ) -> ucs_status_t;
    take set: SetArg = (event_set);
    {
        if !set.is_ours() {
            // A set of UCX's, handed back to UCX.
            return_ucx_call!(ucs_event_set_mod: fn(*mut ucs_sys_event_set_t, c_int, ucs_event_set_types_t, *mut c_void) -> ucs_status_t; event_set, fd, events, callback_data);
        }
        control(set, libc::EPOLL_CTL_MOD, fd, events, callback_data, "ucs_event_set_mod")
    }
}

c_entry! {
    no_log_setup
    /// Stops watching `fd`.
    fn ucs_event_set_del(event_set: *mut ucs_sys_event_set_t, fd: c_int) -> ucs_status_t;
    take set: SetArg = (event_set);
    {
        if !set.is_ours() {
            // A set of UCX's, handed back to UCX.
            return_ucx_call!(ucs_event_set_del: fn(*mut ucs_sys_event_set_t, c_int) -> ucs_status_t; event_set, fd);
        }
        control(
            set,
            libc::EPOLL_CTL_DEL,
            fd,
            0,
            std::ptr::null_mut(),
            "ucs_event_set_del",
        )
    }
}

c_entry! {
    no_log_setup
    /// Waits up to `timeout_ms` (-1: forever) for at most `*num_events`
    /// events (capped at `ucs_sys_event_set_max_wait_events`), calls
    /// `handler(callback_data, events, arg)` for each, and stores how many
    /// there were in `*num_events`. `UCS_INPROGRESS` when a signal
    /// interrupted the wait.
    fn ucs_event_set_wait(
        event_set: *mut ucs_sys_event_set_t,
        num_events: *mut c_uint,
        timeout_ms: c_int,
        handler: ucs_event_set_handler_t,
        arg: *mut c_void,
    ) -> ucs_status_t;
    take set: SetArg = (event_set), count: CMut<c_uint> = (num_events);
    {
        const FUNCTION: &str = "ucs_event_set_wait";
        if !set.is_ours() {
            // A set of UCX's, handed back to UCX.
            return_ucx_call!(ucs_event_set_wait: fn(*mut ucs_sys_event_set_t, *mut c_uint, c_int, ucs_event_set_handler_t, *mut c_void) -> ucs_status_t; event_set, num_events, timeout_ms, handler, arg);
        }
        status_entry_point!(FUNCTION, {
            let set = set.get(FUNCTION)?;
            let wanted = count.read(FUNCTION, "num_events")?;
            let Some(handler) = handler else {
                crate::api::enter();
                tracing::warn!("{FUNCTION}: handler is NULL");
                return Err(Status::InvalidParam);
            };
            let wanted = wanted.min(ucs_sys_event_set_max_wait_events) as usize;
            let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; wanted.max(1)];
            // At most `wanted` (0 is refused by the kernel, as UCX's call
            // refuses it).
            let ready = match epoll::wait(set.epoll.fd(), &mut events[..wanted], timeout_ms) {
                Ok(ready) => ready,
                Err(error) => {
                    count.write(0);
                    if error.kind() == std::io::ErrorKind::Interrupted {
                        return Err(Status::InProgress);
                    }
                    return Err(os_error(FUNCTION, "epoll_wait"));
                }
            };
            for event in &events[..ready] {
                let (data, flags) = (event.u64, event.events);
                // SAFETY: the caller's handler with the data it registered.
                unsafe { handler(data as *mut c_void, ucs_events(flags), arg) };
            }
            count.write(ready as c_uint);
            Ok(())
        })
    }
}

c_entry! {
    no_log_setup
    /// Frees the set (and closes its epoll fd unless the caller gave it);
    /// the set is not used afterwards.
    fn ucs_event_set_cleanup(event_set: *mut ucs_sys_event_set_t);
    take set: SetArg = (event_set);
    {
        if !set.is_ours() {
            // A set of UCX's, handed back to UCX.
            return_ucx_call!(ucs_event_set_cleanup: fn(*mut ucs_sys_event_set_t); event_set);
        }
        if set.get("ucs_event_set_cleanup").is_err() {
            return;
        }
        // SAFETY: ours, so made by Box::into_raw, and freed once (the
        // contract); the magic is cleared first so a second cleanup is
        // likely refused above.
        let mut set = unsafe { Box::from_raw(event_set as *mut EventSet) };
        set.magic = 0;
        // Dropping the set closes its own epoll fd, never the caller's.
    }
}

c_entry! {
    no_log_setup
    /// The set's epoll fd (readable when an event is pending).
    fn ucs_event_set_fd_get(
        event_set: *mut ucs_sys_event_set_t,
        event_fd_p: *mut c_int,
    ) -> ucs_status_t;
    take set: SetArg = (event_set), out: Out<c_int> = (event_fd_p);
    {
        const FUNCTION: &str = "ucs_event_set_fd_get";
        if !set.is_ours() {
            // A set of UCX's, handed back to UCX.
            return_ucx_call!(ucs_event_set_fd_get: fn(*mut ucs_sys_event_set_t, *mut c_int) -> ucs_status_t; event_set, event_fd_p);
        }
        status_entry_point!(FUNCTION, {
            let set = set.get(FUNCTION)?;
            out.write(FUNCTION, "event_fd_p", set.epoll.fd().as_raw_fd())
        })
    }
}
