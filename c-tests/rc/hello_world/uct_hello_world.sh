#!/usr/bin/env bash
# Harness for UCX 1.13.1's own examples/uct_hello_world.c, which is NOT part of
# this repository: it is taken unchanged from Debian's `ucx` source package
# when the tests run, built against our library and against Debian's UCX,
# and run between two processes.
#
#   uct_hello_world.sh prepare --cache DIR --out DIR --prefix DIR --libdir NAME
#                              [--system-include DIR] [--system-libdir DIR] [--cc CC]
#       Fetches the example into DIR (once; later runs reuse it) and builds
#         OUT/uct_hello_world_ours  against <prefix>/include and <prefix>/<libdir>
#                                   (our installed headers and library),
#         OUT/uct_hello_world_ucx   against the system's UCX headers and
#                                   libuct/libucs (Debian's libucx-dev).
#
#   uct_hello_world.sh run --binary FILE --mode i|b|z --tl TL --dev DEV
#                          [--lib-path DIR] [--expect-lib-dir DIR] [--size N] [--timeout S]
#       Runs a server and a client (127.0.0.1, a free port) with
#       `-<mode> -t TL -d DEV`, LD_LIBRARY_PATH=DIR if given, and checks that
#       the server received the client's string. --expect-lib-dir: the loader
#       must resolve libuct.so.0 and libucs.so.0 inside DIR. --server-env /
#       --client-env VAR=VALUE (repeatable): set for that process only (two
#       processes on different libraries: c-tests/thirdparty's mixed pairs).
set -euo pipefail

readonly EXAMPLE_FILES=(examples/uct_hello_world.c examples/hello_world_util.h)
# shellcheck source=../../common/ucx_debian_source.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../common/ucx_debian_source.sh"
# shellcheck source=../../common/server_port.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../common/server_port.sh"

die() {
    echo "uct_hello_world.sh: $*" >&2
    exit 1
}

# --- prepare -------------------------------------------------------------------

# A uct/ or ucs/ header missing from `include_dir` would be taken silently
# from /usr/include, and the "ours" build would then test UCX's headers.
check_header_origin() {
    local cc=$1 include_dir=$2 source=$3
    local foreign
    # -M lists the dependencies on continued lines: one path per line.
    foreign=$("$cc" -M -I"$include_dir" "$source" | tr -s ' \\\n' '\n' |
              grep -E '/(uct|ucs)/' | grep -v "^$include_dir/" || true)
    if [[ -n "$foreign" ]]; then
        die "the build against $include_dir includes headers from elsewhere:"$'\n'"$foreign"
    fi
}

prepare() {
    local cache="" out="" prefix="" libdir="" system_include="/usr/include"
    local system_libdir="" cc="${CC:-cc}"
    while [[ $# -gt 0 ]]; do
        case $1 in
        --cache) cache=$2 ;;
        --out) out=$2 ;;
        --prefix) prefix=$2 ;;
        --libdir) libdir=$2 ;;
        --system-include) system_include=$2 ;;
        --system-libdir) system_libdir=$2 ;;
        --cc) cc=$2 ;;
        *) die "prepare: unknown option $1" ;;
        esac
        shift 2
    done
    [[ -n "$cache" && -n "$out" && -n "$prefix" && -n "$libdir" ]] ||
        die "prepare needs --cache, --out, --prefix and --libdir"
    mkdir -p "$out"
    local src
    src=$(ucx_source_files "$cache" examples "${EXAMPLE_FILES[@]}")
    local example="$src/examples/uct_hello_world.c"
    local our_include="$prefix/include" our_lib="$prefix/$libdir"
    [[ -f "$our_include/uct/api/uct.h" ]] || die "no installed headers in $our_include"
    [[ -e "$our_lib/libuct.so.0" ]] || die "no installed libuct.so.0 in $our_lib"

    check_header_origin "$cc" "$our_include" "$example"
    echo "building $out/uct_hello_world_ours (our headers and library)"
    "$cc" -O2 -g -o "$out/uct_hello_world_ours" "$example" -I"$our_include" \
        -L"$our_lib" -Wl,-rpath,"$our_lib" -luct -lucs
    [[ -f "$system_include/uct/api/uct.h" ]] || die "no UCX headers in $system_include (libucx-dev)"
    local system_link=(-luct -lucs)
    [[ -n "$system_libdir" ]] && system_link=(-L"$system_libdir" "${system_link[@]}")
    echo "building $out/uct_hello_world_ucx (the system's UCX headers and libraries)"
    "$cc" -O2 -g -o "$out/uct_hello_world_ucx" "$example" -I"$system_include" "${system_link[@]}"
}

# --- run -----------------------------------------------------------------------

# The example's test string: `size - 1` letters A..Z repeating, then NUL.
expected_string() {
    local size=$1 s=""
    while ((${#s} < size - 1)); do
        s+=ABCDEFGHIJKLMNOPQRSTUVWXYZ
    done
    printf '%s' "${s:0:size-1}"
}

# libucs.so.0 is our libuct.so.0 under a second name, so the loader maps it
# once and ldd may list only libuct.so.0; any UCX library (libuc*) it lists
# must come from `lib_dir`.
check_resolved_lib() {
    local binary=$1 want name path
    want=$(realpath "$2")
    local resolved
    resolved=$(ldd "$binary" | awk '$1 ~ /^libuc[a-z]*\.so/ { print $1, $3 }')
    grep -q '^libuct\.so\.0 ' <<<"$resolved" || die "$binary does not load libuct.so.0"
    while read -r name path; do
        [[ "$(dirname "$(realpath "$path")")" == "$want" ]] ||
            die "$binary loads $name from $path, expected it from $want"
    done <<<"$resolved"
}

run() {
    local binary="" mode="" tl="" dev="" lib_path="" expect_lib_dir="" size=16 limit=60
    local -a server_env=() client_env=()
    while [[ $# -gt 0 ]]; do
        case $1 in
        --binary) binary=$2 ;;
        --mode) mode=$2 ;;
        --tl) tl=$2 ;;
        --dev) dev=$2 ;;
        --lib-path) lib_path=$2 ;;
        --expect-lib-dir) expect_lib_dir=$2 ;;
        --size) size=$2 ;;
        --timeout) limit=$2 ;;
        --server-env) server_env+=("$2") ;;
        --client-env) client_env+=("$2") ;;
        *) die "run: unknown option $1" ;;
        esac
        shift 2
    done
    [[ -x "$binary" ]] || die "no program $binary (did the hello_world_prepare test pass?)"
    local func
    case $mode in
    i) func=uct_ep_am_short ;;
    b) func=uct_ep_am_bcopy ;;
    z) func=uct_ep_am_zcopy ;;
    *) die "--mode must be i, b or z" ;;
    esac
    [[ -n "$tl" && -n "$dev" ]] || die "run needs --tl and --dev"
    [[ "$size" =~ ^[0-9]+$ && $size -ge 2 ]] || die "--size must be an integer >= 2"

    if [[ -n "$lib_path" ]]; then
        export LD_LIBRARY_PATH="$lib_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    if [[ -n "$expect_lib_dir" ]]; then
        check_resolved_lib "$binary" "$expect_lib_dir"
    fi

    local logs
    logs=$(mktemp -d "${TMPDIR:-/tmp}/uct_hello_world.XXXXXX")
    local port args server=""

    show_logs() {
        local f
        for f in server.out server.err client.out client.err; do
            [[ -f "$logs/$f" ]] || continue
            echo "----- $f -----"
            cat "$logs/$f"
        done
    }
    fail() {
        if [[ -n "$server" ]]; then
            kill "$server" 2>/dev/null || true
            wait "$server" 2>/dev/null || true
        fi
        show_logs
        rm -rf "$logs"
        die "$*"
    }

    # The free port is only free when it was probed: if another process takes
    # it before the server binds, the server says so and we try another one.
    local attempt listening
    for attempt in 1 2 3 4 5; do
        port=$(free_tcp_port)
        args=(-"$mode" -t "$tl" -d "$dev" -p "$port" -s "$size")
        echo "server: $binary ${args[*]}"
        env "${server_env[@]}" timeout -k 5 "$limit" "$binary" "${args[@]}" \
            >"$logs/server.out" 2>"$logs/server.err" &
        server=$!
        listening=0
        wait_listening "$server" "$port" 200 && listening=1
        ((listening)) && break
        if kill -0 "$server" 2>/dev/null; then
            fail "the server did not listen on port $port within 20 s"
        fi
        wait "$server" 2>/dev/null || true
        server=""
        grep -q "open server socket" "$logs/server.err" ||
            fail "the server exited before listening on port $port"
        echo "port $port was taken (attempt $attempt), trying another"
    done
    ((listening)) || fail "no free port for the server after $attempt attempts"

    echo "client: $binary ${args[*]} -n 127.0.0.1"
    local client_status=0
    env "${client_env[@]}" timeout -k 5 "$limit" "$binary" "${args[@]}" -n 127.0.0.1 \
        >"$logs/client.out" 2>"$logs/client.err" || client_status=$?
    local server_status=0
    wait "$server" || server_status=$?

    # The example exits 0 also when it gives up (UNSUPPORTED: no such
    # transport, message over the limit), so success is read from the output.
    [[ $client_status -eq 0 ]] || fail "the client exited with status $client_status (124: timeout)"
    [[ $server_status -eq 0 ]] || fail "the server exited with status $server_status (124: timeout)"
    grep -qF "Using $tl/$dev" "$logs/client.out" || fail "the client did not select $tl/$dev"
    grep -qF "Using $tl/$dev" "$logs/server.out" || fail "the server did not select $tl/$dev"
    local expected
    expected=$(expected_string "$size")
    local line
    for line in "[callback] $func sent $expected ($size bytes)" "[main] $func sent $expected ($size bytes)"; do
        grep -qF -- "$line" "$logs/server.out" ||
            fail "the server did not print: ${line:0:120}$( ((${#line} > 120)) && echo ...)"
    done
    if grep -qF "UCT TEST SUCCESS" "$logs/client.out"; then
        fail "the client claims to have received a message it never should"
    fi
    echo "OK: the server received the client's $size-byte message via $func on $tl/$dev"
    rm -rf "$logs"
}

[[ $# -ge 1 ]] || die "usage: uct_hello_world.sh prepare|run [options] (see the header)"
command=$1
shift
case $command in
prepare) prepare "$@" ;;
run) run "$@" ;;
*) die "unknown command $command" ;;
esac
