#!/usr/bin/env bash
# The stand-in poses as libibverbs.so.1 + libmlx5.so.1 to programs linked
# against rdma-core, so it must carry its own soname (not libuct.so.0, the
# uct crate's), export nothing but verbs/mlx5dv functions and its test API
# (the soft HCA fault API, uct_standin_*), and define, with rdma-core's
# version, every ibv_/mlx5dv_ symbol the given programs import.
#
# usage: check_standin_library.sh STANDIN_SO PROGRAM_OR_LIBRARY...
set -euo pipefail
standin=${1:?usage: check_standin_library.sh STANDIN_SO PROGRAM...}
shift
fail=0

soname=$(readelf -d "$standin" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
echo "soname: $soname"
if [[ $soname != libuct_verbs_standin.so ]]; then
    echo "check_standin_library.sh: soname '$soname', expected libuct_verbs_standin.so" >&2
    fail=1
fi

others=$(nm -D --defined-only "$standin" | awk '$2 ~ /^[TtWwDdBb]$/ { sub(/@.*/, "", $3); print $3 }' |
         grep -vE '^(ibv_|mlx5dv_|uct_soft_hca_|uct_standin_)' || true)
if [[ -n $others ]]; then
    echo "check_standin_library.sh: exports beyond verbs/mlx5dv and the test API:" >&2
    echo "$others" | sed 's/^/  /' >&2
    fail=1
fi

have=$(objdump -T "$standin" | awk '$4 == ".text" && $(NF-1) ~ /^(IBVERBS|MLX5)/ { print $NF "@" $(NF-1) }' | sort -u)
for user in "$@"; do
    need=$(objdump -T "$user" | awk '/\*UND\*/ && /\((IBVERBS|MLX5)_/ { v = $(NF-1); gsub(/[()]/, "", v); print $NF "@" v }' | sort -u)
    missing=$(comm -23 <(printf '%s\n' "$need") <(printf '%s\n' "$have") | grep . || true)
    echo "$user: $(grep -c . <<<"$need") rdma-core imports"
    if [[ -n $missing ]]; then
        echo "check_standin_library.sh: $user imports what the stand-in lacks:" >&2
        echo "$missing" | sed 's/^/  /' >&2
        fail=1
    fi
done
exit "$fail"
