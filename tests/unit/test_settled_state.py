"""settled_state.py: how a run settled after lmkd's last kill."""

import pytest

from fakerun import kill, write_run
from pmr_testbed.metrics import load_run


def _run(tmp_path, kills, **kw):
    # 31 samples over 3 s; file refaults rise linearly by 3000: 1000 per second
    return load_run(write_run(tmp_path / "r", kills=kills,
                              vmstat_increments={"workingset_refault_file": 3000}, **kw))


def test_rate_and_least_swap_free_after_the_last_kill(tmp_path):
    free_kb = [300 * 1024 - 1024 * i for i in range(31)]  # falls by 1 MB per sample
    free_kb[10] = 1024  # before the last kill: not counted
    m = _run(tmp_path, [kill("opera", "low_mem_and_swap", t_ms=1000),
                        kill("skype", "low_mem_and_swap", t_ms=2000)], swap_free_kb=free_kb)
    assert m.settled["last_kill_s"] == pytest.approx(2.0)
    assert m.settled["file_refaults_per_s"] == pytest.approx(1000.0)
    assert m.settled["swap_free_mb_min"] == pytest.approx(300 - 30)
    assert m.settled["swap_full_s"] == 0   # the sample with 1 MB free came before it


def test_time_with_swap_full_after_the_last_kill(tmp_path):
    # SwapTotal 350,000 kB: full under 3,500 kB free; samples every 100 ms
    free_kb = [200 * 1024] * 31
    free_kb[5] = 0                   # before the kill: not counted
    free_kb[20:25] = [3499] * 5      # 0.5 s full
    free_kb[25] = 3500               # not under 1%
    free_kb[29:31] = [0, 0]          # the last sample has no time after it: 0.1 s
    m = _run(tmp_path, [kill("opera", "low_mem_and_swap", t_ms=1000)], swap_free_kb=free_kb)
    assert m.settled["swap_full_s"] == pytest.approx(0.6)


def test_without_kills_the_window_is_the_whole_run(tmp_path):
    m = _run(tmp_path, [])
    assert m.settled["last_kill_s"] is None
    assert m.settled["file_refaults_per_s"] == pytest.approx(1000.0)
    assert m.settled["swap_free_mb_min"] == pytest.approx(200.0)


def test_a_run_without_meminfo_has_no_swap_figure_and_says_so(tmp_path):
    m = _run(tmp_path, [kill("opera", "low_mem_and_swap", t_ms=1500)], omit=("meminfo.csv",))
    assert m.settled["swap_free_mb_min"] is None
    assert m.settled["swap_full_s"] is None
    assert m.settled["file_refaults_per_s"] == pytest.approx(1000.0)
    assert "meminfo.csv" in m.missing


def test_a_kill_at_the_last_sample_leaves_no_rate(tmp_path):
    m = _run(tmp_path, [kill("opera", "low_mem_and_swap", t_ms=3000)])
    assert m.settled["file_refaults_per_s"] is None
