"""Schemes (schemes/*.toml): named sets of kernel knobs, kernel threads'
scheduling and guest policies.

A run takes a list of schemes (`original,mglru`); a `+` combines schemes
(`pmr+ice`): their knobs are written in order and their policies and
kernel-thread settings united. Two parts that set the same knob, or the
same kernel thread, differently are refused. Knob values may name profile
fields in braces, e.g. "{pmr.unmap_unit_kb}".

`[[kthreads]]` entries schedule kernel threads (runtime/src/sys/kthread_sched.rs):
`comm` names them without their node number (`kswapd` is kswapd0, ...),
`policy` is fifo or rr with a real-time `priority` 1-99, or normal with a
`nice` value -20..19, and `cpus` optionally lists the CPUs to keep them on.
A scheme file with `modifier = true` only changes another scheme and is run
combined with one (`original+kswapd-fifo`), never alone.

`[background]` has the guest mark apps' cgroups as background, as Acclaim's
activity manager tells its kernel which app is in front (ATC'20,
foreground-aware eviction; runtime/src/workload/background_marks.rs): `file` is the
cgroup file written (1 marked, 0 cleared), a `memory.*` name, and `apps`
which apps and when, `not-foreground` (every app not in front, the one coming
to the front cleared: the paper's design) or `scenario-background` (the
scenario's background apps, never cleared: the public code's fixed list).
Combined schemes may both set it only alike.

`[skew]` is skew rectification (Chou et al., TECS'23; runtime/src/workload/
unused_anon.rs and anon_file_balance.rs): when an app leaves the front, the
guest advises out the anonymous pages it did not touch while in front,
with `advice` (`pageout`: MADV_PAGEOUT, reclaimed at once; `cold`:
MADV_COLD, moved to the inactive list for reclaim to take), or with
`advice_with_pmr` (default: `advice`) when the scheme runs combined with
one that turns PMR on (a knob writes /sys/kernel/mm/pmr/enabled other than
"0"), so that PMR's kshrinkd and bulk writeback do the I/O. `[skew.balance]`
(optional) is a feedback loop on vm.swappiness: every `period_ms`, if
anonymous refaults exceed `thrash_anon_pct` % of the anonymous LRU,
swappiness goes down by `step` to `min`; else if file refaults reach
`file_refault_pct` % of the file LRU, up by `step` to `max`. At most one
part of a combination may have `[skew]`.

`[ice]` is Ice (Li et al., ACM TOCS 2025; the guest's side in
docs/guest-interface.md, the kernel's in kernel/baselines/ice):
refault-driven process freezing (RPF) of background apps, `rpf` `kernel`
(the kernel freezes an app whose task refaulted) or `user` (the guest
polls each freezable app's refault counters every `poll_ms` and freezes it
when they went up); apps whose oom_score_adj is at most `protect_adj` are
never frozen; `spare_swapped` (Ice+) has lmkd pass over apps holding swap
while another candidate qualifies. `[ice.mdt]` is the memory-aware dynamic
thawing: one heartbeat keeps the frozen apps frozen for E_f = `thaw_ms` x
`delta` x 2^ceil(H_wm / S_am), at most `max_freeze_ms`, then thaws them
for `thaw_ms`; S_am is the /proc/meminfo field `available` names.
spec.json's `scheme.ice` is the table as checked here. At most one part of
a combination may have `[ice]`.

A part may override the value of one of its knobs, named by the end of
the knob's path, whole components, as long as it names one knob:
`pmr@unmap_unit_kbytes=64` is `pmr` with the unmap unit at 64 kB;
`pmr@pmr/enabled=1` sets PMR's mode, where `enabled` alone would also name
`lru_gen/enabled`. A list of such variants is a sweep
(`pmr@unmap_unit_kbytes=64,pmr@unmap_unit_kbytes=1024`), which the
report plots against the value.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .. import paths, tomlfile
from ..errors import UserError
from ..tomlfile import positive, require
from .profiles import Profile

POLICIES = ("fifo", "rr", "normal")
# spec.json `scheme.background.apps` (runtime/src/spec.rs, MarkedApps)
BACKGROUND_APPS = ("not-foreground", "scenario-background")
BACKGROUND_KEYS = ("file", "apps")
# spec.json `scheme.skew` (runtime/src/spec.rs, Skew)
SKEW_ADVICE = ("pageout", "cold")
SKEW_KEYS = ("advice", "advice_with_pmr", "balance")
BALANCE_KEYS = ("period_ms", "step", "min", "max", "thrash_anon_pct", "file_refault_pct")
MIN_BALANCE_PERIOD_MS = 100  # /proc/vmstat deltas over less are mostly noise
MAX_SWAPPINESS = 200  # the most vm.swappiness takes (Linux 5.8 on)
# the knob that turns PMR on: any value but "0"
PMR_ENABLED = "/sys/kernel/mm/pmr/enabled"
# spec.json `scheme.ice` (docs/guest-interface.md)
ICE_KEYS = ("rpf", "poll_ms", "protect_adj", "spare_swapped", "mdt")
ICE_RPF = ("kernel", "user")
MDT_KEYS = ("delta", "thaw_ms", "max_freeze_ms", "available")
MDT_AVAILABLE = ("mem_free", "mem_available")
# the poll period spec.json carries when RPF is the kernel's (unused there)
DEFAULT_POLL_MS = 100.0
MIN_POLL_MS = 10.0  # ours: reading every freezable app's memory.stat more often is overhead
# the previous app's oom_score_adj, the least of an app that is not in
# front and not protected (docs/guest-interface.md): protect_adj stays below
PREVIOUS_APP_ADJ = 700


@dataclass(frozen=True)
class Scheme:
    name: str
    description: str
    knobs: list[dict]  # [{"path": ..., "value": ...}] in write order
    policies: list[str]
    # [{"comm", "policy", "priority", "nice"[, "cpus"]}], as spec.json has them
    kthreads: list[dict] = field(default_factory=list)
    modifier: bool = False  # runs only combined with another scheme
    # {"file": "memory.acclaim_bg", "apps": "not-foreground"}: spec.json's
    # `scheme.background`; None: no marks
    background: dict | None = None
    # {"advice", "advice_with_pmr", "balance": {...} or None}: the `[skew]`
    # table; None: no skew rectification. skew_spec() gives spec.json's.
    skew: dict | None = None
    # spec.json's `scheme.ice`: {"rpf", "poll_ms", "protect_adj",
    # "spare_swapped", "mdt": {...}}; None: no Ice
    ice: dict | None = None


def load(name: str) -> Scheme:
    """One scheme file, schemes/<name>.toml, as written (no overrides)."""
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
    entries = data.get("kthreads", [])
    if not isinstance(entries, list) or not all(isinstance(k, dict) for k in entries):
        raise UserError(f"{where}: `kthreads` must be [[kthreads]] tables")
    kthreads = [_kthread(k, f"{where} [[kthreads]] #{i + 1}") for i, k in enumerate(entries)]
    modifier = data.get("modifier", False)
    if not isinstance(modifier, bool):
        raise UserError(f"{where}: `modifier` must be true or false")
    background = data.get("background")
    skew = data.get("skew")
    ice = data.get("ice")
    return Scheme(
        require(data, "name", str, where),
        data.get("description", ""),
        knobs,
        policies,
        kthreads,
        modifier,
        None if background is None else _background(background, f"{where} [background]"),
        None if skew is None else _skew(skew, where),
        None if ice is None else _ice(ice, where),
    )


def _refuse_unknown(table: dict, allowed: Sequence[str], what: str, where: str) -> None:
    """UserError naming the first key of `table` that is not in `allowed`."""
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise UserError(
            f"{where}: `{unknown[0]}` is not a setting of {what} (it takes {', '.join(allowed)})"
        )


def _background(table: object, where: str) -> dict:
    """The `[background]` table, checked, as spec.json takes it."""
    if not isinstance(table, dict):
        raise UserError(f"{where}: must be a table with `file` and `apps`")
    _refuse_unknown(table, BACKGROUND_KEYS, "[background]", where)
    file = require(table, "file", str, where)
    if not re.fullmatch(r"memory\.[a-z0-9_]+", file):
        raise UserError(
            f"{where}: file {file!r} must be a memory controller file of the apps' "
            "cgroups, e.g. memory.acclaim_bg"
        )
    apps = require(table, "apps", str, where)
    if apps not in BACKGROUND_APPS:
        raise UserError(f"{where}: apps {apps!r} must be one of {', '.join(BACKGROUND_APPS)}")
    return {"file": file, "apps": apps}


def _skew(table: object, scheme_where: str) -> dict:
    """The `[skew]` table of the scheme file `scheme_where` names, checked:
    its advice, the advice beside PMR, and the swappiness loop or None."""
    where = f"{scheme_where} [skew]"
    if not isinstance(table, dict):
        raise UserError(f"{where}: must be a table with `advice`")
    _refuse_unknown(table, SKEW_KEYS, "[skew]", where)
    advice = _advice(table, "advice", where)
    with_pmr = _advice(table, "advice_with_pmr", where) if "advice_with_pmr" in table else advice
    balance = table.get("balance")
    return {
        "advice": advice,
        "advice_with_pmr": with_pmr,
        "balance": None if balance is None else _balance(balance, f"{scheme_where} [skew.balance]"),
    }


def _advice(table: dict, key: str, where: str) -> str:
    advice = require(table, key, str, where)
    if advice not in SKEW_ADVICE:
        raise UserError(f"{where}: {key} {advice!r} must be one of {', '.join(SKEW_ADVICE)}")
    return advice


def _balance(table: object, where: str) -> dict:
    """The `[skew.balance]` table, checked, as spec.json takes it."""
    if not isinstance(table, dict):
        raise UserError(f"{where}: must be a table with {', '.join(BALANCE_KEYS)}")
    _refuse_unknown(table, BALANCE_KEYS, "[skew.balance]", where)
    period_ms, step, low, high = (
        require(table, key, int, where) for key in ("period_ms", "step", "min", "max")
    )
    if period_ms < MIN_BALANCE_PERIOD_MS:
        raise UserError(f"{where}: period_ms must be >= {MIN_BALANCE_PERIOD_MS}, got {period_ms}")
    if not 1 <= step <= 100:
        raise UserError(f"{where}: step must be 1..100, got {step}")
    if not 0 <= low <= high <= MAX_SWAPPINESS:
        raise UserError(
            f"{where}: needs 0 <= min <= max <= {MAX_SWAPPINESS} (swappiness), "
            f"got min {low} and max {high}"
        )
    pcts = {key: positive(table, key, where) for key in ("thrash_anon_pct", "file_refault_pct")}
    return {
        "period_ms": period_ms,
        "step": step,
        "min": low,
        "max": high,
        **{key: float(v) for key, v in pcts.items()},
    }


def _ice(table: object, scheme_where: str) -> dict:
    """The `[ice]` table of the scheme file `scheme_where` names, checked,
    as spec.json takes it."""
    where = f"{scheme_where} [ice]"
    if not isinstance(table, dict):
        raise UserError(f"{where}: must be a table with `rpf` and [ice.mdt]")
    _refuse_unknown(table, ICE_KEYS, "[ice]", where)
    rpf = require(table, "rpf", str, where)
    if rpf not in ICE_RPF:
        raise UserError(f"{where}: rpf {rpf!r} must be one of {', '.join(ICE_RPF)}")
    if rpf == "user":
        poll_ms = float(positive(table, "poll_ms", where))
        if poll_ms < MIN_POLL_MS:
            raise UserError(f"{where}: poll_ms must be >= {MIN_POLL_MS:g}, got {poll_ms:g}")
    elif "poll_ms" in table:
        raise UserError(f'{where}: poll_ms is for rpf = "user" (the kernel freezes on the refault)')
    else:
        poll_ms = DEFAULT_POLL_MS
    protect_adj = require(table, "protect_adj", int, where)
    if not 0 <= protect_adj < PREVIOUS_APP_ADJ:
        raise UserError(
            f"{where}: protect_adj must be 0..{PREVIOUS_APP_ADJ - 1}, got {protect_adj}: the "
            f"app in front (adj 0) is never frozen, a cached app (adj {PREVIOUS_APP_ADJ} and "
            "up) always may be"
        )
    spare = table.get("spare_swapped", False)
    if not isinstance(spare, bool):
        raise UserError(f"{where}: spare_swapped must be true or false, got {spare!r}")
    return {
        "rpf": rpf,
        "poll_ms": poll_ms,
        "protect_adj": protect_adj,
        "mdt": _mdt(require(table, "mdt", dict, where), f"{scheme_where} [ice.mdt]"),
        "spare_swapped": spare,
    }


def _mdt(table: dict, where: str) -> dict:
    """The `[ice.mdt]` table, checked, as spec.json takes it."""
    _refuse_unknown(table, MDT_KEYS, "[ice.mdt]", where)
    delta, thaw_ms, max_freeze_ms = (
        float(positive(table, key, where)) for key in ("delta", "thaw_ms", "max_freeze_ms")
    )
    shortest = delta * 2 * thaw_ms  # E_f while S_am >= H_wm
    if max_freeze_ms < shortest:
        raise UserError(
            f"{where}: max_freeze_ms must be >= delta x 2 x thaw_ms = {shortest:g} "
            f"(the shortest freeze), got {max_freeze_ms:g}"
        )
    available = require(table, "available", str, where)
    if available not in MDT_AVAILABLE:
        raise UserError(
            f"{where}: available {available!r} must be one of {', '.join(MDT_AVAILABLE)}"
        )
    return {
        "delta": delta,
        "thaw_ms": thaw_ms,
        "max_freeze_ms": max_freeze_ms,
        "available": available,
    }


def pmr_enabled(scheme: Scheme) -> bool:
    """Whether the scheme's knobs turn PMR on (PMR_ENABLED other than "0")."""
    return any(k["path"] == PMR_ENABLED and k["value"].strip() != "0" for k in scheme.knobs)


def skew_spec(scheme: Scheme) -> dict | None:
    """spec.json's `scheme.skew`: `advice_with_pmr` when the scheme turns
    PMR on, else `advice`, and the balance loop when there is one; None
    without `[skew]`."""
    if scheme.skew is None:
        return None
    key = "advice_with_pmr" if pmr_enabled(scheme) else "advice"
    balance = scheme.skew["balance"]
    return {"advice": scheme.skew[key], **({"balance": dict(balance)} if balance else {})}


def _kthread(table: dict, where: str) -> dict:
    """One `[[kthreads]]` entry, checked, as spec.json takes it."""
    policy = require(table, "policy", str, where)
    if policy not in POLICIES:
        raise UserError(f"{where}: policy {policy!r} must be one of {', '.join(POLICIES)}")
    allowed = {"comm", "policy", "cpus", "nice" if policy == "normal" else "priority"}
    _refuse_unknown(table, sorted(allowed), f"a {policy} thread", where)
    comm = require(table, "comm", str, where)
    if not re.fullmatch(r"[A-Za-z_][\w-]*[A-Za-z_-]", comm):
        raise UserError(
            f"{where}: comm {comm!r} must be a kernel thread's name without its number, e.g. kswapd"
        )
    entry = {"comm": comm, "policy": policy, "priority": 0, "nice": 0}
    if policy == "normal":
        entry["nice"] = require(table, "nice", int, where)
        if not -20 <= entry["nice"] <= 19:
            raise UserError(f"{where}: nice must be -20..19, got {entry['nice']}")
    else:
        entry["priority"] = require(table, "priority", int, where)
        if not 1 <= entry["priority"] <= 99:
            raise UserError(
                f"{where}: priority must be 1..99 for {policy}, got {entry['priority']}"
            )
    if "cpus" in table:
        cpus = table["cpus"]
        if (
            not isinstance(cpus, list)
            or not cpus
            or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in cpus)
        ):
            raise UserError(f"{where}: cpus must be a list of CPU numbers, e.g. [1]")
        entry["cpus"] = cpus
    return entry


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
            raise UserError(
                f"scheme override {item!r} is malformed: use NAME@KNOB=VALUE, "
                f"e.g. pmr@unmap_unit_kbytes=64"
            )
        hits = [k for k in knobs if f"/{k['path']}".endswith(f"/{key}")]
        if len(hits) > 1:
            paths_hit = ", ".join(k["path"] for k in hits)
            raise UserError(
                f"scheme {scheme.name}: {key!r} names more than one knob ({paths_hit}): "
                "name it by more of its path, e.g. pmr/enabled"
            )
        if not hits:
            names = ", ".join(k["path"].rsplit("/", 1)[-1] for k in knobs) or "none"
            raise UserError(
                f"scheme {scheme.name} has no knob {key!r} to override (its knobs: {names})"
            )
        for k in hits:
            k["value"] = value
    return dataclasses.replace(scheme, knobs=knobs)


def _load_part(part: str) -> Scheme:
    base, _, overrides = part.partition("@")
    scheme = load(base.strip())
    return _override(scheme, overrides) if overrides else scheme


def resolve(name: str, profile: Profile) -> Scheme:
    """A scheme or a `+` combination, with overrides and profile fields filled in."""
    parts = [p.strip() for p in name.split("+")]
    if not all(parts):
        raise UserError(f"scheme {name!r} is malformed: use names joined by '+' (e.g. pmr+ice)")
    loaded = [_load_part(p) for p in parts]
    if all(s.modifier for s in loaded):
        raise UserError(
            f"scheme {name!r} only modifies another scheme: combine it with one, "
            f"e.g. original+{loaded[0].name}"
        )
    # before the knobs: two Ice parts often also set its knobs differently
    ice = _united_one(loaded, "ice", "Ice (ice, ice-plus or ice-us) with other schemes")
    knobs: list[dict] = []
    seen: dict[str, tuple[str, str]] = {}
    for s in loaded:
        for k in s.knobs:
            value = _expand(k["value"], profile, f"scheme {s.name}")
            if k["path"] in seen and seen[k["path"]][1] != value:
                other, v = seen[k["path"]]
                raise UserError(
                    f"schemes {other} and {s.name} set {k['path']} to {v} and {value}: "
                    "they cannot be combined"
                )
            seen[k["path"]] = (s.name, value)
            knobs.append({"path": k["path"], "value": value})
    policies = sorted({p for s in loaded for p in s.policies})
    return Scheme(
        name,
        " + ".join(s.description for s in loaded),
        knobs,
        policies,
        _united_kthreads(loaded, profile),
        background=_united_background(loaded),
        skew=_united_one(loaded, "skew", "skew rectification"),
        ice=ice,
    )


def _united_one(loaded: list[Scheme], section: str, which: str) -> dict | None:
    """The one part's table `section` (`ice`, `skew`), a copy; two parts
    with one are refused: combine at most one of `which`."""
    parts = [(s.name, getattr(s, section)) for s in loaded if getattr(s, section) is not None]
    if len(parts) > 1:
        raise UserError(
            f"schemes {parts[0][0]} and {parts[1][0]} both have [{section}]: "
            f"combine at most one {which}"
        )
    return copy.deepcopy(parts[0][1]) if parts else None


def _united_background(loaded: list[Scheme]) -> dict | None:
    """The parts' background marks: one part's, or several parts' if alike."""
    united: tuple[str, dict] | None = None
    for s in loaded:
        if s.background is None:
            continue
        if united is not None and united[1] != s.background:
            raise UserError(
                f"schemes {united[0]} and {s.name} mark background apps differently "
                f"({united[1]['file']}, {united[1]['apps']} against "
                f"{s.background['file']}, {s.background['apps']}): they cannot be combined"
            )
        united = (s.name, s.background)
    return None if united is None else dict(united[1])


def _united_kthreads(loaded: list[Scheme], profile: Profile) -> list[dict]:
    """The parts' kernel-thread settings; one thread set two ways is refused,
    and so are CPUs the profile's guest does not have."""
    united: dict[str, tuple[str, dict]] = {}
    for s in loaded:
        for k in s.kthreads:
            if k["comm"] in united and united[k["comm"]][1] != k:
                raise UserError(
                    f"schemes {united[k['comm']][0]} and {s.name} schedule "
                    f"{k['comm']} differently: they cannot be combined"
                )
            bad = [c for c in k.get("cpus", []) if c >= profile.cpus]
            if bad:
                raise UserError(
                    f"scheme {s.name}: {k['comm']} on CPU {bad[0]}, but profile "
                    f"{profile.name}'s guest has {profile.cpus} CPUs"
                )
            united[k["comm"]] = (s.name, k)
    return [k for _, k in united.values()]


def parse_list(text: str, profile: Profile) -> list[Scheme]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UserError("no schemes given: pass e.g. --schemes original,mglru")
    if len(set(names)) != len(names):
        raise UserError(f"scheme list {text!r} names a scheme twice")
    return [resolve(n, profile) for n in names]
