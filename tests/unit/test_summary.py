"""summary.py: medians, spread, ratios, failed runs and the schema check."""

import copy
import json

import pytest

from fakerun import (
    PMR_VMSTAT_KEYS,
    kill,
    pmr_batch,
    trace_text,
    write_campaign,
    write_run,
    writeback_time,
)
from pmr_testbed.report.summary import validate_summary, write_summary

KILL = kill("firefox", "low_swap_and_thrashing")


def _results(
    tmp_path,
    kills: dict[str, list[int]],
    failed: dict[str, list[int]] | None = None,
    extra_schemes: tuple[str, ...] = (),
):
    """A results dir whose runs have kills[scheme][rep-1] kills each; reps in
    `failed` are marked failed in campaign.json, though their files look fine."""
    failed = failed or {}
    runs = []
    for scheme, per_rep in kills.items():
        for rep, n in enumerate(per_rep, start=1):
            write_run(
                tmp_path / "runs" / f"{scheme}-r{rep}",
                kills=[KILL] * n,
                vmstat_increments={"allocstall_normal": 10 * n, "pswpout": 256 * rep},
                hist={"4096": 10 * rep, "65536": 1},
                threads_cpu={"kswapd0": 2.0 * rep, "kswapd1": 1.0},
            )
            if rep in failed.get(scheme, []):
                runs.append(
                    {
                        "scheme": scheme,
                        "rep": rep,
                        "status": "failed",
                        "error": "guest run exited with status 1",
                    }
                )
            else:
                runs.append({"scheme": scheme, "rep": rep, "status": "ok"})
    return write_campaign(tmp_path, [*kills, *extra_schemes], runs)


def test_median_min_max_and_summed_hist(tmp_path):
    s = write_summary(_results(tmp_path, {"original": [2, 5, 3]}))
    e = s["schemes"]["original"]
    assert e["runs"] == 3
    assert e["kills"] == 3
    assert e["spread"]["kills"] == {"min": 2, "max": 5}
    assert e["allocstall"] == 30
    assert e["pswpout_mb"] == pytest.approx(2.0)  # reps write 1, 2, 3 MB
    assert e["reclaim_cpu_s"] == pytest.approx({"kswapd": 5.0})  # 3, 5, 7 s
    assert e["spread"]["reclaim_cpu_s.kswapd"] == pytest.approx({"min": 3.0, "max": 7.0})
    assert e["reclaim_cpu_total"] == pytest.approx(5.0)
    assert e["swap_write_kb"]["hist"] == {"4": 60, "64": 3}
    assert e["cold_launches"] == 1 and e["hot_launches"] == 3
    assert json.loads((tmp_path / "summary.json").read_text()) == s
    assert validate_summary(s) == []


def test_kills_by_reason_count_zero_in_runs_without_them(tmp_path):
    results = _results(tmp_path, {"original": [0, 2, 3]})
    write_run(
        results / "runs" / "original-r3", kills=[KILL, KILL, kill("opera", "low_mem_and_swap")]
    )
    e = write_summary(results)["schemes"]["original"]
    # low_swap_and_thrashing: 0, 2, 2 -> 2; low_mem_and_swap: 0, 0, 1 -> 0
    assert e["kills_by_reason"] == {"low_swap_and_thrashing": 2, "low_mem_and_swap": 0}
    assert e["spread"]["kills_by_reason.low_mem_and_swap"] == {"min": 0, "max": 1}


def test_single_run_has_no_spread(tmp_path):
    s = write_summary(_results(tmp_path, {"original": [4]}))
    assert "spread" not in s["schemes"]["original"]


def test_failed_runs_are_excluded_and_listed(tmp_path):
    results = _results(
        tmp_path, {"original": [2, 100, 4], "pmr": [1, 1, 1]}, failed={"original": [2]}
    )
    # campaign says ok, but the guest's run.json says failed: also not a result
    write_run(results / "runs" / "pmr-r3", status="failed", kills=[KILL] * 50)
    s = write_summary(results)
    assert s["schemes"]["original"]["runs"] == 2
    assert s["schemes"]["original"]["kills"] == 3  # median of 2 and 4; 100 excluded
    assert s["schemes"]["pmr"]["runs"] == 2
    assert s["schemes"]["pmr"]["kills"] == 1
    failed = {(f["scheme"], f["rep"]): f["error"] for f in s["failed_runs"]}
    assert set(failed) == {("original", 2), ("pmr", 3)}
    assert "exited with status 1" in failed[("original", 2)]
    assert "app chrome hung" in failed[("pmr", 3)]
    assert any("only 2 of 3" in w for w in s["warnings"])
    assert validate_summary(s) == []


def test_ratios_of_medians_and_paired_spread(tmp_path):
    s = write_summary(_results(tmp_path, {"original": [4, 6, 8], "pmr": [1, 3, 2]}))
    r = s["ratios"]["pmr"]
    assert r["kills"] == pytest.approx(2 / 6)
    # pairs by rep: 1/4, 3/6, 2/8
    assert r["spread"]["kills"] == pytest.approx(
        {"min": 0.25, "max": 0.5, "median": 0.25, "pairs": 3}
    )
    assert r["allocstall"] == pytest.approx(20 / 60)
    assert r["pswpout_mb"] == pytest.approx(1.0)
    assert set(r) >= {"response_ms.mean", "reclaim_mbps.peak", "reclaim_cpu_total"}
    assert "original" not in s["ratios"]
    # 3 against 3, fully apart: 2 of the 20 splits are as extreme
    assert r["p_value"]["kills"] == pytest.approx(0.1)
    # the same swap writes in both: nothing to tell apart
    assert r["p_value"]["pswpout_mb"] == pytest.approx(1.0)


def test_two_reps_give_no_p_value(tmp_path):
    s = write_summary(_results(tmp_path, {"original": [4, 6], "pmr": [1, 3]}))
    assert s["ratios"]["pmr"]["p_value"]["kills"] is None


def test_ratio_against_zero_is_undefined(tmp_path):
    s = write_summary(_results(tmp_path, {"original": [0, 0], "mglru": [1, 2]}))
    assert s["ratios"]["mglru"]["kills"] is None
    assert "kills" not in s["ratios"]["mglru"]["spread"]


def test_scheme_without_ok_runs_is_flagged_not_fatal(tmp_path):
    results = _results(tmp_path, {"original": [1, 2], "pmr": [1, 1]}, failed={"pmr": [1, 2]})
    s = write_summary(results)
    assert s["schemes"]["pmr"] == {"runs": 0}
    assert s["ratios"] == {}
    assert any(w.startswith("pmr: no ok runs (2 failed)") for w in s["warnings"])
    assert validate_summary(s) == []


def test_no_baseline_means_no_ratios(tmp_path):
    s = write_summary(_results(tmp_path, {"mglru": [1], "pmr": [2]}))
    assert s["ratios"] == {}


def test_setup_is_copied(tmp_path):
    s = write_summary(_results(tmp_path, {"original": [1]}))
    assert s["qemu"]["accel"] == "kvm"
    assert s["guest"]["ram_mb"] == 2048
    assert s["dilation"]["factor"] == 3.2
    assert s["kernel"]["version"] == "6.1.192"
    assert s["kernel"]["series"] == ["0001-mm-pmr-victim-list.patch"]


@pytest.mark.parametrize(
    "damage, problem",
    [
        (lambda s: s["schemes"]["original"].pop("kills"), "schemes.original.kills"),
        (lambda s: s["schemes"]["pmr"]["response_ms"].pop("p95"), "schemes.pmr.response_ms.p95"),
        (lambda s: s["schemes"]["pmr"].__setitem__("allocstall", "many"), "schemes.pmr.allocstall"),
        (lambda s: s.pop("dilation"), "dilation"),
        (lambda s: s["kernel"].pop("series"), "kernel"),
        (lambda s: s["ratios"]["pmr"].pop("kills"), "ratios.pmr.kills"),
        (
            lambda s: s["ratios"]["pmr"]["p_value"].__setitem__("kills", 1.5),
            "ratios.pmr.p_value.kills",
        ),
        (lambda s: s["failed_runs"].append({"scheme": "pmr"}), "failed_runs"),
        (
            lambda s: s["schemes"]["original"]["spread"].__setitem__("kills", {"min": 9, "max": 1}),
            "spread.kills",
        ),
        (lambda s: s["schemes"]["pmr"].pop("writeback"), "schemes.pmr.writeback"),
        (lambda s: s["schemes"]["original"].__setitem__("bulk", 12), "schemes.original.bulk"),
        (
            lambda s: s["schemes"]["pmr"]["memory_stall_s"].pop("some"),
            "schemes.pmr.memory_stall_s.some",
        ),
        # what the schema cannot say
        (
            lambda s: s["schemes"]["pmr"]["by_rep"].pop(),
            "schemes.pmr.by_rep: needs one row per run",
        ),
        (lambda s: s["ratios"].__setitem__("mglru", s["ratios"]["pmr"]), "ratios.mglru: not a"),
        (lambda s: s["ratios"].__setitem__("original", s["ratios"]["pmr"]), "ratios.original"),
        (lambda s: s["schemes"].__setitem__("ice", {"runs": 0, "kills": 1}), "schemes.ice"),
        (lambda s: s.__setitem__("reps", 0), "reps"),
    ],
)
def test_validate_summary_catches_schema_problems(tmp_path, damage, problem):
    s = write_summary(_results(tmp_path, {"original": [1, 2], "pmr": [0, 1]}))
    assert validate_summary(s) == []
    broken = copy.deepcopy(s)
    damage(broken)
    problems = validate_summary(broken)
    assert any(problem in p for p in problems), problems


def test_scheme_listed_but_never_run_is_flagged(tmp_path):
    # an interrupted campaign: pmr is in the scheme list but has no run entries yet
    s = write_summary(_results(tmp_path, {"original": [1]}, extra_schemes=("pmr",)))
    assert s["schemes"]["pmr"] == {"runs": 0}
    assert any(w.startswith("pmr: no ok runs (0 failed)") for w in s["warnings"])


def _writeback_results(tmp_path):
    """original on a part-2 kernel (writeback events, no batches) and pmr
    (batches too), 3 reps each; rep r unmaps at r x base µs per page. A third
    scheme, old, ran on a kernel without part 2."""
    runs = []
    for scheme, base_us in (("original", 20), ("pmr", 2)):
        for rep in (1, 2, 3):
            us = base_us * rep
            events = [
                writeback_time(1.0, 32, 32 * us * 1000, 32, 32 * 50_000),
                writeback_time(2.0, 32, 32 * us * 3000, 32, 32 * 50_000),
            ]
            if scheme == "pmr":
                events += [pmr_batch(3.0, 128 * rep, 128 * rep, 128 * rep, 0, 0)] * 2
            write_run(
                tmp_path / "runs" / f"{scheme}-r{rep}",
                trace=trace_text(events),
                extra_vmstat_keys=PMR_VMSTAT_KEYS,
            )
            runs.append({"scheme": scheme, "rep": rep, "status": "ok"})
    write_run(tmp_path / "runs" / "old-r1")
    runs.append({"scheme": "old", "rep": 1, "status": "ok"})
    return write_campaign(tmp_path, ["original", "pmr", "old"], runs)


def test_writeback_and_bulk_medians_with_spread(tmp_path):
    s = write_summary(_writeback_results(tmp_path))
    original, pmr = s["schemes"]["original"], s["schemes"]["pmr"]
    # rep r: calls at r x 20 and r x 60 µs/page -> p50 r x 40; median over reps at rep 2
    assert original["writeback"]["unmap_us_per_page"]["p50"] == pytest.approx(80.0)
    assert original["spread"]["writeback.unmap_us_per_page.p50"] == pytest.approx(
        {"min": 40.0, "max": 120.0}
    )
    assert original["writeback"]["pageout_us_per_page"] == pytest.approx({"p50": 50.0, "p95": 50.0})
    assert set(original["writeback"]) == {
        "unmap_us_per_page",
        "unmap_us_per_page_mean",
        "unmap_window_us_per_page",
        "pageout_us_per_page",
        "unmap_s",
        "pageout_s",
        "unmap_share",
    }
    # rep 2: 64 pages at 40 and 120 µs/page
    assert original["writeback"]["unmap_us_per_page_mean"] == pytest.approx(80.0)
    assert pmr["writeback"]["unmap_us_per_page"]["p50"] == pytest.approx(8.0)
    assert pmr["writeback"]["unmap_share"] == pytest.approx(8 / 58)
    # no batch events under original: the counters say 0 batches
    assert original["bulk"]["batches"] == 0
    assert original["bulk"]["pages_per_batch_mean"] is None
    assert pmr["bulk"]["batches"] == 2
    assert pmr["bulk"]["pages_per_batch_mean"] == pytest.approx(256.0)
    assert pmr["spread"]["bulk.pages_per_batch_mean"] == pytest.approx({"min": 128, "max": 384})
    # the PMR table's counters include part 2's
    assert pmr["pmr"]["pmr_batch"] == 0
    assert validate_summary(s) == []


def test_writeback_and_bulk_are_null_without_part2(tmp_path):
    s = write_summary(_writeback_results(tmp_path))
    old = s["schemes"]["old"]
    assert old["writeback"] is None and old["bulk"] is None
    assert "pmr" not in old
    assert validate_summary(s) == []


def test_by_rep_lists_each_repetition_in_rep_order(tmp_path):
    s = write_summary(_results(tmp_path, {"original": [2, 5, 3]}))
    rows = s["schemes"]["original"]["by_rep"]
    assert [r["rep"] for r in rows] == [1, 2, 3]
    assert [r["kills"] for r in rows] == [2, 5, 3]
    assert rows[0]["settled.last_kill_s"] == pytest.approx(6.0)
    assert set(rows[0]) == {
        "rep",
        "kills",
        "memory_stall_s.some",
        "settled.last_kill_s",
        "settled.file_refaults_per_s",
        "settled.swap_free_mb_min",
        "settled.swap_full_s",
        "lru_balance.file_activated_share",
        "response_ms.mean",
        "switch_kinds.cold.mean_ms",
        "switch_kinds.cold.cost.runq_ms",
        "allocstall",
        "reclaim_cpu_total",
        "reclaim_cpu_us_per_page",
        "settled.after_last_kill.reclaim_cpu_s",
        "pswpout_mb",
        "settled.after_last_kill.pswpout_mb",
        "settled.lmkd.events",
        "settled.lmkd.evaluated",
        "settled.lmkd.events_after",
        "settled.lmkd.wakeups_after",
        "settled.lmkd.evaluated_after",
        "settled.lmkd.swap_low",
        "settled.lmkd.under_low_wmark",
        "settled.lmkd.swap_low_under_low_wmark",
        "settled.lmkd.thrashing_max",
        "settled.lmkd.kill_reasons_without_victim",
    }
    broken = copy.deepcopy(s)
    broken["schemes"]["original"]["by_rep"].pop()
    assert any("by_rep" in p for p in validate_summary(broken))
    assert "fitting" in s and validate_summary(s) == []
    # the fitting view reads run_figures' paths: every rep fits here
    fit = s["fitting"]["schemes"]["original"]
    assert fit["reps"] == [1, 2, 3]
    assert fit["figures"]["kills"] == {"median": 3, "min": 2, "max": 5}
    assert fit["figures"]["switch_kinds.cold.cost.runq_ms"] is None  # no launch costs
    broken = copy.deepcopy(s)
    broken["fitting"] = {"reps": []}
    assert "fitting.schemes: missing" in validate_summary(broken)


def test_launch_costs_summarise_across_reps_with_and_without_them(tmp_path):
    from fakerun import switch

    runs = []
    for rep, cold_cost in ((1, None), (2, 300.0), (3, 500.0)):
        cold = switch("chrome", "cold", 1000.0, 0, t_ms=1000)
        hot = switch("chrome", "hot", 50.0, 1, t_ms=2000)
        if cold_cost is not None:  # rep 1's runtime measured no cold launch
            cold["cost"] = {"wall_ms": cold_cost}
        hot["cost"] = {"wall_ms": 40.0}
        write_run(tmp_path / "runs" / f"pmr-r{rep}", switches=[cold, hot])
        runs.append({"scheme": "pmr", "rep": rep, "status": "ok"})
    e = write_summary(write_campaign(tmp_path, ["pmr"], runs))["schemes"]["pmr"]
    assert e["switch_kinds"]["cold"]["cost"]["wall_ms"] == pytest.approx(400.0)
    assert e["spread"]["switch_kinds.cold.cost.wall_ms"] == {"min": 300.0, "max": 500.0}
    assert e["switch_kinds"]["cold"]["cost"]["outside_ms"] == pytest.approx(600.0)
    assert e["switch_kinds"]["hot"]["cost"] == {"wall_ms": 40.0, "outside_ms": 10.0}


def test_a_trace_event_asked_for_and_missing_is_a_warning(tmp_path):
    results = _results(tmp_path, {"original": [1], "pmr": [1]})
    campaign = json.loads((results / "campaign.json").read_text())
    campaign["extra_trace_events"] = ["vmscan/mm_vmscan_lru_isolate", "vmscan/nope"]
    campaign["reps"] = 1
    (results / "campaign.json").write_text(json.dumps(campaign))
    # the default events a kernel lacks are not warned of: only those asked for
    missing = ("vmscan/nope", "vmscan/mm_vmscan_pmr_batch")
    for run in ("original-r1", "pmr-r1"):
        write_run(results / "runs" / run, trace=trace_text([], missing=missing))
    assert write_summary(results)["warnings"] == [
        "original rep 1: the kernel has no vmscan/nope (--trace-event): not recorded",
        "pmr rep 1: the kernel has no vmscan/nope (--trace-event): not recorded",
    ]


@pytest.mark.parametrize("without", [1, 3])
def test_runs_with_and_without_lmkd_csv_summarise_together(tmp_path, without):
    results = _results(tmp_path, {"original": [2, 5, 3]})
    (results / "runs" / f"original-r{without}" / "lmkd.csv").unlink()
    s = write_summary(results)
    rows = {r["rep"]: r for r in s["schemes"]["original"]["by_rep"]}
    assert rows[without]["settled.lmkd.events"] is None
    assert all(
        rows[rep]["settled.lmkd.wakeups_after"] is not None for rep in rows if rep != without
    )
    assert validate_summary(s) == []
