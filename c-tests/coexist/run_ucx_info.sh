#!/usr/bin/env bash
# UCX 1.13's ucx_info -d (UCP-linked, Debian's ucx-utils) with our library
# preloaded: exits 0 and lists our `ib` component, the `mlx5_0` memory domain
# and `rc_mlx5` on mlx5_0:1 with its capabilities; at UCX_LOG_LEVEL=debug it
# exits 0 as well (every line our library logs at exit, from UCX's library
# destructors, is written without a panic).
# usage: run_ucx_info.sh OUR_LIBRARY [UCX_INFO]
set -uo pipefail
ours=${1:?usage: run_ucx_info.sh OUR_LIBRARY [UCX_INFO]}
ucx_info=${2:-ucx_info}
output=$(LD_PRELOAD=$ours timeout --kill-after=10 120 "$ucx_info" -d 2>&1)
status=$?
echo "$output"
((status == 0)) || { echo "run_ucx_info: ucx_info -d exited $status" >&2; exit 1; }
for pattern in '^# +Memory domain: mlx5_0$' '^# +Component: ib$' '^# +Transport: rc_mlx5$' \
               '^# +Device: mlx5_0:1$' '^# +am_short: <= [0-9]+' \
               '^# +atomic_fadd: 32, 64 bit$' '^# +connection: to ep$'; do
    grep -qE -- "$pattern" <<<"$output" || { echo "run_ucx_info: no line matching '$pattern'" >&2; exit 1; }
done
if grep -q "different size\|symbol lookup error" <<<"$output"; then
    echo "run_ucx_info: loader warnings" >&2
    exit 1
fi
debug_output=$(LD_PRELOAD=$ours UCX_LOG_LEVEL=debug timeout --kill-after=10 120 "$ucx_info" -d 2>&1)
status=$?
if ((status != 0)) || grep -q "panicked" <<<"$debug_output"; then
    echo "$debug_output" | tail -40
    echo "run_ucx_info: ucx_info -d at UCX_LOG_LEVEL=debug exited $status" >&2
    exit 1
fi
echo "run_ucx_info: PASS"
