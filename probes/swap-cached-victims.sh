#!/bin/sh
# Once a memcg may swap no more, does reclaim free its victims that were
# paged out before, which hold a swap slot already?
#
#   pmrtb probe swap-cached-victims [MODE]     (pmr/enabled, default 2)
#
# 1. pmr/enabled=MODE; cgroup `cold` writes 160 MB of anon once and
#    leaves it alone;
# 2. cgroup `load` allocates anon (for at most 30 s) until `cold` holds
#    4 MB of anon victims; then `load` ends and its memory is freed, so
#    that no reclaim runs but the probe's own. If under 2 MB of them are
#    left a second later, the load runs again (90 s in all;
#    load_until_victims in lib/guest.sh). The victims that reclaim paged
#    out last stay on the list, paged out (in the swap cache, mapped by no
#    page table: lib/paged_out.py), until the next take frees them;
#    2b. reclaim writes victims when it takes them, and once the load has
#    ended none may have been written yet (a CI run had 3.5 MB of
#    victims and 16 kB paged out). While under 256 kB of `cold`'s anon is
#    paged out, memory.reclaim asks it for 256 kB with swap, and the
#    probe waits a second for the writes (four times at most). The
#    victims written last stay on the list, paged out;
# 3. `cold`'s memory.swap.max is set to what it uses: it may swap no
#    more, as on a phone whose swap has run full. memory.reclaim asks it
#    for its page cache and its paged-out anon. With no swap left,
#    reclaim scans no anon LRU list and takes only file victims, except
#    the anon victims paged out: they hold a slot already (patch 11).
#    Passed when 64 kB (16 pages) or more of anon victims and of
#    paged-out anon are freed: nothing else frees either here;
# 4. if not, the control: the cap is lifted and memory.reclaim asks for
#    256 kB. Reclaim that may swap takes the anon victims first, the
#    paged-out ones at the tail of the list first (their write has
#    completed), and scans no LRU list while victims cover its goal.
#    Failed if it frees 64 kB or more of the paged-out anon at once:
#    they were victims, there since step 3, and step 3 left them;
#    inconclusive if not (too few paged-out victims to tell), or when
#    step 2 could not make the victims;
# 5. steps 2 to 4 make an attempt, at most MAX_TRIES: an attempt that
#    cannot tell (step 2 made no victims, kswapd took them all before
#    step 3, or step 4's control freed too few) is followed by another,
#    with the cap lifted. Kswapd, still busy for a while after the load,
#    can take every victim before the priming reclaim (a CI run had 0
#    left), and a control without victims would page out LRU pages, not
#    judge them: step 3 needs 1 MB of anon victims, or the attempt ends.
#
# Until 2026-11-27 the probe froze the load once `cold` held 1 MB of anon
# victims and 1 MB of paged-out anon, and failed when reclaim freed under
# 64 kB of both. On a slow guest the two were mostly different pages
# (pages paged out from the LRU lists, which no reclaim frees with swap
# full, and victims not written yet), and kswapd, still busy at the
# frozen load's watermark, freed the paged-out victims first: the probe
# was mostly inconclusive there and once failed with 16 kB freed, a
# setup it could not tell from a fault. Swap readahead pages are in the
# swap cache but not anon until mapped, and are not counted
# (memory.stat's swapcached counts them: it is logged, not judged).
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"
# Bytes of cgroup $1's anon paged out (see the header)
paged_out() { python3 "$(dirname "$0")/lib/paged_out.py" "$cg/$1"; }
# The state of `cold` that the probe judges, logged
log_cold() {
	log "cold $1: current $(cat $cg/cold/memory.current) anon $(memstat cold anon)" \
	    "file $(memstat cold file) anon victims $(anon_victims cold) paged out $(paged_out cold)" \
	    "swapcached $(memstat cold swapcached) swap $(cat $cg/cold/memory.swap.current)"
}

setup_probe "$mode"
mkdir "$cg/cold"
need_victims "$cg/cold/memory.stat"
sh -c "echo \$\$ >$cg/cold/cgroup.procs; cd /tmp; exec stress-ng --vm 1 --vm-bytes 160m \
       --vm-method write64 --vm-hang 0 --timeout 600s --quiet" &
cold=$!
start=$(date +%s)
while [ "$(cat $cg/cold/memory.current)" -lt $((150 << 20)) ]; do
	[ $(($(date +%s) - start)) -lt 60 ] || verdict 2 "cgroup cold did not reach 150 MB"
	sleep 0.2
done
log_cold "before load"

# An attempt that cannot tell (see the header): log why, and give up
# after MAX_TRIES of them
cannot_tell() {
	log "$1"
	[ "$tries" -lt "$MAX_TRIES" ] && return 0
	kill "$cold" 2>/dev/null || true
	verdict 2 "$1 (in $tries attempts)"
}
MAX_TRIES=3
tries=0
while :; do
	tries=$((tries + 1))
	log "attempt $tries"
	# Step 2 (see the header)
	load_until_victims cold $((4 << 20)) $((2 << 20))
	if [ "$victims" -lt $((2 << 20)) ]; then
		cannot_tell "cold never kept 2 MB of anon victims: nothing to tell"
		continue
	fi
	log_cold "after load"
	# Step 2b (see the header): victims are written when reclaim takes
	# them, so none may be paged out yet once the load has ended.
	primes=0
	while [ "$(paged_out cold)" -lt $((256 << 10)) ] && [ "$primes" -lt 4 ]; do
		echo 256K >"$cg/cold/memory.reclaim" 2>/dev/null || true
		sleep 1
		primes=$((primes + 1))
		log_cold "after priming reclaim $primes"
	done
	v0=$(anon_victims cold)
	if [ "$v0" -lt $((1 << 20)) ]; then
		cannot_tell "cold held $v0 bytes of anon victims after the priming reclaim, under 1 MB: nothing to tell"
		continue
	fi

	# Step 3: no swap left for `cold`; what reclaim may free is its page
	# cache and its paged-out anon victims: ask for both and more (it falls
	# short, and tries hard first).
	echo "$(cat $cg/cold/memory.swap.current)" >"$cg/cold/memory.swap.max"
	po0=$(paged_out cold)
	log_cold "with swap capped"
	ask=$(($(memstat cold file) + po0 + (1 << 20)))
	if echo "$ask" >"$cg/cold/memory.reclaim" 2>/dev/null; then rc=done; else rc="fell short"; fi
	v1=$(anon_victims cold)
	po1=$(paged_out cold)
	log "memory.reclaim $ask: $rc"
	log_cold "after reclaim"
	freed_v=$((v0 - v1))
	freed_po=$((po0 - po1))
	if [ "$freed_v" -ge $((64 << 10)) ] && [ "$freed_po" -ge $((64 << 10)) ]; then
		kill "$cold" 2>/dev/null || true
		verdict 0 "reclaim freed $freed_v bytes of anon victims and $freed_po of paged-out anon (of $po0)"
	fi

	# Step 4: were there paged-out victims to free? With swap, reclaim
	# takes them first.
	echo max >"$cg/cold/memory.swap.max"
	if echo 256K >"$cg/cold/memory.reclaim" 2>/dev/null; then rc=done; else rc="fell short"; fi
	po2=$(paged_out cold)
	log "memory.reclaim 256K with swap (the control): $rc"
	log_cold "after the control"
	if [ $((po1 - po2)) -ge $((64 << 10)) ]; then
		kill "$cold" 2>/dev/null || true
		verdict 1 "reclaim left the paged-out victims with swap capped (anon victims $v0 -> $v1, paged-out anon $po0 -> $po1 bytes) and freed $((po1 - po2)) bytes of them at once without the cap"
	fi
	cannot_tell "too few paged-out victims to tell: reclaim freed $freed_po bytes of paged-out anon with swap capped, and $((po1 - po2)) without"
done
