#!/usr/bin/env python3
"""Slow clients (slowloris): N connections that each send one byte of a request head every few
seconds. Checks that

  * a normal client's latency (GET + PUT on its own keep-alive connection, and fresh
    connections) stays close to the baseline measured before the slow clients came;
  * every slow connection is closed by the server at the header timeout (a 408 or a close),
    not later, and none is served;
  * the server's fds return to the baseline afterwards.

usage: slow-clients.py [--connections 1000] [--byte-every 3] [--header-timeout 10]
"""

import argparse
import os
import selectors
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Client, Server, alnum, percentile, proc_fds, raise_nofile, request  # noqa: E402


def measure(port, key, seconds, out):
    """Normal traffic: alternating GET and PUT on a keep-alive connection plus fresh connections."""
    c = Client(port, {"Authorization": "Bearer " + key}, timeout=30)
    end = time.time() + seconds
    while time.time() < end:
        for kind in ("get", "put", "fresh"):
            t0 = time.time()
            if kind == "get":
                s, _ = c.send("GET", "/v1/subscribers?limit=5")
            elif kind == "put":
                s, _ = c.send("PUT", "/v1/subscribers/normal_" + alnum(6), {"attributes": {"a": 1}})
            else:
                s, _ = request(port, "GET", "/healthz")
            out.append((kind, s, time.time() - t0))
        time.sleep(0.02)
    c.close()


def summary(samples):
    lat = [x[2] * 1000 for x in samples]
    bad = sum(1 for x in samples if not 200 <= x[1] < 300)
    return "%d requests, p50 %.2f ms, p99 %.2f ms, max %.1f ms, non-2xx %d" % (
        len(samples), percentile(lat, 50), percentile(lat, 99), max(lat), bad), percentile(lat, 99), bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--byte-every", type=float, default=3.0)
    ap.add_argument("--header-timeout", type=int, default=10)
    args = ap.parse_args()
    raise_nofile(args.connections * 2 + 1000)

    server = Server("/tmp/buzzkit-slow-%s.sqlite" % alnum(6), config={"headerTimeoutSeconds": args.header_timeout}).start()
    key = server.create_tenant("slow")["secretKey"]
    base_fds = proc_fds(server.pid)
    baseline = []
    measure(server.port, key, 5, baseline)
    text, base_p99, _ = summary(baseline)
    print("baseline (no slow clients): " + text, flush=True)

    head = b"GET /v1/subscribers HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + b"x" * 4000 + b"\r\n\r\n"
    sel = selectors.DefaultSelector()
    conns = {}
    t_open = time.time()
    for i in range(args.connections):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        s.setblocking(False)
        conns[s] = {"opened": time.time(), "sent": 0, "closed": None, "reply": b""}
        sel.register(s, selectors.EVENT_READ)
    print("%d slow connections open in %.2fs; server fds %d" % (
        args.connections, time.time() - t_open, proc_fds(server.pid)), flush=True)

    during = []
    normal = threading.Thread(target=measure, args=(server.port, key, args.header_timeout - 2, during))
    normal.start()
    next_byte = time.time()
    deadline = time.time() + args.header_timeout * 3
    while time.time() < deadline and any(v["closed"] is None for v in conns.values()):
        if time.time() >= next_byte:
            for s, v in conns.items():
                if v["closed"] is None and v["sent"] < len(head):
                    try:
                        s.send(head[v["sent"]:v["sent"] + 1])
                        v["sent"] += 1
                    except OSError:
                        v["closed"] = time.time()
                        sel.unregister(s)
            next_byte += args.byte_every
        for key_, _ in sel.select(timeout=0.2):
            s = key_.fileobj
            v = conns[s]
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if data:
                v["reply"] += data
            else:
                v["closed"] = time.time()
                sel.unregister(s)
    normal.join()
    text, during_p99, during_bad = summary(during)
    print("normal client with %d slow connections: %s" % (args.connections, text), flush=True)

    lifetimes = [v["closed"] - v["opened"] for v in conns.values() if v["closed"] is not None]
    still_open = sum(1 for v in conns.values() if v["closed"] is None)
    replies = {}
    for v in conns.values():
        line = v["reply"].split(b"\r\n", 1)[0].decode(errors="replace") or "(closed without a reply)"
        replies[line] = replies.get(line, 0) + 1
    served = sum(n for line, n in replies.items() if " 2" in line[:13])
    print("slow connections closed by the server: %d of %d; lifetime min %.1fs, median %.1fs, max %.1fs "
          "(header timeout %ds); bytes sent each ~%d; replies %s" % (
              len(lifetimes), args.connections, min(lifetimes or [0]), percentile(lifetimes, 50),
              max(lifetimes or [0]), args.header_timeout, sum(v["sent"] for v in conns.values()) // args.connections,
              replies), flush=True)
    for s in conns:
        s.close()
    time.sleep(1)
    after = []
    measure(server.port, key, 2, after)
    text, _, after_bad = summary(after)
    fds_after = proc_fds(server.pid)
    print("after: %s; server fds %d (baseline %d)" % (text, fds_after, base_fds))
    code = server.terminate()
    ok = (still_open == 0 and served == 0 and max(lifetimes) <= args.header_timeout + args.byte_every + 2
          and during_bad == 0 and after_bad == 0 and during_p99 < max(50, base_p99 * 10)
          and fds_after <= base_fds + 4 and code == 0)
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
