#!/bin/sh
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"
anon_victims() { echo $(($(memstat "$1" victim) - $(memstat "$1" victim_file))); }
setup_probe 0
mkdir "$cg/cold"
sh -c "echo \$\$ >$cg/cold/cgroup.procs; cd /tmp; exec stress-ng --vm 1 --vm-bytes 160m \
       --vm-method write64 --vm-hang 0 --timeout 300s --quiet" &
while [ "$(cat $cg/cold/memory.current)" -lt $((150 << 20)) ]; do sleep 0.2; done
echo 3 >/proc/sys/vm/drop_caches
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs none $T
echo 1 > $T/events/vmscan/mm_vmscan_kshrinkd_round/enable
echo 1 > $T/events/vmscan/mm_vmscan_lru_isolate/enable
echo 65536 >/proc/sys/vm/pmr_victim_target_kbytes
set_pmr_mode "$mode"
for t in 1 2 3 4 5 6; do
	sleep 1.5
	echo 65536 >/proc/sys/vm/pmr_victim_target_kbytes
	log "t $t anon victims $(anon_victims cold) victims $(memstat cold victim) inactive_anon $(memstat cold inactive_anon)"
done
echo 0 > $T/tracing_on
grep "^ *kshrinkd" $T/trace | grep mm_vmscan_lru_isolate | sed -n 's/.* \([0-9]*\)\.[0-9]*: mm_vmscan_lru_isolate.*nr_scanned=\([0-9]*\).*nr_taken=\([0-9]*\).*lru=\([a-z_]*\).*/\1 \4 \2 \3/p' |
	awk '{ key = $1 " " $2; s[key] += $3; k[key] += $4; n[key]++ } END { for (l in s) print "isolate", l, "calls", n[l], "scanned", s[l], "taken", k[l] }' | sort -k2n >> $out/guest.log
grep kshrinkd_round $T/trace | head -20 >> $out/guest.log
cat /proc/sys/vm/swappiness >> $out/guest.log
verdict 0 diag
