#!/usr/bin/env python3
"""Soak: mixed load at a bounded rate for N minutes; samples the server's RSS, open fds and
threads (/proc/<pid>/status, /proc/<pid>/fd) and the database size every --sample seconds.

Passes when no response is a 5xx (or a transport error), open fds end where they started
(within --fd-slack) and RSS after the warm-up grows by less than --rss-slack-mb.

usage: soak.py [--minutes 10] [--rate 300] [--workers 8]
"""

import argparse
import os
import random
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Client, Server, alnum, anon_id, percentile, proc_fds, proc_rss_kb  # noqa: E402


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.status = {}
        self.errors = {}
        self.latency = []
        self.count = 0

    def add(self, status, seconds):
        with self.lock:
            self.status[status] = self.status.get(status, 0) + 1
            self.count += 1
            if len(self.latency) < 2_000_000:
                self.latency.append(seconds)

    def error(self, e):
        with self.lock:
            self.errors[type(e).__name__] = self.errors.get(type(e).__name__, 0) + 1


def worker(port, keys, stop, stats, interval, wid, max_requests):
    rng = random.Random(wid)
    backend = Client(port, {"Authorization": "Bearer " + keys["secretKey"]}, timeout=30)
    app = Client(port, {"Authorization": "Bearer " + keys["clientKey"]}, timeout=30)
    people = []  # external ids this worker made
    next_at = time.time()

    def call(client, method, path, body=None, close=False):
        t0 = time.time()
        try:
            status, payload = client.send(method, path, body, {"Connection": "close"} if close else None)
            stats.add(status, time.time() - t0)
            return status, payload
        except Exception as e:  # a transport error is a failure of the soak
            stats.error(e)
            return None, None

    n = 0
    while not stop.is_set() and stats.count < max_requests:
        n += 1
        next_at += interval
        delay = next_at - time.time()
        if delay > 0:
            time.sleep(delay)
        close = rng.random() < 0.1  # some connection churn
        r = rng.random()
        if r < 0.15 or not people:
            anon = anon_id()
            call(app, "POST", "/v1/events", {"subscriberId": anon, "events": [
                {"id": alnum(16), "name": "app.open"}, {"id": alnum(16), "name": "screen.view"}]}, close)
            ext = "soak_%d_%d" % (wid, n)
            if rng.random() < 0.5 and people:
                ext = rng.choice(people)  # second device: absorb
            call(app, "POST", "/v1/identify", {"externalId": ext, "anonymousId": anon, "email": "%s@example.com" % ext,
                                               "attributes": {"plan": rng.choice(["free", "pro"])},
                                               "device": {"deviceId": "dev_" + alnum(10), "platform": "ios"}})
            if ext not in people:
                people.append(ext)
                if len(people) > 200:
                    old = people.pop(0)
                    call(backend, "DELETE", "/v1/subscribers/" + old)  # keep the data set bounded
        elif r < 0.40:
            ext = rng.choice(people)
            call(app, "POST", "/v1/events", {"subscriberId": ext, "events": [
                {"id": alnum(16), "name": "screen.view", "properties": {"i": i}} for i in range(rng.choice((1, 5, 20)))]},
                close)
        elif r < 0.50:
            call(backend, "PUT", "/v1/subscribers/" + rng.choice(people), {"attributes": {"score": rng.randrange(1000)}}, close)
        elif r < 0.58:
            call(app, "PATCH", "/v1/subscribers/%s/attributes" % rng.choice(people),
                 {"attributes": {"theme": rng.choice(["dark", "light"])}}, close)
        elif r < 0.63:
            call(app, "PUT", "/v1/subscribers/%s/push-subscriptions/dev_%d" % (rng.choice(people), rng.randrange(50)),
                 {"token": alnum(32), "platform": "ios", "permission": "authorized"}, close)
        elif r < 0.66:
            call(app, "PUT", "/v1/subscribers/%s/preferences" % rng.choice(people), {"topics": {"news": rng.random() < 0.5}})
        elif r < 0.82:
            call(backend, "GET", "/v1/subscribers/" + rng.choice(people), close=close)
        elif r < 0.92:
            call(backend, "GET", "/v1/subscribers/%s/events?limit=50" % rng.choice(people), close=close)
        elif r < 0.97:
            call(backend, "GET", "/v1/subscribers?limit=20")
        else:
            call(backend, "GET", "/metrics")
    backend.close()
    app.close()


def db_bytes(path):
    return sum(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--rate", type=float, default=300, help="requests per second, all workers together")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--max-requests", type=int, default=1_000_000, help="stop after this many requests")
    ap.add_argument("--sample", type=float, default=15, help="seconds between samples")
    ap.add_argument("--warmup", type=float, default=60, help="seconds before the RSS baseline")
    ap.add_argument("--rss-slack-mb", type=float, default=32)
    ap.add_argument("--fd-slack", type=int, default=8)
    args = ap.parse_args()

    directory = tempfile.mkdtemp(prefix="buzzkit-soak-")
    database = os.path.join(directory, "buzzkit.sqlite")
    # Generous client-key rate: the soak measures leaks, not the rate limiter.
    server = Server(database, directory, config={"clientKeyRatePerSecond": 100000, "clientKeyBurst": 100000}).start()
    keys = server.create_tenant("soak")
    pid = server.pid
    stats, stop = Stats(), threading.Event()
    base_fds = proc_fds(pid)
    print("soak: %.1f min at %.0f req/s with %d workers, server pid %d, database %s" % (
        args.minutes, args.rate, args.workers, pid, database), flush=True)
    print("%7s %9s %9s %6s %8s %10s %6s" % ("t(s)", "requests", "rss(KiB)", "fds", "threads", "db+wal(B)", "5xx"), flush=True)
    threads = [threading.Thread(target=worker, args=(server.port, keys, stop, stats, args.workers / args.rate, w,
                                                     args.max_requests)) for w in range(args.workers)]
    started = time.time()
    for t in threads:
        t.start()
    samples = []
    end = started + args.minutes * 60
    while time.time() < end and any(t.is_alive() for t in threads):
        time.sleep(min(args.sample, max(0, end - time.time())))
        with open("/proc/%d/status" % pid) as f:
            threads_n = next(int(l.split()[1]) for l in f if l.startswith("Threads:"))
        five = sum(v for k, v in stats.status.items() if k >= 500)
        s = (time.time() - started, stats.count, proc_rss_kb(pid), proc_fds(pid), threads_n, db_bytes(database), five)
        samples.append(s)
        print("%7.0f %9d %9d %6d %8d %10d %6d" % s, flush=True)
    stop.set()
    for t in threads:
        t.join()
    time.sleep(1)
    idle_fds = proc_fds(pid)
    code = server.terminate()

    warm = [s for s in samples if s[0] >= args.warmup] or samples
    rss_growth_mb = (warm[-1][2] - warm[0][2]) / 1024.0
    fd_values = [s[3] for s in samples]
    five = sum(v for k, v in stats.status.items() if k >= 500)
    elapsed = time.time() - started
    print("requests %d in %.0fs (%.0f/s); statuses %s; transport errors %s" % (
        stats.count, elapsed, stats.count / elapsed, dict(sorted(stats.status.items())), stats.errors or 0))
    print("latency p50 %.1f ms, p99 %.1f ms, max %.1f ms" % (
        percentile(stats.latency, 50) * 1000, percentile(stats.latency, 99) * 1000, max(stats.latency) * 1000))
    print("RSS after warm-up %d -> %d KiB (growth %.1f MiB, max %d KiB); fds before load %d, during %d..%d, "
          "after load %d; db+wal %d -> %d B; SIGTERM exit %d" % (
              warm[0][2], warm[-1][2], rss_growth_mb, max(s[2] for s in samples), base_fds, min(fd_values),
              max(fd_values), idle_fds, samples[0][5], samples[-1][5], code))
    ok = (five == 0 and not stats.errors and rss_growth_mb < args.rss_slack_mb
          and idle_fds <= base_fds + args.fd_slack and code == 0)
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
