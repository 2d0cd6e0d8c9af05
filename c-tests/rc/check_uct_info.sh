#!/usr/bin/env bash
# Checks of the uct_info program (tools/uct_info):
#
#   check_uct_info.sh devices UCT_INFO MD...
#       `uct_info -d` succeeds and lists component ib, each memory domain MD
#       and the resource rc_mlx5 on MD:1.
#   check_uct_info.sh capabilities UCT_INFO
#       the rc_mlx5 interface on mlx5_0:1 opens and its capability lines are
#       there (every operation family the transport offers).
#   check_uct_info.sh config UCT_INFO
#       `uct_info -c` prints the rc_mlx5 variables with the values the
#       environment gives them.
#   check_uct_info.sh same-raw UCT_INFO OTHER_UCT_INFO LIB_DIR
#       `-d -r` of UCT_INFO and of OTHER_UCT_INFO (built against UCX's own
#       headers, run with LD_LIBRARY_PATH=LIB_DIR) print the same attributes:
#       UCX's and our struct layouts agree on every field.
#   check_uct_info.sh reference UCT_INFO UCX_INFO
#       UCT_INFO (built against UCX's headers) run on UCX itself prints every
#       "label: value" line `UCX_INFO -d` prints for each memory domain and
#       transport, with the same value: uct_info reads and shows the
#       attributes as UCX's own tool does.
set -euo pipefail

die() {
    echo "check_uct_info.sh: $*" >&2
    exit 1
}

run_uct_info() {
    local output status=0
    output=$("$@" 2>&1) || status=$?
    [[ $status -eq 0 ]] || { echo "$output" >&2; die "$* exited with status $status"; }
    printf '%s\n' "$output"
}

require_line() {
    local text=$1 pattern=$2 what=$3
    grep -qE -- "$pattern" <<<"$text" || { echo "$text" >&2; die "missing: $what"; }
}

# The lines of one resource's section: from its Transport/Device header to
# the next resource or memory domain.
resource_block() {
    local text=$1 tl=$2 dev=$3
    awk -v tl="$tl" -v dev="$dev" '
        /^# +Transport: / { in_tl = ($3 == tl); inside = 0; next }
        /^# +Device: / { inside = in_tl && ($3 == dev); next }
        /^# Memory domain: |^# Component: / { inside = 0; in_tl = 0 }
        inside { print }' <<<"$text"
}

check_devices() {
    local uct_info=$1
    shift
    local text
    text=$(run_uct_info "$uct_info" -d)
    require_line "$text" '^# Component: ib$' "component ib"
    local md
    for md in "$@"; do
        require_line "$text" "^# Memory domain: $md\$" "memory domain $md"
        grep -qF "Transport: rc_mlx5" <<<"$text" || die "no rc_mlx5 transport"
        # The device line must follow an rc_mlx5 transport line.
        awk -v dev="$md:1" '
            /^# +Transport: / { tl = $3 }
            /^# +Device: / && $3 == dev && tl == "rc_mlx5" { found = 1 }
            END { exit !found }' <<<"$text" ||
            { echo "$text" >&2; die "no rc_mlx5 resource on $md:1"; }
    done
    # Usage errors are errors; -h is not.
    "$uct_info" -h >/dev/null || die "uct_info -h failed"
    local status=0
    "$uct_info" -q >/dev/null 2>&1 || status=$?
    [[ $status -eq 2 ]] || die "uct_info -q (unknown option) exited with $status, expected 2"
    echo "OK: uct_info lists rc_mlx5 on $*"
}

check_capabilities() {
    local uct_info=$1 text block
    text=$(run_uct_info "$uct_info" -d)
    block=$(resource_block "$text" rc_mlx5 mlx5_0:1)
    [[ -n "$block" ]] || { echo "$text" >&2; die "no rc_mlx5 section for mlx5_0:1"; }
    if grep -q "failed to" <<<"$block"; then
        echo "$block" >&2
        die "the rc_mlx5 interface on mlx5_0:1 did not open or answer the query"
    fi
    local label
    for label in capabilities bandwidth latency overhead put_short put_bcopy put_zcopy \
                 get_bcopy get_zcopy am_short am_bcopy am_zcopy "am header" domain \
                 atomic_add atomic_and atomic_or atomic_xor atomic_fadd atomic_fand \
                 atomic_for atomic_fxor atomic_swap atomic_cswap connection \
                 "device address" "iface address" "ep address" "error handling"; do
        require_line "$block" "^# +$label:" "capability line '$label' of rc_mlx5"
    done
    require_line "$block" '^# +connection: .*to ep' "rc_mlx5 connects to ep"
    require_line "$block" '^# +atomic_fadd: 32, 64 bit$' "32 and 64 bit fetch-add"
    require_line "$block" '^# +ep address: [1-9][0-9]* bytes$' "a non-empty ep address"
    echo "OK: the rc_mlx5 interface on mlx5_0:1 reports its capabilities"
}

check_config() {
    local uct_info=$1 text value
    text=$(run_uct_info "$uct_info" -c)
    value=$(sed -n 's/^UCX_RC_MLX5_TX_QUEUE_LEN=//p' <<<"$text" | head -n1)
    [[ "$value" =~ ^[0-9]+$ ]] || { echo "$text" >&2; die "no UCX_RC_MLX5_TX_QUEUE_LEN=<number>"; }
    require_line "$text" '^UCX_IB_' "memory domain (UCX_IB_*) variables"
    local wanted=$((value == 128 ? 64 : 128))
    text=$(UCX_RC_MLX5_TX_QUEUE_LEN=$wanted run_uct_info "$uct_info" -c)
    require_line "$text" "^UCX_RC_MLX5_TX_QUEUE_LEN=$wanted\$" \
        "UCX_RC_MLX5_TX_QUEUE_LEN=$wanted taken from the environment"
    text=$(run_uct_info "$uct_info" -f)
    require_line "$text" '^# ' "documentation lines with -f"
    echo "OK: uct_info -c prints the configuration (default TX_QUEUE_LEN $value)"
}

check_same_raw() {
    local ours=$1 theirs=$2 lib_dir=$3 a b
    a=$(run_uct_info "$ours" -d -r)
    b=$(LD_LIBRARY_PATH="$lib_dir" run_uct_info "$theirs" -d -r)
    # The program built against UCX's headers may be warned about by the
    # loader (run_uct_info merges stderr): compare the attribute lines only.
    a=$(grep -E '^(component|md|  |#)' <<<"$a")
    b=$(grep -E '^(component|md|  |#)' <<<"$b")
    grep -q '^  resource rc_mlx5/' <<<"$a" || { echo "$a" >&2; die "no rc_mlx5 resource in -r output"; }
    if [[ "$a" != "$b" ]]; then
        diff <(echo "$a") <(echo "$b") >&2 || true
        die "the builds against our headers and against UCX's disagree"
    fi
    echo "OK: $(wc -l <<<"$a") attribute lines identical through both sets of headers"
}

# "section|label|value" for each attribute line of a -d listing; a section is
# "md <name>" or "<transport>/<device>".
attribute_records() {
    awk '
        /^# Memory domain: / { section = "md " $4; next }
        /^# Component: |^# Connection manager/ { section = ""; next }
        /^# +Transport: / { tl = $3; next }
        /^# +Device: / { section = tl "/" $3; next }
        section != "" && /^# +[^ :<][^:]*: / {
            line = $0; sub(/^# +/, "", line)
            label = line; sub(/: .*/, "", label)
            value = line; sub(/^[^:]*: /, "", value)
            print section "|" label "|" value
        }' <<<"$1"
}

check_reference() {
    local uct_info=$1 ucx_info=$2 ours theirs missing
    # The posix md's allocation limit is the free space of /dev/shm at the
    # moment of the query, which other processes change between the two
    # runs: its value is left out, its line is not.
    local shm_free='s/^(md posix[|]allocate[|]<= )[0-9]+K$/\1<free shm>/'
    ours=$(attribute_records "$("$uct_info" -d 2>/dev/null)" | sed -E "$shm_free")
    theirs=$(attribute_records "$("$ucx_info" -d 2>/dev/null)" | sed -E "$shm_free")
    [[ $(wc -l <<<"$theirs") -ge 10 ]] || die "$ucx_info -d printed almost nothing"
    grep -q '|bandwidth|' <<<"$ours" || die "uct_info printed no interface attributes"
    missing=$(grep -vxF -f <(printf '%s\n' "$ours") <<<"$theirs" || true)
    if [[ -n "$missing" ]]; then
        echo "lines of ucx_info -d that uct_info does not print the same way:" >&2
        echo "$missing" >&2
        die "uct_info disagrees with ucx_info"
    fi
    echo "OK: all $(wc -l <<<"$theirs") attribute lines of ucx_info -d printed identically"
}

[[ $# -ge 2 ]] || die "usage: check_uct_info.sh devices|capabilities|config|same-raw|reference UCT_INFO ..."
command=$1
shift
case $command in
devices) check_devices "$@" ;;
capabilities) check_capabilities "$@" ;;
config) check_config "$@" ;;
same-raw) check_same_raw "$@" ;;
reference) check_reference "$@" ;;
*) die "unknown check $command" ;;
esac
