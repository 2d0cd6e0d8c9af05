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
#   uct_hello_world.sh fetch --cache DIR
#       Only fetches (or finds cached) the example files and prints their
#       directory on the last line (c-tests/ucp builds ucp_client_server.c).
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
# shellcheck source=../../common/server_port.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../common/server_port.sh"

readonly UCX_UPSTREAM_VERSION="1.13.1"
readonly UCX_SOURCE_VERSION="$UCX_UPSTREAM_VERSION-1"
# c-tests/ucp takes ucp_client_server.c from the same cache (`fetch`).
readonly EXAMPLE_FILES=(uct_hello_world.c hello_world_util.h ucp_client_server.c ucp_util.h)

die() {
    echo "uct_hello_world.sh: $*" >&2
    exit 1
}

# --- prepare -------------------------------------------------------------------

# The Debian mirror this machine already uses (deb822 .sources or one-line
# sources.list), so the download goes where apt is allowed to go.
debian_mirror() {
    local file uri
    for file in /etc/apt/sources.list.d/*.sources; do
        [[ -r "$file" ]] || continue
        uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }' "$file")
        if [[ -n "$uri" ]]; then
            echo "${uri%/}"
            return
        fi
    done
    for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -r "$file" ]] || continue
        uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:\/\/.*\/debian\/?$/) { print $i; exit } }' "$file")
        if [[ -n "$uri" ]]; then
            echo "${uri%/}"
            return
        fi
    done
    echo "http://deb.debian.org/debian"
}

ensure_dpkg_source() {
    command -v dpkg-source >/dev/null && return
    if [[ $EUID -ne 0 ]]; then
        die "dpkg-source is missing (apt-get install dpkg-dev) and we are not root to install it"
    fi
    echo "installing dpkg-dev (apt-get source needs dpkg-source)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends dpkg-dev >/dev/null
}

# Downloads and unpacks the source package with a private apt configuration:
# the system's sources, lists and caches are neither read nor changed.
fetch_example() {
    local cache=$1
    local dest="$cache/ucx-$UCX_UPSTREAM_VERSION-examples"
    local name complete=1
    for name in "${EXAMPLE_FILES[@]}"; do
        [[ -f "$dest/$name" ]] || complete=0
    done
    if [[ -f "$dest/.complete" ]] && ((complete)); then
        echo "using cached $dest"
        return
    fi
    ensure_dpkg_source
    local work
    work=$(mktemp -d "$cache/fetch.XXXXXX")
    mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/src"
    local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    local signed_by=""
    [[ -r "$keyring" ]] && signed_by="[signed-by=$keyring] "
    echo "deb-src ${signed_by}$(debian_mirror) bookworm main" >"$work/sources.list"
    local apt_options=(
        -o "Dir::Etc::SourceList=$work/sources.list"
        -o "Dir::Etc::SourceParts=/dev/null"
        -o "Dir::State::Lists=$work/lists"
        -o "Dir::Cache=$work/cache"
    )
    # apt drops to the _apt user for downloads, which cannot write our temp dir.
    [[ $EUID -eq 0 ]] && apt_options+=(-o "APT::Sandbox::User=root")
    echo "fetching Debian source package ucx=$UCX_SOURCE_VERSION ($(cat "$work/sources.list"))"
    apt-get "${apt_options[@]}" -q update >"$work/update.log" 2>&1 ||
        { cat "$work/update.log" >&2; die "apt-get update (private deb-src list) failed"; }
    # The Debian revision we know first; if the archive moved to another
    # revision of the same upstream release, that one (checked below).
    if ! (cd "$work/src" && apt-get "${apt_options[@]}" -q source "ucx=$UCX_SOURCE_VERSION") \
        >"$work/source.log" 2>&1; then
        echo "ucx=$UCX_SOURCE_VERSION is not in the archive; trying its current ucx"
        (cd "$work/src" && apt-get "${apt_options[@]}" -q source ucx) >>"$work/source.log" 2>&1 ||
            { cat "$work/source.log" >&2; die "apt-get source ucx failed"; }
    fi
    local dsc_version
    dsc_version=$(awk '$1 == "Version:" { print $2; exit }' "$work"/src/ucx_*.dsc)
    [[ "$dsc_version" == "${UCX_UPSTREAM_VERSION}-"* ]] ||
        die "the archive's ucx is $dsc_version, not UCX $UCX_UPSTREAM_VERSION"
    local tree
    tree=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'ucx-*' | head -n1)
    [[ -n "$tree" ]] || die "apt-get source produced no ucx-* directory"
    rm -rf "$dest"
    mkdir -p "$dest"
    for name in "${EXAMPLE_FILES[@]}"; do
        [[ -f "$tree/examples/$name" ]] || die "the source package has no examples/$name"
        cp "$tree/examples/$name" "$dest/"
    done
    (cd "$dest" && sha256sum "${EXAMPLE_FILES[@]}" >SHA256SUMS)
    touch "$dest/.complete"
    rm -rf "$work"
    echo "$dsc_version" >"$dest/DEBIAN_VERSION"
    echo "cached ${EXAMPLE_FILES[*]} of ucx $dsc_version in $dest"
}

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

# Fetches (once) and checks the cached examples; prints their directory.
# Parallel CTest runs share the cache: one download at a time.
cached_examples() {
    local cache=$1
    mkdir -p "$cache"
    exec 9>"$cache/.lock"
    flock 9
    fetch_example "$cache" >&2
    flock -u 9
    local src="$cache/ucx-$UCX_UPSTREAM_VERSION-examples"
    (cd "$src" && sha256sum --quiet -c SHA256SUMS) || die "cached example in $src was modified"
    echo "$src"
}

fetch_only() {
    [[ $# -eq 2 && $1 == --cache ]] || die "usage: fetch --cache DIR"
    cached_examples "$2"
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
    src=$(cached_examples "$cache")
    local example="$src/uct_hello_world.c"
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

[[ $# -ge 1 ]] || die "usage: uct_hello_world.sh prepare|fetch|run [options] (see the header)"
command=$1
shift
case $command in
prepare) prepare "$@" ;;
fetch) fetch_only "$@" ;;
run) run "$@" ;;
*) die "unknown command $command" ;;
esac
