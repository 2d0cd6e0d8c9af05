#!/usr/bin/env bash
# Runs one ucx_perftest test between two processes on this host: a server
# (no host argument) and a client (`localhost`), on a free TCP port for the
# test's own data exchange (-p), each side bounded by a timeout. The
# client's output goes to stdout (the server's to SERVER_LOG, or is printed
# after a failure). Exit status 0 only when both sides exit 0.
#
# usage: perftest_pair.sh [OPTIONS] [--] PERFTEST_ARGS...
#   --perftest PATH     the binary (default: ucx_perftest from PATH)
#   --preload LIB       LD_PRELOAD=LIB on both sides (default: none, UCX's own)
#   --env K=V           environment of both sides (repeatable)
#   --server-env K=V    environment of the server only (repeatable)
#   --client-env K=V    environment of the client only (repeatable)
#   --timeout SECONDS   bound of each side (default 120)
#   --server-log FILE   keep the server's output there
# PERFTEST_ARGS are given to both sides (e.g. -t am_lat -x rc_mlx5
# -d mlx5_0:1 -n 10000); the script adds -p PORT, and `localhost` first on
# the client.
#
# Example (our libuct under UCX's own benchmark):
#   perftest_pair.sh --preload build/lib/libuct.so.0 -- -t am_lat -x rc_mlx5 -d mlx5_0:1
set -uo pipefail

perftest=ucx_perftest
preload=""
timeout_s=120
server_log=""
both_env=()
server_env=()
client_env=()
while (($#)); do
    case $1 in
        --perftest) perftest=${2:?}; shift 2 ;;
        --preload) preload=${2:?}; shift 2 ;;
        --env) both_env+=("${2:?}"); shift 2 ;;
        --server-env) server_env+=("${2:?}"); shift 2 ;;
        --client-env) client_env+=("${2:?}"); shift 2 ;;
        --timeout) timeout_s=${2:?}; shift 2 ;;
        --server-log) server_log=${2:?}; shift 2 ;;
        --) shift; break ;;
        -*) break ;;
        *) echo "perftest_pair.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
(($#)) || { echo "usage: perftest_pair.sh [OPTIONS] [--] PERFTEST_ARGS..." >&2; exit 2; }
command -v "$perftest" >/dev/null || { echo "perftest_pair.sh: no $perftest" >&2; exit 2; }
if [[ -n $preload && ! -f $preload ]]; then
    echo "perftest_pair.sh: no library at $preload" >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/perftest_pair.XXXXXX")
server_pid=""
cleanup() {
    [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
[[ -n $server_log ]] || server_log=$work/server.log

# True when something on this host listens on TCP port $1 (IPv4 or IPv6).
listening() {
    local hex
    hex=$(printf '%04X' "$1")
    awk -v port=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == port { found = 1 }
        END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# env(1) arguments of one side.
side_env() {
    local -n extra=$1
    local args=()
    [[ -n $preload ]] && args+=("LD_PRELOAD=$preload")
    args+=("${both_env[@]}" "${extra[@]}")
    ((${#args[@]})) && printf '%s\0' "${args[@]}"
    return 0
}
mapfile -d '' server_vars < <(side_env server_env)
mapfile -d '' client_vars < <(side_env client_env)

# A free port: random in the dynamic range, not listened on yet; the server
# is started again on another one if it still loses a race for it.
for attempt in 1 2 3 4 5; do
    port=$((49152 + (RANDOM * 32768 + RANDOM) % 16000))
    listening "$port" && continue
    env "${server_vars[@]}" timeout --kill-after=10 "$timeout_s" \
        "$perftest" "$@" -p "$port" >"$server_log" 2>&1 &
    server_pid=$!
    # Ready when it listens; gone when it could not bind (or failed early).
    for _ in $(seq 1 200); do
        listening "$port" && break
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.05
    done
    listening "$port" && break
    wait "$server_pid" 2>/dev/null
    server_pid=""
    if ! grep -qi "address already in use\|bind" "$server_log"; then
        echo "perftest_pair.sh: the server did not start:" >&2
        cat "$server_log" >&2
        exit 1
    fi
done
if [[ -z $server_pid ]]; then
    echo "perftest_pair.sh: no free port found" >&2
    exit 1
fi

env "${client_vars[@]}" timeout --kill-after=10 "$timeout_s" \
    "$perftest" localhost "$@" -p "$port" 2>&1
client_status=$?
wait "$server_pid"
server_status=$?
server_pid=""
if ((client_status != 0 || server_status != 0)); then
    echo "perftest_pair.sh: client exited $client_status, server $server_status" \
         "(124: timed out after ${timeout_s}s); server output:" >&2
    cat "$server_log" >&2
    exit 1
fi
