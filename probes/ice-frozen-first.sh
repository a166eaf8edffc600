#!/bin/sh
# Does reclaim take a frozen cgroup's memory first under Ice+
# (kernel/baselines/ice, ice/frozen_first)?
#
#   pmrtb probe ice-frozen-first [MODE]     (pmr/enabled, default 2)
#
# Under cgroup `parent`, `frozen` and `live` each hold lib/touch_app.py's
# 64 MB of anon; `frozen` is frozen through its cgroup.freeze. Twice,
# memory.reclaim asks `parent` for 32 MB, and the probe weighs what each
# child gave (memory.current before and after):
# 1. ice/frozen_first=0: the share that came from `frozen` (reclaim takes
#    from both, in proportion to their lists' sizes);
# 2. frozen_first=1, after `live` read all its memory back: 90% or more
#    came from `frozen`, and ice_frozen_reclaimed counted at least that
#    much; with 0 it does not move.
# Passed when both hold; failed if not; inconclusive if a reclaim took
# less than 16 MB or the kernel lacks Ice+.
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"
ice=/sys/kernel/mm/ice
frozen() { [ "$(keyval "$cg/parent/$1/cgroup.events" frozen)" = 1 ]; }
current() { cat "$cg/parent/$1/memory.current"; }
# run_app CHILD: touch_app.py's 64 MB in parent/CHILD; its pid in $pid
run_app() {
	sh -c "echo \$\$ >$cg/parent/$1/cgroup.procs; exec python3 $(dirname "$0")/lib/touch_app.py 64 $out/$1" &
	pid=$!
	wait_for 60 test -e "$out/$1.addr" || verdict 2 "$1 did not write its 64 MB within 60 s"
}
# reclaim STEP: 32 MB from parent; sets $from_frozen and $from_live (bytes)
reclaim() {
	f0=$(current frozen)
	l0=$(current live)
	echo 32M >"$cg/parent/memory.reclaim" 2>/dev/null || true
	from_frozen=$((f0 - $(current frozen)))
	from_live=$((l0 - $(current live)))
	total=$((from_frozen + from_live))
	log "$1: reclaimed $((from_frozen >> 10)) kB from frozen, $((from_live >> 10)) kB from live"
	[ "$total" -ge $((16 << 20)) ] || verdict 2 "$1: reclaim took only $((total >> 10)) kB"
}

setup_probe "$mode"
[ -e "$ice/frozen_first" ] || verdict 2 "no $ice/frozen_first: this kernel has no Ice+"
need_keys /proc/vmstat ice_frozen_reclaimed
if echo 2 >"$ice/frozen_first" 2>/dev/null; then
	verdict 1 "frozen_first took 2"
fi
mkdir "$cg/parent"
echo +memory >"$cg/parent/cgroup.subtree_control"
mkdir "$cg/parent/frozen" "$cg/parent/live"
run_app frozen
run_app live
live=$pid
echo 1 >"$cg/parent/frozen/cgroup.freeze"
wait_for 10 frozen frozen || verdict 2 "parent/frozen did not freeze within 10 s"

echo 0 >"$ice/frozen_first"
counted=$(vmstat ice_frozen_reclaimed)
reclaim "1. frozen_first=0"
[ "$(vmstat ice_frozen_reclaimed)" -eq "$counted" ] ||
	verdict 1 "1: ice_frozen_reclaimed moved with frozen_first=0"
off_share=$((from_frozen * 100 / total))

kill -USR1 "$live"
wait_for 60 test -e "$out/live.touched" || verdict 2 "live did not read its memory back in 60 s"
echo 1 >"$ice/frozen_first"
counted=$(vmstat ice_frozen_reclaimed)
reclaim "2. frozen_first=1"
on_share=$((from_frozen * 100 / total))
counted=$((($(vmstat ice_frozen_reclaimed) - counted) * 4096))
log "frozen's share: $off_share% with frozen_first=0, $on_share% with 1; ice_frozen_reclaimed $((counted >> 10)) kB"
[ "$on_share" -ge 90 ] ||
	verdict 1 "with frozen_first=1 only $on_share% of the reclaim came from the frozen cgroup"
[ "$counted" -ge $((from_frozen * 9 / 10)) ] ||
	verdict 1 "ice_frozen_reclaimed counted $((counted >> 10)) kB of the $((from_frozen >> 10)) kB taken from the frozen cgroup"
echo 0 >"$cg/parent/frozen/cgroup.freeze"
verdict 0 "reclaim took $on_share% from the frozen cgroup with frozen_first=1 ($off_share% with 0)"
