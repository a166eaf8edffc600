"""`pmrtb reliability`: one guest boot that checks data integrity and kernel
reliability under heavy swapping; the guest side is `pmr-guest reliability`
(runtime/src/reliability.rs), which writes reliability.json.

The guest boots like a run's (guest_setup: the same kernel, accelerator,
dilation and swap disk throttled like the profile's flash; a zram+flash
profile's zram tier above the disk, at the profile's size). Only the swap
disk's size differs: the checker's pages (1.5 x RAM) and stress-ng's
(0.7 x RAM) must fit in RAM plus swap, far beyond the profile's swap, so the
disk gets SWAP_RAM_RATIO x RAM. With two tiers the guest checks that both
held pages (`swap_tiers`). The host adds one check of its own: no
kernel splat (oops, BUG, WARNING, KASAN, lockdep) on the console.

Two options put the swap device in trouble; they combine with each other
and with the rest:

- `--swap-full`: the disk gets SWAP_FULL_RAM_RATIO x RAM, enough for the
  checkers but not for stress-ng on top, so the swap runs full and the OOM
  killer steps in. The guest (spec `swap_full`) then checks that SwapFree
  really fell to about 0 (`swap_full`), tolerates checkers killed by the
  OOM killer as long as one survives, and ends the load MIN_SWEEPS sweeps
  after the swap ran full instead of at a pswpout goal (so `--swap-factor`
  does not apply).
- `--swap-write-errors`: QEMU's blkdebug sits under the swap disk and fails
  every write to a small fixed region with EIO (blkdebug.py, its config in
  the results directory); the host checks on the console that the guest's
  swap layer met the errors (`swap_write_errors`, swap_write_errors.py). The
  error lines are no splat (guest.SPLAT_PATTERNS matches none of them), so
  kernel_log does not count them; a WARNING, BUG or the like still fails it.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import paths, schema
from ..analysis import reliability_checks, swap_write_errors
from ..config import profiles, schemes, spec
from ..errors import GuestError, UserError
from ..guest import blkdebug, kernel, vm
from . import campaign, guest_setup

CHECKER_PROCESSES = 4
CHECKER_RAM_RATIO = 1.5
STRESS_RAM_RATIO = 0.7
STRESS_WORKERS = 2
STRESS_NG = Path("/usr/bin/stress-ng")
# Swap for everything above RAM's worth of the workload, plus half of RAM
# of margin (the guest checks that its swap holds the workload).
SWAP_RAM_RATIO = CHECKER_RAM_RATIO + STRESS_RAM_RATIO - 0.5
# --swap-full: room for the checkers (the guest wants swap >= (1.5 - 0.6) x
# MemTotal) but not for stress-ng too (it wants swap <= (1.5 + 0.7 - 0.95) x
# MemTotal, i.e. less than the workload beyond 95% of RAM); MemTotal is about
# 95% of the guest's RAM, so this is 1.05 x MemTotal, in the middle.
SWAP_FULL_RAM_RATIO = 1.0
DEFAULT_SWAP_FACTOR = 4.0
MIN_SWEEPS = 2  # the guest's (runtime/src/reliability.rs)
# The guest's load phase ends at the swap target or after LOAD_DEADLINE_S;
# its final checks (stress-ng's exit, a last verification of every page,
# cleanup) get FINAL_PHASE_S more before the host gives up on the guest.
LOAD_DEADLINE_S = 3600
FINAL_PHASE_S = 1800
MAX_SWAP_FACTOR = 50
KNOB_ROOTS = ("/proc/sys/", "/sys/")


@dataclass
class ReliabilityRequest:
    profile: str
    scheme: str
    out: Path
    flavour: str = "testbed"
    toggle: str | None = None
    toggles: int = 100
    toggle_refused: str | None = None
    swap_factor: float = DEFAULT_SWAP_FACTOR
    seed: int = 1
    swap_full: bool = False
    swap_write_errors: bool = False


def parse_toggle(text: str, count: int, refused: str | None) -> dict:
    """--toggle PATH=V1,V2,... with --toggles and --toggle-refused, as the
    spec's `toggle`."""
    path, eq, values_text = text.partition("=")
    path = path.strip()
    if not eq or not path:
        raise UserError(
            f"--toggle must be PATH=V1,V2,... (e.g. /sys/kernel/mm/pmr/enabled=0,1), got {text!r}"
        )
    if not path.startswith(KNOB_ROOTS) or ".." in path.split("/"):
        raise UserError(f"--toggle path {path} must be under /proc/sys or /sys")
    values = [v.strip() for v in values_text.split(",")]
    if len(values) < 2 or not all(values):
        raise UserError(
            f"--toggle {text!r} needs at least two non-empty values after '=', separated by commas"
        )
    if count < 1:
        raise UserError(f"--toggles must be at least 1, got {count}")
    refused_values = [v.strip() for v in refused.split(",")] if refused else []
    for r in refused_values:
        if r not in values:
            raise UserError(
                f"--toggle-refused value {r!r} is not one of the --toggle values "
                f"({','.join(values)})"
            )
    if values[0] in refused_values:
        raise UserError(
            f"--toggle-refused names the first value {values[0]!r}, which is written "
            "back at the end: put a value the kernel accepts first"
        )
    return {"path": path, "values": values, "refused": refused_values, "count": count}


@dataclass
class Plan:
    req: ReliabilityRequest
    profile: profiles.Profile
    scheme: schemes.Scheme
    toggle: dict | None

    @property
    def swap(self) -> dict:
        """spec.json `swap`: the swap disk, and a zram+flash profile's zram
        tier above it (unless the scheme keeps the flash tier alone)."""
        return spec.swap_settings(self.profile, self.scheme.tiers)

    @property
    def zram_mb(self) -> int:
        return int(self.swap["zram_mb"])

    @property
    def swap_mb(self) -> int:
        """The swap disk's size. With --swap-full a zram tier counts
        towards the swap that must run full, so the disk is that much
        smaller."""
        if self.req.swap_full:
            return round(self.profile.guest_ram_mb * SWAP_FULL_RAM_RATIO) - self.zram_mb
        return max(self.profile.guest_swap_mb, round(self.profile.guest_ram_mb * SWAP_RAM_RATIO))

    @property
    def error_region(self) -> blkdebug.ErrorRegion | None:
        """Where swap writes fail (--swap-write-errors), else None."""
        return blkdebug.region_for(self.swap_mb) if self.req.swap_write_errors else None


def plan(req: ReliabilityRequest) -> Plan:
    """Check the request and the host before anything is built or written."""
    kernel.check_flavour(req.flavour)
    if "," in req.scheme:
        raise UserError(f"--scheme takes one scheme (or a+b), got {req.scheme!r}")
    if not 0 < req.swap_factor <= MAX_SWAP_FACTOR:
        raise UserError(f"--swap-factor must be in (0, {MAX_SWAP_FACTOR}], got {req.swap_factor}")
    if req.swap_full and req.swap_factor != DEFAULT_SWAP_FACTOR:
        raise UserError(
            f"--swap-factor sets the pswpout goal of the load phase; with --swap-full "
            f"the load ends {MIN_SWEEPS} sweeps after the swap ran full: drop "
            "--swap-factor"
        )
    if req.toggle is None and req.toggle_refused:
        raise UserError("--toggle-refused needs --toggle")
    toggle = parse_toggle(req.toggle, req.toggles, req.toggle_refused) if req.toggle else None
    profile = profiles.load(req.profile)
    scheme = schemes.resolve(req.scheme.strip(), profile)
    if not spec.swap_settings(profile, scheme.tiers)["disk"]:
        raise UserError(
            f"scheme {scheme.name} on profile {profile.name} swaps to zram alone: the "
            "reliability check needs the swap disk (pick a flash or zram+flash profile, "
            'and a scheme without [swap] tiers = "zram")'
        )
    if scheme.skew is not None:
        raise UserError(
            f"scheme {scheme.name} has [skew], which acts at app switches: the reliability "
            "check has no apps (under `pmrtb run` every app checks each heap page it reads)"
        )
    if scheme.ice is not None:
        raise UserError(
            f"scheme {scheme.name} has [ice], which freezes apps: the reliability check has "
            "no apps (under `pmrtb run` every app checks each heap page it reads)"
        )
    if scheme.swam is not None and (
        scheme.swam["swapd"] or scheme.swam["eoom"] or scheme.swam["cleaner"] is not None
    ):
        raise UserError(
            f"scheme {scheme.name} has [swam.swapd] or [swam.eoom] or [swam.cleaner], which add "
            "swap files, order lmkd's kills and swap-clean the apps: the reliability check swaps "
            "on the raw disk and has no apps (a [swam] with [swam.wsp] alone, the kernel's "
            "floors, runs)"
        )
    if not STRESS_NG.exists():
        raise UserError(f"{STRESS_NG} not found: run `make setup` (or apt-get install stress-ng)")
    guest_setup.check_host(profile)
    if req.out.exists() and any(req.out.iterdir()):
        raise UserError(f"results directory {req.out} is not empty: pick a new --out")
    p = Plan(req, profile, scheme, toggle)
    if req.swap_write_errors:
        blkdebug.region_for(p.swap_mb)  # UserError if the disk is too small for the region
    return p


def build_spec(p: Plan, out_dir: Path) -> dict:
    """spec.json of `pmr-guest reliability` (docs/guest-interface.md),
    checked against schemas/reliability-spec.schema.json."""
    document = {
        "out_dir": str(out_dir),
        "deadline_s": LOAD_DEADLINE_S,
        "scheme": {
            "name": p.scheme.name,
            "knobs": p.scheme.knobs,
            "policies": p.scheme.policies,
            "kthreads": p.scheme.kthreads,
        },
        "memory": spec.memory_settings(p.profile),
        "swap": p.swap,
        "swap_factor": p.req.swap_factor,
        "checker": {
            "processes": CHECKER_PROCESSES,
            "ram_ratio": CHECKER_RAM_RATIO,
            "seed": p.req.seed,
        },
        "stress_ng": {
            "path": str(STRESS_NG),
            "workers": STRESS_WORKERS,
            "ram_ratio": STRESS_RAM_RATIO,
        },
        "toggle": p.toggle,
        "swap_full": p.req.swap_full,
    }
    return schema.check("reliability-spec", document)


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


def run(p: Plan, progress: Callable[[str], None]) -> dict:
    """Boot the guest once, run the checks, return reliability.json's content
    (with the host's kernel_log check) after writing it to the output directory."""
    out = p.req.out
    out.mkdir(parents=True, exist_ok=True)
    machine = guest_setup.prepare(p.profile, p.req.flavour, out, progress)
    guest_spec = build_spec(p, out)
    _write_json(out / "spec.json", guest_spec)
    disk_dir = campaign.disk_dir(out, "reliability")
    swap = guest_setup.swap_disk(p.profile, machine.limits, disk_dir, p.swap_mb)
    region = p.error_region
    if region is not None:
        config = out / blkdebug.CONFIG_NAME
        config.write_text(blkdebug.config_text(region))
        swap = dataclasses.replace(swap, blkdebug=config)
    console_path = out / "console.log"
    zram = f" under {p.zram_mb} MB of zram" if p.zram_mb else ""
    progress(
        f"guest: {p.scheme.name} on {p.profile.name}, {p.profile.guest_ram_mb} MB RAM, "
        f"{p.swap_mb} MB swap disk{zram}{describe_faults(p)} (console: {console_path})"
    )
    t0 = time.monotonic()
    try:
        vm.create_disk(swap)
        res = vm.boot(
            machine.image.bzimage,
            exec_cmd=f"{paths.guest_runtime()} reliability --spec {out / 'spec.json'}",
            console_path=console_path,
            deadline_s=LOAD_DEADLINE_S + FINAL_PHASE_S + guest_setup.BOOT_SLACK_S,
            ram_mb=p.profile.guest_ram_mb,
            cpus=p.profile.cpus,
            accel=machine.accel,
            rwdirs=[out],
            disks=[swap],
            append=kernel.BOOT_ARGS[machine.image.flavour],
            check_splats=False,
        )
    finally:
        shutil.rmtree(disk_dir, ignore_errors=True)
    if res.returncode == guest_setup.GUEST_SETUP_ERROR:
        raise guest_setup.setup_error(res.console, "reliability")
    splats = vm.splats(res.console)
    try:
        result = reliability_checks.load(out / "reliability.json")
    except (FileNotFoundError, ValueError) as exc:
        problem = f"; the console shows {splats[0]!r}" if splats else ""
        raise GuestError(
            f"guest exited with status {res.returncode} without a valid "
            f"reliability.json ({exc}){problem}; console: {console_path}",
            vm.tail(res.console),
        ) from None
    if region is not None:
        result = reliability_checks.with_check(
            result, swap_write_errors.check(res.console, result.get("swap_dev"), region)
        )
    result = reliability_checks.with_kernel_log(result, splats)
    result["host"] = {
        "profile": p.profile.name,
        "flavour": p.req.flavour,
        "guest_exit": res.returncode,
        "wall_s": round(time.monotonic() - t0, 1),
        "guest_ram_mb": p.profile.guest_ram_mb,
        "swap_mb": p.swap_mb,
        "zram_mb": p.zram_mb,
        "profile_swap_mb": p.profile.guest_swap_mb,
        "swap_full": p.req.swap_full,
        "swap_write_errors": region.as_dict() if region else None,
        "kernel": machine.image.as_dict(),
        "dilation": machine.dilation.as_dict(),
        "qemu": {"accel": machine.accel, **machine.limits},
    }
    _write_json(out / "reliability.json", result)
    return result


def describe_faults(p: Plan) -> str:
    """', swap sized to run full, writes failing at ...' for the progress line."""
    parts = []
    if p.req.swap_full:
        parts.append("sized to run full")
    if p.error_region is not None:
        r = p.error_region
        parts.append(f"writes failing at sectors {r.first_sector}-{r.end_sector - 1}")
    return "".join(f", {x}" for x in parts)
