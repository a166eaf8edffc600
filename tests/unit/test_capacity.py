"""The kills no scheme can avoid: the apps' footprints against RAM and swap."""

import json

import pytest
from fakerun import write_run
from pmr_testbed import metrics, report, shortfall, summary
from pmr_testbed.capacity import capacity, fewest_kills


def _spec(*apps: tuple[str, float, str]) -> dict:
    return {"apps": [{"name": n, "anon_mb": mb, "adj_class": c} for n, mb, c in apps]}


def _run(mem_mb: float, swap_mb: float) -> dict:
    return {"mem_total_kb": int(mem_mb * 1024), "swap_total_kb": int(swap_mb * 1024)}


def test_the_largest_apps_first_take_the_fewest_kills():
    assert fewest_kills([10, 50, 20, 40], 55) == 2        # 50 + 40, not 10 + 20 + 40
    assert fewest_kills([10, 50, 20, 40], 50) == 1        # reaching it exactly is enough
    assert fewest_kills([10, 50], 0) == 0
    assert fewest_kills([10, 50], -5) == 0
    assert fewest_kills([10, 50], 61) is None             # more than every app holds
    assert fewest_kills([], 1) is None


def test_persistent_apps_are_never_counted_as_victims():
    spec = _spec(("system_server", 400, "persistent"), ("launcher", 30, "service"),
                 ("chrome", 150, "cached"), ("firefox", 60, "cached"), ("skype", 40, "cached"))
    c = capacity(spec, _run(500, 100))
    assert c["apps_anon_mb"] == 680
    assert c["mem_total_mb"] == 500 and c["swap_total_mb"] == 100
    assert c["excess_mb"] == pytest.approx(80)
    assert c["fewest_kills"] == 1                          # chrome
    # 430 MB over: chrome, firefox, skype and launcher hold only 280
    assert capacity(spec, _run(200, 50))["fewest_kills"] is None
    # room for all: no kill needed
    roomy = capacity(spec, _run(1000, 100))
    assert roomy["excess_mb"] < 0 and roomy["fewest_kills"] == 0


def test_a_run_json_without_memtotal_gives_nothing():
    assert capacity(_spec(("chrome", 150, "cached")), {"swap_total_kb": 1}) is None


def test_runs_summary_and_report_carry_the_fewest_kills(tmp_path):
    spec = _spec(("system_server", 1000, "persistent"), ("chrome", 900, "cached"),
                 ("firefox", 400, "cached"), ("skype", 300, "cached"))
    # fakerun's guest: 2,000,000 kB of RAM and 350,000 kB of swap (2,295.9 MB)
    run_dir = write_run(tmp_path / "original-r1", kills=[])
    (run_dir / "spec.json").write_text(json.dumps(spec))
    m = metrics.load_run(run_dir)
    assert m.capacity["apps_anon_mb"] == 2600
    assert m.capacity["excess_mb"] == pytest.approx(2600 - 2_350_000 / 1024)
    assert m.capacity["fewest_kills"] == 1
    figures = summary.run_figures(m)
    assert figures[("capacity", "fewest_kills")] == 1
    # without spec.json: no figure, no failure
    bare = metrics.load_run(write_run(tmp_path / "original-r2"))
    assert bare.capacity is None
    assert not any(path[0] == "capacity" for path in summary.run_figures(bare))

    schemes = {"original": {"kills": 10, "capacity": m.capacity},
               "pmr": {"kills": 9, "capacity": m.capacity}}
    text = report.capacity_text(schemes)
    assert "add up to 2,600 MB" in text
    assert "so at least 1 app must die" in text
    assert text.endswith("original's median kills: 10, so no scheme's kills against it can "
                         "go below 0.10.")
    assert text in shortfall.evidence("kills", "pmr", "original", schemes)
    assert report.capacity_text({"original": {"kills": 10}}) is None


def test_the_text_says_when_the_apps_fit_or_cannot_fit():
    fit = {"apps_anon_mb": 100.0, "mem_total_mb": 200.0, "swap_total_mb": 50.0,
           "excess_mb": -150.0, "fewest_kills": 0}
    assert report.capacity_text({"original": {"capacity": fit}}).endswith(
        "they fit without a kill.")
    over = {**fit, "excess_mb": 900.0, "fewest_kills": None}
    assert report.capacity_text({"original": {"capacity": over}}).endswith(
        "more than every killable app holds.")
