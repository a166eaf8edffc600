"""The data disk: every app's files (its code and resources), which the app
processes map and read, in an ext4 image made on the host.

`pmr-guest app-files` writes the files of a run's spec.json into a host
directory, `mkfs.ext4 -d` makes the image of them, and every run of a
campaign attaches that one image read-only (the guest mounts it read-only
and checks that every file is there, whole). The apps only read their
files, so sharing the image changes nothing in the guest: it starts, as
before, with none of them in its page cache. The guest used to format the
disk and write the files itself, about 14 s of every run under TCG.

The image is made again when the apps' file layout it was made for (the
spec's apps and the runtime binary that lays them out) is not that of the
run's spec, and is removed with the campaign's other disk images.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from .. import paths
from ..config import spec
from ..errors import UserError
from . import vm

IMAGE = "data.img"
LAYOUT = "data.json"  # beside the image: the layout it holds
# ext4 metadata and journal on top of the files
SLACK_FRACTION, SLACK_MB, MIN_MB = 0.2, 128, 256


def size_mb(guest_spec: dict) -> int:
    files = sum(a["file_mb"] for a in guest_spec["apps"])
    return max(MIN_MB, int(files * (1 + SLACK_FRACTION)) + SLACK_MB)


def layout(guest_spec: dict) -> dict:
    """What decides the image's content: the apps' files and the binary
    that lays them out and fills them."""
    return {
        "apps": [[a["name"], a["file_mb"], a["processes"]] for a in guest_spec["apps"]],
        "runtime": paths.runtime_digest()[:16],
    }


def image(spec_path: Path, guest_spec: dict, disk_dir: Path) -> vm.Disk:
    """The read-only data disk for the run of spec_path, made in disk_dir
    unless the one there already holds the same layout."""
    img, recorded = disk_dir / IMAGE, disk_dir / LAYOUT
    want = layout(guest_spec)
    disk = vm.Disk(img, spec.DATA_SERIAL, size_mb(guest_spec), read_only=True)
    try:
        if img.exists() and json.loads(recorded.read_text()) == want:
            return disk
    except (FileNotFoundError, json.JSONDecodeError):
        pass
    shutil.rmtree(disk_dir, ignore_errors=True)
    files = disk_dir / "files"
    vm.check_disk_space(disk_dir, disk.size_mb * 2, spec.DATA_SERIAL)
    _tool(
        [str(paths.RUNTIME_BIN), "app-files", "--spec", str(spec_path), "--dir", str(files)],
        "pmr-guest app-files",
    )
    _tool(["mkfs.ext4", "-q", "-F", "-d", str(files), str(img), f"{disk.size_mb}M"], "mkfs.ext4 -d")
    shutil.rmtree(files)
    recorded.write_text(json.dumps(want) + "\n")
    return disk


def _tool(cmd: list[str], name: str) -> None:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as exc:
        raise UserError(f"{name}: cannot run {cmd[0]} ({exc.strerror}): run `make setup`") from None
    if res.returncode != 0:
        last = ((res.stderr or res.stdout).strip().splitlines() or ["no output"])[-1]
        raise UserError(f"{name} failed to make the data disk (exit {res.returncode}): {last}")
