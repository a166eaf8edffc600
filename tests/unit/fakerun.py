"""Synthetic run and results directories, written as docs/guest-interface.md says.

Tests describe a run by what matters to them (switches, kills, counter
increments, swap writes); everything else gets plausible values, in the
exact file formats the guest writes.
"""

from __future__ import annotations

import json
from pathlib import Path

from pmr_testbed.workflows.campaign import SetupChanged

# A 6.1 /proc/vmstat in file order (abridged), as the guest's header copies it.
VMSTAT_KEYS = [
    "nr_free_pages",
    "nr_zone_inactive_anon",
    "nr_zone_active_anon",
    "nr_zone_inactive_file",
    "nr_zone_active_file",
    "nr_inactive_anon",
    "nr_active_anon",
    "nr_inactive_file",
    "nr_active_file",
    "workingset_refault_anon",
    "workingset_refault_file",
    "workingset_activate_anon",
    "workingset_activate_file",
    "nr_swapcached",
    "pgpgin",
    "pgpgout",
    "pswpin",
    "pswpout",
    "pgalloc_dma",
    "pgalloc_dma32",
    "pgalloc_normal",
    "pgalloc_movable",
    "allocstall_dma",
    "allocstall_dma32",
    "allocstall_normal",
    "allocstall_movable",
    "pgskip_dma",
    "pgfree",
    "pgactivate",
    "pgdeactivate",
    "pgfault",
    "pgmajfault",
    "pgrefill",
    "pgsteal_kswapd",
    "pgsteal_direct",
    "pgsteal_khugepaged",
    "pgscan_kswapd",
    "pgscan_direct",
    "pgscan_khugepaged",
    "pgscan_direct_throttle",
    "pgscan_anon",
    "pgscan_file",
    "pgsteal_anon",
    "pgsteal_file",
]
# The PMR series' /proc/vmstat entries (part 1, then part 2's bulk writeback),
# appended after the stock ones as on a kernel with the series.
PMR_VMSTAT_KEYS = [
    "nr_victim_anon",
    "nr_victim_file",
    "pmr_victim_added",
    "pmr_victim_reclaimed",
    "pmr_victim_putback",
    "pmr_victim_swapin",
    "pmr_victim_freed",
    "pgscan_kshrinkd",
    "kshrinkd_wake",
    "pmr_batch",
    "pmr_batch_pages",
    "pmr_batch_pageout",
]
# Acclaim's counter (its kernel series), appended after the stock ones
ACCLAIM_VMSTAT_KEYS = ["acclaim_fae_kept_inactive"]
# Ice's counters (its kernel series), appended after the stock ones
ICE_VMSTAT_KEYS = ["ice_rpf_refault", "ice_rpf_freeze", "ice_frozen_reclaimed"]
TICKS_HEADER = "t_ms,app,pid,kind,dur_ms,late"
APP_MEMCG_HEADER = (
    "t_s,app,anon,file,pgsteal,pgmajfault,workingset_refault_anon,workingset_refault_file"
)
DISKSTAT_FIELDS = [
    "read_ios",
    "read_merges",
    "read_sectors",
    "read_ticks",
    "write_ios",
    "write_merges",
    "write_sectors",
    "write_ticks",
    "in_flight",
    "io_ticks",
    "time_in_queue",
    "discard_ios",
    "discard_merges",
    "discard_sectors",
    "discard_ticks",
    "flush_ios",
    "flush_ticks",
]
SWAP_DEV = "vdb"
INTERVAL_MS = 100


def switch(app: str, kind: str, response_ms: float, round_: int = 0, t_ms: int = 5000) -> dict:
    return {
        "t_ms": t_ms,
        "type": "switch",
        "round": round_,
        "index": 0,
        "app": app,
        "kind": kind,
        "response_ms": response_ms,
        "from": "launcher",
    }


def kill(app: str, reason: str, t_ms: int = 6000) -> dict:
    return {
        "t_ms": t_ms,
        "type": "kill",
        "app": app,
        "pid": 321,
        "adj": 950,
        "rss_kb": 40000,
        "level": "medium",
        "reason": reason,
    }


def tick_row(t_ms: float, app: str, kind: str, dur_ms: float, period_ms: float) -> str:
    """One row of ticks.csv (a frame or a background period done), as the
    app processes append it; `late` from the period."""
    return f"{t_ms:.3f},{app},1234,{kind},{dur_ms:.3f},{int(dur_ms > period_ms)}"


LMKD_HEADER = (
    "t_ms,level,event,reclaim,swap_is_low,wmark,free_kb,swap_free_kb,thrashing,"
    "reason,min_adj,killed_kb"
)


def lmkd_row(
    t_ms: int,
    *,
    event: bool = False,
    reclaim: str = "kswapd",
    swap_is_low: bool = False,
    wmark: str = "none",
    thrashing: int | None = 0,
    reason: str = "",
    killed_kb: int | None = None,
) -> str:
    """One row of lmkd.csv, as runtime/src/lmkd/wakeup_log.rs writes it."""
    if reclaim == "idle":
        thrashing = None
    return ",".join(
        map(
            str,
            [
                t_ms,
                "medium",
                int(event),
                reclaim,
                int(swap_is_low),
                wmark,
                30000,
                1024,
                "" if thrashing is None else thrashing,
                reason,
                201 if reason else "",
                "" if not reason else (killed_kb or 0),
            ],
        )
    )


def app_memcg_row(
    t_s: float,
    app: str,
    refault_anon: int = 0,
    refault_file: int = 0,
    pgmajfault: int = 0,
    pgsteal: int = 0,
) -> str:
    """One row of app_memcg.csv (cumulative counters of the app's cgroup), as
    runtime/src/metrics/app_memcg.rs writes it."""
    return ",".join(
        map(
            str,
            [t_s, app, 40 << 20, 8 << 20, pgsteal, pgmajfault, refault_anon, refault_file],
        )
    )


def write_run(
    run_dir: Path,
    *,
    status: str = "ok",
    switches: list[dict] | None = None,
    kills: list[dict] | None = None,
    vmstat_increments: dict[str, int] | None = None,
    write_sectors: list[int] | None = None,
    sample_t_ms: list[int] | None = None,
    hist: dict[str, int] | None = None,
    threads_cpu: dict[str, float] | None = None,
    threads_wait: dict[str, float] | None = None,
    swap_dev: str = SWAP_DEV,
    diskstat_dev: str | None = None,
    extra_vmstat_keys: list[str] | tuple[str, ...] = (),
    trace: str | None = None,
    swap_free_kb: list[int] | None = None,
    lmkd_rows: list[str] | None = None,
    app_memcg_rows: list[str] | None = None,
    extra_events: list[dict] | None = None,
    ticks_rows: list[str] | None = None,
    omit: tuple[str, ...] = (),
) -> Path:
    """Write a run directory. `write_sectors` is the cumulative counter per sample
    (samples every 100 ms from t=0 unless `sample_t_ms` is given); the vmstat
    counters rise by `vmstat_increments` from the first to the last sample.
    vmstat.csv has the stock counters plus `extra_vmstat_keys` (e.g.
    PMR_VMSTAT_KEYS for a kernel with the series). `trace` is trace.txt's
    text (see trace_text); without it no trace.txt is written, as when the
    spec lists no events. `swap_free_kb` is meminfo.csv's SwapFree per sample
    (default: 200 MB free throughout). `lmkd_rows` are lmkd.csv's rows (see
    lmkd_row; default: one quiet wakeup). `app_memcg_rows` are app_memcg.csv's
    rows (see app_memcg_row; without them no app_memcg.csv is written, as by a
    runtime before it). `extra_events` go into events.jsonl after the
    switches and kills. `ticks_rows` are ticks.csv's rows (see tick_row;
    without them no ticks.csv is written, as by a runtime before it).
    `threads_wait` are the threads' seconds waiting for a CPU over the run
    (threads_wait.csv; none without them). Files named in `omit` are not
    written."""
    run_dir.mkdir(parents=True, exist_ok=True)
    switches = (
        switches
        if switches is not None
        else [
            switch("chrome", "cold", 900.0, 0),
            switch("youtube", "hot", 300.0, 0),
            switch("chrome", "hot", 200.0, 1),
            switch("youtube", "hot", 400.0, 1),
        ]
    )
    kills = kills or []
    write_sectors = write_sectors if write_sectors is not None else [0] * 31
    sample_t_ms = sample_t_ms or [i * INTERVAL_MS for i in range(len(write_sectors))]
    run = {
        "status": status,
        "error": None if status == "ok" else "app chrome hung",
        "kernel": "6.1.192",
        "knobs": {"/proc/sys/vm/swappiness": "100"},
        "mem_total_kb": 2000000,
        "swap_total_kb": 350000,
        "swap_dev": swap_dev,
        "started_at": "2025-01-01T00:00:00Z",
        "workload_s": sample_t_ms[-1] / 1000,
        "switches": len(switches),
        "kills": len(kills),
    }
    (run_dir / "run.json").write_text(json.dumps(run))
    _write_events(run_dir / "events.jsonl", switches, kills, sample_t_ms[-1], extra_events or [])
    _write_vmstat(
        run_dir / "vmstat.csv",
        sample_t_ms,
        vmstat_increments or {},
        [*VMSTAT_KEYS, *extra_vmstat_keys],
    )
    _write_diskstat(run_dir / "diskstat.csv", sample_t_ms, write_sectors, diskstat_dev or swap_dev)
    _write_psi(run_dir / "psi.csv", sample_t_ms)
    _write_meminfo(
        run_dir / "meminfo.csv", sample_t_ms, swap_free_kb or [200 * 1024] * len(sample_t_ms)
    )
    hist = hist if hist is not None else {"4096": 300, "65536": 40, "131072": 10}
    (run_dir / "swap_write_hist.json").write_text(json.dumps({"dev": swap_dev, "bytes": hist}))
    threads_cpu = threads_cpu if threads_cpu is not None else {"kswapd0": 4.2}
    (run_dir / "threads_cpu.json").write_text(json.dumps(threads_cpu))
    _write_threads_cpu(run_dir / "threads_cpu.csv", sample_t_ms, threads_cpu)
    if threads_wait is not None:
        _write_threads_cpu(run_dir / "threads_wait.csv", sample_t_ms, threads_wait)
    rows = lmkd_rows if lmkd_rows is not None else [lmkd_row(500)]
    (run_dir / "lmkd.csv").write_text("\n".join([LMKD_HEADER, *rows]) + "\n")
    if trace is not None:
        (run_dir / "trace.txt").write_text(trace)
    if app_memcg_rows is not None:
        (run_dir / "app_memcg.csv").write_text(
            "\n".join([APP_MEMCG_HEADER, *app_memcg_rows]) + "\n"
        )
    if ticks_rows is not None:
        (run_dir / "ticks.csv").write_text("\n".join([TICKS_HEADER, *ticks_rows]) + "\n")
    for name in omit:
        (run_dir / name).unlink()
    return run_dir


def _write_events(
    path: Path, switches: list[dict], kills: list[dict], end_ms: int, extra: list[dict]
) -> None:
    events = [
        {"t_ms": 0, "type": "phase", "phase": "background_launch"},
        {
            "t_ms": 10,
            "type": "launch",
            "app": "firefox",
            "kind": "cold",
            "response_ms": 950.0,
            "role": "background",
        },
        {"t_ms": 1000, "type": "phase", "phase": "settle"},
        {"t_ms": 2000, "type": "phase", "phase": "switching"},
        *switches,
    ]
    for k in kills:
        events += [k, {"t_ms": k["t_ms"] + 5, "type": "app_died", "app": k["app"], "pid": k["pid"]}]
    events += extra
    events.append({"t_ms": end_ms, "type": "phase", "phase": "done"})
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def _write_vmstat(path: Path, t_ms: list[int], increments: dict[str, int], keys: list[str]) -> None:
    base = {k: 1000 + 17 * i for i, k in enumerate(keys)}
    lines = ["t_ms," + ",".join(keys)]
    last = len(t_ms) - 1
    for i, t in enumerate(t_ms):
        # counters rise linearly so that intermediate rows are plausible too
        row = [base[k] + increments.get(k, 0) * i // last for k in keys]
        lines.append(",".join(map(str, [t, *row])))
    path.write_text("\n".join(lines) + "\n")


def _write_diskstat(path: Path, t_ms: list[int], write_sectors: list[int], dev: str) -> None:
    lines = ["t_ms,dev," + ",".join(DISKSTAT_FIELDS)]
    for t, ws in zip(t_ms, write_sectors):
        fields = dict.fromkeys(DISKSTAT_FIELDS, 0)
        fields |= {
            "read_ios": 50 + t // 100,
            "read_sectors": 400 + t,
            "write_ios": ws // 8,
            "write_sectors": ws,
            "write_ticks": ws // 4,
            "io_ticks": t // 10,
        }
        lines.append(",".join(map(str, [t, dev, *fields.values()])))
    path.write_text("\n".join(lines) + "\n")


def _write_psi(path: Path, t_ms: list[int]) -> None:
    lines = ["t_ms,some_avg10,some_total_us,full_avg10,full_total_us"]
    lines += [f"{t},1.50,{t * 20},0.40,{t * 5}" for t in t_ms]
    path.write_text("\n".join(lines) + "\n")


def _write_meminfo(path: Path, t_ms: list[int], swap_free_kb: list[int]) -> None:
    lines = ["t_ms,mem_free_kb,mem_available_kb,swap_total_kb,swap_free_kb"]
    lines += [f"{t},30000,90000,350000,{free}" for t, free in zip(t_ms, swap_free_kb)]
    path.write_text("\n".join(lines) + "\n")


def _write_threads_cpu(path: Path, t_ms: list[int], totals: dict[str, float]) -> None:
    """Each thread's seconds (on a CPU, or waiting for one) rising linearly to
    its total."""
    names = sorted(totals)
    lines = ["t_ms," + ",".join(names)]
    last = len(t_ms) - 1
    lines += [
        ",".join([str(t), *(f"{totals[n] * i / last:.2f}" for n in names)])
        for i, t in enumerate(t_ms)
    ]
    path.write_text("\n".join(lines) + "\n")


TRACE_START_MONO_S = 250.0


def trace_line(
    t_s: float,
    event: str,
    fields: dict[str, int],
    task: str = "kswapd0",
    pid: int = 37,
    cpu: int = 0,
    flags: str = ".....",
) -> str:
    """One event as ftrace prints it, `t_s` seconds after the workload's start."""
    text = " ".join(f"{k}={v}" for k, v in fields.items())
    return (
        f"{task:>16}-{pid:<7} [{cpu:03d}] {flags} {TRACE_START_MONO_S + t_s:12.6f}: {event}: {text}"
    )


def writeback_time(
    t_s: float, nr_unmap: int, unmap_ns: int, nr_pageout: int, pageout_ns: int, **where
) -> str:
    """A vmscan:mm_vmscan_writeback_time event (one shrink_folio_list() call)."""
    return trace_line(
        t_s,
        "mm_vmscan_writeback_time",
        {
            "nid": 0,
            "nr_unmap": nr_unmap,
            "unmap_ns": unmap_ns,
            "nr_pageout": nr_pageout,
            "pageout_ns": pageout_ns,
        },
        **where,
    )


def pmr_batch(
    t_s: float,
    nr_pages: int,
    nr_unmapped: int,
    nr_pageout: int,
    unmap_ns: int,
    pageout_ns: int,
    **where,
) -> str:
    """A vmscan:mm_vmscan_pmr_batch event (one bulk batch, pmr/enabled=2)."""
    return trace_line(
        t_s,
        "mm_vmscan_pmr_batch",
        {
            "nid": 0,
            "nr_pages": nr_pages,
            "nr_unmapped": nr_unmapped,
            "nr_pageout": nr_pageout,
            "unmap_ns": unmap_ns,
            "pageout_ns": pageout_ns,
        },
        **where,
    )


def kswapd_round(
    t_s: float,
    nr_to_reclaim: int,
    nr_reclaimed: int,
    duration_ns: int,
    nr_scanned: int | None = None,
    **where,
) -> str:
    """A vmscan:mm_vmscan_kswapd_round event (one kswapd_shrink_node() call,
    emitted at its end, `t_s`)."""
    return trace_line(
        t_s,
        "mm_vmscan_kswapd_round",
        {
            "nid": 0,
            "order": 0,
            "nr_to_reclaim": nr_to_reclaim,
            "nr_scanned": nr_scanned if nr_scanned is not None else 4 * nr_to_reclaim,
            "nr_reclaimed": nr_reclaimed,
            "duration_ns": duration_ns,
        },
        **where,
    )


def lwp_goal(t_s: float, ratio: int, stock: int, goal: int, **where) -> str:
    """A vmscan:mm_vmscan_kswapd_lwp_goal event (a kswapd round's goal as
    Acclaim's lightweight prediction set it, pages)."""
    return trace_line(
        t_s,
        "mm_vmscan_kswapd_lwp_goal",
        {"nid": 0, "ratio": ratio, "stock": stock, "goal": goal},
        **where,
    )


def trace_text(lines: list[str], missing: tuple[str, ...] = (), overrun: int = 0) -> str:
    """trace.txt as the guest writes it: the two header lines, the events, the overrun."""
    return (
        "\n".join(
            [
                f"# start_mono_s={TRACE_START_MONO_S:.6f}",
                f"# missing={','.join(missing)}",
                *lines,
                f"# overrun={overrun}",
            ]
        )
        + "\n"
    )


def write_campaign(
    results_dir: Path,
    schemes: list[str],
    runs: list[dict],
    reps: int = 3,
    *,
    scenario: str = "smoke",
    profile: str = "pixel6pro-mini",
    seed: int = 42,
    rounds: int = 2,
    swap_bandwidth: dict | None = None,
    wall_s: float | None = None,
    swap: str = "flash",
) -> Path:
    """campaign.json; each of `runs` is {scheme, rep, status[, error]}; dir is derived;
    `swap_bandwidth` is the fio measurement (swap_bandwidth.py) and `wall_s` the
    time the campaign took, each absent if None; `swap` the profile's swap
    medium (guest.swap, absent for flash)."""
    entries = [
        {
            "scheme": r["scheme"],
            "rep": r["rep"],
            "dir": f"runs/{r['scheme']}-r{r['rep']}",
            "status": r["status"],
            "error": r.get("error"),
        }
        for r in runs
    ]
    campaign = {
        "scenario": scenario,
        "rounds": rounds,
        "profile": profile,
        "schemes": schemes,
        "reps": reps,
        "seed": seed,
        "dilation": {"factor": 3.2, "host_ns_per_page": 12.5, "guest_ns_per_page": 40.0},
        "qemu": {
            "accel": "kvm",
            "swap_bps_write": 400 * 2**20,
            "swap_iops_write": 20000,
            "data_bps_read": 800 * 2**20,
        },
        "guest": {
            "ram_mb": 2048,
            "cpus": 4,
            "scale": 0.25,
            **({} if swap == "flash" else {"swap": swap}),
        },
        "kernel": {
            "version": "6.1.192",
            "series": ["0001-mm-pmr-victim-list.patch"],
            "flavour": "testbed",
        },
        "runs": entries,
    }
    if swap_bandwidth is not None:
        campaign["swap_bandwidth"] = swap_bandwidth
    if wall_s is not None:
        campaign["wall_s"] = wall_s
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "campaign.json").write_text(json.dumps(campaign, indent=2))
    return results_dir


class CutOff(Exception):
    """A fake campaign stopped part-way, as by Ctrl-C or a crashed host."""


# the time a fake campaign run takes, as campaign.json's wall_s counts it
RUN_WALL_S = 60.0


def fake_campaign_runner(
    make_run, stop_after: dict[str, int] | None = None, setup_changed: frozenset[str] = frozenset()
):
    """A stand-in for paper_run.run_campaign: writes what campaign.run would (a
    campaign.json rewritten after every run, and the run directories), with
    fake runs whose write_run arguments are make_run(profile, scheme, rep).
    `stop_after[campaign dir name] = n` raises CutOff after n runs of that
    campaign. A request to resume keeps the runs campaign.json records, or
    raises SetupChanged for the campaigns named in `setup_changed`. Each run
    takes a fake RUN_WALL_S (campaign.json's wall_s). The requests it got
    are in `.calls`, the runs it made in `.runs`."""
    stop_after = stop_after or {}

    def runner(req, progress):
        runner.calls.append(req)
        schemes = req.schemes.split(",")
        setup = {
            "reps": req.reps,
            "scenario": req.scenario,
            "profile": req.profile,
            "seed": req.seed,
            "rounds": req.rounds,
        }
        entries: list[dict] = []
        if req.resume:
            if req.out.name in setup_changed:
                raise SetupChanged(f"{req.out} was run with another kernel")
            entries = json.loads((req.out / "campaign.json").read_text())["runs"]
        earlier = {(e["scheme"], e["rep"]) for e in entries}
        write_campaign(req.out, schemes, entries, **setup)
        for rep in range(1, req.reps + 1):
            for scheme in schemes:
                if (scheme, rep) in earlier:
                    continue
                if len(entries) == stop_after.get(req.out.name):
                    raise CutOff(req.out.name)
                write_run(
                    req.out / "runs" / f"{scheme}-r{rep}", **make_run(req.profile, scheme, rep)
                )
                runner.runs.append((req.out.name, scheme, rep))
                entries.append({"scheme": scheme, "rep": rep, "status": "ok"})
                write_campaign(req.out, schemes, entries, wall_s=RUN_WALL_S * len(entries), **setup)
                progress(f"{scheme}-r{rep}: done", True)
        return json.loads((req.out / "campaign.json").read_text())

    runner.calls = []
    runner.runs = []
    return runner


def ramp(mb_per_s: list[float]) -> list[int]:
    """Cumulative write_sectors at 100-ms samples for the given MB/s per second."""
    cumulative = [0]
    for rate in mb_per_s:
        for _ in range(10):
            cumulative.append(cumulative[-1] + int(rate * (2**20 // 512) / 10))
    return cumulative


def fake_bzimage(path: Path, payload: bytes = b"") -> Path:
    """A file with an x86 boot image's setup header magic where the kernel
    looks for it (kernel.check_bzimage), `payload` after it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\0" * 0x202 + b"HdrS" + payload)
    return path


def kills_campaign(results_dir: Path, kills: dict[str, list[int]]) -> Path:
    """A results directory whose scheme's rep i has kills[scheme][i-1] kills
    and ten direct reclaims per kill, every run ok."""
    runs = []
    for scheme, per_rep in kills.items():
        for rep, n in enumerate(per_rep, start=1):
            write_run(
                results_dir / "runs" / f"{scheme}-r{rep}",
                kills=[kill("firefox", "low_swap_and_thrashing")] * n,
                vmstat_increments={"allocstall_normal": 10 * n, "pswpout": 256 * rep},
            )
            runs.append({"scheme": scheme, "rep": rep, "status": "ok"})
    reps = max(len(v) for v in kills.values())
    return write_campaign(results_dir, list(kills), runs, reps=reps)
