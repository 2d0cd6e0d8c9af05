#!/usr/bin/env bash
# The Rust failover tests (purge op_info per kind, parameter checks, the
# in-process cut/purge/replay on four soft devices, the engine) and the
# destroyed-ep tests (tombstones freed at iface close) built with
# LeakSanitizer (nightly rustc, -Zsanitizer=leak) and run one at a time: every
# test closes its eps, ifaces, mds and workers, so LeakSanitizer must report
# nothing at exit beyond what lsan.supp names (handler arguments the tests
# leak on purpose). Skipped (77) without a nightly toolchain.
#
# usage: rust_lsan.sh <source dir> <cargo target dir>
set -u -o pipefail

src=${1:?usage: rust_lsan.sh <source dir> <cargo target dir>}
target_dir=${2:?usage: rust_lsan.sh <source dir> <cargo target dir>}
readonly TESTS=(failover_purge failover_rc_checks failover_rc failover_upstream failover_engine rc_ep_destroyed)
readonly TRIPLE=x86_64-unknown-linux-gnu

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "rust_lsan: no nightly toolchain (rustup toolchain install nightly); skipped" >&2
    exit 77
fi
if [[ $(uname -m) != x86_64 ]]; then
    echo "rust_lsan: LeakSanitizer builds are set up for $TRIPLE only; skipped" >&2
    exit 77
fi

cd "$src" || exit 1
test_args=()
for t in "${TESTS[@]}"; do
    test_args+=(--test "$t")
done
# The sanitizer needs an explicit --target (it must not reach build scripts).
export RUSTFLAGS="-Zsanitizer=leak"
export CARGO_TARGET_DIR=$target_dir
# Full allocation stacks (the fast unwinder stops at frames without a frame
# pointer) so that the suppressions see the test frames.
here=$(dirname "$(readlink -f "$0")")
export LSAN_OPTIONS="exitcode=23:fast_unwind_on_malloc=0:print_suppressions=1:suppressions=$here/lsan.supp"
if ! cargo +nightly test -j2 --target "$TRIPLE" "${test_args[@]}" -- --test-threads=1; then
    echo "rust_lsan: a test failed or LeakSanitizer reported a leak (see above)" >&2
    exit 1
fi
echo "rust_lsan: ${TESTS[*]} passed under LeakSanitizer with no leak"
