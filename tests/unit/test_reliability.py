"""`pmrtb reliability` without a guest: argument checks, the guest spec, and
reliability.json -> table rows and exit status."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pmr_testbed.analysis import reliability_checks, swap_write_errors
from pmr_testbed.config import profiles, schemes
from pmr_testbed.errors import UserError
from pmr_testbed.guest import vm
from pmr_testbed.workflows import reliability

ROOT = Path(__file__).resolve().parents[2]


def pmrtb(*args):
    return subprocess.run(
        [sys.executable, "-m", "pmr_testbed.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "harness"), "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["--toggle", "/sys/kernel/mm/pmr/enabled"], "--toggle must be PATH=V1,V2,..."),
        (["--toggle", "=0,1"], "--toggle must be PATH=V1,V2,..."),
        (["--toggle", "/sys/kernel/mm/pmr/enabled=0"], "needs at least two non-empty values"),
        (["--toggle", "/sys/kernel/mm/pmr/enabled=0,,1"], "needs at least two non-empty values"),
        (["--toggle", "/etc/passwd=0,1"], "must be under /proc/sys or /sys"),
        (["--toggle", "/sys/../etc/x=0,1"], "must be under /proc/sys or /sys"),
        (
            ["--toggle", "/sys/kernel/mm/pmr/enabled=0,1", "--toggles", "0"],
            "--toggles must be at least 1",
        ),
        (["--toggle", "/sys/kernel/mm/pmr/enabled=0,1", "--toggle-refused", "7"], "is not one of"),
        (["--toggle", "/sys/kernel/mm/pmr/enabled=0,1", "--toggle-refused", "0"], "written back"),
        (["--toggle-refused", "7"], "--toggle-refused needs --toggle"),
        (["--swap-factor", "0"], "--swap-factor must be in (0, 50]"),
        (["--swap-factor", "-2"], "--swap-factor must be in (0, 50]"),
        (["--flavour", "fast"], "unknown kernel flavour 'fast'"),
        (["--swap-full", "--swap-factor", "2"], "with --swap-full the load ends 2 sweeps after"),
    ],
)
def test_bad_arguments_one_line_exit_2(tmp_path, args, message):
    out = tmp_path / "out"
    res = pmrtb(
        "reliability", "--profile", "pixel5", "--scheme", "original", *args, "--out", str(out)
    )
    assert res.returncode == 2, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("pmrtb: error: ") and message in lines[0], lines
    assert not out.exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--profile", "iphone", "--scheme", "original"], "unknown profile 'iphone'"),
        (["--profile", "pixel5", "--scheme", "zzz"], "unknown scheme 'zzz'"),
        (["--profile", "pixel5", "--scheme", "original,mglru"], "takes one scheme"),
        (["--profile", "pixel5-zram", "--scheme", "original"], "swaps to zram alone"),
        (["--profile", "pixel6pro-swam", "--scheme", "zram-only"], "swaps to zram alone"),
        (["--profile", "pixel6pro-swam", "--scheme", "swam"], "has [swam.swapd] or [swam.eoom]"),
        (["--profile", "pixel5", "--scheme", "skew"], "has [skew]"),
        (["--profile", "pixel5", "--scheme", "ice-plus+pmr"], "has [ice], which freezes apps"),
    ],
)
def test_bad_profile_or_scheme_is_named(tmp_path, args, message):
    res = pmrtb("reliability", *args, "--out", str(tmp_path / "out"))
    assert res.returncode == 2 and message in res.stderr, res.stderr


def test_toggle_becomes_the_spec_toggle():
    t = reliability.parse_toggle("/sys/kernel/mm/pmr/enabled = 0, 1,2", 30, "2")
    assert t == {
        "path": "/sys/kernel/mm/pmr/enabled",
        "values": ["0", "1", "2"],
        "refused": ["2"],
        "count": 30,
    }
    with pytest.raises(UserError):
        reliability.parse_toggle("/sys/kernel/mm/pmr/enabled=0,1", 5, "1,9")


def test_guest_spec_has_the_documented_fields_and_a_swap_disk_that_fits(tmp_path):
    profile = profiles.load("pixel5")
    req = reliability.ReliabilityRequest(
        "pixel5",
        "original",
        tmp_path / "o",
        toggle="/sys/kernel/mm/lru_gen/enabled=n,y",
        toggles=20,
    )
    toggle = reliability.parse_toggle(req.toggle, req.toggles, None)
    p = reliability.Plan(req, profile, schemes.resolve("original", profile), toggle)
    spec = reliability.build_spec(p, tmp_path / "o")
    assert set(spec) == {
        "out_dir",
        "deadline_s",
        "scheme",
        "memory",
        "swap",
        "swap_factor",
        "checker",
        "stress_ng",
        "toggle",
        "swap_full",
    }
    assert spec["toggle"]["count"] == 20 and spec["toggle"]["values"] == ["n", "y"]
    assert spec["checker"]["processes"] >= 2
    assert spec["scheme"]["knobs"] == [{"path": "/sys/kernel/mm/lru_gen/enabled", "value": "n"}]
    assert set(spec["memory"]) == {"watermark_scale_factor", "min_free_kbytes", "swappiness"}
    # The workload (checker + stress-ng) beyond RAM must fit in swap.
    workload = (reliability.CHECKER_RAM_RATIO + reliability.STRESS_RAM_RATIO) * profile.guest_ram_mb
    assert p.swap_mb > workload - profile.guest_ram_mb and p.swap_mb > profile.guest_swap_mb


def _plan(tmp_path, profile_name="pixel5", scheme="original", **flags):
    profile = profiles.load(profile_name)
    req = reliability.ReliabilityRequest(profile_name, scheme, tmp_path / "o", **flags)
    return reliability.Plan(req, profile, schemes.resolve(scheme, profile), None)


def test_two_tier_profile_swaps_on_zram_above_the_disk(tmp_path):
    p = _plan(tmp_path, "pixel6pro-swam")
    zram = p.profile.guest_zram_mb
    assert zram > 0
    swap = reliability.build_spec(p, tmp_path / "o")["swap"]
    assert swap["zram_mb"] == zram and swap["disk"] is True
    # The disk alone holds the workload beyond RAM, as with one tier.
    assert p.swap_mb == round(p.profile.guest_ram_mb * reliability.SWAP_RAM_RATIO)
    # Sized to run full, zram counts towards the swap that must fill.
    full = _plan(tmp_path, "pixel6pro-swam", swap_full=True)
    ram = full.profile.guest_ram_mb
    assert full.swap_mb + zram == round(ram * reliability.SWAP_FULL_RAM_RATIO)
    # flash-only keeps the disk alone.
    flash = _plan(tmp_path, "pixel6pro-swam", "flash-only")
    assert reliability.build_spec(flash, tmp_path / "o")["swap"]["zram_mb"] == 0
    assert flash.zram_mb == 0


@pytest.mark.parametrize("profile_name", ["pixel5", "pixel6pro"])
def test_swap_full_disk_holds_the_checkers_but_not_stress_ng_too(tmp_path, profile_name):
    normal = _plan(tmp_path, profile_name)
    full = _plan(tmp_path, profile_name, swap_full=True)
    ram = normal.profile.guest_ram_mb
    assert normal.swap_mb == round(ram * reliability.SWAP_RAM_RATIO)
    assert full.swap_mb == round(ram * reliability.SWAP_FULL_RAM_RATIO) < normal.swap_mb
    # The guest's bounds (runtime/src/reliability.rs, swap_size_problem), with
    # MemTotal between 90% and 97% of the guest's RAM.
    for mem_total in (0.90 * ram, 0.97 * ram):
        assert full.swap_mb >= (reliability.CHECKER_RAM_RATIO - 0.6) * mem_total
        assert (
            full.swap_mb
            <= (reliability.CHECKER_RAM_RATIO + reliability.STRESS_RAM_RATIO - 0.95) * mem_total
        )
    spec = reliability.build_spec(full, tmp_path / "o")
    assert spec["swap_full"] is True and spec["swap_factor"] == reliability.DEFAULT_SWAP_FACTOR
    assert reliability.build_spec(normal, tmp_path / "o")["swap_full"] is False


def test_write_errors_get_a_region_inside_the_disk_in_every_mode(tmp_path):
    assert _plan(tmp_path).error_region is None
    assert _plan(tmp_path, swap_full=True).error_region is None
    for flags in ({}, {"swap_full": True}):
        p = _plan(tmp_path, swap_write_errors=True, **flags)
        r = p.error_region
        assert 0 < r.first_sector < r.end_sector <= p.swap_mb * 2**20 // 512
        assert "swap_write_errors" not in reliability.build_spec(p, tmp_path / "o")
    both = _plan(tmp_path, swap_full=True, swap_write_errors=True)
    assert both.swap_mb == _plan(tmp_path, swap_full=True).swap_mb
    assert reliability.describe_faults(both) == (
        ", sized to run full, writes failing at sectors 131072-135167"
    )
    assert reliability.describe_faults(_plan(tmp_path)) == ""


def _console(*lines):
    lines = ("Dynamic Preempt: full", *lines)
    return "\n".join(f"[{10 + i:8.6f}] {line}" for i, line in enumerate(lines))


WRITE_ERROR = "Write-error on swap-device (254:16:131080)"
IO_ERROR = "I/O error, dev vdb, sector 131072 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 2"


def test_swap_write_errors_passes_only_when_the_swap_layer_logged_one():
    region = reliability.blkdebug.region_for(2320)
    ok = swap_write_errors.check(
        _console(
            "Adding 2375676k swap on /dev/vdb.",
            IO_ERROR,
            WRITE_ERROR,
            "end_swap_bio_write: 41 callbacks suppressed",
            WRITE_ERROR,
            "blk_print_req_error: 7 callbacks suppressed",
            "I/O error, dev vdc, sector 8 op 0x1:(WRITE) flags 0x0 phys_seg 1 prio class 2",
        ),
        "vdb",
        region,
    )
    assert ok["name"] == "swap_write_errors" and ok["status"] == "pass", ok
    f = ok["figures"]
    assert (f["swap_layer_lines"], f["swap_layer_suppressed"]) == (2, 41)
    assert (f["block_layer_lines"], f["block_layer_suppressed"]) == (1, 7)
    assert f["outside_region"] == [] and f["sectors"] == [131072, 131080]
    assert "logged 2 write error(s) (+41 rate-limited)" in ok["detail"]

    block_only = swap_write_errors.check(_console(IO_ERROR), "vdb", region)
    assert block_only["status"] == "fail" and "did not go through" in block_only["detail"]
    nothing = swap_write_errors.check(_console("Adding 2375676k swap on /dev/vdb."), "vdb", region)
    assert nothing["status"] == "fail" and "no swap write error" in nothing["detail"]
    other_disk = swap_write_errors.check(_console(IO_ERROR.replace("vdb", "vdc")), "vdb", region)
    assert other_disk["figures"]["block_layer_lines"] == 0 and other_disk["status"] == "fail"

    far = swap_write_errors.check(_console("Write-error on swap-device (254:16:8)"), "vdb", region)
    assert far["status"] == "pass" and far["figures"]["outside_region"] == [8]
    assert "1 logged sector(s) outside it, first 8" in far["detail"]


def test_the_injected_errors_are_no_splat_but_a_splat_beside_them_is():
    console = _console(
        IO_ERROR,
        WRITE_ERROR,
        "end_swap_bio_write: 3 callbacks suppressed",
        "blk_print_req_error: 7 callbacks suppressed",
    )
    # the write-error lines alone: nothing for kernel_log
    assert vm.splats(console) == []
    assert reliability_checks.with_kernel_log(_result("pass"), vm.splats(console))["status"] == "ok"
    # a real WARNING among them is still reported, and fails the run
    warning = "WARNING: CPU: 1 PID: 80 at mm/page_io.c:42 end_swap_bio_write+0x1/0x2"
    found = vm.splats(console + "\n" + _console(warning))
    assert len(found) == 1 and found[0].endswith(warning)
    assert reliability_checks.with_kernel_log(_result("pass"), found)["status"] == "failed"
    for splat in (
        "BUG: KASAN: use-after-free in swap_writepage",
        "Oops: 0000 [#1] SMP",
        "possible circular locking dependency detected",
    ):
        assert vm.splats(console + "\n" + splat) == [splat]


def test_host_checks_go_last_and_decide_the_status():
    region = reliability.blkdebug.region_for(2320)
    result = reliability_checks.with_check(
        _result("pass", "skipped"), swap_write_errors.check("", "vdb", region)
    )
    result = reliability_checks.with_kernel_log(result, [])
    assert [c["name"] for c in result["checks"]] == ["c0", "c1", "swap_write_errors", "kernel_log"]
    assert result["status"] == "failed" and reliability_checks.exit_status(result) == 1
    seen = reliability_checks.with_check(
        result, swap_write_errors.check(_console(WRITE_ERROR), "vdb", region)
    )
    assert (
        seen["status"] == "ok"
        and [c["name"] for c in seen["checks"]].count("swap_write_errors") == 1
    )


def _result(*statuses, error=None):
    checks = [
        {"name": f"c{i}", "status": s, "detail": f"detail {i}", "figures": {}}
        for i, s in enumerate(statuses)
    ]
    failed = error or "fail" in statuses
    return {
        "status": "failed" if failed else "ok",
        "error": error,
        "scheme": "original",
        "kernel": "6.1.192+",
        "duration_s": 12.5,
        "figures": {},
        "checks": checks,
    }


def test_exit_status_is_0_only_when_nothing_failed():
    assert reliability_checks.exit_status(_result("pass", "skipped")) == 0
    assert reliability_checks.exit_status(_result("pass", "fail")) == 1
    assert reliability_checks.exit_status(_result("pass", error="the runtime panicked")) == 1
    inconsistent = dict(_result("pass"), status="failed")
    assert reliability_checks.exit_status(inconsistent) == 1


def test_a_kernel_splat_fails_an_otherwise_clean_run():
    clean = reliability_checks.with_kernel_log(_result("pass", "skipped"), [])
    assert clean["checks"][-1]["name"] == "kernel_log" and clean["checks"][-1]["status"] == "pass"
    assert reliability_checks.exit_status(clean) == 0
    splat = "[  52.1] WARNING: CPU: 1 PID: 7 at mm/vmscan.c:123 shrink_folio_list+0x1/0x2"
    dirty = reliability_checks.with_kernel_log(_result("pass"), [splat, "BUG: x"])
    assert dirty["status"] == "failed" and reliability_checks.exit_status(dirty) == 1
    assert (
        "2 kernel report(s)" in dirty["checks"][-1]["detail"]
        and splat in dirty["checks"][-1]["detail"]
    )
    again = reliability_checks.with_kernel_log(dirty, [])
    assert [c["name"] for c in again["checks"]].count("kernel_log") == 1


def test_rows_and_summary():
    result = _result("pass", "fail", "skipped", error="cannot read /proc/vmstat")
    rows = reliability_checks.rows(result)
    assert rows[:3] == [
        ("c0", "pass", "detail 0"),
        ("c1", "fail", "detail 1"),
        ("c2", "skipped", "detail 2"),
    ]
    assert rows[3] == ("runtime", "fail", "cannot read /proc/vmstat")
    assert reliability_checks.summary(result) == "FAILED: 1 passed, 1 failed, 1 skipped"
    assert reliability_checks.summary(_result("pass")).startswith("PASSED")


def test_load_refuses_malformed_files(tmp_path):
    path = tmp_path / "reliability.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        reliability_checks.load(path)
    path.write_text(json.dumps({"status": "ok", "checks": [{"name": "x", "status": "maybe"}]}))
    with pytest.raises(ValueError, match="bad status 'maybe'"):
        reliability_checks.load(path)
    path.write_text(json.dumps(_result("pass")))
    assert reliability_checks.load(path)["checks"][0]["name"] == "c0"


def test_the_table_is_printed_with_every_check(capsys):
    from pmr_testbed import cli

    cli.print_checks(reliability_checks.with_kernel_log(_result("pass", "skipped"), []))
    out = capsys.readouterr().out
    assert "c0" in out and "kernel_log" in out and "PASSED: 2 passed, 0 failed, 1 skipped" in out


@pytest.mark.parametrize("write_errors", [True, False])
def test_run_wires_blkdebug_and_the_host_checks(tmp_path, monkeypatch, write_errors):
    """reliability.run with a fake guest: the blkdebug config reaches QEMU
    through the swap disk, the console's expected errors become
    swap_write_errors and stay out of kernel_log, and `host` records the mode;
    without --swap-write-errors none of that."""
    from types import SimpleNamespace

    from pmr_testbed import paths
    from pmr_testbed.workflows import guest_setup

    monkeypatch.setattr(paths, "BUILD_DIR", tmp_path / "build")
    machine = SimpleNamespace(
        image=SimpleNamespace(
            bzimage=Path("/k/bzImage"), flavour="debug", as_dict=lambda: {"version": "6.1"}
        ),
        accel="tcg",
        dilation=SimpleNamespace(as_dict=lambda: {"factor": 9.0}),
        limits={"swap_bps_write": 1, "swap_iops_write": 1, "swap_bps_read": 1, "swap_iops_read": 1},
    )
    monkeypatch.setattr(guest_setup, "prepare", lambda *a, **k: machine)
    seen = {}

    def fake_boot(kernel, *, exec_cmd, console_path, rwdirs, disks, **kw):
        seen["disks"], seen["append"] = disks, kw.get("append")
        seen["spec"] = json.loads((rwdirs[0] / "spec.json").read_text())
        (rwdirs[0] / "reliability.json").write_text(
            json.dumps(dict(_result("pass"), swap_dev="vdb"))
        )
        console = _console(IO_ERROR, WRITE_ERROR, "end_swap_bio_write: 4 callbacks suppressed")
        return vm.BootResult(0, console, 1.0)

    monkeypatch.setattr(vm, "boot", fake_boot)
    p = _plan(tmp_path, swap_full=True, swap_write_errors=write_errors)
    p.req.out = tmp_path / "out"
    result = reliability.run(p, lambda msg: None)
    swap = seen["disks"][0]
    assert swap.size_mb == p.swap_mb and seen["spec"]["swap_full"] is True
    # the debug kernel boots with 4-level paging, fully preemptible
    assert seen["append"] == ["no5lvl", "preempt=full"]
    # tagged by the output directory's path, as a campaign's (campaign.disk_dir)
    from pmr_testbed.workflows import campaign

    assert swap.path.parent == campaign.disk_dir(tmp_path / "out", "reliability")
    assert swap.path.parent.parent.name.startswith("out-") and not swap.path.parent.exists()
    assert result["status"] == "ok" and result["host"]["swap_full"] is True
    assert json.loads((tmp_path / "out" / "reliability.json").read_text()) == result
    names = [c["name"] for c in result["checks"]]
    if not write_errors:
        assert swap.blkdebug is None and not (tmp_path / "out" / "blkdebug.conf").exists()
        assert names == ["c0", "kernel_log"] and result["host"]["swap_write_errors"] is None
        return
    assert swap.blkdebug == tmp_path / "out" / "blkdebug.conf" and swap.blkdebug.exists()
    assert "file.driver=blkdebug" in swap.qemu_args()[1]
    assert names == ["c0", "swap_write_errors", "kernel_log"], names
    assert [c["status"] for c in result["checks"]] == ["pass", "pass", "pass"]
    assert result["host"]["swap_write_errors"]["first_sector"] == 131072
