#!/bin/sh
# While victims cover reclaim's goal, does reclaim still scan the LRU
# lists of a removed (offline) memcg, whose page cache nothing else takes?
#
#   pmrtb probe removed-memcg-reclaim [MODE]     (pmr/enabled, default 2)
#
# 1. With PMR off: cgroup `parent/gone` reads a 96 MB file on ext4 once
#    into its page cache (the inactive file list); its process exits and
#    `gone` is removed. Its cache stays charged to it and on its LRU
#    lists, a dying memcg under `parent`. Then `parent/live` reads a
#    second file, of 128 MB, and keeps it cached. The guest has 512 MB:
#    no global reclaim runs (the probe is inconclusive if kswapd or
#    direct reclaim scanned anything: they could take the dying cache);
# 2. pmr/victim_target_kbytes=65536, then pmr/enabled=MODE: kshrinkd
#    fills the victim lists, from `live`'s cache among others, never from
#    the dying memcg's. The probe waits for 16 MB of victims under
#    `parent`;
# 3. 24 times: `memory.reclaim` asks `parent` for 2 MB, with 4 MB of
#    victims or more under it (kshrinkd refills between the calls). The
#    victims cover each goal, so under mode 2 reclaim scans no LRU
#    list of `live` (sc->pmr_goal_left is 0). The dying memcg has no
#    victims, and patch 8 scans its LRU lists all the same, a few pages
#    a call at priority 12 (get_scan_count()); without that check the
#    dying cache is left whole.
#    Passed when 64 kB (16 pages) or more of the dying memcg's page cache
#    is reclaimed; failed if less while the calls took 40 MB or more of
#    `live`'s cache (of the 48 MB asked); inconclusive if kshrinkd did not
#    make the victims (mode 0 makes none), or the calls took less.
#
# The dying memcg's cache is `parent`'s file pages less `live`'s, read
# after the memcg statistics flush (every 2 s) so that both are exact.
# Under mode 1 reclaim takes each lruvec's share of victims and scans
# the lruvecs without any, the dying one included: it passes too.
#
# An earlier version loaded 1.1 x RAM of anon and passed on the series
# without the offline check too: kswapd reclaimed the dying cache before
# kshrinkd had made enough victims to cover its goal, so the LRU lists
# were scanned anyway. Here the goals are small and the victims made
# first.
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"
# Bytes of page cache of the dying memcg (see the header)
dying_file() { echo $(($(memstat parent file) - $(memstat parent/live file))); }
# Waits out the memcg statistics flush
settle() { sleep 3; }
# Pages global reclaim (kswapd, direct) scanned so far
global_scans() { echo $(($(vmstat pgscan_kswapd) + $(vmstat pgscan_direct))); }

setup_probe 0
mkdir "$cg/parent"
echo +memory >"$cg/parent/cgroup.subtree_control"
mkdir "$cg/parent/gone" "$cg/parent/live"
make_file
dd if=/dev/urandom of=/run/data/g bs=1M count=128 status=none
sync
echo 3 >/proc/sys/vm/drop_caches
sh -c "echo \$\$ >$cg/parent/gone/cgroup.procs; exec cat /run/data/f >/dev/null"
rmdir "$cg/parent/gone"
sh -c "echo \$\$ >$cg/parent/live/cgroup.procs; exec cat /run/data/g >/dev/null"
settle
need_keys "$cg/parent/memory.stat" file
need_victims "$cg/parent/memory.stat"
need_keys /proc/vmstat pmr_victim_added pgscan_kswapd pgscan_direct
dying=$(cgstat parent nr_dying_descendants)
before=$(dying_file)
live0=$(memstat parent/live file)
log "parent: dying memcgs $dying, dying cache $before, live cache $(memstat parent/live file)"
[ "$dying" -ge 1 ] || verdict 2 "the removed memcg did not stay dying: nothing to test"
[ "$before" -ge $((64 << 20)) ] || verdict 2 "the removed memcg holds only $before bytes of page cache"

global0=$(global_scans)
added0=$(vmstat pmr_victim_added)
pmr_knob victim_target_kbytes 65536
set_pmr_enabled "$mode"
# has_victims BYTES: whether `parent` holds BYTES of victims
has_victims() { [ "$(memvictims parent)" -ge "$1" ]; }
wait_for 30 has_victims $((16 << 20)) ||
	verdict 2 "kshrinkd made $(memvictims parent) bytes of victims under parent in 30 s, not 16 MB ($(($(vmstat pmr_victim_added) - added0)) added)"
log "victims under parent: $(memvictims parent) (kshrinkd added $(($(vmstat pmr_victim_added) - added0)))"

calls=0
while [ "$calls" -lt 24 ]; do
	wait_for 10 has_victims $((4 << 20)) ||
		verdict 2 "after $calls calls, kshrinkd left $(memvictims parent) bytes of victims under parent, not 4 MB"
	echo 2M >"$cg/parent/memory.reclaim" 2>/dev/null || true
	calls=$((calls + 1))
done
settle
after=$(dying_file)
freed=$((before - after))
took=$((live0 - $(memstat parent/live file)))
global=$(($(global_scans) - global0))
log "after $calls calls: dying cache $after ($freed freed), live cache took $took, victims under parent $(memvictims parent)"
log "global reclaim: pages scanned $global"
[ "$global" -eq 0 ] || verdict 2 "global reclaim ran ($global pages scanned): it may have taken the dying cache"
[ "$took" -ge $((40 << 20)) ] ||
	verdict 2 "the 24 calls took only $took bytes of live's cache: the victims did not cover them"
[ "$freed" -ge $((16 * 4096)) ] &&
	verdict 0 "reclaim scanned the removed memcg while victims covered its goals: $freed of its $before bytes of page cache freed"
verdict 1 "24 calls took $took bytes of live's cache and freed $freed of the removed memcg's $before bytes of page cache"
