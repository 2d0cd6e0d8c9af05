# UCX 1.22 as a binary: the PyPI wheel libucx-cu12==1.22.0 (ucx_info,
# ucx_perftest, libucp/libuct/libucs, built without verbs), fetched at test
# time and cached. Sourced by the ucx122_* harnesses.
#
#   ucx122_wheel CACHE
#       Downloads and unpacks the wheel once per CACHE (parallel callers take
#       turns) and prints its libucx directory (bin/, lib/); progress goes to
#       stderr.
readonly UCX122_WHEEL=libucx-cu12==1.22.0

ucx122_wheel() {
    local cache=$1
    local dest="$cache/libucx-cu12-1.22.0"
    mkdir -p "$cache"
    (
        exec 9>"$cache/.lock"
        flock 9
        [[ -f "$dest/.complete" ]] && exit 0
        work=$(mktemp -d "$cache/fetch.XXXXXX")
        echo "downloading $UCX122_WHEEL"
        python3 -m pip download -q --no-deps "$UCX122_WHEEL" -d "$work" ||
            { echo "ucx122_wheel: pip download $UCX122_WHEEL failed" >&2; exit 1; }
        rm -rf "$dest"
        mkdir -p "$dest"
        python3 -m zipfile -e "$work"/*.whl "$dest"
        # Wheels do not keep file modes.
        chmod -R u+rwx,go+rx "$dest/libucx/bin" "$dest/libucx/lib"
        rm -rf "$work"
        touch "$dest/.complete"
    ) >&2 || return 1
    echo "$dest/libucx"
}
