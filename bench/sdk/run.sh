#!/usr/bin/env bash
# The SDK bench: track() cost, delivery rate to a local `buzzkit serve`, memory of 100,000 queued
# events. Builds the bench in release; uses the server binary already built (debug by default).
set -euo pipefail
cd "$(dirname "$0")/../.."
swift build -c release --product BuzzKitSDKBench
BENCH=.build/release/BuzzKitSDKBench
SERVER=${BUZZKIT_BINARY:-.build/debug/buzzkit}
[ -x "$SERVER" ] || swift build --product buzzkit

"$BENCH" track --calls "${CALLS:-2000}"
"$BENCH" memory --events "${EVENTS:-100000}"

dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
"$SERVER" tenant create bench --database "$dir/db.sqlite" > "$dir/tenant.json"
key=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["clientKey"])' "$dir/tenant.json")
echo '{"clientKeyRatePerSecond": 100000, "logLevel": "warn"}' > "$dir/config.json"
"$SERVER" serve --port 0 --database "$dir/db.sqlite" --config "$dir/config.json" > "$dir/out" 2> "$dir/err" &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$dir/out" && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$dir/out" | head -1)
"$BENCH" deliver --base-url "$url" --client-key "$key" --events "${DELIVER:-20000}"
rm -rf "${TMPDIR:-/tmp}"/buzzkit-sdk-bench-*
