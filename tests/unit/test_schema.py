"""The contract between the harness and the guest runtime: every spec.json
the harness can build follows schemas/spec.schema.json, which the runtime's
own tests keep equal to the types that parse it (`pmr-guest schema`), and
what those types refuse the schema refuses too. No guest is booted."""

import copy
import json

import pytest

from fakespec import build_spec
from pmr_testbed import paths, schema
from pmr_testbed.config import profiles, schemes
from pmr_testbed.workflows import reliability


def _names(directory):
    return sorted(p.stem for p in directory.glob("*.toml"))


def _build(scenario="smoke", profile="pixel6pro", scheme="original", tmp=None):
    return build_spec(
        scheme, profile, scenario, out_dir=tmp, run_id=f"{scheme}-r1", work_iters_per_ms=1234.5
    )


@pytest.mark.parametrize("scenario", _names(paths.SCENARIOS_DIR))
def test_every_spec_the_harness_builds_follows_the_runtime_schema(scenario):
    runnable = [s for s in _names(paths.SCHEMES_DIR) if not schemes.load(s).modifier]
    combined = ["pmr+kshrinkd-nice", "original+kswapd-fifo", "skew+pmr", "ice+pmr", "ice-plus+pmr"]
    combined += ["swam+pmr", "zram-only+pmr"]
    for profile in _names(paths.PROFILES_DIR):
        prof = profiles.load(profile)
        for scheme in runnable + combined:
            parts = [schemes.load(p) for p in scheme.split("+")]
            # the profiles a scheme refuses: a swap tier needs two tiers,
            # SWAM's swap daemon a swap disk that is swapped on
            if any(p.tiers for p in parts) and not prof.two_tiers:
                continue
            if any(p.swam and p.swam["swapd"] for p in parts) and not prof.swaps_to_disk:
                continue
            assert schema.problems("spec", _build(scenario, profile, scheme)) == []


@pytest.mark.parametrize(
    ("damage", "where"),
    [
        (lambda s: s.pop("seed"), "seed: missing"),
        (lambda s: s.__setitem__("sed", 1), "(top): Additional properties are not allowed"),
        (lambda s: s["apps"][0].__setitem__("heap_mb", 1), "apps.0: Additional properties"),
        (lambda s: s["apps"][0].__setitem__("adj_class", "foreground"), "apps.0.adj_class: "),
        (lambda s: s["apps"][0].__setitem__("processes", -1), "apps.0.processes: "),
        (lambda s: s["scenario"].__setitem__("dwell_ms", [1]), "scenario.dwell_ms: "),
        (lambda s: s["memory"].__setitem__("swappiness", "100"), "memory.swappiness: "),
        (
            lambda s: s["scheme"]["kthreads"].append({"comm": "kswapd", "policy": "batch"}),
            "scheme.kthreads.0.policy: ",
        ),
    ],
)
def test_what_the_runtime_refuses_the_schema_refuses(damage, where):
    s = copy.deepcopy(_build())
    assert schema.problems("spec", s) == []
    damage(s)
    found = schema.problems("spec", s)
    assert any(p.startswith(where) for p in found), found


def test_a_spec_that_breaks_the_schema_is_a_harness_bug_not_a_run(tmp_path):
    s = _build(tmp=tmp_path)
    s.pop("apps")
    with pytest.raises(schema.SchemaError, match=r"breaks schemas/spec.schema.json: apps: missing"):
        schema.check("spec", s)


def test_the_reliability_spec_follows_its_schema(tmp_path):
    prof = profiles.load("pixel5")
    req = reliability.ReliabilityRequest(profile="pixel5", scheme="pmr", out=tmp_path / "r")
    p = reliability.Plan(req, prof, schemes.resolve("pmr", prof), None)
    document = reliability.build_spec(p, tmp_path)
    assert schema.problems("reliability-spec", document) == []
    document["checker"].pop("seed")
    assert schema.problems("reliability-spec", document) == ["checker.seed: missing"]


def test_the_schemas_are_json_schemas_of_a_known_draft():
    for path in sorted(paths.SCHEMAS_DIR.glob("*.schema.json")):
        document = json.loads(path.read_text())
        assert "$schema" in document, path
        schema.validator(path.name.removesuffix(".schema.json"))  # check_schema passes
