#!/usr/bin/env bash
# A throwaway PostgreSQL for the test suite and CI: initdb + pg_ctl into a temporary folder,
# listening on 127.0.0.1 at a free port only, with trust authentication for a superuser
# `buzzkit` that owns a database `buzzkit`.
#
#   eval "$(scripts/postgres-for-tests.sh start)"   # exports BUZZKIT_TEST_POSTGRES_URL
#   swift test
#   scripts/postgres-for-tests.sh stop
#
# PostgreSQL refuses to run as root, so when run as root the server runs as the `postgres`
# system user. `start` prints the export line on stdout (everything else goes to stderr) and
# records the instance in $STATE (default .build/test-postgres.env) for `stop`; it exits
# non-zero when the server cannot start, so CI fails instead of skipping PostgreSQL.
# fsync is off unless POSTGRES_DURABLE=1: the tests kill buzzkit, never PostgreSQL.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${STATE:-$ROOT/.build/test-postgres.env}"
command="${1:-}"

as_server_user() {
    if [ "$(id -u)" = 0 ]; then
        # runuser keeps no root privileges; -u needs no login shell for the system user.
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start() {
    if [ -f "$STATE" ]; then
        # shellcheck disable=SC1090
        . "$STATE"
        if as_server_user pg_ctl -D "$PGDATA_DIR" status >/dev/null 2>&1; then
            echo "test PostgreSQL already running on port $PG_PORT ($PGDATA_DIR)" >&2
            echo "export BUZZKIT_TEST_POSTGRES_URL=$URL"
            return
        fi
        rm -f "$STATE"
    fi
    for tool in initdb pg_ctl psql; do
        command -v "$tool" >/dev/null || { echo "postgres-for-tests: $tool is not on PATH" >&2; exit 1; }
    done
    local dir port url
    dir="$(mktemp -d "${TMPDIR:-/tmp}/buzzkit-test-postgres.XXXXXX")"
    chmod 755 "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    as_server_user initdb -D "$dir/data" -U buzzkit --auth=trust --encoding=UTF8 --locale=C >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2; echo "postgres-for-tests: initdb failed" >&2; exit 1; }
    local fsync=off
    [ "${POSTGRES_DURABLE:-0}" = 1 ] && fsync=on
    # Another instance may take the port between free_port and the bind: try a few.
    local attempt
    for attempt in 1 2 3 4 5; do
        port="$(free_port)"
        if as_server_user pg_ctl -D "$dir/data" -l "$dir/server.log" -w -t 60 start -o \
            "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c max_connections=300 -c fsync=$fsync -c shared_buffers=64MB" \
            >&2; then
            break
        fi
        port=""
    done
    if [ -z "$port" ]; then
        tail -n 30 "$dir/server.log" >&2 || true
        echo "postgres-for-tests: the server did not start" >&2
        exit 1
    fi
    url="postgres://buzzkit@127.0.0.1:$port/buzzkit"
    as_server_user psql -h 127.0.0.1 -p "$port" -U buzzkit -d postgres -qAt -c "CREATE DATABASE buzzkit" >&2
    mkdir -p "$(dirname "$STATE")"
    printf 'PGDATA_DIR=%q\nPG_DIR=%q\nPG_PORT=%q\nURL=%q\n' "$dir/data" "$dir" "$port" "$url" >"$STATE"
    echo "test PostgreSQL on 127.0.0.1:$port ($dir)" >&2
    echo "export BUZZKIT_TEST_POSTGRES_URL=$url"
}

stop() {
    [ -f "$STATE" ] || { echo "postgres-for-tests: nothing recorded in $STATE" >&2; return 0; }
    # shellcheck disable=SC1090
    . "$STATE"
    as_server_user pg_ctl -D "$PGDATA_DIR" -m fast -w stop >&2 || true
    rm -rf "$PG_DIR"
    rm -f "$STATE"
}

case "$command" in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
