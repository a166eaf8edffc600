"""Report: report.md and its plots for a results directory.

Reads what summary.py builds (and refreshes summary.json, so the report
never shows stale numbers); only the over-time plots and the unmap-time
distribution need the per-run series. The plots mirror the paper's
evaluation figures:

  plots/reclaim_throughput.png  Fig. 12: swap-device write MB/s over time
  plots/response_time.png       Fig. 11: response time per foreground app
  plots/pressure.png            Fig. 13: LMKD kills, direct reclaims, major faults
  plots/swap_write_sizes.png    write-request sizes (storage-friendly writeback, §4.3)
  plots/victim_list.png         PMR's victim list size over time against its target
  plots/unmap_time.png          Fig. 7: distribution of the per-page unmap time (1-MB windows)
  plots/sweep_<key>.png         Fig. 15b: reclaim throughput against a swept knob
                                (only when the schemes form a sweep, sweep.py)
  plots/lwp_goals.png           the goals Acclaim's lightweight prediction gave
                                kswapd over time (only when a run has them, lwp.py)
  plots/anon_file_ratio.png     the anonymous over the file LRU pages over time,
                                every scheme (anon_file.py)
  plots/swappiness.png          the swappiness skew rectification's balance loop
                                set over time (only when a run has skew_balance.csv)

Beside report.md, regime.json: whether original's runs are in the paper's
regime, from this campaign alone (regime.py); report.md's Regime section
shows it.

Each scheme keeps one colour in every plot. Bars are medians over ok runs,
whiskers the min and max across reps.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.typing import ColorType

from ..analysis.fitting_runs import FIGURES as FIT_FIGURES
from ..config.sweep import Sweep, find_sweeps, unit
from ..guest.host_cpu import SATURATED_MARGIN
from .regime import build as build_regime
from .regime import markdown_lines as regime_lines
from .regime import save as save_regime
from .summary import (
    BASELINE,
    ICE_RATIO_FIGURES,
    RATIO_FIGURES,
    SWAM_BASELINES,
    SWAM_RATIO_FIGURES,
    Run,
    build_summary,
    get_path,
    has_ice,
    ran_swam,
    save_summary,
)

PLOT_FILES = {
    "throughput": "reclaim_throughput.png",
    "response": "response_time.png",
    "pressure": "pressure.png",
    "write_sizes": "swap_write_sizes.png",
    "victims": "victim_list.png",
    "unmap_time": "unmap_time.png",
    "settled": "settled_state.png",
}
PLOT_CAPTIONS = {
    "throughput": (
        "Reclaim throughput over time (paper Fig. 12): swap-device write MB/s "
        "per 1-s window; the bold line is each scheme's median run (by mean "
        "throughput), faint lines are its other reps, and higher means faster "
        "reclaim."
    ),
    "response": (
        "Response time per foreground app (paper Fig. 11): bar = median over reps "
        "of the app's mean switch time, whiskers = min and max across reps; the "
        "last group is over all switches, and lower is better."
    ),
    "pressure": (
        "Memory-pressure symptoms (paper Fig. 13): LMKD kills, direct reclaims "
        "(allocstall) and major page faults per run, median with min-max "
        "whiskers; lower is better."
    ),
    "write_sizes": (
        "Swap write-request sizes in power-of-two buckets ([x, 2x) KiB): left, "
        "requests per run (log scale); right, the share of swapped bytes each "
        "bucket carries; mass further right means larger, more flash-friendly "
        "writes."
    ),
    "victims": (
        "PMR's victim list over time (MB, sampled every 100 ms) for each scheme "
        "that filled one, median run; the dashed line is the target delta kshrinkd "
        "worked to at each of its rounds (from its round tracepoint; three times "
        "kswapd's goal, which rises while a watermark boost lasts). Algorithm 1 "
        "keeps the list near delta between reclaim bursts."
    ),
    "unmap_time": (
        "Per-page unmap time (paper Fig. 7): the cumulative distribution, over "
        "every 1-MB window of kswapd's unmapping in every ok run, of its "
        "try_to_unmap() and TLB-flush time divided by the pages it tried "
        "(`mm_vmscan_writeback_time` events summed in trace order until 256 pages "
        "were tried: the same granularity for a bulk batch as for the original "
        "path's calls of 32 folios; log scale). A curve further left is cheaper "
        "unmapping, a steeper one steadier."
    ),
    "settled": (
        "How each repetition settled after lmkd's last kill (settled_state.py): "
        "its mean response time against the file pages it refaulted per second "
        "from then to the end, one point per repetition, labelled with its kill "
        "count. Points on the right are runs whose survivors did not fit: swap "
        "full, file pages thrashing, and no further kill."
    ),
}
LWP_PLOT = "lwp_goals.png"
LWP_CAPTION = (
    "kswapd's goal as Acclaim's lightweight prediction set it at each kswapd round "
    "(`mm_vmscan_kswapd_lwp_goal`, kB, each scheme's first repetition): the marks are "
    "the goals LWP set, the dashed line the stock goal kswapd would have had (the "
    "zones' high watermarks). A goal under the dashed line is a round that reclaims "
    "less than the stock kernel's."
)
ANON_FILE_PLOT = "anon_file_ratio.png"
ANON_FILE_CAPTION = (
    "Anonymous over file pages resident (vmstat: nr_active_anon + nr_inactive_anon over "
    "nr_active_file + nr_inactive_file) over time, each scheme's first repetition: the "
    "skew rectification paper's premise is that this ratio runs high while app switches "
    "read file pages; a scheme that swaps unused anonymous pages out lowers it."
)
SWAPPINESS_PLOT = "swappiness.png"
SWAPPINESS_CAPTION = (
    "vm.swappiness as skew rectification's balance loop set it at each period "
    "(skew_balance.csv, each scheme's first repetition): down by a step while anonymous "
    "refaults exceed their threshold, up while file refaults reach theirs."
)
# the skew rectification paper's headline (TECS 22(5s):140, 2023, abstract):
# app-switch latency "up to 43%" lower than the original kernel's
SKEW_PAPER_RATIO = 0.57
SKEW_FIGURE = "switch_kinds.hot.mean_ms"
SWEEP_CAPTION = (
    "Reclaim throughput against `{key}` (paper Fig. 15b): left, the peak and "
    "mean swap-device write MB/s, right, the mean response time; points are "
    "medians over reps, whiskers the min and max."
)
HEADLINE = [  # (column title, dotted path in a scheme entry)
    ("response mean ms", "response_ms.mean"),
    ("p50 ms", "response_ms.p50"),
    ("p95 ms", "response_ms.p95"),
    ("reclaim mean MB/s", "reclaim_mbps.mean"),
    ("reclaim peak MB/s", "reclaim_mbps.peak"),
    ("kills", "kills"),
    ("allocstall", "allocstall"),
    ("memory stall s (PSI some)", "memory_stall_s.some"),
    ("major faults", "pgmajfault"),
    ("swap out MB", "pswpout_mb"),
    ("cold launches", "cold_launches"),
    ("hot launches", "hot_launches"),
    ("reclaim CPU s", "reclaim_cpu_total"),
    ("reclaim CPU µs/page", "reclaim_cpu_us_per_page"),
    ("mean swap write KiB", "swap_write_kb.mean"),
]
RATIO_TITLES = {
    "response_ms.mean": "response mean",
    "switch_kinds.hot.mean_ms": "hot switch response",
    "reclaim_mbps.peak": "reclaim peak",
    "kills": "kills",
    "allocstall": "allocstall",
    "memory_stall_s.some": "memory stall",
    "reclaim_cpu_total": "reclaim CPU",
    "reclaim_cpu_us_per_page": "reclaim CPU per page",
    "pswpout_mb": "swap out",
    "settled.until_last_kill.reclaim_cpu_s": "reclaim CPU until the last kill",
    "settled.until_last_kill.pswpout_mb": "swap out until the last kill",
}
PRESSURE_PANELS = [
    ("kills", "LMKD kills"),
    ("allocstall", "Direct reclaims (allocstall)"),
    ("pgmajfault", "Major page faults"),
]


def write_report(results_dir: Path, built: tuple[dict, dict[str, list[Run]]] | None = None) -> Path:
    """Write summary.json, regime.json, report.md and plots/*.png; return
    report.md's path. `built` is build_summary(results_dir) when the caller
    already has it."""
    summary, ok = built or build_summary(results_dir)
    save_summary(results_dir, summary)
    regime = build_regime(results_dir, "campaign", ok.get(BASELINE, []))
    save_regime(results_dir, regime)
    plot_dir = results_dir / "plots"
    plot_dir.mkdir(exist_ok=True)
    colours = scheme_colours(list(summary["schemes"]))
    measured = {name: e for name, e in summary["schemes"].items() if e["runs"] > 0}
    plot_throughput(ok, colours, plot_dir / PLOT_FILES["throughput"])
    plot_response(measured, colours, plot_dir / PLOT_FILES["response"])
    plot_pressure(measured, colours, plot_dir / PLOT_FILES["pressure"])
    plot_write_sizes(measured, colours, plot_dir / PLOT_FILES["write_sizes"])
    plot_victims(ok, colours, plot_dir / PLOT_FILES["victims"])
    plot_unmap_time(ok, colours, plot_dir / PLOT_FILES["unmap_time"])
    plot_settled(measured, colours, plot_dir / PLOT_FILES["settled"])
    for key, sweeps in sweeps_by_key(summary["schemes"]).items():
        plot_sweep(key, sweeps, summary["schemes"], plot_dir / sweep_file(key))
    if any(r.metrics.lwp_goal_list for runs in ok.values() for r in runs):
        plot_lwp_goals(ok, colours, plot_dir / LWP_PLOT)
    if any(r.metrics.anon_file_series[0] for runs in ok.values() for r in runs):
        plot_anon_file_ratio(ok, colours, plot_dir / ANON_FILE_PLOT)
    if any(r.metrics.swappiness_series[0] for runs in ok.values() for r in runs):
        plot_swappiness(ok, colours, plot_dir / SWAPPINESS_PLOT)
    path = results_dir / "report.md"
    path.write_text(render_markdown(summary, regime))
    return path


# ---- plots -----------------------------------------------------------------


def scheme_colours(schemes: list[str]) -> dict[str, ColorType]:
    palette = matplotlib.color_sequences["tab10"]
    return {name: palette[i % len(palette)] for i, name in enumerate(schemes)}


def save_figure(fig: plt.Figure, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _legend_outside(ax: Axes) -> None:
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def no_data(ax: Axes, what: str) -> None:
    ax.text(
        0.5,
        0.5,
        f"no {what}",
        ha="center",
        va="center",
        transform=ax.transAxes,
        fontsize=12,
        color="grey",
    )


def median_run(runs: list[Run]) -> Run:
    """The run whose mean reclaim throughput is the (lower) median of its scheme."""
    ranked = sorted(runs, key=lambda r: (r.metrics.reclaim_mbps["mean"] or 0.0, r.rep))
    return ranked[(len(ranked) - 1) // 2]


def _midpoints(window_starts_s: list[float]) -> list[float]:
    return [t + 0.5 for t in window_starts_s]


def plot_throughput(ok: dict[str, list[Run]], colours: dict, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(11.5, 4.8))
    for scheme, runs in ok.items():
        if not runs:
            continue
        rep_run = median_run(runs)
        for r in runs:
            if r is not rep_run:
                ax.plot(
                    _midpoints(r.metrics.reclaim_t_s),
                    r.metrics.reclaim_series_mbps,
                    color=colours[scheme],
                    alpha=0.25,
                    linewidth=0.8,
                )
        m = rep_run.metrics
        ax.plot(
            _midpoints(m.reclaim_t_s),
            m.reclaim_series_mbps,
            color=colours[scheme],
            linewidth=1.6,
            label=f"{scheme} (rep {rep_run.rep}, peak {fmt(m.reclaim_mbps['peak'])} MB/s)",
        )
    if ax.lines:
        _legend_outside(ax)
        ax.set_ylim(bottom=0)
    else:
        no_data(ax, "ok runs")
    ax.set(
        title="Reclaim throughput (swap-device writes, 1-s windows)",
        xlabel="time since workload start (s)",
        ylabel="throughput (MB/s)",
    )
    ax.grid(alpha=0.3)
    save_figure(fig, path)


def plot_victims(ok: dict[str, list[Run]], colours: dict, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(11.5, 4.0))
    for scheme, runs in ok.items():
        filled = [r for r in runs if any(r.metrics.victim_series_mb)]
        if not filled:
            continue
        m = median_run(filled).metrics
        ax.plot(
            m.victim_t_s, m.victim_series_mb, color=colours[scheme], linewidth=1.2, label=scheme
        )
        t_s, target_mb = m.victim_target
        if t_s:
            ax.step(
                t_s,
                target_mb,
                where="post",
                color=colours[scheme],
                linestyle="--",
                linewidth=1.0,
                label=f"{scheme} target (median {fmt((m.pmr or {}).get('target_mb'))} MB)",
            )
    if ax.lines:
        _legend_outside(ax)
        ax.set_ylim(bottom=0)
    else:
        no_data(ax, "victim list (no scheme ran PMR)")
    ax.set(
        title="PMR victim list size",
        xlabel="time since workload start (s)",
        ylabel="victim pages (MB)",
    )
    ax.grid(alpha=0.3)
    save_figure(fig, path)


def plot_lwp_goals(ok: dict[str, list[Run]], colours: dict, path: Path) -> None:
    """Each scheme's first repetition with LWP goals: the goal and the stock
    goal at each kswapd round LWP set, kB."""
    fig, ax = plt.subplots(figsize=(11.5, 4.0))
    for scheme, runs in ok.items():
        with_goals = sorted((r for r in runs if r.metrics.lwp_goal_list), key=lambda r: r.rep)
        if not with_goals:
            continue
        run = with_goals[0]
        goals = run.metrics.lwp_goal_list
        t = [g.t_s for g in goals]
        ax.plot(
            t,
            [g.goal_kb for g in goals],
            ".",
            color=colours[scheme],
            markersize=4,
            label=f"{scheme} (rep {run.rep}, {len(goals)} goals)",
        )
        ax.step(
            t,
            [g.stock_kb for g in goals],
            where="post",
            color=colours[scheme],
            linestyle="--",
            linewidth=1.0,
            label=f"{scheme}: stock goal",
        )
    if ax.lines:
        _legend_outside(ax)
        ax.set_ylim(bottom=0)
    else:
        no_data(ax, "LWP goals (mm_vmscan_kswapd_lwp_goal)")
    ax.set(
        title="kswapd's goal under Acclaim's lightweight prediction",
        xlabel="time since workload start (s)",
        ylabel="goal (kB)",
    )
    ax.grid(alpha=0.3)
    save_figure(fig, path)


def first_rep_with(runs: list[Run], has) -> Run | None:
    """The run of the lowest repetition for which has(run.metrics) holds."""
    return next((r for r in sorted(runs, key=lambda r: r.rep) if has(r.metrics)), None)


def plot_anon_file_ratio(ok: dict[str, list[Run]], colours: dict, path: Path) -> None:
    """Each scheme's first repetition: the anon:file ratio per vmstat sample."""
    fig, ax = plt.subplots(figsize=(11.5, 4.0))
    for scheme, runs in ok.items():
        run = first_rep_with(runs, lambda m: m.anon_file_series[0])
        if run is None:
            continue
        t_s, ratios = run.metrics.anon_file_series
        mean = (run.metrics.anon_file_ratio or {}).get("mean")
        ax.plot(
            t_s,
            ratios,
            color=colours[scheme],
            linewidth=1.2,
            label=f"{scheme} (rep {run.rep}, mean {fmt(mean)})",
        )
    if ax.lines:
        _legend_outside(ax)
        ax.set_ylim(bottom=0)
    else:
        no_data(ax, "LRU sizes in vmstat.csv")
    ax.set(
        title="Anonymous over file pages resident (LRU lists)",
        xlabel="time since workload start (s)",
        ylabel="anon : file pages",
    )
    ax.grid(alpha=0.3)
    save_figure(fig, path)


def plot_swappiness(ok: dict[str, list[Run]], colours: dict, path: Path) -> None:
    """Each scheme's first repetition with skew_balance.csv: the swappiness
    its balance loop set at each period."""
    fig, ax = plt.subplots(figsize=(11.5, 4.0))
    for scheme, runs in ok.items():
        run = first_rep_with(runs, lambda m: m.swappiness_series[0])
        if run is None:
            continue
        t_s, swappiness = run.metrics.swappiness_series
        ax.step(
            t_s,
            swappiness,
            where="post",
            color=colours[scheme],
            linewidth=1.2,
            label=f"{scheme} (rep {run.rep})",
        )
    if ax.lines:
        _legend_outside(ax)
        ax.set_ylim(0, 205)
    else:
        no_data(ax, "skew_balance.csv")
    ax.set(
        title="vm.swappiness under skew rectification's balance loop",
        xlabel="time since workload start (s)",
        ylabel="swappiness",
    )
    ax.grid(alpha=0.3)
    save_figure(fig, path)


def ecdf(samples: list[float], max_points: int = 4000) -> tuple[np.ndarray, np.ndarray]:
    """(sorted values, share of samples at or below each), thinned to at most
    `max_points` evenly spaced ranks (the first and last are kept)."""
    values = np.sort(np.asarray(samples, dtype=float))
    shares = np.arange(1, len(values) + 1) / len(values)
    if len(values) > max_points:
        keep = np.unique(np.linspace(0, len(values) - 1, max_points).round().astype(int))
        values, shares = values[keep], shares[keep]
    return values, shares


def plot_unmap_time(ok: dict[str, list[Run]], colours: dict, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(9.5, 4.5))
    for scheme, runs in ok.items():
        samples = [v for r in runs for v in r.metrics.unmap_us_samples]
        if not samples:
            continue
        values, shares = ecdf(samples)
        positive = values > 0  # a log axis cannot show 0: the curve starts at their share
        if not positive.any():
            continue
        values, shares = values[positive], shares[positive]
        start = float(np.mean(np.asarray(samples) <= 0))
        p50, p95 = np.percentile(samples, [50, 95])
        ax.step(
            [values[0], *values],
            [start, *shares],
            where="post",
            color=colours[scheme],
            linewidth=1.4,
            label=f"{scheme} (p50 {fmt(float(p50))}, p95 {fmt(float(p95))} µs)",
        )
    if ax.lines:
        ax.set_xscale("log")
        _legend_outside(ax)
    else:
        no_data(ax, "unmap times (no mm_vmscan_writeback_time events)")
    ax.set(
        title="Per-page unmap time over 1-MB windows of kswapd's unmapping",
        xlabel="unmap time per page (µs, log scale)",
        ylabel="share of windows",
        ylim=(0, 1.02),
    )
    ax.grid(alpha=0.3, which="both")
    save_figure(fig, path)


def sweeps_by_key(schemes: dict[str, dict]) -> dict[str, list[Sweep]]:
    """The sweeps among the schemes with ok runs, grouped by swept key."""
    measured = [name for name, e in schemes.items() if e["runs"] > 0]
    by_key: dict[str, list[Sweep]] = {}
    for sweep in find_sweeps(measured):
        by_key.setdefault(sweep.key, []).append(sweep)
    return by_key


def sweep_file(key: str) -> str:
    return "sweep_" + re.sub(r"[^\w.-]", "_", key) + ".png"


def _axis_label(key: str) -> str:
    return f"{key} ({unit(key)})" if unit(key) else key


def errorbar(ax: Axes, xs: list[float], entries: list[dict], dotted: str, **style) -> None:
    """Medians at xs with [min, max] whiskers; points without a value are left out."""
    points = [
        (x, *whiskers(e, dotted)) for x, e in zip(xs, entries) if get_path(e, dotted) is not None
    ]
    if not points:
        return
    x, y, errs = zip(*points)
    yerr = [
        [err[0][0] if err else 0.0 for err in errs],
        [err[1][0] if err else 0.0 for err in errs],
    ]
    ax.errorbar(x, y, yerr=yerr, capsize=3, **style)


def plot_sweep(key: str, sweeps: list[Sweep], schemes: dict[str, dict], path: Path) -> None:
    fig, (ax_t, ax_r) = plt.subplots(1, 2, figsize=(12, 4.5))
    palette = matplotlib.color_sequences["tab10"]
    values = [v for s in sweeps for v, _ in s.points]
    for i, sweep in enumerate(sweeps):
        xs = [v for v, _ in sweep.points]
        entries = [schemes[name] for _, name in sweep.points]
        colour = palette[i % len(palette)]
        errorbar(
            ax_t,
            xs,
            entries,
            "reclaim_mbps.peak",
            color=colour,
            marker="o",
            label=f"{sweep.label}: peak",
        )
        errorbar(
            ax_t,
            xs,
            entries,
            "reclaim_mbps.mean",
            color=colour,
            marker="s",
            linestyle="--",
            label=f"{sweep.label}: mean",
        )
        errorbar(ax_r, xs, entries, "response_ms.mean", color=colour, marker="o", label=sweep.label)
    for ax, title, ylabel in (
        (ax_t, "Reclaim throughput", "swap-device writes (MB/s)"),
        (ax_r, "Mean response time", "response time (ms)"),
    ):
        if min(values) > 0:
            ax.set_xscale("log")
        ticks = sorted(set(values))
        ax.set_xticks(ticks, [f"{v:g}" for v in ticks])
        ax.minorticks_off()
        ax.set(title=title, xlabel=_axis_label(key), ylabel=ylabel)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(frameon=False, fontsize=8)
        else:
            no_data(ax, "values")
    save_figure(fig, path)


def whiskers(entry: dict, dotted: str) -> tuple[float, list[list[float]] | None]:
    """Bar height (0 for None) and matplotlib yerr for the [min, max] spread."""
    value = get_path(entry, dotted)
    spread = entry.get("spread", {}).get(dotted)
    if value is None:
        return 0.0, None
    if spread is None:
        return value, None
    return value, [[value - spread["min"]], [spread["max"] - value]]


def _grouped_bars(
    ax: Axes, groups: list[tuple[str, str]], schemes: dict[str, dict], colours: dict
) -> None:
    """One group of bars per (label, dotted path); one bar per scheme in each."""
    width = 0.8 / max(len(schemes), 1)
    for i, (scheme, entry) in enumerate(schemes.items()):
        for g, (_, dotted) in enumerate(groups):
            height, yerr = whiskers(entry, dotted)
            ax.bar(
                g + (i - (len(schemes) - 1) / 2) * width,
                height,
                width,
                color=colours[scheme],
                yerr=yerr,
                capsize=3,
                error_kw={"elinewidth": 1, "ecolor": "black"},
                label=scheme if g == 0 else None,
            )
    ax.set_xticks(range(len(groups)), [label for label, _ in groups])


def plot_response(schemes: dict[str, dict], colours: dict, path: Path) -> None:
    apps = sorted({app for e in schemes.values() for app in e.get("response_by_app", {})})
    groups = [(app, f"response_by_app.{app}") for app in apps]
    groups.append(("all switches", "response_ms.mean"))
    bars = len(groups) * max(len(schemes), 1)
    fig, ax = plt.subplots(figsize=(min(16.0, max(6.0, 2.0 + 0.35 * bars)), 4.8))
    if schemes:
        _grouped_bars(ax, groups, schemes, colours)
        _legend_outside(ax)
    else:
        no_data(ax, "ok runs")
    ax.set(
        title="Response time per foreground app (mean of its switches)", ylabel="response time (ms)"
    )
    ax.grid(axis="y", alpha=0.3)
    save_figure(fig, path)


def plot_settled(schemes: dict[str, dict], colours: dict, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    plotted = False
    for name, e in schemes.items():
        points = [
            (r["settled.file_refaults_per_s"], r["response_ms.mean"], r["kills"])
            for r in e.get("by_rep", [])
            if r["settled.file_refaults_per_s"] is not None and r["response_ms.mean"] is not None
        ]
        if not points:
            continue
        plotted = True
        xs, ys, _ = zip(*points)
        ax.scatter(xs, ys, color=colours[name], label=name)
        for x, y, k in points:
            ax.annotate(str(k), (x, y), textcoords="offset points", xytext=(4, 3), fontsize=8)
    if plotted:
        _legend_outside(ax)
    else:
        no_data(ax, "repetitions with switches")
    ax.set(
        title="Repetitions by how they settled (labels: kills)",
        xlabel="file refaults per second after the last kill",
        ylabel="response time mean (ms)",
    )
    ax.grid(alpha=0.3)
    save_figure(fig, path)


def plot_pressure(schemes: dict[str, dict], colours: dict, path: Path) -> None:
    fig, axes = plt.subplots(1, len(PRESSURE_PANELS), figsize=(12, 4.2))
    for ax, (dotted, title) in zip(axes, PRESSURE_PANELS):
        for x, (scheme, entry) in enumerate(schemes.items()):
            height, yerr = whiskers(entry, dotted)
            ax.bar(x, height, 0.6, color=colours[scheme], yerr=yerr, capsize=4)
            top = height + (yerr[1][0] if yerr else 0.0)
            ax.annotate(
                fmt(get_path(entry, dotted)),
                (x, top),
                ha="center",
                va="bottom",
                xytext=(0, 2),
                textcoords="offset points",
                fontsize=8,
            )
        ax.set_xticks(range(len(schemes)), list(schemes))
        ax.set(title=title, ylabel="count per run")
        ax.grid(axis="y", alpha=0.3)
        if not schemes:
            no_data(ax, "ok runs")
    save_figure(fig, path)


def size_bucket_kb(size_kb: float) -> float:
    """Power-of-two bucket [x, 2x) KiB that a request size falls in."""
    return 2.0 ** math.floor(math.log2(size_kb))


def _bucket_label(kb: float) -> str:
    return f"{kb / 1024:g}M" if kb >= 1024 else f"{kb:g}K"


def bucketed(hist: dict[str, int]) -> dict[float, tuple[int, float]]:
    """{size_kb: requests} -> {bucket_kb: (requests, KiB written)}."""
    buckets: dict[float, tuple[int, float]] = {}
    for size, count in hist.items():
        b = size_bucket_kb(float(size))
        n, kib = buckets.get(b, (0, 0.0))
        buckets[b] = (n + count, kib + float(size) * count)
    return buckets


def plot_write_sizes(schemes: dict[str, dict], colours: dict, path: Path) -> None:
    hists = {
        s: (bucketed(e["swap_write_kb"]["hist"]), e["runs"])
        for s, e in schemes.items()
        if e["swap_write_kb"]["hist"]
    }
    present = {b for by_bucket, _ in hists.values() for b in by_bucket}
    # every power of two from the smallest to the largest, so the axis is a log-2 scale
    buckets = (
        [min(present) * 2**i for i in range(round(math.log2(max(present) / min(present))) + 1)]
        if present
        else []
    )
    fig, (ax_n, ax_b) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / max(len(hists), 1)
    for i, (scheme, (by_bucket, runs)) in enumerate(hists.items()):
        total_kib = sum(kib for _, kib in by_bucket.values())
        requests, kib = zip(*(by_bucket.get(b, (0, 0.0)) for b in buckets))
        xs = [x + (i - (len(hists) - 1) / 2) * width for x in range(len(buckets))]
        ax_n.bar(xs, [n / runs for n in requests], width, color=colours[scheme], label=scheme)
        ax_b.bar(xs, [100 * k / total_kib for k in kib], width, color=colours[scheme], label=scheme)
    for ax, title, ylabel in (
        (ax_n, "Swap write requests by size", "requests per run"),
        (ax_b, "Share of swapped bytes by request size", "% of bytes"),
    ):
        ax.set_xticks(range(len(buckets)), [_bucket_label(b) for b in buckets])
        ax.set(title=title, xlabel="request size bucket [x, 2x)", ylabel=ylabel)
        ax.grid(axis="y", alpha=0.3)
        if hists:
            ax.legend(frameon=False)
        else:
            no_data(ax, "write-size histogram")
    if hists:
        ax_n.set_yscale("log")
    save_figure(fig, path)


# ---- markdown --------------------------------------------------------------


def fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, int):
        return f"{v:,}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def cell(value, spread: dict | None) -> str:
    text = fmt(value)
    return f"{text} [{fmt(spread['min'])}, {fmt(spread['max'])}]" if spread else text


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def headline_table(schemes: dict[str, dict]) -> list[str]:
    rows = []
    for name, e in schemes.items():
        spread = e.get("spread", {})
        rows.append(
            [
                f"**{name}**",
                str(e["runs"]),
                *(cell(get_path(e, p), spread.get(p)) for _, p in HEADLINE),
            ]
        )
    return md_table(["scheme", "runs", *(title for title, _ in HEADLINE)], rows)


def cpu_table(schemes: dict[str, dict]) -> list[str]:
    threads = sorted({t for e in schemes.values() for t in (e.get("reclaim_cpu_s") or {})})
    rows = [
        [
            name,
            *(
                cell(
                    get_path(e, f"reclaim_cpu_s.{t}"), e.get("spread", {}).get(f"reclaim_cpu_s.{t}")
                )
                for t in threads
            ),
        ]
        for name, e in schemes.items()
        if e["runs"] > 0
    ]
    return md_table(["scheme", *(f"{t} s" for t in threads)], rows) if threads else []


SWITCH_KIND_COLUMNS = [
    ("switch_kinds.cold.switches", "cold switches"),
    ("switch_kinds.cold.mean_ms", "cold mean ms"),
    ("switch_kinds.cold.share", "cold share of response time"),
    ("switch_kinds.hot.switches", "hot switches"),
    ("switch_kinds.hot.mean_ms", "hot mean ms"),
    ("switch_kinds.hot.swapin_pages", "pages swapped in during hot switches"),
    ("switch_kinds.hot.file_refault_pages", "file pages refaulted during hot switches"),
]


def switch_kind_table(schemes: dict[str, dict]) -> list[str]:
    """Response time split into cold and hot switches (metrics.switch_kinds)."""
    return _scheme_table(schemes, SWITCH_KIND_COLUMNS, lambda e: e.get("switch_kinds"))


# where a launch's time went, as the slowest process of the app measured it
LAUNCH_COST_STEPS = {
    "cold": [("files_ms", "files ms"), ("init_ms", "init ms"), ("heap_ms", "heap ms")],
    "hot": [("heap_ms", "heap ms"), ("files_ms", "files ms")],
}
LAUNCH_COST_SPLIT = [
    ("user_ms", "user ms"),
    ("sys_ms", "system ms"),
    ("runq_ms", "waiting for a CPU ms"),
    ("blocked_ms", "blocked ms"),
    ("outside_ms", "outside the launch ms"),
    ("major_faults", "major faults"),
]


# a cold launch's heap fill, summed over the threads that filled it
LAUNCH_FILL_COLUMNS = [
    ("switch_kinds.cold.cost.heap_ms", "heap ms"),
    ("switch_kinds.cold.cost.fill_threads", "threads"),
    ("switch_kinds.cold.cost.fill_wall_ms", "threads' wall ms"),
    ("switch_kinds.cold.cost.fill_user_ms", "user ms"),
    ("switch_kinds.cold.cost.fill_sys_ms", "system ms"),
    ("switch_kinds.cold.cost.fill_runq_ms", "waiting for a CPU ms"),
    ("switch_kinds.cold.cost.fill_blocked_ms", "blocked ms"),
    ("switch_kinds.cold.cost.fill_major_faults", "major faults"),
]


def launch_fill_table(schemes: dict[str, dict]) -> list[str]:
    """Where the cold launches' heap fill spent its threads' time, for the
    schemes whose runtime measured it (metrics.mean_launch_cost)."""
    return _scheme_table(
        schemes,
        LAUNCH_FILL_COLUMNS,
        lambda e: get_path(e, "switch_kinds.cold.cost.fill_wall_ms") is not None,
    )


def launch_cost_table(schemes: dict[str, dict], kind: str) -> list[str]:
    """Where the launches of one kind spent their time (metrics.mean_launch_cost),
    for the schemes whose runtime measured it."""
    columns = [
        (f"switch_kinds.{kind}.mean_ms", "response ms"),
        *(
            (f"switch_kinds.{kind}.cost.{k}", t)
            for k, t in LAUNCH_COST_STEPS[kind] + LAUNCH_COST_SPLIT
        ),
    ]
    return _scheme_table(
        schemes, columns, lambda e: get_path(e, f"switch_kinds.{kind}.cost.wall_ms") is not None
    )


PMR_COLUMNS = [
    ("pmr.kshrinkd_wake", "kshrinkd wake-ups"),
    ("pmr.pgscan_kshrinkd", "pages scanned"),
    ("pmr.pmr_victim_added", "victims added"),
    ("pmr.pmr_victim_reclaimed", "victims reclaimed"),
    ("pmr.pmr_victim_putback", "victims put back"),
    ("pmr.nr_victim_mb.mean", "victim list mean MB"),
    ("pmr.nr_victim_mb.min", "min MB"),
    ("pmr.nr_victim_mb.max", "max MB"),
    ("pmr.nr_victim_mb.last", "at end MB"),
    ("pmr.target_mb", "target MB"),
    ("pmr.kshrinkd_fill.median", "round added / asked, median"),
    ("pmr.kshrinkd_fill.max", "max"),
]
# PMR part 2's counters: columns only when some scheme's kernel has them
PMR_BULK_COLUMNS = [
    ("pmr.pmr_batch", "bulk batches"),
    ("pmr.pmr_batch_pages", "batch pages"),
    ("pmr.pmr_batch_pageout", "batch pageouts"),
]


def _rows(schemes: dict[str, dict], columns: list[tuple[str, str]], keep) -> list[list[str]]:
    """A row per scheme for which keep(entry) holds: its name, then each
    column's median with [min, max]."""
    return [
        [name, *(cell(get_path(e, key), e.get("spread", {}).get(key)) for key, _ in columns)]
        for name, e in schemes.items()
        if keep(e)
    ]


def _scheme_table(schemes: dict[str, dict], columns: list[tuple[str, str]], keep) -> list[str]:
    """The table of _rows() under a `scheme` column and the columns' titles;
    no lines when no scheme is kept."""
    rows = _rows(schemes, columns, keep)
    return md_table(["scheme", *(title for _, title in columns)], rows) if rows else []


LRU_BALANCE_COLUMNS = [
    ("lru_balance.file_refaults", "file refaults"),
    ("lru_balance.file_activated_share", "share activated"),
    ("lru_balance.pgdeactivate", "pages deactivated"),
    ("lru_balance.active_file_mb", "active file mean MB"),
    ("lru_balance.inactive_file_mb", "inactive file mean MB"),
    ("lru_balance.victim_file_mb", "file victims mean MB"),
]


def lru_balance_table(schemes: dict[str, dict]) -> list[str]:
    """How reclaim balanced the LRU lists (lru_balance.py)."""
    return _scheme_table(schemes, LRU_BALANCE_COLUMNS, lambda e: e.get("lru_balance"))


SWAP_FATE_COLUMNS = [
    ("swap_fate.written_mb", "written MB"),
    ("swap_fate.anon_freed_mb", "anon freed MB"),
    ("swap_fate.written_not_freed_mb", "written, not freed MB"),
    ("swap_fate.swap_cache_end_mb", "in swap cache at end MB"),
    ("swap_fate.dropped_mb", "dropped MB"),
]
# patch 12's counters: columns only when some scheme's kernel has them
SWAP_FATE_PMR_COLUMNS = [
    ("pmr.pmr_victim_swapin", "victims swapped in"),
    ("pmr.pmr_victim_freed", "victims freed by owner"),
]


def swap_fate_table(schemes: dict[str, dict]) -> list[str]:
    """What became of the pages written to swap (swap_fate.py)."""
    columns = SWAP_FATE_COLUMNS + [
        c
        for c in SWAP_FATE_PMR_COLUMNS
        if any(get_path(e, c[0]) is not None for e in schemes.values())
    ]
    return _scheme_table(schemes, columns, lambda e: e.get("swap_fate"))


def pmr_table(schemes: dict[str, dict]) -> list[str]:
    """PMR's counters, for the schemes run on a kernel that has them."""
    with_pmr = {name: e for name, e in schemes.items() if e.get("pmr")}
    columns = PMR_COLUMNS + [
        c for c in PMR_BULK_COLUMNS if any(get_path(e, c[0]) is not None for e in with_pmr.values())
    ]
    return _scheme_table(with_pmr, columns, lambda e: True)


WRITEBACK_COLUMNS = [
    ("writeback.unmap_us_per_page.p50", "unmap µs/page p50"),
    ("writeback.unmap_us_per_page.p95", "p95"),
    ("writeback.unmap_us_per_page_mean", "unmap µs/page mean"),
    ("writeback.unmap_window_us_per_page.p50", "1-MB windows p50"),
    ("writeback.unmap_window_us_per_page.p99", "1-MB windows p99"),
    ("writeback.pageout_us_per_page.p50", "pageout µs/page p50"),
    ("writeback.unmap_share", "unmap share"),
    ("writeback.unmap_s", "unmap s"),
    ("writeback.pageout_s", "pageout s"),
    ("bulk.batches", "bulk batches"),
    ("bulk.pages_per_batch_mean", "pages per batch"),
    ("bulk.first_pass_us_per_page_p50", "batch first pass µs/page p50"),
]


def writeback_table(schemes: dict[str, dict]) -> list[str]:
    """Unmap and pageout cost and PMR's bulk batches, for the schemes whose
    kernel reported them."""
    return _scheme_table(
        schemes,
        WRITEBACK_COLUMNS,
        lambda e: e.get("writeback") is not None or e.get("bulk") is not None,
    )


KSWAPD_ROUND_COLUMNS = [
    ("kswapd_rounds.rounds", "rounds"),
    ("kswapd_rounds.duration_ms", "round ms"),
    ("kswapd_rounds.shrink_ms", "shrinking ms"),
    ("kswapd_rounds.writeback_ms", "writeback ms"),
    ("kswapd_rounds.writeback_share", "writeback share"),
    ("kswapd_rounds.nr_to_reclaim", "nr_to_reclaim"),
    ("kswapd_rounds.nr_reclaimed", "nr_reclaimed"),
    ("kswapd_rounds.reclaimed_ratio", "reclaimed / goal"),
    ("kswapd_rounds.goal_met_share", "rounds that met the goal"),
    ("kswapd_rounds.busiest_second_share", "busiest second in rounds"),
]


def kswapd_round_table(schemes: dict[str, dict]) -> list[str]:
    """kswapd's rounds (Figs. 5 and 6), for the schemes whose kernel traced them."""
    return _scheme_table(
        schemes, KSWAPD_ROUND_COLUMNS, lambda e: e.get("kswapd_rounds") is not None
    )


REFAULT_COLUMNS = [
    ("refaults.foreground.refault_anon", "in front: anon refaults"),
    ("refaults.foreground.refault_file", "file refaults"),
    ("refaults.background.refault_anon", "behind: anon refaults"),
    ("refaults.background.refault_file", "file refaults"),
    ("refaults.background_share", "share of refaults behind"),
    ("refaults.foreground.pgmajfault", "major faults in front"),
    ("refaults.background.pgmajfault", "behind"),
    ("refaults.foreground.pgsteal", "pages reclaimed in front"),
    ("refaults.background.pgsteal", "behind"),
]


def refault_table(schemes: dict[str, dict]) -> list[str]:
    """The apps' refaults in front and behind (app_refaults.py)."""
    return _scheme_table(schemes, REFAULT_COLUMNS, lambda e: e.get("refaults") is not None)


ACCLAIM_COLUMNS = [
    ("fae_kept_inactive", "FAE: kept inactive"),
    ("lwp.goals", "LWP goals"),
    ("lwp.goal_kb.min", "goal kB min"),
    ("lwp.goal_kb.median", "median"),
    ("lwp.goal_kb.max", "max"),
    ("lwp.stock_kb", "stock goal kB"),
    ("lwp.ratio.median", "demand ratio % median"),
    ("lwp.ratio.max", "max"),
    ("lwp.above_stock_share", "goals above stock"),
]


def acclaim_table(schemes: dict[str, dict]) -> list[str]:
    """Acclaim's counter and LWP's goals, for the schemes on a kernel that has them."""
    return _scheme_table(
        schemes,
        ACCLAIM_COLUMNS,
        lambda e: e.get("fae_kept_inactive") is not None or e.get("lwp") is not None,
    )


SKEW_COLUMNS = [
    ("skew.pageouts", "pageouts"),
    ("skew.pages_advised", "pages advised"),
    ("skew.idle_share", "idle share of marked pages"),
    ("skew.pageout_ms_median", "pageout ms median"),
    ("skew.pageout_cpu_ms", "pageout CPU ms"),
    ("skew.swappiness.min", "swappiness min"),
    ("skew.swappiness.median", "median"),
    ("skew.swappiness.max", "max"),
    ("skew.swappiness.final", "at end"),
    ("skew.swappiness.raised", "periods raised"),
    ("skew.swappiness.lowered", "lowered"),
]


def skew_table(schemes: dict[str, dict]) -> list[str]:
    """Skew rectification's pageouts and swappiness (skew.py), for the
    schemes whose runs have them."""
    return _scheme_table(schemes, SKEW_COLUMNS, lambda e: e.get("skew") is not None)


def skew_part(name: str) -> bool:
    """Whether a scheme (or a `+` combination) has the skew scheme as a part."""
    return any(p.partition("@")[0].strip() == "skew" for p in name.split("+"))


def skew_headline_lines(s: dict) -> list[str]:
    """A line per scheme with skew rectification compared with `original`:
    the median of the paired ratios of the hot-switch response time, with
    their min and max, beside the paper's "up to -43%"."""
    lines = []
    for name, r in s["ratios"].items():
        entry = s["schemes"].get(name) or {}
        if not (skew_part(name) or entry.get("skew")):
            continue
        spread = r["spread"].get(SKEW_FIGURE)
        if spread:
            ours = (
                f"{spread['median']:.3f} [{spread['min']:.3f}, {spread['max']:.3f}] "
                f"({spread['pairs']} paired reps)"
            )
        elif r.get(SKEW_FIGURE) is not None:
            ours = f"{r[SKEW_FIGURE]:.3f} (the medians' ratio: fewer than 2 paired reps)"
        else:
            ours = f"– (no hot switch in both, or {BASELINE}'s mean is 0)"
        p = p_text(r.get("p_value", {}).get(SKEW_FIGURE))
        lines.append(
            f"- `{name}` / `{BASELINE}`, hot-switch response time (mean): {ours}{p}; "
            f"the paper: up to {SKEW_PAPER_RATIO:.2f} (-43%, against the original kernel)."
        )
    if lines and (s.get("guest") or {}).get("swap", "flash") != "zram":
        lines.append(
            "- This campaign swaps to flash: a control. The paper swaps to zram, whose "
            "swap-in is cheaper than a flash file read (profile pixel6pro-zram)."
        )
    return lines


ANON_FILE_COLUMNS = [
    ("anon_file_ratio.mean", "anon:file mean"),
    ("anon_file_ratio.min", "min"),
    ("anon_file_ratio.max", "max"),
    ("anon_file_ratio.final", "at end"),
    ("switch_kinds.hot.mean_ms", "hot switch ms"),
    ("switch_kinds.hot.file_refault_pages", "file refaults in hot switches"),
    ("switch_kinds.hot.swapin_pages", "swap-ins in hot switches"),
]


def anon_file_table(schemes: dict[str, dict]) -> list[str]:
    """The anon:file ratio (anon_file.py) beside the hot switches' time,
    file refaults and swap-ins, for the schemes whose runs have the ratio."""
    return _scheme_table(schemes, ANON_FILE_COLUMNS, lambda e: e.get("anon_file_ratio") is not None)


ZRAM_COLUMNS = [
    ("zram.stored_mb.peak", "stored MB peak"),
    ("zram.stored_mb.final", "at end"),
    ("zram.used_mb.peak", "memory used MB peak"),
    ("zram.used_mb.final", "at end"),
    ("zram.compression_ratio", "compression ratio"),
]


def zram_table(schemes: dict[str, dict]) -> list[str]:
    """The zram device's sizes (zram.py), for the schemes whose runs swapped to zram."""
    return _scheme_table(schemes, ZRAM_COLUMNS, lambda e: e.get("zram") is not None)


# Ice's paper (Li et al., ACM TOCS 2025): Ice against LRU+CFS, the original
# kernel, on the Pixel 3 with 6 background apps where it says so, and Ice+
# against Ice (Table 6): figure -> (low, high) ratio and where it is from
ICE_PAPER = {
    "ice.frames.fps": ((1.57, 1.57), "Fig. 10, Pixel 3, 6 background apps"),
    "ice.frames.ria": ((1 - 0.327, 1 - 0.327), "-32.7%, Fig. 10"),
    "ice.refaults": ((1 - 0.576, 1 - 0.405), "-40.5..-57.6%, Fig. 11 (P20)"),
    "ice.reclaims": ((0.707, 0.707), "Fig. 11 (P20)"),
    "response_ms.mean": ((1 - 0.366, 1 - 0.366), "-36.6%, Fig. 12a"),
    "switch_kinds.cold.mean_ms": ((1 - 0.288, 1 - 0.288), "-28.8% of 4,237 ms, Fig. 12a"),
    "ice.launches.hot_after_first_round": ((1.25, 1.25), "+25%, Fig. 12b"),
}
ICE_PLUS_PAPER = {
    "ice.frames.fps": ((1.05, 1.05), "42.8 -> 45.0 fps"),
    "ice.reclaims": ((0.855, 0.855), "-14.5%"),
    "ice.refaults": ((0.873, 0.873), "-12.7%"),
}
ICE_RATIO_TITLES = {
    "ice.frames.fps": "FPS",
    "ice.frames.ria": "RIA (frames > 16.6 ms)",
    "ice.frames.jank": "jank",
    "ice.refaults": "refaults (vmstat)",
    "ice.refaults_foreground": "refaults in front",
    "ice.refaults_background": "refaults behind",
    "ice.reclaims": "reclaims (pgsteal)",
    "response_ms.mean": "launch",
    "switch_kinds.cold.mean_ms": "cold launch",
    "switch_kinds.hot.mean_ms": "hot launch",
    "ice.launches.hot_after_first_round": "hot launches after round 1",
    "kills": "kills",
}
ICE_COLUMNS = [
    ("ice.frames.fps", "FPS"),
    ("ice.frames.ria", "RIA"),
    ("ice.frames.jank", "jank"),
    ("ice.frames.big_jank", "big jank"),
    ("ice.refaults_foreground", "refaults in front"),
    ("ice.refaults_background", "behind"),
    ("ice.refaults", "refaults (vmstat)"),
    ("ice.reclaims", "reclaims"),
    ("refaults.foreground.pgsteal", "reclaimed in front"),
    ("refaults.background.pgsteal", "behind"),
    ("response_ms.mean", "launch ms"),
    ("switch_kinds.cold.mean_ms", "cold ms"),
    ("switch_kinds.hot.mean_ms", "hot ms"),
    ("ice.launches.hot_after_first_round", "hot launches after round 1"),
    ("ice.launches.hot_share_after_first_round", "their share"),
    ("kills", "kills"),
    ("ice.freezing.freezes_total", "freezes"),
    ("ice.freezing.frozen_apps", "apps frozen"),
]
ICE_FREEZING_COLUMNS = [
    ("ice.freezing.freezes.rpf", "freezes: rpf"),
    ("ice.freezing.freezes.rpf_user", "rpf_user"),
    ("ice.freezing.freezes.mdt", "mdt"),
    ("ice.freezing.thaws.mdt", "thaws: mdt"),
    ("ice.freezing.thaws.launch", "launch"),
    ("ice.freezing.thaws.death", "death"),
    ("ice.freezing.thaws.end", "end"),
    ("ice.freezing.frozen_apps", "apps frozen"),
    ("ice.freezing.frozen_s", "frozen s (summed)"),
    ("ice.freezing.end_frozen", "frozen at end"),
    ("ice.freezing.protected_freezes", "whitelisted apps frozen"),
    ("ice.freezing.front_freezes", "frozen in front (undone at once)"),
]
ICE_MDT_COLUMNS = [
    ("ice.freezing.epochs.count", "MDT epochs"),
    ("ice.freezing.epochs.freeze_ms_median", "E_f median ms"),
    ("ice.freezing.epochs.freeze_ms_max", "E_f max ms"),
    ("ice.freezing.epochs.available_kb_median", "S_am median kB"),
    ("ice.freezing.epochs.high_wm_kb", "H_wm kB"),
    ("ice.freezing.launch_thaws.count", "launches thawed"),
    ("ice.freezing.launch_thaws.mean_ms", "thaw mean ms"),
    ("ice.freezing.launch_thaws.max_ms", "thaw max ms"),
    ("ice.freezing.spared", "lmkd spared"),
    ("ice.freezing.vmstat.ice_rpf_refault", "vmstat ice_rpf_refault"),
    ("ice.freezing.vmstat.ice_rpf_freeze", "ice_rpf_freeze"),
    ("ice.freezing.vmstat.ice_frozen_reclaimed", "ice_frozen_reclaimed"),
]
ICE_BACKGROUND_CLASSES = ["perceptible", "cached", "service", "persistent"]


def _paper_cell(paper: dict, figure: str) -> str:
    if figure not in paper:
        return "–"
    (low, high), _ = paper[figure]
    return f"{low:.3g}" if low == high else f"{low:.3g}-{high:.3g}"


def ice_ratio_table(comparisons: list[dict]) -> list[str]:
    """Ice's figures, a column per comparison (the medians' ratio, [min, max]
    of the per-rep ratios, p), beside the paper's."""
    if not comparisons:
        return []
    rows = [
        [
            ICE_RATIO_TITLES[f],
            _paper_cell(ICE_PAPER, f),
            _paper_cell(ICE_PLUS_PAPER, f),
            *(
                cell(c["ratios"].get(f), c["spread"].get(f)) + p_text(c["p_value"].get(f))
                for c in comparisons
            ),
        ]
        for f in ICE_RATIO_FIGURES
    ]
    header = [
        "figure",
        "paper: Ice / LRU+CFS",
        "paper: Ice+ / Ice",
        *(f"{c['scheme']} / {c['base']}" for c in comparisons),
    ]
    return md_table(header, rows)


def ice_paper_sources() -> str:
    """Where the paper's ratios are from, one sentence."""
    ice = "; ".join(f"{ICE_RATIO_TITLES[f]}: {src}" for f, (_, src) in ICE_PAPER.items())
    plus = "; ".join(f"{ICE_RATIO_TITLES[f]}: {src}" for f, (_, src) in ICE_PLUS_PAPER.items())
    return f"The paper's ratios: Ice / LRU+CFS: {ice}. Ice+ / Ice (Table 6): {plus}."


def ice_app_table(schemes: dict[str, dict]) -> list[str]:
    """FPS and RIA of each app that drew frames, per scheme (Fig. 9)."""
    apps = sorted({a for e in schemes.values() for a in (get_path(e, "ice.by_app") or {})})
    columns = [
        c
        for app in apps
        for c in ((f"ice.by_app.{app}.fps", f"{app} FPS"), (f"ice.by_app.{app}.ria", "RIA"))
    ]
    return _scheme_table(schemes, columns, lambda e: get_path(e, "ice.by_app")) if apps else []


def ice_background_table(schemes: dict[str, dict]) -> list[str]:
    """The background periods done and late per oom_score_adj class."""
    classes = [
        c
        for c in ICE_BACKGROUND_CLASSES + ["unknown"]
        if any(get_path(e, f"ice.background_by_class.{c}") for e in schemes.values())
    ]
    columns = [
        c
        for cls in classes
        for c in (
            (f"ice.background_by_class.{cls}.periods", f"{cls}: periods"),
            (f"ice.background_by_class.{cls}.late", "late"),
            (f"ice.background_by_class.{cls}.max_ms", "longest ms"),
        )
    ]
    return _scheme_table(schemes, columns, has_ice) if classes else []


def _froze(entry: dict) -> bool:
    """Whether a scheme ran Ice (its runs have Ice's freezing figures)."""
    return get_path(entry, "ice.freezing") is not None


def ice_lines(s: dict) -> list[str]:
    """The Ice section: empty when no scheme has frames or Ice (has_ice)."""
    schemes = s["schemes"]
    if not any(has_ice(e) for e in schemes.values()):
        return []
    lines = ["## Ice", ""]
    if errors := [w for w in s["warnings"] if w.startswith("⚠")]:
        lines += [
            "**Ice errors** (apps left frozen, or whitelisted apps frozen):",
            "",
            *(f"- {w}" for w in errors),
            "",
        ]
    lines += [
        "Ice's figures (analysis/ice.py): FPS is each app's frames over the seconds it "
        "was in front after its launch, averaged over the apps that draw (the paper "
        "averages its four scenarios); RIA the share of frames over 16.6 ms; jank and big "
        "jank as PerfDog counts them (a frame over twice the mean of the three before it "
        "and over 83.3 ms, or 125 ms), summed; refaults in front and behind from the "
        "apps' cgroups (app_memcg.csv), refaults and reclaims of the whole guest from "
        "vmstat (workingset_refault_*, pgsteal_kswapd + pgsteal_direct), and the apps' "
        "pages reclaimed in front and behind (their cgroups' pgsteal); launch times "
        "are the switches' response times; hot launches after round 1 count the hot "
        "switches of rounds 2 on (Fig. 12b). Median `[min, max]` over reps.",
        "",
        *_scheme_table(schemes, ICE_COLUMNS, has_ice),
        "",
    ]
    if apps := ice_app_table(schemes):
        lines += ["FPS and RIA of each app while in front (Fig. 9):", "", *apps, ""]
    comparisons = (s.get("ice") or {}).get("comparisons") or []
    if table := ice_ratio_table(comparisons):
        lines += [
            "Against the paper: each comparison's medians' ratio, `[min, max]` of the "
            "per-rep ratios (rep i against rep i) where at least two reps pair up, and p as "
            f'in "Versus {BASELINE}". Read `X / {BASELINE}` against the paper\'s Ice / '
            "LRU+CFS, `ice-plus / ice` against its Ice+ / Ice. The paper's phones ran "
            "8 big and little cores and 10 rounds of each scenario; this guest has the "
            "profile's CPUs, and its apps are emulated.",
            "",
            *table,
            "",
            ice_paper_sources(),
            "",
        ]
    if freezing := _scheme_table(schemes, ICE_FREEZING_COLUMNS, _froze):
        lines += [
            "What Ice froze and thawed (events.jsonl): freezes by cause (rpf: the kernel "
            "froze the app at a refault; rpf_user: the guest's poll did, ice-us; mdt: "
            "frozen again after an MDT thaw window), thaws by cause (mdt: the thaw window; "
            "launch: the app came to the front; death; end: the end of the run), the apps "
            "frozen at least once and their frozen time summed; the app cgroups still "
            "frozen after the run and the freezes of whitelisted apps (persistent, or "
            "perceptible under protect_adj 200), both of which must be 0; and the "
            "freezes of an app in front, a kernel freeze that crossed the clearing of its "
            "mark, which the guest undoes at once.",
            "",
            *freezing,
            "",
            "MDT's epochs (E_f, and the S_am and H_wm it came from, Eq. 1), the launches "
            "that thawed their app and how long the thaw took (inside the launch's "
            "response time), lmkd's frozen candidates spared for holding swap (Ice+), and the "
            "kernel's Ice counters over the run (– on a kernel without them).",
            "",
            *_scheme_table(schemes, ICE_MDT_COLUMNS, _froze),
            "",
        ]
    if background := ice_background_table(schemes):
        lines += [
            "Background periods (ticks.csv; each app with bg_touch does one every period): "
            "done, late (done more than a period after it was due) and the longest, ms, "
            "per oom_score_adj class. The perceptible app's late periods are missed "
            "deadlines (audio dropouts): Ice's whitelist keeps it unfrozen (§6.3); the "
            "cached apps' periods fall with the time they spend frozen.",
            "",
            *background,
            "",
        ]
    if reasons := kill_reason_lines(schemes):
        lines += [*reasons, ""]
    return lines


# SWAM's paper (Lim et al., MobiCom'23): SWAM against stock Android with
# zram 1 GB (lz4) and with a 3 GB flash swap partition, its two baselines:
# figure -> (low, high) ratio and where it is from
SWAM_PAPER = {
    "kills": ((1 / 6.5, 1 / 6.5), "6.5x fewer kills"),
    "swam.launch_ms.p50": ((1 - 0.36, 1 - 0.36), "launch time 36% faster"),
    "swam.response_ms.p50": ((1 - 0.41, 1 - 0.41), "response time 41% faster"),
}
SWAM_RATIO_TITLES = {
    "kills": "kills (lmkd)",
    "swam.relaunches": "relaunches after a kill",
    "swam.relaunch_cost_ms": "relaunch cost (files + init)",
    "swam.launch_ms.p50": "launch (cold switch) median",
    "swam.launch_ms.p90": "launch p90",
    "swam.response_ms.p50": "response (every switch) median",
    "swam.response_ms.p90": "response p90",
    "swam.zram_write_mb": "zram writes",
    "swam.flash_write_mb": "flash writes",
}
SWAM_COLUMNS = [
    ("kills", "kills"),
    ("swam.relaunches", "relaunches"),
    ("swam.relaunch_cost_ms", "relaunch cost ms"),
    ("swam.launch_ms.p50", "launch ms median"),
    ("swam.launch_ms.p90", "p90"),
    ("swam.response_ms.p50", "response ms median"),
    ("swam.response_ms.p90", "p90"),
    ("swam.zram_write_mb", "zram writes MB"),
    ("swam.flash_write_mb", "flash writes MB"),
    ("swam.swapd.added", "swap files added"),
    ("swam.swapd.removed", "removed"),
    ("swam.swapd.tier_peak_mb", "flash tier largest MB"),
]
SWAM_PART_COLUMNS = [
    ("swam.swapd.files_max", "most swap files"),
    ("swam.swapd.files_end", "at end"),
    ("swam.swapd.add_ms_mean", "add ms mean"),
    ("swam.swapd.add_ms_max", "max"),
    ("swam.swapd.remove_ms_mean", "remove ms mean"),
    ("swam.swapd.remove_ms_max", "max"),
    ("swam.eoom.kills_costed", "EOOM: kills of a known cost"),
    ("swam.eoom.victim_relaunch_ms", "victims' cost ms"),
    ("swam.eoom.launch_adj_mean", "launch_adj mean"),
    ("swam.wsp_kb.clean_low", "clean_low kB"),
    ("swam.wsp_kb.clean_min", "clean_min kB"),
    ("swam.wsp_kb.anon_min", "anon_min kB"),
    ("swam.cleaner.cleans", "swap-clean: processes"),
    ("swam.cleaner.pages", "pages dropped"),
    ("swam.cleaner.kills_avoided", "kills avoided"),
    ("swam.cleaner.so_regenerated", "pages relocated again"),
    ("swam.cleaner.so_ms_mean", "hot launch SO ms"),
]


def swam_ratio_table(comparisons: list[dict]) -> list[str]:
    """SWAM's figures, a column per comparison (the medians' ratio, [min,
    max] of the per-rep ratios, p), beside the paper's."""
    if not comparisons:
        return []
    rows = [
        [
            SWAM_RATIO_TITLES[f],
            _paper_cell(SWAM_PAPER, f),
            *(
                cell(c["ratios"].get(f), c["spread"].get(f)) + p_text(c["p_value"].get(f))
                for c in comparisons
            ),
        ]
        for f in SWAM_RATIO_FIGURES
    ]
    header = [
        "figure",
        "paper: SWAM / baselines",
        *(f"{c['scheme']} / {c['base']}" for c in comparisons),
    ]
    return md_table(header, rows)


def swam_lines(s: dict) -> list[str]:
    """The SWAM section: empty outside SWAM's setting (summary["swam"])."""
    if "swam" not in s:
        return []
    schemes = s["schemes"]
    lines = [
        "## SWAM",
        "",
        "SWAM's figures (analysis/swam.py): kills are lmkd's; relaunches the cold "
        "launches of an app lmkd had killed since it last ran, and their cost the mean "
        "files + init time the app measured (what the EOOM killer ranks apps by); "
        "launch is the cold switches' response time (an app started with no process), "
        "response every switch's; zram writes are the pages swapped out (pswpout) less "
        "those the swap disk took, flash writes the swap disk's writes (diskstat.csv: "
        "swap, and the swap daemon's ext4 metadata); swap files added and removed by "
        "SWAM's daemon, and the flash tier's largest size (the most files at once x "
        "chunk_mb). Median `[min, max]` over reps. On a zram+flash profile the "
        "headline's reclaim throughput is the swap disk's, the flash tier's, and "
        "zram-only's the pages swapped out.",
        "",
        *_scheme_table(schemes, SWAM_COLUMNS, lambda e: e.get("swam") is not None),
        "",
    ]
    comparisons = s["swam"]["comparisons"]
    if table := swam_ratio_table(comparisons):
        bases = [b for b in SWAM_BASELINES if any(c["base"] == b for c in comparisons)]
        against = (
            "SWAM's baselines, " + " and ".join(f"`{b}`" for b in bases)
            if bases
            else f"`{BASELINE}` (the campaign ran neither of SWAM's baselines, "
            + " nor ".join(f"`{b}`" for b in SWAM_BASELINES)
            + ")"
        )
        lines += [
            f"Against {against}: each comparison's medians' ratio, `[min, max]` of the "
            "per-rep ratios (rep i against rep i) where at least two reps pair up, and p "
            f'as in "Versus {BASELINE}". '
            "The paper's figures are SWAM against stock "
            "Android with 1 GB of zram (lz4) and with a 3 GB flash swap partition, on "
            "phones running the top 15 apps of Google Play (an earlier version on the "
            "project's page: "
            "18x fewer kills, launch 41% and response 48% faster); its launch and response "
            "times are not this testbed's switches, and it does not say whether it "
            "reports means or medians.",
            "",
            *table,
            "",
        ]
    if parts := _scheme_table(schemes, SWAM_PART_COLUMNS, ran_swam):
        lines += [
            "What SWAM's parts did: its daemon's swap files (the most in use at once and "
            "at the end of the run, and how long an add, fallocate + swap header + swapon, and "
            "a remove, swapoff + unlink, took), the EOOM killer's victims (the kills whose "
            "app had a measured cold launch, their mean cost, and the mean launch_adj lmkd "
            "added to their oom_score_adj), the OOM Cleaner's floors as written "
            "(guest kB), and its swap-clean in lmkd (the processes it cleaned before a kill "
            "for low swap, the pages the kernel dropped from swap, the kills it made "
            "unnecessary by bringing swap back above lmkd's threshold, and what that cost "
            "the apps: the pages their hot launches found cleaned and relocated again, and "
            "the mean time those launches spent on their shared objects' data) "
            "(– where the scheme has none of a part).",
            "",
            *parts,
            "",
        ]
    if reasons := kill_reason_lines(schemes):
        lines += [*reasons, ""]
    return lines


HOST_CPU_COLUMNS = [
    ("host_cpu.busy", "host busy CPUs"),
    ("host_cpu.vcpus", "QEMU vCPU threads"),
    ("host_cpu.main", "QEMU main thread"),
    ("host_cpu.saturated_share", "share of seconds saturated"),
    ("host_cpu.cold_busy", "in cold switches: host busy"),
    ("host_cpu.cold_vcpus", "vCPU threads"),
    ("host_cpu.cold_main", "main thread"),
]


def host_cpu_table(schemes: dict[str, dict]) -> list[str]:
    """The host's CPU while the guests ran (host_cpu.py), where it was sampled."""
    return _scheme_table(schemes, HOST_CPU_COLUMNS, lambda e: e.get("host_cpu") is not None)


SWEEP_COLUMNS = [
    ("reclaim_mbps.peak", "reclaim peak MB/s"),
    ("reclaim_mbps.mean", "reclaim mean MB/s"),
    ("response_ms.mean", "response mean ms"),
    ("writeback.unmap_us_per_page.p50", "unmap µs/page p50"),
]


def sweep_optimum(sweep: Sweep, schemes: dict[str, dict]) -> tuple[float, str] | None:
    """The (value, scheme) with the highest median peak reclaim throughput
    (the smaller value on a tie), or None if no point has one."""
    measured = [
        (get_path(schemes[name], "reclaim_mbps.peak"), -value, value, name)
        for value, name in sweep.points
        if get_path(schemes[name], "reclaim_mbps.peak") is not None
    ]
    if not measured:
        return None
    _, _, value, name = max(measured)
    return value, name


def sweep_lines(key: str, sweeps: list[Sweep], schemes: dict[str, dict]) -> list[str]:
    """report.md's part for one swept key: a table per sweep, its optimum, the figure."""
    u = unit(key)
    lines = [f"### `{key}`", ""]
    for sweep in sweeps:
        rows = [
            [
                f"{value:g}",
                f"`{name}`",
                str(schemes[name]["runs"]),
                *(
                    cell(get_path(schemes[name], d), schemes[name].get("spread", {}).get(d))
                    for d, _ in SWEEP_COLUMNS
                ),
            ]
            for value, name in sweep.points
        ]
        lines += [
            f"Scheme `{sweep.label}` with `{key}` set to each value:",
            "",
            *md_table(
                [
                    f"{key}" + (f" ({u})" if u else ""),
                    "scheme",
                    "runs",
                    *(title for _, title in SWEEP_COLUMNS),
                ],
                rows,
            ),
            "",
        ]
        if best := sweep_optimum(sweep, schemes):
            peak = get_path(schemes[best[1]], "reclaim_mbps.peak")
            lines += [
                f"Optimum: **{best[0]:g}{' ' + u if u else ''}** (`{best[1]}`), the "
                f"highest median peak reclaim throughput ({fmt(peak)} MB/s).",
                "",
            ]
    lines += [f"![sweep {key}](plots/{sweep_file(key)})", "", SWEEP_CAPTION.format(key=key), ""]
    return lines


def p_text(p: float | None) -> str:
    """A p-value as the ratio tables print it ("" when there is none)."""
    return "" if p is None else f" p {p:.2g}"


def ratio_table(ratios: dict[str, dict]) -> list[str]:
    rows = [
        [
            name,
            *(
                cell(r[f], r["spread"].get(f)) + p_text(r.get("p_value", {}).get(f))
                for f in RATIO_FIGURES
            ),
        ]
        for name, r in ratios.items()
    ]
    return md_table(["scheme", *(RATIO_TITLES[f] for f in RATIO_FIGURES)], rows)


def _setting(key: str, value) -> str:
    return f"{key} {value / 2**20:.1f} MB/s" if "_bps_" in key else f"{key} {value}"


def _fault_text(d: dict) -> str:
    """The page-fault slowdown, for campaigns that measured it."""
    if "fault_factor" not in d:
        return ""
    return (
        f"; a first touch, which faults the page in, slows down {d['fault_factor']:.1f} "
        f"times (host {d['host_fault_ns_per_page']:,.0f} ns/page, guest "
        f"{d['guest_fault_ns_per_page']:,.0f})"
    )


def _boots_text(d: dict) -> str:
    """The guest boots the dilation's median is over (dilation.GUEST_BOOTS)."""
    boots = d.get("guest_ns_per_page_boots") or []
    if len(boots) < 2:
        return ""
    return f", the median of {len(boots)} boots: " + ", ".join(f"{b:.1f}" for b in boots)


def calibration_lines(s: dict) -> list[str]:
    """How the flash and the scenario's clock were set from the guest's
    memory speed (nothing for a campaign from before they were recorded)."""
    lines = []
    f = s.get("flash_calibration") or {}
    if f.get("measured_ns_per_page"):
        lines.append(
            f"- Flash: the reclaim ceiling {f['measured_ceiling_mbps']:.1f} MB/s, measured at "
            f"{f['measured_ns_per_page']:.0f} ns/page, is {f['reclaim_ceiling_mbps']:.1f} MB/s "
            f"at this guest's {s['dilation']['guest_ns_per_page']:.0f}; over the phone's peak "
            f"reclaim ({f['phone_peak_reclaim_mbps']} MB/s) it scales the phone's flash by "
            f"{f['flash_scale']:.3f}."
        )
    if "time_scale" in s:
        lines.append(
            f"- The scenario's clock (its times and CPU work) ran at {s['time_scale']:.2f} x "
            "its guest ms (this guest's memory speed over the scenario's `ref_ns_per_page`; "
            "1 without it)."
        )
    return lines


def setup_lines(s: dict) -> list[str]:
    d, g, q = s["dilation"], s["guest"], s["qemu"]
    guest_rest = [_setting(k, v) for k, v in g.items() if k not in ("ram_mb", "cpus", "scale")]
    return [
        f"- Scenario `{s['scenario']}`, device profile `{s['profile']}`; {s['reps']} reps per "
        f"scheme, seed {s['seed']}.",
        f"- Time dilation: factor {d['factor']:.2f} (host {d['host_ns_per_page']:.1f} ns/page, "
        f"guest {d['guest_ns_per_page']:.1f} ns/page" + _boots_text(d) + ")" + _fault_text(d) + ".",
        *calibration_lines(s),
        f"- Guest: {g['ram_mb']} MB RAM, {g['cpus']} CPUs, scale {g['scale']}"
        + "".join(f", {x}" for x in guest_rest)
        + ".",
        f"- QEMU: accel `{q['accel']}`; I/O limits: "
        + ", ".join(_setting(k, v) for k, v in q.items() if k != "accel")
        + ".",
    ]


def disk_share_lines(s: dict) -> list[str]:
    """The swap disk's fio bandwidth and each scheme's peak as a share of it."""
    bw = s.get("swap_bandwidth")
    if (s.get("guest") or {}).get("swap") == "zram":
        return [
            "The swap disk's bandwidth and each scheme's peak as a share of it: n/a (the "
            "profile swaps to zram, not on the swap disk). Reclaim throughput here is the "
            "zram device's writes (vmstat pswpout)."
        ]
    if not bw:
        return ["The swap disk's bandwidth was not measured (campaign from before the fio boot)."]
    if bw.get("write_mbps") is None:
        return [f"The swap disk's bandwidth could not be measured: {bw.get('error')}."]
    # a scheme that swaps to zram alone ([swap] tiers) writes nothing to the disk
    shares = [
        f"{name} {peak / bw['write_mbps']:.2f}"
        if e.get("swap_medium") != "zram"
        else f"{name} n/a (zram alone)"
        for name, e in s["schemes"].items()
        if (peak := get_path(e, "reclaim_mbps.peak")) is not None
    ]
    return [
        f"The swap disk writes {fmt(bw['write_mbps'])} MB/s as fio measures it in the "
        f"guest (sequential 1 MiB direct writes, {bw['fio'].get('iodepth')} in flight); "
        "median peak reclaim throughput as a share of it: "
        + (", ".join(shares) if shares else "–")
        + "."
    ]


BY_REP_COLUMNS = [
    ("kills", "kills"),
    ("memory_stall_s.some", "memory stall s"),
    ("settled.last_kill_s", "last kill s"),
    ("settled.file_refaults_per_s", "file refaults/s after it"),
    ("settled.swap_free_mb_min", "least swap free after it, MB"),
    ("settled.swap_full_s", "swap full after it, s"),
    ("lru_balance.file_activated_share", "file refaults activated"),
    ("response_ms.mean", "response mean ms"),
    ("switch_kinds.cold.mean_ms", "cold switch ms"),
    ("switch_kinds.cold.cost.runq_ms", "cold launch waiting for a CPU ms"),
    ("allocstall", "allocstall"),
    ("reclaim_cpu_total", "reclaim CPU s"),
    ("reclaim_cpu_us_per_page", "µs per page freed"),
    ("settled.after_last_kill.reclaim_cpu_s", "reclaim CPU s after the last kill"),
    ("pswpout_mb", "swap out MB"),
    ("settled.after_last_kill.pswpout_mb", "swap out MB after the last kill"),
]


LMKD_BY_REP_COLUMNS = [
    ("kills", "kills"),
    ("settled.swap_full_s", "swap full after it, s"),
    ("settled.lmkd.events", "PSI events"),
    ("settled.lmkd.evaluated", "evaluated wakeups"),
    ("settled.lmkd.events_after", "PSI events after it"),
    ("settled.lmkd.evaluated_after", "evaluated after it"),
    ("settled.lmkd.swap_low", "swap low"),
    ("settled.lmkd.under_low_wmark", "free under the low watermark"),
    ("settled.lmkd.swap_low_under_low_wmark", "both"),
    ("settled.lmkd.thrashing_max", "thrashing max %"),
    ("settled.lmkd.kill_reasons_without_victim", "reasons with no victim"),
]


def by_rep_table(schemes: dict[str, dict], columns=None) -> list[str]:
    columns = columns or BY_REP_COLUMNS
    rows = [
        [name, str(r["rep"]), *(fmt(r.get(d)) for d, _ in columns)]
        for name, e in schemes.items()
        for r in e.get("by_rep", [])
    ]
    return md_table(["scheme", "rep", *(t for _, t in columns)], rows) if rows else []


def lmkd_table(schemes: dict[str, dict]) -> list[str]:
    """Each repetition's lmkd wakeups, over the run and after its last kill
    (lmkd_wakeups.py); empty when no run has lmkd.csv."""
    if not any(
        r.get("settled.lmkd.events") is not None
        for e in schemes.values()
        for r in e.get("by_rep", [])
    ):
        return []
    return by_rep_table(schemes, LMKD_BY_REP_COLUMNS)


def fitting_table(fitting: dict | None) -> list[str]:
    """Each scheme over its repetitions that fit (fitting_runs.py), with the
    p of the response time against the baseline's."""
    if not fitting or not any(e["reps"] for e in fitting["schemes"].values()):
        return []
    rows = []
    for name, e in fitting["schemes"].items():
        figs = e["figures"]
        cells = [
            cell(f["median"], f if len(e["reps"]) > 1 else None) if f else "–"
            for f in (figs.get(d) for d, _ in FIT_FIGURES)
        ]
        p = e.get("p_value", {}).get("response_ms.mean")
        rows.append(
            [name, ", ".join(map(str, e["reps"])) or "none", *cells, p_text(p).strip() or "–"]
        )
    return md_table(
        ["scheme", "reps that fit", *(t for _, t in FIT_FIGURES), f"response vs {BASELINE}"], rows
    )


def kill_reasons(name: str, entry: dict) -> str | None:
    """ "pmr low_mem_and_swap 9, ...": a scheme's median kills per lmkd reason."""
    reasons = entry.get("kills_by_reason")
    if not reasons:
        return None
    return f"{name} " + ", ".join(f"{r} {fmt(n)}" for r, n in sorted(reasons.items()))


def kill_reason_lines(schemes: dict[str, dict]) -> list[str]:
    parts = [text for name, e in schemes.items() if (text := kill_reasons(name, e))]
    return ["LMKD kills by reason (median per reason): " + "; ".join(parts) + "."] if parts else []


def capacity_entry(schemes: dict[str, dict], base: str = BASELINE) -> dict | None:
    """The `capacity` figures (capacity.py) of `base`, else of the first
    scheme that has them: one spec and one guest give every scheme of a
    campaign the same, but for the swap on a zram+flash profile (SWAM's
    tier schemes, its swap daemon), where only `base`'s hold. None when
    no run had spec.json, or when the swap differs and `base` did not run."""
    if swap_differs(schemes):
        entry = schemes.get(base)
        return entry.get("capacity") if entry else None
    entries = [schemes.get(base), *schemes.values()]
    return next((e["capacity"] for e in entries if e and e.get("capacity")), None)


def swap_differs(schemes: dict[str, dict]) -> bool:
    """Whether the schemes' runs started with different swap (SwapTotal)."""
    totals = {
        e["capacity"].get("swap_total_mb") for e in schemes.values() if e and e.get("capacity")
    }
    return len(totals) > 1


def capacity_kills_floor(schemes: dict[str, dict], base: str = BASELINE) -> float | None:
    """The lowest kills ratio against `base` the capacity leaves: the fewest
    kills over `base`'s median kills; None without them, or when the
    kernel's OOM killer killed too (lmkd's count then leaves deaths out)."""
    c = capacity_entry(schemes, base)
    kills = get_path(schemes.get(base, {}), "kills")
    if not c or c.get("fewest_kills") is None or c.get("oom_kills") or not kills:
        return None
    if swap_differs(schemes):
        return None  # the floor holds for base's swap, not the others'
    return c["fewest_kills"] / kills


def capacity_text(schemes: dict[str, dict], base: str = BASELINE) -> str | None:
    """One paragraph: the kills no scheme can avoid (capacity.py)."""
    c = capacity_entry(schemes, base)
    if c is None:
        return None
    text = (
        f"The apps' anonymous footprints add up to {fmt(c['apps_anon_mb'])} MB, against "
        f"{fmt(c['mem_total_mb'])} MB of RAM and {fmt(c['swap_total_mb'])} MB of swap "
        "(MemTotal, SwapTotal"
        + (
            f" under `{base}`; the schemes start with different swap, and a swap daemon's "
            "files are not counted"
            if swap_differs(schemes)
            else ""
        )
        + ")"
    )
    fewest = c["fewest_kills"]
    if c["excess_mb"] <= 0:
        return text + ": they fit without a kill."
    text += f": {fmt(c['excess_mb'])} MB more than both"
    if fewest is None:
        return text + ", more than every killable app holds."
    text += (
        f", so at least {fmt(fewest)} app{'' if fewest == 1 else 's'} must die for the "
        "rest to reach their full size, even if the largest die first, whatever the "
        "reclaim short of compressing or dropping their pages (the kernel's memory, the "
        "page cache and the watermarks are left out and only raise that)"
    )
    if c.get("oom_kills"):
        return text + (
            f". The kernel's OOM killer killed {fmt(c['oom_kills'])} processes "
            "too, deaths that lmkd's kill count leaves out."
        )
    floor = capacity_kills_floor(schemes, base)
    if floor is not None:
        text += (
            f". {base}'s median kills: {fmt(get_path(schemes[base], 'kills'))}, so no "
            f"scheme's kills against it can go below {floor:.2f}"
        )
    return text + "."


def render_markdown(s: dict, regime: dict | None = None) -> str:
    """report.md from the summary and the campaign's regime (regime.py)."""
    k = s["kernel"]
    series = ", ".join(f"`{p}`" for p in k["series"]) or "none"
    n = len(k["series"])
    lines = [
        f"# Reclaim schemes on `{s['scenario']}` / `{s['profile']}`",
        "",
        f"Kernel {k['version']} ({k.get('flavour') or 'unknown flavour'}), "
        f"series of {n} patch{'' if n == 1 else 'es'}: {series}.",
        "",
    ]
    if s["failed_runs"]:
        lines += [
            f"## ⚠ Failed runs ({len(s['failed_runs'])})",
            "",
            "These runs are excluded from every figure below.",
            "",
            *md_table(
                ["scheme", "rep", "error"],
                [
                    [f["scheme"], str(f["rep"]), str(f["error"]).replace("|", "\\|")]
                    for f in s["failed_runs"]
                ],
            ),
            "",
        ]
    if s["warnings"]:
        lines += ["## Warnings", "", *(f"- {w}" for w in s["warnings"]), ""]
    lines += [
        "## Headline",
        "",
        "Median over each scheme's ok runs, `[min, max]` across reps when it has more "
        "than one. Reclaim throughput is the swap device's write throughput (paper "
        "§2.2.2): mean over the 1-s windows with any swap write, and the peak window. "
        "Reclaim CPU is the kernel reclaim threads' CPU time, also per page that kswapd "
        "and direct reclaim freed; swap out is pswpout.",
        "",
        *headline_table(s["schemes"]),
        "",
    ]
    lines += [*disk_share_lines(s), ""]
    if reasons := kill_reason_lines(s["schemes"]):
        lines += [*reasons, ""]
    if capacity := capacity_text(s["schemes"]):
        lines += [capacity, ""]
    if reps := by_rep_table(s["schemes"]):
        lines += [
            "Each repetition, and how it settled after lmkd's last kill: the file "
            "pages refaulted per second from then to the end of the run, and the "
            "least free swap over that time (– for a runtime without meminfo.csv). "
            "A repetition whose survivors do not fit thrashes file pages with swap "
            "full for the rest of the run, whatever the scheme; compare schemes "
            "with this in view.",
            "",
            *reps,
            "",
        ]
    if lmkd := lmkd_table(s["schemes"]):
        lines += [
            "Why lmkd killed no more, from its own record (lmkd.csv): lmkd looks "
            "only when a PSI trigger fires (70 ms of memory stall in a second), then "
            "polls for a second; the PSI events it handled and the wakeups that got "
            "past its early return (reclaim or refaults since the one before) over "
            "the run, then after the last kill; of the evaluated ones after it, how "
            "many found swap low, free memory under the low watermark, and both, "
            "which `low_mem_and_swap` needs; the largest thrashing figure (refaulted "
            "share of the file LRU, %: `low_swap_and_thrashing` needs it over its "
            "limit, 100, with swap low, the other thrashing reasons with free memory "
            "under the low watermark or direct reclaim); and the wakeups that chose "
            "a kill reason but found no process to kill.",
            "",
            *lmkd,
            "",
        ]
    if fit := fitting_table(s.get("fitting")):
        f = s["fitting"]
        lines += [
            f"Over the repetitions that fit: swap full for under "
            f"{fmt(f['swap_full_under_s'])} s after lmkd's last kill (the others "
            "thrash their page cache to the end). Median `[min, max]`; the waiting "
            "for a CPU is the cold launches' mean run-queue time; p as in \"Versus "
            f'{BASELINE}", over these reps. A second view only: how many apps lmkd '
            "kills decides which reps fit, and a scheme may sway that.",
            "",
            *fit,
            "",
        ]
    if kinds := switch_kind_table(s["schemes"]):
        lines += [
            "Response time by kind of switch: cold, the app had no process (its first "
            "launch, or a relaunch after a kill); hot, it had one. The share is of the "
            "summed response time of all switches; the swap-ins are pswpin over the hot "
            "switches' windows, the swapped-out working set they read back, and the "
            "file refaults workingset_refault_file over them, the page cache they read "
            "again.",
            "",
            *kinds,
            "",
        ]
    for kind, what in (
        (
            "cold",
            "Cold launches: map and read the app's files, run its init "
            "work (a fixed CPU loop), fill the launch part of its heap.",
        ),
        ("hot", "Hot switches: touch the heap's working set, read the files' working set."),
    ):
        if table := launch_cost_table(s["schemes"], kind):
            lines += [
                f"Where the time of {kind} switches goes, as the app's slowest process "
                f"measured its launch (mean per launch): {what} Each step's wall time; "
                "then the thread's user and system CPU time (system: page faults and "
                "direct reclaim), the time it was runnable but waited for a CPU "
                "(schedstat run_delay), and the rest, blocked: on I/O, on a lock, "
                "or throttled; outside the launch is the response time the app did "
                "not measure (spawning its processes, the protocol, attempts before the "
                "one measured). CPU time includes any time the host took from the "
                "vCPU (the guest has no steal-time accounting).",
                "",
                *table,
                "",
            ]
        if kind == "cold" and (fill := launch_fill_table(s["schemes"])):
            lines += [
                "The cold launches' heap fill, summed over the threads that filled it, "
                "where an app fills from more than one (the launch's own thread waits "
                "for them, so the table above counts the heap step as blocked): "
                "their wall time, user and system CPU "
                "time (system: page faults and direct reclaim), the time they were "
                "runnable but waited for a CPU, and the rest, blocked: throttled by "
                "reclaim, or waiting on a lock or on I/O.",
                "",
                *fill,
                "",
            ]
    if host := host_cpu_table(s["schemes"]):
        lines += [
            "The host's CPU while the guests ran (host_cpu.py; CPUs, mean over the "
            "workload's 1-s samples, then over the samples that overlap a cold switch): "
            "the whole host, QEMU's vCPU threads and its main thread (device emulation), "
            "and the share of seconds with the host busy within "
            f"{SATURATED_MARGIN} of all its CPUs. "
            "The guest has no steal-time accounting: time the host does not give a "
            "vCPU counts in the guest as CPU or run-queue time; this says how often the "
            "host had none to give.",
            "",
            *host,
            "",
        ]
    if balance := lru_balance_table(s["schemes"]):
        lines += [
            "How reclaim balanced the LRU lists over the run: the file pages evicted and "
            "read again (workingset_refault_file), the share of them the kernel "
            "recognised as working set and activated (workingset_activate_file), the "
            "active pages deactivated (pgdeactivate), and the mean size of the active "
            "and inactive file lists and of the file victims (nr_victim_file, – on a "
            "kernel that does not count them). On a kernel where victims do not count "
            "as inactive pages (PMR v1 before its patch 25), kshrinkd's victims shorten the "
            "active lists and lower the share activated.",
            "",
            *balance,
            "",
        ]
    if fate := swap_fate_table(s["schemes"]):
        lines += [
            "What became of the pages written to swap (pswpout): freed by reclaim "
            "(pgsteal_anon), or not - net of anon pages freed twice without a second "
            "write. Of those not freed, some are still in the swap cache at the end "
            "(the growth of nr_swapcached); the rest were dropped: mapped again and "
            "their swap copy thrown away, or freed by their owner. On a PMR kernel "
            "with patch 12, the faults that mapped a victim again after reclaim paged "
            "it out, and the victim pages their owner freed (pages; both 0 where "
            "pmr/enabled is 0).",
            "",
            *fate,
            "",
        ]
    if cpu := cpu_table(s["schemes"]):
        lines += ["Reclaim CPU seconds by thread family:", "", *cpu, ""]
    if pmr := pmr_table(s["schemes"]):
        lines += [
            "PMR's victim list (pages counted by /proc/vmstat over the run; the list "
            "size sampled every 100 ms; every scheme on a PMR kernel has the counters, "
            "they stay 0 where pmr/enabled is 0):",
            "",
            *pmr,
            "",
        ]
    if refaults := refault_table(s["schemes"]):
        lines += [
            "## Refaults, foreground and background",
            "",
            "The apps' own counters (each app's cgroup, app_memcg.csv, once a second), "
            "split by whether the app was in front (from the start of its launch to the "
            "next launch; an interval in which that changed split by the time in front): "
            "pages refaulted (workingset_refault_anon and _file: evicted and read again), "
            "major faults, and the apps' pages reclaim took (pgsteal). Acclaim's "
            "foreground-aware eviction means to move them behind. Totals over the run, "
            "summed over the apps, and the share of all refaults that hit apps behind.",
            "",
            *refaults,
            "",
        ]
    if acclaim := acclaim_table(s["schemes"]):
        lines += [
            "## Acclaim",
            "",
            "On a kernel with Acclaim's series: the referenced background folios "
            "reclaim left inactive instead of activating them (foreground-aware "
            "eviction, vmstat acclaim_fae_kept_inactive; 0 where fae_enabled is 0), "
            "and the goals its lightweight prediction gave kswapd "
            "(`mm_vmscan_kswapd_lwp_goal`, one per kswapd round, only where "
            "lwp_enabled is 1): how many, the goal's min, median and max against the "
            "stock goal (medians over rounds), the demand ratio of the last two 100-ms "
            "windows (previous / last, %), and the share of goals above the stock one.",
            "",
            *acclaim,
            "",
        ]
    skew_lines = skew_headline_lines(s)
    skew = skew_table(s["schemes"])
    if skew_lines or skew:
        lines += [
            "## Skew rectification",
            "",
            "Skew rectification (schemes/skew.toml, inferred from the paper's abstract: "
            "every parameter is ours) advises out the anonymous pages an app left "
            "untouched while in front when it leaves the front, and moves swappiness by "
            "the refaults. Against the paper's headline, the median of the per-rep ratios "
            f"(rep i against {BASELINE}'s rep i), `[min, max]`, p as in \"Versus "
            f'{BASELINE}":',
            "",
            *skew_lines,
            "",
        ]
        if skew:
            lines += [
                "Its pageouts (skew_pageout events: one per app leaving the front; the "
                "pages advised, summed over the run; the share of the pages marked idle "
                "at the app's coming to the front that were still idle when it left, the "
                "median time of a pageout) and the swappiness its balance loop set "
                "(skew_balance.csv, over its periods; – without the loop).",
                "",
                *skew,
                "",
            ]
    lines += ice_lines(s)
    lines += swam_lines(s)
    if anon_file := anon_file_table(s["schemes"]):
        lines += [
            "## Anonymous and file pages",
            "",
            "The anonymous LRU pages over the file LRU pages (vmstat, every sample; mean, "
            "min, max and at the end of the run), the skew rectification paper's premise "
            "(memory holds mostly anonymous pages while switches read file pages), beside "
            "the hot switches' mean response time and the file pages refaulted and the "
            "pages swapped in during them.",
            "",
            *anon_file,
            "",
        ]
    if zram := zram_table(s["schemes"]):
        lines += [
            "## zram",
            "",
            "The zram device of a profile that swaps to zram (zram.csv): the data stored "
            "(swapped-out pages, uncompressed) and the memory the device used, peak and "
            "at the end of the run, MB, and the compression ratio (stored over "
            "compressed) when it stored the most.",
            "",
            *zram,
            "",
        ]
    if wb := writeback_table(s["schemes"]):
        lines += [
            "## Writeback",
            "",
            "What reclaim's unmapping and pageout cost (PMR part 2's "
            "`mm_vmscan_writeback_time` tracepoint, every scheme on a kernel with the "
            "series): per-page times are over shrink_folio_list() calls, each call "
            "weighted once (unmap: try_to_unmap() and TLB flushes per page tried; "
            "pageout: pageout() per page written), totals in seconds over the run; the "
            "unmap share is unmap / (unmap + pageout) time. Calls and batches differ in "
            "size (up to 32 folios against a unit's worth), so their per-event "
            "percentiles are not comparable across schemes: the mean weighs every page "
            "once, and the 1-MB windows sum kswapd's events in trace order until 256 "
            "pages were tried, each window one sample whatever the scheme (percentiles "
            "over windows; the spread of unmap time at equal granularity). Bulk "
            "batches are PMR's "
            "storage-friendly writeback (pmr/enabled=2; `mm_vmscan_pmr_batch`, or "
            "/proc/vmstat's `pmr_batch*` counters when not traced, which give no "
            "median); 0 under another mode, – on a kernel without them. A batch's "
            "first pass µs/page is the time of its whole first pass (page checks "
            "with the reference rmap walk, swap slot allocation, unmapping, TLB "
            "flush; the event's `unmap_ns`) per page taken, median over batches: "
            "not an unmap time, so not comparable with the unmap µs/page "
            "columns.",
            "",
            *wb,
            "",
        ]
    if rounds := kswapd_round_table(s["schemes"]):
        lines += [
            "## kswapd rounds",
            "",
            "One kswapd_shrink_node() call is a round (`mm_vmscan_kswapd_round`); its "
            "writeback time is the unmap and pageout time of kswapd's own "
            "`mm_vmscan_writeback_time` events inside it, the rest is page shrinking "
            "(paper Fig. 5: 54.8% shrinking, 45.2% writeback on the original path). "
            "Times are means per round; nr_to_reclaim and nr_reclaimed are medians "
            "over rounds, in pages (Fig. 6). The busiest second is the largest share "
            "of a 1-s window kswapd spent in rounds: near 1 when it could not keep up "
            "with demand.",
            "",
            *rounds,
            "",
        ]
    if regime is not None:
        lines += ["## Regime", "", *regime_lines(regime)]
    lines += ["## Versus original", ""]
    if s["ratios"]:
        lines += [
            f"Each scheme's median divided by `{BASELINE}`'s median (0.56 = 44% lower); "
            "`[min, max]` of the per-rep ratios (rep i against rep i) when at least two "
            "reps pair up; – where original's value is 0 or missing. `p` is how likely "
            "a difference this large between the two schemes' repetitions is by chance "
            "(two-sided permutation test on the means, given from 3 reps each; 3 "
            "reps each cannot give less than 0.1, 5 each no less than 0.008).",
            "",
            *ratio_table(s["ratios"]),
            "",
        ]
    else:
        lines += [f"No comparison: `{BASELINE}` has no ok runs or no other scheme has.", ""]
    if sweeps := sweeps_by_key(s["schemes"]):
        lines += [
            "## Sweeps",
            "",
            "Schemes that differ only in one knob's value (`NAME@KNOB=VALUE`); "
            "medians over reps, `[min, max]` across them.",
            "",
        ]
        for key, key_sweeps in sweeps.items():
            lines += sweep_lines(key, key_sweeps, s["schemes"])
    lines += ["## Setup", "", *setup_lines(s), "", "## Plots", ""]
    for key, file in PLOT_FILES.items():
        lines += [f"![{key}](plots/{file})", "", PLOT_CAPTIONS[key], ""]
    if any(e.get("lwp") for e in s["schemes"].values()):
        lines += [f"![lwp goals](plots/{LWP_PLOT})", "", LWP_CAPTION, ""]
    if any(e.get("anon_file_ratio") for e in s["schemes"].values()):
        lines += [f"![anon file ratio](plots/{ANON_FILE_PLOT})", "", ANON_FILE_CAPTION, ""]
    if any(get_path(e, "skew.swappiness") for e in s["schemes"].values()):
        lines += [f"![swappiness](plots/{SWAPPINESS_PLOT})", "", SWAPPINESS_CAPTION, ""]
    return "\n".join(lines)
