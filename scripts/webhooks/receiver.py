#!/usr/bin/env python3
"""A webhook receiver on loopback for tests and reliability checks.

    receiver.py serve --log FILE [--port 0]      prints "listening PORT", appends one JSON line a request
    receiver.py verify --secret whsec_... --log FILE [--tag T]   checks the logged signatures with Python's hmac

How it answers depends on the path (so one receiver serves every case of a test):
    /ok                 200
    /status/NNN         NNN every time (410, 500, ...)
    /fail/N             500 for the first N requests of each webhook-id, then 200
    /slow/MS            waits MS milliseconds, then 200
Anything after these (more path segments, a query) only tags the requests of one test.

Signatures are checked here independently of the server's code: HMAC-SHA256 over
"{id}.{timestamp}.{body}" with the base64-decoded part of the whsec_ secret (Standard Webhooks).
"""
import argparse, base64, hashlib, hmac, json, os, sys, threading, time
from urllib.parse import urlsplit
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def expected_signature(secret, msg_id, timestamp, body):
    key = base64.b64decode(secret[len("whsec_"):])
    mac = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def serve(args):
    lock = threading.Lock()
    seen = {}
    log = open(args.log, "a", buffering=1)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            msg_id = self.headers.get("webhook-id", "")
            parts = urlsplit(self.path).path.strip("/").split("/")
            status = 200
            with lock:
                seen[(self.path, msg_id)] = seen.get((self.path, msg_id), 0) + 1
                count = seen[(self.path, msg_id)]
            if parts[0] == "status":
                status = int(parts[1])
            elif parts[0] == "fail" and count <= int(parts[1]):
                status = 500
            elif parts[0] == "slow":
                time.sleep(int(parts[1]) / 1000)
            entry = {
                "path": self.path, "status": status, "received": time.time(),
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body.decode("utf-8", "replace"),
            }
            with lock:
                log.write(json.dumps(entry) + "\n")
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

    if args.exit_with_stdin:
        # The test that started us may die without cleaning up: stdin closing tells us.
        def watch():
            sys.stdin.read()
            os._exit(0)
        threading.Thread(target=watch, daemon=True).start()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


def verify(args):
    good = bad = 0
    for line in open(args.log):
        entry = json.loads(line)
        if args.tag and "/" + args.tag not in entry["path"]:
            continue
        h = entry["headers"]
        want = expected_signature(args.secret, h.get("webhook-id", ""), h.get("webhook-timestamp", ""),
                                  entry["body"].encode())
        given = h.get("webhook-signature", "").split(" ")
        if want in given and abs(time.time() - int(h["webhook-timestamp"])) < 3600:
            good += 1
        else:
            bad += 1
    print(json.dumps({"valid": good, "invalid": bad}))
    return 0 if bad == 0 and good > 0 else 1


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--log", required=True)
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--exit-with-stdin", action="store_true", help="exit when standard input closes")
    v = sub.add_parser("verify")
    v.add_argument("--secret", required=True)
    v.add_argument("--log", required=True)
    v.add_argument("--tag", default="", help="only requests whose path holds /TAG")
    a = p.parse_args()
    sys.exit(serve(a) if a.cmd == "serve" else verify(a))
