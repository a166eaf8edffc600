#!/bin/sh
# When every victim reclaim takes was used again, does reclaim go on to
# the LRU lists in the same pass, rather than count the victims it put
# back as reclaimed and skip the lists?
#
#   pmrtb probe used-victims-fallback [MODE]     (pmr/enabled, default 2)
#
# 1. pmr/victim_target_kbytes=262144, pmr/unmap_unit_kbytes=64 and
#    pmr/enabled=MODE; a 96 MB file on the data disk; cgroup `app` writes
#    160 MB of anon once (lib/touch_app.py);
# 2. cgroup `load` allocates until `app` holds 32 MB of anon victims
#    (load_until_victims in lib/guest.sh: again until 24 MB stay), then
#    ends; if fewer stay, a fresh `app` and the load again, three tries in
#    all. Then pmr/victim_target_kbytes=4, so that kshrinkd picks no more;
# 3. `app` reads its even pages, then its odd ones: every victim is used
#    again, and reclaim's reference check puts back each one it takes.
#    Then `app` reads the file: clean page cache, which reclaim frees at
#    once from the LRU lists;
# 4. memory.reclaim asks `app` for 1 MB (256 pages, reclaim's goal in
#    each pass). A pass takes 256 pages of victims, puts them all back,
#    and must then scan the LRU lists, where the file's pages cover the
#    goal once the priority lets reclaim scan enough of them: a few
#    thousand victim pages put back (pmr_victim_putback), most left.
#    Counting the victims taken as covering the goal, reclaim skips the
#    lists pass after pass until the victims run out. Passed when the
#    reclaim succeeds and leaves a quarter or more of the victims; failed
#    otherwise; inconclusive if `app` held under 24 MB (6,144 pages) of
#    victims after three tries, too few to tell the two apart.
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"
lib=$(dirname "$0")/lib

setup_probe "$mode"
make_file
pmr_knob victim_target_kbytes 262144
pmr_knob unmap_unit_kbytes 64
mkdir "$cg/app"
need_victims "$cg/app/memory.stat"
need_keys /proc/vmstat pmr_victim_putback
# Reclaim takes victims as kshrinkd makes them, and how many stay when
# the load ends depends on how fast the two run: a load that leaves too
# few has swapped out most of `app`, so a fresh `app` has the next try.
tries=0
while :; do
	start_app 160
	load_until_victims app $((32 << 20)) $((24 << 20))
	tries=$((tries + 1))
	[ "$victims" -lt $((24 << 20)) ] && [ "$tries" -lt 3 ] || break
	log "try $tries left app $victims bytes of anon victims: a fresh app"
	kill "$app"
	wait "$app" 2>/dev/null || true
done
[ "$victims" -ge $((24 << 20)) ] || verdict 2 "app never kept 24 MB of anon victims: nothing to tell"
pmr_knob victim_target_kbytes 4
kill -USR1 "$app"
wait_for 60 test -e "$out/app.touched" || verdict 2 "app did not touch its even pages within 60 s"
kill -USR2 "$app"
wait_for 60 test -e "$out/app.odd" || verdict 2 "app did not touch its odd pages within 60 s"
sh -c "echo \$\$ >$cg/app/cgroup.procs; exec cat /run/data/f" >/dev/null
held=$(($(anon_victims app) / 4096))
[ "$held" -ge 6144 ] || verdict 2 "app holds $held pages of victims once it used them, under 6,144: nothing to tell"
log "app used every page again and read the file: $held pages of anon victims," \
    "file $(memstat app file)"

put0=$(vmstat pmr_victim_putback)
if echo $((1 << 20)) >"$cg/app/memory.reclaim" 2>/dev/null; then rc=done; else rc="fell short"; fi
put=$(($(vmstat pmr_victim_putback) - put0))
left=$(($(anon_victims app) / 4096))
log "memory.reclaim of 1 MB: $rc; victim pages put back $put, left $left"
kill "$app"
[ "$rc" = done ] || verdict 1 "memory.reclaim of 1 MB fell short with the file's pages to free"
[ $((left * 4)) -ge "$held" ] ||
	verdict 1 "reclaim ran through the used victims ($put put back, $left of $held left) before it scanned the LRU lists for 256 pages"
verdict 0 "reclaim freed 1 MB from the LRU lists with $left of $held used victim pages left ($put put back)"
