#!/usr/bin/env bash
# UCX's own ucx_perftest (Debian's ucx-utils) as the benchmark harness on
# both sides: the same binary and the same flags, two processes each
# (c-tests/perftest/perftest_pair.sh), one run per case. Two modes:
#
#   benches/perftest_bench.sh LIB_DIR [SCALE [OUT_DIR]]
#     our rc_mlx5 over the soft HCA (LD_PRELOAD=LIB_DIR/libuct.so.0) against
#     UCX 1.13's own tcp on lo and posix on memory;
#   benches/perftest_bench.sh --standin STANDIN_SO LIB_DIR [SCALE [OUT_DIR]]
#     rc_mlx5 on the soft HCA through the verbs stand-in (issue 12, point 6):
#     ours (preloaded, its verbs backend on the stand-in) against UCX 1.13's
#     own driver (Debian's libuct_ib.so.0 loading the stand-in as
#     libibverbs.so.1 + libmlx5.so.1), both run by
#     c-tests/thirdparty/run_on_standin.sh, which checks from the stand-in's
#     trace that it served both processes (root: a private mount namespace).
#
# Prints one table with the ratios of the first column to each other one
# (latency: lower is better; rates and bandwidth: higher is better). SCALE
# multiplies the iteration counts (default 1); each run's stderr stays in
# OUT_DIR (default a temporary directory). Called by benches/run.sh.
set -uo pipefail
standin=""
if [[ ${1:-} == --standin ]]; then
    standin=$(realpath "${2:?--standin needs the stand-in library}")
    shift 2
fi
[[ $# -ge 1 ]] || { echo "usage: $0 [--standin STANDIN_SO] LIB_DIR [SCALE [OUT_DIR]]" >&2; exit 2; }
lib_dir=$(realpath "$1")
scale=${2:-1}
out=${3:-$(mktemp -d "${TMPDIR:-/tmp}/perftest_bench.XXXXXX")}
mkdir -p "$out"
here=$(dirname "$(realpath "$0")")
[[ -e "$lib_dir/libuct.so.0" ]] || { echo "no libuct.so.0 in $lib_dir" >&2; exit 1; }

# name | its label in the ratio columns | runner in front of
# perftest_pair.sh | perftest_pair.sh options | transport arguments. Word
# lists: no spaces inside paths.
perftest_configs() {
    local rc="-x rc_mlx5 -d mlx5_0:1"
    if [[ -z $standin ]]; then
        echo "ours_rc_mlx5|ours||--preload $lib_dir/libuct.so.0|$rc"
        echo "ucx_tcp_lo|tcp_lo|||-x tcp -d lo"
        echo "ucx_posix|posix|||-x posix -d memory"
        return
    fi
    local run="bash $here/../c-tests/thirdparty/run_on_standin.sh $standin"
    local devices=UCX_SOFT_HCA_DEVICES=mlx5_0@127.0.0.1
    echo "ours_standin|ours|env $devices $run $out/standin.ours 2 yes|--env LD_PRELOAD=$lib_dir/libuct.so.0 --env UCT_VERBS_LIBIBVERBS=$standin --env UCT_VERBS_LIBMLX5=$standin --env UCX_SOFT_HCA=auto|$rc"
    echo "ucx_standin|ucx|env $devices $run $out/standin.ucx 2 yes||$rc"
}

# row name | size | column of the -f line | unit | ucx_perftest arguments.
# -f prints one line: iterations, latency median/average/overall (usec),
# bandwidth average/overall (MB/s), message rate average/overall.
perftest_cases() {
    echo "am_lat|8|2|usec|-t am_lat -D short -s 8 -n $((20000 * scale))"
    echo "put_lat|8|2|usec|-t put_lat -s 8 -n $((20000 * scale))"
    echo "fadd_lat|8|2|usec|-t fadd -s 8 -n $((20000 * scale))"
    echo "am_bw_rate|8|8|msg/s|-t am_bw -D short -s 8 -n $((200000 * scale))"
    echo "put_bw_rate|8|8|msg/s|-t put_bw -D short -s 8 -n $((200000 * scale))"
    local size
    for size in 8 256 4096 65536 1048576; do
        echo "put_bw_zcopy|$size|6|MB/s|-t put_bw -D zcopy -s $size -n $(( (size >= 65536 ? 500 : 20000) * scale ))"
    done
    echo "get_zcopy|65536|6|MB/s|-t get -D zcopy -s 65536 -n $((500 * scale))"
}

main() {
    local pair=$here/../c-tests/perftest/perftest_pair.sh
    command -v ucx_perftest >/dev/null || { echo "perftest: no ucx_perftest (ucx-utils)" >&2; return 0; }
    local configs cases
    mapfile -t configs < <(perftest_configs)
    mapfile -t cases < <(perftest_cases)
    local names=() labels=() rows=() config entry name label runner options transport
    local row csize column unit args value
    for config in "${configs[@]}"; do
        IFS='|' read -r name label _ <<<"$config"
        names+=("$name")
        labels+=("$label")
    done
    for entry in "${cases[@]}"; do
        IFS='|' read -r row csize column unit args <<<"$entry"
        local line="$row $csize $unit"
        for config in "${configs[@]}"; do
            IFS='|' read -r name label runner options transport <<<"$config"
            echo "perftest: $name $row $csize..." >&2
            local log=$out/perftest.$name.$row.$csize
            # A failed run (or a stand-in run the stand-in did not serve)
            # prints "-", not a figure.
            # shellcheck disable=SC2086 # runner/options/args/transport are word lists
            if $runner bash "$pair" $options --timeout 300 -- $args $transport -w 1000 -f \
                >"$log.out" 2>"$log.err"; then
                value=$(awk -v c="$column" 'NF == 8 && $1 ~ /^[0-9]+$/ { v = $c } END { print (v == "" ? "-" : v) }' "$log.out")
            else
                value="-"
                echo "perftest: $name $row $csize failed: $(tail -n 1 "$log.err")" >&2
            fi
            line+=" $value"
        done
        rows+=("$line")
    done
    echo
    printf '%s\n' "${rows[@]}" | awk -v names="${names[*]}" -v labels="${labels[*]}" '
        BEGIN {
            n = split(names, name, " ")
            split(labels, label, " ")
            printf "%-14s %8s %-6s", "ucx_perftest", "size", "unit"
            for (i = 1; i <= n; i++) printf " %14s", name[i]
            for (i = 2; i <= n; i++) printf " %12s", "ours/" label[i]
            printf "\n"
        }
        function ratio(a, b) { return (a == "-" || b == "-" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
        {
            printf "%-14s %8s %-6s", $1, $2, $3
            for (i = 1; i <= n; i++) printf " %14s", $(3 + i)
            for (i = 2; i <= n; i++) printf " %12s", ratio($4, $(3 + i))
            printf "\n"
        }'
}

main
echo "perftest raw output: $out" >&2
