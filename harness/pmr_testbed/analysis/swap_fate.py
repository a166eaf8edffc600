"""What became of the pages a run wrote to swap, from vmstat.csv.

A page written to swap frees memory only when reclaim then frees it
(`pgsteal_anon`). Until then it sits in the swap cache, where a fault can
map it again (its write then freed nothing, and a store to it throws the
copy away), or where its owner's exit frees it. Flash writes that freed
no memory are the part of a scheme's write volume that its mechanism can
save; the pages still in the swap cache when the run ends were written
ahead of a need the run did not reach. For every scheme alike:

- `written_mb`: `pswpout` over the run;
- `anon_freed_mb`: `pgsteal_anon` over the run, anon pages reclaim freed;
- `written_not_freed_mb`: their difference. Net: an anon page that reclaim
  frees a second time without writing it again (a clean swap-cache page)
  counts in `anon_freed_mb` and not in `written_mb`;
- `swap_cache_end_mb`: the growth of `nr_swapcached` over the run, written
  pages (and pages read back from swap) still in the swap cache at the end;
- `dropped_mb`: `written_not_freed_mb - swap_cache_end_mb`, writes whose
  page left the swap cache without reclaim freeing it: mapped again and
  its swap slot freed, or freed by its owner.

On a kernel with patch 12 of the PMR series (v1: 27), `pmr.pmr_victim_swapin` and
`pmr.pmr_victim_freed` (metrics.PMR_EVENTS) tell how many of those were
victims that reclaim had paged out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # metrics imports this module
    from ..tables import Table

PAGE_MB = 4096 / 2**20
COUNTERS = ("pswpout", "pgsteal_anon", "nr_swapcached")


def swap_fate(vmstat: Table) -> dict | None:
    """The figures above, or None for a vmstat.csv without the counters."""
    header, rows = vmstat
    if not rows or any(c not in header for c in COUNTERS):
        return None
    col = {k: header.index(k) for k in COUNTERS}
    delta = {c: (int(rows[-1][col[c]]) - int(rows[0][col[c]])) * PAGE_MB for c in COUNTERS}
    not_freed = delta["pswpout"] - delta["pgsteal_anon"]
    return {
        "written_mb": delta["pswpout"],
        "anon_freed_mb": delta["pgsteal_anon"],
        "written_not_freed_mb": not_freed,
        "swap_cache_end_mb": delta["nr_swapcached"],
        "dropped_mb": not_freed - delta["nr_swapcached"],
    }
