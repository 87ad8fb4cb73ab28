#!/usr/bin/env bash
# Server CPU per /healthz request, user and system apart, for our server and for nginx with
# bench/run.sh's config: utime and stime from /proc/<pid>/stat around a wrk run, each server
# alone on the machine. Steadier than req/s for telling whose time it is: the kernel's share
# (the socket calls) is the same for both; what differs is user space. wrk's own CPU a request is
# printed beside each, since it runs on the same two cores and its share sets the req/s ratio too.
# Then the whole machine's time a request (/proc/stat: user, system, softirq, idle; both servers'
# and wrk's together), which shows how much of the two cores is the kernel's loopback TCP.
#
#   bench/cpu-per-request.sh                  # release build, 64 connections, 5 s, 3 rounds
#   ROUNDS=5 CONNS=256 BUZZKIT_BINARY=/tmp/other bench/cpu-per-request.sh
#   SYSCALLS=1 bench/cpu-per-request.sh       # and, in a further 3 s run each, the server's
#                                             # socket and epoll calls a request (perf stat)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BUZZKIT_BINARY:-.build/release/buzzkit}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-64}
[ -x "$BIN" ] || { echo "no $BIN: swift build -c release --product buzzkit"; exit 1; }
if [ "${SYSCALLS:-0}" = 1 ] && ! command -v perf >/dev/null; then
    apt-get update -qq && apt-get install -y -qq linux-perf >/dev/null
fi
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { apt-get update -qq && apt-get install -y -qq nginx-light >/dev/null; NGINX=/usr/sbin/nginx; }
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; "$NGINX" -c "$WORK/nginx.conf" -p "$WORK" -s stop 2>/dev/null; rm -rf "$WORK"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# machine → user (with nice), system, softirq and idle (with iowait) ticks of all cores, from /proc/stat.
machine() { awk '/^cpu / {print $2 + $3, $4, $8, $5 + $6}' /proc/stat; }
ticks() { for p in "$@"; do awk '{print $14, $15}' "/proc/$p/stat"; done | awk '{u += $1; s += $2} END {print u, s}'; }
measure() {  # measure NAME URL PID… → user and system µs per request (and, with SYSCALLS=1, the calls)
    local name=$1 url=$2; shift 2
    wrk -t2 -c"$CONNS" -d2s "$url" >/dev/null
    local before after n wrk_cpu
    before=$(ticks "$@")
    local machine_before machine_after
    machine_before=$(machine)
    # wrk's own CPU too (bash's `time`, user + system seconds): it shares the two cores.
    local TIMEFORMAT='%U %S'
    { time wrk -t2 -c"$CONNS" -d5s "$url" >"$WORK/wrk.out"; } 2>"$WORK/wrk.time"
    after=$(ticks "$@")
    machine_after=$(machine)
    n=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
    wrk_cpu=$(awk '{print $1 + $2}' "$WORK/wrk.time")
    echo "$before $after $n $wrk_cpu" | awk -v name="$name" -v hz="$(getconf CLK_TCK)" \
        '{printf "%-8s user %.2f us, system %.2f us per request; wrk %.2f us (%d requests)\n", name,
          ($3 - $1) * 1e6 / hz / $5, ($4 - $2) * 1e6 / hz / $5, $6 * 1e6 / $5, $5}'
    echo "$machine_before $machine_after $n" | awk -v hz="$(getconf CLK_TCK)" \
        '{f = 1e6 / hz / $9; printf "         machine: user %.2f, system %.2f, softirq %.2f, idle %.2f us per request\n",
          ($5 - $1) * f, ($6 - $2) * f, ($7 - $3) * f, ($8 - $4) * f}'
    [ "${SYSCALLS:-0}" = 1 ] && syscalls "$url" "$@"
    return 0
}

# syscalls URL PID…: the system calls each server makes a request, counted by the kernel's
# tracepoints in a run of their own (counting slows the calls a little, so not in the timed run).
# The two servers use different calls for the same job (read/recvfrom, sendto/writev); what
# matters is how many a request, and how many epoll_wait wake-ups serve them.
syscalls() {
    local url=$1; shift
    local calls="read recvfrom write writev sendto epoll_wait epoll_ctl futex"
    local events n
    events=$(for c in $calls; do printf 'syscalls:sys_enter_%s,' "$c"; done)
    perf stat -x, -e "${events%,}" -p "$(echo "$@" | tr ' ' ',')" -o "$WORK/perf.txt" -- sleep 3 &
    local counter=$!
    n=$(wrk -t2 -c"$CONNS" -d3s "$url" | awk '/requests in/ {print $1}')
    wait "$counter"
    awk -F, -v n="$n" '/sys_enter_/ && $1 > 0 {sub("syscalls:sys_enter_", "", $3); line = line sprintf(" %s %.3f", $3, $1 / n)}
        END {print "         calls a request:" line}' "$WORK/perf.txt"
}

NGINX_PORT=$(free_port)
. bench/nginx-ceiling.sh
nginx_ceiling_conf "$WORK" "$NGINX_PORT"
echo '{"logLevel":"warn"}' >"$WORK/config.json"
for round in $(seq "$ROUNDS"); do
    "$NGINX" -c "$WORK/nginx.conf" -p "$WORK"
    sleep 0.3
    measure nginx "http://127.0.0.1:$NGINX_PORT/healthz" $(pgrep -f "nginx: worker process" | tr '\n' ' ')
    "$NGINX" -c "$WORK/nginx.conf" -p "$WORK" -s stop 2>/dev/null
    sleep 0.3
    "$BIN" serve --port 0 --database "$WORK/db-$round.sqlite" --config "$WORK/config.json" >"$WORK/out" 2>&1 &
    server=$!
    for _ in $(seq 100); do grep -q listening "$WORK/out" 2>/dev/null && break; sleep 0.1; done
    measure buzzkit "$(sed -n 's/^listening on //p' "$WORK/out")/healthz" "$server"
    kill "$server"; wait "$server" 2>/dev/null || true
done
