import pytest

from pmr_testbed import paths, run_times


@pytest.fixture(autouse=True)
def runtime_snapshots(tmp_path_factory, monkeypatch):
    """Unit tests keep their copies of pmr-guest (paths.guest_runtime) out of
    the project's build directory."""
    snapshots = tmp_path_factory.mktemp("runtime-snapshots")
    monkeypatch.setattr(paths, "RUNTIME_SNAPSHOTS_DIR", snapshots)
    return snapshots


@pytest.fixture(autouse=True)
def run_times_cache(tmp_path_factory, monkeypatch):
    """Unit tests record and read run times (run_times.py) apart from the
    host's own, starting with none."""
    cache = tmp_path_factory.mktemp("run-times") / "run_times.json"
    monkeypatch.setattr(run_times, "CACHE", cache)
    return cache
