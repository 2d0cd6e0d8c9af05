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

# The Debian mirror this machine already uses (deb822 .sources or one-line
# sources.list), so the download goes where apt is allowed to go.
ucx_debian_mirror() {
    local file uri
    for file in /etc/apt/sources.list.d/*.sources; do
        [[ -r "$file" ]] || continue
        uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }' "$file")
        if [[ -n "$uri" ]]; then
            echo "${uri%/}"
            return
        fi
    done
    for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -r "$file" ]] || continue
        uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:\/\/.*\/debian\/?$/) { print $i; exit } }' "$file")
        if [[ -n "$uri" ]]; then
            echo "${uri%/}"
            return
        fi
    done
    echo "http://deb.debian.org/debian"
}

ucx_ensure_dpkg_source() {
    command -v dpkg-source >/dev/null && return
    if [[ $EUID -ne 0 ]]; then
        ucx_source_die "dpkg-source is missing (apt-get install dpkg-dev) and we are not root to install it"
    fi
    echo "installing dpkg-dev (apt-get source needs dpkg-source)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends dpkg-dev >/dev/null
}

# Downloads and unpacks the source package with a private apt configuration:
# the system's sources, lists and caches are neither read nor changed.
ucx_fetch_source_files() {
    local dest=$1
    shift
    ucx_ensure_dpkg_source
    local work
    work=$(mktemp -d "$(dirname "$dest")/fetch.XXXXXX")
    mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/src"
    local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    local signed_by=""
    [[ -r "$keyring" ]] && signed_by="[signed-by=$keyring] "
    echo "deb-src ${signed_by}$(ucx_debian_mirror) bookworm main" >"$work/sources.list"
    local apt_options=(
        -o "Dir::Etc::SourceList=$work/sources.list"
        -o "Dir::Etc::SourceParts=/dev/null"
        -o "Dir::State::Lists=$work/lists"
        -o "Dir::Cache=$work/cache"
    )
    # apt drops to the _apt user for downloads, which cannot write our temp dir.
    [[ $EUID -eq 0 ]] && apt_options+=(-o "APT::Sandbox::User=root")
    echo "fetching Debian source package ucx=$UCX_SOURCE_VERSION ($(cat "$work/sources.list"))"
    apt-get "${apt_options[@]}" -q update >"$work/update.log" 2>&1 ||
        { cat "$work/update.log" >&2; ucx_source_die "apt-get update (private deb-src list) failed"; }
    # The Debian revision we know first; if the archive moved to another
    # revision of the same upstream release, that one (checked below).
    if ! (cd "$work/src" && apt-get "${apt_options[@]}" -q source "ucx=$UCX_SOURCE_VERSION") \
        >"$work/source.log" 2>&1; then
        echo "ucx=$UCX_SOURCE_VERSION is not in the archive; trying its current ucx"
        (cd "$work/src" && apt-get "${apt_options[@]}" -q source ucx) >>"$work/source.log" 2>&1 ||
            { cat "$work/source.log" >&2; ucx_source_die "apt-get source ucx failed"; }
    fi
    local dsc_version
    dsc_version=$(awk '$1 == "Version:" { print $2; exit }' "$work"/src/ucx_*.dsc)
    [[ "$dsc_version" == "${UCX_UPSTREAM_VERSION}-"* ]] ||
        ucx_source_die "the archive's ucx is $dsc_version, not UCX $UCX_UPSTREAM_VERSION"
    local tree
    tree=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'ucx-*' | head -n1)
    [[ -n "$tree" ]] || ucx_source_die "apt-get source produced no ucx-* directory"
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
