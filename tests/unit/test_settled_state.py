"""settled_state.py: how a run settled after lmkd's last kill."""

import pytest

from fakerun import kill, lmkd_row, write_run
from pmr_testbed.analysis.metrics import load_run


def _run(tmp_path, kills, **kw):
    # 31 samples over 3 s; file refaults rise linearly by 3000: 1000 per second
    return load_run(
        write_run(
            tmp_path / "r", kills=kills, vmstat_increments={"workingset_refault_file": 3000}, **kw
        )
    )


def test_rate_and_least_swap_free_after_the_last_kill(tmp_path):
    free_kb = [300 * 1024 - 1024 * i for i in range(31)]  # falls by 1 MB per sample
    free_kb[10] = 1024  # before the last kill: not counted
    m = _run(
        tmp_path,
        [
            kill("opera", "low_mem_and_swap", t_ms=1000),
            kill("skype", "low_mem_and_swap", t_ms=2000),
        ],
        swap_free_kb=free_kb,
    )
    assert m.settled["last_kill_s"] == pytest.approx(2.0)
    assert m.settled["file_refaults_per_s"] == pytest.approx(1000.0)
    assert m.settled["swap_free_mb_min"] == pytest.approx(300 - 30)
    assert m.settled["swap_full_s"] == 0  # the sample with 1 MB free came before it


def test_time_with_swap_full_after_the_last_kill(tmp_path):
    # SwapTotal 350,000 kB: full under 3,500 kB free; samples every 100 ms
    free_kb = [200 * 1024] * 31
    free_kb[5] = 0  # before the kill: not counted
    free_kb[20:25] = [3499] * 5  # 0.5 s full
    free_kb[25] = 3500  # not under 1%
    free_kb[29:31] = [0, 0]  # the last sample has no time after it: 0.1 s
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


def _split_run(tmp_path, kills, **kw):
    # 31 samples over 3 s: 3.0 s of reclaim CPU, 3000 pages reclaimed by
    # kswapd and 600 by direct reclaim, 2560 pages (10 MB) swapped out
    return load_run(
        write_run(
            tmp_path / "r",
            kills=kills,
            threads_cpu={"kswapd0": 2.4, "kshrinkd0": 0.6},
            vmstat_increments={"pgsteal_kswapd": 3000, "pgsteal_direct": 600, "pswpout": 2560},
            **kw,
        )
    )


def test_reclaim_work_split_at_the_last_kill(tmp_path):
    m = _split_run(
        tmp_path,
        [kill("opera", "low_mem_and_swap", t_ms=500), kill("skype", "low_mem_and_swap", t_ms=2000)],
    )
    until, after = m.settled["until_last_kill"], m.settled["after_last_kill"]
    assert until["reclaim_cpu_s"] == pytest.approx(2.0, abs=0.01)
    assert after["reclaim_cpu_s"] == pytest.approx(1.0, abs=0.01)
    assert until["pages_reclaimed"] == 2400 and after["pages_reclaimed"] == 1200
    assert until["pswpout_mb"] == pytest.approx(20 / 3, abs=0.01)
    assert after["pswpout_mb"] == pytest.approx(10 / 3, abs=0.01)


def test_without_kills_all_the_work_comes_after(tmp_path):
    m = _split_run(tmp_path, [])
    assert m.settled["until_last_kill"] == {
        "reclaim_cpu_s": 0.0,
        "pages_reclaimed": 0,
        "pswpout_mb": 0.0,
    }
    assert m.settled["after_last_kill"]["reclaim_cpu_s"] == pytest.approx(3.0)
    assert m.settled["after_last_kill"]["pages_reclaimed"] == 3600


def test_a_run_without_the_cpu_series_splits_the_rest(tmp_path):
    m = _split_run(
        tmp_path, [kill("opera", "low_mem_and_swap", t_ms=1500)], omit=("threads_cpu.csv",)
    )
    assert m.settled["until_last_kill"]["reclaim_cpu_s"] is None
    assert m.settled["after_last_kill"]["reclaim_cpu_s"] is None
    assert m.settled["after_last_kill"]["pages_reclaimed"] == 1800
    assert "threads_cpu.csv" in m.missing


def test_samples_with_a_thread_gone_are_left_out(tmp_path):
    run = write_run(
        tmp_path / "r",
        kills=[kill("opera", "low_mem_and_swap", t_ms=1000)],
        threads_cpu={"kswapd0": 2.4, "kshrinkd0": 0.6},
    )
    path = run / "threads_cpu.csv"
    lines = path.read_text().splitlines()
    # kshrinkd0 gone from the sample at 1 s: that sample cannot be summed (as 0.8 s
    # of kswapd0 alone); the samples around it give 1 s
    t, _, kswapd = lines[11].split(",")
    lines[11] = f"{t},,{kswapd}"
    path.write_text("\n".join(lines) + "\n")
    m = load_run(run)
    assert m.settled["until_last_kill"]["reclaim_cpu_s"] == pytest.approx(1.0, abs=0.01)


def test_what_lmkd_saw_over_the_run_and_after_its_last_kill(tmp_path):
    rows = [
        lmkd_row(800, event=True, swap_is_low=True, wmark="high"),
        lmkd_row(900, swap_is_low=True, wmark="low", reason="low_mem_and_swap", killed_kb=40000),
        lmkd_row(
            1000,
            event=True,
            swap_is_low=True,
            wmark="low",
            reason="low_mem_and_swap",
            killed_kb=40000,
        ),  # the last kill
        lmkd_row(1010, reclaim="idle", swap_is_low=True, wmark="low"),
        lmkd_row(1020, event=True, swap_is_low=True, wmark="high", thrashing=40),
        lmkd_row(
            1030, swap_is_low=True, wmark="min", thrashing=7, reason="low_mem_and_swap", killed_kb=0
        ),  # no victim
        lmkd_row(1040, wmark="low", thrashing=3),
        lmkd_row(1050, reclaim="direct", swap_is_low=True, wmark="none", thrashing=120),
    ]
    m = _run(tmp_path, [kill("opera", "low_mem_and_swap", t_ms=1000)], lmkd_rows=rows)
    assert m.settled["lmkd"] == {
        "events": 3,
        "evaluated": 7,
        "events_after": 1,
        "wakeups_after": 5,
        "evaluated_after": 4,
        "swap_low": 3,
        "under_low_wmark": 2,
        "swap_low_under_low_wmark": 1,
        "thrashing_max": 120,
        "kill_reasons_without_victim": 1,
    }


def test_without_a_kill_every_wakeup_is_after_it(tmp_path):
    rows = [
        lmkd_row(100, event=True, swap_is_low=True, wmark="high", thrashing=12),
        lmkd_row(110, reclaim="idle"),
    ]
    m = _run(tmp_path, [], lmkd_rows=rows)
    assert m.settled["lmkd"]["wakeups_after"] == 2
    assert m.settled["lmkd"]["evaluated_after"] == 1
    assert m.settled["lmkd"]["thrashing_max"] == 12


def test_a_run_without_lmkd_csv_has_no_lmkd_figures(tmp_path):
    m = _run(tmp_path, [kill("opera", "low_mem_and_swap", t_ms=1000)], omit=("lmkd.csv",))
    assert set(m.settled["lmkd"].values()) == {None}
    assert "lmkd.csv" in m.missing
