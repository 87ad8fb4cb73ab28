#!/usr/bin/env python3
"""Graceful shutdown: SIGTERM under a write load.

  * every request the server answered is a 2xx (no accepted request fails, no 5xx);
  * requests whose body was still arriving when SIGTERM came are finished and answered;
  * the process exits 0 within shutdownDrainSeconds;
  * the WAL is checkpointed (the -wal file is gone or empty) and integrity_check is ok;
  * after a restart every acknowledged write is there.

Connections the server closes without having read a request (idle keep-alives, connects
after the listener closed) are counted as "not accepted" and checked to have left no trace.

usage: graceful-shutdown.py [--rounds N] [--workers W] [--drain S]
"""

import argparse
import os
import random
import shutil
import socket
import sqlite3
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Client, Server, alnum, anon_id  # noqa: E402


def writer(port, key, stop, results, wid):
    client = Client(port, {"Authorization": "Bearer " + key}, timeout=30)
    subject, n = anon_id(), 0
    while not stop.is_set():
        n += 1
        ids = ["w%d_%d_%s" % (wid, n, alnum(10)) for _ in range(random.choice((1, 5, 100)))]
        try:
            status, _ = client.send("POST", "/v1/events", {"subscriberId": subject, "events": [
                {"id": i, "name": "tick"} for i in ids]})
            results.append(("answered", status, subject, ids))
        except (ConnectionRefusedError, ConnectionResetError, BrokenPipeError, OSError) as e:
            results.append(("not-accepted", type(e).__name__, subject, ids))
            time.sleep(0.01)
    client.close()


def slow_upload(port, key, sigterm_sent, results):
    """Sends a request head and half the body, waits for SIGTERM, then the rest."""
    import json
    subject = anon_id()
    ids = ["slow_" + alnum(12) for _ in range(50)]
    body = json.dumps({"subscriberId": subject, "events": [{"id": i, "name": "slow"} for i in ids]}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(("POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
               "Content-Length: %d\r\n\r\n" % (key, len(body))).encode() + body[:len(body) // 2])
    sigterm_sent.wait()
    time.sleep(0.3)
    try:
        s.sendall(body[len(body) // 2:])
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
        status = int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else None
        results.append(("in-flight", status, subject, ids))
    except OSError as e:
        results.append(("in-flight", type(e).__name__, subject, ids))
    finally:
        s.close()


def one_round(args, rnd):
    directory = tempfile.mkdtemp(prefix="buzzkit-term-")
    database = os.path.join(directory, "buzzkit.sqlite")
    server = Server(database, directory, config={"shutdownDrainSeconds": args.drain}).start()
    key = server.create_tenant("term")["secretKey"]
    stop, sigterm_sent, results = threading.Event(), threading.Event(), []
    threads = [threading.Thread(target=writer, args=(server.port, key, stop, results, w)) for w in range(args.workers)]
    threads += [threading.Thread(target=slow_upload, args=(server.port, key, sigterm_sent, results)) for _ in range(5)]
    for t in threads:
        t.start()
    time.sleep(args.load_seconds)
    wal_before = os.path.getsize(database + "-wal") if os.path.exists(database + "-wal") else 0
    t0 = time.time()
    server.process.send_signal(15)
    sigterm_sent.set()
    code = server.process.wait(args.drain + 30)
    exit_seconds = time.time() - t0
    server.stderr.close()
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join()
    wal_after = os.path.getsize(database + "-wal") if os.path.exists(database + "-wal") else None
    db = sqlite3.connect(database)
    integrity = [r[0] for r in db.execute("PRAGMA integrity_check")][0]
    db.close()

    answered = [r for r in results if r[0] == "answered"]
    failed = [r for r in answered if not 200 <= r[1] < 300]
    inflight = [r for r in results if r[0] == "in-flight"]
    inflight_bad = [r for r in inflight if r[1] != 200]
    not_accepted = [r for r in results if r[0] == "not-accepted"]

    # Restart and check every acknowledged batch and nothing of the not-accepted ones.
    server.start()
    client = Client(server.port, {"Authorization": "Bearer " + key})
    timelines = {}

    def ids_of(subject):
        if subject not in timelines:
            timelines[subject] = client.event_ids(subject)
        return timelines[subject]

    lost = sum(1 for r in answered + inflight if r[1] == 200 and not all(i in ids_of(r[2]) for i in r[3]))
    half = sum(1 for r in not_accepted if 0 < sum(i in ids_of(r[2]) for i in r[3]) < len(r[3]))
    phantom = sum(1 for r in not_accepted if all(i in ids_of(r[2]) for i in r[3]))
    client.close()
    server.terminate()
    ok = (code == 0 and exit_seconds <= args.drain and not failed and not inflight_bad and not lost
          and not half and wal_after in (None, 0) and integrity == "ok")
    print("round %d: %d answered (%d non-2xx), %d in-flight uploads answered %s, %d not accepted "
          "(%d committed anyway, %d half), exit %d after %.2fs (drain %ds), WAL %d B before -> %s after, "
          "integrity %s, acknowledged lost %d  %s" % (
              rnd, len(answered), len(failed), len(inflight), sorted(set(str(r[1]) for r in inflight)),
              len(not_accepted), phantom, half, code, exit_seconds, args.drain, wal_before,
              "absent" if wal_after is None else "%d B" % wal_after, integrity, lost, "OK" if ok else "FAIL"),
          flush=True)
    for r in failed[:5]:
        print("    non-2xx:", r[1])
    if ok:
        shutil.rmtree(directory, ignore_errors=True)
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--drain", type=int, default=10)
    ap.add_argument("--load-seconds", type=float, default=2.0)
    args = ap.parse_args()
    results = [one_round(args, r + 1) for r in range(args.rounds)]
    print("PASS" if all(results) else "FAIL")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
