#!/usr/bin/env bash
# Instructions per identify-link request, without and with one webhook (stalled receiver: the
# request path only), counted by callgrind over the whole server process. Unlike req/s on the shared
# 2-core machine, where another engineer's build moves the same binary's outbox cost by ±30 %,
# these counts repeat within about 1 % whatever else runs, so they compare two builds reliably.
# Valgrind serializes the threads, so write groups are small (a few requests) and per-commit work
# weighs more than at full load; and `rep stos` counts one instruction per byte.
#
#   bench/webhook-outbox-instructions.sh              # release build, 1600 requests each
#   N=800 BUZZKIT_BINARY=/tmp/other bench/webhook-outbox-instructions.sh
#
# Prints instructions per request without and with the webhook, the difference, and where the
# callgrind files are (callgrind_annotate --inclusive=yes FILE shows what the difference is).
set -euo pipefail
. "$(dirname "$0")/callgrind-setup.sh"
N=${N:-1600}

client() {  # client BASE CLIENT_KEY COUNT RUN(3 characters): COUNT identify-link calls, 8 connections
    python3 - "$@" <<'PY'
import http.client, json, sys, threading, urllib.parse
base, key, n, run = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
url = urllib.parse.urlparse(base)
failed = []
def worker(tid, count):
    connection = http.client.HTTPConnection(url.hostname, url.port)
    for i in range(count):
        body = json.dumps({"externalId": f"w-{run}-{tid}-{i}", "anonymousId": f"anon_{run}{tid:02d}{i:016d}"})
        connection.request("POST", "/v1/identify", body,
                           {"Authorization": "Bearer " + key, "Content-Type": "application/json"})
        response = connection.getresponse()
        answer = response.read()
        if response.status >= 300:
            failed.append(answer)
threads = [threading.Thread(target=worker, args=(t, n // 8)) for t in range(8)]
for t in threads: t.start()
for t in threads: t.join()
if failed: sys.exit(f"{len(failed)} calls failed: {failed[0][:200]!r}")
PY
}

measure() {  # measure off|on → instructions of N requests
    local which=$1 work
    work=$(mktemp -d)
    exec 3< <(python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(1)
print("listening", s.getsockname()[1], flush=True); time.sleep(3600)' </dev/null)
    local receiver=$! port key
    read -r _ port <&3
    key="bk_ws_$(python3 -c 'import secrets,string; print("".join(secrets.choice(string.ascii_letters+string.digits) for _ in range(32)))')"
    echo '{"logLevel":"warn","clientKeyRatePerSecond":0}' >"$work/config.json"
    BUZZKIT_BOOTSTRAP_WORKSPACE_KEY="$key" BUZZKIT_WEBHOOK_ALLOW_PRIVATE_NETWORKS=true \
        valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/callgrind.$which.%p" \
        "$BIN" serve --port 0 --database "$work/db.sqlite" --config "$work/config.json" \
        >"$work/stdout" 2>"$work/stderr" &
    local server=$!
    for _ in $(seq 600); do grep -q listening "$work/stdout" 2>/dev/null && break; sleep 0.1; done
    local base tenant
    base=$(sed -n 's/^listening on //p' "$work/stdout")
    tenant=$(curl -sf -X POST "$base/v1/tenants" -H "Authorization: Bearer $key" \
        -H 'Content-Type: application/json' -d '{"name":"t"}')
    field() { python3 -c "import json,sys; print(json.load(sys.stdin)['data'][sys.argv[1]])" "$1" <<<"$tenant"; }
    if [ "$which" = on ]; then
        curl -sf -X POST "$base/v1/webhooks" -H "Authorization: Bearer $(field secretKey)" \
            -H 'Content-Type: application/json' -d "{\"url\":\"http://127.0.0.1:$port/ok\"}" >/dev/null
    fi
    client "$base" "$(field clientKey)" 200 www  # warm-up, not counted
    callgrind_control -i on "$server" >/dev/null 2>&1
    client "$base" "$(field clientKey)" "$N" mmm
    callgrind_control -d "$server" >/dev/null 2>&1
    kill "$server" "$receiver" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -rf "$work"
    awk '/^summary:/ {print $2}' "$OUT"/callgrind."$which".$server.1
}

off=$(measure off)
on=$(measure on)
python3 -c "
import sys
off, on, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
print(f'instructions per identify-link: without webhook {off / n / 1000:.0f}k, with one {on / n / 1000:.0f}k,'
      f' outbox +{(on - off) / n / 1000:.0f}k (+{(on / off - 1) * 100:.1f} %)')" "$off" "$on" "$N"
echo "callgrind files: $OUT"
