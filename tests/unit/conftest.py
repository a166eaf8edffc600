import pytest

from pmr_testbed import paths, run_times


@pytest.fixture(scope="session", autouse=True)
def host_state_kept_apart(tmp_path_factory):
    """Module-scoped fixtures too run apart from the host's recorded run
    times and runtime copies (function-scoped fixtures come after them)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(run_times, "CACHE", tmp_path_factory.mktemp("run-times-session") / "rt.json")
        mp.setattr(paths, "RUNTIME_SNAPSHOTS_DIR", tmp_path_factory.mktemp("snapshots-session"))
        yield


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
