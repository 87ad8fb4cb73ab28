#!/usr/bin/env bash
# Instructions per request of `GET /healthz` and of a `GET /v1/subscribers/{id}` (cached, and
# `uncached` with the snapshot cache off), counted
# by callgrind over the whole server process while wrk (4 connections) sends them. Like
# bench/webhook-outbox-instructions.sh, these counts repeat within ~1 % however loaded the machine
# is, so they compare two builds where req/s cannot; they are how the HTTP path's cuts were
# measured (bench/README.md).
#
#   bench/request-instructions.sh                        # release build, both paths
#   BUZZKIT_BINARY=/tmp/other ONLY=healthz bench/request-instructions.sh
#
# Prints instructions and atomic reference counts per request (bench/callgrind_atomics.py: the
# lock-prefixed instructions of swift_retain and swift_release that ran), and where the callgrind
# files are (callgrind_annotate --inclusive=yes FILE shows where the instructions go).
# CALLERS=1 also lists who asked for the atomics (valgrind's --separate-callers=2; slower).
set -euo pipefail
. "$(dirname "$0")/callgrind-setup.sh"
ONLY=${ONLY:-healthz,get}
separate=""
[ "${CALLERS:-0}" = 1 ] && separate=--separate-callers=2
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }

measure() {  # measure healthz|get → "requests instructions"
    local which=$1 work key server base path secret=""
    work=$(mktemp -d)
    key="bk_ws_$(python3 -c 'import secrets,string; print("".join(secrets.choice(string.ascii_letters+string.digits) for _ in range(32)))')"
    local cache=""
    [ "$which" = uncached ] && cache='"snapshotCacheMiB":0,'
    echo "{$cache\"logLevel\":\"warn\",\"clientKeyRatePerSecond\":0}" >"$work/config.json"
    BUZZKIT_BOOTSTRAP_WORKSPACE_KEY="$key" \
        valgrind --tool=callgrind --instr-atstart=no --dump-instr=yes $separate --callgrind-out-file="$OUT/callgrind.$which.%p" \
        "$BIN" serve --port 0 --database "$work/db.sqlite" --config "$work/config.json" \
        >"$work/stdout" 2>"$work/stderr" &
    server=$!
    for _ in $(seq 600); do grep -q listening "$work/stdout" 2>/dev/null && break; sleep 0.1; done
    base=$(sed -n 's/^listening on //p' "$work/stdout")
    path=/healthz
    : >"$work/headers.lua"
    if [ "$which" != healthz ]; then
        secret=$(curl -sf -X POST "$base/v1/tenants" -H "Authorization: Bearer $key" \
            -H 'Content-Type: application/json' -d '{"name":"t"}' |
            python3 -c "import json,sys; print(json.load(sys.stdin)['data']['secretKey'])")
        curl -sf -X PUT "$base/v1/subscribers/user-1" -H "Authorization: Bearer $secret" \
            -H 'Content-Type: application/json' \
            -d '{"email":"a@example.com","attributes":{"plan":"pro","n":3}}' >/dev/null
        echo "wrk.headers[\"Authorization\"] = \"Bearer $secret\"" >"$work/headers.lua"
        path=/v1/subscribers/user-1
    fi
    wrk -t1 -c4 -d2s -s "$work/headers.lua" "$base$path" >/dev/null  # warm-up (fills the caches), not counted
    callgrind_control -i on "$server" >/dev/null 2>&1
    local n
    n=$(wrk -t1 -c4 -d5s -s "$work/headers.lua" "$base$path" | awk '/requests in/ {print $1}')
    callgrind_control -d "$server" >/dev/null 2>&1
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -rf "$work"
    local file="$OUT"/callgrind."$which".$server.1
    echo "$n $(awk '/^summary:/ {print $2}' "$file") $file"
}

for which in healthz get uncached; do
    [[ ",$ONLY," == *",$which,"* ]] || continue
    read -r n instructions file < <(measure "$which")
    echo "$which: $((instructions / n)) instructions per request ($n requests)"
    python3 bench/callgrind_atomics.py "$file" "$n" ${separate:+--callers} | swift demangle --simplified | sed 's/^/  /'
done
echo "callgrind files: $OUT"
