#!/usr/bin/env bash
# Runs UCX's own ucx_perftest UCT tests between two processes (through
# perftest_pair.sh) over one transport and checks each ran to the end with
# plausible figures: the "Final:" line reports every iteration asked for, a
# positive, finite latency and a positive message rate.
#
# usage: perftest_suite.sh [--iters N] [--only REGEX] [PAIR_OPTIONS...] -- TRANSPORT_ARGS...
#   PAIR_OPTIONS go to perftest_pair.sh (--preload LIB, --env K=V, ...);
#   TRANSPORT_ARGS select the transport, e.g. -x rc_mlx5 -d mlx5_0:1.
#   --only runs the cases whose name matches REGEX (grep -E).
# Prints one line per case (name, median latency in us, bandwidth MB/s,
# message rate) and a summary; exit status 0 only if every case passed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

iters=2000
only=""
pair_options=()
while (($#)); do
    case $1 in
        --iters) iters=${2:?}; shift 2 ;;
        --only) only=${2:?}; shift 2 ;;
        --) shift; break ;;
        *) pair_options+=("$1"); shift ;;
    esac
done
transport=("$@")
((${#transport[@]})) || { echo "usage: perftest_suite.sh [OPTIONS] -- -x TL -d DEV" >&2; exit 2; }

# name | ucx_perftest arguments (UCX 1.13 names: add_mr is the atomic add rate)
cases=(
    "am_lat_short|-t am_lat -D short"
    "am_lat_bcopy|-t am_lat -D bcopy"
    "am_lat_zcopy|-t am_lat -D zcopy"
    "am_bw_short|-t am_bw -D short"
    "am_bw_shortiov|-t am_bw -D shortiov"
    "am_bw_bcopy|-t am_bw -D bcopy"
    "am_bw_zcopy|-t am_bw -D zcopy -s 4096"
    "put_lat_short|-t put_lat -D short"
    "put_lat_bcopy|-t put_lat -D bcopy"
    "put_lat_zcopy|-t put_lat -D zcopy -s 4096"
    "put_bw_short|-t put_bw -D short"
    "put_bw_bcopy|-t put_bw -D bcopy"
    "put_bw_zcopy|-t put_bw -D zcopy -s 65536"
    "get_bcopy|-t get -D bcopy"
    "get_zcopy|-t get -D zcopy -s 65536"
    "add_lat_32|-t add_lat -s 4"
    "add_lat_64|-t add_lat -s 8"
    "add_mr_32|-t add_mr -s 4"
    "add_mr_64|-t add_mr -s 8"
    "fadd_32|-t fadd -s 4"
    "fadd_64|-t fadd -s 8"
    "swap_32|-t swap -s 4"
    "swap_64|-t swap -s 8"
    "cswap_32|-t cswap -s 4"
    "cswap_64|-t cswap -s 8"
)

failed=()
ran=0
for entry in "${cases[@]}"; do
    name=${entry%%|*}
    read -r -a args <<<"${entry#*|}"
    [[ -n $only ]] && ! grep -qE -- "$only" <<<"$name" && continue
    ran=$((ran + 1))
    output=$(bash "$here/perftest_pair.sh" "${pair_options[@]}" -- \
                 "${args[@]}" "${transport[@]}" -n "$iters" -w 100 -f 2>&1)
    status=$?
    # -f prints only the final figures, one line of eight numbers:
    # iterations, latency median/average/overall (us), bandwidth average/
    # overall (MB/s), message rate average/overall. The averages cover the
    # last report interval only and read "-nan" when it was empty (a slow
    # run whose last report fell on its end); the overall figures must be
    # numbers.
    final=$(grep -E '^ *[0-9]+( +(-?nan|[0-9.]+)){7} *$' <<<"$output" | tail -1)
    verdict=$(awk -v want="$iters" '
        NF == 8 {
            ok = ($1 == want)
            for (i = 2; i <= 8; i += 2) if ($i !~ /^[0-9.]+$/) ok = 0
            if ($2 <= 0 || $8 <= 0) ok = 0
            printf "%s %s %s %s\n", (ok ? "ok" : "implausible"), $2, $6, $8
            found = 1
        }
        END { if (!found) print "no-final-line" }' <<<"$final")
    read -r result lat bw rate <<<"$verdict"
    if ((status != 0)) || [[ $result != ok ]]; then
        failed+=("$name")
        printf '%-14s FAIL (exit %s, %s)\n' "$name" "$status" "$result"
        sed 's/^/    /' <<<"$output" | tail -25
    else
        printf '%-14s ok  latency %10s us  bandwidth %10s MB/s  rate %10s msg/s\n' \
            "$name" "$lat" "$bw" "$rate"
    fi
done
if ((ran == 0)); then
    echo "perftest_suite.sh: no case matches '$only'" >&2
    exit 2
fi
if ((${#failed[@]})); then
    echo "perftest_suite.sh: ${#failed[@]} of $ran cases failed: ${failed[*]}"
    exit 1
fi
echo "perftest_suite.sh: all $ran cases passed"
