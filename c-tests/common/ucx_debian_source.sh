# Files of UCX 1.13.1's source, taken unchanged from Debian's `ucx` source
# package when the tests run (nothing of UCX is in this repository). Sourced
# by the harnesses that build UCX's own programs against our headers.
#
#   ucx_source_files CACHE NAME PATH...
#       Makes CACHE/ucx-1.13.1-NAME hold each PATH (relative to the source
#       tree, kept as is) with a SHA256SUMS of them, downloading the package
#       once per CACHE/NAME; later calls check the cached files and reuse them.
#       Parallel callers sharing CACHE take turns. Prints the directory's path
#       (progress goes to stderr).

readonly UCX_UPSTREAM_VERSION="1.13.1"
readonly UCX_SOURCE_VERSION="$UCX_UPSTREAM_VERSION-1"

ucx_source_die() {
    echo "ucx_debian_source: $*" >&2
    exit 1
}

# shellcheck source=ucx_source_package.sh
source "$(dirname "${BASH_SOURCE[0]}")/ucx_source_package.sh"

# Copies PATH... of the unpacked source package into DEST, with their sums.
ucx_fetch_source_files() {
    local dest=$1
    shift
    local work
    work=$(mktemp -d "$(dirname "$dest")/fetch.XXXXXX")
    ucx_source_package_fetch "$work" "$UCX_SOURCE_VERSION" "$UCX_UPSTREAM_VERSION" ||
        ucx_source_die "could not fetch Debian's ucx source package"
    local tree=$UCX_SOURCE_TREE dsc_version=$UCX_SOURCE_DSC_VERSION
    rm -rf "$dest"
    mkdir -p "$dest"
    local path
    for path in "$@"; do
        [[ -f "$tree/$path" ]] || ucx_source_die "the source package has no $path"
        mkdir -p "$dest/$(dirname "$path")"
        cp "$tree/$path" "$dest/$path"
    done
    (cd "$dest" && sha256sum "$@" >SHA256SUMS)
    echo "$dsc_version" >"$dest/DEBIAN_VERSION"
    touch "$dest/.complete"
    rm -rf "$work"
    echo "cached $* of ucx $dsc_version in $dest"
}

ucx_source_files() {
    local cache=$1 name=$2
    shift 2
    local dest="$cache/ucx-$UCX_UPSTREAM_VERSION-$name"
    mkdir -p "$cache"
    (
        # Parallel CTest runs share the cache: one download at a time.
        exec 9>"$cache/.lock"
        flock 9
        if [[ -f "$dest/.complete" ]]; then
            echo "using cached $dest"
        else
            ucx_fetch_source_files "$dest" "$@"
        fi
    ) >&2 || exit 1
    (cd "$dest" && sha256sum --quiet -c SHA256SUMS) ||
        ucx_source_die "cached files in $dest were modified"
    echo "$dest"
}
