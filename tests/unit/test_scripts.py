"""The shell helpers under scripts/: bad input is refused before any run."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AB = ROOT / "scripts" / "ab-campaign.sh"


def run_ab(*args, env=None):
    return subprocess.run(
        ["sh", str(AB), *args], capture_output=True, text=True, env=env, timeout=30
    )


def test_ab_campaign_needs_an_output_dir_and_runs():
    res = run_ab("/nonexistent-out")
    assert res.returncode == 2 and res.stderr.startswith("usage:")


def test_ab_campaign_refuses_a_missing_kernel_image_before_running_anything(tmp_path):
    (tmp_path / "bzImage.here").write_bytes(b"")
    out = tmp_path / "out"
    res = run_ab(
        str(out),
        "here:pmr:a",
        "gone:pmr:b",
        env={"PATH": "/usr/bin:/bin", "VARIANTS": str(tmp_path)},
    )
    assert res.returncode == 2
    assert res.stderr.strip() == (
        f"no kernel image {tmp_path}/bzImage.gone: build the variant and copy it there"
    )
    assert not out.exists()  # checked before the first run


def test_ab_campaign_refuses_a_run_without_scheme_or_tag(tmp_path):
    (tmp_path / "bzImage.here").write_bytes(b"")
    res = run_ab(
        str(tmp_path / "out"), "here:pmr", env={"PATH": "/usr/bin:/bin", "VARIANTS": str(tmp_path)}
    )
    assert res.returncode == 2
    assert res.stderr.strip() == (
        "bad run 'here:pmr': give KERNEL:SCHEME:TAG, e.g. series:pmr:base-1"
    )
