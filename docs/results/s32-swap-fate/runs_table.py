"""The per-run table of README.md: what became of each run's swap writes
(swap_fate.py) and, on pmr, patch 27's victim counters, from the run
directories of a campaign.

    .venv/bin/python docs/results/s32-swap-fate/runs_table.py RESULTS_DIR
"""

import sys
from pathlib import Path

from pmr_testbed.metrics import load_run
from pmr_testbed.summary import load_campaign
from pmr_testbed.swap_fate import PAGE_MB

COLUMNS = ["run", "kills", "written MB", "anon freed MB", "not freed MB", "in swap cache at end MB",
           "dropped MB", "victims swapped in MB", "victims freed by owner MB", "pswpin MB",
           "response ms"]


def row(name: str, run_dir: Path) -> list[str]:
    m = load_run(run_dir)
    f = m.swap_fate
    pmr = m.pmr or {}

    def pages_mb(key: str) -> str:
        return "–" if key not in pmr else f"{pmr[key] * PAGE_MB:.1f}"

    return [name, str(m.kills), f"{f['written_mb']:.0f}", f"{f['anon_freed_mb']:.0f}",
            f"{f['written_not_freed_mb']:.1f}", f"{f['swap_cache_end_mb']:.1f}",
            f"{f['dropped_mb']:.1f}", pages_mb("pmr_victim_swapin"),
            pages_mb("pmr_victim_freed"), f"{m.pswpin_mb:.0f}", f"{m.response_ms['mean']:.0f}"]


def main(results: Path) -> None:
    """One row per ok run, in the order campaign.json lists them (the order they ran)."""
    runs = [r for r in load_campaign(results)["runs"] if r["status"] == "ok"]
    lines = [COLUMNS, ["---"] * len(COLUMNS)]
    lines += [row(Path(r["dir"]).name, results / r["dir"]) for r in runs]
    print("\n".join("| " + " | ".join(cells) + " |" for cells in lines))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
