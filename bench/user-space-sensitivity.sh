#!/usr/bin/env bash
# How much /healthz's req/s at 64 connections depends on our own user-space work: the question
# behind issue 14's last goal (nginx's rate with a margin). Builds a scratch copy of HEAD whose
# responses are serialised K extra times into a throwaway array (BUZZKIT_EXTRA=K; ~1,870
# instructions each, the serializer's own code with its allocation), then alternates wrk between
# two servers of that one binary, K=0 and K=N (bench/healthz-ab.sh), and prints each pair's
# ratio and their median.
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

SCRATCH=$(mktemp -d)
git worktree add -q --detach "$SCRATCH/tree" HEAD
cleanup() {
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

echo "date: $(date -u +%FT%TZ), git: $(git rev-parse --short HEAD)"
for k in $KS; do
    if [ "${COUNT:-0}" = 1 ]; then
        for extra in 0 "$k"; do
            printf 'K=%s: ' "$extra"
            BUZZKIT_EXTRA=$extra BUZZKIT_BINARY=$BIN OUT=$SCRATCH/callgrind ONLY=healthz bench/request-instructions.sh |
                grep 'instructions per request'
        done
    fi
    echo "K=$k against K=0:"
    PAIRS=$PAIRS DUR=$DUR AFTER_ENV="BUZZKIT_EXTRA=$k" bench/healthz-ab.sh "$BIN" "$BIN"
done
