#!/usr/bin/env bash
# UCX 1.13.1's own gtest suite for UCT, run on our library. Nothing of UCX is
# in this repository: the source comes from Debian's `ucx` source package
# (Debian's patches applied by dpkg-source) when the tests run.
#
#   ucx_gtest.sh build --out DIR [--cache-root DIR] [--jobs N] [--cc CC] [--cxx CXX]
#       Builds UCX (libraries) and the UCT part of its gtest (the test objects
#       of common/, uct/ and the rc/ib-related uct/ib/ files) once per source
#       package version into CACHE-ROOT/<version>/ (default
#       /var/cache/uct-ucx-gtest, or $UCT_UCX_GTEST_CACHE), then links
#         OUT/gtest-uct       those objects against UCX's libraries, with
#                             OUT/libuct_ib_stub.so in place of libuct_ib.so
#                             (ib_stub.c: the UCX-internal IB functions some
#                             test objects reference; each aborts if called),
#                             so that it starts with our libuct.so.0 preloaded
#       The cache entry is used only when its `.complete` marker, written as
#       the last step, names the same build recipe; any other state of the
#       entry is removed and rebuilt.
#
#   ucx_gtest.sh run ARGS...
#       run_groups.py ARGS... (see its header): the group runner.
set -euo pipefail

readonly UCX_UPSTREAM_VERSION="1.13.1"
readonly UCX_SOURCE_VERSION="$UCX_UPSTREAM_VERSION-1"
readonly HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# UCX's configure: IB verbs with mlx5 direct verbs (HAVE_MLX5_DV, HAVE_DEVX),
# the rc/ud/dc transports, rdmacm; no GPU or optional kernel modules.
# -O1 keeps the build short on 2 cores.
readonly CONFIGURE_FLAGS=(
    --enable-gtest --enable-mt --enable-cma --with-verbs --with-rc --with-ud --with-dc
    --with-mlx5-dv --with-rdmacm --with-dm --without-cuda --without-rocm --without-java
    --without-go --without-knem --without-xpmem --without-gdrcopy --without-ugni
    --enable-compiler-opt=1 --disable-static
)
# The gtest sources of the UCT groups, relative to test/gtest (the full
# binary also has UCS, UCM and UCP tests, which this driver does not run).
readonly GTEST_SOURCES=(
    common/main.cc common/test_gtest_cmn.cc common/mem_buffer.cc common/test_helpers.cc
    common/test_watchdog.cc common/test_perf.cc common/test.cc
    uct/test_amo.cc uct/test_amo_add_xor.cc uct/test_amo_and_or.cc uct/test_amo_cswap.cc
    uct/test_amo_fadd_fxor.cc uct/test_amo_fand_for.cc uct/test_amo_swap.cc
    uct/test_event.cc uct/test_fence.cc uct/test_flush.cc uct/test_many2one_am.cc
    uct/test_md.cc uct/test_mm.cc uct/test_mem.cc uct/test_p2p_am.cc uct/test_p2p_err.cc
    uct/test_p2p_mix.cc uct/test_p2p_rma.cc uct/test_pending.cc uct/test_progress.cc
    uct/test_uct_ep.cc uct/test_uct_perf.cc uct/v2/test_uct_query.cc uct/test_zcopy_comp.cc
    uct/uct_p2p_test.cc uct/uct_test.cc uct/test_stats.cc uct/test_peer_failure.cc
    uct/test_tag.cc uct/tcp/test_tcp.cc
    uct/ib/test_ib.cc uct/ib/test_ib_md.cc uct/ib/test_cq_moderation.cc
    uct/ib/test_ib_xfer.cc uct/ib/test_ib_pkey.cc uct/ib/test_ib_event.cc
    uct/ib/test_devx.cc uct/ib/test_rc.cc
)
# Sources that gcc 12 refuses at -O1 -Werror, with the flags that build them:
# test_tag.cc (a -Wmaybe-uninitialized false positive at -O1) at -O2.
declare -A EXTRA_CXXFLAGS=([uct/test_tag.cc]="-O2")

die() {
    echo "ucx_gtest.sh: $*" >&2
    exit 1
}

# shellcheck source=c-tests/common/ucx_source_package.sh
source "$HERE/../common/ucx_source_package.sh"

# What the cache entry was built with: a change to any of it rebuilds.
build_recipe() {
    printf '%s\n' "ucx=$UCX_SOURCE_VERSION" "${CONFIGURE_FLAGS[@]}" "${GTEST_SOURCES[@]}"
    local source
    for source in "${!EXTRA_CXXFLAGS[@]}"; do
        echo "$source: ${EXTRA_CXXFLAGS[$source]}"
    done | sort
    echo "cc=$($CC --version | head -n1) cxx=$($CXX --version | head -n1)"
}

object_of() {
    local source=$1
    echo "$(dirname "$source")/gtest-$(basename "${source%.cc}").o"
}

# Builds UCX and the gtest objects in DIR (empty or absent).
build_ucx() {
    local dir=$1 jobs=$2
    local started=$SECONDS
    mkdir -p "$dir"
    ucx_source_package_fetch "$dir/fetch" "$UCX_SOURCE_VERSION" "$UCX_UPSTREAM_VERSION" ||
        die "could not fetch Debian's ucx source package"
    # The cache entry and expected-failures.txt are for this exact package.
    [[ "$UCX_SOURCE_DSC_VERSION" == "$UCX_SOURCE_VERSION" ]] ||
        die "the archive has ucx $UCX_SOURCE_DSC_VERSION, not $UCX_SOURCE_VERSION"
    mv "$UCX_SOURCE_TREE" "$dir/src"
    rm -rf "$dir/fetch"
    local src="$dir/src"
    echo "autogen + configure (logs in $dir)"
    (cd "$src" && ./autogen.sh) >"$dir/autogen.log" 2>&1 ||
        { tail -n 30 "$dir/autogen.log" >&2; die "autogen.sh failed"; }
    (cd "$src" && CC=$CC CXX=$CXX ./configure "${CONFIGURE_FLAGS[@]}") >"$dir/configure.log" 2>&1 ||
        { tail -n 30 "$dir/configure.log" >&2; die "configure failed"; }
    local define
    for define in HAVE_IB HAVE_MLX5_DV HAVE_DEVX HAVE_TL_RC; do
        grep -q "^#define $define 1" "$src/config.h" ||
            die "configure did not enable $define (are libibverbs-dev and librdmacm-dev installed?)"
    done
    echo "building UCX's libraries (make -j$jobs)"
    local library_dir
    for library_dir in src/ucm src/ucs src/uct src/ucp src/tools/perf/lib; do
        make -C "$src/$library_dir" -j"$jobs" >>"$dir/make-src.log" 2>&1 ||
            { grep -m 20 -B 2 -A 8 -E 'error|Error' "$dir/make-src.log" >&2; die "building UCX's $library_dir failed"; }
    done
    echo "building the UCT gtest objects (${#GTEST_SOURCES[@]} sources)"
    make -C "$src/test/gtest/common/googletest" -j"$jobs" >"$dir/make-gtest.log" 2>&1 ||
        { tail -n 30 "$dir/make-gtest.log" >&2; die "building googletest failed"; }
    local objects=() source
    for source in "${GTEST_SOURCES[@]}"; do
        [[ -n "${EXTRA_CXXFLAGS[$source]:-}" ]] || objects+=("$(object_of "$source")")
    done
    make -C "$src/test/gtest" -j"$jobs" "${objects[@]}" >>"$dir/make-gtest.log" 2>&1 ||
        { grep -m 20 -B 2 -A 8 -E 'error' "$dir/make-gtest.log" >&2; die "building the gtest objects failed"; }
    for source in "${!EXTRA_CXXFLAGS[@]}"; do
        make -C "$src/test/gtest" "$(object_of "$source")" \
            CXXFLAGS="${EXTRA_CXXFLAGS[$source]}" >>"$dir/make-gtest.log" 2>&1 ||
            { tail -n 30 "$dir/make-gtest.log" >&2; die "building $source failed"; }
    done
    echo "UCX and its UCT gtest objects built in $((SECONDS - started)) s"
}

link_gtest() {
    local src=$1 out=$2
    local gtest_dir="$src/test/gtest"
    echo "building $out/libuct_ib_stub.so"
    $CC -O2 -g -Wall -Wextra -Werror -fPIC -shared -o "$out/libuct_ib_stub.so" "$HERE/ib_stub.c"
    local objects=() source
    for source in "${GTEST_SOURCES[@]}"; do
        objects+=("$gtest_dir/$(object_of "$source")")
    done
    # What the gtest's Makefile links, libuct_ib.so aside: UCX's convenience
    # archives (perf library, vfs socket), googletest, UCX's shared libraries.
    local archives=(
        "$src/src/tools/perf/lib/.libs/libucxperf.a" "$src/src/ucs/vfs/sock/.libs/libucs_vfs_sock.a"
        "$gtest_dir/common/googletest/.libs/libgtest.a"
    )
    local libraries=(
        "$src/src/ucp/.libs/libucp.so" "$src/src/uct/.libs/libuct.so"
        "$src/src/ucs/.libs/libucs.so" "$src/src/ucm/.libs/libucm.so"
    )
    local file rpath=()
    for file in "${objects[@]}" "${archives[@]}" "${libraries[@]}"; do
        [[ -f "$file" ]] || die "missing $file (cache entry incomplete?)"
    done
    for file in "${libraries[@]}"; do
        rpath+=(-Wl,-rpath,"$(dirname "$file")")
    done
    echo "linking $out/gtest-uct (UCX's libraries, the IB stub in place of libuct_ib.so)"
    $CXX -o "$out/gtest-uct" "${objects[@]}" "${archives[@]}" "${libraries[@]}" \
        "$out/libuct_ib_stub.so" -Wl,-rpath,"$out" "${rpath[@]}" \
        -Wl,-dynamic-list-data -fopenmp -libverbs -lmlx5 -lrdmacm -lpthread -ldl -lrt ||
        die "linking the gtest failed: a symbol above that libuct_ib.so defines belongs in ib_stub.c"
}

default_cache_root() {
    if [[ -n "${UCT_UCX_GTEST_CACHE:-}" ]]; then
        echo "$UCT_UCX_GTEST_CACHE"
    elif mkdir -p /var/cache/uct-ucx-gtest 2>/dev/null && [[ -w /var/cache/uct-ucx-gtest ]]; then
        echo /var/cache/uct-ucx-gtest
    else
        echo "${XDG_CACHE_HOME:-$HOME/.cache}/uct-ucx-gtest"
    fi
}

build() {
    local out="" cache_root="" jobs=2
    CC=${CC:-cc}
    CXX=${CXX:-c++}
    while [[ $# -gt 0 ]]; do
        case $1 in
        --out) out=$2 ;;
        --cache-root) cache_root=$2 ;;
        --jobs) jobs=$2 ;;
        --cc) CC=$2 ;;
        --cxx) CXX=$2 ;;
        *) die "build: unknown option $1" ;;
        esac
        shift 2
    done
    [[ -n "$out" ]] || die "build needs --out"
    [[ -n "$cache_root" ]] || cache_root=$(default_cache_root)
    mkdir -p "$out" "$cache_root"
    out=$(cd "$out" && pwd)
    local entry="$cache_root/$UCX_SOURCE_VERSION"
    # Concurrent runs share the cache: one builder at a time; a run that
    # waited here finds the entry complete.
    exec 9>"$cache_root/.lock"
    flock 9
    local recipe
    recipe=$(build_recipe)
    if [[ -f "$entry/.complete" ]] && [[ "$(cat "$entry/.complete")" == "$recipe" ]]; then
        echo "using the cached UCX $UCX_SOURCE_VERSION build in $entry"
    else
        if [[ -e "$entry" ]]; then
            echo "removing $entry (an unfinished build or another recipe)"
            rm -rf "$entry"
        fi
        build_ucx "$entry" "$jobs"
        echo "$recipe" >"$entry/.complete.tmp"
        mv "$entry/.complete.tmp" "$entry/.complete"
    fi
    link_gtest "$entry/src" "$out"
    flock -u 9
}

[[ $# -ge 1 ]] || die "usage: ucx_gtest.sh build|run [options] (see the header)"
command=$1
shift
case $command in
build) build "$@" ;;
run) exec python3 "$HERE/run_groups.py" "$@" ;;
*) die "unknown command $command" ;;
esac
