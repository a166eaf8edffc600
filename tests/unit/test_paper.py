"""config/paper.py, workflows/paper.py and report/paper_report.py: `pmrtb
paper`'s plan, resuming, ratios and paper.md, over fake campaigns (no guest
is booted: the campaign runner is faked)."""

import dataclasses
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakerun import (
    PMR_VMSTAT_KEYS,
    RUN_WALL_S,
    CutOff,
    fake_campaign_runner,
    kswapd_round,
    ramp,
    switch,
    trace_line,
    trace_text,
    write_campaign,
    write_run,
    writeback_time,
)
from pmr_testbed import paths
from pmr_testbed.analysis.significance import permutation_p
from pmr_testbed.config import paper, profiles
from pmr_testbed.config.sweep import parse_name
from pmr_testbed.errors import UserError
from pmr_testbed.guest import dilation
from pmr_testbed.report import campaign_report, paper_report, regime, shortfall
from pmr_testbed.workflows import paper as paper_run

ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MS = 1_000_000

# ---- planning --------------------------------------------------------------


def _delta_kb(scheme: str) -> int:
    return int(dict(parse_name(scheme)[0].overrides)[paper.DELTA_KEY])


def test_quick_plan(tmp_path):
    p = paper.plan(tmp_path / "out", mode="quick")
    assert (p.reps, p.seed) == (1, 1)
    # no sweeps: quick mode checks the regime and shows pmr's direction
    assert [c.name for c in p.campaigns] == ["main", "devices", "floor"]
    assert p.delta == [] and not p.unit_from_delta
    by_name = {c.name: c for c in p.campaigns}
    # pmr's direction, against original and Acclaim, the paper's baseline
    assert by_name["main"].schemes == paper.QUICK_MAIN_SCHEMES == ("original", "acclaim", "pmr")
    assert (by_name["main"].profile, by_name["devices"].profile) == ("pixel6pro", "pixel5")
    # devices for pixel5's peak_over_fio; pmr's Fig. 14 waits for full mode
    assert by_name["devices"].schemes == paper.QUICK_DEVICE_SCHEMES == ("original",)
    # the regime's demand_over_reclaim needs the floor
    assert (by_name["floor"].profile, by_name["floor"].schemes) == (
        "pixel6pro-roomy",
        ("original",),
    )
    assert all(c.reps == 1 for c in p.campaigns)
    # relaunches need rounds after the first: main runs several, the others one
    assert by_name["main"].rounds == paper.QUICK_MAIN_ROUNDS >= 2
    assert by_name["devices"].rounds == by_name["floor"].rounds == 1
    # main and devices end with the fio boot (the regime's peak_over_fio on
    # both profiles), main with the max-rate boot too (reclaim_limited)
    assert [c.name for c in p.campaigns if c.swap_bandwidth] == ["main", "devices"]
    assert [c.name for c in p.campaigns if c.max_rate] == ["main"]
    assert paper_run.request(by_name["main"], p.out, 1).swap_bandwidth
    assert not paper_run.request(by_name["floor"], p.out, 1).swap_bandwidth


def test_full_plan_runs_the_headline_schemes(tmp_path, monkeypatch):
    schemes_dir = tmp_path / "schemes"
    shutil.copytree(paths.SCHEMES_DIR, schemes_dir)
    (schemes_dir / "ice.toml").write_text('name = "ice"\ndescription = "Ice"\npolicies = ["ice"]\n')
    monkeypatch.setattr(paths, "SCHEMES_DIR", schemes_dir)
    p = paper.plan(tmp_path / "out")
    assert p.mode == "full" and not p.quick
    by_name = {c.name: c for c in p.campaigns}
    assert list(by_name) == ["main", "devices", "delta", "unit-pixel6pro", "floor"]
    # the headline ratios' schemes; pps (the ablation) runs in devices
    assert by_name["main"].schemes == paper.FULL_MAIN_SCHEMES
    assert paper.FULL_MAIN_SCHEMES == ("original", "mglru", "acclaim", "pmr")
    assert "pps" in by_name["devices"].schemes
    # every scheme file (but the modifiers and SWAM's, made for a zram+flash
    # profile) runs in thorough mode, the paper's first
    assert paper.plan(tmp_path / "t", mode="thorough").campaign("main").schemes == (
        "original",
        "mglru",
        "acclaim",
        "pps",
        "pmr",
        "acclaim-static",
        "ice",
        "ice-plus",
        "ice-us",
        "kswapd-threads",
        "skew",
    )
    # the headline ratios get their repetitions, the figures beside them one
    assert p.reps == by_name["main"].reps == 3
    assert (by_name["main"].rounds, by_name["devices"].rounds) == (10, 2)
    assert by_name["devices"].reps == by_name["delta"].reps == by_name["unit-pixel6pro"].reps == 1
    assert by_name["delta"].rounds == by_name["unit-pixel6pro"].rounds == 2
    assert [d.multiple for d in p.delta] == [1, 3, 5]
    # pmr as it is (delta 3x, the profile's 16 MB) runs once, in delta, for both sweeps
    assert p.unit_from_delta and p.main_unit_kb == 16384
    assert by_name["delta"].schemes == tuple(d.scheme for d in p.delta)
    assert by_name["delta"].schemes[1] == "pmr" and p.delta[1].multiple == 3
    assert by_name["unit-pixel6pro"].schemes == tuple(
        f"pmr@unmap_unit_kbytes={kb}" for kb in (64, 1024)
    )
    floor = by_name["floor"]
    assert (floor.profile, floor.schemes, floor.reps, floor.rounds) == (
        "pixel6pro-roomy",
        ("original",),
        1,
        2,
    )
    four = paper.plan(tmp_path / "out", reps=4)
    assert four.reps == four.campaign("main").reps == 4 and four.campaign("delta").reps == 1


def test_peers_join_main_and_the_estimate(tmp_path):
    full, with_peers = paper.plan(tmp_path / "a"), paper.plan(tmp_path / "b", peers=True)
    assert with_peers.campaign("main").schemes == (*paper.FULL_MAIN_SCHEMES, *paper.PEER_SCHEMES)
    # only main changes, and it costs `reps` more runs per peer
    assert [c for c in with_peers.campaigns if c.name != "main"] == [
        c for c in full.campaigns if c.name != "main"
    ]
    extra = paper.estimate_s(with_peers.campaign("main")) - paper.estimate_s(full.campaign("main"))
    assert extra == pytest.approx(
        3 * len(paper.PEER_SCHEMES) * paper.run_seconds(paper.MAIN_PROFILE, 10)
    )
    quick = paper.plan(tmp_path / "q", mode="quick", peers=True)
    assert quick.campaign("main").schemes == ("original", "acclaim", "pmr", *paper.PEER_SCHEMES)
    # thorough runs every scheme file already: no scheme twice
    thorough = paper.plan(tmp_path / "t", mode="thorough", peers=True).campaign("main").schemes
    assert len(thorough) == len(set(thorough)) and "kswapd-threads" in thorough


def test_a_missing_peer_is_refused(tmp_path, monkeypatch):
    schemes_dir = tmp_path / "schemes"
    shutil.copytree(paths.SCHEMES_DIR, schemes_dir)
    (schemes_dir / "kswapd-threads.toml").unlink()
    monkeypatch.setattr(paths, "SCHEMES_DIR", schemes_dir)
    paper.plan(tmp_path / "ok")  # the peers are asked for only with --peers
    with pytest.raises(UserError, match=r"schemes/kswapd-threads.toml is missing"):
        paper.plan(tmp_path / "out", peers=True)


def test_thorough_plan_runs_everything_at_every_rep(tmp_path):
    p = paper.plan(tmp_path / "out", mode="thorough")
    by_name = {c.name: c for c in p.campaigns}
    assert list(by_name) == ["main", "devices", "delta", "unit-pixel6pro", "unit-pixel5", "floor"]
    floor = by_name["floor"]
    assert (floor.profile, floor.schemes, floor.rounds) == ("pixel6pro-roomy", ("original",), 10)
    assert p.reps == 3 and all(c.reps == 3 for c in p.campaigns)
    assert p.unit_from_delta and "pmr" in by_name["delta"].schemes
    assert (by_name["main"].rounds, by_name["devices"].rounds) == (10, 10)
    assert by_name["delta"].rounds == by_name["unit-pixel5"].rounds == 4
    assert [d.multiple for d in p.delta] == [1, 2, 3, 4, 5]
    assert by_name["unit-pixel5"].profile == "pixel5"
    # pixel6pro's own unit (16 MB) comes from delta; pixel5 runs every unit
    assert by_name["unit-pixel5"].schemes == (
        *by_name["unit-pixel6pro"].schemes,
        "pmr@unmap_unit_kbytes=16384",
    )
    assert len(by_name["unit-pixel5"].schemes) == 5


def _kernel_high_watermark_pages(ram_mb: int, min_free_kb: int, wsf: int) -> float:
    """Linux 6.1's __setup_per_zone_wmarks for one zone holding all of RAM."""
    managed = ram_mb * 256
    pages_min = min_free_kb // 4
    gap = max(pages_min / 4, managed * wsf / 10000)
    return pages_min + 2 * gap


def test_delta_is_computed_from_the_guests_high_watermark(tmp_path):
    prof = profiles.load("pixel6pro")
    wm = prof.watermarks()
    high = _kernel_high_watermark_pages(
        prof.guest_ram_mb, wm["min_free_kbytes"], wm["watermark_scale_factor"]
    )
    p = paper.plan(tmp_path / "out")
    assert p.nr_to_reclaim_pages == pytest.approx(high, abs=1)
    # within what the 3 GB guest's kernel reports: nr_to_reclaim of 9,412,
    # 9,924 and 10,436 pages in original's kswapd rounds (~37-41 MB)
    assert 9412 <= p.nr_to_reclaim_pages <= 10436
    three = next(d for d in p.delta if d.multiple == 3)
    assert three.kbytes == 3 * p.nr_to_reclaim_pages * 4
    # 3x is the kernel's default, run as plain pmr; the others name their delta
    assert three.scheme == paper.DEFAULT_PMR
    assert all(_delta_kb(d.scheme) == d.kbytes for d in p.delta if d.multiple != 3)
    assert [d.kbytes for d in p.delta] == [k * p.nr_to_reclaim_pages * 4 for k in (1, 3, 5)]
    # it follows the profile: a phone with a higher watermark share gets a larger delta
    higher = dataclasses.replace(prof, high_watermark_pages=2 * prof.high_watermark_pages)
    assert paper.guest_high_watermark_pages(higher) > 1.8 * p.nr_to_reclaim_pages


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"reps": 0, "mode": "quick"}, "--reps must be at least 1"),
        ({"reps": 2}, "the full evaluation needs --reps 3 or more"),
        ({"reps": 1, "mode": "thorough"}, "the thorough evaluation needs --reps 3 or more"),
        ({"mode": "fast"}, "unknown mode 'fast': use one of quick, full, thorough"),
    ],
)
def test_bad_plans_are_refused(tmp_path, kwargs, message):
    with pytest.raises(UserError, match=re.escape(message)):
        paper.plan(tmp_path / "out", **kwargs)


def test_out_must_be_a_directory(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="not a directory"):
        paper.plan(tmp_path / "file", mode="quick")


def test_estimates(tmp_path):
    plans = {m: paper.plan(tmp_path / m, mode=m) for m in paper.MODES}
    total = {m: sum(paper.estimate_s(c) for c in p.campaigns) for m, p in plans.items()}
    # the estimate is RUN_S's fixed time plus its time per round, per run
    for profile, (fixed, per_round) in paper.RUN_S.items():
        assert paper.run_seconds(profile, 10) == pytest.approx(fixed + 10 * per_round)
        assert paper.run_seconds(profile, 1) == pytest.approx(fixed + per_round)
    for c in (c for p in plans.values() for c in p.campaigns):
        assert paper.estimate_s(c) == pytest.approx(
            paper.CAMPAIGN_OVERHEAD_S
            + c.runs * paper.run_seconds(c.profile, c.rounds)
            + (paper.SWAP_BANDWIDTH_S if c.name in ("main", "devices") else 0)
            + (paper.MAX_RATE_S if c.name == "main" else 0)
        )
    # quick and full are planned to fit their 20 min and 2 h budgets;
    # thorough has no budget and takes more than twice full's
    assert total["quick"] <= 20 * 60 and plans["quick"].target_s == 20 * 60
    assert total["full"] <= 120 * 60 and plans["full"].target_s == 120 * 60
    assert plans["thorough"].target_s is None and total["thorough"] > 2 * total["full"]
    for m in ("quick", "full"):
        assert "over" not in paper.estimate_lines(plans[m], {})[-1]
    # a larger --reps can push full over its budget, and the estimate says so
    seven = paper.plan(tmp_path / "seven", reps=7)
    lines = paper.estimate_lines(seven, {"main": "finished"})
    assert "over the 2 h target" in lines[-1]
    assert "[finished: skipped]" in next(ln for ln in lines if ln.strip().startswith("main"))
    remaining = sum(paper.estimate_s(c) for c in seven.campaigns) - paper.estimate_s(
        seven.campaign("main")
    )
    assert f"~{paper.duration_text(remaining)} still to run" in lines[-1]
    assert "target" not in paper.estimate_lines(plans["thorough"], {})[-1]


# ---- fake campaigns ------------------------------------------------------------

# per scheme: mean response ms, peak MB/s, kills, allocstall, kswapd s, kshrinkd s,
# pswpout pages, kswapd round ms and its writeback ms (None: no trace)
FIGURES = {
    "original": (1000, 20, 10, 100, 10.0, None, 25600, (10, 4)),
    "mglru": (900, 22, 8, 80, 8.0, None, 24000, None),
    "pps": (700, 30, 4, 50, 5.0, 5.2, 27000, (6, 2)),
    "pmr": (450, 36, 1, 60, 6.0, 4.5, 27000, (5, 1)),
    # the paper's baseline in Figs. 11-13
    "acclaim": (680, 21, 3, 110, 9.0, None, 25000, None),
    # a peer (--peers): its 14 s of kswapd CPU split over two threads
    "kswapd-threads": (800, 26, 6, 40, 14.0, None, 26000, None),
}
# pmr's response time and peak throughput per rep: ratios 0.44, 0.45, 0.47 and 1.8, 1.8, 2.1
PMR_RESPONSE = {1: 440, 2: 450, 3: 470}
PMR_PEAK = {1: 36, 2: 36, 3: 42}
# the floor campaign's apps (no memory pressure) grow their anonymous memory
# by this many pages over a 4-s run, evenly: 40 MB/s, twice original's 20 MB/s peak
FLOOR_ANON_PAGES = 40 * 4 * 256


def make_run(profile: str, scheme: str, rep: int) -> dict:
    (part,) = parse_name(scheme)
    resp, peak, kills, allocstall, kswapd, kshrinkd, pswpout, rounds = FIGURES[part.base]
    if part.base == "pmr":
        resp, peak = PMR_RESPONSE[rep], PMR_PEAK[rep]
    overrides = dict(part.overrides)
    if paper.DELTA_KEY in overrides:  # delta: response grows with delta
        resp = 300 + int(overrides[paper.DELTA_KEY]) / 1000
    if paper.UNIT_KEY in overrides:  # unit: best at 1 MB
        peak = 50 - 5 * abs(math.log2(int(overrides[paper.UNIT_KEY]) / 1024))
    if profile == "pixel5":
        peak *= 0.8
    events = []
    if rounds:
        duration, wb = rounds
        events = [
            writeback_time(1.5, 32, (wb - 1) * MS, 32, 1 * MS),
            kswapd_round(1.505, 6556, 3000, duration * MS),
        ]
        if kshrinkd:
            events.append(
                trace_line(
                    2.0,
                    "mm_vmscan_kshrinkd_round",
                    {
                        "nid": 0,
                        "nr_to_shrink": 6556,
                        "nr_scanned": 9000,
                        "nr_added": 6556,
                        "nr_victim": 19668,
                        "target": 19668,
                    },
                    task="kshrinkd0",
                    pid=38,
                )
            )
    threads = {"kswapd0": kswapd, **({"kshrinkd0": kshrinkd} if kshrinkd else {})}
    if part.base == "kswapd-threads":  # vm.kswapd_threads=2: kswapd0 and kswapd0:1
        threads = {"kswapd0": kswapd / 2, "kswapd0:1": kswapd / 2}
    vmstat = {"allocstall_normal": allocstall, "pswpout": pswpout}
    vmstat_keys = PMR_VMSTAT_KEYS
    if profile == paper.FLOOR_PROFILE:  # the floor: how fast the apps demand memory
        vmstat["nr_anon_pages"] = FLOOR_ANON_PAGES
        vmstat_keys = [*PMR_VMSTAT_KEYS, "nr_anon_pages"]
    return {
        "switches": [switch("chrome", "cold", resp, 0), switch("youtube", "hot", resp, 0)],
        "kills": [
            {
                "t_ms": 3000,
                "type": "kill",
                "app": "x",
                "pid": 1,
                "adj": 950,
                "rss_kb": 1,
                "level": "medium",
                "reason": "r",
            }
        ]
        * kills,
        "vmstat_increments": vmstat,
        "write_sectors": ramp([0, peak / 2, peak, 0]),
        "threads_cpu": threads,
        "extra_vmstat_keys": vmstat_keys,
        "trace": trace_text(events) if rounds else None,
    }


def _no_progress(msg, finished):
    pass


def _run(p, runner):
    said = []
    result = paper_run.run(p, _no_progress, runner=runner, say=said.append)
    return result, said


@pytest.fixture(scope="module")
def quick_out(tmp_path_factory):
    """A quick evaluation run once with fake campaigns: main, devices and
    floor, original and pmr only (no pps)."""
    out = tmp_path_factory.mktemp("paper") / "out"
    p = paper.plan(out, mode="quick")
    runner = fake_campaign_runner(make_run)
    result, _ = _run(p, runner)
    return p, result, runner


# Quick mode runs no sweeps: paper.md's sweep figures are tested in a mode
# that runs them at quick's size.
SWEEPS_MODE = paper.Mode(
    "sweeps",
    default_reps=1,
    min_reps=1,
    target_s=None,
    main_rounds=1,
    main_schemes=("original", "pmr"),
    device_schemes=("original", "pmr"),
    device_reps=None,
    device_rounds=1,
    sweep_reps=None,
    sweep_rounds=1,
    delta_multiples=(1, 3),
    units_kb=(1024, 16384),
    other_unit_sweep=False,
    floor=True,
    floor_reps=1,
    floor_rounds=1,
)


@pytest.fixture(scope="module")
def sweeps_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("paper") / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(paper.MODES, "sweeps", SWEEPS_MODE)
        p = paper.plan(out, mode="sweeps")
        runner = fake_campaign_runner(make_run)
        result, _ = _run(p, runner)
    return p, result, runner


def test_every_campaign_runs_into_its_own_results_dir(quick_out):
    p, result, runner = quick_out
    assert [req.out.name for req in runner.calls] == [c.name for c in p.campaigns]
    main_req = runner.calls[0]
    assert (main_req.scenario, main_req.profile, main_req.rounds, main_req.reps) == (
        "paper",
        "pixel6pro",
        paper.QUICK_MAIN_ROUNDS,
        1,
    )
    assert main_req.schemes == "original,acclaim,pmr"
    by_dir = {req.out.name: req for req in runner.calls}
    assert by_dir["devices"].schemes == "original" and by_dir["devices"].profile == "pixel5"
    floor = by_dir["floor"]
    assert (floor.profile, floor.schemes, floor.rounds, floor.reps) == (
        "pixel6pro-roomy",
        "original",
        1,
        1,
    )
    # the fio boot ends main and devices, the max-rate boot main only
    assert [(req.out.name, req.swap_bandwidth, req.max_rate) for req in runner.calls] == [
        ("main", True, True),
        ("devices", True, False),
        ("floor", False, False),
    ]
    # main's 3 runs of original, acclaim and pmr; original's on pixel5 and the floor
    assert len(runner.runs) == sum(c.runs for c in p.campaigns) == 5
    assert ("floor", "original", 1) in runner.runs
    assert not any(scheme == "pps" for _, scheme, _ in runner.runs)
    assert (p.out / "floor" / "runs" / "original-r1" / "vmstat.csv").exists()
    assert result.ran == [c.name for c in p.campaigns] and result.skipped == []
    for c in p.campaigns:
        d = p.out / c.name
        assert (d / "report.md").exists() and (d / "summary.json").exists()
        assert (d / "plots" / campaign_report.PLOT_FILES["throughput"]).exists()
    assert result.failed_runs == 0


def test_the_sweeps_run_their_kernel_default_point_once(sweeps_out):
    p, result, runner = sweeps_out
    assert [req.out.name for req in runner.calls] == [
        "main",
        "devices",
        "delta",
        "unit-pixel6pro",
        "floor",
    ]
    # delta runs 1x and pmr as it is (3x, the kernel's default), which is also
    # the unit sweep's point at the profile's own unit: the unit campaign runs
    # the other unit alone, one point and no sweep plot of its own
    assert p.unit_from_delta
    assert p.campaign("delta").schemes[1] == paper.DEFAULT_PMR
    assert p.campaign("unit-pixel6pro").schemes == (f"pmr@{paper.UNIT_KEY}=1024",)
    assert not (p.out / "unit-pixel6pro" / "plots" / f"sweep_{paper.UNIT_KEY}.png").exists()
    assert result.failed_runs == 0


def test_every_campaign_runs_at_the_first_campaigns_dilation(tmp_path):
    """A campaign not given a dilation measures one, later ones faster: the
    floor and devices must run at main's, not at their own."""
    inner = fake_campaign_runner(make_run)
    measured = []

    def runner(req, progress):
        done = inner(req, progress)
        if req.dilation is None:
            measured.append(req.out.name)
        dil = req.dilation or dilation.Dilation(
            factor=10.0,
            host_ns_per_page=40.0,
            guest_ns_per_page=400.0 - 100 * len(measured),
            host_work_iters_per_ms=1.0,
            guest_work_iters_per_ms=1.0,
            accel="tcg",
            host_fault_ns_per_page=1.0,
            guest_fault_ns_per_page=1.0,
        )
        done["dilation"] = dil.as_dict()
        (req.out / "campaign.json").write_text(json.dumps(done))
        return done

    p = paper.plan(tmp_path / "out", mode="quick")
    _run(p, runner)
    assert measured == ["main"]
    recorded = [
        json.loads((p.out / c.name / "campaign.json").read_text())["dilation"] for c in p.campaigns
    ]
    assert {d["guest_ns_per_page"] for d in recorded} == {300.0}


def test_paper_md_has_the_regime_before_the_headline_ratios(quick_out):
    p, result, _ = quick_out
    md = result.markdown.read_text()
    assert md.index("## Regime (pixel6pro, original)") < md.index("## Headline ratios")
    section = _rows(md, "Regime (pixel6pro, original)")
    assert set(section) == {"check", *regime.CHECKS}
    # quick mode runs the floor: the apps' 40 MB/s over original's 20 MB/s peak
    assert section["demand_over_reclaim"][1] == "2.00"
    assert section["demand_over_reclaim"][4] == "✅ pass"
    assert "- `demand_over_reclaim`:" not in md
    saved = json.loads((p.out / "regime.json").read_text())
    assert saved["source"]["layout"] == "paper"
    assert saved["source"]["floor"] == {
        "dir": "floor",
        "profile": "pixel6pro-roomy",
        "original_reps": [1],
    }
    demand = next(c for c in saved["checks"] if c["name"] == "demand_over_reclaim")
    assert demand["value"] == pytest.approx(2.0)
    assert saved["source"]["main"] == {"dir": "main", "profile": "pixel6pro", "original_reps": [1]}
    # the other phone's peak_over_fio, from devices: the fake campaigns ran no fio
    other = saved["devices"]
    assert (other["profile"], other["source"]["dir"]) == ("pixel5", "devices")
    [check] = other["checks"]
    assert check["name"] == "peak_over_fio" and (check["lo"], check["hi"]) == (0.25, 0.45)
    assert check["pass"] is False and "fio" in check["missing"]
    assert "On `pixel5` (`devices`): peak_over_fio" in md
    # each campaign's own, beside its report
    for c in p.campaigns:
        assert (
            json.loads((p.out / c.name / "regime.json").read_text())["source"]["layout"]
            == "campaign"
        )


def test_paper_md_summary_and_plots_are_written(quick_out):
    p, result, _ = quick_out
    assert result.markdown == p.out / "paper.md"
    md = result.markdown.read_text()
    sweeps = {paper_report.PLOTS["fig15a"], paper_report.PLOTS["fig15b"]}
    for file in paper_report.PLOTS.values():
        if file in sweeps:  # quick mode runs no sweeps
            assert not (p.out / "plots" / file).exists() and f"](plots/{file})" not in md
            continue
        assert (p.out / "plots" / file).read_bytes()[:8] == PNG_MAGIC
        assert f"](plots/{file})" in md
    assert "Not run in quick mode" in md.split("## Figs. 15a-b")[1].split("\n## ")[0]
    for fig in ("response_time", "reclaim_throughput", "pressure"):
        assert f"](main/plots/{fig}.png)" in md
        assert (p.out / "main" / "plots" / f"{fig}.png").exists()
    # each section shows its plot before its table
    fig5 = md.split("## Fig. 5")[1].split("\n## ")[0]
    assert fig5.index("![Fig. 5]") < fig5.index("| scheme |")
    s = json.loads((p.out / "paper_summary.json").read_text())
    assert s["mode"] == "quick"
    assert s["campaigns"]["main"]["summary"] == "main/summary.json"
    assert (p.out / s["campaigns"]["devices"]["summary"]).exists()
    assert s["ratios"]["response_time"]["median"] == pytest.approx(0.44)
    assert s["delta"]["points"] == []
    # the floor ran main's one round: its own mean, original's 1,000 ms
    assert (p.out / s["campaigns"]["floor"]["summary"]).exists()
    assert s["floor"]["response_ms"] == pytest.approx(1000)
    assert s["floor"]["demand_mbps"] == pytest.approx(40.0)
    # and the missed peak throughput's shortfall weighs it against original's peak
    assert (
        "- the apps' fastest second of anonymous memory growth without memory pressure "
        "(`floor`): 40.0 MB/s, 2.00 x original's peak"
    ) in md


def test_the_report_says_how_long_the_campaigns_took_against_the_budget(quick_out, tmp_path):
    p, result, _ = quick_out
    t = json.loads((p.out / "paper_summary.json").read_text())["time"]
    runs = sum(c.runs for c in p.campaigns)
    assert t["took_s"] == pytest.approx(RUN_WALL_S * runs)
    assert t["budget_s"] == 20 * 60 and t["within_budget"] is True
    assert t["estimate_s"] == pytest.approx(sum(paper.estimate_s(c) for c in p.campaigns))
    assert t["campaigns"]["main"]["took_s"] == RUN_WALL_S * p.campaign("main").runs
    md = result.markdown.read_text()
    assert (
        f"The campaigns took **{paper_report.took_text(RUN_WALL_S * runs)}** against the "
        "quick mode's budget of 20 min, within it" in md
    )
    # one campaign over the budget on its own; another without a recorded time
    out = tmp_path / "slow"
    shutil.copytree(p.out, out)
    slow = paper.plan(out, mode="quick")
    c = json.loads((out / "main" / "campaign.json").read_text())
    c["wall_s"] = 21 * 60.0
    (out / "main" / "campaign.json").write_text(json.dumps(c))
    t = paper_report.time_summary(slow, paper_report.collect(slow))
    assert t["within_budget"] is False and t["took_s"] > 21 * 60
    assert ", over it" in paper_report.time_lines(slow, paper_report.collect(slow))[0]
    assert t["setup_s"] == 0 and t["evaluation_s"] == t["took_s"]
    # a fresh checkout builds the kernel and measures the host first: the
    # budget weighs the evaluation without them, and paper.md says both
    c["setup_s"] = {"kernel": 420.0, "dilation": 170.0, "reclaim_ceiling": 110.0}
    (out / "main" / "campaign.json").write_text(json.dumps(c))
    collected = paper_report.collect(slow)
    t = paper_report.time_summary(slow, collected)
    assert t["setup_s"] == 700.0 and t["evaluation_s"] == pytest.approx(t["took_s"] - 700.0)
    assert t["within_budget"] is True and t["campaigns"]["main"]["setup_s"] == 700.0
    line = paper_report.time_lines(slow, collected)[0]
    assert (
        f"took **{paper_report.took_text(t['took_s'])}**: 11 min 40 s building the kernel "
        "and measuring the host (done once per checkout and host; `setup_s` in "
        f"campaign.json) and **{paper_report.took_text(t['evaluation_s'])}** of evaluation "
        "against the quick mode's budget of 20 min, within it"
    ) in line
    del c["setup_s"], c["wall_s"]
    (out / "main" / "campaign.json").write_text(json.dumps(c))
    collected = paper_report.collect(slow)
    t = paper_report.time_summary(slow, collected)
    assert t["took_s"] is None and t["within_budget"] is None
    assert t["campaigns"]["main"]["took_s"] is None
    line = paper_report.time_lines(slow, collected)[0]
    assert "total time is not known" in line and "`main` not recorded" in line
    # the thorough mode has no budget to be within
    thorough = dataclasses.replace(p, mode="thorough")
    t = paper_report.time_summary(thorough, paper_report.collect(p))
    assert t["budget_s"] is None and t["within_budget"] is None and t["took_s"] is not None
    assert (
        "(thorough mode: no budget) (estimate"
        in paper_report.time_lines(thorough, paper_report.collect(p))[0]
    )


def test_took_text():
    assert paper_report.took_text(65.4) == "1 min 05 s"
    assert paper_report.took_text(1199.6) == "20 min 00 s"
    assert paper_report.took_text(5914) == "1 h 38 min"


def test_fig5_split_and_table3_beside_the_paper(quick_out):
    _, result, _ = quick_out
    md = result.markdown.read_text()
    rows = _rows(md, "Fig. 5")
    assert rows["paper: original (Pixel 6 Pro)"][3:5] == ["4.48", "3.66"]
    # original: 10 ms rounds, 4 ms of writeback; pmr: 5 ms, 1 ms
    assert rows["original"][2:7] == ["10.0", "6.00", "4.00", "0.60", "0.40"]
    assert rows["pmr"][3:5] == ["4.00", "1.00"]
    t3 = _rows(md, "Table 3")
    assert t3["original"][1:5] == ["10.0", "0.00", "10.0", "1"]
    assert t3["pmr"][1:5] == ["6.00", "4.50", "10.5", "1.050"]
    # the kills come 3 s into the 4-s runs: three quarters of the CPU until then
    assert t3["original"][5:7] == ["7.50", "1"]
    assert t3["pmr"][5] == "7.88"  # threads_cpu.csv's two decimals: 7.88 / 7.50 = 1.051
    assert float(t3["pmr"][6]) == pytest.approx(1.05, abs=0.002)
    assert t3["pmr"][-4:] == ["14.51", "11.10", "25.61", "1.053"]
    flash = _rows(md, "Flash write volume")
    assert flash["pmr"][2] == f"{27000 / 25600:.3f}" and flash["pmr"][-1].startswith("1.121")
    assert flash["pmr"][3:5] == [f"{27000 * 0.75 / 256:.1f}", f"{27000 / 25600:.3f}"]


def test_fig14_says_when_devices_ran_fewer_rounds_than_main(tmp_path):
    full = paper.plan(tmp_path / "full")
    text = paper_report.fig14_rounds_text(full)
    assert "`devices` ran 2 rounds and `main` 10" in text
    assert "pixel5 figures are over 2 rounds, the pixel6pro ones over 10" in text
    # thorough: the same rounds, nothing to say
    assert paper_report.fig14_rounds_text(paper.plan(tmp_path / "t", mode="thorough")) == ""


def test_fig14(quick_out, sweeps_out):
    _, result, _ = quick_out
    md = result.markdown.read_text()
    # quick's devices ran 1 round, main QUICK_MAIN_ROUNDS, and no pmr
    assert f"`devices` ran 1 round and `main` {paper.QUICK_MAIN_ROUNDS}" in md
    assert _rows(md, "Fig. 14")["pmr"][1:4] == ["–", "36.0", "–"]
    _, result, _ = sweeps_out
    md = result.markdown.read_text()
    fig14 = _rows(md, "Fig. 14")
    # pmr's peak: 36 MB/s on pixel6pro, 80% of it on pixel5
    assert fig14["pmr"][1:4] == ["28.8", "36.0", "1.25"]
    # quick mode runs no pps: its row keeps only the paper's figure
    assert fig14["pps"][1:7] == ["–"] * 6 and fig14["pps"][7].startswith("peak 205 MB/s")


def test_fig15_sweeps(sweeps_out):
    p, result, _ = sweeps_out
    md = result.markdown.read_text()
    for fig in ("fig15a", "fig15b"):
        assert (p.out / "plots" / paper_report.PLOTS[fig]).read_bytes()[:8] == PNG_MAGIC
    s = json.loads((p.out / "paper_summary.json").read_text())
    assert s["delta"]["points"][1]["kbytes"] == 3 * p.nr_to_reclaim_pages * 4
    fig15a = _rows(md, "Fig. 15a")
    assert [k for k in fig15a if k.endswith("x")] == ["1x", "3x"]
    assert fig15a["3x"][4] == "1"  # runs
    # 3x (the kernel's default) is pmr as it is, response 440 ms
    assert fig15a["3x"][3] == f"`{paper.DEFAULT_PMR}`" and fig15a["3x"][5] == "440"
    assert fig15a["1x"][3].startswith("`pmr@victim_target_kbytes=")
    assert "kshrinkd reported it in main's pmr runs: 76.8 MB" in md
    assert "best unit by median peak throughput **1024 kB**" in md
    fig15b = _rows(md, "Fig. 15b")
    own = str(profiles.load("pixel6pro").unmap_unit_kb)  # delta's pmr, at the profile's unit
    assert [k for k in fig15b if k[0].isdigit()] == ["1024", "16384"]
    assert fig15b[own][1] == "`pmr (delta 3x)`" and fig15b[own][3].startswith("3")
    assert fig15b["1024"][1:4] == ["`pmr@unmap_unit_kbytes=1024`", "1", "50.0"]


def test_a_second_run_skips_finished_campaigns(quick_out, tmp_path):
    p, _, _ = quick_out
    out = tmp_path / "again"
    shutil.copytree(p.out, out)
    again = paper.plan(out, mode="quick")
    assert set(paper.statuses(again).values()) == {"finished"}
    runner = fake_campaign_runner(make_run)
    result, said = _run(again, runner)
    assert runner.calls == []
    assert result.skipped == [c.name for c in again.campaigns] and result.ran == []
    assert any("main: finished earlier, skipped" in line for line in said)
    assert (out / "paper.md").exists()


def test_a_cut_off_campaign_is_continued(tmp_path):
    p = paper.plan(tmp_path / "out", mode="quick")
    first = fake_campaign_runner(make_run, stop_after={"main": 1})
    with pytest.raises(CutOff):
        _run(p, first)
    assert paper.statuses(p) == {"main": "partial", "devices": "new", "floor": "new"}
    main = p.campaign("main")
    assert paper.recorded_runs(p, main) == 1
    others = p.campaign("devices").runs + p.campaign("floor").runs
    assert paper.runs_to_go(p, paper.statuses(p)) == main.runs - 1 + others == 4
    lines = paper.estimate_lines(p, paper.statuses(p))
    assert any(
        line.startswith("  main") and f"[cut off: 1 of {main.runs} runs done]" in line
        for line in lines
    )
    runner = fake_campaign_runner(make_run)
    result, said = _run(p, runner)
    assert [(req.out.name, req.resume) for req in runner.calls] == [
        ("main", True),
        ("devices", False),
        ("floor", False),
    ]
    # main's first run is kept, not run again
    assert ("main", main.schemes[0], 1) in first.runs
    assert [r for r in runner.runs if r[0] == "main"] == [("main", s, 1) for s in main.schemes[1:]]
    assert result.skipped == [] and result.moved == {}
    assert any(
        f"main: cut off earlier, continued (1 of {main.runs} runs done)" in line for line in said
    )
    assert set(paper.statuses(p).values()) == {"finished"}


def test_a_cut_off_campaign_on_another_setup_is_moved_aside_and_run_again(tmp_path):
    p = paper.plan(tmp_path / "out", mode="quick")
    with pytest.raises(CutOff):
        _run(p, fake_campaign_runner(make_run, stop_after={"main": 1}))
    runner = fake_campaign_runner(make_run, setup_changed=frozenset({"main"}))
    result, said = _run(p, runner)
    assert [(req.out.name, req.resume) for req in runner.calls] == [
        ("main", True),
        ("main", False),
        ("devices", False),
        ("floor", False),
    ]
    assert result.moved["main"] == p.out / "main.incomplete-1"
    assert json.loads((p.out / "main.incomplete-1" / "campaign.json").read_text())["runs"]
    assert any("another kernel; moved to" in line for line in said)
    assert set(paper.statuses(p).values()) == {"finished"}


def test_a_campaign_with_a_failed_run_is_continued(tmp_path):
    p = paper.plan(tmp_path / "out", mode="quick")
    spec = p.campaign("main")
    runs = [{"scheme": s, "rep": 1, "status": "ok"} for s in spec.schemes]
    runs[-1]["status"] = "failed"
    write_campaign(
        p.out / "main",
        list(spec.schemes),
        runs,
        reps=spec.reps,
        scenario="paper",
        profile=spec.profile,
        seed=p.seed,
        rounds=spec.rounds,
    )
    assert paper.statuses(p)["main"] == "partial"
    assert paper.recorded_runs(p, spec) == spec.runs - 1


def test_a_directory_with_another_plan_is_refused(tmp_path):
    p = paper.plan(tmp_path / "out", mode="quick")
    write_campaign(
        p.out / "main",
        list(paper.QUICK_MAIN_SCHEMES),
        [],
        reps=3,
        scenario="paper",
        profile="pixel6pro",
        seed=1,
        rounds=paper.QUICK_MAIN_ROUNDS,
    )
    with pytest.raises(UserError, match=r"holds another campaign \(reps 3, not 1\)"):
        paper.statuses(p)
    # a quick output from before pps left quick mode's devices
    write_campaign(
        p.out / "main",
        list(paper.QUICK_MAIN_SCHEMES),
        [],
        reps=1,
        scenario="paper",
        profile="pixel6pro",
        seed=1,
        rounds=paper.QUICK_MAIN_ROUNDS,
    )
    write_campaign(
        p.out / "devices",
        ["original", "pps", "pmr"],
        [],
        reps=1,
        scenario="paper",
        profile="pixel5",
        seed=1,
        rounds=1,
    )
    with pytest.raises(
        UserError,
        match=re.escape(
            "devices holds another campaign (schemes ['original', 'pps', 'pmr'], not ['original'])"
        ),
    ):
        paper.statuses(p)


# ---- ratios --------------------------------------------------------------------


@pytest.fixture(scope="module")
def main_3reps(tmp_path_factory):
    """A main campaign of 3 reps, original, mglru, pps and pmr; pmr's rep 2 failed."""
    d = tmp_path_factory.mktemp("main3") / "main"
    spec = paper.CampaignSpec("main", "", "pixel6pro", ("original", "mglru", "pps", "pmr"), 3, 10)
    runs = []
    for rep in (1, 2, 3):
        for scheme in spec.schemes:
            write_run(d / "runs" / f"{scheme}-r{rep}", **make_run("pixel6pro", scheme, rep))
            failed = scheme == "pmr" and rep == 2
            runs.append(
                {
                    "scheme": scheme,
                    "rep": rep,
                    "status": "failed" if failed else "ok",
                    "error": "guest run exited with status 1" if failed else None,
                }
            )
    write_campaign(
        d,
        list(spec.schemes),
        runs,
        scenario="paper",
        profile="pixel6pro",
        seed=1,
        rounds=10,
        swap_bandwidth={"write_mbps": 50.0, "fio": {"iodepth": 16}, "error": None},
    )
    summary, ok = paper_report.build_summary(d)
    return {"main": paper_report.Collected(spec, "finished", summary, ok, 12)}


def test_headline_ratios_pair_reps_and_mark_targets(main_3reps):
    ratios = paper_report.headline_ratios(main_3reps)
    r = ratios["response_time"]
    # pmr's rep 2 failed: reps 1 and 3 pair up (440 / 1000, 470 / 1000)
    assert r["pairs"] == 2 and r["values"] == pytest.approx([0.44, 0.47])
    assert (r["median"], r["min"], r["max"]) == pytest.approx((0.455, 0.44, 0.47))
    assert (r["status"], r["reps_meeting"], r["paper"]) == ("met", 2, 0.564)
    assert r["p_value"] is None  # 2 of pmr's reps: too few to test
    peak = ratios["peak_throughput"]
    assert peak["values"] == pytest.approx([1.8, 2.1], rel=1e-3)
    assert peak["status"] == "missed" and peak["reps_meeting"] == 1  # median 1.95 < 2.0
    assert ratios["kills"]["status"] == "met"
    assert ratios["direct_reclaims"]["median"] == pytest.approx(0.6)
    assert ratios["direct_reclaims"]["status"] == "missed"
    assert ratios["reclaim_cpu"]["median"] == pytest.approx(1.05)  # (6 + 4.5) / 10
    assert ratios["reclaim_cpu"]["status"] == "missed"
    assert ratios["flash_writes"]["median"] == pytest.approx(27000 / 25600)
    assert ratios["flash_writes"]["status"] == "met"
    assert ratios["pps_reclaim_cpu"]["median"] == pytest.approx(1.02)
    assert ratios["pps_reclaim_cpu"]["status"] == "no target"
    assert ratios["response_time_vs_mglru"]["median"] == pytest.approx(0.455 / 0.9)
    # pmr's peak against the disk's 50 MB/s (fio): 36 / 50 and 42 / 50
    of_disk = ratios["peak_of_disk"]
    assert of_disk["values"] == pytest.approx([0.72, 0.84], rel=1e-2)
    assert of_disk["status"] == "met" and of_disk["base"] == paper_report.DISK


@pytest.fixture(scope="module")
def main_peers(tmp_path_factory):
    """A main campaign of 2 reps of original, pmr and the peer kswapd-threads."""
    d = tmp_path_factory.mktemp("peers") / "main"
    spec = paper.CampaignSpec("main", "", "pixel6pro", ("original", "pmr", "kswapd-threads"), 2, 10)
    runs = []
    for rep in (1, 2):
        for scheme in spec.schemes:
            write_run(d / "runs" / f"{scheme}-r{rep}", **make_run("pixel6pro", scheme, rep))
            runs.append({"scheme": scheme, "rep": rep, "status": "ok", "error": None})
    write_campaign(
        d, list(spec.schemes), runs, scenario="paper", profile="pixel6pro", seed=1, rounds=10
    )
    summary, ok = paper_report.build_summary(d)
    return {"main": paper_report.Collected(spec, "finished", summary, ok, 6)}


def test_peers_are_paired_against_original_and_pmr(main_peers, main_3reps, tmp_path):
    peers = paper_report.peer_ratios(main_peers)
    assert list(peers) == ["kswapd-threads"]
    rows = {r["figure"]: r for r in peers["kswapd-threads"]}
    response = rows["response_ms.mean"]
    assert response["peer_over_original"]["values"] == pytest.approx([0.8, 0.8])
    assert response["pmr_over_original"]["values"] == pytest.approx([0.44, 0.45])
    assert response["pmr_over_peer"]["values"] == pytest.approx([440 / 800, 450 / 800])
    # the paper gives no number to meet
    assert response["peer_over_original"]["status"] == "no target"
    # both kswapd threads count: (7 + 7) / 10
    cpu = rows[paper_report.CPU_KK]
    assert cpu["peer_over_original"]["median"] == pytest.approx(1.4)
    assert cpu["pmr_over_peer"]["median"] == pytest.approx(10.5 / 14)
    assert rows["kills"]["pmr_over_peer"]["median"] == pytest.approx(1 / 6)
    p = paper.plan(tmp_path / "out", peers=True)
    collected = {c.name: paper_report.Collected(c, "missing") for c in p.campaigns} | main_peers
    md = paper_report.render(p, collected, paper_report.headline_ratios(collected))
    table = _rows(md, "kswapd-threads")
    assert table["LMKD kills"][1:] == [
        "0.600 [0.600, 0.600] (2 reps)",
        "0.100 [0.100, 0.100] (2 reps)",
        "0.167 [0.167, 0.167] (2 reps)",
    ]
    assert paper_report.paper_summary(p, collected, {})["peers"] == peers
    # a main campaign without peers has no such section
    assert paper_report.peer_ratios(main_3reps) == {}
    plain = paper.plan(tmp_path / "plain")
    collected = {c.name: paper_report.Collected(c, "missing") for c in plain.campaigns}
    collected |= main_3reps
    assert "Beside what users deploy" not in paper_report.render(
        plain, collected, paper_report.headline_ratios(collected)
    )


def test_met_and_missed_in_the_table_and_the_shortfalls(main_3reps, tmp_path):
    p = paper.plan(tmp_path / "out")
    collected = {c.name: paper_report.Collected(c, "missing") for c in p.campaigns}
    collected |= main_3reps
    ratios = paper_report.headline_ratios(collected)
    md = paper_report.render(p, collected, ratios)
    rows = _rows(md, "Headline ratios (pixel6pro, against original)")
    response = rows["response time (mean)"]
    assert response[2] == "0.455 [0.440, 0.470] (2 reps)"
    assert response[3] == "0.564" and response[5] == "≤ 0.5"
    assert response[6].startswith("✅ met")
    assert rows["peak reclaim throughput"][6] == "❌ missed (1 of 2 reps meet it)"
    assert rows["reclaim CPU (kswapd + kshrinkd), PPS"][6] == "no target"
    short = md.split("## What fell short, and where it goes")[1]
    missed = re.findall(r"^### (.+) \(pmr / original\)$", short, re.M)
    assert missed == [
        "peak reclaim throughput",
        "direct reclaims (allocstall)",
        "reclaim CPU (kswapd + kshrinkd)",
    ]
    peak = short.split("### peak reclaim throughput")[1].split("###")[0]
    assert "- peak against the disk's 50.0 MB/s (fio): pmr 3" in peak
    assert re.search(
        r"^- the disk caps the peak ratio against original at \d+\.\d\d "
        r"\(50\.0 MB/s over original's [\d.]+ MB/s\)$",
        peak,
        re.M,
    )
    cpu = short.split("### reclaim CPU")[1].split("###")[0]
    assert "- kswapd CPU s: pmr 6.00, original 10.0" in cpu
    assert "- `devices`: not run yet" in short
    assert "`main`: 1 failed runs" in short


def test_kill_shortfall_names_lmkd_reasons():
    schemes = {
        "pmr": {
            "kills": 10,
            "kills_by_reason": {"low_mem_and_swap": 9, "low_swap_and_thrashing": 1},
        },
        "original": {"kills": 9, "kills_by_reason": {"low_mem_and_swap": 9}},
    }
    lines = shortfall.evidence("kills", "pmr", "original", schemes)
    assert "LMKD kills: pmr 10, original 9" in lines
    assert (
        "LMKD kills by reason: pmr low_mem_and_swap 9, low_swap_and_thrashing 1; "
        "original low_mem_and_swap 9"
    ) in lines


def test_a_scheme_the_mode_did_not_run_is_not_measured(quick_out):
    p, _, _ = quick_out
    s = json.loads((p.out / "paper_summary.json").read_text())
    vs_mglru = s["ratios"]["response_time_vs_mglru"]
    assert vs_mglru["status"] == "not measured" and vs_mglru["median"] is None
    assert "mglru was not run" in vs_mglru["reason"]
    assert "response_time_vs_mglru" not in s["missed"]
    pps = s["ratios"]["pps_reclaim_cpu"]  # quick mode runs no pps
    assert pps["status"] == "not measured" and "pps was not run" in pps["reason"]
    of_disk = s["ratios"]["peak_of_disk"]  # the fake campaigns have no fio measurement
    assert of_disk["status"] == "not measured" and "no fio measurement" in of_disk["reason"]


def test_acclaim_headlines_beside_the_papers(quick_out, sweeps_out):
    p, result, _ = quick_out
    ratios = json.loads((p.out / "paper_summary.json").read_text())["ratios"]
    # FIGURES: acclaim 680 ms, 21 MB/s peak, 3 kills, 110 direct reclaims; pmr's rep 1
    # 450 ms and 36 MB/s, 1 kill, 60 direct reclaims
    want = {
        "acclaim_response_time": ("acclaim", "original", 0.68, 0.676),
        "peak_throughput_vs_acclaim": ("pmr", "acclaim", 36 / 21, 1.755),
        "kills_vs_acclaim": ("pmr", "acclaim", 1 / 3, 0.46),
        "direct_reclaims_vs_acclaim": ("pmr", "acclaim", 60 / 110, 0.55),
    }
    for key, (scheme, base, ours, paper_says) in want.items():
        r = ratios[key]
        assert (r["scheme"], r["base"], r["paper"]) == (scheme, base, paper_says)
        assert r["median"] == pytest.approx(ours, rel=0.02)
        # the paper gives Acclaim's numbers as observations, not targets
        assert r["status"] == "no target" and r["target"] is None
    rows = _rows(result.markdown.read_text(), "Headline ratios (pixel6pro, against original)")
    assert rows["response time (mean), Acclaim"][1:5] == [
        "acclaim / original",
        "0.680 (1 rep)",
        "0.676",
        "-32.4% (§5.2, Fig. 11)",
    ]
    assert rows["LMKD kills, against Acclaim"][3:5] == ["0.460", "-54% (§5.3.2, Fig. 13)"]
    # a main campaign without acclaim: not measured, and not missed
    sp, _, _ = sweeps_out
    s = json.loads((sp.out / "paper_summary.json").read_text())
    for key in want:
        assert s["ratios"][key]["status"] == "not measured"
        assert "acclaim was not run" in s["ratios"][key]["reason"]
        assert key not in s["missed"]


@pytest.mark.parametrize(
    "value, target, met",
    [
        (0.5, ("<=", 0.5), True),
        (0.51, ("<=", 0.5), False),
        (2.0, (">=", 2.0), True),
        (1.99, (">=", 2.0), False),
    ],
)
def test_meets(value, target, met):
    assert paper_report.meets(value, target) is met


# ---- CLI -----------------------------------------------------------------------


def pmrtb(*args):
    return subprocess.run(
        [sys.executable, "-m", "pmr_testbed.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "harness"), "PATH": "/usr/bin:/bin"},
    )


def test_cli_bad_input_is_one_line_exit_2(tmp_path):
    for args, message in (
        (["--quick", "--reps", "0"], "--reps must be at least 1"),
        (["--reps", "2"], "needs --reps 3 or more"),
    ):
        res = pmrtb("paper", "--out", str(tmp_path / "out"), *args)
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert res.returncode == 2, res.stderr
        assert len(lines) == 1 and lines[0].startswith("pmrtb: error: ") and message in lines[0]
        assert not (tmp_path / "out").exists()


def test_cli_refuses_another_plans_directory_before_running(tmp_path):
    out = tmp_path / "out"
    write_campaign(
        out / "main",
        ["original"],
        [],
        reps=1,
        scenario="paper",
        profile="pixel6pro",
        seed=1,
        rounds=paper.QUICK_MAIN_ROUNDS,
    )
    res = pmrtb("paper", "--out", str(out), "--quick")
    assert res.returncode == 2, res.stderr
    assert (
        "holds another campaign (schemes ['original'], not ['original', 'acclaim', 'pmr'])"
        in res.stderr
    )
    assert sorted(p.name for p in out.iterdir()) == ["main"]


def _rows(md: str, section: str) -> dict[str, list[str]]:
    """{first cell: cells} of the tables under `## section`."""
    text = md.split(f"## {section}")[1].split("\n## ")[0]
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("| ")
    ]
    return {row[0]: row for row in rows}


def test_cli_prints_the_estimate_runs_and_resumes(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from pmr_testbed import cli
    from pmr_testbed.workflows import campaign

    def no_guests(*args, **kwargs):
        raise AssertionError("a real campaign was started")

    monkeypatch.setattr(campaign, "plan", no_guests)
    monkeypatch.setattr(campaign, "run", no_guests)
    runner = fake_campaign_runner(make_run)
    monkeypatch.setattr(paper_run, "run_campaign", runner)
    setup = "first the kernel build (9-15 min from a cold compiler cache): once per checkout"
    monkeypatch.setattr(paper_run, "setup_line", lambda: setup)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli.app, ["paper", "--out", str(out), "--quick", "--seed", "7"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith("pmrtb paper (quick): 3 campaigns") and "seed 7" in lines[0]
    assert [ln.split()[0] for ln in lines[1:4]] == ["main", "devices", "floor"]
    assert lines[3].split()[1] == "pixel6pro-roomy" and "= 1 run," in lines[3]
    total = sum(paper.estimate_s(c) for c in paper.plan(out, mode="quick").campaigns)
    assert total <= 20 * 60
    assert lines[4].startswith(f"estimated guest time: ~{paper.duration_text(total)} in all")
    assert lines[5] == setup
    assert lines[-1] == f"paper: {out / 'paper.md'}"
    assert [req.seed for req in runner.calls] == [7] * 3
    res = CliRunner().invoke(cli.app, ["paper", "--out", str(out), "--quick", "--seed", "7"])
    assert res.exit_code == 0, res.output
    assert "~0 min still to run" in res.stdout and len(runner.calls) == 3
    # nothing left to run: no setup to announce
    assert setup not in res.stdout


def test_the_setup_a_new_checkout_pays_is_announced(tmp_path, monkeypatch):
    from pmr_testbed.guest import kernel
    from pmr_testbed.workflows import max_rate

    built = {"testbed": False}
    monkeypatch.setattr(kernel, "is_built", lambda flavour: built[flavour])
    monkeypatch.setattr(dilation, "CACHE", tmp_path / "dilation.json")
    monkeypatch.setattr(max_rate, "CACHE", tmp_path / "reclaim_ceiling.json")
    line = paper_run.setup_line()
    assert line is not None
    assert "the kernel build (9-15 min" in line and "measuring the host (~3 min)" in line
    built["testbed"] = True
    line = paper_run.setup_line()
    assert line is not None
    assert "kernel" not in line and "measuring the host" in line
    # a host with its memory speed stored but not its reclaim ceiling is measured again
    dilation.CACHE.write_text("{}")
    assert paper_run.setup_line() is not None
    max_rate.CACHE.write_text("{}")
    assert paper_run.setup_line() is None


def test_campaigns_of_the_same_name_get_their_own_disk_images(tmp_path):
    from pmr_testbed.workflows import campaign

    a = campaign.disk_dir(tmp_path / "one" / "main", "pmr-r1")
    b = campaign.disk_dir(tmp_path / "two" / "main", "pmr-r1")
    assert a != b and a.name == b.name == "pmr-r1" and a.parent.name.startswith("main-")
    assert campaign.disk_dir(tmp_path / "one" / "main", "pmr-r1") == a


def test_response_shortfall_lists_how_each_repetition_settled():
    schemes = {
        "pmr": {
            "by_rep": [
                {"rep": 1, "settled.file_refaults_per_s": 812.4},
                {"rep": 2, "settled.file_refaults_per_s": 12.0},
            ]
        },
        "original": {"by_rep": [{"rep": 1, "settled.file_refaults_per_s": None}]},
    }
    lines = shortfall.evidence("response_time", "pmr", "original", schemes)
    assert (
        "file refaults per second after the last kill, per repetition: pmr 812, 12.0; original –"
    ) in lines
    assert not any(
        "per repetition" in line
        for line in shortfall.evidence("response_time", "pmr", "original", {})
    )


def test_response_shortfall_names_the_floor_no_scheme_can_pass():
    schemes = {
        "pmr": {"response_ms": {"mean": 150.0}},
        "original": {"response_ms": {"mean": 130.0}},
    }
    lines = shortfall.evidence("response_time", "pmr", "original", schemes, floor_ms=104.0)
    assert (
        "response mean without memory pressure (`floor`): 104 ms, so no scheme's ratio "
        "against original (130 ms) can go below 0.80"
    ) in lines
    assert not any(
        "floor" in line for line in shortfall.evidence("response_time", "pmr", "original", schemes)
    )


def test_floor_figures_come_from_the_floor_campaigns_original():
    spec = paper.CampaignSpec(
        "floor", "response time without memory pressure", "pixel6pro-roomy", ("original",), 3, 10
    )
    summary = {
        "schemes": {"original": {"response_ms": {"mean": 104.4}, "anon_growth_peak_mbps": 101.0}}
    }
    collected = {"floor": paper_report.Collected(spec, "finished", summary)}
    assert paper_report.floor_figure(collected, "response_ms.mean") == pytest.approx(104.4)
    assert paper_report.floor_figure(collected, "anon_growth_peak_mbps") == pytest.approx(101.0)
    missing = {"floor": paper_report.Collected(spec, "missing")}
    assert paper_report.floor_figure(missing, "response_ms.mean") is None
    assert paper_report.floor_figure({}, "response_ms.mean") is None


def _summary_collected(name, profile, schemes, rounds, entries):
    spec = paper.CampaignSpec(name, name, profile, tuple(schemes), 1, rounds)
    return paper_report.Collected(spec, "finished", {"schemes": entries})


def test_a_shorter_floor_is_weighed_as_mains_switches():
    main = _summary_collected(
        "main",
        "pixel6pro",
        ["original"],
        10,
        {
            "original": {
                "runs": 3,
                "response_ms": {"mean": 210.0},
                "cold_launches": 10,
                "hot_launches": 90,
            }
        },
    )
    floor_entry = {
        "runs": 1,
        "response_ms": {"mean": 501.5},
        "anon_growth_peak_mbps": 95.0,
        "switch_kinds": {
            "cold": {"switches": 10, "mean_ms": 1000.0},
            "hot": {"switches": 10, "mean_ms": 3.0},
        },
    }
    floor = _summary_collected(
        "floor", "pixel6pro-roomy", ["original"], 2, {"original": floor_entry}
    )
    collected = {"main": main, "floor": floor}
    # 10 cold launches at 1,000 ms and main's other 90 switches at 3 ms
    assert paper_report.floor_response_ms(collected) == pytest.approx((10_000 + 270) / 100)
    fs = paper_report._floor_summary(collected)
    assert fs["best_response_ratio"] == pytest.approx(102.7 / 210.0)
    assert fs["demand_mbps"] == 95.0
    # a floor of main's rounds is taken as it is
    same = _summary_collected(
        "floor", "pixel6pro-roomy", ["original"], 10, {"original": floor_entry}
    )
    assert paper_report.floor_response_ms({"main": main, "floor": same}) == 501.5
    # a floor without hot switches gives no figure rather than a wrong one
    del floor_entry["switch_kinds"]["hot"]
    assert paper_report.floor_response_ms(collected) is None
    assert paper_report._floor_summary({"main": main}) is None


def test_the_unit_sweep_takes_its_default_point_from_delta(tmp_path):
    p = paper.plan(tmp_path / "out")
    entry = {"runs": 1, "reclaim_mbps": {"peak": 70.0}}
    collected = {
        "delta": _summary_collected(
            "delta", "pixel6pro", p.campaign("delta").schemes, 2, {"pmr": entry}
        ),
        "unit-pixel6pro": paper_report.Collected(
            p.campaign("unit-pixel6pro"), "finished", {"schemes": {}}
        ),
    }
    points = paper_report.unit_points(p, collected)["pixel6pro"]
    assert [(v, s) for v, s, _ in points] == [
        (64.0, "pmr@unmap_unit_kbytes=64"),
        (1024.0, "pmr@unmap_unit_kbytes=1024"),
        (16384.0, paper_report.DELTA_PMR),
    ]
    assert points[-1][2] is entry
    rows = paper_report.delta_rows(p, collected)
    assert [(k, s) for k, _, s, _ in rows][1] == (3, "pmr") and rows[1][3] is entry


def test_throughput_shortfall_names_how_fast_the_apps_demand_memory():
    schemes = {
        "pmr": {"reclaim_mbps": {"peak": 82.0}},
        "original": {"reclaim_mbps": {"peak": 125.0}},
    }
    lines = shortfall.evidence("peak_throughput", "pmr", "original", schemes, demand_mbps=104.0)
    assert (
        "the apps' fastest second of anonymous memory growth without memory pressure "
        "(`floor`): 104 MB/s, 0.83 x original's peak; peak reclaim: pmr 82.0 MB/s, "
        "original 125 MB/s"
    ) in lines
    assert not any(
        "floor" in line
        for line in shortfall.evidence("peak_throughput", "pmr", "original", schemes)
    )
    schemes["original"]["kswapd_rounds"] = {"busiest_second_share": 0.63}
    assert (
        "share of its busiest second kswapd spent in reclaim rounds: pmr –, original 0.63"
        in shortfall.evidence("peak_throughput", "pmr", "original", schemes)
    )


def test_scheme_p_value_tests_every_ok_rep_of_both(main_3reps):
    ok = main_3reps["main"].ok
    values = {
        name: [paper_report.run_value(r.metrics, "response_ms.mean") for r in ok[name]]
        for name in ("mglru", "original")
    }
    p = paper_report.scheme_p_value(ok, "mglru", "original", "response_ms.mean")
    assert p is not None and p == permutation_p(values["mglru"], values["original"])
    assert paper_report.scheme_p_value(ok, "pmr", "original", "response_ms.mean") is None


def test_the_paper_summary_gives_the_lowest_kills_ratio_the_apps_leave():
    c = {
        "apps_anon_mb": 2562.0,
        "mem_total_mb": 1986.6,
        "swap_total_mb": 341.0,
        "excess_mb": 234.4,
        "fewest_kills": 2,
        "oom_kills": 0,
    }
    main = _summary_collected(
        "main",
        "pixel6pro",
        ["original", "pmr"],
        10,
        {
            "original": {"runs": 3, "kills": 10, "capacity": c},
            "pmr": {"runs": 3, "kills": 9, "capacity": c},
        },
    )
    cs = paper_report._capacity_summary({"main": main})
    assert cs["fewest_kills"] == 2 and cs["lowest_kills_ratio"] == pytest.approx(0.2)
    no_spec = _summary_collected(
        "main", "pixel6pro", ["original"], 10, {"original": {"runs": 3, "kills": 10}}
    )
    assert paper_report._capacity_summary({"main": no_spec}) is None
    assert paper_report._capacity_summary({}) is None
