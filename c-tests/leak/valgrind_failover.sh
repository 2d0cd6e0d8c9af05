#!/usr/bin/env bash
# The failover scenario under valgrind: failover_demo (sender and receiver
# forked, two rails, rail 0 cut, token exchange, purge with replay on rail 1,
# then ep/iface/md/worker destroy) must end with no definitely or indirectly
# lost block in any of its processes, and what is still allocated at exit
# (process-global registries, kept on purpose) must not grow with the number
# of operations: a run with 6x the ops may hold at most SLACK more bytes.
#
# usage: valgrind_failover.sh <failover_demo> [--keep-logs DIR]
set -u -o pipefail

demo=${1:?usage: valgrind_failover.sh <failover_demo> [--keep-logs DIR]}
shift
logs=
if [[ ${1:-} == --keep-logs ]]; then
    logs=${2:?--keep-logs needs a directory}
    mkdir -p "$logs"
fi
readonly SLACK=1024

if ! command -v valgrind >/dev/null; then
    echo "valgrind_failover: valgrind is not installed (apt-get install valgrind)" >&2
    exit 1
fi
if [[ -z $logs ]]; then
    logs=$(mktemp -d)
    trap 'rm -rf "$logs"' EXIT
fi

# Valgrind slows everything ~20x: a 10 ms ACK timeout would expire on rail 1
# as well. 100 ms still detects the cut within a second.
export UCX_RC_TIMEOUT=${UCX_RC_TIMEOUT:-100ms}
export UCX_SOFT_HCA_DEVICES=${UCX_SOFT_HCA_DEVICES:-mlx5_0@127.0.0.1,mlx5_1@127.0.0.2}

# run <name> <demo option>...: runs the demo under valgrind; prints the bytes
# in use at exit summed over its processes.
run() {
    local name=$1
    shift
    local dir="$logs/$name"
    mkdir -p "$dir"
    valgrind --leak-check=full --show-leak-kinds=definite,indirect \
        --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
        --num-callers=40 --log-file="$dir/vg.%p.log" \
        "$demo" --quiet --timeout 240 "$@" >"$dir/demo.out" 2>&1
    local rc=$?
    if [[ $rc -ne 0 ]] || ! grep -q 'lost 0, duplicated 0' "$dir/demo.out"; then
        echo "valgrind_failover: run '$name' ($*) failed (exit $rc):" >&2
        cat "$dir/demo.out" >&2
        grep -h -E 'definitely lost:|indirectly lost:|ERROR SUMMARY' "$dir"/vg.*.log >&2
        grep -h -B2 -A40 -E 'are (definitely|indirectly) lost' "$dir"/vg.*.log >&2
        return 1
    fi
    local processes
    processes=$(grep -l 'in use at exit' "$dir"/vg.*.log | wc -l)
    if [[ $processes -ne 3 ]]; then
        echo "valgrind_failover: run '$name': $processes process reports, expected 3" >&2
        return 1
    fi
    grep -h -E 'definitely lost:|indirectly lost:' "$dir"/vg.*.log |
        sed -E 's/^==[0-9]+== +/    /' | sort | uniq -c >&2
    grep -h 'in use at exit' "$dir"/vg.*.log |
        sed -E 's/.*in use at exit: ([0-9,]+) bytes.*/\1/; s/,//g' |
        awk '{ total += $1 } END { print total }'
}

fail=0
small=$(run small --ops 40 --cut-side both) || fail=1
large=$(run large --ops 240 --cut-side both) || fail=1
receiver=$(run receiver-cut --ops 120 --cut-side receiver) || fail=1
sender=$(run sender-cut --ops 120 --cut-side sender --cut-at 7) || fail=1
if [[ $fail -ne 0 ]]; then
    exit 1
fi
echo "valgrind_failover: no definitely/indirectly lost blocks in 4 runs x 3 processes;" \
     "in use at exit (all processes): 40 ops $small B, 240 ops $large B," \
     "receiver-side cut $receiver B, sender-side cut $sender B"
if (( large > small + SLACK )); then
    echo "valgrind_failover: memory still in use at exit grows with the op count" \
         "($small B for 40 ops, $large B for 240 ops): something per-op is kept" >&2
    exit 1
fi
exit 0
