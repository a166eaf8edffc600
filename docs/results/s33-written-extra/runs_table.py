"""The per-run table of README.md, from the output directory of an
interleaved A/B (`scripts/ab-campaign.sh OUTDIR KERNEL:pmr:TAG-N ...`): one
row per TAG-N, then the median of each TAG. The run directories (44 MB) are
not kept here; each TAG-N's summary.json and report.md are.

    .venv/bin/python docs/results/s33-written-extra/runs_table.py OUTDIR
"""

import statistics
import sys
from pathlib import Path

from pmr_testbed.metrics import RunMetrics, load_run
from pmr_testbed.swap_fate import PAGE_MB

COLUMNS = {
    "response ms": lambda m: m.response_ms["mean"],
    "kills": lambda m: m.kills,
    "allocstall": lambda m: m.allocstall,
    "memory stall s": lambda m: m.memory_stall_s["some"],
    "swap out MB": lambda m: m.pswpout_mb,
    "swap in MB": lambda m: m.pswpin_mb,
    "reclaim peak MB/s": lambda m: m.reclaim_mbps["peak"],
    "reclaim CPU s": lambda m: m.reclaim_cpu_total,
    "written, not freed MB": lambda m: m.swap_fate["written_not_freed_mb"],
    "dropped MB": lambda m: m.swap_fate["dropped_mb"],
    "victims swapped in MB": lambda m: m.pmr["pmr_victim_swapin"] * PAGE_MB,
    "victims freed by owner MB": lambda m: m.pmr["pmr_victim_freed"] * PAGE_MB,
    "swap full after the last kill s": lambda m: m.settled["swap_full_s"],
}


def values(m: RunMetrics) -> list[float]:
    return [get(m) for get in COLUMNS.values()]


def line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def main(out: Path) -> None:
    rows = {d.name: values(load_run(next((d / "runs").glob("pmr-r1"))))
            for d in sorted(out.iterdir()) if (d / "runs" / "pmr-r1" / "run.json").exists()}
    print(line(["run", *COLUMNS]))
    print(line(["---"] * (len(COLUMNS) + 1)))
    for name, vals in rows.items():
        print(line([name, *(f"{v:.1f}" for v in vals)]))
    for tag in sorted({name.rsplit("-", 1)[0] for name in rows}):
        runs = [vals for name, vals in rows.items() if name.rsplit("-", 1)[0] == tag]
        medians = [statistics.median(col) for col in zip(*runs)]
        print(line([f"**{tag}, median of {len(runs)}**", *(f"{v:.1f}" for v in medians)]))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
