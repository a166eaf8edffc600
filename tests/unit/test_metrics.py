"""metrics.load_run on synthetic run directories with known answers."""

import os

import pytest

from fakerun import kill, switch, write_run
from pmr_testbed.analysis.metrics import MB, RunError, load_run, thread_family

SECTORS_PER_MB = MB // 512


def test_reclaim_throughput_per_second_windows(tmp_path):
    # 3 s of samples every 100 ms: idle, then 1 MB per sample (10 MB/s), then 2 MB (20 MB/s)
    per_sample = [0] * 10 + [SECTORS_PER_MB] * 10 + [2 * SECTORS_PER_MB] * 10
    cumulative = [0]
    for inc in per_sample:
        cumulative.append(cumulative[-1] + inc)
    m = load_run(write_run(tmp_path / "r", write_sectors=cumulative))
    assert m.reclaim_t_s == [0.0, 1.0, 2.0]
    assert m.reclaim_series_mbps == pytest.approx([0.0, 10.0, 20.0])
    # the idle first second is not part of the mean
    assert m.reclaim_mbps == pytest.approx({"mean": 15.0, "peak": 20.0})


def test_reclaim_throughput_interpolates_unaligned_samples(tmp_path):
    # a steady 8 MB/s sampled irregularly; windows are whole seconds of workload time
    t_ms = [250, 750, 1875, 2250, 3625]  # multiples of 125 ms: whole sectors
    sectors = [t * 8 * SECTORS_PER_MB // 1000 for t in t_ms]
    m = load_run(write_run(tmp_path / "r", write_sectors=sectors, sample_t_ms=t_ms))
    assert m.reclaim_t_s == [1.0, 2.0]
    assert m.reclaim_series_mbps == pytest.approx([8.0, 8.0])


def test_no_swap_writes_gives_no_mean_but_zero_peak(tmp_path):
    m = load_run(write_run(tmp_path / "r", write_sectors=[7] * 21))
    assert m.reclaim_mbps == {"mean": None, "peak": 0.0}


def test_diskstat_of_another_device_is_rejected(tmp_path):
    with pytest.raises(RunError, match="swap device is vdb"):
        load_run(write_run(tmp_path / "r", diskstat_dev="vdc"))


def test_vmstat_deltas_and_allocstall_over_all_zones(tmp_path):
    inc = {
        "allocstall_dma": 1,
        "allocstall_dma32": 5,
        "allocstall_normal": 40,
        "allocstall_movable": 2,
        "pgmajfault": 1234,
        "pswpout": 25600,
        "pswpin": 512,
        "pgscan_kswapd": 90000,
        "pgsteal_kswapd": 30000,
        "pgscan_direct": 800,
        "pgsteal_direct": 300,
        "pgscan_anon": 99999,
    }
    m = load_run(write_run(tmp_path / "r", vmstat_increments=inc))
    assert m.allocstall == 48
    assert m.pgmajfault == 1234
    assert m.pswpout_mb == pytest.approx(100.0)
    assert m.pswpin_mb == pytest.approx(2.0)
    assert (m.pgscan_kswapd, m.pgsteal_kswapd) == (90000, 30000)
    assert (m.pgscan_direct, m.pgsteal_direct) == (800, 300)


def test_anon_growth_peak_is_the_fastest_second_of_nr_anon_pages(tmp_path):
    # 100 MB of anon over the 3 s of samples: 33.3 MB/s in each window
    m = load_run(
        write_run(
            tmp_path / "r",
            vmstat_increments={"nr_anon_pages": 25600},
            extra_vmstat_keys=["nr_anon_pages"],
        )
    )
    assert m.anon_growth_peak_mbps == pytest.approx(100 / 3, rel=0.01)
    assert load_run(write_run(tmp_path / "old")).anon_growth_peak_mbps is None


def test_swap_writes_per_anon_page_reclaimed(tmp_path):
    m = load_run(
        write_run(tmp_path / "r", vmstat_increments={"pswpout": 21000, "pgsteal_anon": 10000})
    )
    assert m.swap_writes_per_anon_freed == pytest.approx(2.1)
    none = load_run(write_run(tmp_path / "none", vmstat_increments={"pswpout": 5}))
    assert none.swap_writes_per_anon_freed is None


def test_switches_kills_and_launch_kinds(tmp_path):
    switches = [
        switch("chrome", "cold", 1000.0, 0),
        switch("youtube", "hot", 200.0, 0),
        switch("chrome", "hot", 400.0, 1),
        switch("youtube", "cold", 600.0, 1),
        switch("chrome", "hot", 300.0, 2),
    ]
    kills = [
        kill("firefox", "low_swap_and_thrashing"),
        kill("whatsapp", "critical_pressure"),
        kill("opera", "low_swap_and_thrashing"),
    ]
    m = load_run(write_run(tmp_path / "r", switches=switches, kills=kills))
    assert [s["response_ms"] for s in m.switches] == [1000.0, 200.0, 400.0, 600.0, 300.0]
    assert m.switches[3] == {"app": "youtube", "kind": "cold", "response_ms": 600.0, "round": 1}
    assert m.response_ms == pytest.approx({"mean": 500.0, "p50": 400.0, "p95": 920.0})
    assert m.response_by_app == pytest.approx({"chrome": 566.6667, "youtube": 400.0})
    assert (m.cold_launches, m.hot_launches) == (2, 3)
    assert m.kills == 3
    assert m.kills_by_reason == {"low_swap_and_thrashing": 2, "critical_pressure": 1}


def test_switch_kinds_split_response_and_count_hot_swapins(tmp_path):
    # samples every 100 ms over 3 s, pswpin rising 1 page per ms, file refaults 2 per ms
    switches = [
        switch("chrome", "cold", 900.0, 0, t_ms=1000),
        switch("youtube", "hot", 400.0, 0, t_ms=2000),
        switch("chrome", "hot", 200.0, 1, t_ms=2900),
    ]
    m = load_run(
        write_run(
            tmp_path / "r",
            switches=switches,
            vmstat_increments={"pswpin": 3000, "workingset_refault_file": 6000},
        )
    )
    # a runtime that measured no launch: no costs
    assert m.switch_kinds["cold"].pop("cost") == m.switch_kinds["hot"].pop("cost") == {}
    assert m.switch_kinds["cold"] == pytest.approx({"switches": 1, "mean_ms": 900.0, "share": 0.6})
    assert m.switch_kinds["hot"] == pytest.approx(
        {
            "switches": 2,
            "mean_ms": 300.0,
            "share": 0.4,
            "swapin_pages": 600,
            "file_refault_pages": 1200,
        }
    )


def test_switch_kinds_without_hot_switches(tmp_path):
    m = load_run(write_run(tmp_path / "r", switches=[switch("chrome", "cold", 500.0)]))
    assert m.switch_kinds["hot"] == {
        "switches": 0,
        "mean_ms": None,
        "share": 0.0,
        "swapin_pages": 0,
        "file_refault_pages": 0,
        "cost": {},
    }


def test_launch_costs_are_averaged_per_kind_with_the_blocked_rest(tmp_path):
    def cost(wall, user, sys, runq, heap):
        return {
            "wall_ms": wall,
            "user_ms": user,
            "sys_ms": sys,
            "runq_ms": runq,
            "heap_ms": heap,
            "major_faults": 2.0,
        }

    hot = [switch("chrome", "hot", 101.0, 0, t_ms=1000), switch("chrome", "hot", 51.0, 1)]
    hot[0]["cost"] = cost(100.0, 10.0, 30.0, 20.0, 90.0)  # blocked 40
    hot[1]["cost"] = cost(50.0, 5.0, 15.0, 0.0, 45.0)  # blocked 30
    old = switch("youtube", "cold", 900.0, 2)  # a runtime before costs: left out
    m = load_run(write_run(tmp_path / "r", switches=[*hot, old]))
    assert m.switch_kinds["hot"]["cost"] == pytest.approx(
        {
            "wall_ms": 75.0,
            "user_ms": 7.5,
            "sys_ms": 22.5,
            "runq_ms": 10.0,
            "heap_ms": 67.5,
            "major_faults": 2.0,
            "blocked_ms": 35.0,
            "outside_ms": 1.0,
        }
    )
    assert m.switch_kinds["cold"]["cost"] == {}


def test_a_cold_launchs_heap_fill_threads_get_their_blocked_rest(tmp_path):
    def cost(thread_ms, user, sys, runq):
        return {
            "wall_ms": 500.0,
            "heap_ms": 300.0,
            "fill_threads": 3.0,
            "fill_wall_ms": thread_ms,
            "fill_user_ms": user,
            "fill_sys_ms": sys,
            "fill_runq_ms": runq,
        }

    cold = [switch("chrome", "cold", 510.0, 0), switch("youtube", "cold", 510.0, 1)]
    cold[0]["cost"] = cost(900.0, 300.0, 200.0, 100.0)  # blocked 300
    cold[1]["cost"] = cost(600.0, 300.0, 200.0, 0.0)  # blocked 100
    # a runtime without the fill's run-queue figure: no blocked rest from it
    partial = switch("twitter", "cold", 510.0, 2)
    partial["cost"] = {k: v for k, v in cost(0.0, 0.0, 0.0, 0.0).items() if k != "fill_runq_ms"}
    m = load_run(write_run(tmp_path / "r", switches=[*cold, partial]))
    c = m.switch_kinds["cold"]["cost"]
    assert c["fill_blocked_ms"] == pytest.approx(200.0)
    assert c["fill_runq_ms"] == pytest.approx(50.0)
    assert c["fill_threads"] == pytest.approx(3.0)


@pytest.mark.parametrize(
    "name, family",
    [
        ("kswapd0", "kswapd"),
        ("kswapd12", "kswapd"),
        ("kshrinkd0", "kshrinkd"),
        ("pmr_unmap/1", "pmr_unmap"),
        ("pmr_unmap", "pmr_unmap"),
    ],
)
def test_thread_family(name, family):
    assert thread_family(name) == family


def test_reclaim_cpu_summed_by_family(tmp_path):
    threads = {
        "kswapd0": 10.5,
        "kswapd1": 2.25,
        "kshrinkd0": 3.0,
        "kshrinkd1": 1.0,
        "pmr_unmap": 0.5,
    }
    m = load_run(write_run(tmp_path / "r", threads_cpu=threads))
    assert m.reclaim_cpu_s == pytest.approx({"kshrinkd": 4.0, "kswapd": 12.75, "pmr_unmap": 0.5})
    assert m.reclaim_cpu_total == pytest.approx(17.25)


def test_memory_stall_from_psi_totals(tmp_path):
    # fakerun's psi.csv: some_total_us = 20 x t_ms, full_total_us = 5 x t_ms, over 3 s
    m = load_run(write_run(tmp_path / "r"))
    assert m.memory_stall_s == pytest.approx({"some": 0.06, "full": 0.015})


def test_reclaim_cpu_per_page_freed(tmp_path):
    m = load_run(
        write_run(
            tmp_path / "r",
            threads_cpu={"kswapd0": 3.0, "kshrinkd0": 1.0},
            vmstat_increments={"pgsteal_kswapd": 150_000, "pgsteal_direct": 50_000},
        )
    )
    assert m.reclaim_cpu_us_per_page == pytest.approx(4.0 * 1e6 / 200_000)
    nothing_freed = load_run(write_run(tmp_path / "s", threads_cpu={"kswapd0": 3.0}))
    assert nothing_freed.reclaim_cpu_us_per_page is None


def test_swap_write_hist_mean_is_request_weighted(tmp_path):
    m = load_run(write_run(tmp_path / "r", hist={"4096": 30, "8192": 10, "1048576": 2}))
    assert m.swap_write_kb["hist"] == {"4": 30, "8": 10, "1024": 2}
    assert m.swap_write_kb["mean"] == pytest.approx((4 * 30 + 8 * 10 + 1024 * 2) / 42)


def test_missing_optional_files_are_none_not_zero(tmp_path):
    m = load_run(write_run(tmp_path / "r", omit=("threads_cpu.json", "swap_write_hist.json")))
    assert m.reclaim_cpu_s is None
    assert m.reclaim_cpu_total is None
    assert m.reclaim_cpu_us_per_page is None
    assert m.swap_write_kb is None
    assert m.missing == ["threads_cpu.json", "swap_write_hist.json"]


def test_failed_run_is_never_a_result(tmp_path):
    with pytest.raises(RunError, match="status 'failed': app chrome hung"):
        load_run(write_run(tmp_path / "r", status="failed"))


def test_missing_run_json_is_an_error(tmp_path):
    with pytest.raises(RunError, match=r"run\.json is missing"):
        load_run(write_run(tmp_path / "r", omit=("run.json",)))


def test_missing_required_file_is_an_error(tmp_path):
    with pytest.raises(RunError, match=r"vmstat\.csv is missing"):
        load_run(write_run(tmp_path / "r", omit=("vmstat.csv",)))


def test_pmr_figures_only_on_a_pmr_kernel(tmp_path):
    from pmr_testbed.analysis.metrics import pmr_figures, read_table, victim_series
    from pmr_testbed.analysis.trace import parse_trace

    plain = tmp_path / "plain.csv"
    plain.write_text("t_ms,pswpout\n0,1\n100,2\n")
    assert pmr_figures(read_table(plain), None) is None
    pmr = tmp_path / "pmr.csv"
    pmr.write_text(
        "t_ms,nr_victim,pmr_victim_added,pmr_victim_reclaimed,kshrinkd_wake\n"
        "0,256,1000,0,1\n100,512,1500,200,3\n200,0,1500,700,4\n"
    )
    fig = pmr_figures(read_table(pmr), None)
    assert fig["pmr_victim_added"] == 500 and fig["pmr_victim_reclaimed"] == 700
    assert fig["kshrinkd_wake"] == 3 and "pmr_victim_putback" not in fig
    assert fig["nr_victim_mb"] == {"mean": 1.0, "min": 0.0, "max": 2.0, "last": 0.0}
    assert fig["target_mb"] is None and fig["kshrinkd_rounds"] == 0
    assert fig["kshrinkd_fill"] is None
    trace = parse_trace(
        "# start_mono_s=0\n k-1 [000] ..... 1.0: mm_vmscan_kshrinkd_round: "
        "nid=0 nr_to_shrink=1 nr_scanned=2 nr_added=1 nr_victim=1 target=768\n"
    )
    fig = pmr_figures(read_table(pmr), trace)
    assert fig["target_mb"] == 3.0 and fig["kshrinkd_rounds"] == 1
    assert fig["kshrinkd_fill"] == {"median": 1.0, "max": 1.0}
    assert victim_series(read_table(pmr)) == ([0.0, 0.1, 0.2], [1.0, 2.0, 0.0])
    assert victim_series(read_table(plain)) == ([], [])


def test_victim_lists_of_both_types_add_up(tmp_path):
    """One list per type since v1's patch 26 of the series; runs of the kernels
    before it (one list, nr_victim) read as they did."""
    from pmr_testbed.analysis.metrics import pmr_figures, read_table, victim_pages

    split = tmp_path / "split.csv"
    split.write_text(
        "t_ms,nr_victim_anon,nr_victim_file,pmr_victim_added\n0,200,56,1000\n100,0,512,1500\n"
    )
    assert victim_pages(read_table(split)) == [256, 512]
    assert pmr_figures(read_table(split), None)["nr_victim_mb"]["max"] == 2.0
    one = tmp_path / "one.csv"
    one.write_text("t_ms,nr_victim,nr_victim_file\n0,256,56\n100,0,0\n")
    assert victim_pages(read_table(one)) == [256, 0]
    half = tmp_path / "half.csv"
    half.write_text("t_ms,nr_victim_file\n0,56\n100,0\n")
    assert victim_pages(read_table(half)) is None
    assert pmr_figures(read_table(half), None) is None


def test_writeback_and_bulk_figures_of_a_pmr_run(tmp_path):
    from fakerun import PMR_VMSTAT_KEYS, pmr_batch, trace_text, writeback_time

    trace = trace_text(
        [
            writeback_time(1.0, 32, 64_000, 32, 320_000),
            writeback_time(1.2, 16, 160_000, 16, 80_000),
            pmr_batch(1.4, 256, 256, 250, 1_024_000, 2_500_000),
        ]
    )
    inc = {
        "pmr_batch": 7,
        "pmr_batch_pages": 700,
        "pmr_batch_pageout": 650,
        "pmr_victim_added": 4000,
    }
    m = load_run(
        write_run(
            tmp_path / "r", extra_vmstat_keys=PMR_VMSTAT_KEYS, vmstat_increments=inc, trace=trace
        )
    )
    # 48 pages: no full 1-MB window to plot; every page weighted once
    assert m.unmap_us_samples == []
    assert m.writeback["unmap_us_per_page_mean"] == pytest.approx(224 / 48)
    assert m.writeback["unmap_us_per_page"]["p50"] == pytest.approx(6.0)
    assert m.writeback["pageout_us_per_page"]["p50"] == pytest.approx(7.5)
    assert m.writeback["unmap_share"] == pytest.approx(224 / 624)
    # the trace's batch, not the counters
    assert m.bulk["batches"] == 1 and m.bulk["pageout_pages"] == 250
    assert m.bulk["first_pass_us_per_page_p50"] == pytest.approx(4.0)
    # the counters themselves are PMR figures, like pmr_victim_added
    assert m.pmr["pmr_batch"] == 7 and "pmr_batch_unmap_us" not in m.pmr
    assert m.pmr["pmr_victim_added"] == 4000


def test_untraced_pmr_run_takes_bulk_figures_from_vmstat(tmp_path):
    from fakerun import PMR_VMSTAT_KEYS

    inc = {
        "pmr_batch": 8,
        "pmr_batch_pages": 1024,
        "pmr_batch_pageout": 1000,
    }
    m = load_run(
        write_run(tmp_path / "r", extra_vmstat_keys=PMR_VMSTAT_KEYS, vmstat_increments=inc)
    )
    assert m.writeback is None and m.unmap_us_samples == []
    assert m.bulk == {
        "batches": 8,
        "pages_per_batch_mean": 128.0,
        "pageout_pages": 1000,
        "first_pass_us_per_page_p50": None,
        "first_pass_us_per_page_mean": None,
    }


def test_kernel_without_part2_has_no_writeback_figures(tmp_path):
    from fakerun import trace_text

    trace = trace_text(
        [],
        missing=(
            "vmscan/mm_vmscan_kshrinkd_round",
            "vmscan/mm_vmscan_writeback_time",
            "vmscan/mm_vmscan_pmr_batch",
        ),
    )
    m = load_run(write_run(tmp_path / "r", trace=trace))
    assert (m.writeback, m.bulk, m.pmr) == (None, None, None)
    assert m.unmap_us_samples == []


def test_the_workload_start_is_placed_on_the_host_clock_by_the_events_file(tmp_path):
    from pmr_testbed.analysis.metrics import workload_start_unix

    said = 1735689600.0  # 2025-01-01T00:00:00Z
    run = {"started_at": "2025-01-01T00:00:00Z"}
    events = [{"t_ms": 10, "type": "phase"}, {"t_ms": 400_000, "type": "phase"}]
    path = tmp_path / "events.jsonl"
    path.write_text("")
    os.utime(path, (said + 401.2, said + 401.2))  # the guest's clock 1.2 s early
    assert workload_start_unix(tmp_path, run, events) == pytest.approx(said + 1.2)
    os.utime(path, (said + 900, said + 900))  # copied later: not the host's time of it
    assert workload_start_unix(tmp_path, run, events) == said
    assert workload_start_unix(tmp_path / "gone", run, events) == said
