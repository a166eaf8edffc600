#!/bin/sh
# Once a memcg may swap no more, does reclaim free its victims that were
# paged out before, which hold a swap slot already?
#
#   pmrtb probe swap-cached-victims [MODE]     (vm.pmr_mode, default 2)
#
# 1. vm.pmr_mode=MODE; cgroup `cold` writes 160 MB of anon once and
#    leaves it alone;
# 2. cgroup `load` allocates 0.8 x RAM of anon (for at most 60 s) until
#    `cold` holds 1 MB of anon victims and 1 MB of anon paged out (in the
#    swap cache, mapped by no page table: lib/paged_out.py) at once:
#    victims that reclaim paged out and the next take has not freed yet
#    (logged about every second); then `load` is frozen (it keeps its memory)
#    and `cold`'s memory.swap.max is set to what it uses: the memcg may
#    swap no more, so that reclaim of it takes only file victims, as on a
#    phone whose swap has run full. Under 512 kB of either left a second
#    later: the cap is lifted, `load` thawed, and the wait goes on;
# 3. memory.reclaim asks `cold` for its page cache and its paged-out anon.
#    With no swap left, reclaim scans no anon LRU list and takes only
#    file victims, except the anon victims paged out: they hold a slot
#    already (patch 23). Passed when 64 kB (16 pages) or more of anon
#    victims and of paged-out anon are freed; failed if not: nothing else
#    frees either here (the series without patch 23 freed none: anon
#    victims 5.40 -> 5.40 MB, paged-out anon 2.02 -> 2.02 MB);
#    inconclusive when the freeze never found 512 kB of both within the
#    60 s.
#
# Paged-out anon counts the pages that reclaim paged out from the LRU
# lists too, which no reclaim frees with swap full: how much of it is
# victims shows only in what reclaim frees, hence the small threshold.
# Swap readahead pages are in the swap cache but not anon until mapped,
# and are not counted (memory.stat's swapcached counts them: it is
# logged, not judged).
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"
# Bytes of cgroup $1's anon paged out (see the header)
paged_out() { python3 "$(dirname "$0")/lib/paged_out.py" "$cg/$1"; }
# Bytes of cgroup $1's anon victims
anon_victims() { anon_victims_in "$cg/$1/memory.stat"; }

setup_probe "$mode"
mkdir "$cg/cold"
need_victims "$cg/cold/memory.stat"
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
# them: freeze `load` as soon as `cold` holds 1 MB of anon victims and
# 1 MB of paged-out anon at once, and cap its swap there. If the freeze
# came too late (under 512 kB of either left), lift the cap, thaw `load`
# and try again. Paged-out anon takes a scan of all pages: count it only
# when the victims are there.
start=$(date +%s)
start_load 60 "$(($(ram_mb) * 8 / 10))m"
n=0 ready=
while [ -z "$ready" ] && [ $(($(date +%s) - start)) -lt 60 ]; do
	sleep 0.2
	victim=$(anon_victims cold)
	n=$((n + 1))
	[ $((n % 5)) -ne 0 ] || log "  cold: anon victims $victim swapcached" \
	    "$(memstat cold swapcached) swap $(cat $cg/cold/memory.swap.current)"
	[ "$victim" -ge $((1 << 20)) ] || continue
	po=$(paged_out cold)
	[ "$po" -ge $((1 << 20)) ] || continue
	echo 1 >"$cg/load/cgroup.freeze"
	swapped=$(cat $cg/cold/memory.swap.current)
	echo "$swapped" >"$cg/cold/memory.swap.max"
	sleep 1
	v0=$(anon_victims cold)
	po0=$(paged_out cold)
	if [ "$v0" -ge $((512 << 10)) ] && [ "$po0" -ge $((512 << 10)) ]; then
		ready=1
	else
		log "  frozen too late: anon victims $v0 paged out $po0; again"
		echo max >"$cg/cold/memory.swap.max"
		echo 0 >"$cg/load/cgroup.freeze"
	fi
done
[ -n "$ready" ] || verdict 2 "cold never held 1 MB of anon victims and of paged-out anon at once: nothing to tell"
cur=$(cat $cg/cold/memory.current)
file=$(memstat cold file)
log "cold after load: current $cur anon $(memstat cold anon) file $file anon victims $v0" \
    "paged out $po0 swapcached $(memstat cold swapcached) swap $swapped" \
    "(load ran $(($(date +%s) - start)) s)"

# What reclaim may free here is the page cache and the paged-out anon
# victims: ask for both and more (it falls short, and tries hard first).
ask=$((file + po0 + (1 << 20)))
if echo "$ask" >"$cg/cold/memory.reclaim" 2>/dev/null; then rc=done; else rc="fell short"; fi
v1=$(anon_victims cold)
po1=$(paged_out cold)
log "memory.reclaim $ask: $rc"
log "cold after reclaim: current $(cat $cg/cold/memory.current) file $(memstat cold file)" \
    "anon victims $v1 paged out $po1 swapcached $(memstat cold swapcached)" \
    "swap $(cat $cg/cold/memory.swap.current)"
echo 0 >"$cg/load/cgroup.freeze"
stop_load
kill "$cold" 2>/dev/null || true
freed_v=$((v0 - v1))
freed_po=$((po0 - po1))
[ "$freed_v" -ge $((64 << 10)) ] && [ "$freed_po" -ge $((64 << 10)) ] ||
	verdict 1 "reclaim left the paged-out victims: anon victims $v0 -> $v1, paged-out anon $po0 -> $po1 bytes"
verdict 0 "reclaim freed $freed_v bytes of anon victims and $freed_po of paged-out anon (of $po0)"
