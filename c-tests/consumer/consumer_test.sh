#!/usr/bin/env bash
# consumer_test.sh <layout|pkgconfig|cmake> <prefix> <libdir> <includedir> <work dir>
# Checks the installed tree the way a UCX user meets it. Environment (set by
# c-tests/consumer/CMakeLists.txt): CC, CMAKE, PKG_CONFIG, SMOKE_SOURCE,
# CONSUMER_PROJECT, UCX_EXPECTED_VERSION.
set -euo pipefail

mode=$1
prefix=$2
libdir=$prefix/$3
includedir=$prefix/$4
work=$5
installed_lib=$libdir/libuct.so.0

fail() {
    echo "consumer_test ($mode): FAIL: $*" >&2
    exit 1
}

rm -rf "$work"
mkdir -p "$work"

check_layout() {
    [[ -f $libdir/libuct.so.0.0.0 && ! -L $libdir/libuct.so.0.0.0 ]] ||
        fail "$libdir/libuct.so.0.0.0 is not a regular file"
    local name
    for name in libuct.so.0 libuct.so libucs.so.0 libucs.so; do
        [[ -L $libdir/$name ]] || fail "$libdir/$name is not a symlink"
        [[ $(readlink "$libdir/$name") == libuct.so.0.0.0 ]] ||
            fail "$libdir/$name points at $(readlink "$libdir/$name"), not libuct.so.0.0.0"
    done
    local soname
    soname=$(objdump -p "$libdir/libuct.so.0.0.0" | awk '$1 == "SONAME" { print $2 }')
    [[ $soname == libuct.so.0 ]] || fail "soname is '$soname', expected libuct.so.0"
    # The symbols UCT callers bind to must be exported (dynamic symbol table).
    # (Read nm's output whole: `nm | grep -q` under pipefail fails at random
    # when grep exits early and nm gets SIGPIPE.)
    local exported symbol
    exported=$(nm -D --defined-only "$libdir/libuct.so.0.0.0" | awk '{ print $NF }')
    for symbol in uct_query_components uct_md_open uct_worker_create \
        ucs_async_context_create ucs_status_string; do
        grep -qx "$symbol" <<<"$exported" || fail "$symbol is not exported"
    done
    local file
    for file in "$includedir/uct/api/uct.h" \
        "$libdir/pkgconfig/ucx-uct.pc" "$libdir/pkgconfig/ucx-ucs.pc" \
        "$libdir/cmake/ucx/ucx-config.cmake" "$libdir/cmake/ucx/ucx-config-version.cmake"; do
        [[ -f $file ]] || fail "$file is not installed"
    done
    # Installed programs find the library through their relative RPATH.
    run_consumer "$prefix/bin/uct_smoke"
    echo "consumer_test: installed layout OK under $prefix"
}

# Runs a consumer binary and asserts our installed library served it.
run_consumer() {
    local binary=$1
    shift
    echo "+ $binary --expect-lib $installed_lib"
    env "$@" "$binary" --expect-lib "$installed_lib" || fail "$binary failed"
    # Built against us, it must need no other UCX library.
    local needed
    needed=$(objdump -p "$binary" | awk '$1 == "NEEDED" && $2 ~ /^libuc/ { print $2 }' | sort -u | tr '\n' ' ')
    [[ $needed == "libuct.so.0 " ]] || fail "$binary needs '$needed', expected only libuct.so.0"
}

check_pkgconfig() {
    export PKG_CONFIG_PATH=$libdir/pkgconfig
    local version cflags libs
    version=$("$PKG_CONFIG" --modversion ucx-uct) || fail "pkg-config does not find ucx-uct"
    cflags=$("$PKG_CONFIG" --cflags ucx-uct)
    libs=$("$PKG_CONFIG" --libs ucx-uct)
    echo "pkg-config ucx-uct $version: $cflags $libs"
    [[ $version == "$UCX_EXPECTED_VERSION" ]] ||
        fail "ucx-uct.pc says version $version, the headers $UCX_EXPECTED_VERSION"
    [[ $cflags == *"-I$includedir"* ]] || fail "cflags '$cflags' do not name $includedir"
    [[ $libs == *"-L$libdir"* && $libs == *-luct* && $libs == *-lucs* ]] ||
        fail "libs '$libs' lack -L$libdir -luct -lucs"
    # The installed headers must be complete: none may come from elsewhere.
    # shellcheck disable=SC2086
    bash "$(dirname "$SMOKE_SOURCE")/check_header_origin.sh" "$CC" "$includedir" \
        "$SMOKE_SOURCE" $cflags || fail "installed headers are incomplete"
    # Word splitting of the flags is intended: that is how Makefiles use them.
    # shellcheck disable=SC2086
    "$CC" -std=c99 -Wall -Wextra -Werror -o "$work/app_pkgconfig" "$SMOKE_SOURCE" \
        $cflags $libs -ldl || fail "compiling with pkg-config flags failed"
    # pkg-config gives no rpath: users of a non-system prefix set LD_LIBRARY_PATH.
    run_consumer "$work/app_pkgconfig" "LD_LIBRARY_PATH=$libdir"
    echo "consumer_test: pkg-config consumer OK"
}

check_cmake() {
    "$CMAKE" -S "$CONSUMER_PROJECT" -B "$work/build" -DCMAKE_C_COMPILER="$CC" \
        -DCMAKE_PREFIX_PATH="$prefix" -DSMOKE_SOURCE="$SMOKE_SOURCE" |
        tee "$work/configure.log" || fail "configuring the consumer project failed"
    grep -q "UCX $UCX_EXPECTED_VERSION from $libdir/cmake/ucx" "$work/configure.log" ||
        fail "find_package(UCX) did not pick the package under $prefix"
    "$CMAKE" --build "$work/build" || fail "building the consumer project failed"
    # CMake puts the library directory in the build RPATH: no environment needed.
    run_consumer "$work/build/app"

    # A component this package does not have must make find_package(REQUIRED) fail.
    if "$CMAKE" -S "$CONSUMER_PROJECT" -B "$work/build-ucp" -DCMAKE_C_COMPILER="$CC" \
        -DCMAKE_PREFIX_PATH="$prefix" -DSMOKE_SOURCE="$SMOKE_SOURCE" \
        "-DUCX_COMPONENTS=uct;ucs;ucp" >"$work/configure-ucp.log" 2>&1; then
        fail "find_package(UCX REQUIRED COMPONENTS ucp) succeeded, but there is no ucp"
    fi
    grep -q "component 'ucp' is not provided" "$work/configure-ucp.log" ||
        fail "find_package(UCX ... ucp) failed without saying why (see $work/configure-ucp.log)"
    echo "consumer_test: CMake consumer OK"
}

case $mode in
layout) check_layout ;;
pkgconfig) check_pkgconfig ;;
cmake) check_cmake ;;
*) fail "unknown mode" ;;
esac
