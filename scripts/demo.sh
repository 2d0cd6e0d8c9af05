#!/usr/bin/env bash
# The demo: builds the library (cargo through CMake), installs it into a
# prefix, and runs programs against the installed tree:
#   0. uct_info -d (what the library offers, as UCX's ucx_info -d shows it);
#   1. uct_smoke, built against our headers: lists components, memory
#      domains and transport resources;
#   2. the same program built against Debian's UCX 1.13 headers and linked
#      against UCX's own libuct/libucs, running on our library through
#      LD_LIBRARY_PATH (the drop-in promise);
#   3. uct_smoke again with two software HCA devices configured;
#   4. failover_demo: rail 0 cut mid-stream, lost 0 and duplicated 0.
#
# Environment: BUILD_DIR (default build/demo), PREFIX (default $BUILD_DIR/install),
#              JOBS (default 2).
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"
# shellcheck source=scripts/lib/prerequisites.sh
source scripts/lib/prerequisites.sh

build_dir=${BUILD_DIR:-build/demo}
prefix=${PREFIX:-$build_dir/install}
jobs=${JOBS:-2}

uct_ensure_prerequisites

uct_log "build"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" -j "$jobs"

uct_log "install into $prefix"
cmake --install "$build_dir" --prefix "$prefix"
prefix=$(cd "$prefix" && pwd)
libdir=$prefix/lib
ls -l "$libdir"

if [[ -x $prefix/bin/uct_info ]]; then
    uct_log "0. uct_info -d: components, memory domains, transports, interface attributes"
    "$prefix/bin/uct_info" -d
fi

uct_log "1. uct_smoke (built against our headers) walks the UCT control path"
"$prefix/bin/uct_smoke" --expect-lib "$libdir/libuct.so.0"

ucx_built_smoke=$build_dir/c-tests/smoke/smoke_ucx_headers
if [[ -x $ucx_built_smoke ]]; then
    uct_log "2. the same program built against UCX 1.13's headers and libraries, run on ours"
    echo "linked against: $(objdump -p "$ucx_built_smoke" | awk '$1 == "NEEDED" && $2 ~ /^libuc/ { print $2 }' | tr '\n' ' ')"
    LD_LIBRARY_PATH=$libdir "$ucx_built_smoke" --expect-lib "$libdir/libuct.so.0"
fi

uct_log "3. configuration the UCX way: two software HCA devices from UCX_SOFT_HCA_DEVICES"
UCX_SOFT_HCA_DEVICES=mlx5_0@127.0.0.1,mlx5_1@127.0.0.1 \
    "$prefix/bin/uct_smoke" --md mlx5_1 --device mlx5_1:1 --expect-lib "$libdir/libuct.so.0"

uct_log "4. failover_demo: two processes, two rails, rail 0 cut mid-stream, replay on rail 1"
"$prefix/bin/failover_demo"

uct_log "demo: done (installed tree: $prefix)"
