//! `ucs_event_set_*` (`ucs/sys/event_set.h`): a set of file descriptors to
//! wait on, over epoll.
//!
//! With UCX's libucs loaded, new sets are UCX's and calls on a set go to
//! whoever made it (ours start with a magic word; UCX's with two 4-byte
//! fields, so the first 8 bytes are always readable): see
//! `crate::core::ucx_libucs`.

use std::ffi::{c_int, c_uint, c_void};

use crate::abi::*;
use crate::api::checks::{finish, non_null, status_entry_point};
use crate::core::async_context::{epoll_flags, ucs_events};
use crate::core::c_boundary::{c_entry, null_argument, CMut, FromC, Out};
use crate::core::ucx_libucs::{return_ucx_call, ucx_function};

/// The most events one `ucs_event_set_wait` call reports (UCX 1.13's value).
#[no_mangle]
pub static ucs_sys_event_set_max_wait_events: c_uint = 100;

const EVENT_SET_MAGIC: u64 = 0x7563_735f_6576_7365; // "ucs_evse"

/// Our event set behind a `ucs_sys_event_set_t *`.
#[repr(C)]
struct EventSet {
    magic: u64,
    epoll_fd: c_int,
    /// False for `ucs_event_set_create_from_fd`: the caller keeps the fd.
    owns_fd: bool,
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
    epoll_fd: Option<c_int>,
    function: &str,
) -> ucs_status_t {
    let result = (|| {
        if event_set_p.is_null() {
            return Err(null_argument(function, "event_set_p"));
        }
        let (epoll_fd, owns_fd) = match epoll_fd {
            Some(fd) if fd < 0 => {
                crate::api::enter();
                tracing::warn!("{function}: invalid fd {fd}");
                return Err(Status::InvalidParam);
            }
            Some(fd) => (fd, false),
            None => {
                // SAFETY: plain syscall; checked.
                let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
                if fd < 0 {
                    return Err(os_error(function, "epoll_create1"));
                }
                (fd, true)
            }
        };
        let set = Box::new(EventSet {
            magic: EVENT_SET_MAGIC,
            epoll_fd,
            owns_fd,
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
    take out: Out<*mut ucs_sys_event_set_t> = (event_set_p);
    {
        return_ucx_call!(ucs_event_set_create_from_fd: fn(*mut *mut ucs_sys_event_set_t, c_int) -> ucs_status_t; event_set_p, event_fd);
        create(out, Some(event_fd), "ucs_event_set_create_from_fd")
    }
}

/// UCX's `ucs_event_set_add` / `_mod`.
type ControlFn = unsafe extern "C" fn(
    *mut ucs_sys_event_set_t,
    c_int,
    ucs_event_set_types_t,
    *mut c_void,
) -> ucs_status_t;

/// `epoll_ctl(op)` on a set of ours; a set of UCX's goes to `ucx` (when
/// UCX's libucs is loaded).
fn control(
    set: SetArg,
    op: c_int,
    fd: c_int,
    events: ucs_event_set_types_t,
    data: *mut c_void,
    ucx: impl FnOnce() -> Option<ControlFn>,
    function: &str,
) -> ucs_status_t {
    if !set.is_ours() {
        if let Some(ucx) = ucx() {
            // SAFETY: a set of UCX's (SetArg's FromC), handed back to UCX.
            return unsafe { ucx(set.0, fd, events, data) };
        }
    }
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
        let mut event = libc::epoll_event {
            events: epoll_flags(events),
            u64: data as u64,
        };
        // SAFETY: a valid event struct; the kernel checks both fds.
        if unsafe { libc::epoll_ctl(set.epoll_fd, op, fd, &mut event) } != 0 {
            return Err(os_error(function, &format!("epoll_ctl on fd {fd}")));
        }
        Ok(())
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
        let ucx = || ucx_function!(ucs_event_set_add: fn(*mut ucs_sys_event_set_t, c_int, ucs_event_set_types_t, *mut c_void) -> ucs_status_t);
        control(
            set,
            libc::EPOLL_CTL_ADD,
            fd,
            events,
            callback_data,
            ucx,
            "ucs_event_set_add",
        )
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
        let ucx = || ucx_function!(ucs_event_set_mod: fn(*mut ucs_sys_event_set_t, c_int, ucs_event_set_types_t, *mut c_void) -> ucs_status_t);
        control(
            set,
            libc::EPOLL_CTL_MOD,
            fd,
            events,
            callback_data,
            ucx,
            "ucs_event_set_mod",
        )
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
            || None,
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
            // SAFETY: the buffer holds `wanted` events (at least one slot).
            let ready = unsafe {
                libc::epoll_wait(
                    set.epoll_fd,
                    events.as_mut_ptr(),
                    wanted as c_int,
                    timeout_ms,
                )
            };
            if ready < 0 {
                count.write(0);
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    return Err(Status::InProgress);
                }
                return Err(os_error(FUNCTION, "epoll_wait"));
            }
            for event in &events[..ready as usize] {
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
        if set.owns_fd {
            // SAFETY: our own epoll fd, closed once.
            unsafe { libc::close(set.epoll_fd) };
        }
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
            out.write(FUNCTION, "event_fd_p", set.epoll_fd)
        })
    }
}
