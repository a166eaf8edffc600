"""report.py: report.md and the four plots from a synthetic results directory."""

import dataclasses
import re

import pytest

from fakerun import kill, switch, write_campaign, write_run
from pmr_testbed.metrics import MB
from pmr_testbed.report import PLOT_FILES, bucketed, median_run, size_bucket_kb, write_report
from pmr_testbed.summary import Run, load_campaign, load_runs

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SECTORS_PER_MB = MB // 512


def _ramp(mb_per_s: list[float]) -> list[int]:
    """Cumulative write_sectors at 100-ms samples for the given MB/s per second."""
    cumulative = [0]
    for rate in mb_per_s:
        for _ in range(10):
            cumulative.append(cumulative[-1] + int(rate * SECTORS_PER_MB / 10))
    return cumulative


def _write_results(tmp_path, with_failure: bool = True):
    runs = []
    schemes = {"original": (1.0, 5), "mglru": (0.8, 3), "pmr": (0.5, 1)}
    for scheme, (slowness, n_kills) in schemes.items():
        for rep in (1, 2):
            write_run(tmp_path / "runs" / f"{scheme}-r{rep}",
                      switches=[switch("chrome", "cold", 900 * slowness, 0),
                                switch("youtube", "hot", 300 * slowness + rep, 0),
                                switch("chrome", "hot", 250 * slowness, 1),
                                switch("youtube", "hot", 350 * slowness, 1)],
                      kills=[kill("firefox", "low_swap_and_thrashing")] * (n_kills + rep),
                      vmstat_increments={"allocstall_normal": 100 * n_kills, "pgmajfault": 5000,
                                         "pswpout": 25600 * rep},
                      write_sectors=_ramp([0, 20 / slowness, 35 / slowness, 10, 0]),
                      hist={"4096": 500, "12288": 40, "65536": int(30 / slowness),
                            "524288": int(4 / slowness)},
                      threads_cpu={"kswapd0": 10 * slowness, "kshrinkd0": 1.0})
            runs.append({"scheme": scheme, "rep": rep, "status": "ok"})
    if with_failure:
        runs.append({"scheme": "pmr", "rep": 3, "status": "failed",
                     "error": "guest run exited with status 1; console: x/console.log"})
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
    assert "factor 3.20" in md and "swap_bps_write 400.0 MB/s" in md


def test_report_without_failures_or_baseline_data(tmp_path):
    results = _write_results(tmp_path, with_failure=False)
    # every original run fails, so nothing can be compared
    campaign = results / "campaign.json"
    campaign.write_text(campaign.read_text().replace('"dir": "runs/original-r', '"dir": "gone/r'))
    md = write_report(results).read_text()
    assert "No comparison" in md
    assert "original: no ok runs (2 failed)" in md
    assert len(list((results / "plots").glob("*.png"))) == 5


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
