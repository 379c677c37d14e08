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
    # Debian's postgresql-15 makes a cluster, 15/main, and runs it as a system service (port 5432,
    # started at every boot; where services may start, not in a Docker build). The scripts run a
    # project-local cluster of their own and promise no system service (README): a 15/main that this
    # install creates is removed again. One that existed before is left alone.
    local new_main=0
    case " ${missing[*]} " in *" postgresql-15 "*) [ -e /etc/postgresql/15/main ] || new_main=1 ;; esac
    if [ -z "${DETOUR_APT_UPDATED:-}" ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed"
        export DETOUR_APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 \
        || die "apt-get install ${missing[*]} failed"
    if [ "$new_main" = 1 ] && [ -e /etc/postgresql/15/main ]; then
        log "removing the system cluster 15/main that installing postgresql-15 created (not used here)"
        pg_dropcluster --stop 15 main >&2 || log "could not remove it; as root: pg_dropcluster --stop 15 main"
    fi
}

# ensure_swift: the toolchain must be on PATH (it is not a Debian package), 6.2 or newer: the code
# uses the standard library's InlineArray and Span (an older one failed half-way through the build).
ensure_swift() {
    command -v swift >/dev/null 2>&1 || { [ -x /opt/swift/usr/bin/swift ] && export PATH=/opt/swift/usr/bin:$PATH; }
    command -v swift >/dev/null 2>&1 || die "the Swift toolchain (6.2 or newer) must be on PATH: https://swift.org/install"
    local major minor
    read -r major minor < <(swift --version 2>/dev/null \
        | sed -n 's/.*Swift version \([0-9][0-9]*\)\.\([0-9][0-9]*\).*/\1 \2/p' | head -1) || true
    if [ -n "${major:-}" ] && { [ "$major" -lt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -lt 2 ]; }; }; then
        die "Swift $major.$minor is on PATH; detour-analytics needs 6.2 or newer: https://swift.org/install"
    fi
}
