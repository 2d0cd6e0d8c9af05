#!/bin/sh
# Runs every fuzz target for a bounded time (default 60 s each), as CI does;
# exits non-zero when a target finds a crash (the input is left in
# fuzz/artifacts/<target>/).
#
# cargo-fuzz needs nightly-only compiler flags. With a nightly toolchain it
# uses that; otherwise it runs the stable toolchain with RUSTC_BOOTSTRAP=1
# (which unlocks those flags); if neither builds, it says so and exits 0:
# the seeded tests `cargo test --test wire_fuzz --test softhca_engine_fuzz`
# run the same checks on stable. cargo-fuzz is installed when missing.
#
# Environment: CARGO_TARGET_DIR (builds go to $CARGO_TARGET_DIR/fuzz).
set -eu
seconds="${1:-60}"
cd "$(dirname "$0")"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    if ! cargo install cargo-fuzz --locked; then
        echo "fuzz: SKIPPED (cannot install cargo-fuzz); run the seeded tests instead"
        exit 0
    fi
fi

target_dir=""
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
    target_dir="--target-dir=$CARGO_TARGET_DIR/fuzz"
fi

if cargo +nightly --version >/dev/null 2>&1; then
    toolchain="+nightly"
    bootstrap=""
else
    toolchain=""
    bootstrap="1"
    echo "fuzz: no nightly toolchain; building with stable and RUSTC_BOOTSTRAP=1"
fi

# Build first, so that a toolchain that cannot build fuzz targets is a skip
# with a reason rather than a failure.
# shellcheck disable=SC2086 # $toolchain / $target_dir are empty or one word
if ! RUSTC_BOOTSTRAP="$bootstrap" cargo $toolchain fuzz build $target_dir; then
    echo "fuzz: SKIPPED (this toolchain cannot build the fuzz targets); run the seeded tests instead"
    exit 0
fi

# api_sequence runs here only with FUZZ_API_SEQUENCE=1 (its long runs are
# made outside CI, issue 22): CI runs its seeded form, `cargo test --test
# api_sequence`, whose 300 sequences are the same every run.
for target in $(cargo fuzz list); do
    if [ "$target" = api_sequence ] && [ "${FUZZ_API_SEQUENCE:-0}" != 1 ]; then
        echo "fuzz: api_sequence skipped (FUZZ_API_SEQUENCE=1 runs it; its seeded test runs in cargo test)"
        continue
    fi
    echo "fuzz: $target for ${seconds}s"
    # api_sequence decodes one call from a few bytes: libFuzzer's slow
    # growth of the input length would keep it at one or two calls.
    extra=""
    if [ "$target" = api_sequence ]; then
        extra="-len_control=0 -max_len=256"
    fi
    # shellcheck disable=SC2086
    RUSTC_BOOTSTRAP="$bootstrap" cargo $toolchain fuzz run $target_dir "$target" -j1 -- \
        -max_total_time="$seconds" -max_len=4096 $extra
done
echo "fuzz: all targets clean"
