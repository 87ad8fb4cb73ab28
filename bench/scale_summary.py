"""Reads bench/out/scale-<run>/ (results.tsv, *-dbstat.tsv, *-rows.tsv) and prints the scale
table: every throughput as a ratio large/small of medians from the same run, latencies and start-up
on the large database against the issue's absolute goals, and bytes on disk by table and index."""
import statistics
import sys
from collections import defaultdict

out = sys.argv[1]
rows = defaultdict(list)
for line in open(f"{out}/results.tsv"):
    figure, size, run, value = line.rstrip("\n").split("\t")
    rows[(figure, size)].append(float(value))


def med(figure, size):
    values = rows.get((figure, size))
    return statistics.median(values) if values else None


def fmt(v, unit=""):
    if v is None:
        return "–"
    return (f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}") + unit


print("| figure | small | large | large / small | goal | met |")
print("|---|---|---|---|---|---|")
for figure, label in [("identify", "POST /v1/identify rename, 64 conns"),
                      ("get_cached", "GET /v1/subscribers/{id}, cached (10,000 hot people), 64 conns"),
                      ("get_uncached", "GET /v1/subscribers/{id}, cache off, spread over the tenant, 64 conns")]:
    s, l = med(figure, "small"), med(figure, "large")
    if s and l:
        r = l / s
        print(f"| {label} | {fmt(s, ' req/s')} | {fmt(l, ' req/s')} | {r:.2f} | ≥ 0.8 | {'yes' if r >= 0.8 else '**no**'} |")
for figure, label, goal in [("list_first_p99", "GET /v1/subscribers?limit=100, first page, p99", 20),
                            ("list_page5000_p99", "  … page 5,000 (cursor after key 499,900), p99", 20),
                            ("timeline_start_p99", "timeline of a 100,000-event subscriber, first page, p99", 10),
                            ("timeline_end_p99", "  … last page (after=99,900), p99", 10)]:
    s, l = med(figure, "small"), med(figure, "large")
    if l is not None:
        ratio = f"{l / s:.2f}" if s else ""
        print(f"| {label} | {fmt(s, ' ms')} | {fmt(l, ' ms')} | {ratio} | < {goal} ms | {'yes' if l < goal else '**no**'} |")
s, l = med("ready_ms", "small"), med("ready_ms", "large")
print(f"| `serve` start to first `/readyz` 200 (median of {len(rows.get(('ready_ms', 'large'), []))}) "
      f"| {fmt(s, ' ms')} | {fmt(l, ' ms')} | {l / s:.2f} | < 1000 ms | {'yes' if l < 1000 else '**no**'} |")
for figure, label in [("rss_ready_kib", "RSS at ready"), ("rss_idle_kib", "RSS idle after the runs (cache on / off)")]:
    s, l = med(figure, "small"), med(figure, "large")
    lmax = max(rows.get((figure, "large"), [0]))
    print(f"| {label} (max on large {lmax / 1024:.0f} MiB) | {fmt(s / 1024, ' MiB')} | {fmt(l / 1024, ' MiB')} "
          f"| {l / s:.2f} | ≤ 128 MiB (64 + 64 cache) | {'yes' if lmax <= 128 * 1024 else '**no**'} |")
steps = sorted({f[len("steps_"):] for f, _ in rows if f.startswith("steps_")})
if steps:
    print("\n| read (one statement, fresh connection) | VM steps small / large | pages read small / large |")
    print("|---|---|---|")
    for q in steps:
        print(f"| {q} | {fmt(med('steps_' + q, 'small'))} / {fmt(med('steps_' + q, 'large'))} "
              f"| {fmt(med('pages_' + q, 'small'))} / {fmt(med('pages_' + q, 'large'))} |")
for size in ("small", "large"):
    print(f"\nseed {size}: {fmt(med('seed_ms', size) / 1000, ' s')}")

# Bytes on disk: everything keyed by subscriber vs the events table and its index.
for size in ("small", "large"):
    try:
        stat = [line.rstrip("\n").split("\t") for line in open(f"{out}/{size}-dbstat.tsv")]
        _, subscribers, events, aliases, file_bytes = open(f"{out}/{size}-rows.tsv").read().strip().split("\t")
    except FileNotFoundError:
        continue
    subscribers, events, file_bytes = int(subscribers), int(events), int(file_bytes)
    event_objects = {"events", "events_by_client_id"}
    ev = sum(int(r[1]) for r in stat if r[0] in event_objects)
    sub = sum(int(r[1]) for r in stat if r[0] not in event_objects)
    print(f"\n{size}: {file_bytes / 2**20:,.0f} MiB file, {subscribers:,} subscribers, {events:,} events, {int(aliases):,} aliases;"
          f" {sub / subscribers:,.0f} B per subscriber (all but events), {ev / max(events, 1):,.1f} B per event\n")
    print("| table or index | MiB | payload MiB | share |")
    print("|---|---|---|---|")
    total = sum(int(r[1]) for r in stat)
    for name, pgsize, payload, _pages in stat[:12]:
        print(f"| {name} | {int(pgsize) / 2**20:,.1f} | {int(payload) / 2**20:,.1f} | {int(pgsize) / total:.1%} |")
