#!/usr/bin/env bash
# Harness for UCX 1.13.1's own examples/ucp_client_server.c (NOT part of this
# repository: taken unchanged from Debian's `ucx` source package at test time,
# c-tests/common/ucx_debian_source.sh), built against
# Debian's libucx-dev and run as a server and a client process with our
# library preloaded, so that UCX's libucp wires up through our connection
# manager (`rdmacm`) and our rc_mlx5.
#
#   ucp_client_server.sh prepare --cache DIR --out DIR [--cc CC]
#       Builds OUT/ucp_client_server.
#
#   ucp_client_server.sh run --binary FILE --preload LIB --mode stream|tag|am
#                            --size N [--iters N] [--listen IP] [--timeout S]
#                            [--server-dev DEV] [--client-dev DEV]
#       Runs the server (listening on --listen, default 127.0.0.1) and a
#       client connecting to it, both with LD_PRELOAD=LIB and UCX_LOG_LEVEL
#       =info, and checks: both exit 0 (the server is stopped after serving
#       one client), the server received every iteration with the right
#       content (the example prints the first and the last), and each side's
#       UCP lanes are rc_mlx5 only, first on the expected device (default
#       mlx5_0:1).
set -euo pipefail
readonly EXAMPLE_FILES=(examples/ucp_client_server.c examples/hello_world_util.h examples/ucp_util.h)
# shellcheck source=../common/ucx_debian_source.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/ucx_debian_source.sh"
# shellcheck source=../common/server_port.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/server_port.sh"
# shellcheck source=../common/pair_logs.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/pair_logs.sh"

die() {
    echo "ucp_client_server.sh: $*" >&2
    exit 1
}

prepare() {
    local cache="" out="" cc="${CC:-cc}"
    while [[ $# -gt 0 ]]; do
        case $1 in
        --cache) cache=$2 ;;
        --out) out=$2 ;;
        --cc) cc=$2 ;;
        *) die "prepare: unknown option $1" ;;
        esac
        shift 2
    done
    [[ -n "$cache" && -n "$out" ]] || die "prepare needs --cache and --out"
    local src
    src=$(ucx_source_files "$cache" ucp-examples "${EXAMPLE_FILES[@]}")
    mkdir -p "$out"
    echo "building $out/ucp_client_server from $src (Debian's UCX headers and libraries)"
    "$cc" -O2 -g -o "$out/ucp_client_server" "$src/examples/ucp_client_server.c" \
        -I"$src/examples" -lucp -lucs -luct
}

# The example's test string: `size - 1` letters A..Z repeating, then NUL.
expected_string() {
    python3 -c 'import sys; n = int(sys.argv[1]) - 1; print("".join(chr(65 + i % 26) for i in range(n)), end="")' "$1"
}

run() {
    local binary="" preload="" mode="" size="" iters=1 listen=127.0.0.1 limit=120
    local server_dev=mlx5_0:1 client_dev=mlx5_0:1
    while [[ $# -gt 0 ]]; do
        case $1 in
        --binary) binary=$2 ;;
        --preload) preload=$2 ;;
        --mode) mode=$2 ;;
        --size) size=$2 ;;
        --iters) iters=$2 ;;
        --listen) listen=$2 ;;
        --timeout) limit=$2 ;;
        --server-dev) server_dev=$2 ;;
        --client-dev) client_dev=$2 ;;
        *) die "run: unknown option $1" ;;
        esac
        shift 2
    done
    [[ -x "$binary" ]] || die "no program $binary (did ucp_client_server_prepare pass?)"
    [[ -f "$preload" ]] || die "no library $preload"
    [[ "$mode" =~ ^(stream|tag|am)$ ]] || die "--mode must be stream, tag or am"
    [[ "$size" =~ ^[0-9]+$ && $size -ge 2 ]] || die "--size must be an integer >= 2"

    local logs
    logs=$(mktemp -d "${TMPDIR:-/tmp}/ucp_client_server.XXXXXX")
    local server="" port args
    export LD_PRELOAD="$preload" UCX_LOG_LEVEL=info

    local attempt listening=0 waited
    for attempt in 1 2 3 4 5; do
        port=$(free_tcp_port)
        args=(-c "$mode" -s "$size" -i "$iters" -p "$port")
        echo "server: $binary ${args[*]} -l $listen"
        # Line-buffered: the server is killed after the client, its output
        # must be in the file by then.
        timeout -k 5 "$limit" stdbuf -oL "$binary" "${args[@]}" -l "$listen" >"$logs/server.out" 2>&1 &
        server=$!
        listening=0
        wait_listening "$server" "$port" 300 && listening=1
        ((listening)) && break
        kill -0 "$server" 2>/dev/null && fail "the server did not listen on port $port within 30 s"
        wait "$server" 2>/dev/null || true
        server=""
        grep -qi "address already in use\|busy" "$logs/server.out" || fail "the server exited before listening"
        echo "port $port was taken (attempt $attempt), trying another"
    done
    ((listening)) || fail "no free port for the server"

    echo "client: $binary ${args[*]} -a $listen"
    local client_status=0
    timeout -k 5 "$limit" "$binary" "${args[@]}" -a "$listen" >"$logs/client.out" 2>&1 || client_status=$?
    # The server serves clients until it is stopped: give it a moment to
    # print the last iteration, then stop it.
    local served=0
    for waited in $(seq 50); do
        grep -q "^Server: iteration #$iters\$" "$logs/server.out" && { served=1; break; }
        kill -0 "$server" 2>/dev/null || break
        sleep 0.1
    done
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=""

    [[ $client_status -eq 0 ]] || fail "the client exited with status $client_status (124: timeout)"
    ((served)) || fail "the server did not report iteration #$iters"
    # The pattern in a file: a 1 MiB command-line argument is too long.
    { expected_string "$size"; echo .; } | tr -d '\n' >"$logs/expected"
    echo >>"$logs/expected"
    local got
    got=$(grep -cxF -f "$logs/expected" "$logs/server.out" || true)
    local want=2
    ((iters == 1)) && want=1
    ((got == want)) || fail "the server printed the expected $size-byte content $got times, not $want"
    grep -q "UCP TEST SUCCESS" "$logs/server.out" || fail "the server did not report success"
    # Lanes: only rc_mlx5, and the first configuration of each side (the
    # one the connection manager's device decided) on its expected device.
    # Later ones may use every device: UCP (UCX_CM_USE_ALL_DEVICES=y) wires
    # up the other devices after the connection manager's phase.
    local side dev lanes
    for side in server client; do
        dev=$server_dev
        [[ $side == client ]] && dev=$client_dev
        lanes=$(grep -o 'ep_cfg\[[0-9]*\]: .*' "$logs/$side.out" || true)
        [[ -n "$lanes" ]] || fail "the $side logged no UCP lane configuration"
        if grep -o '([a-z0-9_]*/[a-z0-9_:]*)' <<<"$lanes" | grep -v '^(rc_mlx5/mlx5_[0-9]*:1)$' | grep -q .; then
            fail "the $side used lanes other than rc_mlx5: $lanes"
        fi
        head -n1 <<<"$lanes" | grep -qF "(rc_mlx5/$dev)" ||
            fail "the $side's first lanes are not on $dev: $(head -n1 <<<"$lanes")"
    done
    echo "OK: $mode, $size bytes x $iters over rc_mlx5 (client $client_dev, server $server_dev)"
    rm -rf "$logs"
}

[[ $# -ge 1 ]] || die "usage: ucp_client_server.sh prepare|run [options] (see the header)"
command=$1
shift
case $command in
prepare) prepare "$@" ;;
run) run "$@" ;;
*) die "unknown command $command" ;;
esac
