"""The anonymous and file pages resident over a run, from vmstat.csv: the
premise of skew rectification (schemes/skew.toml), that memory holds far
more anonymous pages than file pages although app switches need both.

The ratio at each sample is (nr_active_anon + nr_inactive_anon) /
(nr_active_file + nr_inactive_file), the pages on the anonymous LRU lists
over those on the file LRU lists, for every scheme alike. `anon_file_figures`
gives its mean, min and max over the samples and its last value; None for a
vmstat.csv without the four counters or without file pages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # metrics imports this module
    from ..tables import Table

ANON = ("nr_active_anon", "nr_inactive_anon")
FILE = ("nr_active_file", "nr_inactive_file")


def anon_file_series(vmstat: Table) -> tuple[list[float], list[float]]:
    """(s since the workload started, anon:file ratio) per sample with file
    pages; empty without the counters."""
    header, rows = vmstat
    if any(c not in header for c in (*ANON, *FILE, "t_ms")):
        return [], []
    col = {k: header.index(k) for k in (*ANON, *FILE, "t_ms")}
    t_s, ratios = [], []
    for r in rows:
        file = sum(int(r[col[k]]) for k in FILE)
        if file > 0:
            t_s.append(int(r[col["t_ms"]]) / 1000)
            ratios.append(sum(int(r[col[k]]) for k in ANON) / file)
    return t_s, ratios


def anon_file_figures(ratios: list[float]) -> dict | None:
    """The ratio's mean, min, max and last value, None without samples."""
    if not ratios:
        return None
    return {
        "mean": float(np.mean(ratios)),
        "min": min(ratios),
        "max": max(ratios),
        "final": ratios[-1],
    }
