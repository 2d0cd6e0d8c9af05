#!/usr/bin/env bash
# Every check of the project, in the order CI runs them (.ci/run):
#   cargo fmt --check, cargo clippy -D warnings, CMake configure + build
#   (library through cargo, C tests), ctest, cargo build, cargo test, the
#   fuzz targets (fuzz/run.sh).
# Installs missing prerequisites first (Debian packages, rustup components).
# Runs all steps even after a failure, then prints one summary line; the exit
# status is non-zero if any step failed.
#
# Environment: BUILD_DIR (default build/test-all), JOBS (default 2),
#              FUZZ_SECONDS (per fuzz target, default 60),
#              FRESH=1 to start from an empty build directory.
set -uo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root" || exit 1
# shellcheck source=scripts/lib/prerequisites.sh
source scripts/lib/prerequisites.sh

build_dir=${BUILD_DIR:-build/test-all}
jobs=${JOBS:-2}
log_dir=$build_dir/test-all-logs

passed=()
failed=()
skipped=()
started=$SECONDS

# run_step <name> <command...>: runs and records the result.
run_step() {
    local name=$1
    shift
    uct_log "$name: $*"
    local step_start=$SECONDS
    if "$@"; then
        passed+=("$name")
        echo "--- $name: ok ($((SECONDS - step_start))s)"
        return 0
    fi
    failed+=("$name")
    echo "--- $name: FAILED ($((SECONDS - step_start))s)"
    return 1
}

if ! run_step prerequisites uct_ensure_prerequisites --for-tests; then
    echo "test-all: FAIL (could not install prerequisites)"
    exit 1
fi

[[ ${FRESH:-0} == 1 ]] && rm -rf "$build_dir"
mkdir -p "$log_dir"

run_step fmt cargo fmt --all -- --check
run_step clippy cargo clippy --workspace --all-targets -- -D warnings
# The CMake flow first, as a user runs it on a fresh clone (cmake, build,
# ctest with no cargo build before it): nothing cargo leaves in target/
# can hide a test that only works after one.
ctest_summary=""
ctest_note=""
if run_step cmake-configure cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release; then
    # Keep going past a target that fails to build, so that the tests of
    # everything else still run and report (the summary still says FAIL).
    keep_going=-k
    grep -q "^CMAKE_GENERATOR:INTERNAL=Ninja" "$build_dir/CMakeCache.txt" && keep_going=-k0
    if ! run_step cmake-build cmake --build "$build_dir" -j "$jobs" -- "$keep_going"; then
        ctest_note=" (on a partial build: see cmake-build)"
    fi
    # Per-test timeouts are set by c-tests/; --timeout is the fallback.
    run_step ctest ctest --test-dir "$build_dir" --output-on-failure --timeout 900 \
        --output-log "$log_dir/ctest.log"
    ctest_summary=$(grep -E "tests passed, .* failed out of" "$log_dir/ctest.log" | tail -1)
else
    skipped+=(cmake-build ctest)
fi

# Some tests inspect the built shared object (target/debug/libuct.so), which
# `cargo test` alone does not link: build it first.
run_step cargo-build cargo build --workspace
# --no-fail-fast: one failing test binary must not hide the others' results.
run_step cargo-test cargo test --workspace --no-fail-fast
# Every cargo-fuzz target for a bounded time (FUZZ_SECONDS each, default 60);
# fails on a crash, skips with a message where no toolchain can build them.
run_step fuzz ./fuzz/run.sh "${FUZZ_SECONDS:-60}"

elapsed=$((SECONDS - started))
echo
echo "=== summary (${elapsed}s)"
echo "passed:  ${passed[*]:-none}"
echo "failed:  ${failed[*]:-none}"
[[ ${#skipped[@]} -gt 0 ]] && echo "skipped: ${skipped[*]} (an earlier step failed)"
[[ -n $ctest_summary ]] && echo "ctest:   $ctest_summary$ctest_note"
if [[ ${#failed[@]} -eq 0 ]]; then
    echo "test-all: PASS (${#passed[@]} steps)"
    exit 0
fi
echo "test-all: FAIL (${failed[*]})"
exit 1
