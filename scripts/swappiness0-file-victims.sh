#!/bin/sh
# Does a memcg whose reclaim may not swap reclaim its file victims?
# (kernel patch 23, "mm: pmr: take file victims when reclaim cannot swap")
#
# Runs in a guest booted with two extra disks, swap (/dev/vda) and data
# (/dev/vdb), and writes its findings to $1 (a --rwdir):
#   1. vm.swappiness=0 (on cgroup v2 every memcg's), vm.pmr_mode=$2;
#   2. cgroup `files` reads 96 MB of a file on ext4 into its page cache and
#      keeps a process alive;
#   3. cgroup `load` allocates anon beyond RAM, so that kswapd and kshrinkd
#      run, until kshrinkd has made victims in `files`; then it stops;
#   4. memory.reclaim asks `files` for 90% of its memory. With swappiness
#      0 this memcg reclaim takes file pages only; its victims are file
#      pages it can take only if reclaim takes file victims when it cannot
#      swap. Before patch 23 it left every victim alone.
# The host runs it with scripts/swappiness0-file-victims-run.sh.
set -eu
out=$1
mode=${2:-1}
cg=/sys/fs/cgroup
log() { echo "$*" | tee -a "$out/guest.log"; }
memstat() { awk -v k="$2" '$1 == k { print $2 }' "$cg/$1/memory.stat"; }

mkswap -q /dev/vda && swapon /dev/vda
mkfs.ext4 -q -F /dev/vdb && mkdir -p /run/data && mount /dev/vdb /run/data
echo 0 >/proc/sys/vm/swappiness
echo "$mode" >/proc/sys/vm/pmr_mode
echo +memory >"$cg/cgroup.subtree_control"
mkdir "$cg/files" "$cg/load"

dd if=/dev/urandom of=/run/data/f bs=1M count=96 status=none
sync
echo 3 >/proc/sys/vm/drop_caches
sh -c "echo \$\$ >$cg/files/cgroup.procs; cat /run/data/f >/dev/null;
       cat /run/data/f >/dev/null; exec sleep 600" &
keeper=$!
sleep 2
log "files before load: current $(cat $cg/files/memory.current) file $(memstat files file) victim $(memstat files victim)"

sh -c "echo \$\$ >$cg/load/cgroup.procs; cd /tmp; exec stress-ng --vm 1 --vm-bytes 85% \
       --vm-keep --timeout 60s --quiet" &
load=$!
victim=0
i=0
while [ "$i" -lt 600 ] && [ "$victim" -lt 4194304 ]; do
	sleep 0.1
	victim=$(memstat files victim)
	i=$((i + 1))
done
kill "$load" 2>/dev/null || true
pkill -f stress-ng || true
wait "$load" 2>/dev/null || true
sleep 1
cur=$(cat $cg/files/memory.current)
log "files after load: current $cur file $(memstat files file) victim $(memstat files victim) (waited $((i / 10)) s)"
if [ "$(memstat files victim)" -eq 0 ]; then
	log "RESULT: no victims in files: nothing to test"
	exit 2
fi

ask=$((cur * 9 / 10))
if echo "$ask" >"$cg/files/memory.reclaim" 2>>"$out/guest.log"; then rc=0; else rc=1; fi
log "memory.reclaim $ask: $( [ $rc -eq 0 ] && echo done || echo 'fell short (EAGAIN)')"
log "files after reclaim: current $(cat $cg/files/memory.current) file $(memstat files file) victim $(memstat files victim)"
log "vmstat: $(grep -E '^(pmr_victim_reclaimed|pmr_victim_putback|nr_victim) ' /proc/vmstat | tr '\n' ' ')"
kill "$keeper" 2>/dev/null || true
[ $rc -eq 0 ] && log "RESULT: reclaim took the file victims" || log "RESULT: reclaim fell short"
exit $rc
