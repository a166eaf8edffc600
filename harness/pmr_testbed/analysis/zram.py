"""The zram device of a profile that swaps to zram ([phone] swap = "zram"),
from zram.csv.

The guest samples the device's mm_stat (docs/guest-interface.md) into
zram.csv, `t_ms,orig_data_bytes,compr_data_bytes,mem_used_bytes`:
the data stored (the swapped-out pages, uncompressed), its compressed size,
and the memory the device takes for it (compressed data, allocator
overhead and metadata).

`zram_figures` gives the stored data's and the used memory's peak and last
value (MB), and the compression ratio (orig / compressed) at the sample
that stored the most; None for a run without samples (a flash profile).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # metrics imports this module
    from ..tables import Table

MB = 2**20
ZRAM_FILE = "zram.csv"
COLUMNS = ("t_ms", "orig_data_bytes", "compr_data_bytes", "mem_used_bytes")


class ZramError(ValueError):
    """zram.csv lacks a column."""


def zram_figures(table: Table | None) -> dict | None:
    """The figures above, None without the file or its samples; ZramError
    if it lacks a column."""
    if table is None:
        return None
    header, rows = table
    if lacking := [c for c in COLUMNS if c not in header]:
        raise ZramError(f"has no column {', '.join(lacking)}")
    if not rows:
        return None
    col = {c: header.index(c) for c in COLUMNS}
    stored = [int(r[col["orig_data_bytes"]]) for r in rows]
    compressed = [int(r[col["compr_data_bytes"]]) for r in rows]
    used = [int(r[col["mem_used_bytes"]]) for r in rows]
    most = max(range(len(rows)), key=lambda i: stored[i])
    return {
        "stored_mb": {"peak": max(stored) / MB, "final": stored[-1] / MB},
        "used_mb": {"peak": max(used) / MB, "final": used[-1] / MB},
        "compression_ratio": stored[most] / compressed[most] if compressed[most] else None,
    }
