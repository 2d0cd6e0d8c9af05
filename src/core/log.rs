//! Logging: a `tracing` subscriber writing UCX's log line format, level from
//! `UCX_LOG_LEVEL`, destination stderr or `UCX_LOG_FILE` (both also from
//! `ucx.conf`). UCX itself logs to stdout; we use stderr so that log lines
//! never mix with a program's output.
//!
//! A line looks like UCX's:
//! `[1700000000.123456] [host:4242 :0]        table.rs:212  UCX  WARN  message`
//! (time in seconds.microseconds, host, pid, per-process thread number,
//! source file and line, component, level, message).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, Once};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use super::config::value::{parse_enum, LOG_LEVEL_NAMES};
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
    let filter = match level {
        Some(Some(filter)) => filter,
        _ => LevelFilter::WARN,
    };
    let (writer, file_error) = make_writer();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(filter)
        .with_writer(writer)
        .event_format(UcxFormat)
        .finish();
    // Another subscriber may already be installed (an application using
    // tracing itself, or a test harness): theirs wins, ours is dropped.
    if tracing::subscriber::set_global_default(subscriber).is_err() {
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

/// stderr, or the file `UCX_LOG_FILE` names (with `%p` → pid, `%h` → host).
fn make_writer() -> (BoxMakeWriter, Option<String>) {
    let Some(template) = ProcessEnv.get("UCX_LOG_FILE").filter(|t| !t.is_empty()) else {
        return (BoxMakeWriter::new(std::io::stderr), None);
    };
    let path = expand_log_file_name(&template, std::process::id(), &host_name());
    match std::fs::File::create(&path) {
        Ok(file) => (BoxMakeWriter::new(Mutex::new(file)), None),
        Err(error) => (
            BoxMakeWriter::new(std::io::stderr),
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

/// This machine's host name (empty if it cannot be read).
pub fn host_name() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: `buffer` is valid for writes of `buffer.len()` bytes; gethostname
    // writes at most that many and we read only up to the first NUL inside it.
    let rc = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    if rc != 0 {
        return String::new();
    }
    let len = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..len]).into_owned()
}

/// UCX numbers threads in the order they first log, from 0.
fn thread_number() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    thread_local! {
        static NUMBER: u32 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    NUMBER.with(|n| *n)
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

struct UcxFormat;

impl<S, N> FormatEvent<S, N> for UcxFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let mut message = String::new();
        ctx.format_fields(Writer::new(&mut message), event)?;
        let metadata = event.metadata();
        let host = host_name_cached();
        let origin = LineOrigin {
            time: SystemTime::now(),
            host,
            pid: std::process::id(),
            thread: thread_number(),
            file: metadata.file().unwrap_or("?"),
            line: metadata.line().unwrap_or(0),
        };
        // UCX prints each line of a multi-line message with its own prefix.
        for line in message.split('\n') {
            writeln!(writer, "{}", format_line(&origin, metadata.level(), line))?;
        }
        Ok(())
    }
}

fn host_name_cached() -> &'static str {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(host_name)
}
