"""sweep.py: scheme names with knob overrides, and which schemes form a sweep."""

import pytest

from pmr_testbed.config.sweep import Part, Sweep, base_name, find_sweeps, parse_name, unit

KEY = "unmap_unit_kbytes"


def test_parse_name_splits_parts_and_overrides():
    assert parse_name("pmr") == [Part("pmr", ())]
    assert parse_name(f"pmr@{KEY}=64@pmr/enabled=2+ice") == [
        Part("pmr", ((KEY, "64"), ("pmr/enabled", "2"))),
        Part("ice", ()),
    ]
    assert parse_name("pmr@path=a=b") == [Part("pmr", (("path", "a=b"),))]
    assert base_name(f"pmr@{KEY}=64+ice@x=1") == "pmr+ice"


@pytest.mark.parametrize("name", ["pmr@64", "pmr@=64", f"pmr@{KEY}="])
def test_malformed_overrides_are_refused(name):
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_name(name)


def test_one_knob_at_several_values_is_a_sweep_ordered_by_value():
    names = ["original", f"pmr@{KEY}=1024", "pmr", f"pmr@{KEY}=64", f"pmr@{KEY}=256", "mglru"]
    assert find_sweeps(names) == [
        Sweep(
            KEY,
            "pmr",
            ((64.0, f"pmr@{KEY}=64"), (256.0, f"pmr@{KEY}=256"), (1024.0, f"pmr@{KEY}=1024")),
        )
    ]


def test_a_single_value_or_different_bases_are_no_sweep():
    assert find_sweeps(["original", f"pmr@{KEY}=64"]) == []
    assert find_sweeps([f"pmr@{KEY}=64", f"pps@{KEY}=256"]) == []


def test_other_overrides_must_agree_in_any_order():
    # a second knob held fixed (written in either order) still makes a sweep ...
    held = find_sweeps(
        [f"pmr@{KEY}=64@victim_target_kbytes=0", f"pmr@victim_target_kbytes=0@{KEY}=256"]
    )
    assert [(s.key, s.label, [v for v, _ in s.points]) for s in held] == [
        (KEY, "pmr@victim_target_kbytes=0", [64.0, 256.0])
    ]
    # ... but two knobs that both change are not one knob's sweep
    assert (
        find_sweeps(
            [
                f"pmr@{KEY}=64@victim_target_kbytes=0",
                f"pmr@{KEY}=256@victim_target_kbytes=1024",
            ]
        )
        == []
    )


def test_non_numeric_values_and_malformed_names_are_no_sweep():
    assert find_sweeps(["mglru@enabled=y", "mglru@enabled=n"]) == []
    assert find_sweeps(["pmr@64", f"pmr@{KEY}=64", f"pmr@{KEY}=128"])[0].points == (
        (64.0, f"pmr@{KEY}=64"),
        (128.0, f"pmr@{KEY}=128"),
    )


def test_sweeps_in_combined_schemes_keep_their_part():
    sweeps = find_sweeps([f"pmr@{KEY}=64+ice", f"pmr@{KEY}=128+ice", f"pmr+ice@{KEY}=256"])
    assert [(s.label, len(s.points)) for s in sweeps] == [("pmr+ice", 2)]


@pytest.mark.parametrize(
    "key, text", [(KEY, "kB"), ("watermark_scale_factor", ""), ("dirty_expire_ms", "ms")]
)
def test_unit_from_the_knob_name(key, text):
    assert unit(key) == text
