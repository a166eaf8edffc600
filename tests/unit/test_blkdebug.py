"""blkdebug under the swap disk (--swap-write-errors): the failing region, the
config file, the QEMU options, and, where the host has qemu-io, that QEMU's
block layer really fails the region's writes and nothing else (no guest)."""

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from pmr_testbed.errors import UserError
from pmr_testbed.guest import blkdebug, vm


def test_region_is_past_the_swap_header_and_inside_the_disk():
    r = blkdebug.region_for(2320)
    assert r.first_sector == 64 * 2**20 // 512 and r.end_sector == 66 * 2**20 // 512
    assert r.pages == 512 and r.first_page > 0
    assert r.as_dict() == {
        "first_sector": 131072,
        "end_sector": 135168,
        "pages": 512,
        "mb": 2.0,
        "errno": 5,
    }
    with pytest.raises(UserError, match="too small for write errors"):
        blkdebug.region_for(100)


def test_config_has_one_always_armed_eio_write_rule_per_page():
    r = blkdebug.ErrorRegion(first_page=10, pages=3)
    text = blkdebug.config_text(r)
    rules = text.split("[inject-error]")[1:]
    assert len(rules) == 3
    for i, rule in enumerate(rules):
        keys = dict(re.findall(r'^(\w+) = "([^"]*)"$', rule, re.M))
        assert keys == {
            "event": "write_aio",
            "iotype": "write",
            "errno": "5",
            "sector": str((10 + i) * 8),
            "once": "off",
        }
    assert text.startswith("# ") and "sectors 80-103 fail with EIO" in text


def test_drive_puts_blkdebug_under_the_raw_image(tmp_path):
    conf = tmp_path / "blk,debug.conf"
    d = vm.Disk(tmp_path / "swap.img", "pmrswap", 100, {"bps_write": 1000}, blkdebug=conf)
    args = d.qemu_args()
    drive = args[1]
    assert drive == (
        f"if=none,id=pmrswap,format=raw,cache=writeback,discard=unmap,"
        f"file.driver=blkdebug,file.config={tmp_path}/blk,,debug.conf,"
        f"file.image.driver=file,file.image.filename={tmp_path}/swap.img,"
        f"werror=report,rerror=report,throttling.bps-write=1000"
    )
    assert "file=" not in drive.replace("file.", "")
    assert args[3] == "virtio-blk-pci,drive=pmrswap,serial=pmrswap"
    cmd = vm.vng_command(
        Path("/k/bzImage"), exec_cmd="true", ram_mb=512, cpus=2, accel="tcg", rwdirs=[], disks=[d]
    )
    opts = next(a for a in cmd if a.startswith("--qemu-opts="))
    assert shlex.split(opts.removeprefix("--qemu-opts="))[-len(args) :] == args
    plain = vm.Disk(tmp_path / "swap.img", "pmrswap", 100).qemu_args()[1]
    assert plain.startswith(f"file={tmp_path}/swap.img,if=none") and "file.driver" not in plain


@pytest.mark.skipif(not shutil.which("qemu-io"), reason="qemu-io (qemu-utils) not installed")
def test_qemu_fails_writes_in_the_region_only(tmp_path):
    image, conf = tmp_path / "swap.img", tmp_path / "blkdebug.conf"
    vm.create_disk(vm.Disk(image, "pmrswap", 200))
    region = blkdebug.region_for(200)
    conf.write_text(blkdebug.config_text(region))
    start = region.first_sector * 512
    end = region.end_sector * 512
    ops = {
        "header": "write -P 0x11 0 4k",
        "before": f"write -P 0x22 {start - 4096} 4k",
        "first": f"write -P 0x33 {start} 4k",
        "first again": f"write -P 0x33 {start} 4k",
        "last": f"write -P 0x44 {end - 4096} 4k",
        "overlapping": f"write -P 0x55 {start - 65536} 128k",
        "after": f"write -P 0x66 {end} 4k",
        "read": f"read -P 0 {start} 4k",
        "discard": f"discard {start} 4k",
    }
    opts = ",".join(["driver=raw", *blkdebug.file_options(image, conf)])
    outcome = {}
    for name, op in ops.items():
        res = subprocess.run(
            ["qemu-io", "--image-opts", opts, "-c", op], capture_output=True, text=True, timeout=60
        )
        assert "Could not" not in res.stderr + res.stdout, res.stderr
        outcome[name] = "failed: Input/output error" not in res.stdout
    assert outcome == {
        "header": True,
        "before": True,
        "first": False,
        "first again": False,
        "last": False,
        "overlapping": False,
        "after": True,
        "read": True,
        "discard": True,
    }
