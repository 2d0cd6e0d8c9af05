#!/usr/bin/env bash
# UCX's own UCT-using C sources compile against our headers: UCX 1.13.1's
# examples/uct_hello_world.c and test/apps/uct_info/uct_info.c (from Debian's
# source package, fetched at test time and cached), and enum_probe.c (every
# enum tag, typedef and member of UCX 1.13's and master's UCT headers, and the
# unsigned long type of the UCT_IFACE_FLAG_* macros). Any compiler error or
# warning fails, and so does a uct/ header taken from anywhere but ours.
# (src/tools/perf's UCT part is not built: it needs UCX's internal headers,
# ucs/debug/log.h, ucs/arch/bitops.h, ...)
# usage: compile_ucx_sources.sh CACHE OUR_INCLUDE CC ENUM_PROBE
set -euo pipefail
cache=${1:?usage: compile_ucx_sources.sh CACHE OUR_INCLUDE CC ENUM_PROBE}
our_include=${2:?}
cc=${3:?}
probe=${4:?}
# shellcheck source=../common/ucx_debian_source.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common/ucx_debian_source.sh"

src=$(ucx_source_files "$cache" uct-users examples/uct_hello_world.c \
      examples/hello_world_util.h test/apps/uct_info/uct_info.c)

failed=0
# Compiles $1 against our headers (UCX's other ucs/ headers, which UCT does
# not declare, come from the system's UCX after ours).
compile() {
    local source=$1
    shift
    local foreign
    foreign=$("$cc" -M -I"$our_include" "$@" "$source" | tr -s ' \\\n' '\n' |
              grep -E '/uct/' | grep -v "^$our_include/" || true)
    if [[ -n "$foreign" ]]; then
        echo "FAIL $source: uct/ headers from elsewhere than $our_include:"$'\n'"$foreign"
        failed=1
        return
    fi
    if "$cc" -c -o /dev/null -Wall -Werror -I"$our_include" "$@" "$source"; then
        echo "ok   $source"
    else
        echo "FAIL $source"
        failed=1
    fi
}

compile "$src/examples/uct_hello_world.c"
compile "$src/test/apps/uct_info/uct_info.c"
compile "$probe" -std=gnu11 -Wextra
if [[ $failed -ne 0 ]]; then
    echo "compile_ucx_sources: FAIL"
    exit 1
fi
echo "compile_ucx_sources: PASS"
