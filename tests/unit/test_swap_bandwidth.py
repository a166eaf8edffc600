"""The fio measurement of the swap disk (swap_bandwidth.py) and how the
campaign report uses it, without booting a guest."""

import json
import shlex
import subprocess

import pytest

from pmr_testbed.report import campaign_report
from pmr_testbed.workflows import swap_bandwidth


def test_parse_fio_reads_the_write_bandwidth():
    text = json.dumps({"jobs": [{"jobname": "swap-write", "write": {"bw_bytes": 128 * 2**20}}]})
    assert swap_bandwidth.parse_fio(text) == pytest.approx(128.0)


@pytest.mark.parametrize("text", ["", "{}", '{"jobs": []}', "fio: unknown option"])
def test_parse_fio_refuses_output_without_a_bandwidth(text):
    with pytest.raises(ValueError, match="no write bandwidth"):
        swap_bandwidth.parse_fio(text)


def test_guest_command_finds_the_disk_by_serial_and_runs_the_job(tmp_path):
    cmd = swap_bandwidth.guest_command("pmrswap", tmp_path / "fio.json")
    argv = shlex.split(cmd)
    assert argv[:2] == ["sh", "-c"] and len(argv) == 3
    for option in ("--rw=write", "--bs=1M", "--direct=1", "--iodepth=16", "--output-format=json"):
        assert option in cmd
    # the shell script parses
    proc = subprocess.run(["sh", "-n", "-c", argv[2]], capture_output=True)
    assert proc.returncode == 0, proc.stderr


def _summary(bw):
    return {
        "swap_bandwidth": bw,
        "schemes": {
            "original": {"reclaim_mbps": {"peak": 40.0}},
            "pmr": {"reclaim_mbps": {"peak": 100.0}},
        },
    }


def test_report_sets_each_peak_against_the_disk():
    (line,) = campaign_report.disk_share_lines(
        _summary({"write_mbps": 125.0, "fio": {"iodepth": 16}, "error": None})
    )
    assert "writes 125 MB/s as fio measures it" in line
    assert "original 0.32, pmr 0.80" in line


def test_report_says_when_the_disk_was_not_or_could_not_be_measured():
    assert "not measured" in campaign_report.disk_share_lines(_summary(None))[0]
    (line,) = campaign_report.disk_share_lines(
        _summary({"write_mbps": None, "fio": {}, "error": "fio exited with status 1"})
    )
    assert "could not be measured: fio exited with status 1" in line
