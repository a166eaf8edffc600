"""Bad input: one clear line on stderr and exit status 2, nothing written."""

import subprocess
import sys
from pathlib import Path

import pytest

from fakerun import kills_campaign

ROOT = Path(__file__).resolve().parents[2]


def pmrtb(*args, cwd=ROOT):
    return subprocess.run(
        [sys.executable, "-m", "pmr_testbed.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "harness"), "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--scenario", "nope", "--profile", "pixel5", "--schemes", "original"],
            "unknown scenario 'nope'",
        ),
        (
            ["--scenario", "smoke", "--profile", "iphone", "--schemes", "original"],
            "unknown profile 'iphone'",
        ),
        (
            ["--scenario", "smoke", "--profile", "pixel5", "--schemes", "original,zzz"],
            "unknown scheme 'zzz'",
        ),
        (["--scenario", "smoke", "--profile", "pixel5", "--schemes", ","], "no schemes given"),
        (
            ["--scenario", "smoke", "--profile", "pixel5", "--schemes", "original", "--reps", "0"],
            "--reps must be at least 1",
        ),
        # a message with square brackets (make's error lines have them) is not markup
        (
            ["--scenario", "[/x]", "--profile", "pixel5", "--schemes", "original"],
            "unknown scenario '[/x]'",
        ),
        (
            [
                "--scenario",
                "smoke",
                "--profile",
                "pixel5",
                "--schemes",
                "original",
                "--rounds",
                "0",
            ],
            "--rounds must be at least 1",
        ),
        (
            ["--scenario", "smoke", "--profile", "pixel5", "--schemes", "pmr@nope=1"],
            "scheme pmr has no knob 'nope'",
        ),
        (
            ["--scenario", "smoke", "--profile", "pixel5", "--schemes", "pmr", "--perf-hz", "5000"],
            "--perf-hz must be 0 (off) to 1000",
        ),
        (
            [
                "--scenario",
                "smoke",
                "--profile",
                "pixel5",
                "--schemes",
                "pmr",
                "--trace-event",
                "mm_vmscan_lru_isolate",
            ],
            "--trace-event 'mm_vmscan_lru_isolate': give a tracepoint as",
        ),
        (
            ["--scenario", "smoke", "--profile", "pixel5", "--schemes", "pmr", "--flavour", "fast"],
            "unknown kernel flavour 'fast': use one of testbed, debug",
        ),
        (
            ["--scenario", "smoke", "--profile", "pixel5", "--schemes", "pmr", "--kernel", "v2"],
            "--kernel 'v2': give NAME=PATH",
        ),
        (
            [
                "--scenario",
                "smoke",
                "--profile",
                "pixel5",
                "--schemes",
                "pmr",
                "--kernel",
                "v2=/nonexistent/bzImage",
            ],
            "--kernel v2=/nonexistent/bzImage: no such kernel image",
        ),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path, args, message):
    out = tmp_path / "out"
    res = pmrtb("run", *args, "--out", str(out))
    assert res.returncode == 2, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("pmrtb: error: ") and message in lines[0]
    assert not out.exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "--no-such-option"], "No such option: --no-such-option"),
        (["run", "--reps", "x"], "Invalid value for '--reps'"),
        (["probe"], "Missing argument 'name'"),
        (["bogus"], "No such command 'bogus'"),
    ],
)
def test_usage_errors_are_named_without_a_traceback(args, message):
    """typer's usage errors (its own click's): usage, then one `Error:`
    line, exit status 2. typer 0.29 ships click inside it: the `click`
    package is not installed."""
    res = pmrtb(*args)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and message in errors[0]


def test_missing_qemu_is_named(tmp_path, monkeypatch):
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            "import shutil, sys; from pmr_testbed import cli;"
            "real = shutil.which;"
            "shutil.which = lambda n, **k: None if n == 'qemu-system-x86_64' else real(n, **k);"
            "sys.argv = ['pmrtb', 'run', '--scenario', 'smoke', '--profile', 'pixel5',"
            f" '--schemes', 'original', '--out', '{tmp_path / 'o'}'];"
            "cli.main()",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "harness")},
    )
    assert res.returncode == 2
    assert "qemu-system-x86_64 not found" in res.stderr


def test_report_of_a_non_results_dir_is_refused(tmp_path):
    res = pmrtb("report", str(tmp_path))
    assert res.returncode == 2 and "not a results directory" in res.stderr


def test_resume_needs_out():
    res = pmrtb(
        "run", "--scenario", "smoke", "--profile", "pixel5", "--schemes", "original", "--resume"
    )
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1 and "--resume needs --out" in lines[0]


def test_compare_prints_the_schemes_side_by_side(tmp_path):
    d = kills_campaign(tmp_path / "c", {"original": [4], "pmr": [1]})
    res = pmrtb("compare", str(d), "--figure", "kills", "--figure", "allocstall")
    assert res.returncode == 0, res.stderr
    assert "| figure | original (base) | pmr |" in res.stdout
    assert "| `kills` | 4 | 1 (×0.25) |" in res.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--figure", "kils"], "figure kils: no run has it"),
        (["--base", "mglru"], "--base mglru: no such column"),
        (["--schemes", "pmr"], "1 column to compare"),
    ],
)
def test_compare_refuses_bad_input_in_one_line(tmp_path, args, message):
    d = kills_campaign(tmp_path / "c", {"original": [4], "pmr": [1]})
    res = pmrtb("compare", str(d), *args)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1 and message in lines[0], res.stderr
    assert res.stdout == ""
