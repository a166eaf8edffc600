import pytest

from pmr_testbed import paths


@pytest.fixture(autouse=True)
def runtime_snapshots(tmp_path_factory, monkeypatch):
    """Unit tests keep their copies of pmr-guest (paths.guest_runtime) out of
    the project's build directory."""
    snapshots = tmp_path_factory.mktemp("runtime-snapshots")
    monkeypatch.setattr(paths, "RUNTIME_SNAPSHOTS_DIR", snapshots)
    return snapshots
