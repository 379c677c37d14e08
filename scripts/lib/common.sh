# Shared by scripts/run, scripts/test and bench/run. Source it; do not run it.

# The Debian packages the build and the pipeline need.
DETOUR_BUILD_PACKAGES=(pkg-config libpq-dev libmicrohttpd-dev libzstd-dev zlib1g-dev)
DETOUR_SERVER_PACKAGES=(postgresql-15)
DETOUR_TOOL_PACKAGES=(zstd gzip curl)

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# ensure_packages PKG...: installs the missing ones as root (apt-get update once per run);
# otherwise prints the one apt line needed and fails.
ensure_packages() {
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        die "missing Debian packages; as root (su -c, or sudo where installed) run: apt-get install -y ${missing[*]}"
    fi
    log "installing ${missing[*]}"
    if [ -z "${DETOUR_APT_UPDATED:-}" ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed"
        export DETOUR_APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 \
        || die "apt-get install ${missing[*]} failed"
}

# ensure_swift: the toolchain must be on PATH (it is not a Debian package).
ensure_swift() {
    command -v swift >/dev/null 2>&1 || { [ -x /opt/swift/usr/bin/swift ] && export PATH=/opt/swift/usr/bin:$PATH; }
    command -v swift >/dev/null 2>&1 || die "the Swift toolchain (6.0 or newer) must be on PATH: https://swift.org/install"
}
