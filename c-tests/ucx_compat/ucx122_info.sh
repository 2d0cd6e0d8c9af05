#!/usr/bin/env bash
# UCX 1.22 (the binary wheel libucx-cu12==1.22.0 from PyPI, fetched at test
# time and cached) loads over our library: its libucp imports uct_* names
# beyond 1.13's (uct_ep_operation_names, uct_ep_get_device_ep,
# uct_md_mem_elem_pack, ...), and its `ucx_info -d` must list our ib memory
# domain and rc_mlx5 with no loader error.
# usage: ucx122_info.sh CACHE OUR_LIBRARY
set -euo pipefail
cache=${1:?usage: ucx122_info.sh CACHE OUR_LIBRARY}
ours=${2:?}
readonly WHEEL=libucx-cu12==1.22.0
dest="$cache/libucx-cu12-1.22.0"
mkdir -p "$cache"
(
    exec 9>"$cache/.lock"
    flock 9
    if [[ ! -f "$dest/.complete" ]]; then
        work=$(mktemp -d "$cache/fetch.XXXXXX")
        echo "downloading $WHEEL"
        python3 -m pip download -q --no-deps "$WHEEL" -d "$work" ||
            { echo "ucx122_info: pip download $WHEEL failed" >&2; exit 1; }
        rm -rf "$dest"
        mkdir -p "$dest"
        python3 -m zipfile -e "$work"/*.whl "$dest"
        # Wheels do not keep file modes.
        chmod -R u+rwx,go+rx "$dest/libucx/bin" "$dest/libucx/lib"
        rm -rf "$work"
        touch "$dest/.complete"
    fi
)
ucx=$dest/libucx
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
