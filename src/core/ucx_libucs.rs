//! Living beside UCX's own `libucs.so.0` in one process.
//!
//! This library exports some `ucs_*` functions and data objects so that a
//! pure UCT program finds everything it needs in one file. But a process may
//! also load UCX's `libucs.so.0`: `ucx_perftest` and `ucx_info` link it, and
//! so does every program using `libucp`. When this library is preloaded (or
//! comes first in the link order), the dynamic linker binds every reference to
//! those names, including the ones inside UCX's `libucs` and `libucp`, to our
//! definitions. Those callers then hand us objects that UCX's `libucs` made,
//! or expect UCX's behaviour from objects we made for them.
//!
//! The rule, for every exported `ucs_*` name:
//!
//! - **Functions step aside.** When UCX's `libucs.so.0` is loaded (and is not
//!   this file under that name), a call that creates an object goes to UCX's
//!   definition of the same function; a call on an existing object goes to
//!   whoever made it (ours carry a mark we check first, everything else is
//!   UCX's). So UCX's callers get UCX's behaviour, and our own objects keep
//!   working if UCX's library turns up later (`dlopen`). One exception
//!   behaves as UCX's for every caller instead: `ucs_callbackq_init` (queues
//!   in the caller's storage, whose size differs between 1.13 and master;
//!   ours fits both and both inline dispatches walk it), and every worker's
//!   `progress_q` stays ours whoever edits it.
//! - **Data objects are UCX 1.13's**, byte for byte in size and, for the
//!   name tables, in content: a 1.13-built binary copies them at load time
//!   (copy relocation), and UCX's own code reads whichever copy wins.
//! - **The transport needs nothing of UCX's objects**: `uct_worker_create`
//!   accepts an async context UCX's `libucs` made (created, or initialised in
//!   the caller's storage, a layout 1.13 does not publish) and never looks
//!   inside it.
//!
//! UCX's definitions are found through `dlopen("libucs.so.0", RTLD_NOLOAD)`
//! and `dlsym` on that handle, which searches UCX's object before anything
//! else; a definition that lives in this shared object (installed as
//! `libucs.so.0` too) does not count.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_uint, c_void, CStr, CString};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;

use tracing::{Level, Metadata};

use crate::abi::ucs_config::{
    ucs_log_level_t, UCS_LOG_LEVEL_DEBUG, UCS_LOG_LEVEL_ERROR, UCS_LOG_LEVEL_INFO,
    UCS_LOG_LEVEL_TRACE, UCS_LOG_LEVEL_TRACE_DATA, UCS_LOG_LEVEL_WARN,
};

/// The base address of the shared object holding `address`.
fn object_base(address: *const c_void) -> Option<usize> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: `info` is writable; any address may be asked about.
    if unsafe { libc::dladdr(address, &mut info) } == 0 {
        return None;
    }
    Some(info.dli_fbase as usize)
}

/// Private to this shared object (never exported, so never interposed): an
/// address that says where "we" live.
#[inline(never)]
fn this_object_marker() {}

/// True when `address` (a function found by `dlsym`) is inside this shared
/// object: our own definition, not another library's.
pub(crate) fn lies_in_this_object(address: *const c_void) -> bool {
    let ours = object_base(this_object_marker as *const c_void);
    ours.is_some() && ours == object_base(address)
}

/// A scope `dlsym` searches: an object already loaded, or the global scope.
struct SymbolScope {
    handle: *mut c_void,
    /// Whether `handle` is a reference of ours, dropped with the scope.
    opened: bool,
}

impl SymbolScope {
    /// The global scope (`RTLD_DEFAULT`).
    fn global() -> Self {
        SymbolScope {
            handle: libc::RTLD_DEFAULT,
            opened: false,
        }
    }

    /// `library` when it is already loaded; loads nothing.
    fn loaded(library: &CStr) -> Option<Self> {
        // SAFETY: RTLD_NOLOAD never loads anything; it returns a reference to
        // an already loaded object (dropped with the scope) or NULL.
        // RTLD_NODELETE pins that object for the life of the process, so the
        // addresses found in it stay valid even if the program later
        // dlcloses it.
        let handle = unsafe {
            libc::dlopen(
                library.as_ptr(),
                libc::RTLD_LAZY | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
            )
        };
        // Built only for a non-NULL handle: dropping a scope closes it.
        (!handle.is_null()).then(|| SymbolScope {
            handle,
            opened: true,
        })
    }

    /// The address of `name` in this scope, if defined outside this shared
    /// object.
    fn find(&self, name: &CStr) -> Option<*mut c_void> {
        // SAFETY: `handle` is RTLD_DEFAULT or a live reference from dlopen;
        // `name` is NUL-terminated.
        let address = unsafe { libc::dlsym(self.handle, name.as_ptr()) };
        (!address.is_null() && !lies_in_this_object(address)).then_some(address)
    }
}

impl Drop for SymbolScope {
    fn drop(&mut self) {
        if self.opened {
            // SAFETY: drops the reference `loaded` took; the object stays
            // loaded (RTLD_NODELETE), so addresses found in it stay valid.
            unsafe { libc::dlclose(self.handle) };
        }
    }
}

/// The address of `name` in `library` when that library is already loaded
/// and defines it outside this shared object (a definition of ours under
/// the library's name does not count). Loads nothing.
pub(crate) fn loaded_symbol(library: &CStr, name: &CStr) -> Option<*mut c_void> {
    SymbolScope::loaded(library)?.find(name)
}

/// UCX's definition of `name`, if UCX's `libucs.so.0` is loaded and defines
/// it outside this shared object.
fn lookup(name: &CStr) -> Option<usize> {
    loaded_symbol(c"libucs.so.0", name).map(|address| address as usize)
}

/// UCX's data object `name`, as UCX's own code uses it: a program built
/// against UCX that references the object gets its own copy (a copy
/// relocation) and every library, UCX's `libucs` included, then uses that
/// copy, not the one `dlsym` on UCX's handle returns. The global scope
/// finds the copy first; an object only in a library opened with
/// RTLD_LOCAL is found through UCX's handle.
fn lookup_data(name: &CStr) -> Option<usize> {
    let in_libucs = lookup(name)?;
    let global = SymbolScope::global().find(name);
    Some(global.map_or(in_libucs, |global| global as usize))
}

/// True when UCX's own `libucs.so.0` is loaded in this process.
pub fn ucx_libucs_loaded() -> bool {
    static PROBE: UcxSymbol = UcxSymbol::new(c"ucs_status_string");
    PROBE.address().is_some()
}

/// One of UCX's functions, looked up on first use. A found address is kept
/// (UCX's library is pinned with RTLD_NODELETE when found); "not found" is
/// asked again next time, since a program may `dlopen` UCX later.
pub struct UcxSymbol {
    name: &'static CStr,
    address: AtomicUsize,
    /// Whether finding it is logged (never for the symbols logging uses).
    announce: bool,
    /// A data object (see [`lookup_data`]), not a function.
    data: bool,
}

impl UcxSymbol {
    pub const fn new(name: &'static CStr) -> Self {
        Self {
            name,
            address: AtomicUsize::new(0),
            announce: true,
            data: false,
        }
    }

    /// A symbol whose discovery is not logged.
    const fn quiet(name: &'static CStr) -> Self {
        Self {
            name,
            address: AtomicUsize::new(0),
            announce: false,
            data: false,
        }
    }

    /// A data object of UCX's, whose discovery is not logged.
    const fn quiet_data(name: &'static CStr) -> Self {
        Self {
            name,
            address: AtomicUsize::new(0),
            announce: false,
            data: true,
        }
    }

    pub fn address(&self) -> Option<usize> {
        let known = self.address.load(Ordering::Acquire);
        if known != 0 {
            return Some(known);
        }
        let found = if self.data {
            lookup_data(self.name)?
        } else {
            lookup(self.name)?
        };
        self.address.store(found, Ordering::Release);
        if !self.announce {
            return Some(found);
        }
        tracing::debug!(
            "{}: UCX's libucs is loaded, calls go to its definition",
            self.name.to_string_lossy()
        );
        Some(found)
    }
}

/// UCX's definition of the exported function `$name`, typed as
/// `unsafe extern "C" fn($args) -> $ret`, or `None` when UCX's `libucs` is
/// not loaded.
macro_rules! ucx_function {
    ($name:ident : fn($($arg:ty),*) $(-> $ret:ty)?) => {{
        static SYMBOL: $crate::core::ucx_libucs::UcxSymbol = $crate::core::ucx_libucs::UcxSymbol::new(
            match ::std::ffi::CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()) {
                Ok(name) => name,
                Err(_) => panic!("a C identifier has no NUL"),
            },
        );
        SYMBOL.address().map(|address| {
            // SAFETY: `address` is UCX's definition of a function declared
            // in UCX's headers with exactly this signature (ours mirrors it).
            unsafe { ::std::mem::transmute::<usize, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(address) }
        })
    }};
}
pub(crate) use ucx_function;

/// Returns from the enclosing function what UCX's own definition of `$name`
/// returns for `$values`, when UCX's `libucs` is loaded: the process then
/// has one such state, UCX's, and our copy stays out of the way.
macro_rules! return_ucx_call {
    ($name:ident : fn() $(-> $ret:ty)?) => {
        $crate::core::ucx_libucs::return_ucx_call!($name: fn() $(-> $ret)?; )
    };
    ($name:ident : fn($($arg:ty),*) $(-> $ret:ty)?; $($value:expr),*) => {
        if let Some(ucx) = $crate::core::ucx_libucs::ucx_function!($name: fn($($arg),*) $(-> $ret)?) {
            // SAFETY: UCX's definition of the function being called, with
            // the values our caller passed (valid for it by that caller's
            // contract, and where a handle is involved, a handle of UCX's).
            return unsafe { ucx($($value),*) };
        }
    };
}
pub(crate) use return_ucx_call;

/// UCX 1.13's (and master's) `ucs_log_dispatch`.
type LogDispatch = unsafe extern "C" fn(
    file: *const c_char,
    line: c_uint,
    function: *const c_char,
    level: ucs_log_level_t,
    component: *mut c_void,
    format: *const c_char,
    ...
);

/// UCX's level of a `tracing` level (the inverse of the mapping
/// `crate::core::log::parse_ucx_level` applies to `UCX_LOG_LEVEL`).
fn ucx_log_level(level: &Level) -> ucs_log_level_t {
    match *level {
        Level::ERROR => UCS_LOG_LEVEL_ERROR,
        Level::WARN => UCS_LOG_LEVEL_WARN,
        Level::INFO => UCS_LOG_LEVEL_INFO,
        Level::DEBUG => UCS_LOG_LEVEL_DEBUG,
        _ => UCS_LOG_LEVEL_TRACE,
    }
}

/// The source file and module of a log call site as C strings that live as
/// long as the process: UCX's default handler keeps the file pointer as the
/// key of its file-filter cache.
fn call_site_names(metadata: &'static Metadata<'static>) -> (&'static CStr, &'static CStr) {
    type Names = (&'static CStr, &'static CStr);
    // Keyed by the call site's metadata address; a BTreeMap because a hash
    // map's random state would need thread-local storage, which a line
    // logged at exit must not touch.
    static NAMES: Mutex<BTreeMap<usize, Names>> = Mutex::new(BTreeMap::new());
    let leak = |text: &str| -> &'static CStr {
        let bytes: Vec<u8> = text.bytes().filter(|&byte| byte != 0).collect();
        Box::leak(CString::new(bytes).unwrap_or_default().into_boxed_c_str())
    };
    let mut names = NAMES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    *names
        .entry(metadata as *const Metadata<'static> as usize)
        .or_insert_with(|| {
            (
                leak(metadata.file().unwrap_or("?")),
                leak(metadata.module_path().unwrap_or("?")),
            )
        })
}

/// UCX's `ucs_log_dispatch`, looked up once found.
static DISPATCH: UcxSymbol = UcxSymbol::quiet(c"ucs_log_dispatch");
/// `ucs_global_opts` starts with its `ucs_log_component_config_t` (1.13 and
/// master), whose first member is the level.
static GLOBAL_OPTS: UcxSymbol = UcxSymbol::quiet_data(c"ucs_global_opts");

/// UCX's global log level (`ucs_global_opts`' first word) when UCX's
/// libucs is loaded.
pub(crate) fn ucx_log_level_word() -> Option<&'static AtomicU32> {
    GLOBAL_OPTS.address().map(|address| {
        // SAFETY: the first field of UCX's `ucs_global_opts`, a
        // `ucs_log_level_t`: an aligned 32-bit word in a library pinned for
        // the process's life (see `loaded_symbol`). UCX's side writes it
        // with plain stores and may do so at any time, so it is only read
        // as an atomic word: never torn, and any value is a level.
        unsafe { &*(address as *const AtomicU32) }
    })
}

/// Hands one log line to UCX's `ucs_log_dispatch` when UCX's libucs is
/// loaded: UCX's log handlers (those pushed with `ucs_log_push_handler`,
/// then UCX's default one with its format, file filter and output) see it
/// as one of UCX's own, at UCX's level for it, with UCX's global log
/// component. A line above UCX's configured level is dropped, as UCX's
/// logging macros drop theirs before dispatching. Returns false when UCX's
/// libucs is not loaded (the caller logs the line itself).
pub(crate) fn dispatch_log_line(metadata: &'static Metadata<'static>, message: &str) -> bool {
    let level = ucx_log_level(metadata.level());
    let names = || call_site_names(metadata);
    dispatch_at(level, names, metadata.line().unwrap_or(0), message)
}

/// Hands a data-path line (`crate::core::data_trace`) to UCX's
/// `ucs_log_dispatch` at `UCS_LOG_LEVEL_TRACE_DATA`, as
/// [`dispatch_log_line`] does for other lines.
pub(crate) fn dispatch_data_line(file: &'static CStr, line: u32, message: &str) -> bool {
    dispatch_at(
        UCS_LOG_LEVEL_TRACE_DATA,
        || (file, c"rc_mlx5"),
        line,
        message,
    )
}

/// Dispatches `message` at UCX's `level` with the source names `names`
/// gives (asked only when the line is wanted). False when UCX's libucs is
/// not loaded.
fn dispatch_at(
    level: ucs_log_level_t,
    names: impl FnOnce() -> (&'static CStr, &'static CStr),
    line: u32,
    message: &str,
) -> bool {
    let Some(dispatch) = DISPATCH.address() else {
        return false;
    };
    let Some(component) = GLOBAL_OPTS.address() else {
        return false;
    };
    let Some(configured) = ucx_log_level_word() else {
        return false;
    };
    if level > configured.load(Ordering::Relaxed) {
        return true;
    }
    let (file, function) = names();
    let text = CString::new(message.replace('\0', "")).unwrap_or_default();
    // SAFETY: `dispatch` is UCX's `ucs_log_dispatch` (pinned, see `lookup`),
    // of exactly this signature; every string is NUL-terminated, the format
    // "%s" consumes the one string argument, and `file` lives for the rest
    // of the process as UCX's filter cache requires.
    unsafe {
        let dispatch = std::mem::transmute::<usize, LogDispatch>(dispatch);
        dispatch(
            file.as_ptr(),
            line,
            function.as_ptr(),
            level,
            component as *mut c_void,
            c"%s".as_ptr(),
            text.as_ptr(),
        );
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_only_we_define_is_not_ucx() {
        // UCX never defines this name, loaded or not.
        assert_eq!(lookup(c"uct_soft_hca_link_set"), None);
    }
}
