"""Parse a run's trace.txt: the tracepoints the guest recorded (spec.json
`metrics.trace_events`, docs/guest-interface.md).

The file holds ftrace's text output with the `mono` clock, after two header
lines, `# start_mono_s=<s>` (the workload's start on that clock) and
`# missing=<events the kernel lacks>`, and ends with `# overrun=<n>` (events
the ring buffer lost). Each event line looks like

    kshrinkd0-38  [001] .....  1234.567890: mm_vmscan_kshrinkd_round: nid=0 target=1024

`read_trace` turns it into `TraceEvent`s whose time is seconds since the
workload started, with their `key=value` fields as ints where they parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_EVENT = re.compile(
    r"^\s*(?P<task>.+?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+\S*\s*"
    r"(?P<ts>\d+\.\d+):\s+(?P<name>\w+):\s?(?P<rest>.*)$"
)
_FIELD = re.compile(r"(\w+)=(\S+)")


@dataclass
class TraceEvent:
    t_s: float
    name: str
    task: str  # comm as ftrace printed it (`<...>` when it was not cached)
    pid: int  # the emitting thread's pid: tells tasks apart, the comm may not
    fields: dict[str, int | str]


@dataclass
class Trace:
    events: list[TraceEvent]
    missing: list[str] = field(default_factory=list)
    overrun: int | None = None

    def named(self, name: str) -> list[TraceEvent]:
        return [e for e in self.events if e.name == name]


def _value(text: str) -> int | str:
    try:
        return int(text, 0)
    except ValueError:
        return text


def parse_trace(text: str) -> Trace:
    start = None
    trace = Trace(events=[])
    for line in text.splitlines():
        if line.startswith("# start_mono_s="):
            start = float(line.split("=", 1)[1])
        elif line.startswith("# missing="):
            trace.missing = [e for e in line.split("=", 1)[1].split(",") if e]
        elif line.startswith("# overrun="):
            trace.overrun = int(line.split("=", 1)[1])
        elif not line.startswith("#") and (m := _EVENT.match(line)):
            fields = {k: _value(v) for k, v in _FIELD.findall(m["rest"])}
            trace.events.append(
                TraceEvent(
                    t_s=float(m["ts"]) - (start or 0.0),
                    name=m["name"],
                    task=m["task"].strip(),
                    pid=int(m["pid"]),
                    fields=fields,
                )
            )
    if start is None and trace.events:
        raise ValueError("trace has events but no '# start_mono_s=' line")
    return trace


def read_trace(path: Path) -> Trace | None:
    """The run's trace, or None if it recorded none."""
    return parse_trace(path.read_text()) if path.exists() else None


def kshrinkd_rounds(trace: Trace) -> dict | None:
    """kshrinkd's rounds: count, pages added, the victim target it worked to
    (the median and the largest of the rounds' `target`, pages; it rises
    while a watermark boost lasts), and how far a round's additions went
    past its batch (`fill`: nr_added / nr_to_shrink, median and largest over
    the rounds asked for something; None if none was); or None without
    rounds."""
    rounds = trace.named("mm_vmscan_kshrinkd_round")
    if not rounds:
        return None
    targets = sorted(int(e.fields["target"]) for e in rounds)
    fills = sorted(
        int(e.fields["nr_added"]) / int(e.fields["nr_to_shrink"])
        for e in rounds
        if int(e.fields["nr_to_shrink"]) > 0
    )
    return {
        "rounds": len(rounds),
        "added": sum(int(e.fields["nr_added"]) for e in rounds),
        "scanned": sum(int(e.fields["nr_scanned"]) for e in rounds),
        "target_pages": targets[len(targets) // 2],
        "target_max_pages": targets[-1],
        "fill": {"median": fills[len(fills) // 2], "max": fills[-1]} if fills else None,
    }
