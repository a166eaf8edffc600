"""Scenarios (scenarios/*.toml): which apps, how big, and how they are switched.

Sizes are phone-scale MB and growth rates phone-scale MB/s (spec.py scales
them to the guest); times are guest milliseconds; `init_work_ms`,
`resume_work_ms`, `bg_touch.cpu_ms` and `frame.work_ms` are CPU work in
guest milliseconds (the apps' CPU loop is calibrated at the guest's own
speed, dilation.py's guest_work_iters_per_ms).

`ref_ns_per_page` (optional) is the guest's memory speed (dilation.py's
guest_ns_per_page) at which the scenario was calibrated. Under TCG
memory-bound work (a heap fill, reclaim, the flash throttled from the
reclaim ceiling) follows the host's memory speed, which moves from day to
day, and the CPU loop does not. With it, a campaign runs the scenario's
clock at time_scale(), its own guest_ns_per_page over this: the CPU work,
the dwell, gap and settle times, the periods and the growth times (and the
growth rates by its inverse), so that a faster host runs the calibrated
workload faster instead of another one. One guest second is then
1 / time_scale of the scenario's (the regime's time mapping). Without it
every time is the scenario's guest ms.

`frame = { period_ms, work_ms, touch_mb, alloc_kb }` gives an app a frame
loop while it is in front (Ice §6.1.1: FPS, frames over 16.6 ms): a vsync
every `period_ms`; a frame writes `alloc_kb` (phone-scale kB, optional) of
newly allocated memory, freed a second of frames later, does `work_ms` of
CPU work and reads `touch_mb` of its heap. `bg_touch = { period_ms, mb,
cpu_ms }` has an app behind touch `mb` of its heap and do `cpu_ms` of CPU
work every period (Ice §3.2: 58% of background apps run).

`so_mb` (phone-scale MB, default 0: none; at most `file_mb`) is the app's
shared objects' data: the first `so_mb` of its files, mapped private and
writable and relocated (written) at a cold launch, for
`so_reloc_us_per_page` (guest µs of CPU work, default 0) per page, and
relocated again wherever the app finds a page swap-cleaned (SWAM's OOM
cleaner, `[swam.cleaner]`). Android's `dumpsys meminfo` ".so mmap" row,
Private Dirty, is a few MB per app: a value here is an estimate to
calibrate, not SWAM's figure. No scenario sets it yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import paths, tomlfile
from ..errors import UserError
from ..tomlfile import positive, require

APP_KEYS = {
    "name",
    "processes",
    "anon_mb",
    "file_mb",
    "launch_fraction",
    "working_set_fraction",
    "init_work_ms",
    "growth_ms",
    "fg_period_ms",
    "fg_churn_mb",
    "bg_touch",
    "adj_class",
    "launch_threads",
    "resume_work_ms",
    "peak_anon_mb",
    "fg_growth_mb_per_s",
    "frame",
    "so_mb",
    "so_reloc_us_per_page",
}
BG_TOUCH_KEYS = {"period_ms", "mb", "cpu_ms"}
FRAME_KEYS = {"period_ms", "work_ms", "touch_mb", "alloc_kb"}
MAX_LAUNCH_THREADS = 16  # as the runtime's spec.rs
ADJ_CLASSES = {"cached", "perceptible", "service", "persistent"}
SCENARIO_KEYS = {
    "name",
    "description",
    "rounds",
    "dwell_ms",
    "launch_gap_ms",
    "settle_ms",
    "deadline_s",
    "defaults",
    "system",
    "foreground",
    "background",
    "background_use",
    "zygote",
    "ref_ns_per_page",
}
BACKGROUND_USE_KEYS = {"every", "dwell_ms", "apps"}
ZYGOTE_KEYS = {"shared_mb"}


@dataclass(frozen=True)
class App:
    name: str
    role: str  # "system", "foreground" or "background"
    processes: int
    anon_mb: float
    file_mb: float
    launch_fraction: float
    working_set_fraction: float
    init_work_ms: float
    growth_ms: int
    fg_period_ms: int
    fg_churn_mb: float
    bg_touch: dict | None
    adj_class: str
    launch_threads: int = 1
    resume_work_ms: float = 0.0
    peak_anon_mb: float | None = None  # None: anon_mb (no growth while used)
    fg_growth_mb_per_s: float = 0.0
    # {"period_ms", "work_ms", "touch_mb"}: the frame loop while in front; None: no frames
    frame: dict | None = None
    # shared objects' data (phone MB, <= file_mb): the first so_mb of its
    # files mapped private and writable and relocated, which SWAM's OOM
    # cleaner can swap-clean; 0: none. Android's `dumpsys meminfo` ".so
    # mmap" row, Private Dirty, is a few MB per app: an estimate to
    # calibrate, not SWAM's figure.
    so_mb: float = 0.0
    # CPU work to relocate one of those pages (the dynamic linker's symbol
    # lookup), guest microseconds, at a cold launch and for each page found
    # swap-cleaned
    so_reloc_us_per_page: float = 0.0


@dataclass(frozen=True)
class BackgroundUse:
    """Background apps used between the switches (the paper's UI Automator):
    after every `every`-th switch, the next of `apps` in a seeded order is
    in front for a dwell from `dwell_ms` (hot if alive, cold if killed)."""

    every: int
    dwell_ms: tuple[int, int]
    apps: tuple[str, ...]


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    rounds: int
    dwell_ms: tuple[int, int]
    launch_gap_ms: int
    settle_ms: int
    deadline_s: int
    # Phone-scale MB the zygote writes before forking the apps, which
    # share it copy-on-write (runtime/src/workload/zygote.rs)
    zygote_shared_mb: float
    apps: list[App] = field(default_factory=list)
    background_use: BackgroundUse | None = None
    # the guest's memory speed (ns per page) the scenario was calibrated at
    ref_ns_per_page: float | None = None

    def time_scale(self, guest_ns_per_page: float) -> float:
        """How much longer than their guest ms the scenario's times and CPU
        work run at a guest memory speed of `guest_ns_per_page`: 1 without
        `ref_ns_per_page`."""
        if self.ref_ns_per_page is None:
            return 1.0
        return guest_ns_per_page / self.ref_ns_per_page

    @property
    def foreground(self) -> list[App]:
        return [a for a in self.apps if a.role == "foreground"]

    @property
    def background(self) -> list[App]:
        return [a for a in self.apps if a.role == "background"]

    @property
    def system(self) -> list[App]:
        return [a for a in self.apps if a.role == "system"]


def load(name: str) -> Scenario:
    path = tomlfile.find(paths.SCENARIOS_DIR, name, "scenario")
    return parse(tomlfile.load(path, "scenario"), path)


def _fraction(table: dict, key: str, where: str) -> float:
    value = positive(table, key, where)
    if value > 1:
        raise UserError(f"{where}: `{key}` must be in (0, 1], got {value}")
    return value


def _optional(table: dict, key: str, where: str, default, allow_zero: bool = True):
    """positive() of `key`, or `default` where the table has none."""
    return positive(table, key, where, allow_zero) if key in table else default


def _app(raw: dict, defaults: dict, role: str, where: str) -> App:
    unknown = set(raw) - APP_KEYS
    if unknown:
        raise UserError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(APP_KEYS))}"
        )
    t = {**defaults, **raw}
    name = require(t, "name", str, where)
    where = f"{where} ({name})"
    bg_touch = _bg_touch(t.get("bg_touch"), f"{where} bg_touch")
    frame = _frame(t.get("frame"), f"{where} frame")
    if frame is not None and role == "system":
        raise UserError(f"{where}: a [[system]] app never comes to the front: it draws no frames")
    adj_class = t.get("adj_class", "cached")
    if adj_class not in ADJ_CLASSES:
        raise UserError(f"{where}: adj_class {adj_class!r} must be one of {sorted(ADJ_CLASSES)}")
    launch_threads = int(_optional(t, "launch_threads", where, 1, allow_zero=False))
    if launch_threads > MAX_LAUNCH_THREADS:
        raise UserError(
            f"{where}: `launch_threads` must be 1..{MAX_LAUNCH_THREADS}, got {launch_threads}"
        )
    anon_mb = positive(t, "anon_mb", where)
    peak = _optional(t, "peak_anon_mb", where, None, allow_zero=False)
    if peak is not None and peak < anon_mb:
        raise UserError(f"{where}: `peak_anon_mb` ({peak}) must be >= anon_mb ({anon_mb})")
    file_mb = positive(t, "file_mb", where, allow_zero=True)
    so_mb = _optional(t, "so_mb", where, 0.0)
    if so_mb > file_mb:
        raise UserError(
            f"{where}: `so_mb` ({so_mb}) must be <= file_mb ({file_mb}): its pages are the "
            "app's files"
        )
    return App(
        name=name,
        role=role,
        processes=int(positive(t, "processes", where)),
        anon_mb=anon_mb,
        file_mb=file_mb,
        launch_fraction=_fraction(t, "launch_fraction", where),
        working_set_fraction=_fraction(t, "working_set_fraction", where),
        init_work_ms=positive(t, "init_work_ms", where, allow_zero=True),
        growth_ms=int(positive(t, "growth_ms", where, allow_zero=True)),
        fg_period_ms=int(positive(t, "fg_period_ms", where)),
        fg_churn_mb=t.get("fg_churn_mb", 0),
        bg_touch=bg_touch,
        adj_class=adj_class,
        launch_threads=launch_threads,
        resume_work_ms=_optional(t, "resume_work_ms", where, 0.0),
        peak_anon_mb=peak,
        fg_growth_mb_per_s=_optional(t, "fg_growth_mb_per_s", where, 0.0),
        frame=frame,
        so_mb=so_mb,
        so_reloc_us_per_page=_optional(t, "so_reloc_us_per_page", where, 0.0),
    )


def _table(raw: object, keys: set[str], where: str) -> dict:
    """An inline table (an app's, background_use), with only `keys` in it."""
    if not isinstance(raw, dict):
        raise UserError(f"{where}: must be a table of {', '.join(sorted(keys))}")
    unknown = set(raw) - keys
    if unknown:
        raise UserError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(keys))}"
        )
    return raw


def _bg_touch(raw: object, where: str) -> dict | None:
    """`bg_touch`: every `period_ms` touch `mb` of the heap and do `cpu_ms`
    (optional, default 0) of CPU work, which must fit in the period."""
    if raw is None:
        return None
    table = _table(raw, BG_TOUCH_KEYS, where)
    period_ms = positive(table, "period_ms", where)
    positive(table, "mb", where)
    cpu_ms = _optional(table, "cpu_ms", where, 0.0)
    if cpu_ms >= period_ms:
        raise UserError(
            f"{where}: cpu_ms ({cpu_ms:g}) must be below period_ms ({period_ms:g}): "
            "every period would be late"
        )
    return dict(table)


def _frame(raw: object, where: str) -> dict | None:
    """`frame`: a vsync every `period_ms`, each frame `work_ms` of CPU work
    (below the period), `touch_mb` of the heap read and `alloc_kb` of new
    memory written (0 if not given)."""
    if raw is None:
        return None
    table = _table(raw, FRAME_KEYS, where)
    period_ms = positive(table, "period_ms", where)
    work_ms = positive(table, "work_ms", where, allow_zero=True)
    positive(table, "touch_mb", where, allow_zero=True)
    table = {"alloc_kb": 0, **table}
    positive(table, "alloc_kb", where, allow_zero=True)
    if work_ms >= period_ms:
        raise UserError(
            f"{where}: work_ms ({work_ms:g}) must be below period_ms ({period_ms:g}): "
            "every frame would be late"
        )
    return {key: table[key] for key in sorted(FRAME_KEYS)}


def parse(data: dict, path: Path) -> Scenario:
    where = f"scenario {path.name}"
    unknown = set(data) - SCENARIO_KEYS
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    defaults = data.get("defaults", {})
    apps: list[App] = []
    for role in ("system", "foreground", "background"):
        for i, raw in enumerate(data.get(role, [])):
            apps.append(_app(raw, defaults, role, f"{where} [[{role}]] #{i + 1}"))
    names = [a.name for a in apps]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UserError(f"{where}: app name(s) used twice: {', '.join(dupes)}")
    for a in apps:
        if a.adj_class == "persistent" and a.role != "system":
            raise UserError(
                f'{where}: {a.name}: only [[system]] apps can be adj_class = "persistent"'
            )
    if not any(a.role == "foreground" for a in apps):
        raise UserError(f"{where}: needs at least one [[foreground]] app")
    return Scenario(
        name=require(data, "name", str, where),
        description=data.get("description", ""),
        rounds=int(positive(data, "rounds", where)),
        dwell_ms=_dwell(data, where),
        launch_gap_ms=int(positive(data, "launch_gap_ms", where, allow_zero=True)),
        settle_ms=int(positive(data, "settle_ms", where, allow_zero=True)),
        deadline_s=int(positive(data, "deadline_s", where)),
        zygote_shared_mb=_zygote(data, where),
        apps=apps,
        background_use=_background_use(data, apps, where),
        ref_ns_per_page=(
            positive(data, "ref_ns_per_page", where) if "ref_ns_per_page" in data else None
        ),
    )


def _zygote(data: dict, where: str) -> float:
    raw = require(data, "zygote", dict, where)
    where = f"{where} [zygote]"
    unknown = set(raw) - ZYGOTE_KEYS
    if unknown:
        raise UserError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(ZYGOTE_KEYS))}"
        )
    return positive(raw, "shared_mb", where, allow_zero=True)


def _dwell(table: dict, where: str) -> tuple[int, int]:
    dwell = require(table, "dwell_ms", list, where)
    if (
        len(dwell) != 2
        or not all(isinstance(x, int) and x > 0 for x in dwell)
        or dwell[0] > dwell[1]
    ):
        raise UserError(f"{where}: `dwell_ms` must be [min, max] in ms with 0 < min <= max")
    return dwell[0], dwell[1]


def _background_use(data: dict, apps: list[App], where: str) -> BackgroundUse | None:
    raw = data.get("background_use")
    if raw is None:
        return None
    where = f"{where} [background_use]"
    _table(raw, BACKGROUND_USE_KEYS, where)
    background = {a.name for a in apps if a.role == "background"}
    used = raw.get("apps", "all")
    if used == "all":
        used = [a.name for a in apps if a.role == "background"]
    if not isinstance(used, list) or not used or not all(n in background for n in used):
        raise UserError(f'{where}: `apps` must be "all" or a list of [[background]] apps')
    return BackgroundUse(
        every=int(positive(raw, "every", where)), dwell_ms=_dwell(raw, where), apps=tuple(used)
    )
