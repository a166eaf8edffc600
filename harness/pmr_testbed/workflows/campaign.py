"""Run a scenario on a profile for a list of schemes, N repetitions each.

Repetitions are interleaved (rep 1 of every scheme, then rep 2, ...) so that
drift on the host hits every scheme alike; every run uses the same seed,
scenario, profile, kernel and QEMU limits. Each run gets a fresh swap disk and
its own directory, and all share one read-only data disk (data_disk.py);
campaign.json records the setup, each run's status and the time the
campaign has taken (`wall_s`: setup, runs and fio, summed over the sittings
of a continued one; `setup_s`: the part of it that built the kernel and
measured the host, guest_setup.Machine.setup_s, which a checkout and a host
pay once), and is rewritten after every run so partial campaigns
stay readable. Two last boots measure the swap disk with fio
(swap_bandwidth.py), which the report sets each scheme's peak reclaim
throughput against, and reclaim under a max-rate allocator on the same disk
(max_rate.py), which the regime report sets the original kernel's peak
against. campaign.json's `flash_calibration` says how the disk's limits
were derived (guest_setup.Machine.flash_calibration). A profile that swaps
to zram has the swap disk attached but not swapped on: campaign.json's
`guest.swap` says "zram" (absent for flash), and the two closing boots,
which measure that disk, are not run: `swap_bandwidth` and `max_rate` say
why instead (swap_bandwidth.not_applicable). On a zram+flash profile
`guest.swap` says so and `guest.zram_mb` gives the zram tier's size; the
swap disk is its flash tier and is measured.

Named kernels (CampaignRequest.kernels, `pmrtb run --kernel NAME=PATH`)
run every scheme on every kernel, interleaved like schemes: the campaign's
columns are then `scheme:NAME` (campaign.json `schemes`, each run's
`scheme`, with `kernel` beside it), and campaign.json `kernels` records each
image's path and SHA-256. The calibration (dilation, the swap disk's limits,
the closing fio and max-rate boots) is the testbed kernel's for all of them,
so that only the kernel differs. `pmrtb compare` sets the columns side by
side with paired ratios.

A campaign cut off part-way (the host stopped, Ctrl-C) can be continued
(CampaignRequest.resume, used by `pmrtb paper`): the runs campaign.json
records as done are kept, if the setup it records (plan, kernel, dilation,
QEMU limits, guest) is the one this machine has now, and only the others are
run, in the same interleaved order. The directory of the run that was cut
off holds no result and is removed; a run recorded as failed is run again,
its directory kept as runs/<run>.failed-<n> for its console. A different
setup raises SetupChanged, since runs on another kernel or another
throttled disk are not comparable.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import paths, run_times
from ..config import profiles, scenarios, schemes, spec
from ..config.trace_events import extra_trace_events
from ..errors import GuestError, UserError
from ..guest import data_disk, kernel, kernel_profile, vm
from ..guest import dilation as dilation_mod
from . import guest_setup, max_rate, swap_bandwidth


@dataclass
class CampaignRequest:
    scenario: str
    profile: str
    schemes: str
    reps: int
    seed: int
    out: Path
    flavour: str = "testbed"
    rounds: int | None = None  # overrides the scenario's rounds (quick runs, sweeps)
    swap_bandwidth: bool = True  # end with the fio boot (swap_bandwidth.py)
    max_rate: bool = True  # and the max-rate allocator's (max_rate.py)
    perf_hz: int = 0  # perf in the guest at this rate (kernel_profile.py); 0: off
    resume: bool = False  # keep the runs a cut-off campaign in `out` recorded
    # recorded beside the default ones; plan() leaves them sorted, once each
    # and without the default ones (config/trace_events.py)
    trace_events: tuple[str, ...] = ()
    # (name, bzImage) of each named kernel to run the schemes on; none: the testbed's
    kernels: tuple[tuple[str, Path], ...] = ()
    # the dilation to run at instead of measuring one (a `pmrtb paper`'s, which
    # all its campaigns share); a continued campaign keeps its own
    dilation: dilation_mod.Dilation | None = None


# a named kernel's name: a column label's suffix and part of run directory names
KERNEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class SetupChanged(UserError):
    """A cut-off campaign was run on another setup than this machine's now."""


# what must match for a cut-off campaign's runs to be kept: everything in
# campaign.json but the runs themselves and the fio measurement that ends it
SETUP_KEYS = (
    "scenario",
    "rounds",
    "profile",
    "schemes",
    "reps",
    "seed",
    "dilation",
    "qemu",
    "guest",
    "kernel",
    "extra_trace_events",
    "kernels",
)
# disk_dir's name for the data disk every run of a campaign shares (data_disk.py)
DATA_DISK_DIR = "data-disk"
# how the errors name those that are options rather than the machine's setup
SETUP_NAMES = {
    "extra_trace_events": "set of --trace-event events",
    "kernels": "set of --kernel images",
}


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


@dataclass(frozen=True)
class Variant:
    """One column of a campaign: a scheme, on the testbed kernel or a named one."""

    label: str  # campaign.json's scheme name: the scheme's, or `scheme:kernel`
    scheme: schemes.Scheme
    kernel: str | None = None  # the named kernel's name
    bzimage: Path | None = None  # its image; None: the testbed kernel


@dataclass
class Plan:
    req: CampaignRequest
    profile: profiles.Profile
    scenario: scenarios.Scenario
    schemes: list[schemes.Scheme]
    variants: list[Variant]  # the columns, in the order each repetition runs them


def parse_kernels(specs: list[str]) -> tuple[tuple[str, Path], ...]:
    """`--kernel NAME=PATH` options as (name, resolved path) pairs; UserError
    on a malformed one, a repeated name, or a PATH that is not a bzImage."""
    kernels: list[tuple[str, Path]] = []
    for item in specs:
        name, sep, path = item.partition("=")
        if not sep or not KERNEL_NAME.fullmatch(name) or not path:
            raise UserError(
                f"--kernel {item!r}: give NAME=PATH, NAME of letters, digits, '.', '_' "
                "or '-', e.g. --kernel v2=../v2/arch/x86/boot/bzImage"
            )
        if name in dict(kernels):
            raise UserError(f"--kernel {name}: given twice")
        kernel.check_bzimage(Path(path), f"--kernel {item}")
        kernels.append((name, Path(path).resolve()))
    return tuple(kernels)


def variants(
    scheme_list: list[schemes.Scheme], kernels: tuple[tuple[str, Path], ...]
) -> list[Variant]:
    """Every scheme on every named kernel (kernel by kernel), or each scheme
    on the testbed kernel when there are none."""
    if not kernels:
        return [Variant(s.name, s) for s in scheme_list]
    return [Variant(f"{s.name}:{k}", s, k, path) for k, path in kernels for s in scheme_list]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def plan(req: CampaignRequest) -> Plan:
    """Check the request and the host before anything is built or written."""
    profile = profiles.load(req.profile)
    scenario = scenarios.load(req.scenario)
    if req.rounds is not None:
        if req.rounds < 1:
            raise UserError(f"--rounds must be at least 1, got {req.rounds}")
        scenario = dataclasses.replace(scenario, rounds=req.rounds)
    scheme_list = schemes.parse_list(req.schemes, profile)
    if req.reps < 1:
        raise UserError(f"--reps must be at least 1, got {req.reps}")
    if req.kernels and req.perf_hz:
        raise UserError(
            "--perf-hz reads the testbed kernel's vmlinux: profile a named kernel's "
            "runs in a campaign of its own"
        )
    kernel_profile.check(req.perf_hz)
    for name, path in req.kernels:
        kernel.check_bzimage(path, f"--kernel {name}={path}")
    kernel.check_flavour(req.flavour)
    req = dataclasses.replace(req, trace_events=tuple(extra_trace_events(req.trace_events)))
    guest_setup.check_host(profile)
    if not req.resume and req.out.exists() and any(req.out.iterdir()):
        raise UserError(f"results directory {req.out} is not empty: pick a new --out")
    return Plan(req, profile, scenario, scheme_list, variants(scheme_list, req.kernels))


def recorded_dilation(out: Path) -> dilation_mod.Dilation | None:
    """The dilation a cut-off campaign in `out` recorded, which its
    continuation keeps (its runs' CPU work and flash were set from it); None
    without one."""
    try:
        return dilation_mod.Dilation.from_dict(
            json.loads((out / "campaign.json").read_text())["dilation"]
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def run(p: Plan, progress: Callable[[str, bool], None]) -> dict:
    """Run every (rep, scheme) and return campaign.json's content.

    progress(message, run_finished) is told what is going on.
    """
    req, profile, scenario = p.req, p.profile, p.scenario
    columns = p.variants
    started = time.monotonic()
    earlier_wall_s = recorded_wall_s(req.out) if req.resume else 0.0
    earlier_setup_s = recorded_setup_s(req.out) if req.resume else {}
    req.out.mkdir(parents=True, exist_ok=True)
    machine = guest_setup.prepare(
        profile,
        req.flavour,
        req.out,
        lambda msg: progress(msg, False),
        (recorded_dilation(req.out) if req.resume else None) or req.dilation,
    )
    image, accel, dil, limits = machine.image, machine.accel, machine.dilation, machine.limits
    campaign: dict[str, Any] = {
        "scenario": scenario.name,
        "rounds": scenario.rounds,
        "profile": profile.name,
        "schemes": [v.label for v in columns],
        "reps": req.reps,
        "seed": req.seed,
        "dilation": dil.as_dict(),
        "qemu": {"accel": accel, **limits},
        "flash_calibration": machine.flash_calibration(profile),
        # the scenario's clock over its guest ms (scenarios.Scenario.time_scale)
        "time_scale": round(scenario.time_scale(dil.guest_ns_per_page), 4),
        "guest": {
            "ram_mb": profile.guest_ram_mb,
            "cpus": profile.cpus,
            "scale": profile.scale,
            "swap_mb": profile.guest_swap_mb,
            **profile.watermarks(),
            # the swap medium where it is not the swap disk alone (absent
            # for flash), and the zram tier's size on a zram+flash profile
            **({} if profile.swap == "flash" else {"swap": profile.swap}),
            **({"zram_mb": profile.guest_zram_mb} if profile.two_tiers else {}),
        },
        "kernel": {**image.as_dict(), "boot_args": kernel.BOOT_ARGS[req.flavour]},
        "setup_s": {
            step: round(earlier_setup_s.get(step, 0.0) + s, 1)
            for step, s in machine.setup_s.items()
        },
        "runs": [],
    }
    if req.trace_events:  # absent otherwise, as in campaigns from before the option
        campaign["extra_trace_events"] = list(req.trace_events)
    if req.kernels:  # absent otherwise
        campaign["kernels"] = {
            name: {"path": str(path), "sha256": _digest(path)} for name, path in req.kernels
        }
    earlier = earlier_runs(req.out, campaign) if req.resume else {}

    def save() -> None:
        campaign["wall_s"] = round(earlier_wall_s + time.monotonic() - started, 1)
        _write_json(req.out / "campaign.json", campaign)

    save()
    for rep in range(1, req.reps + 1):
        for column in columns:
            run_id = f"{run_dir_name(column.label)}-r{rep}"
            before = earlier.get((column.label, rep))
            if before and before["status"] == "ok":
                campaign["runs"].append(before)
                save()
                progress(f"{run_id}: done earlier, kept", False)
                continue
            if before:
                # failed earlier (a crash, or the host stopping the guest):
                # run it again, its evidence kept beside it
                kept = _keep_failed(req.out, run_id)
                progress(f"{run_id}: failed earlier, run again (that attempt: {kept})", False)
            elif (req.out / "runs" / run_id).exists():
                # cut off while it ran: no result in it, maybe disk images left
                shutil.rmtree(req.out / "runs" / run_id)
                shutil.rmtree(disk_dir(req.out, run_id), ignore_errors=True)
                progress(f"{run_id}: cut off earlier, removed and run again", False)
            progress(f"{run_id}: running", False)
            entry: dict[str, Any] = {"scheme": column.label, "rep": rep, "dir": f"runs/{run_id}"}
            if column.kernel:
                entry["kernel"] = column.kernel
            try:
                t0 = time.monotonic()
                _one_run(req, run_id, scenario, profile, column, machine)
                entry.update(status="ok", error=None, wall_s=round(time.monotonic() - t0, 1))
                run_times.record(scenario.name, profile.name, scenario.rounds, entry["wall_s"])
                progress(f"{run_id}: done in {entry['wall_s']} s", True)
            except GuestError as exc:
                entry.update(status="failed", error=str(exc))
                (req.out / entry["dir"]).mkdir(parents=True, exist_ok=True)
                (req.out / entry["dir"] / "failure.txt").write_text(
                    f"{exc}\n\n--- console tail ---\n{exc.console_tail}\n"
                )
                progress(f"{run_id}: FAILED: {exc}", True)
            campaign["runs"].append(entry)
            save()
    shutil.rmtree(disk_dir(req.out, DATA_DISK_DIR), ignore_errors=True)
    if not profile.swaps_to_disk:
        for key, wanted in (("swap_bandwidth", req.swap_bandwidth), ("max_rate", req.max_rate)):
            if wanted:
                campaign[key] = swap_bandwidth.not_applicable(profile)
        save()
    elif req.swap_bandwidth:
        progress("swap disk bandwidth (fio in the guest)", False)
        campaign["swap_bandwidth"] = swap_bandwidth.measure(
            req.out, profile, machine, disk_dir(req.out, "swap-bandwidth")
        )
        save()
    if req.max_rate and profile.swaps_to_disk:
        progress("reclaim under a max-rate allocator (pmr-guest alloc in the guest)", False)
        campaign["max_rate"] = max_rate.measure(
            req.out, profile, image, accel, limits, disk_dir(req.out, "max-rate")
        )
        save()
    return campaign


def earlier_runs(out: Path, setup: dict) -> dict[tuple[str, int], dict]:
    """The runs a cut-off campaign in `out` recorded, by (scheme, rep), if
    its campaign.json records `setup` (SETUP_KEYS); none if there is no
    campaign.json. Raises SetupChanged if the setup differs."""
    try:
        recorded = json.loads((out / "campaign.json").read_text())
    except FileNotFoundError:
        return {}
    except json.JSONDecodeError as exc:
        raise SetupChanged(f"{out / 'campaign.json'} is not JSON ({exc})") from exc
    now = json.loads(json.dumps(setup))  # tuples as lists, as campaign.json has them
    differs = [SETUP_NAMES.get(key, key) for key in SETUP_KEYS if recorded.get(key) != now.get(key)]
    if differs:
        raise SetupChanged(
            f"{out} was run with another {', '.join(differs)} than now: its "
            "runs cannot be continued; run the campaign in a new --out"
        )
    return {(r["scheme"], r["rep"]): r for r in recorded.get("runs", [])}


def recorded_wall_s(out: Path) -> float:
    """The time the sittings of a cut-off campaign in `out` took up to its
    last recorded step (campaign.json's `wall_s`); 0 if none is recorded."""
    try:
        return float(json.loads((out / "campaign.json").read_text()).get("wall_s", 0.0))
    except (FileNotFoundError, json.JSONDecodeError, TypeError, ValueError):
        return 0.0


def recorded_setup_s(out: Path) -> dict[str, float]:
    """campaign.json's `setup_s` in `out` (the earlier sittings' kernel
    build and host measurements); empty if none is recorded."""
    try:
        recorded = json.loads((out / "campaign.json").read_text()).get("setup_s", {})
        return {str(k): float(v) for k, v in recorded.items()}
    except (FileNotFoundError, json.JSONDecodeError, AttributeError, TypeError, ValueError):
        return {}


def _keep_failed(out: Path, run_id: str) -> str:
    """Move a failed run's directory to the first free runs/<run_id>.failed-<n>
    and drop its disk images; return the new name."""
    shutil.rmtree(disk_dir(out, run_id), ignore_errors=True)
    n = 1
    while (out / "runs" / f"{run_id}.failed-{n}").exists():
        n += 1
    kept = f"{run_id}.failed-{n}"
    if (out / "runs" / run_id).exists():
        (out / "runs" / run_id).rename(out / "runs" / kept)
    return f"runs/{kept}"


def run_dir_name(scheme_name: str) -> str:
    """A scheme's name as a run directory name: virtme-ng's --rwdir refuses
    paths with `=` (GUEST=HOST) or `@`, so `pmr@unmap_unit_kbytes=64`
    becomes `pmr_unmap_unit_kbytes_64` (campaign.json keeps the name)."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", scheme_name)


def disk_dir(out: Path, run_id: str) -> Path:
    """Where a run's disk images live while it runs: one directory per
    results directory, so that two with the same name (`pmrtb paper`'s
    `main` subdirectories) never share, nor remove each other's, images.
    The data disk all runs share is in DATA_DISK_DIR; `pmrtb reliability`
    uses it too (run_id "reliability")."""
    tag = hashlib.sha1(str(out.resolve()).encode()).hexdigest()[:8]
    return paths.BUILD_DIR / "disks" / f"{out.name}-{tag}" / run_id


def _one_run(
    req: CampaignRequest,
    run_id: str,
    scenario,
    profile,
    column: Variant,
    machine: guest_setup.Machine,
) -> None:
    image, accel, dil, limits = machine.image, machine.accel, machine.dilation, machine.limits
    run_dir = req.out / "runs" / run_id
    run_dir.mkdir(parents=True)
    slowdown = kernel.SLOWDOWN[req.flavour]
    guest_spec = spec.build(
        run_id=run_id,
        out_dir=run_dir,
        seed=req.seed,
        scenario=scenario,
        profile=profile,
        scheme=column.scheme,
        work_iters_per_ms=dil.guest_work_iters_per_ms,
        time_scale=scenario.time_scale(dil.guest_ns_per_page),
        slowdown=slowdown,
        extra_trace_events=req.trace_events,
    )
    _write_json(run_dir / "spec.json", guest_spec)
    data = data_disk.image(run_dir / "spec.json", guest_spec, disk_dir(req.out, DATA_DISK_DIR))
    disks = disk_dir(req.out, run_id)
    swap = guest_setup.swap_disk(profile, limits, disks)
    try:
        vm.create_disk(swap)
        res = vm.boot(
            column.bzimage or image.bzimage,
            exec_cmd=kernel_profile.wrap(
                f"{machine.runtime} run --spec {run_dir / 'spec.json'}", run_dir, req.perf_hz
            ),
            console_path=run_dir / "console.log",
            deadline_s=(scenario.deadline_s + guest_setup.BOOT_SLACK_S) * slowdown,
            ram_mb=profile.guest_ram_mb,
            cpus=profile.cpus,
            accel=accel,
            rwdirs=[run_dir],
            disks=[swap, data],
            append=kernel.BOOT_ARGS[req.flavour],
        )
    finally:
        shutil.rmtree(disks, ignore_errors=True)
    if res.returncode == guest_setup.GUEST_SETUP_ERROR:
        raise guest_setup.setup_error(res.console, f"run {run_id}")
    if res.returncode != 0:
        raise GuestError(
            f"guest run exited with status {res.returncode}; console: {run_dir / 'console.log'}",
            vm.tail(res.console),
        )
    status = {}
    with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
        status = json.loads((run_dir / "run.json").read_text())
    if status.get("status") != "ok":
        raise GuestError(
            f"guest run did not report success (run.json: {status or 'missing'})",
            vm.tail(res.console),
        )
    kernel_profile.report(run_dir, image.vmlinux)
