#!/usr/bin/env bash
# check-readme-claims.sh <library> <README.md>
# Every function named in a README status-table row whose status starts with
# "implemented" or "exported" must be exported by <library>: the README may
# not claim more than the library has.
set -euo pipefail
library=$1
readme=$2

exported=$(nm -D --defined-only "$library" | awk '{ print $NF }' | sort -u)
claimed=0
missing=()
while IFS= read -r row; do
    status=$(awk -F'|' '{ gsub(/^ +| +$/, "", $(NF-1)); print $(NF-1) }' <<<"$row")
    [[ $status == implemented* || $status == exported* ]] || continue
    for name in $(grep -oE '`(uct|ucs)_[A-Za-z0-9_]+`' <<<"$row" | tr -d '`'); do
        claimed=$((claimed + 1))
        grep -qx "$name" <<<"$exported" || missing+=("$name")
    done
done < <(grep -E '^\|' "$readme")

if [[ $claimed -eq 0 ]]; then
    echo "check-readme-claims: FAIL: no 'implemented'/'exported' rows found in $readme" >&2
    exit 1
fi
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "check-readme-claims: FAIL: README claims these exist, $library does not export them:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
fi
echo "check-readme-claims: all $claimed functions the README calls implemented or exported are exported"
