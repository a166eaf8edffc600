"""Whether the scenario's apps fit the guest: the kills no scheme can avoid.

Every app's heap grows to its whole anonymous footprint (`anon_mb` in
spec.json, already scaled to the guest; the app model holds it until the
app dies). If every app lived to that size at once, the apps would need
that much RAM or swap; the guest has MemTotal and SwapTotal (run.json). What
exceeds them can only be freed by killing apps, and killing the largest
killable apps first (every app but the persistent system processes, which
lmkd never kills) takes the fewest kills. That count bounds from below the
kills of any scheme that keeps the apps' memory (it compresses nothing and
drops no anonymous page): the kernel's own memory, page tables, the page
cache the apps read, the free memory the watermarks keep, lmkd's order of
victims (least recently used first, not largest), and a foreground app
that comes back at its next switch after a kill are all left out, and each
of them can only raise it.

`capacity(spec, run)`:
- `apps_anon_mb`: the apps' anonymous footprints summed;
- `mem_total_mb`, `swap_total_mb`: the guest's MemTotal and SwapTotal;
- `excess_mb`: the footprints beyond RAM and swap (<= 0: they fit);
- `fewest_kills`: the fewest apps whose death frees the excess, the largest
  killable first (0 when it fits; None when killing every killable app
  would not free it).
"""

from __future__ import annotations

KB_PER_MB = 1024


def fewest_kills(footprints_mb: list[float], excess_mb: float) -> int | None:
    """The fewest of `footprints_mb` whose sum reaches `excess_mb`."""
    freed, kills = 0.0, 0
    for mb in sorted(footprints_mb, reverse=True):
        if freed >= excess_mb:
            break
        freed += mb
        kills += 1
    return kills if freed >= excess_mb else None


def capacity(spec: dict, run: dict) -> dict | None:
    """The figures above for one run; None without MemTotal or SwapTotal."""
    if run.get("mem_total_kb") is None or run.get("swap_total_kb") is None:
        return None
    apps = spec["apps"]
    anon_mb = sum(a["anon_mb"] for a in apps)
    mem_mb = run["mem_total_kb"] / KB_PER_MB
    swap_mb = run["swap_total_kb"] / KB_PER_MB
    excess_mb = anon_mb - mem_mb - swap_mb
    killable = [a["anon_mb"] for a in apps if a["adj_class"] != "persistent"]
    return {"apps_anon_mb": anon_mb, "mem_total_mb": mem_mb, "swap_total_mb": swap_mb,
            "excess_mb": excess_mb, "fewest_kills": fewest_kills(killable, excess_mb)}
