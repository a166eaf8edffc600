"""Session 29's A/B, one row per repetition: session 28's columns
(../s28-references-at-unmap/compare.py: reclaim CPU, pages, CPU per page,
swap writes, response, kills, direct reclaims, swap full, bulk batches)
and what tells how far past the watermark reclaim went and what that cost:
the median and 90th percentile of MemFree after the first minute, the page
cache read again (workingset_refault_file, over the run and during hot
switches), the hot switches' mean response and their time reading files,
and kswapd's rounds. Run with the project's venv:

    .venv/bin/python compare.py CAMPAIGN_DIR...   # the `pmrtb run --out` directories
"""

import csv
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

# Session 28's compare.py, under a name of its own: it imports session 27's
# as `compare`
_spec = importlib.util.spec_from_file_location(
    "s28_compare", Path(__file__).resolve().parent.parent / "s28-references-at-unmap" / "compare.py")
s28 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(s28)

# Reclaim starts within the first minute of `paper`: MemFree before it is
# the guest's boot-time slack, not a watermark's
AFTER_MS = 60_000


def mem_free_mb(run_dir: Path) -> tuple[float, float]:
    with open(run_dir / "meminfo.csv") as f:
        free = [float(r["mem_free_kb"]) / 1024 for r in csv.DictReader(f)
                if float(r["t_ms"]) > AFTER_MS]
    return float(np.median(free)), float(np.percentile(free, 90))


def pgsteal_file(run_dir: Path) -> int:
    """pgsteal_file over the run (the harness's run does not keep it)."""
    with open(run_dir / "vmstat.csv") as f:
        rows = list(csv.DictReader(f))
    return int(rows[-1]["pgsteal_file"]) - int(rows[0]["pgsteal_file"])


def rows(campaign: Path):
    for row, run in s28.rows_with_runs_s28(campaign):
        run_dir = campaign / "runs" / f"{row['scheme']}-r{row['rep']}"
        hot = run.switch_kinds["hot"]
        median, p90 = mem_free_mb(run_dir)
        row.update({"mem_free_mb_median": round(median, 1), "mem_free_mb_p90": round(p90, 1),
                    "file_refaults": run.lru_balance["file_refaults"],
                    "pgsteal_file": pgsteal_file(run_dir),
                    "hot_file_refaults": hot["file_refault_pages"],
                    "hot_mean_ms": round(hot["mean_ms"], 1),
                    "hot_files_ms": round(hot["cost"].get("files_ms", float("nan")), 1),
                    "kswapd_rounds": len(run.kswapd_round_list)})
        yield row


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        for row in rows(Path(arg)):
            print(json.dumps(row))
