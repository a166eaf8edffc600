"""Schemes (schemes/*.toml): named sets of kernel knobs and guest policies.

A run takes a list of schemes (`original,mglru`); a `+` combines schemes
(`pmr+ice`): their knobs are written in order and their policies united. Two
parts that set the same knob to different values are refused. Knob values may
name profile fields in braces, e.g. "{pmr.unmap_unit_kb}".

A part may override the value of one of its knobs, named by the last
component of the knob's path: `pmr@pmr_unmap_unit_kbytes=64` is `pmr` with
the unmap unit at 64 kB. A list of such variants is a sweep
(`pmr@pmr_unmap_unit_kbytes=64,pmr@pmr_unmap_unit_kbytes=1024`), which the
report plots against the value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import paths, tomlfile
from .errors import UserError
from .profiles import Profile
from .tomlfile import require


@dataclass(frozen=True)
class Scheme:
    name: str
    description: str
    knobs: list[dict]      # [{"path": ..., "value": ...}] in write order
    policies: list[str]


def _load_one(name: str) -> Scheme:
    path = tomlfile.find(paths.SCHEMES_DIR, name, "scheme")
    data = tomlfile.load(path, "scheme")
    where = f"scheme {path.name}"
    knobs = []
    for i, k in enumerate(data.get("knobs", [])):
        kpath = require(k, "path", str, f"{where} [[knobs]] #{i + 1}")
        if not kpath.startswith(("/proc/sys/", "/sys/")):
            raise UserError(f"{where}: knob path {kpath} must be under /proc/sys or /sys")
        knobs.append({"path": kpath, "value": str(require(k, "value", (str, int), where))})
    policies = data.get("policies", [])
    if not isinstance(policies, list) or not all(isinstance(p, str) for p in policies):
        raise UserError(f"{where}: `policies` must be a list of names")
    return Scheme(require(data, "name", str, where), data.get("description", ""), knobs, policies)


def _expand(value: str, profile: Profile, where: str) -> str:
    def field(m: re.Match) -> str:
        node = profile.raw
        for part in m.group(1).split("."):
            if not isinstance(node, dict) or part not in node:
                raise UserError(f"{where}: profile {profile.name} has no field {m.group(1)}")
            node = node[part]
        return str(node)
    return re.sub(r"\{([\w.]+)\}", field, value)


def _override(scheme: Scheme, text: str) -> Scheme:
    """Apply `@key=value` overrides to a loaded scheme's knobs."""
    knobs = [dict(k) for k in scheme.knobs]
    for item in text.split("@"):
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise UserError(f"scheme override {item!r} is malformed: use NAME@KNOB=VALUE, "
                            f"e.g. pmr@pmr_unmap_unit_kbytes=64")
        hits = [k for k in knobs if k["path"].rsplit("/", 1)[-1] == key]
        if not hits:
            names = ", ".join(k["path"].rsplit("/", 1)[-1] for k in knobs) or "none"
            raise UserError(f"scheme {scheme.name} has no knob {key!r} to override "
                            f"(its knobs: {names})")
        for k in hits:
            k["value"] = value
    return Scheme(scheme.name, scheme.description, knobs, scheme.policies)


def _load_part(part: str) -> Scheme:
    base, _, overrides = part.partition("@")
    scheme = _load_one(base.strip())
    return _override(scheme, overrides) if overrides else scheme


def resolve(name: str, profile: Profile) -> Scheme:
    """A scheme or a `+` combination, with overrides and profile fields filled in."""
    parts = [p.strip() for p in name.split("+")]
    if not all(parts):
        raise UserError(f"scheme {name!r} is malformed: use names joined by '+' (e.g. pmr+ice)")
    loaded = [_load_part(p) for p in parts]
    knobs: list[dict] = []
    seen: dict[str, tuple[str, str]] = {}
    for s in loaded:
        for k in s.knobs:
            value = _expand(k["value"], profile, f"scheme {s.name}")
            if k["path"] in seen and seen[k["path"]][1] != value:
                other, v = seen[k["path"]]
                raise UserError(f"schemes {other} and {s.name} set {k['path']} to {v} and {value}: "
                                "they cannot be combined")
            seen[k["path"]] = (s.name, value)
            knobs.append({"path": k["path"], "value": value})
    policies = sorted({p for s in loaded for p in s.policies})
    return Scheme(name, " + ".join(s.description for s in loaded), knobs, policies)


def parse_list(text: str, profile: Profile) -> list[Scheme]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UserError("no schemes given: pass e.g. --schemes original,mglru")
    if len(set(names)) != len(names):
        raise UserError(f"scheme list {text!r} names a scheme twice")
    return [resolve(n, profile) for n in names]
