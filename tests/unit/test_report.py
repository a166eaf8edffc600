"""report/campaign_report.py: report.md and the four plots from a synthetic results directory."""

import dataclasses
import re

import pytest

from fakerun import (
    LMKD_HEADER,
    PMR_VMSTAT_KEYS,
    kill,
    lmkd_row,
    pmr_batch,
    ramp,
    switch,
    trace_text,
    write_campaign,
    write_run,
    writeback_time,
)
from pmr_testbed.report import campaign_report
from pmr_testbed.report.campaign_report import (
    ANON_FILE_PLOT,
    PLOT_FILES,
    bucketed,
    ecdf,
    launch_fill_table,
    median_run,
    size_bucket_kb,
    write_report,
)
from pmr_testbed.report.summary import Run, load_campaign, load_runs

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _write_results(tmp_path, with_failure: bool = True):
    runs = []
    schemes = {"original": (1.0, 5), "mglru": (0.8, 3), "pmr": (0.5, 1)}
    for scheme, (slowness, n_kills) in schemes.items():
        for rep in (1, 2):
            switches = [
                switch("chrome", "cold", 900 * slowness, 0),
                switch("youtube", "hot", 300 * slowness + rep, 0),
                switch("chrome", "hot", 250 * slowness, 1),
                switch("youtube", "hot", 350 * slowness, 1),
            ]
            if scheme == "pmr":  # only pmr's runtime measured its hot launches
                for s in switches[1:]:
                    s["cost"] = {
                        "heap_ms": 80.0 + rep,
                        "files_ms": 20.0,
                        "wall_ms": 100.0,
                        "user_ms": 10.0,
                        "sys_ms": 30.0,
                        "runq_ms": 20.0,
                        "major_faults": 4.0,
                    }
            write_run(
                tmp_path / "runs" / f"{scheme}-r{rep}",
                switches=switches,
                kills=[kill("firefox", "low_swap_and_thrashing")] * (n_kills + rep),
                vmstat_increments={
                    "allocstall_normal": 100 * n_kills,
                    "pgmajfault": 5000,
                    "pswpout": 25600 * rep,
                },
                write_sectors=ramp([0, 20 / slowness, 35 / slowness, 10, 0]),
                hist={
                    "4096": 500,
                    "12288": 40,
                    "65536": int(30 / slowness),
                    "524288": int(4 / slowness),
                },
                threads_cpu={"kswapd0": 10 * slowness, "kshrinkd0": 1.0},
            )
            runs.append({"scheme": scheme, "rep": rep, "status": "ok"})
    if with_failure:
        runs.append(
            {
                "scheme": "pmr",
                "rep": 3,
                "status": "failed",
                "error": "guest run exited with status 1; console: x/console.log",
            }
        )
    return write_campaign(tmp_path, list(schemes), runs)


def test_report_writes_markdown_and_four_plots(tmp_path):
    results = _write_results(tmp_path)
    path = write_report(results)
    assert path == results / "report.md"
    md = path.read_text()
    for file in PLOT_FILES.values():
        png = results / "plots" / file
        assert png.read_bytes()[:8] == PNG_MAGIC
        assert f"](plots/{file})" in md
    assert (results / "summary.json").exists()
    assert "`smoke`" in md and "6.1.192" in md
    # a headline row per scheme, with [min, max] since every scheme has 2 runs
    for scheme in ("original", "mglru", "pmr"):
        assert re.search(rf"^\| \*\*{scheme}\*\* \| 2 \| .*\[.*\]", md, re.M), scheme
    # pmr's kills: reps have 2 and 3 -> median 2.50, ratio vs original (6, 7 -> 6.5)
    assert "| 2.50 [2, 3] |" in md  # a half count keeps its decimals
    versus = md.split("## Versus original")[1].split("## Setup")[0]
    ratio_row = next(line for line in versus.splitlines() if line.startswith("| pmr |"))
    assert f"{2.5 / 6.5:.2f}" in ratio_row
    assert "Failed runs (1)" in md and "exited with status 1" in md
    # pmr's switches: one cold of 450 ms; hot 151 (rep 1) or 152 (rep 2), 125, 175 ms
    kinds = md.split("Response time by kind of switch")[1].split("Reclaim CPU seconds")[0]
    pmr_kinds = next(line for line in kinds.splitlines() if line.startswith("| pmr |"))
    assert pmr_kinds == (
        "| pmr | 1 [1, 1] | 450 [450, 450] | 0.50 [0.50, 0.50] | 3 [3, 3] | "
        "150 [150, 151] | 0 [0, 0] | 0 [0, 0] |"
    )
    # where hot switches' time goes: pmr's only; blocked = 100 - 10 - 30 - 20, outside the
    # launch = response - 100 (150.3 in rep 1, 150.7 in rep 2)
    assert "Where the time of cold switches goes" not in md
    hot_cost = md.split("Where the time of hot switches goes")[1].split("How reclaim balanced")[0]
    assert [
        line.split(" |")[0]
        for line in hot_cost.splitlines()
        if line.startswith("| ") and "---" not in line
    ][1:] == ["| pmr"]
    assert (
        "| pmr | 150 [150, 151] | 81.5 [81.0, 82.0] | 20.0 [20.0, 20.0] | 10.0 [10.0, 10.0] | "
        "30.0 [30.0, 30.0] | 20.0 [20.0, 20.0] | 40.0 [40.0, 40.0] | 50.5 [50.3, 50.7] | "
        "4.00 [4.00, 4.00] |"
    ) in hot_cost
    # the LRU balance: a row per scheme (the fake vmstat has its counters)
    balance = md.split("How reclaim balanced")[1].split("What became of the pages")[0]
    assert [
        line.split(" |")[0]
        for line in balance.splitlines()
        if line.startswith("| ") and "---" not in line
    ] == ["| scheme", "| original", "| mglru", "| pmr"]
    assert "| share activated |" in balance
    # the pages written to swap: 100 and 200 MB by rep, none freed by reclaim, none in the
    # swap cache; no patch-27 columns, as no fake kernel has the counters
    fate = md.split("What became of the pages")[1].split("Reclaim CPU seconds")[0]
    assert (
        "| pmr | 150 [100, 200] | 0.00 [0.00, 0.00] | 150 [100, 200] | 0.00 [0.00, 0.00] | "
        "150 [100, 200] |"
    ) in fate
    assert "victims swapped in" not in fate
    assert "factor 3.20" in md and "swap_bps_write 400.0 MB/s" in md
    # kills 6/7, 4/5 and 2/3 by rep, all for one reason
    assert (
        "LMKD kills by reason (median per reason): original low_swap_and_thrashing 6.50; "
        "mglru low_swap_and_thrashing 4.50; pmr low_swap_and_thrashing 2.50."
    ) in md


def test_report_without_failures_or_baseline_data(tmp_path):
    results = _write_results(tmp_path, with_failure=False)
    # every original run fails, so nothing can be compared
    campaign = results / "campaign.json"
    campaign.write_text(campaign.read_text().replace('"dir": "runs/original-r', '"dir": "gone/r'))
    md = write_report(results).read_text()
    assert "No comparison" in md
    assert "original: no ok runs (2 failed)" in md
    # every fixed plot, the anon:file ratio (vmstat.csv has the LRU sizes), and no
    # sweep plot: these schemes are not one knob's values
    assert {p.name for p in (results / "plots").glob("*.png")} == {
        *PLOT_FILES.values(),
        ANON_FILE_PLOT,
    }


def test_host_cpu_table_only_for_runs_that_sampled_it(tmp_path):
    results = _write_results(tmp_path, with_failure=False)
    start = 1735689600.0  # fakerun's started_at, 2025-01-01T00:00:00Z
    for rep, busy in ((1, 1.2), (2, 1.6)):
        (results / "runs" / f"pmr-r{rep}" / "host_cpu.csv").write_text(
            "t_unix,host_cpus,busy,vcpus,main,other\n"
            + "".join(f"{start + t},2,{busy},0.9,0.3,0.0\n" for t in range(1, 4))
        )
    md = write_report(results).read_text()
    host = md.split("The host's CPU while the guests ran")[1].split("\n\n")[1]
    rows = [line for line in host.splitlines() if line.startswith("| ") and "---" not in line]
    assert [r.split(" |")[0] for r in rows] == ["| scheme", "| pmr"]
    assert rows[1].startswith("| pmr | 1.40 [1.20, 1.60] | 0.90 [0.90, 0.90] |")


def test_lmkd_table_gives_each_repetitions_wakeups_after_its_last_kill(tmp_path):
    results = _write_results(tmp_path, with_failure=False)
    # pmr-r1: a kill, then one wakeup after it
    (results / "runs" / "pmr-r1" / "lmkd.csv").write_text(
        "\n".join(
            [
                LMKD_HEADER,
                lmkd_row(
                    5000,
                    event=True,
                    swap_is_low=True,
                    wmark="low",
                    reason="low_mem_and_swap",
                    killed_kb=40000,
                ),
                lmkd_row(7000, swap_is_low=True, wmark="min", thrashing=35),
            ]
        )
        + "\n"
    )
    md = write_report(results).read_text()
    lmkd = md.split("Why lmkd killed no more")[1].split("\n\n")[1]
    rows = {
        tuple(c.strip() for c in line.split("|")[1:3]): line
        for line in lmkd.splitlines()
        if line.startswith("| ") and "---" not in line
    }
    assert len(rows) == 7  # the header, three schemes x two reps
    assert rows[("pmr", "1")].endswith("| 1 | 2 | 0 | 1 | 1 | 1 | 1 | 35 | 0 |")
    # fakerun's one quiet wakeup, without a kill: after the (absent) last kill
    assert rows[("pmr", "2")].endswith("| 0 | 1 | 0 | 1 | 0 | 0 | 0 | 0 | 0 |")


def test_no_lmkd_table_without_lmkd_csv(tmp_path):
    results = _write_results(tmp_path, with_failure=False)
    for run in (results / "runs").iterdir():
        (run / "lmkd.csv").unlink()
    assert "Why lmkd killed no more" not in write_report(results).read_text()


@pytest.mark.parametrize("size_kb, bucket", [(0.5, 0.5), (4, 4), (12, 8), (64, 64), (1023, 512)])
def test_size_buckets_are_powers_of_two(size_kb, bucket):
    assert size_bucket_kb(size_kb) == bucket


def test_bucketed_counts_requests_and_bytes():
    assert bucketed({"4": 10, "8": 3, "12": 2}) == {4.0: (10, 40.0), 8.0: (5, 48.0)}


def test_median_run_is_chosen_by_mean_throughput(tmp_path):
    results = _write_results(tmp_path, with_failure=False)
    ok, _ = load_runs(results, load_campaign(results))
    runs = [Run(rep, ok["original"][0].metrics) for rep in (1, 2, 3)]
    for run, mean in zip(runs, (30.0, None, 10.0)):  # None: no swap writes, ranks lowest
        run.metrics = dataclasses.replace(run.metrics, reclaim_mbps={"mean": mean, "peak": 1.0})
    assert median_run(runs).rep == 3


@pytest.fixture
def figures(monkeypatch):
    """The figures write_report saves, by file name (still saved as PNGs)."""
    saved = {}
    save = campaign_report.save_figure

    def keep(fig, path):
        saved[path.name] = fig
        save(fig, path)

    monkeypatch.setattr(campaign_report, "save_figure", keep)
    return saved


def _table_rows(md: str, section: str) -> dict[str, list[str]]:
    """{first cell: cells} of the markdown table under `## section`."""
    text = md.split(f"## {section}\n")[1].split("\n## ")[0]
    rows = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("| ")
    ]
    return {row[0]: row for row in rows}


def _writeback_results(tmp_path):
    """original (unmap 20-60 µs/page, no batches), pmr (2-6 µs/page, 2 batches of
    256 pages) on a part-2 kernel; pps on a part-1 kernel (no writeback figures)."""
    runs = []
    for scheme, us in (("original", 20), ("pmr", 2), ("pps", None)):
        for rep in (1, 2):
            events, keys = [], PMR_VMSTAT_KEYS[:6]
            if us is not None:
                keys = PMR_VMSTAT_KEYS
                events = [
                    writeback_time(1.0 + i / 10, 32, 32 * us * (1 + i) * 1000, 32, 32 * 40_000)
                    for i in range(5)
                ]
            if scheme == "pmr":
                events += [pmr_batch(2.0, 256, 256, 250, 256 * 1000, 0)] * 2
            write_run(
                tmp_path / "runs" / f"{scheme}-r{rep}",
                extra_vmstat_keys=keys,
                trace=trace_text(events),
                write_sectors=ramp([0, 10, 20, 0]),
            )
            runs.append({"scheme": scheme, "rep": rep, "status": "ok"})
    return write_campaign(tmp_path, ["original", "pmr", "pps"], runs, reps=2)


def test_writeback_table_and_bulk_counters(tmp_path):
    md = write_report(_writeback_results(tmp_path)).read_text()
    rows = _table_rows(md, "Writeback")
    assert set(rows) == {"scheme", "original", "pmr"}  # pps's kernel has no part 2
    header = rows["scheme"]
    # the medians (both reps are alike, so every spread is [x, x])
    original = {h: c.split(" [")[0] for h, c in zip(header, rows["original"])}
    pmr = {h: c.split(" [")[0] for h, c in zip(header, rows["pmr"])}
    assert rows["original"][1] == "60.0 [60.0, 60.0]"
    # calls at 1..5 x base µs/page: p50 3 x base, p95 4.8 x base
    assert original["unmap µs/page p50"] == "60.0"
    assert original["p95"] == "96.0"
    assert pmr["unmap µs/page p50"] == "6.00"
    assert original["pageout µs/page p50"] == "40.0"
    assert original["bulk batches"] == "0" and original["pages per batch"] == "–"
    assert pmr["bulk batches"] == "2" and pmr["pages per batch"] == "256"
    assert pmr["batch first pass µs/page p50"] == "1.00"
    # the batch figure is the whole first pass per page, said to be no unmap time
    assert "batch unmap" not in md and "not comparable with the unmap µs/page" in md
    # unmap share: 3 x base per page against 40 µs of pageout
    assert original["unmap share"] == f"{60 / 100:.2f}"
    assert pmr["unmap share"] == f"{6 / 46:.2f}"
    # part 2's counters join the PMR table (– for the part-1 kernel)
    pmr_table = md.split("PMR's victim list")[1].split("\n## ")[0]
    assert "bulk batches" in pmr_table and "batch first-pass µs" not in pmr_table
    pps_row = next(line for line in pmr_table.splitlines() if line.startswith("| pps |"))
    assert pps_row.rstrip(" |").endswith("–")


def test_no_writeback_section_or_bulk_columns_without_part2(tmp_path):
    md = write_report(_write_results(tmp_path)).read_text()
    assert "## Writeback" not in md
    assert "bulk batches" not in md
    assert "![unmap_time](plots/unmap_time.png)" in md


def test_unmap_time_plot_is_a_log_scale_distribution_per_scheme(tmp_path, figures):
    # each kswapd call of 256 pages is a 1-MB window of its own: 1..5 x base
    # µs/page; an app's direct reclaim is no window
    runs = []
    for scheme, us in (("original", 20), ("pmr", 2)):
        for rep in (1, 2):
            events = [
                writeback_time(1.0 + i / 10, 256, 256 * us * (1 + i) * 1000, 0, 0) for i in range(5)
            ]
            events.append(writeback_time(2.0, 256, 256 * 1_000_000, 0, 0, task="app-chrome-1"))
            write_run(
                tmp_path / "runs" / f"{scheme}-r{rep}",
                extra_vmstat_keys=PMR_VMSTAT_KEYS,
                trace=trace_text(events),
                write_sectors=ramp([0, 10, 20, 0]),
            )
            runs.append({"scheme": scheme, "rep": rep, "status": "ok"})
    write_report(write_campaign(tmp_path, ["original", "pmr"], runs, reps=2))
    (ax,) = figures[PLOT_FILES["unmap_time"]].axes
    assert ax.get_xscale() == "log"
    labels = [line.get_label() for line in ax.lines]
    assert len(labels) == 2 and labels[0].startswith("original (p50 60.0")
    assert labels[1].startswith("pmr (p50 6.00")
    # the curve covers both reps' windows, rising from 0 to 1
    xs, ys = ax.lines[0].get_xdata(), ax.lines[0].get_ydata()
    assert (xs.min(), xs.max()) == (pytest.approx(20.0), pytest.approx(100.0))
    assert (ys[0], ys[-1]) == (0.0, 1.0) and list(ys) == sorted(ys)


def test_unmap_time_plot_without_events_says_so(tmp_path, figures):
    write_report(_write_results(tmp_path))
    (ax,) = figures[PLOT_FILES["unmap_time"]].axes
    assert len(ax.lines) == 0 and "no unmap times" in ax.texts[0].get_text()


def test_ecdf_is_thinned_but_keeps_its_ends():
    values, shares = ecdf([3.0, 1.0, 2.0, 2.0])
    assert list(values) == [1.0, 2.0, 2.0, 3.0]
    assert list(shares) == [0.25, 0.5, 0.75, 1.0]
    values, shares = ecdf(list(range(10_000, 0, -1)), max_points=100)
    assert len(values) == 100 and (values[0], values[-1], shares[-1]) == (1, 10_000, 1.0)


KEY = "unmap_unit_kbytes"
# peak MB/s of reps 1 and 2 for each unit: 256 kB is best
SWEEP_PEAKS = {64: (30, 34), 256: (60, 64), 1024: (45, 49)}


def _sweep_results(tmp_path):
    runs = []
    schemes = ["original", *(f"pmr@{KEY}={kb}" for kb in SWEEP_PEAKS)]
    for scheme in schemes:
        kb = int(scheme.rsplit("=", 1)[1]) if "@" in scheme else None
        for rep in (1, 2):
            peak = SWEEP_PEAKS[kb][rep - 1] if kb else 20
            write_run(
                tmp_path / "runs" / f"{scheme}-r{rep}",
                switches=[switch("chrome", "cold", 1000.0 - (kb or 0) / 4, 0)],
                write_sectors=ramp([0, peak / 2, peak, 0]),
            )
            runs.append({"scheme": scheme, "rep": rep, "status": "ok"})
    return write_campaign(tmp_path, schemes, runs, reps=2)


def test_sweep_table_optimum_and_figure(tmp_path, figures):
    results = _sweep_results(tmp_path)
    md = write_report(results).read_text()
    png = results / "plots" / f"sweep_{KEY}.png"
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert f"![sweep {KEY}](plots/sweep_{KEY}.png)" in md
    rows = _table_rows(md, "Sweeps")
    assert list(rows) == [f"{KEY} (kB)", "64", "256", "1024"]
    assert rows["256"][1:4] == [f"`pmr@{KEY}=256`", "2", "62.0 [60.0, 64.0]"]
    assert f"Optimum: **256 kB** (`pmr@{KEY}=256`)" in md
    assert "(62.0 MB/s)" in md

    ax_t, ax_r = figures[f"sweep_{KEY}.png"].axes
    assert ax_t.get_xscale() == "log" and ax_t.get_xlabel() == f"{KEY} (kB)"
    peak = ax_t.containers[0]  # errorbar container of the peak line
    assert list(peak.lines[0].get_xdata()) == [64, 256, 1024]
    assert list(peak.lines[0].get_ydata()) == pytest.approx([32, 62, 47], rel=1e-3)
    # whiskers span each value's reps
    (whiskers,) = peak.lines[2]
    assert [tuple(seg[:, 1]) for seg in whiskers.get_segments()] == [
        pytest.approx((30, 34), rel=1e-3),
        pytest.approx((60, 64), rel=1e-3),
        pytest.approx((45, 49), rel=1e-3),
    ]
    assert list(ax_r.lines[0].get_ydata()) == pytest.approx([984, 936, 744])


def test_no_sweep_when_schemes_differ_in_more_than_a_value(tmp_path):
    results = _sweep_results(tmp_path)
    campaign = results / "campaign.json"
    # the 1024 kB variant fails in both reps: two values remain, still a sweep
    campaign.write_text(
        campaign.read_text().replace(f'"dir": "runs/pmr@{KEY}=1024-r', '"dir": "gone/r')
    )
    md = write_report(results).read_text()
    assert list(_table_rows(md, "Sweeps")) == [f"{KEY} (kB)", "64", "256"]
    # with a single value left there is no sweep
    campaign.write_text(
        campaign.read_text().replace(f'"dir": "runs/pmr@{KEY}=64-r', '"dir": "gone/r')
    )
    (results / "plots" / f"sweep_{KEY}.png").unlink()
    md = write_report(results).read_text()
    assert "## Sweeps" not in md
    assert not (results / "plots" / f"sweep_{KEY}.png").exists()


def test_kswapd_round_table(tmp_path):
    from fakerun import kswapd_round

    runs = []
    for scheme, wb_ms in (("original", 4), ("pmr", 1)):
        write_run(
            tmp_path / "runs" / f"{scheme}-r1",
            write_sectors=ramp([0, 10, 0]),
            trace=trace_text(
                [
                    writeback_time(1.5, 32, wb_ms * 10**6, 32, 0),
                    kswapd_round(1.505, 6556, 3278, 10 * 10**6),
                ]
            ),
        )
        runs.append({"scheme": scheme, "rep": 1, "status": "ok"})
    write_run(tmp_path / "runs" / "old-r1", write_sectors=ramp([0, 10, 0]))
    runs.append({"scheme": "old", "rep": 1, "status": "ok"})
    md = write_report(
        write_campaign(tmp_path, ["original", "pmr", "old"], runs, reps=1)
    ).read_text()
    rows = _table_rows(md, "kswapd rounds")
    assert set(rows) == {"scheme", "original", "pmr"}  # old's run has no trace
    cells = dict(zip(rows["scheme"], rows["original"]))
    assert cells["shrinking ms"] == "6.00" and cells["writeback ms"] == "4.00"
    assert cells["writeback share"] == "0.40" and cells["reclaimed / goal"] == "0.50"
    assert dict(zip(rows["scheme"], rows["pmr"]))["writeback ms"] == "1.00"


def test_the_heap_fill_table_has_the_schemes_that_measured_it():
    fill = {
        "heap_ms": 600.0,
        "fill_threads": 3.0,
        "fill_wall_ms": 1700.0,
        "fill_user_ms": 400.0,
        "fill_sys_ms": 500.0,
        "fill_runq_ms": 300.0,
        "fill_blocked_ms": 500.0,
        "fill_major_faults": 0.0,
    }
    schemes = {
        "original": {"switch_kinds": {"cold": {"cost": fill}}},
        "old": {"switch_kinds": {"cold": {"cost": {"heap_ms": 600.0}}}},
    }
    table = launch_fill_table(schemes)
    assert table[0].startswith("| scheme | heap ms | threads | threads' wall ms |")
    rows = [line for line in table[2:] if line.startswith("| ")]
    assert rows == ["| original | 600 | 3.00 | 1,700 | 400 | 500 | 300 | 500 | 0.00 |"]
    assert launch_fill_table({"old": schemes["old"]}) == []
