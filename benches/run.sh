#!/usr/bin/env bash
# Builds benches/uct_bench.c once against the system's UCX headers
# (Debian's libucx-dev) and runs the same binary
#   - on our library: rc_mlx5 on the soft HCA (mlx5_0:1), LD_LIBRARY_PATH=LIB_DIR
#   - on UCX 1.13 itself: tcp on lo, posix on memory
# then prints one table, with ratios ours / UCX (for latency lower is
# better, for rates and bandwidth higher is better).
#
#   benches/run.sh LIB_DIR [SCALE]
#
# LIB_DIR holds our libuct.so.0/libucs.so.0 (e.g. <build>/lib or an install's
# lib/). SCALE multiplies the iteration counts (default 1). Raw results stay
# in $UCT_BENCH_OUT (default a temporary directory, printed at the end).
#
# A second table gives the cost of posting put_short and am_short alone:
# ns/op from a native run of `uct_bench -P`, instructions/op from callgrind
# counting inside the post loop only (--toggle-collect), then "outside the
# device": the same count from a second run that does not count inside the
# functions UCT_BENCH_DOORBELL names (a callgrind --toggle-collect pattern,
# default our out-of-line `ring_doorbell`), so the transport's own
# instructions; the doorbell is the difference. Our AM flow-control window
# is made large enough for no post to be refused.
#
# UCT_BENCH_ONLY=posting runs that second table alone, on our library alone
# (the before/after figure of a datapath change; callgrind counts do not
# depend on the machine's load).
#
# A third table uses UCX's own ucx_perftest (Debian's ucx-utils) as the
# harness on both sides: the same binary and flags, two processes
# (c-tests/perftest/perftest_pair.sh), on our rc_mlx5 (LD_PRELOAD=our
# libuct.so.0) and on UCX 1.13's tcp (lo) and posix (memory); see
# benches/perftest_bench.sh (also runnable alone). UCT_BENCH_PERFTEST=0 skips it.
#
# A fourth table is UCP's (Debian's libucp 1.13): tag latency and bandwidth
# between two processes over ours against UCX's tcp and shared memory; see
# benches/ucp_bench.sh (also runnable alone). UCT_BENCH_UCP=0 skips it.
set -euo pipefail

[[ $# -ge 1 ]] || { echo "usage: $0 LIB_DIR [SCALE]" >&2; exit 2; }
lib_dir=$(realpath "$1")
scale=${2:-1}
[[ -e "$lib_dir/libuct.so.0" ]] || { echo "no libuct.so.0 in $lib_dir" >&2; exit 1; }

doorbell=${UCT_BENCH_DOORBELL:-'*::ring_doorbell'}
out=${UCT_BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/uct_bench.XXXXXX")}
mkdir -p "$out"
here=$(dirname "$(realpath "$0")")
cc=${CC:-cc}
"$cc" -std=gnu99 -O2 -Wall -o "$out/uct_bench" "$here/uct_bench.c" -luct -lucs

# name | environment | transport | device
configs=(
    "ours_rc_mlx5|LD_LIBRARY_PATH=$lib_dir|rc_mlx5|mlx5_0:1"
    "ucx_tcp_lo||tcp|lo"
    "ucx_posix||posix|memory"
)
posting_only=0
if [[ ${UCT_BENCH_ONLY:-} == posting ]]; then
    posting_only=1
    configs=("${configs[0]}")
fi
names=() files=()
for config in "${configs[@]}"; do
    ((posting_only)) && break
    IFS='|' read -r name env tl dev <<<"$config"
    names+=("$name")
    files+=("$out/$name.txt")
    echo "running $name ($tl/$dev)..." >&2
    # shellcheck disable=SC2086 # env is one VAR=value word or empty
    if ! env $env timeout 600 "$out/uct_bench" -t "$tl" -d "$dev" -s "$scale" \
        >"$out/$name.txt" 2>"$out/$name.err"; then
        echo "  $name failed: $(tail -n 1 "$out/$name.err")" >&2
    fi
done

# Table: one row per (test, size); a missing or n/a value prints as "-".
((posting_only)) || awk -v names="${names[*]}" '
    BEGIN { n = split(names, name, " ") }
    # Which configuration a line comes from (a failed run leaves an empty file,
    # so files cannot simply be counted).
    FNR == 1 {
        for (i = 1; i <= n; i++) if (FILENAME ~ ("/" name[i] "\\.txt$")) file = i
    }
    $1 == "RESULT" {
        key = $2 " " $3
        if (!(key in seen)) { seen[key] = 1; order[++rows] = key }
        value[key, file] = $4
        if ($4 != "n/a") unit[key] = $5
    }
    function ratio(a, b) {
        if (a == "" || b == "" || a == "n/a" || b == "n/a" || b + 0 == 0) return "-"
        return sprintf("%.2f", a / b)
    }
    function show(v) { return (v == "" || v == "n/a") ? "-" : v }
    END {
        printf "%-15s %8s %-7s", "test", "size", "unit"
        for (i = 1; i <= n; i++) printf " %14s", name[i]
        for (i = 2; i <= n; i++) printf " %12s", "ours/" substr(name[i], 5)
        printf "\n"
        for (r = 1; r <= rows; r++) {
            split(order[r], parts, " ")
            printf "%-15s %8s %-7s", parts[1], parts[2], (order[r] in unit) ? unit[order[r]] : "-"
            for (i = 1; i <= n; i++) printf " %14s", show(value[order[r], i])
            for (i = 2; i <= n; i++) printf " %12s", ratio(value[order[r], 1], value[order[r], i])
            printf "\n"
        }
    }' "${files[@]}"

# --- posting cost -----------------------------------------------------------
"$cc" -std=gnu99 -O2 -g -Wall -o "$out/uct_bench_g" "$here/uct_bench.c" -luct -lucs
# Instructions per accepted post of OP for config NAME (environment ENV,
# transport TL, device DEV) under callgrind, counted inside post_burst_OP;
# with a function pattern after DEV, not counted inside those functions
# either. Output files get SUFFIX.
callgrind_per_post() {
    local name=$1 env=$2 tl=$3 dev=$4 op=$5 suffix=$6 posted total
    local toggles=(--toggle-collect="post_burst_$op")
    [[ $# -gt 6 ]] && toggles+=(--toggle-collect="$7")
    # shellcheck disable=SC2086
    env $env timeout 900 valgrind --tool=callgrind "${toggles[@]}" \
        --callgrind-out-file="$out/callgrind.$name.$op$suffix" \
        "$out/uct_bench_g" -t "$tl" -d "$dev" -P "$op" \
        >"$out/cg.$name.$op$suffix.txt" 2>"$out/cg.$name.$op$suffix.err" || return 0
    posted=$(awk '$1 == "POSTED" { print $2 }' "$out/cg.$name.$op$suffix.txt")
    total=$(awk '$1 == "summary:" { print $2 }' "$out/callgrind.$name.$op$suffix")
    [[ -n "$posted" && -n "$total" && "$posted" -gt 0 ]] || return 0
    awk -v t="$total" -v p="$posted" 'BEGIN { printf "%.1f", t / p }'
}
echo
printf "%-15s %-14s %10s %10s %12s %12s\n" "post cost" "config" "ns/op" "instr/op" "doorbell/op" "outside/op"
for config in "${configs[@]}"; do
    IFS='|' read -r name env tl dev <<<"$config"
    # Our AM flow-control window large enough that no post of the run is
    # refused (a refused post would be counted, not posted).
    [[ $name == ours_* ]] && env="$env UCX_RC_RX_QUEUE_LEN=16384 UCX_RC_FC_WND_SIZE=16384"
    for op in put_short am_short; do
        ns="-" ir="" bell="-" outside=""
        # shellcheck disable=SC2086
        if env $env timeout 600 "$out/uct_bench" -t "$tl" -d "$dev" -P "$op" -s "$scale" \
            >"$out/post.$name.$op.txt" 2>"$out/post.$name.$op.err"; then
            ns=$(awk '$1 == "RESULT" && $4 != "n/a" { print $4 }' "$out/post.$name.$op.txt")
            ns=${ns:--}
        fi
        if [[ -n "$ns" && "$ns" != "-" ]] && command -v valgrind >/dev/null; then
            ir=$(callgrind_per_post "$name" "$env" "$tl" "$dev" "$op" "")
            outside=$(callgrind_per_post "$name" "$env" "$tl" "$dev" "$op" .outside "$doorbell")
            if [[ -n "$ir" && -n "$outside" ]]; then
                bell=$(awk -v t="$ir" -v o="$outside" 'BEGIN { printf "%.1f", t - o }')
                echo "$outside" >"$out/outside.$name.$op"
            fi
        fi
        printf "%-15s %-14s %10s %10s %12s %12s\n" "$op" "$name" "$ns" "${ir:--}" "$bell" "${outside:--}"
    done
done
if ((posting_only)); then
    echo "raw results: $out" >&2
    exit 0
fi
# --- side by side with UCX's own rc_mlx5 on the same device --------------------
# With UCT_BENCH_STANDIN=<libuct_verbs_standin.so> (c-tests/verbs builds it
# into <build>/c-tests/verbs/): the same uct_bench on the soft HCA through
# the verbs stand-in, once with our rc_mlx5 (our libuct's verbs backend
# loads the stand-in) and once with UCX 1.13's own rc_mlx5 (Debian's libuct
# and libuct_ib.so.0, which load the stand-in as libibverbs.so.1 +
# libmlx5.so.1, run by c-tests/thirdparty/with_standin_sysfs.sh: root
# only). Prints the results with ratios ours / UCX, then the posting cost of
# both under callgrind, counted as ours above (inside post_burst_<op>: the
# stand-in notices doorbells in its own thread there, UCT_STANDIN_DOORBELL=
# watch, so the device's work is outside the count for both), with AM flow
# control off on both sides (UCX_RC_FC_ENABLE=n, a UCX variable both
# drivers read): with it on, posts the window refuses and the progress that
# waits for grants inside a burst would be counted as posting cost. Last,
# unless UCT_BENCH_PERFTEST=0, UCX's ucx_perftest on both drivers through
# the stand-in (benches/perftest_bench.sh --standin), ratios ours / UCX.
side_by_side_with_ucx_rc_mlx5() {
    local standin
    standin=$(realpath "$1")
    local work=$out/side_by_side
    rm -rf "$work"
    mkdir -p "$work/lib" "$work/ours-sysfs"
    ln -s "$standin" "$work/lib/libibverbs.so.1"
    ln -s "$standin" "$work/lib/libmlx5.so.1"
    local fixture=$here/../c-tests/thirdparty/with_standin_sysfs.sh
    local devices=UCX_SOFT_HCA_DEVICES=mlx5_0@127.0.0.1
    local ours=(env "$devices" UCX_SOFT_HCA=auto "LD_LIBRARY_PATH=$lib_dir"
                "UCT_VERBS_LIBIBVERBS=$standin" "UCT_VERBS_LIBMLX5=$standin"
                "UCT_VERBS_SYSFS_ROOT=$work/ours-sysfs")
    local theirs=(env "$devices" UCX_WARN_UNUSED_ENV_VARS=n "LD_LIBRARY_PATH=$work/lib"
                  bash "$fixture" "$work/tree")
    echo "running ours_standin and ucx_standin (rc_mlx5/mlx5_0:1 through the stand-in)..." >&2
    timeout 600 "${ours[@]}" "$out/uct_bench" -t rc_mlx5 -d mlx5_0:1 -s "$scale" \
        >"$work/ours.txt" 2>"$work/ours.err" || echo "  ours_standin failed: $(tail -n 1 "$work/ours.err")" >&2
    timeout 600 "${theirs[@]}" "$out/uct_bench" -t rc_mlx5 -d mlx5_0:1 -s "$scale" \
        >"$work/ucx.txt" 2>"$work/ucx.err" || echo "  ucx_standin failed: $(tail -n 1 "$work/ucx.err")" >&2
    echo
    echo "rc_mlx5 through the verbs stand-in: ours vs UCX 1.13's own driver"
    awk '
        FNR == 1 { file++ }
        $1 == "RESULT" {
            key = $2 " " $3
            if (!(key in seen)) { seen[key] = 1; order[++rows] = key }
            value[key, file] = $4
            if ($4 != "n/a") unit[key] = $5
        }
        END {
            printf "%-15s %8s %-7s %14s %14s %10s\n", "test", "size", "unit", "ours_standin", "ucx_standin", "ours/ucx"
            for (r = 1; r <= rows; r++) {
                split(order[r], k, " ")
                a = value[order[r], 1]; b = value[order[r], 2]
                q = (a == "" || b == "" || a == "n/a" || b == "n/a" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b)
                printf "%-15s %8s %-7s %14s %14s %10s\n", k[1], k[2], unit[order[r]], \
                    (a == "" ? "-" : a), (b == "" ? "-" : b), q
            }
        }' "$work/ours.txt" "$work/ucx.txt"

    echo
    printf "%-15s %14s %14s %10s\n" "post instr/op" "ours_standin" "ucx_standin" "ours/ucx"
    local op which cmd posted total
    for op in put_short am_short; do
        local -A ir=()
        for which in ours ucx; do
            ir[$which]="-"
            if [[ $which == ours ]]; then cmd=("${ours[@]}"); else cmd=("${theirs[@]}"); fi
            if command -v valgrind >/dev/null &&
                timeout 900 "${cmd[@]}" env UCT_STANDIN_DOORBELL=watch UCX_RC_FC_ENABLE=n \
                    valgrind --tool=callgrind \
                    --toggle-collect="post_burst_$op" \
                    --callgrind-out-file="$work/callgrind.$which.$op" \
                    "$out/uct_bench_g" -t rc_mlx5 -d mlx5_0:1 -P "$op" \
                    >"$work/cg.$which.$op.txt" 2>"$work/cg.$which.$op.err"; then
                posted=$(awk '$1 == "POSTED" { print $2 }' "$work/cg.$which.$op.txt")
                total=$(awk '$1 == "summary:" { print $2 }' "$work/callgrind.$which.$op")
                if [[ -n "$posted" && -n "$total" && "$posted" -gt 0 ]]; then
                    ir[$which]=$(awk -v t="$total" -v p="$posted" 'BEGIN { printf "%.1f", t / p }')
                fi
            fi
        done
        printf "%-15s %14s %14s %10s\n" "$op" "${ir[ours]}" "${ir[ucx]}" \
            "$(awk -v a="${ir[ours]}" -v b="${ir[ucx]}" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }')"
    done

    # UCX's ucx_perftest as the harness on both drivers, same device.
    if [[ ${UCT_BENCH_PERFTEST:-1} != 0 ]]; then
        echo
        echo "ucx_perftest, rc_mlx5 through the verbs stand-in: ours vs UCX 1.13's own driver"
        bash "$here/perftest_bench.sh" --standin "$standin" "$lib_dir" "$scale" "$work/perftest"
    fi
}
if [[ -n "${UCT_BENCH_STANDIN:-}" ]]; then
    side_by_side_with_ucx_rc_mlx5 "$UCT_BENCH_STANDIN"
fi


# --- ucx_perftest as the harness (issue 11): benches/perftest_bench.sh -------
if [[ ${UCT_BENCH_PERFTEST:-1} != 0 ]]; then
    bash "$here/perftest_bench.sh" "$lib_dir" "$scale" "$out"
fi

# --- UCP over ours against UCX's tcp and shared memory (issue 24) -----------
if [[ ${UCT_BENCH_UCP:-1} != 0 ]]; then
    bash "$here/ucp_bench.sh" "$lib_dir" "$scale" "$out/ucp"
fi
echo "raw results: $out" >&2

# --- soft HCA wires: the goals table of issue 14 (SPEED) --------------------
# Our rc_mlx5 once per soft HCA wire (UCX_SOFT_HCA_WIRE=udp; auto = shared
# memory between the two processes of this host, the default, so the
# ours_rc_mlx5 column above is that wire), against the tcp/posix runs
# above, a single-core memcpy, the posting cost above (callgrind) and the
# CPU of an idle connected process; one row per goal.
speed_goals() {
    local wire value
    "$cc" -std=gnu99 -O2 -Wall -o "$out/memcpy_bw" "$here/memcpy_bw.c"
    "$out/memcpy_bw" $((1024 * 1024)) >"$out/memcpy.txt" 2>&1 || true
    for wire in udp auto; do
        echo "running ours_rc_mlx5 on wire $wire..." >&2
        env LD_LIBRARY_PATH="$lib_dir" UCX_SOFT_HCA_WIRE="$wire" timeout 600 \
            "$out/uct_bench" -t rc_mlx5 -d mlx5_0:1 -s "$scale" \
            >"$out/wire.$wire.txt" 2>"$out/wire.$wire.err" ||
            echo "  wire $wire failed: $(tail -n 1 "$out/wire.$wire.err")" >&2
        env LD_LIBRARY_PATH="$lib_dir" UCX_SOFT_HCA_WIRE="$wire" timeout 60 \
            "$out/uct_bench" -t rc_mlx5 -d mlx5_0:1 -I 3 \
            >"$out/idle.$wire.txt" 2>&1 || true
    done
    # value FILE TEST SIZE
    value() { awk -v t="$2" -v s="$3" '$1 == "RESULT" && $2 == t && $3 == s && $4 != "n/a" { print $4 }' "$1" 2>/dev/null; }
    # Instructions per post outside the soft HCA's doorbell, from the
    # callgrind runs of the posting table above.
    posting() { cat "$out/outside.ours_rc_mlx5.$1" 2>/dev/null; }
    # row FIGURE OURS REFERENCE GOAL: the ratio ours/reference (or the
    # value alone when REFERENCE is "=").
    row() {
        local ratio="-"
        if [[ "$3" == "=" ]]; then
            ratio=${2:--}
        elif [[ -n "$2" && -n "$3" ]]; then
            ratio=$(awk -v a="$2" -v b="$3" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.2f", a / b }')
        fi
        printf "%-58s %12s %12s %8s   %s\n" "$1" "${2:--}" "$( [[ "$3" == "=" ]] && echo - || echo "${3:--}")" "$ratio" "$4"
    }
    local udp="$out/wire.udp.txt" shm="$out/wire.auto.txt"
    local tcp="$out/ucx_tcp_lo.txt" posix="$out/ucx_posix.txt"
    echo
    printf "%-58s %12s %12s %8s   %s\n" "goal (issue 14)" "ours" "reference" "ratio" "goal"
    row "am_short latency usec, UDP wire / UCX tcp on lo" \
        "$(value "$udp" am_short_lat 8)" "$(value "$tcp" am_short_lat 8)" "<= 1.0"
    row "am_short latency usec, same-host wire / UCX posix" \
        "$(value "$shm" am_short_lat 8)" "$(value "$posix" am_short_lat 8)" "<= 3"
    row "am_short rate Mmsg/s, UDP wire / UCX tcp" \
        "$(value "$udp" am_short_rate 8)" "$(value "$tcp" am_short_rate 8)" ">= 3"
    row "put_short rate Mmsg/s, UDP wire / UCX tcp am_short rate" \
        "$(value "$udp" put_short_rate 8)" "$(value "$tcp" am_short_rate 8)" ">= 3"
    row "put_short rate Mmsg/s, same-host wire" \
        "$(value "$shm" put_short_rate 8)" "=" ">= 3 Mmsg/s"
    row "put_zcopy 1 MiB MB/s, UDP wire / UCX tcp on lo" \
        "$(value "$udp" put_zcopy_bw 1048576)" "$(value "$tcp" put_zcopy_bw 1048576)" ">= 1.0"
    row "put_zcopy 1 MiB MB/s, same-host wire / 1-core memcpy" \
        "$(value "$shm" put_zcopy_bw 1048576)" "$(value "$out/memcpy.txt" memcpy_bw 1048576)" ">= 0.5"
    row "posting cost instr/put_short outside the device" "$(posting put_short)" "=" "<= 150"
    row "posting cost instr/am_short outside the device" "$(posting am_short)" "=" "<= 150"
    row "idle connected process %cpu, same-host wire" "$(value "$out/idle.auto.txt" idle_cpu 0)" "=" "~0"
    row "idle connected process %cpu, UDP wire" "$(value "$out/idle.udp.txt" idle_cpu 0)" "=" "~0"
}
speed_goals
