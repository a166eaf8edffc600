"""QEMU's blkdebug driver under the swap disk (`pmrtb reliability
--swap-write-errors`): the region of the disk whose writes fail, the config
file whose rules make them fail with EIO, and the block options that put
blkdebug between the raw format and the image file.

How blkdebug decides (QEMU block/blkdebug.c, docs/devel/blkdebug.txt): a
rule's `event` arms it; here `write_aio`, which the raw format driver raises
before every write it passes down. An armed rule fails a request of its
`iotype` that contains its `sector` with `errno`, and `once = "off"` keeps it
armed for the next request. A rule names a single sector, so the region gets
one rule per 4 KiB page (the swap layer's unit): every page written into the
region fails, and so does every larger request that overlaps it (a merged
request, or a batch written in bulk). Reads are left alone (`iotype =
"write"`): a page whose write failed stays in the guest's memory, so nothing
valid is ever read back from the region.

The region starts well past the swap header (page 0, which mkswap must be
able to write) and is small: each armed rule is checked on every request, and
the pages whose writes fail stay in the guest's RAM until their swap slot is
given up.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError

SECTOR = 512
PAGE = 4096
SECTORS_PER_PAGE = PAGE // SECTOR
EIO = 5
# Where the failing region starts and how long it is.
REGION_OFFSET_MB = 64
REGION_MB = 2
CONFIG_NAME = "blkdebug.conf"


@dataclass(frozen=True)
class ErrorRegion:
    """Pages [first_page, first_page + pages) of the disk, where writes fail."""

    first_page: int
    pages: int

    @property
    def first_sector(self) -> int:
        return self.first_page * SECTORS_PER_PAGE

    @property
    def end_sector(self) -> int:
        """The first sector after the region."""
        return (self.first_page + self.pages) * SECTORS_PER_PAGE

    def as_dict(self) -> dict:
        return {
            "first_sector": self.first_sector,
            "end_sector": self.end_sector,
            "pages": self.pages,
            "mb": self.pages * PAGE / 2**20,
            "errno": EIO,
        }


def region_for(disk_mb: int) -> ErrorRegion:
    """The failing region of a swap disk of disk_mb; UserError if it does not fit."""
    pages_per_mb = 2**20 // PAGE
    if disk_mb < 2 * (REGION_OFFSET_MB + REGION_MB):
        raise UserError(
            f"a {disk_mb} MB swap disk is too small for write errors at "
            f"{REGION_OFFSET_MB}-{REGION_OFFSET_MB + REGION_MB} MB: it needs at least "
            f"{2 * (REGION_OFFSET_MB + REGION_MB)} MB"
        )
    return ErrorRegion(REGION_OFFSET_MB * pages_per_mb, REGION_MB * pages_per_mb)


def config_text(region: ErrorRegion) -> str:
    """The blkdebug config file: one always-armed EIO rule per page of the region."""
    head = (
        f"# pmrtb reliability --swap-write-errors: writes to sectors "
        f"{region.first_sector}-{region.end_sector - 1} fail with EIO\n"
    )
    rules = [
        "[inject-error]\n"
        'event = "write_aio"\n'
        'iotype = "write"\n'
        f'errno = "{EIO}"\n'
        f'sector = "{(region.first_page + i) * SECTORS_PER_PAGE}"\n'
        'once = "off"\n'
        for i in range(region.pages)
    ]
    return head + "\n" + "\n".join(rules)


def qemu_escape(value: str) -> str:
    """A value for a QEMU option list, where ',' separates options (',,' is a comma)."""
    return value.replace(",", ",,")


def file_options(image: Path, config: Path) -> list[str]:
    """The options of a raw node's `file` child that put blkdebug under it:
    for -drive (after format=raw) or, prefixed with driver=raw, for qemu-io
    --image-opts."""
    return [
        "file.driver=blkdebug",
        f"file.config={qemu_escape(str(config))}",
        "file.image.driver=file",
        f"file.image.filename={qemu_escape(str(image))}",
    ]
