"""Refaults and reclaim per app, split between the time each app spent in
front and behind, from app_memcg.csv and events.jsonl.

Acclaim's foreground-aware eviction (ATC'20) lets reclaim take background
apps' pages first so that the app in front keeps its own: it should move
refaults from the foreground to the background. The guest writes every
app's cgroup counters once a second to app_memcg.csv
(`t_s,app,anon,file,pgsteal,pgmajfault,workingset_refault_anon,
workingset_refault_file`, cumulative, `t_s` on the workload's clock;
docs/guest-interface.md), for every scheme.

Which app is in front comes from events.jsonl: an app is in front from the
start of its launch (`t_ms - response_ms` of its `switch` or `launch`
event, logged when the launch is done) until the next launch starts; a
background app launched at the start of the run (role `background`) only
while it launches. Nothing is in front before the first launch and between
the background launches.

Each app's counters are differenced row by row; each difference belongs to
the interval from the app's row before to this one, and is split between
foreground and background by the share of that interval the app spent in
front (all to one side when it did not change). A counter that went down
restarted (a cgroup made anew for a relaunched app): it counts from 0, as
does an app's first row; both cover the sampling period before the row.

`app_refaults` gives, for the foreground and the background, the anon and
file refaults (`workingset_refault_*`), the major faults and the pages
reclaimed (`pgsteal`), whole pages or faults (the foreground's share
rounded, the background's the rest of the total; None for a counter the
kernel lacks, which the guest leaves empty); the background's share of all
refaults (None without any); and the counter restarts seen.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # metrics imports this module
    from ..tables import Table

APP_MEMCG_FILE = "app_memcg.csv"
# app_memcg.csv's sampling period (runtime/src/metrics/app_memcg.rs)
PERIOD_S = 1.0
# figure -> app_memcg.csv column
COUNTERS = {
    "refault_anon": "workingset_refault_anon",
    "refault_file": "workingset_refault_file",
    "pgmajfault": "pgmajfault",
    "pgsteal": "pgsteal",
}
FRONT_EVENTS = ("switch", "launch")


class AppMemcgError(ValueError):
    """app_memcg.csv lacks a column the split needs."""


def front_spans(events: list[dict], from_done: bool = False) -> list[tuple[float, float, str]]:
    """(start s, end s, app) of each time an app was in front, in order;
    with `from_done`, each starts when its launch was done instead (the
    time the app could draw frames, ice.py). The last one ends at
    infinity."""
    launches = sorted(
        (
            (float(e["t_ms"]) - float(e["response_ms"])) / 1000,
            float(e["t_ms"]) / 1000,
            e["app"],
            e.get("role") == "background",
        )
        for e in events
        if e.get("type") in FRONT_EVENTS
    )
    spans = []
    for i, (start, done, app, only_launch) in enumerate(launches):
        next_start = launches[i + 1][0] if i + 1 < len(launches) else float("inf")
        end = done if only_launch else max(done, next_start)
        spans.append((done if from_done else start, end, app))
    return spans


def front_share(spans: list[tuple[float, float]], start: float, end: float) -> float:
    """The share of (start, end] covered by `spans` (sorted, not overlapping);
    for an empty interval, 1 if `end` is in a span, else 0."""
    if end <= start:
        i = bisect.bisect_left(spans, (end, float("inf"))) - 1
        return 1.0 if i >= 0 and spans[i][0] <= end <= spans[i][1] else 0.0
    covered = sum(max(0.0, min(b, end) - max(a, start)) for a, b in spans)
    return min(1.0, covered / (end - start))


def app_refaults(table: Table, events: list[dict]) -> dict:
    """The figures above from app_memcg.csv's table and the run's events;
    AppMemcgError if the table lacks a column."""
    header, rows = table
    needed = ["t_s", "app", *COUNTERS.values()]
    if lacking := [c for c in needed if c not in header]:
        raise AppMemcgError(f"has no column {', '.join(lacking)}")
    col = {name: header.index(name) for name in needed}
    by_app: dict[str, list[tuple[float, list[int]]]] = {}
    # a counter the kernel lacks is left empty: no figure for it
    empty = {i for r in rows for i, c in enumerate(COUNTERS.values()) if not r[col[c]]}
    for r in rows:
        values = [0 if i in empty else int(r[col[c]]) for i, c in enumerate(COUNTERS.values())]
        by_app.setdefault(r[col["app"]], []).append((float(r[col["t_s"]]), values))
    spans: dict[str, list[tuple[float, float]]] = {}
    for start, end, app in front_spans(events):
        spans.setdefault(app, []).append((start, end))
    fg = [0.0] * len(COUNTERS)
    total = [0] * len(COUNTERS)
    resets = 0
    for app, samples in by_app.items():
        samples.sort(key=lambda s: s[0])
        previous: tuple[float, list[int]] | None = None
        for t, values in samples:
            restarted = previous is not None and any(v < p for v, p in zip(values, previous[1]))
            resets += restarted
            if previous is None or restarted:
                start, deltas = t - PERIOD_S, values
                if previous is not None:
                    start = max(start, previous[0])
            else:
                start, deltas = previous[0], [v - p for v, p in zip(values, previous[1])]
            share = front_share(spans.get(app, []), start, t)
            for i, d in enumerate(deltas):
                fg[i] += d * share
                total[i] += d
            previous = (t, values)
    foreground: dict[str, int | None] = {}
    background: dict[str, int | None] = {}
    for i, name in enumerate(COUNTERS):
        fg_i = round(fg[i])
        foreground[name] = None if i in empty else fg_i
        background[name] = None if i in empty else total[i] - fg_i
    refaults = total[0] + total[1]
    return {
        "foreground": foreground,
        "background": background,
        "background_share": (
            (total[0] + total[1] - round(fg[0]) - round(fg[1])) / refaults
            if refaults and not empty & {0, 1}
            else None
        ),
        "resets": resets,
    }
