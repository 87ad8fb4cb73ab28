#!/usr/bin/env python3
"""Webhook crash safety (API.md §14): a write load while the receiver is slow, SIGKILL at a
random moment, restart on the same database, and check that

  * every acknowledged change's event (subscriber.created) is delivered at least once, after
    the restarts, by the restarted server;
  * no event is delivered for a change that did not commit: refused requests (one refused
    inside its write transaction, after its events were recorded) leave none, and every
    delivered event names a subscriber that exists;
  * every delivery carries a signature that Python's hmac accepts.

usage: webhook-crash.py [--cycles N] [--workers W] [--seconds S] [--slow-ms MS] [--seed S]
                        [--database postgres://…]   (a fresh database on that server; default SQLite)
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Client, Server, alnum, expect, failures, fresh_postgres_database, is_postgres, psql, request  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RECEIVER = os.path.join(HERE, "..", "webhooks", "receiver.py")


def start_receiver(log_path):
    proc = subprocess.Popen([sys.executable, RECEIVER, "serve", "--log", log_path, "--exit-with-stdin"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = proc.stdout.readline().decode()
    assert line.startswith("listening "), line
    return proc, int(line.split()[1])


def received(log_path):
    out = []
    with open(log_path) as f:
        for line in f:
            entry = json.loads(line)
            out.append(json.loads(entry["body"]))
    return out


def worker(port, key, cycle, wid, stop, ops, rng):
    client = Client(port, {"Authorization": "Bearer " + key}, timeout=10)
    n = 0
    while not stop.is_set():
        n += 1
        if rng.random() < 0.1:
            # Refused inside the write: the anonymous id is linked and the person created (both
            # recorded in the outbox) before the email attribute fails; all of it rolls back.
            ext = "bad_c%dw%dn%d_%s" % (cycle, wid, n, alnum(4))
            path, body = "/v1/identify", {"externalId": ext, "anonymousId": "anon_" + alnum(21),
                                          "attributes": {"email": 5}}
        else:
            ext = "c%dw%dn%d_%s" % (cycle, wid, n, alnum(4))
            path, body = "/v1/subscribers/" + ext, {"attributes": {"n": n}}
        try:
            status, _ = client.send("POST" if path == "/v1/identify" else "PUT", path, body)
            ops.append((ext, "ack" if 200 <= status < 300 else "err"))
        except ConnectionRefusedError:
            ops.append((ext, "refused"))
            stop.wait(0.05)
        except Exception:
            ops.append((ext, "unknown"))
            stop.wait(0.05)
        time.sleep(0.01)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=5)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0, help="most load before each kill")
    ap.add_argument("--slow-ms", type=int, default=100, help="how long the receiver takes to answer")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--database", default=None,
                    help="a postgres:// URL of a server to run against (default: a SQLite file)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    print("seed %d" % args.seed)

    directory = tempfile.mkdtemp(prefix="buzzkit-whcrash-")
    log_path = os.path.join(directory, "received.jsonl")
    open(log_path, "w").close()
    receiver, receiver_port = start_receiver(log_path)
    postgres = is_postgres(args.database)
    if postgres:
        name, database = fresh_postgres_database(args.database, "bk_whcrash")
        print("on PostgreSQL, database %s" % name)
    else:
        database = os.path.join(directory, "db.sqlite")
    server = Server(database, directory,
                    config={"logLevel": "warn", "webhookRetryScheduleSeconds": [1] * 20},
                    env={"BUZZKIT_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true"})
    try:
        server.start()
        tenant = server.create_tenant()
        key = tenant["secretKey"]
        status, body = request(server.port, "POST", "/v1/webhooks",
                               {"url": "http://127.0.0.1:%d/slow/%d/crash" % (receiver_port, args.slow_ms),
                                "events": ["subscriber.created"]},
                               {"Authorization": "Bearer " + key})
        assert status == 201, (status, body)
        secret = body["data"]["secret"]

        ops = []
        for cycle in range(args.cycles):
            if cycle > 0:
                server.start()
            stop = threading.Event()
            threads = [threading.Thread(target=worker, args=(server.port, key, cycle, w, stop, ops,
                                                             random.Random(rng.random())))
                       for w in range(args.workers)]
            for t in threads:
                t.start()
            time.sleep(rng.uniform(args.seconds / 3, args.seconds))
            server.kill()
            stop.set()
            for t in threads:
                t.join()
            print("cycle %d: killed with %d deliveries received so far" % (cycle, len(received(log_path))))

        # The last start delivers whatever the kills left in the outbox.
        server.start()
        acked = {ext for ext, outcome in ops if outcome == "ack" and not ext.startswith("bad_")}
        deadline = time.time() + 300
        while time.time() < deadline:
            got = {e["data"]["subscriberId"] for e in received(log_path)}
            if acked <= got:
                break
            time.sleep(0.5)
        events = received(log_path)
        got = [e["data"]["subscriberId"] for e in events]
        client = Client(server.port, {"Authorization": "Bearer " + key})
        missing = acked - set(got)
        expect(not missing, "all %d acknowledged changes delivered (missing %d: %s)"
               % (len(acked), len(missing), sorted(missing)[:5]))
        refused = {ext for ext, outcome in ops if outcome == "err"}
        expect(not (refused & set(got)), "no delivery for the %d refused or rolled-back changes" % len(refused))
        phantom = [s for s in set(got) if client.send("GET", "/v1/subscribers/" + s)[0] != 200]
        expect(not phantom, "every delivered event names a committed subscriber (phantoms: %s)" % phantom[:5])
        unknown = [ext for ext, outcome in ops if outcome == "unknown"]
        print("  info  %d deliveries for %d distinct changes (%d repeats: at least once); "
              "%d requests cut off by a kill, %d of them committed and delivered"
              % (len(got), len(set(got)), len(got) - len(set(got)), len(unknown), len(set(unknown) & set(got))))
        checked = subprocess.run([sys.executable, RECEIVER, "verify", "--secret", secret, "--log", log_path],
                                 capture_output=True, text=True)
        counts = json.loads(checked.stdout)
        # >=: a repeat may still arrive between reading the log above and this check.
        expect(counts["invalid"] == 0 and counts["valid"] >= len(events),
               "Python's hmac accepts every signature (%s)" % checked.stdout.strip())
        # A delivery claimed just before a kill stays leased (timeout + 15 s) before it is sent
        # again, so the outbox drains up to that long after every change has first arrived.
        deadline = time.time() + 90
        while True:
            status, metrics = request(server.port, "GET", "/metrics")
            pending = re.search(r"buzzkit_webhook_outbox_pending (\d+)", metrics)
            if (pending is not None and pending.group(1) == "0") or time.time() > deadline:
                break
            time.sleep(0.5)
        expect(pending is not None and pending.group(1) == "0",
               "the outbox is empty at the end (pending: %s)" % (pending.group(1) if pending else "no gauge"))
        server.terminate()
    finally:
        if server.alive():
            server.kill()
        receiver.kill()
    if failures:
        print("FAILED: %d checks (seed %d, files in %s)" % (len(failures), args.seed, directory))
        sys.exit(1)
    if postgres:
        psql(args.database, "DROP DATABASE %s WITH (FORCE)" % name)
    print("ok")


if __name__ == "__main__":
    main()
