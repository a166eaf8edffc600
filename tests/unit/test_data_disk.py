"""The data disk made on the host: the apps' files in an ext4 image, made
once and shared read-only by a campaign's runs (data_disk.py). Runs the
real `pmr-guest app-files` (built by `make setup`) and mkfs.ext4."""

import json
import subprocess
from pathlib import Path

import pytest

from pmr_testbed import paths
from pmr_testbed.errors import UserError
from pmr_testbed.guest import data_disk, vm

FIXTURE = paths.RUNTIME_DIR / "tests" / "fixtures" / "spec.json"


def small_spec(tmp_path: Path, file_mb: float = 1) -> tuple[Path, dict]:
    s = json.loads(FIXTURE.read_text())
    for app in s["apps"]:
        app["file_mb"] = file_mb
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(s))
    return path, s


def listing(img: Path, directory: str) -> dict[str, int]:
    """{name: size} of the files in directory of the ext4 image (debugfs)."""
    out = subprocess.run(
        ["debugfs", "-R", f"ls -p {directory}", str(img)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # /inode/mode/uid/gid/name/size/ (directories have no size)
    rows = [line.split("/") for line in out.splitlines() if line.startswith("/")]
    return {r[5]: int(r[6] or -1) for r in rows if r[5] not in (".", "..", "lost+found")}


def test_image_holds_every_app_file_and_is_read_only(tmp_path):
    spec_path, s = small_spec(tmp_path)
    disk = data_disk.image(spec_path, s, tmp_path / "disk")
    assert disk.read_only and disk.serial == "pmrdata"
    assert disk.size_mb == data_disk.MIN_MB  # 4 MB of files: the smallest disk
    assert "readonly=on" in disk.qemu_args()[1]
    top = listing(disk.path, "/")
    for app in s["apps"]:
        assert app["name"] in top
        files = listing(disk.path, "/" + app["name"])
        # 1 MB each, split evenly among the app's processes
        assert sum(files.values()) == 2**20 and len(files) == app["processes"]
    assert not (tmp_path / "disk" / "files").exists()  # only the image is kept


def test_image_is_made_once_per_layout(tmp_path):
    spec_path, s = small_spec(tmp_path)
    first = data_disk.image(spec_path, s, tmp_path / "disk")
    made = first.path.stat().st_mtime_ns
    assert data_disk.image(spec_path, s, tmp_path / "disk").path.stat().st_mtime_ns == made
    # other files: made again, with them
    spec_path, s = small_spec(tmp_path, file_mb=2)
    again = data_disk.image(spec_path, s, tmp_path / "disk")
    assert again.path.stat().st_mtime_ns != made
    assert sum(listing(again.path, "/" + s["apps"][0]["name"]).values()) == 2 * 2**20


def test_size_leaves_room_for_ext4():
    assert data_disk.size_mb({"apps": [{"file_mb": 1000}, {"file_mb": 500}]}) == 1928
    assert data_disk.size_mb({"apps": [{"file_mb": 1}]}) == data_disk.MIN_MB


def test_a_failing_tool_is_one_clear_line(tmp_path, monkeypatch):
    spec_path, s = small_spec(tmp_path)
    monkeypatch.setattr(paths, "RUNTIME_BIN", tmp_path / "no-such-pmr-guest")
    with pytest.raises(UserError, match="no-such-pmr-guest is not built: run `make setup`"):
        data_disk.image(spec_path, s, tmp_path / "disk")
    monkeypatch.setattr(paths, "RUNTIME_BIN", Path("/bin/false"))
    with pytest.raises(UserError, match="pmr-guest app-files failed to make the data disk"):
        data_disk.image(spec_path, s, tmp_path / "disk")
    assert not (tmp_path / "disk" / data_disk.LAYOUT).exists()


def test_writable_disks_stay_writable(tmp_path):
    assert "readonly" not in vm.Disk(tmp_path / "s.img", "pmrswap", 10).qemu_args()[1]
