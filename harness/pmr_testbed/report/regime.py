"""The regime report: does the emulated phone, on the original kernel, run
in the regime the PMR paper's phones run in? There reclaim cannot keep up
with the apps' demand, memory pressure persists through the workload, and
the apps lmkd kills come back cold when the user switches to them again
(paper §2-§3); PMR's gains (§5) follow from that regime, so a testbed
outside it cannot show them. regime.json and the report's Regime section
answer it from the `original` scheme's runs only.

DIR is a `pmrtb paper` output (original's runs, the fio bandwidth and
`max_rate` from main/, the demand from floor/ when the mode ran it, and
under `devices` the other phone's peak_over_fio from devices/) or one
campaign's results directory (`pmrtb run`: campaign.json and
runs/<scheme>-r<rep>/). Each check has a value, a range (lo and hi
inclusive, None where open) and passes only when its value is in range; a
check whose inputs are absent has no value, fails, and says in `missing`
what it needs. A median over runs is over original's ok runs.

- `peak_over_fio`: the median of reclaim_mbps.peak (the swap device's
  busiest 1-s window of writes, metrics.py) over the swap disk's fio write
  bandwidth in the guest (campaign.json `swap_bandwidth.write_mbps`,
  swap_bandwidth.py). Its range is the profile's (`[regime] peak_over_fio
  = [lo, hi]` in profiles/<name>.toml); without one the check fails.
- `reclaim_limited` (the paper's Fig. 4a method): the peak reclaim under a
  max-rate allocator (campaign.json `max_rate.reclaim_peak_mbps`,
  max_rate.py) over the median of original's reclaim peaks: about 1 when
  the workload already drives reclaim as fast as it goes. It passes when
  that is at most RECLAIM_LIMITED_MAX and kswapd's busiest second while
  the apps switch takes at least KSWAPD_BUSY_MIN_CPU of a CPU: the largest
  1-s growth of the kswapd threads' summed CPU seconds (threads_cpu.csv,
  columns named kswapd*, interpolated at whole seconds as metrics.py does
  for its counters) over the windows from the `switching` phase on (the
  whole run without that phase event), median over runs. Reported beside
  it, judging nothing: the same for kswapd's CPU seconds plus the seconds
  it waited for a CPU (threads_wait.csv), its most runnable second, and
  both under the max-rate allocator: on the guest's two vCPUs the apps'
  threads can hold kswapd under a CPU when it has work for a whole one.
- `demand_over_reclaim`: how fast the apps demand memory without pressure
  (the floor campaign's original runs on pixel6pro-roomy: the largest
  anon_growth_peak_mbps of its runs) over main's median reclaim peak, each
  times its campaign's time_scale (MB per second of the phone's clock).
- `sustained_kills`: lmkd's kills (every `kill` event of events.jsonl, as
  metrics.py counts them) in the second half of the workload over those in
  its first, the workload running from 0 to its last event's t_ms; a run
  without a kill in its first half counts as 0 (no pressure there to
  persist). It passes when the median over runs of that ratio is at least
  SUSTAINED_MIN_RATIO and the median kill rate scaled to 5 minutes is in
  KILLS_PER_5MIN_RANGE. Time mapping: the scenario's dwell and launch gap
  times are the phone's, and the campaign ran them at its time_scale
  (scenarios.Scenario.time_scale, campaign.json; 1 without one), so a
  guest second is 1 / time_scale of the phone's.
- `relaunch_share`: over original's runs pooled, relaunches / (switches -
  first launches): an app's first switch in a run is its first launch, a
  later switch of kind `cold` a relaunch (lmkd killed the app meanwhile).
- `cold_over_warm`: over original's runs pooled, the mean response time of
  the relaunches (of every cold switch when there is none; `inputs.cold`
  says which) over that of the hot switches. Its inputs say on how many
  CPUs those cold launches filled their heaps (`cold_fill_cpus`, the fill
  threads' CPU time over the heap step's wall time) and the floor's cold
  launches, without pressure, theirs (`floor_fill_cpus`): on the guest's
  two vCPUs a relaunch shares them with kswapd, lmkd and the other apps.

On a campaign whose profile swaps to zram (campaign.json `guest.swap`),
`peak_over_fio` and `reclaim_limited` are not applicable: they weigh
writes to the swap disk, which such a profile does not swap on; their
`missing` starts with "n/a".

`host` gives the guest's speeds that day (campaign.json's dilation and
`time_scale`): memory-bound work (heap fills, reclaim) follows the
host's memory speed, which moves from day to day, and the checks with it.

Reported without a range (`reported`): `kswapd_shrink_share`, the median
over runs of kswapd_rounds.shrink_share (page shrinking's share of kswapd's
round time, kswapd_rounds.py), and `nr_reclaimed_over_nr_to_reclaim`, the
median over the kswapd rounds of all runs of nr_reclaimed / nr_to_reclaim;
None where the runs traced no rounds.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..analysis.metrics import MB, RunError, per_window_mbps, read_events, read_table
from ..config import profiles
from ..errors import UserError
from .summary import BASELINE, Run, load_campaign, load_runs

REGIME_FILE = "regime.json"
CHECKS = (
    "peak_over_fio",
    "reclaim_limited",
    "demand_over_reclaim",
    "sustained_kills",
    "relaunch_share",
    "cold_over_warm",
)

# The paper's figures (the original kernel on the phones) and the ranges
# the checks allow around them.
# Figs. 3a, 4b (§3.1): the Pixel 6 Pro's peak reclaim stays at or under 150
# MB/s against fio's ~1000 MB/s; the Pixel 5's is about a third of its fio
# bandwidth. The ranges are the profiles' own ([regime] peak_over_fio).
PAPER_PEAK_OVER_FIO = {
    "pixel6pro": "≤150 of ~1000 MB/s (Figs. 3a, 4b)",
    "pixel5": "~0.33 (Figs. 3a, 4b)",
}
# Fig. 4a (§3.1.1): memtester raises the Pixel 6 Pro's peak reclaim only
# 8.3% over app switching: reclaim itself is the bottleneck, kswapd busy.
PAPER_MAX_RATE_GAIN = 0.083
RECLAIM_LIMITED_MAX = 1.10
KSWAPD_BUSY_MIN_CPU = 0.9
# §3.1: the apps allocate faster than reclaim frees memory.
DEMAND_OVER_RECLAIM_MIN = 1.5
# Fig. 2a (§2.2.1): 26 lmkd kills in 5 minutes of app switching on the
# Pixel 6 Pro; the check allows half to twice that, and the second half of
# the workload must keep at least half the first half's kills.
PAPER_KILLS_PER_5MIN = 26
KILLS_PER_5MIN_RANGE = (13.0, 52.0)
SUSTAINED_MIN_RATIO = 0.5
RATE_SPAN_S = 300.0
# §5.2: -82% kills give -43.6% response time only if about half of the
# original kernel's switches after the first launches are relaunches.
RELAUNCH_SHARE_RANGE = (0.30, 0.55)
# Fig. 2b (§2.2.1): a relaunch takes 3.1x a warm (hot) switch.
PAPER_COLD_OVER_WARM = 3.1
COLD_OVER_WARM_RANGE = (2.5, 4.0)
# Fig. 5 (§3.2.1): page shrinking is 54.8% of a kswapd round on the original path.
PAPER_SHRINK_SHARE = 0.548
# Fig. 6 (§3.2.2): a round reclaims far fewer pages than nr_to_reclaim.
PAPER_RECLAIMED_OVER_GOAL = "far below 1 (Fig. 6)"

# {scale}: the campaign's time_scale (scenarios.Scenario.time_scale)
TIME_MAPPING = (
    "1 guest s = 1 / {scale:.3g} phone s: the scenario's dwell and launch gap times "
    "are phone times, which the campaign ran at time_scale {scale:.3g} (its memory "
    "speed over the scenario's ref_ns_per_page; 1 without one)"
)
NO_RUNS = f"no ok {BASELINE} run: the regime is computed from {BASELINE}'s runs only"
NO_FLOOR = "needs the floor campaign (pmrtb paper's floor/, or a roomy campaign in DIR/floor)"
NO_FIO = (
    "needs the swap disk's fio bandwidth (campaign.json swap_bandwidth, measured by "
    "pmrtb paper's main campaign)"
)
NO_MAX_RATE = (
    "needs the max-rate allocator's peak reclaim (campaign.json max_rate, measured "
    "at the end of pmrtb paper's main campaign)"
)
NO_WRITES = f"{BASELINE}'s runs wrote nothing to swap (no reclaim peak)"
NOT_ON_DISK = "n/a: profile {profile} swaps to {swap}; the check weighs writes to the swap disk"


@dataclass(frozen=True)
class OriginalRun:
    """What the checks need of one ok run of the original scheme."""

    rep: int
    reclaim_peak_mbps: float | None
    anon_growth_peak_mbps: float | None
    kswapd_shrink_share: float | None
    round_ratios: list[float]  # nr_reclaimed / nr_to_reclaim per kswapd round
    kswapd_busiest_cpu: float | None  # None without threads_cpu.csv's kswapd columns
    events: list[dict]
    # on a CPU or waiting for one, in the busiest such second: None without
    # threads_wait.csv's kswapd columns
    kswapd_busiest_runnable: float | None = None


@dataclass(frozen=True)
class CampaignInputs:
    """A campaign's original runs and its campaign-wide measurements."""

    dir: Path
    profile: str
    swap_bandwidth: dict | None
    max_rate: dict | None
    runs: list[OriginalRun]
    swap: str = "flash"  # campaign.json guest.swap: the swap medium
    # the guest's speeds that day (host_speeds()): the regime moves with them
    host: dict | None = None

    @property
    def not_on_disk(self) -> str | None:
        """Why the swap-disk checks do not apply, None when they do."""
        if self.swap == "flash":
            return None
        return NOT_ON_DISK.format(profile=self.profile, swap=self.swap)


# ---- the checks: pure functions over plain numbers and lists ---------------


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(statistics.median(present)) if present else None


def _check(
    name: str,
    value: float | None,
    lo: float | None,
    hi: float | None,
    paper: str,
    inputs: dict,
    missing: str | None = None,
    also: bool = True,
) -> dict:
    """A check's entry: it passes when nothing is missing, the value is in
    [lo, hi] and `also` (a second condition) holds."""
    within = value is not None and (lo is None or value >= lo) and (hi is None or value <= hi)
    if value is None and missing is None:
        missing = "no value"
    return {
        "name": name,
        "value": value,
        "lo": lo,
        "hi": hi,
        "pass": bool(missing is None and within and also),
        "paper": paper,
        "inputs": inputs,
        "missing": missing,
    }


def peak_over_fio(
    peaks: list[float | None],
    fio_mbps: float | None,
    span: tuple[float, float] | None,
    paper: str,
    fio_missing: str = NO_FIO,
    not_applicable: str | None = None,
) -> dict:
    """Median reclaim peak over the fio write bandwidth; `span` the profile's
    range; no value, and `not_applicable` as what is missing, when given."""
    median = _median(peaks)
    inputs = {
        "reclaim_peak_mbps": peaks,
        "median_reclaim_peak_mbps": median,
        "fio_write_mbps": fio_mbps,
    }
    lo, hi = span if span else (None, None)
    if not_applicable:
        return _check("peak_over_fio", None, lo, hi, paper, inputs, not_applicable)
    if not peaks:
        return _check("peak_over_fio", None, lo, hi, paper, inputs, NO_RUNS)
    if median is None:
        return _check("peak_over_fio", None, lo, hi, paper, inputs, NO_WRITES)
    if not fio_mbps:
        return _check("peak_over_fio", None, lo, hi, paper, inputs, fio_missing)
    value = median / fio_mbps
    return _check(
        "peak_over_fio", value, lo, hi, paper, inputs, None if span else "no range for this profile"
    )


def reclaim_limited(
    max_rate: dict | None,
    peaks: list[float | None],
    kswapd_busiest: list[float | None],
    not_applicable: str | None = None,
    kswapd_runnable: list[float | None] | None = None,
) -> dict:
    """The max-rate allocator's peak over original's median peak, and
    kswapd's busiest second while the apps switch (median over runs); no
    value, and `not_applicable` as what is missing, when given.
    `kswapd_runnable`, each run's busiest second of kswapd on a CPU or
    waiting for one, is reported beside them and judges nothing: a kswapd
    that is runnable all second but on a CPU for less was held back by
    other threads on the guest's CPUs, not short of work."""
    paper = (
        f"the max-rate allocator raises peak reclaim only "
        f"{PAPER_MAX_RATE_GAIN:.1%}; kswapd busy (Fig. 4a)"
    )
    median_peak = _median(peaks)
    busiest = _median(kswapd_busiest)
    max_peak = (max_rate or {}).get("reclaim_peak_mbps")
    inputs = {
        "max_rate_reclaim_peak_mbps": max_peak,
        "reclaim_peak_mbps": peaks,
        "median_reclaim_peak_mbps": median_peak,
        "kswapd_busiest_cpu": kswapd_busiest,
        "median_kswapd_busiest_cpu": busiest,
        "kswapd_busy_min_cpu": KSWAPD_BUSY_MIN_CPU,
        "max_rate_kswapd_busiest_cpu": (max_rate or {}).get("kswapd_busiest_cpu"),
        "kswapd_busiest_runnable": kswapd_runnable or [],
        "median_kswapd_busiest_runnable": _median(kswapd_runnable or []),
        "max_rate_kswapd_busiest_runnable": (max_rate or {}).get("kswapd_busiest_runnable"),
    }
    missing = None
    if not_applicable:
        missing = not_applicable
    elif not peaks:
        missing = NO_RUNS
    elif max_rate is None:
        missing = NO_MAX_RATE
    elif max_rate.get("error"):
        missing = f"the max-rate measurement failed: {max_rate['error']}"
    elif max_peak is None:
        missing = NO_MAX_RATE
    elif not median_peak:
        missing = NO_WRITES
    value = (
        max_peak / median_peak if missing is None and max_peak is not None and median_peak else None
    )
    if missing is None and busiest is None:
        missing = (
            f"needs threads_cpu.csv with kswapd's CPU time in {BASELINE}'s runs "
            "(kswapd's busiest second)"
        )
    return _check(
        "reclaim_limited",
        value,
        None,
        RECLAIM_LIMITED_MAX,
        paper,
        inputs,
        missing,
        also=busiest is not None and busiest >= KSWAPD_BUSY_MIN_CPU,
    )


def demand_over_reclaim(
    floor_demand: list[float | None] | None,
    peaks: list[float | None],
    floor_missing: str = NO_FLOOR,
    time_scales: tuple[float, float] = (1.0, 1.0),
) -> dict:
    """The apps' fastest second of anon growth without pressure (the
    floor's runs, the largest) over main's median reclaim peak, both on the
    phone's clock: `time_scales` are the floor's and main's time_scale
    (guest MB/s times time_scale). `floor_demand` is None without a floor
    campaign."""
    paper = "the apps allocate faster than reclaim frees (§3.1)"
    demand = max((v for v in floor_demand or [] if v is not None), default=None)
    median_peak = _median(peaks)
    inputs = {
        "floor_anon_growth_peak_mbps": floor_demand,
        "demand_mbps": demand,
        "reclaim_peak_mbps": peaks,
        "median_reclaim_peak_mbps": median_peak,
        "time_scales": {"floor": time_scales[0], "main": time_scales[1]},
    }
    missing = None
    if not peaks:
        missing = NO_RUNS
    elif floor_demand is None:
        missing = floor_missing
    elif not floor_demand:
        missing = f"the floor campaign has no ok {BASELINE} run"
    elif demand is None:
        missing = "the floor campaign's runs have no nr_anon_pages in vmstat.csv"
    elif not median_peak:
        missing = NO_WRITES
    value = (
        demand * time_scales[0] / (median_peak * time_scales[1])
        if missing is None and demand is not None and median_peak
        else None
    )
    return _check(
        "demand_over_reclaim", value, DEMAND_OVER_RECLAIM_MIN, None, paper, inputs, missing
    )


def kill_halves(kill_t_ms: list[float], end_ms: float) -> tuple[int, int]:
    """Kills in the first and second half of [0, end_ms]."""
    first = sum(1 for t in kill_t_ms if t < end_ms / 2)
    return first, len(kill_t_ms) - first


def sustained_kills(runs: list[tuple[list[float], float]], time_scale: float = 1.0) -> dict:
    """From each run's kill times and workload end (ms): the second half's
    kills over the first's (0 without kills in the first half) and the
    kills per 5 minutes of the phone's time (the run's over `time_scale`,
    the campaign's); medians over runs."""
    paper = f"{PAPER_KILLS_PER_5MIN} kills in 5 min, Pixel 6 Pro (Fig. 2a)"
    per_run = []
    for kill_t_ms, end_ms in runs:
        first, second = kill_halves(kill_t_ms, end_ms)
        per_run.append(
            {
                "kills": len(kill_t_ms),
                "first_half": first,
                "second_half": second,
                "workload_s": end_ms / 1000,
                "ratio": second / first if first else 0.0,
                "kills_per_5min": len(kill_t_ms) / end_ms * 1000 * RATE_SPAN_S * time_scale
                if end_ms > 0
                else None,
            }
        )
    ratio = _median([r["ratio"] for r in per_run])
    rate = _median([r["kills_per_5min"] for r in per_run])
    lo, hi = KILLS_PER_5MIN_RANGE
    inputs = {
        "runs": per_run,
        "median_kills_per_5min": rate,
        "kills_per_5min_range": [lo, hi],
        "time_scale": time_scale,
        "time_mapping": TIME_MAPPING.format(scale=time_scale),
    }
    return _check(
        "sustained_kills",
        ratio,
        SUSTAINED_MIN_RATIO,
        None,
        paper,
        inputs,
        None if per_run else NO_RUNS,
        also=rate is not None and lo <= rate <= hi,
    )


def switch_roles(switches: list[dict]) -> list[str]:
    """Each switch of one run, in order: "first" (the app's first switch in
    the run), "relaunch" (a later cold one) or "hot"/"cold" (its kind)."""
    seen: set[str] = set()
    roles = []
    for s in switches:
        if s["app"] not in seen:
            seen.add(s["app"])
            roles.append("first")
        else:
            roles.append("relaunch" if s["kind"] == "cold" else s["kind"])
    return roles


def relaunch_share(runs: list[list[dict]]) -> dict:
    """Relaunches over the switches after the apps' first launches, pooled."""
    paper = "about half: -82% kills to give -43.6% response (§5.2)"
    roles = [role for switches in runs for role in switch_roles(switches)]
    later = sum(1 for r in roles if r != "first")
    relaunches = roles.count("relaunch")
    inputs = {
        "switches": len(roles),
        "first_launches": len(roles) - later,
        "relaunches": relaunches,
    }
    missing = (
        None
        if later
        else (NO_RUNS if not runs else "no switch after the apps' first launches (one round only)")
    )
    lo, hi = RELAUNCH_SHARE_RANGE
    return _check(
        "relaunch_share", relaunches / later if later else None, lo, hi, paper, inputs, missing
    )


def fill_cpus(switches: list[dict]) -> float | None:
    """The CPUs the heap fill of these cold switches ran on, on average: the
    fill threads' CPU time (fill_user_ms + fill_sys_ms, summed over them) over
    the heap step's wall time, pooled; None without fill figures (a runtime
    before them)."""
    costs = [
        s["cost"]
        for s in switches
        if all(k in s.get("cost", {}) for k in ("fill_user_ms", "fill_sys_ms", "heap_ms"))
    ]
    wall = sum(c["heap_ms"] for c in costs)
    return sum(c["fill_user_ms"] + c["fill_sys_ms"] for c in costs) / wall if wall else None


def cold_over_warm(runs: list[list[dict]], floor: list[list[dict]] | None = None) -> dict:
    """Mean response time of the relaunches (of every cold switch without
    relaunches) over that of the hot switches, pooled over runs. Its inputs
    also say on how many CPUs those cold launches filled their heaps, and
    the floor's cold launches (`floor`'s runs, without pressure) theirs."""
    paper = f"{PAPER_COLD_OVER_WARM} (Fig. 2b)"
    pairs = [(s, role) for switches in runs for s, role in zip(switches, switch_roles(switches))]
    relaunched = [s for s, role in pairs if role == "relaunch"]
    cold_switches = relaunched or [s for s, _ in pairs if s["kind"] == "cold"]
    cold = [s["response_ms"] for s in cold_switches]
    hot = [s["response_ms"] for s, _ in pairs if s["kind"] == "hot"]
    cold_ms = float(np.mean(cold)) if cold else None
    hot_ms = float(np.mean(hot)) if hot else None
    inputs = {
        "cold": "relaunches" if relaunched else "all cold switches (no relaunch)",
        "cold_switches": len(cold),
        "cold_mean_ms": cold_ms,
        "hot_switches": len(hot),
        "hot_mean_ms": hot_ms,
        "cold_fill_cpus": fill_cpus(cold_switches),
        "floor_fill_cpus": fill_cpus(
            [s for switches in floor or [] for s in switches if s["kind"] == "cold"]
        ),
    }
    missing = (
        NO_RUNS
        if not runs
        else "no cold switch"
        if not cold
        else "no hot switch"
        if not hot
        else None
    )
    lo, hi = COLD_OVER_WARM_RANGE
    return _check(
        "cold_over_warm",
        cold_ms / hot_ms if not missing and cold_ms is not None and hot_ms else None,
        lo,
        hi,
        paper,
        inputs,
        missing,
    )


def kswapd_busiest_cpu(
    t_ms: list[float], cpu_s: list[float], since_ms: float = 0.0
) -> float | None:
    """The largest growth of kswapd's CPU seconds over a 1-s window (whole
    seconds of workload time, the counter linearly interpolated, as
    metrics.per_window_mbps does) among the windows that start at or after
    since_ms: CPUs, to the counter's resolution (one clock tick, 0.01 s, per
    1-s window), so that 0.9 CPU read through sums of floats is 0.9. None
    without a full window."""
    if len(t_ms) < 2:
        return None
    # per_window_mbps gives growth per second in units of MB: scale seconds by MB
    starts, per_s = per_window_mbps(
        np.asarray(t_ms, dtype=float), np.asarray(cpu_s, dtype=float) * MB
    )
    after = [v for t, v in zip(starts, per_s) if t * 1000 >= since_ms]
    return round(float(max(after)), 2) if after else None


def kswapd_busiest_runnable(
    cpu: tuple[list[float], list[float]],
    wait: tuple[list[float], list[float]],
    since_ms: float = 0.0,
) -> float | None:
    """kswapd_busiest_cpu of the seconds kswapd was on a CPU plus those it
    waited for one (threads_cpu.csv and threads_wait.csv, joined on their
    sample times): how much of a second it was runnable, at most. It can
    read a little above 1: the sampler stamps a row with the time it was
    due, and a sampler held up by the same contention reads it late."""
    waits = dict(zip(*wait))
    t_ms = [t for t in cpu[0] if t in waits]
    total = [c + waits[t] for t, c in zip(*cpu) if t in waits]
    return kswapd_busiest_cpu(t_ms, total, since_ms)


def reported(runs: list[OriginalRun]) -> list[dict]:
    """The figures given beside the checks, without a range."""
    share = _median([r.kswapd_shrink_share for r in runs])
    ratio = _median([v for r in runs for v in r.round_ratios])
    no_trace = "no kswapd rounds traced (mm_vmscan_kswapd_round)"
    return [
        {
            "name": "kswapd_shrink_share",
            "value": share,
            "paper": f"{PAPER_SHRINK_SHARE} (Fig. 5)",
            "missing": None
            if share is not None
            else NO_RUNS
            if not runs
            else no_trace + " or writeback untraced",
        },
        {
            "name": "nr_reclaimed_over_nr_to_reclaim",
            "value": ratio,
            "paper": PAPER_RECLAIMED_OVER_GOAL,
            "missing": None if ratio is not None else NO_RUNS if not runs else no_trace,
        },
    ]


# ---- loading ---------------------------------------------------------------


def peak_over_fio_range(profile: str) -> tuple[float, float] | None:
    """The profile's `[regime] peak_over_fio = [lo, hi]`; None when it has
    none or the profile file is not there."""
    try:
        raw = profiles.load(profile).raw
    except UserError:
        return None
    span = (raw.get("regime") or {}).get("peak_over_fio")
    if (
        isinstance(span, list)
        and len(span) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in span)
        and span[0] <= span[1]
    ):
        return float(span[0]), float(span[1])
    return None


def kswapd_series(path: Path) -> tuple[list[float], list[float]] | None:
    """Sample times and the kswapd threads' summed seconds from
    threads_cpu.csv (on a CPU) or threads_wait.csv (waiting for one); None
    without the file or kswapd columns."""
    if not path.exists():
        return None
    try:
        header, rows = read_table(path)
    except RunError:
        return None
    cols = [i for i, name in enumerate(header) if name.startswith("kswapd")]
    if not cols or "t_ms" not in header:
        return None
    t = header.index("t_ms")
    full = [r for r in rows if len(r) == len(header) and r[t] and all(r[c] for c in cols)]
    return ([float(r[t]) for r in full], [sum(float(r[c]) for c in cols) for r in full])


def switching_start_ms(events: list[dict]) -> float:
    """When the `switching` phase began; 0 without that event."""
    return next(
        (
            float(e["t_ms"])
            for e in events
            if e["type"] == "phase" and e.get("phase") == "switching"
        ),
        0.0,
    )


def original_run(run_dir: Path, run: Run) -> OriginalRun:
    m = run.metrics
    events = read_events(run_dir / "events.jsonl")
    since = switching_start_ms(events)
    series = kswapd_series(run_dir / "threads_cpu.csv")
    busiest = kswapd_busiest_cpu(*series, since_ms=since) if series else None
    waits = kswapd_series(run_dir / "threads_wait.csv")
    runnable = kswapd_busiest_runnable(series, waits, since_ms=since) if series and waits else None
    return OriginalRun(
        rep=run.rep,
        reclaim_peak_mbps=m.reclaim_mbps["peak"],
        anon_growth_peak_mbps=m.anon_growth_peak_mbps,
        kswapd_shrink_share=(m.kswapd_rounds or {}).get("shrink_share"),
        round_ratios=[r.nr_reclaimed / max(r.nr_to_reclaim, 1) for r in m.kswapd_round_list],
        kswapd_busiest_cpu=busiest,
        events=events,
        kswapd_busiest_runnable=runnable,
    )


def campaign_inputs(d: Path, ok: list[Run] | None = None) -> CampaignInputs:
    """A campaign's original runs (`ok`: those already loaded, else every
    run campaign.json records as ok and metrics.load_run accepts)."""
    campaign = load_campaign(d)
    original = [e for e in campaign.get("runs", []) if e.get("scheme") == BASELINE]
    dirs = {e["rep"]: d / e["dir"] for e in original}
    if ok is None:
        ok = load_runs(d, {"schemes": [BASELINE], "runs": original})[0][BASELINE]
    runs = [original_run(dirs[r.rep], r) for r in sorted(ok, key=lambda r: r.rep) if r.rep in dirs]
    return CampaignInputs(
        d,
        campaign.get("profile", ""),
        campaign.get("swap_bandwidth"),
        campaign.get("max_rate"),
        runs,
        (campaign.get("guest") or {}).get("swap", "flash"),
        host_speeds(campaign),
    )


def time_scale(c: CampaignInputs | None) -> float:
    """The campaign's time_scale (1 without one)."""
    return ((c.host if c else None) or {}).get("time_scale") or 1.0


def host_speeds(campaign: dict) -> dict | None:
    """The guest's memory-touch, page-fault and CPU-loop speeds from
    campaign.json's dilation, and the time_scale the campaign ran the
    scenario's clock at; None for a campaign without a dilation."""
    d = campaign.get("dilation") or {}
    if "guest_ns_per_page" not in d:
        return None
    return {
        "guest_ns_per_page": d["guest_ns_per_page"],
        "guest_fault_ns_per_page": d.get("guest_fault_ns_per_page"),
        "guest_work_iters_per_ms": d.get("guest_work_iters_per_ms"),
        "time_scale": campaign.get("time_scale"),
    }


def switch_events(runs: list[OriginalRun]) -> list[list[dict]]:
    """Each run's `switch` events."""
    return [[e for e in r.events if e["type"] == "switch"] for r in runs]


def evaluate(
    main: CampaignInputs, floor: CampaignInputs | None, source: dict, floor_missing: str = NO_FLOOR
) -> dict:
    """regime.json's content from the loaded campaigns."""
    runs = main.runs
    peaks = [r.reclaim_peak_mbps for r in runs]
    switches = switch_events(runs)
    kills = [
        (
            [float(e["t_ms"]) for e in r.events if e["type"] == "kill"],
            max((float(e["t_ms"]) for e in r.events), default=0.0),
        )
        for r in runs
    ]
    checks = [
        campaign_peak_over_fio(main),
        reclaim_limited(
            main.max_rate,
            peaks,
            [r.kswapd_busiest_cpu for r in runs],
            main.not_on_disk,
            [r.kswapd_busiest_runnable for r in runs],
        ),
        demand_over_reclaim(
            None if floor is None else [r.anon_growth_peak_mbps for r in floor.runs],
            peaks,
            floor_missing,
            (time_scale(floor), time_scale(main)),
        ),
        sustained_kills(kills, time_scale(main)),
        relaunch_share(switches),
        cold_over_warm(switches, None if floor is None else switch_events(floor.runs)),
    ]
    return {
        "profile": main.profile,
        "source": source,
        "host": main.host,
        "checks": checks,
        "reported": reported(runs),
    }


def campaign_peak_over_fio(c: CampaignInputs) -> dict:
    """peak_over_fio of a campaign's original runs against its own fio."""
    bw = c.swap_bandwidth or {}
    fio_missing = f"the fio measurement failed: {bw['error']}" if bw.get("error") else NO_FIO
    return peak_over_fio(
        [r.reclaim_peak_mbps for r in c.runs],
        bw.get("write_mbps"),
        peak_over_fio_range(c.profile),
        PAPER_PEAK_OVER_FIO.get(c.profile, "–"),
        fio_missing,
        c.not_on_disk,
    )


def _source(root: Path, c: CampaignInputs) -> dict:
    return {
        "dir": str(c.dir.relative_to(root)) if c.dir != root else ".",
        "profile": c.profile,
        "original_reps": [r.rep for r in c.runs],
    }


def layout(d: Path) -> str:
    """ "paper" (a `pmrtb paper` output) or "campaign" (one results directory)."""
    if (d / "main" / "campaign.json").exists():
        return "paper"
    if (d / "campaign.json").exists():
        return "campaign"
    raise UserError(
        f"{d} is neither a campaign's results directory (no campaign.json) nor a "
        "pmrtb paper output (no main/campaign.json)"
    )


def build(
    root: Path,
    kind: str,
    main_ok: list[Run] | None = None,
    floor_ok: list[Run] | None = None,
    devices_ok: list[Run] | None = None,
) -> dict:
    """The regime of `root`, laid out as `kind` (layout()); the runs already
    loaded may be given (original's ok runs of main, floor and devices). A
    campaign without original runs gives every check missing. A `pmrtb
    paper` output with a devices campaign also gets `devices`: the other
    phone's peak_over_fio, the one check that profile has a range for."""
    main_dir = root / "main" if kind == "paper" else root
    main = campaign_inputs(main_dir, main_ok)
    floor = None
    floor_missing = NO_FLOOR
    if kind == "paper" and (root / "floor" / "campaign.json").exists():
        floor = campaign_inputs(root / "floor", floor_ok)
    elif kind == "campaign":
        floor_missing = NO_FLOOR + ": a single campaign has none"
    source = {
        "layout": kind,
        "main": _source(root, main),
        "floor": _source(root, floor) if floor else None,
    }
    result = evaluate(main, floor, source, floor_missing)
    if kind == "paper" and (root / "devices" / "campaign.json").exists():
        devices = campaign_inputs(root / "devices", devices_ok)
        result["devices"] = {
            "profile": devices.profile,
            "source": _source(root, devices),
            "checks": [campaign_peak_over_fio(devices)],
        }
    return result


def regime(d: Path) -> dict:
    """The regime of a `pmrtb paper` output or a campaign's results
    directory; UserError for anything else, or without an ok original run."""
    kind = layout(d)
    result = build(d, kind)
    if not result["source"]["main"]["original_reps"]:
        where = d / "main" if kind == "paper" else d
        raise UserError(
            f"{where} has no ok {BASELINE} run: the regime is computed from {BASELINE}'s runs only"
        )
    return result


def save(d: Path, result: dict) -> Path:
    path = d / REGIME_FILE
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def write_regime(d: Path) -> Path:
    """Write DIR/regime.json (see regime()); return its path."""
    return save(d, regime(d))


# ---- presentation ----------------------------------------------------------


def fmt(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def range_text(lo: float | None, hi: float | None) -> str:
    if lo is None and hi is None:
        return "–"
    if lo is None:
        return f"≤ {hi:g}"
    if hi is None:
        return f"≥ {lo:g}"
    return f"{lo:g}–{hi:g}"


def ours_text(check: dict) -> str:
    """The value, with the second figure a check also needs."""
    text = fmt(check["value"])
    inputs = check["inputs"]
    if check["name"] == "reclaim_limited":
        busy = inputs.get("median_kswapd_busiest_cpu")
        runnable = inputs.get("median_kswapd_busiest_runnable")
        if busy is not None:
            waited = f"; runnable {fmt(runnable)}" if runnable is not None else ""
            text += f" (kswapd {fmt(busy)} CPU, ≥ {KSWAPD_BUSY_MIN_CPU:g}{waited})"
    elif check["name"] == "sustained_kills" and inputs.get("median_kills_per_5min") is not None:
        lo, hi = KILLS_PER_5MIN_RANGE
        text += f" ({fmt(inputs['median_kills_per_5min'])} kills / 5 min, {lo:g}–{hi:g})"
    elif check["name"] == "cold_over_warm" and inputs.get("cold_fill_cpus") is not None:
        floor = inputs.get("floor_fill_cpus")
        without = f", {fmt(floor)} without pressure" if floor is not None else ""
        text += f" (heap filled on {fmt(inputs['cold_fill_cpus'])} CPUs{without})"
    return text


def result_text(check: dict) -> str:
    if check["pass"]:
        return "✅ pass"
    if (check["missing"] or "").startswith("n/a"):
        return "n/a"
    if check["missing"]:
        return "not measured" if check["value"] is None else "not judged"
    return "❌ fail"


ONE_RUN = (
    "One run of original: each check is that run's value, not a median. "
    "Original's peak reclaim, which peak_over_fio, reclaim_limited and "
    "demand_over_reclaim weigh, is the second RAM first runs out, and it "
    "differs between runs of one campaign more than these ranges allow "
    "(docs/regime.md); a verdict needs the full run's repetitions."
)


def markdown_lines(result: dict) -> list[str]:
    """The Regime section's body: the checks' table, a line per check that
    could not be judged, and the figures reported without a range."""
    if not result["source"]["main"]["original_reps"]:
        return [f"Not measured: {NO_RUNS}.", ""]
    checks = result["checks"]
    passed = sum(c["pass"] for c in checks)
    na = sum(result_text(c) == "n/a" for c in checks)
    lines = [
        f"Whether original's runs on `{result['profile']}` are in the paper's regime: "
        "reclaim cannot keep up with demand, pressure persists, killed apps come back "
        f"cold (regime.py, regime.json). {passed} of {len(checks) - na} checks pass"
        + (f" ({na} n/a)." if na else "."),
        "",
        "| check | ours | range | paper | result |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {c['name']} | {ours_text(c)} | {range_text(c['lo'], c['hi'])} | "
        f"{c['paper']} | {result_text(c)} |"
        for c in checks
    ]
    lines.append("")
    if len(result["source"]["main"]["original_reps"]) == 1:
        lines += [ONE_RUN, ""]
    if gaps := [c for c in checks if c["missing"]]:
        lines += [f"- `{c['name']}`: {c['missing']}" for c in gaps]
        lines.append("")
    if other := result.get("devices"):
        lines += [
            f"On `{other['profile']}` (`devices`): "
            + "; ".join(
                f"{c['name']} {ours_text(c)} (range {range_text(c['lo'], c['hi'])}): "
                f"{result_text(c)}" + (f" ({c['missing']})" if c["missing"] else "")
                for c in other["checks"]
            )
            + ".",
            "",
        ]
    parts = [f"{r['name']} {fmt(r['value'])} (paper {r['paper']})" for r in result["reported"]]
    lines += ["Reported without a range: " + "; ".join(parts) + ".", ""]
    if host := result.get("host"):
        fault = host.get("guest_fault_ns_per_page")
        lines += [
            f"The guest touched memory at {host['guest_ns_per_page']:.0f} ns per page"
            + (f" and faulted at {fault:,.0f}" if fault else "")
            + " (dilation.py); the regime moves with the host's memory speed "
            "(docs/regime.md)"
            + (
                f", and the scenario's clock ran at {host['time_scale']:.2f} x its guest ms."
                if host.get("time_scale") is not None
                else "."
            ),
            "",
        ]
    return lines
