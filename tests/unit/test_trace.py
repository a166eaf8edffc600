"""trace.py: parsing the guest's trace.txt (docs/guest-interface.md)."""

import pytest

from pmr_testbed.analysis.trace import kshrinkd_rounds, parse_trace
from pmr_testbed.config.trace_events import TRACE_EVENTS, extra_trace_events, run_trace_events
from pmr_testbed.errors import UserError

TRACE = """\
# start_mono_s=100.500000
# missing=vmscan/mm_vmscan_pmr_writeback_batch
       kshrinkd0-38      [001] .....   101.000000: mm_vmscan_kshrinkd_round: nid=0 nr_to_shrink=4096 nr_scanned=5000 nr_added=4000 nr_victim=4000 target=12288
         kswapd0-37      [000] d..1.   101.250000: mm_vmscan_kswapd_wake: nid=0 order=0
       kshrinkd0-38      [001] .....   102.500000: mm_vmscan_kshrinkd_round: nid=0 nr_to_shrink=4096 nr_scanned=100 nr_added=50 nr_victim=4050 target=12288
       kshrinkd0-38      [001] .....   103.500000: mm_vmscan_kshrinkd_round: nid=0 nr_to_shrink=0 nr_scanned=0 nr_added=0 nr_victim=4050 target=8192
# overrun=3
"""


def test_events_on_the_workload_time_axis():
    trace = parse_trace(TRACE)
    assert trace.missing == ["vmscan/mm_vmscan_pmr_writeback_batch"]
    assert trace.overrun == 3
    assert [e.name for e in trace.events] == [
        "mm_vmscan_kshrinkd_round",
        "mm_vmscan_kswapd_wake",
        "mm_vmscan_kshrinkd_round",
        "mm_vmscan_kshrinkd_round",
    ]
    wake = trace.events[1]
    assert wake.t_s == pytest.approx(0.75)
    assert (wake.task, wake.pid) == ("kswapd0", 37)
    assert wake.fields == {"nid": 0, "order": 0}


def test_kshrinkd_rounds_sum_and_median_target():
    rounds = kshrinkd_rounds(parse_trace(TRACE))
    assert rounds == {
        "rounds": 3,
        "added": 4050,
        "scanned": 5100,
        "target_pages": 12288,
        "target_max_pages": 12288,
        "fill": {"median": 4000 / 4096, "max": 4000 / 4096},
    }
    assert kshrinkd_rounds(parse_trace("# start_mono_s=1.0\n")) is None
    # a round asked for nothing does not count towards the fill
    only_empty = "# start_mono_s=100.5\n" + TRACE.splitlines()[-2] + "\n"
    assert kshrinkd_rounds(parse_trace(only_empty))["fill"] is None


def test_events_without_a_start_are_refused():
    with pytest.raises(ValueError, match="start_mono_s"):
        parse_trace(TRACE.split("\n", 1)[1])


# PMR part 2's events as a 6.1 kernel prints them: kswapd, and direct reclaim in
# an app thread whose name has dashes and digits of its own
PART2 = """\
# start_mono_s=250.000000
# missing=
         kswapd0-37      [000] .....   251.125000: mm_vmscan_writeback_time: nid=0 nr_unmap=32 unmap_ns=123456 nr_pageout=30 pageout_ns=45678
    app-chrome-1-2345    [001] d..1.   251.500000: mm_vmscan_writeback_time: nid=0 nr_unmap=0 unmap_ns=0 nr_pageout=8 pageout_ns=9000
         kswapd0-37      [000] .....   252.000000: mm_vmscan_pmr_batch: nid=0 nr_pages=256 nr_unmapped=250 nr_pageout=250 unmap_ns=1048576 pageout_ns=3000000
# overrun=0
"""


def test_part2_events_are_recorded_by_default():
    assert "vmscan/mm_vmscan_writeback_time" in TRACE_EVENTS
    assert "vmscan/mm_vmscan_pmr_batch" in TRACE_EVENTS
    assert len(set(TRACE_EVENTS)) == len(TRACE_EVENTS)


def test_part2_events_parse_with_their_fields():
    trace = parse_trace(PART2)
    assert trace.missing == [] and trace.overrun == 0
    first, direct = trace.named("mm_vmscan_writeback_time")
    assert first.t_s == pytest.approx(1.125)
    assert first.fields == {
        "nid": 0,
        "nr_unmap": 32,
        "unmap_ns": 123456,
        "nr_pageout": 30,
        "pageout_ns": 45678,
    }
    assert (direct.task, direct.pid) == ("app-chrome-1", 2345)
    assert direct.fields["nr_pageout"] == 8
    (batch,) = trace.named("mm_vmscan_pmr_batch")
    assert batch.t_s == pytest.approx(2.0)
    assert batch.fields == {
        "nid": 0,
        "nr_pages": 256,
        "nr_unmapped": 250,
        "nr_pageout": 250,
        "unmap_ns": 1048576,
        "pageout_ns": 3000000,
    }


def test_a_kernel_without_part2_lists_its_events_as_missing():
    # what the guest writes on a part-1 kernel with today's spec
    text = (
        "# start_mono_s=250.0\n"
        "# missing=vmscan/mm_vmscan_writeback_time,vmscan/mm_vmscan_pmr_batch\n"
        "       kshrinkd0-38      [001] .....   251.000000: mm_vmscan_kshrinkd_round: "
        "nid=0 nr_to_shrink=1 nr_scanned=2 nr_added=1 nr_victim=1 target=768\n"
        "# overrun=0\n"
    )
    trace = parse_trace(text)
    assert trace.missing == ["vmscan/mm_vmscan_writeback_time", "vmscan/mm_vmscan_pmr_batch"]
    assert trace.named("mm_vmscan_writeback_time") == []
    assert len(trace.named("mm_vmscan_kshrinkd_round")) == 1


def test_extra_events_follow_the_default_ones_once_and_sorted():
    defaults = list(TRACE_EVENTS)
    assert run_trace_events() == defaults
    extra = [
        "vmscan/mm_vmscan_lru_isolate",
        "vmscan/mm_vmscan_kswapd_round",
        "vmscan/mm_vmscan_lru_isolate",
        "block/block_rq_issue",
        "xhci-hcd/xhci_urb_giveback",
    ]
    assert run_trace_events(extra) == defaults + [
        "block/block_rq_issue",
        "vmscan/mm_vmscan_lru_isolate",
        "xhci-hcd/xhci_urb_giveback",
    ]
    assert extra_trace_events(["vmscan/mm_vmscan_kswapd_round"]) == []
    assert defaults == TRACE_EVENTS  # the default list is not changed


@pytest.mark.parametrize(
    "name",
    [
        "mm_vmscan_lru_isolate",
        "vmscan/",
        "vmscan/lru isolate",
        "../vmscan/x",
        "vmscan/x/enable",
        "",
        "vmscan/x\n",
        "Vmscan/X",
    ],
)
def test_extra_events_must_be_group_slash_name(name):
    with pytest.raises(UserError, match="GROUP/NAME"):
        run_trace_events([name])
