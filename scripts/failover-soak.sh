#!/usr/bin/env bash
# Failover soak (issue 22, point 2; a benchmark, not in CI): N seeded trials
# of the failover stress (c-tests/failover/stress.sh, one trial each: random
# op count, cut point, cut side, loss up to --max-loss before the cut), on
# both soft HCA wires (shared memory, UDP), half of them with two busy-loop
# processes competing for the cores. Unlike the stress test it does not stop
# at a failure: it prints trials, replayed, lost, duplicated, hung and the
# seeds of the failed trials, and exits 1 if any trial failed.
#
# usage: scripts/failover-soak.sh DEMO [--trials N] [--seed S]
#                                 [--max-loss P] [--trial-timeout SEC]
#                                 [-- DEMO-ARGS...]
#   DEMO-ARGS go to every trial (e.g. `-- --hold handler`: the sender holds
#   rail 0's ops by its error handler instead of uct_ep_failover_enable).
#   DEMO: the built failover_demo (build/<dir>/tools/failover_demo/failover_demo)
#   a failed trial is reproduced by the command line it prints.
set -euo pipefail

demo=${1:?usage: failover-soak.sh DEMO [--trials N] [--seed S] [--max-loss P] [--trial-timeout SEC]}
shift
trials=10000
seed=1
max_loss=0.05
trial_timeout=30
while (($#)); do
    case $1 in
    --trials) trials=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --max-loss) max_loss=$2; shift 2 ;;
    --trial-timeout) trial_timeout=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "failover-soak: unknown option $1" >&2; exit 2 ;;
    esac
done
demo_args=("$@")
stress="$(cd "$(dirname "$0")/.." && pwd)/c-tests/failover/stress.sh"
export UCX_SOFT_HCA_DEVICES=${UCX_SOFT_HCA_DEVICES:-mlx5_0@127.0.0.1,mlx5_1@127.0.0.2}

busy=()
stop_busy() {
    for pid in "${busy[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    busy=()
}
log=$(mktemp)
trap 'stop_busy; rm -f "$log"' EXIT

ran=0 replayed=0 lost=0 duplicated=0 hung=0 failed=0
failures=()
start=$(date +%s)
for ((trial = 0; trial < trials; trial++)); do
    trial_seed=$((seed + trial))
    # Trial t: wire by t's low bit, load by its next bit, so that every
    # block of four covers both wires with and without competition.
    if ((trial % 2)); then wire=udp; else wire=auto; fi
    loaded=$(((trial / 2) % 2))
    if ((loaded)) && ((${#busy[@]} == 0)); then
        for _ in 1 2; do
            bash -c 'while :; do :; done' &
            busy+=("$!")
        done
    elif ((!loaded)) && ((${#busy[@]} > 0)); then
        stop_busy
    fi
    cmd=(bash "$stress" "$demo" --trials 1 --seed "$trial_seed" --max-loss "$max_loss"
         --trial-timeout "$trial_timeout" -- "${demo_args[@]}")
    ran=$((ran + 1))
    if UCX_SOFT_HCA_WIRE=$wire "${cmd[@]}" >"$log" 2>&1; then
        r=$(sed -n 's/^stress: .* \([0-9]*\) ops replayed in all.*/\1/p' "$log")
        replayed=$((replayed + ${r:-0}))
        continue
    fi
    failed=$((failed + 1))
    failures+=("seed $trial_seed wire $wire load $loaded")
    # The sender's verdict line says what was lost or duplicated; a trial
    # without one that the demo's alarm or the stress timeout ended hung.
    l=$(sed -n 's/^\[sender\] .*lost \([0-9]*\), duplicated.*/\1/p' "$log" | head -1)
    d=$(sed -n 's/^\[sender\] .*duplicated \([0-9]*\).*/\1/p' "$log" | head -1)
    lost=$((lost + ${l:-0}))
    duplicated=$((duplicated + ${d:-0}))
    if grep -q 'timed out' "$log" || [[ -z $l ]]; then
        hung=$((hung + 1))
    fi
    echo "failover-soak: trial $trial FAILED (UCX_SOFT_HCA_WIRE=$wire, load $loaded): ${cmd[*]}" >&2
    tail -n 20 "$log" >&2
done
stop_busy

echo "failover-soak: trials $ran, replayed $replayed, lost $lost, duplicated $duplicated," \
     "hung $hung, failed $failed, $(($(date +%s) - start)) s"
if ((failed)); then
    echo "failover-soak: failed trials: ${failures[*]}"
    exit 1
fi
