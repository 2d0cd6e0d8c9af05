#!/usr/bin/env bash
# check_unlinked.sh <libuct.so>: the library reaches rdma-core only through
# dlopen, so neither its DT_NEEDED list nor its undefined dynamic symbols may
# name libibverbs/libmlx5 or any ibv_*/mlx5dv_* function.
set -euo pipefail
lib=${1:?usage: check_unlinked.sh <libuct.so>}
[[ -f $lib ]] || { echo "FAIL: $lib does not exist" >&2; exit 1; }

needed=$(readelf -d "$lib" | grep '(NEEDED)' || true)
grep -q 'libc\.so' <<<"$needed" || { echo "FAIL: could not read NEEDED of $lib" >&2; exit 1; }
if grep -Ei 'ibverbs|mlx5|rdma' <<<"$needed"; then
    echo "FAIL: $lib links rdma-core (above)" >&2
    exit 1
fi

undefined=$(nm -D --undefined-only "$lib")
if grep -E ' (ibv_|mlx5dv_)' <<<"$undefined"; then
    echo "FAIL: $lib imports verbs symbols (above)" >&2
    exit 1
fi
# ldd as well, where the library resolves (it names transitive dependencies).
if ldd_out=$(ldd "$lib" 2>/dev/null) && grep -Ei 'ibverbs|mlx5' <<<"$ldd_out"; then
    echo "FAIL: ldd $lib names rdma-core (above)" >&2
    exit 1
fi
echo "OK: $lib has no link-time dependency on rdma-core"
