#!/usr/bin/env python3
"""Per run: how much kswapd looked through the victim lists while swap was
full, from a trace that has `vmscan:mm_vmscan_lru_isolate` (not in the
testbed's default events: `pmrtb run --trace-event vmscan/mm_vmscan_lru_isolate`)
beside the default `mm_vmscan_kswapd_round`.

    victim_scans.py RUN_DIR...      # results/<campaign>/runs/<scheme>-r<n>

A kswapd round or an isolation of the victim list (lru=victim) counts as
"swap full" when the last meminfo.csv sample before it had under 8 MB of
swap free. Prints one JSON object per run.
"""

import bisect
import csv
import json
import re
import sys
from collections import Counter
from pathlib import Path

FULL_KB = 8192
_TS = re.compile(r"\s(\d+\.\d+):\s")


def field(line: str, key: str) -> int:
    return int(re.search(key + r"=(\d+)", line).group(1))


def run_numbers(run: Path) -> dict:
    meminfo = list(csv.DictReader(open(run / "meminfo.csv")))
    vmstat = list(csv.DictReader(open(run / "vmstat.csv")))
    t_ms = [int(r["t_ms"]) for r in meminfo]
    start = None
    phase = {"full": Counter(), "free": Counter()}

    def swap_full(ts: float) -> bool:
        i = max(0, bisect.bisect_right(t_ms, (ts - start) * 1000) - 1)
        return int(meminfo[i]["swap_free_kb"]) < FULL_KB

    for line in open(run / "trace.txt"):
        if line.startswith("# start_mono_s="):
            start = float(line.split("=", 1)[1])
            continue
        m = _TS.search(line)
        if line.startswith("#") or not m:
            continue
        if "mm_vmscan_kswapd_round:" in line:
            c = phase["full" if swap_full(float(m.group(1))) else "free"]
            c["rounds"] += 1
            c["round_ms"] += field(line, "duration_ns") / 1e6
            c["reclaimed"] += field(line, "nr_reclaimed")
        elif "mm_vmscan_lru_isolate:" in line and "lru=victim" in line and "kswapd" in line:
            c = phase["full" if swap_full(float(m.group(1))) else "free"]
            c["victim_isolations"] += 1
            c["victims_looked_at"] += field(line, "nr_scanned")
            c["victims_taken"] += field(line, "nr_taken")

    full_s = sum(int(b["t_ms"]) - int(a["t_ms"]) for a, b in zip(meminfo, meminfo[1:])
                 if int(a["swap_free_kb"]) < FULL_KB) / 1000
    first, last = vmstat[0], vmstat[-1]
    steal = sum(int(last[k]) - int(first[k]) for k in ("pgsteal_kswapd", "pgsteal_direct"))
    cpu = json.load(open(run / "threads_cpu.json"))
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
            "reclaimed_per_round_ms": round(f["reclaimed"] / max(1, f["round_ms"]), 1),
        },
    }


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(json.dumps(run_numbers(Path(arg))))
