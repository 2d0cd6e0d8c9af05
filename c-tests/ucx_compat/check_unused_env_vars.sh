#!/usr/bin/env bash
# UCX's libucs (1.13, through its libucp) names the UCX_* variables no table
# read when a UCP worker is created. With our library preloaded, ours must
# count as read: the run sets two of ours and one nobody reads, and the
# warning must name only the latter.
# usage: check_unused_env_vars.sh OUR_LIBRARY UCP_LOAD_PROGRAM
set -uo pipefail
ours=${1:?usage: check_unused_env_vars.sh OUR_LIBRARY UCP_LOAD_PROGRAM}
program=${2:?}
output=$(UCX_TLS=rc_mlx5 UCX_SOFT_HCA_DEVICES=mlx5_0@127.0.0.1 UCX_RC_MLX5_TX_QUEUE_LEN=256 \
         UCX_NOBODY_READS_THIS=1 LD_PRELOAD=$ours timeout --kill-after=10 60 "$program" 2>&1)
status=$?
echo "$output"
if [ "$status" -ne 0 ]; then
    echo "check_unused_env_vars: the UCP program failed (exit $status)" >&2
    exit 1
fi
warning=$(grep "unused env variable" <<<"$output")
if ! grep -q "UCX_NOBODY_READS_THIS" <<<"$warning"; then
    echo "check_unused_env_vars: UCX's libucs did not report the unread variable" >&2
    exit 1
fi
if grep -qE "UCX_SOFT_HCA_DEVICES|UCX_RC_MLX5_TX_QUEUE_LEN" <<<"$warning"; then
    echo "check_unused_env_vars: our variables were reported unused: $warning" >&2
    exit 1
fi
echo "check_unused_env_vars: PASS"
