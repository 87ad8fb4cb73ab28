#!/usr/bin/env python3
"""Database faults, driven by disk-full.sh on a small filesystem mounted at MNT:

  1. disk full: writes until the filesystem fills -> 503 unavailable with a clear message,
     reads keep working, the server stays up; free the ballast -> writes resume.
  2. SQLITE_BUSY: another process holds the write lock past the busy timeout -> 503 after
     the timeout (no hang), reads keep working; released -> writes resume.
  3. every acknowledged write is there, integrity_check ok, after a restart too; no 500, no crash.
(I/O errors and a read-only database: io_faults.py.)

usage: db_faults.py MNT BALLAST_FILE
"""

import os
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Client, Server, alnum, expect, failures  # noqa: E402


def main():
    mnt, ballast = sys.argv[1], sys.argv[2]
    database = os.path.join(mnt, "buzzkit.sqlite")
    server = Server(database, config={"logLevel": "info"}).start()
    keys = server.create_tenant("faults")
    c = Client(server.port, {"Authorization": "Bearer " + keys["secretKey"]}, timeout=60)
    person = "person_" + alnum(6)
    acked = []  # (subject, [event ids])

    def write(n=100, pad=900):
        ids = [alnum(20) for _ in range(n)]
        status, body = c.send("POST", "/v1/events", {"subscriberId": person, "events": [
            {"id": i, "name": "fill", "properties": {"pad": "x" * pad}} for i in ids]})
        if status == 200:
            acked.append(ids)
        return status, body

    def reads_work():
        s1, _ = c.send("GET", "/v1/subscribers/" + person)
        s2, _ = c.send("GET", "/v1/subscribers/%s/events?limit=100" % person)
        s3, _ = c.send("GET", "/v1/subscribers?limit=10")
        s4, _ = c.send("GET", "/readyz")
        return (s1, s2, s3, s4)

    def err(body):
        e = body.get("error") or {} if isinstance(body, dict) else {}
        return "%s: %s" % (e.get("code"), e.get("message"))

    status, _ = c.send("PUT", "/v1/subscribers/" + person, {"attributes": {"plan": "pro"}})
    expect(status == 201, "person created")

    print("1. disk full (%s)" % subprocess.run(["df", "-h", mnt], capture_output=True, text=True).stdout.split("\n")[1])
    t0, status, body, n = time.time(), 200, None, 0
    while status == 200 and n < 5000:
        status, body = write()
        n += 1
    print("  filled after %d acknowledged batches (%d events) in %.1fs: %d %s" % (
        len(acked), 100 * len(acked), time.time() - t0, status, err(body)))
    expect(status == 503 and "full" in err(body), "a write on a full disk answers 503 unavailable, disk full")
    more = [write()[0] for _ in range(20)]
    expect(set(more) <= {200, 503} and 503 in more,
           "20 more writes: 503, or 200 when one still fits (%s)" % {k: more.count(k) for k in set(more)})
    status, body = c.send("POST", "/v1/identify", {"externalId": "new_" + alnum(6), "anonymousId": "anon_" + alnum(21)})
    expect(status in (200, 503), "identify on a full disk: %d %s" % (status, err(body)))
    expect(reads_work() == (200, 200, 200, 200), "reads and /readyz keep working: %s" % (reads_work(),))
    expect(server.alive(), "server still running")
    os.remove(ballast)
    time.sleep(0.5)
    # The first write after freeing space is followed, a second later, by the background
    # checkpoint that copies the WAL into the database file.
    write(n=1, pad=10)
    time.sleep(2.5)
    resumed = [write(n=10, pad=10)[0] for _ in range(10)]
    expect(resumed == [200] * 10, "ballast freed: writes resume (%s)" % resumed)

    print("2. SQLITE_BUSY: another process holds the write lock for 8 s (busy timeout 5 s)")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3,sys,time; db=sqlite3.connect(sys.argv[1], isolation_level=None); "
        "db.execute('BEGIN IMMEDIATE'); print('locked', flush=True); time.sleep(8); db.execute('ROLLBACK')"),
        database], stdout=subprocess.PIPE, text=True)
    holder.stdout.readline()
    t0 = time.time()
    s, b = write(n=1, pad=10)
    waited = time.time() - t0
    print("  write while locked: %d %s after %.1fs" % (s, err(b), waited))
    expect(s == 503 and "busy" in err(b) and waited < 10, "busy database: 503 after the busy timeout, no hang")
    t0 = time.time()
    r = reads_work()
    expect(r == (200, 200, 200, 200) and time.time() - t0 < 2, "reads not blocked by the lock: %s in %.2fs" % (r, time.time() - t0))
    holder.wait()
    resumed = [write(n=10, pad=10) for _ in range(5)]
    expect([r[0] for r in resumed] == [200] * 5, "lock released: writes resume (%s)" % [
        r[0] if r[0] == 200 else "%d %s" % (r[0], err(r[1])) for r in resumed])
    print("  files: %s" % {f: os.path.getsize(os.path.join(mnt, f)) for f in os.listdir(mnt)})

    print("3. nothing lost, nothing corrupted")
    db = sqlite3.connect("file:%s?mode=ro" % database, uri=True)
    live = db.execute("PRAGMA integrity_check").fetchall()
    db.close()
    expect(live == [("ok",)], "integrity_check while running: %s" % live[0][0])
    code = server.terminate()
    expect(code == 0, "SIGTERM exit %d" % code)
    db = sqlite3.connect(database)
    expect(db.execute("PRAGMA integrity_check").fetchall() == [("ok",)], "integrity_check after shutdown")
    db.close()
    server.start()
    c = Client(server.port, {"Authorization": "Bearer " + keys["secretKey"]}, timeout=60)
    stored = c.event_ids(person)
    want = sum(len(ids) for ids in acked)
    have = sum(1 for ids in acked for i in ids if i in stored)
    expect(have == want and len(stored) == want,
           "after restart: %d of %d acknowledged events, %d stored in all" % (have, want, len(stored)))
    server.terminate()
    logs = server.logs()
    expect('"status":500' not in logs, "no 500 in the access log")
    print("PASS" if not failures else "FAIL: %d" % len(failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
