"""Skew rectification and zram: the profiles' swap medium, the `[skew]`
table from scheme file to spec.json, and the analysis and report of what
the guest writes for them (skew_pageout events, skew_balance.csv, zram.csv,
the anon:file ratio from vmstat.csv)."""

import json
import shutil

import pytest

from fakerun import VMSTAT_KEYS, switch, write_campaign, write_run
from fakespec import build_spec
from pmr_testbed import paths, schema, tomlfile
from pmr_testbed.analysis.anon_file import anon_file_figures, anon_file_series
from pmr_testbed.analysis.metrics import RunError, load_run
from pmr_testbed.analysis.skew import pageout_figures, swappiness_figures, swappiness_series
from pmr_testbed.analysis.zram import zram_figures
from pmr_testbed.config import profiles, scenarios, schemes, spec
from pmr_testbed.errors import UserError
from pmr_testbed.report import regime
from pmr_testbed.report.campaign_report import (
    ANON_FILE_PLOT,
    SWAPPINESS_PLOT,
    disk_share_lines,
    write_report,
)
from pmr_testbed.report.summary import validate_summary, write_summary
from pmr_testbed.workflows import swap_bandwidth

BALANCE = {
    "period_ms": 1000,
    "step": 10,
    "min": 100,
    "max": 200,
    "thrash_anon_pct": 0.5,
    "file_refault_pct": 0.1,
}


def _build(profile: str, scheme: str, tmp_path) -> dict:
    return build_spec(scheme, profile, out_dir=tmp_path)


# ---- the profiles' swap medium ---------------------------------------------


def test_flash_is_the_default_swap_and_swaps_on_the_disk(tmp_path):
    p = profiles.load("pixel6pro")
    assert "swap" not in p.raw["phone"]
    assert (p.swap, p.swaps_to_disk, p.guest_zram_mb) == ("flash", True, 0)
    assert _build("pixel6pro", "original", tmp_path)["swap"] == {
        "serial": spec.SWAP_SERIAL,
        "zram_mb": 0,
        "disk": True,
    }


def test_the_zram_profile_is_pixel6pro_with_zram_of_its_swap_size(tmp_path):
    z, flash = profiles.load("pixel6pro-zram"), profiles.load("pixel6pro")
    assert (z.swap, z.swaps_to_disk) == ("zram", False)
    # sized as the disk is: phone MB times the guest's scale
    assert z.guest_zram_mb == z.guest_swap_mb == int(2048 * z.scale)
    built = _build("pixel6pro-zram", "original", tmp_path)
    assert built["swap"] == {"serial": spec.SWAP_SERIAL, "zram_mb": z.guest_swap_mb, "disk": False}
    assert schema.problems("spec", built) == []
    # only the swap medium differs, with the compressibility it needs (and
    # the regime's range for the flash disk's writes), at the scale the zram
    # campaigns were calibrated at (Acclaim's bounds scale with it)
    same = {k: v for k, v in flash.raw.items() if k not in ("name", "description", "regime")}
    assert {k: v for k, v in z.raw.items() if k not in ("name", "description")} == {
        **same,
        "phone": {**flash.raw["phone"], "swap": "zram"},
        "zram": {"compression_ratio": 2.5},
        "guest": {**flash.raw["guest"], "scale": z.scale},
    }
    # the flash phone at the zram profile's scale runs the same guest
    at_z = profiles.parse(
        {**flash.raw, "guest": z.raw["guest"]}, paths.PROFILES_DIR / "pixel6pro.toml"
    )
    assert at_z.acclaim_lwp_goal_kb == z.acclaim_lwp_goal_kb
    flash_spec = spec.build(
        run_id="r",
        out_dir=tmp_path,
        seed=1,
        scenario=scenarios.load("smoke"),
        profile=at_z,
        scheme=schemes.resolve("original", at_z),
        work_iters_per_ms=1.0,
    )
    assert {k: v for k, v in built.items() if k not in ("swap", "heap")} == {
        k: v for k, v in flash_spec.items() if k not in ("swap", "heap")
    }
    # 2.5:1: 204 random words and the canary, 205 of the page's 512 words
    assert (built["heap"], flash_spec["heap"]) == ({"random_words": 204}, {"random_words": 0})


@pytest.mark.parametrize(
    ("zram", "message"),
    [
        (None, "missing `zram`"),
        ("[zram]\ncompression_ratio = 0.5\n", "compression_ratio must be in"),
        ("[zram]\ncompression_ratio = 100\n", "compression_ratio must be in"),
    ],
)
def test_a_zram_profile_needs_a_compression_ratio_in_range(tmp_path, zram, message):
    text = (paths.PROFILES_DIR / "pixel6pro-zram.toml").read_text()
    start, end = text.index("[zram]"), text.index("[flash]")
    f = tmp_path / "p.toml"
    f.write_text(text[:start] + (zram or "") + text[end:])
    with pytest.raises(UserError, match=message):
        profiles.parse(tomlfile.load(f, "profile"), f)


def test_a_flash_profile_refuses_zram_settings(tmp_path):
    text = (paths.PROFILES_DIR / "pixel6pro.toml").read_text()
    f = tmp_path / "p.toml"
    f.write_text(text + "\n[zram]\ncompression_ratio = 2.5\n")
    with pytest.raises(UserError, match=r"\[zram\] is for a profile with"):
        profiles.parse(tomlfile.load(f, "profile"), f)


def test_a_bad_swap_medium_is_one_line(tmp_path):
    text = (paths.PROFILES_DIR / "pixel6pro.toml").read_text()
    f = tmp_path / "p.toml"
    f.write_text(text.replace("swap_mb = 2048\n", 'swap_mb = 2048\nswap = "ssd"\n'))
    with pytest.raises(UserError, match=r"\[phone\]: swap 'ssd' must be one of flash, zram"):
        profiles.parse(tomlfile.load(f, "profile"), f)


def test_no_fio_on_a_zram_profile_and_no_disk_share_in_its_report():
    na = swap_bandwidth.not_applicable(profiles.load("pixel6pro-zram"))
    assert na["error"] is None and "swaps to zram" in na["not_applicable"]
    assert "write_mbps" not in na
    lines = disk_share_lines({"guest": {"swap": "zram"}, "swap_bandwidth": na, "schemes": {}})
    assert "n/a" in lines[0] and "zram" in lines[0]


# ---- the [skew] table --------------------------------------------------------


def test_skew_parses_with_the_classic_lru_and_its_balance_loop():
    s = schemes.load("skew")
    assert {"path": "/sys/kernel/mm/lru_gen/enabled", "value": "n"} in s.knobs
    assert s.skew == {"advice": "pageout", "advice_with_pmr": "cold", "balance": BALANCE}
    assert schemes.skew_spec(s) == {"advice": "pageout", "balance": BALANCE}
    assert schemes.skew_spec(schemes.load("original")) is None


@pytest.mark.parametrize(
    ("name", "advice"),
    [
        ("skew", "pageout"),
        ("skew+pmr", "cold"),  # PMR on: kshrinkd and the bulk writeback do the I/O
        ("skew+pmr@pmr/enabled=0", "pageout"),  # PMR's knobs, PMR off
        ("skew+kswapd-fifo", "pageout"),
    ],
)
def test_advice_with_pmr_only_where_a_part_turns_pmr_on(name, advice):
    resolved = schemes.resolve(name, profiles.load("pixel6pro-zram"))
    assert schemes.skew_spec(resolved) == {"advice": advice, "balance": BALANCE}


def _scheme_dir(tmp_path, monkeypatch, **files: str):
    for name in ("skew", "pmr", "original"):
        shutil.copy(paths.SCHEMES_DIR / f"{name}.toml", tmp_path)
    for name, text in files.items():
        (tmp_path / f"{name}.toml").write_text(text)
    monkeypatch.setattr(paths, "SCHEMES_DIR", tmp_path)


def test_two_skews_are_refused(tmp_path, monkeypatch):
    _scheme_dir(tmp_path, monkeypatch, again='name = "again"\n[skew]\nadvice = "cold"\n')
    prof = profiles.load("pixel6pro-zram")
    assert schemes.skew_spec(schemes.resolve("again", prof)) == {"advice": "cold"}
    # without advice_with_pmr, PMR keeps the advice
    assert schemes.skew_spec(schemes.resolve("again+pmr", prof)) == {"advice": "cold"}
    with pytest.raises(UserError, match=r"schemes skew and again both have \[skew\]"):
        schemes.resolve("skew+again", prof)


BALANCE_TOML = "\n".join(f"{k} = {v}" for k, v in BALANCE.items())


@pytest.mark.parametrize(
    ("table", "error"),
    [
        ('[skew]\nadvise = "pageout"\n', r"`advise` is not a setting of \[skew\]"),
        ("[skew]\n", "missing `advice`"),
        ('[skew]\nadvice = "dontneed"\n', "advice 'dontneed' must be one of pageout, cold"),
        ('[skew]\nadvice = "pageout"\nadvice_with_pmr = 1\n', "wrong type"),
        (
            '[skew]\nadvice = "pageout"\n[skew.balance]\n' + BALANCE_TOML + "\nperiod = 5\n",
            r"\[skew.balance\]: `period` is not a setting of \[skew.balance\]",
        ),
        (
            '[skew]\nadvice = "pageout"\n[skew.balance]\n'
            + BALANCE_TOML.replace("period_ms = 1000", "period_ms = 50"),
            "period_ms must be >= 100, got 50",
        ),
        (
            '[skew]\nadvice = "pageout"\n[skew.balance]\n'
            + BALANCE_TOML.replace("step = 10", "step = 0"),
            "step must be 1..100, got 0",
        ),
        (
            '[skew]\nadvice = "pageout"\n[skew.balance]\n'
            + BALANCE_TOML.replace("min = 100", "min = 210"),
            "needs 0 <= min <= max <= 200",
        ),
        (
            '[skew]\nadvice = "pageout"\n[skew.balance]\n'
            + BALANCE_TOML.replace("max = 200", "max = 250"),
            "needs 0 <= min <= max <= 200",
        ),
        (
            '[skew]\nadvice = "pageout"\n[skew.balance]\n'
            + BALANCE_TOML.replace("thrash_anon_pct = 0.5", "thrash_anon_pct = 0"),
            "`thrash_anon_pct` must be > 0",
        ),
        (
            '[skew]\nadvice = "pageout"\n[skew.balance]\n'
            + BALANCE_TOML.replace("step = 10", "step = 2.5"),
            "`step` has the wrong type",
        ),
        (
            '[skew]\nadvice = "pageout"\n[skew.balance]\n'
            + BALANCE_TOML.replace("\nfile_refault_pct = 0.1", ""),
            "missing `file_refault_pct`",
        ),
        ('skew = "on"\n', r"\[skew\]: must be a table"),
    ],
)
def test_skew_tables_are_checked(tmp_path, monkeypatch, table, error):
    _scheme_dir(tmp_path, monkeypatch, bad='name = "bad"\n' + table)
    with pytest.raises(UserError, match=error):
        schemes.resolve("bad", profiles.load("pixel6pro-zram"))


def test_spec_has_skew_only_for_skew_schemes(tmp_path):
    alone = _build("pixel6pro-zram", "skew", tmp_path)
    assert alone["scheme"]["skew"] == {"advice": "pageout", "balance": BALANCE}
    with_pmr = _build("pixel6pro-zram", "skew+pmr", tmp_path)
    assert with_pmr["scheme"]["skew"]["advice"] == "cold"
    assert {"path": schemes.PMR_ENABLED, "value": "2"} in with_pmr["scheme"]["knobs"]
    assert "skew" not in _build("pixel6pro-zram", "pmr", tmp_path)["scheme"]
    for built in (alone, with_pmr):
        assert schema.problems("spec", built) == []


# ---- analysis ----------------------------------------------------------------


def pageout(t_ms, app, marked, idle, ms, advice="pageout"):
    """A skew_pageout event as the guest logs it: every idle page advised."""
    return {
        "type": "skew_pageout",
        "t_ms": t_ms,
        "app": app,
        "marked_pages": marked,
        "idle_pages": idle,
        "advised_bytes": idle * 4096,
        "ms": ms,
        "cpu_ms": ms / 2,
        "advice": advice,
    }


PAGEOUTS = [
    pageout(3000, "chrome", 1000, 400, 4.0),
    pageout(4000, "youtube", 3000, 2600, 9.0),
    pageout(5500, "chrome", 1000, 0, 1.0),
]
BALANCE_CSV = (
    "t_ms,swappiness,anon_refault_pct,file_refault_pct\n"
    "1000,110,0.0,0.20\n2000,120,0.1,0.30\n3000,110,0.9,0.20\n4000,110,0.2,0.05\n"
)
ZRAM_CSV = (
    "t_ms,orig_data_bytes,compr_data_bytes,mem_used_bytes\n"
    f"0,0,0,0\n1000,{300 * 2**20},{100 * 2**20},{110 * 2**20}\n"
    f"2000,{200 * 2**20},{50 * 2**20},{60 * 2**20}\n"
)


def test_pageout_figures_sum_pages_and_take_the_median_time():
    assert pageout_figures(PAGEOUTS) == {
        "pageouts": 3,
        "pages_advised": 3000,
        "marked_pages": 5000,
        "idle_pages": 3000,
        "idle_share": 0.6,
        "pageout_ms_median": 4.0,
        "pageout_cpu_ms": 7.0,
    }
    assert pageout_figures([switch("chrome", "hot", 1.0)]) is None
    without_cpu = [{k: v for k, v in e.items() if k != "cpu_ms"} for e in PAGEOUTS]
    assert pageout_figures(without_cpu)["pageout_cpu_ms"] is None


def test_swappiness_series_and_figures():
    header, *rows = [line.split(",") for line in BALANCE_CSV.splitlines()]
    t_s, swappiness = swappiness_series((header, rows))
    assert t_s == [1.0, 2.0, 3.0, 4.0] and swappiness == [110, 120, 110, 110]
    assert swappiness_figures(swappiness) == {
        "min": 110,
        "median": 110,
        "max": 120,
        "final": 110,
        "raised": 1,
        "lowered": 1,
    }
    assert swappiness_series(None) == ([], []) and swappiness_figures([]) is None


def test_zram_figures_peak_final_and_ratio_where_it_stored_the_most():
    header, *rows = [line.split(",") for line in ZRAM_CSV.splitlines()]
    assert zram_figures((header, rows)) == {
        "stored_mb": {"peak": 300.0, "final": 200.0},
        "used_mb": {"peak": 110.0, "final": 60.0},
        "compression_ratio": 3.0,
    }
    assert zram_figures(None) is None and zram_figures((header, [])) is None


def test_anon_file_ratio_from_the_lru_sizes():
    header = ["t_ms", "nr_inactive_anon", "nr_active_anon", "nr_inactive_file", "nr_active_file"]
    rows = [["0", "100", "200", "50", "50"], ["1000", "300", "300", "100", "50"]]
    t_s, ratios = anon_file_series((header, [*rows, ["2000", "5", "5", "0", "0"]]))
    assert t_s == [0.0, 1.0] and ratios == [3.0, 4.0]  # no file pages: no ratio
    assert anon_file_figures(ratios) == {"mean": 3.5, "min": 3.0, "max": 4.0, "final": 4.0}
    assert anon_file_series((header[:3], rows)) == ([], [])
    assert anon_file_figures([]) is None


def _zram_run(run_dir, rep: int, skew: bool, extra_increments=None, **kw):
    """A run on pixel6pro-zram: spec.json swaps on zram alone, zram.csv, and
    for skew its pageouts and balance loop; vmstat counters also rise by
    `extra_increments`."""
    write_run(
        run_dir,
        switches=[
            switch("chrome", "cold", 900.0, 0, t_ms=2500),
            switch("youtube", "hot", (200.0 if skew else 400.0) + rep, 0, t_ms=3500),
            switch("chrome", "hot", (150.0 if skew else 300.0) + rep, 1, t_ms=5000),
        ],
        vmstat_increments={
            "nr_inactive_anon": 3000 * rep,
            "nr_active_file": 500,
            **(extra_increments or {}),
        },
        extra_events=PAGEOUTS if skew else None,
        **kw,
    )
    prof = profiles.load("pixel6pro-zram")
    built = spec.build(
        run_id=run_dir.name,
        out_dir=run_dir,
        seed=1,
        scenario=scenarios.load("smoke"),
        profile=prof,
        scheme=schemes.resolve("skew" if skew else "original", prof),
        work_iters_per_ms=1.0,
    )
    (run_dir / "spec.json").write_text(json.dumps(built))
    (run_dir / "zram.csv").write_text(ZRAM_CSV)
    if skew:
        (run_dir / "skew_balance.csv").write_text(BALANCE_CSV)
    return run_dir


def test_a_zram_run_loads_without_its_unused_swap_disk(tmp_path):
    m = load_run(_zram_run(tmp_path / "skew-r1", 1, True, omit=("diskstat.csv",)))
    assert m.swap_medium == "zram"
    # no page swapped out: every window wrote nothing to zram
    assert m.reclaim_series_mbps and set(m.reclaim_series_mbps) == {0.0}
    assert m.skew is not None and m.skew["pageouts"] == 3 and m.skew["pages_advised"] == 3000
    assert m.skew["swappiness"]["max"] == 120 and m.swappiness_series[1] == [110, 120, 110, 110]
    assert m.zram == {
        "stored_mb": {"peak": 300.0, "final": 200.0},
        "used_mb": {"peak": 110.0, "final": 60.0},
        "compression_ratio": 3.0,
    }
    assert m.anon_file_ratio is not None and len(m.anon_file_series[1]) == 31
    # the zram device's writes are the pages swapped out (3 s of 10 MB/s);
    # the swap disk's are not the run's swap, even when sampled
    on_zram = _zram_run(
        tmp_path / "original-r2",
        2,
        False,
        write_sectors=[i * 4096 for i in range(31)],
        extra_increments={"pswpout": 3 * 2560},
    )
    loaded = load_run(on_zram)
    assert loaded.reclaim_mbps["peak"] == pytest.approx(10.0) and loaded.skew is None
    (on_zram / "zram.csv").write_text("t_ms,orig_data_bytes\n0,0\n")
    with pytest.raises(RunError, match=r"zram\.csv has no column compr_data_bytes"):
        load_run(on_zram)


def test_a_flash_run_has_no_skew_and_no_zram(tmp_path):
    m = load_run(write_run(tmp_path / "original-r1"))
    assert m.swap_medium == "flash" and m.skew is None and m.zram is None
    assert m.anon_file_ratio is not None  # every scheme's vmstat.csv has the LRU sizes
    assert {"nr_active_anon", "nr_inactive_file"} <= set(VMSTAT_KEYS)


def _zram_campaign(d, reps=(1, 2, 3)):
    runs = []
    for scheme in ("original", "skew"):
        for rep in reps:
            _zram_run(d / "runs" / f"{scheme}-r{rep}", rep, scheme == "skew")
            runs.append({"scheme": scheme, "rep": rep, "status": "ok"})
    na = swap_bandwidth.not_applicable(profiles.load("pixel6pro-zram"))
    write_campaign(
        d,
        ["original", "skew"],
        runs,
        reps=len(reps),
        profile="pixel6pro-zram",
        swap_bandwidth=na,
        swap="zram",
    )
    c = json.loads((d / "campaign.json").read_text())
    c["max_rate"] = na
    (d / "campaign.json").write_text(json.dumps(c))
    return d


def test_summary_report_headline_and_plots(tmp_path):
    d = _zram_campaign(tmp_path)
    s = write_summary(d)
    assert validate_summary(s) == []
    skew, original = s["schemes"]["skew"], s["schemes"]["original"]
    assert skew["skew"]["pageouts"] == 3 and skew["skew"]["pageout_ms_median"] == 4.0
    assert skew["skew"]["swappiness"]["final"] == 110
    assert original["skew"] is None
    assert skew["zram"]["compression_ratio"] == 3.0 and original["zram"]["stored_mb"]["peak"] == 300
    assert skew["anon_file_ratio"]["max"] > skew["anon_file_ratio"]["min"]
    # the hot switches' mean: skew's 175 + rep ms over original's 350 + rep, rep by rep
    hot = s["ratios"]["skew"]["spread"]["switch_kinds.hot.mean_ms"]
    expected = [(175.0 + rep) / (350.0 + rep) for rep in (1, 2, 3)]
    assert hot["median"] == pytest.approx(expected[1]) and hot["pairs"] == 3
    assert (hot["min"], hot["max"]) == (pytest.approx(expected[0]), pytest.approx(expected[2]))
    md = write_report(d).read_text()
    section = md.split("## Skew rectification")[1].split("\n## ")[0]
    assert (
        f"- `skew` / `original`, hot-switch response time (mean): {expected[1]:.3f} "
        f"[{expected[0]:.3f}, {expected[2]:.3f}] (3 paired reps)"
    ) in section
    assert "the paper: up to 0.57 (-43%" in section and "control" not in section
    assert (
        "| skew | 3 [3, 3] | 3,000 [3,000, 3,000] | 0.60 [0.60, 0.60] | 4.00 [4.00, 4.00] | "
        "7.00 [7.00, 7.00] | 110 [110, 110] | 110 [110, 110] | 120 [120, 120] | 110 [110, 110] | "
        "1 [1, 1] | 1 [1, 1] |"
    ) in section
    assert "| original |" not in section
    anon = md.split("## Anonymous and file pages")[1].split("\n## ")[0]
    assert "| original |" in anon and "| skew |" in anon
    zram = md.split("## zram")[1].split("\n## ")[0]
    assert (
        "| skew | 300 [300, 300] | 200 [200, 200] | 110 [110, 110] | 60.0 [60.0, 60.0] | "
        "3.00 [3.00, 3.00] |"
    ) in zram
    assert "hot switch response" in md.split("## Versus original")[1]
    assert "n/a (the profile swaps to zram" in md
    for plot in (ANON_FILE_PLOT, SWAPPINESS_PLOT):
        assert f"(plots/{plot})" in md
        assert (d / "plots" / plot).read_bytes().startswith(b"\x89PNG")
    checks = {c["name"]: c for c in json.loads((d / "regime.json").read_text())["checks"]}
    for name in ("peak_over_fio", "reclaim_limited"):
        assert checks[name]["missing"].startswith("n/a: profile pixel6pro-zram swaps to zram")
        assert regime.result_text(checks[name]) == "n/a"
    assert "| peak_over_fio | – | – |" in md and "(2 n/a)" in md


def test_a_skew_campaign_on_flash_is_called_a_control(tmp_path):
    d = _zram_campaign(tmp_path, reps=(1,))
    c = json.loads((d / "campaign.json").read_text())
    del c["guest"]["swap"]
    (d / "campaign.json").write_text(json.dumps(c))
    md = write_report(d).read_text()
    section = md.split("## Skew rectification")[1].split("\n## ")[0]
    # one pair: the medians' ratio
    assert "(the medians' ratio: fewer than 2 paired reps)" in section
    assert "This campaign swaps to flash: a control" in section


def test_no_skew_section_or_swappiness_plot_without_skew(tmp_path):
    write_run(tmp_path / "runs" / "original-r1")
    write_campaign(tmp_path, ["original"], [{"scheme": "original", "rep": 1, "status": "ok"}], 1)
    md = write_report(tmp_path).read_text()
    assert "## Skew rectification" not in md and "## zram" not in md
    assert SWAPPINESS_PLOT not in md and not (tmp_path / "plots" / SWAPPINESS_PLOT).exists()
    assert "## Anonymous and file pages" in md
