#!/usr/bin/env python3
"""The dashboard's subscriber list at a million rows: how long each page's API call takes.

    python3 bench/dashboard_list.py                    # 1,000,000 subscribers, .build/release or debug
    SUBSCRIBERS=200000 BUZZKIT_BINARY=.build/release/buzzkit python3 bench/dashboard_list.py

Migrates a fresh SQLite file with `buzzkit migrate`, makes a tenant with `buzzkit tenant create`,
then seeds SUBSCRIBERS rows straight into `subscribers` and `aliases` with one SQL statement each
(like bench/sqlite_ceiling.c seeds, without going through the API): 70% anonymous, 30% identified,
1 in 100 identified ones verified, so the "verified" filter is the rare kind. Then it starts
`buzzkit serve` on it and times, over one keep-alive connection, the calls the Subscribers view
makes: `GET /v1/subscribers?order=newest&limit=50` with each filter, on the first page, the
next 20 pages by following `nextCursor`, and a deep page (a cursor near the oldest row), plus the
exact search `GET /v1/subscribers/{alias}`. Prints median, p95 and max per call in milliseconds,
wall time at the client, and fails if any page took 300 ms or more.
"""

import base64
import http.client
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
N = int(os.environ.get("SUBSCRIBERS", "1000000"))
REPEAT = int(os.environ.get("REPEAT", "20"))
GOAL_MS = 300.0


def binary():
    if os.environ.get("BUZZKIT_BINARY"):
        return os.environ["BUZZKIT_BINARY"]
    for kind in ("release", "debug"):
        path = os.path.join(ROOT, ".build", kind, "buzzkit")
        if os.access(path, os.X_OK):
            return path
    sys.exit("no buzzkit binary: swift build -c release")


def cursor_before(key):
    """The server's newest-first cursor for `key` (its format, for the deep page only)."""
    return base64.urlsafe_b64encode(("n:%d" % key).encode()).decode().rstrip("=")


def main():
    exe = binary()
    work = tempfile.mkdtemp(prefix="buzzkit-dash-bench-", dir=os.environ.get("TMPDIR"))
    db_path = os.path.join(work, "buzzkit.sqlite")
    workspace_key = "bk_ws_" + "DashBench" * 3 + "Dash1"
    env = dict(os.environ, BUZZKIT_BOOTSTRAP_WORKSPACE_KEY=workspace_key)
    server = None
    try:
        subprocess.run([exe, "migrate", "--database", db_path], check=True, env=env, capture_output=True)
        created = json.loads(subprocess.run(
            [exe, "tenant", "create", "bench", "--database", db_path], check=True, env=env,
            capture_output=True, text=True).stdout)
        tenant, secret = created["tenant"]["id"], created["secretKey"]

        started = time.time()
        db = sqlite3.connect(db_path)
        db.execute("PRAGMA journal_mode=WAL")
        now = int(time.time() * 1000)
        with db:
            # i % 10 < 7: anonymous; identified ones with i % 100 == 99 are verified.
            db.execute("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                INSERT INTO subscribers (tenant_id, id, anonymous, verified, email, created_at, updated_at)
                SELECT ?, CASE WHEN i % 10 < 7 THEN printf('anon_%021d', i) ELSE printf('user_%d', i) END,
                       i % 10 < 7, i % 10 >= 7 AND i % 100 = 99,
                       CASE WHEN i % 10 < 7 THEN NULL ELSE printf('user_%d@example.com', i) END,
                       ? - (? - i) * 1000, ? - (? - i) * 1000
                FROM n""", (N, tenant, now, N, now, N))
            db.execute("INSERT INTO aliases (tenant_id, alias, subscriber_key) "
                       "SELECT tenant_id, id, key FROM subscribers WHERE tenant_id = ?", (tenant,))
        first_key, last_key = db.execute(
            "SELECT min(key), max(key) FROM subscribers WHERE tenant_id = ?", (tenant,)).fetchone()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        size = os.path.getsize(db_path) / 1e6
        print("seeded %d subscribers in %.1f s (%.0f MB)" % (N, time.time() - started, size))

        config = os.path.join(work, "buzzkit.json")
        with open(config, "w") as f:
            json.dump({"logLevel": "warn"}, f)
        server = subprocess.Popen([exe, "serve", "--port", "0", "--database", db_path, "--config", config],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        port = None
        while port is None:
            line = server.stdout.readline()
            if not line:
                sys.exit("buzzkit exited before listening")
            if line.startswith("listening on http://"):
                port = int(line.strip().rsplit(":", 1)[1])

        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Authorization": "Bearer " + secret}

        def get(path):
            t0 = time.perf_counter()
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            body = response.read()
            elapsed = (time.perf_counter() - t0) * 1000
            if response.status != 200:
                sys.exit("%s answered %d: %s" % (path, response.status, body[:300]))
            return elapsed, json.loads(body)["data"]

        results = []

        def measure(label, path, expect_rows=True):
            get(path)  # warm the statement cache and the page cache once
            times = []
            data = None
            for _ in range(REPEAT):
                ms, data = get(path)
                times.append(ms)
            rows = len(data.get("subscribers", [])) if "subscribers" in data else 1
            if expect_rows and rows == 0:
                sys.exit("%s returned no rows" % path)
            times.sort()
            results.append((label, statistics.median(times), times[int(len(times) * 0.95) - 1], times[-1], rows))

        base = "/v1/subscribers?order=newest&limit=50"
        filters = [("all", ""), ("anonymous", "&anonymous=true"), ("identified", "&anonymous=false"),
                   ("verified", "&verified=true")]
        for name, query in filters:
            measure("first page, " + name, base + query)
            # The next 20 pages as the Older button walks them.
            _, data = get(base + query)
            walk = []
            for _ in range(20):
                ms, data = get(base + query + "&cursor=" + data["nextCursor"])
                walk.append(ms)
            walk.sort()
            results.append(("pages 2-21, " + name, statistics.median(walk), walk[-2], walk[-1], 50))
            deep = cursor_before(first_key + 1000)
            measure("deep page, " + name, base + query + "&cursor=" + deep)
        measure("search by alias", "/v1/subscribers/anon_%021d" % 1, expect_rows=False)
        measure("oldest first (default), all", "/v1/subscribers?limit=50")

        print("\n%d subscribers, %d timed calls each (after one warm-up), ms at the client:" % (N, REPEAT))
        print("| call | median | p95 | max | rows |")
        print("|---|---|---|---|---|")
        worst = 0.0
        for label, median, p95, top, rows in results:
            print("| %s | %.2f | %.2f | %.2f | %d |" % (label, median, p95, top, rows))
            worst = max(worst, top)
        print("\nslowest call: %.2f ms (goal: every page under %.0f ms)" % (worst, GOAL_MS))
        if worst >= GOAL_MS:
            sys.exit(1)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
