"""Per run: how much kswapd looked through the victim lists while swap was
full, from a trace that has `vmscan:mm_vmscan_lru_isolate` (not in the
testbed's default events: `pmrtb run --trace-event vmscan/mm_vmscan_lru_isolate`)
beside the default `mm_vmscan_kswapd_round`. Reads the run with the
harness (pmr_testbed: metrics.load_run, metrics.read_table, trace.read_trace),
so run it with the project's venv:

    .venv/bin/python victim_scans.py RUN_DIR...   # results/<campaign>/runs/<scheme>-r<n>

A kswapd round or an isolation of kswapd's from a victim list (lru=victim
on the series up to its patch 25; victim_anon or victim_file, one list per
type, from patch 26 on) counts as "swap full" when the last meminfo.csv
sample before its event had under 8 MB of swap free; a round's event is
emitted at its end. Prints one JSON object per run; under "swap_full",
per kswapd round with swap full: the isolations, the victims looked at
but not taken, those taken, and the pages reclaimed per millisecond of
those rounds.
"""

import bisect
import json
import sys
from collections import Counter
from pathlib import Path

from pmr_testbed.metrics import load_run, read_table
from pmr_testbed.trace import read_trace

FULL_KB = 8192
VICTIM_LISTS = ("victim", "victim_anon", "victim_file")


def run_numbers(run: Path) -> dict:
    metrics = load_run(run)
    header, rows = read_table(run / "meminfo.csv")
    t, free = header.index("t_ms"), header.index("swap_free_kb")
    t_ms = [float(r[t]) for r in rows]
    full = [float(r[free]) < FULL_KB for r in rows]

    def swap_full(t_s: float) -> bool:
        return full[max(0, bisect.bisect_right(t_ms, t_s * 1000) - 1)]

    phase = {True: Counter(), False: Counter()}
    for e in read_trace(run / "trace.txt").events:
        if e.name == "mm_vmscan_kswapd_round":
            c = phase[swap_full(e.t_s)]
            c["rounds"] += 1
            c["round_ms"] += e.fields["duration_ns"] / 1e6
            c["reclaimed"] += e.fields["nr_reclaimed"]
        elif (e.name == "mm_vmscan_lru_isolate" and e.fields["lru"] in VICTIM_LISTS
              and e.task.startswith("kswapd")):
            c = phase[swap_full(e.t_s)]
            c["victim_isolations"] += 1
            c["victims_looked_at"] += e.fields["nr_scanned"]
            c["victims_taken"] += e.fields["nr_taken"]

    f = phase[True]
    rounds = max(1, f["rounds"])
    return {
        "run": str(run),
        "swap_full_s": sum(b - a for a, b, is_full in zip(t_ms, t_ms[1:], full) if is_full) / 1000,
        "reclaim_cpu_s": metrics.reclaim_cpu_s,
        "pages_reclaimed": metrics.pgsteal_kswapd + metrics.pgsteal_direct,
        "us_per_page": round(metrics.reclaim_cpu_us_per_page, 1),
        "swap_full": {
            "kswapd_rounds": f["rounds"],
            "isolations_per_round": round(f["victim_isolations"] / rounds, 1),
            "passed_over_per_round": round((f["victims_looked_at"] - f["victims_taken"]) / rounds),
            "taken_per_round": round(f["victims_taken"] / rounds),
            "reclaimed_per_ms": round(f["reclaimed"] / max(1, f["round_ms"]), 1),
        },
    }


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(json.dumps(run_numbers(Path(arg))))
