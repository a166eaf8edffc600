"""Session 27's A/B, one row per repetition: reclaim CPU (kswapd +
kshrinkd), pages reclaimed, CPU per page, swap writes (mean size, count,
4 kB ones), response time, kills, direct reclaims and how long swap stayed
full after the last kill, from the campaigns' summary.json
(per repetition: `by_rep`) and runs (swap writes, read with the harness:
metrics.load_run). Run with the project's venv:

    .venv/bin/python compare.py CAMPAIGN_DIR...   # the `pmrtb run --out` directories
"""

import json
import sys
from pathlib import Path

from pmr_testbed.metrics import load_run


def rows_with_runs(campaign: Path):
    """(row, run) per repetition: the run as metrics.load_run read it, for
    callers that add columns of their own without reading it again."""
    summary = json.loads((campaign / "summary.json").read_text())
    for scheme, s in summary["schemes"].items():
        for rep in s["by_rep"]:
            run = load_run(campaign / "runs" / f"{scheme}-r{rep['rep']}")
            hist = run.swap_write_kb["hist"]
            yield {"campaign": campaign.name, "scheme": scheme, "rep": rep["rep"],
                   "reclaim_cpu_s": rep["reclaim_cpu_total"],
                   "pages_reclaimed": run.pgsteal_kswapd + run.pgsteal_direct,
                   "us_per_page": round(rep["reclaim_cpu_us_per_page"], 1),
                   "swap_write_mean_kb": round(run.swap_write_kb["mean"]),
                   "swap_writes": sum(hist.values()), "swap_writes_4kb": hist.get("4", 0),
                   "response_ms_mean": round(rep["response_ms.mean"], 1),
                   "kills": rep["kills"], "allocstall": rep["allocstall"],
                   "swap_full_s": rep.get("settled.swap_full_s")}, run


def rows(campaign: Path):
    for row, _run in rows_with_runs(campaign):
        yield row


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        for row in rows(Path(arg)):
            print(json.dumps(row))
