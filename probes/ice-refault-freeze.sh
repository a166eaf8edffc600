#!/bin/sh
# Does a refault freeze the app's cgroup exactly when Ice says it should
# (kernel/baselines/ice, refault-driven freezing)?
#
#   pmrtb probe ice-refault-freeze [MODE]     (pmr/enabled, default 2)
#
# Cgroup `app` holds lib/touch_app.py's 64 MB of anon. Each step pages
# all of it out with memory.reclaim, then has the app read half of its
# pages back, which refaults them (workingset_refault_anon grows), and
# looks at the cgroup's freezer:
# 1. ice/rpf_enabled=1, memory.ice_freezable=0: the app is not frozen and
#    ice_rpf_freeze does not move;
# 2. rpf_enabled=0, ice_freezable=1: not frozen either;
# 3. rpf_enabled=1, ice_freezable=1: the cgroup freezes (cgroup.events
#    `frozen 1`, cgroup.freeze reads 1) within 10 s before the app's
#    reads are done, and ice_rpf_freeze goes up by one or more. Then the
#    mark is cleared and the cgroup thawed: the app finishes its reads and
#    the cgroup stays thawed.
# Both files refuse 2 with an error. Passed when every step holds; failed
# at the first that does not; inconclusive if a step's reads refaulted
# nothing (nothing to judge) or the kernel lacks Ice.
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"
ice=/sys/kernel/mm/ice
# frozen CGROUP: its cgroup.events says frozen
frozen() { [ "$(keyval "$cg/$1/cgroup.events" frozen)" = 1 ]; }
refaults() { memstat app workingset_refault_anon; }
# page_out: all of the app's anon to swap, and the stats flushed
page_out() {
	echo 64M >"$cg/app/memory.reclaim" 2>/dev/null || true
	sleep 3
}
# touch SIGNAL FILE: the app reads half its pages; FILE appears when done
touch_half() {
	rm -f "$out/app.$2"
	kill "-$1" "$app"
}
# refaulted BEFORE: an inconclusive verdict unless the reads refaulted
refaulted() {
	sleep 3
	[ "$(refaults)" -gt "$1" ] ||
		verdict 2 "$2: the app's reads refaulted nothing (workingset_refault_anon $(refaults))"
}

setup_probe "$mode"
[ -d "$ice" ] || verdict 2 "no $ice: this kernel has no Ice"
mkdir "$cg/app"
[ -e "$cg/app/memory.ice_freezable" ] || verdict 2 "no memory.ice_freezable"
need_keys /proc/vmstat ice_rpf_freeze ice_rpf_refault
need_keys "$cg/app/memory.stat" workingset_refault_anon
if echo 2 >"$ice/rpf_enabled" 2>/dev/null; then
	verdict 1 "rpf_enabled took 2"
fi
if echo 2 >"$cg/app/memory.ice_freezable" 2>/dev/null; then
	verdict 1 "memory.ice_freezable took 2"
fi
start_app 64

log "1. rpf_enabled=1, ice_freezable=0"
echo 1 >"$ice/rpf_enabled"
freezes=$(vmstat ice_rpf_freeze)
page_out
before=$(refaults)
touch_half USR1 touched
wait_for 60 test -e "$out/app.touched" || verdict 1 "1: the unmarked app did not finish its reads in 60 s (frozen: $(keyval "$cg/app/cgroup.events" frozen))"
refaulted "$before" 1
frozen app && verdict 1 "1: the unmarked app was frozen"
[ "$(vmstat ice_rpf_freeze)" -eq "$freezes" ] ||
	verdict 1 "1: ice_rpf_freeze went from $freezes to $(vmstat ice_rpf_freeze) with nothing marked"

log "2. rpf_enabled=0, ice_freezable=1"
echo 0 >"$ice/rpf_enabled"
echo 1 >"$cg/app/memory.ice_freezable"
page_out
before=$(refaults)
touch_half USR1 touched
wait_for 60 test -e "$out/app.touched" || verdict 1 "2: with RPF off the app did not finish its reads in 60 s"
refaulted "$before" 2
frozen app && verdict 1 "2: the app was frozen with rpf_enabled=0"

log "3. rpf_enabled=1, ice_freezable=1"
echo 1 >"$ice/rpf_enabled"
seen=$(vmstat ice_rpf_refault)
page_out
before=$(refaults)
touch_half USR2 odd
wait_for 10 frozen app || verdict 1 "3: the marked app was not frozen within 10 s of its refaults (workingset_refault_anon $before -> $(refaults), ice_rpf_refault $seen -> $(vmstat ice_rpf_refault))"
[ "$(cat "$cg/app/cgroup.freeze")" = 1 ] || verdict 1 "3: frozen, but cgroup.freeze reads $(cat "$cg/app/cgroup.freeze")"
[ "$(vmstat ice_rpf_freeze)" -gt "$freezes" ] || verdict 1 "3: frozen, but ice_rpf_freeze did not count it"
test -e "$out/app.odd" && verdict 1 "3: the app finished all its reads before it was frozen"
log "   frozen: ice_rpf_refault +$(($(vmstat ice_rpf_refault) - seen)), ice_rpf_freeze +$(($(vmstat ice_rpf_freeze) - freezes))"
echo 0 >"$cg/app/memory.ice_freezable"
echo 0 >"$cg/app/cgroup.freeze"
wait_for 60 test -e "$out/app.odd" || verdict 1 "3: thawed and unmarked, the app did not finish its reads in 60 s (frozen: $(keyval "$cg/app/cgroup.events" frozen))"
frozen app && verdict 1 "3: the app froze again after it was unmarked"
refaulted "$before" 3
verdict 0 "a refault froze the app only when marked and enabled; thawed, it ran to the end"
