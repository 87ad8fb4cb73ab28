#!/usr/bin/env bash
# Memory traffic of a cached `GET /v1/subscribers/{id}` when many people are cached: callgrind's
# cache simulation (`--cache-sim=yes`, the host's cache sizes) over the server while wrk asks
# for random people of a seeded tenant, every one of them in the snapshot cache first.
# bench/request-instructions.sh asks for one person again and again, so everything it touches
# stays in cache; with 50,000 people each GET reaches lines of the cache's tables and of its
# person that no recent request touched, and those misses cost more than the instructions
# around them (a GET's user time rose ~0.35 µs from 1 person to 50,000, bench/README.md).
#
#   bench/get-cache-misses.sh                          # release build, 50,000 people
#   PEOPLE=1 BUZZKIT_BINARY=/tmp/other bench/get-cache-misses.sh
#
# Prints per request: instructions, data reads and writes, and the misses of the first-level
# data cache (D1) and of the last level (LL, to memory), with the functions missing most.
set -euo pipefail
. "$(dirname "$0")/callgrind-setup.sh"
PEOPLE=${PEOPLE:-50000}
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
command -v gcc >/dev/null && [ -f /usr/include/sqlite3.h ] ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libsqlite3-dev >/dev/null
. bench/seeded-work.sh
seeded_work getmisses "$PEOPLE" 0
SECRET_KEY=$(tenant_field "['secretKey']")
echo '{"logLevel": "warn", "clientKeyRatePerSecond": 0}' >"$WORK/config.json"
valgrind --tool=callgrind --instr-atstart=no --cache-sim=yes --callgrind-out-file="$OUT/callgrind.misses.%p" \
    "$BIN" serve --port 0 --database "$WORK/seed.sqlite" --config "$WORK/config.json" >"$WORK/out" 2>"$WORK/err" &
SERVER=$!
for _ in $(seq 600); do grep -q listening "$WORK/out" 2>/dev/null && break; sleep 0.1; done
URL="$(sed -n 's/^listening on //p' "$WORK/out")/healthz"
# Everyone into the snapshot cache, then a little of the measured load unmeasured.
until [ "$(curl -sf "${URL%/healthz}/metrics" | awk '/^buzzkit_snapshot_cache_entries / {print $2}')" -ge "$PEOPLE" ]; do
    wrk -t1 -c4 -d10s -s bench/lua/get.lua "$URL" -- "$PEOPLE" "$SECRET_KEY" walk >/dev/null
done
wrk -t1 -c4 -d2s -s bench/lua/get.lua "$URL" -- "$PEOPLE" "$SECRET_KEY" >/dev/null
callgrind_control -i on "$SERVER" >/dev/null 2>&1
n=$(wrk -t1 -c4 -d5s -s bench/lua/get.lua "$URL" -- "$PEOPLE" "$SECRET_KEY" | awk '/requests in/ {print $1}')
callgrind_control -d "$SERVER" >/dev/null 2>&1
kill "$SERVER" 2>/dev/null || true
wait "$SERVER" 2>/dev/null || true
SERVER=
file=$(ls "$OUT"/callgrind.misses.*.1 | tail -1)
python3 - "$file" "$n" <<'PY' | swift demangle --simplified
import collections, re, sys
path, n = sys.argv[1], float(sys.argv[2])
events, names, per = None, {}, collections.defaultdict(lambda: None)
fn, after_calls = None, False
for line in open(path, errors="replace"):
    line = line.rstrip("\n")
    if line.startswith("events:"):
        events = line.split()[1:]
        total = collections.Counter()
        own = collections.defaultdict(collections.Counter)
        continue
    if line.startswith("fn="):
        m = re.match(r"\((\d+)\)(?: (.*))?", line[3:])
        if m.group(2): names[m.group(1)] = m.group(2)
        fn = m.group(1)
        continue
    if line.startswith("cfn="):  # names are given once, where first seen, called or calling
        m = re.match(r"\((\d+)\)(?: (.*))?", line[4:])
        if m.group(2): names[m.group(1)] = m.group(2)
        continue
    if line.startswith("calls="):
        after_calls = True
        continue
    if events and line and (line[0].isdigit() or line[0] in "+-*"):
        parts = line.split()[1:]
        if after_calls:  # the inclusive cost of a call: counted in the callee already
            after_calls = False
            continue
        for name, value in zip(events, parts):
            total[name] += int(value)
            own[fn][name] += int(value)
print(f"{int(n)} requests")
for name in ("Ir", "Dr", "Dw", "D1mr", "D1mw", "DLmr", "DLmw"):
    print(f"  {name:5} {total[name] / n:9.1f} a request")
print("most last-level misses (DLmr + DLmw) a request, by function:")
ranked = sorted(own, key=lambda f: -(own[f]["DLmr"] + own[f]["DLmw"]))
for f in ranked[:15]:
    misses = (own[f]["DLmr"] + own[f]["DLmw"]) / n
    if misses < 0.01: break
    print(f"  {misses:6.2f}  D1 {(own[f]['D1mr'] + own[f]['D1mw']) / n:6.2f}  {names.get(f, f)[:140]}")
PY
echo "callgrind file: $file"
