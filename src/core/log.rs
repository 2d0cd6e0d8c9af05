//! Logging: every `tracing` event of this library becomes one UCX log line.
//!
//! * Standalone, our own logger writes it in UCX's line format, level from
//!   `UCX_LOG_LEVEL`, to stderr or `UCX_LOG_FILE` (both also from
//!   `ucx.conf`). UCX itself logs to stdout; we use stderr so that log lines
//!   never mix with a program's output.
//! * With UCX's own `libucs` in the process, the line goes through UCX's
//!   dispatch instead (`crate::core::ucx_libucs::dispatch_log_line`), so the
//!   handlers a program pushed with `ucs_log_push_handler`, UCX's level and
//!   file filters and its output format all apply, as to UCX's own lines.
//!
//! The logger touches no thread-local storage that can be destroyed: a line
//! logged from a destructor at exit (a TLS destructor, an `atexit` handler,
//! UCX's library destructors calling our `ucs_*` functions) is written like
//! any other, never a panic.
//!
//! A line looks like UCX's:
//! `[1700000000.123456] [host:4242 :0]        table.rs:212  UCX  WARN  message`
//! (time in seconds.microseconds, host, pid, per-process thread number,
//! source file and line, component, level, message).

use std::cell::Cell;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, Once};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

use super::config::table::{value, ConfigTable, Field as ConfigField};
use super::config::value::{parse_enum, Kind, LOG_LEVEL_NAMES};
use super::config::{Env, ProcessEnv};

/// The level used when `UCX_LOG_LEVEL` is unset or invalid (UCX's default).
pub const DEFAULT_LOG_LEVEL: &str = "warn";

/// Installs the process-wide subscriber once; later calls do nothing. Cheap
/// enough to call at the top of every entry point.
pub fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(install);
}

fn install() {
    let level_text = ProcessEnv.get("UCX_LOG_LEVEL");
    let level = level_text.as_deref().map(parse_ucx_level);
    let max_level = match level {
        Some(Some(filter)) => filter,
        _ => LevelFilter::WARN,
    };
    let (output, file_error) = open_output();
    // Another subscriber may already be installed (an application using
    // tracing itself, or a test harness): theirs wins, ours is dropped.
    if tracing::subscriber::set_global_default(UcxLogger { max_level, output }).is_err() {
        return;
    }
    if let (Some(text), Some(None)) = (&level_text, level) {
        tracing::warn!(
            "Invalid value for UCX_LOG_LEVEL: '{text}'. Expected: [{}]; using '{DEFAULT_LOG_LEVEL}'",
            LOG_LEVEL_NAMES.join("|").to_lowercase()
        );
    }
    if let Some(message) = file_error {
        tracing::warn!("{message}; logging to stderr");
    }
}

/// Maps a UCX level name (any case) to the `tracing` level that shows the
/// same messages: fatal/error → ERROR, warn → WARN, diag/info → INFO,
/// debug → DEBUG, trace and the finer trace levels → TRACE.
pub fn parse_ucx_level(text: &str) -> Option<LevelFilter> {
    let index = parse_enum(text.trim(), LOG_LEVEL_NAMES)?;
    Some(match LOG_LEVEL_NAMES[index] {
        "FATAL" | "ERROR" => LevelFilter::ERROR,
        "WARN" => LevelFilter::WARN,
        "DIAG" | "INFO" => LevelFilter::INFO,
        "DEBUG" => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    })
}

/// The `tracing` level that shows what UCX logs at `level` (a
/// `ucs_log_level_t` such as a `FAILURE` setting), by the mapping of
/// [`parse_ucx_level`].
pub fn tracing_level_of(level: crate::abi::ucs_log_level_t) -> Level {
    use crate::abi::*;
    match level {
        UCS_LOG_LEVEL_FATAL | UCS_LOG_LEVEL_ERROR => Level::ERROR,
        UCS_LOG_LEVEL_WARN => Level::WARN,
        UCS_LOG_LEVEL_DIAG | UCS_LOG_LEVEL_INFO => Level::INFO,
        UCS_LOG_LEVEL_DEBUG => Level::DEBUG,
        _ => Level::TRACE,
    }
}

/// Logs at a UCX level chosen at run time (`tracing`'s macros take a
/// constant level): `log_at_ucx_level!(UCS_LOG_LEVEL_ERROR, "text {x}")`.
#[macro_export]
macro_rules! log_at_ucx_level {
    ($level:expr, $($message:tt)+) => {
        match $crate::core::log::tracing_level_of($level) {
            tracing::Level::ERROR => tracing::error!($($message)+),
            tracing::Level::WARN => tracing::warn!($($message)+),
            tracing::Level::INFO => tracing::info!($($message)+),
            tracing::Level::DEBUG => tracing::debug!($($message)+),
            _ => tracing::trace!($($message)+),
        }
    };
}

/// Where our own logger writes.
enum Output {
    Stderr,
    File(Mutex<std::fs::File>),
}

impl Output {
    fn write(&self, text: &str) {
        // A log line that cannot be written has nowhere to be reported.
        let _ = match self {
            Output::Stderr => std::io::stderr().write_all(text.as_bytes()),
            Output::File(file) => match file.lock() {
                Ok(mut file) => file.write_all(text.as_bytes()),
                Err(poisoned) => poisoned.into_inner().write_all(text.as_bytes()),
            },
        };
    }
}

/// stderr, or the file `UCX_LOG_FILE` names (with `%p` → pid, `%h` → host).
fn open_output() -> (Output, Option<String>) {
    let Some(template) = ProcessEnv.get("UCX_LOG_FILE").filter(|t| !t.is_empty()) else {
        return (Output::Stderr, None);
    };
    let path = expand_log_file_name(&template, std::process::id(), &host_name());
    match std::fs::File::create(&path) {
        Ok(file) => (Output::File(Mutex::new(file)), None),
        Err(error) => (
            Output::Stderr,
            Some(format!("cannot open UCX_LOG_FILE '{path}': {error}")),
        ),
    }
}

/// Substitutes `%p` (process id) and `%h` (host name) in a log file name.
pub fn expand_log_file_name(template: &str, pid: u32, host: &str) -> String {
    let mut out = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('%', Some('p')) => {
                let _ = write!(out, "{pid}");
                chars.next();
            }
            ('%', Some('h')) => {
                out.push_str(host);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// This machine's host name (the kernel's node name, as `gethostname` reads it).
pub fn host_name() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// UCX numbers threads in the order they first log, from 0.
fn thread_number() -> u32 {
    const UNNUMBERED: u32 = u32::MAX;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    // A `Cell<u32>` needs no destructor, so this thread-local is never torn
    // down: a line logged during thread or process exit still reads it.
    thread_local! {
        static NUMBER: Cell<u32> = const { Cell::new(UNNUMBERED) };
    }
    let number_of_this_thread = |number: &Cell<u32>| {
        if number.get() == UNNUMBERED {
            number.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        number.get()
    };
    NUMBER
        .try_with(number_of_this_thread)
        .unwrap_or_else(|_| NEXT.fetch_add(1, Ordering::Relaxed))
}

/// UCX's name of a `tracing` level.
pub fn level_name(level: &Level) -> &'static str {
    match *level {
        Level::ERROR => "ERROR",
        Level::WARN => "WARN",
        Level::INFO => "INFO",
        Level::DEBUG => "DEBUG",
        _ => "TRACE",
    }
}

/// Where and when a log line was emitted.
pub struct LineOrigin<'a> {
    pub time: SystemTime,
    pub host: &'a str,
    pub pid: u32,
    pub thread: u32,
    /// Source path; only its file name is printed.
    pub file: &'a str,
    pub line: u32,
}

/// One log line in UCX's layout, without the newline.
pub fn format_line(origin: &LineOrigin<'_>, level: &Level, message: &str) -> String {
    let since_epoch = origin.time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let file = origin.file.rsplit('/').next().unwrap_or(origin.file);
    format!(
        "[{}.{:06}] [{}:{:<5}:{}] {:>17}:{:<4} {:<4} {:<5} {}",
        since_epoch.as_secs(),
        since_epoch.subsec_micros(),
        origin.host,
        origin.pid,
        origin.thread,
        file,
        origin.line,
        "UCX",
        level_name(level),
        message
    )
}

/// The process-wide `tracing` subscriber: one UCX log line per event, no
/// spans (the library opens none), no thread-local state.
struct UcxLogger {
    max_level: LevelFilter,
    output: Output,
}

impl Subscriber for UcxLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= self.max_level
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(self.max_level)
    }

    fn new_span(&self, _span: &Attributes<'_>) -> Id {
        // Span ids must be non-zero and distinct; nothing is kept for them.
        static NEXT_SPAN: AtomicU64 = AtomicU64::new(1);
        Id::from_u64(NEXT_SPAN.fetch_add(1, Ordering::Relaxed))
    }

    fn record(&self, _span: &Id, _values: &Record<'_>) {}

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut message = String::new();
        event.record(&mut MessageText(&mut message));
        let metadata = event.metadata();
        if super::ucx_libucs::dispatch_log_line(metadata, &message) {
            return;
        }
        let origin = LineOrigin {
            time: SystemTime::now(),
            host: host_name_cached(),
            pid: std::process::id(),
            thread: thread_number(),
            file: metadata.file().unwrap_or("?"),
            line: metadata.line().unwrap_or(0),
        };
        // UCX prints each line of a multi-line message with its own prefix.
        let mut text = String::new();
        for line in message.split('\n') {
            text.push_str(&format_line(&origin, metadata.level(), line));
            text.push('\n');
        }
        self.output.write(&text);
    }

    fn enter(&self, _span: &Id) {}

    fn exit(&self, _span: &Id) {}
}

/// An event's text: its message, then its other fields as `name=value`.
struct MessageText<'a>(&'a mut String);

impl Visit for MessageText<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.insert_str(0, value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0.insert_str(0, &format!("{value:?}"));
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

fn host_name_cached() -> &'static str {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(host_name)
}

/// The part of UCS's global options this library honours.
static LOG_FIELDS: &[ConfigField] = &[
    value(
        "LOG_LEVEL",
        "warn",
        "Lowest severity of log messages printed.",
        Kind::Enum(LOG_LEVEL_NAMES),
    ),
    value(
        "LOG_FILE",
        "",
        "Write log messages to this file instead of stderr; %p is replaced\nby the process id, %h by the host name.",
        Kind::String,
    ),
    value(
        "WARN_UNUSED_ENV_VARS",
        "y",
        "Warn about UCX_ variables that look like a misspelled setting.",
        Kind::Bool,
    ),
];

pub static LOG_CONFIG: ConfigTable = ConfigTable {
    name: "UCS global",
    prefix: "",
    fields: LOG_FIELDS,
};
