"""The kernel probes (probes/*.sh, `pmrtb probe`) under mode 2, each in
its own small guest on the testbed kernel: each must pass. An inconclusive
probe (it could not set up what it tests) fails the test too: nothing was
checked."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pmr_testbed.workflows import probe

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("name", probe.available())
def test_probe_passes_under_pmr(tmp_path, name):
    out = tmp_path / name
    res = subprocess.run(
        [sys.executable, "-m", "pmr_testbed.cli", "probe", name, "2", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    log = (out / "guest.log").read_text() if (out / "guest.log").exists() else ""
    assert res.returncode == 0, f"{res.stdout}\n{res.stderr[-3000:]}\n--- guest.log ---\n{log}"
    result = json.loads((out / "probe.json").read_text())
    assert result["status"] == "passed" and result["args"] == ["2"]
