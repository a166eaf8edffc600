"""Report: report.md and four plots for a results directory.

Reads what summary.py builds (and refreshes summary.json, so the report
never shows stale numbers); only the throughput-over-time plot needs the
per-run series. The plots mirror the paper's evaluation figures:

  plots/reclaim_throughput.png  Fig. 12: swap-device write MB/s over time
  plots/response_time.png       Fig. 11: response time per foreground app
  plots/pressure.png            Fig. 13: LMKD kills, direct reclaims, major faults
  plots/swap_write_sizes.png    write-request sizes (storage-friendly writeback, §4.3)
  plots/victim_list.png         PMR's victim list size over time against its target

Each scheme keeps one colour in every plot. Bars are medians over ok runs,
whiskers the min and max across reps.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.axes import Axes  # noqa: E402

from .summary import (BASELINE, RATIO_FIGURES, Run, build_summary, get_path,  # noqa: E402
                      save_summary)

PLOT_FILES = {
    "throughput": "reclaim_throughput.png",
    "response": "response_time.png",
    "pressure": "pressure.png",
    "write_sizes": "swap_write_sizes.png",
    "victims": "victim_list.png",
}
PLOT_CAPTIONS = {
    "throughput": ("Reclaim throughput over time (paper Fig. 12): swap-device write MB/s "
                   "per 1-s window; the bold line is each scheme's median run (by mean "
                   "throughput), faint lines are its other reps, and higher means faster "
                   "reclaim."),
    "response": ("Response time per foreground app (paper Fig. 11): bar = median over reps "
                 "of the app's mean switch time, whiskers = min and max across reps; the "
                 "last group is over all switches, and lower is better."),
    "pressure": ("Memory-pressure symptoms (paper Fig. 13): LMKD kills, direct reclaims "
                 "(allocstall) and major page faults per run, median with min-max "
                 "whiskers; lower is better."),
    "write_sizes": ("Swap write-request sizes in power-of-two buckets ([x, 2x) KiB): left, "
                    "requests per run (log scale); right, the share of swapped bytes each "
                    "bucket carries; mass further right means larger, more flash-friendly "
                    "writes."),
    "victims": ("PMR's victim list over time (MB, sampled every 100 ms) for each scheme "
                "that filled one, median run; the dashed line is the target delta kshrinkd "
                "worked to at each of its rounds (from its round tracepoint; three times "
                "kswapd's goal, which rises while a watermark boost lasts). Algorithm 1 "
                "keeps the list near delta between reclaim bursts."),
}
HEADLINE = [  # (column title, dotted path in a scheme entry)
    ("response mean ms", "response_ms.mean"), ("p50 ms", "response_ms.p50"),
    ("p95 ms", "response_ms.p95"), ("reclaim mean MB/s", "reclaim_mbps.mean"),
    ("reclaim peak MB/s", "reclaim_mbps.peak"), ("kills", "kills"),
    ("allocstall", "allocstall"), ("major faults", "pgmajfault"),
    ("swap out MB", "pswpout_mb"), ("cold launches", "cold_launches"),
    ("hot launches", "hot_launches"), ("reclaim CPU s", "reclaim_cpu_total"),
    ("mean swap write KiB", "swap_write_kb.mean"),
]
RATIO_TITLES = {"response_ms.mean": "response mean", "reclaim_mbps.peak": "reclaim peak",
                "kills": "kills", "allocstall": "allocstall",
                "reclaim_cpu_total": "reclaim CPU", "pswpout_mb": "swap out"}
PRESSURE_PANELS = [("kills", "LMKD kills"), ("allocstall", "Direct reclaims (allocstall)"),
                   ("pgmajfault", "Major page faults")]


def write_report(results_dir: Path) -> Path:
    """Write summary.json, report.md and plots/*.png; return report.md's path."""
    summary, ok = build_summary(results_dir)
    save_summary(results_dir, summary)
    plot_dir = results_dir / "plots"
    plot_dir.mkdir(exist_ok=True)
    colours = scheme_colours(list(summary["schemes"]))
    measured = {name: e for name, e in summary["schemes"].items() if e["runs"] > 0}
    plot_throughput(ok, colours, plot_dir / PLOT_FILES["throughput"])
    plot_response(measured, colours, plot_dir / PLOT_FILES["response"])
    plot_pressure(measured, colours, plot_dir / PLOT_FILES["pressure"])
    plot_write_sizes(measured, colours, plot_dir / PLOT_FILES["write_sizes"])
    plot_victims(ok, colours, plot_dir / PLOT_FILES["victims"])
    path = results_dir / "report.md"
    path.write_text(render_markdown(summary))
    return path


# ---- plots -----------------------------------------------------------------

def scheme_colours(schemes: list[str]) -> dict[str, tuple]:
    palette = plt.get_cmap("tab10").colors
    return {name: palette[i % len(palette)] for i, name in enumerate(schemes)}


def _save(fig: plt.Figure, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _legend_outside(ax: Axes) -> None:
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def _no_data(ax: Axes, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", ha="center", va="center", transform=ax.transAxes,
            fontsize=12, color="grey")


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
                ax.plot(_midpoints(r.metrics.reclaim_t_s), r.metrics.reclaim_series_mbps,
                        color=colours[scheme], alpha=0.25, linewidth=0.8)
        m = rep_run.metrics
        ax.plot(_midpoints(m.reclaim_t_s), m.reclaim_series_mbps, color=colours[scheme],
                linewidth=1.6,
                label=f"{scheme} (rep {rep_run.rep}, peak {_fmt(m.reclaim_mbps['peak'])} MB/s)")
    if ax.lines:
        _legend_outside(ax)
        ax.set_ylim(bottom=0)
    else:
        _no_data(ax, "ok runs")
    ax.set(title="Reclaim throughput (swap-device writes, 1-s windows)",
           xlabel="time since workload start (s)", ylabel="throughput (MB/s)")
    ax.grid(alpha=0.3)
    _save(fig, path)


def plot_victims(ok: dict[str, list[Run]], colours: dict, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(11.5, 4.0))
    for scheme, runs in ok.items():
        filled = [r for r in runs if any(r.metrics.victim_series_mb)]
        if not filled:
            continue
        m = median_run(filled).metrics
        ax.plot(m.victim_t_s, m.victim_series_mb, color=colours[scheme], linewidth=1.2,
                label=scheme)
        t_s, target_mb = m.victim_target
        if t_s:
            ax.step(t_s, target_mb, where="post", color=colours[scheme], linestyle="--",
                    linewidth=1.0, label=f"{scheme} target (median {_fmt(m.pmr['target_mb'])} MB)")
    if ax.lines:
        _legend_outside(ax)
        ax.set_ylim(bottom=0)
    else:
        _no_data(ax, "victim list (no scheme ran PMR)")
    ax.set(title="PMR victim list size", xlabel="time since workload start (s)",
           ylabel="victim pages (MB)")
    ax.grid(alpha=0.3)
    _save(fig, path)


def _whiskers(entry: dict, dotted: str) -> tuple[float, list[list[float]] | None]:
    """Bar height (0 for None) and matplotlib yerr for the [min, max] spread."""
    value = get_path(entry, dotted)
    spread = entry.get("spread", {}).get(dotted)
    if value is None:
        return 0.0, None
    if spread is None:
        return value, None
    return value, [[value - spread["min"]], [spread["max"] - value]]


def _grouped_bars(ax: Axes, groups: list[tuple[str, str]], schemes: dict[str, dict],
                  colours: dict) -> None:
    """One group of bars per (label, dotted path); one bar per scheme in each."""
    width = 0.8 / max(len(schemes), 1)
    for i, (scheme, entry) in enumerate(schemes.items()):
        for g, (_, dotted) in enumerate(groups):
            height, yerr = _whiskers(entry, dotted)
            ax.bar(g + (i - (len(schemes) - 1) / 2) * width, height, width,
                   color=colours[scheme], yerr=yerr, capsize=3,
                   error_kw={"elinewidth": 1, "ecolor": "black"},
                   label=scheme if g == 0 else None)
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
        _no_data(ax, "ok runs")
    ax.set(title="Response time per foreground app (mean of its switches)",
           ylabel="response time (ms)")
    ax.grid(axis="y", alpha=0.3)
    _save(fig, path)


def plot_pressure(schemes: dict[str, dict], colours: dict, path: Path) -> None:
    fig, axes = plt.subplots(1, len(PRESSURE_PANELS), figsize=(12, 4.2))
    for ax, (dotted, title) in zip(axes, PRESSURE_PANELS):
        for x, (scheme, entry) in enumerate(schemes.items()):
            height, yerr = _whiskers(entry, dotted)
            ax.bar(x, height, 0.6, color=colours[scheme], yerr=yerr, capsize=4)
            top = height + (yerr[1][0] if yerr else 0.0)
            ax.annotate(_fmt(get_path(entry, dotted)), (x, top), ha="center", va="bottom",
                        xytext=(0, 2), textcoords="offset points", fontsize=8)
        ax.set_xticks(range(len(schemes)), list(schemes))
        ax.set(title=title, ylabel="count per run")
        ax.grid(axis="y", alpha=0.3)
        if not schemes:
            _no_data(ax, "ok runs")
    _save(fig, path)


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
    hists = {s: (bucketed(e["swap_write_kb"]["hist"]), e["runs"])
             for s, e in schemes.items() if e["swap_write_kb"]["hist"]}
    present = {b for by_bucket, _ in hists.values() for b in by_bucket}
    # every power of two from the smallest to the largest, so the axis is a log-2 scale
    buckets = [min(present) * 2**i
               for i in range(round(math.log2(max(present) / min(present))) + 1)] if present else []
    fig, (ax_n, ax_b) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / max(len(hists), 1)
    for i, (scheme, (by_bucket, runs)) in enumerate(hists.items()):
        total_kib = sum(kib for _, kib in by_bucket.values())
        requests, kib = zip(*(by_bucket.get(b, (0, 0.0)) for b in buckets))
        xs = [x + (i - (len(hists) - 1) / 2) * width for x in range(len(buckets))]
        ax_n.bar(xs, [n / runs for n in requests], width, color=colours[scheme], label=scheme)
        ax_b.bar(xs, [100 * k / total_kib for k in kib], width, color=colours[scheme],
                 label=scheme)
    for ax, title, ylabel in ((ax_n, "Swap write requests by size", "requests per run"),
                              (ax_b, "Share of swapped bytes by request size", "% of bytes")):
        ax.set_xticks(range(len(buckets)), [_bucket_label(b) for b in buckets])
        ax.set(title=title, xlabel="request size bucket [x, 2x)", ylabel=ylabel)
        ax.grid(axis="y", alpha=0.3)
        if hists:
            ax.legend(frameon=False)
        else:
            _no_data(ax, "write-size histogram")
    if hists:
        ax_n.set_yscale("log")
    _save(fig, path)


# ---- markdown --------------------------------------------------------------

def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, int):
        return f"{v:,}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def _cell(value, spread: dict | None) -> str:
    text = _fmt(value)
    return f"{text} [{_fmt(spread['min'])}, {_fmt(spread['max'])}]" if spread else text


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in rows)]


def headline_table(schemes: dict[str, dict]) -> list[str]:
    rows = []
    for name, e in schemes.items():
        spread = e.get("spread", {})
        rows.append([f"**{name}**", str(e["runs"]),
                     *(_cell(get_path(e, p), spread.get(p)) for _, p in HEADLINE)])
    return _table(["scheme", "runs", *(title for title, _ in HEADLINE)], rows)


def cpu_table(schemes: dict[str, dict]) -> list[str]:
    threads = sorted({t for e in schemes.values() for t in (e.get("reclaim_cpu_s") or {})})
    rows = [[name, *(_cell(get_path(e, f"reclaim_cpu_s.{t}"),
                           e.get("spread", {}).get(f"reclaim_cpu_s.{t}")) for t in threads)]
            for name, e in schemes.items() if e["runs"] > 0]
    return _table(["scheme", *(f"{t} s" for t in threads)], rows) if threads else []


PMR_COLUMNS = [("pmr.kshrinkd_wake", "kshrinkd wake-ups"), ("pmr.pgscan_kshrinkd", "pages scanned"),
               ("pmr.pmr_victim_added", "victims added"),
               ("pmr.pmr_victim_reclaimed", "victims reclaimed"),
               ("pmr.pmr_victim_putback", "victims put back"),
               ("pmr.nr_victim_mb.mean", "victim list mean MB"),
               ("pmr.nr_victim_mb.min", "min MB"), ("pmr.nr_victim_mb.max", "max MB"),
               ("pmr.nr_victim_mb.last", "at end MB"), ("pmr.target_mb", "target MB")]


def pmr_table(schemes: dict[str, dict]) -> list[str]:
    """PMR's counters, for the schemes run on a kernel that has them."""
    rows = [[name, *(_cell(get_path(e, key), e.get("spread", {}).get(key))
                     for key, _ in PMR_COLUMNS)]
            for name, e in schemes.items() if e.get("pmr")]
    return _table(["scheme", *(title for _, title in PMR_COLUMNS)], rows) if rows else []


def ratio_table(ratios: dict[str, dict]) -> list[str]:
    rows = [[name, *(_cell(r[f], r["spread"].get(f)) for f in RATIO_FIGURES)]
            for name, r in ratios.items()]
    return _table(["scheme", *(RATIO_TITLES[f] for f in RATIO_FIGURES)], rows)


def _setting(key: str, value) -> str:
    return f"{key} {value / 2**20:.1f} MB/s" if "_bps_" in key else f"{key} {value}"


def setup_lines(s: dict) -> list[str]:
    d, g, q = s["dilation"], s["guest"], s["qemu"]
    guest_rest = [_setting(k, v) for k, v in g.items() if k not in ("ram_mb", "cpus", "scale")]
    return [
        f"- Scenario `{s['scenario']}`, device profile `{s['profile']}`; {s['reps']} reps per "
        f"scheme, seed {s['seed']}.",
        f"- Time dilation: factor {d['factor']:.2f} (host {d['host_ns_per_page']:.1f} ns/page, "
        f"guest {d['guest_ns_per_page']:.1f} ns/page).",
        f"- Guest: {g['ram_mb']} MB RAM, {g['cpus']} CPUs, scale {g['scale']}"
        + "".join(f", {x}" for x in guest_rest) + ".",
        f"- QEMU: accel `{q['accel']}`; I/O limits: "
        + ", ".join(_setting(k, v) for k, v in q.items() if k != "accel") + ".",
    ]


def render_markdown(s: dict) -> str:
    k = s["kernel"]
    series = ", ".join(f"`{p}`" for p in k["series"]) or "none"
    n = len(k["series"])
    lines = [f"# Reclaim schemes on `{s['scenario']}` / `{s['profile']}`", "",
             f"Kernel {k['version']} ({k.get('flavour') or 'unknown flavour'}), "
             f"series of {n} patch{'' if n == 1 else 'es'}: {series}.", ""]
    if s["failed_runs"]:
        lines += [f"## ⚠ Failed runs ({len(s['failed_runs'])})", "",
                  "These runs are excluded from every figure below.", "",
                  *_table(["scheme", "rep", "error"],
                          [[f["scheme"], str(f["rep"]), str(f["error"]).replace("|", "\\|")]
                           for f in s["failed_runs"]]), ""]
    if s["warnings"]:
        lines += ["## Warnings", "", *(f"- {w}" for w in s["warnings"]), ""]
    lines += ["## Headline", "",
              "Median over each scheme's ok runs, `[min, max]` across reps when it has more "
              "than one. Reclaim throughput is the swap device's write throughput (paper "
              "§2.2.2): mean over the 1-s windows with any swap write, and the peak window. "
              "Reclaim CPU is the kernel reclaim threads' CPU time; swap out is pswpout.", "",
              *headline_table(s["schemes"]), ""]
    if cpu := cpu_table(s["schemes"]):
        lines += ["Reclaim CPU seconds by thread family:", "", *cpu, ""]
    if pmr := pmr_table(s["schemes"]):
        lines += ["PMR's victim list (pages counted by /proc/vmstat over the run; the list "
                  "size sampled every 100 ms; every scheme on a PMR kernel has the counters, "
                  "they stay 0 where vm.pmr_mode is 0):", "", *pmr, ""]
    lines += ["## Versus original", ""]
    if s["ratios"]:
        lines += [f"Each scheme's median divided by `{BASELINE}`'s median (0.56 = 44% lower); "
                  "`[min, max]` of the per-rep ratios (rep i against rep i) when at least two "
                  "reps pair up; – where original's value is 0 or missing.", "",
                  *ratio_table(s["ratios"]), ""]
    else:
        lines += [f"No comparison: `{BASELINE}` has no ok runs or no other scheme has.", ""]
    lines += ["## Setup", "", *setup_lines(s), "", "## Plots", ""]
    for key, file in PLOT_FILES.items():
        lines += [f"![{key}](plots/{file})", "", PLOT_CAPTIONS[key], ""]
    return "\n".join(lines)
