"""kswapd's reclaim rounds (paper §3.2, Figs. 5 and 6), from trace.txt.

`vmscan:mm_vmscan_kswapd_round` is emitted at the end of every
kswapd_shrink_node() call, one reclaim round of kswapd on a node:

    kswapd0-39 [000] ..... 123.456789: mm_vmscan_kswapd_round: nid=0 order=0
        nr_to_reclaim=6556 nr_scanned=1234 nr_reclaimed=321 duration_ns=123456

(on one line). The round covers [t_end - duration_ns, t_end]. Its page
writeback time is the sum of `unmap_ns + pageout_ns` of the
`mm_vmscan_writeback_time` events (writeback.py) that the same thread
emitted inside that interval, matched by pid (`39` above), not by comm:
ftrace prints `<...>` for a comm it did not cache, and other tasks may
share kswapd's name; the rest of the round is page
shrinking (scanning the LRU lists, isolating, checking references), the
split of the paper's Fig. 5. Each writeback event counts in at most one
round, and a round's writeback time is capped at its duration. Where the
kernel lacks the writeback_time event (trace.txt lists it as missing), the
split is unknown (None), not 0.

Fig. 6 is `nr_to_reclaim` (kswapd's goal: the sum over the node's zones of
max(high watermark, SWAP_CLUSTER_MAX)) against `nr_reclaimed` per round.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from .trace import Trace
from .writeback import WRITEBACK_EVENT

ROUND_EVENT = "mm_vmscan_kswapd_round"
TRACE_NAME = f"vmscan/{ROUND_EVENT}"
WRITEBACK_TRACE_NAME = f"vmscan/{WRITEBACK_EVENT}"
# trace timestamps are printed to the microsecond; this only absorbs float error
_EPS_S = 1e-9


@dataclass(frozen=True)
class KswapdRound:
    """One kswapd_shrink_node() call. `writeback_ns` is None when the run
    could not trace writeback (see the module docstring)."""

    t_end_s: float  # seconds since the workload started
    task: str  # comm, for display
    pid: int  # what writeback events are matched by
    nid: int
    nr_to_reclaim: int
    nr_scanned: int
    nr_reclaimed: int
    duration_ns: int
    writeback_ns: int | None

    @property
    def t_start_s(self) -> float:
        return self.t_end_s - self.duration_ns / 1e9

    @property
    def shrink_ns(self) -> int | None:
        return None if self.writeback_ns is None else self.duration_ns - self.writeback_ns


def kswapd_rounds(trace: Trace | None) -> list[KswapdRound]:
    """kswapd's rounds in trace order, each with its writeback time."""
    if trace is None:
        return []
    events = trace.named(ROUND_EVENT)
    if not events:
        return []
    traced = WRITEBACK_TRACE_NAME not in trace.missing
    # per pid: writeback events by time, and whether each was already counted
    by_pid: dict[int, tuple[list[float], list[int]]] = {}
    for e in sorted(trace.named(WRITEBACK_EVENT), key=lambda e: e.t_s):
        times, ns = by_pid.setdefault(e.pid, ([], []))
        times.append(e.t_s)
        ns.append(int(e.fields["unmap_ns"]) + int(e.fields["pageout_ns"]))
    used: dict[int, set[int]] = {pid: set() for pid in by_pid}
    rounds = []
    for e in events:
        duration = int(e.fields["duration_ns"])
        writeback = None
        if traced:
            writeback = 0
            times, ns = by_pid.get(e.pid, ([], []))
            lo = bisect.bisect_left(times, e.t_s - duration / 1e9 - _EPS_S)
            hi = bisect.bisect_right(times, e.t_s + _EPS_S)
            for i in range(lo, hi):
                if i not in used[e.pid]:
                    used[e.pid].add(i)
                    writeback += ns[i]
            writeback = min(writeback, duration)
        rounds.append(
            KswapdRound(
                t_end_s=e.t_s,
                task=e.task,
                pid=e.pid,
                nid=int(e.fields["nid"]),
                nr_to_reclaim=int(e.fields["nr_to_reclaim"]),
                nr_scanned=int(e.fields["nr_scanned"]),
                nr_reclaimed=int(e.fields["nr_reclaimed"]),
                duration_ns=duration,
                writeback_ns=writeback,
            )
        )
    return rounds


def _median(values: list[float]) -> float:
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def busiest_second_share(rounds: list[KswapdRound]) -> float:
    """The largest share of a 1-s window (whole seconds of workload time, as
    reclaim throughput's) that one kswapd thread spent in its rounds: near 1
    when kswapd could not keep up, low when reclaim waited for demand."""
    busy: dict[tuple[int, int], float] = {}
    for r in rounds:
        second = math.floor(r.t_start_s)
        while second < r.t_end_s:
            overlap = min(r.t_end_s, second + 1) - max(r.t_start_s, second)
            if overlap > 0:
                busy[(r.pid, second)] = busy.get((r.pid, second), 0.0) + overlap
            second += 1
    return min(1.0, max(busy.values(), default=0.0))


def round_figures(rounds: list[KswapdRound]) -> dict | None:
    """One run's kswapd rounds as numbers, or None without rounds.

    `duration_ms`, `shrink_ms`, `writeback_ms`: the mean per round (Fig. 5);
    `shrink_share` and `writeback_share`: of the summed round time (None
    with writeback untraced); `nr_to_reclaim` and `nr_reclaimed`: medians
    over rounds (pages), `reclaimed_ratio`: the mean of nr_reclaimed /
    nr_to_reclaim, `goal_met_share`: the share of rounds that reclaimed
    their goal (Fig. 6); `busiest_second_share`: see busiest_second_share()."""
    if not rounds:
        return None
    n = len(rounds)
    total_ns = sum(r.duration_ns for r in rounds)
    written = [r.writeback_ns for r in rounds if r.writeback_ns is not None]
    writeback_ns = sum(written) if len(written) == n else None
    figures = {
        "rounds": n,
        "duration_ms": total_ns / n / 1e6,
        "shrink_ms": (total_ns - writeback_ns) / n / 1e6 if writeback_ns is not None else None,
        "writeback_ms": writeback_ns / n / 1e6 if writeback_ns is not None else None,
        "shrink_share": (total_ns - writeback_ns) / total_ns
        if writeback_ns is not None and total_ns
        else None,
        "writeback_share": writeback_ns / total_ns
        if writeback_ns is not None and total_ns
        else None,
        "nr_to_reclaim": _median([r.nr_to_reclaim for r in rounds]),
        "nr_reclaimed": _median([r.nr_reclaimed for r in rounds]),
        "nr_scanned": _median([r.nr_scanned for r in rounds]),
        "reclaimed_ratio": sum(r.nr_reclaimed / max(r.nr_to_reclaim, 1) for r in rounds) / n,
        "goal_met_share": sum(r.nr_reclaimed >= r.nr_to_reclaim for r in rounds) / n,
        "busiest_second_share": busiest_second_share(rounds),
    }
    return figures
