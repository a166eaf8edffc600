"""Per-run figures: parse the raw files of ONE run directory.

The guest writes the files described in docs/guest-interface.md; this module
turns them into the numbers the paper reports (§5, Figs. 11-13, Table 3),
for one run. It never plots and never aggregates over runs (summary.py does).

Definitions (MB is 2**20 bytes throughout, pages are 4 KiB):

- response time: `response_ms` of every `switch` event (a foreground app
  switch, the paper's "response time"); background launches are not counted.
- `switch_kinds`: the switches split by kind - `cold` (the app had no
  process: its first launch, or a relaunch after a kill) and `hot` - each
  with its count, mean response time and share of the summed response time
  of all switches; `hot.swapin_pages` is pswpin over the hot switches'
  windows (from `t_ms - response_ms` to `t_ms`, the cumulative counter
  linearly interpolated between vmstat samples): the swapped-out working
  set a switch back had to read in; `hot.file_refault_pages` likewise
  workingset_refault_file, the page cache it had to read again. Each kind's
  `cost` is the mean of what the app measured of its launches (steps, CPU
  time, run-queue wait, major faults, `blocked_ms`, the rest of the wall
  time, and `outside_ms`, the response time outside the measured launch;
  mean_launch_cost()), empty for a runtime that measured none.
- reclaim throughput: the swap device's write throughput (the paper's
  definition, §2.2.2), from `write_sectors` (512-byte units) in diskstat.csv.
  On a profile that swaps to zram (spec.json `swap.disk` false) every page
  swapped out is written to the zram device: there it is vmstat.csv's
  `pswpout` (4-KiB pages), and diskstat.csv (the swap disk, not swapped
  on) is not read for it. On a zram+flash profile it is the swap disk's,
  the flash tier's (swam.py has both tiers' writes).
  The cumulative counter is linearly interpolated at whole seconds of
  workload time and differenced, giving MB/s for every full 1-s window the
  samples cover. `reclaim_mbps.peak` is the largest window;
  `reclaim_mbps.mean` is the mean over windows in which the device wrote
  anything (idle windows would measure the workload's pauses, not reclaim),
  None when it wrote nothing.
- `anon_growth_peak_mbps`: the largest growth of anonymous memory in use
  (`nr_anon_pages` in vmstat.csv) over a 1-s window, MB/s (windows as for
  reclaim throughput). In a run without memory pressure (the `floor`
  campaign of `pmrtb paper`) it is how fast the apps demand memory, which
  bounds how fast any scheme needs to reclaim.
- `memory_stall_s`: the time some task (`some`) and every task (`full`)
  stalled on memory over the run, in s, from psi.csv's cumulative
  /proc/pressure/memory totals (last sample minus first): what reclaim
  costs the workload in waiting, and what lmkd's PSI triggers fire on.
- vmstat figures: last sample minus first sample; `allocstall` sums every
  `allocstall_<zone>` counter (one per zone type: a direct-reclaim entry).
  `swap_writes_per_anon_freed` is pswpout / pgsteal_anon: near 1 when
  reclaim frees what it writes to swap, above 1 when written pages are
  touched again (or their app killed) before reclaim frees them - writes
  that cost flash and bandwidth for nothing. None when no anon page was
  reclaimed.
- `reclaim_cpu_s`: threads_cpu.json summed by thread family
  (`kswapd0` + `kswapd1` -> `kswapd`, `pmr_unmap/0` -> `pmr_unmap`).
  `reclaim_cpu_us_per_page`: their total over the pages kswapd and direct
  reclaim freed (pgsteal_kswapd + pgsteal_direct), in µs: the reclaim CPU
  time a scheme spends per page it frees, which does not grow with how much
  a repetition had to reclaim as the total does.
- `swap_write_kb`: the swap device's write-request size histogram in KiB and
  its request-weighted mean.
- `pmr`: on a kernel with the PMR series, the deltas of its /proc/vmstat
  event counters (`PMR_EVENTS`) and the victim lists' size (`VICTIM_KEYS`, MB)
  over the run: mean, min, max, last; kshrinkd's rounds and the victim target
  it worked to (`target_mb`, from trace.txt, trace.py). None on a kernel
  without PMR. `victim_series_mb` is the list size over time, for the plot.
- `writeback` and `bulk` (writeback.py, PMR part 2): per-page unmap and
  pageout times from the `mm_vmscan_writeback_time` tracepoint (every scheme
  on a kernel with the series), and PMR's bulk batches from the
  `mm_vmscan_pmr_batch` tracepoint or, without it, the `pmr_batch*` vmstat
  counters (their per-page time is the batch's whole first pass per page
  taken, `first_pass_us_per_page_*`, not an unmap time). None where the
  kernel or the trace has neither.
  `unmap_us_samples` is the per-page unmap time of each 1-MB window of
  kswapd's unmapping (writeback.unmap_window_us_per_page), for the plot.
- `capacity` (capacity.py): the apps' anonymous footprints against the
  guest's RAM and swap, and the fewest kills that make them fit, which no
  scheme that keeps the apps' pages can go below; None without spec.json
  (a run directory written by hand) or without MemTotal and SwapTotal in
  run.json.
- `settled` (settled_state.py): how the run settled after lmkd's last kill
  (its time, the file refault rate after it, the least SwapFree after it),
  and the reclaim work (CPU, pages, swap out) until it and after it.
- `lru_balance` (lru_balance.py): how reclaim balanced the LRU lists: file
  refaults and the share of them activated, pages deactivated, the mean
  active and inactive file lists and file victims.
- `swap_fate` (swap_fate.py): what became of the pages written to swap:
  freed by reclaim, still in the swap cache at the end, or dropped (mapped
  again, or freed by their owner) - the writes that freed no memory.
- `host_cpu` (host_cpu.py): the host's CPU over the workload and over its
  cold switches - the whole host busy, QEMU's vCPU threads and main thread -
  from host_cpu.csv, which the harness writes beside the console, placed in
  time by workload_start_unix(); None without it (runs before it).
- `kswapd_rounds` (kswapd_rounds.py, paper Figs. 5 and 6): kswapd's reclaim
  rounds from the `mm_vmscan_kswapd_round` tracepoint, each split into page
  shrinking and page writeback, and the largest share of a second kswapd
  spent in rounds (`busiest_second_share`: whether it ever fell behind);
  None where the kernel or the trace has none.
  `kswapd_round_list` holds the rounds themselves, for the plots.
- `refaults` (app_refaults.py): each app's refaults, major faults and pages
  reclaimed from its cgroup (app_memcg.csv), split between the time it was
  in front and behind (events.jsonl); None without app_memcg.csv (runs
  before it).
- `lwp` (lwp.py): the goals Acclaim's lightweight prediction gave kswapd
  (the `mm_vmscan_kswapd_lwp_goal` tracepoint); None without them.
  `lwp_goal_list` holds the goals themselves, for the plot.
- `fae_kept_inactive`: the referenced background folios reclaim left
  inactive instead of activating them (Acclaim's foreground-aware eviction;
  vmstat `acclaim_fae_kept_inactive`), None on a kernel without the counter.
- `skew` (skew.py): skew rectification's pageouts of unused anonymous pages
  (events.jsonl) and the swappiness its balance loop set (skew_balance.csv);
  None for a run with neither. `swappiness_series` holds the swappiness per
  period, for the plot.
- `anon_file_ratio` (anon_file.py): the anonymous LRU pages over the file
  LRU pages over the run (vmstat.csv), every scheme; `anon_file_series`
  holds the ratio per sample, for the plot.
- `zram` (zram.py): the zram device's stored data, memory used and
  compression ratio (zram.csv), None without the file (a flash profile).
- `swap_medium`: "flash" or "zram", from spec.json's `swap.disk` ("flash"
  without spec.json).
- `ice` (ice.py): the frame rate, jank and interaction alerts of the apps
  in front and the background apps' periods (ticks.csv), Ice's freezes and
  thaws (events.jsonl), launches after the first round, refaults and
  reclaims; None for a run without ticks.csv rows and without Ice.
- `swam` (swam.py): SWAM's figures, every run with spec.json: the
  relaunches after lmkd's kills and their cost, the launch (cold switch)
  and response times' median and p90, the writes to the flash tier (the
  swap disk, diskstat.csv) and to the zram tier (pswpout less those), and
  what SWAM's swap daemon, EOOM killer and floors did where the scheme has
  them.

A run whose run.json is missing or not `"status": "ok"` is never a result:
`load_run` raises `RunError`. Missing optional files (threads_cpu.json,
swap_write_hist.json, meminfo.csv, threads_cpu.csv) are recorded as None
and named in `missing`.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..guest.host_cpu import HOST_CPU_FILE, host_cpu_figures, read_host_cpu
from ..tables import Table
from .anon_file import anon_file_figures, anon_file_series
from .app_refaults import APP_MEMCG_FILE, AppMemcgError, app_refaults
from .capacity import capacity
from .ice import TICKS_FILE, TicksError, ice_figures
from .kswapd_rounds import KswapdRound, kswapd_rounds, round_figures
from .lru_balance import lru_balance
from .lwp import LwpGoal, lwp_figures, lwp_goals
from .settled_state import settled_state
from .skew import BALANCE_FILE, SkewBalanceError, skew_figures, swappiness_series
from .swam import swam_figures
from .swap_fate import swap_fate
from .trace import Trace, kshrinkd_rounds, read_trace
from .writeback import BULK_COUNTERS, bulk_figures, unmap_window_us_per_page, writeback_figures
from .zram import ZRAM_FILE, ZramError, zram_figures

PAGE_BYTES = 4096
SECTOR_BYTES = 512
MB = 2**20
WINDOW_MS = 1000
VMSTAT_DELTAS = (
    "pgmajfault",
    "pswpout",
    "pswpin",
    "pgscan_kswapd",
    "pgscan_direct",
    "pgsteal_kswapd",
    "pgsteal_direct",
    "pgsteal_anon",
)
# counters vmstat_deltas() gives only where vmstat.csv has them
OPTIONAL_VMSTAT_DELTAS = ("oom_kill", "acclaim_fae_kept_inactive")
OPTIONAL_FILES = (
    "threads_cpu.json",
    "swap_write_hist.json",
    "meminfo.csv",
    "threads_cpu.csv",
    "lmkd.csv",
)
# the victim lists' sizes in /proc/vmstat: one per type since v1's patch 26
# of the series, one for both before
VICTIM_KEYS = ("nr_victim_anon", "nr_victim_file")
ONE_LIST_VICTIM_KEY = "nr_victim"
# pmr_victim_swapin and pmr_victim_freed since v1's patch 27 of the series
PMR_EVENTS = (
    "kshrinkd_wake",
    "pgscan_kshrinkd",
    "pmr_victim_added",
    "pmr_victim_reclaimed",
    "pmr_victim_putback",
    "pmr_victim_swapin",
    "pmr_victim_freed",
    *BULK_COUNTERS,
)


class RunError(UserError):
    """A run directory that cannot be used as a result (failed or incomplete)."""


@dataclass
class RunMetrics:
    """The figures of one run; see the module docstring for definitions."""

    switches: list[dict]
    response_ms: dict[str, float | None]
    response_by_app: dict[str, float]
    switch_kinds: dict
    cold_launches: int
    hot_launches: int
    kills: int
    kills_by_reason: dict[str, int]
    settled: dict
    lru_balance: dict | None
    swap_fate: dict | None
    reclaim_t_s: list[float]
    reclaim_series_mbps: list[float]
    reclaim_mbps: dict[str, float | None]
    anon_growth_peak_mbps: float | None
    memory_stall_s: dict[str, float]
    allocstall: int
    pgmajfault: int
    pswpout_mb: float
    pswpin_mb: float
    pgscan_kswapd: int
    pgscan_direct: int
    pgsteal_kswapd: int
    pgsteal_direct: int
    swap_writes_per_anon_freed: float | None
    reclaim_cpu_s: dict[str, float] | None
    swap_write_kb: dict | None
    workload_s: float
    pmr: dict | None = None
    victim_t_s: list[float] = field(default_factory=list)
    victim_series_mb: list[float] = field(default_factory=list)
    victim_target: tuple[list[float], list[float]] = ([], [])
    writeback: dict | None = None
    bulk: dict | None = None
    unmap_us_samples: list[float] = field(default_factory=list)
    kswapd_rounds: dict | None = None
    kswapd_round_list: list[KswapdRound] = field(default_factory=list)
    host_cpu: dict | None = None
    capacity: dict | None = None
    refaults: dict | None = None
    lwp: dict | None = None
    lwp_goal_list: list[LwpGoal] = field(default_factory=list)
    fae_kept_inactive: int | None = None
    skew: dict | None = None
    swappiness_series: tuple[list[float], list[int]] = ([], [])
    anon_file_ratio: dict | None = None
    anon_file_series: tuple[list[float], list[float]] = ([], [])
    zram: dict | None = None
    swap_medium: str = "flash"
    ice: dict | None = None
    swam: dict | None = None
    trace_overrun: int | None = None
    trace_missing: list[str] = field(default_factory=list)  # events the kernel lacks
    missing: list[str] = field(default_factory=list)

    @property
    def reclaim_cpu_total(self) -> float | None:
        return None if self.reclaim_cpu_s is None else sum(self.reclaim_cpu_s.values())

    @property
    def reclaim_cpu_us_per_page(self) -> float | None:
        reclaimed = self.pgsteal_kswapd + self.pgsteal_direct
        total = self.reclaim_cpu_total
        return None if total is None or not reclaimed else total * 1e6 / reclaimed


def load_run(run_dir: Path) -> RunMetrics:
    """Parse one run directory; raise RunError if it is not a usable result."""
    run = read_run_json(run_dir)
    events = read_events(run_dir / "events.jsonl")
    switch_events = [e for e in events if e["type"] == "switch"]
    switches = [{k: e[k] for k in ("app", "kind", "response_ms", "round")} for e in switch_events]
    kills = [e for e in events if e["type"] == "kill"]
    kinds = Counter(s["kind"] for s in switches)
    vmstat = read_table(run_dir / "vmstat.csv")
    vm = vmstat_deltas(vmstat, run_dir / "vmstat.csv")
    spec = _read_optional_json(run_dir / "spec.json")
    medium = swap_medium(spec)
    # the swap disk's writes: the reclaim throughput on flash, SWAM's flash
    # tier (swam.py) where a zram run has them
    diskstat = run_dir / "diskstat.csv"
    disk = (
        swap_disk_writes(diskstat, run["swap_dev"])
        if medium == "flash" or (spec is not None and diskstat.exists())
        else None
    )
    if disk is not None and medium == "flash":
        t_s, mbps = per_window_mbps(*disk)
    else:
        t_s, mbps = zram_throughput(vmstat)
    threads = _read_optional_json(run_dir / "threads_cpu.json")
    hist = _read_optional_json(run_dir / "swap_write_hist.json")
    try:
        trace = read_trace(run_dir / "trace.txt")
    except ValueError as e:
        raise RunError(f"{run_dir / 'trace.txt'}: {e}") from None
    meminfo = _read_optional_table(run_dir / "meminfo.csv")
    threads_cpu = _read_optional_table(run_dir / "threads_cpu.csv")
    lmkd = _read_optional_table(run_dir / "lmkd.csv", min_rows=0)  # a row per wakeup
    victim_t_s, victim_mb = victim_series(vmstat)
    rounds = kswapd_rounds(trace)
    goals = lwp_goals(trace)
    swappiness = read_swappiness(run_dir / BALANCE_FILE)
    anon_file = anon_file_series(vmstat)
    refaults = read_app_refaults(run_dir / APP_MEMCG_FILE, events)
    host = (
        host_cpu_figures(
            read_host_cpu(run_dir / HOST_CPU_FILE),
            workload_start_unix(run_dir, run, events),
            float(run["workload_s"]),
            switch_events,
        )
        if "started_at" in run and events
        else None
    )
    return RunMetrics(
        switches=switches,
        response_ms=response_stats([s["response_ms"] for s in switches]),
        response_by_app=response_by_app(switches),
        switch_kinds=switch_kinds(switch_events, vmstat),
        cold_launches=kinds["cold"],
        hot_launches=kinds["hot"],
        kills=len(kills),
        kills_by_reason=dict(Counter(k["reason"] for k in kills)),
        settled=settled_state(kills, vmstat, meminfo, threads_cpu, lmkd),
        lru_balance=lru_balance(vmstat),
        swap_fate=swap_fate(vmstat),
        reclaim_t_s=t_s,
        reclaim_series_mbps=mbps,
        reclaim_mbps=throughput_stats(mbps),
        anon_growth_peak_mbps=anon_growth_peak_mbps(vmstat),
        memory_stall_s=memory_stall(run_dir / "psi.csv"),
        allocstall=vm["allocstall"],
        pgmajfault=vm["pgmajfault"],
        pswpout_mb=vm["pswpout"] * PAGE_BYTES / MB,
        pswpin_mb=vm["pswpin"] * PAGE_BYTES / MB,
        pgscan_kswapd=vm["pgscan_kswapd"],
        pgscan_direct=vm["pgscan_direct"],
        pgsteal_kswapd=vm["pgsteal_kswapd"],
        pgsteal_direct=vm["pgsteal_direct"],
        swap_writes_per_anon_freed=(
            vm["pswpout"] / vm["pgsteal_anon"] if vm["pgsteal_anon"] else None
        ),
        reclaim_cpu_s=None if threads is None else thread_families(threads),
        swap_write_kb=None if hist is None else swap_write_sizes(hist["bytes"]),
        workload_s=float(run["workload_s"]),
        pmr=pmr_figures(vmstat, trace),
        victim_t_s=victim_t_s,
        victim_series_mb=victim_mb,
        victim_target=victim_targets(trace) if trace else ([], []),
        writeback=writeback_figures(trace),
        bulk=bulk_figures(trace, vmstat),
        unmap_us_samples=unmap_window_us_per_page(trace),
        kswapd_rounds=round_figures(rounds),
        kswapd_round_list=rounds,
        host_cpu=host,
        capacity=None if spec is None else capacity(spec, run, vm.get("oom_kill")),
        refaults=refaults,
        lwp=lwp_figures(goals),
        lwp_goal_list=goals,
        fae_kept_inactive=vm.get("acclaim_fae_kept_inactive"),
        skew=skew_figures(events, swappiness[1]),
        swappiness_series=swappiness,
        anon_file_ratio=anon_file_figures(anon_file[1]),
        anon_file_series=anon_file,
        zram=read_zram(run_dir / ZRAM_FILE),
        swap_medium=medium,
        ice=read_ice(run_dir / TICKS_FILE, events, vmstat, spec, refaults),
        swam=swam_figures(events, vmstat, disk, spec),
        trace_overrun=trace.overrun if trace else None,
        trace_missing=trace.missing if trace else [],
        missing=[name for name in OPTIONAL_FILES if not (run_dir / name).exists()],
    )


def read_app_refaults(path: Path, events: list[dict]) -> dict | None:
    """app_refaults() of the run's app_memcg.csv, None without the file."""
    if not path.exists():
        return None
    try:
        return app_refaults(read_table(path, min_rows=0), events)
    except AppMemcgError as e:
        raise RunError(f"{path} {e}") from None


def read_ice(
    path: Path, events: list[dict], vmstat: Table, spec: dict | None, refaults: dict | None
) -> dict | None:
    """ice_figures() of the run, with its ticks.csv where it has one."""
    try:
        return ice_figures(_read_optional_table(path, min_rows=0), events, vmstat, spec, refaults)
    except TicksError as e:
        raise RunError(f"{path} {e}") from None


def read_swappiness(path: Path) -> tuple[list[float], list[int]]:
    """swappiness_series() of the run's skew_balance.csv, empty without the file."""
    try:
        return swappiness_series(_read_optional_table(path, min_rows=0))
    except SkewBalanceError as e:
        raise RunError(f"{path} {e}") from None


def read_zram(path: Path) -> dict | None:
    """zram_figures() of the run's zram.csv, None without the file."""
    try:
        return zram_figures(_read_optional_table(path, min_rows=0))
    except ZramError as e:
        raise RunError(f"{path} {e}") from None


def swap_medium(spec: dict | None) -> str:
    """ "zram" when the run's spec.json swaps on zram alone (`swap.disk`
    false), else "flash" (also without spec.json)."""
    swap = (spec or {}).get("swap") or {}
    return "flash" if swap.get("disk", True) else "zram"


# how far events.jsonl's time may be from started_at's and still be trusted
START_AGREEMENT_S = 3.0


def workload_start_unix(run_dir: Path, run: dict, events: list[dict]) -> float:
    """The workload's start on the host's clock, in Unix seconds.

    run.json's `started_at` is the guest's clock in whole seconds, and the
    guest set that clock from the RTC, also in whole seconds: up to 2 s
    early (0.3-1.4 s in twelve runs measured on 2026-11-27). The run directory is the
    host's, so events.jsonl's mtime is the host's time of the last event,
    whose `t_ms` is on the workload's clock: their difference is the start.
    A run directory copied without its times gives another mtime; then,
    or whenever the two disagree by more than START_AGREEMENT_S,
    `started_at` it is."""
    said = datetime.fromisoformat(run["started_at"].replace("Z", "+00:00")).timestamp()
    try:
        mtime = (run_dir / "events.jsonl").stat().st_mtime
    except OSError:
        return said
    start = mtime - float(events[-1]["t_ms"]) / 1000
    return start if abs(start - said) <= START_AGREEMENT_S else said


def read_run_json(run_dir: Path) -> dict:
    path = run_dir / "run.json"
    try:
        run = json.loads(path.read_text())
    except FileNotFoundError:
        raise RunError(f"{path} is missing: the guest did not finish this run") from None
    except json.JSONDecodeError as e:
        raise RunError(f"{path} is not valid JSON ({e})") from None
    if run.get("status") != "ok":
        raise RunError(f"{run_dir.name}: status {run.get('status')!r}: {run.get('error')}")
    return run


def _require(path: Path) -> Path:
    if not path.exists():
        raise RunError(f"{path} is missing although run.json says the run is ok")
    return path


def read_events(path: Path) -> list[dict]:
    lines = _require(path).read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _read_optional_json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def _read_optional_table(path: Path, min_rows: int = 2) -> Table | None:
    return read_table(path, min_rows) if path.exists() else None


def response_stats(values: list[float]) -> dict[str, float | None]:
    """mean, median and 95th percentile (linear interpolation) of response times."""
    if not values:
        return {"mean": None, "p50": None, "p95": None}
    arr = np.asarray(values, dtype=float)
    return {
        "mean": float(arr.mean()),
        "p50": float(np.percentile(arr, 50)),
        "p95": float(np.percentile(arr, 95)),
    }


def response_by_app(switches: list[dict]) -> dict[str, float]:
    """Mean response time of the switches to each app."""
    by_app: dict[str, list[float]] = {}
    for s in switches:
        by_app.setdefault(s["app"], []).append(s["response_ms"])
    return {app: float(np.mean(v)) for app, v in sorted(by_app.items())}


def switch_kinds(switch_events: list[dict], vmstat: tuple[list[str], list[list[str]]]) -> dict:
    """Cold and hot switches apart: count, mean response time, share of the
    summed response time; the pages swapped in and the file pages refaulted
    during the hot ones; and where the launches' time went (`cost`)."""
    header, rows = vmstat
    t_ms = np.array([float(r[0]) for r in rows])
    total = sum(e["response_ms"] for e in switch_events)
    kinds: dict = {}
    for kind in ("cold", "hot"):
        of_kind = [e for e in switch_events if e["kind"] == kind]
        times = [e["response_ms"] for e in of_kind]
        kinds[kind] = {
            "switches": len(times),
            "mean_ms": float(np.mean(times)) if times else None,
            "share": sum(times) / total if total else None,
            "cost": mean_launch_cost([e for e in of_kind if "cost" in e]),
        }
    hot = [e for e in switch_events if e["kind"] == "hot"]
    ends = np.array([float(e["t_ms"]) for e in hot])
    starts = ends - np.array([float(e["response_ms"]) for e in hot])
    for counter, name in (
        ("pswpin", "swapin_pages"),
        ("workingset_refault_file", "file_refault_pages"),
    ):
        if counter not in header:
            kinds["hot"][name] = None
            continue
        values = np.array([float(r[header.index(counter)]) for r in rows])
        during = np.interp(ends, t_ms, values) - np.interp(starts, t_ms, values)
        kinds["hot"][name] = round(float(during.sum()))
    return kinds


def mean_launch_cost(switches: list[dict]) -> dict[str, float]:
    """The mean of each figure the app measured of its launches (the `cost`
    of a switch event: steps' wall time, CPU time, run-queue wait, major
    faults; docs/guest-interface.md); `blocked_ms`, the wall time left after
    CPU and run-queue time: sleeping on I/O, on a lock, or throttled;
    `fill_blocked_ms`, the same of a cold launch's heap fill threads, summed
    over them; and
    `outside_ms`, the response time outside the measured launch: spawning
    the processes of a cold launch, the protocol, and any attempt before
    the one measured (a hot launch whose app died, a cold one killed during
    its launch). Empty for switches without costs (a runtime before them),
    so that runs with and without costs summarise alike."""
    costs = [e["cost"] for e in switches]
    names = sorted({name for c in costs for name in c})
    mean = {name: float(np.mean([c[name] for c in costs if name in c])) for name in names}
    for prefix in ("", "fill_"):
        wall, *spent = (f"{prefix}{k}" for k in ("wall_ms", "user_ms", "sys_ms", "runq_ms"))
        if with_split := [c for c in costs if all(k in c for k in (wall, *spent))]:
            mean[f"{prefix}blocked_ms"] = float(
                np.mean([c[wall] - sum(c[k] for k in spent) for c in with_split])
            )
    if measured := [e for e in switches if "wall_ms" in e["cost"]]:
        mean["outside_ms"] = float(
            np.mean([e["response_ms"] - e["cost"]["wall_ms"] for e in measured])
        )
    return mean


def memory_stall(path: Path) -> dict[str, float]:
    """PSI memory stall seconds over the run, `some` and `full`."""
    header, rows = read_table(path)
    totals = {kind: header.index(f"{kind}_total_us") for kind in ("some", "full")}
    return {kind: (int(rows[-1][col]) - int(rows[0][col])) / 1e6 for kind, col in totals.items()}


def read_table(path: Path, min_rows: int = 2) -> Table:
    """A CSV file's header and rows; a sampled file needs two rows at least."""
    with open(_require(path), newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows or len(rows) - 1 < min_rows:
        raise RunError(
            f"{path} has {max(len(rows) - 1, 0)} samples; at least {min_rows} are needed"
        )
    return rows[0], rows[1:]


def vmstat_deltas(vmstat: Table, path: Path) -> dict[str, int]:
    """Last minus first sample of the counters we report, and of allocstall_*,
    from vmstat.csv's table (`path` names the file in an error); those of
    OPTIONAL_VMSTAT_DELTAS only where the table has them."""
    header, rows = vmstat
    first = dict(zip(header, rows[0]))
    last = dict(zip(header, rows[-1]))
    allocstall_keys = [k for k in header if k.startswith("allocstall_")]
    missing = [k for k in VMSTAT_DELTAS if k not in header]
    missing += [] if allocstall_keys else ["allocstall_*"]
    if missing:
        raise RunError(f"{path} lacks the counters {', '.join(missing)}")
    deltas = {k: int(last[k]) - int(first[k]) for k in VMSTAT_DELTAS}
    deltas["allocstall"] = sum(int(last[k]) - int(first[k]) for k in allocstall_keys)
    deltas |= {k: int(last[k]) - int(first[k]) for k in OPTIONAL_VMSTAT_DELTAS if k in last}
    return deltas


def victim_pages(vmstat: Table) -> list[int] | None:
    """Pages on the victim lists at each row of vmstat.csv's table, or None
    on a kernel without PMR: `nr_victim` where the series had one list
    (before v1's patch 26), else the sum of `VICTIM_KEYS`, one list per type."""
    header, rows = vmstat
    keys = [ONE_LIST_VICTIM_KEY] if ONE_LIST_VICTIM_KEY in header else list(VICTIM_KEYS)
    if not all(k in header for k in keys):
        return None
    cols = [header.index(k) for k in keys]
    return [sum(int(r[c]) for c in cols) for r in rows]


def victim_series(vmstat: Table) -> tuple[list[float], list[float]]:
    """The victim lists' size over the run, from vmstat.csv's table: (s since
    workload start, MB); empty on a kernel without PMR."""
    header, rows = vmstat
    pages = victim_pages(vmstat)
    if pages is None:
        return [], []
    t = header.index("t_ms")
    return [int(r[t]) / 1000 for r in rows], [n * PAGE_BYTES / MB for n in pages]


def victim_targets(trace: Trace) -> tuple[list[float], list[float]]:
    """The target kshrinkd worked to at each of its rounds: (s, MB). It moves
    with the watermarks (kswapd's goal includes a watermark boost)."""
    rounds = trace.named("mm_vmscan_kshrinkd_round")
    return ([e.t_s for e in rounds], [int(e.fields["target"]) * PAGE_BYTES / MB for e in rounds])


def pmr_figures(vmstat: Table, trace: Trace | None) -> dict | None:
    """PMR's counters over the run, or None if the kernel has no PMR.

    `target_mb` is the victim target kshrinkd worked to and `kshrinkd_fill`
    what its rounds added against their batch, median and largest (from
    its round tracepoint; None if it never ran or the run was not
    traced)."""
    header, rows = vmstat
    pages = victim_pages(vmstat)
    if pages is None:
        return None
    col = {k: header.index(k) for k in header}
    events = {k: int(rows[-1][col[k]]) - int(rows[0][col[k]]) for k in PMR_EVENTS if k in col}
    victim_mb = np.asarray(pages) * PAGE_BYTES / MB
    rounds = kshrinkd_rounds(trace) if trace else None
    return {
        **events,
        "nr_victim_mb": {
            "mean": float(victim_mb.mean()),
            "min": float(victim_mb.min()),
            "max": float(victim_mb.max()),
            "last": float(victim_mb[-1]),
        },
        "kshrinkd_rounds": rounds["rounds"] if rounds else 0,
        "target_mb": rounds["target_pages"] * PAGE_BYTES / MB if rounds else None,
        "kshrinkd_fill": rounds["fill"] if rounds else None,
    }


def reclaim_throughput(path: Path, swap_dev: str) -> tuple[list[float], list[float]]:
    """Swap-device write MB/s per full 1-s window of workload time.

    Returns (window start times in s, MB/s). Windows are aligned to whole
    seconds since the workload started so runs and schemes line up."""
    return per_window_mbps(*swap_disk_writes(path, swap_dev))


def swap_disk_writes(path: Path, swap_dev: str) -> tuple[np.ndarray, np.ndarray]:
    """The swap disk's samples in diskstat.csv: (t_ms, bytes written so far)."""
    header, rows = read_table(path)
    col = {name: header.index(name) for name in ("t_ms", "dev", "write_sectors")}
    devs = {row[col["dev"]] for row in rows}
    if devs != {swap_dev}:
        raise RunError(
            f"{path} has devices {sorted(devs)}; run.json says the swap device is {swap_dev}"
        )
    t_ms = np.array([float(r[col["t_ms"]]) for r in rows])
    written = np.array([float(r[col["write_sectors"]]) for r in rows]) * SECTOR_BYTES
    return t_ms, written


def zram_throughput(vmstat: Table) -> tuple[list[float], list[float]]:
    """reclaim_throughput() of a run that swaps to zram alone, from
    vmstat.csv's table: the pages swapped out (`pswpout`), every one of
    them a write to the zram device."""
    header, rows = vmstat
    t, out = header.index("t_ms"), header.index("pswpout")
    t_ms = np.array([float(r[t]) for r in rows])
    written = np.array([float(r[out]) for r in rows]) * PAGE_BYTES
    return per_window_mbps(t_ms, written)


def per_window_mbps(t_ms: np.ndarray, byte_count: np.ndarray) -> tuple[list[float], list[float]]:
    """How much byte_count (sampled at t_ms) grew in each full 1-s window of
    workload time, in MB/s, linearly interpolated at whole seconds: (window
    start times in s, MB/s)."""
    first = int(np.ceil(t_ms[0] / WINDOW_MS))
    last = int(np.floor(t_ms[-1] / WINDOW_MS))
    edges_ms = np.arange(first, last + 1) * WINDOW_MS
    at_edges = np.interp(edges_ms, t_ms, byte_count)
    mbps = np.diff(at_edges) / MB / (WINDOW_MS / 1000)
    return [float(t) for t in edges_ms[:-1] / 1000], [float(v) for v in mbps]


def anon_growth_peak_mbps(vmstat: Table) -> float | None:
    """The fastest 1-s growth of anonymous memory (`nr_anon_pages`), MB/s.
    Without memory pressure, how fast the apps demand memory."""
    header, rows = vmstat
    if "nr_anon_pages" not in header or len(rows) < 2:
        return None
    t, anon = header.index("t_ms"), header.index("nr_anon_pages")
    _, mbps = per_window_mbps(
        np.array([float(r[t]) for r in rows]), np.array([float(r[anon]) for r in rows]) * PAGE_BYTES
    )
    return max(mbps) if mbps else None


def throughput_stats(mbps: list[float]) -> dict[str, float | None]:
    active = [v for v in mbps if v > 0]
    return {"mean": float(np.mean(active)) if active else None, "peak": max(mbps) if mbps else None}


def thread_family(name: str) -> str:
    """kswapd0 -> kswapd, pmr_unmap/1 -> pmr_unmap: drop a trailing node/CPU number."""
    return re.sub(r"[/:_-]?\d+(?:[/:_-]\d+)*$", "", name) or name


def thread_families(cpu_s: dict[str, float]) -> dict[str, float]:
    families: dict[str, float] = {}
    for name, seconds in cpu_s.items():
        family = thread_family(name)
        families[family] = families.get(family, 0.0) + float(seconds)
    return dict(sorted(families.items()))


def size_kb_label(size_bytes: int) -> str:
    """4096 -> "4", 1536 -> "1.5": the KiB key used in histograms."""
    return format(size_bytes / 1024, "g")


def swap_write_sizes(hist_bytes: dict[str, int]) -> dict:
    """{"mean": request-weighted mean KiB or None, "hist": {size_kb: count}}."""
    sizes = sorted((int(b), int(n)) for b, n in hist_bytes.items())
    requests = sum(n for _, n in sizes)
    mean = sum(b * n for b, n in sizes) / requests / 1024 if requests else None
    return {"mean": mean, "hist": {size_kb_label(b): n for b, n in sizes}}
