#!/usr/bin/env bash
# Runs ucp_load (a UCP program built against UCX 1.13's libucp) with our
# library preloaded. Passes when it works (exit 0, a worker address) or ends
# in a UCS error it reports (exit 3, "ucp_load: <step>: <status>"); fails on
# a crash (signal), a hang (timeout), any other exit or a loader warning.
# usage: run_ucp_load.sh OUR_LIBRARY UCP_LOAD_PROGRAM
set -uo pipefail
ours=${1:?usage: run_ucp_load.sh OUR_LIBRARY UCP_LOAD_PROGRAM}
program=${2:?}
for tls in all rc_mlx5; do
    output=$(UCX_TLS=$tls LD_PRELOAD=$ours timeout --kill-after=10 60 "$program" 2>&1)
    status=$?
    echo "UCX_TLS=$tls: exit $status"
    echo "$output"
    case $status in
        0) grep -qE '^ucp_load: worker address of [1-9][0-9]* bytes$' <<<"$output" ||
               { echo "run_ucp_load: exit 0 without a worker address" >&2; exit 1; } ;;
        3) grep -qE '^ucp_load: [a-z_]+: [A-Z]' <<<"$output" ||
               { echo "run_ucp_load: exit 3 without a status line" >&2; exit 1; } ;;
        124|137) echo "run_ucp_load: hung (timeout)" >&2; exit 1 ;;
        *) echo "run_ucp_load: crashed or failed (exit $status)" >&2; exit 1 ;;
    esac
    if grep -q "different size\|symbol lookup error" <<<"$output"; then
        echo "run_ucp_load: loader warnings" >&2
        exit 1
    fi
done
echo "run_ucp_load: PASS"
