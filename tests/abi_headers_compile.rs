//! Every generated header compiles on its own and all together, as C99 with
//! `-Wall -Wextra -Werror` and as C++ with `-Wall -Werror`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn headers(include: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![include.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("list include dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "h") {
                let relative = path.strip_prefix(include).expect("below include");
                found.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    found
}

fn compile(compiler: &str, flags: &[&str], source: &Path, include: &Path) -> Result<(), String> {
    let output = Command::new(compiler)
        .args(flags)
        .arg("-I")
        .arg(include)
        .arg("-fsyntax-only")
        .arg(source)
        .output()
        .map_err(|e| format!("cannot run {compiler}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{compiler} {}:\n{}",
            source.display(),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

#[test]
fn headers_compile_as_c99_and_cxx() {
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let all = headers(&include);
    assert!(
        all.len() >= 15,
        "expected the generated headers under include/, found {all:?}"
    );
    let work = std::env::temp_dir().join(format!("uct-header-compile-{}", std::process::id()));
    std::fs::create_dir_all(&work).expect("scratch dir");

    // One translation unit per header (each must be self-contained), plus
    // one with all of them (no conflicts between headers).
    let mut units: Vec<(String, Vec<String>)> = all
        .iter()
        .map(|h| (h.replace(['/', '.'], "_"), vec![h.clone()]))
        .collect();
    units.push(("all".to_string(), all.clone()));

    let mut failures = Vec::new();
    for (name, included) in &units {
        let body: String = included
            .iter()
            .map(|h| format!("#include <{h}>\n"))
            .collect();
        let body = format!("{body}int main(void) {{ return 0; }}\n");
        let c_file: PathBuf = work.join(format!("{name}.c"));
        let cxx_file: PathBuf = work.join(format!("{name}.cpp"));
        std::fs::write(&c_file, &body).expect("write C file");
        std::fs::write(&cxx_file, &body).expect("write C++ file");
        if let Err(e) = compile(
            "gcc",
            &["-std=c99", "-Wall", "-Wextra", "-Werror"],
            &c_file,
            &include,
        ) {
            failures.push(e);
        }
        if let Err(e) = compile("g++", &["-Wall", "-Wextra", "-Werror"], &cxx_file, &include) {
            failures.push(e);
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    assert!(
        failures.is_empty(),
        "headers do not compile:\n{}",
        failures.join("\n")
    );
}
