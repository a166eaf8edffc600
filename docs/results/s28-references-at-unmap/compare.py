"""Session 28's A/Bs, one row per repetition: session 27's columns
(../s27-split-victims/compare.py: reclaim CPU, pages, CPU per page, swap
writes, response, kills, direct reclaims, swap full) and the bulk batches'
first-pass time per page taken (`bulk.first_pass_us_per_page_mean`: page
checks, swap slots, unmapping and TLB flush, over the pages taken; see
harness writeback.bulk_figures) and the number of batches. Run with the
project's venv:

    .venv/bin/python compare.py CAMPAIGN_DIR...   # the `pmrtb run --out` directories
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "s27-split-victims"))
from compare import rows_with_runs  # noqa: E402


def rows_with_runs_s28(campaign: Path):
    """(row, run) per repetition, as session 27's rows_with_runs(), with
    this session's columns added."""
    for row, run in rows_with_runs(campaign):
        bulk = run.bulk or {}
        mean = bulk.get("first_pass_us_per_page_mean")
        row["bulk_first_pass_us_per_page"] = None if mean is None else round(mean, 2)
        row["bulk_batches"] = bulk.get("batches")
        yield row, run


def rows(campaign: Path):
    for row, _run in rows_with_runs_s28(campaign):
        yield row


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        for row in rows(Path(arg)):
            print(json.dumps(row))
