"""spec.json as the harness builds it for one run (config/spec.py), for
tests that check what a scenario, profile and scheme put into it."""

from __future__ import annotations

from pathlib import Path

from pmr_testbed import paths
from pmr_testbed.config import profiles, scenarios, schemes, spec


def build_spec(
    scheme: str = "original",
    profile: str = "pixel6pro",
    scenario: str = "smoke",
    *,
    out_dir: Path | None = None,
    run_id: str = "r",
    work_iters_per_ms: float = 1.0,
) -> dict:
    prof = profiles.load(profile)
    return spec.build(
        run_id=run_id,
        out_dir=out_dir or paths.RESULTS_DIR,
        seed=1,
        scenario=scenarios.load(scenario),
        profile=prof,
        scheme=schemes.resolve(scheme, prof),
        work_iters_per_ms=work_iters_per_ms,
    )
