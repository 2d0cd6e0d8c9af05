#!/usr/bin/env bash
# failover_demo across two network namespaces joined by two veth pairs (one
# per rail); the soft HCA devices are bound to the veth addresses through
# UCX_SOFT_HCA_DEVICES and rail 0 is cut with `ip link set ... down`, the
# way a cable is pulled between two hosts. Exits 77 (CTest SKIP_RETURN_CODE)
# where network namespaces cannot be created.
#
# usage: netns.sh DEMO [demo options, e.g. --ops 400 --cut-at 200]
set -euo pipefail

demo=${1:?usage: netns.sh DEMO [demo options]}
shift
skip() { echo "netns: SKIPPED: $*" >&2; exit 77; }

command -v ip >/dev/null || skip "no 'ip' command (apt-get install iproute2)"
tag=fo$$
ns_s=${tag}s
ns_r=${tag}r
ip netns add "$ns_s" 2>/dev/null || skip "'ip netns add' is not allowed here (needs root / CAP_SYS_ADMIN)"
# shellcheck disable=SC2317  # runs from the EXIT trap
cleanup() {
    ip netns del "$ns_s" 2>/dev/null || true
    ip netns del "$ns_r" 2>/dev/null || true
    rm -f "$sock"
}
sock=$(mktemp -u /tmp/failover_netns.XXXXXX)
trap cleanup EXIT
ip netns add "$ns_r"

# rail r: veth ${tag}s$r (sender side, 10.7$r.0.1) <-> ${tag}r$r (receiver, 10.7$r.0.2)
for r in 0 1; do
    ip link add "${tag}s$r" type veth peer name "${tag}r$r"
    ip link set "${tag}s$r" netns "$ns_s"
    ip link set "${tag}r$r" netns "$ns_r"
    ip -n "$ns_s" addr add "10.7$r.0.1/24" dev "${tag}s$r"
    ip -n "$ns_r" addr add "10.7$r.0.2/24" dev "${tag}r$r"
    ip -n "$ns_s" link set "${tag}s$r" up
    ip -n "$ns_r" link set "${tag}r$r" up
done
ip -n "$ns_s" link set lo up
ip -n "$ns_r" link set lo up

timeout 90 ip netns exec "$ns_r" env UCX_SOFT_HCA_DEVICES=mlx5_0@10.70.0.2,mlx5_1@10.71.0.2 \
    "$demo" --role receiver --bootstrap "$sock" --timeout 60 "$@" &
receiver=$!
rc=0
timeout 90 ip netns exec "$ns_s" env UCX_SOFT_HCA_DEVICES=mlx5_0@10.70.0.1,mlx5_1@10.71.0.1 \
    "$demo" --role sender --bootstrap "$sock" --timeout 60 --cut-side sender \
    --cut-cmd "ip link set ${tag}s0 down" "$@" || rc=$?
wait "$receiver" || rc=$((rc ? rc : $?))
if ((rc != 0)); then
    echo "netns: FAILED (exit $rc)" >&2
fi
exit "$rc"
