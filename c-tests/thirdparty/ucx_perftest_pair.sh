#!/usr/bin/env bash
# Minimal two-process ucx_perftest run on 127.0.0.1 (to be replaced by
# c-tests/perftest/perftest_pair.sh when that lands): a server on a free
# TCP port, then the client with ARGS; both must exit 0 and the client must
# print its "Final:" line.
#
# usage: ucx_perftest_pair.sh [--server-env VAR=VALUE]... [--client-env VAR=VALUE]...
#                             [--timeout S] -- ARGS...
set -uo pipefail

limit=120
server_env=() client_env=()
while [[ $# -gt 0 && $1 != -- ]]; do
    case $1 in
        --server-env) server_env+=("$2"); shift 2 ;;
        --client-env) client_env+=("$2"); shift 2 ;;
        --timeout) limit=$2; shift 2 ;;
        *) echo "ucx_perftest_pair.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ ${1:-} == -- ]] && shift
logs=$(mktemp -d "${TMPDIR:-/tmp}/ucx_perftest_pair.XXXXXX")
trap 'rm -rf "$logs"' EXIT

free_tcp_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])' 2>/dev/null ||
        echo $((20000 + RANDOM % 20000))
}

for attempt in 1 2 3 4 5; do
    port=$(free_tcp_port)
    env "${server_env[@]}" timeout -k 5 "$limit" ucx_perftest -p "$port" >"$logs/server" 2>&1 &
    server=$!
    waited=0 listening=0
    while ((waited++ < 200)); do
        if [[ -n $(ss -ltnH "sport = :$port" 2>/dev/null) ]]; then listening=1; break; fi
        kill -0 "$server" 2>/dev/null || break
        sleep 0.1
    done
    ((listening)) && break
    kill "$server" 2>/dev/null; wait "$server" 2>/dev/null
    echo "server did not listen on port $port (attempt $attempt)"
    cat "$logs/server"
done
((listening)) || { echo "ucx_perftest_pair.sh: no server" >&2; exit 1; }
echo "client: ucx_perftest 127.0.0.1 -p $port $*"
env "${client_env[@]}" timeout -k 5 "$limit" ucx_perftest 127.0.0.1 -p "$port" "$@" 2>&1 | tee "$logs/client"
client_status=${PIPESTATUS[0]}
wait "$server"
server_status=$?
echo "----- server -----"
cat "$logs/server"
if ((client_status != 0 || server_status != 0)); then
    echo "ucx_perftest_pair.sh: client exited $client_status, server $server_status" >&2
    exit 1
fi
grep -q '^Final:' "$logs/client" || { echo "ucx_perftest_pair.sh: no Final: line" >&2; exit 1; }
