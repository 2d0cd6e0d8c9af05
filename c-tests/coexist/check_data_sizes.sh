#!/usr/bin/env bash
# Every data object our library exports that UCX 1.13's libucs/libuct also
# export has exactly UCX's size (nm -S, read from Debian's libraries now), so
# a 1.13-built binary that copies it at load time (copy relocation) gets no
# "has different size" warning and reads UCX's contents. Then runs such a
# binary (copy_tables, built against Debian's headers) with our library
# preloaded: no loader warning, and the tables read as UCX's.
#
# usage: check_data_sizes.sh OUR_LIBRARY UCX_LIB_DIR COPY_TABLES_PROGRAM
set -uo pipefail
ours=${1:?usage: check_data_sizes.sh OUR_LIBRARY UCX_LIB_DIR COPY_TABLES_PROGRAM}
ucx_dir=${2:?}
program=${3:?}

data_objects() { nm -D -S --defined-only "$@" | awk 'NF == 4 && $3 ~ /^[BDRVGS]$/ { print $4, $2 }' | sort -u; }

ucx=$(data_objects "$ucx_dir/libucs.so.0" "$ucx_dir/libuct.so.0")
[[ -n $ucx ]] || { echo "check_data_sizes: no data objects in $ucx_dir/libuc[st].so.0" >&2; exit 1; }
compared=0
bad=0
while read -r name size; do
    ucx_size=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$ucx")
    [[ -z $ucx_size ]] && continue
    compared=$((compared + 1))
    if ((16#$size != 16#$ucx_size)); then
        echo "size mismatch: $name is $((16#$size)) bytes here, $((16#$ucx_size)) in UCX 1.13"
        bad=$((bad + 1))
    else
        echo "same size: $name ($((16#$size)) bytes)"
    fi
done < <(data_objects "$ours")
echo "check_data_sizes: $compared data objects shared with UCX 1.13, $bad of other size"
((compared >= 8)) || { echo "check_data_sizes: expected at least the 8 name tables and topology objects" >&2; exit 1; }
((bad == 0)) || exit 1

output=$(LD_PRELOAD=$ours "$program" 2>&1)
status=$?
echo "$output"
if ((status != 0)); then
    echo "check_data_sizes: $program exited $status" >&2
    exit 1
fi
if grep -q "different size" <<<"$output"; then
    echo "check_data_sizes: the loader warned about a size" >&2
    exit 1
fi
grep -q "^ucs_memory_type_names: host cuda cuda-managed rocm rocm-managed unknown (end)$" <<<"$output" ||
    { echo "check_data_sizes: ucs_memory_type_names does not read as UCX 1.13's" >&2; exit 1; }
echo "check_data_sizes: PASS"
