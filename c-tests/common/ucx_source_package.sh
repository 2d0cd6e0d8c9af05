# Sourced by the tests that take UCX's own sources from Debian's `ucx` source
# package at test time (c-tests/rc/hello_world, c-tests/ucx-gtest): nothing
# of UCX is in this repository.
#
#   ucx_source_package_fetch WORK SOURCE_VERSION UPSTREAM_VERSION
#       Unpacks the source package (dpkg-source applies Debian's patches)
#       below WORK/src with a private apt configuration: the system's
#       sources, lists and caches are neither read nor changed. Asks for
#       ucx=SOURCE_VERSION; if the archive moved to another Debian revision
#       of UPSTREAM_VERSION, takes that one. Sets UCX_SOURCE_TREE (the
#       unpacked ucx-* directory) and UCX_SOURCE_DSC_VERSION. Returns 1 with
#       a message on stderr on failure.

# The Debian mirror this machine already uses (deb822 .sources or one-line
# sources.list), so the download goes where apt is allowed to go.
ucx_source_package_mirror() {
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

# apt-get source needs dpkg-source (dpkg-dev).
ucx_source_package_ensure_dpkg_source() {
    command -v dpkg-source >/dev/null && return 0
    if [[ $EUID -ne 0 ]]; then
        echo "dpkg-source is missing (apt-get install dpkg-dev) and we are not root to install it" >&2
        return 1
    fi
    echo "installing dpkg-dev (apt-get source needs dpkg-source)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends dpkg-dev >/dev/null
}

ucx_source_package_fetch() {
    local work=$1 source_version=$2 upstream_version=$3
    ucx_source_package_ensure_dpkg_source || return 1
    mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/src"
    local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    local signed_by=""
    [[ -r "$keyring" ]] && signed_by="[signed-by=$keyring] "
    echo "deb-src ${signed_by}$(ucx_source_package_mirror) bookworm main" >"$work/sources.list"
    local apt_options=(
        -o "Dir::Etc::SourceList=$work/sources.list"
        -o "Dir::Etc::SourceParts=/dev/null"
        -o "Dir::State::Lists=$work/lists"
        -o "Dir::Cache=$work/cache"
    )
    # apt drops to the _apt user for downloads, which cannot write our dir.
    [[ $EUID -eq 0 ]] && apt_options+=(-o "APT::Sandbox::User=root")
    echo "fetching Debian source package ucx=$source_version ($(cat "$work/sources.list"))"
    if ! apt-get "${apt_options[@]}" -q update >"$work/update.log" 2>&1; then
        cat "$work/update.log" >&2
        echo "apt-get update (private deb-src list) failed" >&2
        return 1
    fi
    if ! (cd "$work/src" && apt-get "${apt_options[@]}" -q source "ucx=$source_version") \
        >"$work/source.log" 2>&1; then
        echo "ucx=$source_version is not in the archive; trying its current ucx"
        if ! (cd "$work/src" && apt-get "${apt_options[@]}" -q source ucx) >>"$work/source.log" 2>&1; then
            cat "$work/source.log" >&2
            echo "apt-get source ucx failed" >&2
            return 1
        fi
    fi
    UCX_SOURCE_DSC_VERSION=$(awk '$1 == "Version:" { print $2; exit }' "$work"/src/ucx_*.dsc)
    if [[ "$UCX_SOURCE_DSC_VERSION" != "${upstream_version}-"* ]]; then
        echo "the archive's ucx is $UCX_SOURCE_DSC_VERSION, not UCX $upstream_version" >&2
        return 1
    fi
    UCX_SOURCE_TREE=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'ucx-*' | head -n1)
    if [[ -z "$UCX_SOURCE_TREE" ]]; then
        echo "apt-get source produced no ucx-* directory" >&2
        return 1
    fi
}
