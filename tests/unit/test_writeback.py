"""writeback.py: per-page unmap and pageout times, and PMR's bulk batches."""

import pytest

from fakerun import pmr_batch, trace_text, writeback_time
from pmr_testbed.analysis.trace import parse_trace
from pmr_testbed.analysis.writeback import (
    BULK_COUNTERS,
    UNMAP_WINDOW_PAGES,
    bulk_figures,
    unmap_us_per_page,
    unmap_window_us_per_page,
    writeback_figures,
)

# four shrink_folio_list() calls: unmap 2, 10 and 4 µs/page (the third unmapped
# nothing), pageout 10, 5 and 20 µs/page (the second paged out nothing)
CALLS = [
    writeback_time(1.0, 32, 64_000, 30, 300_000),
    writeback_time(1.5, 10, 100_000, 0, 0, task="app-chrome-1", pid=2345, cpu=1),
    writeback_time(2.0, 0, 0, 8, 40_000),
    writeback_time(2.5, 4, 16_000, 4, 80_000),
]
# three bulk batches: first pass 2, 10 and 2 µs per page taken
BATCHES = [
    pmr_batch(3.0, 256, 250, 250, 512_000, 2_000_000),
    pmr_batch(3.5, 128, 128, 120, 1_280_000, 1_000_000),
    pmr_batch(4.0, 64, 60, 60, 128_000, 500_000),
]


def _vmstat(**deltas):
    """A vmstat table whose PMR part-2 counters rise by `deltas` (as vmstat.csv reads)."""
    header = ["t_ms", "pswpout", *deltas]
    return header, [
        ["0", "5", *("100" for _ in deltas)],
        ["100", "9", *(str(100 + d) for d in deltas.values())],
    ]


NO_PART2 = (["t_ms", "pswpout", "nr_victim"], [["0", "1", "0"], ["100", "2", "0"]])


def test_writeback_times_weigh_each_call_once():
    wb = writeback_figures(parse_trace(trace_text(CALLS)))
    # per call, not per page: 32 pages at 2 µs would make a page-weighted median 2
    assert wb["unmap_us_per_page"] == pytest.approx({"p5": 2.2, "p50": 4.0, "p95": 9.4})
    assert wb["pageout_us_per_page"] == pytest.approx({"p50": 10.0, "p95": 19.0})
    assert wb["unmap_s"] == pytest.approx(180e-6)
    assert wb["pageout_s"] == pytest.approx(420e-6)
    assert wb["unmap_share"] == pytest.approx(0.3)
    assert unmap_us_per_page(parse_trace(trace_text(CALLS))) == pytest.approx([2.0, 10.0, 4.0])
    # every page once: 180 µs over 46 pages
    assert wb["unmap_us_per_page_mean"] == pytest.approx(180 / 46)
    # 46 pages, no full 1-MB window
    assert wb["unmap_window_us_per_page"] == {"p50": None, "p90": None, "p99": None}


def test_unmap_windows_put_calls_and_batches_on_the_same_granularity():
    """Eight kswapd calls of 32 folios, one of them stalled, make one window,
    as one batch of 256 pages does; an app's direct reclaim is left out, and
    so is the last, partial window."""
    assert UNMAP_WINDOW_PAGES == 256
    calls = [
        writeback_time(1.0 + i / 10, 32, 32_000 if i else 32_000 + 1_024_000, 32, 0)
        for i in range(8)
    ]
    direct = writeback_time(2.0, 32, 9_999_000, 0, 0, task="app-chrome-1", pid=2345)
    batch = writeback_time(3.0, 256, 256_000 + 1_024_000, 0, 0)
    partial = writeback_time(4.0, 100, 100_000, 0, 0)
    trace = parse_trace(trace_text([*calls, direct, batch, partial]))
    # 1 µs/page with a 1,024-µs stall in each window: 5 µs/page for both
    assert unmap_window_us_per_page(trace) == pytest.approx([5.0, 5.0])
    # per event the stalled call is an outlier (33 µs/page), the batch is not
    per_event = unmap_us_per_page(trace)
    assert per_event[0] == pytest.approx(33.0) and per_event[9] == pytest.approx(5.0)
    assert unmap_window_us_per_page(None) == []


def test_writeback_without_events_is_none():
    assert writeback_figures(None) is None
    missing = trace_text([], missing=("vmscan/mm_vmscan_writeback_time",))
    assert writeback_figures(parse_trace(missing)) is None
    assert unmap_us_per_page(None) == []


def test_writeback_that_only_paged_out_has_no_unmap_percentiles():
    wb = writeback_figures(parse_trace(trace_text([writeback_time(1.0, 0, 0, 8, 40_000)])))
    assert wb["unmap_us_per_page"] == {"p5": None, "p50": None, "p95": None}
    assert wb["pageout_us_per_page"] == pytest.approx({"p50": 5.0, "p95": 5.0})
    assert wb["unmap_share"] == 0.0


def test_bulk_from_batch_events_before_counters():
    vmstat = _vmstat(pmr_batch=99, pmr_batch_pages=99, pmr_batch_pageout=99)
    bulk = bulk_figures(parse_trace(trace_text(CALLS + BATCHES)), vmstat)
    assert bulk == pytest.approx(
        {
            "batches": 3,
            "pages_per_batch_mean": 448 / 3,
            "pageout_pages": 430,
            "first_pass_us_per_page_p50": 2.0,
            "first_pass_us_per_page_mean": 1920 / 448,
        }
    )


def test_bulk_falls_back_to_vmstat_counters_without_batch_events():
    vmstat = _vmstat(pmr_batch=10, pmr_batch_pages=2560, pmr_batch_pageout=2500)
    expected = {
        "batches": 10,
        "pages_per_batch_mean": 256.0,
        "pageout_pages": 2500,
        "first_pass_us_per_page_p50": None,
        "first_pass_us_per_page_mean": None,
    }
    assert bulk_figures(None, vmstat) == expected
    untraced = parse_trace(trace_text(CALLS, missing=("vmscan/mm_vmscan_pmr_batch",)))
    assert bulk_figures(untraced, vmstat) == expected


def test_bulk_is_zero_outside_mode_2_and_none_without_part2():
    idle = _vmstat(**dict.fromkeys(BULK_COUNTERS, 0))
    assert bulk_figures(parse_trace(trace_text(CALLS)), idle) == {
        "batches": 0,
        "pages_per_batch_mean": None,
        "pageout_pages": 0,
        "first_pass_us_per_page_p50": None,
        "first_pass_us_per_page_mean": None,
    }
    assert bulk_figures(None, NO_PART2) is None
    missing = trace_text(
        [], missing=("vmscan/mm_vmscan_writeback_time", "vmscan/mm_vmscan_pmr_batch")
    )
    assert bulk_figures(parse_trace(missing), NO_PART2) is None
