"""The series (image p26) against original on session 29's host: min,
median and max per scheme over the repetitions of sessions 29 and 30
(rows of ../s29-kswapd-goal/compare.py), and the ratio of the medians.
Variants' runs (dfc, dfc2) are left out. The flash write volume is the
swap writes times their mean size (rounded to a kB in the rows: within
0.2% here). Run with the project's venv:

    .venv/bin/python spread.py ../s29-kswapd-goal/runs.jsonl runs.jsonl
"""

import json
import statistics
import sys

KEPT = {"p26-": "pmr", "orig-": "original"}
COLUMNS = ["reclaim_cpu_s", "pages_reclaimed", "us_per_page", "response_ms_mean", "kills",
           "allocstall", "swap_write_mean_kb", "swap_full_s", "file_refaults",
           "mem_free_mb_p90", "swap_written_mb"]


def runs(paths):
    for path in paths:
        with open(path) as f:
            for line in f:
                row = json.loads(line)
                if any(row["campaign"].startswith(p) for p in KEPT):
                    row["swap_written_mb"] = round(
                        row["swap_writes"] * row["swap_write_mean_kb"] / 1024)
                    yield row


def main(paths):
    by_scheme = {}
    for row in runs(paths):
        by_scheme.setdefault(row["scheme"], []).append(row)
    print(f"{'':20}" + "".join(f"{s + ' (n=' + str(len(by_scheme.get(s, []))) + ')':>30}"
                               for s in KEPT.values()) + f"{'median ratio':>14}")
    for col in COLUMNS:
        cells, medians = [], []
        for scheme in KEPT.values():
            vals = [r[col] for r in by_scheme.get(scheme, [])]
            med = statistics.median(vals)
            medians.append(med)
            cells.append(f"{min(vals):g} / {med:g} / {max(vals):g}")
        ratio = medians[0] / medians[1] if medians[1] else float("nan")
        print(f"{col:20}" + "".join(f"{c:>30}" for c in cells) + f"{ratio:>14.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
