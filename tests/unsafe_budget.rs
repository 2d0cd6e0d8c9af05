//! The crate's `unsafe` stays in small cores (DESIGN.md §7, issue 20): at
//! most 300 `unsafe {}` blocks in src/ and 80 in src/api, the C entry
//! points. `#![deny(unsafe_op_in_unsafe_fn)]` in lib.rs makes every unsafe
//! operation sit in such a block, so the blocks are the whole count.

use std::path::Path;

const CRATE_BUDGET: usize = 300;
const API_BUDGET: usize = 80;

/// `unsafe {` blocks in the Rust files under `dir`, line comments left out.
fn unsafe_blocks(dir: &Path) -> usize {
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            count += unsafe_blocks(&path);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let text = std::fs::read_to_string(&path).expect("source file");
            count += text
                .lines()
                .map(|line| line.split("//").next().unwrap_or(""))
                .map(|code| code.matches("unsafe {").count())
                .sum::<usize>();
        }
    }
    count
}

#[test]
fn unsafe_blocks_stay_within_budget() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (crate_total, api) = (unsafe_blocks(&src), unsafe_blocks(&src.join("api")));
    println!("unsafe blocks: src/ {crate_total}, src/api {api}");
    assert!(crate_total > 0, "no source read from {}", src.display());
    assert!(
        crate_total <= CRATE_BUDGET,
        "src/ has {crate_total} unsafe blocks, budget {CRATE_BUDGET}"
    );
    assert!(
        api <= API_BUDGET,
        "src/api has {api} unsafe blocks, budget {API_BUDGET}"
    );
}
