#!/bin/sh
# Does storage-friendly writeback group a batch by application when the
# apps share a root anon_vma, as every app forked from zygote does?
#
#   pmrtb probe zygote-batches [MODE]     (pmr/enabled, default 2)
#
# 1. pmr/unmap_unit_kbytes=4096 (1024 pages a batch),
#    pmr/victim_target_kbytes=65536 and pmr/enabled=MODE. In cgroup
#    `apps`, a zygote writes 8 MB, forks 4 apps, and the apps write 16 MB
#    each of the area they inherited, 8 pages at a time in turns
#    (lib/zygote_apps.py): their pages join the LRU lists interleaved, each
#    app's in an anon_vma of its own under the zygote's root;
# 2. cgroup `load` allocates until `apps` holds 16 MB of anon victims
#    (load_until_victims in lib/guest.sh: again until 4 MB stay), then
#    ends;
# 3. memory.reclaim asks `apps` for half of its anon victims, which the
#    victims cover: reclaim writes them back in bulk batches. Where each
#    app's pages are in swap is read from /proc/PID/pagemap before and
#    after (lib/swap_runs.py), and the pages the reclaim paged out are
#    ordered by swap slot: grouped by app, each batch gives each app one
#    run of adjacent slots, about 256 pages; in LRU order, a run is a turn
#    of 8 pages or so. Passed when the runs average 64 pages or more;
#    failed below; inconclusive if under 512 pages were paged out, or the
#    victims were not made within the 90 s. Mode 2 only (inconclusive
#    otherwise): the other modes write back SWAP_CLUSTER_MAX folios at a
#    time, in LRU order.
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"
lib=$(dirname "$0")/lib

setup_probe "$mode"
[ "$mode" = 2 ] || verdict 2 "pmr/enabled=$mode: only mode 2 writes back in bulk batches"
pmr_knob unmap_unit_kbytes 4096
pmr_knob victim_target_kbytes 65536
mkdir "$cg/apps"
need_victims "$cg/apps/memory.stat"
rm -f "$out/zygote.map"
sh -c "echo \$\$ >$cg/apps/cgroup.procs; exec python3 $lib/zygote_apps.py 4 16 8 8 $out" &
zygote=$!
wait_for 60 test -e "$out/zygote.map" || verdict 2 "the zygote's apps did not write their 64 MB within 60 s"
log "zygote $zygote and 4 apps: cgroup anon $(memstat apps anon)"

load_until_victims apps $((16 << 20)) $((4 << 20))
[ "$victims" -ge $((4 << 20)) ] || verdict 2 "apps never kept 4 MB of anon victims: nothing to tell"

python3 "$lib/swap_runs.py" save "$out/zygote.map" "$out/before"
ask=$((victims / 2))
if echo "$ask" >"$cg/apps/memory.reclaim" 2>/dev/null; then rc=done; else rc="fell short"; fi
python3 "$lib/swap_runs.py" save "$out/zygote.map" "$out/after"
set -- $(python3 "$lib/swap_runs.py" runs "$out/zygote.map" "$out/before" "$out/after")
pages=$1 runs=$2 apps=$3
log "memory.reclaim of $ask bytes: $rc; the apps' pages it paged out: $pages" \
    "from $apps apps, in $runs runs of one app in swap-slot order"
kill "$zygote"
[ "$pages" -ge 512 ] || verdict 2 "reclaim paged out $pages of the apps' pages, under 512: too few to tell"
[ "$apps" -ge 2 ] || verdict 2 "reclaim paged out the pages of $apps app: nothing to group"
[ $((pages / runs)) -ge 64 ] ||
	verdict 1 "the $pages pages fall into $runs runs of one app, $((pages / runs)) pages each: batches are not grouped by app"
verdict 0 "the $pages pages fall into $runs runs of one app, $((pages / runs)) pages each: batches are grouped by app"
