"""Aggregate a results directory into summary.json.

Input: `campaign.json` (what was run: scheme x rep, setup, each run's status)
and the run directories it names. Each ok run is parsed by metrics.load_run;
a run the campaign marks failed, or whose directory is not a usable result,
goes to `failed_runs` and never into a figure.

Per scheme, every figure is the median over its ok runs (None values, e.g.
a missing optional file, are left out). With more than one run, `spread`
holds the min and max beside it, keyed by dotted path ("response_ms.mean").
The write-size histogram is summed over runs. `reclaim_cpu_total` (the sum
over thread families, per run) and `reclaim_cpu_us_per_page` (metrics.py) are
added because the ratios need them.
The nested per-run groups `switch_kinds`, `settled`, `lru_balance`,
`swap_fate`, `pmr`, `writeback`, `bulk`, `kswapd_rounds`, `host_cpu`,
`capacity`, `refaults`, `lwp`, `skew`, `anon_file_ratio`, `zram`, `ice` and
`swam` are summarised figure by figure ("writeback.unmap_us_per_page.p50");
`writeback`, `bulk`, `kswapd_rounds`, `refaults`, `lwp`, `skew`,
`anon_file_ratio`, `zram`, `ice` and `swam` are null for a scheme none of
whose runs has them (a kernel without PMR part 2, without the kswapd_round
or the LWP tracepoint, or LWP off; a runtime without app_memcg.csv; a
scheme without skew rectification; a vmstat.csv without the LRU sizes; a
flash profile; a run without ticks.csv and without Ice; runs without
spec.json);
`host_cpu` is absent when none has host_cpu.csv, `capacity` when none has
spec.json. `fae_kept_inactive` (Acclaim's counter) is null on a kernel
without it.

`by_rep` lists a few figures of each repetition (`BY_REP`, rep number
first): how it settled after lmkd's last kill (settled_state.py) decides much
of the rest, and medians hide which repetitions settled how.

`ratios[scheme]` compares each scheme with "original": the ratio of the
scheme's median to original's median (the reclaim CPU and the swap out
also until lmkd's last kill, `settled.until_last_kill`: over the kills,
before the runs part ways on how many apps they keep) (None where
original's median is 0 or
missing), and in `ratios[scheme]["spread"]` the min and max of the per-run
ratios over reps that both schemes completed (rep i against rep i), and
their median, given when there are at least two such pairs; in
`ratios[scheme]["p_value"]` how likely the difference of the two schemes'
repetitions is chance (significance.py; None under 3 repetitions each).

`fitting` compares the schemes again over the repetitions whose survivors
fit (fitting_runs.py): a second view, beside the figures over all runs.

`ice` (only when some scheme's runs have frames or Ice's freezing,
analysis/ice.py) compares the figures Ice's paper reports
(`ICE_RATIO_FIGURES`: frame rate, interaction alerts, jank, refaults,
reclaims, launch times, hot launches after the first round, kills) as
`ratios` does: every scheme against original, and each scheme with an
`ice-plus` part against the same scheme with `ice` in its place (Ice+
against Ice, the paper's Table 6), where the campaign ran both; a list of
{"scheme", "base", "ratios", "spread", "p_value"}.

`swam` (only on a zram+flash profile, campaign.json `guest.swap`, or when
some scheme ran SWAM's parts, analysis/swam.py) compares the figures
SWAM's paper reports (`SWAM_RATIO_FIGURES`: kills, relaunches and their
cost, launch and response times, each tier's writes) as `ice` does: every
scheme against each of SWAM's baselines the campaign ran (zram-only,
flash-only), or against original where it ran neither.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import schema
from ..analysis.fitting_runs import fitting_summary
from ..analysis.metrics import RunError, RunMetrics, load_run
from ..analysis.significance import permutation_p
from ..errors import UserError

BASELINE = "original"
FigPath = tuple[str, ...]
# figures that every scheme with ok runs has as numbers (schemas/summary.schema.json)
NUMBERS = ("kills", "allocstall", "pgmajfault", "pswpout_mb", "cold_launches", "hot_launches")
RATIO_FIGURES = (
    "response_ms.mean",
    "switch_kinds.hot.mean_ms",
    "reclaim_mbps.peak",
    "kills",
    "allocstall",
    "memory_stall_s.some",
    "reclaim_cpu_total",
    "reclaim_cpu_us_per_page",
    "pswpout_mb",
    "settled.until_last_kill.reclaim_cpu_s",
    "settled.until_last_kill.pswpout_mb",
)
# Ice's figures (analysis/ice.py), compared pair by pair in summary["ice"]
ICE_RATIO_FIGURES = (
    "ice.frames.fps",
    "ice.frames.ria",
    "ice.frames.jank",
    "ice.refaults",
    "ice.refaults_foreground",
    "ice.refaults_background",
    "ice.reclaims",
    "response_ms.mean",
    "switch_kinds.cold.mean_ms",
    "switch_kinds.hot.mean_ms",
    "ice.launches.hot_after_first_round",
    "kills",
)
# Ice+ is compared with Ice where a campaign ran both (schemes/ice-plus.toml)
ICE_PLUS_PART, ICE_PART = "ice-plus", "ice"
# SWAM's figures (analysis/swam.py), compared pair by pair in summary["swam"]
SWAM_RATIO_FIGURES = (
    "kills",
    "swam.relaunches",
    "swam.relaunch_cost_ms",
    "swam.launch_ms.p50",
    "swam.launch_ms.p90",
    "swam.response_ms.p50",
    "swam.response_ms.p90",
    "swam.zram_write_mb",
    "swam.flash_write_mb",
)
# SWAM's baselines (schemes/zram-only.toml, schemes/flash-only.toml)
SWAM_BASELINES = ("zram-only", "flash-only")
TWO_TIERS = "zram+flash"  # campaign.json guest.swap of a zram+flash profile
# per-run groups of figures, possibly nested, None where a run has none
NESTED = (
    "switch_kinds",
    "settled",
    "lru_balance",
    "swap_fate",
    "pmr",
    "writeback",
    "bulk",
    "kswapd_rounds",
    "host_cpu",
    "capacity",
    "refaults",
    "lwp",
    "skew",
    "anon_file_ratio",
    "zram",
    "ice",
    "swam",
)
# the figures `by_rep` lists for each repetition of a scheme
BY_REP = (
    "kills",
    "memory_stall_s.some",
    "settled.last_kill_s",
    "settled.file_refaults_per_s",
    "settled.swap_free_mb_min",
    "settled.swap_full_s",
    "lru_balance.file_activated_share",
    "response_ms.mean",
    "switch_kinds.cold.mean_ms",
    "switch_kinds.cold.cost.runq_ms",
    "allocstall",
    "reclaim_cpu_total",
    "reclaim_cpu_us_per_page",
    "settled.after_last_kill.reclaim_cpu_s",
    "pswpout_mb",
    "settled.after_last_kill.pswpout_mb",
    "settled.lmkd.events",
    "settled.lmkd.evaluated",
    "settled.lmkd.events_after",
    "settled.lmkd.wakeups_after",
    "settled.lmkd.evaluated_after",
    "settled.lmkd.swap_low",
    "settled.lmkd.under_low_wmark",
    "settled.lmkd.swap_low_under_low_wmark",
    "settled.lmkd.thrashing_max",
    "settled.lmkd.kill_reasons_without_victim",
)
# groups that every scheme with ok runs has, as an object or null
OPTIONAL_GROUPS = (
    "writeback",
    "bulk",
    "kswapd_rounds",
    "refaults",
    "lwp",
    "skew",
    "anon_file_ratio",
    "zram",
    "ice",
    "swam",
)


@dataclass
class Run:
    """One ok run of a scheme."""

    rep: int
    metrics: RunMetrics


def load_campaign(results_dir: Path) -> dict:
    path = results_dir / "campaign.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{path} not found: {results_dir} is not a results directory") from None


def load_runs(results_dir: Path, campaign: dict) -> tuple[dict[str, list[Run]], list[dict]]:
    """The ok runs of each scheme (in campaign order) and the failed runs."""
    ok: dict[str, list[Run]] = {s: [] for s in campaign["schemes"]}
    failed: list[dict] = []
    for entry in campaign["runs"]:
        if entry["scheme"] not in ok:
            raise UserError(
                f"campaign.json: run {entry['dir']} has scheme "
                f"{entry['scheme']!r}, which is not in its scheme list"
            )
        failure = {"scheme": entry["scheme"], "rep": entry["rep"], "error": entry.get("error")}
        if entry["status"] != "ok":
            failed.append(failure)
            continue
        try:
            ok[entry["scheme"]].append(Run(entry["rep"], load_run(results_dir / entry["dir"])))
        except RunError as e:
            failed.append(failure | {"error": str(e)})
    return ok, failed


def run_figures(m: RunMetrics) -> dict[FigPath, float | None]:
    """The scalar figures of one run, keyed by path in the summary schema."""
    fig: dict[FigPath, float | None] = {}
    for group in ("response_ms", "reclaim_mbps", "memory_stall_s"):
        fig |= {(group, k): v for k, v in getattr(m, group).items()}
    fig |= {(name,): getattr(m, name) for name in NUMBERS}
    fig[("reclaim_cpu_total",)] = m.reclaim_cpu_total
    fig[("reclaim_cpu_us_per_page",)] = m.reclaim_cpu_us_per_page
    fig[("swap_writes_per_anon_freed",)] = m.swap_writes_per_anon_freed
    fig[("anon_growth_peak_mbps",)] = m.anon_growth_peak_mbps
    fig[("fae_kept_inactive",)] = m.fae_kept_inactive
    fig |= {("reclaim_cpu_s", t): s for t, s in (m.reclaim_cpu_s or {}).items()}
    fig[("swap_write_kb", "mean")] = m.swap_write_kb["mean"] if m.swap_write_kb else None
    fig |= {("response_by_app", app): v for app, v in m.response_by_app.items()}
    fig |= {("kills_by_reason", reason): n for reason, n in m.kills_by_reason.items()}
    for group in NESTED:
        fig |= _flatten((group,), getattr(m, group))
    return fig


def _flatten(prefix: FigPath, tree: dict | None) -> dict[FigPath, float | None]:
    """{"a": {"b": 1}, "c": 2} under prefix p -> {(p, "a", "b"): 1, (p, "c"): 2}."""
    flat: dict[FigPath, float | None] = {}
    for key, value in (tree or {}).items():
        if isinstance(value, dict):
            flat |= _flatten((*prefix, key), value)
        else:
            flat[(*prefix, key)] = value
    return flat


def _median(values: list[float | None]) -> float | None:
    """Median of the values that are not None; an int when counts have a whole median."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    median = statistics.median(present)
    whole_counts = all(isinstance(v, int) for v in present) and median == int(median)
    return int(median) if whole_counts else median


def _set(tree: dict, path: FigPath, value) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = value


def get_path(tree: dict, dotted: str):
    """tree["a"]["b"] for "a.b", or None where a key is missing."""
    for key in dotted.split("."):
        if not isinstance(tree, dict) or key not in tree:
            return None
        tree = tree[key]
    return tree


def summed_hist(runs: list[Run]) -> dict[str, int] | None:
    hists = [r.metrics.swap_write_kb["hist"] for r in runs if r.metrics.swap_write_kb]
    if not hists:
        return None
    total: dict[str, int] = {}
    for hist in hists:
        for size, count in hist.items():
            total[size] = total.get(size, 0) + count
    return dict(sorted(total.items(), key=lambda kv: float(kv[0])))


def scheme_entry(runs: list[Run]) -> dict:
    """Medians (and spread when runs > 1) of one scheme's ok runs."""
    entry: dict = {"runs": len(runs)}
    if not runs:
        return entry
    per_run = [run_figures(r.metrics) for r in runs]
    paths = list(dict.fromkeys(p for fig in per_run for p in fig))
    spread: dict[str, dict] = {}
    for path in paths:
        # a run without kills for a reason had 0 of them
        missing = 0 if path[0] == "kills_by_reason" else None
        values = [fig.get(path, missing) for fig in per_run]
        _set(entry, path, _median(values))
        present = [v for v in values if v is not None]
        if len(runs) > 1 and present:
            spread[".".join(path)] = {"min": min(present), "max": max(present)}
    entry.setdefault("reclaim_cpu_s", None)
    # every run of a scheme swaps to the same place (spec.py's swap_settings)
    entry["swap_medium"] = runs[0].metrics.swap_medium
    for group in OPTIONAL_GROUPS:
        entry.setdefault(group, None)
    entry["swap_write_kb"]["hist"] = summed_hist(runs)
    entry["by_rep"] = [
        {"rep": r.rep, **{d: fig.get(tuple(d.split("."))) for d in BY_REP}}
        for r, fig in zip(runs, per_run)
    ]
    if spread:
        entry["spread"] = spread
    return entry


def _ratio(num: float | None, den: float | None) -> float | None:
    return None if num is None or not den else num / den


def scheme_ratios(
    entry: dict,
    base_entry: dict,
    runs: list[Run],
    base_runs: list[Run],
    figures_compared: Sequence[str] = RATIO_FIGURES,
) -> dict:
    """Ratios of one scheme's figures to the baseline's (see module docstring),
    of `figures_compared` (dotted paths)."""
    figures = [run_figures(r.metrics) for r in runs]
    base_figures = [run_figures(r.metrics) for r in base_runs]
    base_by_rep = {r.rep: f for r, f in zip(base_runs, base_figures)}
    pairs = [(f, base_by_rep[r.rep]) for r, f in zip(runs, figures) if r.rep in base_by_rep]
    ratios: dict = {}
    spread: dict[str, dict] = {}
    p_value: dict[str, float | None] = {}
    for dotted in figures_compared:
        ratios[dotted] = _ratio(get_path(entry, dotted), get_path(base_entry, dotted))
        path = tuple(dotted.split("."))
        per_pair = [
            r for r in (_ratio(f.get(path), b.get(path)) for f, b in pairs) if r is not None
        ]
        if len(per_pair) >= 2:
            spread[dotted] = {
                "min": min(per_pair),
                "max": max(per_pair),
                "median": statistics.median(per_pair),
                "pairs": len(per_pair),
            }
        p_value[dotted] = permutation_p(
            [v for f in figures if (v := f.get(path)) is not None],
            [v for f in base_figures if (v := f.get(path)) is not None],
        )
    ratios["spread"] = spread
    ratios["p_value"] = p_value
    return ratios


def ice_pairs(names: Sequence[str]) -> list[tuple[str, str]]:
    """(scheme, base) pairs summary["ice"] compares: every scheme against
    original, and a scheme with an `ice-plus` part against the same with
    `ice` in its place, each where the campaign ran both."""
    pairs = [(n, BASELINE) for n in names if n != BASELINE and BASELINE in names]
    for name in names:
        parts = [p.strip() for p in name.split("+")]
        if ICE_PLUS_PART in parts:
            ice = "+".join(ICE_PART if p == ICE_PLUS_PART else p for p in parts)
            if ice in names:
                pairs.append((name, ice))
    return pairs


def has_ice(entry: dict) -> bool:
    """Whether a scheme's summary entry has frames or Ice's freezing: Ice
    ran, or the scenario draws frames (background periods alone do not
    count: every app with bg_touch has them)."""
    ice = entry.get("ice") or {}
    return bool(ice.get("frames") or ice.get("freezing"))


def paired_comparisons(
    pairs: Callable[[Sequence[str]], list[tuple[str, str]]],
    schemes: dict[str, dict],
    ok: dict[str, list[Run]],
    figures: Sequence[str],
) -> dict:
    """{"comparisons": [...]}: `figures` of each (scheme, base) pair that
    `pairs` gives among the schemes with runs, as scheme_ratios pairs them."""
    with_runs = [name for name, runs in ok.items() if runs]
    comparisons = []
    for name, base in pairs(with_runs):
        r = scheme_ratios(schemes[name], schemes[base], ok[name], ok[base], figures)
        spread, p_value = r.pop("spread"), r.pop("p_value")
        comparisons.append(
            {"scheme": name, "base": base, "ratios": r, "spread": spread, "p_value": p_value}
        )
    return {"comparisons": comparisons}


def ice_comparisons(schemes: dict[str, dict], ok: dict[str, list[Run]]) -> dict | None:
    """summary["ice"]: ICE_RATIO_FIGURES paired (module docstring); None
    when no scheme has frames or Ice (has_ice)."""
    if not any(has_ice(e) for e in schemes.values()):
        return None
    return paired_comparisons(ice_pairs, schemes, ok, ICE_RATIO_FIGURES)


def ran_swam(entry: dict) -> bool:
    """Whether a scheme's runs ran one of SWAM's parts (its swap daemon, its
    EOOM killer, or the OOM Cleaner's floors or swap-clean)."""
    swam = entry.get("swam") or {}
    return any(swam.get(part) for part in ("swapd", "eoom", "wsp_kb", "cleaner"))


def shows_swam(campaign_guest: dict, schemes: dict[str, dict]) -> bool:
    """Whether a campaign gets SWAM's comparison: its profile has a zram and
    a flash tier, or a scheme ran SWAM's parts."""
    return campaign_guest.get("swap") == TWO_TIERS or any(ran_swam(e) for e in schemes.values())


def swam_pairs(names: Sequence[str]) -> list[tuple[str, str]]:
    """(scheme, base) pairs summary["swam"] compares: every other scheme
    against each of SWAM's baselines the campaign ran, or against original
    where it ran neither."""
    bases = [b for b in SWAM_BASELINES if b in names] or [b for b in (BASELINE,) if b in names]
    return [(n, b) for n in names if n not in (*SWAM_BASELINES, *bases) for b in bases]


def swam_comparisons(
    campaign_guest: dict, schemes: dict[str, dict], ok: dict[str, list[Run]]
) -> dict | None:
    """summary["swam"]: SWAM_RATIO_FIGURES paired (module docstring); None
    when the campaign does not show SWAM (shows_swam)."""
    if not shows_swam(campaign_guest, schemes):
        return None
    return paired_comparisons(swam_pairs, schemes, ok, SWAM_RATIO_FIGURES)


def ice_warnings(scheme: str, rep: int, ice: dict | None) -> list[str]:
    """Ice's errors in one run: apps left frozen after it, protected apps
    frozen."""
    freezing = (ice or {}).get("freezing") or {}
    where = f"{scheme} rep {rep}"
    warnings = []
    if freezing.get("end_frozen"):
        warnings.append(
            f"⚠ {where}: {freezing['end_frozen']} app cgroups were still frozen after the "
            "runtime thawed every app (ice_end): Ice left apps frozen"
        )
    if freezing.get("protected_freezes"):
        warnings.append(
            f"⚠ {where}: {freezing['protected_freezes']} freezes of whitelisted apps "
            "(persistent, or behind at an oom_score_adj up to protect_adj), which Ice must "
            "never freeze"
        )
    return warnings


def run_warnings(
    ok: dict[str, list[Run]], failed: list[dict], reps: int, extra_trace_events: Sequence[str] = ()
) -> list[str]:
    """What the report warns of: schemes short of runs, runs short of files or
    of trace events, among them the events `pmrtb run --trace-event` asked
    for that the kernel lacks, and Ice's errors (ice_warnings)."""
    warnings = []
    for scheme, runs in ok.items():
        n_failed = sum(1 for f in failed if f["scheme"] == scheme)
        if not runs:
            warnings.append(f"{scheme}: no ok runs ({n_failed} failed): no figures")
        elif len(runs) < reps:
            warnings.append(f"{scheme}: only {len(runs)} of {reps} runs ok")
        for r in runs:
            if r.metrics.missing:
                warnings.append(f"{scheme} rep {r.rep}: missing {', '.join(r.metrics.missing)}")
            if r.metrics.trace_overrun:
                warnings.append(
                    f"{scheme} rep {r.rep}: the trace lost {r.metrics.trace_overrun}"
                    " events (ring buffer overrun)"
                )
            warnings += ice_warnings(scheme, r.rep, r.metrics.ice)
            if lacking := [e for e in extra_trace_events if e in r.metrics.trace_missing]:
                warnings.append(
                    f"{scheme} rep {r.rep}: the kernel has no {', '.join(lacking)}"
                    " (--trace-event): not recorded"
                )
    return warnings


def summarize(campaign: dict, ok: dict[str, list[Run]], failed: list[dict]) -> dict:
    schemes = {name: scheme_entry(runs) for name, runs in ok.items()}
    ratios = {}
    if ok.get(BASELINE):
        ratios = {
            name: scheme_ratios(schemes[name], schemes[BASELINE], runs, ok[BASELINE])
            for name, runs in ok.items()
            if name != BASELINE and runs
        }
    kernel = campaign["kernel"]
    return {
        "scenario": campaign["scenario"],
        "profile": campaign["profile"],
        "dilation": campaign["dilation"],
        # absent in campaigns from before they were recorded
        **{k: campaign[k] for k in ("flash_calibration", "time_scale") if k in campaign},
        "kernel": {
            "version": kernel["version"],
            "series": kernel["series"],
            "flavour": kernel.get("flavour"),
        },
        "qemu": campaign["qemu"],
        "swap_bandwidth": campaign.get("swap_bandwidth"),  # swap_bandwidth.py; None before it ran
        "guest": campaign["guest"],
        "reps": campaign["reps"],
        "seed": campaign["seed"],
        "schemes": schemes,
        "failed_runs": failed,
        "ratios": ratios,
        # Ice's figures against original and Ice+ against Ice; absent without them
        **({"ice": ice} if (ice := ice_comparisons(schemes, ok)) else {}),
        # SWAM's figures against its baselines; absent outside SWAM's setting
        **({"swam": swam} if (swam := swam_comparisons(campaign["guest"], schemes, ok)) else {}),
        "fitting": fitting_summary(
            {name: [(r.rep, run_figures(r.metrics)) for r in runs] for name, runs in ok.items()},
            BASELINE,
        ),
        "warnings": run_warnings(
            ok, failed, campaign["reps"], campaign.get("extra_trace_events", [])
        ),
    }


def build_summary(results_dir: Path) -> tuple[dict, dict[str, list[Run]]]:
    """The summary of a results directory, and the ok runs it was built from."""
    campaign = load_campaign(results_dir)
    ok, failed = load_runs(results_dir, campaign)
    return summarize(campaign, ok, failed), ok


def save_summary(results_dir: Path, summary: dict) -> None:
    (results_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def write_summary(results_dir: Path) -> dict:
    """Write summary.json from campaign.json and the runs; return it."""
    summary, _ = build_summary(results_dir)
    save_summary(results_dir, summary)
    return summary


def validate_summary(d: dict) -> list[str]:
    """Problems of a summary dict; an empty list means it is valid: those
    against schemas/summary.schema.json, then the rules a schema cannot say."""
    problems = schema.problems("summary", d)
    for name, entry in (d.get("schemes") or {}).items():
        if not isinstance(entry, dict) or not entry.get("runs"):
            continue
        if len(entry.get("by_rep") or []) != entry["runs"]:
            problems.append(f"schemes.{name}.by_rep: needs one row per run ({entry['runs']})")
        for dotted, mm in (entry.get("spread") or {}).items():
            try:
                if mm["min"] > mm["max"]:
                    problems.append(f"schemes.{name}.spread.{dotted}: min > max")
            except (KeyError, TypeError):
                pass  # not two numbers: the schema's problem, listed above
    for name in d.get("ratios") or {}:
        if name not in (d.get("schemes") or {}) or name == BASELINE:
            problems.append(f"ratios.{name}: not a compared scheme")
    return problems
