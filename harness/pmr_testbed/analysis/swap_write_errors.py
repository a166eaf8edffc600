"""The host's `swap_write_errors` check (`pmrtb reliability
--swap-write-errors`): did the guest kernel meet the write errors that
blkdebug injected into the swap disk (blkdebug.py)?

Linux 6.1 keeps no count of failed swap writes: /proc/vmstat has none, and
/sys/block/<dev>/stat counts I/Os without telling failed ones apart. What it
does is log them, so the evidence is the console:

- the swap layer (end_swap_bio_write, mm/page_io.c) logs
  `Write-error on swap-device (MAJOR:MINOR:SECTOR)` for each page whose write
  failed, after re-dirtying the page so that it stays in memory (SECTOR is
  where the bio ended, past the page);
- the block layer (blk_print_req_error) logs
  `I/O error, dev vdb, sector N op 0x1:(WRITE) ...` for each failed request.

Both are rate limited (10 lines per 5 s, then `<function>: N callbacks
suppressed`), so the figures are the lines seen plus those counts.

The check passes when the swap layer logged at least one write error: a
swap write failed and went through the swap code's error path. Failed
requests on the swap disk with no such line fail it (the disk failed writes
but the swap code did not say it handled them, e.g. a writeback path with
completion code of its own), and so does a console with neither. Errors far
from the injected region (an error the run did not inject, e.g. the host's
disk) are counted in the detail.
"""

from __future__ import annotations

import re

from ..guest.blkdebug import ErrorRegion

NAME = "swap_write_errors"
SWAP_LAYER = re.compile(r"Write-error on swap-device \((\d+):(\d+):(\d+)\)")
BLOCK_LAYER = re.compile(r"I/O error, dev (\w+), sector (\d+) op 0x1:\(WRITE\)")
SUPPRESSED = re.compile(r"(end_swap_bio_write|blk_print_req_error): (\d+) callbacks suppressed")
# A logged sector this close to the region still belongs to it: requests are
# merged (up to max_sectors_kb, 1280 KiB by default) and the swap layer logs
# where the bio ended.
REGION_MARGIN_SECTORS = 4 * 2**20 // 512
SECTORS_KEPT = 20


def check(console: str, swap_dev: str | None, region: ErrorRegion) -> dict:
    """The swap_write_errors check from the console text; `swap_dev` is the
    guest's name of the swap disk (reliability.json `swap_dev`), by which the
    block layer's lines are picked."""
    swap_sectors: list[int] = []
    block_sectors: list[int] = []
    suppressed = {"end_swap_bio_write": 0, "blk_print_req_error": 0}
    for line in console.splitlines():
        if m := SWAP_LAYER.search(line):
            swap_sectors.append(int(m.group(3)))
        elif (m := BLOCK_LAYER.search(line)) and (swap_dev is None or m.group(1) == swap_dev):
            block_sectors.append(int(m.group(2)))
        elif m := SUPPRESSED.search(line):
            suppressed[m.group(1)] += int(m.group(2))
    low = region.first_sector - REGION_MARGIN_SECTORS
    high = region.end_sector + REGION_MARGIN_SECTORS
    outside = sorted({s for s in swap_sectors + block_sectors if not low <= s < high})
    figures = {
        "swap_layer_lines": len(swap_sectors),
        "swap_layer_suppressed": suppressed["end_swap_bio_write"],
        "block_layer_lines": len(block_sectors),
        "block_layer_suppressed": suppressed["blk_print_req_error"],
        "sectors": sorted(set(swap_sectors + block_sectors))[:SECTORS_KEPT],
        "outside_region": outside[:SECTORS_KEPT],
        "region": region.as_dict(),
    }
    where = f"injected at sectors {region.first_sector}-{region.end_sector - 1}" + (
        f"; {len(outside)} logged sector(s) outside it, first {outside[0]}" if outside else ""
    )
    dev = swap_dev or "the swap disk"
    if swap_sectors:
        status = "pass"
        detail = (
            f"the swap layer logged {len(swap_sectors)} write error(s) "
            f"(+{suppressed['end_swap_bio_write']} rate-limited), the block layer "
            f"{len(block_sectors)} failed write(s) on {dev} "
            f"(+{suppressed['blk_print_req_error']}); {where}"
        )
    elif block_sectors:
        status = "fail"
        detail = (
            f"{len(block_sectors)} write(s) failed on {dev} but the swap layer logged no "
            f"'Write-error on swap-device': the failures did not go through its error "
            f"path; {where}"
        )
    else:
        status = "fail"
        detail = (
            f"no swap write error on the console: the run never wrote to the failing "
            f"region ({where}) or QEMU did not inject the errors"
        )
    return {"name": NAME, "status": status, "detail": detail, "figures": figures}
