#!/usr/bin/env bash
# BuzzKit Server on PostgreSQL against its ceilings: the same SQL driven straight through libpq by
# pgbench (bench/pgbench/*.sql) at the same concurrency, and our SQLite GET; then 1 vs 2 servers
# on one database.
#
#   bench/postgres.sh                      # RUNS=3 DUR=5 by default
#   RUNS=1 DUR=3 bench/postgres.sh         # a quick proof that it runs
#   ONLY=identify,get bench/postgres.sh    # a subset: identify,get,events,two
#
# A throwaway PostgreSQL (scripts/postgres-for-tests.sh, with fsync on: POSTGRES_DURABLE=1) is
# started for the run and stopped at the end. The database is seeded the way bench/run.sh seeds
# SQLite (sqlite_ceiling seed), then moved to PostgreSQL with `buzzkit copy`. Each scenario runs
# RUNS times interleaved with its ceiling; raw output and results.tsv go to bench/out/pg-<timestamp>/.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${RUNS:-3}
DUR=${DUR:-5}
ONLY=${ONLY:-identify,get,events,two}
CONNS=${CONNS:-64}
PEOPLE=${PEOPLE:-20000}
SPAN=${SPAN:-60000}                                 # anonymous ids one identify run may rename
POOL=$((SPAN * (3 * RUNS + 2)))             # a span per run of ours (identify, two), the rest for pgbench
WORKSPACE_KEY=bk_ws_BenchBenchBenchBenchBenchBench12
has() { [[ ",$ONLY," == *",$1,"* ]]; }

# --- tools -------------------------------------------------------------------------------------
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
command -v gcc >/dev/null && [ -f /usr/include/sqlite3.h ] || \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libsqlite3-dev sqlite3 >/dev/null
for tool in pgbench psql; do command -v $tool >/dev/null || { echo "$tool is not on PATH"; exit 1; }; done
export PATH=/opt/swift/usr/bin:$PATH

OUT=$ROOT/bench/out/pg-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
RESULTS=$OUT/results.tsv
: >"$RESULTS"
echo "output: $OUT"
{ echo "date: $(date -Is)"; echo "host: $(uname -srm), $(nproc) cores"; echo "loadavg at start: $(cat /proc/loadavg)";
  echo "git: $(git rev-parse --short HEAD)$(git diff --quiet || echo +dirty)"; echo "RUNS=$RUNS DUR=$DUR ONLY=$ONLY CONNS=$CONNS";
  echo "PostgreSQL: $(postgres --version)"; } | tee "$OUT/machine.txt"

swift build -c release 2>&1 | tail -1
BUZZKIT=$ROOT/.build/release/buzzkit
gcc -O2 -o "$OUT/sqlite_ceiling" bench/sqlite_ceiling.c -lsqlite3

WORK=$(mktemp -d -p "$ROOT/bench/out" pgwork.XXXXXX)
export STATE=$WORK/postgres.env
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    sleep 0.5
    scripts/postgres-for-tests.sh stop 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
pg_env="$(POSTGRES_DURABLE=1 scripts/postgres-for-tests.sh start)"
eval "$pg_env"
SERVER_URL=$BUZZKIT_TEST_POSTGRES_URL
URL=${SERVER_URL%/*}/bench
psql "$SERVER_URL" -qAtX -c "CREATE DATABASE bench"

# --- seed: SQLite as bench/run.sh does, then `buzzkit copy` into PostgreSQL ---------------------
export BUZZKIT_BOOTSTRAP_WORKSPACE_KEY=$WORKSPACE_KEY
SEED=$WORK/seed.sqlite
"$BUZZKIT" migrate --database "$SEED" >/dev/null
"$BUZZKIT" tenant create bench --database "$SEED" >"$WORK/tenant.json"
json() { python3 -c "import json,sys; d=json.load(open('$WORK/tenant.json')); print($1)"; }
TENANT=$(json "d['tenant']['id']")
CLIENT_KEY=$(json "d['clientKey']")
SECRET_KEY=$(json "d['secretKey']")
echo "seeding $PEOPLE people and $POOL anonymous subscribers…"
"$OUT/sqlite_ceiling" seed "$SEED" "$TENANT" "$PEOPLE" "$POOL" 0 0 >/dev/null
started=$(date +%s.%N)
"$BUZZKIT" copy --from "$SEED" --to "$URL" | tee "$OUT/copy.txt"
echo "copy_seconds $(python3 -c "print(round($(date +%s.%N) - $started, 2))")" | tee -a "$OUT/machine.txt"
psql "$URL" -qAtX -c "CREATE SEQUENCE bench_anon START $((2 * RUNS * SPAN))" -c "CREATE SEQUENCE bench_batch" -c "VACUUM ANALYZE"

# --- servers ----------------------------------------------------------------------------------
# WRITER_THREADS=N sets postgresWriterThreads on the PostgreSQL servers (default: the server's).
writers=${WRITER_THREADS:+, \"postgresWriterThreads\": $WRITER_THREADS}
cat >"$WORK/config.json" <<JSON
{"logLevel": "warn", "clientKeyRatePerSecond": 0, "idleTimeoutSeconds": 600$writers}
JSON
cat >"$WORK/config-nocache.json" <<JSON
{"logLevel": "warn", "clientKeyRatePerSecond": 0, "idleTimeoutSeconds": 600, "snapshotCacheMiB": 0$writers}
JSON
# start_server NAME DATABASE CONFIG: sets PORT_<NAME> and PID_<NAME>.
start_server() {
    local name=$1 database=$2 config=$3
    "$BUZZKIT" serve --port 0 --database "$database" --config "$config" >"$WORK/$name.out" 2>"$OUT/$name.log" &
    local pid=$!
    PIDS+=("$pid")
    for _ in $(seq 200); do grep -q listening "$WORK/$name.out" && break; sleep 0.1; done
    local port
    port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$WORK/$name.out")
    [ -n "$port" ] || { echo "server $name did not start:"; tail -5 "$OUT/$name.log"; exit 1; }
    printf -v "PORT_$name" '%s' "$port"
    printf -v "PID_$name" '%s' "$pid"
    echo "server $name: pid $pid port $port ($database)"
}
start_server A "$URL" "$WORK/config.json"
start_server B "$URL" "$WORK/config.json"
start_server U "$URL" "$WORK/config-nocache.json"
start_server S "$SEED" "$WORK/config.json"   # our SQLite GET, the issue's other yardstick

# --- measuring (record and wrk_run as in bench/run.sh) ----------------------------------------
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"; }
wrk_run() {
    local name=$1 who=$2 run=$3 conns=$4 url=$5; shift 5
    local file="$OUT/$name-$who-$run.txt"
    wrk -t2 -c"$conns" -d"${DUR}s" --timeout 10s --latency "$url" "$@" >"$file" 2>&1 || true
    local rps p99 errors
    rps=$(awk '/^Requests\/sec/ {print $2}' "$file")
    p99=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' "$file")
    errors=$(awk '/Non-2xx/ {n+=$NF} /Socket errors/ {gsub(/,/,""); n+=$4+$6+$8+$10} END {print n+0}' "$file")
    record "$name" "$who" "$run" "${rps:-0}" "${p99:-0}" "$errors"
    echo "  $name $who #$run: ${rps:-?} req/s p99 ${p99:-?} ms errors $errors"
}
# pgbench_run NAME RUN SCRIPT: the ceiling at the same concurrency, prepared statements.
pgbench_run() {
    local name=$1 run=$2 script=$3 file="$OUT/$1-pgbench-$2.txt"
    pgbench -n -M prepared --max-tries=20 -c "$CONNS" -j 2 -T "$DUR" -f "bench/pgbench/$script" \
        -D tenant="$TENANT" -D people="$PEOPLE" -D now="$(date +%s%3N)" "$URL" >"$file" 2>&1 || true
    local tps failed
    tps=$(awk '/^tps = / {print $3}' "$file" | tail -1)
    failed=$(awk '/number of failed transactions/ {print $5}' "$file")
    record "$name" pgbench "$run" "${tps:-0}" 0 "${failed:-0}"
    echo "  $name pgbench #$run: ${tps:-?} tx/s failed ${failed:-0}"
}
NEXT_ANON=0
take_anon_span() { ANON_FROM=$NEXT_ANON; NEXT_ANON=$((NEXT_ANON + SPAN)); }
base() { local p="PORT_$1"; echo "http://127.0.0.1:${!p}"; }

for s in A B U S; do wrk -t2 -c16 -d1s -s bench/lua/get.lua "$(base $s)/healthz" -- "$PEOPLE" "$SECRET_KEY" >/dev/null; done

if has identify; then
    echo "POST /v1/identify rename, $CONNS conns: one server vs the same SQL through pgbench…"
    for run in $(seq "$RUNS"); do
        take_anon_span
        wrk_run identify buzzkit "$run" "$CONNS" "$(base A)/v1/identify" -s bench/lua/identify.lua -- \
            "$ANON_FROM" $((SPAN / 2)) "$CLIENT_KEY" "r$run"
        pgbench_run identify "$run" identify.sql
    done
fi

if has get; then
    echo "GET /v1/subscribers/{id}, $CONNS conns: cached, uncached, pgbench, our SQLite…"
    for run in $(seq "$RUNS"); do
        wrk_run get_cached buzzkit "$run" "$CONNS" "$(base A)/healthz" -s bench/lua/get.lua -- "$PEOPLE" "$SECRET_KEY"
        wrk_run get_uncached buzzkit "$run" "$CONNS" "$(base U)/healthz" -s bench/lua/get.lua -- "$PEOPLE" "$SECRET_KEY"
        pgbench_run get "$run" get.sql
        wrk_run get_sqlite buzzkit "$run" "$CONNS" "$(base S)/healthz" -s bench/lua/get.lua -- "$PEOPLE" "$SECRET_KEY"
    done
    # How many reads each batch answered, and how many were checked cache hits.
    for s in A U; do
        curl -s "$(base $s)/metrics" | awk -v s=$s '/^buzzkit_snapshot_(batches|reads)_total|^buzzkit_snapshot_cache_hits_total/ {v[$1]=$2}
            END {b=v["buzzkit_snapshot_batches_total"]; r=v["buzzkit_snapshot_reads_total"];
                 printf "  server %s: %d snapshot reads in %d batches (%.1f a batch), %d checked cache hits\n", s, r, b, (b ? r/b : 0), v["buzzkit_snapshot_cache_hits_total"]}' | tee -a "$OUT/machine.txt"
    done
fi

if has events; then
    echo "POST /v1/events ×50, $CONNS conns vs pgbench…"
    for run in $(seq "$RUNS"); do
        wrk_run events buzzkit "$run" "$CONNS" "$(base A)/v1/events" -s bench/lua/events.lua -- "$PEOPLE" "$CLIENT_KEY" "r$run"
        pgbench_run events "$run" events.sql
    done
fi

if has two; then
    echo "1 vs 2 servers on the database, $CONNS conns in all (identify, cached GET)…"
    half=$((CONNS / 2))
    for run in $(seq "$RUNS"); do
        take_anon_span
        wrk_run identify_one buzzkit "$run" "$CONNS" "$(base A)/v1/identify" -s bench/lua/identify.lua -- \
            "$ANON_FROM" $((SPAN / 4)) "$CLIENT_KEY" "o$run"
        wrk_run identify_twoA buzzkit "$run" "$half" "$(base A)/v1/identify" -s bench/lua/identify.lua -- \
            $((ANON_FROM + SPAN / 2)) $((SPAN / 8)) "$CLIENT_KEY" "ta$run" &
        first=$!
        wrk_run identify_twoB buzzkit "$run" "$half" "$(base B)/v1/identify" -s bench/lua/identify.lua -- \
            $((ANON_FROM + 3 * SPAN / 4)) $((SPAN / 8)) "$CLIENT_KEY" "tb$run" &
        wait "$first" $!   # not a bare wait: the servers are children too
        wrk_run get_one buzzkit "$run" "$CONNS" "$(base A)/healthz" -s bench/lua/get.lua -- "$PEOPLE" "$SECRET_KEY"
        wrk_run get_twoA buzzkit "$run" "$half" "$(base A)/healthz" -s bench/lua/get.lua -- "$PEOPLE" "$SECRET_KEY" &
        first=$!
        wrk_run get_twoB buzzkit "$run" "$half" "$(base B)/healthz" -s bench/lua/get.lua -- "$PEOPLE" "$SECRET_KEY" &
        wait "$first" $!
    done
fi

echo "loadavg at end: $(cat /proc/loadavg)" | tee -a "$OUT/machine.txt"
python3 - "$RESULTS" <<'PY' | tee "$OUT/table.md"
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
def med(name, who):
    values = [float(r[3]) for r in rows if r[0] == name and r[1] == who]
    return statistics.median(values) if values else None
def sum_runs(a, b):
    runs = sorted({r[2] for r in rows if r[0] == a})
    totals = []
    for run in runs:
        x = [float(r[3]) for r in rows if r[0] in (a, b) and r[2] == run]
        if len(x) == 2: totals.append(sum(x))
    return statistics.median(totals) if totals else None
lines = ["| figure | ours | ceiling | ratio | goal |", "|---|---|---|---|---|"]
def line(label, ours, ceiling, goal="", unit="req/s", scale=1):
    if ours is None: return
    ratio = "%.2f" % (ours / ceiling) if ceiling else ""
    lines.append("| %s | %s %s | %s | %s | %s |" % (label, "{:,.0f}".format(ours * scale), unit,
                 "{:,.0f}".format(ceiling * scale) if ceiling else "", ratio, goal))
line("POST /v1/identify rename vs pgbench (same SQL, 1 txn/request)", med("identify", "buzzkit"), med("identify", "pgbench"), "≥ 0.5")
line("GET /v1/subscribers/{id}, cached, vs our SQLite GET", med("get_cached", "buzzkit"), med("get_sqlite", "buzzkit"), "≥ 0.5")
line("GET, uncached (snapshotCacheMiB 0), vs pgbench", med("get_uncached", "buzzkit"), med("get", "pgbench"))
line("GET, uncached, vs our SQLite GET", med("get_uncached", "buzzkit"), med("get_sqlite", "buzzkit"))
line("POST /v1/events ×50 vs pgbench (events/s)", med("events", "buzzkit"), med("events", "pgbench"), unit="ev/s", scale=50)
line("identify: 2 servers vs 1 (same total conns)", sum_runs("identify_twoA", "identify_twoB"), med("identify_one", "buzzkit"))
line("cached GET: 2 servers vs 1 (same total conns)", sum_runs("get_twoA", "get_twoB"), med("get_one", "buzzkit"))
print("\n".join(lines))
print("\nmedians over RUNS; raw: results.tsv")
PY
