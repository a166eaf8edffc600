"""lwp.py and the Acclaim table: the goals Acclaim's lightweight prediction
gave kswapd, and its foreground-aware eviction's counter."""

import pytest

from fakerun import ACCLAIM_VMSTAT_KEYS, lwp_goal, trace_text, write_campaign, write_run
from pmr_testbed.analysis.lwp import LwpGoal, lwp_figures, lwp_goals
from pmr_testbed.analysis.metrics import load_run
from pmr_testbed.analysis.trace import parse_trace
from pmr_testbed.config.trace_events import TRACE_EVENTS
from pmr_testbed.report.campaign_report import LWP_PLOT, write_report
from pmr_testbed.report.summary import validate_summary, write_summary

# the guest's stock goal (its high watermark) and LWP's bounds on pixel6pro, pages
STOCK, LOW, HIGH = 6556, 1337, 1476
GOALS = [
    lwp_goal(1.0, 150, STOCK, HIGH),
    lwp_goal(1.2, 100, STOCK, LOW),
    lwp_goal(1.5, 80, STOCK, LOW),
    lwp_goal(2.0, 400, 1000, HIGH),  # a stock goal under LWP's: raised
]


def test_the_tracepoint_is_recorded_by_default():
    assert "vmscan/mm_vmscan_kswapd_lwp_goal" in TRACE_EVENTS


def test_goals_parse_in_trace_order():
    goals = lwp_goals(parse_trace(trace_text(GOALS)))
    assert goals[0] == LwpGoal(t_s=pytest.approx(1.0), nid=0, ratio=150, stock=STOCK, goal=HIGH)
    assert [g.goal for g in goals] == [HIGH, LOW, LOW, HIGH]
    assert goals[0].goal_kb == HIGH * 4 and goals[0].stock_kb == STOCK * 4
    assert lwp_goals(None) == [] and lwp_goals(parse_trace(trace_text([]))) == []


def test_figures_in_kb_with_the_share_above_stock():
    f = lwp_figures(lwp_goals(parse_trace(trace_text(GOALS))))
    assert f == {
        "goals": 4,
        "goal_kb": {"min": LOW * 4, "median": (LOW + HIGH) * 2, "max": HIGH * 4},
        "stock_kb": STOCK * 4,
        "ratio": {"median": 125, "max": 400},
        "above_stock_share": 0.25,
    }
    assert lwp_figures([]) is None


def test_runs_summary_report_and_plot(tmp_path):
    runs = []
    for scheme in ("original", "acclaim"):
        for rep in (1, 2):
            acclaim = scheme == "acclaim"
            write_run(
                tmp_path / "runs" / f"{scheme}-r{rep}",
                extra_vmstat_keys=ACCLAIM_VMSTAT_KEYS,
                vmstat_increments={"acclaim_fae_kept_inactive": 300 * rep if acclaim else 0},
                # LWP only where it is on: original's kernel has the event, and no goals
                trace=trace_text(GOALS[: 2 + rep] if acclaim else []),
            )
            runs.append({"scheme": scheme, "rep": rep, "status": "ok"})
    write_campaign(tmp_path, ["original", "acclaim"], runs, reps=2)
    m = load_run(tmp_path / "runs" / "acclaim-r2")
    assert m.fae_kept_inactive == 600 and m.lwp["goals"] == 4 and len(m.lwp_goal_list) == 4
    assert load_run(tmp_path / "runs" / "original-r1").lwp is None
    s = write_summary(tmp_path)
    assert validate_summary(s) == []
    acclaim, original = s["schemes"]["acclaim"], s["schemes"]["original"]
    assert acclaim["fae_kept_inactive"] == 450 and original["fae_kept_inactive"] == 0
    assert acclaim["lwp"]["goals"] == 3.5 and acclaim["spread"]["lwp.goals"] == {"min": 3, "max": 4}
    assert original["lwp"] is None
    md = write_report(tmp_path).read_text()
    table = md.split("## Acclaim")[1].split("\n## ")[0]
    # every scheme on the kernel has the counter; only acclaim has goals
    assert "| original | 0 [0, 0] | – | – |" in table
    assert "| acclaim | 450 [300, 600] | 3.50 [3, 4] | 5,348 [5,348, 5,348] |" in table
    assert f"![lwp goals](plots/{LWP_PLOT})" in md
    assert (tmp_path / "plots" / LWP_PLOT).read_bytes().startswith(b"\x89PNG")


def test_no_acclaim_kernel_no_table_and_no_plot(tmp_path):
    write_run(tmp_path / "runs" / "original-r1", trace=trace_text([]))
    write_campaign(tmp_path, ["original"], [{"scheme": "original", "rep": 1, "status": "ok"}], 1)
    s = write_summary(tmp_path)
    assert s["schemes"]["original"]["fae_kept_inactive"] is None
    md = write_report(tmp_path).read_text()
    assert "## Acclaim" not in md and LWP_PLOT not in md
    assert not (tmp_path / "plots" / LWP_PLOT).exists()
