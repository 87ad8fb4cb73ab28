#!/usr/bin/env python3
"""Crash safety: a write load (identify, PUT, events), SIGKILL at a random moment, restart on the
same database, and check that

  * every request that got a 2xx is there (after this crash and after every later one),
  * nothing that got an error half-happened (deliberate 400s, incl. one refused inside the
    write transaction, leave no trace),
  * every request cut off by the kill happened entirely or not at all (an event batch is all
    its events or none; an identify is both the person and the alias or neither),
  * PRAGMA integrity_check is ok on the crashed files (before the restart) and at the end
    (SQLite only).

On PostgreSQL (`--database postgres://…`, or $BUZZKIT_CRASH_DATABASE) the same load and checks run
against a fresh database created on that server for this run with psql (the URL names the server;
its database is only used to connect) and dropped when the run passes. A SIGKILL of buzzkit must
lose nothing that PostgreSQL committed and acknowledged.

usage: crash-safety.py [--cycles N] [--workers W] [--seed S] [--database postgres://…]
"""

import argparse
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Client, Server, alnum, anon_id, fresh_postgres_database, is_postgres, psql  # noqa: E402

ACK, ERR, UNKNOWN, REFUSED = "ack", "err", "unknown", "refused"


class Op:
    __slots__ = ("kind", "cycle", "a", "b", "c", "outcome", "status")

    def __init__(self, kind, cycle, a=None, b=None, c=None):
        self.kind, self.cycle, self.a, self.b, self.c = kind, cycle, a, b, c
        self.outcome, self.status = None, None


def run_op(client, op, body_method, path, body):
    try:
        status, payload = client.send(body_method, path, body)
    except ConnectionRefusedError:
        op.outcome = REFUSED  # never reached the server
        return None
    except Exception:
        op.outcome = UNKNOWN  # cut off: may or may not have committed
        return None
    op.status = status
    op.outcome = ACK if 200 <= status < 300 else ERR
    return payload


def worker(port, key, cycle, wid, stop, ops, rng):
    client = Client(port, {"Authorization": "Bearer " + key}, timeout=10)
    events_subject = anon_id()  # this worker's timeline for event batches in this cycle
    n = 0
    while not stop.is_set():
        n += 1
        r = rng.random()
        if r < 0.30:
            # identify: half the time the anonymous id sent events first (rename), else link.
            ext, anon = "c%dw%di%d_%s" % (cycle, wid, n, alnum(4)), anon_id()
            if rng.random() < 0.5:
                pre = Op("events", cycle, anon, ["pre_" + alnum(16)])
                run_op(client, pre, "POST", "/v1/events",
                       {"subscriberId": anon, "events": [{"id": pre.b[0], "name": "app.open"}]})
                ops.append(pre)
                if pre.outcome != ACK:
                    continue
            op = Op("identify", cycle, ext, anon)
            run_op(client, op, "POST", "/v1/identify",
                   {"externalId": ext, "anonymousId": anon, "attributes": {"plan": "pro", "n": n}})
        elif r < 0.55:
            ext, token = "c%dw%dp%d_%s" % (cycle, wid, n, alnum(4)), alnum(12)
            op = Op("put", cycle, ext, token)
            run_op(client, op, "PUT", "/v1/subscribers/" + ext,
                   {"email": "%s@example.com" % ext.lower(), "attributes": {"token": token, "n": n}})
        elif r < 0.90:
            ids = ["e%d_%s" % (i, alnum(16)) for i in range(5)]
            op = Op("events", cycle, events_subject, ids)
            run_op(client, op, "POST", "/v1/events", {"subscriberId": events_subject, "events": [
                {"id": i, "name": "screen.view", "properties": {"n": n}} for i in ids]})
        elif r < 0.95:
            # Refused before the write: a batch with one bad event stores none of them.
            ids = ["bad%d_%s" % (i, alnum(16)) for i in range(4)]
            op = Op("events-bad", cycle, events_subject, ids)
            batch = [{"id": i, "name": "ok"} for i in ids] + [{"id": "x" + alnum(8), "name": "n" * 200}]
            run_op(client, op, "POST", "/v1/events", {"subscriberId": events_subject, "events": batch})
        else:
            # Refused inside the write transaction: 60 keys stored, then 60 more exceed the
            # 100-key limit; the second call must leave no key and no email change.
            ext = "c%dw%dl%d_%s" % (cycle, wid, n, alnum(4))
            first = Op("put-keys", cycle, ext, "a", None)
            run_op(client, first, "PUT", "/v1/subscribers/" + ext,
                   {"attributes": {"a%d" % i: i for i in range(60)}})
            ops.append(first)
            if first.outcome != ACK:
                continue
            op = Op("put-over", cycle, ext, "b", None)
            run_op(client, op, "PUT", "/v1/subscribers/" + ext,
                   {"email": "over@example.com", "attributes": {"b%d" % i: i for i in range(60)}})
        ops.append(op)
    client.close()


def fetch_subscriber(client, sid):
    status, body = client.send("GET", "/v1/subscribers/" + sid)
    if status == 404:
        return None
    assert status == 200, (sid, status, body)
    return body["data"]["subscriber"]


def fetch_event_ids(client, sid, cache):
    if sid not in cache:
        cache[sid] = client.event_ids(sid)
    return cache[sid]


def check(port, key, ops):
    """Returns a list of violations."""
    client = Client(port, {"Authorization": "Bearer " + key}, timeout=30)
    bad, events_cache = [], {}
    for op in ops:
        o = op.outcome
        if op.kind in ("events", "events-bad"):
            present = fetch_event_ids(client, op.a, events_cache)
            k = sum(1 for i in op.b if i in present)
            if o == ACK and k != len(op.b):
                bad.append("acknowledged event batch lost %d/%d events (%s)" % (len(op.b) - k, len(op.b), op.a))
            elif o in (ERR, REFUSED) and k != 0:
                bad.append("refused event batch stored %d events (status %s)" % (k, op.status))
            elif o == UNKNOWN and k not in (0, len(op.b)):
                bad.append("cut-off event batch half stored: %d/%d" % (k, len(op.b)))
        elif op.kind == "identify":
            person = fetch_subscriber(client, op.a)
            via_alias = fetch_subscriber(client, op.b)
            merged = person is not None and via_alias is not None and via_alias["id"] == op.a
            if o == ACK and not merged:
                bad.append("acknowledged identify lost: %s/%s -> %s" % (op.a, op.b, via_alias and via_alias["id"]))
            elif o in (ERR, REFUSED) and person is not None:
                bad.append("refused identify created %s" % op.a)
            elif o == UNKNOWN and (person is not None) != merged:
                bad.append("cut-off identify half happened: %s" % op.a)
        elif op.kind == "put":
            s = fetch_subscriber(client, op.a)
            ok = s is not None and s["attributes"].get("token") == op.b and s["email"] == "%s@example.com" % op.a.lower()
            if o == ACK and not ok:
                bad.append("acknowledged PUT lost: %s" % op.a)
            elif o in (ERR, REFUSED) and s is not None:
                bad.append("refused PUT created %s" % op.a)
            elif o == UNKNOWN and s is not None and not ok:
                bad.append("cut-off PUT half applied: %s" % op.a)
        elif op.kind == "put-keys":
            s = fetch_subscriber(client, op.a)
            n = 0 if s is None else sum(1 for k in s["attributes"] if k.startswith("a"))
            if o == ACK and n != 60:
                bad.append("acknowledged PUT lost keys: %s has %d/60" % (op.a, n))
            elif o == UNKNOWN and n not in (0, 60):
                bad.append("cut-off PUT half applied: %s has %d/60" % (op.a, n))
        elif op.kind == "put-over":
            s = fetch_subscriber(client, op.a)
            n = 0 if s is None else sum(1 for k in s["attributes"] if k.startswith("b"))
            if o == ACK:
                bad.append("PUT over the key limit was accepted (%s)" % op.status)
            elif n != 0 or (s is not None and s["email"] == "over@example.com"):
                bad.append("refused PUT (status %s, outcome %s) half applied: %d keys" % (op.status, o, n))
    client.close()
    return bad


def integrity_of_crashed_files(database):
    """integrity_check on a copy of the files exactly as the kill left them."""
    d = tempfile.mkdtemp(prefix="buzzkit-crashcopy-")
    try:
        for suffix in ("", "-wal"):
            if os.path.exists(database + suffix):
                shutil.copyfile(database + suffix, os.path.join(d, "db" + suffix))
        db = sqlite3.connect(os.path.join(d, "db"))
        try:
            return [r[0] for r in db.execute("PRAGMA integrity_check")]
        finally:
            db.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--min-run", type=float, default=0.3, help="shortest load before the kill (s)")
    ap.add_argument("--max-run", type=float, default=3.0, help="longest load before the kill (s)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--database", default=os.environ.get("BUZZKIT_CRASH_DATABASE"),
                    help="a postgres:// URL of a server to run against (default: a SQLite file)")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    print("crash-safety: %d cycles, %d workers, seed %d" % (args.cycles, args.workers, seed), flush=True)

    directory = tempfile.mkdtemp(prefix="buzzkit-crash-")
    postgres = is_postgres(args.database)
    if postgres:
        name, database = fresh_postgres_database(args.database, "bk_crash")
        print("crash-safety: on PostgreSQL, database %s" % name, flush=True)
    else:
        database = os.path.join(directory, "buzzkit.sqlite")
    server = Server(database, directory, config={"synchronous": "full"}).start()
    key = server.create_tenant("crash")["secretKey"]
    all_ops, failures, totals = [], [], {ACK: 0, ERR: 0, UNKNOWN: 0, REFUSED: 0}
    started = time.time()
    for cycle in range(1, args.cycles + 1):
        if not server.alive():
            server.start()
        stop, ops = threading.Event(), []
        threads = [threading.Thread(target=worker, args=(server.port, key, cycle, w, stop, ops,
                                                         random.Random(rng.random())))
                   for w in range(args.workers)]
        for t in threads:
            t.start()
        delay = rng.uniform(args.min_run, args.max_run)
        time.sleep(delay)
        server.kill()
        stop.set()
        for t in threads:
            t.join()
        wal = os.path.getsize(database + "-wal") if not postgres and os.path.exists(database + "-wal") else 0
        crashed_check = ["ok (PostgreSQL)"] if postgres else integrity_of_crashed_files(database)
        server.start()
        problems = check(server.port, key, ops)
        if not crashed_check[0].startswith("ok"):
            problems.append("integrity_check after the kill: %s" % crashed_check[:3])
        counts = {k: sum(1 for o in ops if o.outcome == k) for k in totals}
        for k in totals:
            totals[k] += counts[k]
        print("cycle %2d: killed after %.2fs  ops %4d  2xx %4d  4xx %3d  cut-off %2d  refused %2d  "
              "wal at kill %8d B  integrity %s  %s" % (
                  cycle, delay, len(ops), counts[ACK], counts[ERR], counts[UNKNOWN], counts[REFUSED],
                  wal,
                  crashed_check[0], "OK" if not problems else "FAIL"), flush=True)
        for p in problems[:10]:
            print("   ", p, flush=True)
        failures += problems
        all_ops += ops

    # Everything acknowledged in any cycle is still there after all the crashes.
    final = check(server.port, key, all_ops)
    code = server.terminate()
    if postgres:
        final_integrity = ["ok (PostgreSQL)"]
    else:
        end_check = sqlite3.connect(database)
        final_integrity = [r[0] for r in end_check.execute("PRAGMA integrity_check")]
        end_check.close()
    failures += final
    if not final_integrity[0].startswith("ok"):
        failures.append("final integrity_check: %s" % final_integrity[:3])
    five = sum(1 for line in server.logs().splitlines() if '"status":5' in line)
    print("total: %d cycles in %.0fs, %d requests: %d 2xx, %d 4xx (deliberate), %d cut off by the kill, "
          "%d refused while down; 5xx in logs: %d; re-check of all %d ops after the last crash: %s; "
          "final integrity_check: %s; SIGTERM exit %d" % (
              args.cycles, time.time() - started, len(all_ops), totals[ACK], totals[ERR], totals[UNKNOWN],
              totals[REFUSED], five, len(all_ops), "ok" if not final else "%d violations" % len(final),
              final_integrity[0], code))
    if failures:
        print("FAIL: %d violations (seed %d); data in %s" % (len(failures), seed, directory))
        sys.exit(1)
    shutil.rmtree(directory, ignore_errors=True)
    if postgres:
        psql(args.database, "DROP DATABASE %s WITH (FORCE)" % name)
    print("PASS")


if __name__ == "__main__":
    main()
