#!/usr/bin/env bash
# Two builds' plain `GET /healthz`, paired: both servers up at once, `wrk -t2 -cCONNS` alternated
# between them in short runs (which goes first alternates), each pair's after/before printed and
# their median at the end. How a change to the HTTP path is told apart from this machine's
# drift, which moves a single 5 s figure by ±10 %.
#
#   bench/healthz-ab.sh /tmp/before .build/release/buzzkit        # 10 pairs of 3 s, 64 connections
#   PAIRS=16 CONNS=256 bench/healthz-ab.sh /tmp/before /tmp/after
#   AFTER_ENV="BUZZKIT_EXTRA=2" bench/healthz-ab.sh BIN BIN   # one binary, its environment differs
set -euo pipefail
BEFORE=${1:?usage: bench/healthz-ab.sh BEFORE_BINARY AFTER_BINARY}
AFTER=${2:?usage: bench/healthz-ab.sh BEFORE_BINARY AFTER_BINARY}
PAIRS=${PAIRS:-10}
CONNS=${CONNS:-64}
DUR=${DUR:-3}
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }

WORK=$(mktemp -d)
SERVERS=()
cleanup() {
    for pid in "${SERVERS[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
echo '{"logLevel": "warn", "clientKeyRatePerSecond": 0}' >"$WORK/config.json"

start() {  # start NAME BINARY [VAR=VALUE…] → base URL
    # shellcheck disable=SC2086 # the environment's words are meant to split
    env ${3:-} BUZZKIT_BOOTSTRAP_WORKSPACE_KEY=bk_ws_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa \
        "$2" serve --port 0 --database "$WORK/$1.sqlite" --config "$WORK/config.json" >"$WORK/$1.out" 2>&1 &
    SERVERS+=($!)
    for _ in $(seq 100); do grep -q listening "$WORK/$1.out" && break; sleep 0.1; done
    sed -n 's/^listening on //p' "$WORK/$1.out"
}
rate() { wrk -t2 -c"$CONNS" -d"${DUR}s" "$1/healthz" | awk '/Requests\/sec/ {print $2}'; }

before=$(start before "$BEFORE" "${BEFORE_ENV:-}")
after=$(start after "$AFTER" "${AFTER_ENV:-}")
echo "date: $(date -u +%FT%TZ), loadavg: $(cut -d' ' -f1-3 /proc/loadavg), $CONNS connections"
ratios=()
for i in $(seq "$PAIRS"); do
    if ((i % 2)); then
        a=$(rate "$before")
        b=$(rate "$after")
    else
        b=$(rate "$after")
        a=$(rate "$before")
    fi
    ratio=$(python3 -c "print(f'{$b / $a:.3f}')")
    ratios+=("$ratio")
    echo "  before $a req/s, after $b req/s: $ratio"
done
python3 -c "import statistics, sys; r = [float(x) for x in sys.argv[1:]]
print(f'after/before: median {statistics.median(r):.3f} over {len(r)} pairs (range {min(r):.3f}-{max(r):.3f})')" "${ratios[@]}"
echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)"
