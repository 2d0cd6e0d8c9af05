#!/usr/bin/env bash
# Our library exports UCX 1.13's whole public UCT surface, derived now from
# Debian's UCX 1.13 headers and libraries:
#  A. every name that the preprocessed uct/api/{uct.h,uct_def.h,tl.h,version.h}
#     (with the ucs/ headers they include) mention and that UCX's libuct or
#     libucs exports: the functions and data objects those headers declare,
#     and those their inline functions call;
#  B. every uct_* name UCX 1.13's libucp.so.0 imports.
# Fails on any name we do not export, and prints both lists' sizes.
#
# usage: check_public_surface.sh OUR_LIBRARY UCX_INCLUDE_DIR UCX_LIB_DIR [CC]
set -uo pipefail
ours=${1:?usage: check_public_surface.sh OUR_LIBRARY UCX_INCLUDE_DIR UCX_LIB_DIR [CC]}
include_dir=${2:?}
lib_dir=${3:?}
cc=${4:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

printf '#include <uct/api/%s>\n' uct.h uct_def.h tl.h version.h >"$work/headers.c"
"$cc" -E -P -I"$include_dir" "$work/headers.c" -o "$work/headers.i" || exit 1
grep -oE '\b[A-Za-z_][A-Za-z0-9_]*\b' "$work/headers.i" | sort -u >"$work/identifiers"
nm -D --defined-only "$lib_dir/libuct.so.0" "$lib_dir/libucs.so.0" |
    awk 'NF == 3 { print $3 }' | sed 's/@.*//' | sort -u >"$work/ucx_exports"
comm -12 "$work/identifiers" "$work/ucx_exports" >"$work/list_a"
nm -D --undefined-only "$lib_dir/libucp.so.0" | awk '{ print $2 }' | sed 's/@.*//' |
    grep '^uct_' | sort -u >"$work/list_b"
nm -D --defined-only "$ours" | awk 'NF == 3 { print $3 }' | sort -u >"$work/ours"

count_a=$(wc -l <"$work/list_a")
count_b=$(wc -l <"$work/list_b")
echo "check_public_surface: A: $count_a names of UCX 1.13's uct/api headers exported by its libuct/libucs"
echo "check_public_surface: B: $count_b uct_* names UCX 1.13's libucp imports"
# Guards against an empty derivation passing trivially (1.13.1: 106 and 58).
if ((count_a < 80 || count_b < 40)); then
    echo "check_public_surface: the lists are implausibly short; is libucx-dev installed?" >&2
    exit 1
fi
missing=$(sort -u "$work/list_a" "$work/list_b" | comm -23 - "$work/ours")
if [[ -n $missing ]]; then
    echo "check_public_surface: $(wc -l <<<"$missing") names missing from $ours:"
    sed 's/^/  /' <<<"$missing"
    exit 1
fi
echo "check_public_surface: PASS (all $(sort -u "$work/list_a" "$work/list_b" | wc -l) names exported)"
