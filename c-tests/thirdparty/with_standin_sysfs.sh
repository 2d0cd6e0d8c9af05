#!/usr/bin/env bash
# Runs COMMAND in a private mount namespace in which /sys/class/infiniband
# and /dev/infiniband are the verbs stand-in's tree, for programs that look
# there instead of asking libibverbs (UCX's ib modules stat
# /dev/infiniband/<uverbs> and read /sys/class/infiniband/<dev>/...). The
# host's /sys and /dev are not changed: each is covered, inside the
# namespace only, by a read-only overlay that adds the one directory, and
# the mounts under /dev (pts, shm, ...) are put back on top.
#
# usage: with_standin_sysfs.sh TREE COMMAND [ARG...]
#   TREE/sys  becomes /sys/class/infiniband; the stand-in writes its
#             devices there (export UCT_VERBS_SYSFS_ROOT=TREE/sys, which
#             this script does);
#   TREE/dev  becomes /dev/infiniband, with uverbs0..N-1 for the N devices
#             of UCX_SOFT_HCA_DEVICES (character devices: /dev/null bound
#             on them, readable and writable as UCX checks).
# Needs root and unshare(1); where a namespace or an overlay cannot be
# made, prints one line saying why and exits 77 (CTest: skipped).
set -euo pipefail

SKIP=77
tree=${1:?usage: with_standin_sysfs.sh TREE COMMAND [ARG...]}
shift
(($# > 0)) || { echo "with_standin_sysfs.sh: no command" >&2; exit 2; }

skip() {
    echo "SKIP: with_standin_sysfs.sh: $*"
    exit "$SKIP"
}

if [[ ${1:-} != --inside ]]; then
    [[ $EUID -eq 0 ]] || skip "needs root for a private mount namespace (uid $EUID)"
    command -v unshare >/dev/null || skip "unshare(1) is missing (util-linux)"
    unshare --mount --propagation private true 2>/dev/null \
        || skip "unshare --mount is not permitted here"
    mkdir -p "$tree/sys" "$tree/dev" "$tree/layer/class/infiniband" \
             "$tree/layer/dev/infiniband" "$tree/host-dev"
    tree=$(cd "$tree" && pwd)
    devices=${UCX_SOFT_HCA_DEVICES:-mlx5_0@127.0.0.1}
    IFS=, read -r -a entries <<< "$devices"
    for index in "${!entries[@]}"; do
        : > "$tree/dev/uverbs$index"
    done
    export UCT_VERBS_SYSFS_ROOT=$tree/sys
    exec unshare --mount --propagation private bash "${BASH_SOURCE[0]}" "$tree" --inside "$@"
fi
shift # --inside

# /dev's own mounts, deepest last, to put back over the overlay.
mapfile -t dev_mounts < <(findmnt -rn -o TARGET --submounts /dev | awk '$0 != "/dev"' | sort -u)
mount --rbind /dev "$tree/host-dev"
mount -t overlay overlay -o "lowerdir=$tree/layer/class:/sys/class" /sys/class 2>/dev/null \
    || skip "cannot overlay /sys/class in the namespace"
mount -t overlay overlay -o "lowerdir=$tree/layer/dev:/dev" /dev 2>/dev/null \
    || skip "cannot overlay /dev in the namespace"
for target in "${dev_mounts[@]}"; do
    [[ -d $target || -f $target ]] || continue
    mount --rbind "$tree/host-dev/${target#/dev/}" "$target" 2>/dev/null || true
done
mount --bind "$tree/sys" /sys/class/infiniband
mount --bind "$tree/dev" /dev/infiniband
for node in "$tree"/dev/uverbs*; do
    [[ -e $node ]] || continue
    mount --bind "$tree/host-dev/null" "/dev/infiniband/${node##*/}"
done
exec "$@"
