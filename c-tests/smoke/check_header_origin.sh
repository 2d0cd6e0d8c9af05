#!/usr/bin/env bash
# check_header_origin.sh <cc> <include dir> <source> [extra cflags...]
# Fails if compiling <source> with -I<include dir> pulls any uct/ or ucs/
# header from anywhere else (e.g. /usr/include from libucx-dev): a header we
# forgot to generate must not be silently replaced by UCX's own.
set -euo pipefail
cc=$1
include_dir=$(realpath "$2")
source=$3
shift 3

deps=$("$cc" -M -I"$include_dir" "$@" "$source" | tr -s ' \\' '\n\n' | grep -E '/(uct|ucs)/' | sort -u || true)
[[ -n $deps ]] || { echo "check_header_origin: FAIL: no uct/ucs header included at all" >&2; exit 1; }
foreign=$(while read -r header; do
    [[ -z $header ]] && continue
    resolved=$(realpath "$header")
    [[ $resolved == "$include_dir"/* ]] || echo "$resolved"
done <<<"$deps")
if [[ -n $foreign ]]; then
    echo "check_header_origin: FAIL: headers not from $include_dir:" >&2
    echo "$foreign" >&2
    exit 1
fi
echo "check_header_origin: all $(wc -l <<<"$deps") uct/ucs headers come from $include_dir"
