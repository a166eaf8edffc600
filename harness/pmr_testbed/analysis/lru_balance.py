"""How reclaim balanced the LRU lists over a run, from vmstat.csv.

PMR's kshrinkd takes victims off the inactive lists. Where the kernel weighs
the inactive lists against the active ones (whether to deactivate active
folios; whether a refaulting folio was part of the working set), victims
that do not count as inactive make it shrink the active lists and activate
fewer refaults, so more of the working set is evicted and read again. These
figures show that balance for every scheme alike:

- `file_refaults`: `workingset_refault_file` over the run, the page cache
  evicted and read again;
- `file_activated_share`: `workingset_activate_file` / `file_refaults`,
  the share of them the kernel recognised as working set and activated;
  None without refaults;
- `pgdeactivate`: active folios moved to the inactive lists;
- `active_file_mb`, `inactive_file_mb`, `victim_file_mb`: the mean of
  `nr_active_file`, `nr_inactive_file` and `nr_victim_file` (file victims,
  on a kernel that counts them; None elsewhere) over the samples, MB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # metrics imports this module
    from ..tables import Table

PAGE_MB = 4096 / 2**20
COUNTERS = ("workingset_refault_file", "workingset_activate_file", "pgdeactivate")
SIZES = {
    "active_file_mb": "nr_active_file",
    "inactive_file_mb": "nr_inactive_file",
    "victim_file_mb": "nr_victim_file",
}


def lru_balance(vmstat: Table) -> dict | None:
    """The figures above, or None for a vmstat.csv without the counters."""
    header, rows = vmstat
    if not rows or any(c not in header for c in COUNTERS):
        return None
    col = {k: header.index(k) for k in header}
    delta = {c: int(rows[-1][col[c]]) - int(rows[0][col[c]]) for c in COUNTERS}
    refaults = delta["workingset_refault_file"]
    figures = {
        "file_refaults": refaults,
        "file_activated_share": (
            delta["workingset_activate_file"] / refaults if refaults > 0 else None
        ),
        "pgdeactivate": delta["pgdeactivate"],
    }
    for name, item in SIZES.items():
        figures[name] = (
            float(np.mean([float(r[col[item]]) for r in rows])) * PAGE_MB if item in col else None
        )
    return figures
