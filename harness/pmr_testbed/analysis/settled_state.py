"""How a run settled after lmkd's last kill.

On the `paper` scenario the apps' memory exceeds RAM plus swap, so lmkd
kills until the survivors fit. Where it stops decides the rest of the run:
when the survivors' anonymous memory leaves too little room for their file
pages and swap is full, reclaim can only take file pages and the run thrashes
them until it ends (no further kill: in the runs of 2026-11-27, none of lmkd's
wakeups after its last kill found free memory under the low watermark, and
its thrashing figure stayed at 50% or less, half its limit; see `lmkd`
below). One kill more
or less puts a repetition on either side, whatever the reclaim scheme, and
the two sides differ in response time and reclaim CPU by more than the
schemes do; this is what each run's figures say about it:

- `last_kill_s`: workload time of lmkd's last kill, None without kills;
- `file_refaults_per_s`: `workingset_refault_file` per second from the last
  kill (the workload start without kills) to the end of the run;
- `swap_free_mb_min`: the least SwapFree over the same window, from
  meminfo.csv; None for a run without that file (runtimes before it);
- `swap_full_s`: how long swap was full over the same window: the time
  from each meminfo.csv sample with SwapFree under 1% of SwapTotal to the
  next. Every run may touch 0 at some point; the time tells the runs that
  settled with swap full, where reclaim can only take file pages, from
  those that did not. None without meminfo.csv.
- `until_last_kill` and `after_last_kill`: the reclaim work of the run
  split at the last kill (all of it after, without kills): `reclaim_cpu_s`,
  the reclaim threads' CPU seconds (threads_cpu.csv; None for a runtime
  without it), `pages_reclaimed` (pgsteal_kswapd + pgsteal_direct) and
  `pswpout_mb`. A scheme that kills fewer apps keeps more of them to
  reclaim from after its last kill; the split shows whether its totals
  differ from another's while lmkd killed, or after;
- `lmkd`: what lmkd saw at its wakeups, over the run and after its last
  kill, and so why it killed no more (lmkd_wakeups.py); its figures are
  None without lmkd.csv.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from .lmkd_wakeups import lmkd_wakeups

if TYPE_CHECKING:  # metrics imports this module
    from ..tables import Table


def settled_state(
    kills: list[dict],
    vmstat: Table,
    meminfo: Table | None,
    threads_cpu: Table | None = None,
    lmkd: Table | None = None,
) -> dict:
    """The figures above from one run's kill events, vmstat.csv,
    meminfo.csv, threads_cpu.csv and lmkd.csv (None when the run has none)."""
    header, rows = vmstat
    t, refault = header.index("t_ms"), header.index("workingset_refault_file")
    t_ms = np.array([float(r[t]) for r in rows])
    refaults = np.array([float(r[refault]) for r in rows])
    last_kill_ms = max((float(k["t_ms"]) for k in kills), default=None)
    since_ms = t_ms[0] if last_kill_ms is None else last_kill_ms
    span_s = (t_ms[-1] - since_ms) / 1000
    rate = (refaults[-1] - np.interp(since_ms, t_ms, refaults)) / span_s if span_s > 0 else None
    return {
        "last_kill_s": None if last_kill_ms is None else last_kill_ms / 1000,
        "file_refaults_per_s": None if rate is None else float(rate),
        "swap_free_mb_min": swap_free_min_mb(meminfo, since_ms),
        "swap_full_s": swap_full_s(meminfo, since_ms),
        **work_split(since_ms, t_ms, vmstat, threads_cpu),
        "lmkd": lmkd_wakeups(lmkd),
    }


PAGE_MB = 4096 / 2**20


def work_split(since_ms: float, t_ms: np.ndarray, vmstat: Table, threads_cpu: Table | None) -> dict:
    """`until_last_kill` and `after_last_kill` (see the module docstring):
    each cumulative counter interpolated at `since_ms` and differenced;
    `t_ms` are vmstat's sample times."""
    header, rows = vmstat

    def counter(*keys: str) -> np.ndarray:
        cols = [header.index(k) for k in keys]
        return np.array([sum(float(r[c]) for c in cols) for r in rows])

    series = [
        ("pages_reclaimed", t_ms, counter("pgsteal_kswapd", "pgsteal_direct"), 1.0),
        ("pswpout_mb", t_ms, counter("pswpout"), PAGE_MB),
    ]
    cpu = reclaim_cpu_series(threads_cpu)
    until: dict = {"reclaim_cpu_s": None}
    after: dict = {"reclaim_cpu_s": None}
    for name, t, values, scale in ([("reclaim_cpu_s", *cpu, 1.0)] if cpu else []) + series:
        at = float(np.interp(since_ms, t, values))
        until[name] = float((at - values[0]) * scale)
        after[name] = float((values[-1] - at) * scale)
    until["pages_reclaimed"] = round(until["pages_reclaimed"])
    after["pages_reclaimed"] = round(after["pages_reclaimed"])
    return {"until_last_kill": until, "after_last_kill": after}


def reclaim_cpu_series(threads_cpu: Table | None) -> tuple[np.ndarray, np.ndarray] | None:
    """Sample times and the reclaim threads' CPU seconds summed, from the
    rows of threads_cpu.csv that have every column; None without any."""
    if threads_cpu is None:
        return None
    header, rows = threads_cpu
    full = [r for r in rows if len(r) == len(header) and all(r)]
    if not full or len(header) < 2:
        return None
    t = header.index("t_ms")
    return (
        np.array([float(r[t]) for r in full]),
        np.array([sum(float(v) for i, v in enumerate(r) if i != t) for r in full]),
    )


def swap_free_min_mb(meminfo: Table | None, since_ms: float) -> float | None:
    if meminfo is None:
        return None
    header, rows = meminfo
    t, free = header.index("t_ms"), header.index("swap_free_kb")
    after = [float(r[free]) for r in rows if float(r[t]) >= since_ms]
    return min(after) / 1024 if after else None  # kB -> MB (2**20 bytes)


# Swap counts as full under this share of it free
SWAP_FULL_SHARE = 0.01


def swap_full_s(meminfo: Table | None, since_ms: float) -> float | None:
    if meminfo is None:
        return None
    header, rows = meminfo
    t, free, total = (header.index(k) for k in ("t_ms", "swap_free_kb", "swap_total_kb"))
    full_ms = sum(
        float(b[t]) - float(a[t])
        for a, b in itertools.pairwise(rows)
        if float(a[t]) >= since_ms and float(a[free]) < SWAP_FULL_SHARE * float(a[total])
    )
    return full_ms / 1000
