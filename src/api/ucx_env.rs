//! Our `UCX_*` variables count as used for UCX's `libucs`.
//!
//! UCX's `libucp` ends `ucp_worker_create` by asking its `libucs` to list
//! the `UCX_*` variables that no configuration table read
//! (`ucs_config_parser_print_env_vars_once`): `libucs` keeps every variable
//! its parser looked up, and only those, as used. Our tables are read by our
//! own parser, so without this every variable of ours (`UCX_SOFT_HCA_DEVICES`,
//! `UCX_RC_MLX5_TX_QUEUE_LEN`, …) is reported as unused.
//!
//! So, when UCX's `libucp` is in the process, the variables of ours that are
//! set are handed to UCX's parser once (`ucs_config_parser_fill_opts`) as a
//! table of fields that accept any value and store nothing: the parser looks
//! each one up and marks it used, and nothing else changes. The table's
//! layout and the call's form follow the loaded UCX version (the parser
//! gained a `doc` callback in 1.17, `fill_opts` takes a table entry from
//! 1.15).

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Once;

use crate::abi::*;
use crate::api::caller_version::{libucp_version, UcxVersion};
use crate::core::c_boundary::{c_entry, CSliceMut};
use crate::core::config::unused::known_variable_names;
use crate::core::config::{Env, ProcessEnv};

/// The prefix of every variable (UCX's `UCS_DEFAULT_ENV_PREFIX`).
const ENV_PREFIX: &str = "UCX_";

/// `ucs_config_fill_opts` takes a table entry instead of fields from here.
const FILL_OPTS_WITH_ENTRY: UcxVersion = UcxVersion::new(1, 15);
/// `ucs_config_parser_t` has a `doc` callback from here.
const PARSER_WITH_DOC: UcxVersion = UcxVersion::new(1, 17);

type ReadFn = unsafe extern "C" fn(*const c_char, *mut c_void, *const c_void) -> c_int;
type WriteFn = unsafe extern "C" fn(*mut c_char, usize, *const c_void, *const c_void) -> c_int;
type CloneFn = unsafe extern "C" fn(*const c_void, *mut c_void, *const c_void) -> ucs_status_t;
type ReleaseFn = unsafe extern "C" fn(*mut c_void, *const c_void);
type HelpFn = unsafe extern "C" fn(*mut c_char, usize, *const c_void);
type DocFn = unsafe extern "C" fn(*mut c_void, *const c_void);

/// Accepts any value (UCX's readers answer 1 on success).
unsafe extern "C" fn accept_any(_: *const c_char, _: *mut c_void, _: *const c_void) -> c_int {
    1
}

c_entry! {
    ops_slot
    /// Prints nothing (an empty string, when there is room for one).
    fn write_nothing(
        buf: *mut c_char,
        max: usize,
        _value: *const c_void,
        _arg: *const c_void,
    ) -> c_int;
    take text: CSliceMut<c_char> = (buf, max);
    {
        text.write_c_string(b"");
        1
    }
}

unsafe extern "C" fn clone_nothing(
    _: *const c_void,
    _: *mut c_void,
    _: *const c_void,
) -> ucs_status_t {
    UCS_OK
}

unsafe extern "C" fn release_nothing(_: *mut c_void, _: *const c_void) {}

c_entry! {
    ops_slot
    /// Describes nothing (an empty string, when there is room for one).
    fn help_nothing(buf: *mut c_char, max: usize, _arg: *const c_void);
    take text: CSliceMut<c_char> = (buf, max);
    {
        text.write_c_string(b"");
    }
}

unsafe extern "C" fn doc_nothing(_: *mut c_void, _: *const c_void) {}

/// `ucs_config_parser_t` up to UCX 1.16.
#[repr(C)]
struct ParserV113 {
    read: ReadFn,
    write: WriteFn,
    clone: CloneFn,
    release: ReleaseFn,
    help: HelpFn,
    arg: *const c_void,
}

/// `ucs_config_parser_t` from UCX 1.17.
#[repr(C)]
struct ParserV117 {
    read: ReadFn,
    write: WriteFn,
    clone: CloneFn,
    release: ReleaseFn,
    help: HelpFn,
    doc: DocFn,
    arg: *const c_void,
}

/// `ucs_config_field_t` with the parser `P`; a NULL name ends a table.
#[repr(C)]
struct Field<P> {
    name: *const c_char,
    dfl_value: *const c_char,
    doc: *const c_char,
    offset: usize,
    parser: P,
}

/// `ucs_config_global_list_entry_t` (UCX 1.15 on; `flags` from 1.16, in
/// what is tail padding before).
#[repr(C)]
struct GlobalListEntry {
    name: *const c_char,
    prefix: *const c_char,
    table: *mut c_void,
    size: usize,
    list: [*mut c_void; 2],
    flags: u8,
}

type FillOptsFields = unsafe extern "C" fn(
    *mut c_void,
    *mut c_void,
    *const c_char,
    *const c_char,
    c_int,
) -> ucs_status_t;
type FillOptsEntry =
    unsafe extern "C" fn(*mut c_void, *mut GlobalListEntry, *const c_char, c_int) -> ucs_status_t;

/// A field per name, then the terminating NULL-named one.
fn fields<P>(names: &[CString], parser: impl Fn() -> P) -> Vec<Field<P>> {
    let empty = c"".as_ptr();
    let field = |name: *const c_char| Field {
        name,
        dfl_value: empty,
        doc: empty,
        offset: 0,
        parser: parser(),
    };
    let mut table: Vec<Field<P>> = names.iter().map(|name| field(name.as_ptr())).collect();
    table.push(field(std::ptr::null()));
    table
}

/// Our variables that are set, without the `UCX_` prefix.
fn our_set_variables(env: &dyn Env) -> Vec<CString> {
    let known = known_variable_names(&super::config_tables::ALL_TABLES);
    env.names_with_prefix(ENV_PREFIX)
        .into_iter()
        .filter(|name| known.contains(name))
        .filter_map(|name| CString::new(&name[ENV_PREFIX.len()..]).ok())
        .collect()
}

/// Has UCX's parser (of `version`, at `fill_opts`) look up `names`.
///
/// # Safety
/// `fill_opts` is UCX's `ucs_config_parser_fill_opts` of `version`.
unsafe fn mark_used(
    fill_opts: *mut c_void,
    version: UcxVersion,
    names: &[CString],
) -> ucs_status_t {
    // Every field stores nothing, at offset 0 of this.
    let mut opts = [0u64; 2];
    let opts = opts.as_mut_ptr().cast::<c_void>();
    let v113 = || ParserV113 {
        read: accept_any,
        write: write_nothing,
        clone: clone_nothing,
        release: release_nothing,
        help: help_nothing,
        arg: std::ptr::null(),
    };
    let v117 = || ParserV117 {
        read: accept_any,
        write: write_nothing,
        clone: clone_nothing,
        release: release_nothing,
        help: help_nothing,
        doc: doc_nothing,
        arg: std::ptr::null(),
    };
    let mut table113;
    let mut table117;
    let table: *mut c_void = if version >= PARSER_WITH_DOC {
        table117 = fields(names, v117);
        table117.as_mut_ptr().cast()
    } else {
        table113 = fields(names, v113);
        table113.as_mut_ptr().cast()
    };
    let prefix = c"UCX_".as_ptr();
    if version >= FILL_OPTS_WITH_ENTRY {
        let mut entry = GlobalListEntry {
            name: c"uct-rs".as_ptr(),
            prefix: std::ptr::null(),
            table,
            size: size_of::<[u64; 2]>(),
            list: [std::ptr::null_mut(); 2],
            flags: 0,
        };
        // SAFETY: UCX's function of this version, with a table in its layout
        // that lives until the call returns.
        unsafe {
            std::mem::transmute::<*mut c_void, FillOptsEntry>(fill_opts)(
                opts, &mut entry, prefix, 1,
            )
        }
    } else {
        // SAFETY: as above, in the older form.
        unsafe {
            std::mem::transmute::<*mut c_void, FillOptsFields>(fill_opts)(
                opts,
                table,
                prefix,
                std::ptr::null(),
                1,
            )
        }
    }
}

/// Marks our set variables used in UCX's `libucs`, once, when UCX's
/// `libucp` (which reports unused ones) is in the process. Called wherever
/// we read our configuration, which UCX's `libucp` does before it reports.
pub(crate) fn mark_our_env_vars_used() {
    static DONE: Once = Once::new();
    let Some(version) = libucp_version() else {
        return;
    };
    DONE.call_once(|| {
        let Some(fill_opts) =
            crate::api::caller_version::libucs_symbol(c"ucs_config_parser_fill_opts")
        else {
            return;
        };
        let names = our_set_variables(&ProcessEnv);
        if names.is_empty() {
            return;
        }
        // SAFETY: UCX's own function, of the version its libucp reports.
        let status = unsafe { mark_used(fill_opts, version, &names) };
        tracing::debug!(
            "our {} UCX_* variables marked used in UCX's libucs: {}",
            names.len(),
            status_text(status)
        );
    });
}

fn status_text(status: ucs_status_t) -> &'static str {
    if status == UCS_OK {
        "done"
    } else {
        "refused"
    }
}
