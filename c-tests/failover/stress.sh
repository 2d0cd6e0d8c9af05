#!/usr/bin/env bash
# Exactly-once stress test: seeded random trials of failover_demo (two
# processes, two rails), each with its own stream seed, op count, cut point,
# cut side and packet loss before the cut (up to 5 %). Every trial must end
# with lost 0, duplicated 0 (the demo's exit status); the first failure is
# reported with the command line that reproduces it.
#
# usage: stress.sh DEMO [--trials N] [--seed S] [--ops-min N] [--ops-max N]
#                       [--max-loss P] [--trial-timeout SEC] [--budget SEC]
#                       [-- DEMO-ARGS...]
#   --budget SEC  stop starting trials after SEC seconds (0: no limit); the
#                 test fails if fewer than half of the trials ran, so that a
#                 slow machine shows up instead of silently testing less.
# Soak (benchmarks): stress.sh DEMO --trials 5000 --budget 0
set -euo pipefail

demo=${1:?usage: stress.sh DEMO [options]}
shift
trials=300
seed=1
ops_min=20
ops_max=120
max_loss_permille=50
trial_timeout=30
budget=0
while (($#)); do
    case $1 in
    --trials) trials=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --ops-min) ops_min=$2; shift 2 ;;
    --ops-max) ops_max=$2; shift 2 ;;
    --max-loss) max_loss_permille=$(awk -v p="$2" 'BEGIN { printf "%d", p * 1000 }'); shift 2 ;;
    --trial-timeout) trial_timeout=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "stress.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
extra_args=("$@") # appended to every trial's arguments (the last of a repeated option wins)
if [[ ! -x $demo ]]; then
    echo "stress.sh: $demo is not an executable" >&2
    exit 2
fi

RANDOM=$seed
sides=(sender receiver both)
start=$(date +%s.%N)
ran=0
replayed_total=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

for ((trial = 0; trial < trials; trial++)); do
    if ((budget > 0)); then
        elapsed=$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN { printf "%d", n - s }')
        if ((elapsed >= budget)); then
            echo "stress: time budget of ${budget}s used up after $ran trials"
            break
        fi
    fi
    ops=$((ops_min + RANDOM % (ops_max - ops_min + 1)))
    cut_at=$((RANDOM % ops))
    side=${sides[RANDOM % 3]}
    loss_permille=$((RANDOM % (max_loss_permille + 1)))
    loss=$(awk -v p="$loss_permille" 'BEGIN { printf "%.3f", p / 1000 }')
    trial_seed=$((RANDOM * 32768 + RANDOM))
    args=(--quiet --ops "$ops" --seed "$trial_seed" --cut-at "$cut_at" --cut-side "$side"
          --loss "$loss" --timeout "$trial_timeout" "${extra_args[@]}")
    if ! timeout --kill-after=5 $((trial_timeout + 10)) "$demo" "${args[@]}" >"$log" 2>&1; then
        echo "stress: trial $trial FAILED: $demo ${args[*]}" >&2
        cat "$log" >&2
        exit 1
    fi
    if ! grep -q '^\[sender\] .*lost 0, duplicated 0' "$log" ||
       ! grep -q '^\[receiver\] .*lost 0, duplicated 0' "$log"; then
        echo "stress: trial $trial exited 0 without both verdicts: $demo ${args[*]}" >&2
        cat "$log" >&2
        exit 1
    fi
    replayed=$(sed -n 's/^\[sender\] .*replayed \([0-9]*\),.*/\1/p' "$log")
    replayed_total=$((replayed_total + ${replayed:-0}))
    ran=$((ran + 1))
done

awk -v n="$ran" -v s="$start" -v e="$(date +%s.%N)" -v r="$replayed_total" 'BEGIN {
    t = e - s
    printf "stress: %d trials, lost 0, duplicated 0, %d ops replayed in all, %.1f s, %.2f trials/s\n",
           n, r, t, (t > 0 ? n / t : 0)
}'
if ((ran * 2 < trials)); then
    echo "stress: only $ran of $trials trials fit in the budget" >&2
    exit 1
fi
