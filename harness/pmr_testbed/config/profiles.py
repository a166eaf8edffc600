"""Device profiles (profiles/*.toml): a phone, and how it maps onto the guest.

Memory sizes scale by the guest/phone RAM ratio (`guest.scale`). Flash
throughput and IOPS scale by the ratio of the guest's reclaim ceiling
(max_rate.py: the original kernel's peak reclaim under a max-rate allocator
with an unthrottled disk, measured once per host) to the phone's peak
reclaim (`[phone] peak_reclaim_mbps`), so that reclaim uses the same share of
the guest's flash as of the phone's: software, not the flash, limits it
(paper §2.2.2, §3.1.2, Figs. 3a and 4b).

Acclaim's lightweight prediction bounds kswapd's goal by absolute figures
made for the one phone its public code ran on; a guest takes them times
its scale (`Profile.acclaim_lwp_goal_kb`), and the acclaim schemes' knobs
name them as profile fields ("{acclaim.lwp_goal_min_kb}",
`Profile.fields`). They are derived, so a profile does not write them.

`[phone] swap` is the swap medium (SWAP_MEDIA): `flash` (the default) swaps
on the throttled swap disk of `swap_mb`, `zram` on a zram device of
`swap_mb` (guest scale) alone; the swap disk is attached either way, but
a zram profile does not swap on it, so figures of the disk's writes, its
fio bandwidth and the regime checks that weigh them are not applicable
to it. `zram+flash` has two tiers, as SWAM's phones (MobiCom'23): the
swap disk of `swap_mb`, throttled as a flash profile's, and a zram device
of `[zram] size_mb` (phone MB, scaled by `[guest] scale` like every size)
swapped on at the higher priority, so that zram takes the pages first
(spec.json `swap.zram_mb` > 0 and `swap.disk` true). A scheme's `[swap]
tiers` may keep one tier of such a profile (schemes.py). A zram or
zram+flash profile has `[zram] compression_ratio`, how well the apps'
heap pages compress (original over stored size): the apps write that
share of each page with pseudo-random words at its first write and leave
the rest zero (spec.json `heap.random_words`). On flash the content does
not matter and a page gets its canary word alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .. import paths, tomlfile
from ..errors import UserError
from ..tomlfile import positive, require

PAGE_KB = 4
# `[phone] swap`: what the guest swaps to (spec.json `swap`)
SWAP_MEDIA = ("flash", "zram", "zram+flash")
TWO_TIERS = "zram+flash"  # the medium with a zram tier above a flash one
WORDS_PER_PAGE = 512  # 64-bit words in a 4 KiB page


# Acclaim's bounds on kswapd's goal in its public code (MIoTLab/Acclaim,
# kernel 4.1.18 for a HiSilicon hi3650, kswapd_shrink_zone()): at least
# 8,020 pages and at most 8,856, in kB, for that phone's RAM.
ACCLAIM_LWP_GOAL_KB = (32_080, 35_424)


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    phone_ram_mb: int
    phone_swap_mb: int
    high_watermark_pages: int
    peak_reclaim_mbps: float
    rand_write_4k_mbps: float
    seq_write_mbps: float
    rand_read_4k_mbps: float
    seq_read_mbps: float
    scale: float
    cpus: int
    unmap_unit_kb: int
    raw: dict
    swap: str = "flash"  # one of SWAP_MEDIA
    # `[zram] compression_ratio` of a zram or zram+flash profile; None on flash
    zram_compression_ratio: float | None = None
    # `[zram] size_mb` of a zram+flash profile, phone MB; None otherwise
    phone_zram_mb: int | None = None

    @property
    def acclaim_lwp_goal_kb(self) -> tuple[int, int]:
        """Acclaim's lower and upper bound on kswapd's goal in the guest,
        kB: the public code's (ACCLAIM_LWP_GOAL_KB) times the scale."""
        low, high = ACCLAIM_LWP_GOAL_KB
        return max(1, round(low * self.scale)), max(1, round(high * self.scale))

    @property
    def fields(self) -> dict:
        """The profile's fields a scheme's knob may name ("{pmr.unmap_unit_kb}"):
        its file's, and the derived `acclaim.lwp_goal_min_kb` and
        `acclaim.lwp_goal_max_kb`."""
        low, high = self.acclaim_lwp_goal_kb
        return self.raw | {"acclaim": {"lwp_goal_min_kb": low, "lwp_goal_max_kb": high}}

    @property
    def heap_random_words(self) -> int:
        """spec.json `heap.random_words`: the words of pseudo-random data
        after the canary in each heap page, so that the page compresses by
        about the profile's ratio (lz4 stores random bytes as they are and
        a run of zeros in a few bytes); 0 on flash."""
        if self.zram_compression_ratio is None:
            return 0
        words = round(WORDS_PER_PAGE / self.zram_compression_ratio) - 1
        return max(0, min(WORDS_PER_PAGE - 1, words))

    @property
    def swaps_to_disk(self) -> bool:
        """Whether the guest swaps on the swap disk (else on zram alone)."""
        return self.swap != "zram"

    @property
    def two_tiers(self) -> bool:
        """Whether the profile has a zram tier above its flash one (zram+flash)."""
        return self.swap == TWO_TIERS

    @property
    def guest_zram_mb(self) -> int:
        """The zram device's size, guest MB: the swap size on a zram profile,
        `[zram] size_mb` scaled on a zram+flash one, else 0."""
        if self.phone_zram_mb is not None:
            return int(self.phone_zram_mb * self.scale)
        return 0 if self.swaps_to_disk else self.guest_swap_mb

    @property
    def guest_ram_mb(self) -> int:
        return int(self.phone_ram_mb * self.scale)

    @property
    def guest_swap_mb(self) -> int:
        return int(self.phone_swap_mb * self.scale)

    @property
    def high_watermark_fraction(self) -> float:
        return self.high_watermark_pages * PAGE_KB / (self.phone_ram_mb * 1024)

    def scale_mb(self, phone_mb: float) -> int:
        """A phone-scale size in MB, at guest scale (at least 1 MB)."""
        return max(1, round(phone_mb * self.scale))

    def watermarks(self) -> dict[str, int]:
        """sysctls that give the guest the phone's high watermark as a share of RAM.

        Linux 6.1 (__setup_per_zone_wmarks): low = min + gap, high = min + 2 gap,
        gap = max(min / 4, managed * watermark_scale_factor / 10000); min_free_kbytes
        keeps the kernel's default formula, 4 * sqrt(lowmem_kbytes).
        """
        ram_kb = self.guest_ram_mb * 1024
        min_free_kb = int(4 * math.sqrt(ram_kb))
        high_kb = self.high_watermark_fraction * ram_kb
        wsf = round((high_kb - min_free_kb) * 10000 / (2 * ram_kb))
        return {"min_free_kbytes": min_free_kb, "watermark_scale_factor": max(10, min(3000, wsf))}

    def flash_scale(self, reclaim_ceiling_mbps: float) -> float:
        """The guest's flash over the phone's: the guest's reclaim ceiling over
        the phone's peak reclaim."""
        return reclaim_ceiling_mbps / self.peak_reclaim_mbps

    def qemu_limits(self, reclaim_ceiling_mbps: float) -> dict[str, int]:
        """QEMU throttling for the swap disk: the phone's figures times
        flash_scale(), so that the guest's reclaim ceiling is the same share
        of its flash as the phone's peak reclaim is of the phone's.

        Every request counts as one I/O operation against the IOPS limit, so
        small writes are bounded by the 4 KB IOPS and large ones by bandwidth.
        """
        mb = 1024 * 1024
        k = self.flash_scale(reclaim_ceiling_mbps)
        return {
            "swap_bps_write": int(self.seq_write_mbps * mb * k),
            "swap_iops_write": int(self.rand_write_4k_mbps * 256 * k),
            "swap_bps_read": int(self.seq_read_mbps * mb * k),
            "swap_iops_read": int(self.rand_read_4k_mbps * 256 * k),
        }


def swap_throttle(limits: dict[str, int]) -> dict[str, int]:
    """qemu_limits() as the swap disk's throttling (guest.Disk.throttle)."""
    return {
        key: limits[f"swap_{key}"] for key in ("bps_write", "iops_write", "bps_read", "iops_read")
    }


def _swap_medium(phone: dict, where: str) -> str:
    """`[phone] swap`, "flash" when absent."""
    medium = phone.get("swap", "flash")
    if medium not in SWAP_MEDIA:
        raise UserError(
            f"{where}: swap {medium!r} must be one of {', '.join(SWAP_MEDIA)} "
            "(flash: the swap disk; zram: a zram device of swap_mb; zram+flash: "
            "a zram device of [zram] size_mb above the swap disk)"
        )
    return medium


def _zram_compression(data: dict, medium: str, where: str) -> float | None:
    """`[zram] compression_ratio`: required on a zram or zram+flash profile,
    in [1, 64]; [zram] refused on a flash one."""
    if medium == "flash":
        if "zram" in data:
            raise UserError(
                f'{where}: [zram] is for a profile with [phone] swap = "zram" or "zram+flash"'
            )
        return None
    table = require(data, "zram", dict, where)
    ratio = positive(table, "compression_ratio", f"{where} [zram]")
    if not 1 <= ratio <= 64:
        raise UserError(f"{where} [zram]: compression_ratio must be in [1, 64], got {ratio}")
    return float(ratio)


def _zram_size(data: dict, medium: str, where: str) -> int | None:
    """`[zram] size_mb`, phone MB: required and > 0 on a zram+flash profile
    (the zram tier; swap_mb is the flash one), refused on any other."""
    table = data.get("zram") or {}
    if medium != TWO_TIERS:
        if "size_mb" in table:
            raise UserError(
                f'{where} [zram]: size_mb is for a profile with [phone] swap = "zram+flash" '
                "(a zram profile's device is swap_mb)"
            )
        return None
    size = require(table, "size_mb", int, f"{where} [zram]")
    if size <= 0:
        raise UserError(
            f"{where} [zram]: size_mb (the zram tier, phone MB) must be > 0, got {size}"
        )
    return size


def load(name: str) -> Profile:
    path = tomlfile.find(paths.PROFILES_DIR, name, "profile")
    return parse(tomlfile.load(path, "profile"), path)


def parse(data: dict, path: Path) -> Profile:
    where = f"profile {path.name}"
    phone = require(data, "phone", dict, where)
    flash = require(data, "flash", dict, where)
    guest = require(data, "guest", dict, where)
    pmr = data.get("pmr", {})
    scale = positive(guest, "scale", f"{where} [guest]")
    if scale > 1:
        raise UserError(f"{where}: [guest] scale must be in (0, 1], got {scale}")
    if "acclaim" in data:
        low, high = ACCLAIM_LWP_GOAL_KB
        raise UserError(
            f"{where}: [acclaim] is derived, not written: Acclaim's bounds are its public "
            f"code's {low:,} and {high:,} kB times [guest] scale; remove the table"
        )
    return Profile(
        name=require(data, "name", str, where),
        description=data.get("description", ""),
        phone_ram_mb=int(positive(phone, "ram_mb", f"{where} [phone]")),
        phone_swap_mb=int(positive(phone, "swap_mb", f"{where} [phone]")),
        high_watermark_pages=int(positive(phone, "high_watermark_pages", f"{where} [phone]")),
        peak_reclaim_mbps=positive(phone, "peak_reclaim_mbps", f"{where} [phone]"),
        rand_write_4k_mbps=positive(flash, "rand_write_4k_mbps", f"{where} [flash]"),
        seq_write_mbps=positive(flash, "seq_write_mbps", f"{where} [flash]"),
        rand_read_4k_mbps=positive(flash, "rand_read_4k_mbps", f"{where} [flash]"),
        seq_read_mbps=positive(flash, "seq_read_mbps", f"{where} [flash]"),
        scale=scale,
        cpus=int(positive(guest, "cpus", f"{where} [guest]")),
        unmap_unit_kb=int(pmr.get("unmap_unit_kb", 1024)),
        raw=data,
        swap=(medium := _swap_medium(phone, f"{where} [phone]")),
        zram_compression_ratio=_zram_compression(data, medium, where),
        phone_zram_mb=_zram_size(data, medium, where),
    )
