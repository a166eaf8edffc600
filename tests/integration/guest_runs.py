"""What the integration tests share: one campaign of `pmrtb run` (one
repetition per scheme) in a temporary directory, and readers of its runs'
raw files."""

import csv
import functools
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_campaign(out: Path, scenario: str, profile: str, schemes: list[str]) -> Path:
    """`pmrtb run` of `scenario` on `profile`, one rep of each scheme, into
    `out`; an assertion error with the end of its stderr if it fails."""
    args = ["--scenario", scenario, "--profile", profile, "--schemes", ",".join(schemes)]
    res = subprocess.run(
        [sys.executable, "-m", "pmr_testbed.cli", "run", *args, "--reps", "1", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, f"pmrtb run failed:\n{res.stderr[-4000:]}"
    return out


def run_dir(results: Path, scheme: str) -> Path:
    return results / "runs" / f"{scheme}-r1"


def rows(path: Path) -> list[dict]:
    with open(path) as fh:
        return list(csv.DictReader(fh))


@functools.cache
def vmstat_rows(run: Path) -> list[dict]:
    """A run's vmstat samples, read once for all the checks of a run."""
    return rows(run / "vmstat.csv")


def vmstat_delta(run: Path, key: str) -> int:
    samples = vmstat_rows(run)
    return int(samples[-1][key]) - int(samples[0][key])


def events(run: Path, *kinds: str) -> list[dict]:
    """The run's events of the given types, in order."""
    lines = (run / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, filter(None, lines)) if e["type"] in kinds]
