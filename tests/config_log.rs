//! Logging: UCX's line layout, `UCX_LOG_LEVEL` names and filtering, a bad
//! level warned about once, `UCX_LOG_FILE`. Subscriber installation is
//! process-wide, so those cases run in child processes.

use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

use tracing::Level;
use tracing_subscriber::filter::LevelFilter;
use uct::core::log::{expand_log_file_name, format_line, parse_ucx_level, LineOrigin};

const CHILD_MARKER: &str = "UCT_CONFIG_LOG_CHILD";

#[test]
fn line_layout_matches_ucx() {
    let origin = LineOrigin {
        time: UNIX_EPOCH + Duration::from_micros(1_700_000_000_012_345),
        host: "node1",
        pid: 4242,
        thread: 0,
        file: "src/core/config/table.rs",
        line: 212,
    };
    assert_eq!(
        format_line(&origin, &Level::WARN, "something happened"),
        "[1700000000.012345] [node1:4242 :0]          table.rs:212  UCX  WARN  something happened"
    );
    let origin = LineOrigin {
        file: "a_rather_long_file_name.rs",
        line: 123456,
        thread: 3,
        pid: 1234567,
        ..origin
    };
    assert_eq!(
        format_line(&origin, &Level::ERROR, "x"),
        "[1700000000.012345] [node1:1234567:3] a_rather_long_file_name.rs:123456 UCX  ERROR x"
    );
}

#[test]
fn ucx_level_names_map_to_tracing_levels() {
    let cases = [
        ("fatal", LevelFilter::ERROR),
        ("error", LevelFilter::ERROR),
        ("WARN", LevelFilter::WARN),
        ("diag", LevelFilter::INFO),
        ("info", LevelFilter::INFO),
        ("debug", LevelFilter::DEBUG),
        ("trace", LevelFilter::TRACE),
        ("req", LevelFilter::TRACE),
        ("data", LevelFilter::TRACE),
        ("async", LevelFilter::TRACE),
        ("func", LevelFilter::TRACE),
        ("poll", LevelFilter::TRACE),
    ];
    for (name, level) in cases {
        assert_eq!(parse_ucx_level(name), Some(level), "{name}");
    }
    for bad in ["", "verbose", "warning", "print", "5"] {
        assert_eq!(parse_ucx_level(bad), None, "{bad:?}");
    }
}

#[test]
fn log_file_name_substitutions() {
    assert_eq!(
        expand_log_file_name("/tmp/ucx.%p.log", 42, "h"),
        "/tmp/ucx.42.log"
    );
    assert_eq!(expand_log_file_name("%h-%p", 7, "node"), "node-7");
    assert_eq!(expand_log_file_name("100%", 7, "node"), "100%");
    assert_eq!(expand_log_file_name("%x", 7, "node"), "%x");
}

fn run_child(test: &str, env: &[(&str, &str)]) -> std::process::Output {
    let exe = std::env::current_exe().expect("test binary path");
    let output = Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_MARKER, "1")
        .env_remove("UCX_LOG_LEVEL")
        .env_remove("UCX_LOG_FILE")
        .envs(env.iter().copied())
        .output()
        .expect("child test runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "child failed: {stdout}");
    assert!(
        stdout.contains("1 passed"),
        "child must run {test}: {stdout}"
    );
    output
}

fn emit_sample_messages() {
    uct::core::log::init();
    uct::core::log::init(); // idempotent
    tracing::error!("sample error");
    tracing::warn!("sample warning");
    tracing::info!("sample info");
    tracing::debug!("sample debug");
    tracing::trace!("sample trace");
}

/// Checks a whole line's layout without knowing the time, host or pid.
fn assert_ucx_line(line: &str, level: &str, message: &str) {
    let rest = line.strip_prefix('[').expect("starts with [time]");
    let (time, rest) = rest.split_once("] [").expect("time then [host:pid:tid]");
    let (seconds, micros) = time.split_once('.').expect("seconds.micros");
    assert!(
        seconds.bytes().all(|b| b.is_ascii_digit()) && micros.len() == 6,
        "{line}"
    );
    let (proc_data, rest) = rest.split_once("] ").expect("process data closed");
    assert_eq!(proc_data.matches(':').count(), 2, "{line}");
    let pid = std::process::id().to_string();
    assert!(proc_data.contains(&format!(":{pid}")), "{line}");
    assert!(rest.contains("config_log.rs:"), "{line}");
    assert!(
        rest.ends_with(&format!(" UCX  {level:<5} {message}")),
        "{line}"
    );
}

#[test]
fn default_level_is_warn_and_output_goes_to_stderr() {
    if std::env::var_os(CHILD_MARKER).is_none() {
        let output = run_child("default_level_is_warn_and_output_goes_to_stderr", &[]);
        let log = String::from_utf8_lossy(&output.stderr);
        assert!(
            log.contains("sample error") && log.contains("sample warning"),
            "{log}"
        );
        assert!(
            !log.contains("sample info") && !log.contains("sample debug"),
            "{log}"
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(!stdout.contains("sample warning"), "log lines go to stderr");
        return;
    }
    emit_sample_messages();
}

#[test]
fn debug_level_and_log_file() {
    if std::env::var_os(CHILD_MARKER).is_none() {
        let dir = std::env::temp_dir().join(format!("uct-log-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let template = dir.join("ucx.%p.log");
        let output = run_child(
            "debug_level_and_log_file",
            &[
                ("UCX_LOG_LEVEL", "debug"),
                ("UCX_LOG_FILE", template.to_str().unwrap()),
            ],
        );
        assert!(!String::from_utf8_lossy(&output.stderr).contains("sample"));
        let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(files.len(), 1, "one file named after the child's pid");
        let name = files[0].file_name().into_string().unwrap();
        assert!(name.starts_with("ucx.") && name.ends_with(".log") && name != "ucx.%p.log");
        let log = std::fs::read_to_string(files[0].path()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        for wanted in [
            "sample error",
            "sample warning",
            "sample info",
            "sample debug",
        ] {
            assert!(log.contains(wanted), "{wanted} missing from {log}");
        }
        assert!(!log.contains("sample trace"), "{log}");
        return;
    }
    emit_sample_messages();
    let text = std::fs::read_dir(
        std::path::Path::new(&std::env::var("UCX_LOG_FILE").unwrap())
            .parent()
            .unwrap(),
    )
    .unwrap()
    .flatten()
    .map(|entry| std::fs::read_to_string(entry.path()).unwrap())
    .collect::<String>();
    let line = text
        .lines()
        .find(|line| line.ends_with("sample warning"))
        .expect("warning line written");
    assert_ucx_line(line, "WARN", "sample warning");
    let line = text
        .lines()
        .find(|line| line.ends_with("sample debug"))
        .unwrap();
    assert_ucx_line(line, "DEBUG", "sample debug");
}

#[test]
fn bad_level_is_warned_about_once_and_warn_is_used() {
    if std::env::var_os(CHILD_MARKER).is_none() {
        let output = run_child(
            "bad_level_is_warned_about_once_and_warn_is_used",
            &[("UCX_LOG_LEVEL", "loud")],
        );
        let log = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            log.matches("Invalid value for UCX_LOG_LEVEL: 'loud'")
                .count(),
            1,
            "{log}"
        );
        assert!(
            log.contains("sample warning") && !log.contains("sample info"),
            "{log}"
        );
        return;
    }
    emit_sample_messages();
    emit_sample_messages();
}

/// Logs when dropped: a thread-local of this type logs from its destructor.
struct LogsWhenDropped(&'static str);

impl Drop for LogsWhenDropped {
    fn drop(&mut self) {
        tracing::warn!("{}", self.0);
    }
}

extern "C" fn log_at_exit() {
    tracing::warn!("logged from an atexit handler");
}

#[test]
fn lines_logged_during_thread_and_process_exit_are_written() {
    if std::env::var_os(CHILD_MARKER).is_none() {
        let output = run_child(
            "lines_logged_during_thread_and_process_exit_are_written",
            &[],
        );
        let log = String::from_utf8_lossy(&output.stderr);
        assert!(!log.contains("panicked"), "{log}");
        for wanted in [
            "before the thread exits",
            "logged from a thread-local destructor",
            "logged from an atexit handler",
        ] {
            assert!(
                log.lines().any(|line| line.ends_with(wanted)),
                "'{wanted}' missing from {log}"
            );
        }
        return;
    }
    uct::core::log::init();
    thread_local! {
        static GUARD: LogsWhenDropped = const { LogsWhenDropped("logged from a thread-local destructor") };
    }
    std::thread::spawn(|| {
        // The guard's destructor is registered first, so it runs last, after
        // every thread-local the first log line set up has been destroyed.
        GUARD.with(|_| ());
        tracing::warn!("before the thread exits");
    })
    .join()
    .expect("the thread exits cleanly");
    // SAFETY: registers a plain function without arguments.
    assert_eq!(unsafe { libc::atexit(log_at_exit) }, 0);
}
