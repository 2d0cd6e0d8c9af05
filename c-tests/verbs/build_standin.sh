#!/usr/bin/env bash
# Builds the verbs stand-in (debug profile, cargo's own target directory, so
# the build `cargo build --workspace` / `cargo test` already made is reused)
# and copies it to OUTPUT when it changed.
#
# usage: build_standin.sh CARGO MANIFEST OUTPUT
set -euo pipefail
cargo=${1:?usage: build_standin.sh CARGO MANIFEST OUTPUT}
manifest=${2:?}
output=${3:?}

"$cargo" build --manifest-path "$manifest" -p uct-verbs-standin
metadata=$("$cargo" metadata --manifest-path "$manifest" --format-version 1 --no-deps)
target_dir=$(sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p' <<<"$metadata")
built=$target_dir/debug/libuct_verbs_standin.so
[[ -f $built ]] || { echo "build_standin.sh: $built was not built" >&2; exit 1; }
mkdir -p "$(dirname "$output")"
cmp -s "$built" "$output" 2>/dev/null || cp "$built" "$output"
