"""The tracepoints a run records (spec.json `metrics.trace_events`): the
default ones and those `pmrtb run --trace-event` adds. analysis/trace.py parses what
the guest recorded."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import UserError

# Spec default: the series' own tracepoints and kswapd's rounds. Cheap: a few
# events per reclaim round, none when reclaim is idle. `writeback_time` (one
# per shrink_folio_list() call that unmapped or paged out anything, in every
# scheme) and `pmr_batch` (one per bulk batch, pmr/enabled=2 only) come with
# PMR part 2; `kswapd_round` (one per kswapd_shrink_node() call, for the
# paper's Figs. 5 and 6: kswapd_rounds.py) comes with a later patch.
# `kswapd_lwp_goal` (one per kswapd round whose goal Acclaim's lightweight
# prediction set: acclaim/lwp_enabled=1 only; analysis/lwp.py) comes with
# Acclaim's series (kernel/baselines/acclaim). A kernel without an event lists it on
# the `# missing=` line.
TRACE_EVENTS = [
    "vmscan/mm_vmscan_kswapd_wake",
    "vmscan/mm_vmscan_kswapd_sleep",
    "vmscan/mm_vmscan_kswapd_round",
    "vmscan/mm_vmscan_kshrinkd_round",
    "vmscan/mm_vmscan_lru_shrink_victim",
    "vmscan/mm_vmscan_writeback_time",
    "vmscan/mm_vmscan_pmr_batch",
    "vmscan/mm_vmscan_kswapd_lwp_goal",
]

# `pmrtb run --trace-event GROUP/NAME`: a tracepoint as named under
# /sys/kernel/tracing/events (groups may have dashes: xhci-hcd)
_EVENT_NAME = re.compile(r"[a-z0-9_-]+/[a-z0-9_]+")


def extra_trace_events(names: Sequence[str]) -> list[str]:
    """The events `pmrtb run --trace-event` asks for beyond the default
    ones, once each and sorted, so that the same set is the same list
    (campaign.json, --resume). Raises UserError on a name that is not
    GROUP/NAME."""
    for name in names:
        if not _EVENT_NAME.fullmatch(name):
            raise UserError(
                f"--trace-event {name!r}: give a tracepoint as GROUP/NAME, as under "
                "/sys/kernel/tracing/events, e.g. vmscan/mm_vmscan_lru_isolate"
            )
    return sorted(set(names) - set(TRACE_EVENTS))


def run_trace_events(extra: Sequence[str] = ()) -> list[str]:
    """The events a run records: the default ones, then the extra ones."""
    return TRACE_EVENTS + extra_trace_events(extra)
