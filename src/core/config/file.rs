//! UCX's configuration files: `ucx.conf` in `$HOME`, in `$UCX_CONFIG_DIR`
//! and in the current directory (later ones override earlier ones; the
//! environment overrides them all). Lines are `UCX_NAME = value` (or
//! `UCX_NAME: value`), `#`/`;` start a comment line, ` ;` an inline comment.
//!
//! UCX can restrict a `[section]` to machines matching `CPU vendor`,
//! `CPU model` or `Product name` lines; we cannot evaluate those, so the
//! rest of such a section is not applied (logged at debug level). UCX's
//! system-wide and library-relative files are not read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The file name UCX looks for.
pub const CONFIG_FILE_NAME: &str = "ucx.conf";

/// Section filter keys UCX understands.
const FILTER_KEYS: &[&str] = &["CPU vendor", "CPU model", "Product name"];

/// The `(name, value)` assignments of a configuration file's text, in order.
pub fn parse_config_text(text: &str) -> Vec<(String, String)> {
    let mut assignments = Vec::new();
    let mut section = String::new();
    let mut skipping_section = false;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for raw in text.lines() {
        let line = strip_inline_comment(raw).trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_string();
            skipping_section = false;
            continue;
        }
        let Some(split) = line.find(['=', ':']) else {
            tracing::debug!("{CONFIG_FILE_NAME}: ignoring line without '=': {line}");
            continue;
        };
        let (name, value) = (line[..split].trim(), line[split + 1..].trim());
        if FILTER_KEYS.contains(&name) {
            tracing::debug!(
                "{CONFIG_FILE_NAME}: section [{section}] is limited by '{name}', not applied"
            );
            skipping_section = true;
            continue;
        }
        if !skipping_section && !name.is_empty() {
            assignments.push((name.to_string(), value.to_string()));
        }
    }
    assignments
}

/// Drops a `;` comment that follows whitespace (as inih's inline comments).
fn strip_inline_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b';' && i > 0 && bytes[i - 1].is_ascii_whitespace() {
            return &line[..i];
        }
    }
    line
}

/// The directories searched, weakest first.
pub fn config_file_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home));
    }
    if let Some(dir) = std::env::var_os("UCX_CONFIG_DIR") {
        dirs.push(PathBuf::from(dir));
    }
    dirs.push(PathBuf::from("."));
    dirs
}

/// Reads `ucx.conf` from each of `dirs`; later files override earlier ones.
pub fn load_config_files(dirs: &[PathBuf]) -> HashMap<String, String> {
    let mut vars = HashMap::new();
    for dir in dirs {
        let path: PathBuf = Path::new(dir).join(CONFIG_FILE_NAME);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                vars.extend(parse_config_text(&text));
                tracing::debug!("parsed config file {}", path.display());
            }
            Err(error) => tracing::trace!("no config file {}: {error}", path.display()),
        }
    }
    vars
}

/// This process's configuration file variables, read once.
pub fn config_file_vars() -> &'static HashMap<String, String> {
    static VARS: OnceLock<HashMap<String, String>> = OnceLock::new();
    VARS.get_or_init(|| load_config_files(&config_file_dirs()))
}
