"""SWAM: the zram+flash profile medium, the schemes' `[swap] tiers` and
`[swam]` tables from file to spec.json and knobs, the apps' shared
objects' data (`so_mb`) that the OOM cleaner swap-cleans, and the analysis
and report of what the guest writes for them (swam_* events, kills with
EOOM's launch costs, both tiers' writes, swap-clean and its cost)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakerun import kill, switch, write_campaign, write_run
from fakespec import build_spec
from pmr_testbed import paths, schema, tomlfile
from pmr_testbed.analysis.metrics import load_run
from pmr_testbed.analysis.swam import (
    cleaner_figures,
    eoom_figures,
    relaunch_cost_ms,
    relaunches,
    swapd_figures,
)
from pmr_testbed.config import paper, profiles, scenarios, schemes
from pmr_testbed.config import spec as spec_json
from pmr_testbed.errors import UserError
from pmr_testbed.report.campaign_report import disk_share_lines, write_report
from pmr_testbed.report.summary import swam_pairs, validate_summary, write_summary
from pmr_testbed.workflows import reliability

ROOT = Path(__file__).resolve().parents[2]
SWAPD = {"period_ms": 1000.0, "chunk_mb": 21.3, "max_files": 23, "low_mb": 85.4, "high_mb": 128.0}
EOOM = {"launch_adj_max": 100}
CLEANER: dict = {}  # [swam.cleaner] has no settings
# [swam.wsp] at pixel6pro-swam's scale (0.1667): 150 MB -> 25,605 kB
FLOORS = [
    {"path": "/proc/sys/vm/clean_low_kbytes", "value": "25605"},
    {"path": "/proc/sys/vm/clean_min_kbytes", "value": "0"},
    {"path": "/proc/sys/vm/anon_min_kbytes", "value": "0"},
]
LRU = {"path": "/sys/kernel/mm/lru_gen/enabled", "value": "n"}
FLOORS_SCHEME = (
    'name = "floors"\n[swam.wsp]\nclean_low_mb = 150.0\nclean_min_mb = 0.0\nanon_min_mb = 0.0\n'
)


def _build(scheme: str, profile: str = "pixel6pro-swam", scenario: str = "smoke") -> dict:
    return build_spec(scheme, profile, scenario)


# ---- the zram+flash profile ------------------------------------------------------------


def test_pixel6pro_swam_is_pixel6pro_with_swams_two_tiers():
    p, base = profiles.load("pixel6pro-swam"), profiles.load("pixel6pro")
    zram = profiles.load("pixel6pro-zram")
    assert (p.swap, p.phone_swap_mb, p.phone_zram_mb) == ("zram+flash", 3072, 1024)
    assert (p.guest_swap_mb, p.guest_zram_mb) == (512, 170)  # x 0.1667, as every size
    assert p.swaps_to_disk and p.two_tiers and p.heap_random_words == 204  # 2.5:1
    # everything else is the Pixel 6 Pro's: its flash, and the guest and
    # watermarks of the zram profiles' scale
    assert p.scale == zram.scale
    assert (p.guest_ram_mb, p.cpus, p.unmap_unit_kb) == (zram.guest_ram_mb, 2, 16384)
    assert p.watermarks() == zram.watermarks()
    assert p.qemu_limits(60.0) == base.qemu_limits(60.0)
    assert p.acclaim_lwp_goal_kb == zram.acclaim_lwp_goal_kb
    for other in ("pixel6pro", "pixel6pro-zram"):
        assert not profiles.load(other).two_tiers
    assert profiles.load("pixel6pro").guest_zram_mb == 0
    assert profiles.load("pixel6pro-zram").guest_zram_mb == 341  # its swap_mb


def test_the_two_tiers_are_swapped_on_both():
    assert _build("original")["swap"] == {"serial": "pmrswap", "zram_mb": 170, "disk": True}
    assert _build("original", profile="pixel6pro")["swap"]["zram_mb"] == 0
    assert _build("original", profile="pixel6pro-zram")["swap"]["disk"] is False


def _profile(tmp_path, old: str, new: str, source: str = "pixel6pro-swam") -> Path:
    text = (paths.PROFILES_DIR / f"{source}.toml").read_text()
    assert old in text
    f = tmp_path / "p.toml"
    f.write_text(text.replace(old, new))
    return f


@pytest.mark.parametrize(
    ("source", "old", "new", "error"),
    [
        ("pixel6pro-swam", "size_mb = 1024\n", "", r"\[zram\]: missing `size_mb`"),
        (
            "pixel6pro-swam",
            "size_mb = 1024",
            "size_mb = 0",
            r"\[zram\]: size_mb \(the zram tier, phone MB\) must be > 0, got 0",
        ),
        ("pixel6pro-swam", "size_mb = 1024", "size_mb = -1", "must be > 0, got -1"),
        ("pixel6pro-swam", "size_mb = 1024", "size_mb = 1024.5", "`size_mb` has the wrong type"),
        ("pixel6pro-swam", "compression_ratio = 2.5\n", "", "missing `compression_ratio`"),
        (
            "pixel6pro-swam",
            'swap = "zram+flash"',
            'swap = "flash+zram"',
            r"swap 'flash\+zram' must be one of flash, zram, zram\+flash",
        ),
        (
            "pixel6pro-zram",
            "compression_ratio = 2.5",
            "compression_ratio = 2.5\nsize_mb = 1024",
            r'size_mb is for a profile with \[phone\] swap = "zram\+flash"',
        ),
        (
            "pixel6pro-swam",
            'swap = "zram+flash"',
            'swap = "flash"',
            r'\[zram\] is for a profile with \[phone\] swap = "zram" or "zram\+flash"',
        ),
    ],
)
def test_bad_two_tier_profiles_are_one_line(tmp_path, source, old, new, error):
    f = _profile(tmp_path, old, new, source)
    with pytest.raises(UserError, match=error) as raised:
        profiles.parse(tomlfile.load(f, "profile"), f)
    assert "\n" not in str(raised.value)


# ---- [swap] tiers ----------------------------------------------------------------------


def test_the_baselines_keep_one_tier_each():
    zram, flash = _build("zram-only"), _build("flash-only")
    assert zram["swap"] == {"serial": "pmrswap", "zram_mb": 170, "disk": False}
    assert flash["swap"] == {"serial": "pmrswap", "zram_mb": 0, "disk": True}
    # same knobs as original (classic LRU), nothing of SWAM
    for built in (zram, flash):
        assert built["scheme"]["knobs"] == [LRU] and "swam" not in built["scheme"]
        assert schema.problems("spec", built) == []
    # combined with a scheme that sets no tier, the tier stays
    assert _build("zram-only+pmr")["swap"]["disk"] is False
    assert schemes.resolve("zram-only+zram-only", profiles.load("pixel6pro-swam")).tiers == "zram"


@pytest.mark.parametrize("profile", ["pixel6pro", "pixel6pro-zram"])
@pytest.mark.parametrize("scheme", ["zram-only", "flash-only", "pmr+flash-only"])
def test_a_tier_needs_a_two_tier_profile(profile, scheme):
    with pytest.raises(UserError, match="picks a tier of a zram\\+flash profile") as raised:
        schemes.resolve(scheme, profiles.load(profile))
    message = str(raised.value)
    assert "\n" not in message and f"profile {profile} swaps to" in message
    assert "pixel6pro-swam" in message


def test_two_different_tiers_cannot_be_combined():
    with pytest.raises(UserError, match="keep the zram and the flash tier: they cannot be"):
        schemes.resolve("zram-only+flash-only", profiles.load("pixel6pro-swam"))


def _scheme_dir(tmp_path, monkeypatch, **files: str):
    for name in ("original", "pmr", "swam", "zram-only", "flash-only"):
        shutil.copy(paths.SCHEMES_DIR / f"{name}.toml", tmp_path)
    for name, text in files.items():
        (tmp_path / f"{name}.toml").write_text(text)
    monkeypatch.setattr(paths, "SCHEMES_DIR", tmp_path)


@pytest.mark.parametrize(
    ("table", "error"),
    [
        ('swap = "zram"\n', r"\[swap\]: must be a table with `tiers`"),
        ('[swap]\ntiers = "nand"\n', "tiers 'nand' must be one of zram, flash"),
        ("[swap]\n", r"\[swap\]: missing `tiers`"),
        ('[swap]\ntiers = "zram"\nzram_mb = 1\n', r"`zram_mb` is not a setting of \[swap\]"),
    ],
)
def test_swap_tables_are_checked(tmp_path, monkeypatch, table, error):
    _scheme_dir(tmp_path, monkeypatch, bad='name = "bad"\n' + table)
    with pytest.raises(UserError, match=error) as raised:
        schemes.resolve("bad", profiles.load("pixel6pro-swam"))
    assert "\n" not in str(raised.value) and "scheme bad.toml [swap]" in str(raised.value)


def test_pmrtb_run_refuses_a_tier_on_a_flash_profile_in_one_line(tmp_path):
    out = tmp_path / "out"
    res = subprocess.run(
        [sys.executable, "-m", "pmr_testbed.cli", "run", "--scenario", "smoke"]
        + ["--profile", "pixel6pro", "--schemes", "original,zram-only", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "harness"), "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 2, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "[swap] tiers picks a tier" in lines[0]
    assert not out.exists()


# ---- [swam] ----------------------------------------------------------------------------


def test_swam_loads_in_phone_mb_and_scales_into_spec_and_knobs():
    loaded = schemes.load("swam")
    assert loaded.swam == {
        "swapd": {
            "period_ms": 1000.0,
            "chunk_mb": 128.0,
            "max_files": 23,
            "low_mb": 512.0,
            "high_mb": 768.0,
        },
        "eoom": EOOM,
        "wsp": {"clean_low_mb": 150.0, "clean_min_mb": 0.0, "anon_min_mb": 0.0},
        "cleaner": CLEANER,
    }
    assert loaded.knobs == [LRU]  # the floors need the profile's scale
    built = _build("swam")
    # guest MB: 128, 512 and 768 phone MB x 0.1667, to a tenth
    assert built["scheme"]["swam"] == {"swapd": SWAPD, "eoom": EOOM, "cleaner": CLEANER}
    assert built["scheme"]["knobs"] == [LRU, *FLOORS]
    assert built["swap"] == {"serial": "pmrswap", "zram_mb": 170, "disk": True}
    assert schema.problems("spec", built) == []


def test_swam_combines_with_pmr():
    built = _build("swam+pmr")
    assert built["scheme"]["swam"] == {"swapd": SWAPD, "eoom": EOOM, "cleaner": CLEANER}
    knobs = {k["path"]: k["value"] for k in built["scheme"]["knobs"]}
    assert knobs[schemes.PMR_ENABLED] == "2" and knobs["/proc/sys/vm/clean_low_kbytes"] == "25605"
    assert built["scheme"]["kthreads"][0]["comm"] == "kswapd"  # pmr's
    assert schema.problems("spec", built) == []
    assert _build("pmr+swam")["scheme"]["swam"] == built["scheme"]["swam"]


def test_a_floor_is_a_knob_that_overrides_name(tmp_path, monkeypatch):
    prof = profiles.load("pixel6pro-swam")
    knobs = schemes.resolve("swam@clean_low_kbytes=0", prof).knobs
    assert {"path": "/proc/sys/vm/clean_low_kbytes", "value": "0"} in knobs
    # scaled by the profile's scale: pixel3-zram's is 1/4
    _scheme_dir(tmp_path, monkeypatch, floors=FLOORS_SCHEME)
    other = schemes.resolve("floors", profiles.load("pixel3-zram"))
    assert other.knobs[0] == {"path": "/proc/sys/vm/clean_low_kbytes", "value": "38400"}


def test_the_swap_daemon_needs_the_flash_tier():
    # a flash profile's swap disk takes the files (the zram tier is just
    # absent): 128 phone MB at pixel6pro's scale
    assert _build("swam", profile="pixel6pro")["scheme"]["swam"]["swapd"]["chunk_mb"] == 32.0
    with pytest.raises(UserError, match="which profile pixel6pro-zram does not swap on") as raised:
        schemes.resolve("swam", profiles.load("pixel6pro-zram"))
    assert "\n" not in str(raised.value)
    with pytest.raises(UserError, match=r'\[swap\] tiers = "zram" leaves unused'):
        schemes.resolve("swam+zram-only", profiles.load("pixel6pro-swam"))
    # with the flash tier alone it has its disk
    flash = schemes.resolve("swam+flash-only", profiles.load("pixel6pro-swam"))
    assert flash.tiers == "flash" and flash.swam["swapd"]["max_files"] == 23


def test_two_swams_are_refused():
    with pytest.raises(UserError, match=r"schemes swam and swam both have \[swam\]"):
        schemes.resolve("swam+swam", profiles.load("pixel6pro-swam"))


SWAPD_TABLE = (
    "[swam.swapd]\nperiod_ms = 1000.0\nchunk_mb = 128.0\nmax_files = 24\n"
    "low_mb = 64.0\nhigh_mb = 256.0\n"
)


@pytest.mark.parametrize(
    ("table", "error"),
    [
        ('swam = "on"\n', r"\[swam\]: must be a table with \[swam.swapd\], \[swam.eoom\]"),
        ("[swam]\n", r"\[swam\]: needs one of \[swam.swapd\]"),
        ("[swam]\nswapd = 1\n", r"\[swam.swapd\]: must be a table"),
        ("[swam.oomk]\nx = 1\n", r"`oomk` is not a setting of \[swam\]"),
        (SWAPD_TABLE + "nice = -4\n", r"`nice` is not a setting of \[swam.swapd\]"),
        (SWAPD_TABLE.replace("period_ms = 1000.0", "period_ms = 0"), "`period_ms` must be > 0"),
        (SWAPD_TABLE.replace("chunk_mb = 128.0", "chunk_mb = -1"), "`chunk_mb` must be > 0"),
        (SWAPD_TABLE.replace("= 24", "= 25"), "max_files must be 1..24, got 25"),
        (SWAPD_TABLE.replace("= 24", "= 0"), "max_files must be 1..24, got 0"),
        (SWAPD_TABLE.replace("= 24", "= 2.0"), "`max_files` has the wrong type"),
        (SWAPD_TABLE.replace("low_mb = 64.0", "low_mb = -1"), "`low_mb` must be >= 0"),
        (
            SWAPD_TABLE.replace("high_mb = 256.0", "high_mb = 191.0"),
            r"high_mb \(191\) must be at least low_mb \+ chunk_mb \(192\)",
        ),
        (SWAPD_TABLE.replace("low_mb = 64.0\n", ""), "missing `low_mb`"),
        ("[swam.eoom]\nlaunch_adj_max = 0\n", "launch_adj_max must be 1..1000, got 0"),
        ("[swam.eoom]\nlaunch_adj_max = 1001\n", "launch_adj_max must be 1..1000, got 1001"),
        ("[swam.eoom]\n", r"\[swam.eoom\]: missing `launch_adj_max`"),
        (
            "[swam.wsp]\nclean_low_mb = -1.0\nclean_min_mb = 0.0\nanon_min_mb = 0.0\n",
            "`clean_low_mb` must be >= 0",
        ),
        ("[swam.wsp]\nclean_low_mb = 150.0\n", r"\[swam.wsp\]: missing `clean_min_mb`"),
        (
            '[[knobs]]\npath = "/proc/sys/vm/clean_low_kbytes"\nvalue = "1"\n'
            "[swam.wsp]\nclean_low_mb = 1.0\nclean_min_mb = 0.0\nanon_min_mb = 0.0\n",
            r"\[swam.wsp\] writes /proc/sys/vm/clean_low_kbytes, which its \[\[knobs\]\] set too",
        ),
        (
            # a size that rounds to nothing in the guest
            SWAPD_TABLE.replace("chunk_mb = 128.0", "chunk_mb = 0.2"),
            r"at profile pixel6pro-swam's scale \(0.1667\) chunk_mb is 0 guest MB",
        ),
        (
            "[swam.cleaner]\nmin_free_swap_percent = 20\n",
            r"\[swam.cleaner\]: `min_free_swap_percent` is not a setting of \[swam.cleaner\]",
        ),
        ("[swam]\ncleaner = true\n", r"\[swam.cleaner\]: must be a table"),
    ],
)
def test_swam_tables_are_checked_in_one_line(tmp_path, monkeypatch, table, error):
    _scheme_dir(tmp_path, monkeypatch, bad='name = "bad"\n' + table)
    with pytest.raises(UserError, match=error) as raised:
        schemes.resolve("bad", profiles.load("pixel6pro-swam"))
    assert "\n" not in str(raised.value) and "bad" in str(raised.value)


def test_a_swam_with_one_part_writes_only_it(tmp_path, monkeypatch):
    _scheme_dir(
        tmp_path,
        monkeypatch,
        eoom='name = "eoom"\n[swam.eoom]\nlaunch_adj_max = 300\n',
        floors='name = "floors"\n[swam.wsp]\nclean_low_mb = 0.0\nclean_min_mb = 60.0\n'
        "anon_min_mb = 30.0\n",
        cleaner='name = "cleaner"\n[swam.cleaner]\n',
    )
    assert _build("eoom")["scheme"]["swam"] == {"eoom": {"launch_adj_max": 300}}
    cleaner = _build("cleaner")
    assert cleaner["scheme"]["swam"] == {"cleaner": {}}  # the empty table is on
    assert cleaner["scheme"]["knobs"] == [] and schema.problems("spec", cleaner) == []
    # combined with pmr, on a flash profile: no swap disk needed
    assert _build("cleaner+pmr", profile="pixel6pro")["scheme"]["swam"] == {"cleaner": {}}
    floors = _build("floors")
    assert "swam" not in floors["scheme"]  # the floors are knobs alone
    assert floors["scheme"]["knobs"] == [
        {"path": "/proc/sys/vm/clean_low_kbytes", "value": "0"},
        {"path": "/proc/sys/vm/clean_min_kbytes", "value": "10242"},  # 60 x 0.1667 x 1024
        {"path": "/proc/sys/vm/anon_min_kbytes", "value": "5121"},
    ]


def test_the_reliability_check_refuses_the_daemon_eoom_and_zram_alone(tmp_path, monkeypatch):
    def plan(scheme: str, profile: str = "pixel6pro"):
        return reliability.plan(reliability.ReliabilityRequest(profile, scheme, tmp_path / "o"))

    _scheme_dir(
        tmp_path, monkeypatch, cleaner='name = "cleaner"\n[swam.cleaner]\n', floors=FLOORS_SCHEME
    )
    for name in ("swam", "swam+pmr", "cleaner"):
        with pytest.raises(UserError, match=r"has \[swam.swapd\] or \[swam.eoom\]") as raised:
            plan(name)
        assert "\n" not in str(raised.value) and "[swam.cleaner]" in str(raised.value)
    with pytest.raises(UserError, match="swaps to zram alone: the reliability check needs"):
        plan("zram-only", "pixel6pro-swam")
    # the floors alone are knobs, which it writes as any scheme's
    try:
        plan("floors")
    except UserError as e:  # a host without stress-ng or KVM stops it later
        assert "swam" not in str(e)


def test_the_thorough_evaluation_leaves_the_zram_flash_schemes_out():
    found = paper.discover_schemes()
    assert not {"swam", "zram-only", "flash-only"} & set(found)
    assert "ice" in found and "skew" in found


# ---- the apps' shared objects' data (so_mb) --------------------------------------------

SO_LINES = "so_mb = 4\nso_reloc_us_per_page = 30.0\n"


def _so_scenario(tmp_path, lines: str = SO_LINES) -> scenarios.Scenario:
    """smoke with `lines` in chrome's table."""
    text = (paths.SCENARIOS_DIR / "smoke.toml").read_text()
    anchor = 'name = "chrome"\n'
    assert anchor in text
    f = tmp_path / "so.toml"
    f.write_text(text.replace(anchor, anchor + lines, 1))
    return scenarios.parse(tomlfile.load(f, "scenario"), f)


def test_so_pages_are_off_unless_an_app_has_them(tmp_path):
    smoke = scenarios.load("smoke")
    assert all(a.so_mb == 0 and a.so_reloc_us_per_page == 0 for a in smoke.apps)
    # spec.json is as it was without them, the cleaner's scheme too
    for scheme in ("swam", "original"):
        assert not any("so_mb" in a or "so_reloc_us_per_page" in a for a in _build(scheme)["apps"])
    s = _so_scenario(tmp_path)
    chrome = next(a for a in s.apps if a.name == "chrome")
    assert (chrome.so_mb, chrome.so_reloc_us_per_page) == (4, 30.0)
    assert all(a.so_mb == 0 for a in s.apps if a.name != "chrome")


def test_so_pages_scale_into_spec_json(tmp_path):
    prof = profiles.load("pixel6pro-swam")
    built = spec_json.build(
        run_id="r",
        out_dir=paths.RESULTS_DIR,
        seed=1,
        scenario=_so_scenario(tmp_path),
        profile=prof,
        scheme=schemes.resolve("swam", prof),
        work_iters_per_ms=1.0,
    )
    apps = {a["name"]: a for a in built["apps"]}
    # MB scaled to the hundredth, not to whole MB; µs of CPU work as given
    assert apps["chrome"]["so_mb"] == round(4 * prof.scale, 2) == 0.67
    assert apps["chrome"]["so_reloc_us_per_page"] == 30.0
    assert "so_mb" not in apps["youtube"]
    assert schema.problems("spec", built) == []
    assert spec_json.footprint_mb(built) > spec_json.footprint_mb(_build("swam"))


@pytest.mark.parametrize(
    ("lines", "error"),
    [
        ("so_mb = -1\n", "`so_mb` must be >= 0"),
        ("so_mb = 121\n", r"`so_mb` \(121\) must be <= file_mb \(120\)"),
        ("so_mb = 4\nso_reloc_us_per_page = -2\n", "`so_reloc_us_per_page` must be >= 0"),
        ('so_mb = "4"\n', "`so_mb` has the wrong type"),
    ],
)
def test_so_levers_are_checked_in_one_line(tmp_path, lines, error):
    with pytest.raises(UserError, match=error) as raised:
        _so_scenario(tmp_path, lines)
    assert "\n" not in str(raised.value) and "(chrome)" in str(raised.value)


# ---- the analysis ----------------------------------------------------------------------


def _cost(files_ms: float, init_ms: float) -> dict:
    return {"files_ms": files_ms, "init_ms": init_ms, "heap_ms": 50.0, "wall_ms": 400.0}


def _launch(app: str, kind: str, t_ms: int, cost: dict | None = None) -> dict:
    e = {"t_ms": t_ms, "type": "launch", "app": app, "kind": kind, "response_ms": 500.0,
         "role": "background_use"}  # fmt: skip
    return e | ({"cost": cost} if cost else {})


def test_relaunches_are_the_cold_launches_after_a_kill_of_their_app():
    events = [
        switch("chrome", "cold", 900.0, t_ms=1000) | {"cost": _cost(100, 200)},  # first launch
        kill("chrome", "low_mem_and_swap", t_ms=2000),
        kill("youtube", "low_mem_and_swap", t_ms=2100),
        switch("chrome", "cold", 800.0, t_ms=3000) | {"cost": _cost(40, 60)},  # a relaunch
        switch("chrome", "hot", 100.0, t_ms=4000),
        _launch("youtube", "cold", 5000, _cost(10, 30)),  # background use relaunches it
        kill("chrome", "low_mem_and_swap", t_ms=6000),
        switch("chrome", "cold", 700.0, t_ms=7000),  # no cost measured
    ]
    again = relaunches(events)
    assert [(e["app"], e["t_ms"]) for e in again] == [
        ("chrome", 3000),
        ("youtube", 5000),
        ("chrome", 7000),
    ]
    assert relaunch_cost_ms(again) == pytest.approx((100 + 40) / 2)
    assert relaunch_cost_ms([]) is None


def _swapfile(t_ms, action, files, ms):
    return {"t_ms": t_ms, "type": "swam_swapfile", "action": action, "files": files,
            "spare_kb": 9000, "ms": ms}  # fmt: skip


def test_the_daemons_files_and_the_flash_tiers_size():
    events = [
        _swapfile(1000, "add", 1, 30.0),
        _swapfile(2000, "add", 2, 50.0),
        _swapfile(3000, "add", 3, 40.0),
        _swapfile(9000, "remove", 2, 900.0),
        {"t_ms": 10000, "type": "swam_end", "files": 2, "max_files_used": 3},
    ]
    assert swapd_figures(events, 21.3) == {
        "added": 3,
        "removed": 1,
        "add_ms_mean": 40.0,
        "add_ms_max": 50.0,
        "remove_ms_mean": 900.0,
        "remove_ms_max": 900.0,
        "files_max": 3,
        "files_end": 2,
        "tier_peak_mb": pytest.approx(63.9),
    }
    # without swam_end (a run cut short): the events' largest count, no end
    cut = swapd_figures(events[:4], None)
    assert (cut["files_max"], cut["files_end"], cut["tier_peak_mb"]) == (3, None, None)
    assert swapd_figures([], 21.3)["add_ms_mean"] is None


def _clean(t_ms, app, pages, relieved, ms=2.0):
    return {
        "t_ms": t_ms,
        "type": "swam_clean",
        "app": app,
        "pid": 40 + t_ms % 10,
        "pages": pages,
        "swap_free_kb_after": 80000,
        "ms": ms,
        "relieved": relieved,
    }


def _so_cost(regenerated: int, so_ms: float) -> dict:
    return {"heap_ms": 20.0, "files_ms": 5.0, "so_ms": so_ms, "so_regenerated": regenerated,
            "wall_ms": 40.0}  # fmt: skip


def test_cleaner_figures_count_cleans_pages_avoided_kills_and_regenerations():
    events = [
        _clean(1000, "whatsapp", 300, False, ms=1.0),
        _clean(1001, "firefox", 500, True, ms=3.0),  # swap relieved: no kill
        _clean(5000, "whatsapp", 0, False, ms=2.0),
        kill("whatsapp", "low_mem_and_swap", t_ms=5002),
        switch("firefox", "hot", 300.0, t_ms=6000) | {"cost": _so_cost(120, 30.0)},
        switch("chrome", "hot", 100.0, t_ms=7000) | {"cost": _so_cost(0, 10.0)},
        _launch("spotify", "hot", 8000, _so_cost(5, 2.0)),
        # a cold launch relocates everything: not a regeneration
        switch("whatsapp", "cold", 900.0, t_ms=9000) | {"cost": _cost(10, 20) | {"so_ms": 80.0}},
        switch("youtube", "hot", 100.0, t_ms=9500),  # no SO data: no cost
    ]
    assert cleaner_figures(events) == {
        "cleans": 3,
        "pages": 800,
        "kills_avoided": 1,
        "clean_ms_mean": 2.0,
        "so_regenerated": 125,
        "so_ms_mean": pytest.approx(14.0),
    }
    assert cleaner_figures([]) == {
        "cleans": 0,
        "pages": 0,
        "kills_avoided": 0,
        "clean_ms_mean": None,
        "so_regenerated": 0,
        "so_ms_mean": None,
    }


def test_the_relaunch_cost_counts_the_relocation_where_measured():
    launches = [
        switch("chrome", "cold", 900.0) | {"cost": _cost(100, 200) | {"so_ms": 60.0}},
        switch("youtube", "cold", 900.0) | {"cost": _cost(40, 60)},
    ]
    assert relaunch_cost_ms(launches) == pytest.approx((360 + 100) / 2)


def test_eoom_figures_weigh_the_victims_with_a_known_cost():
    kills = [
        kill("a", "low_mem_and_swap") | {"launch_adj": 100, "relaunch_ms": 120.0},
        kill("b", "low_mem_and_swap") | {"launch_adj": 0, "relaunch_ms": None},
        kill("c", "low_mem_and_swap") | {"launch_adj": 50, "relaunch_ms": 200.0},
    ]
    assert eoom_figures(kills) == {
        "kills_costed": 2,
        "victim_relaunch_ms": 160.0,
        "launch_adj_mean": 50.0,
    }
    assert eoom_figures([])["victim_relaunch_ms"] is None


# ---- runs, summary and report ----------------------------------------------------------

SECTOR_MB = 2**20 // 512
# per scheme: (kills, relaunch cost files + init ms, cold ms, hot ms, pswpout MB, disk MB)
RUNS = {
    "zram-only": (6, (60.0, 140.0), 2000.0, 500.0, 300, 0),
    "flash-only": (4, (80.0, 120.0), 2600.0, 700.0, 300, 300),
    "swam": (1, (20.0, 40.0), 1200.0, 300.0, 300, 100),
    "original": (4, (80.0, 120.0), 2600.0, 700.0, 300, 300),
}


def _swam_run(run_dir: Path, scheme: str, rep: int, profile: str = "pixel6pro-swam") -> Path:
    """A run on pixel6pro-swam as the guest would write it: kills of
    background apps relaunched cold by background use, the switches, both
    tiers' writes, and for swam its daemon's files and EOOM's costs."""
    kills_n, (files_ms, init_ms), cold_ms, hot_ms, out_mb, disk_mb = RUNS[scheme]
    switches = [
        switch("chrome", "cold", cold_ms + 10 * rep, 0, t_ms=3000) | {"cost": _cost(90, 300)},
        switch("youtube", "cold", cold_ms, 0, t_ms=6000),
        switch("chrome", "hot", hot_ms + 10 * rep, 1, t_ms=9000),
        switch("youtube", "hot", hot_ms, 1, t_ms=12000),
    ]
    eoom = {"launch_adj": 100, "relaunch_ms": files_ms + init_ms} if scheme == "swam" else {}
    kills = [kill(f"bg{i}", "low_mem_and_swap", t_ms=10000 + i) | eoom for i in range(kills_n)]
    extra = [_launch(f"bg{i}", "cold", 14000 + i, _cost(files_ms, init_ms)) for i in range(kills_n)]
    if scheme == "swam":
        extra += [
            _swapfile(4000, "add", 1, 30.0),
            _swapfile(5000, "add", 2, 50.0),
            _swapfile(15000, "remove", 1, 800.0),
            {"t_ms": 19000, "type": "swam_end", "files": 1, "max_files_used": 2},
            _clean(9990, "bg0", 256, True),  # swap-clean spared a kill
        ]
    samples = list(range(0, 20001, 1000))
    write_run(
        run_dir,
        switches=switches,
        kills=kills,
        sample_t_ms=samples,
        write_sectors=[disk_mb * SECTOR_MB * i // (len(samples) - 1) for i in range(len(samples))],
        vmstat_increments={"pswpout": out_mb * 256},
        extra_events=extra,
    )
    (run_dir / "spec.json").write_text(json.dumps(_build(scheme, profile)))
    return run_dir


def test_a_run_gives_both_tiers_writes_and_swams_parts(tmp_path):
    m = load_run(_swam_run(tmp_path / "swam-r1", "swam", 1))
    swam = m.swam
    assert (m.kills, swam["relaunches"], swam["relaunch_cost_ms"]) == (1, 1, 60.0)
    assert swam["launch_ms"] == {"p50": pytest.approx(1205.0), "p90": pytest.approx(1209.0)}
    assert swam["response_ms"]["p50"] == pytest.approx(755.0)
    assert swam["flash_write_mb"] == pytest.approx(100.0)
    assert swam["zram_write_mb"] == pytest.approx(200.0)  # 300 swapped out, 100 to the disk
    assert swam["swapd"]["tier_peak_mb"] == pytest.approx(42.6)  # 2 files of 21.3 MB
    assert swam["eoom"] == {"kills_costed": 1, "victim_relaunch_ms": 60.0, "launch_adj_mean": 100}
    assert swam["wsp_kb"] == {"clean_low": 25605, "clean_min": 0, "anon_min": 0}
    assert swam["cleaner"] == {
        "cleans": 1,
        "pages": 256,
        "kills_avoided": 1,
        "clean_ms_mean": 2.0,
        "so_regenerated": 0,
        "so_ms_mean": None,
    }
    # a baseline has the common figures only; no zram tier, no zram writes
    flash = load_run(_swam_run(tmp_path / "flash-only-r1", "flash-only", 1)).swam
    assert flash["zram_write_mb"] is None and flash["flash_write_mb"] == pytest.approx(300.0)
    assert not {"swapd", "eoom", "wsp_kb", "cleaner"} & set(flash)
    zram = load_run(_swam_run(tmp_path / "zram-only-r1", "zram-only", 1))
    assert zram.swam["zram_write_mb"] == pytest.approx(300.0)
    assert zram.swap_medium == "zram"
    # a zram run needs no diskstat.csv: its disk took no swap
    (tmp_path / "zram-only-r1" / "diskstat.csv").unlink()
    alone = load_run(tmp_path / "zram-only-r1").swam
    assert alone["flash_write_mb"] is None and alone["zram_write_mb"] == pytest.approx(300.0)
    # without spec.json there are no SWAM figures
    assert load_run(write_run(tmp_path / "original-r1")).swam is None


def _swam_campaign(d: Path, schemes_run=("zram-only", "flash-only", "swam"), reps=(1, 2, 3)):
    runs = []
    for scheme in schemes_run:
        for rep in reps:
            _swam_run(d / "runs" / f"{scheme}-r{rep}", scheme, rep)
            runs.append({"scheme": scheme, "rep": rep, "status": "ok"})
    return write_campaign(
        d,
        list(schemes_run),
        runs,
        reps=len(reps),
        profile="pixel6pro-swam",
        swap="zram+flash",
    )


def test_swam_pairs_are_against_each_baseline_the_campaign_ran():
    assert swam_pairs(["zram-only", "flash-only", "swam", "swam+pmr"]) == [
        ("swam", "zram-only"),
        ("swam", "flash-only"),
        ("swam+pmr", "zram-only"),
        ("swam+pmr", "flash-only"),
    ]
    assert swam_pairs(["original", "flash-only", "swam"]) == [
        ("original", "flash-only"),
        ("swam", "flash-only"),
    ]
    assert swam_pairs(["original", "swam"]) == [("swam", "original")]
    assert swam_pairs(["swam"]) == []


def test_summary_and_report_compare_swam_with_the_paper(tmp_path):
    d = _swam_campaign(tmp_path)
    s = write_summary(d)
    assert validate_summary(s) == []
    pairs = {(c["scheme"], c["base"]): c for c in s["swam"]["comparisons"]}
    assert set(pairs) == {("swam", "zram-only"), ("swam", "flash-only")}
    against_zram = pairs[("swam", "zram-only")]
    assert against_zram["ratios"]["kills"] == pytest.approx(1 / 6)
    assert against_zram["ratios"]["swam.zram_write_mb"] == pytest.approx(200 / 300)
    launch = against_zram["spread"]["swam.launch_ms.p50"]
    assert launch["pairs"] == 3 and launch["median"] == pytest.approx(1210 / 2010)
    assert pairs[("swam", "flash-only")]["ratios"]["swam.zram_write_mb"] is None
    assert s["schemes"]["swam"]["swam"]["swapd"]["added"] == 2
    media = {name: e["swap_medium"] for name, e in s["schemes"].items()}
    assert media == {"zram-only": "zram", "flash-only": "flash", "swam": "flash"}
    (share,) = disk_share_lines({**s, "swap_bandwidth": {"write_mbps": 100.0, "fio": {}}})
    assert "zram-only n/a (zram alone), flash-only " in share and "swam 0." in share
    md = write_report(d).read_text()
    section = md.split("## SWAM\n")[1].split("\n## ")[0]
    assert "| figure | paper: SWAM / baselines | swam / zram-only | swam / flash-only |" in section
    assert "| kills (lmkd) | 0.154 | 0.17 [0.17, 0.17] p 0.1 | 0.25 [0.25, 0.25] p 0.1 |" in section
    assert "| launch (cold switch) median | 0.64 |" in section
    assert "| response (every switch) median | 0.59 |" in section
    assert "| launch p90 | – |" in section
    assert "SWAM's baselines, `zram-only` and `flash-only`" in section
    rows = {ln.split(" | ")[0]: ln for ln in section.splitlines() if ln.startswith("| ")}
    assert "| zram-only" in rows and "| flash-only" in rows  # the figures of every scheme
    parts = [ln for ln in section.splitlines() if ln.startswith("| swam | ")]
    assert len(parts) == 2  # its figures and its parts; the baselines ran none
    assert "25,605" in parts[1] and "LMKD kills by reason" in section
    assert "| swap-clean: processes | pages dropped | kills avoided |" in section
    assert s["schemes"]["swam"]["swam"]["cleaner"]["kills_avoided"] == 1


def test_a_swam_campaign_on_a_flash_profile_compares_with_original(tmp_path):
    runs = []
    for scheme in ("original", "swam"):
        _swam_run(tmp_path / "runs" / f"{scheme}-r1", scheme, 1, profile="pixel6pro")
        runs.append({"scheme": scheme, "rep": 1, "status": "ok"})
    write_campaign(tmp_path, ["original", "swam"], runs, reps=1, profile="pixel6pro")
    s = write_summary(tmp_path)
    assert [(c["scheme"], c["base"]) for c in s["swam"]["comparisons"]] == [("swam", "original")]
    section = write_report(tmp_path).read_text().split("## SWAM\n")[1].split("\n## ")[0]
    assert "Against `original` (the campaign ran neither of SWAM's baselines" in section


def test_no_swam_section_outside_swams_setting(tmp_path):
    d = _swam_campaign(tmp_path, schemes_run=("flash-only",), reps=(1,))
    campaign = json.loads((d / "campaign.json").read_text())
    campaign["guest"].pop("swap")  # as on a flash profile
    (d / "campaign.json").write_text(json.dumps(campaign))
    s = write_summary(d)
    assert "swam" not in s and s["schemes"]["flash-only"]["swam"]["relaunches"] == 4
    assert validate_summary(s) == []
    assert "## SWAM" not in write_report(d).read_text()


def test_capacity_is_originals_when_the_schemes_start_with_different_swap():
    from pmr_testbed.report import campaign_report as cr

    def entry(swap_mb: float, kills: float) -> dict:
        capacity = {
            "apps_anon_mb": 4000.0,
            "mem_total_mb": 2000.0,
            "swap_total_mb": swap_mb,
            "excess_mb": 1000.0,
            "fewest_kills": 2,
            "oom_kills": 0,
        }
        return {"capacity": capacity, "kills": kills}

    same = {"original": entry(682.0, 4.0), "pmr": entry(682.0, 3.0)}
    tiers = {"zram-only": entry(170.0, 30.0), "original": entry(682.0, 4.0)}
    assert not cr.swap_differs(same) and cr.swap_differs(tiers)
    assert cr.capacity_kills_floor(same) == 0.5
    # the floor holds for original's swap only, and the text says whose it is
    assert cr.capacity_kills_floor(tiers) is None
    assert cr.capacity_entry(tiers)["swap_total_mb"] == 682.0
    assert "under `original`" in (cr.capacity_text(tiers) or "")
    assert cr.capacity_entry({"zram-only": entry(170.0, 30.0), "swam": entry(0.0, 9.0)}) is None
