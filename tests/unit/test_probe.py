"""`pmrtb probe`: the verdict protocol between a probe script and the host."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from array import array
from pathlib import Path

import pytest

from fakerun import fake_bzimage
from pmr_testbed import cli
from pmr_testbed.errors import GuestError, UserError
from pmr_testbed.guest import kernel, vm
from pmr_testbed.workflows import probe

ROOT = Path(__file__).resolve().parents[2]
LIB = probe.PROBES_DIR / "lib" / "guest.sh"


def test_the_probes_are_the_scripts_beside_their_library():
    names = probe.available()
    assert "file-victims-without-swap" in names and "removed-memcg-reclaim" in names
    assert "guest" not in names  # probes/lib/guest.sh is sourced, not a probe


@pytest.mark.parametrize("name", probe.available())
def test_every_probe_can_pass_and_fail(name):
    path = probe.PROBES_DIR / f"{name}.sh"
    code = [ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("#")]
    assert '. "$(dirname "$0")/lib/guest.sh"' in code
    statuses = set(re.findall(r"\bverdict ([0-9])\b", "\n".join(code)))
    assert {"0", "1"} <= statuses, f"{name} must be able to pass and to fail"
    subprocess.run(["sh", "-n", str(path)], check=True)


@pytest.mark.parametrize("status", [0, 1, 2])
def test_the_library_verdict_logs_the_result_and_exits_with_it(tmp_path, status):
    res = subprocess.run(
        [
            "sh",
            "-c",
            f'set -eu; out={tmp_path}; . {LIB}; log "seen"; verdict {status} "what it found"',
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == status
    log = (tmp_path / "guest.log").read_text()
    assert log == "seen\nRESULT: what it found\n"
    assert probe.verdict(log) == "what it found"


def test_verdict_is_the_last_result_line():
    log = "files before load: 1\nRESULT: first\nmore\nRESULT: memory.reclaim took them\n"
    assert probe.verdict(log) == "memory.reclaim took them"
    assert probe.verdict("no verdict here\n") is None


@pytest.mark.parametrize("rc, status", [(0, "passed"), (1, "failed"), (2, "inconclusive")])
def test_exit_status_gives_the_probe_status(tmp_path, rc, status):
    res = probe.result_of("p", rc, "RESULT: said\n", tmp_path, "console")
    assert (res.status, res.verdict) == (status, "said")


def test_the_command_exits_non_zero_unless_passed():
    assert cli.PROBE_EXIT["passed"] == 0
    assert cli.PROBE_EXIT["failed"] != 0 and cli.PROBE_EXIT["inconclusive"] != 0
    # neither a user error (2) nor a guest failure (3)
    assert not {cli.PROBE_EXIT["failed"], cli.PROBE_EXIT["inconclusive"]} & {2, 3}
    assert set(cli.PROBE_EXIT) == set(probe.STATUS.values())


@pytest.mark.parametrize(
    "rc, log", [(0, "no result line\n"), (137, "RESULT: x\n"), (3, "RESULT: x\n")]
)
def test_a_probe_that_broke_is_a_guest_error_not_a_result(tmp_path, rc, log):
    with pytest.raises(GuestError):
        probe.result_of("p", rc, log, tmp_path, "console tail")


def test_unknown_probe_flavour_or_kernel_is_refused(tmp_path):
    with pytest.raises(UserError, match="no probe 'nope'"):
        probe.check("nope", "testbed")
    with pytest.raises(UserError, match="no probe 'lib/guest'"):
        probe.check("lib/guest", "testbed")
    with pytest.raises(UserError, match="unknown kernel flavour"):
        probe.check("removed-memcg-reclaim", "fast")
    with pytest.raises(UserError, match="no such kernel image"):
        probe.check("removed-memcg-reclaim", "testbed", tmp_path / "bzImage")


def _fake_boot(returncode, guest_log, seen):
    def boot(bzimage, *, exec_cmd, console_path, rwdirs, disks, **kw):
        seen.update(bzimage=bzimage, exec_cmd=exec_cmd, disks=disks, kw=kw)
        assert all(d.path.exists() for d in disks)
        (rwdirs[0] / "guest.log").write_text(guest_log)
        return vm.BootResult(returncode, "console", 1.0)

    return boot


def test_run_boots_the_probe_and_records_its_verdict(tmp_path, monkeypatch):
    image = fake_bzimage(tmp_path / "bzImage")
    out = tmp_path / "out"
    out.mkdir()
    (out / "probe.json").write_text('{"status": "passed"}')  # from an earlier run
    seen = {}
    monkeypatch.setattr(vm, "check_host_tools", lambda: None)
    monkeypatch.setattr(vm, "detect_accel", lambda k: "tcg")
    monkeypatch.setattr(vm, "boot", _fake_boot(1, "RESULT: left 17 MB\n", seen))
    res = probe.run("removed-memcg-reclaim", ["2"], out, "testbed", lambda m: None, image)
    assert (res.status, res.verdict) == ("failed", "left 17 MB")
    assert seen["exec_cmd"].endswith(f"probes/removed-memcg-reclaim.sh {out} 2")
    assert seen["bzimage"] == image.resolve()
    assert seen["kw"]["append"] == kernel.BOOT_ARGS["testbed"]
    assert {d.serial for d in seen["disks"]} == {"pmrswap", "pmrdata"}
    assert not any(d.path.exists() for d in seen["disks"])  # images removed afterwards
    record = json.loads((out / "probe.json").read_text())
    assert record["status"] == "failed" and record["args"] == ["2"]
    # the guest's loads stretch by the kernel's slowdown
    assert (out / "slowdown").read_text() == f"{kernel.SLOWDOWN['testbed']}\n"


def test_a_broken_probe_leaves_no_verdict_behind(tmp_path, monkeypatch):
    image = fake_bzimage(tmp_path / "bzImage")
    out = tmp_path / "out"
    out.mkdir()
    (out / "probe.json").write_text('{"status": "passed"}')
    monkeypatch.setattr(vm, "check_host_tools", lambda: None)
    monkeypatch.setattr(vm, "detect_accel", lambda k: "tcg")
    monkeypatch.setattr(vm, "boot", _fake_boot(1, "no verdict\n", {}))
    with pytest.raises(GuestError):
        probe.run("removed-memcg-reclaim", [], out, "testbed", lambda m: None, image)
    assert not (out / "probe.json").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["nope"], "no probe 'nope'"),
        (["removed-memcg-reclaim", "--flavour", "fast"], "unknown kernel flavour 'fast'"),
        (["removed-memcg-reclaim", "--kernel", "/nonexistent/bzImage"], "no such kernel image"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path, args, message):
    res = subprocess.run(
        [sys.executable, "-m", "pmr_testbed.cli", "probe", *args, "--out", str(tmp_path / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "harness"), "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 2, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("pmrtb: error: ") and message in lines[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("status", ["passed", "failed", "inconclusive"])
def test_the_exit_status_reaches_the_shell(tmp_path, monkeypatch, status):
    # click in non-standalone mode returns a command's typer.Exit code
    # instead of exiting with it: main() must pass it on (it once exited 0)
    monkeypatch.setattr(
        probe,
        "run",
        lambda name, args, out, flavour, progress, image: probe.ProbeResult(
            name, status, "said", out
        ),
    )
    monkeypatch.setattr(
        sys, "argv", ["pmrtb", "probe", "removed-memcg-reclaim", "--out", str(tmp_path)]
    )
    with pytest.raises(SystemExit) as exc:
        cli.main()
    assert exc.value.code == cli.PROBE_EXIT[status]


PAGED_OUT = probe.PROBES_DIR / "lib" / "paged_out.py"


def test_paged_out_counts_the_memcgs_unmapped_anon_in_the_swap_cache(tmp_path):
    mmap, anon, swapcache, lru = 1 << 11, 1 << 12, 1 << 13, 1 << 5
    memcg = tmp_path / "memcg"
    memcg.mkdir()
    mine = memcg.stat().st_ino
    other = mine + 1
    pages = [
        (mine, anon | swapcache | lru),  # paged out: counted
        (mine, anon | swapcache | lru | mmap),  # mapped again
        (mine, swapcache | lru),  # swap readahead, not anon yet
        (mine, anon | lru),  # no slot
        (other, anon | swapcache | lru),  # someone else's
        (mine, anon | swapcache),  # paged out: counted
        # the inode's bytes across two entries, owned by no memcg
        ((mine & 0xFFFFFFFF) << 32, anon | swapcache),
        (mine >> 32, 0),
    ]
    # More entries than one read, so that the chunks and the search meet
    pages += [(0, 0)] * (1 << 17) + [(mine, anon | swapcache)]
    (tmp_path / "cg").write_bytes(array("Q", [p[0] for p in pages]).tobytes())
    (tmp_path / "flags").write_bytes(array("Q", [p[1] for p in pages]).tobytes())
    res = subprocess.run(
        [sys.executable, str(PAGED_OUT), str(memcg), str(tmp_path / "flags"), str(tmp_path / "cg")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(res.stdout) == 3 * os.sysconf("SC_PAGE_SIZE")


def test_paged_out_wants_a_cgroup(tmp_path):
    res = subprocess.run([sys.executable, str(PAGED_OUT)], capture_output=True, text=True)
    assert res.returncode == 2 and "usage" in res.stderr


PAGE_STATES = probe.PROBES_DIR / "lib" / "page_states.py"


def test_page_states_reads_the_areas_pagemap_entries(tmp_path):
    present, swapped = 1 << 63, 1 << 62
    # Pages 0-9 of a pagemap: the area is pages 4-8 (address 0x4000)
    entries = [0] * 4 + [present | 1234, swapped | 77, 0, present, swapped] + [present]
    (tmp_path / "pagemap").write_bytes(array("Q", entries).tobytes())
    subprocess.run(
        [
            sys.executable,
            str(PAGE_STATES),
            "save",
            str(tmp_path / "pagemap"),
            "4000",
            "5",
            str(tmp_path / "states"),
        ],
        check=True,
    )
    assert (tmp_path / "states").read_text() == "ps-ps"


def test_page_states_counts_the_pages_paged_out_by_parity(tmp_path):
    # page 0 and 4 (even) and 3 (odd) go; 6 was out already, 7 was never there
    before, after = "pppppps-", "sppsspss"
    (tmp_path / "before").write_text(before)
    (tmp_path / "after").write_text(after)
    res = subprocess.run(
        [
            sys.executable,
            str(PAGE_STATES),
            "paged-out",
            str(tmp_path / "before"),
            str(tmp_path / "after"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert res.stdout.split() == ["even", "2", "odd", "1"]


def test_page_states_counts_the_paged_out_pages_still_in_memory(tmp_path):
    # paged out: 0, 3, 4 (as above); of them, mincore finds 3 and 4 in memory
    (tmp_path / "before").write_text("pppppps-")
    (tmp_path / "after").write_text("sppsspss")
    (tmp_path / "incore").write_text("01011011")
    res = subprocess.run(
        [
            sys.executable,
            str(PAGE_STATES),
            "swap-cached",
            *(str(tmp_path / f) for f in ("before", "after", "incore")),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert res.stdout.split() == ["even", "1", "odd", "1"]


def test_page_states_refuses_a_short_pagemap_and_bad_usage(tmp_path):
    (tmp_path / "pagemap").write_bytes(array("Q", [0, 0]).tobytes())
    res = subprocess.run(
        [
            sys.executable,
            str(PAGE_STATES),
            "save",
            str(tmp_path / "pagemap"),
            "0",
            "3",
            str(tmp_path / "states"),
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode != 0 and "ended after 2 of 3 pages" in res.stderr
    res = subprocess.run([sys.executable, str(PAGE_STATES), "load"], capture_output=True, text=True)
    assert res.returncode == 2 and "usage" in res.stderr


TOUCH_APP = probe.PROBES_DIR / "lib" / "touch_app.py"


def _wait_for(path: Path, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)


def test_touch_app_writes_its_area_and_reads_the_even_then_odd_pages_on_signal(tmp_path):
    state = tmp_path / "app"
    app = subprocess.Popen([sys.executable, str(TOUCH_APP), "1", str(state)])
    try:
        _wait_for(Path(f"{state}.addr"))
        address, pages = Path(f"{state}.addr").read_text().split()
        assert int(pages) == (1 << 20) // os.sysconf("SC_PAGE_SIZE")
        subprocess.run(
            [
                sys.executable,
                str(PAGE_STATES),
                "save",
                f"/proc/{app.pid}/pagemap",
                address,
                pages,
                str(tmp_path / "states"),
            ],
            check=True,
        )
        assert (tmp_path / "states").read_text() == "p" * int(pages)  # written, so present
        app.send_signal(signal.SIGUSR1)
        _wait_for(Path(f"{state}.touched"))
        # page i holds 1 + i % 255: the sum of the even pages' bytes
        expected = sum(1 + i % 255 for i in range(0, int(pages), 2))
        assert int(Path(f"{state}.touched").read_text()) == expected
        app.send_signal(signal.SIGUSR2)
        _wait_for(Path(f"{state}.odd"))
        expected = sum(1 + i % 255 for i in range(1, int(pages), 2))
        assert int(Path(f"{state}.odd").read_text()) == expected
        # mincore before the reads: every page written and none swapped, so all in memory
        assert Path(f"{state}.incore").read_text() == "1" * int(pages)
    finally:
        app.kill()
        app.wait()


SWAP_RUNS = probe.PROBES_DIR / "lib" / "swap_runs.py"


def _swap_runs(tmp_path, before, after):
    (tmp_path / "before").write_text(json.dumps(before))
    (tmp_path / "after").write_text(json.dumps(after))
    res = subprocess.run(
        [
            sys.executable,
            str(SWAP_RUNS),
            "runs",
            "map",
            *(str(tmp_path / f) for f in ("before", "after")),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return [int(x) for x in res.stdout.split()]


def test_swap_runs_counts_runs_of_one_app_in_slot_order(tmp_path):
    # Two apps of 4 pages; app 1's page 3 was out already and stays out.
    before = {"0": [0, 0, 0, 0], "1": [0, 0, 0, 900]}
    # Interleaved, as a batch written in LRU order: 0 1 0 1 0 1
    interleaved = {"0": [10, 12, 14, 0], "1": [11, 13, 15, 900]}
    assert _swap_runs(tmp_path, before, interleaved) == [6, 6, 2]
    # Grouped by app: 0 0 0, then 1 1 1
    grouped = {"0": [10, 11, 12, 0], "1": [13, 14, 15, 900]}
    assert _swap_runs(tmp_path, before, grouped) == [6, 2, 2]
    assert _swap_runs(tmp_path, before, before) == [0, 0, 0]


def test_swap_runs_reads_swap_slots_from_the_pagemap(tmp_path, monkeypatch):
    sys.path.insert(0, str(SWAP_RUNS.parent))
    try:
        import swap_runs
    finally:
        sys.path.pop(0)
    swapped, present = 1 << 62, 1 << 63
    # Pages 0-5 of a pagemap: the area is pages 2-4 (address 0x2000)
    entries = [0, 0, swapped | (7 << 5) | 1, present | 55, swapped | (8 << 5) | 1, 0]
    (tmp_path / "pagemap").write_bytes(array("Q", entries).tobytes())
    real_open = open
    monkeypatch.setattr(
        "builtins.open",
        lambda p, *a, **k: real_open(
            tmp_path / "pagemap" if p == "/proc/42/pagemap" else p, *a, **k
        ),
    )
    assert swap_runs.slots(42, 0x2000, 3) == [(7 << 5) | 1, 0, (8 << 5) | 1]
