"""The per-run table of README.md: each run's reclaim work split at lmkd's
last kill (settled_state.py), from the run directories of a campaign.

    .venv/bin/python docs/results/s31-until-last-kill/runs_table.py RESULTS_DIR
"""

import sys
from pathlib import Path

from pmr_testbed.metrics import load_run

COLUMNS = ["run", "kills", "last kill s", "swap full after it s", "reclaim CPU s", "until", "after",
           "pages until", "pages after", "swap out MB", "until", "after", "response ms"]


def row(name: str, run_dir: Path) -> list[str]:
    m = load_run(run_dir)
    s = m.settled
    until, after = s["until_last_kill"], s["after_last_kill"]
    return [name, str(m.kills), f"{s['last_kill_s']:.0f}", f"{s['swap_full_s']:.0f}",
            f"{m.reclaim_cpu_total:.2f}", f"{until['reclaim_cpu_s']:.2f}",
            f"{after['reclaim_cpu_s']:.2f}", f"{until['pages_reclaimed']:,}",
            f"{after['pages_reclaimed']:,}", f"{m.pswpout_mb:.0f}", f"{until['pswpout_mb']:.0f}",
            f"{after['pswpout_mb']:.0f}", f"{m.response_ms['mean']:.0f}"]


def main(results: Path) -> None:
    runs = sorted((d for d in (results / "runs").iterdir() if (d / "run.json").exists()),
                  key=lambda d: (int(d.name.rsplit("-r", 1)[1]), d.name))
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + " --- |" * len(COLUMNS))
    for d in runs:
        print("| " + " | ".join(row(d.name, d)) + " |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
