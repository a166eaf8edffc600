"""How fast the original kernel reclaims in the guest: its ceiling with
nothing else running, and its peak under a max-rate allocator (paper
§3.1.1, Fig. 4a, where memtester on the phone raises peak reclaim only
8.3% over app switching: reclaim itself is the bottleneck).

Each measurement is one guest boot like a campaign's runs (same kernel,
boot arguments, RAM, CPUs) with the original scheme's knobs (the classic
LRU), the profile's watermarks and a swap disk of SWAP_FACTOR x RAM that
never fills; the guest's script is a file in the output directory (the
kernel's command line holds 2048 bytes). A shell loop samples the swap
disk's write sectors, kswapd0's CPU ticks and the time it waited on a
runqueue (/proc/PID/schedstat) every SAMPLE_S; the peak is the largest 1-s
window of swap writes (the paper's and metrics.py's definition of reclaim
throughput), kswapd's busiest second the largest 1-s growth of its CPU
time, in CPUs, and its most runnable second that of its CPU time plus its
wait.

The allocator is `pmr-guest alloc` (runtime/src/workload/max_rate.rs): it keeps
ALLOC_FACTOR x RAM of fresh anonymous memory turning over from WORKERS
threads, one word written per page, the oldest chunk unmapped as the
newest is mapped: once RAM is full every new page needs one reclaimed, and
nothing is read back from swap (memtester's method without its reads;
stress-ng's vm stressor writes every word of a page and, under TCG, fills
RAM too slowly to swap within a minute).

- `ceiling()`, the reclaim ceiling: the allocator with an unthrottled disk,
  in CEILING_PROFILE's guest (its RAM, 2 CPUs) whatever profile a campaign
  runs, and on the testbed kernel whatever flavour it runs
  (CALIBRATION_FLAVOUR); the median of CEILING_BOOTS boots, cached per
  (kernel, accel, boot arguments, host CPU, guest RAM) with the guest's
  memory speed when it was measured (dilation.py's guest_ns_per_page),
  like the dilation once per host. It is the guest's
  counterpart of the phone's peak reclaim, which memtester reaches within
  8.3% of app switching (Fig. 4a): profiles.qemu_limits() scales the
  phone's flash by it, so that the guest's flash is to this ceiling as the
  phone's flash is to the phone's peak reclaim (`[phone]
  peak_reclaim_mbps`).
- `ceiling_now()`: reclaim under TCG is memory-bound, and the host's memory
  speed moves from day to day (dilation.py): the cached ceiling, 37.6 MB/s
  measured on 2026-11-28 (guest 629-738 ns per page that day) and 72.2 on
  2026-11-29 at 317 ns, is the same 22,900 +/- 8% MB/s x ns. So a campaign
  throttles its flash from the ceiling scaled by the memory speed it
  measured itself, and reclaim keeps its share of the flash however fast
  the host runs that day.
- `measure()`, the max-rate run: the same allocator at the end of a
  campaign, with the campaign's throttled disk, kept in campaign.json as
  `max_rate` for the regime report's `reclaim_limited` check:

    "max_rate": {"reclaim_peak_mbps": 97.1, "kswapd_busiest_cpu": 0.98,
                 "swapout_mb": 2210.4, "kswapd_busiest_runnable": 1.0,
                 "allocator": {...}, "error": null}

  A failed measurement is kept as the error, never as a number.

Under TCG a page fault costs about what reclaiming a page does (two
threads fault ~155 MB/s in the pixel6pro guest without pressure;
memory.reclaim, one CPU with nothing else running, writes 84-134 MB/s to
an unthrottled disk), where on a phone a fault is tens of times cheaper.
With the allocator's threads, their faults and kswapd sharing the two
vCPUs, reclaim peaks at 30-45 MB/s: like the phone's, that peak is set by
reclaim's CPU cost, not by the flash.
"""

from __future__ import annotations

import json
import shlex
import shutil
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .. import host, paths
from ..analysis.metrics import MB, SECTOR_BYTES, per_window_mbps
from ..config import profiles, schemes, spec
from ..config.profiles import Profile
from ..errors import GuestError
from ..guest import kernel, vm

WORKERS = 2
# the allocator's memory as a share of the guest's RAM, and the swap disk
ALLOC_FACTOR = 1.3
SWAP_FACTOR = 1.5
# how long the allocator runs: under TCG page faults are ~16x slower than on
# the host, so filling RAM takes the first ~15-25 s and the rest swaps
STRESS_S = 45
SAMPLE_S = 0.2
CEILING_BOOTS = 3
CEILING_PROFILE = "pixel6pro"
# the kernel flavour whose ceiling sets every flavour's flash: the debug
# kernel's checks (KASAN, LOCKDEP) slow reclaim so much that the allocator
# cannot fill its RAM in time, and its runs look for splats, not speed
CALIBRATION_FLAVOUR = "testbed"
MIN_CEILING_MBPS = 5.0
DEADLINE_S = 150
SAMPLES_FILE = "samples.txt"
SCRIPT_FILE = "guest.sh"
CACHE = paths.BUILD_DIR / "reclaim_ceiling.json"
USER_HZ = 100
# a sampler line: uptime, the 17 block stat fields, utime, stime, run delay
SAMPLE_FIELDS = 21


@dataclass(frozen=True)
class MaxRate:
    reclaim_peak_mbps: float
    kswapd_busiest_cpu: float
    swapout_mb: float
    # on a CPU or waiting for one; None where schedstat was not readable
    kswapd_busiest_runnable: float | None = None


def allocator(profile: Profile) -> dict:
    """The allocator's job, as campaign.json records it."""
    return {
        "tool": "pmr-guest alloc",
        "workers": WORKERS,
        "bytes_mb": int(profile.guest_ram_mb * ALLOC_FACTOR),
        "seconds": STRESS_S,
        "swap_mb": int(profile.guest_ram_mb * SWAP_FACTOR),
    }


def guest_command(profile: Profile, out: Path) -> str:
    """The guest's script: swap on the disk found by serial, the original
    scheme's knobs and the profile's watermarks, the sampler in the
    background and the allocator, turning its memory over, in front."""
    job = allocator(profile)
    knobs = [(k["path"], k["value"]) for k in schemes.load("original").knobs]
    knobs += [(f"/proc/sys/vm/{k}", str(v)) for k, v in profile.watermarks().items()]
    writes = "; ".join(f"echo {shlex.quote(v)} > {shlex.quote(p)}" for p, v in knobs)
    samples = shlex.quote(str(out / SAMPLES_FILE))
    return (
        "set -e; dev=; for d in /sys/block/vd*; do "
        f'[ "$(cat "$d/serial" 2>/dev/null)" = {spec.SWAP_SERIAL} ] && dev=${{d##*/}}; done; '
        f'[ -n "$dev" ] || {{ echo "pmr-max-rate: no disk {spec.SWAP_SERIAL}" >&2; exit 1; }}; '
        "mkswap -q /dev/$dev >/dev/null; swapon /dev/$dev; "
        f"{writes}; "
        "kp=$(pgrep -x kswapd0); "
        "sample() { while :; do read -r up _ < /proc/uptime; read -r st < /sys/block/$dev/stat; "
        "read -r -a ks < /proc/$kp/stat; ss=(); read -r -a ss < /proc/$kp/schedstat || true; "
        'echo "$up ${st} ${ks[13]} ${ks[14]} ${ss[1]:--}"; '
        f"sleep {SAMPLE_S}; done > {samples}; }}; "
        "sample & sampler=$!; "
        f"{paths.guest_runtime()} alloc --mb {job['bytes_mb']} --threads {WORKERS} "
        f"--seconds {STRESS_S}; "
        "kill $sampler; wait $sampler 2>/dev/null || true"
    )


def parse_samples(text: str) -> MaxRate:
    """Peak swap writes and kswapd's busiest second from the sampler's lines:
    `uptime_s <the 17 /sys/block/<dev>/stat fields> utime stime run_delay_ns`
    (run_delay_ns `-` where /proc/PID/schedstat could not be read)."""
    t, sectors, ticks, delays = [], [], [], []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) != SAMPLE_FIELDS:
            continue  # cut off when the sampler was killed
        try:
            # write sectors: the 7th stat field
            row = (float(fields[0]), int(fields[7]), int(fields[-3]) + int(fields[-2]))
            delay = None if fields[-1] == "-" else int(fields[-1])
        except ValueError:
            continue
        t.append(row[0])
        sectors.append(row[1])
        ticks.append(row[2])
        delays.append(delay)
    if len(t) < 2 or t[-1] - t[0] < 1.0:
        raise ValueError(f"{len(t)} samples over less than a second: nothing to measure")
    t_ms = np.array(t) * 1000
    _, write_mbps = per_window_mbps(t_ms, np.array(sectors, dtype=float) * SECTOR_BYTES)
    # CPU seconds scaled so that "MB/s" reads as CPUs
    cpu_s = np.array(ticks, dtype=float) / USER_HZ
    _, cpus = per_window_mbps(t_ms, cpu_s * MB)
    runnable = None
    if all(d is not None for d in delays):
        waited_s = np.array(delays, dtype=float) / 1e9
        runnable = round(max(per_window_mbps(t_ms, (cpu_s + waited_s) * MB)[1], default=0.0), 3)
    peak, busiest = max(write_mbps, default=0.0), max(cpus, default=0.0)
    return MaxRate(
        reclaim_peak_mbps=round(peak, 2),
        kswapd_busiest_cpu=round(busiest, 3),
        swapout_mb=round((sectors[-1] - sectors[0]) * SECTOR_BYTES / MB, 1),
        kswapd_busiest_runnable=runnable,
    )


def _boot(
    out: Path, profile: Profile, image: kernel.KernelImage, accel: str, throttle: dict, disks: Path
) -> MaxRate:
    out.mkdir(parents=True, exist_ok=True)
    swap = vm.Disk(disks / "swap.img", spec.SWAP_SERIAL, allocator(profile)["swap_mb"], throttle)
    try:
        vm.create_disk(swap)
        # a file, not the command line: the kernel's holds 2048 bytes
        script = out / SCRIPT_FILE
        script.write_text(guest_command(profile, out) + "\n")
        res = vm.boot(
            image.bzimage,
            exec_cmd=f"bash {shlex.quote(str(script))}",
            console_path=out / "console.log",
            deadline_s=DEADLINE_S * kernel.SLOWDOWN[image.flavour],
            ram_mb=profile.guest_ram_mb,
            cpus=profile.cpus,
            accel=accel,
            rwdirs=[out],
            disks=[swap],
            append=kernel.BOOT_ARGS[image.flavour],
        )
        if res.returncode != 0:
            raise GuestError(
                f"the max-rate allocator exited with status {res.returncode} "
                f"(console: {out / 'console.log'})",
                vm.tail(res.console),
            )
        return parse_samples((out / SAMPLES_FILE).read_text())
    finally:
        shutil.rmtree(disks, ignore_errors=True)


def measure(
    out: Path, profile: Profile, image: kernel.KernelImage, accel: str, limits: dict, disks: Path
) -> dict:
    """One boot with the campaign's throttled swap disk; campaign.json's
    `max_rate`. A guest failure is kept as the error."""
    throttle = profiles.swap_throttle(limits)
    result: dict = {
        "reclaim_peak_mbps": None,
        "kswapd_busiest_cpu": None,
        "swapout_mb": None,
        "kswapd_busiest_runnable": None,
        "allocator": allocator(profile),
        "error": None,
    }
    try:
        result.update(asdict(_boot(out / "max_rate", profile, image, accel, throttle, disks)))
    except (GuestError, OSError, ValueError) as exc:
        result["error"] = str(exc)
    return result


def _key(version: str, accel: str, ram_mb: int) -> str:
    boot = vm.boot_signature(accel, kernel.BOOT_ARGS[CALIBRATION_FLAVOUR])
    return (
        f"{version}|{CALIBRATION_FLAVOUR}|{accel}|{boot}|{host.cpu_model()}|"
        f"{CEILING_PROFILE}|{ram_mb} MB"
    )


def ceiling_now(entry: dict, guest_ns_per_page: float) -> float:
    """The reclaim ceiling `entry` (ceiling()'s) at a guest memory speed of
    `guest_ns_per_page`: reclaim's rate scales inversely with it."""
    return entry["reclaim_peak_mbps"] * entry["guest_ns_per_page"] / guest_ns_per_page


def ceiling(
    image: kernel.KernelImage, accel: str, work_dir: Path, guest_ns_per_page: float
) -> dict:
    """The original kernel's peak reclaim in CEILING_PROFILE's guest with an
    unthrottled swap disk, MB/s: the median of CEILING_BOOTS boots, cached
    per host, always on the CALIBRATION_FLAVOUR kernel of `image`'s version
    (built only if the ceiling has to be measured). `guest_ns_per_page` is
    the guest's memory speed now (the caller's dilation), kept with a new
    measurement; an entry without one is measured again.
    {"reclaim_peak_mbps": ..., "guest_ns_per_page": ..., "boots": [...each
    boot's MaxRate...], "allocator": {...}}"""
    profile = profiles.load(CEILING_PROFILE)
    key = _key(image.version, accel, profile.guest_ram_mb)
    try:
        cache = json.loads(CACHE.read_text())["entries"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError, TypeError):
        cache = {}
    if key in cache and cache[key].get("guest_ns_per_page"):
        return cache[key]
    if image.flavour != CALIBRATION_FLAVOUR:
        image = kernel.build(CALIBRATION_FLAVOUR)
        key = _key(image.version, accel, profile.guest_ram_mb)
    boots = [
        _boot(
            work_dir / f"reclaim-ceiling-{i}",
            profile,
            image,
            accel,
            {},
            work_dir / f"reclaim-ceiling-disk-{i}",
        )
        for i in range(1, CEILING_BOOTS + 1)
    ]
    peak = statistics.median(b.reclaim_peak_mbps for b in boots)
    if peak < MIN_CEILING_MBPS:
        # an unthrottled disk from a ceiling of 0 would be a silent error
        raise GuestError(
            f"the max-rate allocator swapped out at most {peak} MB/s in "
            f"{work_dir}/reclaim-ceiling-*: no reclaim ceiling to calibrate "
            "the flash with",
            "",
        )
    entry = {
        "reclaim_peak_mbps": peak,
        "guest_ns_per_page": guest_ns_per_page,
        "boots": [asdict(b) for b in boots],
        "allocator": allocator(profile),
    }
    cache[key] = entry
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    CACHE.write_text(json.dumps({"entries": cache}, indent=2) + "\n")
    return entry
