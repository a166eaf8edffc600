"""trace.py: parsing the guest's trace.txt (docs/guest-interface.md)."""

import pytest

from pmr_testbed.trace import kshrinkd_rounds, parse_trace

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
        "mm_vmscan_kshrinkd_round", "mm_vmscan_kswapd_wake",
        "mm_vmscan_kshrinkd_round", "mm_vmscan_kshrinkd_round"]
    wake = trace.events[1]
    assert wake.t_s == pytest.approx(0.75)
    assert wake.task == "kswapd0"
    assert wake.fields == {"nid": 0, "order": 0}


def test_kshrinkd_rounds_sum_and_median_target():
    rounds = kshrinkd_rounds(parse_trace(TRACE))
    assert rounds == {"rounds": 3, "added": 4050, "scanned": 5100, "target_pages": 12288,
                      "target_max_pages": 12288}
    assert kshrinkd_rounds(parse_trace("# start_mono_s=1.0\n")) is None


def test_events_without_a_start_are_refused():
    with pytest.raises(ValueError, match="start_mono_s"):
        parse_trace(TRACE.split("\n", 1)[1])
