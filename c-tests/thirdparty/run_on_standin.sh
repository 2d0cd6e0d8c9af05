#!/usr/bin/env bash
# Runs an unchanged program built against rdma-core (Debian's UCX tools and
# modules, ibv_devinfo, ...) on the verbs stand-in (c-tests/verbs/standin),
# then proves from the stand-in's trace that the stand-in served it: at
# least PROCS processes opened a stand-in device and, with QPS=yes, each of
# them created a QP (so no other transport carried the test).
#
# usage: run_on_standin.sh [--no-namespace] [--expect REGEX]
#                          STANDIN_SO WORK_DIR PROCS QPS COMMAND [ARG...]
#   WORK_DIR is emptied, then gets lib/ (libibverbs.so.1 and libmlx5.so.1,
#   both the stand-in, first on LD_LIBRARY_PATH), tree/ (the stand-in's
#   sysfs and /dev entries) and trace. COMMAND runs inside
#   with_standin_sysfs.sh (UCX reads /sys/class/infiniband and
#   /dev/infiniband itself), unless --no-namespace (for programs that ask
#   only libibverbs: ibv_devinfo, ibv_devices). A skip of the namespace
#   (exit 77) is passed on. --expect: the output must match REGEX (grep -E).
#   UCX_WARN_UNUSED_ENV_VARS=n: UCX would otherwise list the stand-in's
#   UCX_SOFT_HCA_* variables as unused.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
namespace=yes expect=""
while [[ ${1:-} == --* ]]; do
    case $1 in
        --no-namespace) namespace=no; shift ;;
        --expect) expect=${2:?--expect needs a regex}; shift 2 ;;
        *) echo "run_on_standin.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
standin=${1:?usage: run_on_standin.sh [options] STANDIN_SO WORK_DIR PROCS QPS COMMAND...}
work_dir=${2:?}
procs=${3:?}
qps=${4:?}
shift 4
[[ -f $standin ]] || { echo "run_on_standin.sh: no stand-in at $standin" >&2; exit 1; }

rm -rf "$work_dir"
mkdir -p "$work_dir/lib" "$work_dir/tree/sys"
work_dir=$(cd "$work_dir" && pwd)
ln -s "$(cd "$(dirname "$standin")" && pwd)/$(basename "$standin")" "$work_dir/lib/libibverbs.so.1"
ln -s "$work_dir/lib/libibverbs.so.1" "$work_dir/lib/libmlx5.so.1"
export LD_LIBRARY_PATH=$work_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export UCT_STANDIN_TRACE=$work_dir/trace UCT_VERBS_SYSFS_ROOT=$work_dir/tree/sys
export UCX_WARN_UNUSED_ENV_VARS=n

output=$work_dir/output
if [[ $namespace == yes ]]; then
    bash "$here/with_standin_sysfs.sh" "$work_dir/tree" "$@" 2>&1 | tee "$output"
else
    "$@" 2>&1 | tee "$output"
fi
status=${PIPESTATUS[0]}
[[ $status -eq 77 ]] && exit 77

echo "--- stand-in trace:"
[[ -f $work_dir/trace ]] && awk '{ print $1 }' "$work_dir/trace" | sort | uniq -c
if [[ $status -ne 0 ]]; then
    echo "run_on_standin.sh: '$*' failed with status $status" >&2
    exit "$status"
fi
if [[ -n $expect ]] && ! grep -qE -- "$expect" "$output"; then
    echo "run_on_standin.sh: the output does not match '$expect'" >&2
    exit 1
fi
((procs == 0)) && exit 0
[[ -s $work_dir/trace ]] || { echo "run_on_standin.sh: no trace: the stand-in served nothing" >&2; exit 1; }
opened=$(awk '$1 == "open" { print $4 }' "$work_dir/trace" | sort -u)
with_qp=$(awk '$1 == "qp" { print $4 }' "$work_dir/trace" | sort -u)
n_opened=$(grep -c . <<<"$opened" || true)
if ((n_opened < procs)); then
    echo "run_on_standin.sh: $n_opened process(es) opened a stand-in device, expected $procs" >&2
    exit 1
fi
if [[ $qps == yes ]]; then
    n_with_qp=$(comm -12 <(printf '%s\n' "$opened") <(printf '%s\n' "$with_qp") | grep -c . || true)
    if ((n_with_qp < procs)); then
        echo "run_on_standin.sh: only $n_with_qp process(es) created QPs on the stand-in" >&2
        exit 1
    fi
fi
echo "run_on_standin.sh: the stand-in served $n_opened process(es)"
