"""What SWAM's paper measures (Lim et al., MobiCom'23: kills, launch time,
response time) in one run, with what its parts did: the swap daemon's
files (Adaptive Swap's flash tier), the EOOM killer's launch costs, the
OOM Cleaner's swap-clean, and the writes to each swap tier, from
events.jsonl, vmstat.csv, diskstat.csv and spec.json.

SWAM's headlines compare it with stock Android on zram alone and on flash
swap alone; on a zram+flash profile (profiles.py) the schemes zram-only
and flash-only are those baselines, and every scheme's runs give the same
figures, so that the report sets them side by side (`swam_figures`, every
run with spec.json):

- `relaunches`: the cold launches (`switch` and `launch` events) of an
  app lmkd had killed since its previous launch; `relaunch_cost_ms` the
  mean `files_ms` + `init_ms` (+ `so_ms`, the relocation of an app's
  shared objects' data, where measured) of those that measured both (the
  reading of the app's files and its init work: what EOOM ranks apps
  by), None without one. The kills themselves are metrics.py's `kills`
  (lmkd's).
- `launch_ms`: the cold switches' response times (an app launched with no
  process: its first launch or a relaunch after a kill), median and p90;
  `response_ms`: every switch's, median and p90 (linear interpolation;
  None without such a switch).
- `flash_write_mb`: what the swap disk wrote over the run (diskstat.csv's
  write_sectors, last sample minus first): the flash tier, with the swap
  daemon's ext4 metadata; about 0 where the disk is not swapped on, None
  for a zram run without diskstat.csv.
  `zram_write_mb`: the pages swapped out (vmstat pswpout) less those the
  disk took, the zram tier's writes (the guest samples no write counter
  of the zram device); None without a zram device (spec.json
  `swap.zram_mb` 0).
- `swapd` (spec.json `scheme.swam.swapd`, or its events): the swap files
  the daemon added and removed (`swam_swapfile` events: `action`, `files`
  after it, `spare_kb`, `ms` it took), the mean and longest add
  (fallocate, swap header, swapon) and remove (swapoff, unlink), the most files
  in use at once (`swam_end`'s `max_files_used`, else the events' largest
  `files`), the files at the end (`swam_end`'s `files`, None without it)
  and `tier_peak_mb`, the flash tier's largest size (the most files x
  `chunk_mb`, guest MB; None without spec.json's swapd).
- `eoom` (spec.json `scheme.swam.eoom`, or kills with `launch_adj`): the
  kills whose victim's app had a known launch cost (`relaunch_ms` not
  null), the mean of those costs and the mean `launch_adj` lmkd added.
- `wsp_kb`: the OOM Cleaner's floors the scheme wrote (its knobs
  /proc/sys/vm/{clean_low,clean_min,anon_min}_kbytes, guest kB), absent
  without them.
- `cleaner` (spec.json `scheme.swam.cleaner`, or `swam_clean` events):
  the OOM Cleaner's swap-clean in lmkd. `cleans`, the processes it
  swap-cleaned (one `swam_clean` event each); `pages`, the pages the
  kernel dropped from swap (the events' `pages`, vmstat swap_clean);
  `kills_avoided`, the kills it made unnecessary (events with `relieved`:
  swap back above lmkd's threshold, no kill); `clean_ms_mean`, the mean
  time of one process's clean (None without one); `so_regenerated`, the
  pages the apps found swap-cleaned and relocated again at hot launches
  (the launches' `cost.so_regenerated`), and `so_ms_mean` the mean time
  those launches spent on their shared objects' data (`cost.so_ms`, None
  without it): what the cleaning cost the apps.

`swam_figures` is None for a run without spec.json (a run directory
written by hand).
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # metrics imports this module
    from ..tables import Table

PAGE_BYTES = 4096
MB = 2**20
LAUNCH_EVENTS = ("switch", "launch")
SWAPFILE_EVENT = "swam_swapfile"
END_EVENT = "swam_end"
CLEAN_EVENT = "swam_clean"
# the knobs of [swam.wsp] (schemes.py), keyed as `wsp_kb` has them
WSP_KNOBS = {
    "/proc/sys/vm/clean_low_kbytes": "clean_low",
    "/proc/sys/vm/clean_min_kbytes": "clean_min",
    "/proc/sys/vm/anon_min_kbytes": "anon_min",
}


def relaunches(events: list[dict]) -> list[dict]:
    """The cold launches of an app lmkd killed since its previous launch,
    in the events' order."""
    killed: set[str] = set()
    found = []
    for e in sorted(events, key=lambda e: float(e.get("t_ms", 0))):
        if e.get("type") == "kill":
            killed.add(e["app"])
        elif e.get("type") in LAUNCH_EVENTS:
            if e["kind"] == "cold" and e["app"] in killed:
                found.append(e)
            killed.discard(e["app"])
    return found


def relaunch_cost_ms(launches: list[dict]) -> float | None:
    """The mean files_ms + init_ms (+ so_ms where measured) of the launches
    that measured both, as EOOM counts it (runtime/src/lmkd/eoom.rs)."""
    costs = [
        float(c["files_ms"]) + float(c["init_ms"]) + float(c.get("so_ms", 0.0))
        for e in launches
        if "files_ms" in (c := e.get("cost") or {}) and "init_ms" in c
    ]
    return statistics.fmean(costs) if costs else None


def quantiles(values: list[float]) -> dict[str, float | None]:
    """Median and p90 (linear interpolation), None without values."""
    if not values:
        return {"p50": None, "p90": None}
    arr = np.asarray(values, dtype=float)
    return {"p50": float(np.percentile(arr, 50)), "p90": float(np.percentile(arr, 90))}


def swapd_figures(events: list[dict], chunk_mb: float | None) -> dict:
    """The swap daemon's files (module docstring)."""
    changes = [e for e in events if e.get("type") == SWAPFILE_EVENT]
    ends = [e for e in events if e.get("type") == END_EVENT]
    ms = {
        action: [float(e["ms"]) for e in changes if e["action"] == action]
        for action in ("add", "remove")
    }
    most = (
        int(ends[-1]["max_files_used"])
        if ends
        else max((int(e["files"]) for e in changes), default=0)
    )
    return {
        "added": len(ms["add"]),
        "removed": len(ms["remove"]),
        "add_ms_mean": statistics.fmean(ms["add"]) if ms["add"] else None,
        "add_ms_max": max(ms["add"], default=None),
        "remove_ms_mean": statistics.fmean(ms["remove"]) if ms["remove"] else None,
        "remove_ms_max": max(ms["remove"], default=None),
        "files_max": most,
        "files_end": int(ends[-1]["files"]) if ends else None,
        "tier_peak_mb": None if chunk_mb is None else most * chunk_mb,
    }


def eoom_figures(kills: list[dict]) -> dict:
    """What the EOOM killer knew of its victims (module docstring)."""
    costs = [float(k["relaunch_ms"]) for k in kills if k.get("relaunch_ms") is not None]
    adjs = [float(k["launch_adj"]) for k in kills if "launch_adj" in k]
    return {
        "kills_costed": len(costs),
        "victim_relaunch_ms": statistics.fmean(costs) if costs else None,
        "launch_adj_mean": statistics.fmean(adjs) if adjs else None,
    }


def cleaner_figures(events: list[dict]) -> dict:
    """What the OOM Cleaner's swap-clean did and cost (module docstring)."""
    cleans = [e for e in events if e.get("type") == CLEAN_EVENT]
    hot = [
        e.get("cost") or {}
        for e in events
        if e.get("type") in LAUNCH_EVENTS and e.get("kind") == "hot"
    ]
    ms = [float(e["ms"]) for e in cleans]
    so_ms = [float(c["so_ms"]) for c in hot if "so_ms" in c]
    return {
        "cleans": len(cleans),
        "pages": sum(int(e["pages"]) for e in cleans),
        "kills_avoided": sum(1 for e in cleans if e.get("relieved")),
        "clean_ms_mean": statistics.fmean(ms) if ms else None,
        "so_regenerated": sum(int(c.get("so_regenerated", 0)) for c in hot),
        "so_ms_mean": statistics.fmean(so_ms) if so_ms else None,
    }


def disk_written_mb(t_bytes: tuple[np.ndarray, np.ndarray]) -> float:
    """What the swap disk wrote over the run, MB, from its (t_ms, bytes
    written) samples (metrics.swap_disk_writes)."""
    _, written = t_bytes
    return float(written[-1] - written[0]) / MB


def pswpout_pages(vmstat: Table) -> int:
    """The pages swapped out over the run (last sample minus first)."""
    header, rows = vmstat
    col = header.index("pswpout")
    return int(rows[-1][col]) - int(rows[0][col])


def swam_figures(
    events: list[dict],
    vmstat: Table,
    disk: tuple[np.ndarray, np.ndarray] | None,
    spec: dict | None,
) -> dict | None:
    """The figures above from the run's events, vmstat.csv, the swap disk's
    writes (metrics.swap_disk_writes; None without diskstat.csv) and
    spec.json; None without spec.json."""
    if spec is None:
        return None
    scheme_swam = (spec.get("scheme") or {}).get("swam") or {}
    switches = [e for e in events if e.get("type") == "switch"]
    kills = [e for e in events if e.get("type") == "kill"]
    again = relaunches(events)
    flash_mb = None if disk is None else disk_written_mb(disk)
    zram = bool((spec.get("swap") or {}).get("zram_mb"))
    swapped_mb = pswpout_pages(vmstat) * PAGE_BYTES / MB
    figures: dict = {
        "relaunches": len(again),
        "relaunch_cost_ms": relaunch_cost_ms(again),
        "launch_ms": quantiles([float(e["response_ms"]) for e in switches if e["kind"] == "cold"]),
        "response_ms": quantiles([float(e["response_ms"]) for e in switches]),
        "flash_write_mb": flash_mb,
        "zram_write_mb": max(0.0, swapped_mb - (flash_mb or 0.0)) if zram else None,
    }
    swapd = scheme_swam.get("swapd")
    if swapd or any(e.get("type") in (SWAPFILE_EVENT, END_EVENT) for e in events):
        figures["swapd"] = swapd_figures(events, None if not swapd else float(swapd["chunk_mb"]))
    if scheme_swam.get("eoom") or any("launch_adj" in k for k in kills):
        figures["eoom"] = eoom_figures(kills)
    # an empty table when on
    if scheme_swam.get("cleaner") is not None or any(e.get("type") == CLEAN_EVENT for e in events):
        figures["cleaner"] = cleaner_figures(events)
    floors = {
        WSP_KNOBS[k["path"]]: int(k["value"])
        for k in (spec.get("scheme") or {}).get("knobs") or []
        if k["path"] in WSP_KNOBS and str(k["value"]).strip().isdigit()
    }
    if floors:
        figures["wsp_kb"] = floors
    return figures
