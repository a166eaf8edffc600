"""`pmrtb compare DIR...`: figures of campaigns side by side, with paired
ratios and p-values, as mmtests' compare-kernels sets kernels side by side.

A column is one scheme of one results directory (a `pmrtb run` output, or
one campaign subdirectory of a `pmrtb paper` output): its ok runs, read from
their raw files as summary.json reads them (summary.load_runs). A campaign
run with named kernels (`pmrtb run --kernel NAME=PATH`) has a column per
kernel and scheme, `scheme:NAME`. The first column is the base, unless
`base` names another.

A figure is a dotted path of one run's figures (summary.run_figures: the
keys of summary.json's per-scheme entries, e.g. `response_ms.mean`,
`kills`, `reclaim_mbps.peak`, `reclaim_cpu_s.kswapd`). For each figure and
column: the median over the column's runs, with min and max; for every
column but the base:

- `ratio`: its median / the base's median;
- `paired`: the median of the per-repetition ratios, rep i against the
  base's rep i where both ran and both have the figure. Within one campaign
  the repetitions are interleaved, so rep i of every column ran at about the
  same time and drift of the host hits both sides alike: the paired ratio
  is the one to trust. Across directories the pairing is by order only;
- `p`: the permutation p-value of the difference of the means
  (significance.py; none under 3 repetitions on either side).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..analysis.significance import permutation_p
from ..errors import UserError
from .campaign_report import fmt, md_table
from .summary import RATIO_FIGURES, FigPath, Run, load_campaign, load_runs, run_figures

DEFAULT_FIGURES = RATIO_FIGURES


@dataclass
class Column:
    label: str
    directory: Path
    scheme: str
    runs: list[Run]

    @cached_property
    def figures(self) -> dict[int, dict[FigPath, float | None]]:
        """Each run's figures (summary.run_figures), by repetition, made once."""
        return {r.rep: run_figures(r.metrics) for r in self.runs}

    def values(self, figure: str) -> dict[int, float]:
        """The figure's value in each run that has it, by repetition."""
        path = tuple(figure.split("."))
        found = {}
        for rep, figures in self.figures.items():
            value = figures.get(path)
            if isinstance(value, int | float):
                found[rep] = value
        return found


@dataclass
class Cell:
    median: float | None
    low: float | None
    high: float | None
    reps: int
    ratio: float | None = None  # median / base median
    paired: float | None = None  # median of per-rep ratios
    pairs: int = 0
    p_value: float | None = None


def columns(dirs: list[Path], schemes: list[str] | None = None) -> list[Column]:
    """The columns of `dirs` in order, each directory's schemes in campaign
    order; only `schemes` if given. Raises UserError, before reading any
    run, on a directory that is not a results directory or a scheme that no
    directory has."""
    campaigns = []
    for d in dirs:
        if not d.is_dir():
            raise UserError(f"{d}: no such directory")
        if not (d / "campaign.json").exists():
            subs = sorted(p.parent.name for p in d.glob("*/campaign.json"))
            hint = f" (its campaigns: {', '.join(str(d / s) for s in subs)})" if subs else ""
            raise UserError(f"{d} is not a results directory (no campaign.json){hint}")
        try:
            campaigns.append(load_campaign(d))
        except json.JSONDecodeError as exc:
            raise UserError(f"{d / 'campaign.json'} is not JSON ({exc})") from None
    if schemes:
        known = {s for c in campaigns for s in c["schemes"]}
        unknown = [s for s in schemes if s not in known]
        if unknown:
            raise UserError(
                f"scheme {', '.join(unknown)} is in none of the directories; "
                f"they have {', '.join(sorted(known))}"
            )
    names = _dir_labels(dirs)
    cols = []
    for d, name, campaign in zip(dirs, names, campaigns):
        ok, _failed = load_runs(d, campaign)
        for scheme in campaign["schemes"]:
            if schemes and scheme not in schemes:
                continue
            label = scheme if len(dirs) == 1 else f"{name}:{scheme}"
            cols.append(Column(label, d, scheme, ok[scheme]))
    if len(cols) < 2:
        raise UserError(
            f"{len(cols)} column to compare: give two results directories, "
            "or one with two schemes or kernels"
        )
    return cols


def _dir_labels(dirs: list[Path]) -> list[str]:
    """Each directory's name, or its last two parts where names repeat
    (`paper-a/main`, `paper-b/main`), or its full path where those do too."""
    names = [d.resolve().name for d in dirs]
    if len(set(names)) == len(names):
        return names
    two = ["/".join(d.resolve().parts[-2:]) for d in dirs]
    return two if len(set(two)) == len(two) else [str(d) for d in dirs]


def pick_base(cols: list[Column], base: str | None) -> int:
    if base is None:
        return 0
    for i, c in enumerate(cols):
        if c.label == base:
            return i
    raise UserError(f"--base {base}: no such column; columns: {', '.join(c.label for c in cols)}")


def check_figures(cols: list[Column], figures: list[str]) -> None:
    """UserError if no column has an ok run, or naming the figures no run of
    any column has."""
    have: set[tuple[str, ...]] = set()
    for c in cols:
        for run in c.figures.values():
            have |= set(run)
    if not have:
        raise UserError("no column has an ok run: nothing to compare")
    missing = [f for f in figures if tuple(f.split(".")) not in have]
    if missing:
        examples = ", ".join(sorted(".".join(k) for k in have)[:8])
        raise UserError(
            f"figure {', '.join(missing)}: no run has it; a figure is a dotted path "
            f"of a run's figures, e.g. {examples}"
        )


def cell(values: dict[int, float], base: dict[int, float] | None) -> Cell:
    """One column's cell for one figure; `base` None for the base column."""
    xs = list(values.values())
    c = Cell(
        statistics.median(xs) if xs else None,
        min(xs) if xs else None,
        max(xs) if xs else None,
        len(xs),
    )
    if base is None:
        return c
    base_median = statistics.median(base.values()) if base else None
    if c.median is not None and base_median:
        c.ratio = c.median / base_median
    pairs = [values[rep] / base[rep] for rep in sorted(values) if base.get(rep)]
    c.pairs = len(pairs)
    if pairs:
        c.paired = statistics.median(pairs)
    c.p_value = permutation_p(xs, list(base.values()))
    return c


def compare(cols: list[Column], figures: list[str], base: int = 0) -> dict[str, list[Cell]]:
    """Per figure, one cell per column (in column order)."""
    table = {}
    for figure in figures:
        base_values = cols[base].values(figure)
        table[figure] = [
            cell(c.values(figure), None if i == base else base_values) for i, c in enumerate(cols)
        ]
    return table


def _text(c: Cell, is_base: bool) -> str:
    if c.median is None:
        return "–"
    text = fmt(c.median)
    if c.reps > 1:
        text += f" [{fmt(c.low)}, {fmt(c.high)}]"
    if is_base:
        return text
    parts = [f"×{c.ratio:.2f}" if c.ratio is not None else "×–"]
    if c.paired is not None and c.pairs > 1:
        parts.append(f"paired ×{c.paired:.2f}")
    if c.p_value is not None:
        parts.append(f"p={c.p_value:.2f}")
    return f"{text} ({', '.join(parts)})"


def markdown(cols: list[Column], table: dict[str, list[Cell]], base: int = 0) -> list[str]:
    header = [
        "figure",
        *(f"{c.label} (base)" if i == base else c.label for i, c in enumerate(cols)),
    ]
    rows = [
        [f"`{figure}`", *(_text(c, i == base) for i, c in enumerate(cells))]
        for figure, cells in table.items()
    ]
    reps = ", ".join(f"{c.label} {len(c.runs)}" for c in cols)
    return [
        *md_table(header, rows),
        "",
        f"Median over the ok runs [min, max]; ×: ratio of medians to the base; paired: "
        f"median of the per-rep ratios (rep i against the base's rep i); p: permutation "
        f"p-value of the means (3 reps or more each). Ok runs: {reps}.",
    ]
