#!/usr/bin/env bash
# Identify with one webhook subscribed (the outbox on) against identify without, on one server in
# one run, alternating; then how fast the worker drains what the load queued to a local receiver.
#
#   bench/webhook-outbox.sh                 # release build, 10 s a run, 2 runs each
#   DUR=5 RUNS=1 BUZZKIT_BINARY=.build/debug/buzzkit bench/webhook-outbox.sh
#   STALLED=1 bench/webhook-outbox.sh       # the receiver never answers: the worker sits in one
#                                           # 15 s attempt, so only the request path is measured
#
# Prints req/s of each run, the cost of the outbox (1 - on/off), and deliveries per second; and
# per request of each run the server's CPU time (all its threads, the delivery worker's included)
# and the bytes it wrote (WAL and checkpoints, /proc/<pid>/io): steadier than req/s on a shared
# machine, where others' work moves throughput far more than it moves these.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BUZZKIT_BINARY:-.build/release/buzzkit}
DUR=${DUR:-10}
RUNS=${RUNS:-2}
CONNS=${CONNS:-64}
[ -x "$BIN" ] || { echo "no $BIN: swift build -c release --product buzzkit"; exit 1; }
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }

WORK=$(mktemp -d)
cleanup() { kill "${SERVER_PID:-}" "${RECEIVER_PID:-}" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

if [ -n "${STALLED:-}" ]; then
    # Listens and never accepts: a delivery waits out its whole timeout.
    exec 3< <(python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(1)
print("listening", s.getsockname()[1], flush=True); time.sleep(3600)' </dev/null)
else
    exec 3< <(python3 scripts/webhooks/receiver.py serve --log "$WORK/received.jsonl" </dev/null)
fi
RECEIVER_PID=$!
read -r _ RECEIVER_PORT <&3

KEY="bk_ws_$(python3 -c 'import secrets,string; print("".join(secrets.choice(string.ascii_letters+string.digits) for _ in range(32)))')"
# No client-key rate limit: the load would measure 429s.
echo '{"logLevel":"warn","clientKeyRatePerSecond":0}' >"$WORK/config.json"
BUZZKIT_BOOTSTRAP_WORKSPACE_KEY="$KEY" BUZZKIT_WEBHOOK_ALLOW_PRIVATE_NETWORKS=true \
    "$BIN" serve --port 0 --database "$WORK/db.sqlite" --config "$WORK/config.json" >"$WORK/stdout" 2>"$WORK/stderr" &
SERVER_PID=$!
for _ in $(seq 100); do grep -q listening "$WORK/stdout" 2>/dev/null && break; sleep 0.1; done
BASE=$(sed -n 's/^listening on //p' "$WORK/stdout")

tenant() {
    curl -sf -X POST "$BASE/v1/tenants" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
        -d "{\"name\":\"$1\"}"
}
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['data'][sys.argv[1]])" "$1"; }
OFF=$(tenant off)
ON=$(tenant on)
curl -sf -X POST "$BASE/v1/webhooks" -H "Authorization: Bearer $(field secretKey <<<"$ON")" \
    -H 'Content-Type: application/json' -d "{\"url\":\"http://127.0.0.1:$RECEIVER_PORT/ok\"}" >/dev/null

cpu_ticks() { awk '{print $14 + $15}' "/proc/$SERVER_PID/stat"; }
written() { awk '/^write_bytes/ {print $2}' "/proc/$SERVER_PID/io"; }
rate() {  # rate CLIENT_KEY RUN → req/s of one wrk run; its per-request cost into $WORK/cost
    local ticks0 bytes0
    ticks0=$(cpu_ticks); bytes0=$(written)
    wrk -t2 -c"$CONNS" -d"${DUR}s" --timeout 10s -s bench/lua/identify-link.lua "$BASE/v1/identify" -- "$1" "$2" \
        >"$WORK/wrk.out"
    if grep -q 'Non-2xx' "$WORK/wrk.out"; then echo "wrk saw errors: $(grep Non-2xx "$WORK/wrk.out")" >&2; fi
    local requests
    requests=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
    python3 -c "import sys; t, b, n, hz = map(float, sys.argv[1:]); print(f'{t / hz * 1e6 / n:.0f} us CPU, {b / n / 1024:.1f} KB written')" \
        "$(( $(cpu_ticks) - ticks0 ))" "$(( $(written) - bytes0 ))" "$requests" "$(getconf CLK_TCK)" >"$WORK/cost"
    awk '/Requests\/sec/ {print $2}' "$WORK/wrk.out"
}
delivered() { curl -s "$BASE/metrics" | awk -F' ' '/^buzzkit_webhook_deliveries_total\{result="succeeded"\}/ {print $2}'; }

# Warm-up on both sides: with a receiver answering, the worker is then already draining a backlog
# in every measured run, not only in those after the first run with the webhook.
rate "$(field clientKey <<<"$OFF")" w0 >/dev/null
rate "$(field clientKey <<<"$ON")" w1 >/dev/null
# Odd runs measure without then with the webhook, even runs the other way round: the database
# grows through the session and whichever side ran second would pay for it every time.
offs=(); ons=()
for run in $(seq "$RUNS"); do
    if (( run % 2 )); then
        off=$(rate "$(field clientKey <<<"$OFF")" "f$run"); off_cost=$(cat "$WORK/cost")
        on=$(rate "$(field clientKey <<<"$ON")" "n$run"); on_cost=$(cat "$WORK/cost")
    else
        on=$(rate "$(field clientKey <<<"$ON")" "n$run"); on_cost=$(cat "$WORK/cost")
        off=$(rate "$(field clientKey <<<"$OFF")" "f$run"); off_cost=$(cat "$WORK/cost")
    fi
    offs+=("$off"); ons+=("$on")
    echo "run $run: identify without webhook $off req/s, with one webhook $on req/s," \
        "outbox cost $(python3 -c "print(f'{(1 - $on / $off) * 100:.1f} %')")" \
        "(per request: without $off_cost; with $on_cost; load average $(cut -d' ' -f1 /proc/loadavg))"
done
python3 - "${offs[*]}" "${ons[*]}" <<'PY'
import statistics, sys
offs, ons = ([float(x) for x in arg.split()] for arg in sys.argv[1:])
costs = sorted((1 - on / off) * 100 for off, on in zip(offs, ons))
print(f"outbox cost over {len(costs)} runs: median of the runs' costs {statistics.median(costs):.1f} %,"
      f" of the medians {(1 - statistics.median(ons) / statistics.median(offs)) * 100:.1f} %"
      f" (runs: {' / '.join(f'{c:.1f}' for c in costs)})")
PY
before=$(delivered); before=${before:-0}
sleep 10
after=$(delivered); after=${after:-0}
pending=$(curl -s "$BASE/metrics" | awk '/^buzzkit_webhook_outbox_pending/ {print $2}')
echo "deliveries to a local receiver: $(( (${after%.*} - ${before%.*}) / 10 ))/s (backlog left: $pending)"
