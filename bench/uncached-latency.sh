#!/usr/bin/env bash
# The uncached GET's throughput, p50 and p99 at 8 and 64 connections, for one build or two in
# turn, optionally with the server pinned to one core and wrk to the other. On two cores shared
# with wrk a tail can be the load generator's scheduling rather than the server's: pinning tells
# them apart (bench/README.md, "Shared read transactions on the loops").
#
#   bench/uncached-latency.sh                             # release build, unpinned
#   PIN=1 bench/uncached-latency.sh /tmp/before /tmp/after  # two builds, two rounds each, pinned
#
# On a fresh 50,000-person seed (bench/seeded-work.sh), a fresh copy of it for each server, the
# snapshot cache off; 2 s of warm-up, then 4 s at each connection count.
set -euo pipefail
cd "$(dirname "$0")/.."
PEOPLE=50000
[ $# -gt 0 ] || { swift build -c release --product buzzkit 2>&1 | tail -1; set -- .build/release/buzzkit; }
BIN=$1
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
command -v gcc >/dev/null && [ -f /usr/include/sqlite3.h ] ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libsqlite3-dev >/dev/null
SERVER_CPU=() WRK_CPU=()
if [ "${PIN:-0}" = 1 ]; then SERVER_CPU=(taskset -c 0) WRK_CPU=(taskset -c 1); fi
. bench/seeded-work.sh
seeded_work latency $PEOPLE 0
SECRET_KEY=$(tenant_field "['secretKey']")
echo '{"snapshotCacheMiB": 0, "logLevel": "warn", "clientKeyRatePerSecond": 0}' >"$WORK/config.json"
echo "build connections GETs/s p50 p99"
for round in 1 2; do
    for build in "$@"; do
        cp "$WORK/seed.sqlite" "$WORK/db.sqlite"
        rm -f "$WORK/db.sqlite-wal" "$WORK/db.sqlite-shm"
        "${SERVER_CPU[@]}" "$build" serve --port 0 --database "$WORK/db.sqlite" --config "$WORK/config.json" \
            >"$WORK/stdout" 2>"$WORK/stderr" &
        SERVER=$!
        for _ in $(seq 100); do grep -q listening "$WORK/stdout" && break; sleep 0.1; done
        BASE=$(sed -n 's/^listening on //p' "$WORK/stdout")
        "${WRK_CPU[@]}" wrk -t2 -c64 -d2s -s bench/lua/get.lua "$BASE/healthz" -- $PEOPLE "$SECRET_KEY" >/dev/null
        for conns in 8 64; do
            "${WRK_CPU[@]}" wrk -t2 -c$conns -d4s --latency -s bench/lua/get.lua "$BASE/healthz" -- \
                $PEOPLE "$SECRET_KEY" |
                awk -v b="$build" -v c=$conns '/Requests\/sec/ {r = $2} /^ +50%/ {p50 = $2} /^ +99%/ {p99 = $2}
                    END {print b, c, r, p50, p99}'
        done
        kill "$SERVER"
        wait "$SERVER" 2>/dev/null || true
        SERVER=
    done
done
