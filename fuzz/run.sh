#!/bin/sh
# Runs each fuzz target for a bounded time (default 60 s each), as CI does.
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`);
# without them it says so and exits 0: the seeded property test
# `cargo test --test wire_fuzz` runs the same checks on stable.
set -eu
seconds="${1:-60}"
cd "$(dirname "$0")"
if ! cargo +nightly --version >/dev/null 2>&1 || ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: SKIPPED (needs a nightly toolchain and cargo-fuzz); run 'cargo test --test wire_fuzz' instead"
    exit 0
fi
for target in $(cargo fuzz list); do
    echo "fuzz: $target for ${seconds}s"
    cargo +nightly fuzz run "$target" -j1 -- -max_total_time="$seconds" -max_len=2048
done
