#!/usr/bin/env bash
# Instructions per rename identify, thread by thread, beside what sqlite_ceiling spends on the
# same SQL: the writer's share of the identify ratio, counted rather than timed. Both sides run on
# copies of one small seeded database. callgrind counts repeat within ~1 % on this noisy machine,
# where the writer's CPU per identify moves 49–87 µs between two back-to-back runs of one binary.
#
#   bench/identify-instructions.sh                     # release build, 1600 renames
#   N=800 BUZZKIT_BINARY=/tmp/other bench/identify-instructions.sh
#
# Prints, per identify:
#   - the ceiling's `identify_rename` (its SAVEPOINT, the statements, RELEASE; no COMMIT);
#   - the server's writer job (`Database.savepoint` on the writer: the same span);
#   - each server thread's whole count (the writer's includes its COMMITs, which valgrind makes
#     frequent: it runs one thread at a time, so groups are a few jobs where wrk -c64 gets ~20).
# The ceiling is built with -fno-inline so `identify_rename` stays a function callgrind can time.
set -euo pipefail
. "$(dirname "$0")/callgrind-setup.sh"
N=${N:-1600}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export BUZZKIT_BOOTSTRAP_WORKSPACE_KEY=bk_ws_BenchBenchBenchBenchBenchBench12

gcc -O2 -g -fno-inline -o "$WORK/sqlite_ceiling" bench/sqlite_ceiling.c -lsqlite3
"$BIN" migrate --database "$WORK/seed.sqlite" >/dev/null
"$BIN" tenant create bench --database "$WORK/seed.sqlite" >"$WORK/tenant.json"
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$2)" "$WORK/tenant.json"; }
TENANT=$(field x "['tenant']['id']")
CLIENT_KEY=$(field x "['clientKey']")
# Enough anonymous people for the server's warm-up of 200 and N renames, and for what the ceiling
# renames in its two one-second runs under valgrind (~1,850 here: with N=800 a pool of N + 1000
# ran out); 1,000 identified people besides.
"$WORK/sqlite_ceiling" seed "$WORK/seed.sqlite" "$TENANT" 1000 $((N + 3000)) 0 0 >/dev/null

# --- the ceiling: identify_rename, counted alone ----------------------------------------------
cp "$WORK/seed.sqlite" "$WORK/ceiling.sqlite"
valgrind --tool=callgrind --toggle-collect=identify_rename --callgrind-out-file="$OUT/callgrind.ceiling" \
    "$WORK/sqlite_ceiling" bench "$WORK/ceiling.sqlite" "$TENANT" 1 1000 0 0 identify >/dev/null 2>&1
ceiling=$(python3 bench/callgrind_calls.py "$OUT/callgrind.ceiling" identify_rename)

# --- the server: N renames over 8 connections, every thread counted apart ---------------------
cp "$WORK/seed.sqlite" "$WORK/db.sqlite"
echo '{"logLevel":"warn","clientKeyRatePerSecond":0}' >"$WORK/config.json"
valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes \
    --callgrind-out-file="$OUT/callgrind.server.%p" \
    "$BIN" serve --port 0 --database "$WORK/db.sqlite" --config "$WORK/config.json" \
    >"$WORK/stdout" 2>"$WORK/stderr" &
SERVER=$!
for _ in $(seq 600); do grep -q listening "$WORK/stdout" 2>/dev/null && break; sleep 0.1; done
BASE=$(sed -n 's/^listening on //p' "$WORK/stdout")

renames() {  # renames FIRST COUNT: anon ids FIRST… renamed to new external ids, 8 connections
    python3 - "$BASE" "$CLIENT_KEY" "$1" "$2" <<'PY'
import http.client, json, sys, threading, urllib.parse
base, key, first, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
url = urllib.parse.urlparse(base)
failed = []
def worker(t, count):
    connection = http.client.HTTPConnection(url.hostname, url.port)
    for i in range(count):
        k = first + t * count + i
        body = json.dumps({"externalId": f"p-{k}", "anonymousId": "anon_%021d" % k})
        connection.request("POST", "/v1/identify", body,
                           {"Authorization": "Bearer " + key, "Content-Type": "application/json"})
        response = connection.getresponse()
        answer = json.loads(response.read())
        if response.status != 200 or answer["data"]["merge"]["shape"] != "rename":
            failed.append(answer)
threads = [threading.Thread(target=worker, args=(t, n // 8)) for t in range(8)]
for t in threads: t.start()
for t in threads: t.join()
if failed: sys.exit(f"{len(failed)} calls were not renames: {failed[0]!r}")
PY
}
renames 1 200  # warm-up, not counted
callgrind_control -i on "$SERVER" >/dev/null 2>&1
renames 201 "$N"
callgrind_control -d "$SERVER" >/dev/null 2>&1
kill "$SERVER"
wait "$SERVER" 2>/dev/null || true

python3 bench/callgrind_calls.py --threads "$N" "$ceiling" "$OUT"/callgrind.server."$SERVER".1-*
echo "callgrind files: $OUT"
