"""The repetitions whose survivors fit, compared apart (settled_state.py).

On the `paper` scenario lmkd kills until the survivors fit, and how many
apps it kills varies from repetition to repetition on either kernel (8 to
12 in the campaigns of 2026-11-27). A repetition left with one app too many ends with
swap full and its page cache thrashing for minutes, and answers more slowly
whatever the scheme: a few such repetitions swing a scheme's medians by more
than the schemes differ (the campaign of 2026-11-27, commit c4e04c2).

A repetition fits when, after lmkd's last kill, swap was full for under
FIT_SWAP_FULL_S seconds (`settled.swap_full_s`; runs that thrashed had 80-284
s, the others 0-6 s). A run without meminfo.csv is not judged and left out.
This conditions on an outcome a scheme may sway (the kills), so it is a
second view beside the figures over all runs, not a replacement: a scheme
that keeps more apps alive has more repetitions that do not fit.

`fitting_summary` gives, per scheme, the reps that fit and the median,
min and max of FIGURES over them; and per scheme other than the baseline,
the permutation p of each figure against the baseline's fitting reps
(significance.py; None under 3 reps each).
"""

from __future__ import annotations

import statistics

from .significance import permutation_p

FIT_SWAP_FULL_S = 30.0
# (dotted path in a run's figures, what the report calls it)
FIGURES = (
    ("response_ms.mean", "response mean ms"),
    ("switch_kinds.hot.mean_ms", "hot switch ms"),
    ("switch_kinds.cold.mean_ms", "cold switch ms"),
    ("switch_kinds.cold.cost.runq_ms", "cold launch waiting for a CPU ms"),
    ("kills", "kills"),
    ("allocstall", "allocstall"),
    ("reclaim_mbps.peak", "reclaim peak MB/s"),
    ("reclaim_cpu_total", "reclaim CPU s"),
)
# one run's figures by path, as summary.run_figures gives them
Figures = dict[tuple[str, ...], float | None]


def fits(fig: Figures) -> bool | None:
    """Whether a run's survivors fit; None when it cannot tell (no meminfo.csv)."""
    full_s = fig.get(("settled", "swap_full_s"))
    return None if full_s is None else full_s < FIT_SWAP_FULL_S


def _spread(values: list[float]) -> dict | None:
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _values(runs: list[tuple[int, Figures]], dotted: str) -> list[float]:
    path = tuple(dotted.split("."))
    return [v for _, fig in runs if (v := fig.get(path)) is not None]


def fitting_summary(runs: dict[str, list[tuple[int, Figures]]], baseline: str) -> dict:
    """The figures of each scheme's fitting reps (see the module docstring),
    from each scheme's (rep, figures) pairs."""
    fitting = {
        name: [(rep, fig) for rep, fig in pairs if fits(fig)] for name, pairs in runs.items()
    }
    schemes = {}
    for name, pairs in fitting.items():
        entry: dict = {
            "reps": [rep for rep, _ in pairs],
            "not_judged": [rep for rep, fig in runs[name] if fits(fig) is None],
        }
        entry["figures"] = {d: _spread(_values(pairs, d)) for d, _ in FIGURES}
        if name != baseline and baseline in fitting:
            entry["p_value"] = {
                d: permutation_p(_values(pairs, d), _values(fitting[baseline], d))
                for d, _ in FIGURES
            }
        schemes[name] = entry
    return {"swap_full_under_s": FIT_SWAP_FULL_S, "schemes": schemes}
