"""How long a guest run takes on this host, from the runs it did.

campaign.run records the wall time of every ok run (`wall_s`, as
campaign.json has it) in build/run_times.json, per host CPU model, scenario
and profile, with the rounds it ran: the newest MAX_KEPT per key. fit()
turns them into a fixed part (boot, setup, the background launches) and a
part per round, which `pmrtb paper` plans with:

- runs of two or more round counts: a least-squares line through them;
- runs of one round count: the caller's fixed part, the rest per round;
- no runs: nothing (the caller's defaults, paper.RUN_S).

A fit whose parts come out negative (a noisy host) is not used.
"""

from __future__ import annotations

import json
import statistics

from . import host, paths

CACHE = paths.BUILD_DIR / "run_times.json"
MAX_KEPT = 50


def _key(scenario: str, profile: str) -> str:
    return f"{host.cpu_model()}|{scenario}|{profile}"


def _load() -> dict[str, list[list[float]]]:
    try:
        data = json.loads(CACHE.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def record(scenario: str, profile: str, rounds: int, wall_s: float) -> None:
    """Keep one ok run's wall time."""
    data = _load()
    runs = data.setdefault(_key(scenario, profile), [])
    runs.append([rounds, wall_s])
    del runs[:-MAX_KEPT]
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    CACHE.write_text(json.dumps(data, indent=1) + "\n")


def fit(scenario: str, profile: str, default_fixed_s: float) -> tuple[float, float] | None:
    """(fixed s, s per round) from this host's runs, or None (see above)."""
    runs = [(float(r), float(w)) for r, w in _load().get(_key(scenario, profile), []) if r >= 1]
    if not runs:
        return None
    rounds = [r for r, _ in runs]
    walls = [w for _, w in runs]
    if len(set(rounds)) == 1:
        fixed = default_fixed_s
        per_round = (statistics.median(walls) - fixed) / rounds[0]
    else:
        per_round, fixed = statistics.linear_regression(rounds, walls)
    if fixed < 0 or per_round <= 0:
        return None
    return fixed, per_round
