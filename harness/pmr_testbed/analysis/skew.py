"""What skew rectification did in a run (schemes/skew.toml): the unused
anonymous pages it advised out at app switches, from events.jsonl, and the
swappiness its feedback loop set, from skew_balance.csv.

When an app leaves the front the guest advises out the anonymous pages it
did not touch while in front and logs (docs/guest-interface.md)

    {"type": "skew_pageout", "t_ms": 61234, "app": "chrome",
     "marked_pages": 30000, "idle_pages": 12000, "advised_bytes": 49152000,
     "ms": 8.4, "cpu_ms": 6.1, "advice": "pageout"}

`marked_pages` the app's anonymous pages marked idle when it came to the
front, `idle_pages` those still idle when it left, `advised_bytes` what was
advised (MADV_PAGEOUT or MADV_COLD, `advice`), `ms` how long that took,
`cpu_ms` the CPU time of the thread that advised (under MADV_PAGEOUT it
reclaims the pages itself, zram's compression included).
With `[skew.balance]` the guest writes skew_balance.csv, one row per period
(`t_ms,swappiness,anon_refault_pct,file_refault_pct`: the swappiness as
the loop left it that period, and the period's anonymous and file
refaults as % of their LRU lists).

`skew_figures` gives the pageouts' count, the pages advised
(advised_bytes / 4 KiB, summed), the marked and idle pages summed, the
idle share of the marked pages, the median time of a pageout (ms), the
CPU time of the pageouts summed (ms; None from a guest that did not
measure it), and,
with the balance loop, `swappiness`: its min, median, max and final value
over the periods and how many periods raised and lowered it. None for a
run with neither (a scheme without `[skew]`).
"""

from __future__ import annotations

import itertools
import statistics
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # metrics imports this module
    from ..tables import Table

PAGE_BYTES = 4096
PAGEOUT_EVENT = "skew_pageout"
BALANCE_FILE = "skew_balance.csv"
BALANCE_COLUMNS = ("t_ms", "swappiness", "anon_refault_pct", "file_refault_pct")


class SkewBalanceError(ValueError):
    """skew_balance.csv lacks a column."""


def pageout_figures(events: list[dict]) -> dict | None:
    """The pageouts' figures above, None without a skew_pageout event."""
    pageouts = [e for e in events if e.get("type") == PAGEOUT_EVENT]
    if not pageouts:
        return None
    marked = sum(int(e["marked_pages"]) for e in pageouts)
    idle = sum(int(e["idle_pages"]) for e in pageouts)
    return {
        "pageouts": len(pageouts),
        "pages_advised": sum(int(e["advised_bytes"]) for e in pageouts) // PAGE_BYTES,
        "marked_pages": marked,
        "idle_pages": idle,
        "idle_share": idle / marked if marked else None,
        "pageout_ms_median": float(statistics.median(float(e["ms"]) for e in pageouts)),
        "pageout_cpu_ms": (
            sum(float(e["cpu_ms"]) for e in pageouts)
            if all("cpu_ms" in e for e in pageouts)
            else None
        ),
    }


def swappiness_series(table: Table | None) -> tuple[list[float], list[int]]:
    """(s since the workload started, swappiness) per period of
    skew_balance.csv; empty without the file. SkewBalanceError if it
    lacks a column."""
    if table is None:
        return [], []
    header, rows = table
    if lacking := [c for c in BALANCE_COLUMNS if c not in header]:
        raise SkewBalanceError(f"has no column {', '.join(lacking)}")
    t, s = header.index("t_ms"), header.index("swappiness")
    return [float(r[t]) / 1000 for r in rows], [int(r[s]) for r in rows]


def swappiness_figures(swappiness: list[int]) -> dict | None:
    """The balance loop's swappiness over the periods, None without periods."""
    if not swappiness:
        return None
    moves = [b - a for a, b in itertools.pairwise(swappiness)]
    return {
        "min": min(swappiness),
        "median": statistics.median(swappiness),
        "max": max(swappiness),
        "final": swappiness[-1],
        "raised": sum(m > 0 for m in moves),
        "lowered": sum(m < 0 for m in moves),
    }


def skew_figures(events: list[dict], swappiness: list[int]) -> dict | None:
    """The figures above from the run's events and its swappiness per
    period (swappiness_series); None with neither."""
    pageouts = pageout_figures(events)
    balance = swappiness_figures(swappiness)
    if pageouts is None and balance is None:
        return None
    empty = {
        "pageouts": 0,
        "pages_advised": 0,
        "marked_pages": 0,
        "idle_pages": 0,
        "idle_share": None,
        "pageout_ms_median": None,
        "pageout_cpu_ms": None,
    }
    return {**(pageouts or empty), "swappiness": balance}
