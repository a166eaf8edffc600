#!/bin/sh
# Does a memcg whose reclaim may not swap reclaim its file victims?
#
#   pmrtb probe file-victims-without-swap [MODE]     (vm.pmr_mode, default 2)
#
# 1. vm.swappiness=0 (on cgroup v2, every memcg's), vm.pmr_mode=MODE;
# 2. cgroup `files` reads a 96 MB file on ext4 into its page cache and
#    keeps a process alive;
# 3. cgroup `load` allocates 80% of RAM in anon, beyond what RAM holds
#    with the file and the kernel, so that kswapd and kshrinkd
#    run, until kshrinkd has made 16 MB of victims in `files`; then it
#    stops;
# 4. memory.reclaim asks `files` for 90% of its memory. With swappiness 0
#    this memcg reclaim takes file pages only, and the goal cannot be met
#    without the victims (checked: else the probe is inconclusive): reclaim
#    that may not swap must take file victims (patch 4). A series that left
#    every victim alone when reclaim could not swap kept 17 MB of them here
#    and the write failed with EAGAIN.
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"

setup_probe "$mode"
echo 0 >/proc/sys/vm/swappiness
mkdir "$cg/files"
need_victims "$cg/files/memory.stat"
make_file
sh -c "echo \$\$ >$cg/files/cgroup.procs; cat /run/data/f >/dev/null; cat /run/data/f >/dev/null"
sh -c "echo \$\$ >$cg/files/cgroup.procs; exec sleep 600" &
keeper=$!
log "files before load: current $(cat $cg/files/memory.current) file $(memstat files file) victim $(memvictims files)"

start=$(date +%s)
# 80% of RAM, with the 96 MB file and the kernel, exceeds RAM. The default, 85%
# of the memory available when it starts, left 80 MB free on a host whose
# guest runs slower (session 29): nothing was reclaimed and the probe was
# inconclusive. 90% of RAM evicted the whole file with never 16 MB of
# victims at once, also inconclusive.
start_load 60 "$(($(ram_mb) * 8 / 10))m"
victim=0
while [ $(($(date +%s) - start)) -lt 60 ] && [ "$victim" -lt $((16 << 20)) ]; do
	sleep 0.1
	victim=$(memvictims files)
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
