#!/usr/bin/env python3
"""Reads callgrind files for bench/identify-instructions.sh.

  callgrind_calls.py FILE FUNCTION
      Prints the instructions per call of FUNCTION (its inclusive cost over all its calls,
      summed from the call edges into it; a name is matched by substring).
  callgrind_calls.py --threads N CEILING FILE...
      One file per server thread (--separate-threads=yes): prints each thread's instructions
      per request, which thread it is, the writer's job (its savepoint) per request, and the
      ceiling's figure (CEILING, from the first form) beside it.
"""
import re
import sys

# A thread is told by a function only it runs (callgrind files carry no thread names).
THREADS = [
    ("db-writer", "DatabaseWriterC0C4Loop"),
    ("db-complete", "runCompletions"),
    ("db-checkpoint", "Checkpointer"),
    ("http loop", "EventLoopC3run"),
]
WRITER_JOB = "s6SQLite8DatabaseC9savepoint"


def calls_into(path, wanted):
    """(inclusive instructions, calls) of every call edge into a function whose name has `wanted`."""
    names, inclusive, calls = {}, 0, 0
    target, expect_cost = None, False
    for line in open(path, errors="replace"):
        if expect_cost:
            expect_cost = False
            if target is not None and wanted in target:
                inclusive += int(line.split()[1])
            continue
        if line.startswith("cfn="):
            m = re.match(r"cfn=\((\d+)\)(?: (.*))?", line.strip())
            if m.group(2):
                names[m.group(1)] = m.group(2)
            target = names.get(m.group(1), "")
        elif line.startswith("fn="):
            m = re.match(r"fn=\((\d+)\)(?: (.*))?", line.strip())
            if m and m.group(2):
                names[m.group(1)] = m.group(2)
        elif line.startswith("calls=") and target is not None:
            if wanted in target:
                calls += int(line.split("=")[1].split()[0])
            expect_cost = True
    return inclusive, calls


def total(path):
    for line in open(path, errors="replace"):
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    return 0


def thread_name(path):
    text = open(path, errors="replace").read()
    for name, marker in THREADS:
        if marker in text:
            return name
    return "other"


if sys.argv[1] == "--threads":
    n, ceiling, files = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
    rows, whole, job = [], 0, None
    for path in files:
        count = total(path)
        if count == 0:
            continue
        name = thread_name(path)
        whole += count
        rows.append((count / n, name))
        if name == "db-writer":
            inclusive, _ = calls_into(path, WRITER_JOB)
            job = inclusive / n
    print(f"sqlite_ceiling identify_rename: {ceiling / 1000:.1f}k instructions per identify")
    if job is not None:
        print(f"server writer's job (its savepoint): {job / 1000:.1f}k ({job / ceiling:.2f} × the ceiling)")
    for per, name in sorted(rows, reverse=True):
        print(f"  {name:14s} {per / 1000:7.1f}k")
    print(f"  {'all threads':14s} {whole / n / 1000:7.1f}k per identify")
else:
    inclusive, calls = calls_into(sys.argv[1], sys.argv[2])
    if calls == 0:
        sys.exit(f"no calls into {sys.argv[2]}")
    print(f"{inclusive / calls:.0f}")
