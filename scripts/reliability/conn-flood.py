#!/usr/bin/env python3
"""Connection flood: with maxConnections = M, open F >> M connections at once and hold them.

Checks that connections past the limit are refused cleanly (a 503 envelope then close, or a
reset), that the server stays up and a client connected before the flood keeps being served,
and that once the flood lets go the server accepts and serves again at once with its fds back
at the baseline.

usage: conn-flood.py [--max-connections 200] [--flood 3000] [--rounds 3]
"""

import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Client, Server, alnum, proc_fds, proc_rss_kb, raise_nofile, request  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-connections", type=int, default=200)
    ap.add_argument("--flood", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    raise_nofile(args.flood + 2000)
    server = Server("/tmp/buzzkit-flood-%s.sqlite" % alnum(6), config={"maxConnections": args.max_connections}).start()
    key = server.create_tenant("flood")["secretKey"]
    steady = Client(server.port, {"Authorization": "Bearer " + key})
    assert steady.send("GET", "/healthz")[0] == 200
    base_fds, base_rss = proc_fds(server.pid), proc_rss_kb(server.pid)
    ok = True
    for rnd in range(1, args.rounds + 1):
        socks, connect_errors, t0 = [], {}, time.time()
        for _ in range(args.flood):
            try:
                s = socket.socket()
                s.settimeout(5)
                s.connect(("127.0.0.1", server.port))
                socks.append(s)
            except OSError as e:
                connect_errors[type(e).__name__] = connect_errors.get(type(e).__name__, 0) + 1
                s.close()
        opened = time.time() - t0
        time.sleep(1.0)
        # Ask on every flood connection; those past the limit were answered 503 and closed.
        outcomes = {}
        for s in socks:
            try:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            except OSError:
                pass
        for s in socks:
            try:
                data = s.recv(4096)
                line = data.split(b"\r\n", 1)[0].decode() if data else "closed"
            except socket.timeout:
                line = "no answer in 5s"
            except OSError as e:
                line = type(e).__name__
            outcomes[line] = outcomes.get(line, 0) + 1
        steady_status = steady.send("GET", "/v1/subscribers?limit=1")[0]
        alive = server.alive()
        fds_flood, rss_flood = proc_fds(server.pid), proc_rss_kb(server.pid)
        for s in socks:
            s.close()
        time.sleep(0.5)
        t1 = time.time()
        recovered = None
        while time.time() - t1 < 10:
            try:
                if request(server.port, "GET", "/healthz", timeout=2)[0] == 200:
                    recovered = time.time() - t1
                    break
            except OSError:
                time.sleep(0.05)
        write = steady.send("PUT", "/v1/subscribers/after_" + alnum(6), {"attributes": {"a": 1}})[0]
        time.sleep(0.5)
        fds_after = proc_fds(server.pid)
        served = sum(n for k, n in outcomes.items() if k.startswith("HTTP/1.1 200"))
        refused = sum(n for k, n in outcomes.items() if k.startswith("HTTP/1.1 503")) + sum(connect_errors.values())
        good = (alive and steady_status == 200 and recovered is not None and write == 201
                and served <= args.max_connections and "no answer in 5s" not in outcomes
                and fds_after <= base_fds + 4)
        ok = ok and good
        print("round %d: %d connects in %.2fs (connect errors %s); answers %s; served %d (limit %d), refused %d; "
              "pre-flood client %d; server fds %d during, %d after (baseline %d), RSS %d KiB during (baseline %d); "
              "a fresh connection served %.3fs after the flood let go; write after %d  %s" % (
                  rnd, args.flood, opened, connect_errors or 0, outcomes, served, args.max_connections, refused,
                  steady_status, fds_flood, fds_after, base_fds, rss_flood, base_rss,
                  recovered if recovered is not None else -1, write, "OK" if good else "FAIL"), flush=True)
    steady.close()
    code = server.terminate()
    ok = ok and code == 0
    print("SIGTERM exit %d" % code)
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
