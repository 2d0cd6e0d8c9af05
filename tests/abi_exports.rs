//! Every function and data symbol our headers declare is exported by the
//! shared library, so C programs built against `include/` link and load.

use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Names declared at file scope in a generated header: functions
/// (`ret name(...);`) and `extern` data.
fn declared_symbols(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in text.lines() {
        let starts_declaration = line.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && !line.starts_with("typedef")
            && !line.starts_with("struct")
            && !line.starts_with("union")
            && !line.starts_with("extern \"C\"");
        if !starts_declaration {
            continue;
        }
        let Some(before) = line.split(['(', '[']).next() else {
            continue;
        };
        if before.len() == line.len() {
            continue;
        }
        let name: String = before
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if !name.is_empty() {
            names.push(name);
        }
    }
    names
}

fn headers(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("list include dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            headers(&path, found);
        } else if path.extension().is_some_and(|e| e == "h") {
            found.push(path);
        }
    }
}

#[test]
fn declarations_parse_as_expected() {
    let text = "ucs_status_t uct_md_open(uct_component_h component,\n                         const char *md_name);\n\
                extern const char *ucs_memory_type_names[];\ntypedef void (*cb_t)(void);\nstruct x;\n";
    assert_eq!(
        declared_symbols(text),
        ["uct_md_open", "ucs_memory_type_names"]
    );
}

#[test]
fn every_declared_symbol_is_exported_by_the_library() {
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let mut files = Vec::new();
    headers(&include, &mut files);
    let mut declared = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read header");
        declared.extend(declared_symbols(&text));
    }
    assert!(
        declared.len() > 50,
        "expected many declarations, found {declared:?}"
    );

    // target/<profile>/deps/<this test> -> target/<profile>/libuct.so
    let exe = std::env::current_exe().expect("test executable path");
    let library = exe
        .parent()
        .and_then(Path::parent)
        .map(|dir| dir.join("libuct.so"))
        .expect("target dir");
    // Always (re)build: a stale libuct.so would test yesterday's exports.
    build_shared_library(&library);
    assert!(library.exists(), "{} not built", library.display());
    let path = CString::new(library.to_string_lossy().as_bytes()).expect("path");
    // SAFETY: dlopen with a valid C string; RTLD_LOCAL keeps the library's
    // symbols out of the global namespace of this test process.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!handle.is_null(), "dlopen {} failed", library.display());

    let missing: Vec<&String> = declared
        .iter()
        .filter(|name| {
            let symbol = CString::new(name.as_str()).expect("symbol name");
            // SAFETY: valid handle from dlopen above and a valid C string.
            unsafe { libc::dlsym(handle, symbol.as_ptr()) }.is_null()
        })
        .collect();
    assert!(
        missing.is_empty(),
        "declared in include/ but not exported by {}: {missing:?}",
        library.display()
    );
}

/// `cargo test` builds only the rlib; the cdylib under test comes from a
/// nested `cargo build --lib` into the same target dir and profile.
fn build_shared_library(library: &Path) {
    let profile_dir = library.parent().expect("profile dir");
    let target_dir = profile_dir.parent().expect("target dir");
    let mut cargo = std::process::Command::new(env!("CARGO"));
    cargo
        .args(["build", "--lib", "--quiet"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CARGO_TARGET_DIR", target_dir);
    if profile_dir
        .file_name()
        .is_some_and(|name| name == "release")
    {
        cargo.arg("--release");
    }
    let status = cargo.status().expect("run cargo build");
    assert!(status.success(), "cargo build --lib failed");
}
