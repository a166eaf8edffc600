"""Build the guest's spec.json: scenario, profile and scheme, scaled to the guest.

This is the only place where phone-scale figures become guest figures; the
guest runtime does no scaling of its own (docs/guest-interface.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .. import schema
from .profiles import Profile
from .scenarios import App, BackgroundUse, Scenario
from .schemes import Scheme, skew_spec, swam_spec
from .trace_events import run_trace_events

SWAP_SERIAL = "pmrswap"
DATA_SERIAL = "pmrdata"

# Android lmkd defaults (system/memory/lmkd, ../shared/calibration.md).
LMKD_DEFAULTS = {
    "medium_some_ms": 70,
    "critical_full_ms": 700,
    "window_ms": 1000,
    "perceptible_adj": 200,
    "swap_free_low_percentage": 20,
    "thrashing_limit": 100,
    "thrashing_limit_decay": 10,
    "kill_timeout_ms": 100,
    "kill_heaviest_task": True,
    "poll_ms": 10,
    # lmkd caps "free swap" at (free + inactive file) x this ratio, an
    # estimate made for zram; the phones here swap to flash, where free swap
    # is what it says: 0 makes lmkd use SwapFree as is. A zram profile keeps
    # 0, so that it differs from its flash profile in the swap medium alone.
    "swap_compression_ratio": 0,
}
RECLAIM_THREADS = ["kswapd", "kshrinkd", "pmr_unmap"]


def app_spec(app: App, profile: Profile, time_scale: float = 1.0) -> dict:
    """The runtime's app: sizes at the profile's scale, times (and the rate
    of growth) at the campaign's `time_scale` (Scenario.time_scale)."""
    file_mb = profile.scale_mb(app.file_mb) if app.file_mb else 0
    return {
        "name": app.name,
        "processes": app.processes,
        "anon_mb": profile.scale_mb(app.anon_mb),
        "file_mb": file_mb,
        "launch_fraction": app.launch_fraction,
        "working_set_fraction": app.working_set_fraction,
        "init_work_ms": app.init_work_ms,
        "growth_ms": app.growth_ms * time_scale,
        "fg_period_ms": app.fg_period_ms * time_scale,
        "fg_churn_mb": profile.scale_mb(app.fg_churn_mb) if app.fg_churn_mb else 0,
        "bg_touch": bg_touch_spec(app.bg_touch, profile, time_scale),
        "adj_class": app.adj_class,
        "launch_threads": app.launch_threads,
        "resume_work_ms": app.resume_work_ms,
        "peak_anon_mb": None if app.peak_anon_mb is None else profile.scale_mb(app.peak_anon_mb),
        "fg_growth_mb_per_s": round(app.fg_growth_mb_per_s * profile.scale / time_scale, 3),
        # the frame loop while in front (Ice); absent for an app that draws none
        **({"frame": frame_spec(app.frame, profile, time_scale)} if app.frame else {}),
        # shared objects' data (SWAM's swap-clean); absent for an app with none
        **(so_spec(app, profile, file_mb) if app.so_mb else {}),
    }


def so_spec(app: App, profile: Profile, guest_file_mb: int) -> dict:
    """The runtime's `so_mb` and `so_reloc_us_per_page`: the MB scaled but
    not rounded to whole MB (a few MB per app), never past the app's files
    in the guest; the relocation's CPU work in guest µs (not scaled)."""
    return {
        "so_mb": min(round(app.so_mb * profile.scale, 2), guest_file_mb),
        "so_reloc_us_per_page": float(app.so_reloc_us_per_page),
    }


def bg_touch_spec(bg_touch: dict | None, profile: Profile, time_scale: float = 1.0) -> dict | None:
    """The runtime's `bg_touch`: the period (at `time_scale`), the MB it
    touches (scaled) and, where the scenario gives one, its CPU work (guest
    ms, at `time_scale` through spec.json's work_iters_per_ms)."""
    if bg_touch is None:
        return None
    cpu_ms = bg_touch.get("cpu_ms", 0)
    return {
        "period_ms": bg_touch["period_ms"] * time_scale,
        "mb": profile.scale_mb(bg_touch["mb"]),
        **({"cpu_ms": float(cpu_ms)} if cpu_ms else {}),
    }


def frame_spec(frame: dict, profile: Profile, time_scale: float = 1.0) -> dict:
    """The runtime's `frame`: vsync period (at `time_scale`) and CPU work per
    frame (guest ms, at `time_scale` through work_iters_per_ms), the MB of heap a frame
    reads (scaled like fg_churn_mb) and the kB it allocates (scaled, not
    rounded: a frame's buffers are small)."""
    return {
        "period_ms": float(frame["period_ms"]) * time_scale,
        "work_ms": float(frame["work_ms"]),
        "touch_mb": profile.scale_mb(frame["touch_mb"]) if frame["touch_mb"] else 0,
        "alloc_kb": frame["alloc_kb"] * profile.scale,
    }


def background_use(use: BackgroundUse | None, time_scale: float = 1.0) -> dict | None:
    """The runtime's `scenario.background_use`, its dwell at `time_scale`."""
    if use is None:
        return None
    return {
        "every": use.every,
        "dwell_ms": [ms * time_scale for ms in use.dwell_ms],
        "apps": list(use.apps),
    }


def swap_settings(profile: Profile, tiers: str | None = None) -> dict:
    """spec.json `swap`: the swap disk (always attached, swapped on but on
    a zram profile) and the zram device (a zram profile's swap, a zram+flash
    profile's upper tier, else none); a scheme's `[swap] tiers` keeps one
    tier of a zram+flash profile (schemes.py)."""
    return {
        "serial": SWAP_SERIAL,
        "zram_mb": 0 if tiers == "flash" else profile.guest_zram_mb,
        "disk": profile.swaps_to_disk and tiers != "zram",
    }


def memory_settings(profile: Profile) -> dict:
    """The guest's watermark and swappiness sysctls (spec.json `memory`)."""
    return {**profile.watermarks(), "swappiness": 100}


def footprint_mb(spec: dict) -> int:
    """Guest MB the scenario's apps and their zygote would use if nothing
    were reclaimed (an app's shared objects' data is a copy of part of its
    files)."""
    apps = sum(a["anon_mb"] + a["file_mb"] + a.get("so_mb", 0) for a in spec["apps"])
    return apps + spec["zygote"]["shared_mb"]


def build(
    *,
    run_id: str,
    out_dir: Path,
    seed: int,
    scenario: Scenario,
    profile: Profile,
    scheme: Scheme,
    work_iters_per_ms: float,
    time_scale: float = 1.0,
    slowdown: int = 1,
    extra_trace_events: Sequence[str] = (),
) -> dict:
    """spec.json for one run; `work_iters_per_ms` is the guest's CPU loop
    speed, `time_scale` runs the scenario's clock faster (< 1) or slower
    (Scenario.time_scale: its CPU work, dwell and gap times, periods and
    growth);
    `slowdown` stretches the deadline (debug kernel),
    `extra_trace_events` are recorded beside the default ones (trace_events.py).
    Checked against schemas/spec.schema.json, the runtime's types."""
    spec = {
        "run_id": run_id,
        "seed": seed,
        "out_dir": str(out_dir),
        "deadline_s": scenario.deadline_s * slowdown,
        # the CPU work's iterations per ms of the scenario's clock
        "work_iters_per_ms": work_iters_per_ms * time_scale,
        "scheme": {
            "name": scheme.name,
            "knobs": scheme.knobs,
            "policies": scheme.policies,
            "kthreads": scheme.kthreads,
            # Acclaim's background marks (schemes.py); absent for other schemes
            **({"background": scheme.background} if scheme.background else {}),
            # skew rectification's advice and balance (schemes.py); absent for other schemes
            **({"skew": skew} if (skew := skew_spec(scheme)) else {}),
            # Ice's freezing and thawing (schemes.py); absent for other schemes
            **({"ice": scheme.ice} if scheme.ice else {}),
            # SWAM's swap daemon and EOOM killer (schemes.py); absent for other schemes
            **({"swam": swam} if (swam := swam_spec(scheme, profile)) else {}),
        },
        "memory": memory_settings(profile),
        "swap": swap_settings(profile, scheme.tiers),
        "data_disk": {"serial": DATA_SERIAL},
        "lmkd": dict(LMKD_DEFAULTS),
        "metrics": {
            "interval_ms": 100,
            "reclaim_threads": RECLAIM_THREADS,
            "trace_events": run_trace_events(extra_trace_events),
        },
        "scenario": {
            "name": scenario.name,
            "rounds": scenario.rounds,
            "dwell_ms": [ms * time_scale for ms in scenario.dwell_ms],
            "launch_gap_ms": scenario.launch_gap_ms * time_scale,
            "settle_ms": scenario.settle_ms * time_scale,
            "foreground": [a.name for a in scenario.foreground],
            # System processes start first, then the background apps.
            "background": [a.name for a in scenario.system + scenario.background],
            "background_use": background_use(scenario.background_use, time_scale),
        },
        # the apps' heap pages: the canary word and, on zram, data that
        # compresses like the profile's ratio (profiles.py)
        "heap": {"random_words": profile.heap_random_words},
        "zygote": {
            "shared_mb": profile.scale_mb(scenario.zygote_shared_mb)
            if scenario.zygote_shared_mb
            else 0
        },
        "apps": [app_spec(a, profile, time_scale) for a in scenario.apps],
    }
    return schema.check("spec", spec)
