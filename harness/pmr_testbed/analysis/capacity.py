"""Whether the scenario's apps fit the guest: the kills no scheme can avoid.

Every app's heap grows to its start-up footprint (`anon_mb` in spec.json,
already scaled to the guest) and keeps it until the app dies (what it grows
by while used, up to `peak_anon_mb`, depends on how long it is used and is
left out: it can only raise the bound):
the app model rewrites pages within the heap, never frees them. The guest
has MemTotal of RAM and SwapTotal of swap (run.json). Once every app has
launched and grown (on `paper` and `smoke`, within the first round), the
apps still alive must fit in both, so the apps that died must have held at
least the excess. The largest killable apps (every app but the persistent
system processes, which lmkd never kills) free it with the fewest deaths.
That count bounds from below the deaths, lmkd's kills and the kernel OOM
killer's, of any scheme that keeps the apps' pages (compresses nothing,
drops no anonymous page): the kernel's own memory, page tables, the page
cache the apps read, the free memory the watermarks keep, lmkd's order of
victims (least recently used first, not largest) and a foreground app
that comes back at its next switch after a kill are all left out, and
each can only raise it.

`capacity(spec, run, oom_kills)`:
- `apps_anon_mb`: the apps' anonymous footprints summed;
- `mem_total_mb`, `swap_total_mb`: the guest's MemTotal and SwapTotal;
- `excess_mb`: the footprints beyond RAM and swap (<= 0: they fit);
- `fewest_kills`: the fewest apps whose death frees the excess, the largest
  killable first (0 when they fit; None when killing every killable app
  would not free it);
- `oom_kills`: the processes the kernel's OOM killer killed in the run
  (vmstat `oom_kill`; None where vmstat.csv lacks it): deaths lmkd's kill
  count leaves out.
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


def capacity(spec: dict, run: dict, oom_kills: int | None) -> dict | None:
    """The figures above for one run; None without MemTotal or SwapTotal."""
    if run.get("mem_total_kb") is None or run.get("swap_total_kb") is None:
        return None
    apps = spec["apps"]
    anon_mb = sum(a["anon_mb"] for a in apps)
    mem_mb = run["mem_total_kb"] / KB_PER_MB
    swap_mb = run["swap_total_kb"] / KB_PER_MB
    excess_mb = anon_mb - mem_mb - swap_mb
    killable = [a["anon_mb"] for a in apps if a["adj_class"] != "persistent"]
    return {
        "apps_anon_mb": anon_mb,
        "mem_total_mb": mem_mb,
        "swap_total_mb": swap_mb,
        "excess_mb": excess_mb,
        "fewest_kills": fewest_kills(killable, excess_mb),
        "oom_kills": oom_kills,
    }
