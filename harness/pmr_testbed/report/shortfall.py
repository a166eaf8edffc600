"""Where a missed headline's time goes: the figures of the same runs that
bear on it, for paper.md's "What fell short" section (paper_report.py).

Each headline names the figures a reader checks first when it is missed
(a response time: the ratio the response time without memory pressure
leaves reachable, the cold launches' share of it, the swap-ins of the hot
switches, faults, direct reclaim, kills, how each repetition settled after
lmkd's last kill, how much of its goal a kswapd round reclaims; kills:
the fewest that make the apps fit (capacity.py), lmkd's reasons for them;
a peak throughput: the share of the disk and the ratio the disk allows,
how fast the apps demand memory without pressure, how busy kswapd ever
was, bulk batch size against the unit, request size;
reclaim CPU: its cost per page freed, how much of it came until lmkd's
last kill and after it, kshrinkd's scanning per victim, victims that went
back to the LRU; flash writes: the swap out until the last kill and after
it, the kills, pages written to swap per anon page reclaimed). Facts only,
medians of the main campaign's ok runs, scheme beside base; the
interpretation is docs/regime.md's.
"""

from __future__ import annotations

from ..config.profiles import PAGE_KB
from .campaign_report import capacity_entry, capacity_kills_floor, fmt, kill_reasons
from .summary import get_path


def _pair(schemes: dict, dotted: str, title: str, scheme: str, base: str) -> str | None:
    a, b = get_path(schemes.get(scheme, {}), dotted), get_path(schemes.get(base, {}), dotted)
    if a is None and b is None:
        return None
    return f"{title}: {scheme} {fmt(a)}, {base} {fmt(b)}"


def _one(schemes: dict, scheme: str, dotted: str, title: str) -> str | None:
    v = get_path(schemes.get(scheme, {}), dotted)
    return None if v is None else f"{title} ({scheme}): {fmt(v)}"


def _per(schemes: dict, scheme: str, num: str, den: str, title: str) -> str | None:
    a, b = get_path(schemes.get(scheme, {}), num), get_path(schemes.get(scheme, {}), den)
    return None if a is None or not b else f"{title} ({scheme}): {a / b:.2f}"


def _kswapd_goal(schemes: dict, scheme: str, base: str) -> str | None:
    return _pair(
        schemes,
        "kswapd_rounds.reclaimed_ratio",
        "share of its goal a kswapd round reclaims (mean)",
        scheme,
        base,
    )


def _victims(schemes: dict, scheme: str) -> str | None:
    e = schemes.get(scheme, {})
    mean, low = get_path(e, "pmr.nr_victim_mb.mean"), get_path(e, "pmr.nr_victim_mb.min")
    target = get_path(e, "pmr.target_mb")
    if mean is None or target is None:
        return None
    return (
        f"victim list ({scheme}): mean {fmt(mean)} MB, lowest {fmt(low)} MB, against a "
        f"target of {fmt(target)} MB"
    )


def _batches(schemes: dict, scheme: str, unit_kb: int | None) -> str | None:
    pages = get_path(schemes.get(scheme, {}), "bulk.pages_per_batch_mean")
    if pages is None or not unit_kb:
        return None
    unit = unit_kb // PAGE_KB
    return (
        f"bulk batch ({scheme}): {fmt(pages)} pages on average against a unit of "
        f"{unit:,} pages ({pages / unit:.0%} of it)"
    )


def _peaks(schemes: dict, names: tuple[str, str], disk_mbps: float | None = None) -> str:
    """ "pmr 82.3 MB/s, original 125 MB/s", with shares of the disk if given."""
    return ", ".join(
        f"{n} {fmt(p)} MB/s" + (f" ({p / disk_mbps:.0%})" if disk_mbps else "")
        for n in names
        if (p := get_path(schemes.get(n, {}), "reclaim_mbps.peak")) is not None
    )


def _disk(schemes: dict, scheme: str, base: str, disk_mbps: float | None) -> str | None:
    if not disk_mbps:
        return None
    return f"peak against the disk's {fmt(disk_mbps)} MB/s (fio): " + _peaks(
        schemes, (scheme, base), disk_mbps
    )


def _kill_reasons(schemes: dict, scheme: str, base: str) -> str | None:
    parts = [text for name in (scheme, base) if (text := kill_reasons(name, schemes.get(name, {})))]
    return "LMKD kills by reason: " + "; ".join(parts) if parts else None


def _settled(schemes: dict, scheme: str, base: str) -> str | None:
    """Each repetition's file refaults per second after lmkd's last kill
    (settled_state.py): which ones ended thrashing file pages with swap full."""
    parts = []
    for name in (scheme, base):
        reps = schemes.get(name, {}).get("by_rep", [])
        rates = [r.get("settled.file_refaults_per_s") for r in reps]
        if rates:
            parts.append(f"{name} " + ", ".join(fmt(v) for v in rates))
    return (
        "file refaults per second after the last kill, per repetition: " + "; ".join(parts)
        if parts
        else None
    )


def _capacity(schemes: dict, base: str) -> str | None:
    """The kills no scheme can avoid: the apps' footprints beyond RAM and swap."""
    c = capacity_entry(schemes, base)
    if not c or c["excess_mb"] <= 0 or c["fewest_kills"] is None:
        return None
    floor = capacity_kills_floor(schemes, base)
    return (
        f"the apps' anonymous footprints exceed RAM and swap by {fmt(c['excess_mb'])} MB: "
        f"at least {fmt(c['fewest_kills'])} must die whatever the reclaim"
        + (
            f", so no scheme's kills against {base} can go below {floor:.2f}"
            if floor is not None
            else ""
        )
        + (
            f" (the OOM killer killed {fmt(c['oom_kills'])} processes too)"
            if c.get("oom_kills")
            else ""
        )
    )


def _ceiling(schemes: dict, base: str, disk_mbps: float | None) -> str | None:
    """What the disk allows a peak ratio to reach: its bandwidth over base's peak."""
    peak = get_path(schemes.get(base, {}), "reclaim_mbps.peak")
    if not disk_mbps or not peak:
        return None
    return (
        f"the disk caps the peak ratio against {base} at {disk_mbps / peak:.2f} "
        f"({fmt(disk_mbps)} MB/s over {base}'s {fmt(peak)} MB/s)"
    )


def _floor(schemes: dict, base: str, floor_ms: float | None) -> str | None:
    """What no scheme can remove: the response time without memory pressure."""
    base_ms = get_path(schemes.get(base, {}), "response_ms.mean")
    if floor_ms is None or not base_ms:
        return None
    return (
        f"response mean without memory pressure (`floor`): {fmt(floor_ms)} ms, so no "
        f"scheme's ratio against {base} ({fmt(base_ms)} ms) can go below "
        f"{floor_ms / base_ms:.2f}"
    )


def _demand(schemes: dict, scheme: str, base: str, demand_mbps: float | None) -> str | None:
    """How fast the apps demand memory without pressure, against the peaks."""
    if demand_mbps is None:
        return None
    base_peak = get_path(schemes.get(base, {}), "reclaim_mbps.peak")
    return (
        f"the apps' fastest second of anonymous memory growth without memory pressure "
        f"(`floor`): {fmt(demand_mbps)} MB/s"
        + (f", {demand_mbps / base_peak:.2f} x {base}'s peak" if base_peak else "")
        + "; peak reclaim: "
        + _peaks(schemes, (scheme, base))
    )


def evidence(
    key: str,
    scheme: str,
    base: str,
    schemes: dict,
    *,
    disk_mbps: float | None = None,
    unit_kb: int | None = None,
    floor_ms: float | None = None,
    demand_mbps: float | None = None,
) -> list[str]:
    """Bullet lines (without the bullet) for headline `key`; empty when the
    runs have none of its figures. `floor_ms` and `demand_mbps` are the
    response time and the fastest anon growth of the `floor` campaign
    (config/paper.py), when it ran."""
    if base not in schemes:  # e.g. the disk: set the scheme against original
        base = "original"
    pair = lambda dotted, title: _pair(schemes, dotted, title, scheme, base)  # noqa: E731
    facts: dict[str, list[str | None]] = {
        "response_time": [
            _floor(schemes, base, floor_ms),
            pair("switch_kinds.cold.share", "cold launches' share of the summed response time"),
            pair("switch_kinds.cold.mean_ms", "cold launch mean ms"),
            pair("switch_kinds.hot.mean_ms", "hot switch mean ms"),
            pair("switch_kinds.hot.swapin_pages", "pages swapped in during hot switches"),
            pair("response_ms.p95", "response p95 ms"),
            pair("pgmajfault", "major faults"),
            pair("allocstall", "direct reclaims (allocstall)"),
            pair("kills", "LMKD kills"),
            _settled(schemes, scheme, base),
            _kswapd_goal(schemes, scheme, base),
        ],
        "throughput": [
            _disk(schemes, scheme, base, disk_mbps),
            _ceiling(schemes, base, disk_mbps),
            _demand(schemes, scheme, base, demand_mbps),
            pair(
                "kswapd_rounds.busiest_second_share",
                "share of its busiest second kswapd spent in reclaim rounds",
            ),
            pair("reclaim_mbps.mean", "mean reclaim MB/s over writing seconds"),
            _batches(schemes, scheme, unit_kb),
            pair("swap_write_kb.mean", "mean swap write KiB"),
            _kswapd_goal(schemes, scheme, base),
            pair("kswapd_rounds.writeback_share", "writeback share of a kswapd round"),
            _victims(schemes, scheme),
        ],
        "kills": [
            pair("kills", "LMKD kills"),
            _capacity(schemes, base),
            _kill_reasons(schemes, scheme, base),
            _settled(schemes, scheme, base),
            pair("allocstall", "direct reclaims (allocstall)"),
            pair("pswpout_mb", "swap out MB"),
            pair("swap_writes_per_anon_freed", "pages written to swap per anon page reclaimed"),
            _victims(schemes, scheme),
        ],
        "direct_reclaims": [
            pair("allocstall", "direct reclaims (allocstall)"),
            _victims(schemes, scheme),
            _kswapd_goal(schemes, scheme, base),
        ],
        "reclaim_cpu": [
            pair("reclaim_cpu_us_per_page", "reclaim CPU µs per page freed"),
            pair("settled.until_last_kill.reclaim_cpu_s", "reclaim CPU s until lmkd's last kill"),
            pair("settled.after_last_kill.reclaim_cpu_s", "reclaim CPU s after it"),
            _settled(schemes, scheme, base),
            pair("reclaim_cpu_s.kswapd", "kswapd CPU s"),
            _one(schemes, scheme, "reclaim_cpu_s.kshrinkd", "kshrinkd CPU s"),
            _per(
                schemes,
                scheme,
                "pmr.pgscan_kshrinkd",
                "pmr.pmr_victim_added",
                "pages kshrinkd scanned per victim added",
            ),
            _per(
                schemes,
                scheme,
                "pmr.pmr_victim_putback",
                "pmr.pmr_victim_added",
                "victims put back on the LRU per victim added",
            ),
            pair("pgmajfault", "major faults"),
        ],
        "flash_writes": [
            pair("pswpout_mb", "swap out MB"),
            pair("settled.until_last_kill.pswpout_mb", "swap out MB until lmkd's last kill"),
            pair("settled.after_last_kill.pswpout_mb", "swap out MB after it"),
            pair("kills", "LMKD kills"),
            pair("swap_writes_per_anon_freed", "pages written to swap per anon page reclaimed"),
            pair("swap_fate.written_not_freed_mb", "swap out MB that reclaim did not free"),
            pair("swap_fate.swap_cache_end_mb", "swap cache grown over the run MB"),
            _one(
                schemes,
                scheme,
                "pmr.pmr_victim_swapin",
                "victims mapped again after reclaim paged them out",
            ),
            _one(schemes, scheme, "pmr.pmr_victim_freed", "victim pages freed by their owner"),
            pair("pgmajfault", "major faults"),
            _per(
                schemes,
                scheme,
                "pmr.pmr_victim_putback",
                "pmr.pmr_victim_added",
                "victims put back on the LRU per victim added",
            ),
        ],
    }
    group = {
        "response_time_vs_mglru": "response_time",
        "peak_throughput": "throughput",
        "peak_of_disk": "throughput",
        "pps_reclaim_cpu": "reclaim_cpu",
    }.get(key, key)
    return [f for f in facts.get(group, []) if f]
