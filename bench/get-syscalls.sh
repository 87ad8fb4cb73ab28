#!/usr/bin/env bash
# What an uncached GET /v1/subscribers/{id} asks of the kernel, beside SQLite alone doing the same
# reads: the evidence behind bench/README's "the readers' lock", which a session first gathered
# with scratch scripts.
#
#   bench/get-syscalls.sh                        # release build, 50,000 people, 3 s
#   DUR=5 BUZZKIT_BINARY=/tmp/other bench/get-syscalls.sh
#   CACHED=1 bench/get-syscalls.sh               # the same with the snapshot cache on
#
# On a fresh 50,000-person seed with the snapshot cache off, under wrk -t2 -c64 (lua/get.lua):
#   1. the server's system calls and context switches a request (perf stat tracepoints, a run
#      of their own: counting slows the calls a little);
#   2. where its futexes come from: perf record of the futex tracepoint with call graphs, each
#      sample named by the first frame above the C library's lock code;
#   3. the same calls a GET of sqlite_ceiling's `get` scenario, its pk lookups left out
#      (strace -c, one thread).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BUZZKIT_BINARY:-.build/release/buzzkit}
DUR=${DUR:-3}
PEOPLE=50000
[ -n "${BUZZKIT_BINARY:-}" ] || swift build -c release --product buzzkit 2>&1 | tail -1
need() { command -v "$1" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$2" >/dev/null; }; }
need wrk wrk
need perf linux-perf
need strace strace
command -v gcc >/dev/null && [ -f /usr/include/sqlite3.h ] ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libsqlite3-dev >/dev/null
. bench/seeded-work.sh
seeded_work getsys $PEOPLE 0
SECRET_KEY=$(tenant_field "['secretKey']")
cp "$WORK/seed.sqlite" "$WORK/db.sqlite"
cp "$WORK/seed.sqlite" "$WORK/ceiling.sqlite"
# CACHED=1: the snapshot cache on (its default budget), so every GET after the warm-up is a hit.
cache='"snapshotCacheMiB": 0, '
[ "${CACHED:-0}" = 1 ] && cache=""
echo "{$cache\"logLevel\": \"warn\", \"clientKeyRatePerSecond\": 0}" >"$WORK/config.json"

"$BIN" serve --port 0 --database "$WORK/db.sqlite" --config "$WORK/config.json" >"$WORK/stdout" 2>"$WORK/stderr" &
SERVER=$!
for _ in $(seq 100); do grep -q listening "$WORK/stdout" && break; sleep 0.1; done
BASE=$(sed -n 's/^listening on //p' "$WORK/stdout")
get() { wrk -t2 -c64 -d"$1" -s bench/lua/get.lua "$BASE/healthz" -- $PEOPLE "$SECRET_KEY"; }
get 2s >/dev/null  # the OS's page cache and the readers' own

# 1. Calls a request. Divided by the loops' `read`s (one a request, as the /healthz counts show)
# rather than wrk's count, which also holds the requests sent before and after the counting.
calls="read sendto pread64 fcntl newfstatat futex epoll_wait"
events=$(for c in $calls; do printf 'syscalls:sys_enter_%s,' "$c"; done)context-switches
perf stat -x, -e "$events" -p "$SERVER" -o "$WORK/stat.txt" -- sleep "$DUR" &
counter=$!
rate=$(get "${DUR}s" | awk '/Requests\/sec/ {print $2}')
wait "$counter"
kind=uncached
[ "${CACHED:-0}" = 1 ] && kind=cached
echo "server, $kind GET under wrk -c64 ($rate a second), calls a request:"
awk -F, '$1 ~ /^[0-9]+$/ {sub("syscalls:sys_enter_", "", $3); n[$3] = $1}
    END {for (c in n) if (c != "read") printf "  %-17s %.3f\n", c, n[c] / n["read"]}' "$WORK/stat.txt" | sort

# 2. Who waits on and wakes which lock.
perf record -q -e syscalls:sys_enter_futex --call-graph dwarf,16384 -p "$SERVER" -o "$WORK/futex.data" \
    -- sleep 2 2>/dev/null &
counter=$!
get 2s >/dev/null
wait "$counter" || true
kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
SERVER=
echo "server, futex calls by the function that took the lock:"
perf script -i "$WORK/futex.data" -F ip,sym 2>/dev/null | python3 -c '
import collections, re, sys
# A sample is a blank-line-separated stack, innermost frame first. Skip the C library and the
# kernel entry, and addresses without a symbol (SQLite static functions): the first named frame
# left is who asked for the lock.
skip = re.compile(r"futex|lll_|pthread_mutex|pthread_cond|__GI_|^\[unknown\]$|^0x|syscall|entry_SYSCALL")
counts, total, frames = collections.Counter(), 0, []
def flush():
    global total, frames
    if frames:
        total += 1
        named = [f for f in frames if not skip.search(f)]
        counts[named[0] if named else "?"] += 1
    frames = []
for line in sys.stdin:
    parts = line.split()
    if not parts: flush(); continue
    frames.append(parts[1] if len(parts) > 1 else parts[0])
flush()
for name, n in counts.most_common(6):
    print(f"  {100 * n / max(total, 1):5.1f} %  {name[:110]}")
print(f"  ({total} futex calls sampled)")'

# 3. SQLite alone, one thread, the same reads.
CEILING_GET_ONLY=1 strace -f -c -o "$WORK/ceiling.strace" "$WORK/sqlite_ceiling" bench "$WORK/ceiling.sqlite" "$TENANT" 2 $PEOPLE 0 0 get \
    >"$WORK/ceiling.out"
gets=$(awk '/^get_subscriber/ {printf "%d", $2 * 2}' "$WORK/ceiling.out")
echo "sqlite_ceiling get, one thread under strace ($gets GETs), calls a GET:"
# strace -c's columns: % time, seconds, usecs/call, calls, [errors,] syscall.
awk -v n="$gets" '$NF ~ /^(pread64|fcntl|newfstatat|futex)$/ {printf "  %-17s %.3f\n", $NF, $4 / n}' \
    "$WORK/ceiling.strace" | sort
