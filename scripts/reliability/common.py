"""Shared helpers for the reliability scripts: start the real `buzzkit serve`, talk HTTP to it,
check the database. Python 3 standard library only.

The binary is $BUZZKIT_BINARY, else .build/release/buzzkit, else .build/debug/buzzkit.
"""

import http.client
import json
import os
import random
import signal
import socket
import sqlite3
import string
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def binary():
    if os.environ.get("BUZZKIT_BINARY"):
        return os.environ["BUZZKIT_BINARY"]
    for kind in ("release", "debug"):
        path = os.path.join(ROOT, ".build", kind, "buzzkit")
        if os.access(path, os.X_OK):
            return path
    sys.exit("no buzzkit binary: run `swift build -c release` (or set BUZZKIT_BINARY)")


def alnum(n):
    return "".join(random.choice(string.ascii_letters + string.digits) for _ in range(n))


def anon_id():
    return "anon_" + alnum(21)


class Server:
    """`buzzkit serve --port 0` on `database`, logs in `<dir>/stderr-N.log`."""

    def __init__(self, database, directory=None, config=None, env=None, workspace_key=None):
        self.directory = directory or tempfile.mkdtemp(prefix="buzzkit-rel-")
        self.database = database
        self.config = {"logLevel": "info"}
        self.config.update(config or {})
        self.env = env or {}
        self.workspace_key = workspace_key or "bk_ws_" + alnum(32)
        self.process = None
        self.port = None
        self.starts = 0
        self.log_paths = []

    def start(self, timeout=60):
        config_path = os.path.join(self.directory, "buzzkit.json")
        with open(config_path, "w") as f:
            json.dump(self.config, f)
        env = dict(os.environ)
        env["BUZZKIT_BOOTSTRAP_WORKSPACE_KEY"] = self.workspace_key
        env.update(self.env)
        self.starts += 1
        log_path = os.path.join(self.directory, "stderr-%d.log" % self.starts)
        self.log_paths.append(log_path)
        self.stderr = open(log_path, "wb")
        self.process = subprocess.Popen(
            [binary(), "serve", "--port", "0", "--database", self.database, "--config", config_path],
            stdout=subprocess.PIPE, stderr=self.stderr, env=env)
        deadline = time.time() + timeout
        line = b""
        while time.time() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            if line.startswith(b"listening on http://"):
                self.port = int(line.strip().rsplit(b":", 1)[1])
                return self
        self.process.kill()
        raise RuntimeError("server did not start: %r\n%s" % (line, open(log_path).read()[-2000:]))

    @property
    def pid(self):
        return self.process.pid

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.stderr.close()

    def terminate(self, timeout=60):
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout)
        self.stderr.close()
        return code

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def logs(self):
        out = ""
        for p in self.log_paths:
            with open(p, errors="replace") as f:
                out += f.read()
        return out

    def create_tenant(self, name="reliability"):
        status, body = request(self.port, "POST", "/v1/tenants", {"name": name},
                               {"Authorization": "Bearer " + self.workspace_key})
        assert status == 201, (status, body)
        return body["data"]


def request(port, method, path, body=None, headers=None, timeout=30, raw_body=None):
    """One request on a fresh connection. Returns (status, parsed JSON or text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        h = {"Connection": "close"}
        h.update(headers or {})
        data = raw_body
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=h)
        resp = conn.getresponse()
        payload = resp.read()
        try:
            return resp.status, json.loads(payload)
        except ValueError:
            return resp.status, payload.decode(errors="replace")
    finally:
        conn.close()


class Client:
    """A keep-alive connection that reconnects after any error."""

    def __init__(self, port, headers=None, timeout=30):
        self.port = port
        self.headers = headers or {}
        self.timeout = timeout
        self.conn = None

    def send(self, method, path, body=None, extra=None):
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        h = dict(self.headers)
        h.update(extra or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        try:
            self.conn.request(method, path, body=data, headers=h)
            resp = self.conn.getresponse()
            payload = resp.read()
            if resp.getheader("Connection", "").lower() == "close":
                self.close()
        except Exception:
            self.close()
            raise
        try:
            return resp.status, json.loads(payload)
        except ValueError:
            return resp.status, payload.decode(errors="replace")

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def event_ids(self, subscriber_id):
        """Every event id on the subscriber's timeline, all pages; empty for an unknown id (404)."""
        ids, after = set(), 0
        while True:
            status, body = self.send("GET", "/v1/subscribers/%s/events?limit=1000&after=%d" % (subscriber_id, after))
            if status == 404:
                return ids
            assert status == 200, (subscriber_id, status, body)
            ids.update(e["id"] for e in body["data"]["events"])
            if body["data"]["nextCursor"] is None:
                return ids
            after = body["data"]["nextCursor"]


def integrity(path):
    """PRAGMA integrity_check of a database file (read-only, WAL replayed by SQLite)."""
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=30)
    try:
        return [r[0] for r in db.execute("PRAGMA integrity_check")]
    finally:
        db.close()


def proc_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def proc_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def raise_nofile(n=65536):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))
    except (ValueError, OSError):
        pass


def tcp_connect(port, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return s


# Checks of the fault scripts: each prints ok/FAIL as it goes; the script exits 1 if any failed.
failures = []


def expect(cond, what):
    print(("  ok    " if cond else "  FAIL  ") + what, flush=True)
    if not cond:
        failures.append(what)


# MARK: - PostgreSQL: a fresh database per run on the server a URL names


def is_postgres(url):
    return url is not None and (url.startswith("postgres://") or url.startswith("postgresql://"))


def with_database(url, name):
    """`url` with its database name replaced by `name` (query string kept)."""
    scheme, rest = url.split("://", 1)
    rest, query = (rest.split("?", 1) + [""])[:2]
    authority = rest.split("/", 1)[0]
    return "%s://%s/%s%s" % (scheme, authority, name, "?" + query if query else "")


def psql(url, sql):
    subprocess.run(["psql", url, "-qAtX", "-v", "ON_ERROR_STOP=1", "-c", sql], check=True,
                   stdout=subprocess.DEVNULL)


def fresh_postgres_database(url, prefix):
    """Creates a database named `prefix`_<pid>_<random> on the server `url` names; returns (name, its URL)."""
    name = "%s_%d_%s" % (prefix, os.getpid(), alnum(8).lower())
    psql(url, "CREATE DATABASE %s" % name)
    return name, with_database(url, name)
