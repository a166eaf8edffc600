"""run_times.py: a run's wall time on this host, from the runs it did."""

import pytest

from pmr_testbed import run_times
from pmr_testbed.config import paper


def test_no_runs_no_fit_and_paper_keeps_its_defaults():
    assert run_times.fit("paper", "pixel6pro", 60.0) is None
    fixed, per_round = paper.RUN_S["pixel6pro"]
    assert paper.run_seconds("pixel6pro", 10) == pytest.approx(fixed + 10 * per_round)


def test_two_round_counts_give_a_line_through_them():
    for rounds, wall in ((3, 215.0), (3, 225.0), (10, 570.0), (10, 580.0), (1, 120.0)):
        run_times.record("paper", "pixel6pro", rounds, wall)
    fixed, per_round = run_times.fit("paper", "pixel6pro", 999.0)
    assert per_round == pytest.approx(50.6, abs=0.5) and fixed == pytest.approx(70.0, abs=3.0)
    # pmrtb paper plans with it
    assert paper.run_seconds("pixel6pro", 10) == pytest.approx(fixed + 10 * per_round)
    # other scenarios and profiles are apart
    assert run_times.fit("smoke", "pixel6pro", 60.0) is None
    assert run_times.fit("paper", "pixel5", 60.0) is None


def test_one_round_count_keeps_the_fixed_part():
    for wall in (200.0, 220.0, 210.0):
        run_times.record("paper", "pixel5", 2, wall)
    assert run_times.fit("paper", "pixel5", 50.0) == pytest.approx((50.0, 80.0))


def test_a_fit_that_makes_no_sense_is_not_used_and_old_runs_go():
    run_times.record("paper", "pixel6pro", 1, 300.0)
    run_times.record("paper", "pixel6pro", 10, 100.0)  # slower with fewer rounds
    assert run_times.fit("paper", "pixel6pro", 60.0) is None
    for i in range(run_times.MAX_KEPT + 5):
        run_times.record("smoke", "pixel5", 2, float(i))
    kept = run_times._load()[run_times._key("smoke", "pixel5")]
    assert len(kept) == run_times.MAX_KEPT and kept[-1] == [2, run_times.MAX_KEPT + 4.0]


def test_a_broken_file_is_no_record(run_times_cache):
    run_times_cache.write_text("{not json")
    assert run_times.fit("paper", "pixel6pro", 60.0) is None
    run_times.record("paper", "pixel6pro", 3, 200.0)
    assert run_times.fit("paper", "pixel6pro", 60.0) == pytest.approx((60.0, 140.0 / 3))
