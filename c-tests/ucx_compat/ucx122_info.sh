#!/usr/bin/env bash
# UCX 1.22's ucx_info -d (ucx122_wheel.sh) loads over our library: its
# libucp imports uct_* names beyond 1.13's (uct_ep_operation_names,
# uct_ep_get_device_ep, uct_md_mem_elem_pack, ...), and it must list our ib
# memory domain and rc_mlx5 with no loader error.
# usage: ucx122_info.sh CACHE OUR_LIBRARY
set -euo pipefail
cache=${1:?usage: ucx122_info.sh CACHE OUR_LIBRARY}
ours=${2:?}
# shellcheck source=ucx122_wheel.sh
source "$(dirname "${BASH_SOURCE[0]}")/ucx122_wheel.sh"
ucx=$(ucx122_wheel "$cache")
output=$(LD_PRELOAD=$ours LD_LIBRARY_PATH=$ucx/lib timeout --kill-after=10 120 \
         "$ucx/bin/ucx_info" -d 2>&1) || { echo "$output"; echo "ucx122_info: ucx_info -d failed" >&2; exit 1; }
echo "$output"
if grep -qi "undefined symbol\|symbol lookup error\|different size" <<<"$output"; then
    echo "ucx122_info: loader errors" >&2
    exit 1
fi
for expected in "Memory domain: mlx5_0" "Component: ib" "Transport: rc_mlx5" "Device: mlx5_0:1"; do
    grep -q "$expected" <<<"$output" || { echo "ucx122_info: no '$expected'" >&2; exit 1; }
done
echo "ucx122_info: PASS"
