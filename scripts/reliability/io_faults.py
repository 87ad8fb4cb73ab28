#!/usr/bin/env python3
"""I/O errors and a read-only database, driven by disk-full.sh.

  ioerror MNT DEVICE IMAGE: the database on ext4 on a loop device; under a running server the
      loop device's backing file is cut to 1 MiB (`losetup -c`), so writes to the rest of the
      device fail with EIO. Writes must answer 503 unavailable (never 500), each within a
      bounded time (no hang), the process must not crash, and SIGTERM must still end it.
  readonly MNT: the database on a filesystem remounted read-only (Linux refuses that while a
      server holds the files open for writing, so the server is started on it): the server
      either serves reads with 503 on writes, or refuses to start with a clear message and a
      clean exit status (no crash signal, no hang).
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Client, Server, alnum, expect, failures  # noqa: E402


def err(body):
    e = (body.get("error") or {}) if isinstance(body, dict) else {}
    return "%s: %s" % (e.get("code"), e.get("message"))


def ioerror(mnt, device, image):
    database = os.path.join(mnt, "buzzkit.sqlite")
    server = Server(database).start()
    keys = server.create_tenant("io")
    c = Client(server.port, {"Authorization": "Bearer " + keys["secretKey"]}, timeout=60)
    person = "io_" + alnum(6)

    def write():
        return c.send("POST", "/v1/events", {"subscriberId": person, "events": [
            {"id": alnum(20), "name": "io", "properties": {"pad": "x" * 2000}} for _ in range(50)]})

    ok = [write()[0] for _ in range(5)]
    expect(ok == [200] * 5, "writes before the fault: %s" % ok)
    os.truncate(image, 1 << 20)
    subprocess.run(["losetup", "-c", device], check=True)
    statuses, slowest, first = [], 0.0, None
    for _ in range(30):
        t0 = time.time()
        try:
            s, b = write()
        except Exception as e:  # the server must answer, not drop the connection
            s, b = type(e).__name__, None
            c.close()
        slowest = max(slowest, time.time() - t0)
        statuses.append(s)
        if s != 200 and first is None:
            first = "%s %s" % (s, err(b))
    counts = {str(k): statuses.count(k) for k in set(statuses)}
    print("  30 writes after the device started failing: %s; first error %s; slowest %.2fs" % (counts, first, slowest))
    expect(set(statuses) <= {200, 503} and 503 in statuses, "I/O errors answer 503 unavailable (never 500, no drop)")
    expect(slowest < 15, "each answered in bounded time (slowest %.1fs)" % slowest)
    expect(server.alive(), "server still running")
    s, b = c.send("GET", "/healthz")
    expect(s == 200, "/healthz %d" % s)
    s, b = c.send("GET", "/readyz")
    print("  /readyz %d %s" % (s, err(b) if s != 200 else ""))
    c.close()
    t0 = time.time()
    code = server.terminate(timeout=30)
    expect(code is not None and code >= 0 and time.time() - t0 < 15,
           "SIGTERM ends it: exit %d after %.1fs (no crash signal)" % (code, time.time() - t0))
    logs = server.logs()
    expect('"status":500' not in logs, "no 500 in the access log")


def readonly(mnt):
    database = os.path.join(mnt, "buzzkit.sqlite")
    server = Server(database)
    try:
        server.start(timeout=20)
    except RuntimeError as e:
        code = server.process.wait(10)
        last = server.logs().strip().splitlines()[-1:] or [""]
        expect(code > 0, "refuses to start on a read-only database: exit %d, says %r" % (code, last[0][:200]))
        return
    keys_ok = True
    c = Client(server.port, {"Authorization": "Bearer " + server.workspace_key})
    s, b = c.send("POST", "/v1/tenants", {"name": "ro"})
    print("  started on a read-only database; a write answered %d %s" % (s, err(b)))
    expect(s == 503, "writes on a read-only database answer 503")
    s, _ = c.send("GET", "/healthz")
    expect(s == 200 and keys_ok, "reads answer")
    c.close()
    expect(server.terminate() == 0, "SIGTERM exit 0")


if __name__ == "__main__":
    if sys.argv[1] == "ioerror":
        ioerror(*sys.argv[2:5])
    else:
        readonly(sys.argv[2])
    print("PASS" if not failures else "FAIL: %d" % len(failures))
    sys.exit(1 if failures else 0)
