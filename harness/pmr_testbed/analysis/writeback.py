"""Per-run writeback figures: what reclaim's unmapping and pageout cost.

Two sources, both from PMR part 2 (storage-friendly writeback, pmr/enabled=2):

- `vmscan:mm_vmscan_writeback_time` (trace.txt), in every scheme on a kernel
  with the series: one event per shrink_folio_list() call that unmapped or
  paged out anything, `nr_unmap` pages whose unmapping was tried and
  `unmap_ns` spent in try_to_unmap() and TLB flushes, `nr_pageout` pages
  paged out and `pageout_ns` spent in pageout(). Under pmr/enabled=2 (patch
  10) the owner-by-owner unmapping between a bulk batch's two passes adds
  one event of its own per batch (`nr_unmap` folios tried, `unmap_ns` with
  the rmap locking and the TLB flush, no pageout). `writeback_figures` turns
  them into per-page times; the paper's Fig. 7 point is that the original
  path's per-page unmap time is high and unstable.
- `vmscan:mm_vmscan_pmr_batch` (trace.txt), one event per bulk batch
  (`nr_pages` taken, `nr_unmapped`, `nr_pageout`, `unmap_ns`, `pageout_ns`),
  and the cumulative /proc/vmstat counters `pmr_batch`, `pmr_batch_pages`,
  `pmr_batch_pageout`: `bulk_figures`. The counters carry no time (kernels
  before the v2 series also counted `pmr_batch_unmap_us`; it is not read).
  Despite its name, a batch's `unmap_ns` is the time of the batch's whole
  first pass: the page checks (the reference rmap walk
  included), swap slot allocation, unmapping and the TLB flush. Divided by
  the pages taken it is a first-pass time per page, not comparable with
  writeback_time's unmap time per page.

Per-page times are in microseconds. A distribution over events weighs every
event once (one shrink_folio_list() call or one batch is one sample, whatever
its page count), not every page. Such distributions cannot be compared across
schemes whose events differ in size: a bulk batch of 400 pages averages
over the stalls that make a call of 32 folios an outlier. So the spread of
unmap time is also taken over windows of kswapd's unmapping: its events, in
trace order, summed until they reach UNMAP_WINDOW_PAGES (1 MB) tried, each
window one sample of its unmap time per page, whatever the scheme
(`unmap_window_us_per_page`); a batch of at least that size is one window.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .trace import Trace

if TYPE_CHECKING:  # metrics imports this module
    from ..tables import Table

WRITEBACK_EVENT = "mm_vmscan_writeback_time"
BATCH_EVENT = "mm_vmscan_pmr_batch"
BULK_COUNTERS = ("pmr_batch", "pmr_batch_pages", "pmr_batch_pageout")
UNMAP_WINDOW_PAGES = 256  # 1 MB of 4 kB pages


def _percentiles(values: list[float], which: tuple[int, ...]) -> dict[str, float | None]:
    """{"p50": ..., ...} with linear interpolation; None for no values."""
    if not values:
        return {f"p{q}": None for q in which}
    arr = np.asarray(values, dtype=float)
    return {f"p{q}": float(np.percentile(arr, q)) for q in which}


def unmap_us_per_page(trace: Trace | None) -> list[float]:
    """Per-page unmap time of each writeback_time event that tried to unmap
    pages (unmap_ns / nr_unmap / 1000), in trace order: the distribution the
    report plots."""
    if trace is None:
        return []
    return [
        int(e.fields["unmap_ns"]) / int(e.fields["nr_unmap"]) / 1000
        for e in trace.named(WRITEBACK_EVENT)
        if int(e.fields["nr_unmap"]) > 0
    ]


def unmap_window_us_per_page(trace: Trace | None) -> list[float]:
    """kswapd's unmap time per page over windows of at least
    UNMAP_WINDOW_PAGES pages tried: its writeback_time events in trace order,
    summed until a window is full; the last, partial window is left out."""
    if trace is None:
        return []
    windows, pages, ns = [], 0, 0
    for e in trace.named(WRITEBACK_EVENT):
        if not e.task.startswith("kswapd") or int(e.fields["nr_unmap"]) <= 0:
            continue
        pages += int(e.fields["nr_unmap"])
        ns += int(e.fields["unmap_ns"])
        if pages >= UNMAP_WINDOW_PAGES:
            windows.append(ns / pages / 1000)
            pages = ns = 0
    return windows


def writeback_figures(trace: Trace | None) -> dict | None:
    """Unmap and pageout cost over the run, from the writeback_time events.

    `unmap_us_per_page` (p5, p50, p95) over the events with nr_unmap > 0 and
    `pageout_us_per_page` (p50, p95) over those with nr_pageout > 0, each
    event weighted once; `unmap_us_per_page_mean`, every page weighted once
    (all unmap time over all pages tried); `unmap_window_us_per_page` (p50,
    p90, p99) over kswapd's 1-MB windows (None without a full window);
    `unmap_s` and `pageout_s` the total time; `unmap_share`
    = unmap_s / (unmap_s + pageout_s), None when both are 0. None when the run
    has no such events (a kernel without the series, no trace, or no reclaim)."""
    events = trace.named(WRITEBACK_EVENT) if trace else []
    if not events:
        return None
    pageout = [
        int(e.fields["pageout_ns"]) / int(e.fields["nr_pageout"]) / 1000
        for e in events
        if int(e.fields["nr_pageout"]) > 0
    ]
    unmap_s = sum(int(e.fields["unmap_ns"]) for e in events) / 1e9
    pageout_s = sum(int(e.fields["pageout_ns"]) for e in events) / 1e9
    tried = sum(int(e.fields["nr_unmap"]) for e in events)
    total = unmap_s + pageout_s
    return {
        "unmap_us_per_page": _percentiles(unmap_us_per_page(trace), (5, 50, 95)),
        "unmap_us_per_page_mean": unmap_s * 1e6 / tried if tried else None,
        "unmap_window_us_per_page": _percentiles(unmap_window_us_per_page(trace), (50, 90, 99)),
        "pageout_us_per_page": _percentiles(pageout, (50, 95)),
        "unmap_s": unmap_s,
        "pageout_s": pageout_s,
        "unmap_share": unmap_s / total if total else None,
    }


def _bulk_from_trace(batches: list) -> dict:
    pages = sum(int(e.fields["nr_pages"]) for e in batches)
    unmap_ns = sum(int(e.fields["unmap_ns"]) for e in batches)
    # unmap_ns is the whole first pass (checks, rmap walk, swap slots,
    # unmapping, TLB flush), nr_pages the pages taken
    per_page = [
        int(e.fields["unmap_ns"]) / int(e.fields["nr_pages"]) / 1000
        for e in batches
        if int(e.fields["nr_pages"]) > 0
    ]
    return {
        "batches": len(batches),
        "pages_per_batch_mean": pages / len(batches),
        "pageout_pages": sum(int(e.fields["nr_pageout"]) for e in batches),
        "first_pass_us_per_page_p50": _percentiles(per_page, (50,))["p50"],
        "first_pass_us_per_page_mean": unmap_ns / pages / 1000 if pages else None,
    }


def _bulk_from_vmstat(vmstat: Table) -> dict | None:
    header, rows = vmstat
    if not set(BULK_COUNTERS) <= set(header):
        return None
    col = {k: header.index(k) for k in BULK_COUNTERS}
    d = {k: int(rows[-1][col[k]]) - int(rows[0][col[k]]) for k in BULK_COUNTERS}
    batches, pages = d["pmr_batch"], d["pmr_batch_pages"]
    return {
        "batches": batches,
        "pages_per_batch_mean": pages / batches if batches else None,
        "pageout_pages": d["pmr_batch_pageout"],
        "first_pass_us_per_page_p50": None,
        "first_pass_us_per_page_mean": None,
    }


def bulk_figures(trace: Trace | None, vmstat: Table) -> dict | None:
    """PMR's bulk batches over the run: count, mean pages taken per batch,
    pages paged out, and the first-pass time per page taken (unmap_ns /
    nr_pages, where unmap_ns covers the batch's whole first pass: page
    checks with the reference rmap walk, swap slot allocation, unmapping,
    TLB flush; not an unmap time, so not comparable with
    `writeback_figures`' unmap_us_per_page): its median over batches (each
    weighted once) and its page-weighted mean.

    From the pmr_batch events when the trace has any; otherwise from the
    vmstat counters' deltas (no times then: the counters carry none);
    None when the kernel has neither (without PMR part 2). A PMR kernel not
    in mode 2 gives 0 batches."""
    batches = trace.named(BATCH_EVENT) if trace else []
    return _bulk_from_trace(batches) if batches else _bulk_from_vmstat(vmstat)
