# Sourced by scripts/test-all.sh and scripts/demo.sh: installs what a fresh
# Debian machine with only Rust and gcc lacks, and nothing that is present.

# Debian packages the build and the demo use. libucx-dev/ucx-utils: UCX 1.13
# itself, for the drop-in programs (built against UCX's own headers).
UCT_APT_PACKAGES=(cmake make pkg-config gcc g++ libc6-dev binutils libucx-dev ucx-utils)
# Only the tests need these. tshark: the wire test checks our RoCEv2 packets
# with Wireshark's dissector.
# valgrind: the leak tests (c-tests/leak).
# dpkg-dev, iproute2 (ss), procps (pgrep): the rc hello-world test unpacks
# UCX 1.13.1's source package and watches its server's listening socket.
# libibverbs-dev (pulls libibverbs1, ibverbs-providers): the verbs tests
# check our FFI against its headers and load rdma-core with no device.
# ibverbs-utils (ibv_devinfo, ibv_devices), util-linux (unshare),
# python3 (a free TCP port): the thirdparty tests run Debian's programs on
# the verbs stand-in.
# autoconf, automake, libtool, g++, librdmacm-dev, libnuma-dev: the ucx-gtest
# tests build UCX 1.13.1 and its gtest from Debian's source package (with
# verbs, mlx5 direct verbs and rdmacm).
UCT_TEST_APT_PACKAGES=(tshark dpkg-dev iproute2 procps libibverbs-dev valgrind
                       ibverbs-utils util-linux python3
                       autoconf automake libtool g++ librdmacm-dev libnuma-dev)
# Cargo subcommands/tools (installed with `cargo install --locked` if missing).
UCT_CARGO_TOOLS=()
# rustup components.
UCT_RUSTUP_COMPONENTS=(rustfmt clippy)

uct_log() { printf '\n=== %s\n' "$*"; }

# rustup installs into ~/.cargo/bin, which a non-login shell (CI) may not
# have on its PATH.
if ! command -v cargo >/dev/null && [[ -x ${CARGO_HOME:-$HOME/.cargo}/bin/cargo ]]; then
    PATH=${CARGO_HOME:-$HOME/.cargo}/bin:$PATH
    export PATH
fi

# Runs a command as root: directly when we are root (CI), else through sudo
# without a password prompt (no stdin in CI).
uct_as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    else
        sudo -n "$@"
    fi
}

# uct_ensure_apt_packages <package>...
uct_ensure_apt_packages() {
    if ! command -v dpkg-query >/dev/null; then
        echo "prerequisites: not a Debian system; make sure these are installed: $*"
        return 0
    fi
    local missing=() package
    for package in "$@"; do
        [[ $(dpkg-query -W -f='${Status}' "$package" 2>/dev/null) == "install ok installed" ]] ||
            missing+=("$package")
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        return 0
    fi
    uct_log "installing Debian packages: ${missing[*]}"
    uct_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null &&
        uct_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
            --no-install-recommends "${missing[@]}" </dev/null
}

uct_ensure_rust_tools() {
    command -v cargo >/dev/null || { echo "prerequisites: cargo not found (install Rust)" >&2; return 1; }
    local component tool
    if command -v rustup >/dev/null; then
        local installed
        installed=$(rustup component list --installed 2>/dev/null)
        for component in "${UCT_RUSTUP_COMPONENTS[@]}"; do
            grep -q "^$component" <<<"$installed" ||
                rustup component add "$component" </dev/null || return 1
        done
    fi
    for tool in "${UCT_CARGO_TOOLS[@]}"; do
        command -v "$tool" >/dev/null || cargo install --locked "$tool" </dev/null || return 1
    done
}

# uct_ensure_prerequisites [--for-tests]
uct_ensure_prerequisites() {
    local packages=("${UCT_APT_PACKAGES[@]}")
    [[ ${1:-} == --for-tests ]] && packages+=("${UCT_TEST_APT_PACKAGES[@]}")
    uct_ensure_apt_packages "${packages[@]}" && uct_ensure_rust_tools
}
