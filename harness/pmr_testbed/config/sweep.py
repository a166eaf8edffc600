"""Sweeps: schemes that are one scheme with one knob set to different values.

A scheme name may carry knob overrides (the syntax schemes.py loads):
`pmr@unmap_unit_kbytes=64` is scheme `pmr` with the knob whose path ends
in `unmap_unit_kbytes` set to 64. In each `+`-joined part, the base name
is what comes before the first '@' and the overrides are the `@key=value`
pairs after it.

Schemes that are the same but for the value of one override key, numeric in
every one of them, form a `Sweep` over that key (paper Fig. 15b sweeps the
unmap unit): `pmr@unmap_unit_kbytes=64` and `pmr@unmap_unit_kbytes=1024`
do; `pmr` (the default value, not known by name) and `pps@...=64` do not join
them. This module only reads names; it never loads a scheme.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Part:
    """One `+`-joined part of a scheme name: base name and overrides in order."""

    base: str
    overrides: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Sweep:
    """Schemes that differ only in the value of `key`: `points` are
    (value, scheme name) by increasing value; `label` is the common name with
    the swept override left out (`pmr`, or `pmr+ice@other=1`)."""

    key: str
    label: str
    points: tuple[tuple[float, str], ...]


def parse_name(name: str) -> list[Part]:
    """`pmr@a=1@b=2+ice` -> [Part("pmr", (("a", "1"), ("b", "2"))), Part("ice", ())].
    A malformed override (no '=' or an empty side) raises ValueError."""
    parts = []
    for text in name.split("+"):
        base, *items = text.strip().split("@")
        overrides = []
        for item in items:
            key, sep, value = item.partition("=")
            if not (sep and key and value):
                raise ValueError(f"scheme {name!r}: override {item!r} is not KEY=VALUE")
            overrides.append((key, value))
        parts.append(Part(base, tuple(overrides)))
    return parts


def base_name(name: str) -> str:
    """The name without overrides: `pmr@unmap_unit_kbytes=64+ice` -> `pmr+ice`."""
    return "+".join(p.base for p in parse_name(name))


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _render(parts: list[Part], skip: tuple[int, str] | None = None) -> str:
    """A name from its parts, sorting each part's overrides (their order does
    not matter) and leaving out override `skip` = (part index, key)."""
    return "+".join(
        p.base + "".join(f"@{k}={v}" for k, v in sorted(p.overrides) if (i, k) != skip)
        for i, p in enumerate(parts)
    )


def find_sweeps(names: list[str]) -> list[Sweep]:
    """The sweeps among scheme names: for each override key, the schemes that
    are identical once that key's value is left out, when there are at least
    two of them and all their values are numbers. Names that do not parse
    are ignored. In order of first appearance."""
    # (key, index of the part that sets it, the name without it) -> members
    groups: dict[tuple[str, int, str], list[tuple[float | None, str]]] = {}
    for name in names:
        try:
            parts = parse_name(name)
        except ValueError:
            continue
        for i, part in enumerate(parts):
            for key, value in dict(part.overrides).items():
                signature = (key, i, _render(parts, (i, key)))
                groups.setdefault(signature, []).append((_number(value), name))
    return [
        Sweep(key, label, tuple(sorted(numbers)))
        for (key, _, label), members in groups.items()
        if len(members) >= 2
        and len(numbers := [(v, n) for v, n in members if v is not None]) == len(members)
    ]


def unit(key: str) -> str:
    """The unit a knob's name gives its values: `..._kbytes` -> "kB"."""
    for suffix, text in (("_kbytes", "kB"), ("_bytes", "B"), ("_ms", "ms"), ("_us", "µs")):
        if key.endswith(suffix):
            return text
    return ""
