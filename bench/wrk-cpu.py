"""Runs wrk and prints the CPU seconds (user + system) it spent once running.

    python3 bench/wrk-cpu.py OUTPUT_FILE wrk ARGS...

wrk's output goes to OUTPUT_FILE. Its Lua start-up is left out: wrk prints `Running …` after
every thread's `init` (get.lua builds its table of 50,000 requests there, ~1 s of CPU), so the CPU
it had spent when that line appears is taken off the total. The line is looked for every 10 ms, so
up to 10 ms of the run's start is left out too (well under 1 % of a 3 s run).
"""
import os
import resource
import subprocess
import sys
import time


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of the whole line)


output, command = sys.argv[1], sys.argv[2:]
with open(output, "w") as sink:
    # Line-buffered, so `Running` reaches the file when it is printed, not when wrk exits.
    wrk = subprocess.Popen(["stdbuf", "-oL", *command], stdout=sink, stderr=subprocess.STDOUT)
started = None
while started is None and wrk.poll() is None:
    with open(output) as text:
        if any(line.startswith("Running") for line in text):
            started = cpu_ticks(wrk.pid) / os.sysconf("SC_CLK_TCK")
            break
    time.sleep(0.01)
wrk.wait()
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
if started is not None:
    print(f"{usage.ru_utime + usage.ru_stime - started:.3f}")
