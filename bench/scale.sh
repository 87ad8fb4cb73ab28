#!/usr/bin/env bash
# Scale scenario (issue 14): the same figures on a small tenant and a grown one, in one run, so
# every figure is a ratio large/small that the machine's load hits alike.
#
#   bench/scale.sh                                   # 1,000,000 subscribers, 20,000,000 events
#   LARGE=1000000 EVENTS=2000000 RUNS=2 DUR=3 bench/scale.sh   # fewer events on a slow machine
#
# Both databases are seeded directly with SQL through the sqlite3 CLI (generate_series, one
# transaction, journal_mode=OFF and synchronous=OFF while seeding, then WAL), with the schema the
# server's own `migrate` created. Each holds:
#   - PEOPLE identified subscribers user_000000…, each with its id as alias and one attribute;
#     every second one merged: an anonymous alias, a device, a `$subscriber.merged` event;
#   - user_000000 with HEAVY (100,000) events, the timeline scenario's subscriber;
#   - the other events spread evenly over the rest (EVENTS in all on the large database,
#     EVENTS × SMALL / LARGE on the small one: the same events per person);
#   - a pool of never-identified anonymous subscribers that the identify runs rename.
# Raw output goes to bench/out/scale-<timestamp>/; the table is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SMALL=${SMALL:-50000}
LARGE=${LARGE:-1000000}
EVENTS=${EVENTS:-20000000}
HEAVY=${HEAVY:-100000}
RUNS=${RUNS:-3}
DUR=${DUR:-3}
# Anonymous ids one identify run may rename (2 wrk threads × SPAN/2): room for 60,000 renames a
# second, as in run.sh (at 40,000 a run, a 37,000-a-second machine ran out in 3 s).
SPAN=${SPAN:-$((DUR * 60000))}
POOL=$((SPAN * RUNS))
HOT=${HOT:-10000}     # people the cached GET reads (fit in the snapshot cache on both sizes)
SAMPLE=${SAMPLE:-50000}  # people the uncached GET reads, spread over the whole tenant
LIMIT=100             # page size of the list scenario; page 5,000 starts after key 499,900
WORKSPACE_KEY=bk_ws_BenchBenchBenchBenchBenchBench12
export PATH=/opt/swift/usr/bin:$PATH
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
sqlite3 :memory: "SELECT count(*) FROM dbstat" >/dev/null  # needs SQLITE_ENABLE_DBSTAT_VTAB (Debian has it)

OUT=$ROOT/bench/out/scale-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
RESULTS=$OUT/results.tsv
: >"$RESULTS"
{ echo "date: $(date -Is)"; echo "host: $(uname -srm), $(nproc) cores"; echo "loadavg at start: $(cat /proc/loadavg)"
  echo "git: $(git rev-parse --short HEAD)$(git diff --quiet || echo +dirty)"
  echo "SMALL=$SMALL LARGE=$LARGE EVENTS=$EVENTS HEAVY=$HEAVY RUNS=$RUNS DUR=$DUR"; } | tee "$OUT/machine.txt"

[ -n "${SKIP_BUILD:-}" ] || swift build -c release 2>&1 | tail -1
BUZZKIT=${BUZZKIT:-$ROOT/.build/release/buzzkit}
WORK=$(mktemp -d -p "$ROOT/bench/out" scale-work.XXXXXX)
SERVER_PID=
cleanup() { [ -z "$SERVER_PID" ] || kill "$SERVER_PID" 2>/dev/null || true; sleep 0.3; rm -rf "$WORK"; }
trap cleanup EXIT
record() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"; }  # FIGURE SIZE RUN VALUE
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# --- seeding -----------------------------------------------------------------------------------
export BUZZKIT_BOOTSTRAP_WORKSPACE_KEY=$WORKSPACE_KEY
# seed NAME PEOPLE EVENTS: a migrated database with a tenant, filled by one SQL transaction.
seed() {
    local name=$1 people=$2 events=$3 db=$WORK/$1.sqlite
    "$BUZZKIT" migrate --database "$db" >/dev/null
    "$BUZZKIT" tenant create bench --database "$db" >"$WORK/$name-tenant.json"
    local tenant per start
    tenant=$(python3 -c "import json; print(json.load(open('$WORK/$name-tenant.json'))['tenant']['id'])")
    per=$(((events - HEAVY) / (people - 1)))   # events per person but the heavy one
    start=$(now_ms)
    sqlite3 "$db" <<SQL
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
PRAGMA cache_size = -1048576;
BEGIN;
CREATE TEMP TABLE k AS SELECT value AS key FROM generate_series(1, $people);
INSERT INTO subscribers (key, tenant_id, id, anonymous, verified, email, email_subscribed, last_seq, event_count,
                         created_at, updated_at)
SELECT key, '$tenant', printf('user_%06d', key - 1), 0, key % 4 = 0, NULL, 0,
       CASE WHEN key = 1 THEN $HEAVY ELSE $per END, CASE WHEN key = 1 THEN $HEAVY ELSE $per END,
       1700000000000, 1700000000000 FROM k;
INSERT INTO aliases (tenant_id, alias, subscriber_key) SELECT '$tenant', printf('user_%06d', key - 1), key FROM k;
INSERT INTO aliases (tenant_id, alias, subscriber_key)
SELECT '$tenant', printf('anon_m%020d', key), key FROM k WHERE key % 2 = 0;
INSERT INTO attributes (subscriber_key, name, value, set_by_backend) SELECT key, 'plan', '"pro"', 0 FROM k;
INSERT INTO devices (subscriber_key, device_id, platform, app_version, os_version, model, locale, time_zone,
                     last_seen_at)
SELECT key, printf('dev-%d', key), 'ios', '2.3.1', '18.1', 'iPhone16,2', 'en-US', 'Europe/Berlin', 1700000000000
FROM k WHERE key % 2 = 0;
INSERT INTO events (subscriber_key, seq, client_id, name, timestamp, received_at, properties)
SELECT 1, value, 'h' || value, 'screen_view', 1690000000000 + value, 1700000000000, '{"screen":"home","index":7}'
FROM generate_series(1, $HEAVY);
-- Merged people's first event is the merge marker, as a link leaves it.
INSERT INTO events (subscriber_key, seq, client_id, name, timestamp, received_at, properties)
SELECT k.key, e.value,
       CASE WHEN e.value = 1 AND k.key % 2 = 0 THEN '\$subscriber.merged:' || printf('anon_m%020d', k.key)
            ELSE 'c' || e.value END,
       CASE WHEN e.value = 1 AND k.key % 2 = 0 THEN '\$subscriber.merged' ELSE 'screen_view' END,
       1690000000000 + e.value * 1000, 1700000000000,
       CASE WHEN e.value = 1 AND k.key % 2 = 0
            THEN '{"from":"' || printf('anon_m%020d', k.key) || '","shape":"link","eventsMoved":0}'
            ELSE '{"screen":"home","index":7}' END
FROM k CROSS JOIN generate_series(1, $per) AS e WHERE k.key > 1;  -- CROSS JOIN: k outer, rows in key order
-- The identify runs' pool: anonymous subscribers never identified.
INSERT INTO subscribers (tenant_id, id, anonymous, created_at, updated_at)
SELECT '$tenant', printf('anon_%021d', value), 1, 1700000000000, 1700000000000 FROM generate_series(0, $POOL - 1);
INSERT INTO aliases (tenant_id, alias, subscriber_key)
SELECT '$tenant', id, key FROM subscribers WHERE anonymous = 1;
COMMIT;
ANALYZE;
PRAGMA journal_mode = WAL;
SQL
    local ms=$(($(now_ms) - start))
    record seed_ms "$name" 1 "$ms"
    sqlite3 "$db" "SELECT hash FROM api_keys WHERE kind = 'secret'" >/dev/null
    echo "$name: seeded $people people + $POOL anonymous, $(sqlite3 "$db" 'SELECT count(*) FROM events') events in $ms ms, $(du -h "$db" | cut -f1)" | tee -a "$OUT/machine.txt"
    # Bytes on disk by table and index (https://sqlite.org/dbstat.html), with row counts.
    sqlite3 -separator $'\t' "$db" \
        "SELECT name, sum(pgsize), sum(payload), count(*) FROM dbstat GROUP BY name ORDER BY sum(pgsize) DESC" \
        >"$OUT/$name-dbstat.tsv"
    sqlite3 -separator $'\t' "$db" \
        "SELECT 'rows', (SELECT count(*) FROM subscribers), (SELECT count(*) FROM events), (SELECT count(*) FROM aliases), (SELECT page_count * page_size FROM pragma_page_count, pragma_page_size)" \
        >"$OUT/$name-rows.tsv"
}
# steps NAME: the reads the server runs for each latency figure, each in a fresh sqlite3 process
# (`.stats on`): virtual-machine steps and pages read are exact, whatever the machine's load, so
# they show whether a read's work grows with the data. SQL copied from SQLiteContext.swift.
steps() {
    local name=$1 db=$WORK/$1.sqlite tenant
    tenant=$(python3 -c "import json; print(json.load(open('$WORK/$name-tenant.json'))['tenant']['id'])")
    local cols="key, tenant_id, id, anonymous, verified, email, email_subscribed, last_seq, event_count, created_at, updated_at"
    # The page reads for the first page's 100 people: the same people on both sizes.
    local keys
    keys=$(sqlite3 "$db" "SELECT json_group_array(key) FROM (SELECT key FROM subscribers ORDER BY key LIMIT 100)")
    while IFS='|' read -r figure sql; do
        printf '.stats on\n%s;\n' "$sql" | sqlite3 "$db" >"$WORK/stats.txt"
        record "steps_$figure" "$name" 1 "$(awk -F: '/Virtual Machine Steps/ {gsub(/ /,"",$2); print $2}' "$WORK/stats.txt")"
        record "pages_$figure" "$name" 1 "$(awk -F: '/Page cache misses/ {gsub(/ /,"",$2); print $2}' "$WORK/stats.txt")"
    done <<EOF2
by_alias|SELECT s.key, s.id, s.last_seq FROM aliases AS a JOIN subscribers AS s ON s.key = a.subscriber_key WHERE a.tenant_id = '$tenant' AND a.alias = 'user_000778' AND s.retired = 0
list_first|SELECT $cols FROM subscribers WHERE tenant_id = '$tenant' AND key > 0 AND (NULL IS NULL OR anonymous = NULL) AND (NULL IS NULL OR verified = NULL) AND retired = 0 ORDER BY key LIMIT 101
list_page5000|SELECT $cols FROM subscribers WHERE tenant_id = '$tenant' AND key > 499900 AND (NULL IS NULL OR anonymous = NULL) AND (NULL IS NULL OR verified = NULL) AND retired = 0 ORDER BY key LIMIT 101
page_attributes|SELECT subscriber_key, name, value, set_by_backend FROM attributes WHERE subscriber_key IN (SELECT value FROM json_each('$keys')) ORDER BY subscriber_key, name
page_devices|SELECT subscriber_key, device_id, platform, app_version, os_version, model, locale, time_zone, last_seen_at FROM devices WHERE subscriber_key IN (SELECT value FROM json_each('$keys')) ORDER BY subscriber_key, last_seen_at DESC, device_id
timeline_start|SELECT seq, client_id, name, timestamp, received_at, properties FROM events WHERE subscriber_key = 1 AND seq > 0 ORDER BY seq LIMIT 101
timeline_end|SELECT seq, client_id, name, timestamp, received_at, properties FROM events WHERE subscriber_key = 1 AND seq > $((HEAVY - LIMIT)) ORDER BY seq LIMIT 101
EOF2
}
seed small "$SMALL" $((EVENTS * SMALL / LARGE))
seed large "$LARGE" "$EVENTS"
steps small
steps large

# --- one server at a time (one server per SQLite file; the two sizes take turns) ------------
# start NAME CACHE_MIB RUN: starts serve, records the time to the first /readyz 200 and the RSS then.
start() {
    local name=$1 cache=$2 run=$3
    printf '{"logLevel": "warn", "clientKeyRatePerSecond": 0, "snapshotCacheMiB": %d}\n' "$cache" >"$WORK/config.json"
    sync
    # A new file per start: the shell truncates a reused one only once the child runs, and a
    # read before that would find the previous server's port.
    local log=$WORK/server-$name-$cache-$run.out port="" tries=0
    local t0=$(date +%s%N)
    "$BUZZKIT" serve --port 0 --database "$WORK/$name.sqlite" --config "$WORK/config.json" \
        >"$log" 2>>"$OUT/server-$name.log" &
    SERVER_PID=$!
    while [ -z "$port" ]; do
        port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$log" 2>/dev/null)
        [ -n "$port" ] || sleep 0.005
        tries=$((tries + 1)); [ "$tries" -lt 6000 ] || { echo "serve did not start"; exit 1; }
    done
    until curl -sf -o /dev/null "http://127.0.0.1:$port/readyz"; do
        sleep 0.005
        tries=$((tries + 1)); [ "$tries" -lt 6000 ] || { echo "/readyz never answered 200"; exit 1; }
    done
    local ms=$((($(date +%s%N) - t0) / 1000000))
    record ready_ms "$name" "$run" "$ms"
    record rss_ready_kib "$name" "$run" "$(awk '/^VmRSS/ {print $2}' "/proc/$SERVER_PID/status")"
    BASE=http://127.0.0.1:$port
    TENANT=$(python3 -c "import json; print(json.load(open('$WORK/$name-tenant.json'))['tenant']['id'])")
    CLIENT_KEY=$(python3 -c "import json; print(json.load(open('$WORK/$name-tenant.json'))['clientKey'])")
    SECRET_KEY=$(python3 -c "import json; print(json.load(open('$WORK/$name-tenant.json'))['secretKey'])")
}
stop() {
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "  WARNING: the $1 server (pid $SERVER_PID) exited before it was stopped"
    else
        record rss_idle_kib "$1" "$2" "$(awk '/^VmRSS/ {print $2}' "/proc/$SERVER_PID/status")"
        kill -TERM "$SERVER_PID" 2>/dev/null || true
    fi
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
}
# wrk_run FIGURE SIZE RUN CONNS PATH [wrk args…]: records req/s and p99 (ms).
wrk_run() {
    local figure=$1 size=$2 run=$3 conns=$4 path=$5; shift 5
    local file="$OUT/$figure-$size-$run.txt"
    wrk -t"$((conns < 2 ? 1 : 2))" -c"$conns" -d"${DUR}s" --timeout 10s --latency "$BASE$path" "$@" >"$file" 2>&1 || true
    local rps p99 non2xx
    rps=$(awk '/^Requests\/sec/ {print $2}' "$file")
    p99=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' "$file")
    non2xx=$(awk '/Non-2xx/ {n+=$NF} END {print n+0}' "$file")
    record "$figure" "$size" "$run" "${rps:-0}"
    record "${figure}_p99" "$size" "$run" "${p99:-0}"
    [ "$non2xx" = 0 ] || echo "  WARNING: $figure $size: $non2xx non-2xx answers"
    echo "  $figure $size #$run: ${rps:-?} req/s p99 ${p99:-?} ms"
}
cursor() { python3 -c "import base64; print(base64.urlsafe_b64encode(b's:$1').decode().rstrip('='))"; }

for run in $(seq "$RUNS"); do
    for size in small large; do
        people=$SMALL; [ "$size" = small ] || people=$LARGE
        start "$size" 64 "$run"
        auth=(-H "Authorization: Bearer $SECRET_KEY")
        wrk -t2 -c16 -d1s "$BASE/healthz" >/dev/null  # warm-up: statement caches, allocator
        wrk_run identify "$size" "$run" 64 /v1/identify -s bench/lua/identify.lua -- \
            $((SPAN * (run - 1))) $((SPAN / 2)) "$CLIENT_KEY" "s$run"
        wrk -t2 -c16 -d1s "$BASE/healthz" -s bench/lua/get.lua -- "$HOT" "$SECRET_KEY" >/dev/null  # fill the cache
        wrk_run get_cached "$size" "$run" 64 /healthz -s bench/lua/get.lua -- "$HOT" "$SECRET_KEY"
        # Latency figures: 2 connections, so the p99 is the request's and not a queue's.
        wrk_run list_first "$size" "$run" 2 "/v1/subscribers?limit=$LIMIT" "${auth[@]}"
        wrk_run list_page5000 "$size" "$run" 2 "/v1/subscribers?limit=$LIMIT&cursor=$(cursor $((LIMIT * 4999)))" "${auth[@]}"
        wrk_run timeline_start "$size" "$run" 2 "/v1/subscribers/user_000000/events" "${auth[@]}"
        wrk_run timeline_end "$size" "$run" 2 "/v1/subscribers/user_000000/events?after=$((HEAVY - LIMIT))" "${auth[@]}"
        sleep 1
        stop "$size" "$run"
        start "$size" 0 "$run"
        # Warm-up, as the cached runs have: without it the first of the DUR seconds prepared the
        # readers' statements and filled their page caches, a larger share on the large file.
        wrk -t2 -c16 -d1s "$BASE/healthz" -s bench/lua/get_spread.lua -- "$people" "$SAMPLE" "$SECRET_KEY" >/dev/null
        wrk_run get_uncached "$size" "$run" 64 /healthz -s bench/lua/get_spread.lua -- "$people" "$SAMPLE" "$SECRET_KEY"
        stop "$size" "$run"
    done
done
echo "loadavg at end: $(cat /proc/loadavg)" | tee -a "$OUT/machine.txt"
python3 bench/scale_summary.py "$OUT" | tee "$OUT/table.md"
