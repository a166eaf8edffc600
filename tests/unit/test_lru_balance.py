"""lru_balance.py: how reclaim balanced the LRU lists over a run."""

import pytest

from fakerun import PMR_VMSTAT_KEYS, write_run
from pmr_testbed.analysis.lru_balance import PAGE_MB, lru_balance
from pmr_testbed.analysis.metrics import load_run, read_table


def test_refaults_activated_share_and_deactivations(tmp_path):
    m = load_run(
        write_run(
            tmp_path / "r",
            vmstat_increments={
                "workingset_refault_file": 4000,
                "workingset_activate_file": 1000,
                "pgdeactivate": 2500,
            },
        )
    )
    b = m.lru_balance
    assert b["file_refaults"] == 4000
    assert b["file_activated_share"] == pytest.approx(0.25)
    assert b["pgdeactivate"] == 2500


def test_list_sizes_are_means_over_the_samples_in_mb(tmp_path):
    # nr_active_file rises linearly by 3000 pages: its mean is the start + 1500
    run = write_run(tmp_path / "r", vmstat_increments={"nr_active_file": 3000})
    header, rows = read_table(run / "vmstat.csv")
    start = int(rows[0][header.index("nr_active_file")])
    b = lru_balance((header, rows))
    assert b["active_file_mb"] == pytest.approx((start + 1500) * PAGE_MB, rel=1e-3)
    assert b["inactive_file_mb"] == pytest.approx(
        int(rows[0][header.index("nr_inactive_file")]) * PAGE_MB
    )


def test_file_victims_only_on_a_kernel_that_counts_them(tmp_path):
    plain = load_run(write_run(tmp_path / "a")).lru_balance
    assert plain["victim_file_mb"] is None
    counted = load_run(write_run(tmp_path / "b", extra_vmstat_keys=PMR_VMSTAT_KEYS)).lru_balance
    assert counted["victim_file_mb"] is not None and counted["victim_file_mb"] > 0


def test_no_refaults_no_share_and_no_counters_no_figures(tmp_path):
    assert load_run(write_run(tmp_path / "r")).lru_balance["file_activated_share"] is None
    header, rows = read_table(write_run(tmp_path / "s") / "vmstat.csv")
    i = header.index("pgdeactivate")
    assert (
        lru_balance(
            (
                [h for j, h in enumerate(header) if j != i],
                [[v for j, v in enumerate(r) if j != i] for r in rows],
            )
        )
        is None
    )
