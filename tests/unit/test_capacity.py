"""The kills no scheme can avoid: the apps' footprints against RAM and swap."""

import json

import pytest

from fakerun import write_run
from pmr_testbed.analysis import metrics
from pmr_testbed.analysis.capacity import capacity, fewest_kills
from pmr_testbed.report import campaign_report, shortfall, summary


def _spec(*apps: tuple[str, float, str]) -> dict:
    return {"apps": [{"name": n, "anon_mb": mb, "adj_class": c} for n, mb, c in apps]}


def _run(mem_mb: float, swap_mb: float) -> dict:
    return {"mem_total_kb": int(mem_mb * 1024), "swap_total_kb": int(swap_mb * 1024)}


def test_the_largest_apps_first_take_the_fewest_kills():
    assert fewest_kills([10, 50, 20, 40], 55) == 2  # 50 + 40, not 10 + 20 + 40
    assert fewest_kills([10, 50, 20, 40], 50) == 1  # reaching it exactly is enough
    assert fewest_kills([10, 50], 0) == 0
    assert fewest_kills([10, 50], -5) == 0
    assert fewest_kills([10, 50], 61) is None  # more than every app holds
    assert fewest_kills([], 1) is None


def test_persistent_apps_are_never_counted_as_victims():
    spec = _spec(
        ("system_server", 400, "persistent"),
        ("launcher", 30, "service"),
        ("chrome", 150, "cached"),
        ("firefox", 60, "cached"),
        ("skype", 40, "cached"),
    )
    c = capacity(spec, _run(500, 100), 0)
    assert c["apps_anon_mb"] == 680
    assert c["mem_total_mb"] == 500 and c["swap_total_mb"] == 100
    assert c["excess_mb"] == pytest.approx(80)
    assert c["fewest_kills"] == 1  # chrome
    assert c["oom_kills"] == 0
    # 430 MB over: chrome, firefox, skype and launcher hold only 280
    assert capacity(spec, _run(200, 50), 0)["fewest_kills"] is None
    # room for all: no kill needed
    roomy = capacity(spec, _run(1000, 100), None)
    assert roomy["excess_mb"] < 0 and roomy["fewest_kills"] == 0


def test_a_run_json_without_memtotal_gives_nothing():
    assert capacity(_spec(("chrome", 150, "cached")), {"swap_total_kb": 1}, 0) is None


SPEC = _spec(
    ("system_server", 1000, "persistent"),
    ("chrome", 900, "cached"),
    ("firefox", 400, "cached"),
    ("skype", 300, "cached"),
)


def _run_with_spec(run_dir, **kwargs):
    write_run(run_dir, **kwargs)
    (run_dir / "spec.json").write_text(json.dumps(SPEC))
    return run_dir


def test_runs_and_the_summary_carry_the_fewest_kills(tmp_path):
    # fakerun's guest: 2,000,000 kB of RAM and 350,000 kB of swap (2,295 MB)
    m = metrics.load_run(
        _run_with_spec(
            tmp_path / "original-r1",
            vmstat_increments={"oom_kill": 2},
            extra_vmstat_keys=["oom_kill"],
        )
    )
    assert m.capacity["apps_anon_mb"] == 2600
    assert m.capacity["excess_mb"] == pytest.approx(2600 - 2_350_000 / 1024)
    assert m.capacity["fewest_kills"] == 1
    assert m.capacity["oom_kills"] == 2
    assert summary.run_figures(m)[("capacity", "fewest_kills")] == 1
    # without spec.json: no figure, no failure; without oom_kill in vmstat: None
    bare = metrics.load_run(write_run(tmp_path / "original-r2"))
    assert bare.capacity is None
    assert not any(path[0] == "capacity" for path in summary.run_figures(bare))
    assert metrics.load_run(_run_with_spec(tmp_path / "r3")).capacity["oom_kills"] is None
    # a scheme whose runs have it and lack it takes it from those that have it
    entry = summary.scheme_entry([summary.Run(1, m), summary.Run(2, bare)])
    assert entry["capacity"]["fewest_kills"] == 1
    assert "capacity" not in summary.scheme_entry([summary.Run(1, bare)])


def _c(**figures) -> dict:
    return {
        "apps_anon_mb": 2600.0,
        "mem_total_mb": 1953.1,
        "swap_total_mb": 341.8,
        "excess_mb": 305.1,
        "fewest_kills": 1,
        "oom_kills": 0,
        **figures,
    }


def test_the_report_and_the_shortfall_bound_the_kills_ratio():
    schemes = {"original": {"kills": 10, "capacity": _c()}, "pmr": {"kills": 9, "capacity": _c()}}
    text = campaign_report.capacity_text(schemes)
    assert "add up to 2,600 MB" in text
    assert "305 MB more than both, so at least 1 app must die" in text
    assert text.endswith(
        "original's median kills: 10, so no scheme's kills against it can go below 0.10."
    )
    assert campaign_report.capacity_kills_floor(schemes) == pytest.approx(0.1)
    assert (
        "the apps' anonymous footprints exceed RAM and swap by 305 MB: at least 1 must die "
        "whatever the reclaim, so no scheme's kills against original can go below 0.10"
    ) in shortfall.evidence("kills", "pmr", "original", schemes)
    # another scheme's figures serve when the base has none
    assert campaign_report.capacity_entry({"original": {"kills": 10}, "pmr": {"capacity": _c()}})
    assert campaign_report.capacity_text({"original": {"kills": 10}}) is None


def test_oom_kills_void_the_bound_on_lmkds_count():
    schemes = {"original": {"kills": 10, "capacity": _c(fewest_kills=3, oom_kills=2)}}
    text = campaign_report.capacity_text(schemes)
    assert "at least 3 apps must die" in text
    assert text.endswith(
        "The kernel's OOM killer killed 2 processes too, deaths that lmkd's kill count leaves out."
    )
    assert campaign_report.capacity_kills_floor(schemes) is None
    assert (
        "the apps' anonymous footprints exceed RAM and swap by 305 MB: at least 3 must "
        "die whatever the reclaim (the OOM killer killed 2 processes too)"
    ) in shortfall.evidence("kills", "pmr", "original", schemes)


def test_the_text_says_when_the_apps_fit_or_cannot_fit():
    fit = _c(excess_mb=-150.0, fewest_kills=0)
    assert campaign_report.capacity_text({"original": {"capacity": fit}}).endswith(
        "they fit without a kill."
    )
    over = _c(excess_mb=900.0, fewest_kills=None)
    assert campaign_report.capacity_text({"original": {"capacity": over}}).endswith(
        "more than every killable app holds."
    )
    assert not any(
        "must die" in f
        for f in shortfall.evidence("kills", "pmr", "original", {"original": {"capacity": over}})
    )
