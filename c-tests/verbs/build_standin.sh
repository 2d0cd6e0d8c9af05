#!/usr/bin/env bash
# Builds the verbs stand-in in release, in the cargo target directory where
# the CMake build already compiled libuct in release (so only the stand-in
# crate and its link are new work), and copies it to OUTPUT when it changed.
# Release because the stand-in runs the soft HCA engine: the suites run
# through it have the same timing as the plain soft HCA runs (a debug engine
# made rc_ops_loss's 10 s event-fd wait intermittently too short).
#
# usage: build_standin.sh CARGO MANIFEST CARGO_TARGET_DIR OUTPUT
set -euo pipefail
cargo=${1:?usage: build_standin.sh CARGO MANIFEST CARGO_TARGET_DIR OUTPUT}
manifest=${2:?}
target_dir=${3:?}
output=${4:?}

CARGO_TARGET_DIR=$target_dir "$cargo" build --release --manifest-path "$manifest" \
    -p uct-verbs-standin
built=$target_dir/release/libuct_verbs_standin.so
[[ -f $built ]] || { echo "build_standin.sh: $built was not built" >&2; exit 1; }
mkdir -p "$(dirname "$output")"
cmp -s "$built" "$output" 2>/dev/null || cp "$built" "$output"
