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

`[swap] tiers` keeps one tier of a profile with two (`[phone] swap =
"zram+flash"`, profiles.py): `zram` swaps on the zram device alone
(spec.json `swap.disk` false), `flash` on the swap disk alone
(`swap.zram_mb` 0): SWAM's two baselines (schemes zram-only and
flash-only). A scheme with `[swap]` runs only on such a profile, and the
parts of a combination may set it only alike.

`[swam]` is SWAM (Lim et al., MobiCom'23; the guest's side in
docs/guest-interface.md, the kernel's in kernel/baselines/swam), four
optional tables, sizes in phone MB: `[swam.swapd]`, Adaptive Swap's flash
tier as swap files on the swap disk that a daemon adds one `chunk_mb` at a
time (at most `max_files`) while spare memory (MemFree + SwapFree +
(Buffers + Cached) / 2) is under `low_mb` and removes while it is over
`high_mb`, every `period_ms`; it needs a profile whose swap disk is swapped
on. `[swam.eoom]`, the EOOM killer: lmkd adds to each candidate's
oom_score_adj up to `launch_adj_max` the cheaper its app is to relaunch.
`[swam.wsp]`, the OOM Cleaner's working-set protection (le9):
`clean_low_mb`, `clean_min_mb` and `anon_min_mb` become the knobs
/proc/sys/vm/{clean_low,clean_min,anon_min}_kbytes in guest kB, after the
scheme's own knobs (so `swam@clean_low_kbytes=0` overrides one).
`[swam.cleaner]`, the OOM Cleaner's swap-clean (the paper's; its public
code lacks it), an empty table: before a kill for low swap, lmkd drops
the swapped-out pages of its candidates' shared objects' data
(MADV_SWAPCLEAN, kernel/baselines/swam patch 2; the apps' `so_mb`) until
swap is no longer low, and then kills nobody. spec.json's `scheme.swam`
(swam_spec()) has `swapd` in guest MB, `eoom` and `cleaner`. At most one
part of a combination may have `[swam]`.

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
# `[swap] tiers`: the one tier of a zram+flash profile a scheme swaps on
SWAP_KEYS = ("tiers",)
SWAP_TIERS = ("zram", "flash")
# `[swam]` and its tables (spec.json `scheme.swam`, docs/guest-interface.md)
SWAM_KEYS = ("swapd", "eoom", "wsp", "cleaner")
SWAPD_KEYS = ("period_ms", "chunk_mb", "max_files", "low_mb", "high_mb")
EOOM_KEYS = ("launch_adj_max",)
# the runtime's bound on the swap files (below the kernel's MAX_SWAPFILES,
# which the zram device and the kernel's special swap types share)
MAX_SWAP_FILES = 24
MAX_LAUNCH_ADJ = 1000  # the range of oom_score_adj
# [swam.wsp]'s settings (phone MB) and the le9 sysctls they become (guest kB)
WSP_KNOBS = {
    "clean_low_mb": "/proc/sys/vm/clean_low_kbytes",
    "clean_min_mb": "/proc/sys/vm/clean_min_kbytes",
    "anon_min_mb": "/proc/sys/vm/anon_min_kbytes",
}
# the swap daemon's sizes in spec.json: guest MB to a tenth
GUEST_MB_DECIMALS = 1


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
    # `[swap] tiers`: "zram" or "flash", the one tier of a zram+flash
    # profile swapped on; None: the profile's swap as it is
    tiers: str | None = None
    # `[swam]` as checked, phone MB: {"swapd", "eoom", "wsp", "cleaner"},
    # each a table or None; None: no SWAM. swam_spec() gives spec.json's.
    swam: dict | None = None


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
    swap = data.get("swap")
    swam = data.get("swam")
    if swam is not None:
        swam = _swam(swam, where)
        if taken := [k["path"] for k in knobs if k["path"] in WSP_KNOBS.values()]:
            raise UserError(
                f"{where}: [swam.wsp] writes {taken[0]}, which its [[knobs]] set too: keep one"
            )
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
        None if swap is None else _tiers(swap, f"{where} [swap]"),
        swam,
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


def _tiers(table: object, where: str) -> str:
    """`[swap] tiers`, checked."""
    if not isinstance(table, dict):
        raise UserError(f'{where}: must be a table with `tiers` ("zram" or "flash")')
    _refuse_unknown(table, SWAP_KEYS, "[swap]", where)
    tiers = require(table, "tiers", str, where)
    if tiers not in SWAP_TIERS:
        raise UserError(
            f"{where}: tiers {tiers!r} must be one of {', '.join(SWAP_TIERS)} "
            "(the one tier of a zram+flash profile to swap on)"
        )
    return tiers


def _swam(table: object, scheme_where: str) -> dict:
    """The `[swam]` table of the scheme file `scheme_where` names, checked,
    in phone MB: each of its tables, None where absent."""
    where = f"{scheme_where} [swam]"
    tables = f"[swam.{'], [swam.'.join(SWAM_KEYS)}]"
    if not isinstance(table, dict):
        raise UserError(f"{where}: must be a table with {tables}")
    _refuse_unknown(table, SWAM_KEYS, "[swam]", where)
    if not table:
        raise UserError(f"{where}: needs one of {tables} at least")
    for key, value in table.items():
        if not isinstance(value, dict):
            raise UserError(f"{scheme_where} [swam.{key}]: must be a table")
    checks = {"swapd": _swapd, "eoom": _eoom, "wsp": _wsp, "cleaner": _cleaner}
    return {
        key: None if key not in table else check(table[key], f"{scheme_where} [swam.{key}]")
        for key, check in checks.items()
    }


def _swapd(table: dict, where: str) -> dict:
    """`[swam.swapd]`, checked, phone MB."""
    _refuse_unknown(table, SWAPD_KEYS, "[swam.swapd]", where)
    period_ms, chunk_mb = (float(positive(table, k, where)) for k in ("period_ms", "chunk_mb"))
    max_files = require(table, "max_files", int, where)
    if not 1 <= max_files <= MAX_SWAP_FILES:
        raise UserError(f"{where}: max_files must be 1..{MAX_SWAP_FILES}, got {max_files}")
    low_mb = float(positive(table, "low_mb", where, allow_zero=True))
    high_mb = float(positive(table, "high_mb", where))
    if high_mb < low_mb + chunk_mb:
        raise UserError(
            f"{where}: high_mb ({high_mb:g}) must be at least low_mb + chunk_mb "
            f"({low_mb + chunk_mb:g}): a file added under low_mb raises spare memory by "
            "chunk_mb, and the daemon would remove it and add it in turn"
        )
    return {
        "period_ms": period_ms,
        "chunk_mb": chunk_mb,
        "max_files": max_files,
        "low_mb": low_mb,
        "high_mb": high_mb,
    }


def _eoom(table: dict, where: str) -> dict:
    """`[swam.eoom]`, checked, as spec.json takes it."""
    _refuse_unknown(table, EOOM_KEYS, "[swam.eoom]", where)
    adj = require(table, "launch_adj_max", int, where)
    if not 1 <= adj <= MAX_LAUNCH_ADJ:
        raise UserError(f"{where}: launch_adj_max must be 1..{MAX_LAUNCH_ADJ}, got {adj}")
    return {"launch_adj_max": adj}


def _cleaner(table: dict, where: str) -> dict:
    """`[swam.cleaner]`, checked, as spec.json takes it: an empty table (the
    cleaner stops at lmkd's own swap thresholds)."""
    if table:
        raise UserError(
            f"{where}: `{sorted(table)[0]}` is not a setting of [swam.cleaner] (it has none: "
            "lmkd swap-cleans until swap is above its own swap_free_low_percentage)"
        )
    return {}


def _wsp(table: dict, where: str) -> dict:
    """`[swam.wsp]`, checked, phone MB."""
    _refuse_unknown(table, tuple(WSP_KNOBS), "[swam.wsp]", where)
    return {key: float(positive(table, key, where, allow_zero=True)) for key in WSP_KNOBS}


def wsp_knobs(swam: dict | None, profile: Profile) -> list[dict]:
    """`[swam.wsp]` as knobs: each floor in guest kB, a whole number; none
    without the table."""
    wsp = (swam or {}).get("wsp")
    if wsp is None:
        return []
    return [
        {"path": path, "value": str(round(wsp[key] * profile.scale * 1024))}
        for key, path in WSP_KNOBS.items()
    ]


def _guest_mb(phone_mb: float, profile: Profile) -> float:
    return round(phone_mb * profile.scale, GUEST_MB_DECIMALS)


def guest_swapd(swapd: dict, profile: Profile, where: str) -> dict:
    """spec.json's `swam.swapd`: the sizes in guest MB (to a tenth); a size
    that rounds to nothing, or a high bound that no longer lies above the
    low one, is refused."""
    sizes = {key: _guest_mb(swapd[key], profile) for key in ("chunk_mb", "low_mb", "high_mb")}
    if sizes["chunk_mb"] <= 0 or sizes["high_mb"] <= sizes["low_mb"]:
        raise UserError(
            f"{where}: at profile {profile.name}'s scale ({profile.scale:g}) chunk_mb is "
            f"{sizes['chunk_mb']:g} guest MB and low_mb and high_mb {sizes['low_mb']:g} and "
            f"{sizes['high_mb']:g}: chunk_mb must stay > 0 and high_mb above low_mb"
        )
    return {
        "period_ms": swapd["period_ms"],
        "chunk_mb": sizes["chunk_mb"],
        "max_files": swapd["max_files"],
        "low_mb": sizes["low_mb"],
        "high_mb": sizes["high_mb"],
    }


def swam_spec(scheme: Scheme, profile: Profile) -> dict | None:
    """spec.json's `scheme.swam`: `swapd` in guest MB, `eoom` and `cleaner`,
    each where the scheme has it; None without any ([swam.wsp] is knobs)."""
    swam = scheme.swam or {}
    spec = {}
    if swam.get("swapd"):
        spec["swapd"] = guest_swapd(swam["swapd"], profile, f"scheme {scheme.name} [swam.swapd]")
    if swam.get("eoom"):
        spec["eoom"] = dict(swam["eoom"])
    if swam.get("cleaner") is not None:  # an empty table
        spec["cleaner"] = dict(swam["cleaner"])
    return spec or None


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
        node = profile.fields
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


def _load_part(part: str, profile: Profile) -> Scheme:
    """One part of a scheme name: its file, with [swam.wsp]'s knobs (in the
    profile's guest kB) after its own, then its overrides."""
    base, _, overrides = part.partition("@")
    scheme = load(base.strip())
    if floors := wsp_knobs(scheme.swam, profile):
        scheme = dataclasses.replace(scheme, knobs=scheme.knobs + floors)
    return _override(scheme, overrides) if overrides else scheme


def resolve(name: str, profile: Profile) -> Scheme:
    """A scheme or a `+` combination, with overrides and profile fields filled in."""
    parts = [p.strip() for p in name.split("+")]
    if not all(parts):
        raise UserError(f"scheme {name!r} is malformed: use names joined by '+' (e.g. pmr+ice)")
    loaded = [_load_part(p, profile) for p in parts]
    if all(s.modifier for s in loaded):
        raise UserError(
            f"scheme {name!r} only modifies another scheme: combine it with one, "
            f"e.g. original+{loaded[0].name}"
        )
    # before the knobs: two Ice parts often also set its knobs differently
    ice = _united_one(loaded, "ice", "Ice (ice, ice-plus or ice-us) with other schemes")
    swam = _united_one(loaded, "swam", "SWAM")
    tiers = _united_tiers(loaded, profile)
    if swam and swam["swapd"]:
        if not profile.swaps_to_disk or tiers == "zram":
            raise UserError(
                f"scheme {name}: [swam.swapd] adds swap files on the swap disk, which "
                + (
                    f"profile {profile.name} does not swap on (it swaps to zram alone)"
                    if tiers is None
                    else '[swap] tiers = "zram" leaves unused'
                )
            )
        # its guest sizes, checked before any guest runs (swam_spec() gives them)
        guest_swapd(swam["swapd"], profile, f"scheme {name} [swam.swapd]")
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
        tiers=tiers,
        swam=swam,
    )


def _united_one(loaded: list[Scheme], section: str, which: str) -> dict | None:
    """The one part's table `section` (`ice`, `skew`, `swam`), a copy; two parts
    with one are refused: combine at most one of `which`."""
    parts = [(s.name, getattr(s, section)) for s in loaded if getattr(s, section) is not None]
    if len(parts) > 1:
        raise UserError(
            f"schemes {parts[0][0]} and {parts[1][0]} both have [{section}]: "
            f"combine at most one {which}"
        )
    return copy.deepcopy(parts[0][1]) if parts else None


def _united_tiers(loaded: list[Scheme], profile: Profile) -> str | None:
    """The parts' `[swap] tiers`: one, or several alike; only on a
    zram+flash profile."""
    named = [(s.name, s.tiers) for s in loaded if s.tiers is not None]
    if not named:
        return None
    if not profile.two_tiers:
        raise UserError(
            f"scheme {named[0][0]}: [swap] tiers picks a tier of a zram+flash profile, but "
            f"profile {profile.name} swaps to {profile.swap} alone (use one with "
            '[phone] swap = "zram+flash", e.g. pixel6pro-swam)'
        )
    if other := next(((n, t) for n, t in named if t != named[0][1]), None):
        raise UserError(
            f"schemes {named[0][0]} and {other[0]} keep the {named[0][1]} and the "
            f"{other[1]} tier: they cannot be combined"
        )
    return named[0][1]


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
