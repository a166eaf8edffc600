"""`pmrtb probe`: one guest boot that runs a kernel experiment written as a
shell script, `probes/<name>.sh`, and reports its verdict.

A probe checks one behaviour of the series that the app workload does not
reach on purpose (a memcg that may not swap, a removed memcg's memory). It
runs as root in a small guest booted like every other (guest.boot: the
console captured whole, a deadline, no kernel splat allowed) with two
unthrottled virtio disks the script finds by their serial:
`spec.SWAP_SERIAL` (SWAP_MB) and `spec.DATA_SERIAL` (DATA_MB, for a file
system). Its command line is `sh probes/<name>.sh OUT [ARGS...]`, OUT being
the results directory (a --rwdir); it appends what it sees to OUT/guest.log,
ends with one line `RESULT: ...` and exits

  0  passed: the kernel did what the probe expects
  1  failed: it did not
  2  inconclusive: the probe could not set up what it tests (nothing was
     checked; never counted as a pass)

The host writes OUT/probe.json (verdict, status, kernel, accelerator, time).
"""

from __future__ import annotations

import json
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..config import spec
from ..errors import GuestError, UserError
from ..guest import kernel, vm
from . import campaign

PROBES_DIR = paths.ROOT / "probes"
RAM_MB = 512
CPUS = 2
SWAP_MB = 1024
DATA_MB = 512
DEADLINE_S = 600
STATUS = {0: "passed", 1: "failed", 2: "inconclusive"}
VERDICT_PREFIX = "RESULT: "


def available() -> list[str]:
    return sorted(p.stem for p in PROBES_DIR.glob("*.sh"))


def script(name: str) -> Path:
    if name not in available():
        raise UserError(
            f"no probe {name!r}: probes/{name}.sh does not exist "
            f"(probes: {', '.join(available()) or 'none'})"
        )
    return PROBES_DIR / f"{name}.sh"


def check(name: str, flavour: str, image: Path | None = None) -> Path:
    """The probe's script, or a UserError for an unknown probe or flavour or
    a kernel image that is not there."""
    path = script(name)
    kernel.check_flavour(flavour)
    if image is not None:
        kernel.check_bzimage(image, f"--kernel {image}")
    return path


def verdict(guest_log: str) -> str | None:
    """The last `RESULT: ...` line of the probe's log, without the prefix."""
    lines = [
        ln[len(VERDICT_PREFIX) :].strip()
        for ln in guest_log.splitlines()
        if ln.startswith(VERDICT_PREFIX)
    ]
    return lines[-1] if lines else None


@dataclass(frozen=True)
class ProbeResult:
    name: str
    status: str  # passed, failed or inconclusive
    verdict: str
    out: Path


def result_of(name: str, returncode: int, guest_log: str, out: Path, console: str) -> ProbeResult:
    """The probe's outcome from its exit status and log; a status the probe
    protocol does not know, or no verdict, is a failed guest, not a result."""
    said = verdict(guest_log)
    if returncode not in STATUS or said is None:
        raise GuestError(
            f"probe {name} exited with status {returncode} "
            f"{'and no RESULT line' if said is None else f'({said})'}; "
            f"its log: {out / 'guest.log'}, console: {out / 'console.log'}",
            vm.tail(console),
        )
    return ProbeResult(name, STATUS[returncode], said, out)


def run(
    name: str,
    args: list[str],
    out: Path,
    flavour: str,
    progress: Callable[[str], None],
    image: Path | None = None,
) -> ProbeResult:
    """Boot the series' kernel of `flavour` (or the bzImage `image`, e.g. a
    kernel without a patch, to see the probe fail) and run the probe."""
    path = check(name, flavour, image)
    vm.check_host_tools()
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("guest.log", "probe.json"):
        (out / stale).unlink(missing_ok=True)
    # how much slower the kernel runs: the probes stretch their loads by it
    (out / "slowdown").write_text(f"{kernel.SLOWDOWN[flavour]}\n")
    if image is None:
        progress(f"kernel ({flavour})")
        built = kernel.build(flavour)
        bzimage, kernel_info = built.bzimage, built.as_dict()
    else:
        bzimage = image.resolve()
        kernel_info = {"flavour": flavour, "bzimage": str(bzimage)}
    accel = vm.detect_accel(bzimage)
    disk_dir = campaign.disk_dir(out, "probe")
    disks = [
        vm.Disk(disk_dir / "swap.img", spec.SWAP_SERIAL, SWAP_MB),
        vm.Disk(disk_dir / "data.img", spec.DATA_SERIAL, DATA_MB),
    ]
    progress(f"guest: probe {name} (console: {out / 'console.log'})")
    t0 = time.monotonic()
    try:
        for d in disks:
            vm.create_disk(d)
        res = vm.boot(
            bzimage,
            exec_cmd=shlex.join(["sh", str(path), str(out), *args]),
            console_path=out / "console.log",
            deadline_s=DEADLINE_S * kernel.SLOWDOWN[flavour],
            ram_mb=RAM_MB,
            cpus=CPUS,
            accel=accel,
            rwdirs=[out],
            disks=disks,
            append=kernel.BOOT_ARGS[flavour],
        )
    finally:
        shutil.rmtree(disk_dir, ignore_errors=True)
    log_path = out / "guest.log"
    log = log_path.read_text(errors="replace") if log_path.exists() else ""
    result = result_of(name, res.returncode, log, out, res.console)
    (out / "probe.json").write_text(
        json.dumps(
            {
                "probe": name,
                "args": args,
                "status": result.status,
                "verdict": result.verdict,
                "wall_s": round(time.monotonic() - t0, 1),
                "kernel": kernel_info,
                "accel": accel,
                "ram_mb": RAM_MB,
                "cpus": CPUS,
            },
            indent=2,
        )
        + "\n"
    )
    return result
