#!/usr/bin/env bash
# usage: check_groups.sh RC_OPS "GROUP GROUP ..."
# Fails unless `RC_OPS -l` lists exactly these groups in this order, so that
# every group of the program has its CTest and no CTest names a lost group.
set -euo pipefail
listed=$("$1" -l | tr '\n' ' ')
if [[ "$listed" != "$2 " ]]; then
    echo "rc_ops -l: '$listed'" >&2
    echo "CMake:     '$2 '" >&2
    exit 1
fi
echo "rc_ops groups: $2"
