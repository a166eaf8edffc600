"""perf in the guest: the command that wraps the workload and the per-thread
profile made from `perf script` output."""

import subprocess
from pathlib import Path

import pytest

from pmr_testbed.errors import UserError
from pmr_testbed.guest import kernel_profile

# `perf script -F comm,tid,ip,sym`: one block per sample, innermost first.
SCRIPT = """\
kshrinkd0    40 
\tffffffffab001 page_vma_mapped_walk
\tffffffffab002 folio_referenced
\tffffffffab003 kshrinkd
\tffffffffab004 kthread

kshrinkd0    40 
\tffffffffab005 folio_referenced
\tffffffffab003 kshrinkd
\tffffffffab004 kthread

kswapd0    39 
\tffffffffab006 read_hpet
\tffffffffab007 ktime_get
\tffffffffab008 shrink_folio_list
\tffffffffab009 kswapd

kswapd0    39 
\tffffffffab012 rmap_walk_anon
\tffffffffab002 folio_referenced
\tffffffffab008 shrink_folio_list
\tffffffffab013 take_victims
\tffffffffab009 kswapd

kswapd0    39 
\tffffffffab014 try_to_unmap_one
\tffffffffab015 try_to_unmap
\tffffffffab008 shrink_folio_list
\tffffffffab013 take_victims
\tffffffffab009 kswapd

kswapd0    39 
\tffffffffab002 folio_referenced
\tffffffffab008 shrink_folio_list
\tffffffffab016 shrink_lruvec
\tffffffffab009 kswapd

kshrinkd0    40 
\tffffffffab017 _raw_spin_unlock_irq
\tffffffffab018 spin_unlock_irq
\tffffffffab019 kshrinkd_shrink_inactive
\tffffffffab003 kshrinkd

kshrinkd0    40 
\tffffffffab017 _raw_spin_unlock_irq
\tffffffffab020 pmr_shrink_active_list
\tffffffffab003 kshrinkd

pmr-guest   120 
\tffffffffab010 clear_page_erms

swapper     0 
\tffffffffab011 default_idle
"""


@pytest.fixture
def perf_script(monkeypatch):
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, stdout=SCRIPT, stderr="")

    monkeypatch.setattr(kernel_profile.subprocess, "run", fake_run)
    return calls


def test_profile_counts_self_and_total_per_reclaim_thread(perf_script, tmp_path):
    prof = kernel_profile.profile(tmp_path / "perf.data", Path("/k/vmlinux"))
    assert set(prof) == {"kshrinkd0", "kswapd0"}  # app and idle samples left out
    k = prof["kshrinkd0"]
    assert k["samples"] == 4
    assert k["self"] == {
        "page_vma_mapped_walk": 1,
        "folio_referenced": 1,
        "_raw_spin_unlock_irq": 2,
    }
    assert k["total"]["folio_referenced"] == 2 and k["total"]["kthread"] == 2
    assert prof["kswapd0"]["total"]["ktime_get"] == 1
    assert prof["kswapd0"]["samples"] == 4
    assert "--vmlinux" in perf_script[0] and "/k/vmlinux" in perf_script[0]


def test_report_writes_shares_and_skips_runs_without_perf_data(perf_script, tmp_path):
    assert kernel_profile.report(tmp_path, Path("/k/vmlinux")) is None
    (tmp_path / kernel_profile.PERF_DATA).write_bytes(b"")
    text = kernel_profile.report(tmp_path, Path("/k/vmlinux")).read_text()
    assert "kshrinkd0: 4 samples" in text and "kswapd0: 4 samples" in text
    assert " 25.0%  page_vma_mapped_walk" in text and " 50.0%  folio_referenced" in text


def test_wrap_runs_the_workload_under_perf_only_when_asked(tmp_path, monkeypatch):
    assert kernel_profile.wrap("pmr-guest run", tmp_path, 0) == "pmr-guest run"
    monkeypatch.setattr(kernel_profile.shutil, "which", lambda _: "/usr/bin/perf")
    cmd = kernel_profile.wrap("pmr-guest run", tmp_path, 250)
    assert cmd.startswith("/usr/bin/perf record ") and cmd.endswith("-- pmr-guest run")
    assert "-F 250" in cmd and f"-o {tmp_path / 'perf.data'}" in cmd and "-a -g" in cmd


def test_check_refuses_bad_rates_and_a_missing_perf(monkeypatch):
    kernel_profile.check(0)
    with pytest.raises(UserError, match="--perf-hz"):
        kernel_profile.check(-1)
    monkeypatch.setattr(kernel_profile.shutil, "which", lambda _: None)
    with pytest.raises(UserError, match="perf not found"):
        kernel_profile.check(100)


def test_a_failing_perf_script_is_reported_not_raised(tmp_path, monkeypatch):
    def failing(cmd, **kw):
        raise subprocess.CalledProcessError(1, cmd, output="", stderr="perf.data: truncated")

    monkeypatch.setattr(kernel_profile.subprocess, "run", failing)
    (tmp_path / kernel_profile.PERF_DATA).write_bytes(b"")
    text = kernel_profile.report(tmp_path, Path("/k/vmlinux")).read_text()
    assert text.startswith("perf script failed (status 1)") and "truncated" in text


def test_profile_splits_the_steps_of_reclaim_by_path(perf_script, tmp_path):
    """A reference check with take_victims on the stack is the victims'; the
    one under the LRU scan is not."""
    paths = kernel_profile.profile(tmp_path / "perf.data", Path("/k/vmlinux"))["kswapd0"]["paths"]
    assert paths["victims"] == {"samples": 2, "steps": {"reference check": 1, "unmap": 1}}
    assert paths["rest"] == {"samples": 2, "steps": {"reference check": 1}}
    (tmp_path / kernel_profile.PERF_DATA).write_bytes(b"")
    text = kernel_profile.report(tmp_path, Path("/k/vmlinux")).read_text()
    assert (
        "  50.0%  taking victims (take_victims): reference check 25.0%, unmap 25.0%, page-out 0.0%"
    ) in text
    assert "  50.0%  the rest: reference check 25.0%, unmap 0.0%, page-out 0.0%" in text
    assert "100.0%  the rest: reference check 50.0%" in text  # kshrinkd0


def test_time_under_irq_off_locks_is_named_by_the_releasing_function(perf_script, tmp_path):
    """A sample on the unlock counts for the caller, past inline-able wrappers."""
    prof = kernel_profile.profile(tmp_path / "perf.data", Path("/k/vmlinux"))
    assert prof["kshrinkd0"]["irq_off"] == {
        "kshrinkd_shrink_inactive": 1,
        "pmr_shrink_active_list": 1,
    }
    assert prof["kswapd0"]["irq_off"] == {}
    assert kernel_profile._releaser(["_raw_spin_unlock_irq", "spin_unlock_irq"]) == "[unknown]"
    (tmp_path / kernel_profile.PERF_DATA).write_bytes(b"")
    text = kernel_profile.report(tmp_path, Path("/k/vmlinux")).read_text()
    assert "interrupts off, by the function releasing the lock" in text
    assert " 25.0%  kshrinkd_shrink_inactive" in text
