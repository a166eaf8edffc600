"""The combined report of `pmrtb paper` (config/paper.py): paper.md,
paper_summary.json and plots/ in the output directory, over the campaigns'
own results directories (each keeps its summary.json and report.md).

paper.md first lists the campaigns and how long each took (campaign.json's
wall_s) against the estimate printed first and the mode's time budget
(`time` in paper_summary.json; the budget is the evaluation's, without the
kernel build and the host's measurements, campaign.json's setup_s, which a
checkout and a host pay once), then puts the paper's numbers beside ours:
whether original's runs are in the paper's regime (regime.py, over main's
and floor's runs; also written to regime.json), the headline ratios on
pixel6pro, pmr's against `original`, MGLRU and Acclaim and Acclaim's
against `original` (each the median, min and max over per-rep ratios, rep i
of one scheme against rep i of the other, marked met or missed against the
issue's targets where there is one, with the p-value of the two schemes'
difference), then
one section per figure, plot first:

  plots/headline_ratios.png  the headline ratios against the paper and the targets
  plots/fig5_round_split.png kswapd's round time: page shrinking vs page writeback
  plots/fig6_nr_reclaimed.png nr_to_reclaim vs nr_reclaimed per kswapd round
  plots/fig7_writeback_split.png writeback time: unmap vs page-out
  plots/fig14_devices.png    reclaim throughput on pixel5 vs pixel6pro
  plots/fig15a_delta.png     response time against the victim target delta
  plots/fig15b_unit.png      reclaim throughput against the unmap unit

Figs. 11-13 are main's own plots (main/plots/). Table 3 (reclaim CPU) and
the flash write volume are tables. A last section lists what fell short
of its target with the figures of the same runs that bear on it
(shortfall.py); what we make of them is in docs/regime.md.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from ..analysis.metrics import RunMetrics
from ..analysis.significance import permutation_p
from ..config.paper import (
    BASELINE,
    DEFAULT_PMR,
    DELTA_KEY,
    DEVICE_SCHEMES,
    MAIN_PROFILE,
    OTHER_PROFILE,
    PEER_SCHEMES,
    UNIT_KEY,
    CampaignSpec,
    PaperPlan,
    campaign_json,
    duration_text,
    estimate_s,
    recorded_runs,
)
from ..config.sweep import parse_name
from . import campaign_report, shortfall
from . import regime as regime_mod
from .campaign_report import (
    capacity_entry,
    capacity_kills_floor,
    cell,
    fmt,
    get_path,
    md_table,
    p_text,
)
from .summary import Run, build_summary, run_figures

CPU_KK = "reclaim_cpu.kswapd+kshrinkd"  # kswapd's and kshrinkd's CPU seconds, per run
# the reclaim threads' CPU and the swap out until lmkd's last kill (settled_state.py)
UNTIL_KILL_CPU = "settled.until_last_kill.reclaim_cpu_s"
UNTIL_KILL_SWAP = "settled.until_last_kill.pswpout_mb"
DISK = "swap disk (fio)"  # a headline's base: the main campaign's fio write bandwidth
PLOTS = {
    "headline": "headline_ratios.png",
    "fig5": "fig5_round_split.png",
    "fig6": "fig6_nr_reclaimed.png",
    "fig7": "fig7_writeback_split.png",
    "fig14": "fig14_devices.png",
    "fig15a": "fig15a_delta.png",
    "fig15b": "fig15b_unit.png",
}
# the paper's Fig. 5 (§3.2.1): the original path's mean round, Pixel 6 Pro
PAPER_FIG5 = {
    "shrink_ms": 4.48,
    "writeback_ms": 3.66,
    "shrink_share": 0.548,
    "writeback_share": 0.452,
}
# the paper's Table 3 (§5.6): CPU overhead, kswapd and kshrinkd (s)
PAPER_TABLE3 = {"original": (24.31, 0.0), "pps": (13.94, 10.97), "pmr": (14.51, 11.1)}
# §5.5: the best unmap unit per device
PAPER_BEST_UNIT_KB = {"pixel5": 1024, "pixel6pro": 10240}
PAPER_FIG14 = {
    "original": "mean only ~10% above Pixel 5's (§2.2.2)",
    "pps": "peak 205 MB/s, +45% over Pixel 5 (§5.4)",
    "pmr": 'mean "65% of" Pixel 5\'s as printed (§5.4; likely +65%)',
}


@dataclass(frozen=True)
class Headline:
    key: str
    title: str
    scheme: str
    base: str
    figure: str  # dotted path of run_figures, or CPU_KK
    paper: float | None
    paper_note: str
    target: tuple[str, float] | None  # ("<=", 0.5) or (">=", 2.0)


HEADLINES = [
    Headline(
        "response_time",
        "response time (mean)",
        "pmr",
        "original",
        "response_ms.mean",
        0.564,
        "-43.6% (§5.2)",
        ("<=", 0.50),
    ),
    Headline(
        "response_time_vs_mglru",
        "response time (mean), against MGLRU",
        "pmr",
        "mglru",
        "response_ms.mean",
        None,
        "no MGLRU in the paper",
        None,
    ),
    Headline(
        "peak_throughput",
        "peak reclaim throughput",
        "pmr",
        "original",
        "reclaim_mbps.peak",
        1.828,
        "+82.8% (§5.3.1)",
        (">=", 2.0),
    ),
    Headline(
        "peak_of_disk",
        "peak reclaim throughput against the disk's bandwidth",
        "pmr",
        DISK,
        "reclaim_mbps.peak",
        None,
        "not measured in the paper",
        (">=", 0.60),
    ),
    Headline(
        "kills", "LMKD kills", "pmr", "original", "kills", 0.18, "-82% (§5.3.2)", ("<=", 0.15)
    ),
    Headline(
        "direct_reclaims",
        "direct reclaims (allocstall)",
        "pmr",
        "original",
        "allocstall",
        None,
        "given only against Acclaim: -45% (§5.3.2)",
        ("<=", 0.50),
    ),
    Headline(
        "reclaim_cpu",
        "reclaim CPU (kswapd + kshrinkd)",
        "pmr",
        "original",
        CPU_KK,
        1.053,
        "25.61 / 24.31 s (Table 3)",
        ("<=", 1.03),
    ),
    Headline(
        "flash_writes",
        "flash write volume (pswpout MB)",
        "pmr",
        "original",
        "pswpout_mb",
        1.121,
        "+12.1% over 30 min (§5.6)",
        ("<=", 1.10),
    ),
    Headline(
        "pps_reclaim_cpu",
        "reclaim CPU (kswapd + kshrinkd), PPS",
        "pps",
        "original",
        CPU_KK,
        1.02,
        "+2.0% (§5.6; Table 3: 24.91 / 24.31 s)",
        None,
    ),
    # Acclaim (ATC'20), the paper's baseline in Figs. 11-13; the paper sets
    # no target for them, and gives no ratio of pmr's response time to
    # Acclaim's ("significant performance improvements", §5.2)
    Headline(
        "acclaim_response_time",
        "response time (mean), Acclaim",
        "acclaim",
        "original",
        "response_ms.mean",
        0.676,
        "-32.4% (§5.2, Fig. 11)",
        None,
    ),
    Headline(
        "peak_throughput_vs_acclaim",
        "peak reclaim throughput, against Acclaim",
        "pmr",
        "acclaim",
        "reclaim_mbps.peak",
        1.755,
        "+75.5% (§5.3.1, Fig. 12)",
        None,
    ),
    Headline(
        "kills_vs_acclaim",
        "LMKD kills, against Acclaim",
        "pmr",
        "acclaim",
        "kills",
        0.46,
        "-54% (§5.3.2, Fig. 13)",
        None,
    ),
    Headline(
        "direct_reclaims_vs_acclaim",
        "direct reclaims (allocstall), against Acclaim",
        "pmr",
        "acclaim",
        "allocstall",
        0.55,
        "-45% (§5.3.2, Fig. 13)",
        None,
    ),
]


# what a peer (config/paper.py PEER_SCHEMES) is weighed on: Figs. 11-13, Table 3
PEER_FIGURES = (
    ("response time (mean)", "response_ms.mean"),
    ("peak reclaim throughput", "reclaim_mbps.peak"),
    ("LMKD kills", "kills"),
    ("direct reclaims (allocstall)", "allocstall"),
    ("reclaim CPU (kswapd + kshrinkd)", CPU_KK),
)
PEER_PAPER = {
    "kswapd-threads": 'more kswapd threads "conflict with each other and burden the CPU" '
    "(§4.1, §6), not measured in the paper",
}


@dataclass
class Collected:
    """One campaign's results, as far as they go."""

    spec: CampaignSpec
    status: str  # "finished", "partial" or "missing"
    summary: dict | None = None
    ok: dict[str, list[Run]] | None = None
    runs_present: int = 0
    wall_s: float | None = None  # campaign.json's; None if it has none
    # campaign.json's setup_s summed: the kernel build and the host's
    # measurements within wall_s (0 from a harness before it)
    setup_s: float = 0.0


def collect(p: PaperPlan) -> dict[str, Collected]:
    """(Re)write each campaign's summary.json and report.md and keep both."""
    collected = {}
    for spec in p.campaigns:
        d = p.out / spec.name
        c = Collected(spec, "missing")
        if (d / "campaign.json").exists():
            summary, ok = build_summary(d)
            campaign_report.write_report(d, (summary, ok))
            c.runs_present = recorded_runs(p, spec)
            c.status = "finished" if c.runs_present == spec.runs else "partial"
            c.summary, c.ok = summary, ok
            recorded = campaign_json(d) or {}
            c.wall_s = recorded.get("wall_s")
            c.setup_s = float(sum(recorded.get("setup_s", {}).values()))
        collected[spec.name] = c
    return collected


# ---- ratios ----------------------------------------------------------------


def run_value(m: RunMetrics, figure: str) -> float | None:
    if figure == CPU_KK:
        cpu = m.reclaim_cpu_s
        return None if cpu is None else cpu.get("kswapd", 0.0) + cpu.get("kshrinkd", 0.0)
    return run_figures(m).get(tuple(figure.split(".")))


def paired_ratios(
    ok: dict[str, list[Run]] | None, scheme: str, base: str, figure: str
) -> list[float]:
    """scheme / base per rep both completed (rep i against rep i), where both
    have the figure and base's is not 0; in rep order."""
    if not ok or not ok.get(scheme) or not ok.get(base):
        return []
    base_by_rep = {r.rep: run_value(r.metrics, figure) for r in ok[base]}
    ratios = []
    for r in sorted(ok[scheme], key=lambda r: r.rep):
        num, den = run_value(r.metrics, figure), base_by_rep.get(r.rep)
        if num is not None and den:
            ratios.append(num / den)
    return ratios


def scheme_p_value(
    ok: dict[str, list[Run]] | None, scheme: str, base: str, figure: str
) -> float | None:
    """How likely the difference of scheme's and base's repetitions in figure
    is chance (significance.py); None without enough repetitions."""
    if not ok or not ok.get(scheme) or not ok.get(base):
        return None
    values = [
        [v for r in ok[name] if (v := run_value(r.metrics, figure)) is not None]
        for name in (scheme, base)
    ]
    return permutation_p(*values)


def meets(value: float, target: tuple[str, float]) -> bool:
    op, bound = target
    return value <= bound if op == "<=" else value >= bound


def disk_ratios(
    ok: dict[str, list[Run]] | None, scheme: str, figure: str, disk_mbps: float | None
) -> list[float]:
    """scheme's figure per rep over the swap disk's fio bandwidth, in rep order."""
    if not ok or not ok.get(scheme) or not disk_mbps:
        return []
    values = [run_value(r.metrics, figure) for r in sorted(ok[scheme], key=lambda r: r.rep)]
    return [v / disk_mbps for v in values if v is not None]


def headline_ratio(
    h: Headline, ok: dict[str, list[Run]] | None, disk_mbps: float | None = None
) -> dict:
    """median, min and max of the paired ratios (or of the ratios to the
    disk's bandwidth), the paper's figure, the target and whether the median
    meets it (status met, missed, no target or not measured)."""
    if h.base == DISK:
        values = disk_ratios(ok, h.scheme, h.figure, disk_mbps)
    else:
        values = paired_ratios(ok, h.scheme, h.base, h.figure)
    median = statistics.median(values) if values else None
    entry: dict[str, Any] = {
        "title": h.title,
        "scheme": h.scheme,
        "base": h.base,
        "figure": h.figure,
        "median": median,
        "min": min(values) if values else None,
        "max": max(values) if values else None,
        "pairs": len(values),
        "values": values,
        "paper": h.paper,
        "p_value": None if h.base == DISK else scheme_p_value(ok, h.scheme, h.base, h.figure),
        "paper_note": h.paper_note,
        "target": {"op": h.target[0], "value": h.target[1]} if h.target else None,
        "met": None,
        "reps_meeting": None,
    }
    if not values:
        entry["status"] = "not measured"
        entry["reason"] = _unmeasured_reason(h, ok, disk_mbps)
    elif h.target is None or median is None:
        entry["status"] = "no target"
    else:
        entry["met"] = meets(median, h.target)
        entry["reps_meeting"] = sum(meets(v, h.target) for v in values)
        entry["status"] = "met" if entry["met"] else "missed"
    return entry


def _unmeasured_reason(
    h: Headline, ok: dict[str, list[Run]] | None, disk_mbps: float | None
) -> str:
    if ok is None:
        return "the main campaign has no results yet"
    if h.base == DISK and not disk_mbps:
        return "the main campaign has no fio measurement of the swap disk"
    for name in (h.scheme, h.base):
        if name == DISK:
            continue
        if name not in ok:
            return f"{name} was not run (not in this mode's main campaign)"
        if not ok[name]:
            return f"{name} has no ok runs"
    return f"no rep of both has the figure ({h.base}'s is 0 or missing)"


def disk_mbps(collected: dict[str, Collected]) -> float | None:
    """The swap disk's fio bandwidth measured by the main campaign, if any."""
    main = collected.get("main")
    bw = (main.summary or {}).get("swap_bandwidth") if main else None
    return bw.get("write_mbps") if bw else None


def floor_figure(collected: dict[str, Collected], dotted: str) -> float | None:
    """A figure of the `floor` campaign (original without memory pressure):
    its response time, or how fast its apps demanded memory."""
    floor = collected.get("floor")
    entry = ((floor.summary or {}).get("schemes") or {}).get(BASELINE) if floor else None
    return get_path(entry, dotted) if entry else None


def floor_response_ms(collected: dict[str, Collected]) -> float | None:
    """The response time main's original would have without memory pressure:
    the floor's own mean if it ran main's rounds, else main's switches
    weighed as the floor's are, its cold launches (the apps' first, which
    every run has) at the floor's cold mean and the rest of main's switches
    at the floor's hot mean."""
    floor, main = collected.get("floor"), collected.get("main")
    if floor is None or main is None or floor.spec.rounds == main.spec.rounds:
        return floor_figure(collected, "response_ms.mean")
    base = _main_schemes(collected).get(BASELINE) or {}
    switches = (base.get("cold_launches") or 0) + (base.get("hot_launches") or 0)
    cold_n = floor_figure(collected, "switch_kinds.cold.switches")
    cold_ms = floor_figure(collected, "switch_kinds.cold.mean_ms")
    hot_ms = floor_figure(collected, "switch_kinds.hot.mean_ms")
    if not switches or cold_n is None or cold_ms is None or hot_ms is None:
        return None
    cold_n = min(cold_n, switches)
    return (cold_n * cold_ms + (switches - cold_n) * hot_ms) / switches


def headline_ratios(collected: dict[str, Collected]) -> dict[str, dict]:
    main = collected.get("main")
    return {
        h.key: headline_ratio(h, main.ok if main else None, disk_mbps(collected)) for h in HEADLINES
    }


def peer_ratios(collected: dict[str, Collected]) -> dict[str, list[dict]]:
    """For each peer main ran: per PEER_FIGURES figure, the paired ratios
    peer / original, pmr / original and pmr / peer (headline_ratio's
    entries, without targets: the paper gives no number to meet)."""
    main = collected.get("main")
    if main is None:
        return {}
    out: dict[str, list[dict]] = {}
    for peer in (s for s in PEER_SCHEMES if s in main.spec.schemes):
        note = PEER_PAPER.get(peer, "")
        pairs = (
            ("peer_over_original", peer, BASELINE),
            ("pmr_over_original", "pmr", BASELINE),
            ("pmr_over_peer", "pmr", peer),
        )
        out[peer] = [
            {
                "title": title,
                "figure": figure,
                **{
                    key: headline_ratio(
                        Headline(key, title, scheme, base, figure, None, note, None), main.ok
                    )
                    for key, scheme, base in pairs
                },
            }
            for title, figure in PEER_FIGURES
        ]
    return out


def peer_lines(peers: dict[str, list[dict]]) -> list[str]:
    lines: list[str] = []
    for peer, rows in peers.items():
        lines += [
            f"### {peer}",
            "",
            f"The paper on it: {PEER_PAPER.get(peer, 'nothing')}. Paired ratios as in the "
            "headline table, all from main's interleaved runs.",
            "",
            *md_table(
                ["figure", f"{peer} / original", "pmr / original", f"pmr / {peer}"],
                [
                    [
                        r["title"],
                        *(
                            _ratio_cell(r[k])
                            for k in ("peer_over_original", "pmr_over_original", "pmr_over_peer")
                        ),
                    ]
                    for r in rows
                ],
            ),
            "",
        ]
    return lines


def _ratio_cell(r: dict) -> str:
    if r["median"] is None:
        return "–"
    text = f"{r['median']:.3f}"
    if r["pairs"] > 1:
        text += f" [{r['min']:.3f}, {r['max']:.3f}]"
    return text + f" ({r['pairs']} rep{'s' if r['pairs'] > 1 else ''}){p_text(r['p_value'])}"


def _target_text(r: dict) -> str:
    t = r["target"]
    return f"{'≤' if t['op'] == '<=' else '≥'} {t['value']:g}" if t else "–"


def _status_text(r: dict) -> str:
    if r["status"] == "met":
        return f"✅ met ({r['reps_meeting']} of {r['pairs']} reps)"
    if r["status"] == "missed":
        return f"❌ missed ({r['reps_meeting']} of {r['pairs']} reps meet it)"
    if r["status"] == "not measured":
        return f"not measured: {r['reason']}"
    return "no target"


def ratio_table(ratios: dict[str, dict]) -> list[str]:
    rows = [
        [
            r["title"],
            f"{r['scheme']} / {r['base']}",
            _ratio_cell(r),
            "–" if r["paper"] is None else f"{r['paper']:.3f}",
            r["paper_note"],
            _target_text(r),
            _status_text(r),
        ]
        for r in ratios.values()
    ]
    return md_table(
        [
            "figure",
            "ratio",
            "ours: median [min, max] (reps) p",
            "paper",
            "paper says",
            "target",
            "status",
        ],
        rows,
    )


# ---- plots -----------------------------------------------------------------


def _save(fig, path: Path) -> None:
    campaign_report.save_figure(fig, path)


def plot_headline(ratios: dict[str, dict], path: Path) -> None:
    items = list(ratios.values())
    fig, ax = plt.subplots(figsize=(10, 0.55 * len(items) + 1.5))
    for y, r in enumerate(items):
        if r["median"] is not None:
            ax.barh(
                y,
                r["median"],
                color="tab:blue" if r["status"] != "missed" else "tab:red",
                height=0.55,
                xerr=[[r["median"] - r["min"]], [r["max"] - r["median"]]],
                capsize=3,
                label="ours (median, min-max)" if y == 0 else None,
            )
        if r["paper"] is not None:
            ax.plot(r["paper"], y, "D", color="black", label="paper")
        if r["target"] is not None:
            ax.plot(
                [r["target"]["value"]] * 2,
                [y - 0.35, y + 0.35],
                color="tab:green",
                linewidth=2.5,
                label="target",
            )
    ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set_yticks(
        range(len(items)), [f"{r['title']}\n{r['scheme']} / {r['base']}" for r in items], fontsize=8
    )
    ax.invert_yaxis()
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    if unique:
        ax.legend(unique.values(), unique.keys(), loc="lower right", frameon=False, fontsize=8)
    ax.set(title="Headline ratios on pixel6pro (1 = same as the baseline)", xlabel="ratio")
    ax.grid(axis="x", alpha=0.3)
    _save(fig, path)


def _main_schemes(collected: dict[str, Collected]) -> dict[str, dict]:
    main = collected.get("main")
    if not main or not main.summary:
        return {}
    return {n: e for n, e in main.summary["schemes"].items() if e["runs"] > 0}


def plot_fig5(schemes: dict[str, dict], path: Path) -> None:
    with_split = {
        n: e for n, e in schemes.items() if get_path(e, "kswapd_rounds.shrink_ms") is not None
    }
    # (label, shrinking ms, writeback ms, shrinking share, the paper's)
    bars = [
        (
            "paper: original\n(Pixel 6 Pro)",
            PAPER_FIG5["shrink_ms"],
            PAPER_FIG5["writeback_ms"],
            PAPER_FIG5["shrink_share"],
            True,
        )
    ]
    bars += [
        (
            n,
            e["kswapd_rounds"]["shrink_ms"],
            e["kswapd_rounds"]["writeback_ms"],
            e["kswapd_rounds"]["shrink_share"],
            False,
        )
        for n, e in with_split.items()
    ]
    fig, (ax_ms, ax_share) = plt.subplots(1, 2, figsize=(12, 4.5))
    for x, (_label, shrink, writeback, share, paper) in enumerate(bars):
        hatch = "//" if paper else None
        first = x == min(1, len(bars) - 1)
        ax_ms.bar(
            x,
            shrink,
            0.6,
            color="tab:orange",
            hatch=hatch,
            label="page shrinking" if first else None,
        )
        ax_ms.bar(
            x,
            writeback,
            0.6,
            bottom=shrink,
            color="tab:blue",
            hatch=hatch,
            label="page writeback" if first else None,
        )
        share = share or 0.0
        ax_share.bar(x, 100 * share, 0.6, color="tab:orange", hatch=hatch)
        ax_share.bar(x, 100 * (1 - share), 0.6, bottom=100 * share, color="tab:blue", hatch=hatch)
        ax_share.annotate(
            f"{100 * share:.1f}%",
            (x, 100 * share / 2),
            ha="center",
            fontsize=8,
            backgroundcolor="white",
        )
    for ax in (ax_ms, ax_share):
        ax.set_xticks(range(len(bars)), [b[0] for b in bars], fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    ax_ms.set(title="Mean time per kswapd reclaim round", ylabel="ms per round")
    ax_share.set(title="Share of the round", ylabel="% of round time", ylim=(0, 100))
    ax_ms.legend(frameon=False, fontsize=8)
    if not with_split:
        campaign_report.no_data(
            ax_ms, "kswapd rounds with a writeback split (mm_vmscan_kswapd_round)"
        )
    _save(fig, path)


def plot_fig6(ok: dict[str, list[Run]] | None, colours: dict, path: Path) -> None:
    with_rounds = {
        n: [r for r in runs if r.metrics.kswapd_round_list] for n, runs in (ok or {}).items()
    }
    with_rounds = {n: runs for n, runs in with_rounds.items() if runs}
    rows = max(len(with_rounds), 1)
    fig, axes = plt.subplots(rows, 1, figsize=(11, 2.6 * rows + 0.6), squeeze=False)
    for ax, (scheme, runs) in zip(axes[:, 0], with_rounds.items()):
        run = campaign_report.median_run(runs)
        rounds = run.metrics.kswapd_round_list
        t = [r.t_end_s for r in rounds]
        ax.plot(
            t,
            [r.nr_to_reclaim for r in rounds],
            drawstyle="steps-post",
            color="black",
            linewidth=1.0,
            marker="_",
            label="nr_to_reclaim (goal)",
        )
        ax.plot(
            t,
            [r.nr_reclaimed for r in rounds],
            ".",
            color=colours.get(scheme, "tab:blue"),
            markersize=4,
            label="nr_reclaimed",
        )
        ax.set(
            title=f"{scheme} (rep {run.rep}, {len(rounds)} kswapd "
            f"round{'' if len(rounds) == 1 else 's'})",
            ylabel="pages",
        )
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right", frameon=False, fontsize=8)
    if not with_rounds:
        campaign_report.no_data(axes[0, 0], "kswapd rounds (mm_vmscan_kswapd_round)")
    axes[-1, 0].set_xlabel("time since workload start (s)")
    _save(fig, path)


def plot_fig7(schemes: dict[str, dict], path: Path) -> None:
    with_wb = {n: e for n, e in schemes.items() if e.get("writeback")}
    fig, (ax_s, ax_p) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = list(with_wb)
    for x, e in enumerate(with_wb.values()):
        wb = e["writeback"]
        ax_s.bar(x, wb["unmap_s"] or 0.0, 0.6, color="tab:red", label="unmap" if x == 0 else None)
        ax_s.bar(
            x,
            wb["pageout_s"] or 0.0,
            0.6,
            bottom=wb["unmap_s"] or 0.0,
            color="tab:green",
            label="page-out" if x == 0 else None,
        )
        ax_p.bar(
            x - 0.2,
            get_path(wb, "unmap_us_per_page.p50") or 0.0,
            0.4,
            color="tab:red",
            label="unmap" if x == 0 else None,
        )
        ax_p.bar(
            x + 0.2,
            get_path(wb, "pageout_us_per_page.p50") or 0.0,
            0.4,
            color="tab:green",
            label="page-out" if x == 0 else None,
        )
    for ax in (ax_s, ax_p):
        ax.set_xticks(range(len(names)), names)
        ax.grid(axis="y", alpha=0.3)
        if names:
            ax.legend(frameon=False, fontsize=8)
        else:
            campaign_report.no_data(ax, "writeback times (mm_vmscan_writeback_time)")
    ax_s.set(title="Reclaim's writeback time over a run", ylabel="seconds per run (median)")
    ax_p.set(title="Per page, median shrink_folio_list() call", ylabel="µs per page")
    _save(fig, path)


def _device_entries(collected: dict[str, Collected]) -> dict[str, dict[str, dict]]:
    """{profile: {scheme: summary entry}} for Fig. 14's schemes."""
    out: dict[str, dict[str, dict]] = {}
    for profile, name in ((OTHER_PROFILE, "devices"), (MAIN_PROFILE, "main")):
        c = collected.get(name)
        schemes = c.summary["schemes"] if c and c.summary else {}
        out[profile] = {
            s: schemes[s] for s in DEVICE_SCHEMES if s in schemes and schemes[s]["runs"] > 0
        }
    return out


def plot_fig14(devices: dict[str, dict[str, dict]], path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    palette = {OTHER_PROFILE: "tab:grey", MAIN_PROFILE: "tab:purple"}
    for ax, (dotted, title) in zip(
        axes,
        (
            ("reclaim_mbps.peak", "Peak reclaim throughput"),
            ("reclaim_mbps.mean", "Mean reclaim throughput"),
        ),
    ):
        for i, (profile, entries) in enumerate(devices.items()):
            for x, scheme in enumerate(DEVICE_SCHEMES):
                if scheme not in entries:
                    continue
                height, yerr = campaign_report.whiskers(entries[scheme], dotted)
                ax.bar(
                    x + (i - 0.5) * 0.38,
                    height,
                    0.38,
                    color=palette[profile],
                    yerr=yerr,
                    capsize=3,
                    label=profile,
                )
        ax.set_xticks(range(len(DEVICE_SCHEMES)), DEVICE_SCHEMES)
        ax.set(title=title, ylabel="swap-device writes (MB/s)")
        ax.grid(axis="y", alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            unique = dict(zip(labels, handles))
            ax.legend(unique.values(), unique.keys(), frameon=False)
        else:
            campaign_report.no_data(ax, "runs")
    _save(fig, path)


def _errorbar(ax, xs, entries, dotted, **style) -> None:
    campaign_report.errorbar(ax, xs, entries, dotted, **style)


DELTA_PMR = "pmr (delta 3x)"  # the unit sweep's point taken from delta (plan.unit_from_delta)


def _measured(collected: dict[str, Collected], campaign: str, scheme: str) -> dict | None:
    """`scheme`'s entry in `campaign`'s summary, if it has a run that counts."""
    c = collected.get(campaign)
    entry = (c.summary or {}).get("schemes", {}).get(scheme) if c else None
    return entry if entry and entry.get("runs") else None


def delta_rows(p: PaperPlan, collected: dict[str, Collected]) -> list[tuple]:
    """(multiple, kB, scheme, entry or None) for each planned delta."""
    return [
        (d.multiple, d.kbytes, d.scheme, _measured(collected, "delta", d.scheme)) for d in p.delta
    ]


def plot_fig15a(p: PaperPlan, rows: list[tuple], path: Path) -> None:
    fig, (ax_r, ax_t) = plt.subplots(1, 2, figsize=(12, 4.5))
    measured = [(k, e) for k, _, _, e in rows if e is not None]
    xs, entries = [k for k, _ in measured], [e for _, e in measured]
    _errorbar(ax_r, xs, entries, "response_ms.mean", color="tab:purple", marker="o", label="mean")
    _errorbar(ax_t, xs, entries, "reclaim_mbps.peak", color="tab:purple", marker="o", label="peak")
    _errorbar(
        ax_t,
        xs,
        entries,
        "reclaim_mbps.mean",
        color="tab:purple",
        marker="s",
        linestyle="--",
        label="mean",
    )
    ticks = [k for k, *_ in rows]
    labels = [f"{k}x\n{kb / 1024:.1f} MB" for k, kb, *_ in rows]
    for ax, title, ylabel in (
        (ax_r, "Response time against δ", "response time (ms)"),
        (ax_t, "Reclaim throughput against δ", "MB/s"),
    ):
        ax.set_xticks(ticks, labels)
        ax.set(
            title=title, xlabel="δ (multiples of kswapd's nr_to_reclaim; guest MB)", ylabel=ylabel
        )
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(frameon=False, fontsize=8)
        else:
            campaign_report.no_data(ax, "delta runs")
    if 3 in ticks:
        ax_r.axvline(3, color="grey", linestyle=":", linewidth=1)
    _save(fig, path)


def unit_points(p: PaperPlan, collected: dict[str, Collected]) -> dict[str, list[tuple]]:
    """{profile: [(unit kB, scheme, entry or None)]} for each unit campaign,
    by unit; with unit_from_delta, the main profile's own unit is delta's pmr."""
    out = {}
    for name, c in collected.items():
        if not name.startswith("unit-"):
            continue
        points = [
            (
                float(dict(parse_name(scheme)[0].overrides)[UNIT_KEY]),
                scheme,
                _measured(collected, name, scheme),
            )
            for scheme in c.spec.schemes
        ]
        if p.unit_from_delta and c.spec.profile == MAIN_PROFILE:
            points.append(
                (float(p.main_unit_kb), DELTA_PMR, _measured(collected, "delta", DEFAULT_PMR))
            )
        out[c.spec.profile] = sorted(points, key=lambda pt: pt[0])
    return out


def plot_fig15b(units: dict[str, list[tuple]], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(9, 4.5))
    palette = {OTHER_PROFILE: "tab:grey", MAIN_PROFILE: "tab:purple"}
    values = sorted({v for points in units.values() for v, *_ in points})
    for profile, points in units.items():
        measured = [(v, e) for v, _, e in points if e is not None]
        _errorbar(
            ax,
            [v for v, _ in measured],
            [e for _, e in measured],
            "reclaim_mbps.peak",
            color=palette.get(profile),
            marker="o",
            label=f"{profile}: peak",
        )
        _errorbar(
            ax,
            [v for v, _ in measured],
            [e for _, e in measured],
            "reclaim_mbps.mean",
            color=palette.get(profile),
            marker="s",
            linestyle="--",
            label=f"{profile}: mean",
        )
    if values:
        ax.set_xscale("log")
        ax.set_xticks(values, [f"{v / 1024:g} MB" if v >= 1024 else f"{v:g} kB" for v in values])
        ax.minorticks_off()
    ax.set(
        title="Reclaim throughput against the unmap unit",
        xlabel="unmap_unit_kbytes",
        ylabel="swap-device writes (MB/s)",
    )
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if ax.lines:
        ax.legend(frameon=False, fontsize=8)
    else:
        campaign_report.no_data(ax, "unit runs")
    _save(fig, path)


# ---- tables ----------------------------------------------------------------


def _e_cell(entry: dict | None, dotted: str) -> str:
    if not entry:
        return "–"
    return cell(get_path(entry, dotted), entry.get("spread", {}).get(dotted))


def fig5_table(schemes: dict[str, dict]) -> list[str]:
    paper = PAPER_FIG5
    rows = [
        [
            "paper: original (Pixel 6 Pro)",
            "–",
            f"{paper['shrink_ms'] + paper['writeback_ms']:.2f}",
            f"{paper['shrink_ms']:.2f}",
            f"{paper['writeback_ms']:.2f}",
            f"{paper['shrink_share']:.3f}",
            f"{paper['writeback_share']:.3f}",
        ]
    ]
    rows += [
        [
            n,
            *(
                _e_cell(e, f"kswapd_rounds.{k}")
                for k in (
                    "rounds",
                    "duration_ms",
                    "shrink_ms",
                    "writeback_ms",
                    "shrink_share",
                    "writeback_share",
                )
            ),
        ]
        for n, e in schemes.items()
        if e.get("kswapd_rounds")
    ]
    return md_table(
        [
            "scheme",
            "rounds",
            "round ms",
            "shrinking ms",
            "writeback ms",
            "shrinking share",
            "writeback share",
        ],
        rows,
    )


def fig6_table(schemes: dict[str, dict]) -> list[str]:
    rows = [
        [
            n,
            *(
                _e_cell(e, f"kswapd_rounds.{k}")
                for k in (
                    "nr_to_reclaim",
                    "nr_reclaimed",
                    "nr_scanned",
                    "reclaimed_ratio",
                    "goal_met_share",
                )
            ),
        ]
        for n, e in schemes.items()
        if e.get("kswapd_rounds")
    ]
    return (
        md_table(
            [
                "scheme",
                "nr_to_reclaim (median)",
                "nr_reclaimed (median)",
                "nr_scanned (median)",
                "reclaimed / goal (mean)",
                "rounds that met the goal",
            ],
            rows,
        )
        if rows
        else []
    )


def fig7_table(schemes: dict[str, dict]) -> list[str]:
    cols = (
        "writeback.unmap_s",
        "writeback.pageout_s",
        "writeback.unmap_share",
        "writeback.unmap_us_per_page.p50",
        "writeback.unmap_us_per_page.p95",
        "writeback.pageout_us_per_page.p50",
    )
    rows = [[n, *(_e_cell(e, k) for k in cols)] for n, e in schemes.items() if e.get("writeback")]
    return (
        md_table(
            [
                "scheme",
                "unmap s",
                "page-out s",
                "unmap share",
                "unmap µs/page p50",
                "p95",
                "page-out µs/page p50",
            ],
            rows,
        )
        if rows
        else []
    )


MAIN_COLUMNS = [
    ("response_ms.mean", "response mean ms"),
    ("response_ms.p95", "p95 ms"),
    ("reclaim_mbps.peak", "reclaim peak MB/s"),
    ("reclaim_mbps.mean", "mean MB/s"),
    ("kills", "kills"),
    ("allocstall", "allocstall"),
    ("pgmajfault", "major faults"),
]


def main_table(schemes: dict[str, dict]) -> list[str]:
    rows = [
        [n, str(e["runs"]), *(_e_cell(e, k) for k, _ in MAIN_COLUMNS)] for n, e in schemes.items()
    ]
    return md_table(["scheme", "runs", *(t for _, t in MAIN_COLUMNS)], rows) if rows else []


def _median_ratio(values: list[float]) -> str:
    if not values:
        return "–"
    text = f"{statistics.median(values):.3f}"
    return text + (f" [{min(values):.3f}, {max(values):.3f}]" if len(values) > 1 else "")


def table3(schemes: dict[str, dict], ok: dict[str, list[Run]] | None) -> list[str]:
    rows = []
    for n, e in schemes.items():
        cpu = e.get("reclaim_cpu_s") or {}
        kswapd, kshrinkd = cpu.get("kswapd"), cpu.get("kshrinkd", 0.0 if cpu else None)
        total = None if kswapd is None else kswapd + (kshrinkd or 0.0)
        other = sum(v for k, v in cpu.items() if k not in ("kswapd", "kshrinkd"))
        paper = PAPER_TABLE3.get(n)
        rows.append(
            [
                n,
                _e_cell(e, "reclaim_cpu_s.kswapd"),
                _e_cell(e, "reclaim_cpu_s.kshrinkd") if "kshrinkd" in cpu else fmt(kshrinkd),
                fmt(total),
                _base_ratio(ok, n, CPU_KK),
                _e_cell(e, UNTIL_KILL_CPU),
                _base_ratio(ok, n, UNTIL_KILL_CPU),
                fmt(other) if other else "–",
                *(
                    ("–",) * 4
                    if paper is None
                    else (
                        f"{paper[0]:.2f}",
                        f"{paper[1]:.2f}",
                        f"{sum(paper):.2f}",
                        f"{sum(paper) / sum(PAPER_TABLE3['original']):.3f}",
                    )
                ),
            ]
        )
    return (
        md_table(
            [
                "scheme",
                "kswapd s",
                "kshrinkd s",
                "kswapd + kshrinkd s",
                "÷ original (paired)",
                "until lmkd's last kill s",
                "÷ original (paired)",
                "other reclaim threads s",
                "paper kswapd s",
                "paper kshrinkd s",
                "paper total s",
                "paper ÷ original",
            ],
            rows,
        )
        if rows
        else []
    )


def flash_table(schemes: dict[str, dict], ok: dict[str, list[Run]] | None) -> list[str]:
    paper = {"pmr": "1.121 (§5.6)"}
    rows = [
        [
            n,
            _e_cell(e, "pswpout_mb"),
            _base_ratio(ok, n, "pswpout_mb"),
            _e_cell(e, UNTIL_KILL_SWAP),
            _base_ratio(ok, n, UNTIL_KILL_SWAP),
            paper.get(n, "–"),
        ]
        for n, e in schemes.items()
    ]
    return (
        md_table(
            [
                "scheme",
                "swap out MB (pswpout)",
                "÷ original (paired)",
                "until lmkd's last kill MB",
                "÷ original (paired)",
                "paper ÷ original",
            ],
            rows,
        )
        if rows
        else []
    )


def _base_ratio(ok: dict[str, list[Run]] | None, scheme: str, figure: str) -> str:
    """A table cell: the median [min, max] of scheme / original per paired
    rep, "1" for original itself."""
    return "1" if scheme == BASELINE else _median_ratio(paired_ratios(ok, scheme, BASELINE, figure))


def fig14_rounds_text(p: PaperPlan) -> str:
    """Says so when Fig. 14's two campaigns ran different rounds (quick and
    full modes)."""
    dev, main = p.campaign("devices"), p.campaign("main")
    if dev is None or main is None or dev.rounds == main.rounds:
        return ""
    d = f"{dev.rounds} round{'' if dev.rounds == 1 else 's'}"
    return (
        f" `devices` ran {d} and `main` {main.rounds}: the {OTHER_PROFILE} "
        f"figures are over {d}, the {MAIN_PROFILE} ones over {main.rounds} "
        "(the means over the seconds in which the swap disk wrote)."
    )


def fig14_table(devices: dict[str, dict[str, dict]]) -> list[str]:
    rows = []
    small, big = devices[OTHER_PROFILE], devices[MAIN_PROFILE]
    for s in DEVICE_SCHEMES:
        row = [s]
        for dotted in ("reclaim_mbps.peak", "reclaim_mbps.mean"):
            a, b = small.get(s), big.get(s)
            va, vb = (get_path(a, dotted) if a else None), (get_path(b, dotted) if b else None)
            row += [
                _e_cell(a, dotted),
                _e_cell(b, dotted),
                f"{vb / va:.2f}" if va and vb is not None else "–",
            ]
        rows.append(row + [PAPER_FIG14[s]])
    return md_table(
        [
            "scheme",
            f"{OTHER_PROFILE} peak MB/s",
            f"{MAIN_PROFILE} peak MB/s",
            "peak ratio",
            f"{OTHER_PROFILE} mean MB/s",
            f"{MAIN_PROFILE} mean MB/s",
            "mean ratio",
            "paper",
        ],
        rows,
    )


def fig15a_table(p: PaperPlan, rows: list[tuple]) -> list[str]:
    out = [
        [
            f"{k}x",
            f"{kb / 1024:.1f}",
            f"{kb / 1024 / p.main_scale:.0f}",
            f"`{scheme}`",
            str(e["runs"]) if e else "0",
            _e_cell(e, "response_ms.mean"),
            _e_cell(e, "response_ms.p95"),
            _e_cell(e, "reclaim_mbps.peak"),
            _e_cell(e, "kills"),
            _e_cell(e, "pmr.target_mb"),
        ]
        for k, kb, scheme, e in rows
    ]
    return md_table(
        [
            "δ",
            "guest MB",
            "phone-scale MB",
            "scheme",
            "runs",
            "response mean ms",
            "p95 ms",
            "reclaim peak MB/s",
            "kills",
            "target kshrinkd saw MB",
        ],
        out,
    )


def fig15b_lines(units: dict[str, list[tuple]]) -> list[str]:
    lines = []
    for profile, points in units.items():
        rows = [
            [
                f"{v:g}",
                f"`{scheme}`",
                str(e["runs"]) if e else "0",
                _e_cell(e, "reclaim_mbps.peak"),
                _e_cell(e, "reclaim_mbps.mean"),
                _e_cell(e, "response_ms.mean"),
                _e_cell(e, "swap_write_kb.mean"),
            ]
            for v, scheme, e in points
        ]
        measured = [
            (get_path(e, "reclaim_mbps.peak"), -v, v)
            for v, _, e in points
            if e is not None and get_path(e, "reclaim_mbps.peak") is not None
        ]
        best = f"**{max(measured)[2]:g} kB**" if measured else "–"
        paper = PAPER_BEST_UNIT_KB.get(profile)
        lines += [
            f"`{profile}`: best unit by median peak throughput {best}; the paper's best "
            f"on this phone: {paper:g} kB."
            if paper
            else f"`{profile}`: best {best}.",
            "",
            *md_table(
                [
                    "unit kB",
                    "scheme",
                    "runs",
                    "reclaim peak MB/s",
                    "mean MB/s",
                    "response mean ms",
                    "mean swap write KiB",
                ],
                rows,
            ),
            "",
        ]
    return lines


# ---- paper.md ----------------------------------------------------------------


def _plot(key: str, alt: str) -> str:
    return f"![{alt}](plots/{PLOTS[key]})"


def campaigns_table(collected: dict[str, Collected]) -> list[str]:
    rows = []
    for name, c in collected.items():
        s = c.summary
        failed = len(s["failed_runs"]) if s else 0
        ok_runs = sum(e["runs"] for e in s["schemes"].values()) if s else 0
        status = {
            "finished": "finished",
            "missing": "not run yet",
            "partial": f"partial ({c.runs_present} of {c.spec.runs} runs)",
        }[c.status]
        link = f"[report]({name}/report.md)" if s else "–"
        kernel = s["kernel"]["version"] if s else "–"
        rows.append(
            [
                f"`{name}`",
                c.spec.figures,
                c.spec.profile,
                str(len(c.spec.schemes)),
                f"{c.spec.reps} x {c.spec.rounds}",
                f"{ok_runs} ok, {failed} failed",
                kernel,
                status,
                link,
            ]
        )
    return md_table(
        [
            "campaign",
            "for",
            "profile",
            "schemes",
            "reps x rounds",
            "runs",
            "kernel",
            "status",
            "details",
        ],
        rows,
    )


def took_text(seconds: float) -> str:
    """A measured duration: `6 min 05 s`, `1 h 38 min`."""
    s = round(seconds)
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


# paper.md leaves out a setup shorter than this: the kernel's up-to-date
# check and the host's stored measurements take a few seconds
SETUP_SHOWN_S = 60.0


def time_summary(p: PaperPlan, collected: dict[str, Collected]) -> dict:
    """How long the campaigns took (campaign.json's wall_s) against the
    estimate printed first and the mode's budget. `took_s` is None until
    every campaign has finished with its time recorded; `setup_s` is the
    part of it that built the kernel and measured the host (campaign.json's
    setup_s, summed), and the budget weighs the rest, `evaluation_s`."""
    took = [c.wall_s for c in collected.values() if c.wall_s is not None]
    complete = all(c.status == "finished" and c.wall_s is not None for c in collected.values())
    took_s = round(sum(took), 1) if complete else None
    setup_s = round(sum(c.setup_s for c in collected.values()), 1)
    evaluation_s = None if took_s is None else round(took_s - setup_s, 1)
    budget = p.target_s
    campaigns: dict[str, dict[str, Any]] = {
        n: {"took_s": c.wall_s, "setup_s": c.setup_s, "estimate_s": round(estimate_s(c.spec), 1)}
        for n, c in collected.items()
    }
    return {
        "budget_s": budget,
        "estimate_s": round(sum(e["estimate_s"] for e in campaigns.values()), 1),
        "took_s": took_s,
        "setup_s": setup_s,
        "evaluation_s": evaluation_s,
        "within_budget": (
            None if evaluation_s is None or budget is None else evaluation_s <= budget
        ),
        "campaigns": campaigns,
    }


def time_lines(p: PaperPlan, collected: dict[str, Collected]) -> list[str]:
    t = time_summary(p, collected)
    parts = "; ".join(
        f"`{n}` "
        + ("not recorded" if e["took_s"] is None else took_text(e["took_s"]))
        + f" (estimate {duration_text(e['estimate_s'])})"
        for n, e in t["campaigns"].items()
    )
    budget = (
        f" ({p.mode} mode: no budget)"
        if t["budget_s"] is None
        else f" against the {p.mode} mode's budget of {duration_text(t['budget_s'])}"
    )
    if t["took_s"] is None:
        head = (
            "The campaigns' total time is not known: some have not finished, or ran "
            "on a harness that did not record it (no `wall_s` in their campaign.json)."
        )
    else:
        verdict = (
            ""
            if t["within_budget"] is None
            else (", within it" if t["within_budget"] else ", over it")
        )
        setup = (
            ""
            if t["setup_s"] < SETUP_SHOWN_S
            else f": {took_text(t['setup_s'])} building the kernel and measuring the host "
            "(done once per checkout and host; `setup_s` in campaign.json) and "
            f"**{took_text(t['evaluation_s'])}** of evaluation"
        )
        head = (
            f"The campaigns took **{took_text(t['took_s'])}**{setup}{budget}{verdict} "
            f"(estimate printed first: {duration_text(t['estimate_s'])})."
        )
    return [
        head + " Each campaign's setup (kernel check, dilation, data disk), runs and "
        "fio, summed over the sittings of a continued one, not counting the run a "
        "cut-off sitting lost: " + parts + "."
    ]


def kernel_warnings(collected: dict[str, Collected]) -> list[str]:
    kernels = {
        name: (c.summary["kernel"]["version"], tuple(c.summary["kernel"]["series"]))
        for name, c in collected.items()
        if c.summary
    }
    if len(set(kernels.values())) <= 1:
        return []
    return [
        "The campaigns ran on different kernels (version or patch series): "
        + "; ".join(f"`{n}` {v} ({len(s)} patches)" for n, (v, s) in kernels.items())
        + ". Re-run the older ones (remove their directories) before comparing them."
    ]


def shortfall_lines(
    p: PaperPlan, ratios: dict[str, dict], collected: dict[str, Collected]
) -> list[str]:
    lines = []
    schemes = _main_schemes(collected)
    for key, r in ratios.items():
        if r["status"] == "missed":
            facts = shortfall.evidence(
                key,
                r["scheme"],
                r["base"],
                schemes,
                unit_kb=p.main_unit_kb,
                disk_mbps=disk_mbps(collected),
                floor_ms=floor_response_ms(collected),
                demand_mbps=floor_figure(collected, "anon_growth_peak_mbps"),
            )
            lines += [
                f"### {r['title']} ({r['scheme']} / {r['base']})",
                "",
                f"Ours {_ratio_cell(r)}, target {_target_text(r)}, paper "
                f"{'–' if r['paper'] is None else format(r['paper'], '.3f')}.",
                "",
            ]
            if facts:
                lines += [
                    "Where it goes, in the same runs (medians):",
                    "",
                    *(f"- {f}" for f in facts),
                    "",
                ]
    unmeasured = [r for r in ratios.values() if r["status"] == "not measured"]
    if unmeasured:
        lines += [
            "### Not measured",
            "",
            *(f"- {r['title']} ({r['scheme']} / {r['base']}): {r['reason']}" for r in unmeasured),
            "",
        ]
    gaps = [
        f"- `{n}`: {c.status if c.status != 'missing' else 'not run yet'}"
        for n, c in collected.items()
        if c.status != "finished"
    ]
    gaps += [
        f"- `{n}`: {len(c.summary['failed_runs'])} failed runs (see its report)"
        for n, c in collected.items()
        if c.summary and c.summary["failed_runs"]
    ]
    if gaps:
        lines += ["### Incomplete campaigns", "", *gaps, ""]
    if not lines:
        lines = ["Every target was met.", ""]
    return lines


def paper_regime(p: PaperPlan, collected: dict[str, Collected]) -> dict | None:
    """The regime over main's, floor's and devices' original runs
    (regime.py), from the runs collect() loaded; None before main has
    results."""
    main, floor, devices = (collected.get(n) for n in ("main", "floor", "devices"))
    if main is None or main.ok is None:
        return None
    return regime_mod.build(
        p.out,
        "paper",
        main.ok.get(BASELINE, []),
        floor.ok.get(BASELINE, []) if floor and floor.ok else None,
        devices.ok.get(BASELINE, []) if devices and devices.ok else None,
    )


def regime_lines(regime: dict | None) -> list[str]:
    return (
        regime_mod.markdown_lines(regime)
        if regime
        else ["The main campaign has no results yet.", ""]
    )


def sweep_lines(
    p: PaperPlan,
    drows: list[tuple],
    units: dict[str, list[tuple]],
    default_target: float | None,
    three: float | None,
) -> list[str]:
    """paper.md's Figs. 15a and 15b."""
    return [
        "## Fig. 15a: response time against the victim target δ",
        "",
        _plot("fig15a", "Fig. 15a"),
        "",
        f"pmr with `{DELTA_KEY}` at k x kswapd's nr_to_reclaim, computed from the guest's "
        f"high watermark as the harness sets it ({p.nr_to_reclaim_pages:,} pages); 3x is the "
        "kernel's default. The paper (§5.5) swept 154-770 MB on the phone: response time "
        "falls, then rises again, with a limited effect overall."
        + (
            f" The kernel's own default, as kshrinkd reported it in main's pmr runs: "
            f"{fmt(default_target)} MB (3x here: {three / 1024:.1f} MB)."
            if default_target is not None and three
            else ""
        )
        + (
            f" The 3x point is `{DEFAULT_PMR}` as it is, the kernel's default (0), which is also "
            "the unit sweep's point at the profile's own unit."
            if p.unit_from_delta
            else ""
        ),
        "",
        *fig15a_table(p, drows),
        "",
        "## Fig. 15b: reclaim throughput against the unmap unit",
        "",
        _plot("fig15b", "Fig. 15b"),
        "",
        f"pmr with `{UNIT_KEY}` at each unit. The paper (§5.5): the best unit is 1 MB on the "
        "Pixel 5 and 10 MB on the Pixel 6 Pro."
        + (
            f" `{DELTA_PMR}`: the delta sweep's `{DEFAULT_PMR}` runs, at {MAIN_PROFILE}'s own "
            f"unit ({p.main_unit_kb} kB)."
            if p.unit_from_delta
            else ""
        ),
        "",
        *(fig15b_lines(units) or ["No unit campaign yet."]),
    ]


def render(
    p: PaperPlan,
    collected: dict[str, Collected],
    ratios: dict[str, dict],
    regime: dict | None = None,
    peers: dict[str, list[dict]] | None = None,
) -> str:
    """paper.md; `peers` is peer_ratios(collected), made here if not given."""
    if peers is None:
        peers = peer_ratios(collected)
    schemes = _main_schemes(collected)
    main = collected.get("main")
    main_ok = main.ok if main else None
    devices = _device_entries(collected)
    drows = delta_rows(p, collected)
    units = unit_points(p, collected)
    default_target = get_path(schemes.get("pmr", {}), "pmr.target_mb")
    three = next((kb for k, kb, *_ in drows if k == 3), None)
    mode = (
        f"{p.mode}: "
        + "; ".join(f"{n} {c.spec.reps} x {c.spec.rounds}" for n, c in collected.items())
        + " (reps x rounds)"
        + (
            "; quick: the regime and the direction of pmr's effect, not the paper's figures"
            if p.quick
            else ""
        )
    )
    lines = [
        "# The PMR paper's evaluation on the emulated phone",
        "",
        f"Mode {mode}; seed {p.seed}; written {time.strftime('%Y-%m-%d %H:%M:%S')}. "
        "Every figure is the median over reps with `[min, max]` across them; ratios pair rep "
        "i of one scheme with rep i of the other. Each campaign's own report has every "
        "number; the paper's phones run Android on real flash, ours a scaled QEMU guest "
        "(docs/testbed.md), so compare ratios and shapes, not absolute values.",
        "",
        *(f"> ⚠ {w}" for w in kernel_warnings(collected)),
        "",
        "## Campaigns",
        "",
        *campaigns_table(collected),
        "",
        *time_lines(p, collected),
        "",
        "## Regime (pixel6pro, original)",
        "",
        *regime_lines(regime),
        "## Headline ratios (pixel6pro, against original)",
        "",
        _plot("headline", "headline ratios"),
        "",
        "Bars: our median ratio with min-max whiskers (red when it misses the target); "
        "diamonds: the paper; green ticks: the target.",
        "",
        *ratio_table(ratios),
        "",
        *(
            [
                "## Beside what users deploy instead",
                "",
                "The alternatives to PMR that phones ship (`pmrtb paper --peers`), each "
                "against original and against pmr.",
                "",
                *peer_lines(peers),
            ]
            if peers
            else []
        ),
        "## Fig. 5: where a kswapd reclaim round's time goes",
        "",
        _plot("fig5", "Fig. 5"),
        "",
        "Mean time per kswapd round (`mm_vmscan_kswapd_round`, one per kswapd_shrink_node() "
        "call), split into page writeback (kswapd's own unmap and page-out time inside the "
        "round, `mm_vmscan_writeback_time`) and page shrinking (the rest); the hatched bar is "
        "the paper's original path on the Pixel 6 Pro.",
        "",
        *fig5_table(schemes),
        "",
        "## Fig. 6: nr_to_reclaim against nr_reclaimed per kswapd round",
        "",
        _plot("fig6", "Fig. 6"),
        "",
        "Each scheme's median run: kswapd's goal per round (the guest's high watermark, the "
        "phone's 39,340 pages scaled by RAM) and what the round reclaimed. The paper: "
        '"the actual number it reclaims is far fewer than the expected value" (§3.2.2).',
        "",
        *(
            fig6_table(schemes)
            or ["No kswapd rounds were traced (the kernel lacks `mm_vmscan_kswapd_round`)."]
        ),
        "",
        "## Fig. 7: writeback time, unmap against page-out",
        "",
        _plot("fig7", "Fig. 7"),
        "",
        "Reclaim's unmap (try_to_unmap() and TLB flushes) and page-out (pageout()) time, "
        "from `mm_vmscan_writeback_time`: totals over the run and per page. The paper: unmap "
        "time is high and unstable, page-out a few µs per page (§3.2.3). Distribution: "
        "[main's unmap-time plot](main/plots/unmap_time.png).",
        "",
        *(fig7_table(schemes) or ["No writeback times were traced."]),
        "",
        "## Figs. 11-13: response time, reclaim throughput, kills and direct reclaims",
        "",
        "![Fig. 11](main/plots/response_time.png)",
        "",
        "![Fig. 12](main/plots/reclaim_throughput.png)",
        "",
        "![Fig. 13](main/plots/pressure.png)",
        "",
        "From the `main` campaign ([its report](main/report.md)). The paper (Pixel 6 Pro): "
        "pmr's response time -43.6%, peak throughput +82.8%, kills -82% against OriginalMR; "
        "page faults unchanged. Its baseline Acclaim: response time -32.4% against "
        "OriginalMR, reclaim throughput in the same low range, fewer direct reclaims and "
        "page faults but frequent kills; pmr against Acclaim: peak throughput +75.5%, kills "
        "-54%, direct reclaims -45% (§5.2, §5.3). Acclaim's own figures (what its "
        "foreground-aware eviction moved behind, the goals its prediction gave kswapd) "
        "are in the main report's Refaults and Acclaim tables.",
        "",
        *(main_table(schemes) or ["The main campaign has no results yet."]),
        "",
        "## Fig. 14: reclaim throughput on two devices",
        "",
        _plot("fig14", "Fig. 14"),
        "",
        f"Swap-device write throughput on `{OTHER_PROFILE}` (the `devices` campaign) and "
        f"`{MAIN_PROFILE}` (`main`); ratio = {MAIN_PROFILE} / {OTHER_PROFILE} of the medians."
        + fig14_rounds_text(p),
        "",
        *fig14_table(devices),
        "",
        *(
            sweep_lines(p, drows, units, default_target, three)
            if p.delta
            else [
                "## Figs. 15a-b: the δ and unit sweeps",
                "",
                f"Not run in {p.mode} mode (`pmrtb paper` without --quick runs them).",
                "",
            ]
        ),
        "## Table 3: reclaim CPU time",
        "",
        "CPU seconds of the reclaim threads over a run (threads_cpu.json), beside the paper's "
        "Table 3 (seconds over its workload on the phone: compare the ratios). \"Until lmkd's "
        "last kill\": all reclaim threads' CPU from the start to each run's last kill "
        "(threads_cpu.csv): a scheme that kills fewer apps has more of them to reclaim from "
        "after it, so this part compares the schemes over lmkd's kills only (a span that ends "
        "at a different time in each run).",
        "",
        *(table3(schemes, main_ok) or ["The main campaign has no results yet."]),
        "",
        "## Flash write volume",
        "",
        "Swap-out volume per run (pswpout), also until each run's last lmkd kill; the paper "
        "measured PMR +12.1% over 30 minutes.",
        "",
        *(flash_table(schemes, main_ok) or ["The main campaign has no results yet."]),
        "",
        "## What fell short, and where it goes",
        "",
        *shortfall_lines(p, ratios, collected),
    ]
    return "\n".join(lines)


def _floor_summary(collected: dict[str, Collected]) -> dict | None:
    """What no scheme can remove, from the floor campaign (None without it)."""
    floor_ms = floor_response_ms(collected)
    base_ms = get_path(_main_schemes(collected).get(BASELINE) or {}, "response_ms.mean")
    if floor_ms is None:
        return None
    return {
        "response_ms": floor_ms,
        "best_response_ratio": floor_ms / base_ms if base_ms else None,
        "demand_mbps": floor_figure(collected, "anon_growth_peak_mbps"),
    }


def _capacity_summary(collected: dict[str, Collected]) -> dict | None:
    """The kills no scheme can avoid on main (capacity.py), and the lowest
    kills ratio against original they leave; None without them."""
    schemes = _main_schemes(collected)
    c = capacity_entry(schemes)
    if not c:
        return None
    return {**c, "lowest_kills_ratio": capacity_kills_floor(schemes)}


def paper_summary(
    p: PaperPlan,
    collected: dict[str, Collected],
    ratios: dict[str, dict],
    peers: dict[str, list[dict]] | None = None,
) -> dict:
    schemes = _main_schemes(collected)
    return {
        "mode": p.mode,
        "reps": p.reps,
        "seed": p.seed,
        "campaigns": {
            name: {
                "dir": name,
                "profile": c.spec.profile,
                "schemes": list(c.spec.schemes),
                "reps": c.spec.reps,
                "rounds": c.spec.rounds,
                "status": c.status,
                "runs_present": c.runs_present,
                "runs_planned": c.spec.runs,
                "failed_runs": len(c.summary["failed_runs"]) if c.summary else None,
                "summary": f"{name}/summary.json" if c.summary else None,
                "report": f"{name}/report.md" if c.summary else None,
            }
            for name, c in collected.items()
        },
        "ratios": ratios,
        "peers": peer_ratios(collected) if peers is None else peers,
        "missed": [k for k, r in ratios.items() if r["status"] == "missed"],
        "time": time_summary(p, collected),
        "floor": _floor_summary(collected),
        "capacity": _capacity_summary(collected),
        "delta": {
            "nr_to_reclaim_pages": p.nr_to_reclaim_pages,
            "points": [
                {"multiple": d.multiple, "kbytes": d.kbytes, "scheme": d.scheme} for d in p.delta
            ],
        },
        "fig5": {n: e["kswapd_rounds"] for n, e in schemes.items() if e.get("kswapd_rounds")},
        "fig5_paper": PAPER_FIG5,
        "table3_paper": {n: {"kswapd": k, "kshrinkd": s} for n, (k, s) in PAPER_TABLE3.items()},
        "plots": {k: f"plots/{v}" for k, v in PLOTS.items()},
    }


def write(p: PaperPlan, collected: dict[str, Collected]) -> Path:
    """paper.md, paper_summary.json and plots/ in the output directory."""
    ratios = headline_ratios(collected)
    peers = peer_ratios(collected)
    plot_dir = p.out / "plots"
    plot_dir.mkdir(parents=True, exist_ok=True)
    schemes = _main_schemes(collected)
    main = collected.get("main")
    colours = campaign_report.scheme_colours(list(main.spec.schemes) if main else [])
    plot_headline(ratios, plot_dir / PLOTS["headline"])
    plot_fig5(schemes, plot_dir / PLOTS["fig5"])
    plot_fig6(main.ok if main else None, colours, plot_dir / PLOTS["fig6"])
    plot_fig7(schemes, plot_dir / PLOTS["fig7"])
    plot_fig14(_device_entries(collected), plot_dir / PLOTS["fig14"])
    if p.delta:
        plot_fig15a(p, delta_rows(p, collected), plot_dir / PLOTS["fig15a"])
        plot_fig15b(unit_points(p, collected), plot_dir / PLOTS["fig15b"])
    (p.out / "paper_summary.json").write_text(
        json.dumps(paper_summary(p, collected, ratios, peers), indent=2) + "\n"
    )
    regime = paper_regime(p, collected)
    if regime is not None:
        regime_mod.save(p.out, regime)
    path = p.out / "paper.md"
    path.write_text(render(p, collected, ratios, regime, peers))
    return path
