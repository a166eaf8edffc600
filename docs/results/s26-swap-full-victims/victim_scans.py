#!/usr/bin/env python3
"""Per run: how much kswapd looked through the victim lists while swap was
full, from a trace that has `vmscan:mm_vmscan_lru_isolate` (not in the
testbed's default events: `pmrtb run --trace-event vmscan/mm_vmscan_lru_isolate`)
beside the default `mm_vmscan_kswapd_round`.

    victim_scans.py RUN_DIR...      # results/<campaign>/runs/<scheme>-r<n>

A kswapd round or an isolation of kswapd's from a victim list (lru=victim)
counts as "swap full" when the last meminfo.csv sample before its event had
under 8 MB of swap free; a round's event is emitted at its end. Prints one
JSON object per run; under "swap_full", per kswapd round with swap full:
the isolations, the victims looked at but not taken, those taken, and the
pages reclaimed per millisecond of those rounds.
"""

import bisect
import csv
import json
import re
import sys
from collections import Counter
from pathlib import Path

FULL_KB = 8192
_EVENT = re.compile(r"^\s*(?P<task>.+?)-\d+\s+\[\d+\]\s+\S*\s*(?P<ts>\d+\.\d+):\s")


def field(line: str, key: str) -> int:
    return int(re.search(key + r"=(\d+)", line).group(1))


def run_numbers(run: Path) -> dict:
    with open(run / "meminfo.csv") as f:
        meminfo = list(csv.DictReader(f))
    with open(run / "vmstat.csv") as f:
        vmstat = list(csv.DictReader(f))
    with open(run / "trace.txt") as f:
        trace = f.read().splitlines()
    with open(run / "threads_cpu.json") as f:
        cpu = json.load(f)
    t_ms = [int(r["t_ms"]) for r in meminfo]
    start = None
    phase = {"full": Counter(), "free": Counter()}

    def swap_full(ts: float) -> bool:
        i = max(0, bisect.bisect_right(t_ms, (ts - start) * 1000) - 1)
        return int(meminfo[i]["swap_free_kb"]) < FULL_KB

    for line in trace:
        if line.startswith("# start_mono_s="):
            start = float(line.split("=", 1)[1])
            continue
        m = _EVENT.match(line)
        if line.startswith("#") or not m:
            continue
        if "mm_vmscan_kswapd_round:" in line:
            c = phase["full" if swap_full(float(m["ts"])) else "free"]
            c["rounds"] += 1
            c["round_ms"] += field(line, "duration_ns") / 1e6
            c["reclaimed"] += field(line, "nr_reclaimed")
        elif ("mm_vmscan_lru_isolate:" in line and "lru=victim" in line
              and m["task"].startswith("kswapd")):
            c = phase["full" if swap_full(float(m["ts"])) else "free"]
            c["victim_isolations"] += 1
            c["victims_looked_at"] += field(line, "nr_scanned")
            c["victims_taken"] += field(line, "nr_taken")

    full_s = sum(int(b["t_ms"]) - int(a["t_ms"]) for a, b in zip(meminfo, meminfo[1:])
                 if int(a["swap_free_kb"]) < FULL_KB) / 1000
    first, last = vmstat[0], vmstat[-1]
    steal = sum(int(last[k]) - int(first[k]) for k in ("pgsteal_kswapd", "pgsteal_direct"))
    f = phase["full"]
    rounds = max(1, f["rounds"])
    return {
        "run": str(run),
        "swap_full_s": full_s,
        "reclaim_cpu_s": cpu,
        "pages_reclaimed": steal,
        "us_per_page": round(sum(cpu.values()) * 1e6 / steal, 1),
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
