"""What lmkd saw at its wakeups, over the run and after its last kill
(lmkd.csv).

The runtime's lmkd writes a row for each wakeup of its PSI handler that
read the system's state (runtime/src/lmkd/wakeup_log.rs). lmkd only looks
when a PSI trigger fires (some task stalled on memory for 70 ms of a
second) and then polls for a second; most polls return early, with
neither reclaim nor refaults since the one before. It kills for
`low_mem_and_swap` only when, at a wakeup that got past that, swap is low
*and* free memory is under the low watermark (its `wmark < WMARK_HIGH`),
and for the thrashing reasons only when the refaulted share of the file
LRU passes its limit. A run whose survivors do not fit ends with swap full
and its page cache thrashing, and lmkd kills no more (settled_state.py);
these figures say why, from lmkd's own view.

Over the run (to lmkd's stop, just after the workload's end):
- `events`: the PSI events lmkd handled (not those that came while a
  victim was still exiting: those wakeups read nothing and have no row);
  `evaluated`: wakeups that got past the early return.

After the last kill (from the first wakeup after the one that made it;
the whole run without kills):
- `events_after`, `wakeups_after`, `evaluated_after`: as above;
- `swap_low`, `under_low_wmark`: evaluated wakeups with swap low, with
  free memory under the low watermark (lmkd's WMARK_LOW or WMARK_MIN);
  `swap_low_under_low_wmark`: both at once, what `low_mem_and_swap` needs;
- `thrashing_max`: the largest thrashing figure (%), None without an
  evaluated wakeup;
- `kill_reasons_without_victim`: wakeups that chose a kill reason but
  found no process at or above its minimum oom_score_adj.

Every figure is None for a run without lmkd.csv (runtimes before it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # metrics imports settled_state, which imports this module
    from ..tables import Table

UNDER_LOW = ("min", "low")
FIGURES = (
    "events",
    "evaluated",
    "events_after",
    "wakeups_after",
    "evaluated_after",
    "swap_low",
    "under_low_wmark",
    "swap_low_under_low_wmark",
    "thrashing_max",
    "kill_reasons_without_victim",
)


def lmkd_wakeups(lmkd: Table | None) -> dict:
    """The figures above from lmkd.csv's header and rows. The same keys
    with or without the file, so that a scheme's runs summarise alike."""
    if lmkd is None:
        return dict.fromkeys(FIGURES)
    header, rows = lmkd
    col = {name: header.index(name) for name in header}
    rows = [r for r in rows if len(r) == len(header)]

    def killed(r: list[str]) -> bool:
        return r[col["killed_kb"]] not in ("", "0")

    last = max((i for i, r in enumerate(rows) if killed(r)), default=-1)
    after = rows[last + 1 :]
    evaluated = [r for r in after if r[col["reclaim"]] != "idle"]
    swap_low = [r[col["swap_is_low"]] == "1" for r in evaluated]
    under_low = [r[col["wmark"]] in UNDER_LOW for r in evaluated]
    thrashing = [int(r[col["thrashing"]]) for r in evaluated if r[col["thrashing"]]]
    return {
        "events": sum(r[col["event"]] == "1" for r in rows),
        "evaluated": sum(r[col["reclaim"]] != "idle" for r in rows),
        "events_after": sum(r[col["event"]] == "1" for r in after),
        "wakeups_after": len(after),
        "evaluated_after": len(evaluated),
        "swap_low": sum(swap_low),
        "under_low_wmark": sum(under_low),
        "swap_low_under_low_wmark": sum(a and b for a, b in zip(swap_low, under_low)),
        "thrashing_max": max(thrashing, default=None),
        "kill_reasons_without_victim": sum(1 for r in after if r[col["reason"]] and not killed(r)),
    }
