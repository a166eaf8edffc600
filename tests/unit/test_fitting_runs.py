"""fitting_runs.py: the repetitions whose survivors fit, compared apart."""

from pmr_testbed.analysis.fitting_runs import FIT_SWAP_FULL_S, fits, fitting_summary
from pmr_testbed.report import campaign_report


def _run(
    rep: int, swap_full_s: float | None, response_ms: float, runq_ms: float = 900.0, kills: int = 10
):
    """(rep, figures) as summary.run_figures gives a run's figures."""
    return rep, {
        ("settled", "swap_full_s"): swap_full_s,
        ("response_ms", "mean"): response_ms,
        ("switch_kinds", "cold", "mean_ms"): 3000.0,
        ("switch_kinds", "cold", "cost", "runq_ms"): runq_ms,
        ("switch_kinds", "hot", "mean_ms"): 150.0,
        ("kills",): kills,
        ("allocstall",): 0,
        ("reclaim_mbps", "peak"): 50.0,
        ("reclaim_cpu_total",): 16.0,
    }


def test_a_run_fits_when_swap_was_full_briefly_after_the_last_kill():
    assert fits(_run(1, 0.0, 1)[1]) is True
    assert fits(_run(1, FIT_SWAP_FULL_S - 0.1, 1)[1]) is True
    assert fits(_run(1, FIT_SWAP_FULL_S, 1)[1]) is False
    assert fits(_run(1, 250.0, 1)[1]) is False
    assert fits(_run(1, None, 1)[1]) is None  # no meminfo.csv: not judged


def test_each_scheme_is_summarised_over_its_fitting_reps_only():
    ok = {
        "original": [
            _run(1, 0.0, 400),
            _run(2, 0.0, 460),
            _run(3, 2.0, 480),
            _run(4, 240.0, 900, kills=8),
        ],
        "pmr": [
            _run(1, 0.0, 560, runq_ms=1300),
            _run(2, 250.0, 700, kills=9),
            _run(3, 5.0, 600, runq_ms=1400),
            _run(4, None, 550),
        ],
    }
    s = fitting_summary(ok, "original")
    orig, pmr = s["schemes"]["original"], s["schemes"]["pmr"]
    assert orig["reps"] == [1, 2, 3] and orig["not_judged"] == []
    assert orig["figures"]["response_ms.mean"] == {"median": 460, "min": 400, "max": 480}
    assert pmr["reps"] == [1, 3] and pmr["not_judged"] == [4]
    assert pmr["figures"]["switch_kinds.cold.cost.runq_ms"]["median"] == 1350
    assert pmr["figures"]["kills"] == {"median": 10, "min": 10, "max": 10}
    assert "p_value" not in orig
    # two fitting reps of pmr: too few for a p
    assert pmr["p_value"]["response_ms.mean"] is None


def test_the_report_lists_the_fitting_reps_and_says_when_none_fit():
    ok = {
        "original": [_run(r, 0.0, 400 + r) for r in (1, 2, 3)],
        "pmr": [_run(r, 0.0, 600 + r) for r in (1, 2, 3)] + [_run(4, 300.0, 900)],
    }
    table = campaign_report.fitting_table(fitting_summary(ok, "original"))
    pmr_row = next(line for line in table if line.startswith("| pmr |"))
    assert pmr_row.startswith("| pmr | 1, 2, 3 | 602 [601, 603] |")
    assert pmr_row.endswith("| p 0.1 |")  # 3 reps each: the least p there is
    nobody = {"original": [_run(1, 300.0, 900)], "pmr": [_run(1, 300.0, 900)]}
    assert campaign_report.fitting_table(fitting_summary(nobody, "original")) == []
    assert campaign_report.fitting_table(None) == []
