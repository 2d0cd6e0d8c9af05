//! The checked-in headers under `include/` must be exactly what
//! `tools/headergen` generates from the current Rust sources.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

const REFRESH: &str = "cargo run -p headergen";

fn files_below(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries = fs::read_dir(&current)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", current.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(dir).expect("below dir").to_path_buf();
                let bytes = fs::read(&path)
                    .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
                files.insert(relative, bytes);
            }
        }
    }
    files
}

/// First differing line, for the failure message.
fn first_difference(ours: &[u8], fresh: &[u8]) -> String {
    let ours = String::from_utf8_lossy(ours);
    let fresh = String::from_utf8_lossy(fresh);
    for (number, (a, b)) in ours.lines().zip(fresh.lines()).enumerate() {
        if a != b {
            return format!("line {}: checked in `{a}`, generated `{b}`", number + 1);
        }
    }
    format!(
        "lengths differ: checked in {} lines, generated {} lines",
        ours.lines().count(),
        fresh.lines().count()
    )
}

#[test]
fn checked_in_headers_match_the_generator() {
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let fresh_dir = std::env::temp_dir().join(format!("uct-header-drift-{}", std::process::id()));
    let _ = fs::remove_dir_all(&fresh_dir);
    headergen::generate(&fresh_dir).unwrap_or_else(|e| panic!("headergen failed: {e}"));

    let checked_in = files_below(&include);
    let fresh = files_below(&fresh_dir);
    let _ = fs::remove_dir_all(&fresh_dir);

    let mut problems = Vec::new();
    for (path, bytes) in &fresh {
        match checked_in.get(path) {
            None => problems.push(format!("include/{} is missing", path.display())),
            Some(ours) if ours != bytes => problems.push(format!(
                "include/{} is out of date ({})",
                path.display(),
                first_difference(ours, bytes)
            )),
            Some(_) => {}
        }
    }
    for path in checked_in.keys().filter(|p| !fresh.contains_key(*p)) {
        problems.push(format!(
            "include/{} is not generated any more",
            path.display()
        ));
    }
    assert!(
        problems.is_empty(),
        "generated headers drifted from the Rust sources; refresh them with `{REFRESH}`:\n{}",
        problems.join("\n")
    );
}
