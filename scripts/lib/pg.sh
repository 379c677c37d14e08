# shellcheck shell=bash
# pg.sh: start and stop a throwaway, project-local PostgreSQL cluster (no system service, no Docker).
#
# Source it, then:
#   pg_local_start DIR   # initdb DIR if needed, start (or reuse) the cluster, create database `detour`,
#                        # export DATABASE_URL=postgresql://<user>:<password>@127.0.0.1:<port>/detour and PG_LOCAL_PORT
#   pg_local_stop DIR    # fast shutdown; a no-op when nothing runs in DIR
#   pg_test_database NAME  # for test runners: DETOUR_TEST_DATABASE_URL = $DATABASE_URL when set, else a
#                          # throwaway cluster in /tmp/NAME.XXXXXX, stopped and removed on EXIT (a trap)
#
# The cluster listens on 127.0.0.1 only (plus a unix socket inside DIR). TCP connections need the
# superuser's password (scram-sha-256), a random one made at initdb and kept in DIR/detour-password
# (mode 600); the socket, in DIR (mode 700, so only the cluster's owner reaches it), is trusted.
# Until 2026-11-30 TCP was trusted too: any local user could connect as the superuser and run
# programs as the cluster's owner (COPY ... TO PROGRAM). A cluster made then is converted at its next
# start. It is for development and tests, never for production data. fsync stays on.
# When run as root, initdb/pg_ctl run as the `postgres` user (initdb refuses root) and DIR is chowned to it.
# Binaries: $PG_BIN, default /usr/lib/postgresql/15/bin. PG_LOCAL_READY_TIMEOUT (s, default 60): how
# long a start (crash recovery included: max_wal_size is 4GB) or a running postmaster may take to
# accept connections before pg_local_start gives up.

PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"

# Runs a command as the cluster owner: `postgres` when we are root, ourselves otherwise.
_pg_as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# The pg_hba.conf pg.sh writes: the socket (inside DIR, mode 700) trusted, TCP by password only.
_pg_hba() {
    echo "# pg.sh: the socket lives in the data directory (mode 700): only the cluster's owner reaches it."
    echo "local all all trust"
    echo "# TCP (127.0.0.1 only): the superuser's password, kept in detour-password in the data directory."
    echo "host all all 127.0.0.1/32 scram-sha-256"
    echo "host all all ::1/128 scram-sha-256"
}

# Writes DIR's authentication files as the cluster's owner: the password file (mode 600) holding
# PASSWORD, and the pg_hba.conf above.
_pg_write_auth() {
    local dir="$1" password="$2"
    (umask 077 && printf '%s\n' "$password" | _pg_as_owner tee "$dir/detour-password" >/dev/null)
    _pg_as_owner chmod 600 "$dir/detour-password"
    _pg_hba | _pg_as_owner tee "$dir/pg_hba.conf" >/dev/null
}

# A new random password (hex, so it needs no escaping in a URL).
_pg_new_password() {
    od -An -tx1 -N24 /dev/urandom | tr -d ' \n'
}

# The database user name the cluster was initialised with.
_pg_owner_name() {
    if [ "$(id -u)" -eq 0 ]; then echo postgres; else id -un; fi
}

# Prints a free TCP port on 127.0.0.1 (asks the kernel for an ephemeral one).
_pg_free_port() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
        return
    fi
    local port
    for _ in $(seq 1 50); do
        port=$(( 20000 + RANDOM % 30000 ))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
    done
    echo "pg.sh: no free port found" >&2
    return 1
}

# After a postmaster crash (SIGKILL, OOM) its backends live on until they notice, still attached to
# the shared memory; a new postmaster refuses to start beside them ("pre-existing shared memory
# block is still in use"). Waits, at most 30 s, until no process works in DIR (every PostgreSQL
# process's working directory is its data directory).
_pg_wait_for_orphans() {
    local dir="$1" proc found said="" deadline=$((SECONDS + 30))
    while [ $SECONDS -lt $deadline ]; do
        found=""
        for proc in /proc/[0-9]*; do
            # A postgres process (not the shell that runs this, whatever its directory) working in DIR.
            if [ "$proc/cwd" -ef "$dir" ] && [ "$(cat "$proc/comm" 2>/dev/null)" = postgres ]; then
                found="${proc#/proc/}"
                break
            fi
        done
        [ -z "$found" ] && return 0
        [ -z "$said" ] && echo "pg.sh: waiting for the crashed cluster's process $found to exit" >&2 && said=1
        sleep 0.1
    done
    echo "pg.sh: processes of the crashed cluster still run in $dir after 30 s; starting anyway" >&2
}

# Whether the postmaster recorded in DIR/postmaster.pid is a live postgres process. `pg_ctl status`
# only asks kill(pid, 0), which also succeeds for a zombie: a postmaster killed by SIGKILL (the OOM
# killer, a chaos test) stays one until its parent reaps it, and a container's PID 1 may never do so.
_pg_postmaster_alive() {
    local pid state
    pid="$(head -1 "$1/postmaster.pid" 2>/dev/null)"
    [ -n "$pid" ] || return 1
    state="$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$pid/status" 2>/dev/null)"
    [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ] \
        && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = postgres ]
}

# Waits, at most PG_LOCAL_READY_TIMEOUT s (60 unless set), for the live postmaster of DIR to accept
# connections on PORT (it may be starting or recovering from a crash of a backend). Returns 0 when it
# does, 2 when it died meanwhile, 1 otherwise.
_pg_wait_ready() {
    local dir="$1" port="$2" deadline=$((SECONDS + ${PG_LOCAL_READY_TIMEOUT:-60}))
    while [ $SECONDS -lt $deadline ]; do
        "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port" -t 5 && return 0
        _pg_postmaster_alive "$dir" || return 2
        sleep 0.1
    done
    return 1
}

# The port recorded in DIR/postmaster.pid (line 4), if any.
_pg_pid_port() {
    sed -n '4p' "$1/postmaster.pid" 2>/dev/null
}

pg_local_start() {
    local dir="${1:?usage: pg_local_start DIR}"
    local owner port
    owner="$(_pg_owner_name)"
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    if [ "$(id -u)" -eq 0 ]; then
        chown postgres: "$dir"
        chmod 700 "$dir"
        # The postgres user must reach DIR through its parents; open only the parents that block it.
        if ! runuser -u postgres -- test -x "$dir"; then
            local p="$dir"
            while [ "$p" != "/" ]; do
                p="$(dirname "$p")"
                if ! runuser -u postgres -- test -x "$p"; then
                    echo "pg.sh: allowing the postgres user to traverse $p (chmod o+x)" >&2
                    chmod o+x "$p"
                fi
            done
        fi
    fi

    local password="" pwfile="$dir/detour-password"
    if [ ! -s "$dir/PG_VERSION" ]; then
        echo "pg.sh: initialising a PostgreSQL cluster in $dir" >&2
        local initlog initpw
        password="$(_pg_new_password)"
        initlog="$(mktemp "${TMPDIR:-/tmp}/pg-initdb.XXXXXX")"
        # initdb reads the superuser's password from a file; mktemp makes it 600, then it is handed to
        # the cluster's owner (postgres when we are root).
        initpw="$(mktemp "${TMPDIR:-/tmp}/pg-initpw.XXXXXX")"
        printf '%s\n' "$password" >"$initpw"
        if [ "$(id -u)" -eq 0 ]; then chown postgres: "$initlog" "$initpw"; fi
        if ! _pg_as_owner "$PG_BIN/initdb" -D "$dir" -U "$owner" --auth-local=trust \
                --auth-host=scram-sha-256 --pwfile="$initpw" --encoding=UTF8 --locale=C.UTF-8 >"$initlog" 2>&1 \
            && ! _pg_as_owner "$PG_BIN/initdb" -D "$dir" -U "$owner" --auth-local=trust \
                --auth-host=scram-sha-256 --pwfile="$initpw" --encoding=UTF8 --no-locale >"$initlog" 2>&1; then
            echo "pg.sh: initdb failed:" >&2
            cat "$initlog" >&2
            rm -f "$initlog" "$initpw"
            return 1
        fi
        rm -f "$initlog" "$initpw"
        _pg_write_auth "$dir" "$password"
        {
            echo "# pg.sh: a local development cluster (listen address, port and socket come from pg_ctl -o)"
            echo "fsync = on"
            echo "synchronous_commit = on"
            echo "full_page_writes = on"
            # Holds the event_ids primary key of a 10M-event database (600 MB), which every load cycle
            # touches at random (docs/aggregator.md, "Cycle cost against the data already loaded").
            echo "shared_buffers = 1GB"
            # Fewer checkpoints: after each one, the first change of every page writes a full-page
            # image (the random event_ids keys touch a new page per key; docs/aggregator.md).
            echo "max_wal_size = 4GB"
            echo "checkpoint_timeout = 15min"
            # A 10,000-event cycle right after a checkpoint writes 50-110 MB of WAL (full-page images of
            # the event_ids key); with the default 16MB (1/32 of shared_buffers, capped) nearly every WAL
            # write happened because the buffers were full (docs/aggregator.md, "Cycle cost ...").
            echo "wal_buffers = 64MB"
            echo "max_connections = 200"
            echo "max_locks_per_transaction = 256"
            echo "logging_collector = off"
            echo "timezone = 'UTC'"
        } | _pg_as_owner tee -a "$dir/postgresql.conf" >/dev/null
    fi

    # Reuse a running cluster; clear a stale postmaster.pid left by a crash.
    local reuse=""
    if _pg_postmaster_alive "$dir"; then
        port="$(_pg_pid_port "$dir")"
        # `|| ready=$?`: called bare, a non-zero status ended a caller running under `set -e` (every
        # script here) before the case below, silently, with the status as its exit status.
        local ready=0
        _pg_wait_ready "$dir" "$port" || ready=$?
        case $ready in
            0) reuse=1 ;;
            1) echo "pg.sh: a postmaster (pid $(head -1 "$dir/postmaster.pid")) owns $dir but has not" \
                   "answered on port $port for ${PG_LOCAL_READY_TIMEOUT:-60} s; stop it first" >&2
               return 1 ;;
            *) ;; # it died while we waited: start a new one below
        esac
    fi
    if [ -n "$reuse" ]; then
        echo "pg.sh: reusing the cluster running in $dir on port $port" >&2
    else
        if [ -f "$dir/postmaster.pid" ]; then
            echo "pg.sh: removing a stale postmaster.pid in $dir" >&2
            rm -f "$dir/postmaster.pid"
            _pg_wait_for_orphans "$dir"
        fi
        port="$(_pg_free_port)" || return 1
        # A unix socket path is limited to 107 bytes; with a deep DIR, listen on TCP only.
        local socketdir="$dir"
        if [ $(( ${#dir} + 20 )) -gt 107 ]; then socketdir=""; fi
        if ! _pg_as_owner "$PG_BIN/pg_ctl" -D "$dir" -w -t "${PG_LOCAL_READY_TIMEOUT:-60}" -l "$dir/server.log" \
            -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories='$socketdir'" start >/dev/null; then
            echo "pg.sh: PostgreSQL failed to start; the end of $dir/server.log:" >&2
            tail -20 "$dir/server.log" >&2
            return 1
        fi
    fi

    # A cluster made before TCP needed a password: give the superuser one and stop trusting TCP.
    if [ ! -s "$pwfile" ]; then
        echo "pg.sh: $dir trusted every local TCP connection; setting a password and requiring it" >&2
        password="$(_pg_new_password)"
        "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$port" -U "$owner" -d postgres \
            -c "alter role \"$owner\" password '$password'" >/dev/null \
            || { echo "pg.sh: could not set the password of $owner" >&2; return 1; }
        _pg_write_auth "$dir" "$password"
        _pg_as_owner "$PG_BIN/pg_ctl" -D "$dir" reload >/dev/null \
            || { echo "pg.sh: could not reload $dir after changing pg_hba.conf" >&2; return 1; }
    fi
    password="$(_pg_as_owner cat "$pwfile")"

    # Create the application database once.
    if ! PGPASSWORD="$password" "$PG_BIN/psql" -h 127.0.0.1 -p "$port" -U "$owner" -d postgres -tAc \
        "select 1 from pg_database where datname = 'detour'" | grep -q 1; then
        PGPASSWORD="$password" "$PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U "$owner" detour 2>/dev/null \
            || PGPASSWORD="$password" "$PG_BIN/psql" -h 127.0.0.1 -p "$port" -U "$owner" -d postgres -tAc \
                "select 1 from pg_database where datname = 'detour'" | grep -q 1 \
            || { echo "pg.sh: could not create database detour" >&2; return 1; }
    fi

    export PG_LOCAL_PORT="$port"
    export DATABASE_URL="postgresql://$owner:$password@127.0.0.1:$port/detour"
    echo "pg.sh: PostgreSQL ready at postgresql://$owner:***@127.0.0.1:$port/detour" \
        "(password in $pwfile)" >&2
}

pg_local_stop() {
    local dir="${1:?usage: pg_local_stop DIR}"
    [ -f "$dir/postmaster.pid" ] || return 0
    if _pg_postmaster_alive "$dir"; then
        _pg_as_owner "$PG_BIN/pg_ctl" -D "$dir" -m fast -w -t 60 stop >/dev/null 2>&1 && return 0
        # It may have died meanwhile (killed just before): then there is nothing left to stop.
        _pg_postmaster_alive "$dir" || return 0
        echo "pg.sh: fast stop failed, trying immediate" >&2
        _pg_as_owner "$PG_BIN/pg_ctl" -D "$dir" -m immediate -w stop >/dev/null
    fi
}

# Points DETOUR_TEST_DATABASE_URL at $DATABASE_URL when it is set; otherwise starts a throwaway cluster
# in a fresh /tmp/NAME.XXXXXX and sets an EXIT trap (replacing the caller's) that stops and removes it.
pg_test_database() {
    local name="${1:?usage: pg_test_database NAME}"
    if [ -n "${DATABASE_URL:-}" ]; then
        export DETOUR_TEST_DATABASE_URL=$DATABASE_URL
        return 0
    fi
    PG_TEST_CLUSTER=$(mktemp -d "/tmp/$name.XXXXXX")
    trap '{ pg_local_stop "$PG_TEST_CLUSTER" || true; rm -rf "$PG_TEST_CLUSTER"; }' EXIT
    pg_local_start "$PG_TEST_CLUSTER"
    export DETOUR_TEST_DATABASE_URL=$DATABASE_URL
}
