"""regime.py: each check on synthetic numbers, the loader on synthetic
campaign and paper directories, `pmrtb regime`, and the report sections."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakerun import kill, kswapd_round, ramp, switch, trace_text, write_campaign, write_run
from pmr_testbed import paths
from pmr_testbed.errors import UserError
from pmr_testbed.report import regime
from pmr_testbed.report.campaign_report import write_report

ROOT = Path(__file__).resolve().parents[2]
MS = 1_000_000


# ---- peak_over_fio -----------------------------------------------------------


def test_peak_over_fio_is_the_median_peak_over_fio_in_the_profiles_range():
    c = regime.peak_over_fio([15.0, 12.0, 14.0], 100.0, (0.08, 0.20), "paper")
    assert c["value"] == pytest.approx(0.14) and c["pass"] and c["missing"] is None
    assert (c["lo"], c["hi"]) == (0.08, 0.20)
    assert c["inputs"]["median_reclaim_peak_mbps"] == 14.0
    assert c["inputs"]["fio_write_mbps"] == 100.0
    high = regime.peak_over_fio([50.0], 100.0, (0.08, 0.20), "paper")
    assert high["value"] == pytest.approx(0.5) and not high["pass"] and high["missing"] is None


def test_peak_over_fio_without_a_range_or_fio_never_passes():
    no_range = regime.peak_over_fio([14.0], 100.0, None, "paper")
    assert no_range["value"] == pytest.approx(0.14)
    assert not no_range["pass"] and no_range["missing"] == "no range for this profile"
    assert (no_range["lo"], no_range["hi"]) == (None, None)
    no_fio = regime.peak_over_fio([14.0], None, (0.08, 0.20), "paper")
    assert no_fio["value"] is None and not no_fio["pass"] and "fio" in no_fio["missing"]
    no_runs = regime.peak_over_fio([], 100.0, (0.08, 0.20), "paper")
    assert no_runs["value"] is None and not no_runs["pass"] and no_runs["missing"] == regime.NO_RUNS


# ---- reclaim_limited ---------------------------------------------------------

MAX_RATE = {
    "reclaim_peak_mbps": 15.0,
    "kswapd_busiest_cpu": 0.98,
    "swapout_mb": 2000.0,
    "allocator": {},
    "error": None,
}


def test_reclaim_limited_needs_the_ratio_and_a_busy_kswapd():
    c = regime.reclaim_limited(MAX_RATE, [14.0, 15.0, 16.0], [0.95, 1.0, 0.92])
    assert c["value"] == pytest.approx(1.0) and c["pass"]
    assert (c["lo"], c["hi"]) == (None, 1.10)
    assert c["inputs"]["median_kswapd_busiest_cpu"] == pytest.approx(0.95)
    assert c["inputs"]["max_rate_reclaim_peak_mbps"] == 15.0
    faster = regime.reclaim_limited(MAX_RATE | {"reclaim_peak_mbps": 30.0}, [15.0], [1.0])
    assert faster["value"] == pytest.approx(2.0) and not faster["pass"]
    idle = regime.reclaim_limited(MAX_RATE, [15.0], [0.5])
    assert idle["value"] == pytest.approx(1.0) and not idle["pass"] and idle["missing"] is None


def test_reclaim_limited_without_max_rate_is_missing():
    for max_rate, says in (
        (None, "max_rate"),
        ({**MAX_RATE, "reclaim_peak_mbps": None, "error": "guest hung"}, "failed: guest hung"),
    ):
        c = regime.reclaim_limited(max_rate, [15.0], [1.0])
        assert c["value"] is None and not c["pass"] and says in c["missing"]
    no_cpu = regime.reclaim_limited(MAX_RATE, [15.0], [None])
    assert not no_cpu["pass"] and "threads_cpu.csv" in no_cpu["missing"]


def test_kswapd_busiest_cpu_is_the_largest_1s_growth_from_a_given_time():
    t_ms = [i * 100 for i in range(51)]  # 5 s
    # 0.5 CPU for 3 s, then 1 CPU, then 0.2
    rate = [0.5] * 30 + [1.0] * 10 + [0.2] * 10
    cpu = [0.0]
    for r in rate:
        cpu.append(cpu[-1] + r / 10)
    assert regime.kswapd_busiest_cpu(t_ms, cpu) == pytest.approx(1.0)
    assert regime.kswapd_busiest_cpu(t_ms, cpu, since_ms=4000) == pytest.approx(0.2)
    assert regime.kswapd_busiest_cpu([0.0], [0.0]) is None
    # to the tick: 90 ticks read through float sums are 0.9 CPU, not 0.8999...
    assert regime.kswapd_busiest_cpu([0.0, 1000.0], [0.0, 0.8999999999999986]) == 0.9


def test_kswapd_busiest_runnable_adds_the_wait_at_the_same_samples():
    t_ms = [i * 500.0 for i in range(9)]  # 4 s
    cpu = [0.3 * i for i in range(9)]  # 0.6 CPU throughout
    # waiting 0.4 s a second in the third second only; a sample missing
    wait_t = [t for t in t_ms if t != 500.0]
    wait = [0.0, 0.0, 0.2, 0.4, 0.4, 0.4, 0.4, 0.4]
    got = regime.kswapd_busiest_runnable((t_ms, cpu), (wait_t, wait))
    assert got == pytest.approx(1.0)
    assert regime.kswapd_busiest_runnable((t_ms, cpu), (wait_t, wait), since_ms=2000) == 0.6
    assert regime.kswapd_busiest_runnable((t_ms, cpu), ([], [])) is None


def test_reclaim_limited_reports_the_runnable_second_without_judging_it():
    held = regime.reclaim_limited(MAX_RATE, [15.0], [0.7], kswapd_runnable=[0.99])
    assert not held["pass"]
    assert held["inputs"]["median_kswapd_busiest_runnable"] == pytest.approx(0.99)
    assert "runnable 0.99" in regime.ours_text(held)
    busy = regime.reclaim_limited(MAX_RATE, [15.0], [0.95], kswapd_runnable=[0.96])
    assert busy["pass"]
    plain = regime.reclaim_limited(MAX_RATE, [15.0], [0.95])
    assert plain["inputs"]["kswapd_busiest_runnable"] == []
    assert "runnable" not in regime.ours_text(plain)


# ---- demand_over_reclaim -----------------------------------------------------


def test_demand_over_reclaim_takes_the_floors_fastest_second():
    c = regime.demand_over_reclaim([40.0, 50.0], [18.0, 20.0, 22.0])
    assert c["value"] == pytest.approx(2.5) and c["pass"]
    assert (c["lo"], c["hi"]) == (1.5, None)
    slow = regime.demand_over_reclaim([20.0], [20.0])
    assert slow["value"] == pytest.approx(1.0) and not slow["pass"]


def test_demand_over_reclaim_compares_on_the_phones_clock():
    """A floor run at time_scale 0.5 grew 40 guest MB/s, 20 of the phone's;
    main at 0.4 reclaimed 20 guest MB/s, 8 of the phone's: 2.5."""
    c = regime.demand_over_reclaim([40.0], [20.0], time_scales=(0.5, 0.4))
    assert c["value"] == pytest.approx(2.5)
    assert c["inputs"]["time_scales"] == {"floor": 0.5, "main": 0.4}


def test_demand_over_reclaim_without_the_floor_is_missing():
    c = regime.demand_over_reclaim(None, [20.0])
    assert c["value"] is None and not c["pass"] and c["missing"] == regime.NO_FLOOR
    assert "floor" in c["missing"] and "pmrtb paper" in c["missing"]
    empty = regime.demand_over_reclaim([], [20.0])
    assert not empty["pass"] and "no ok original run" in empty["missing"]


# ---- sustained_kills ---------------------------------------------------------


def test_sustained_kills_pass_when_the_second_half_keeps_killing_at_the_papers_rate():
    # 20 kills evenly over 300 s: 10 and 10, 20 per 5 min
    kills = [15_000.0 * i + 5_000 for i in range(20)]
    c = regime.sustained_kills([(kills, 300_000.0)])
    assert c["value"] == pytest.approx(1.0) and c["pass"]
    run = c["inputs"]["runs"][0]
    assert (run["first_half"], run["second_half"]) == (10, 10)
    assert c["inputs"]["median_kills_per_5min"] == pytest.approx(20.0)
    assert "1 guest s = 1 / 1 phone s" in c["inputs"]["time_mapping"]


def test_sustained_kills_count_on_the_phones_clock():
    """A campaign that ran the scenario's clock at 0.25 did in 300 guest s
    what the phone does in 1,200: 120 kills there are 30 per 5 phone min,
    in range, where on the guest's clock they would be 120."""
    kills = [2_500.0 * i + 1_000 for i in range(120)]
    c = regime.sustained_kills([(kills, 300_000.0)], time_scale=0.25)
    assert c["inputs"]["median_kills_per_5min"] == pytest.approx(30.0) and c["pass"]
    assert c["inputs"]["time_scale"] == 0.25
    assert "1 guest s = 1 / 0.25 phone s" in c["inputs"]["time_mapping"]
    assert not regime.sustained_kills([(kills, 300_000.0)])["pass"]


def test_sustained_kills_fail_when_kills_stop_or_the_rate_is_off():
    early = [10_000.0 * i for i in range(1, 11)]  # 10 kills, all in the first half
    c = regime.sustained_kills([(early, 300_000.0)])
    assert c["value"] == 0.0 and not c["pass"]
    late = [200_000.0 + 1000 * i for i in range(10)]  # none in the first half
    c = regime.sustained_kills([(late, 300_000.0)])
    assert c["inputs"]["runs"][0]["ratio"] == 0.0 and not c["pass"] and c["missing"] is None
    few = [50_000.0, 250_000.0]  # even, but 2 per 5 min
    c = regime.sustained_kills([(few, 300_000.0)])
    assert c["value"] == pytest.approx(1.0) and not c["pass"]
    assert regime.sustained_kills([])["missing"] == regime.NO_RUNS


def test_sustained_kills_take_the_median_run():
    even = [15_000.0 * i + 5_000 for i in range(20)]
    runs = [(even, 300_000.0), (even, 300_000.0), ([1000.0], 300_000.0)]
    c = regime.sustained_kills(runs)
    assert c["value"] == pytest.approx(1.0) and c["pass"]


def test_kill_halves():
    assert regime.kill_halves([0.0, 49.0, 50.0, 99.0], 100.0) == (2, 2)
    assert regime.kill_halves([], 100.0) == (0, 0)


# ---- relaunch_share and cold_over_warm ---------------------------------------


def _rounds(*kinds_per_round: str) -> list[dict]:
    """Apps a and b once per round; each string is a round's two kinds (c/h)."""
    return [
        switch(app, {"c": "cold", "h": "hot"}[k], {"c": 900.0, "h": 300.0}[k], r)
        for r, kinds in enumerate(kinds_per_round)
        for app, k in zip("ab", kinds)
    ]


def test_switch_roles():
    assert regime.switch_roles(_rounds("cc", "ch", "hh")) == [
        "first",
        "first",
        "relaunch",
        "hot",
        "hot",
        "hot",
    ]


def test_relaunch_share_counts_cold_switches_after_each_apps_first():
    c = regime.relaunch_share([_rounds("cc", "ch", "hc")])
    assert c["value"] == pytest.approx(0.5) and c["pass"]
    assert c["inputs"] == {"switches": 6, "first_launches": 2, "relaunches": 2}
    pooled = regime.relaunch_share([_rounds("cc", "ch", "hh"), _rounds("cc", "hh", "hh")])
    assert pooled["value"] == pytest.approx(1 / 8) and not pooled["pass"]


def test_relaunch_share_without_relaunches_fails_and_with_one_round_is_missing():
    none = regime.relaunch_share([_rounds("cc", "hh", "hh")])
    assert none["value"] == 0.0 and not none["pass"] and none["missing"] is None
    one_round = regime.relaunch_share([_rounds("cc")])
    assert one_round["value"] is None and not one_round["pass"]
    assert "first launches" in one_round["missing"]


def test_cold_over_warm_uses_the_relaunches():
    switches = _rounds("cc", "ch", "hh")
    switches[0]["response_ms"] = 2000.0  # a first launch: not a relaunch
    c = regime.cold_over_warm([switches])
    assert c["inputs"]["cold"] == "relaunches" and c["inputs"]["cold_switches"] == 1
    assert c["value"] == pytest.approx(3.0) and c["pass"]


def test_cold_over_warm_says_on_how_many_cpus_the_heaps_filled():
    def fill(s, heap_ms, user_ms, sys_ms):
        s["cost"] = {"heap_ms": heap_ms, "fill_user_ms": user_ms, "fill_sys_ms": sys_ms}

    switches = _rounds("cc", "ch", "hh")
    fill(switches[2], 600.0, 20.0, 640.0)  # the relaunch: 660 ms of CPU in 600 ms
    fill(switches[0], 100.0, 0.0, 900.0)  # a first launch: not a relaunch
    floor = _rounds("cc")
    fill(floor[0], 400.0, 20.0, 580.0)
    fill(floor[1], 100.0, 0.0, 150.0)
    c = regime.cold_over_warm([switches], [floor])
    assert c["inputs"]["cold_fill_cpus"] == pytest.approx(1.1)
    assert c["inputs"]["floor_fill_cpus"] == pytest.approx(1.5)
    assert regime.ours_text(c) == "3.00 (heap filled on 1.10 CPUs, 1.50 without pressure)"
    # runs of a runtime without the fill's figures, and no floor
    bare = regime.cold_over_warm([_rounds("cc", "ch", "hh")])
    assert bare["inputs"]["cold_fill_cpus"] is None
    assert bare["inputs"]["floor_fill_cpus"] is None
    assert regime.ours_text(bare) == "3.00"


def test_cold_over_warm_without_relaunches_uses_every_cold_switch():
    c = regime.cold_over_warm([_rounds("cc", "hh")])
    assert c["inputs"]["cold"] == "all cold switches (no relaunch)"
    assert c["value"] == pytest.approx(3.0) and c["pass"]
    fast = _rounds("cc", "hh")
    for s in fast[2:]:
        s["response_ms"] = 600.0
    assert not regime.cold_over_warm([fast])["pass"]
    no_hot = regime.cold_over_warm([_rounds("cc")])
    assert no_hot["value"] is None and no_hot["missing"] == "no hot switch"


# ---- reported figures ----------------------------------------------------------


def _original(rep=1, **kw) -> regime.OriginalRun:
    fields = {
        "rep": rep,
        "reclaim_peak_mbps": 20.0,
        "anon_growth_peak_mbps": None,
        "kswapd_shrink_share": None,
        "round_ratios": [],
        "kswapd_busiest_cpu": None,
        "events": [],
    }
    return regime.OriginalRun(**(fields | kw))


def test_reported_figures_are_medians_and_none_without_a_trace():
    runs = [
        _original(1, kswapd_shrink_share=0.5, round_ratios=[0.1, 0.2]),
        _original(2, kswapd_shrink_share=0.6, round_ratios=[0.9]),
    ]
    share, ratio = regime.reported(runs)
    assert share["name"] == "kswapd_shrink_share" and share["value"] == pytest.approx(0.55)
    assert ratio["name"] == "nr_reclaimed_over_nr_to_reclaim"
    assert ratio["value"] == pytest.approx(0.2)
    assert "0.548" in share["paper"] and "Fig. 6" in ratio["paper"]
    untraced = regime.reported([_original()])
    assert [r["value"] for r in untraced] == [None, None]
    assert all(r["missing"] for r in untraced)


# ---- the profile's range -------------------------------------------------------


def _shipped_without_regime(name: str) -> str:
    """A shipped profile's text without its [regime] table, if it has one."""
    text = (paths.PROFILES_DIR / f"{name}.toml").read_text()
    before, _, after = text.partition("\n[regime]")
    return before + ("\n[" + after.split("\n[", 1)[1] if "\n[" in after else "") + "\n"


def test_the_range_comes_from_the_profiles_regime_table(tmp_path, monkeypatch):
    shipped = _shipped_without_regime("pixel5")
    (tmp_path / "with.toml").write_text(
        shipped.replace('name = "pixel5"', 'name = "with"')
        + "\n[regime]\npeak_over_fio = [0.25, 0.45]\n"
    )
    (tmp_path / "bad.toml").write_text(shipped + "\n[regime]\npeak_over_fio = [0.45]\n")
    (tmp_path / "without.toml").write_text(shipped)
    monkeypatch.setattr(paths, "PROFILES_DIR", tmp_path)
    assert regime.peak_over_fio_range("with") == (0.25, 0.45)
    assert regime.peak_over_fio_range("bad") is None
    assert regime.peak_over_fio_range("without") is None
    assert regime.peak_over_fio_range("no-such-profile") is None


# ---- loading synthetic directories ---------------------------------------------

WORKLOAD_S = 60
SAMPLES = [i * 100 for i in range(WORKLOAD_S * 10 + 1)]
SWITCHES = [
    switch("a", "cold", 900.0, 0),
    switch("b", "cold", 950.0, 0),
    switch("a", "cold", 950.0, 1),
    switch("b", "hot", 300.0, 1),
    switch("a", "hot", 300.0, 2),
    switch("b", "cold", 900.0, 2),
]


def _original_run(
    run_dir: Path,
    peak_mbps: float = 20.0,
    kswapd_s: float = 57.0,
    kills_at_s=(10, 20, 40, 50),
    anon_growth: int = 0,
    trace=None,
    kswapd_wait_s: float | None = None,
) -> None:
    write_run(
        run_dir,
        switches=SWITCHES,
        kills=[kill("x", "low_mem_and_swap", t_ms=t * 1000) for t in kills_at_s],
        write_sectors=ramp([peak_mbps] * WORKLOAD_S),
        sample_t_ms=SAMPLES,
        threads_cpu={"kswapd0": kswapd_s, "kcompactd0": 1.0},
        threads_wait=None if kswapd_wait_s is None else {"kswapd0": kswapd_wait_s},
        vmstat_increments={"nr_anon_pages": anon_growth},
        extra_vmstat_keys=("nr_anon_pages",),
        trace=trace,
    )


def _campaign(
    d: Path,
    *,
    reps=(1, 2, 3),
    max_rate: dict | None = MAX_RATE,
    fio: float | None = 125.0,
    profile: str = "pixel6pro",
    **run_kw,
) -> Path:
    runs = []
    for rep in reps:
        _original_run(d / "runs" / f"original-r{rep}", **run_kw)
        runs.append({"scheme": "original", "rep": rep, "status": "ok"})
    runs.append({"scheme": "pmr", "rep": 1, "status": "failed", "error": "x"})
    write_campaign(
        d,
        ["original", "pmr"],
        runs,
        reps=len(reps),
        scenario="paper",
        profile=profile,
        swap_bandwidth=None if fio is None else {"write_mbps": fio, "fio": {}, "error": None},
    )
    if max_rate is not None:
        c = json.loads((d / "campaign.json").read_text())
        c["max_rate"] = max_rate
        (d / "campaign.json").write_text(json.dumps(c))
    return d


@pytest.fixture
def ranged_pixel6pro(tmp_path, monkeypatch):
    """pixel6pro with a [regime] range, whatever the shipped file says."""
    profiles_dir = tmp_path / "profiles"
    profiles_dir.mkdir()
    (profiles_dir / "pixel6pro.toml").write_text(
        _shipped_without_regime("pixel6pro") + "\n[regime]\npeak_over_fio = [0.08, 0.20]\n"
    )
    monkeypatch.setattr(paths, "PROFILES_DIR", profiles_dir)


def _by_name(result: dict) -> dict[str, dict]:
    return {c["name"]: c for c in result["checks"]}


def test_kswapd_runnable_from_threads_wait_csv(tmp_path, ranged_pixel6pro):
    # kswapd0 on a CPU 0.7 of every second, waiting for one 0.25 of it
    d = _campaign(tmp_path / "c", kswapd_s=42.0, kswapd_wait_s=15.0)
    limited = _by_name(regime.regime(d))["reclaim_limited"]
    assert limited["inputs"]["median_kswapd_busiest_cpu"] == pytest.approx(0.7, abs=0.011)
    assert limited["inputs"]["kswapd_busiest_runnable"] == pytest.approx([0.95] * 3, abs=0.011)
    assert not limited["pass"]


def test_a_campaign_directory(tmp_path, ranged_pixel6pro):
    d = _campaign(tmp_path / "c")
    result = regime.regime(d)
    assert result["profile"] == "pixel6pro"
    assert result["source"] == {
        "layout": "campaign",
        "main": {"dir": ".", "profile": "pixel6pro", "original_reps": [1, 2, 3]},
        "floor": None,
    }
    checks = _by_name(result)
    assert list(checks) == list(regime.CHECKS)
    assert checks["peak_over_fio"]["value"] == pytest.approx(20.0 / 125.0)
    assert checks["peak_over_fio"]["pass"]
    limited = checks["reclaim_limited"]
    assert limited["value"] == pytest.approx(15.0 / 20.0, rel=0.01)
    # kswapd0's 57 s over 60 s: 0.95 CPU in every second (kcompactd0 left out)
    assert limited["inputs"]["median_kswapd_busiest_cpu"] == pytest.approx(0.95, abs=0.011)
    assert limited["pass"]
    # no threads_wait.csv (a runtime before it): nothing runnable to report
    assert limited["inputs"]["median_kswapd_busiest_runnable"] is None
    assert checks["demand_over_reclaim"]["missing"].startswith(regime.NO_FLOOR)
    kills = checks["sustained_kills"]
    assert kills["value"] == pytest.approx(1.0)
    # 4 kills in the 60 s to the last event (fakerun's `done` phase): 20 per 5 min
    assert kills["inputs"]["median_kills_per_5min"] == pytest.approx(20.0)
    assert kills["pass"]
    share = checks["relaunch_share"]
    assert share["inputs"] == {"switches": 18, "first_launches": 6, "relaunches": 6}
    assert share["value"] == pytest.approx(0.5) and share["pass"]
    warm = checks["cold_over_warm"]
    assert warm["inputs"]["cold"] == "relaunches"
    assert warm["value"] == pytest.approx(925.0 / 300.0) and warm["pass"]
    assert [r["value"] for r in result["reported"]] == [None, None]
    # the guest's speeds that day, without a CPU work scale in this campaign
    assert result["host"] == {
        "guest_ns_per_page": 40.0,
        "guest_fault_ns_per_page": None,
        "guest_work_iters_per_ms": None,
        "time_scale": None,
    }
    assert "touched memory at 40 ns per page (dilation.py)" in "\n".join(
        regime.markdown_lines(result)
    )
    path = regime.write_regime(d)
    assert path == d / "regime.json"
    assert json.loads(path.read_text()) == json.loads(json.dumps(result))


def test_missing_measurements_are_named_never_passed(tmp_path):
    d = _campaign(tmp_path / "c", max_rate=None, fio=None, profile="pixel6pro-mini")
    checks = _by_name(regime.regime(d))
    for name in ("peak_over_fio", "reclaim_limited", "demand_over_reclaim"):
        assert checks[name]["value"] is None and not checks[name]["pass"]
        assert checks[name]["missing"]
    assert "max_rate" in checks["reclaim_limited"]["missing"]
    assert "fio" in checks["peak_over_fio"]["missing"]


def test_kswapd_rounds_are_reported(tmp_path):
    trace = trace_text(
        [
            kswapd_round(t, 1000, reclaimed, 10 * MS)
            for t, reclaimed in ((5.0, 200), (6.0, 600), (7.0, 400))
        ],
        missing=("vmscan/mm_vmscan_writeback_time",),
    )
    d = _campaign(tmp_path / "c", reps=(1,), trace=trace)
    share, ratio = regime.regime(d)["reported"]
    assert share["value"] is None  # writeback untraced: no split
    assert ratio["value"] == pytest.approx(0.4)


def test_a_paper_directory_reads_main_and_floor(tmp_path, ranged_pixel6pro):
    out = tmp_path / "paper"
    _campaign(out / "main")
    floor_runs = []
    for rep, anon_pages in ((1, 600_000), (2, 300_000)):
        # nr_anon_pages rises linearly over the 60 s: 10,000 pages (39 MB) a second at most
        _original_run(
            out / "floor" / "runs" / f"original-r{rep}", kills_at_s=(), anon_growth=anon_pages
        )
        floor_runs.append({"scheme": "original", "rep": rep, "status": "ok"})
    write_campaign(
        out / "floor", ["original"], floor_runs, reps=2, scenario="paper", profile="pixel6pro-roomy"
    )
    result = regime.regime(out)
    assert result["source"]["layout"] == "paper"
    assert result["source"]["main"]["dir"] == "main"
    assert result["source"]["floor"] == {
        "dir": "floor",
        "profile": "pixel6pro-roomy",
        "original_reps": [1, 2],
    }
    demand = _by_name(result)["demand_over_reclaim"]
    assert demand["inputs"]["demand_mbps"] == pytest.approx(600_000 * 4096 / 2**20 / 60, rel=0.01)
    assert demand["value"] == pytest.approx(39.06 / 20.0, rel=0.02) and demand["pass"]
    # a paper output without floor (quick mode)
    shutil.rmtree(out / "floor")
    demand = _by_name(regime.regime(out))["demand_over_reclaim"]
    assert demand["missing"] == regime.NO_FLOOR and not demand["pass"]


def test_neither_a_campaign_nor_a_paper_output_is_refused(tmp_path):
    with pytest.raises(UserError, match="neither a campaign"):
        regime.regime(tmp_path)


def test_a_campaign_without_an_ok_original_run_is_refused(tmp_path):
    d = tmp_path / "c"
    write_run(d / "runs" / "pmr-r1")
    write_campaign(
        d,
        ["original", "pmr"],
        [
            {"scheme": "original", "rep": 1, "status": "failed"},
            {"scheme": "pmr", "rep": 1, "status": "ok"},
        ],
        reps=1,
    )
    with pytest.raises(UserError, match="no ok original run"):
        regime.regime(d)


# ---- pmrtb regime ------------------------------------------------------------------


def pmrtb(*args):
    return subprocess.run(
        [sys.executable, "-m", "pmr_testbed.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "harness"), "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )


def test_cli_bad_input_is_one_line_and_writes_nothing(tmp_path):
    res = pmrtb("regime", str(tmp_path))
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2, res.stderr
    assert len(lines) == 1 and lines[0].startswith("pmrtb: error: ")
    assert "neither a campaign" in lines[0]
    assert not (tmp_path / "regime.json").exists()
    d = tmp_path / "c"
    write_campaign(d, ["pmr"], [{"scheme": "pmr", "rep": 1, "status": "failed"}], reps=1)
    res = pmrtb("regime", str(d))
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1 and "no ok original run" in lines[0]
    assert not (d / "regime.json").exists()


def test_cli_writes_regime_json_and_a_table_and_exits_0_when_checks_fail(tmp_path):
    d = _campaign(tmp_path / "c", reps=(1,), max_rate=None)
    res = pmrtb("regime", str(d))
    assert res.returncode == 0, res.stderr
    assert (d / "regime.json").exists()
    for name in regime.CHECKS:
        assert name in res.stdout
    assert "not measured" in res.stdout and "regime.json" in res.stdout


# ---- the reports ---------------------------------------------------------------------


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}")[1].split("\n## ")[0]


def test_report_md_has_a_regime_section_from_the_campaign_alone(tmp_path, ranged_pixel6pro):
    d = _campaign(tmp_path / "c", reps=(1, 2), max_rate=None)
    md = write_report(d).read_text()
    assert md.index("## Regime") < md.index("## Versus original")
    section = _section(md, "Regime")
    rows = {
        line.split(" | ")[0].strip("| "): line
        for line in section.splitlines()
        if line.startswith("| ") and "---" not in line
    }
    assert set(rows) == {"check", *regime.CHECKS}
    assert "✅ pass" in rows["peak_over_fio"] and "0.08–0.2" in rows["peak_over_fio"]
    assert "not measured" in rows["reclaim_limited"]
    assert "not measured" in rows["demand_over_reclaim"]
    assert "(20.0 kills / 5 min, 13–52)" in rows["sustained_kills"]
    assert f"- `demand_over_reclaim`: {regime.NO_FLOOR}" in section
    assert "- `reclaim_limited`: needs the max-rate" in section
    assert "Reported without a range: kswapd_shrink_share –" in section
    saved = json.loads((d / "regime.json").read_text())
    assert saved["source"]["main"]["original_reps"] == [1, 2]


def test_report_md_of_a_campaign_without_original(tmp_path):
    d = tmp_path / "c"
    write_run(d / "runs" / "pmr-r1")
    write_campaign(d, ["pmr"], [{"scheme": "pmr", "rep": 1, "status": "ok"}], reps=1)
    md = write_report(d).read_text()
    assert f"Not measured: {regime.NO_RUNS}." in _section(md, "Regime")


def test_a_failing_check_shows_as_failed():
    result = regime.evaluate(
        regime.CampaignInputs(
            Path("."),
            "pixel6pro",
            None,
            None,
            [
                _original(
                    events=[
                        switch("a", "cold", 900.0),
                        {"t_ms": 60_000, "type": "phase", "phase": "done"},
                    ]
                )
            ],
        ),
        None,
        {"layout": "campaign", "main": {"original_reps": [1]}, "floor": None},
    )
    lines = regime.markdown_lines(result)
    row = next(ln for ln in lines if ln.startswith("| sustained_kills"))
    assert "❌ fail" in row and "0.00 (0.00 kills / 5 min" in row
    # one run of original: its values, not medians, and the table says so
    assert regime.ONE_RUN in lines


def test_several_runs_need_no_one_run_caveat(tmp_path, ranged_pixel6pro):
    assert regime.ONE_RUN not in regime.markdown_lines(regime.regime(_campaign(tmp_path / "c")))


def test_host_speeds_come_from_the_dilation_and_the_time_scale():
    campaign = {
        "dilation": {
            "guest_ns_per_page": 340.0,
            "guest_fault_ns_per_page": 27_000.0,
            "guest_work_iters_per_ms": 360e3,
        },
        "time_scale": 0.5,
    }
    host = regime.host_speeds(campaign)
    assert host == {
        "guest_ns_per_page": 340.0,
        "guest_fault_ns_per_page": 27_000.0,
        "guest_work_iters_per_ms": 360e3,
        "time_scale": 0.5,
    }
    assert regime.host_speeds({"dilation": {"factor": 8.0}}) is None
    line = regime.markdown_lines(
        {
            "source": {"main": {"original_reps": [1]}},
            "profile": "pixel6pro",
            "checks": [],
            "reported": [],
            "host": host,
        }
    )[-2]
    assert "340 ns per page and faulted at 27,000" in line and "0.50 x its guest ms" in line
