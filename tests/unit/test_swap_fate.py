"""swap_fate.py: what became of the pages a run wrote to swap."""

import pytest

from fakerun import PMR_VMSTAT_KEYS, write_run
from pmr_testbed.analysis.metrics import load_run, read_table
from pmr_testbed.analysis.swap_fate import PAGE_MB, swap_fate


def test_writes_split_into_freed_cached_and_dropped(tmp_path):
    # 10,000 pages written, 7,000 freed by reclaim, 1,000 more in the swap
    # cache at the end than at the start: 2,000 dropped
    fate = load_run(
        write_run(
            tmp_path / "r",
            vmstat_increments={"pswpout": 10_000, "pgsteal_anon": 7_000, "nr_swapcached": 1_000},
        )
    ).swap_fate
    assert fate["written_mb"] == pytest.approx(10_000 * PAGE_MB)
    assert fate["anon_freed_mb"] == pytest.approx(7_000 * PAGE_MB)
    assert fate["written_not_freed_mb"] == pytest.approx(3_000 * PAGE_MB)
    assert fate["swap_cache_end_mb"] == pytest.approx(1_000 * PAGE_MB)
    assert fate["dropped_mb"] == pytest.approx(2_000 * PAGE_MB)


def test_clean_pages_freed_again_make_the_net_negative(tmp_path):
    fate = load_run(
        write_run(tmp_path / "r", vmstat_increments={"pswpout": 1_000, "pgsteal_anon": 1_500})
    ).swap_fate
    assert fate["written_not_freed_mb"] == pytest.approx(-500 * PAGE_MB)


def test_no_swap_cache_counter_no_figures(tmp_path):
    header, rows = read_table(write_run(tmp_path / "r") / "vmstat.csv")
    i = header.index("nr_swapcached")
    stripped = (
        [k for k in header if k != "nr_swapcached"],
        [[v for j, v in enumerate(r) if j != i] for r in rows],
    )
    assert swap_fate(stripped) is None


def test_patch_27_counters_reach_the_pmr_figures(tmp_path):
    m = load_run(
        write_run(
            tmp_path / "r",
            extra_vmstat_keys=PMR_VMSTAT_KEYS,
            vmstat_increments={"pmr_victim_swapin": 40, "pmr_victim_freed": 300},
        )
    )
    assert m.pmr["pmr_victim_swapin"] == 40
    assert m.pmr["pmr_victim_freed"] == 300
