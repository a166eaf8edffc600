#!/bin/sh
# Does reclaim leave in memory the victims used since kshrinkd picked them?
#
#   pmrtb probe touched-victims [MODE]     (pmr/enabled, default 2)
#
# 1. pmr/victim_target_kbytes=65536 and pmr/enabled=MODE; cgroup `app`
#    writes 128 MB of anon once (lib/touch_app.py);
# 2. cgroup `load` allocates anon (for at most 30 s) until `app` holds
#    8 MB of anon victims; then `load` ends and its memory is freed, so
#    that no reclaim runs but the probe's own. If under 4 MB of them are
#    left a second later, the load runs again (90 s in all;
#    load_until_victims in lib/guest.sh, which then wakes kshrinkd to top
#    the victims up to the target, mostly from `app`). The ask of step 4
#    is a share of them: a CI run whose loads left 1-16 MB of victims,
#    with no top-up, asked for 1-4 MB a round and left 0 or 1 paged-out
#    victims in the swap cache for step 5; topped up, asks of 2.5-16 MB
#    left 78-405 in a round on this machine;
# 3. `app` reads every even page of its area: the victims among them are
#    used again, those among the odd pages are not. Where each page is
#    (present, swapped out) is read from /proc/PID/pagemap
#    (lib/page_states.py);
# 4. memory.reclaim asks `app` for a quarter of its anon victims, about
#    half of the untouched ones: reclaim takes victims first, and a victim
#    with a young page table entry must stay (reclaim checks the references
#    of the victims it takes);
# 5. `app` reads its odd pages. Those the reclaim of step 4 paged out
#    and still holds in the swap cache (mincore(2) in lib/touch_app.py,
#    just before the reads) fault back from there, and pmr_victim_swapin
#    must count them.
#    Steps 2 to 5 make a round; a round after the first starts with
#    pmr/enabled=0, which drains the victims the reads of the round
#    before used. How many paged-out victims step 4 leaves
#    in the swap cache depends on when their writes complete: while
#    memory.reclaim falls short of its ask, it frees those already
#    written (1 to 135 of them were left in a round, and 2 in all in 3
#    rounds of one run). So the rounds go on, at most MAX_ROUNDS, until
#    they have paged out 128 untouched pages and left 16 victims in the
#    swap cache. Over the rounds, passed
#    when at most a tenth as many even pages as odd ones were paged out
#    and pmr_victim_swapin counted at least half of the swap-cached
#    victims read again: not all, as a paged-out victim that compaction
#    isolates meanwhile goes back to the LRU as an ordinary folio. Failed
#    when a round or the sum breaks either rule; inconclusive when the
#    odd pages or the swap-cached victims are too few to tell, or no
#    round made its victims within the 90 s;
# 6. `app` is killed: pmr_victim_freed must count at least 9 in 10 of the
#    anon victims it held (failed otherwise). If it holds under 256 pages
#    of them, step 2's load runs again first; inconclusive if it still
#    does.
#
# Reclaim that runs out of victims scans the LRU lists, where a page used
# once is kept and looked at again at the next priority: hence the small
# ask, which the untouched victims cover.
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"
lib=$(dirname "$0")/lib
save_states() { python3 "$lib/page_states.py" save "/proc/$app/pagemap" "$addr" "$pages" "$1"; }

setup_probe "$mode"
need_keys /proc/vmstat pmr_victim_swapin pmr_victim_freed
pmr_knob victim_target_kbytes 65536
mkdir "$cg/app"
need_victims "$cg/app/memory.stat"
start_app 128
read -r addr pages <"$out/app.addr"
log "app: $pages pages at 0x$addr, cgroup anon $(memstat app anon)"

MAX_ROUNDS=6
rounds=0 even=0 odd=0 cached=0 swapin=0
while [ "$rounds" -lt "$MAX_ROUNDS" ] && { [ "$odd" -lt 128 ] || [ "$cached" -lt 16 ]; }; do
	rounds=$((rounds + 1))
	log "round $rounds"
	if [ "$rounds" -gt 1 ]; then
		# the victims left were all read since they were picked: drain them
		set_pmr_enabled 0
		set_pmr_enabled "$mode"
		log "victims drained: app anon victims $(anon_victims app)"
	fi
	load_until_victims app $((8 << 20)) $((4 << 20))
	if [ "$victims" -lt $((4 << 20)) ]; then
		log "app never kept 4 MB of anon victims"
		continue
	fi
	log "app: anon $(memstat app anon) swap $(cat $cg/app/memory.swap.current)"

	rm -f "$out/app.touched" "$out/app.odd" "$out/app.incore"
	kill -USR1 "$app"
	wait_for 60 test -e "$out/app.touched" || verdict 2 "app did not touch its even pages within 60 s"
	save_states "$out/before.$rounds"
	v1=$(anon_victims app)
	if [ "$v1" -lt $((1 << 20)) ]; then
		log "touched the even pages: anon victims $v1, under 1 MB: no reclaim to judge"
		continue
	fi
	ask=$((v1 / 4))
	log "touched the even pages: anon victims $v1; asking for $ask bytes"
	if echo "$ask" >"$cg/app/memory.reclaim" 2>/dev/null; then rc=done; else rc="fell short"; fi
	save_states "$out/after.$rounds"
	log "memory.reclaim: $rc; anon victims $(anon_victims app) anon $(memstat app anon)"

	set -- $(python3 "$lib/page_states.py" paged-out "$out/before.$rounds" "$out/after.$rounds")
	r_even=$2 r_odd=$4
	log "paged out by the reclaim: $r_even touched (even) pages, $r_odd untouched (odd) ones"
	[ "$r_odd" -lt 128 ] || [ $((r_even * 10)) -le "$r_odd" ] ||
		verdict 1 "reclaim paged out $r_even pages used since they were picked, against $r_odd unused ones"

	s0=$(vmstat pmr_victim_swapin)
	kill -USR2 "$app"
	wait_for 60 test -e "$out/app.odd" || verdict 2 "app did not touch its odd pages within 60 s"
	r_swapin=$(($(vmstat pmr_victim_swapin) - s0))
	set -- $(python3 "$lib/page_states.py" swap-cached "$out/before.$rounds" "$out/after.$rounds" \
	    "$out/app.incore")
	r_cached=$4
	log "read the odd pages: $r_cached of those the reclaim paged out were in the swap cache;" \
	    "pmr_victim_swapin +$r_swapin"
	[ "$r_cached" -lt 16 ] || [ $((r_swapin * 2)) -ge "$r_cached" ] ||
		verdict 1 "pmr_victim_swapin counted $r_swapin of $r_cached paged-out victims mapped again"
	even=$((even + r_even)) odd=$((odd + r_odd))
	cached=$((cached + r_cached)) swapin=$((swapin + r_swapin))
done
[ "$odd" -ge 128 ] ||
	verdict 2 "reclaim paged out $odd untouched pages in $rounds rounds, under 128: too few to tell"
[ $((even * 10)) -le "$odd" ] ||
	verdict 1 "reclaim paged out $even pages used since they were picked, against $odd unused ones"
[ "$cached" -ge 16 ] ||
	verdict 2 "only $cached paged-out victims were left in the swap cache in $rounds rounds: too few to tell"
[ $((swapin * 2)) -ge "$cached" ] ||
	verdict 1 "pmr_victim_swapin counted $swapin of $cached paged-out victims mapped again"

if [ "$(anon_victims app)" -lt $((256 * 4096)) ]; then
	log "app holds $(anon_victims app) bytes of anon victims: the load runs again"
	load_until_victims app $((8 << 20)) $((4 << 20))
fi
held=$(($(anon_victims app) / 4096))
f0=$(vmstat pmr_victim_freed)
kill "$app"
wait "$app" 2>/dev/null || true
freed=$(($(vmstat pmr_victim_freed) - f0))
log "app killed holding $held pages of anon victims: pmr_victim_freed +$freed"
[ "$held" -ge 256 ] ||
	verdict 2 "app held $held pages of anon victims when killed, under 256: too few to tell"
[ $((freed * 10)) -ge $((held * 9)) ] ||
	verdict 1 "pmr_victim_freed counted $freed of the $held victim pages app held when killed"
counted="pmr_victim_swapin +$swapin for $cached paged-out victims read again, pmr_victim_freed +$freed for $held victim pages freed"
verdict 0 "in $rounds rounds, reclaim paged out $odd unused pages and $even used since they were picked; $counted"
