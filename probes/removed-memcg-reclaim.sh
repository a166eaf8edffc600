#!/bin/sh
# Does reclaim take the memory of a removed (offline) memcg while the
# victims of the others cover its goal?
#
#   pmrtb probe removed-memcg-reclaim [MODE]     (vm.pmr_mode, default 2)
#
# 1. vm.pmr_mode=MODE; cgroup `parent/gone` reads a 96 MB file on ext4
#    once into its page cache (the inactive file list); its process exits
#    and `gone` is removed. Its page cache stays charged to it and on its
#    LRU lists: `parent` then holds one dying memcg and nothing else, and
#    parent's memory.stat counts the dying memcg's file pages;
# 2. cgroup `load` allocates 1.1 x RAM of anon for up to 40 s, so that
#    kshrinkd makes victims of it and kswapd reclaims them;
# 3. kshrinkd makes no victims in a dying memcg, so only the LRU scan of
#    reclaim itself reaches that cache, which pmr_mode 2 would skip while
#    the victims cover its goal if the memcg were not offline (patch 14).
#    Passed when at least half of the dying memcg's file pages are
#    reclaimed while the load runs; inconclusive if they are not and the
#    load reclaimed little or, under pmr_mode 1 or 2, kshrinkd made no
#    victims (the path under test did not run).
#
# Known gap (session 24): on a kernel without patch 14's offline check
# this probe passes too. The load reclaims the dying memcg's cache in its
# first seconds, before kshrinkd has made enough victims to cover
# kswapd's goal, so the LRU scan runs whatever the check says.
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"

setup_probe "$mode"
mkdir -p "$cg/parent"
echo +memory >"$cg/parent/cgroup.subtree_control"
mkdir "$cg/parent/gone"
make_file
sh -c "echo \$\$ >$cg/parent/gone/cgroup.procs; exec cat /run/data/f >/dev/null"
rmdir "$cg/parent/gone"
sleep 1
before=$(memstat parent file)
dying=$(cgstat parent nr_dying_descendants)
log "parent after rmdir: file $before dying memcgs $dying"
[ "$dying" -ge 1 ] || verdict 2 "the removed memcg did not stay dying: nothing to test"
[ "$before" -ge $((64 << 20)) ] || verdict 2 "the removed memcg holds only $before bytes of page cache"

added0=$(vmstat pmr_victim_added)
steal0=$(($(vmstat pgsteal_kswapd) + $(vmstat pgsteal_direct)))
out0=$(vmstat pswpout)
start=$(date +%s)
start_load 40 "$(($(ram_mb) * 11 / 10))m"
file=$before
while [ $(($(date +%s) - start)) -lt 40 ] && [ "$file" -gt $((before / 4)) ]; do
	sleep 0.1
	file=$(memstat parent file)
done
stop_load
added=$(($(vmstat pmr_victim_added) - added0))
steal=$(($(vmstat pgsteal_kswapd) + $(vmstat pgsteal_direct) - steal0))
swapped=$(($(vmstat pswpout) - out0))
dying=$(cgstat parent nr_dying_descendants)
log "parent after load: file $file dying memcgs $dying (load ran $(($(date +%s) - start)) s)"
log "during the load: pages reclaimed $steal, swapped out $swapped, victims added $added"
[ "$file" -le $((before / 2)) ] &&
	verdict 0 "reclaim took the removed memcg's page cache: $file bytes left of $before"
[ "$steal" -ge 25000 ] || verdict 2 "the load reclaimed only $steal pages: no real pressure"
if [ "$mode" -ne 0 ] && [ "$added" -eq 0 ]; then
	verdict 2 "kshrinkd made no victims: the path under test did not run"
fi
verdict 1 "reclaim left $file of the removed memcg's $before bytes of page cache"
