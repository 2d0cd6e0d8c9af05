#!/usr/bin/env bash
# Runs a two-process interop command (perftest_pair.sh or
# uct_hello_world.sh, which take --server-env/--client-env) and then checks,
# from the dynamic loader's own record (LD_DEBUG=libs), that each side ran on
# the libuct it was meant to: the side named by --ours initialised OUR_LIB and
# not UCX_LIB, the other side UCX_LIB and not OUR_LIB. Without this, a wrong
# LD_LIBRARY_PATH or preload would let two UCX processes (or two of ours)
# pass as an interop pair.
#
# usage: check_sides.sh --ours server|client --our-lib PATH --ucx-lib PATH \
#            -- COMMAND [ARGS...]
# The env options are inserted before COMMAND's first `--` (perftest_pair.sh
# passes what follows it to ucx_perftest), or appended when it has none.
set -euo pipefail

ours_side="" our_lib="" ucx_lib=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --ours) ours_side=${2:?}; shift 2 ;;
        --our-lib) our_lib=${2:?}; shift 2 ;;
        --ucx-lib) ucx_lib=${2:?}; shift 2 ;;
        --) shift; break ;;
        *) echo "check_sides.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
case $ours_side in
    server) ucx_side=client ;;
    client) ucx_side=server ;;
    *) echo "check_sides.sh: --ours must be server or client" >&2; exit 2 ;;
esac
[[ -n $our_lib && -n $ucx_lib && $# -gt 0 ]] || {
    echo "usage: check_sides.sh --ours server|client --our-lib PATH --ucx-lib PATH -- COMMAND..." >&2
    exit 2
}
our_lib=$(realpath "$our_lib")
ucx_lib=$(realpath "$ucx_lib")

trace=$(mktemp -d /tmp/check_sides.XXXXXX)
trap 'rm -rf "$trace"' EXIT
trace_opts=(--server-env LD_DEBUG=libs --server-env "LD_DEBUG_OUTPUT=$trace/server"
            --client-env LD_DEBUG=libs --client-env "LD_DEBUG_OUTPUT=$trace/client")

command=()
inserted=0
for arg in "$@"; do
    if [[ $arg == -- && $inserted == 0 ]]; then
        command+=("${trace_opts[@]}")
        inserted=1
    fi
    command+=("$arg")
done
[[ $inserted == 1 ]] || command+=("${trace_opts[@]}")

status=0
"${command[@]}" || status=$?
if [[ $status -ne 0 ]]; then
    exit "$status"
fi

# initialised SIDE LIB: true when a process of SIDE ran LIB's initialisers
# (LD_DEBUG=libs writes "calling init: PATH" per object, one file per pid).
initialised() {
    local files=("$trace/$1".*)
    [[ -e ${files[0]} ]] || return 1
    local path
    while read -r path; do
        [[ $(realpath "$path" 2>/dev/null) == "$2" ]] && return 0
    done < <(sed -n 's/.*calling init: //p' "${files[@]}")
    return 1
}

verdict=0
[[ -e $(compgen -G "$trace/server.*" | head -n 1) ]] || { echo "check_sides: no loader record of the server" >&2; exit 1; }
[[ -e $(compgen -G "$trace/client.*" | head -n 1) ]] || { echo "check_sides: no loader record of the client" >&2; exit 1; }
if ! initialised "$ours_side" "$our_lib"; then
    echo "check_sides: FAIL: the $ours_side (meant to be ours) never loaded $our_lib" >&2
    verdict=1
fi
if initialised "$ours_side" "$ucx_lib"; then
    echo "check_sides: FAIL: the $ours_side (meant to be ours) loaded UCX's $ucx_lib" >&2
    verdict=1
fi
if ! initialised "$ucx_side" "$ucx_lib"; then
    echo "check_sides: FAIL: the $ucx_side (meant to be UCX's) never loaded $ucx_lib" >&2
    verdict=1
fi
if initialised "$ucx_side" "$our_lib"; then
    echo "check_sides: FAIL: the $ucx_side (meant to be UCX's) loaded our $our_lib" >&2
    verdict=1
fi
[[ $verdict -eq 0 ]] && echo "check_sides: $ours_side on $our_lib, $ucx_side on $ucx_lib"
exit "$verdict"
