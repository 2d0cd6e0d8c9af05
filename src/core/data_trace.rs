//! Data-path trace lines (UCX's `TRACE_DATA` level) and AM tracers.
//!
//! UCX's transports describe every posted work request and every received
//! message in one log line at `UCS_LOG_LEVEL_TRACE_DATA`, and hand each
//! active message to the tracer set with `uct_iface_set_am_tracer`, but only
//! while that level is enabled. A program (UCX's gtest among them) may raise
//! the level at any moment by writing UCX's `ucs_global_opts` directly, so
//! the check reads the level word itself on every post: [`enabled`] is one
//! load of a cached pointer, one load of the level and one predictable
//! branch; everything else lives in `#[cold]` functions.
//!
//! The level word is UCX's (`ucs_global_opts.log_component.log_level`) when
//! UCX's `libucs` is loaded, else ours, set from `UCX_LOG_LEVEL`. Lines go
//! through UCX's `ucs_log_dispatch` at `TRACE_DATA` when UCX's libucs is
//! loaded (its handlers count and filter them), else to our own logger.

use std::ffi::{c_uint, c_void, CStr};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use super::config::value::{parse_enum, LOG_LEVEL_NAMES};
use super::config::{Env, ProcessEnv};
use crate::abi::ucs_config::{UCS_LOG_LEVEL_TRACE_DATA, UCS_LOG_LEVEL_WARN};
use crate::abi::uct_def::{uct_am_trace_type_t, uct_am_tracer_t};

/// The level used when UCX's libucs is not loaded: UCX's index of
/// `UCX_LOG_LEVEL`.
static OWN_LEVEL: AtomicU32 = AtomicU32::new(UCS_LOG_LEVEL_WARN);

/// The level word [`enabled`] reads: [`OWN_LEVEL`] or UCX's.
static LEVEL_WORD: AtomicPtr<c_uint> = AtomicPtr::new(OWN_LEVEL.as_ptr());

/// Whether data-path lines are wanted now. Inlined into every post.
#[inline(always)]
pub fn enabled() -> bool {
    let word = LEVEL_WORD.load(Ordering::Relaxed);
    // SAFETY: `word` is OWN_LEVEL or the first field of UCX's
    // `ucs_global_opts` (a `ucs_log_level_t`, an aligned 32-bit word in a
    // library pinned for the process's life, see `ucx_libucs::lookup`).
    // UCX's side writes it with plain stores, so it is read as an atomic
    // word: never torn, and any value is a valid level.
    let level = unsafe { (*word.cast::<AtomicU32>()).load(Ordering::Relaxed) };
    level >= UCS_LOG_LEVEL_TRACE_DATA
}

/// Points [`enabled`] at the level that applies in this process: UCX's
/// when its libucs is loaded (checked again each call, a program may load
/// it late), else `UCX_LOG_LEVEL`'s. Called when an iface opens.
pub fn refresh() {
    if let Some(word) = super::ucx_libucs::ucx_log_level_word() {
        LEVEL_WORD.store(word.as_ptr(), Ordering::Relaxed);
        return;
    }
    let level = ProcessEnv
        .get("UCX_LOG_LEVEL")
        .and_then(|text| parse_enum(text.trim(), LOG_LEVEL_NAMES))
        .map_or(UCS_LOG_LEVEL_WARN, |index| index as u32);
    OWN_LEVEL.store(level, Ordering::Relaxed);
    LEVEL_WORD.store(OWN_LEVEL.as_ptr(), Ordering::Relaxed);
}

/// The source file (as a C string for UCX's log handlers) and line where
/// it is written, for [`emit`].
macro_rules! source_site {
    () => {
        (
            const {
                match ::std::ffi::CStr::from_bytes_with_nul(concat!(file!(), "\0").as_bytes()) {
                    Ok(file) => file,
                    Err(_) => panic!("a source path has no NUL"),
                }
            },
            line!(),
        )
    };
}
pub(crate) use source_site;

/// Writes one data-path line at `TRACE_DATA`, reported at `file:line`.
#[cold]
#[inline(never)]
pub fn emit((file, line): (&'static CStr, u32), text: &str) {
    if super::ucx_libucs::dispatch_data_line(file, line, text) {
        return;
    }
    tracing::trace!("{text}");
}

/// Bytes of tracer text UCX's transports give a tracer room for.
const TRACER_TEXT_MAX: usize = 255;

/// Calls an AM tracer (when one is set) on message `id` of `data`, and
/// returns the text it wrote, to end the data-path line with.
pub fn call_am_tracer(
    tracer: (uct_am_tracer_t, *mut c_void),
    kind: uct_am_trace_type_t,
    id: u8,
    data: &[u8],
) -> String {
    let (Some(tracer), arg) = tracer else {
        return String::new();
    };
    let mut text = [0u8; TRACER_TEXT_MAX + 1];
    // SAFETY: the tracer and its argument were set together by the user
    // with `uct_iface_set_am_tracer`; `data` is valid for `data.len()`
    // bytes and `text` for `TRACER_TEXT_MAX` bytes plus a final NUL that
    // the tracer is not told about.
    unsafe {
        tracer(
            arg,
            kind,
            id,
            data.as_ptr().cast(),
            data.len(),
            text.as_mut_ptr().cast(),
            TRACER_TEXT_MAX,
        )
    };
    let end = text
        .iter()
        .position(|&byte| byte == 0)
        .unwrap_or(TRACER_TEXT_MAX);
    String::from_utf8_lossy(&text[..end]).into_owned()
}

/// The part of a line that describes an AM: id, payload length and what
/// the tracer said.
pub fn am_text(line: &mut String, id: u8, length: usize, tracer_text: &str) {
    let _ = write!(line, " am_id {id} len {length}");
    if !tracer_text.is_empty() {
        line.push(' ');
        line.push_str(tracer_text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_level_word_starts_below_trace_data() {
        // No UCX libucs in a unit test, no UCX_LOG_LEVEL set by cargo.
        if std::env::var_os("UCX_LOG_LEVEL").is_none() {
            refresh();
            assert!(!enabled());
            OWN_LEVEL.store(UCS_LOG_LEVEL_TRACE_DATA, Ordering::Relaxed);
            assert!(enabled());
            refresh();
            assert!(!enabled());
        }
    }
}
