#!/usr/bin/env bash
# Runs a test program on our libuct with the verbs backend loading the
# stand-in libibverbs/libmlx5 (standin/), then proves from the stand-in's
# trace that the verbs path ran: at least PROCS distinct processes opened a
# device through ibv_open_device and, with QPS=yes, each of them created a
# QP through ibv_create_qp.
#
# usage: run_standin.sh [--expect REGEX] STANDIN_SO WORK_DIR PROCS QPS COMMAND [ARG...]
#   --expect: the command's output must also match REGEX (grep -E), e.g. to
#   prove a failover really happened rather than the cut having no effect.
#   WORK_DIR is emptied first; it gets sysfs/ (UCT_VERBS_SYSFS_ROOT) and
#   trace (UCT_STANDIN_TRACE). UCX_SOFT_HCA=auto: with verbs devices present
#   our libuct opens only those. UCX_SOFT_HCA_DEVICES comes from the caller
#   (it names the stand-in's devices).
set -uo pipefail

expect=""
if [[ ${1:-} == --expect ]]; then
    expect=${2:?--expect needs a regex}
    shift 2
fi
standin=${1:?usage: run_standin.sh STANDIN_SO WORK_DIR PROCS QPS COMMAND...}
work_dir=${2:?}
procs=${3:?}
qps=${4:?}
shift 4
[[ -f $standin ]] || { echo "run_standin.sh: no stand-in at $standin" >&2; exit 1; }

rm -rf "$work_dir"
mkdir -p "$work_dir/sysfs"
trace=$work_dir/trace
export UCT_VERBS_LIBIBVERBS=$standin UCT_VERBS_LIBMLX5=$standin
export UCT_VERBS_SYSFS_ROOT=$work_dir/sysfs UCT_STANDIN_TRACE=$trace
export UCX_SOFT_HCA=auto

status=0
output=$work_dir/output
"$@" 2>&1 | tee "$output"
status=${PIPESTATUS[0]}

echo "--- stand-in trace ($trace):"
[[ -f $trace ]] && sort "$trace" | uniq -c | sed -n '1,40p'
if [[ $status -ne 0 ]]; then
    echo "run_standin.sh: '$*' failed with status $status" >&2
    exit "$status"
fi
if [[ -n $expect ]] && ! grep -qE -- "$expect" "$output"; then
    echo "run_standin.sh: the output does not match '$expect'" >&2
    exit 1
fi
[[ -s $trace ]] || { echo "run_standin.sh: no trace: the verbs path did not run" >&2; exit 1; }

opened=$(awk '$1 == "open" { print $4 }' "$trace" | sort -u)
with_qp=$(awk '$1 == "qp" { print $4 }' "$trace" | sort -u)
n_opened=$(grep -c . <<<"$opened" || true)
if ((n_opened < procs)); then
    echo "run_standin.sh: $n_opened process(es) opened a verbs device, expected $procs" >&2
    exit 1
fi
if [[ $qps == yes ]]; then
    missing=$(comm -23 <(printf '%s\n' "$opened") <(printf '%s\n' "$with_qp"))
    n_with_qp=$(comm -12 <(printf '%s\n' "$opened") <(printf '%s\n' "$with_qp") | grep -c . || true)
    if ((n_with_qp < procs)); then
        echo "run_standin.sh: only $n_with_qp process(es) created QPs through verbs (without: ${missing//$'\n'/ })" >&2
        exit 1
    fi
fi
echo "run_standin.sh: verbs path used by $n_opened process(es)"
