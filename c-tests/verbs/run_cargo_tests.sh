#!/usr/bin/env bash
# Runs cargo tests that look for a cdylib next to their own deps/ directory
# (target/debug/libuct.so, target/debug/libuct_verbs_standin.so): builds
# those libraries first, in the same profile and target directory, so the
# tests also pass on a fresh clone where nothing ran `cargo build` before
# (`cargo test` builds only the rlib the tests link).
#
# usage: run_cargo_tests.sh CARGO MANIFEST PACKAGE [CARGO_TEST_ARGS...]
set -euo pipefail
cargo=${1:?usage: run_cargo_tests.sh CARGO MANIFEST PACKAGE [CARGO_TEST_ARGS...]}
manifest=${2:?}
package=${3:?}
shift 3
"$cargo" build --manifest-path "$manifest" -p "$package" --lib
exec "$cargo" test --manifest-path "$manifest" -p "$package" "$@"
