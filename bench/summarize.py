"""Reads bench/out/<run>/results.tsv and prints the medians, ratios and goals as a Markdown table."""
import os
import re
import statistics
import sys
from collections import defaultdict

rows = defaultdict(list)
for line in open(f"{sys.argv[1]}/results.tsv"):
    scenario, who, run, value, p99, errors = line.rstrip("\n").split("\t")
    rows[(scenario, who)].append((float(value), float(p99), int(errors)))


def med(scenario, who, index=0):
    values = [r[index] for r in rows.get((scenario, who), [])]
    return statistics.median(values) if values else None


def errs(scenario, who):
    return sum(r[2] for r in rows.get((scenario, who), []))


def n(scenario, who):
    return len(rows.get((scenario, who), []))


def cores():
    """The machine's cores, as run.sh wrote them in machine.txt."""
    try:
        for line in open(f"{sys.argv[1]}/machine.txt"):
            found = re.search(r", (\d+) cores,", line)
            if found:
                return int(found.group(1))
    except OSError:
        pass
    return os.cpu_count()


def cores_allow(scenario):
    """Requests a second the machine's cores allow at what this scenario's requests cost them:
    the server's CPU and wrk's together, since wrk runs on the same cores. None for a run dir
    from before wrk's CPU was recorded. wrk's leaves out its Lua start-up (bench/wrk-cpu.py)."""
    server, load = med(f"{scenario}_cpu", "buzzkit"), med(f"{scenario}_wrk_cpu", "buzzkit")
    if server is None or load is None:
        return None
    return cores() * 1e6 / (server + load)


def bound_note(scenario, ceiling):
    """What a ceiling that runs alone (SQLite, one thread) leaves reachable here."""
    allowed = cores_allow(scenario)
    if allowed is None or not ceiling:
        return ""
    return (f"; at this CPU a request (server {fmt(med(f'{scenario}_cpu', 'buzzkit'))} + wrk "
            f"{fmt(med(f'{scenario}_wrk_cpu', 'buzzkit'))} µs) the {cores()} cores allow at most "
            f"{fmt(allowed)}/s, {allowed / ceiling:.2f} of the ceiling")


table = []


def add(figure, ours, ceiling, ratio, goal, met, note=""):
    table.append((figure, ours, ceiling, ratio, goal, met, note))


def fmt(v, unit=""):
    if v is None:
        return "–"
    return (f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}") + unit


def ratio_row(figure, ours, ceiling, goal, higher=True, unit=" req/s", cunit=None, note=""):
    if ours is None or ceiling is None:
        return
    r = ours / ceiling
    met = r >= goal if higher else r <= goal
    add(figure, fmt(ours, unit), fmt(ceiling, cunit or unit), f"{r:.2f}", ("≥ " if higher else "≤ ") + f"{goal}", "yes" if met else "**no**", note)


def pairs_note(ours, ceiling, ceiling_who="buzzkit"):
    """Each run's ratio against the ceiling run interleaved with it."""
    pairs = [o[0] / c[0] for o, c in zip(rows.get((ours, "buzzkit"), []), rows.get((ceiling, ceiling_who), []))]
    return f"; each run against the one beside it: {' / '.join(f'{p:.2f}' for p in pairs)}" if pairs else ""


# The ratio is of the medians; each run's ratio against the nginx run just before it is noted
# too: the machine's speed drifts between runs by more than the goal's margin.
for c in (64, 256):
    s = f"healthz_c{c}"
    ratio_row(f"GET /healthz, {c} conns vs nginx", med(s, "buzzkit"), med(s, "nginx"), 1.0,
              note=f"p99 {fmt(med(s, 'buzzkit', 1))} ms (nginx {fmt(med(s, 'nginx', 1))} ms); errors {errs(s, 'buzzkit')}"
              + pairs_note(s, s, "nginx"))

one, grouped = med("ceiling_identify_1txn", "sqlite"), med("ceiling_identify_group64", "sqlite")
ours = med("identify_c64", "buzzkit")
if ours is not None:
    ratio_row("POST /v1/identify rename, 64 conns vs SQLite 64/txn", ours, grouped, 0.8,
              note=f"errors {errs('identify_c64', 'buzzkit')}; server CPU {fmt(med('identify_c64_cpu', 'buzzkit'))} µs/request"
              + pairs_note("identify_c64", "ceiling_identify_group64", "sqlite") + bound_note("identify_c64", grouped))
    ratio_row("  … SQLite 64/txn vs 1 txn/request (FULL)", grouped, one, 2)
    cpu = med("identify_c64_cpu", "buzzkit")
    if cpu is not None:
        add("  … server CPU per identify", fmt(cpu, " µs"), "", "", "≤ 60 µs", "yes" if cpu <= 60 else "**no**")
    p99 = med("identify_c64", "buzzkit", 1)
    add("  … identify p99 at 64 conns", fmt(p99, " ms"), "", "", "< 10 ms", "yes" if p99 < 10 else "**no**")
    ratio_row("  … ours vs SQLite 1 txn/request", ours, one, 2, note="(for scale)")


# Our /healthz measured beside each GET run when the run has it (older run dirs: the /healthz
# section's, minutes earlier).
beside = "healthz_beside_get" if n("healthz_beside_get", "buzzkit") else "healthz_c64"
get, health_beside = med("get_c64", "buzzkit"), med(beside, "buzzkit")
ratio_row("GET /v1/subscribers/{id}, 64 conns vs our /healthz", get, health_beside, 0.8,
          note=f"p99 {fmt(med('get_c64', 'buzzkit', 1))} ms; server CPU {fmt(med('get_c64_cpu', 'buzzkit'))} µs/request; SQLite alone does {fmt(med('ceiling_get_subscriber', 'sqlite'))}/s of the same reads on 1 thread"
          + (pairs_note("get_c64", beside) if beside == "healthz_beside_get" else ""))
# Both sides are ours and share the cores with wrk alike: the ratio their CPU a request predicts
# (server and wrk together), against which the measured one is the machine's scheduling and noise.
if cores_allow("get_c64") is not None and cores_allow(beside) is not None:
    add("  … the ratio CPU a request predicts", "", "", f"{cores_allow('get_c64') / cores_allow(beside):.2f}", "", "",
        f"server + wrk µs a request: GET {fmt(med('get_c64_cpu', 'buzzkit'))} + {fmt(med('get_c64_wrk_cpu', 'buzzkit'))}, "
        f"/healthz {fmt(med(beside + '_cpu', 'buzzkit'))} + {fmt(med(beside + '_wrk_cpu', 'buzzkit'))}")

# The same GETs against /healthz sent like them (lua/get.lua with a /healthz path format: the
# same table of request strings and the same header), so wrk's own cost per request is alike on both sides.
# Not a goal of its own: it says how much of the gap above is the server's.
like = med("healthz_like_get", "buzzkit")
if get is not None and like is not None:
    add("  … vs our /healthz sent like the GETs (same request table)", fmt(get, " req/s"), fmt(like, " req/s"),
        f"{get / like:.2f}", "", "", f"/healthz this way: server CPU {fmt(med('healthz_like_get_cpu', 'buzzkit'))} µs/request"
        + pairs_note("get_c64", "healthz_like_get"))

# The uncached runs' own ceiling runs (run dirs from before they had a name of their own pooled
# them with the cached GET's), and each run's ratio against its own ceiling run.
uncached_ceiling = "ceiling_uncached_get_subscriber" if n("ceiling_uncached_get_subscriber", "sqlite") else "ceiling_get_subscriber"
ratio_row("GET /v1/subscribers/{id}, cache off, 64 conns vs SQLite alone (1 thread)", med("get_uncached_c64", "buzzkit"),
          med(uncached_ceiling, "sqlite"), 0.5,
          note=f"p99 {fmt(med('get_uncached_c64', 'buzzkit', 1))} ms; server CPU {fmt(med('get_uncached_c64_cpu', 'buzzkit'))} µs/request"
          + (pairs_note("get_uncached_c64", uncached_ceiling, "sqlite") if uncached_ceiling != "ceiling_get_subscriber" else "")
          + bound_note("get_uncached_c64", med(uncached_ceiling, "sqlite")))

# The ceiling with 16 GETs to a read transaction (not a goal): how much of the ratio above the
# server's shared read transactions make up.
shared = med("ceiling_uncached_shared16_get_subscriber", "sqlite")
uncached = med("get_uncached_c64", "buzzkit")
if shared is not None and uncached is not None:
    add("  … vs SQLite alone, 16 GETs a read transaction", fmt(uncached, " req/s"), fmt(shared, " req/s"),
        f"{uncached / shared:.2f}", "", "", "a loop of ours shares one read transaction among the GETs of one wake-up"
        + pairs_note("get_uncached_c64", "ceiling_uncached_shared16_get_subscriber", "sqlite"))

ev = med("events_c64", "buzzkit")
if ev is not None:
    ratio_row("POST /v1/events ×50, 64 conns vs SQLite 64×50/txn", ev * 50, med("ceiling_events_group64x50", "sqlite"), 0.9,
              unit=" ev/s", note=f"p99 {fmt(med('events_c64', 'buzzkit', 1))} ms; errors {errs('events_c64', 'buzzkit')}")

absorb, copy = med("absorb_10k", "buzzkit"), med("ceiling_copy_10k", "sqlite")
ratio_row("absorb 10,000 events vs raw copy", absorb, copy, 1.5, higher=False, unit=" ms",
          note=f"SQLite alone, the whole absorb: {fmt(med('ceiling_absorb_10k_full', 'sqlite'), ' ms')}; "
               f"ours with no other traffic: {fmt(med('absorb_10k_alone', 'buzzkit'), ' ms')}; "
               f"its events all moved after {fmt(med('absorb_10k_moved', 'buzzkit'), ' ms')} "
               f"({fmt(med('absorb_10k_alone_moved', 'buzzkit'), ' ms')} alone)")
bg = [v for v in (med("absorb_bg_identify", "buzzkit", 1), med("absorb_bg_get", "buzzkit", 1)) if v is not None]
if bg:
    quiet = [med("quiet_bg_identify", "buzzkit", 1), med("quiet_bg_get", "buzzkit", 1)]
    add("  … others' p99 meanwhile (identify / GET)", " / ".join(fmt(v, " ms") for v in bg), "", "", "< 20 ms",
        "yes" if max(bg) < 20 else "**no**",
        "the same traffic with no absorb: " + " / ".join(fmt(v, " ms") for v in quiet))

per = med("idle_rss_per_conn", "buzzkit")
if per is not None:
    add("10,000 idle keep-alive conns: RSS each", fmt(per, " B"), "", "", "≤ 8192 B", "yes" if per <= 8192 else "**no**")
    # Without them: measured beside each run when the run has it (older run dirs: the /healthz section's).
    without = "healthz_beside_idle" if n("healthz_beside_idle", "buzzkit") else "healthz_c64"
    ratio_row("  … /healthz 64 conns meanwhile vs without", med("healthz_c64_with_idle", "buzzkit"), med(without, "buzzkit"), 0.9,
              note=pairs_note("healthz_c64_with_idle", without).removeprefix("; ") if without == "healthz_beside_idle" else "")

print("| figure | ours | ceiling | ratio | goal | met | notes |")
print("|---|---|---|---|---|---|---|")
for row in table:
    print("| " + " | ".join(row) + " |")
print()
print("medians over each figure's runs (RUNS per scenario; the copy ceiling has 3 per run); raw: results.tsv")
