"""What Ice's paper measures (Li et al., ACM TOCS 2025, §6) in one run:
the frame rate of the apps in front, the background apps' periodic work,
and what Ice froze and thawed, from ticks.csv, events.jsonl and
vmstat.csv.

ticks.csv (docs/guest-interface.md), `t_ms,app,pid,kind,dur_ms,late`, has
a row per frame an app drew while in front (`kind` frame, `dur_ms` its
frame time: completion minus the vsync it started at) and per background
period an app with `bg_touch` did (`kind` bg, `dur_ms` completion minus
the period's scheduled start); `late` is 1 when `dur_ms` exceeds the
period. The app processes append to it, so its rows are in no order.

Frames (Figs. 9 and 10), per app that drew any:
- `fps`: its frames over the seconds it was in front, from the end of
  each launch (`t_ms` of its `switch` or `launch` event) to the start of
  the next launch, the last until the run's `done` phase
  (app_refaults.front_spans with from_done: the time it could draw);
- `ria`, the ratio of interaction alerts: the share of frames over
  16.6 ms (§6.1.1, Systrace's interaction alert);
- `jank` as PerfDog counts it: a frame over twice the mean of the three
  frames before it (within the same time in front) and over 83.3 ms (two
  frames of a 24-fps film); `big_jank` such a frame over 125 ms (three);
  `jank_per_10min` over the seconds in front.
`frames` sums the apps' frames, seconds in front and janks, and gives
their mean `fps` and `ria`, each app weighing once, as the paper averages
its four scenarios (Fig. 10).

Background periods, per app (`background`) and per oom_score_adj class of
spec.json's apps (`background_by_class`: `perceptible`, `cached`,
`service`, `persistent`; `unknown` without spec.json): periods done, how
many late (ticks.csv's `late`), the longest. A perceptible app's late
periods are its missed deadlines: Ice's whitelist (§4.4.1) should keep it
running.

Freezing (`freezing`, for a run with spec.json's `scheme.ice` or Ice's
events; absent otherwise), from events.jsonl's `ice_freeze` (`cause`
rpf, rpf_user or mdt), `ice_thaw` (`cause` mdt, launch, death or end,
`frozen_ms`), `ice_epoch` (`freeze_ms`, E_f; `available_kb`, S_am;
`high_wm_kb`, H_wm) and `ice_end` (`frozen`: app cgroups still frozen
after the runtime thawed them all, which must be 0):
- `freezes` and `thaws` by cause (0 for a cause that never happened),
  and `freezes_total`;
- `frozen_apps`: how many apps were frozen at least once (the paper: 4 on
  average, §6.1.1); `frozen_s`, their frozen time summed (thaws'
  `frozen_ms`), also per app (`frozen_s_by_app`);
- `protected_freezes`: freezes of apps Ice must never freeze, which must
  be 0: persistent apps, and the apps whose class's oom_score_adj
  (spec.json's apps: perceptible 200, service 500) is at most the
  scheme's `protect_adj`; `front_freezes`: freezes logged while the
  app was in front (from the start of its launch): a kernel freeze that
  crossed the clearing of the app's mark, which the runtime undoes at once
  (docs/guest-interface.md), and whose frames stall meanwhile;
- `epochs`: MDT's epochs, E_f's min, median and max, the median S_am and
  H_wm; absent without epochs;
- `launch_thaws`: the launches that thawed their app (`thaw_ms` of
  `switch` and `launch` events, inside the response time), their count,
  mean and longest thaw;
- `end_frozen`: `ice_end`'s count, None where the runtime logged none;
- `spared`: the candidates lmkd passed over because they held swap
  (`spared` of `kill` events, Ice+'s spare_swapped), None without it;
- `vmstat`: the kernel's counters ice_rpf_refault, ice_rpf_freeze and
  ice_frozen_reclaimed over the run, absent where vmstat.csv lacks them.

Also, whenever there are any of those: `launches`, the switches
after the first round and how many of them were hot (Fig. 12b counts the
hot launches of rounds 2-10); `refaults`, the kernel's refaults over the
run (vmstat workingset_refault_anon + _file) and `reclaims`, the pages
reclaim freed (pgsteal_kswapd + pgsteal_direct), Fig. 11's two counts;
`refaults_foreground` and `refaults_background`, the apps' refaults in
front and behind (app_refaults.py; absent without app_memcg.csv).

`ice_figures` is None for a run with neither ticks.csv rows nor Ice: a
runtime before ticks.csv, or a scenario without frames and background
periods.
"""

from __future__ import annotations

import bisect
import statistics
from typing import TYPE_CHECKING

from .app_refaults import front_spans

if TYPE_CHECKING:  # metrics imports this module
    from ..tables import Table

TICKS_FILE = "ticks.csv"
TICK_COLUMNS = ("t_ms", "app", "kind", "dur_ms", "late")
RIA_MS = 16.6  # Systrace's interaction alert (§6.1.1)
# PerfDog's jank: over twice the mean of the last JANK_HISTORY frames and
# over two (big jank: three) frame times of a 24-fps film
JANK_HISTORY = 3
JANK_MS = 1000 / 24 * 2
BIG_JANK_MS = 1000 / 24 * 3
FREEZE_CAUSES = ("rpf", "rpf_user", "mdt")
THAW_CAUSES = ("mdt", "launch", "death", "end")
# the oom_score_adj of the classes behind that `protect_adj` may protect
# (docs/guest-interface.md); persistent apps are never frozen whatever it is
CLASS_ADJ = {"perceptible": 200, "service": 500}
DEFAULT_PROTECT_ADJ = 200  # Ice's whitelist (§4.4.1), for events without spec.json
ICE_EVENTS = ("ice_freeze", "ice_thaw", "ice_epoch", "ice_end")
ICE_VMSTAT = ("ice_rpf_refault", "ice_rpf_freeze", "ice_frozen_reclaimed")
LAUNCH_EVENTS = ("switch", "launch")


class TicksError(ValueError):
    """ticks.csv lacks a column or has a malformed line."""


Ticks = dict[str, list[tuple[float, float, bool]]]  # app -> (t_ms, dur_ms, late), in time order


def read_ticks(table: Table | None) -> tuple[Ticks, Ticks]:
    """(frames, background periods) per app from ticks.csv's table; empty
    without it. TicksError if it lacks a column or a line is malformed
    (the apps write whole lines)."""
    frames: Ticks = {}
    periods: Ticks = {}
    if table is None:
        return frames, periods
    header, rows = table
    if lacking := [c for c in TICK_COLUMNS if c not in header]:
        raise TicksError(f"has no column {', '.join(lacking)}")
    col = {c: header.index(c) for c in TICK_COLUMNS}
    for i, r in enumerate(rows, start=2):
        if len(r) != len(header):
            raise TicksError(f"line {i} has {len(r)} fields, the header {len(header)}")
        kind = r[col["kind"]]
        into = frames if kind == "frame" else periods if kind == "bg" else None
        if into is None:
            continue
        try:
            tick = (float(r[col["t_ms"]]), float(r[col["dur_ms"]]), r[col["late"]] == "1")
        except ValueError:
            raise TicksError(f"line {i}: t_ms and dur_ms must be numbers: {r}") from None
        into.setdefault(r[col["app"]], []).append(tick)
    for ticks in (*frames.values(), *periods.values()):
        ticks.sort()
    return frames, periods


def run_end_ms(events: list[dict], ticks: list[float]) -> float:
    """The end of the run on the events' clock: the `done` phase, else the
    last event or tick."""
    done = [float(e["t_ms"]) for e in events if e.get("phase") == "done"]
    if done:
        return done[-1]
    return max([float(e["t_ms"]) for e in events if "t_ms" in e] + ticks, default=0.0)


def drawing_spans(events: list[dict], end_ms: float) -> dict[str, list[tuple[float, float]]]:
    """Per app, (start ms, end ms) of each time it was in front from the
    end of its launch, the last ending at `end_ms`; empty spans left out."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for start, end, app in front_spans(events, from_done=True):
        start_ms, end_ms_ = start * 1000, min(end * 1000, end_ms)
        if end_ms_ > start_ms:
            spans.setdefault(app, []).append((start_ms, end_ms_))
    return spans


def janks(frame_ms: list[float]) -> tuple[int, int]:
    """(jank, big jank) of consecutive frame times, as PerfDog counts them."""
    jank = big = 0
    for i in range(JANK_HISTORY, len(frame_ms)):
        d = frame_ms[i]
        if d > 2 * statistics.fmean(frame_ms[i - JANK_HISTORY : i]) and d > JANK_MS:
            jank += 1
            big += d > BIG_JANK_MS
    return jank, big


def app_frames(frames: list[tuple[float, float, bool]], spans: list[tuple[float, float]]) -> dict:
    """One app's frame figures (module docstring); its frames are grouped
    by the time in front they were drawn in (the last that started before
    them) for the jank count."""
    front_s = sum(end - start for start, end in spans) / 1000
    starts = [start for start, _ in spans]
    groups: dict[int, list[float]] = {}
    for t, d, _ in frames:
        groups.setdefault(bisect.bisect_right(starts, t) - 1, []).append(d)
    jank = big = 0
    for durations in groups.values():
        j, b = janks(durations)
        jank, big = jank + j, big + b
    return {
        "frames": len(frames),
        "front_s": front_s,
        "fps": len(frames) / front_s if front_s else None,
        "ria": sum(d > RIA_MS for _, d, _ in frames) / len(frames),
        "jank": jank,
        "big_jank": big,
    }


def frame_totals(by_app: dict[str, dict]) -> dict:
    """The apps' frames together: sums, and the mean of their fps and ria."""
    fps = [a["fps"] for a in by_app.values() if a["fps"] is not None]
    front_s = sum(a["front_s"] for a in by_app.values())
    jank = sum(a["jank"] for a in by_app.values())
    return {
        "frames": sum(a["frames"] for a in by_app.values()),
        "front_s": front_s,
        "fps": statistics.fmean(fps) if fps else None,
        "ria": statistics.fmean(a["ria"] for a in by_app.values()),
        "jank": jank,
        "big_jank": sum(a["big_jank"] for a in by_app.values()),
        "jank_per_10min": jank * 600 / front_s if front_s else None,
    }


def background_periods(periods: Ticks) -> dict[str, dict]:
    """Per app, its background periods done, how many were late (ticks.csv's
    `late`: done more than a period after they were due) and the longest,
    ms."""
    return {
        app: {
            "periods": len(ticks),
            "late": sum(late for _, _, late in ticks),
            "max_ms": max(d for _, d, _ in ticks),
        }
        for app, ticks in sorted(periods.items())
    }


def by_class(background: dict[str, dict], classes: dict[str, str]) -> dict[str, dict]:
    """The background periods summed per adj class (`unknown` for an app
    spec.json does not name)."""
    totals: dict[str, dict] = {}
    for app, f in background.items():
        t = totals.setdefault(classes.get(app, "unknown"), {"periods": 0, "late": 0, "max_ms": 0.0})
        t["periods"] += f["periods"]
        t["late"] += f["late"]
        t["max_ms"] = max(t["max_ms"], f["max_ms"])
    return totals


def _in_front(t_ms: float, spans: list[tuple[float, float]]) -> bool:
    return any(start <= t_ms < end for start, end in spans)


def protected(adj_class: str | None, protect_adj: int) -> bool:
    """Whether Ice may never freeze an app of this class behind."""
    return adj_class == "persistent" or CLASS_ADJ.get(adj_class or "", 1000) <= protect_adj


def freezing(
    events: list[dict],
    classes: dict[str, str],
    spare_swapped: bool,
    protect_adj: int = DEFAULT_PROTECT_ADJ,
) -> dict:
    """Ice's freezes and thaws (module docstring)."""
    freezes = [e for e in events if e.get("type") == "ice_freeze"]
    thaws = [e for e in events if e.get("type") == "ice_thaw"]
    epochs = [e for e in events if e.get("type") == "ice_epoch"]
    ends = [e for e in events if e.get("type") == "ice_end"]
    thawed = [e for e in events if e.get("type") in LAUNCH_EVENTS and "thaw_ms" in e]
    kills = [e for e in events if e.get("type") == "kill"]
    front: dict[str, list[tuple[float, float]]] = {}
    for start, end, app in front_spans(events):
        front.setdefault(app, []).append((start * 1000, end * 1000))
    frozen_s_by_app: dict[str, float] = {}
    for e in thaws:
        frozen_ms = float(e["frozen_ms"])
        frozen_s_by_app[e["app"]] = frozen_s_by_app.get(e["app"], 0.0) + frozen_ms / 1000
    figures: dict = {
        "freezes": _by_cause(freezes, FREEZE_CAUSES),
        "freezes_total": len(freezes),
        "thaws": _by_cause(thaws, THAW_CAUSES),
        "frozen_apps": len({e["app"] for e in freezes}),
        "frozen_s": sum(frozen_s_by_app.values()),
        "frozen_s_by_app": dict(sorted(frozen_s_by_app.items())),
        "protected_freezes": sum(protected(classes.get(e["app"]), protect_adj) for e in freezes),
        "front_freezes": sum(_in_front(float(e["t_ms"]), front.get(e["app"], [])) for e in freezes),
        "launch_thaws": {
            "count": len(thawed),
            "mean_ms": statistics.fmean(float(e["thaw_ms"]) for e in thawed) if thawed else None,
            "max_ms": max((float(e["thaw_ms"]) for e in thawed), default=None),
        },
        "end_frozen": int(ends[-1]["frozen"]) if ends else None,
        "spared": sum(int(e.get("spared", 0)) for e in kills) if spare_swapped else None,
    }
    if epochs:
        freeze_ms = [float(e["freeze_ms"]) for e in epochs]
        figures["epochs"] = {
            "count": len(epochs),
            "freeze_ms_min": min(freeze_ms),
            "freeze_ms_median": statistics.median(freeze_ms),
            "freeze_ms_max": max(freeze_ms),
            "available_kb_median": statistics.median(float(e["available_kb"]) for e in epochs),
            "high_wm_kb": float(epochs[-1]["high_wm_kb"]),
        }
    return figures


def _by_cause(events: list[dict], causes: tuple[str, ...]) -> dict[str, int]:
    """Events counted by `cause`: every known cause, 0 if none, then any other."""
    counts = dict.fromkeys(causes, 0)
    for e in events:
        counts[e["cause"]] = counts.get(e["cause"], 0) + 1
    return counts


def launch_figures(events: list[dict]) -> dict:
    """The switches after the first round, and the hot ones among them."""
    later = [e for e in events if e.get("type") == "switch" and int(e["round"]) >= 1]
    hot = sum(e["kind"] == "hot" for e in later)
    return {
        "after_first_round": len(later),
        "hot_after_first_round": hot,
        "hot_share_after_first_round": hot / len(later) if later else None,
    }


def vmstat_delta(vmstat: Table, keys: tuple[str, ...]) -> int | None:
    """Last minus first sample of the keys summed, None if one is missing."""
    header, rows = vmstat
    if not rows or not all(k in header for k in keys):
        return None
    cols = [header.index(k) for k in keys]
    return sum(int(rows[-1][c]) - int(rows[0][c]) for c in cols)


def ice_figures(
    ticks: Table | None,
    events: list[dict],
    vmstat: Table,
    spec: dict | None,
    refaults: dict | None = None,
) -> dict | None:
    """The figures above from the run's ticks.csv (None without it),
    events, vmstat.csv, spec.json (None without it) and its refaults split
    (app_refaults.py, None without app_memcg.csv); None for a run with
    neither frames, background periods nor Ice. TicksError if ticks.csv
    lacks a column."""
    frames, periods = read_ticks(ticks)
    scheme_ice = ((spec or {}).get("scheme") or {}).get("ice")
    has_ice = scheme_ice is not None or any(e.get("type") in ICE_EVENTS for e in events)
    if not frames and not periods and not has_ice:
        return None
    classes = {a["name"]: a["adj_class"] for a in (spec or {}).get("apps") or []}
    ticks_ms = [t for per_app in (*frames.values(), *periods.values()) for t, _, _ in per_app]
    spans = drawing_spans(events, run_end_ms(events, ticks_ms))
    by_app = {app: app_frames(f, spans.get(app, [])) for app, f in sorted(frames.items())}
    background = background_periods(periods)
    figures: dict = {
        "by_app": by_app,
        "background": background,
        "background_by_class": by_class(background, classes),
        "launches": launch_figures(events),
        "refaults": vmstat_delta(vmstat, ("workingset_refault_anon", "workingset_refault_file")),
        "reclaims": vmstat_delta(vmstat, ("pgsteal_kswapd", "pgsteal_direct")),
    }
    if by_app:
        figures["frames"] = frame_totals(by_app)
    if refaults is not None:
        for side in ("foreground", "background"):
            counts = [refaults[side][k] for k in ("refault_anon", "refault_file")]
            if None not in counts:
                figures[f"refaults_{side}"] = sum(counts)
    if has_ice:
        scheme_ice = scheme_ice or {}
        figures["freezing"] = freezing(
            events,
            classes,
            bool(scheme_ice.get("spare_swapped")),
            scheme_ice.get("protect_adj", DEFAULT_PROTECT_ADJ),
        )
        counters = {k: vmstat_delta(vmstat, (k,)) for k in ICE_VMSTAT}
        if all(v is not None for v in counters.values()):
            figures["freezing"]["vmstat"] = counters
    return figures
