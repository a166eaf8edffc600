"""How fast each run's swap disk wrote while it wrote, at a given time step.

For every run of the campaigns given, diskstat.csv's write_sectors is
resampled (linear interpolation) at STEP_MS steps, and each step's MB/s is
weighted by the bytes written in it: the rate at which the average byte
went to swap. Prints each run's figure and each scheme's median.

    .venv/bin/python docs/results/s38-burst-rate/burst_rate.py STEP_MS CAMPAIGN_DIR...
"""

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np


def byte_weighted_mbps(diskstat: Path, step_ms: int) -> float | None:
    rows = list(csv.DictReader(diskstat.open()))
    t = np.array([float(r["t_ms"]) for r in rows])
    written = np.array([float(r["write_sectors"]) for r in rows]) * 512 / 2**20
    steps = np.diff(np.interp(np.arange(t[0], t[-1], step_ms), t, written))
    steps = steps[steps > 0]
    if not steps.sum():
        return None
    return float((steps * steps / (step_ms / 1000)).sum() / steps.sum())


def main() -> None:
    step_ms = int(sys.argv[1])
    for campaign in map(Path, sys.argv[2:]):
        by_scheme = defaultdict(list)
        for run in sorted((campaign / "runs").iterdir()):
            if (run / "diskstat.csv").exists() and ".failed-" not in run.name:
                rate = byte_weighted_mbps(run / "diskstat.csv", step_ms)
                if rate is not None:
                    by_scheme[run.name.rsplit("-r", 1)[0]].append(rate)
        print(f"{campaign}, {step_ms}-ms steps")
        for scheme, rates in by_scheme.items():
            print(f"  {scheme:12} " + " ".join(f"{r:6.1f}" for r in rates)
                  + f"   median {statistics.median(rates):6.1f} MB/s")


if __name__ == "__main__":
    main()
