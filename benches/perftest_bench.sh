#!/usr/bin/env bash
# UCX's own ucx_perftest (Debian's ucx-utils) as the benchmark harness on
# both sides: the same binary and the same flags, two processes each
# (c-tests/perftest/perftest_pair.sh), one run per case, on
#   - our rc_mlx5 over the soft HCA (LD_PRELOAD=LIB_DIR/libuct.so.0),
#   - UCX 1.13's own tcp on lo and posix on memory;
# prints one table with the ratios ours / UCX (latency: lower is better;
# rates and bandwidth: higher is better). Called by benches/run.sh.
#
#   benches/perftest_bench.sh LIB_DIR [SCALE [OUT_DIR]]
#
# SCALE multiplies the iteration counts (default 1); each run's stderr stays
# in OUT_DIR (default a temporary directory).
set -uo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 LIB_DIR [SCALE [OUT_DIR]]" >&2; exit 2; }
lib_dir=$(realpath "$1")
scale=${2:-1}
out=${3:-$(mktemp -d "${TMPDIR:-/tmp}/perftest_bench.XXXXXX")}
mkdir -p "$out"
here=$(dirname "$(realpath "$0")")
[[ -e "$lib_dir/libuct.so.0" ]] || { echo "no libuct.so.0 in $lib_dir" >&2; exit 1; }

# One run per (configuration, case) through perftest_pair.sh; -f prints one
# line: iterations, latency median/average/overall (usec), bandwidth
# average/overall (MB/s), message rate average/overall.
main() {
    local pair=$here/../c-tests/perftest/perftest_pair.sh
    command -v ucx_perftest >/dev/null || { echo "perftest: no ucx_perftest (ucx-utils)" >&2; return 0; }
    # name | perftest_pair.sh options | transport arguments
    local perftest_configs=(
        "ours_rc_mlx5|--preload $lib_dir/libuct.so.0|-x rc_mlx5 -d mlx5_0:1"
        "ucx_tcp_lo||-x tcp -d lo"
        "ucx_posix||-x posix -d memory"
    )
    # row name | size | column of the -f line | unit | ucx_perftest arguments
    local perftest_cases=(
        "am_lat|8|2|usec|-t am_lat -D short -s 8 -n $((20000 * scale))"
        "am_bw_rate|8|8|msg/s|-t am_bw -D short -s 8 -n $((200000 * scale))"
        "put_bw_rate|8|8|msg/s|-t put_bw -D short -s 8 -n $((200000 * scale))"
    )
    local size
    for size in 8 256 4096 65536 1048576; do
        perftest_cases+=("put_bw_zcopy|$size|6|MB/s|-t put_bw -D zcopy -s $size -n $(( (size >= 65536 ? 500 : 20000) * scale ))")
    done
    local rows=() config entry name options transport row csize column unit args value
    for entry in "${perftest_cases[@]}"; do
        IFS='|' read -r row csize column unit args <<<"$entry"
        local line="$row $csize $unit"
        for config in "${perftest_configs[@]}"; do
            IFS='|' read -r name options transport <<<"$config"
            echo "perftest: $name $row $csize..." >&2
            # shellcheck disable=SC2086 # options/args/transport are word lists
            value=$(bash "$pair" $options --timeout 300 -- $args $transport -w 1000 -f \
                        2>"$out/perftest.$name.$row.$csize.err" |
                    awk -v c="$column" 'NF == 8 && $1 ~ /^[0-9]+$/ { v = $c } END { print (v == "" ? "-" : v) }')
            line+=" $value"
        done
        rows+=("$line")
    done
    echo
    printf "%-14s %8s %-6s %14s %14s %14s %12s %12s\n" "ucx_perftest" "size" "unit" \
        "ours_rc_mlx5" "ucx_tcp_lo" "ucx_posix" "ours/tcp_lo" "ours/posix"
    printf '%s\n' "${rows[@]}" | awk '
        function ratio(a, b) { return (a == "-" || b == "-" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
        { printf "%-14s %8s %-6s %14s %14s %14s %12s %12s\n", $1, $2, $3, $4, $5, $6, ratio($4, $5), ratio($4, $6) }'
}

main
echo "perftest raw output: $out" >&2
