#!/usr/bin/env bash
# Runs ucp_ops.c (our UCP client-server program) as a server and a client
# process with our library preloaded into Debian's UCX 1.13, on the soft
# device of UCX_SOFT_HCA_DEVICES (the caller's environment).
#
#   ucp_ops.sh --binary FILE --preload LIB [--listen IP] [--timeout S]
#              [--expect-detected tag|put|get|atomic]
#
# Passes when both processes exit 0, each printed its "all rounds OK" line,
# and each side's UCP lanes are rc_mlx5 only (UCX_LOG_LEVEL=info prints
# them). With --expect-detected WHAT the client is told to corrupt its
# expected WHAT content: the run passes only if the client then fails with
# that check's mismatch line (the checks can fail).
set -euo pipefail

die() {
    echo "ucp_ops.sh: $*" >&2
    exit 1
}
# shellcheck source=../common/pair_logs.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/pair_logs.sh"

binary="" preload="" listen=127.0.0.1 limit=90 corrupt=""
while [[ $# -gt 0 ]]; do
    case $1 in
    --binary) binary=$2 ;;
    --preload) preload=$2 ;;
    --listen) listen=$2 ;;
    --timeout) limit=$2 ;;
    --expect-detected) corrupt=$2 ;;
    *) die "unknown option $1" ;;
    esac
    shift 2
done
[[ -x "$binary" ]] || die "no program $binary"
[[ -f "$preload" ]] || die "no library $preload"
[[ -z "$corrupt" || "$corrupt" =~ ^(tag|put|get|atomic)$ ]] || die "--expect-detected: tag, put, get or atomic"

logs=$(mktemp -d "${TMPDIR:-/tmp}/ucp_ops.XXXXXX")
server=""
export LD_PRELOAD="$preload" UCX_LOG_LEVEL=info

# Port 0: the server's listener takes a free port and prints it.
echo "server: $binary server $listen 0"
timeout -k 5 "$limit" stdbuf -oL "$binary" server "$listen" 0 >"$logs/server.out" 2>&1 &
server=$!
port=""
for _ in $(seq 300); do
    port=$(sed -n 's/^listening on port \([0-9]*\)$/\1/p' "$logs/server.out")
    [[ -n "$port" ]] && break
    kill -0 "$server" 2>/dev/null || fail "the server exited before listening"
    sleep 0.1
done
[[ -n "$port" ]] || fail "the server did not listen within 30 s"

client_args=(client "$listen" "$port")
[[ -n "$corrupt" ]] && client_args+=(--corrupt "$corrupt")
echo "client: $binary ${client_args[*]}"
client_status=0
timeout -k 5 "$limit" "$binary" "${client_args[@]}" >"$logs/client.out" 2>&1 || client_status=$?

if [[ -n "$corrupt" ]]; then
    # The server waits for a client that gave up: stop it.
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=""
    [[ $client_status -eq 1 ]] || fail "with $corrupt corrupted the client exited with $client_status, not 1"
    pattern="^FAIL client: $corrupt content mismatch"
    [[ $corrupt == atomic ]] && pattern="^FAIL client: atomic ADD fetched: got"
    grep -q "$pattern" "$logs/client.out" || fail "the client did not report the $corrupt mismatch"
    echo "OK: the corrupted $corrupt expectation was detected: $(grep '^FAIL' "$logs/client.out")"
    rm -rf "$logs"
    exit 0
fi

server_status=0
wait "$server" || server_status=$?
server=""
[[ $client_status -eq 0 ]] || fail "the client exited with status $client_status (124: timeout)"
[[ $server_status -eq 0 ]] || fail "the server exited with status $server_status (124: timeout)"
grep -q '^client: all rounds OK$' "$logs/client.out" || fail "the client did not report success"
grep -q '^server: all rounds OK$' "$logs/server.out" || fail "the server did not report success"
for side in server client; do
    lanes=$(grep -o 'ep_cfg\[[0-9]*\]: .*' "$logs/$side.out" || true)
    [[ -n "$lanes" ]] || fail "the $side logged no UCP lane configuration"
    if grep -o '([a-z0-9_]*/[a-z0-9_:]*)' <<<"$lanes" | grep -v '^(rc_mlx5/mlx5_[0-9]*:1)$' | grep -q .; then
        fail "the $side used lanes other than rc_mlx5: $lanes"
    fi
    grep -q 'rma(rc_mlx5/' <<<"$lanes" || fail "the $side has no rc_mlx5 rma lane: $lanes"
    grep -q 'amo(rc_mlx5/' <<<"$lanes" || fail "the $side has no rc_mlx5 amo lane: $lanes"
done
grep -v '^\[' "$logs/client.out"
echo "OK: tag, put/get, atomics and flush/force close over rc_mlx5"
rm -rf "$logs"
