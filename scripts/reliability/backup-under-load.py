#!/usr/bin/env python3
"""Backup under a write load: `buzzkit backup DEST` while writers run. Each backup must open,
pass integrity_check, and hold every write acknowledged before the backup began; a server
started on the backup (the documented restore) serves it.

usage: backup-under-load.py [--backups 3] [--workers 6]
"""

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Client, Server, alnum, anon_id, binary  # noqa: E402


def writer(port, key, stop, acked, lock, wid, interval):
    c = Client(port, {"Authorization": "Bearer " + key})
    subject, n, next_at = anon_id(), 0, time.time()
    while not stop.is_set():
        n += 1
        next_at += interval
        if next_at > time.time():
            time.sleep(next_at - time.time())
        if n % 3 == 0:
            ext = "bk_%d_%d_%s" % (wid, n, alnum(4))
            s, _ = c.send("PUT", "/v1/subscribers/" + ext, {"attributes": {"n": n}})
            item = ("subscriber", ext, None)
        else:
            ids = [alnum(16) for _ in range(20)]
            s, _ = c.send("POST", "/v1/events", {"subscriberId": subject, "events": [
                {"id": i, "name": "bk", "properties": {"pad": "y" * 200}} for i in ids]})
            item = ("events", subject, ids)
        if 200 <= s < 300:
            with lock:
                acked.append((time.time(), item))
    c.close()


def check_backup(path, key, workspace_key, acked_before):
    """Restore drill: a server on a copy of the backup must hold every write acknowledged before."""
    d = tempfile.mkdtemp(prefix="buzzkit-restore-")
    db = os.path.join(d, "buzzkit.sqlite")
    shutil.copyfile(path, db)
    server = Server(db, d, workspace_key=workspace_key).start()
    c = Client(server.port, {"Authorization": "Bearer " + key})
    missing, timelines = 0, {}
    for _, (kind, sid, ids) in acked_before:
        if kind == "subscriber":
            missing += c.send("GET", "/v1/subscribers/" + sid)[0] != 200
        else:
            if sid not in timelines:
                timelines[sid] = c.event_ids(sid)
            missing += not all(i in timelines[sid] for i in ids)
    c.close()
    server.terminate()
    shutil.rmtree(d, ignore_errors=True)
    return missing


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backups", type=int, default=3)
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--rate", type=float, default=600, help="writes per second, all workers together")
    ap.add_argument("--preload", type=float, default=20, help="seconds of load before the first backup")
    args = ap.parse_args()
    directory = tempfile.mkdtemp(prefix="buzzkit-backup-")
    database = os.path.join(directory, "buzzkit.sqlite")
    server = Server(database, directory).start()
    key = server.create_tenant("backup")["secretKey"]
    stop, acked, lock = threading.Event(), [], threading.Lock()
    threads = [threading.Thread(target=writer, args=(server.port, key, stop, acked, lock, w, args.workers / args.rate)) for w in range(args.workers)]
    for t in threads:
        t.start()
    ok = True
    time.sleep(args.preload)
    for b in range(1, args.backups + 1):
        time.sleep(3)
        dest = os.path.join(directory, "backup-%d.sqlite" % b)
        began = time.time()
        with lock:
            before = [a for a in acked if a[0] < began]
        acked_at_start = len(acked)
        r = subprocess.run([binary(), "backup", dest, "--database", database], capture_output=True, text=True)
        took = time.time() - began
        with lock:
            during = len(acked) - acked_at_start
        db = sqlite3.connect("file:%s?mode=ro" % dest, uri=True)
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        db.close()
        missing = check_backup(dest, key, server.workspace_key, before)
        good = r.returncode == 0 and integrity == "ok" and missing == 0
        ok = ok and good
        print("backup %d: exit %d in %.2fs, %d writes acknowledged during it, %.1f MB (database %.1f MB + WAL %.1f MB), "
              "integrity %s, %d writes acknowledged before it began, missing %d  %s" % (
                  b, r.returncode, took, during, os.path.getsize(dest) / 1e6, os.path.getsize(database) / 1e6,
                  os.path.getsize(database + "-wal") / 1e6 if os.path.exists(database + "-wal") else 0,
                  integrity, len(before), missing, "OK" if good else "FAIL " + r.stderr.strip()), flush=True)
    stop.set()
    for t in threads:
        t.join()
    wal_now = os.path.getsize(database + "-wal") if os.path.exists(database + "-wal") else 0
    c = Client(server.port, {"Authorization": "Bearer " + key})
    for _ in range(3):  # a commit after the checkpoint restarts the log and applies the size limit
        c.send("PUT", "/v1/subscribers/wal_" + alnum(6), {"attributes": {"a": 1}})
        time.sleep(1.5)
    c.close()
    wal_later = os.path.getsize(database + "-wal") if os.path.exists(database + "-wal") else 0
    print("WAL after the load: %.1f MB, a few seconds later %.1f MB" % (wal_now / 1e6, wal_later / 1e6))
    five = server.logs().count('"status":5')
    code = server.terminate()
    print("writes answered 5xx during the backups: %d; SIGTERM exit %d" % (five, code))
    ok = ok and five == 0 and code == 0
    if ok:
        shutil.rmtree(directory, ignore_errors=True)
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
