#!/bin/sh
# Does a memcg whose reclaim may not swap reclaim its file victims?
#
#   pmrtb probe file-victims-without-swap [MODE]     (pmr/enabled, default 2)
#
# 1. vm.swappiness=0 (on cgroup v2, every memcg's),
#    pmr/victim_target_kbytes=32768, pmr/enabled=MODE;
# 2. cgroup `files` reads a 96 MB file on ext4 into its page cache and
#    keeps a process alive;
# 3. cgroup `load` allocates, in anon, the memory that is free and 48 MB
#    more. Reclaim, which takes file pages only, evicts about half the
#    file and stops; kshrinkd, woken by it, picks victims among the rest
#    up to its 32 MB target, and nothing takes them while the load holds
#    still. Once `files` has 16 MB of victims, the load ends;
# 4. memory.reclaim asks `files` for 90% of its memory. With swappiness 0
#    this memcg reclaim takes file pages only, and the goal cannot be met
#    without the victims (checked: else the probe is inconclusive): reclaim
#    that may not swap must take file victims (patch 6). A series that left
#    every victim alone when reclaim could not swap kept 17 MB of them here
#    and the write failed with EAGAIN.
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"

setup_probe "$mode"
echo 0 >/proc/sys/vm/swappiness
pmr_knob victim_target_kbytes 32768
mkdir "$cg/files"
need_victims "$cg/files/memory.stat"
make_file
sh -c "echo \$\$ >$cg/files/cgroup.procs; cat /run/data/f >/dev/null; cat /run/data/f >/dev/null"
sh -c "echo \$\$ >$cg/files/cgroup.procs; exec sleep 600" &
keeper=$!
log "files before load: current $(cat $cg/files/memory.current) file $(memstat files file) victim $(memvictims files)"

start=$(date +%s)
# Until 2026-11-27 the load was a share of RAM: 85% of the memory
# available when it started left 80 MB free on a slower guest and
# nothing was reclaimed; 80% of RAM evicted the whole file on the debug
# kernel (KASAN's shadow takes an eighth of RAM) and 90% on the testbed
# kernel, before kshrinkd had 16 MB of victims. A load sized from what is
# free evicts about as much on every kernel.
start_load 90 "$(($(awk '$1 == "MemFree:" { print $2 }' /proc/meminfo) / 1024 + 48))m"
victim=0
n=0
while kill -0 "$load" 2>/dev/null && [ "$victim" -lt $((16 << 20)) ]; do
	sleep 0.2
	victim=$(memvictims files)
	n=$((n + 1))
	[ $((n % 10)) -ne 0 ] || log "  files: current $(cat $cg/files/memory.current) victim $victim"
done
stop_load
sleep 1
cur=$(cat $cg/files/memory.current)
v0=$(memvictims files)
ask=$((cur * 9 / 10))
log "files after load: current $cur file $(memstat files file) victim $v0 (load ran $(($(date +%s) - start)) s)"
[ "$v0" -gt $((cur - ask)) ] ||
	verdict 2 "only $v0 bytes of victims: memory.reclaim $ask could succeed without them"

if echo "$ask" >"$cg/files/memory.reclaim" 2>>"$out/guest.log"; then rc=0; else rc=1; fi
v1=$(memvictims files)
log "memory.reclaim $ask: $([ $rc -eq 0 ] && echo done || echo 'fell short (EAGAIN)')"
log "files after reclaim: current $(cat $cg/files/memory.current) file $(memstat files file) victim $v1"
log "vmstat: $(grep -E '^(pmr_victim_reclaimed|pmr_victim_putback|nr_victim_anon|nr_victim_file) ' /proc/vmstat | tr '\n' ' ')"
kill "$keeper" 2>/dev/null || true
[ $rc -eq 0 ] && [ "$v1" -lt "$v0" ] ||
	verdict 1 "memory.reclaim fell short with $v1 of $v0 bytes of victims left"
verdict 0 "memory.reclaim took the file victims: $v1 of $v0 bytes of victims left, $(cat $cg/files/memory.current) bytes in the cgroup"
