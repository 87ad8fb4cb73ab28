#!/usr/bin/env python3
"""Atomic reference-count operations a request, from a callgrind file made with --dump-instr=yes.

Swift's retain and release are lock-prefixed read-modify-writes in libswiftCore (swift_retain,
swift_release, the runtime's slow paths); a retain of an immortal object (a string literal, the
empty array) takes no lock. This counts how often those lock-prefixed instructions ran, so two
builds compare by the atomics a request costs, which instructions alone understate: each is a
few nanoseconds on one core and more when the other core holds the cache line.

    bench/callgrind_atomics.py FILE REQUESTS             # → "atomics: N a request"
    bench/callgrind_atomics.py FILE REQUESTS --callers   # and who asked for them

Used by bench/request-instructions.sh. --callers needs a file made with --separate-callers=2
too: it lists the functions that asked for the atomics (the first caller outside the runtime).
"""
import collections
import re
import subprocess
import sys

LIBSWIFTCORE = "/opt/swift/usr/lib/swift/linux/libswiftCore.so"


def parse_address(token, previous):
    """A callgrind position: absolute (hex), relative (+n / -n), or the same (*)."""
    if token == "*":
        return previous
    if token[0] in "+-":
        return previous + int(token, 0)
    return int(token, 16) if token.startswith("0x") else int(token)


def instruction_counts(path):
    """(function, address) → instructions executed there, from a --dump-instr=yes file."""
    names, function, address, after_call = {}, None, 0, False
    counts = collections.Counter()
    with open(path) as f:
        for line in f:
            m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
            if m:
                kind, ident, name = m.groups()
                if name:
                    names[ident] = name.strip()
                if kind == "fn":
                    function = names[ident]
                continue
            if line.startswith("calls="):
                after_call = True  # the next cost line is the call's inclusive cost
                continue
            m = re.match(r"^(0x[0-9a-f]+|\+\d+|-\d+|\*)\s+\S+\s+(\d+)", line)
            if m:
                address = parse_address(m.group(1), address)
                if after_call:
                    after_call = False
                    continue
                counts[(function, address)] += int(m.group(2))
    return counts


def lock_offsets():
    """Offsets of the lock-prefixed instructions in libswiftCore, and each function's entry."""
    listing = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", LIBSWIFTCORE], capture_output=True, text=True, check=True
    ).stdout
    locks, entries = set(), {}
    for line in listing.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
        if m:
            entries.setdefault(m.group(2), int(m.group(1), 16))
        elif "lock " in line:
            locks.add(int(line.split(":")[0], 16))
    return locks, entries


def in_runtime(name):
    """A retain/release entry point or slow path of the runtime, or a recursion depth."""
    return name.startswith(("swift_", "_swift")) or "RefCount" in name or name.isdigit()


def main():
    path, requests = sys.argv[1], float(sys.argv[2])
    list_callers = "--callers" in sys.argv[3:]
    counts = instruction_counts(path)
    locks, entries = lock_offsets()
    # Where valgrind loaded libswiftCore: swift_retain's first executed address is its entry.
    retain_addresses = [a for (fn, a) in counts if fn and fn.split("'")[0] == "swift_retain"]
    if not retain_addresses:
        print("atomics: no swift_retain in the file")
        return
    base = min(retain_addresses) - entries["swift_retain"]
    by_caller = collections.Counter()
    for (function, address), n in counts.items():
        if address - base in locks:
            parts = function.split("'")  # the function, then its callers (and recursion depths)
            caller = next((p for p in parts[1:] if not in_runtime(p)), parts[0])
            by_caller[caller] += n
    print("atomics: %.1f a request" % (sum(by_caller.values()) / requests))
    if list_callers:
        for caller, n in by_caller.most_common(25):
            print("  %6.2f %s" % (n / requests, caller))


if __name__ == "__main__":
    main()
