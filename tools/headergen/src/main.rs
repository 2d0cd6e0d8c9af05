//! `cargo run -p headergen [OUT_DIR]`: rewrites the generated C headers
//! (default: the crate's `include/`).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let out_dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| headergen::crate_root().join("include"));
    match headergen::generate(&out_dir) {
        Ok(written) => {
            for path in written {
                println!("wrote {}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("headergen: {err}");
            ExitCode::FAILURE
        }
    }
}
