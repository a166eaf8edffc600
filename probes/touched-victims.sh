#!/bin/sh
# Does reclaim leave in memory the victims used since kshrinkd picked them?
#
#   pmrtb probe touched-victims [MODE]     (pmr/enabled, default 2)
#
# 1. pmr/victim_target_kbytes=65536 and pmr/enabled=MODE; cgroup `app`
#    writes 128 MB of anon once (lib/touch_app.py);
# 2. cgroup `load` allocates 0.8 x RAM of anon (for at most 30 s) until
#    `app` holds 8 MB of anon victims; then `load` ends and its memory
#    is freed, so that no reclaim runs but the probe's own. If under
#    4 MB of them are left a second later, the load runs again (90 s in
#    all);
# 3. `app` reads every even page of its area: the victims among them are
#    used again, those among the odd pages are not. Where each page is
#    (present, swapped out) is read from /proc/PID/pagemap
#    (lib/page_states.py);
# 4. memory.reclaim asks `app` for a quarter of its anon victims, about
#    half of the untouched ones: reclaim takes victims first, and a victim
#    with a young page table entry must stay (reclaim checks the references
#    of the victims it takes). Passed when 512 kB or more of odd pages were
#    paged out and at most a tenth as many even ones; failed if more even
#    ones than that were paged out; inconclusive when the odd pages are
#    too few to tell, or the victims were not made within the 90 s;
# 5. `app` reads its odd pages. Those the reclaim of step 4 paged out
#    and still holds in the swap cache (mincore(2) in lib/touch_app.py,
#    just before the reads) fault back from there, and pmr_victim_swapin
#    must count at least half of them (failed otherwise; inconclusive if
#    under 16 were left): not all, as a paged-out victim that compaction
#    isolates meanwhile goes back to the LRU as an ordinary folio. Until
#    2026-11-27 the probe counted every paged-out page of the cgroup in
#    the swap cache (lib/paged_out.py), which takes in those the load's
#    reclaim had paged out before they were victims: 187 of 453 on the
#    debug kernel;
# 6. `app` is killed: pmr_victim_freed must count at least 9 in 10 of the
#    anon victims it held (failed otherwise).
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
sh -c "echo \$\$ >$cg/app/cgroup.procs; exec python3 $lib/touch_app.py 128 $out/app" &
app=$!
wait_for 60 test -e "$out/app.addr" || verdict 2 "app did not write its 128 MB within 60 s"
read -r addr pages <"$out/app.addr"
log "app: $pages pages at 0x$addr, cgroup anon $(memstat app anon)"

load_until_victims app $((8 << 20)) $((4 << 20))
v0=$victims
[ "$v0" -ge $((4 << 20)) ] || verdict 2 "app never kept 4 MB of anon victims: nothing to tell"
log "app: anon $(memstat app anon) swap $(cat $cg/app/memory.swap.current)"

kill -USR1 "$app"
wait_for 60 test -e "$out/app.touched" || verdict 2 "app did not touch its even pages within 60 s"
save_states "$out/before"
v1=$(anon_victims app)
ask=$((v1 / 4))
log "touched the even pages: anon victims $v1; asking for $ask bytes"
if echo "$ask" >"$cg/app/memory.reclaim" 2>/dev/null; then rc=done; else rc="fell short"; fi
save_states "$out/after"
log "memory.reclaim: $rc; anon victims $(anon_victims app) anon $(memstat app anon)"

set -- $(python3 "$lib/page_states.py" paged-out "$out/before" "$out/after")
even=$2 odd=$4
log "paged out by the reclaim: $even touched (even) pages, $odd untouched (odd) ones"
[ "$odd" -ge 128 ] || verdict 2 "reclaim paged out $odd untouched pages, under 128: too few to tell"
[ $((even * 10)) -le "$odd" ] ||
	verdict 1 "reclaim paged out $even pages used since they were picked, against $odd unused ones"

s0=$(vmstat pmr_victim_swapin)
kill -USR2 "$app"
wait_for 60 test -e "$out/app.odd" || verdict 2 "app did not touch its odd pages within 60 s"
swapin=$(($(vmstat pmr_victim_swapin) - s0))
set -- $(python3 "$lib/page_states.py" swap-cached "$out/before" "$out/after" "$out/app.incore")
cached=$4
log "read the odd pages: $cached of those the reclaim paged out were in the swap cache;" \
    "pmr_victim_swapin +$swapin"
[ "$cached" -ge 16 ] ||
	verdict 2 "only $cached paged-out victims were left in the swap cache: too few to tell"
[ $((swapin * 2)) -ge "$cached" ] ||
	verdict 1 "pmr_victim_swapin counted $swapin of $cached paged-out victims mapped again"

held=$(($(anon_victims app) / 4096))
f0=$(vmstat pmr_victim_freed)
kill "$app"
wait "$app" 2>/dev/null || true
freed=$(($(vmstat pmr_victim_freed) - f0))
log "app killed holding $held pages of anon victims: pmr_victim_freed +$freed"
[ $((freed * 10)) -ge $((held * 9)) ] ||
	verdict 1 "pmr_victim_freed counted $freed of the $held victim pages app held when killed"
counted="pmr_victim_swapin +$swapin for $cached paged-out victims read again, pmr_victim_freed +$freed for $held victim pages freed"
verdict 0 "reclaim paged out $odd unused pages and $even used since they were picked; $counted"
