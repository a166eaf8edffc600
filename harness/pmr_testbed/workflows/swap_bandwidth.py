"""The swap disk's write bandwidth as fio measures it inside a guest booted
like a campaign's runs (same kernel, accelerator and QEMU throttling): the
figure a reclaim throughput is compared with (the report gives each scheme's
peak as a share of it; issue 5 wants PMR's peak at 60% of it or more).

One extra boot at the end of a campaign: fio writes the raw swap disk (a
fresh image, discarded afterwards) sequentially in 1 MiB direct I/Os, 16 in
flight, for 10 s after a 2 s ramp, then at random in 4 KiB direct I/Os, 32
in flight, for 5 s after a 1 s ramp (whether the disk sustains the
profile's 4 KiB random-write IOPS, `swap_iops_write`, not only large
writes), and leaves its JSON output in the campaign directory
(`swap_bandwidth/fio.json`). campaign.json keeps

  "swap_bandwidth": {"write_mbps": 127.6, "rand_write_4k_iops": 25100.0,
                     "fio": {...the first job...}, "fio_4k": {...}, "error": null}

and a failed measurement is kept as an error, never as a number. A
profile that swaps to zram does not swap on the disk: its campaigns keep
`not_applicable()` instead, no figure, no error and a line saying why.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

from ..analysis.metrics import MB
from ..config import spec
from ..config.profiles import Profile
from ..errors import GuestError
from ..guest import kernel, vm
from . import guest_setup

# the fio job (command line options without the leading --)
FIO_JOB = {
    "rw": "write",
    "bs": "1M",
    "iodepth": 16,
    "ioengine": "libaio",
    "direct": 1,
    "ramp_time": 2,
    "runtime": 10,
    "time_based": 1,
}
FIO_JOB_4K = {
    "rw": "randwrite",
    "bs": "4k",
    "iodepth": 32,
    "ioengine": "libaio",
    "direct": 1,
    "ramp_time": 1,
    "runtime": 5,
    "time_based": 1,
    "stonewall": 1,
}
DEADLINE_S = 90


def not_applicable(profile: Profile) -> dict:
    """campaign.json's `swap_bandwidth` (and `max_rate`) for a profile that
    does not swap on the swap disk: no figure and why."""
    return {
        "error": None,
        "not_applicable": f"profile {profile.name} swaps to {profile.swap}, not on the swap disk",
    }


def guest_command(serial: str, output: Path) -> str:
    """The guest's shell command: find the disk by serial (as pmr-guest
    does, /sys/block/vd*/serial) and run fio on it."""
    job = " ".join(f"--{k}={v}" for k, v in FIO_JOB.items())
    job_4k = " ".join(f"--{k}={v}" for k, v in FIO_JOB_4K.items())
    script = (
        f"dev=; for d in /sys/block/vd*; do "
        f'[ "$(cat "$d/serial" 2>/dev/null)" = {shlex.quote(serial)} ] && dev=/dev/${{d##*/}}; '
        f'done; [ -n "$dev" ] || {{ echo "pmr-swap-bandwidth: no disk {serial}" >&2; exit 1; }}; '
        f'exec fio --name=swap-write --filename="$dev" {job} '
        f'--name=swap-randwrite-4k --filename="$dev" {job_4k} '
        f"--output-format=json --output={shlex.quote(str(output))}"
    )
    return "sh -c " + shlex.quote(script)


def parse_fio(text: str) -> float:
    """Write bandwidth in MB/s (2**20 bytes) of the first job, from fio's JSON output."""
    try:
        data = json.loads(text)
        return data["jobs"][0]["write"]["bw_bytes"] / MB
    except (json.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
        raise ValueError(f"fio's JSON output has no write bandwidth ({exc})") from None


def parse_fio_4k_iops(text: str) -> float | None:
    """Write IOPS of the 4 KiB random-write job; None in an output without it."""
    try:
        jobs = json.loads(text)["jobs"]
        return float(jobs[1]["write"]["iops"]) if len(jobs) > 1 else None
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"fio's JSON output has no 4 KiB write IOPS ({exc})") from None


def measure(out: Path, profile: Profile, machine: guest_setup.Machine, disks: Path) -> dict:
    """Boot once (the swap image in `disks`, removed afterwards) and measure;
    the result for campaign.json. A guest failure is kept as the error."""
    work = out / "swap_bandwidth"
    work.mkdir(parents=True, exist_ok=True)
    swap = guest_setup.swap_disk(profile, machine.limits, disks)
    result: dict[str, Any] = {
        "write_mbps": None,
        "rand_write_4k_iops": None,
        "fio": dict(FIO_JOB),
        "fio_4k": dict(FIO_JOB_4K),
        "error": None,
    }
    try:
        vm.create_disk(swap)
        res = vm.boot(
            machine.image.bzimage,
            exec_cmd=guest_command(spec.SWAP_SERIAL, work / "fio.json"),
            console_path=work / "console.log",
            deadline_s=DEADLINE_S * kernel.SLOWDOWN[machine.image.flavour],
            ram_mb=profile.guest_ram_mb,
            cpus=profile.cpus,
            accel=machine.accel,
            rwdirs=[work],
            disks=[swap],
            append=kernel.BOOT_ARGS[machine.image.flavour],
        )
        if res.returncode != 0:
            raise GuestError(
                f"fio exited with status {res.returncode} (console: {work / 'console.log'})"
            )
        text = (work / "fio.json").read_text()
        result["write_mbps"] = parse_fio(text)
        result["rand_write_4k_iops"] = parse_fio_4k_iops(text)
    except (GuestError, OSError, ValueError) as exc:
        result["error"] = str(exc)
    finally:
        shutil.rmtree(disks, ignore_errors=True)
    return result
