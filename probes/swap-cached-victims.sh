#!/bin/sh
# Once a memcg may swap no more, does reclaim free its victims that were
# paged out before, which hold a swap slot already?
#
#   pmrtb probe swap-cached-victims [MODE]     (vm.pmr_mode, default 2)
#
# 1. vm.pmr_mode=MODE; cgroup `cold` writes 160 MB of anon once and
#    leaves it alone;
# 2. cgroup `load` allocates 0.8 x RAM of anon (for at most 60 s) until
#    `cold` holds 2 MB of victims and 2 MB of swap cache at once: victims
#    that reclaim paged out and the next take has not freed yet (logged
#    every second); then `load` is frozen (it keeps its memory) and
#    `cold`'s memory.swap.max is set to what it uses: the memcg may swap
#    no more, so that reclaim of it takes only file victims, as on a
#    phone whose swap has run full. Under 1 MB of either left a second
#    later: the cap is lifted, `load` thawed, and the wait goes on;
# 3. memory.reclaim asks `cold` for its page cache and its victims or its
#    swap cache, whichever is smaller. With no swap left, reclaim scans
#    no anon LRU list and takes only file victims, except the anon
#    victims paged out: in the swap cache, mapped by no page table, they
#    hold a slot already (patch 23). Passed when victims beyond the page
#    cache that went and 256 kB of swap cache are freed; failed if not
#    (the 22-patch series freed none: victims 8.61 -> 8.56 MB, swap cache
#    5.97 -> 5.97 MB); inconclusive when the freeze never found 1 MB of
#    both within the 60 s.
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"

setup_probe "$mode"
mkdir "$cg/cold"
sh -c "echo \$\$ >$cg/cold/cgroup.procs; cd /tmp; exec stress-ng --vm 1 --vm-bytes 160m \
       --vm-method write64 --vm-hang 0 --timeout 300s --quiet" &
cold=$!
start=$(date +%s)
while [ "$(cat $cg/cold/memory.current)" -lt $((150 << 20)) ]; do
	[ $(($(date +%s) - start)) -lt 60 ] || verdict 2 "cgroup cold did not reach 150 MB"
	sleep 0.2
done
log "cold before load: current $(cat $cg/cold/memory.current) anon $(memstat cold anon)"

# Paged-out victims stay in the swap cache only until the next take frees
# them: freeze `load` as soon as `cold` holds 2 MB of victims and 2 MB of
# swap cache at once, and cap its swap there. If the freeze came too late
# (under 1 MB of either left), lift the cap, thaw `load` and try again.
start=$(date +%s)
start_load 60 "$(($(ram_mb) * 8 / 10))m"
n=0 ready=
while [ -z "$ready" ] && [ $(($(date +%s) - start)) -lt 60 ]; do
	sleep 0.2
	victim=$(memstat cold victim)
	sc=$(memstat cold swapcached)
	n=$((n + 1))
	[ $((n % 5)) -ne 0 ] || log "  cold: victim $victim swapcached $sc swap $(cat $cg/cold/memory.swap.current)"
	[ "$victim" -ge $((2 << 20)) ] && [ "$sc" -ge $((2 << 20)) ] || continue
	echo 1 >"$cg/load/cgroup.freeze"
	swapped=$(cat $cg/cold/memory.swap.current)
	echo "$swapped" >"$cg/cold/memory.swap.max"
	sleep 1
	v0=$(memstat cold victim)
	sc0=$(memstat cold swapcached)
	if [ "$v0" -ge $((1 << 20)) ] && [ "$sc0" -ge $((1 << 20)) ]; then
		ready=1
	else
		log "  frozen too late: victim $v0 swapcached $sc0; again"
		echo max >"$cg/cold/memory.swap.max"
		echo 0 >"$cg/load/cgroup.freeze"
	fi
done
[ -n "$ready" ] || verdict 2 "cold never held 2 MB of victims and of swap cache at once: nothing to tell"
cur=$(cat $cg/cold/memory.current)
file=$(memstat cold file)
log "cold after load: current $cur anon $(memstat cold anon) file $file victim $v0" \
    "swapcached $sc0 swap $swapped (load ran $(($(date +%s) - start)) s)"

# What reclaim may free here is the page cache and the swap-cached anon
# victims: ask for both and more (it falls short, and tries hard first).
ask=$((file + (v0 < sc0 ? v0 : sc0)))
if echo "$ask" >"$cg/cold/memory.reclaim" 2>/dev/null; then rc=done; else rc="fell short"; fi
file1=$(memstat cold file)
v1=$(memstat cold victim)
sc1=$(memstat cold swapcached)
log "memory.reclaim $ask: $rc"
log "cold after reclaim: current $(cat $cg/cold/memory.current) file $file1 victim $v1" \
    "swapcached $sc1 swap $(cat $cg/cold/memory.swap.current)"
echo 0 >"$cg/load/cgroup.freeze"
stop_load
kill "$cold" 2>/dev/null || true
# Victims freed beyond what page cache went, and swap cache freed
anon_v=$((v0 - v1 - (file > file1 ? file - file1 : 0)))
freed_sc=$((sc0 - sc1))
[ "$anon_v" -ge $((256 << 10)) ] && [ "$freed_sc" -ge $((256 << 10)) ] ||
	verdict 1 "reclaim left the swap-cached victims: victims $v0 -> $v1, swap cache $sc0 -> $sc1 bytes"
verdict 0 "reclaim freed $anon_v bytes of anon victims and $freed_sc of swap cache (victims $v0 -> $v1)"
