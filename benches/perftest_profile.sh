#!/usr/bin/env bash
# Where one message's instructions go: UCX's ucx_perftest between two
# processes on our rc_mlx5 (LD_PRELOAD=LIB_DIR/libuct.so.0), one side under
# callgrind, the other native. It runs twice, with N1 and N2 iterations,
# and prints each function's inclusive instructions per iteration,
# (count at N2 - count at N1) / (N2 - N1), so that start-up and connection
# set-up cancel out. Counts do not depend on the machine's load, but the
# number of empty progress passes per iteration does (the profiled side
# runs ~50x slower than the native one): read the functions that do the
# work (packets, completions), not PROGRAM TOTALS.
#
#   benches/perftest_profile.sh LIB_DIR client|server N1 N2 PERFTEST_ARGS...
#   e.g. UCX_SOFT_HCA_WIRE=udp benches/perftest_profile.sh build/lib client \
#            1000 3000 -t am_lat -D short -s 8
#
# TOP (default 40) rows are printed; the callgrind files stay in OUT
# (default a temporary directory).
set -euo pipefail
[[ $# -ge 5 ]] || { echo "usage: $0 LIB_DIR client|server N1 N2 PERFTEST_ARGS..." >&2; exit 2; }
lib_dir=$(realpath "$1") side=$2 n1=$3 n2=$4
shift 4
[[ $side == client || $side == server ]] || { echo "side must be client or server" >&2; exit 2; }
((n2 > n1)) || { echo "N2 must be larger than N1" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "no valgrind" >&2; exit 1; }
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/perftest_profile.XXXXXX")}
mkdir -p "$out"
here=$(dirname "$(realpath "$0")")

# perftest_pair.sh runs the same program on both sides; this one puts
# the chosen side (the client is the one given "localhost") under callgrind.
wrapper=$out/perftest_under_callgrind.sh
cat >"$wrapper" <<'EOF'
#!/usr/bin/env bash
side=server
for arg in "$@"; do [[ $arg == localhost ]] && side=client; done
if [[ $side == "$PROFILE_SIDE" ]]; then
    exec valgrind --tool=callgrind --callgrind-out-file="$PROFILE_OUT" ucx_perftest "$@"
fi
exec ucx_perftest "$@"
EOF
chmod +x "$wrapper"

for n in "$n1" "$n2"; do
    echo "profiling $side, $n iterations..." >&2
    PROFILE_SIDE=$side PROFILE_OUT=$out/callgrind.$n \
        bash "$here/../c-tests/perftest/perftest_pair.sh" --perftest "$wrapper" \
        --preload "$lib_dir/libuct.so.0" --timeout 900 -- \
        "$@" -n "$n" -w 10 -x rc_mlx5 -d mlx5_0:1 >"$out/run.$n.log" 2>&1 ||
        { echo "the run of $n iterations failed: $out/run.$n.log" >&2; exit 1; }
    # "<Ir> (<pct>)  file:function [object]" -> "<Ir><TAB>file:function [object]"
    callgrind_annotate --inclusive=yes --threshold=100 "$out/callgrind.$n" 2>/dev/null |
        sed -nE 's/^ *([0-9,]+) +\( *[0-9.]+%\) +(.*)$/\1\t\2/p' | tr -d , >"$out/inclusive.$n"
done
awk -F'\t' -v d=$((n2 - n1)) '
    NR == FNR { first[$2] = $1; next }
    ($2 in first) { x = ($1 - first[$2]) / d; if (x >= 5) printf "%10.1f  %s\n", x, $2 }' \
    "$out/inclusive.$n1" "$out/inclusive.$n2" |
    sort -rn | grep -v -e 'ucx_perftest\]' -e 'libc_start' -e 'ld-linux' -e '(below main)' |
    head -n "${TOP:-40}"
echo "callgrind files: $out" >&2
