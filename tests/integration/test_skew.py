"""Run `smoke` on the zram profile pixel5-zram under skew and skew+pmr
(skew rectification, schemes/skew.toml), on the kernel the smoke test
builds.

Asserts that the guest swapped to zram and not to the swap disk, that
every app that left the front after being marked got its unused anon
advised (MADV_PAGEOUT under skew; MADV_COLD beside PMR, which leaves the
I/O to kshrinkd and the bulk writeback), that the
swappiness loop kept its bounds and followed its rule, that the report
has the skew section, and a console free of oops/BUG/WARNING. The
integrity of the pages advised out is checked by the apps themselves:
each checks every heap page it reads, and a mismatch fails the run.
"""

import json

import pytest
from guest_runs import events as _events
from guest_runs import rows as _rows
from guest_runs import run_campaign
from guest_runs import run_dir as _run_dir
from guest_runs import vmstat_delta as _vmstat_delta

from pmr_testbed.guest import vm
from pmr_testbed.report import summary

SCHEMES = ["skew", "skew+pmr"]

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("skew") / "results"
    return run_campaign(out, "smoke", "pixel5-zram", SCHEMES)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_swapped_to_zram_only(results, scheme):
    run_dir = _run_dir(results, scheme)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "ok"
    spec = json.loads((run_dir / "spec.json").read_text())
    assert spec["swap"]["disk"] is False and spec["swap"]["zram_mb"] > 0
    assert _vmstat_delta(run_dir, "pswpout") >= 100, "no real swap-out happened"
    stored = [int(r["orig_data_bytes"]) for r in _rows(run_dir / "zram.csv")]
    assert max(stored) > 0, "zram never stored a page"
    # the swap disk is attached but not swapped on: no sector written to it
    disk = _rows(run_dir / "diskstat.csv")
    assert int(disk[-1]["write_sectors"]) == int(disk[0]["write_sectors"])


@pytest.mark.parametrize(("scheme", "advice"), [("skew", "pageout"), ("skew+pmr", "cold")])
def test_apps_leaving_the_front_had_their_unused_anon_advised(results, scheme, advice):
    run_dir = _run_dir(results, scheme)
    spec = json.loads((run_dir / "spec.json").read_text())
    assert spec["scheme"]["skew"]["advice"] == advice
    # every switch but the first leaves an app behind, marked when it came
    # to the front (hot) or once launched (cold): one advice each, but for
    # an app that died meanwhile
    left = len(_events(run_dir, "switch")) - 1
    died = len(_events(run_dir, "kill")) + len(_events(run_dir, "app_died"))
    used = [e for e in _events(run_dir, "launch") if e["role"] == "background_use"]
    pageouts = _events(run_dir, "skew_pageout")
    assert left - died <= len(pageouts) <= left + 2 * len(used)
    assert all(p["advice"] == advice for p in pageouts)
    assert all(0 <= p["idle_pages"] <= p["marked_pages"] for p in pageouts)
    assert sum(p["marked_pages"] for p in pageouts) > 0, "no page was marked idle"
    assert sum(p["advised_bytes"] for p in pageouts) > 0, "nothing was advised"
    assert all(p["advised_bytes"] <= p["idle_pages"] * 4096 for p in pageouts)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_swappiness_loop_kept_its_bounds_and_rule(results, scheme):
    run_dir = _run_dir(results, scheme)
    balance = json.loads((run_dir / "spec.json").read_text())["scheme"]["skew"]["balance"]
    rows = _rows(run_dir / "skew_balance.csv")
    assert len(rows) >= 10, "the loop did not run once a period"
    previous = None
    for r in rows:
        s = int(r["swappiness"])
        anon, file = float(r["anon_refault_pct"]), float(r["file_refault_pct"])
        assert balance["min"] <= s <= balance["max"]
        if previous is not None:
            if anon > balance["thrash_anon_pct"]:
                expected = max(balance["min"], previous - balance["step"])
            elif file >= balance["file_refault_pct"]:
                expected = min(balance["max"], previous + balance["step"])
            else:
                expected = previous
            assert s == expected, r
        previous = s


@pytest.mark.parametrize("scheme", SCHEMES)
def test_console_is_clean(results, scheme):
    console = (_run_dir(results, scheme) / "console.log").read_text(errors="replace")
    assert "Linux version" in console, "console log did not capture the kernel log"
    assert vm.splats(console) == []


def test_summary_and_report_have_skew(results):
    data = json.loads((results / "summary.json").read_text())
    assert summary.validate_summary(data) == []
    for name in SCHEMES:
        assert data["schemes"][name]["skew"]["pageouts"] > 0
        zram = data["schemes"][name]["zram"]
        assert zram["stored_mb"]["peak"] > 0
        # the apps' heap pages compress about as the profile says (2.5:1);
        # the zygote's shared pages, its canary words alone, a little better
        assert 1.8 <= zram["compression_ratio"] <= 4.0, zram
    assert "Skew rectification" in (results / "report.md").read_text()
