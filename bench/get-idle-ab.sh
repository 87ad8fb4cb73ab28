#!/usr/bin/env bash
# Two builds, paired: the cached GET /v1/subscribers/{id} and /healthz sent the same way
# (lua/get.lua, as run.sh's "like the GETs"), each build's server on its own copy of one seed,
# alternated in short runs. Prints each run's req/s with the machine's idle share and context
# switches (both system-wide, wrk included), then the medians of after/before per pair. Pairs of
# short runs side by side are how a few per cent shows through this machine's drift, which
# moves a 5 s figure by ±10 % (bench/README.md: "The loops yield before they sleep").
#
#   bench/get-idle-ab.sh /tmp/before .build/release/buzzkit          # 14 rounds of 2 s
#   ROUNDS=6 DUR=5 bench/get-idle-ab.sh /tmp/before /tmp/after
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=${1:?usage: bench/get-idle-ab.sh BEFORE_BINARY AFTER_BINARY}
AFTER=${2:?usage: bench/get-idle-ab.sh BEFORE_BINARY AFTER_BINARY}
ROUNDS=${ROUNDS:-14}
DUR=${DUR:-2}
PEOPLE=50000
BIN=$AFTER  # seeded_work migrates and seeds with it
need() { command -v "$1" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$2" >/dev/null; }; }
need wrk wrk
need perf linux-perf
command -v gcc >/dev/null && [ -f /usr/include/sqlite3.h ] ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libsqlite3-dev >/dev/null
. bench/seeded-work.sh
seeded_work getidle $PEOPLE 0
SECRET_KEY=$(tenant_field "['secretKey']")
echo '{"logLevel": "warn", "clientKeyRatePerSecond": 0}' >"$WORK/config.json"

declare -A URL
SERVERS=()
for build in before after; do
    binary=$BEFORE
    [ "$build" = after ] && binary=$AFTER
    cp "$WORK/seed.sqlite" "$WORK/$build.sqlite"
    "$binary" serve --port 0 --database "$WORK/$build.sqlite" --config "$WORK/config.json" >"$WORK/$build.out" 2>&1 &
    SERVERS+=($!)
    for _ in $(seq 100); do grep -q listening "$WORK/$build.out" && break; sleep 0.1; done
    URL[$build]="$(sed -n 's/^listening on //p' "$WORK/$build.out")/healthz"
    # Every person once, so every GET after this is a snapshot-cache hit.
    wrk -t1 -c16 -d3s -s bench/lua/get.lua "${URL[$build]}" -- $PEOPLE "$SECRET_KEY" walk >/dev/null
done
trap 'kill "${SERVERS[@]}" 2>/dev/null || true; rm -rf "$WORK"' EXIT

cpu() { awk '/^cpu / {print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
# run BUILD KIND → "req/s idle% switches-a-request" for one wrk run
run() {
    local url=${URL[$1]} extra=()
    [ "$2" = healthz ] && extra=(random "/healthz?person=user_%06d")
    sync
    local before after
    before=$(cpu)
    perf stat -a -x, -e context-switches -o "$WORK/perf.txt" -- \
        wrk -t2 -c64 -d"${DUR}s" -s bench/lua/get.lua "$url" -- $PEOPLE "$SECRET_KEY" "${extra[@]}" >"$WORK/wrk.txt"
    after=$(cpu)
    local requests switches
    requests=$(awk '/requests in/ {print $1}' "$WORK/wrk.txt")
    switches=$(awk -F, '/context-switches/ {print $1}' "$WORK/perf.txt")
    echo "$before $after" | awk -v n="$requests" -v cs="$switches" -v d="$DUR" \
        '{printf "%.0f %.1f %.3f\n", n / d, 100 * ($3 - $1) / ($4 - $2), cs / n}'
}

: >"$WORK/rounds.txt"
for round in $(seq "$ROUNDS"); do
    # Alternate which build goes first, so neither always follows the other.
    order="before after"
    [ $((round % 2)) = 0 ] && order="after before"
    for build in $order; do
        for kind in get healthz; do
            read -r rate idle switches < <(run "$build" "$kind")
            printf '%2d %-6s %-7s %8s req/s  idle %4s %%  %s switches a request\n' \
                "$round" "$build" "$kind" "$rate" "$idle" "$switches"
            echo "$round $build $kind $rate" >>"$WORK/rounds.txt"
        done
    done
done
python3 - "$WORK/rounds.txt" <<'PY'
import collections, statistics, sys
rate = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    round_, build, kind, value = line.split()
    rate[round_][(build, kind)] = float(value)
def median(f):
    return statistics.median(f(r) for r in rate.values())
print(f"after / before, median of {len(rate)} pairs: "
      f"GET {median(lambda r: r[('after', 'get')] / r[('before', 'get')]):.3f}, "
      f"/healthz like the GETs {median(lambda r: r[('after', 'healthz')] / r[('before', 'healthz')]):.3f}")
print(f"GET / healthz: before {median(lambda r: r[('before', 'get')] / r[('before', 'healthz')]):.3f}, "
      f"after {median(lambda r: r[('after', 'get')] / r[('after', 'healthz')]):.3f}")
PY
