"""Build the kernel, boot the guest, run `smoke` on original and mglru.

Asserts what must hold for any scheme: real swap-out, every switch recorded,
a summary that matches the schema, and a console free of oops/BUG/WARNING.
"""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pmr_testbed import guest, summary

ROOT = Path(__file__).resolve().parents[2]
SCHEMES = ["original", "mglru"]

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("smoke") / "results"
    res = subprocess.run(
        [sys.executable, "-m", "pmr_testbed.cli", "run", "--scenario", "smoke", "--profile",
         "pixel5", "--schemes", ",".join(SCHEMES), "--reps", "1", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, f"pmrtb run failed:\n{res.stderr[-4000:]}"
    return out


def _vmstat_delta(run_dir: Path, key: str) -> int:
    with open(run_dir / "vmstat.csv") as fh:
        rows = list(csv.DictReader(fh))
    return int(rows[-1][key]) - int(rows[0][key])


@pytest.mark.parametrize("scheme", SCHEMES)
def test_run_swapped_and_recorded_every_switch(results, scheme):
    run_dir = results / "runs" / f"{scheme}-r1"
    status = json.loads((run_dir / "run.json").read_text())
    assert status["status"] == "ok"
    assert _vmstat_delta(run_dir, "pswpout") > 1000, "no real swap-out happened"
    spec = json.loads((run_dir / "spec.json").read_text())
    events = [json.loads(ln) for ln in (run_dir / "events.jsonl").read_text().splitlines() if ln]
    switches = [e for e in events if e["type"] == "switch"]
    expected = spec["scenario"]["rounds"] * len(spec["scenario"]["foreground"])
    assert len(switches) == expected
    assert all(e["response_ms"] > 0 and e["kind"] in ("hot", "cold") for e in switches)
    for rnd in range(spec["scenario"]["rounds"]):
        apps = sorted(e["app"] for e in switches if e["round"] == rnd)
        assert apps == sorted(spec["scenario"]["foreground"])


def test_mglru_was_really_on_and_original_off(results):
    knob = "/sys/kernel/mm/lru_gen/enabled"
    on = json.loads((results / "runs/mglru-r1/run.json").read_text())["knobs"][knob]
    off = json.loads((results / "runs/original-r1/run.json").read_text())["knobs"][knob]
    assert int(off, 16) == 0 and int(on, 16) != 0


@pytest.mark.parametrize("scheme", SCHEMES)
def test_console_is_clean(results, scheme):
    console = (results / "runs" / f"{scheme}-r1" / "console.log").read_text(errors="replace")
    assert "Linux version" in console, "console log did not capture the kernel log"
    assert guest.splats(console) == []


def test_summary_matches_schema_and_report_exists(results):
    data = json.loads((results / "summary.json").read_text())
    assert summary.validate_summary(data) == []
    assert set(data["schemes"]) == set(SCHEMES)
    for name in SCHEMES:
        assert data["schemes"][name]["runs"] == 1
        assert data["schemes"][name]["pswpout_mb"] > 0
    assert (results / "report.md").exists()
    assert len(list((results / "plots").glob("*.png"))) >= 4
