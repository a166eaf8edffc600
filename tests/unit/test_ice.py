"""Ice and Ice+: the `[ice]` table from scheme file to spec.json, the apps'
frame loops and background CPU work, the Pixel 3 profile and the `ice`
scenarios, and the analysis and report of what the guest writes for them
(ticks.csv, Ice's events, the kernel's ice_* counters)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import test_data_files
from fakerun import (
    ICE_VMSTAT_KEYS,
    app_memcg_row,
    kill,
    switch,
    tick_row,
    write_campaign,
    write_run,
)
from fakespec import build_spec
from pmr_testbed import paths, schema, tomlfile
from pmr_testbed.analysis.ice import (
    BIG_JANK_MS,
    JANK_MS,
    app_frames,
    drawing_spans,
    frame_totals,
    freezing,
    ice_figures,
    janks,
    read_ticks,
)
from pmr_testbed.analysis.metrics import RunError, load_run
from pmr_testbed.config import profiles, scenarios, schemes
from pmr_testbed.errors import UserError
from pmr_testbed.report.campaign_report import write_report
from pmr_testbed.report.summary import ice_pairs, validate_summary, write_summary

ROOT = Path(__file__).resolve().parents[2]
ICE = {
    "rpf": "kernel",
    "poll_ms": 100.0,
    "protect_adj": 200,
    "mdt": {"delta": 8.0, "thaw_ms": 1000.0, "max_freeze_ms": 64000.0, "available": "mem_free"},
    "spare_swapped": False,
}


def _build(scheme: str, scenario: str = "ice", profile: str = "pixel3-zram") -> dict:
    return build_spec(scheme, profile, scenario)


# ---- the [ice] table -----------------------------------------------------------


def test_the_three_ice_schemes_parse_with_their_knobs():
    ice, plus, us = (schemes.load(n) for n in ("ice", "ice-plus", "ice-us"))
    assert ice.ice == ICE
    assert plus.ice == {**ICE, "spare_swapped": True}
    assert us.ice == {**ICE, "rpf": "user"}
    knob = {k["path"]: k["value"] for k in ice.knobs}
    assert knob == {"/sys/kernel/mm/lru_gen/enabled": "n", "/sys/kernel/mm/ice/rpf_enabled": "1"}
    assert {k["path"]: k["value"] for k in plus.knobs} == {
        **knob,
        "/sys/kernel/mm/ice/frozen_first": "1",
    }
    assert {k["path"]: k["value"] for k in us.knobs}["/sys/kernel/mm/ice/rpf_enabled"] == "0"
    assert schemes.load("original").ice is None


@pytest.mark.parametrize(
    ("name", "spare"), [("ice+pmr", False), ("ice-plus+pmr", True), ("pmr+ice", False)]
)
def test_ice_combines_with_pmr(name, spare):
    resolved = schemes.resolve(name, profiles.load("pixel3-zram"))
    assert resolved.ice == {**ICE, "spare_swapped": spare}
    assert {"path": schemes.PMR_ENABLED, "value": "2"} in resolved.knobs


def _scheme_dir(tmp_path, monkeypatch, **files: str):
    for name in ("ice", "ice-plus", "ice-us", "pmr", "original"):
        shutil.copy(paths.SCHEMES_DIR / f"{name}.toml", tmp_path)
    for name, text in files.items():
        (tmp_path / f"{name}.toml").write_text(text)
    monkeypatch.setattr(paths, "SCHEMES_DIR", tmp_path)


@pytest.mark.parametrize("name", ["ice+ice-plus", "ice-plus+ice", "ice+ice-us", "pmr+ice+ice-us"])
def test_two_ices_are_refused_before_their_knobs(name):
    # ice+ice-us also sets rpf_enabled two ways: the [ice] rule speaks first
    first, second = [p for p in name.split("+") if p.startswith("ice")]
    with pytest.raises(UserError, match=rf"schemes {first} and {second} both have \[ice\]"):
        schemes.resolve(name, profiles.load("pixel3-zram"))


def test_pmrtb_run_refuses_two_ices_in_one_line(tmp_path):
    out = tmp_path / "out"
    res = subprocess.run(
        [sys.executable, "-m", "pmr_testbed.cli", "run", "--scenario", "ice"]
        + ["--profile", "pixel3-zram", "--schemes", "original,ice+ice-plus", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "harness"), "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 2, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "schemes ice and ice-plus both have [ice]" in lines[0]
    assert not out.exists()


MDT = '[ice.mdt]\ndelta = 8.0\nthaw_ms = 1000.0\nmax_freeze_ms = 64000.0\navailable = "mem_free"\n'
KERNEL = '[ice]\nrpf = "kernel"\nprotect_adj = 200\n'


@pytest.mark.parametrize(
    ("table", "error"),
    [
        ('ice = "on"\n', r"\[ice\]: must be a table"),
        (KERNEL + "freeze = 1\n" + MDT, r"`freeze` is not a setting of \[ice\]"),
        (KERNEL.replace('"kernel"', '"bpf"') + MDT, "rpf 'bpf' must be one of kernel, user"),
        (KERNEL + "poll_ms = 100.0\n" + MDT, r'poll_ms is for rpf = "user"'),
        ('[ice]\nrpf = "user"\nprotect_adj = 200\n' + MDT, "missing `poll_ms`"),
        ('[ice]\nrpf = "user"\npoll_ms = 1.0\nprotect_adj = 200\n' + MDT, "poll_ms must be >= 10"),
        (KERNEL.replace("200", "900") + MDT, "protect_adj must be 0..699, got 900"),
        (KERNEL.replace("200", "-1") + MDT, "protect_adj must be 0..699, got -1"),
        (KERNEL.replace("200", "200.0") + MDT, "`protect_adj` has the wrong type"),
        (KERNEL + "spare_swapped = 1\n" + MDT, "spare_swapped must be true or false"),
        (KERNEL, "missing `mdt`"),
        (KERNEL + MDT.replace("delta = 8.0", "delta = 0"), "`delta` must be > 0"),
        (KERNEL + MDT.replace("thaw_ms = 1000.0", "thaw_ms = -1"), "`thaw_ms` must be > 0"),
        (
            KERNEL + MDT.replace("64000.0", "8000.0"),
            r"max_freeze_ms must be >= delta x 2 x thaw_ms = 16000 \(the shortest freeze\)",
        ),
        (
            KERNEL + MDT.replace('"mem_free"', '"MemFree"'),
            "available 'MemFree' must be one of mem_free, mem_available",
        ),
        (KERNEL + MDT + "epoch_ms = 3\n", r"\[ice.mdt\]: `epoch_ms` is not a setting"),
    ],
)
def test_ice_tables_are_checked_in_one_line(tmp_path, monkeypatch, table, error):
    _scheme_dir(tmp_path, monkeypatch, bad='name = "bad"\n' + table)
    with pytest.raises(UserError, match=error) as raised:
        schemes.resolve("bad", profiles.load("pixel3-zram"))
    assert "\n" not in str(raised.value) and "scheme bad.toml [ice" in str(raised.value)


def test_a_user_rpf_takes_its_poll_and_mem_available(tmp_path, monkeypatch):
    table = '[ice]\nrpf = "user"\npoll_ms = 250\nprotect_adj = 100\n' + MDT.replace(
        '"mem_free"', '"mem_available"'
    )
    _scheme_dir(tmp_path, monkeypatch, us2='name = "us2"\n' + table)
    got = schemes.resolve("us2", profiles.load("pixel3-zram")).ice
    assert got == {
        **ICE,
        "rpf": "user",
        "poll_ms": 250.0,
        "protect_adj": 100,
        "mdt": {**ICE["mdt"], "available": "mem_available"},
    }


# ---- spec.json -----------------------------------------------------------------------
# These build specs checked against schemas/spec.schema.json, which needs the
# runtime's `scheme.ice`, `frame` and `bg_touch.cpu_ms` (pmr-guest schema spec).


def test_spec_has_ice_only_for_a_scheme_with_it():
    assert _build("ice")["scheme"]["ice"] == ICE
    assert _build("ice-plus+pmr")["scheme"]["ice"] == {**ICE, "spare_swapped": True}
    assert "ice" not in _build("original")["scheme"]
    assert schema.problems("spec", _build("ice-us")) == []


def test_spec_has_the_frame_loops_and_background_cpu_scaled_as_sizes():
    apps = {a["name"]: a for a in _build("original")["apps"]}
    # touch_mb is phone MB and alloc_kb phone kB, x 0.25; period and work
    # are guest ms
    assert apps["pubg"]["frame"] == {
        "period_ms": 16.667,
        "work_ms": 9.0,
        "touch_mb": 4,
        "alloc_kb": 128.0,
    }
    assert apps["whatsapp"]["frame"]["touch_mb"] == 1
    assert apps["music"]["bg_touch"] == {"period_ms": 100, "mb": 1, "cpu_ms": 3.0}
    assert apps["music"]["adj_class"] == "perceptible" and "frame" not in apps["music"]
    # an app without background CPU work or frames writes neither field
    assert apps["system_server"]["bg_touch"] == {"period_ms": 500, "mb": 2}
    assert "frame" not in apps["youtube"] and apps["youtube"]["bg_touch"] is None


def test_older_scenarios_build_the_specs_they_did():
    built = _build("original", scenario="paper", profile="pixel6pro")
    assert not any("frame" in a for a in built["apps"])
    assert not any("cpu_ms" in (a["bg_touch"] or {}) for a in built["apps"])


# ---- the profile and the scenarios ---------------------------------------------------


def test_pixel3_zram_is_the_papers_phone_at_a_quarter():
    p = profiles.load("pixel3-zram")
    assert (p.phone_ram_mb, p.phone_swap_mb, p.swap) == (4096, 512, "zram")
    assert (p.guest_ram_mb, p.guest_zram_mb, p.swaps_to_disk) == (1024, 128, False)
    assert p.high_watermark_fraction == pytest.approx(0.0102, abs=1e-4)
    assert p.watermarks() == {"min_free_kbytes": 4096, "watermark_scale_factor": 31}
    assert p.acclaim_lwp_goal_kb == (8020, 8856)
    assert p.heap_random_words == 204  # 2.5:1, as the other zram profiles


def test_the_ice_scenario_is_the_papers_frame_rate_setting():
    s = scenarios.load("ice")
    assert [a.name for a in s.foreground] == ["whatsapp", "tiktok", "facebook", "pubg"]
    assert all(a.frame and a.frame["period_ms"] == 16.667 for a in s.foreground)
    cached = [a for a in s.background if a.adj_class == "cached"]
    perceptible = [a for a in s.background if a.adj_class == "perceptible"]
    assert len(cached) == 6 and [a.name for a in perceptible] == ["music"]
    assert perceptible[0].bg_touch["cpu_ms"] > 0
    running = [a for a in cached if a.bg_touch]
    assert len(running) == 4  # most of the six run (§3.2)
    assert all(a.bg_touch["cpu_ms"] > 0 for a in running)
    assert s.dwell_ms == (30000, 30000) and s.rounds == 2
    assert not any(a.frame for a in s.system + s.background)


@pytest.mark.parametrize(
    ("name", "behind"),
    [("ice-bg-null", []), ("ice-memhog", ["memhog"]), ("ice-cpuhog", ["cpuhog"])],
)
def test_the_controls_keep_the_foreground_and_swap_the_background(name, behind):
    control, ice = scenarios.load(name), scenarios.load("ice")
    assert control.foreground == ice.foreground and control.system == ice.system
    assert [a.name for a in control.background] == behind
    assert control.rounds == 1


def test_ice_smoke_is_smoke_with_frames_running_apps_and_a_perceptible_one():
    ice_smoke, smoke = scenarios.load("ice-smoke"), scenarios.load("smoke")
    sizes = [(a.name, a.anon_mb, a.file_mb) for a in ice_smoke.apps]
    assert sizes == [(a.name, a.anon_mb, a.file_mb) for a in smoke.apps]
    assert all(a.frame for a in ice_smoke.foreground) and ice_smoke.rounds == 2
    assert [a.name for a in ice_smoke.background if a.adj_class == "perceptible"] == ["spotify"]
    # long enough for an MDT epoch (E_f 16 or 32 s, E_t 1 s) within the
    # switching, and a second round that comes back to apps frozen behind
    switching_ms = ice_smoke.dwell_ms[0] * len(ice_smoke.foreground) * ice_smoke.rounds
    assert switching_ms > 33000
    built = _build("ice-plus+pmr", scenario="ice-smoke", profile="pixel5-zram")
    assert schema.problems("spec", built) == []


def test_the_hogs_hog_memory_or_cpu():
    memhog = scenarios.load("ice-memhog").background[0]
    cpuhog = scenarios.load("ice-cpuhog").background[0]
    assert memhog.anon_mb > 1500 and memhog.bg_touch["mb"] >= 100
    assert "cpu_ms" not in memhog.bg_touch
    assert cpuhog.anon_mb < 100
    assert cpuhog.bg_touch["cpu_ms"] / cpuhog.bg_touch["period_ms"] == pytest.approx(0.4)


# test_data_files.py's minimal scenario, with one foreground app
BASE = (
    test_data_files.BASE
    + """[[foreground]]
name = "a"
anon_mb = 10
"""
)


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ("frame = { period_ms = 16.7, work_ms = 17.0, touch_mb = 1 }\n", "work_ms .17. must be"),
        ("frame = { period_ms = 16.7, work_ms = 5.0 }\n", "frame: missing `touch_mb`"),
        ("frame = { period_ms = 16.7, work_ms = 5.0, touch_mb = 1, hz = 60 }\n", "unknown key"),
        (
            "frame = { period_ms = 16.7, work_ms = 5.0, touch_mb = 1, alloc_kb = -1 }\n",
            "`alloc_kb` must be >= 0",
        ),
        ("frame = 60\n", "frame: must be a table"),
        ("bg_touch = { period_ms = 100, mb = 1, cpu_ms = 100.0 }\n", "cpu_ms .100. must be"),
        ("bg_touch = { period_ms = 100, mb = 1, cpu_ms = -1 }\n", "`cpu_ms` must be >= 0"),
        ("bg_touch = { period_ms = 100, mb = 1, cpu = 5 }\n", r"bg_touch: unknown key\(s\) cpu"),
    ],
)
def test_frame_and_background_work_are_checked(tmp_path, extra, error):
    f = tmp_path / "s.toml"
    f.write_text(BASE + extra)
    with pytest.raises(UserError, match=error):
        scenarios.parse(tomlfile.load(f, "scenario"), f)


def test_a_system_app_draws_no_frames(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(
        BASE + '[[system]]\nname = "s"\nanon_mb = 1\nadj_class = "persistent"\n'
        "frame = { period_ms = 16.7, work_ms = 5.0, touch_mb = 1 }\n"
    )
    with pytest.raises(UserError, match=r"\[\[system\]\] app never comes to the front"):
        scenarios.parse(tomlfile.load(f, "scenario"), f)


# ---- frames ----------------------------------------------------------------------------


def test_perfdog_jank_needs_twice_the_last_three_and_a_floor():
    assert round(JANK_MS, 2) == 83.33 and BIG_JANK_MS == 125.0
    assert janks([10, 10, 10, 90]) == (1, 0)  # over 2 x 10 and over 83.3
    assert janks([10, 10, 10, 130]) == (1, 1)
    assert janks([10, 10, 10, 80]) == (0, 0)  # under 83.3
    assert janks([60, 60, 60, 100]) == (0, 0)  # under twice the mean (120)
    assert janks([90, 200, 10]) == (0, 0)  # fewer than three frames before it
    # each frame is judged against the three just before it
    assert janks([10, 10, 10, 100, 10, 10, 10, 130]) == (2, 1)
    assert janks([100, 100, 100, 150]) == (0, 0)  # slow throughout: no jank


def _frames(start_ms: float, n: int, dur=lambda i: 8.0, every_ms: float = 1000 / 60):
    return [(start_ms + (i + 1) * every_ms, dur(i), dur(i) > 1000 / 60) for i in range(n)]


def test_fps_ria_and_jank_of_an_app_over_its_times_in_front():
    spans = [(1000.0, 11000.0), (31000.0, 36000.0)]  # 15 s in front
    frames = _frames(1000, 600, lambda i: 20.0 if i % 4 == 0 else 8.0)
    # the second time in front starts with three short frames, then a jank;
    # the first frames of a time in front are not judged against the last one's
    frames += _frames(31000, 3) + _frames(31100, 1, lambda i: 150.0) + _frames(31300, 296)
    f = app_frames(frames, spans)
    assert f["frames"] == 900 and f["front_s"] == 15.0 and f["fps"] == 60.0
    assert f["ria"] == pytest.approx((150 + 1) / 900)
    assert (f["jank"], f["big_jank"]) == (1, 1)
    assert app_frames(frames, [])["fps"] is None  # never in front: no rate


def test_frame_totals_average_the_apps_as_the_paper_does():
    by_app = {
        "a": {"frames": 600, "front_s": 10.0, "fps": 60.0, "ria": 0.1, "jank": 2, "big_jank": 1},
        "b": {"frames": 300, "front_s": 20.0, "fps": 15.0, "ria": 0.5, "jank": 1, "big_jank": 0},
    }
    assert frame_totals(by_app) == {
        "frames": 900,
        "front_s": 30.0,
        "fps": 37.5,  # not 900 / 30
        "ria": pytest.approx(0.3),
        "jank": 3,
        "big_jank": 1,
        "jank_per_10min": 60.0,
    }


def _launch(app, t_ms, response_ms, role="background"):
    return {"t_ms": t_ms, "type": "launch", "app": app, "kind": "cold", "response_ms": response_ms,
            "role": role}  # fmt: skip


def test_the_apps_draw_from_the_end_of_their_launch_to_the_next_launch():
    events = [
        _launch("music", 500, 400),  # a background launch: in front while it launches only
        switch("whatsapp", "cold", 1000.0, 0, t_ms=3000),  # launch 2000-3000
        switch("tiktok", "cold", 2000.0, 0, t_ms=14000),  # launch 12000-14000
        _launch("twitter", 20000, 500, role="background_use"),
        switch("whatsapp", "hot", 500.0, 1, t_ms=30500),
        {"t_ms": 40000, "type": "phase", "phase": "done"},
    ]
    assert drawing_spans(events, 40000.0) == {
        "whatsapp": [(3000.0, 12000.0), (30500.0, 40000.0)],
        "tiktok": [(14000.0, 19500.0)],
        "twitter": [(20000.0, 30000.0)],
    }


def test_ticks_are_read_per_app_in_time_order_and_checked():
    header = ["t_ms", "app", "pid", "kind", "dur_ms", "late"]
    rows = [
        ["200.5", "a", "1", "frame", "20.0", "1"],
        ["100.0", "a", "1", "frame", "8.0", "0"],
        ["150.0", "m", "2", "bg", "120.0", "1"],
    ]
    frames, periods = read_ticks((header, rows))
    assert frames == {"a": [(100.0, 8.0, False), (200.5, 20.0, True)]}
    assert periods == {"m": [(150.0, 120.0, True)]}
    assert read_ticks(None) == ({}, {})
    with pytest.raises(ValueError, match="has no column late"):
        read_ticks((header[:-1], [r[:-1] for r in rows]))
    with pytest.raises(ValueError, match="line 3 has 5 fields"):
        read_ticks((header, [rows[0], rows[1][:-1]]))


# ---- freezing --------------------------------------------------------------------------


def _freeze(t_ms, app, cause="rpf"):
    return {"t_ms": t_ms, "type": "ice_freeze", "app": app, "cause": cause}


def _thaw(t_ms, app, cause, frozen_ms):
    return {"t_ms": t_ms, "type": "ice_thaw", "app": app, "cause": cause, "frozen_ms": frozen_ms}


def _epoch(t_ms, freeze_ms, available_kb=20000, high_wm_kb=10600):
    return {"t_ms": t_ms, "type": "ice_epoch", "freeze_ms": freeze_ms,
            "available_kb": available_kb, "high_wm_kb": high_wm_kb}  # fmt: skip


CLASSES = {"twitter": "cached", "chrome": "cached", "music": "perceptible", "gms": "persistent"}


def test_freezes_and_thaws_are_counted_by_cause_and_timed():
    events = [
        switch("chrome", "cold", 1000.0, 0, t_ms=3000),
        _freeze(4000, "twitter"),
        _epoch(4000, 16000.0, available_kb=30000),
        _thaw(20000, "twitter", "mdt", 16000.0),
        _freeze(21000, "twitter", "mdt"),
        _freeze(21500, "music"),  # perceptible: must never be frozen
        _epoch(22000, 32000.0),
        _freeze(23000, "chrome"),  # in front since 2000: must never be frozen
        {**switch("twitter", "hot", 300.0, 1, t_ms=30000), "thaw_ms": 2.5},
        _thaw(29700, "twitter", "launch", 8700.0),
        kill("chrome", "low_mem_and_swap", t_ms=35000) | {"spared": 2},
        _thaw(35005, "chrome", "death", 12005.0),
        {"t_ms": 40000, "type": "ice_end", "frozen": 0},
    ]
    f = freezing(events, CLASSES, spare_swapped=True)
    assert f["freezes"] == {"rpf": 3, "rpf_user": 0, "mdt": 1} and f["freezes_total"] == 4
    assert f["thaws"] == {"mdt": 1, "launch": 1, "death": 1, "end": 0}
    assert f["frozen_apps"] == 3
    assert f["frozen_s_by_app"] == {"chrome": 12.005, "twitter": 24.7}
    assert f["frozen_s"] == pytest.approx(36.705)
    assert (f["protected_freezes"], f["front_freezes"]) == (1, 1)
    assert f["epochs"] == {
        "count": 2,
        "freeze_ms_min": 16000.0,
        "freeze_ms_median": 24000.0,
        "freeze_ms_max": 32000.0,
        "available_kb_median": 25000.0,
        "high_wm_kb": 10600.0,
    }
    assert f["launch_thaws"] == {"count": 1, "mean_ms": 2.5, "max_ms": 2.5}
    assert (f["end_frozen"], f["spared"]) == (0, 2)
    # a whitelist that stops short of perceptible apps lets them be frozen
    assert freezing(events, CLASSES, True, protect_adj=100)["protected_freezes"] == 0
    assert freezing([_freeze(1, "gms")], CLASSES, False, protect_adj=0)["protected_freezes"] == 1
    quiet = freezing([switch("chrome", "cold", 1000.0)], CLASSES, spare_swapped=False)
    assert quiet["freezes_total"] == 0 and "epochs" not in quiet
    assert (quiet["end_frozen"], quiet["spared"], quiet["launch_thaws"]["mean_ms"]) == (
        None,
        None,
        None,
    )


VMSTAT = (
    ["t_ms", "workingset_refault_anon", "workingset_refault_file", "pgsteal_kswapd",
     "pgsteal_direct"],
    [["0", "10", "20", "100", "5"], ["1000", "110", "70", "400", "25"]],
)  # fmt: skip


def test_no_ice_figures_for_a_run_without_ticks_or_ice():
    events = [switch("chrome", "cold", 900.0)]
    assert ice_figures(None, events, VMSTAT, None) is None
    assert ice_figures(None, events, VMSTAT, {"scheme": {"name": "original"}, "apps": []}) is None
    # Ice without ticks.csv: the freezing and the counts, no frames
    f = ice_figures(None, events, VMSTAT, {"scheme": {"name": "ice", "ice": ICE}, "apps": []})
    assert f is not None and "frames" not in f and f["freezing"]["freezes_total"] == 0
    assert (f["refaults"], f["reclaims"]) == (150, 320)
    assert "vmstat" not in f["freezing"]  # a kernel without Ice's counters


# ---- runs, summary and report ----------------------------------------------------------

APPS = [
    {"name": "gms", "anon_mb": 50, "adj_class": "persistent"},
    {"name": "whatsapp", "anon_mb": 75, "adj_class": "cached"},
    {"name": "pubg", "anon_mb": 175, "adj_class": "cached"},
    {"name": "twitter", "anon_mb": 55, "adj_class": "cached"},
    {"name": "music", "anon_mb": 40, "adj_class": "perceptible"},
]
END_MS = 45000
# (app, kind, response ms, round, done at ms): each app in front until the next launch starts
SWITCHES = [
    ("whatsapp", "cold", 1000.0, 0, 5000),
    ("pubg", "cold", 2000.0, 0, 16000),
    ("whatsapp", "hot", 500.0, 1, 25500),
    ("pubg", "hot", 1000.0, 1, 36000),
]


def _ice_run(run_dir, scheme: str, rep: int):
    """A run of the ice scenario, as the guest would write it: frames at
    `fps` with a share of slow ones, music's periods (one late under
    original), twitter's periods, and for Ice its freezes and thaws."""
    fps = {"original": 30, "ice": 45, "ice-plus": 48}[scheme] + rep
    slow_every = {"original": 2, "ice": 5, "ice-plus": 6}[scheme]
    starts = [done - resp for _, _, resp, _, done in SWITCHES]
    spans = [
        (app, done, starts[i + 1] if i + 1 < len(SWITCHES) else END_MS)
        for i, (app, _, _, _, done) in enumerate(SWITCHES)
    ]
    ticks = []
    for app, start, end in spans:
        n = int((end - start) / 1000 * fps)
        for i in range(n):
            dur = 25.0 if i % slow_every == 0 else 8.0
            ticks.append(tick_row(start + (i + 1) * 1000 / fps, app, "frame", dur, 16.667))
    for t in range(100, END_MS, 100):
        dur = 150.0 if scheme == "original" and t == 20000 else 2.0
        ticks.append(tick_row(t, "music", "bg", dur, 100))
    twitter_periods = 20 if scheme == "original" else 8
    ticks += [tick_row(2000 * (i + 1), "twitter", "bg", 5.0, 2000) for i in range(twitter_periods)]
    switches = [
        switch(app, kind, resp, round_, t_ms=done) for app, kind, resp, round_, done in SWITCHES
    ]
    extra = []
    if scheme != "original":
        switches[2]["thaw_ms"] = 3.0
        extra = [
            _freeze(6000, "twitter"),
            _epoch(6000, 16000.0),
            _thaw(22000, "twitter", "mdt", 16000.0),
            _freeze(23000, "twitter", "mdt"),
            _thaw(44000, "twitter", "end", 21000.0),
            {"t_ms": 44500, "type": "ice_end", "frozen": 0},
        ]
    refault = {"original": 4000, "ice": 2000, "ice-plus": 1700}[scheme] + 100 * rep
    samples = list(range(0, END_MS + 1, 1000))
    write_run(
        run_dir,
        switches=switches,
        sample_t_ms=samples,
        write_sectors=[0] * len(samples),
        vmstat_increments={
            "workingset_refault_anon": refault,
            "workingset_refault_file": refault // 2,
            "pgsteal_kswapd": 3 * refault,
            "pgsteal_direct": 0,
            **({"ice_rpf_refault": 40, "ice_rpf_freeze": 1} if scheme != "original" else {}),
        },
        extra_vmstat_keys=ICE_VMSTAT_KEYS if scheme != "original" else (),
        app_memcg_rows=[
            app_memcg_row(10.0, "twitter", refault_anon=0),
            app_memcg_row(40.0, "twitter", refault_anon=refault),
            app_memcg_row(10.0, "whatsapp", refault_file=0),
            app_memcg_row(14.0, "whatsapp", refault_file=refault // 10),
        ],
        extra_events=extra,
        ticks_rows=ticks,
    )
    ice = {"ice": {**ICE, "spare_swapped": scheme == "ice-plus"}} if scheme != "original" else {}
    written_spec = {
        "scheme": {"name": scheme, **ice},
        "swap": {"serial": "pmrswap", "zram_mb": 128, "disk": False},
        "apps": APPS,
    }
    (run_dir / "spec.json").write_text(json.dumps(written_spec))
    return run_dir


def test_a_run_gives_frames_periods_and_freezes(tmp_path):
    m = load_run(_ice_run(tmp_path / "ice-r1", "ice", 1))
    ice = m.ice
    assert set(ice["by_app"]) == {"whatsapp", "pubg"}
    whatsapp = ice["by_app"]["whatsapp"]
    assert whatsapp["front_s"] == pytest.approx((14000 - 5000 + 35000 - 25500) / 1000)
    assert whatsapp["fps"] == pytest.approx(46, abs=0.2)
    assert ice["frames"]["ria"] == pytest.approx(0.2, abs=0.01) and ice["frames"]["jank"] == 0
    assert ice["background"]["music"] == {"periods": 449, "late": 0, "max_ms": 2.0}
    assert ice["background_by_class"]["cached"] == {"periods": 8, "late": 0, "max_ms": 5.0}
    assert ice["launches"] == {
        "after_first_round": 2,
        "hot_after_first_round": 2,
        "hot_share_after_first_round": 1.0,
    }
    assert (ice["refaults"], ice["reclaims"]) == (2100 + 1050, 6300)
    assert ice["refaults_background"] + ice["refaults_foreground"] == 2100 + 210
    freezing_ = ice["freezing"]
    assert freezing_["freezes"] == {"rpf": 1, "rpf_user": 0, "mdt": 1}
    assert freezing_["frozen_s"] == 37.0 and freezing_["spared"] is None
    assert freezing_["launch_thaws"]["count"] == 1
    assert freezing_["vmstat"] == {
        "ice_rpf_refault": 40,
        "ice_rpf_freeze": 1,
        "ice_frozen_reclaimed": 0,
    }
    original = load_run(_ice_run(tmp_path / "original-r1", "original", 1)).ice
    assert "freezing" not in original and original["background"]["music"]["late"] == 1


def test_a_run_without_ticks_has_no_ice_figures(tmp_path):
    m = load_run(write_run(tmp_path / "original-r1"))
    assert m.ice is None
    broken = _ice_run(tmp_path / "ice-r1", "ice", 1)
    (broken / "ticks.csv").write_text("t_ms,app,kind\n1,a,frame\n")
    with pytest.raises(RunError, match=r"ticks\.csv has no column dur_ms, late"):
        load_run(broken)


def _ice_campaign(d, schemes_run=("original", "ice", "ice-plus"), reps=(1, 2, 3)):
    runs = []
    for scheme in schemes_run:
        for rep in reps:
            _ice_run(d / "runs" / f"{scheme}-r{rep}", scheme, rep)
            runs.append({"scheme": scheme, "rep": rep, "status": "ok"})
    return write_campaign(
        d,
        list(schemes_run),
        runs,
        reps=len(reps),
        scenario="ice",
        profile="pixel3-zram",
        swap="zram",
    )


def test_ice_pairs_are_against_original_and_ice_plus_against_ice():
    names = ["original", "ice", "ice-plus", "pmr", "ice+pmr", "ice-plus+pmr", "ice-plus@x=1"]
    assert ice_pairs(names) == [
        *((n, "original") for n in names[1:]),
        ("ice-plus", "ice"),
        ("ice-plus+pmr", "ice+pmr"),
    ]
    assert ice_pairs(["ice-plus", "ice"]) == [("ice-plus", "ice")]


def test_summary_and_report_compare_ice_with_the_paper(tmp_path):
    d = _ice_campaign(tmp_path)
    s = write_summary(d)
    assert validate_summary(s) == []
    ice, original = s["schemes"]["ice"]["ice"], s["schemes"]["original"]["ice"]
    assert ice["freezing"]["freezes_total"] == 2 and "freezing" not in original
    assert ice["by_app"]["pubg"]["fps"] == pytest.approx(47, abs=0.2)
    pairs = {(c["scheme"], c["base"]): c for c in s["ice"]["comparisons"]}
    assert set(pairs) == {("ice", "original"), ("ice-plus", "original"), ("ice-plus", "ice")}
    fps = pairs[("ice", "original")]["spread"]["ice.frames.fps"]
    expected = [(45 + rep) / (30 + rep) for rep in (1, 2, 3)]
    assert fps["pairs"] == 3 and fps["median"] == pytest.approx(expected[1], rel=0.01)
    assert pairs[("ice-plus", "ice")]["ratios"]["ice.refaults"] == pytest.approx(
        (1700 + 200) / (2000 + 200)
    )
    assert s["warnings"] == []
    md = write_report(d).read_text()
    section = md.split("## Ice\n")[1].split("\n## ")[0]
    assert "| figure | paper: Ice / LRU+CFS | paper: Ice+ / Ice | ice / original |" in section
    assert "| FPS | 1.57 | 1.05 |" in section
    assert "| refaults (vmstat) | 0.424-0.595 | 0.873 |" in section
    assert "| hot launches after round 1 | 1.25 | – |" in section
    assert "| ice-plus | " in section and "whatsapp FPS" in section
    assert "perceptible: periods" in section and "freezes: rpf" in section
    assert "Ice errors" not in section
    freeze_rows = [ln for ln in section.splitlines() if ln.startswith("| original |")]
    assert len(freeze_rows) == 3  # the figures, the apps and the background; no freezing


def test_ice_errors_are_loud(tmp_path):
    d = _ice_campaign(tmp_path, schemes_run=("original", "ice"), reps=(1,))
    events = d / "runs" / "ice-r1" / "events.jsonl"
    lines = events.read_text().replace('"frozen": 0', '"frozen": 2')
    lines += json.dumps(_freeze(30000, "music")) + "\n"
    events.write_text(lines)
    s = write_summary(d)
    assert any("2 app cgroups were still frozen" in w for w in s["warnings"])
    assert any("1 freezes of whitelisted apps" in w for w in s["warnings"])
    md = write_report(d).read_text()
    section = md.split("## Ice\n")[1].split("\n## ")[0]
    assert section.lstrip().startswith("**Ice errors**")


def test_no_ice_section_without_frames_or_ice(tmp_path):
    # background periods alone (a smoke run under a runtime with ticks.csv)
    write_run(
        tmp_path / "runs" / "original-r1",
        ticks_rows=[tick_row(1000, "whatsapp", "bg", 3.0, 1000)],
    )
    write_campaign(tmp_path, ["original"], [{"scheme": "original", "rep": 1, "status": "ok"}], 1)
    s = write_summary(tmp_path)
    assert s["schemes"]["original"]["ice"]["background"]["whatsapp"]["periods"] == 1
    assert "ice" not in s and validate_summary(s) == []
    assert "## Ice" not in write_report(tmp_path).read_text()
