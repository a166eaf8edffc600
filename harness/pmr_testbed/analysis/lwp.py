"""The goals Acclaim's lightweight prediction (LWP) gave kswapd, from trace.txt.

With acclaim/lwp_enabled=1 the kernel sums the page allocator's demand over
10-ms slots in 100-ms windows and, at each kswapd round, scales kswapd's
stock goal (the zones' high watermarks) by the ratio of the last two
windows' demand, capped at lwp_goal_max_kbytes when demand fell (ratio
over 100) and floored at lwp_goal_min_kbytes otherwise (schemes/acclaim.toml,
Profile.acclaim_lwp_goal_kb; Documentation/admin-guide/mm/acclaim.rst of
kernel/baselines/acclaim). Each round whose goal LWP set emits

    kswapd0-39 [000] ..... 12.345678: mm_vmscan_kswapd_lwp_goal: nid=0
        ratio=150 stock=6556 goal=1476

(one line): `ratio` is previous / last window's demand in percent, `stock`
the goal kswapd would have had and `goal` the one LWP set, in pages. On the
guest the stock goal (the scaled Pixel 6 Pro watermark, ~6,556 pages) lies
above LWP's upper bound (1,476 pages), so LWP can only lower kswapd's
goal: rising demand (ratio under 100) takes it towards the lower bound,
falling demand caps it at the upper one; `above_stock_share` says how
often a goal was above the stock one.

`lwp_figures` gives the number of goals, the goal's min, median and max
(kB), the stock goal's median (kB), the ratio's median and max, and the
share of goals above the stock one; None without events (a kernel without
the tracepoint, or LWP off).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .trace import Trace

LWP_EVENT = "mm_vmscan_kswapd_lwp_goal"
TRACE_NAME = f"vmscan/{LWP_EVENT}"
PAGE_KB = 4


@dataclass(frozen=True)
class LwpGoal:
    """One goal LWP set for a kswapd round."""

    t_s: float  # seconds since the workload started
    nid: int
    ratio: int  # previous / last window's demand, percent
    stock: int  # kswapd's own goal, pages
    goal: int  # the goal LWP set, pages

    @property
    def goal_kb(self) -> int:
        return self.goal * PAGE_KB

    @property
    def stock_kb(self) -> int:
        return self.stock * PAGE_KB


def lwp_goals(trace: Trace | None) -> list[LwpGoal]:
    """LWP's goals in trace order; none without a trace."""
    if trace is None:
        return []
    return [
        LwpGoal(
            t_s=e.t_s,
            nid=int(e.fields["nid"]),
            ratio=int(e.fields["ratio"]),
            stock=int(e.fields["stock"]),
            goal=int(e.fields["goal"]),
        )
        for e in trace.named(LWP_EVENT)
    ]


def lwp_figures(goals: list[LwpGoal]) -> dict | None:
    """The figures above, or None without goals."""
    if not goals:
        return None
    kb = [g.goal_kb for g in goals]
    ratios = [g.ratio for g in goals]
    return {
        "goals": len(goals),
        "goal_kb": {"min": min(kb), "median": statistics.median(kb), "max": max(kb)},
        "stock_kb": statistics.median(g.stock_kb for g in goals),
        "ratio": {"median": statistics.median(ratios), "max": max(ratios)},
        "above_stock_share": sum(g.goal > g.stock for g in goals) / len(goals),
    }
