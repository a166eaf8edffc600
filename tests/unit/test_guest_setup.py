"""guest_setup.py: the host checks every workload command shares."""

import os

import pytest

from pmr_testbed.config.profiles import load as load_profile
from pmr_testbed.errors import UserError
from pmr_testbed.guest import vm
from pmr_testbed.workflows import guest_setup


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    """A runtime tree with one source and its binary built after it."""
    src = tmp_path / "runtime" / "src" / "lmkd"
    src.mkdir(parents=True)
    (src / "decision.rs").write_text("fn main() {}\n")
    binary = tmp_path / "runtime" / "target" / "release" / "pmr-guest"
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"\x7fELF")
    os.utime(src / "decision.rs", (1000, 1000))
    os.utime(binary, (2000, 2000))
    monkeypatch.setattr(guest_setup.paths, "RUNTIME_DIR", tmp_path / "runtime")
    monkeypatch.setattr(guest_setup.paths, "RUNTIME_BIN", binary)
    monkeypatch.setattr(vm, "check_host_tools", lambda: None)
    monkeypatch.setattr(guest_setup, "check_host_memory", lambda ram_mb: None)
    return src / "decision.rs"


def test_a_binary_built_after_its_sources_passes(runtime):
    assert guest_setup.newer_runtime_source() is None
    guest_setup.check_host(load_profile("pixel5"))


def test_a_source_changed_since_the_build_is_one_line_that_says_how_to_fix_it(runtime):
    os.utime(runtime, (3000, 3000))
    assert guest_setup.newer_runtime_source() == runtime
    with pytest.raises(UserError, match=r"older than .*decision\.rs: run `make setup`"):
        guest_setup.check_host(load_profile("pixel5"))


def test_guests_run_a_copy_of_the_runtime_that_a_rebuild_leaves_alone(
    tmp_path, monkeypatch, runtime_snapshots
):
    from pmr_testbed import paths

    binary = tmp_path / "pmr-guest"
    binary.write_bytes(b"\x7fELF one")
    monkeypatch.setattr(paths, "RUNTIME_BIN", binary)
    first = paths.guest_runtime()
    assert first.parent.parent == runtime_snapshots and first.name == "pmr-guest"
    assert first.read_bytes() == b"\x7fELF one" and os.access(first, os.X_OK)
    assert paths.guest_runtime() == first  # the same binary: the same copy
    # a rebuild gets a copy of its own; the one a campaign holds stays whole
    binary.write_bytes(b"\x7fELF two")
    second = paths.guest_runtime()
    assert second != first and second.read_bytes() == b"\x7fELF two"
    assert first.read_bytes() == b"\x7fELF one"
    binary.unlink()
    with pytest.raises(UserError, match="is not built: run `make setup`"):
        paths.guest_runtime()
