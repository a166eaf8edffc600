"""kswapd_rounds.py: kswapd's rounds and their shrinking/writeback split (Figs. 5, 6)."""

import pytest

from fakerun import kswapd_round, trace_text, write_campaign, write_run, writeback_time
from pmr_testbed.analysis.kswapd_rounds import kswapd_rounds, round_figures
from pmr_testbed.analysis.metrics import load_run
from pmr_testbed.analysis.trace import parse_trace
from pmr_testbed.config.trace_events import TRACE_EVENTS
from pmr_testbed.report.summary import validate_summary, write_summary

MS = 1_000_000


def test_the_event_is_recorded_by_default():
    assert "vmscan/mm_vmscan_kswapd_round" in TRACE_EVENTS
    assert len(set(TRACE_EVENTS)) == len(TRACE_EVENTS)


def test_the_kernels_line_parses():
    text = (
        "# start_mono_s=120.000000\n# missing=\n"
        "kswapd0-39 [000] ..... 123.456789: mm_vmscan_kswapd_round: nid=0 order=0 "
        "nr_to_reclaim=6556 nr_scanned=1234 nr_reclaimed=321 duration_ns=123456\n"
        "# overrun=0\n"
    )
    (r,) = kswapd_rounds(parse_trace(text))
    assert (r.task, r.pid, r.nid) == ("kswapd0", 39, 0)
    assert (r.nr_to_reclaim, r.nr_scanned, r.nr_reclaimed) == (6556, 1234, 321)
    assert r.duration_ns == 123456
    assert r.t_end_s == pytest.approx(3.456789)
    assert r.t_start_s == pytest.approx(3.456789 - 0.000123456)
    assert r.writeback_ns == 0 and r.shrink_ns == 123456  # traced, but no writeback in it


def _trace(missing=()):
    return parse_trace(
        trace_text(
            [
                # before round 1: not counted
                writeback_time(1.985, 32, 9 * MS, 32, 9 * MS),
                # inside round 1 [1.990, 2.000]: 3 ms and, at its very end, 1 ms
                writeback_time(1.995, 32, 2 * MS, 32, 1 * MS),
                # direct reclaim in an app thread at the same time: another task
                writeback_time(1.996, 32, 7 * MS, 32, 7 * MS, task="app-chrome-1", pid=2345),
                writeback_time(2.000, 32, MS // 2, 32, MS // 2),
                kswapd_round(2.000, 6556, 300, 10 * MS),
                # round 2 [2.999, 3.000] has more writeback than duration: capped
                writeback_time(2.9995, 32, 4 * MS, 32, 1 * MS),
                kswapd_round(3.000, 6556, 7000, 1 * MS),
                # node 1's kswapd: its own writeback
                writeback_time(2.5, 16, 1 * MS, 16, 1 * MS, task="kswapd1", pid=38),
                kswapd_round(2.502, 4000, 1000, 4 * MS, task="kswapd1", pid=38),
            ],
            missing=missing,
        )
    )


def test_writeback_is_the_same_tasks_events_inside_the_round():
    r1, r2, r3 = kswapd_rounds(_trace())
    assert (r1.writeback_ns, r1.shrink_ns) == (4 * MS, 6 * MS)
    assert (r2.writeback_ns, r2.shrink_ns) == (1 * MS, 0)
    assert (r3.task, r3.pid) == ("kswapd1", 38)
    assert (r3.writeback_ns, r3.shrink_ns) == (2 * MS, 2 * MS)


def test_writeback_is_matched_by_pid_not_by_comm():
    trace = parse_trace(
        trace_text(
            [
                # kswapd0 (pid 37) with its comm not cached: still its own
                writeback_time(1.995, 32, 2 * MS, 32, 1 * MS, task="<...>"),
                # another thread named kswapd0: not kswapd's
                writeback_time(1.996, 32, 5 * MS, 32, 0, task="kswapd0", pid=4242),
                kswapd_round(2.000, 6556, 300, 10 * MS),
                # a round whose own comm was not cached: matched to pid 37's events
                writeback_time(2.999, 16, 1 * MS, 16, 1 * MS),
                kswapd_round(3.000, 6556, 300, 10 * MS, task="<...>"),
            ]
        )
    )
    r1, r2 = kswapd_rounds(trace)
    assert (r1.pid, r1.writeback_ns) == (37, 3 * MS)
    assert (r2.task, r2.pid, r2.writeback_ns) == ("<...>", 37, 2 * MS)


def test_a_writeback_event_counts_in_one_round_only():
    # two back-to-back rounds sharing a boundary timestamp
    trace = parse_trace(
        trace_text(
            [
                writeback_time(1.0, 32, 1 * MS, 32, 0),
                kswapd_round(1.0, 100, 10, 2 * MS),
                kswapd_round(1.002, 100, 10, 2 * MS),
            ]
        )
    )
    r1, r2 = kswapd_rounds(trace)
    assert (r1.writeback_ns, r2.writeback_ns) == (1 * MS, 0)


def test_figures_means_shares_and_goals():
    f = round_figures(kswapd_rounds(_trace()))
    assert f["rounds"] == 3
    assert f["duration_ms"] == pytest.approx(5.0)  # (10 + 1 + 4) / 3
    assert f["writeback_ms"] == pytest.approx(7 / 3)  # (4 + 1 + 2) / 3
    assert f["shrink_ms"] == pytest.approx(8 / 3)
    assert f["writeback_share"] == pytest.approx(7 / 15)
    assert f["shrink_share"] == pytest.approx(8 / 15)
    assert f["nr_to_reclaim"] == 6556 and f["nr_reclaimed"] == 1000
    assert f["reclaimed_ratio"] == pytest.approx((300 / 6556 + 7000 / 6556 + 1000 / 4000) / 3)
    assert f["goal_met_share"] == pytest.approx(1 / 3)
    assert round_figures([]) is None


def test_busiest_second_sums_the_rounds_inside_each_second_per_thread():
    lines = [
        kswapd_round(1.5, 6556, 100, 400 * MS),  # 1.1-1.5 s
        kswapd_round(2.2, 6556, 100, 500 * MS),  # 1.7-2.2: 0.3 in s 1
        kswapd_round(2.9, 6556, 100, 100 * MS),  # 2.8-2.9
        kswapd_round(1.9, 6556, 100, 900 * MS, pid=38),
    ]  # another kswapd
    rounds = kswapd_rounds(parse_trace(trace_text(lines)))
    # second 1: 0.4 + 0.3 for pid 37 (pid 38's 0.9 is its own thread's)
    assert round_figures(rounds)["busiest_second_share"] == pytest.approx(0.9)
    assert round_figures(rounds[:3])["busiest_second_share"] == pytest.approx(0.7)


def test_without_the_writeback_event_the_split_is_unknown():
    rounds = kswapd_rounds(_trace(missing=("vmscan/mm_vmscan_writeback_time",)))
    assert all(r.writeback_ns is None and r.shrink_ns is None for r in rounds)
    f = round_figures(rounds)
    assert f["duration_ms"] == pytest.approx(5.0)
    assert f["shrink_ms"] is None and f["writeback_share"] is None
    assert f["nr_to_reclaim"] == 6556


def test_runs_and_summary_carry_the_rounds(tmp_path):
    runs = []
    for rep, wb_ms in ((1, 2), (2, 4), (3, 6)):
        write_run(
            tmp_path / "runs" / f"original-r{rep}",
            trace=trace_text(
                [
                    writeback_time(1.5, 32, wb_ms * MS, 32, 0),
                    kswapd_round(1.505, 6556, 500 * rep, 10 * MS),
                ]
            ),
        )
        runs.append({"scheme": "original", "rep": rep, "status": "ok"})
    write_run(tmp_path / "runs" / "old-r1")  # no trace: no rounds
    runs.append({"scheme": "old", "rep": 1, "status": "ok"})
    write_campaign(tmp_path, ["original", "old"], runs)
    m = load_run(tmp_path / "runs" / "original-r2")
    assert m.kswapd_rounds["writeback_ms"] == pytest.approx(4.0)
    assert len(m.kswapd_round_list) == 1
    s = write_summary(tmp_path)
    original = s["schemes"]["original"]
    assert original["kswapd_rounds"]["writeback_ms"] == pytest.approx(4.0)
    assert original["kswapd_rounds"]["nr_reclaimed"] == 1000
    assert original["spread"]["kswapd_rounds.shrink_ms"] == pytest.approx({"min": 4.0, "max": 8.0})
    assert s["schemes"]["old"]["kswapd_rounds"] is None
    assert validate_summary(s) == []
