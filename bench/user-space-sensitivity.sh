#!/usr/bin/env bash
# How much /healthz's req/s at 64 connections depends on our own user-space work: the question
# behind issue 14's last goal (nginx's rate with a margin). Builds a scratch copy of HEAD whose
# responses are serialised K extra times into a throwaway array (BUZZKIT_EXTRA=K; ~1,870
# instructions each, the serializer's own code with its allocation), then alternates wrk between
# two servers of that one binary, K=0 and K=N, and prints each pair's ratio and their median.
# One binary for both sides, so code layout is not what differs. If our instructions limited the
# rate, adding a third of them would show as a third of our share of the cores (~13 % of them:
# 1.1 of 8.2 µs a request, bench/cpu-per-request.sh).
#
#   bench/user-space-sensitivity.sh                  # K=4, 20 pairs of 3 s
#   KS="2 4 8" PAIRS=10 COUNT=1 bench/user-space-sensitivity.sh   # COUNT=1: callgrind's count per K too
set -euo pipefail
cd "$(dirname "$0")/.."
KS=${KS:-4}
PAIRS=${PAIRS:-20}
DUR=${DUR:-3}
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }

SCRATCH=$(mktemp -d)
git worktree add -q --detach "$SCRATCH/tree" HEAD
SERVERS=()
cleanup() {
    for pid in "${SERVERS[@]}"; do kill "$pid" 2>/dev/null || true; done
    git worktree remove --force "$SCRATCH/tree" 2>/dev/null || true
    rm -rf "$SCRATCH"
}
trap cleanup EXIT

# The probe: a fixed amount of ordinary server code a request, chosen at start-up.
git -C "$SCRATCH/tree" apply <<'PATCH'
--- a/Sources/HTTPServer/HTTPResponse+Wire.swift
+++ b/Sources/HTTPServer/HTTPResponse+Wire.swift
@@ -1,5 +1,8 @@
+import Glibc
 import HTTP1
 
+nonisolated(unsafe) let extraSerializations: Int = getenv("BUZZKIT_EXTRA").map { Int(atoi($0)) } ?? 0
+
 extension HTTPResponse {
     /// This response on the wire with the framing the connection decided: gzip applied when
     /// the framing asks for it (identity if zlib refuses), then HTTP1's one serializer.
@@ -12,5 +15,11 @@ extension HTTPResponse {
         }
         serializeResponse(
             status: status, headers: headers, body: compressed ?? body, framing: framing, date: date, into: &output)
+        for _ in 0..<extraSerializations {
+            var scratch: [UInt8] = []
+            serializeResponse(
+                status: status, headers: headers, body: compressed ?? body, framing: framing, date: date, into: &scratch)
+            if scratch.count == 3 { print("never") }
+        }
     }
 }
PATCH
echo "building the probe (release) in $SCRATCH/tree…"
(cd "$SCRATCH/tree" && swift build -c release >"$SCRATCH/build.log" 2>&1) || {
    tail -20 "$SCRATCH/build.log"
    exit 1
}
BIN=$SCRATCH/tree/.build/release/buzzkit

start() {  # start EXTRA → base URL
    local dir
    dir=$(mktemp -d "$SCRATCH/server.XXXX")
    echo '{"logLevel": "warn", "clientKeyRatePerSecond": 0}' >"$dir/config.json"
    BUZZKIT_EXTRA=$1 BUZZKIT_BOOTSTRAP_WORKSPACE_KEY=bk_ws_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa \
        "$BIN" serve --port 0 --database "$dir/db.sqlite" --config "$dir/config.json" >"$dir/out" 2>&1 &
    SERVERS+=($!)
    for _ in $(seq 100); do grep -q listening "$dir/out" && break; sleep 0.1; done
    sed -n 's/^listening on //p' "$dir/out"
}
rate() { wrk -t2 -c64 -d"${DUR}s" "$1/healthz" | awk '/Requests\/sec/ {print $2}'; }

echo "date: $(date -u +%FT%TZ), git: $(git rev-parse --short HEAD), loadavg: $(cut -d' ' -f1-3 /proc/loadavg)"
for k in $KS; do
    if [ "${COUNT:-0}" = 1 ]; then
        for extra in 0 "$k"; do
            printf 'K=%s: ' "$extra"
            BUZZKIT_EXTRA=$extra BUZZKIT_BINARY=$BIN OUT=$SCRATCH/callgrind ONLY=healthz bench/request-instructions.sh |
                grep 'instructions per request'
        done
    fi
    base=$(start 0)
    probe=$(start "$k")
    ratios=()
    for i in $(seq "$PAIRS"); do
        # Which side goes first alternates, so a drifting machine favours neither.
        if ((i % 2)); then
            a=$(rate "$base")
            b=$(rate "$probe")
        else
            b=$(rate "$probe")
            a=$(rate "$base")
        fi
        ratio=$(python3 -c "print(f'{$b / $a:.3f}')")
        ratios+=("$ratio")
        echo "  K=0 $a req/s, K=$k $b req/s: $ratio"
    done
    python3 -c "import statistics, sys; r = [float(x) for x in sys.argv[2:]]
print(f'K={sys.argv[1]}: median {statistics.median(r):.3f} of K=0 over {len(r)} pairs (mean {statistics.mean(r):.3f}, sd {statistics.stdev(r):.3f})')" \
        "$k" "${ratios[@]}"
    for pid in "${SERVERS[@]}"; do kill "$pid" 2>/dev/null || true; done
    SERVERS=()
done
echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)"
