"""Profiles, scenarios and schemes: the shipped files load, bad ones are refused."""

import math
import shutil
from pathlib import Path

import pytest

from pmr_testbed.config import profiles, scenarios, schemes, spec
from pmr_testbed.errors import UserError


def test_pixel6pro_scales_memory_and_keeps_watermark_share():
    p = profiles.load("pixel6pro")
    assert p.guest_ram_mb == int(12288 * p.scale)
    assert p.guest_swap_mb == int(2048 * p.scale)
    wm = p.watermarks()
    ram_kb = p.guest_ram_mb * 1024
    # Reproduce the kernel's high watermark from the two sysctls.
    gap = max(wm["min_free_kbytes"] / 4, ram_kb * wm["watermark_scale_factor"] / 10000)
    high_kb = wm["min_free_kbytes"] + 2 * gap
    assert math.isclose(high_kb / ram_kb, 39340 * 4 / (12288 * 1024), rel_tol=0.05)


def test_the_scenarios_clock_follows_the_guests_memory_speed_where_it_says(tmp_path):
    """With `ref_ns_per_page` the scenario's times and CPU work run at the
    guest's ns per page over it; without, at their guest ms."""
    app = '[[foreground]]\nname = "a"\nanon_mb = 10\n'
    plain = _scenario(tmp_path, BASE + app)
    ref = _scenario(tmp_path, "ref_ns_per_page = 680\n" + BASE + app)
    assert plain.time_scale(340.0) == 1.0
    assert ref.time_scale(340.0) == 0.5 and ref.time_scale(680.0) == 1.0
    with pytest.raises(UserError, match="ref_ns_per_page"):
        _scenario(tmp_path, "ref_ns_per_page = 0\n" + BASE + app)
    assert scenarios.load("paper").ref_ns_per_page == 680


def test_spec_runs_the_scenarios_times_at_the_time_scale(tmp_path):
    """Every time of the scenario halves at time_scale 0.5 and every growth
    rate doubles; sizes and CPU work ms stay, and the CPU loop's iterations
    per ms halve, so the CPU work halves too."""
    paper = scenarios.load("paper")
    args = dict(
        run_id="r",
        out_dir=tmp_path,
        seed=1,
        scenario=paper,
        profile=profiles.load("pixel6pro"),
        scheme=schemes.load("original"),
        work_iters_per_ms=1000.0,
    )
    one, half = spec.build(**args), spec.build(**args, time_scale=0.5)
    for key in ("launch_gap_ms", "settle_ms"):
        assert half["scenario"][key] == one["scenario"][key] / 2
    assert half["scenario"]["dwell_ms"] == [ms / 2 for ms in one["scenario"]["dwell_ms"]]
    use, use_half = one["scenario"]["background_use"], half["scenario"]["background_use"]
    assert use_half["dwell_ms"] == [ms / 2 for ms in use["dwell_ms"]]
    for a, b in zip(one["apps"], half["apps"], strict=True):
        assert b["growth_ms"] == a["growth_ms"] / 2 and b["fg_period_ms"] == a["fg_period_ms"] / 2
        assert b["fg_growth_mb_per_s"] == pytest.approx(a["fg_growth_mb_per_s"] * 2, abs=0.002)
        if a["bg_touch"]:
            assert b["bg_touch"]["period_ms"] == a["bg_touch"]["period_ms"] / 2
        assert (b["anon_mb"], b["init_work_ms"]) == (a["anon_mb"], a["init_work_ms"])
    assert (one["work_iters_per_ms"], half["work_iters_per_ms"]) == (1000.0, 500.0)
    # a guest at 340 ns per page runs paper's clock (680) at 0.5
    assert paper.time_scale(340.0) == 0.5


def test_qemu_limits_scale_the_phones_flash_by_the_reclaim_ceiling():
    p = profiles.load("pixel6pro")
    assert p.peak_reclaim_mbps == 150
    # a guest that reclaims as fast as the phone gets the phone's flash
    same = p.qemu_limits(150.0)
    assert same["swap_bps_write"] == 1261 * 2**20
    assert same["swap_iops_write"] == 1000 * 256
    # one that reclaims at a tenth gets a tenth: reclaim keeps its share of the flash
    slow = p.qemu_limits(15.0)
    assert slow["swap_bps_write"] == pytest.approx(same["swap_bps_write"] / 10, abs=1)
    assert p.flash_scale(15.0) == pytest.approx(0.1)
    assert profiles.swap_throttle(same) == {
        "bps_write": same["swap_bps_write"],
        "iops_write": same["swap_iops_write"],
        "bps_read": same["swap_bps_read"],
        "iops_read": same["swap_iops_read"],
    }
    pixel5 = profiles.load("pixel5")
    assert pixel5.qemu_limits(pixel5.peak_reclaim_mbps)["swap_iops_write"] == 378 * 256
    # the phone's peak reclaim over its flash, which the regime report checks
    assert 0.08 <= 150 / 1000 <= 0.20 and 0.25 <= 126 / 378 <= 0.45


def test_every_shipped_profile_scenario_scheme_loads():
    root = Path(__file__).resolve().parents[2]
    for f in (root / "profiles").glob("*.toml"):
        profiles.load(f.stem)
    for f in (root / "scenarios").glob("*.toml"):
        scenarios.load(f.stem)
    prof, two_tiers = profiles.load("pixel6pro"), profiles.load("pixel6pro-swam")
    for f in (root / "schemes").glob("*.toml"):
        loaded = schemes.load(f.stem)
        # a scheme that keeps one swap tier runs on a profile with two
        on = two_tiers if loaded.tiers else prof
        schemes.resolve(f"original+{f.stem}" if loaded.modifier else f.stem, on)


def test_paper_scenario_is_the_papers_workload():
    s = scenarios.load("paper")
    assert len(s.foreground) == 10 and len(s.background) == 26
    assert s.rounds == 10
    assert {
        "chrome",
        "facebook",
        "twitter",
        "youtube",
        "tiktok",
        "amazon",
        "gmap",
        "uber",
        "spotify",
        "angrybirds",
    } == {a.name for a in s.foreground}
    big = [a for a in s.foreground if a.anon_mb >= 400]
    assert len(big) == 10 and max(a.anon_mb + a.file_mb for a in s.foreground) <= 1200


def test_unknown_names_give_one_line_with_choices():
    with pytest.raises(UserError, match=r"unknown profile 'pixel99'.*pixel5"):
        profiles.load("pixel99")
    with pytest.raises(UserError, match="unknown scenario"):
        scenarios.load("nope")
    with pytest.raises(UserError, match="unknown scheme 'nope'"):
        schemes.parse_list("original,nope", profiles.load("pixel5"))


def _scenario(tmp_path, text):
    f = tmp_path / "s.toml"
    f.write_text(text)
    from pmr_testbed import tomlfile

    return scenarios.parse(tomlfile.load(f, "scenario"), f)


BASE = """
name = "t"
rounds = 1
dwell_ms = [10, 20]
launch_gap_ms = 0
settle_ms = 0
deadline_s = 10
zygote = { shared_mb = 0 }
[defaults]
processes = 1
launch_fraction = 0.5
working_set_fraction = 0.5
growth_ms = 0
fg_period_ms = 100
init_work_ms = 1
file_mb = 1
"""


def test_scenario_validation(tmp_path):
    ok = _scenario(tmp_path, BASE + '[[foreground]]\nname = "a"\nanon_mb = 10\n')
    assert ok.foreground[0].anon_mb == 10
    with pytest.raises(UserError, match="not valid TOML"):
        _scenario(tmp_path, BASE + "[[foreground]\n")
    with pytest.raises(UserError, match="unknown key"):
        _scenario(tmp_path, BASE + '[[foreground]]\nname = "a"\nanon_mb = 10\nanonmb = 3\n')
    with pytest.raises(UserError, match="used twice"):
        _scenario(
            tmp_path,
            BASE + '[[foreground]]\nname = "a"\nanon_mb = 1\n'
            '[[background]]\nname = "a"\nanon_mb = 1\n',
        )
    with pytest.raises(UserError, match="must be > 0"):
        _scenario(tmp_path, BASE + '[[foreground]]\nname = "a"\nanon_mb = -5\n')
    with pytest.raises(UserError, match="at least one"):
        _scenario(tmp_path, BASE)
    with pytest.raises(UserError, match="only \\[\\[system\\]\\] apps"):
        _scenario(
            tmp_path, BASE + '[[foreground]]\nname = "a"\nanon_mb = 1\nadj_class = "persistent"\n'
        )
    with pytest.raises(UserError, match="launch_fraction"):
        _scenario(tmp_path, BASE + '[[foreground]]\nname = "a"\nanon_mb = 1\nlaunch_fraction = 2\n')


def test_scheme_combination_merges_and_refuses_conflicts(tmp_path, monkeypatch):
    from pmr_testbed import paths

    (tmp_path / "a.toml").write_text(
        'name = "a"\npolicies = ["x"]\n[[knobs]]\n'
        'path = "/proc/sys/vm/k1"\nvalue = "{pmr.unmap_unit_kb}"\n'
    )
    (tmp_path / "b.toml").write_text(
        'name = "b"\npolicies = ["y"]\n[[knobs]]\npath = "/proc/sys/vm/k2"\nvalue = "2"\n'
    )
    (tmp_path / "c.toml").write_text(
        'name = "c"\n[[knobs]]\npath = "/proc/sys/vm/k1"\nvalue = "9"\n'
    )
    (tmp_path / "d.toml").write_text('name = "d"\n[[knobs]]\npath = "/etc/passwd"\nvalue = "9"\n')
    monkeypatch.setattr(paths, "SCHEMES_DIR", tmp_path)
    prof = profiles.load("pixel5")
    ab = schemes.resolve("a+b", prof)
    assert ab.knobs == [
        {"path": "/proc/sys/vm/k1", "value": "1024"},
        {"path": "/proc/sys/vm/k2", "value": "2"},
    ]
    assert ab.policies == ["x", "y"]
    with pytest.raises(UserError, match="cannot be combined"):
        schemes.resolve("a+c", prof)
    with pytest.raises(UserError, match="must be under /proc/sys"):
        schemes.resolve("d", prof)
    with pytest.raises(UserError, match="malformed"):
        schemes.resolve("a+", prof)
    with pytest.raises(UserError, match="twice"):
        schemes.parse_list("a,a", prof)


KTHREAD = '[[kthreads]]\ncomm = "kswapd"\n'


@pytest.mark.parametrize(
    "entry, error",
    [
        ('policy = "fifo"\n', "missing `priority`"),
        ('policy = "fifo"\npriority = 100\n', "priority must be 1..99"),
        ('policy = "normal"\nnice = -21\n', "nice must be -20..19"),
        ('policy = "idle"\n', "policy 'idle' must be one of fifo, rr, normal"),
        ('policy = "fifo"\npriority = 1\ncpus = []\n', "cpus must be a list"),
        ('policy = "fifo"\npriority = 1\ncpus = [2]\n', "guest has 2 CPUs"),
        ('policy = "fifo"\npriority = 1\nnice = -5\n', "`nice` is not a setting of a fifo thread"),
        ('policy = "normal"\nnice = 0\ncpu = [1]\n', "`cpu` is not a setting of a normal thread"),
    ],
)
def test_kthread_settings_are_checked(tmp_path, monkeypatch, entry, error):
    from pmr_testbed import paths

    (tmp_path / "k.toml").write_text('name = "k"\n' + KTHREAD + entry)
    monkeypatch.setattr(paths, "SCHEMES_DIR", tmp_path)
    with pytest.raises(UserError, match=error):
        schemes.resolve("k", profiles.load("pixel5"))


def test_kthread_settings_combine_and_a_modifier_never_runs_alone(tmp_path, monkeypatch):
    from pmr_testbed import paths

    shutil.copy(paths.SCHEMES_DIR / "original.toml", tmp_path)
    (tmp_path / "fifo.toml").write_text(
        'name = "fifo"\nmodifier = true\n' + KTHREAD + 'policy = "fifo"\npriority = 1\ncpus = [1]\n'
    )
    (tmp_path / "nice.toml").write_text(
        'name = "nice"\n' + KTHREAD + 'policy = "normal"\nnice = -20\n'
    )
    monkeypatch.setattr(paths, "SCHEMES_DIR", tmp_path)
    prof = profiles.load("pixel5")
    combined = schemes.resolve("original+fifo", prof)
    want = {"comm": "kswapd", "policy": "fifo", "priority": 1, "nice": 0, "cpus": [1]}
    assert combined.kthreads == [want] and not combined.modifier
    assert schemes.resolve("original+fifo+fifo", prof).kthreads == [want]
    assert schemes.resolve("nice", prof).kthreads[0]["nice"] == -20
    assert schemes.resolve("original", prof).kthreads == []
    with pytest.raises(UserError, match=r"only modifies another scheme.*original\+fifo"):
        schemes.parse_list("original,fifo", prof)
    with pytest.raises(UserError, match="schedule kswapd differently"):
        schemes.resolve("nice+fifo", prof)
    (tmp_path / "numbered.toml").write_text(
        'name = "numbered"\n[[kthreads]]\ncomm = "kswapd0"\npolicy = "fifo"\npriority = 1\n'
    )
    with pytest.raises(UserError, match="without its number"):
        schemes.resolve("numbered", prof)
    (tmp_path / "table.toml").write_text('name = "table"\n[kthreads]\ncomm = "kswapd"\n')
    with pytest.raises(UserError, match="must be \\[\\[kthreads\\]\\] tables"):
        schemes.resolve("table", prof)
    # what the guest gets (runtime/src/spec.rs, KthreadSched)
    assert spec.build(
        run_id="r",
        out_dir=tmp_path,
        seed=1,
        scenario=scenarios.load("smoke"),
        profile=prof,
        scheme=combined,
        work_iters_per_ms=1.0,
    )["scheme"]["kthreads"] == [want]


def test_scheme_override_sets_one_knob_and_refuses_unknown_ones():
    prof = profiles.load("pixel6pro")
    assert {
        "path": "/sys/kernel/mm/pmr/unmap_unit_kbytes",
        "value": str(prof.unmap_unit_kb),
    } in schemes.resolve("pmr", prof).knobs
    swept = schemes.resolve("pmr@unmap_unit_kbytes=64", prof)
    assert swept.name == "pmr@unmap_unit_kbytes=64"
    assert {"path": "/sys/kernel/mm/pmr/unmap_unit_kbytes", "value": "64"} in swept.knobs
    assert {"path": "/sys/kernel/mm/pmr/enabled", "value": "2"} in swept.knobs
    two = schemes.resolve("pmr@unmap_unit_kbytes=64@victim_target_kbytes=1000", prof)
    assert {"path": "/sys/kernel/mm/pmr/victim_target_kbytes", "value": "1000"} in two.knobs
    with pytest.raises(UserError, match="has no knob 'nope'"):
        schemes.resolve("pmr@nope=1", prof)
    with pytest.raises(UserError, match="malformed"):
        schemes.resolve("pmr@enabled", prof)
    with pytest.raises(UserError, match="cannot be combined"):
        schemes.resolve("pmr@pmr/enabled=1+pmr", prof)
    with pytest.raises(UserError, match="names more than one knob"):
        schemes.resolve("pmr@enabled=1", prof)
    mode1 = schemes.resolve("pmr@pmr/enabled=1", prof)
    assert {"path": "/sys/kernel/mm/pmr/enabled", "value": "1"} in mode1.knobs
    assert {"path": "/sys/kernel/mm/lru_gen/enabled", "value": "n"} in mode1.knobs
    assert len(schemes.parse_list("pmr@unmap_unit_kbytes=64,pmr@unmap_unit_kbytes=128", prof)) == 2


def test_kswapd_threads_sweeps_its_thread_count():
    prof = profiles.load("pixel6pro")
    knob = "/proc/sys/vm/kswapd_threads"
    assert {"path": knob, "value": "2"} in schemes.resolve("kswapd-threads", prof).knobs
    four = schemes.resolve("kswapd-threads@kswapd_threads=4", prof)
    assert {"path": knob, "value": "4"} in four.knobs
    assert {"path": knob, "value": "2"} not in four.knobs
    # on the classic LRU, as original
    assert {"path": "/sys/kernel/mm/lru_gen/enabled", "value": "n"} in four.knobs


def test_spec_scales_sizes_and_lists_every_app(tmp_path):
    prof = profiles.load("pixel6pro")
    scen = scenarios.load("paper")
    sch = schemes.resolve("original", prof)
    s = spec.build(
        run_id="x",
        out_dir=tmp_path,
        seed=7,
        scenario=scen,
        profile=prof,
        scheme=sch,
        work_iters_per_ms=1000.0,
    )
    chrome = next(a for a in s["apps"] if a["name"] == "chrome")
    assert chrome["anon_mb"] == round(900 * prof.scale)
    assert len(s["apps"]) == 36 + len(scen.system)
    assert s["scenario"]["foreground"][0] == "chrome"
    # System processes start before the apps and are never killed.
    assert s["scenario"]["background"][0] == "system_server"
    assert next(a for a in s["apps"] if a["name"] == "system_server")["adj_class"] == "persistent"
    assert s["scheme"]["knobs"] == [{"path": "/sys/kernel/mm/lru_gen/enabled", "value": "n"}]
    # The paper's workload overcommits the guest, as it does the phone.
    assert spec.footprint_mb(s) > prof.guest_ram_mb
    assert s["deadline_s"] == scen.deadline_s
    slow = spec.build(
        run_id="x",
        out_dir=tmp_path,
        seed=7,
        scenario=scen,
        profile=prof,
        scheme=sch,
        work_iters_per_ms=1000.0,
        slowdown=6,
    )
    assert slow["deadline_s"] == 6 * scen.deadline_s
    traced = spec.build(
        run_id="x",
        out_dir=tmp_path,
        seed=7,
        scenario=scen,
        profile=prof,
        scheme=sch,
        work_iters_per_ms=1000.0,
        extra_trace_events=("vmscan/mm_vmscan_lru_isolate",),
    )
    assert traced["metrics"]["trace_events"] == (
        s["metrics"]["trace_events"] + ["vmscan/mm_vmscan_lru_isolate"]
    )


def test_run_dir_names_are_safe_for_virtme_rwdir():
    from pmr_testbed.workflows import campaign

    assert campaign.run_dir_name("pmr@unmap_unit_kbytes=64") == "pmr_unmap_unit_kbytes_64"
    assert campaign.run_dir_name("pmr+ice") == "pmr+ice"
    assert not set("=@") & set(
        campaign.run_dir_name("a@b=1@c=2")
    ) and "," not in campaign.run_dir_name("a,b")


def test_pmr_runs_its_writeback_in_a_real_time_kswapd():
    """Issue 4: PMR's writeback context is not preempted by ordinary tasks."""
    prof = profiles.load("pixel6pro")
    fifo = {"comm": "kswapd", "policy": "fifo", "priority": 1, "nice": 0}
    assert schemes.resolve("pmr", prof).kthreads == [fifo]
    assert schemes.resolve("original+kswapd-fifo", prof).kthreads == [fifo]
    assert schemes.resolve("original", prof).kthreads == []
    assert schemes.resolve("pps", prof).kthreads == []


def test_kshrinkd_nice_only_lowers_kshrinkd():
    prof = profiles.load("pixel6pro")
    nice = {"comm": "kshrinkd", "policy": "normal", "priority": 0, "nice": 19}
    assert schemes.load("kshrinkd-nice").modifier
    assert schemes.resolve("pmr+kshrinkd-nice", prof).kthreads == schemes.resolve(
        "pmr", prof
    ).kthreads + [nice]
    assert schemes.resolve("pmr+kshrinkd-nice", prof).knobs == schemes.resolve("pmr", prof).knobs


def test_app_levers_parse_scale_and_validate(tmp_path):
    s = _scenario(
        tmp_path,
        BASE + '[[foreground]]\nname = "a"\nanon_mb = 600\n'
        "launch_threads = 3\nresume_work_ms = 150\npeak_anon_mb = 1200\n"
        "fg_growth_mb_per_s = 30\n",
    )
    a = s.foreground[0]
    assert (a.launch_threads, a.resume_work_ms, a.peak_anon_mb, a.fg_growth_mb_per_s) == (
        3,
        150,
        1200,
        30,
    )
    prof = profiles.load("pixel6pro")
    got = spec.app_spec(a, prof)
    assert got["peak_anon_mb"] == round(1200 * prof.scale)
    assert got["fg_growth_mb_per_s"] == pytest.approx(30 * prof.scale, abs=1e-3)
    assert (got["launch_threads"], got["resume_work_ms"]) == (3, 150)
    plain = _scenario(tmp_path, BASE + '[[foreground]]\nname = "a"\nanon_mb = 600\n')
    p = plain.foreground[0]
    assert (p.launch_threads, p.resume_work_ms, p.peak_anon_mb, p.fg_growth_mb_per_s) == (
        1,
        0.0,
        None,
        0.0,
    )
    assert spec.app_spec(p, prof)["peak_anon_mb"] is None
    for bad, msg in (
        ("peak_anon_mb = 100", "must be >= anon_mb"),
        ("launch_threads = 17", "must be 1..16"),
        ("launch_threads = 0", "must be > 0"),
        ("fg_growth_mb_per_s = -1", "must be >= 0"),
    ):
        with pytest.raises(UserError, match=msg):
            _scenario(tmp_path, BASE + f'[[foreground]]\nname = "a"\nanon_mb = 600\n{bad}\n')


def test_background_use_parses_and_reaches_the_runtime(tmp_path):
    apps = (
        '[[foreground]]\nname = "a"\nanon_mb = 600\n'
        '[[background]]\nname = "b"\nanon_mb = 100\n'
        '[[background]]\nname = "c"\nanon_mb = 100\n'
    )
    # TOML tables must follow the top-level keys
    s = _scenario(
        tmp_path,
        BASE.replace(
            "[defaults]", "background_use = { every = 2, dwell_ms = [500, 900] }\n[defaults]"
        )
        + apps,
    )
    assert s.background_use == scenarios.BackgroundUse(
        every=2, dwell_ms=(500, 900), apps=("b", "c")
    )
    assert spec.background_use(s.background_use) == {
        "every": 2,
        "dwell_ms": [500, 900],
        "apps": ["b", "c"],
    }
    assert _scenario(tmp_path, BASE + apps).background_use is None
    assert spec.background_use(None) is None
    for bad, msg in (
        ("{ every = 0, dwell_ms = [1, 2] }", "must be > 0"),
        ("{ every = 1, dwell_ms = [2, 1] }", "dwell_ms"),
        ('{ every = 1, dwell_ms = [1, 2], apps = ["a"] }', "list of \\[\\[background"),
        ("{ every = 1, dwell_ms = [1, 2], often = 1 }", "unknown key"),
    ):
        with pytest.raises(UserError, match=msg):
            _scenario(
                tmp_path, BASE.replace("[defaults]", f"background_use = {bad}\n[defaults]") + apps
            )


def test_paper_scenario_levers_stay_within_the_phones_footprints():
    s = scenarios.load("paper")
    for a in s.foreground:
        assert a.peak_anon_mb is not None and a.anon_mb < a.peak_anon_mb <= 2.5 * a.anon_mb
        assert 0 < a.resume_work_ms <= a.init_work_ms
    assert all(a.launch_threads == 3 for a in s.apps)


def test_zygote_is_required_and_reaches_the_runtime_at_guest_scale(tmp_path):
    app = '[[foreground]]\nname = "a"\nanon_mb = 10\n'
    with pytest.raises(UserError, match="zygote"):
        _scenario(tmp_path, BASE.replace("zygote = { shared_mb = 0 }\n", "") + app)
    with pytest.raises(UserError, match=r"\[zygote\]: unknown key\(s\) shared"):
        _scenario(tmp_path, BASE.replace("shared_mb = 0", "shared = 1") + app)
    s = _scenario(tmp_path, BASE.replace("shared_mb = 0", "shared_mb = 22") + app)
    prof = profiles.load("pixel6pro")
    built = spec.build(
        run_id="r",
        out_dir=tmp_path,
        seed=1,
        scenario=s,
        profile=prof,
        scheme=schemes.resolve("original", prof),
        work_iters_per_ms=1.0,
    )
    assert built["zygote"] == {"shared_mb": prof.scale_mb(22)}
    assert spec.footprint_mb(built) == built["apps"][0]["anon_mb"] + 1 + prof.scale_mb(22)
    none = _scenario(tmp_path, BASE + app)
    assert none.zygote_shared_mb == 0


def test_acclaim_marks_background_apps_and_takes_its_bounds_from_the_profile():
    prof = profiles.load("pixel6pro")
    acclaim = schemes.resolve("acclaim", prof)
    assert acclaim.background == {"file": "memory.acclaim_bg", "apps": "not-foreground"}
    static = schemes.resolve("acclaim-static", prof)
    assert static.background == {"file": "memory.acclaim_bg", "apps": "scenario-background"}
    assert static.knobs == acclaim.knobs
    # the public code's 8,020 and 8,856 pages (32,080 and 35,424 kB) x the scale
    for name, bounds in (("pixel6pro", (8020, 8856)), ("pixel6pro-zram", (5348, 5905))):
        p = profiles.load(name)
        assert p.acclaim_lwp_goal_kb == bounds
        knobs_of = {k["path"]: k["value"] for k in schemes.resolve("acclaim", p).knobs}
        assert knobs_of["/sys/kernel/mm/acclaim/lwp_goal_min_kbytes"] == str(bounds[0])
        assert knobs_of["/sys/kernel/mm/acclaim/lwp_goal_max_kbytes"] == str(bounds[1])
    knobs = [k["path"].rsplit("/", 1)[-1] for k in acclaim.knobs]
    # the lower bound first: the kernel refuses a min above the max
    assert knobs.index("lwp_goal_min_kbytes") < knobs.index("lwp_goal_max_kbytes")
    assert {"path": "/sys/kernel/mm/lru_gen/enabled", "value": "n"} in acclaim.knobs
    assert schemes.resolve("original", prof).background is None
    # an override of one knob keeps the marks
    off = schemes.resolve("acclaim@lwp_enabled=0", prof)
    assert {"path": "/sys/kernel/mm/acclaim/lwp_enabled", "value": "0"} in off.knobs
    assert off.background == acclaim.background


def test_spec_of_acclaim_with_pmr_has_the_marks_and_the_scaled_bounds(tmp_path):
    prof = profiles.load("pixel6pro")

    def build(name: str) -> dict:
        return spec.build(
            run_id="r",
            out_dir=tmp_path,
            seed=1,
            scenario=scenarios.load("paper"),
            profile=prof,
            scheme=schemes.resolve(name, prof),
            work_iters_per_ms=1.0,
        )

    both = build("acclaim+pmr")["scheme"]
    assert both["background"] == {"file": "memory.acclaim_bg", "apps": "not-foreground"}
    knobs = {k["path"]: k["value"] for k in both["knobs"]}
    assert knobs["/sys/kernel/mm/acclaim/lwp_goal_min_kbytes"] == "8020"
    assert knobs["/sys/kernel/mm/acclaim/lwp_goal_max_kbytes"] == "8856"
    assert knobs["/sys/kernel/mm/acclaim/fae_enabled"] == "1"
    assert knobs["/sys/kernel/mm/pmr/enabled"] == "2"
    assert both["kthreads"][0]["comm"] == "kswapd"
    # every other scheme's spec.json is as before: no background key at all
    assert "background" not in build("original")["scheme"]
    assert build("acclaim-static")["scheme"]["background"]["apps"] == "scenario-background"


@pytest.mark.parametrize(
    "table, error",
    [
        ('file = "memory.acclaim_bg"\napps = "all"\n', "apps 'all' must be one of not-foreground"),
        ('file = "cgroup.procs"\napps = "not-foreground"\n', "must be a memory controller file"),
        ('file = "../memory.x"\napps = "not-foreground"\n', "must be a memory controller file"),
        ('apps = "not-foreground"\n', "missing `file`"),
        (
            'file = "memory.acclaim_bg"\napps = "not-foreground"\nwhen = 1\n',
            "`when` is not a setting of \\[background\\] \\(it takes file, apps\\)",
        ),
    ],
)
def test_background_marks_are_checked(tmp_path, monkeypatch, table, error):
    from pmr_testbed import paths

    (tmp_path / "b.toml").write_text('name = "b"\n[background]\n' + table)
    monkeypatch.setattr(paths, "SCHEMES_DIR", tmp_path)
    with pytest.raises(UserError, match=error):
        schemes.resolve("b", profiles.load("pixel5"))


def test_background_marks_combine_only_alike(tmp_path, monkeypatch):
    from pmr_testbed import paths

    for name in ("acclaim", "acclaim-static", "pmr"):
        shutil.copy(paths.SCHEMES_DIR / f"{name}.toml", tmp_path)
    (tmp_path / "marks.toml").write_text(
        'name = "marks"\nmodifier = true\n[background]\nfile = "memory.acclaim_bg"\n'
        'apps = "not-foreground"\n'
    )
    monkeypatch.setattr(paths, "SCHEMES_DIR", tmp_path)
    prof = profiles.load("pixel5")
    assert schemes.resolve("pmr+marks", prof).background["apps"] == "not-foreground"
    assert schemes.resolve("acclaim+marks", prof).background["apps"] == "not-foreground"
    with pytest.raises(UserError, match="mark background apps differently"):
        schemes.resolve("acclaim-static+marks", prof)


def test_a_knob_naming_a_field_the_profile_lacks_is_refused(tmp_path, monkeypatch):
    from pmr_testbed import paths

    (tmp_path / "k.toml").write_text(
        'name = "k"\n[[knobs]]\npath = "/sys/kernel/mm/pmr/unmap_unit_kbytes"\n'
        'value = "{pmr.unmap_unit_mb}"\n'
    )
    monkeypatch.setattr(paths, "SCHEMES_DIR", tmp_path)
    with pytest.raises(UserError, match=r"profile pixel5 has no field pmr\.unmap_unit_mb"):
        schemes.resolve("k", profiles.load("pixel5"))


def test_a_profile_that_writes_acclaims_derived_bounds_is_refused(tmp_path):
    from pmr_testbed import paths, tomlfile

    f = tmp_path / "p.toml"
    f.write_text(
        (paths.PROFILES_DIR / "pixel5.toml").read_text()
        + "\n[acclaim]\nlwp_goal_min_kb = 8020\nlwp_goal_max_kb = 8856\n"
    )
    derived = r"\[acclaim\] is derived, not written: .*32,080 and 35,424"
    with pytest.raises(UserError, match=derived):
        profiles.parse(tomlfile.load(f, "profile"), f)
