#!/usr/bin/env bash
# Failover benchmark (issue 5, point 8). Two tables:
#
#  1. Failover time as a function of UCX_RC_TIMEOUT and UCX_RC_RETRY_COUNT:
#     failover_demo (two processes, two soft HCA rails, rail 0 cut on both
#     sides mid-stream) run REPS times per setting; medians of
#       detect  = cut -> error handler (cut-to-last-replay minus the time
#                 the demo reports "after the error"),
#       recover = error handler -> last replay (token exchange over rail 1,
#                 purge, replay),
#       total   = cut -> last replay (the verdict line),
#     next to the theoretical detection time timeout_ib x (retry + 1), where
#     timeout_ib is UCX_RC_TIMEOUT rounded up to the IB encoding
#     4.096 us x 2^n (what the QP is really given).
#  2. Purge cost per outstanding op, 1 .. ring size, callback idle or
#     replaying on rail 1 (benches/failover_purge.rs).
#
# usage: benches/failover_bench.sh <failover_demo> [--reps N] [--ops N]
#            [--timeouts "1ms 5ms ..."] [--retries "1 3 7"]
#            [--purge-bench PATH | --no-purge] [--purge-reps N]
set -u -o pipefail

demo=${1:?usage: failover_bench.sh <failover_demo> [options]}
shift
reps=5
ops=400
timeouts="1ms 5ms 10ms 50ms"
retries="1 3 7"
purge_bench=
run_purge=1
purge_reps=30
while [[ $# -gt 0 ]]; do
    case $1 in
    --reps) reps=$2; shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --timeouts) timeouts=$2; shift 2 ;;
    --retries) retries=$2; shift 2 ;;
    --purge-bench) purge_bench=$2; shift 2 ;;
    --no-purge) run_purge=0; shift ;;
    --purge-reps) purge_reps=$2; shift 2 ;;
    *) echo "failover_bench: unknown option $1" >&2; exit 2 ;;
    esac
done
export UCX_SOFT_HCA_DEVICES=${UCX_SOFT_HCA_DEVICES:-mlx5_0@127.0.0.1,mlx5_1@127.0.0.2}

# to_ms <duration>: 1ms, 500us, 1s, 0.5s -> milliseconds
to_ms() {
    awk -v d="$1" 'BEGIN {
        if (d ~ /us$/) { sub(/us$/, "", d); print d / 1000 }
        else if (d ~ /ms$/) { sub(/ms$/, "", d); print d }
        else if (d ~ /s$/) { sub(/s$/, "", d); print d * 1000 }
        else print d * 1000 }'
}

# ib_timeout_ms <ms>: the smallest 4.096 us x 2^n (n >= 1) not below it
ib_timeout_ms() {
    awk -v t="$1" 'BEGIN { v = 0.004096 * 2; while (v < t) v *= 2; printf "%.3f", v }'
}

median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else printf "%.1f", v[int((NR + 1) / 2)] }'
}

echo "# failover time: failover_demo --ops $ops (cut at op $((ops / 2)), both sides), $reps runs each, medians in ms"
printf "%-10s %5s %12s %14s %10s %10s %10s %6s\n" \
    UCX_RC_TIMEOUT retry timeout_ib theory_detect detect recover total failed
for timeout in $timeouts; do
    ms=$(to_ms "$timeout")
    ib=$(ib_timeout_ms "$ms")
    for retry in $retries; do
        theory=$(awk -v t="$ib" -v r="$retry" 'BEGIN { printf "%.1f", t * (r + 1) }')
        detects=() recovers=() totals=() failed=0
        for ((i = 0; i < reps; i++)); do
            out=$(UCX_RC_TIMEOUT=$timeout UCX_RC_RETRY_COUNT=$retry \
                "$demo" --ops "$ops" --seed $((i + 1)) --timeout 60 2>&1)
            total=$(sed -nE 's/^\[sender\].*lost 0, duplicated 0, cut-to-last-replay ([0-9.]+) ms.*/\1/p' <<<"$out")
            recover=$(sed -nE 's/^\[sender\] purge: .* ([0-9.]+) ms after the error$/\1/p' <<<"$out")
            if [[ -z $total || -z $recover ]]; then
                failed=$((failed + 1))
                continue
            fi
            totals+=("$total")
            recovers+=("$recover")
            detects+=("$(awk -v a="$total" -v b="$recover" 'BEGIN { printf "%.2f", a - b }')")
        done
        printf "%-10s %5s %12s %14s %10s %10s %10s %6s\n" "$timeout" "$retry" "$ib" "$theory" \
            "$(printf '%s\n' "${detects[@]}" | median)" \
            "$(printf '%s\n' "${recovers[@]}" | median)" \
            "$(printf '%s\n' "${totals[@]}" | median)" "$failed"
    done
done

if [[ $run_purge -eq 1 ]]; then
    echo
    echo "# purge cost per outstanding op"
    if [[ -n $purge_bench ]]; then
        "$purge_bench" --reps "$purge_reps"
    else
        (cd "$(dirname "$0")/.." && cargo bench -q --bench failover_purge -- --reps "$purge_reps")
    fi
fi
