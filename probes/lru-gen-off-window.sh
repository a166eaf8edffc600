#!/bin/sh
# Does PMR stay off until switching the multi-gen LRU off has moved every
# folio back to the classic lists?
#
#   pmrtb probe lru-gen-off-window [MODE]     (pmr/enabled, default 2)
#
# 1. pmr/enabled=0 and the multi-gen LRU on; cgroup `app` writes 256 MB of
#    anon once (lib/touch_app.py), which the multi-gen LRU keeps in its
#    generations;
# 2. one thread switches the multi-gen LRU off, which drains the
#    generations of every lruvec before the write returns, while another
#    writes MODE to pmr/enabled until it is accepted
#    (lib/lru_gen_window.py). A mode set halfway through the drain would
#    have kshrinkd pick victims on lruvecs still generational. Without the
#    block, a write is accepted as soon as the static key is off, at the
#    start of the drain; with it, when the drain is done, near the end of
#    the switch, which is measured only after the write returned and the
#    thread got the GIL back (up to 10% later). Passed when the first
#    accepted write began in the second half of the switch or after it;
#    failed when it began in the first half; inconclusive if the switch
#    took under 20 ms (too quick to tell), the kernel has no multi-gen LRU,
#    or no write was accepted within 60 s. Mode 1 and 2 alike.
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"
lib=$(dirname "$0")/lib

setup_probe 0
[ "$mode" != 0 ] || verdict 2 "pmr/enabled=0: nothing to refuse"
[ -w /sys/kernel/mm/lru_gen/enabled ] || verdict 2 "no multi-gen LRU (CONFIG_LRU_GEN) in this kernel"
echo y >/sys/kernel/mm/lru_gen/enabled
mkdir "$cg/app"
start_app 256
log "multi-gen LRU $(cat /sys/kernel/mm/lru_gen/enabled); app anon $(memstat app anon)"

if [ -d /sys/kernel/mm/pmr ]; then knob=/sys/kernel/mm/pmr/enabled; else knob=/proc/sys/vm/pmr_mode; fi
set -- $(python3 "$lib/lru_gen_window.py" "$knob" "$mode")
start=$1 end=$2 accepted=$3
kill "$app"
# microseconds from the start of the switch
us() { awk -v t="$1" -v s="$start" 'BEGIN { printf "%d", (t - s) * 1e6 }'; }
took=$(us "$end")
log "switch off took $took us; mode $mode accepted at $(us "$accepted") us"
[ "$took" -ge 20000 ] || verdict 2 "the switch took $took us, under 20 ms: too quick to tell"
awk -v a="$accepted" 'BEGIN { exit !(a < 0) }' && verdict 2 "pmr/enabled refused $mode for 60 s after the switch"
at=$(us "$accepted")
[ $((at * 2)) -ge "$took" ] ||
	verdict 1 "pmr/enabled accepted $mode ${at} us into a ${took} us switch, while lruvecs were still generational"
verdict 0 "pmr/enabled refused $mode until ${at} us into a ${took} us switch"
