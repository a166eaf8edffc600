"""What every command that boots the guest for a workload shares: the host
checks, the kernel, the accelerator, the time dilation, the guest's reclaim
ceiling and the QEMU limits it implies (the swap disk throttled like the
profile's flash), and pmr-guest's
setup errors (exit status 2) turned into one line for the user.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import paths
from ..config import profiles, spec
from ..config.profiles import Profile
from ..errors import UserError
from ..guest import dilation as dilation_mod
from ..guest import kernel, vm
from . import max_rate

# Guest-side exit status of pmr-guest for a setup error (bad spec, too little
# memory): the user's input is wrong, not the kernel.
GUEST_SETUP_ERROR = 2
# Time for the guest to boot and shut down, on top of the workload's deadline.
BOOT_SLACK_S = 120


def check_host_memory(ram_mb: int) -> None:
    avail_kb = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            avail_kb = int(line.split()[1])
    if avail_kb and avail_kb // 1024 < ram_mb + 512:
        raise UserError(
            f"the host has {avail_kb // 1024} MB available, the guest needs "
            f"{ram_mb} MB: close other programs or pick a smaller profile"
        )


def newer_runtime_source() -> Path | None:
    """A source of pmr-guest newer than its binary, if any: the guests would
    run an older runtime than the tree's."""
    runtime = paths.RUNTIME_DIR
    built = paths.RUNTIME_BIN.stat().st_mtime
    sources = [p for p in (runtime / "src").rglob("*.rs") if p.is_file()]  # not a dangling link
    return max(
        (p for p in sources if p.stat().st_mtime > built),
        key=lambda p: p.stat().st_mtime,
        default=None,
    )


def check_host(profile: Profile) -> None:
    """QEMU, vng, an up-to-date runtime binary and enough host memory for
    the guest."""
    vm.check_host_tools()
    if not paths.RUNTIME_BIN.exists():
        raise UserError(f"{paths.RUNTIME_BIN} is not built: run `make setup`")
    if newer := newer_runtime_source():
        raise UserError(
            f"{paths.RUNTIME_BIN} is older than {newer}: run `make setup` to rebuild it"
        )
    check_host_memory(profile.guest_ram_mb)


@dataclass(frozen=True)
class Machine:
    """The kernel and the QEMU settings every guest of a command boots with."""

    image: kernel.KernelImage
    accel: str
    dilation: dilation_mod.Dilation
    # the original kernel's peak reclaim with an unthrottled disk (max_rate.ceiling)
    reclaim_ceiling: dict
    limits: dict  # QEMU throttling of the swap disk (profile.qemu_limits)
    runtime: Path  # the pmr-guest the guests run (paths.guest_runtime)
    # wall seconds prepare() spent on each step: `kernel` (a build, or the
    # check that the image is up to date), `dilation` and `reclaim_ceiling`
    # (measured, or read from build/ where this host has them)
    setup_s: dict[str, float] = field(default_factory=dict)

    @property
    def ceiling_mbps(self) -> float:
        """The reclaim ceiling at the memory speed of this command's guests."""
        return max_rate.ceiling_now(self.reclaim_ceiling, self.dilation.guest_ns_per_page)

    def flash_calibration(self, profile: Profile) -> dict:
        """How the swap disk's limits were derived, for campaign.json."""
        ceiling = self.ceiling_mbps
        return {
            "reclaim_ceiling_mbps": round(ceiling, 2),
            "phone_peak_reclaim_mbps": profile.peak_reclaim_mbps,
            "flash_scale": round(profile.flash_scale(ceiling), 4),
            # the ceiling as measured, at the guest's memory speed then
            "measured_ceiling_mbps": self.reclaim_ceiling["reclaim_peak_mbps"],
            "measured_ns_per_page": self.reclaim_ceiling["guest_ns_per_page"],
            "ceiling_boots": self.reclaim_ceiling.get("boots", []),
        }


def prepare(
    profile: Profile,
    flavour: str,
    work_dir: Path,
    progress: Callable[[str], None],
    recorded: dilation_mod.Dilation | None = None,
) -> Machine:
    """Build (or reuse) the kernel, pick the accelerator, measure the dilation
    (or keep `recorded`, a continued campaign's) and the reclaim ceiling
    (both cached per host), and throttle the flash from the ceiling at the
    dilation's memory speed."""
    setup_s: dict[str, float] = {}
    started = time.monotonic()

    def took(step: str) -> None:
        nonlocal started
        now = time.monotonic()
        setup_s[step] = round(now - started, 1)
        started = now

    progress(f"kernel ({flavour})")
    image = kernel.build(flavour)
    accel = vm.detect_accel(image.bzimage)
    took("kernel")
    if recorded is not None and recorded.accel == accel:
        dil = recorded
    else:
        progress(f"time dilation ({accel})")
        dil = dilation_mod.measure(
            image.bzimage,
            image.version,
            accel,
            cpus=profile.cpus,
            work_dir=work_dir,
            append=kernel.BOOT_ARGS[flavour],
        )
    took("dilation")
    progress(f"reclaim ceiling ({accel})")
    ceiling = max_rate.ceiling(image, accel, work_dir, dil.guest_ns_per_page)
    took("reclaim_ceiling")
    limits = profile.qemu_limits(max_rate.ceiling_now(ceiling, dil.guest_ns_per_page))
    return Machine(image, accel, dil, ceiling, limits, paths.guest_runtime(), setup_s)


def swap_disk(
    profile: Profile, limits: dict, disk_dir: Path, size_mb: int | None = None
) -> vm.Disk:
    """The swap disk, throttled like the profile's flash; the profile's swap
    size unless `size_mb` says otherwise."""
    return vm.Disk(
        disk_dir / "swap.img",
        spec.SWAP_SERIAL,
        size_mb or profile.guest_swap_mb,
        profiles.swap_throttle(limits),
    )


def setup_error(console: str, where: str) -> UserError:
    """The guest's `pmr-guest: error: ...` line as a UserError."""
    line = next(
        (ln for ln in console.splitlines() if "pmr-guest: error:" in ln),
        "pmr-guest: error: (no message)",
    )
    return UserError(line.split("pmr-guest: error: ", 1)[1] + f" [{where}]")
