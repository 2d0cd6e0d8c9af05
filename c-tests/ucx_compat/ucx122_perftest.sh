#!/usr/bin/env bash
# UCX 1.22's ucx_perftest (ucx122_wheel.sh), our library preloaded, runs the
# UCT test list of c-tests/perftest (perftest_suite.sh) between two
# processes on rc_mlx5: its libucp's API (uct_md_mkey_pack_v2 with six
# arguments, ...) on our library.
# usage: ucx122_perftest.sh CACHE OUR_LIBRARY
set -euo pipefail
cache=${1:?usage: ucx122_perftest.sh CACHE OUR_LIBRARY}
ours=${2:?}
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=ucx122_wheel.sh
source "$here/ucx122_wheel.sh"
ucx=$(ucx122_wheel "$cache")
exec bash "$here/../perftest/perftest_suite.sh" --perftest "$ucx/bin/ucx_perftest" \
    --preload "$ours" --env "LD_LIBRARY_PATH=$ucx/lib" --timeout 120 -- -x rc_mlx5 -d mlx5_0:1
