#!/usr/bin/env bash
# Where a rename identify's CPU goes, thread by thread, under wrk -c64, and what the same SQL
# costs sqlite_ceiling at the server's own group size: the measurement behind bench/README's
# "What bounds identify" sections, which earlier sessions rebuilt by hand each time.
#
#   bench/identify-threads.sh                    # release build, 3 rounds of 5 s
#   ROUNDS=2 DUR=5 BUZZKIT_BINARY=/tmp/other bench/identify-threads.sh
#   ROUNDS=10 BUZZKIT_BINARY=/tmp/a BUZZKIT_BINARY_B=/tmp/b bench/identify-threads.sh   # A/B
#
# With BUZZKIT_BINARY_B the rounds alternate the two builds (A, B, A, B…) on the same seed and
# skip the ceiling, then print each pair's renames a second and the writer's µs a rename, and
# how many pairs each build led: on this machine one build's rate moves ±20 % from one round to
# the next, so a change to the write path is read from pairs, never from one run of each.
#
# Each round: the server on a fresh copy of one seeded database (50,000 people, 1.2 M anonymous),
# 5 s of renames from 64 connections; then sqlite_ceiling on another fresh copy, first with as
# many renames a transaction as the server's mean group in that round, then with 64, both at
# synchronous=NORMAL (no fsync inside COMMIT, so only CPU differs). Prints per thread: CPU per
# identify (user / system, from /proc/<pid>/task/*/stat), cores used, time waiting for a core
# (schedstat), bytes handed to write(2) per identify (the log), voluntary and involuntary context
# switches per identify; wrk's own CPU per identify (it runs on the same two cores); and the
# ceiling's CPU per rename.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
BIN=${BUZZKIT_BINARY:-.build/release/buzzkit}
BIN_B=${BUZZKIT_BINARY_B:-}
for binary in "$BIN" $BIN_B; do
    [ -x "$binary" ] || { echo "no $binary: swift build -c release --product buzzkit"; exit 1; }
done
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
command -v gcc >/dev/null && [ -f /usr/include/sqlite3.h ] ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libsqlite3-dev sqlite3 >/dev/null
SPAN=$((DUR * 60000))   # anonymous ids one round may rename (two wrk threads, half each)
. bench/seeded-work.sh
seeded_work threads 50000 $((SPAN * 4))
CLIENT_KEY=$(tenant_field "['clientKey']")
echo '{"logLevel": "warn", "clientKeyRatePerSecond": 0}' >"$WORK/config.json"

# threads PID: one line per thread: name, user ticks, system ticks, ns waited to run, bytes
# written, voluntary and involuntary context switches
threads() {
    for task in /proc/"$1"/task/*; do
        local stat
        stat=$(cut -d' ' -f14,15 "$task/stat")
        printf '%s %s %s %s %s\n' "$(cat "$task/comm")" "$stat" "$(cut -d' ' -f2 "$task/schedstat")" \
            "$(awk '/^wchar/ {print $2}' "$task/io")" \
            "$(awk '/^voluntary_ctxt/ {v = $2} /^nonvoluntary_ctxt/ {n = $2} END {print v, n}' "$task/status")"
    done
}
groups() { curl -sf "$1/metrics" | awk '/^buzzkit_write_batch_size_(sum|count)/ {printf "%s ", $2}'; }
# with_cpu CMD…: runs CMD, its output passed on, then one line more: its user and system CPU
# seconds (getrusage of the child: no /usr/bin/time on a fresh machine).
with_cpu() {
    python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(usage.ru_utime, usage.ru_stime)' "$@"
}

: >"$WORK/pairs"
for round in $(seq "$ROUNDS"); do
    cp "$WORK/seed.sqlite" "$WORK/db.sqlite"
    rm -f "$WORK"/db.sqlite-*
    sync
    label=A
    binary=$BIN
    if [ -n "$BIN_B" ] && [ $((round % 2)) = 0 ]; then label=B; binary=$BIN_B; fi
    [ -n "$BIN_B" ] && echo "round $round: $label ($binary)"
    "$binary" serve --port 0 --database "$WORK/db.sqlite" --config "$WORK/config.json" >"$WORK/stdout" 2>"$WORK/stderr" &
    SERVER=$!
    for _ in $(seq 100); do grep -q listening "$WORK/stdout" && break; sleep 0.1; done
    BASE=$(sed -n 's/^listening on //p' "$WORK/stdout")
    wrk -t2 -c64 -d1s "$BASE/healthz" >/dev/null
    threads "$SERVER" >"$WORK/before"
    groups_before=$(groups "$BASE")
    # wrk's own CPU too: it shares the two cores with the server.
    with_cpu wrk -t2 -c64 -d"${DUR}s" --latency "$BASE/v1/identify" -s bench/lua/identify.lua -- \
        0 $((SPAN / 2)) "$CLIENT_KEY" "t$round" >"$WORK/wrk.txt"
    threads "$SERVER" >"$WORK/after"
    groups_after=$(groups "$BASE")
    kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
    SERVER=
    python3 - "$WORK" "$DUR" "$round" "$groups_before" "$groups_after" "$label" <<'PY'
import os, sys
work, dur, round_, label = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[6]
def load(name):
    rows = {}
    for line in open(f"{work}/{name}"):
        comm, *numbers = line.split()
        row = rows.setdefault(comm, [0] * 6)
        for i, n in enumerate(numbers): row[i] += int(n)
    return rows
before, after = load("before"), load("after")
wrk = open(f"{work}/wrk.txt").read().split("\n")
renames = int(next(l for l in wrk if "requests in" in l).split()[0])
rate = next(l for l in wrk if l.startswith("Requests/sec")).split()[1]
p99 = next(l.split()[1] for l in wrk if l.strip().startswith("99%"))
hz = os.sysconf("SC_CLK_TCK")
(sum0, count0), (sum1, count1) = map(float, sys.argv[4].split()), map(float, sys.argv[5].split())
mean = (sum1 - sum0) / max(1, count1 - count0)
print(f"round {round_}: {rate} renames a second, p99 {p99}, mean group {mean:.1f}")
total = writer = 0.0
for comm in sorted(after):
    b = before.get(comm, [0] * 6)
    user, system, waited, written, voluntary, involuntary = (a - c for a, c in zip(after[comm], b))
    us = (user + system) * 1e6 / hz / renames
    total += us
    if us < 0.05: continue
    print(f"  {comm:16s} {us:6.1f} µs (user {user * 1e6 / hz / renames:5.1f}, system {system * 1e6 / hz / renames:5.1f})"
          f"  cores {(user + system) / hz / dur:4.2f}  waiting {waited / 1e9 / dur:4.2f}"
          f"  written {written / renames:6.0f} B  switches {voluntary / renames:.3f} / {involuntary / renames:.3f}")
    if comm == "db-writer":
        writer = us
print(f"  server, all threads {total:.1f} µs an identify")
user, system = map(float, [l for l in wrk if l.strip()][-1].split())  # with_cpu's line
print(f"  wrk              {(user + system) * 1e6 / renames:6.1f} µs (user {user * 1e6 / renames:5.1f}, system {system * 1e6 / renames:5.1f})"
      f"  cores {(user + system) / dur:4.2f}")
open(f"{work}/mean_group", "w").write(str(max(1, round(mean))))
with open(f"{work}/pairs", "a") as pairs:
    pairs.write(f"{label} {rate} {writer}\n")
PY
    [ -n "$BIN_B" ] && continue
    mean_group=$(cat "$WORK/mean_group")
    for per_txn in "$mean_group" 64; do
        cp "$WORK/seed.sqlite" "$WORK/ceiling.sqlite"
        rm -f "$WORK"/ceiling.sqlite-*
        sync
        out=$(CEILING_PER_TXN="$per_txn" CEILING_SYNCHRONOUS=NORMAL with_cpu \
            "$WORK/sqlite_ceiling" bench "$WORK/ceiling.sqlite" "$TENANT" "$DUR" 50000 0 0 identify)
        rate=$(awk '/^identify_group/ {print $2}' <<<"$out")
        read -r user system < <(tail -1 <<<"$out")
        python3 -c "r=$rate; n=r*$DUR; print(f'  sqlite_ceiling, {$per_txn} a transaction (NORMAL): {r:,.0f} a second, {($user+$system)*1e6/n:.1f} µs a rename (user {$user*1e6/n:.1f}, system {$system*1e6/n:.1f})')"
    done
done

if [ -n "$BIN_B" ]; then
    python3 - "$WORK/pairs" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
pairs = [(rows[i], rows[i + 1]) for i in range(0, len(rows) - 1, 2)]
print("pairs (A then B): renames a second; writer µs a rename")
for a, b in pairs:
    print(f"  {float(a[1]):8,.0f} {float(b[1]):8,.0f}  ({float(b[1]) / float(a[1]):.3f})"
          f"   writer {float(a[2]):5.1f} {float(b[2]):5.1f}")
ratios = [float(b[1]) / float(a[1]) for a, b in pairs]
led = sum(r > 1 for r in ratios)
print(f"B / A: median {statistics.median(ratios):.3f} over {len(pairs)} pairs; B led {led}, A led {len(pairs) - led}")
PY
fi
