#!/usr/bin/env bash
# UCP tag latency and bandwidth (benches/ucp_tag_bench.c, Debian's libucp
# 1.13, wired up through a connection manager: the sockaddr client-server
# path MPI-style users take), two processes on this host:
#   - ours: our libuct.so.0 preloaded, rc_mlx5 on the soft HCA, our `rdmacm`;
#   - UCX 1.13's own tcp (UCX_TLS=tcp), its tcp connection manager doing the
#     wire-up, and its shared memory (UCX_TLS=sm,self: posix, sysv, cma),
#     wired up by worker address (UCX 1.13 puts no shared-memory lane on a
#     connection-manager ep).
# Prints one table with ours / UCX ratios (latency: lower is better;
# bandwidth: higher is better).
#
#   benches/ucp_bench.sh LIB_DIR [SCALE [OUT_DIR]]
#
# SCALE multiplies the iteration counts (default 1). Each run's output stays
# in OUT_DIR (default a temporary directory). Called by benches/run.sh.
set -uo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 LIB_DIR [SCALE [OUT_DIR]]" >&2; exit 2; }
lib_dir=$(realpath "$1")
scale=${2:-1}
out=${3:-$(mktemp -d "${TMPDIR:-/tmp}/ucp_bench.XXXXXX")}
mkdir -p "$out"
here=$(dirname "$(realpath "$0")")
[[ -e "$lib_dir/libuct.so.0" ]] || { echo "no libuct.so.0 in $lib_dir" >&2; exit 1; }
"${CC:-cc}" -std=gnu99 -O2 -Wall -o "$out/ucp_tag_bench" "$here/ucp_tag_bench.c" -lucp -lucs ||
    { echo "cannot build ucp_tag_bench (Debian's libucx-dev)" >&2; exit 1; }

# name | environment of both processes (space-separated VAR=value words)
configs=(
    "ours_rc_mlx5|LD_PRELOAD=$lib_dir/libuct.so.0 UCX_SOFT_HCA_DEVICES=mlx5_0@127.0.0.1"
    "ucx_tcp|UCX_TLS=tcp"
    "ucx_sm|UCX_TLS=sm,self UCP_TAG_BENCH_WIREUP=address"
)

# Runs one configuration: server in the background, client in front.
run_pair() {
    local name=$1 env=$2 port="" server
    # shellcheck disable=SC2086 # env is a list of VAR=value words
    env $env timeout -k 5 600 stdbuf -oL "$out/ucp_tag_bench" server 127.0.0.1 0 \
        >"$out/$name.server" 2>&1 &
    server=$!
    for _ in $(seq 300); do
        port=$(sed -n 's/^listening on port \([0-9]*\)$/\1/p' "$out/$name.server")
        [[ -n "$port" ]] && break
        kill -0 "$server" 2>/dev/null || break
        sleep 0.1
    done
    if [[ -z "$port" ]]; then
        echo "  $name: the server did not listen: $(tail -n 1 "$out/$name.server")" >&2
        kill "$server" 2>/dev/null
        return
    fi
    # shellcheck disable=SC2086
    if ! env $env timeout -k 5 600 "$out/ucp_tag_bench" client 127.0.0.1 "$port" "$scale" \
        >"$out/$name.txt" 2>"$out/$name.err"; then
        echo "  $name failed: $(grep -m1 FAIL "$out/$name.err" || tail -n 1 "$out/$name.err")" >&2
    fi
    wait "$server" 2>/dev/null
}

names=()
for config in "${configs[@]}"; do
    IFS='|' read -r name env <<<"$config"
    names+=("$name")
    echo "running $name..." >&2
    run_pair "$name" "$env"
done

(cd "$out" && awk -v names="${names[*]}" '
    BEGIN { n = split(names, name, " ") }
    FNR == 1 { for (i = 1; i <= n; i++) if (FILENAME == name[i] ".txt") file = i }
    $1 ~ /^tag_/ {
        key = $1 " " $2
        if (!(key in seen)) { seen[key] = 1; order[++rows] = key }
        value[key, file] = $3
    }
    function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
    function show(v) { return v == "" ? "-" : v }
    END {
        printf "%-8s %8s %-5s", "test", "size", "unit"
        for (i = 1; i <= n; i++) printf " %13s", name[i]
        for (i = 2; i <= n; i++) printf " %10s", "ours/" substr(name[i], 5)
        printf "\n"
        for (r = 1; r <= rows; r++) {
            split(order[r], k, " ")
            printf "%-8s %8s %-5s", k[1], k[2], k[1] == "tag_lat" ? "usec" : "MB/s"
            for (i = 1; i <= n; i++) printf " %13s", show(value[order[r], i])
            for (i = 2; i <= n; i++) printf " %10s", ratio(value[order[r], 1], value[order[r], i])
            printf "\n"
        }
    }' "${names[@]/%/.txt}")
echo "(runs in $out)"
