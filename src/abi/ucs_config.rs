//! `ucs/config/types.h`: small enums and structs shared by UCS configuration
//! and the UCT API (async modes, log levels, print flags, socket address).

use core::ffi::{c_char, c_uint};

/// Log verbosity, from fatal-only to every poll.
pub type ucs_log_level_t = c_uint;
pub const UCS_LOG_LEVEL_FATAL: ucs_log_level_t = 0;
pub const UCS_LOG_LEVEL_ERROR: ucs_log_level_t = 1;
pub const UCS_LOG_LEVEL_WARN: ucs_log_level_t = 2;
pub const UCS_LOG_LEVEL_DIAG: ucs_log_level_t = 3;
pub const UCS_LOG_LEVEL_INFO: ucs_log_level_t = 4;
pub const UCS_LOG_LEVEL_DEBUG: ucs_log_level_t = 5;
pub const UCS_LOG_LEVEL_TRACE: ucs_log_level_t = 6;
pub const UCS_LOG_LEVEL_TRACE_REQ: ucs_log_level_t = 7;
pub const UCS_LOG_LEVEL_TRACE_DATA: ucs_log_level_t = 8;
pub const UCS_LOG_LEVEL_TRACE_ASYNC: ucs_log_level_t = 9;
pub const UCS_LOG_LEVEL_TRACE_FUNC: ucs_log_level_t = 10;
pub const UCS_LOG_LEVEL_TRACE_POLL: ucs_log_level_t = 11;
pub const UCS_LOG_LEVEL_LAST: ucs_log_level_t = 12;
/// Printed regardless of the configured level.
pub const UCS_LOG_LEVEL_PRINT: ucs_log_level_t = 13;

/// How asynchronous events (timers, fd events) are delivered.
pub type ucs_async_mode_t = c_uint;
/// From a signal handler.
pub const UCS_ASYNC_MODE_SIGNAL: ucs_async_mode_t = 0;
/// From a helper thread, guarded by a spinlock.
pub const UCS_ASYNC_MODE_THREAD: ucs_async_mode_t = 1;
pub const UCS_ASYNC_MODE_THREAD_SPINLOCK: ucs_async_mode_t = 1;
/// From a helper thread, guarded by a mutex.
pub const UCS_ASYNC_MODE_THREAD_MUTEX: ucs_async_mode_t = 2;
/// Only when the user polls the context.
pub const UCS_ASYNC_MODE_POLL: ucs_async_mode_t = 3;
pub const UCS_ASYNC_MODE_LAST: ucs_async_mode_t = 4;

/// Yes / no / try / auto setting.
pub type ucs_ternary_auto_value_t = c_uint;
pub const UCS_NO: ucs_ternary_auto_value_t = 0;
pub const UCS_YES: ucs_ternary_auto_value_t = 1;
pub const UCS_TRY: ucs_ternary_auto_value_t = 2;
pub const UCS_AUTO: ucs_ternary_auto_value_t = 3;
pub const UCS_TERNARY_LAST: ucs_ternary_auto_value_t = 4;

/// On / off / auto setting.
pub type ucs_on_off_auto_value_t = c_uint;
pub const UCS_CONFIG_OFF: ucs_on_off_auto_value_t = 0;
pub const UCS_CONFIG_ON: ucs_on_off_auto_value_t = 1;
pub const UCS_CONFIG_AUTO: ucs_on_off_auto_value_t = 2;
pub const UCS_CONFIG_ON_OFF_LAST: ucs_on_off_auto_value_t = 3;

/// What to do when a fatal error is caught.
pub type ucs_handle_error_t = c_uint;
pub const UCS_HANDLE_ERROR_BACKTRACE: ucs_handle_error_t = 0;
pub const UCS_HANDLE_ERROR_FREEZE: ucs_handle_error_t = 1;
pub const UCS_HANDLE_ERROR_DEBUG: ucs_handle_error_t = 2;
pub const UCS_HANDLE_ERROR_NONE: ucs_handle_error_t = 3;
pub const UCS_HANDLE_ERROR_LAST: ucs_handle_error_t = 4;

/// Bits selecting what `uct_config_print` writes.
pub type ucs_config_print_flags_t = c_uint;
/// The variables and their values.
pub const UCS_CONFIG_PRINT_CONFIG: ucs_config_print_flags_t = 0x1;
/// A title line before them.
pub const UCS_CONFIG_PRINT_HEADER: ucs_config_print_flags_t = 0x2;
/// A description above each variable.
pub const UCS_CONFIG_PRINT_DOC: ucs_config_print_flags_t = 0x4;
/// Also variables that are normally not shown.
pub const UCS_CONFIG_PRINT_HIDDEN: ucs_config_print_flags_t = 0x8;
/// Comment out variables that still have their default value.
pub const UCS_CONFIG_PRINT_COMMENT_DEFAULT: ucs_config_print_flags_t = 0x10;

/// How a name list in a configuration value is applied.
pub type ucs_config_allow_list_mode_t = c_uint;
pub const UCS_CONFIG_ALLOW_LIST_ALLOW_ALL: ucs_config_allow_list_mode_t = 0;
pub const UCS_CONFIG_ALLOW_LIST_ALLOW: ucs_config_allow_list_mode_t = 1;
pub const UCS_CONFIG_ALLOW_LIST_NEGATE: ucs_config_allow_list_mode_t = 2;

/// An array of strings parsed from a configuration value.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ucs_config_names_array {
    pub names: *mut *mut c_char,
    pub count: c_uint,
    pub truncated: c_uint,
}
pub type ucs_config_names_array_t = ucs_config_names_array;

/// A name list plus how to apply it (`^a,b` negates).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ucs_config_allow_list {
    pub array: ucs_config_names_array_t,
    pub mode: ucs_config_allow_list_mode_t,
}
pub type ucs_config_allow_list_t = ucs_config_allow_list;

/// A socket address and its length.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ucs_sock_addr {
    pub addr: *const libc::sockaddr,
    pub addrlen: libc::socklen_t,
}
pub type ucs_sock_addr_t = ucs_sock_addr;

/// Log level of one named component, with an optional source-file filter.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ucs_log_component_config {
    pub log_level: ucs_log_level_t,
    pub name: [c_char; 16],
    pub file_filter: *const c_char,
}
pub type ucs_log_component_config_t = ucs_log_component_config;
