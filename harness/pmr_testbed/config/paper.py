"""The plan of `pmrtb paper`, the PMR paper's evaluation (§3.2, §5).

A fixed set of campaigns, which workflows/paper.py runs (each as
workflows/campaign.py runs `pmrtb run`), each in its own subdirectory of the
output directory and each a normal results directory with its own
summary.json and report.md, then one combined report over them
(report/paper_report.py: paper.md, paper_summary.json, plots/):

  main            `paper` on pixel6pro: the mode's schemes (Figs. 5-7,
                  11-13, Table 3, the headline ratios; Acclaim, the
                  paper's baseline in Figs. 11-13), with --peers the
                  alternatives that users deploy instead of PMR
                  (PEER_SCHEMES: more kswapd threads) beside them
  devices         `paper` on pixel5: original, pps, pmr (Fig. 14, beside
                  main's pixel6pro runs)
  delta           pmr with the victim target delta at k x kswapd's
                  nr_to_reclaim on pixel6pro (Fig. 15a): the guest's high
                  watermark as the harness sets it (profile.watermarks(),
                  guest_high_watermark_pages), so that 3x is the kernel's
                  default (victim_target_kbytes=0)
  unit-pixel6pro  pmr at unmap units of 64 kB-16 MB (Fig. 15b)
  unit-pixel5     the same on pixel5 (thorough mode only)
  floor           `paper` on pixel6pro-roomy (three times the RAM: nothing
                  is reclaimed): original, the response time that no reclaim
                  scheme can remove, so the best response ratio any scheme
                  could reach against main's original, and how fast the apps
                  demand memory, which no reclaim needs to outrun
                  (full and thorough modes)

Three modes (MODES), each planned to a time budget on this project's 2-core
TCG host (estimate_s, printed before anything starts):

  quick     within 20 min: 1 repetition (unless --reps says otherwise); main
            original, acclaim and pmr at QUICK_MAIN_ROUNDS rounds (the
            regime report needs switched apps killed and relaunched, which
            starts in the second round, past the transient of the first
            switching rounds), devices original 1 round (pixel5's
            peak_over_fio), `floor` 1 round, no sweeps: quick results check
            the regime and show the direction of pmr's effect, not the
            paper's figures.
  full      within 2 h: main at `reps` (3 or more) x the scenario's 10 rounds
            for original, mglru, acclaim and pmr (the headline ratios with
            their spread); devices original, pps and pmr, 1 rep x 2 rounds
            (Fig. 14 beside main: the cold launches and the first warm
            round); the two sweeps 1 rep x 2 rounds at three points (delta
            1x/3x/5x, unit 64 kB/1 MB/16 MB): their shapes are indicative,
            a point has no spread; `floor` 1 rep x 2 rounds (its cold
            launches and warm switches, weighed as main's are).
  thorough  `reps` repetitions of everything, main with every scheme file
            (but the modifiers, and those that keep one tier of a
            zram+flash profile); main and devices at the scenario's
            rounds, the sweeps 4 rounds (as `make unit-sweep`) at every
            point (delta 1x-5x, unit 64 kB-16 MB on both profiles), and
            `floor`.

--peers adds PEER_SCHEMES to main in quick and full modes (thorough runs
every scheme file anyway): each costs main `reps` more runs, ~12 min in
full mode, which the estimate shows against the mode's budget.

Each budget holds its plan's estimate at RUN_S: quick's 20 min main's
three schemes at 5 rounds (~8 min with the fio and max-rate boots) and
devices and the floor (~3 min); full's 2 h main's four schemes at 3 x 10
rounds (~49 min, ~12 min per scheme) and the other campaigns (~12 min).

In full and thorough modes the sweeps' kernel-default point, pmr as it
is (delta 3x, the main profile's unit), runs once, in `delta`, and the
unit sweep takes it from there (unit_from_delta). Main's pmr runs are
never a sweep point: they run at other rounds than the sweeps.

Resuming: a campaign subdirectory whose campaign.json has every run of its
plan (ok or failed) is not run again; one cut off part-way is continued,
its recorded runs kept and the others run (workflows/campaign.py), if the kernel,
dilation, QEMU limits and guest are still those it recorded, and is
otherwise moved aside (`<name>.incomplete-<n>`) and run afresh; one that
holds a different plan (other reps, seed, rounds or schemes) is refused.
So `pmrtb paper` can be run again with the same --out until it is
complete, and a cut-off loses at most the run that was going on.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from .. import paths, run_times
from ..errors import UserError
from . import profiles, scenarios, schemes
from .profiles import PAGE_KB, Profile

SCENARIO = "paper"
MAIN_PROFILE = "pixel6pro"
OTHER_PROFILE = "pixel5"
FLOOR_PROFILE = "pixel6pro-roomy"
BASELINE = "original"
# the paper's schemes first, in this order; any other scheme file follows
PAPER_SCHEMES = ("original", "mglru", "acclaim", "pps", "pmr")
# quick mode's devices: pixel5's peak_over_fio, the regime's one check
# there; pmr's Fig. 14 runs in full mode, where both profiles run the
# rounds that weigh them alike
QUICK_DEVICE_SCHEMES = ("original",)
# quick mode's main: the direction of pmr's effect, and against Acclaim, the
# paper's baseline in Figs. 11-13
QUICK_MAIN_SCHEMES = ("original", "acclaim", "pmr")
# full mode's main: the headline ratios' schemes (pmr against original,
# MGLRU and Acclaim; Acclaim against original); pps, the ablation, runs in
# devices (Fig. 14) and in thorough mode's main: a fifth scheme at 3 x 10
# rounds would cost main another ~12 min, a fifth of the mode's time
FULL_MAIN_SCHEMES = ("original", "mglru", "acclaim", "pmr")
# quick mode's main: the fewest rounds whose relaunch share is a full
# run's. Switched apps are killed and relaunched from the second round on,
# but rounds 1-2 are a transient: seed 1's order relaunches 11-12 of their
# 20 switches (0.55-0.60, the top of relaunch_share's range) in every run;
# rounds 1-4 relaunch 0.45-0.50, as a full run's rounds 1-9 do 0.49-0.51.
# Their hot switches stay slower than a full run's (431 ms against 325 on
# 2026-11-30: cold_over_warm 2.02 against 2.50, docs/regime.md)
QUICK_MAIN_ROUNDS = 5
DEVICE_SCHEMES = ("original", "pps", "pmr")
# what users deploy instead of PMR when reclaim cannot keep up: the vendor
# kernels' extra kswapd threads (kernel/baselines/kswapd-threads), which the
# paper argues against (§4.1, §6) without measuring them
PEER_SCHEMES = ("kswapd-threads",)
DELTA_KEY = "victim_target_kbytes"
UNIT_KEY = "unmap_unit_kbytes"
DEFAULT_DELTA = 3  # the kernel's default victim target: 3 x nr_to_reclaim
DEFAULT_PMR = "pmr"  # the kernel's default delta and the profile's own unit
MIN_FULL_REPS = 3  # the headline ratios' min/median/max (issue 5)
# the time a mode's plan must fit on this project's 2-core TCG host: quick
# checks the regime in one sitting, full gives the headline ratios' spread
QUICK_BUDGET_S = 20 * 60
FULL_BUDGET_S = 2 * 60 * 60


@dataclass(frozen=True)
class Mode:
    """How much of the evaluation a mode runs; None means "as --reps" for
    reps, "the scenario's" for rounds and "every scheme file" for schemes."""

    name: str
    default_reps: int
    min_reps: int
    target_s: float | None  # the time budget the plan is made for
    main_rounds: int | None
    main_schemes: tuple[str, ...] | None
    device_schemes: tuple[str, ...]
    device_reps: int | None
    device_rounds: int | None
    sweep_reps: int | None
    sweep_rounds: int | None  # at most the scenario's
    delta_multiples: tuple[int, ...]
    units_kb: tuple[int, ...]
    other_unit_sweep: bool  # unit-pixel5
    floor: bool
    floor_reps: int | None = None  # None: as reps
    floor_rounds: int | None = None  # at most the scenario's; None: main's


MODES = {
    m.name: m
    for m in (
        Mode(
            "quick",
            default_reps=1,
            min_reps=1,
            target_s=QUICK_BUDGET_S,
            main_rounds=QUICK_MAIN_ROUNDS,
            main_schemes=QUICK_MAIN_SCHEMES,
            device_schemes=QUICK_DEVICE_SCHEMES,
            device_reps=None,
            device_rounds=1,
            sweep_reps=None,
            sweep_rounds=1,
            delta_multiples=(),
            units_kb=(),
            other_unit_sweep=False,
            floor=True,
            floor_reps=1,
            floor_rounds=1,
        ),
        Mode(
            "full",
            default_reps=MIN_FULL_REPS,
            min_reps=MIN_FULL_REPS,
            target_s=FULL_BUDGET_S,
            main_rounds=None,
            main_schemes=FULL_MAIN_SCHEMES,
            device_schemes=DEVICE_SCHEMES,
            device_reps=1,
            device_rounds=2,
            sweep_reps=1,
            sweep_rounds=2,
            delta_multiples=(1, 3, 5),
            units_kb=(64, 1024, 16384),
            other_unit_sweep=False,
            floor=True,
            floor_reps=1,
            floor_rounds=2,
        ),
        Mode(
            "thorough",
            default_reps=MIN_FULL_REPS,
            min_reps=MIN_FULL_REPS,
            target_s=None,
            main_rounds=None,
            main_schemes=None,
            device_schemes=DEVICE_SCHEMES,
            device_reps=None,
            device_rounds=None,
            sweep_reps=None,
            sweep_rounds=4,
            delta_multiples=(1, 2, 3, 4, 5),
            units_kb=(64, 256, 1024, 4096, 16384),
            other_unit_sweep=True,
            floor=True,
        ),
    )
}

# Wall time per run: (fixed s, s per round), on an AMD EPYC 2-core host,
# where this host has recorded no run of its own (run_times.py).
# The fixed part (boot, setup, the 26 background launches, shutdown) is
# CPU-bound and follows the host. The rounds follow the workload: with the
# background apps in use between the switches, the apps growing while used
# and warm starts doing their resume work (scenarios/paper.toml), a round
# of `paper` on pixel6pro takes ~21 s at the guest's scale (10 rounds:
# 211-253 s, 2 rounds 64-70 s; 2026-12-01, run_times.fit over that host's
# runs).
RUN_S = {"pixel6pro": (33.0, 21.0), "pixel5": (40.0, 20.0), "pixel6pro-roomy": (48.0, 12.0)}
# per campaign: the kernel's up-to-date check, the (cached) dilation, the report
CAMPAIGN_OVERHEAD_S = 10.0
# the fio boot (swap_bandwidth.py): boot, 18 s of fio, shutdown
SWAP_BANDWIDTH_S = 40.0
# main's max-rate boot (max_rate.py): boot, 45 s of the allocator, shutdown
MAX_RATE_S = 75.0


@dataclass(frozen=True)
class CampaignSpec:
    """One campaign of the evaluation: subdirectory `name` of the output."""

    name: str
    figures: str  # what the paper uses it for
    profile: str
    schemes: tuple[str, ...]
    reps: int
    rounds: int
    swap_bandwidth: bool = False  # end with the fio boot (swap_bandwidth.py)
    max_rate: bool = False  # and the max-rate allocator's (max_rate.py)

    @property
    def runs(self) -> int:
        return self.reps * len(self.schemes)


@dataclass(frozen=True)
class DeltaPoint:
    multiple: int
    kbytes: int
    scheme: str


@dataclass
class PaperPlan:
    out: Path
    mode: str  # a key of MODES
    reps: int  # main's (and --reps)
    seed: int
    campaigns: list[CampaignSpec]
    # kswapd's nr_to_reclaim on the main profile's guest, pages
    nr_to_reclaim_pages: int
    delta: list[DeltaPoint] = field(default_factory=list)
    main_scale: float = 1.0  # the main profile's guest/phone RAM ratio
    main_unit_kb: int = 0  # the main profile's pmr.unmap_unit_kb
    # the delta sweep's kernel-default point (plain pmr) is also the unit
    # sweep's point at main_unit_kb
    unit_from_delta: bool = False

    def campaign(self, name: str) -> CampaignSpec | None:
        return next((c for c in self.campaigns if c.name == name), None)

    @property
    def quick(self) -> bool:
        return self.mode == "quick"

    @property
    def target_s(self) -> float | None:
        return MODES[self.mode].target_s


def guest_high_watermark_pages(profile: Profile) -> int:
    """The guest's high watermark summed over its zones, pages: what kswapd's
    nr_to_reclaim is (the sum over zones of max(high, SWAP_CLUSTER_MAX)).

    Linux 6.1 (__setup_per_zone_wmarks) with the sysctls the harness writes
    (profile.watermarks()): high = min + 2 gap per zone, the zones' min adding
    up to min_free_kbytes and gap = max(min / 4, managed x
    watermark_scale_factor / 10000). RAM stands in for the managed pages,
    which the kernel's own reservations make ~0.5% fewer, so this is that
    much above the guest's real figure (6,586 against ~6,556 pages on
    pixel6pro)."""
    wm = profile.watermarks()
    ram_kb = profile.guest_ram_mb * 1024
    min_kb = wm["min_free_kbytes"]
    gap_kb = max(min_kb / 4, ram_kb * wm["watermark_scale_factor"] / 10000)
    return round((min_kb + 2 * gap_kb) / PAGE_KB)


def delta_points(profile: Profile, multiples: tuple[int, ...]) -> list[DeltaPoint]:
    """pmr with the victim target at k x nr_to_reclaim, for each k."""
    pages = guest_high_watermark_pages(profile)
    return [
        DeltaPoint(k, k * pages * PAGE_KB, f"pmr@{DELTA_KEY}={k * pages * PAGE_KB}")
        for k in multiples
    ]


def discover_schemes() -> list[str]:
    """Every scheme in schemes/*.toml that runs alone (not a modifier) on
    the paper's profiles: not those made for a zram+flash one (`[swap]
    tiers`, SWAM's `[swam]`, whose swap daemon and baselines need both
    tiers and run in their own campaign on pixel6pro-swam); the paper's
    first, then the rest by name."""
    found = sorted(
        p.stem
        for p in paths.SCHEMES_DIR.glob("*.toml")
        if not (s := schemes.load(p.stem)).modifier and s.tiers is None and s.swam is None
    )
    return [s for s in PAPER_SCHEMES if s in found] + [s for s in found if s not in PAPER_SCHEMES]


def plan(
    out: Path,
    *,
    mode: str = "full",
    reps: int | None = None,
    seed: int = 1,
    peers: bool = False,
) -> PaperPlan:
    """The campaigns of the evaluation; checks the input, touches nothing."""
    m = MODES.get(mode)
    if m is None:
        raise UserError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    if reps is None:
        reps = m.default_reps
    if reps < 1:
        raise UserError(f"--reps must be at least 1, got {reps}")
    if reps < m.min_reps:
        raise UserError(
            f"the {mode} evaluation needs --reps {m.min_reps} or more (got {reps}); "
            "use --quick for a shorter run"
        )
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} exists and is not a directory")
    main_profile = profiles.load(MAIN_PROFILE)
    other_profile = profiles.load(OTHER_PROFILE)
    scenario_rounds = scenarios.load(SCENARIO).rounds
    main_rounds = m.main_rounds or scenario_rounds
    device_rounds = m.device_rounds or scenario_rounds
    sweep_rounds = min(m.sweep_rounds or scenario_rounds, scenario_rounds)
    device_reps, sweep_reps = m.device_reps or reps, m.sweep_reps or reps
    found = discover_schemes()
    for needed in (*(m.main_schemes or ()), *m.device_schemes, *(PEER_SCHEMES if peers else ())):
        if needed not in found:
            raise UserError(f"schemes/{needed}.toml is missing: the evaluation needs {needed}")
    main_schemes = m.main_schemes or tuple(found)
    if peers:
        main_schemes += tuple(s for s in PEER_SCHEMES if s not in main_schemes)
    delta = delta_points(main_profile, m.delta_multiples)
    unit_schemes = tuple(f"pmr@{UNIT_KEY}={kb}" for kb in m.units_kb)
    # The delta sweep runs its kernel-default point as plain pmr, which is
    # also the unit sweep's point at the main profile's own unit: one
    # configuration, run once for both sweeps
    unit_from_delta = (
        DEFAULT_DELTA in m.delta_multiples and main_profile.unmap_unit_kb in m.units_kb
    )
    main_units = tuple(
        f"pmr@{UNIT_KEY}={kb}"
        for kb in m.units_kb
        if not (unit_from_delta and kb == main_profile.unmap_unit_kb)
    )
    if unit_from_delta:
        delta = [
            DeltaPoint(d.multiple, d.kbytes, DEFAULT_PMR) if d.multiple == DEFAULT_DELTA else d
            for d in delta
        ]
    delta_run = tuple(d.scheme for d in delta)
    campaigns = [
        CampaignSpec(
            "main",
            "headline ratios, Figs. 5-7, 11-13, Table 3",
            MAIN_PROFILE,
            main_schemes,
            reps,
            main_rounds,
            swap_bandwidth=True,
            max_rate=True,
        ),
        CampaignSpec(
            "devices",
            "Fig. 14 (with main's pixel6pro runs)",
            OTHER_PROFILE,
            m.device_schemes,
            device_reps,
            device_rounds,
            swap_bandwidth=True,
        ),
    ]
    if delta_run:
        campaigns.append(
            CampaignSpec("delta", "Fig. 15a", MAIN_PROFILE, delta_run, sweep_reps, sweep_rounds)
        )
    if main_units:
        campaigns.append(
            CampaignSpec(
                f"unit-{MAIN_PROFILE}",
                "Fig. 15b",
                MAIN_PROFILE,
                main_units,
                sweep_reps,
                sweep_rounds,
            )
        )
    if m.other_unit_sweep:
        campaigns.append(
            CampaignSpec(
                f"unit-{OTHER_PROFILE}",
                "Fig. 15b",
                OTHER_PROFILE,
                unit_schemes,
                sweep_reps,
                sweep_rounds,
            )
        )
    if m.floor:
        profiles.load(FLOOR_PROFILE)  # refuse a missing or bad file before anything runs
        floor_rounds = min(m.floor_rounds or main_rounds, scenario_rounds)
        campaigns.append(
            CampaignSpec(
                "floor",
                "response time without memory pressure",
                FLOOR_PROFILE,
                (BASELINE,),
                m.floor_reps or reps,
                floor_rounds,
            )
        )
    # every scheme name must load (overrides included) before anything runs
    for c in campaigns:
        schemes.parse_list(
            ",".join(c.schemes), other_profile if c.profile == OTHER_PROFILE else main_profile
        )
    return PaperPlan(
        out,
        mode,
        reps,
        seed,
        campaigns,
        guest_high_watermark_pages(main_profile),
        delta,
        main_profile.scale,
        main_profile.unmap_unit_kb,
        unit_from_delta,
    )


# ---- time estimate ---------------------------------------------------------


def run_seconds(profile: str, rounds: int) -> float:
    """A run's wall time: from this host's recorded runs (run_times.py),
    else RUN_S."""
    default = RUN_S.get(profile, RUN_S[MAIN_PROFILE])
    fixed, per_round = run_times.fit(SCENARIO, profile, default[0]) or default
    return fixed + per_round * rounds


def estimate_s(spec: CampaignSpec) -> float:
    """Guest time of one campaign on this project's host (see RUN_S)."""
    return (
        CAMPAIGN_OVERHEAD_S
        + spec.runs * run_seconds(spec.profile, spec.rounds)
        + (SWAP_BANDWIDTH_S if spec.swap_bandwidth else 0.0)
        + (MAX_RATE_S if spec.max_rate else 0.0)
    )


def duration_text(seconds: float) -> str:
    """An estimate's duration, rounded up to the minute."""
    minutes = math.ceil(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    return f"{minutes // 60} h" + (f" {minutes % 60:02d} min" if minutes % 60 else "")


def _n(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"


def estimate_lines(p: PaperPlan, statuses: dict[str, str]) -> list[str]:
    """What will run and how long it should take; finished campaigns are
    skipped, and the runs a cut-off one recorded are not counted again."""
    lines = [
        f"pmrtb paper ({p.mode}): {len(p.campaigns)} campaigns "
        f"in {p.out}, {_n(p.reps, 'rep')}, seed {p.seed}"
    ]
    remaining = 0.0
    for c in p.campaigns:
        est = estimate_s(c)
        status = statuses.get(c.name)
        done = recorded_runs(p, c) if status == "partial" else 0
        if status != "finished":
            remaining += est - done * run_seconds(c.profile, c.rounds)
        note = {
            "finished": "  [finished: skipped]",
            "partial": f"  [cut off: {done} of {c.runs} runs done]",
        }.get(status or "", "")
        lines.append(
            f"  {c.name:<15} {c.profile:<9} {_n(len(c.schemes), 'scheme')} x "
            f"{_n(c.reps, 'rep')} x {_n(c.rounds, 'round')} = {_n(c.runs, 'run')}, "
            f"~{duration_text(est)}" + note
        )
    total = sum(estimate_s(c) for c in p.campaigns)
    target = p.target_s
    over = (
        "" if target is None or total <= target else f" (over the {duration_text(target)} target)"
    )
    lines.append(
        f"estimated guest time: ~{duration_text(total)} in all{over}; "
        f"~{duration_text(remaining)} still to run"
    )
    return lines


# ---- resuming --------------------------------------------------------------


def campaign_json(d: Path) -> dict | None:
    """campaign.json of the campaign in `d`; None if it is missing or not JSON."""
    try:
        return json.loads((d / "campaign.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def campaign_status(p: PaperPlan, spec: CampaignSpec) -> str:
    """ "new" (nothing there yet), "finished" (every run of the plan is done
    in its campaign.json) or "partial" (cut off, or a run failed); a
    directory holding another plan is refused."""
    d = p.out / spec.name
    if not d.exists() or not any(d.iterdir()):
        return "new"
    data = campaign_json(d)
    if data is None:
        return "partial"
    want = {
        "scenario": SCENARIO,
        "profile": spec.profile,
        "schemes": list(spec.schemes),
        "reps": spec.reps,
        "seed": p.seed,
        "rounds": spec.rounds,
    }
    differs = [f"{k} {data.get(k)!r}, not {v!r}" for k, v in want.items() if data.get(k) != v]
    if differs:
        raise UserError(
            f"{d} holds another campaign ({'; '.join(differs)}): use another --out "
            f"or remove {d} to run it again"
        )
    return "finished" if _recorded(data, spec) == spec.runs else "partial"


def _recorded(data: dict, spec: CampaignSpec) -> int:
    """How many runs of the plan of `spec` campaign.json's `data` records as
    done (a failed one is run again when the campaign is continued)."""
    wanted = {(s, rep) for s in spec.schemes for rep in range(1, spec.reps + 1)}
    return len(
        wanted
        & {(r.get("scheme"), r.get("rep")) for r in data.get("runs", []) if r.get("status") == "ok"}
    )


def recorded_runs(p: PaperPlan, spec: CampaignSpec) -> int:
    """How many runs of the plan the campaign's campaign.json records."""
    return _recorded(campaign_json(p.out / spec.name) or {}, spec)


def runs_to_go(p: PaperPlan, state: dict[str, str]) -> int:
    """The guest runs still to do, given statuses(p)."""
    return sum(
        0
        if state[c.name] == "finished"
        else c.runs - (recorded_runs(p, c) if state[c.name] == "partial" else 0)
        for c in p.campaigns
    )


def statuses(p: PaperPlan) -> dict[str, str]:
    return {c.name: campaign_status(p, c) for c in p.campaigns}
